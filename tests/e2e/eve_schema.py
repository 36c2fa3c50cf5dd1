#!/usr/bin/env python3
"""Every EVE line gaspp writes validates against Suricata's EVE JSON schema
(../shared/data/eve/schema.json, python jsonschema) and is valid UTF-8 JSON.

The runs cover every event type gaspp writes: flow records and the stats event on every capture in
../shared/data/pcaps and two fragmented ones from detect/ (defrag statistics); alerts (with classtype, metadata, category from classification.config, drop
actions) from a rule set that matches every capture; drop events (--eve-drops) in firewall mode
(the suricata-verify firewall tests' rules) and from drop rules; anomaly events (--eve-anomaly, and of type applayer with
--eve-anomaly-applayer);
alerts, drop and anomaly events with their ether object (--eve-ethernet). Also checked against what
Suricata writes: tcp_flags as two hex digits, alert.category as the class's description,
alert.metadata as key → list, pkt_src on packet events.

usage: eve_schema.py GASPP DATA_DIR [--backend cpu|cuda]
"""
import collections
import json
import os
import subprocess
import sys
import tempfile

try:
    import jsonschema
except ImportError:
    print("python jsonschema is missing (scripts/setup.sh installs it)")
    sys.exit(1 if os.environ.get("CI") else 77)

RULES = """\
alert tcp any any -> any any (msg:"tcp \\"quoted\\" é"; classtype:trojan-activity; metadata: created_at 2024_01_01, signature_severity Major, created_at 2025_02_02; sid:1; rev:3;)
drop udp any any -> any 53 (msg:"dns"; classtype:policy-violation; sid:2;)
alert icmp any any -> any any (msg:"icmp"; priority:1; sid:3;)
alert ip any any -> any any (msg:"ip"; sid:4; threshold: type limit, track by_src, count 1, seconds 60;)
alert http any any -> any any (msg:"http get"; http.method; content:"GET"; sid:5;)
"""


def captures(data):
    out = []
    for root, _, fs in os.walk(os.path.join(data, "pcaps")):
        out += [os.path.join(root, f) for f in fs if f.endswith((".pcap", ".pcapng"))]
    # The fragmented ones among the detection tests' captures (stats with reassembled datagrams),
    # and two of HTTP/2 (its http object and anomalies).
    for t in ("defrag/bug-6887-defrag-eth-vlan-ipv6-tcp", "like-ip-only-01", "http2-long-frame", "bug-5929-02"):
        d = os.path.join(data, "detect", "suricata-verify", t)
        out += [os.path.join(d, f) for f in (os.listdir(d) if os.path.isdir(d) else []) if f.endswith(".pcap")]
    return sorted(out)


def main():
    gaspp, data = sys.argv[1], sys.argv[2]
    backend = sys.argv[sys.argv.index("--backend") + 1] if "--backend" in sys.argv else "cpu"
    schema_path = os.path.join(data, "eve", "schema.json")
    if not os.path.exists(schema_path):
        print(f"{schema_path} not found")
        return 1 if os.environ.get("CI") else 77
    validator = jsonschema.Draft202012Validator(json.load(open(schema_path)))
    classes = {}
    for line in open(os.path.join(data, "eve", "classification.config")):
        if line.startswith("config classification:"):
            name, desc, _ = [x.strip() for x in line.split(":", 1)[1].split(",")]
            classes[name] = desc
    problems = collections.Counter()
    examples = {}
    seen = collections.Counter()

    def bad(kind, example):
        problems[kind] += 1
        examples.setdefault(kind, example)

    def check_file(path, label):
        raw = open(path, "rb").read()
        alerted, flows = set(), {}
        for n, line in enumerate(raw.split(b"\n")[:-1], 1):
            where = f"{label} line {n}"
            try:
                e = json.loads(line.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as x:
                bad(f"not UTF-8 JSON: {type(x).__name__}", where)
                continue
            seen[e.get("event_type")] += 1
            if e.get("event_type") == "alert" and "flow_id" in e:
                alerted.add(e["flow_id"])
            if e.get("event_type") == "flow":
                flows[e["flow_id"]] = (e["flow"].get("alerted"), where)
            if e.get("event_type") == "anomaly":
                seen["anomaly " + e["anomaly"].get("type", "?")] += 1
            if "ether" in e:
                seen["ether"] += 1
                if e.get("event_type") not in ("alert", "drop", "anomaly"):
                    bad(f"ether on a {e.get('event_type')} event", where)
                for k in ("src_mac", "dest_mac"):
                    mac = e["ether"].get(k, "")
                    if len(mac) != 17 or any(mac[i] != ":" for i in (2, 5, 8, 11, 14)):
                        bad(f"ether.{k} is not aa:bb:cc:dd:ee:ff", where)
            for err in validator.iter_errors(e):
                bad(f"{e.get('event_type')}: {'/'.join(map(str, err.absolute_path))}: {err.message[:120]}", where)
            for key in ("tcp_flags", "tcp_flags_ts", "tcp_flags_tc"):
                v = e.get("tcp", {}).get(key)
                if v is not None and len(v) != 2:
                    bad(f"{key} is not two hex digits", where)
            if e.get("pcap_cnt") and e.get("pkt_src") != "wire/pcap":
                bad("packet event without pkt_src wire/pcap", where)
            a = e.get("alert")
            if a and a["signature_id"] == 1:
                if a.get("category") != classes["trojan-activity"]:
                    bad("alert.category is not the class description", where)
                if a.get("metadata") != {"created_at": ["2024_01_01", "2025_02_02"], "signature_severity": ["Major"]}:
                    bad("alert.metadata not as Suricata groups it", where)
                if a.get("signature") != 'tcp "quoted" é' or a.get("rev") != 3:
                    bad("alert signature or rev", where)
        # Suricata's flow event says alerted when any alert was raised on the flow.
        for fid in alerted:
            if fid in flows and flows[fid][0] is not True:
                bad("a flow with alerts whose flow event says alerted: false", flows[fid][1])

    with tempfile.TemporaryDirectory() as d:
        rules = os.path.join(d, "all.rules")
        open(rules, "w", encoding="utf-8").write(RULES)
        runs = []
        # Alerts only the application layer decides: their flows' events must say alerted too.
        app_rules = os.path.join(d, "app.rules")
        open(app_rules, "w").write(RULES.splitlines()[-1] + "\n")
        for cap in captures(data):
            runs.append((cap, ["-r", cap, "-s", app_rules]))
        for cap in captures(data):
            runs.append((cap, ["-r", cap, "--module",
                               "firewall:classification-file=" + os.path.join(data, "eve", "classification.config"),
                               "-s", rules, "--eve-drops", "--app-layer", "--eve-ethernet", "--eve-anomaly",
                               "--eve-anomaly-applayer"]))
        fw = os.path.join(data, "pcaps", "suricata-verify", "firewall")
        for t in sorted(os.listdir(fw)) if os.path.isdir(fw) else []:
            tdir = os.path.join(fw, t)
            pc = [f for f in os.listdir(tdir) if f.endswith(".pcap")]
            fr = [f for f in os.listdir(tdir) if f.endswith(".rules")]
            if pc and fr:
                runs.append((t, ["-r", os.path.join(tdir, pc[0]), "--firewall-rules", os.path.join(tdir, fr[0]), "--eve-drops",
                                 "--eve-ethernet"]))
        for k, (label, args) in enumerate(runs):
            out = os.path.join(d, f"run{k}")
            os.mkdir(out)
            p = subprocess.run([gaspp, "--backend", backend, "-q", "-l", out] + args, capture_output=True, text=True)
            if p.returncode not in (0, 2):
                bad(f"gaspp exit {p.returncode}", f"{label}: {p.stderr.strip()[-200:]}")
                continue
            check_file(os.path.join(out, "eve.json"), os.path.relpath(label, data) if os.path.isabs(label) else label)
    print("events checked: " + ", ".join(f"{k} {v}" for k, v in sorted(seen.items(), key=lambda x: str(x[0]))))
    for want in ("flow", "stats", "alert", "drop", "anomaly decode", "anomaly applayer", "ether"):
        if not seen[want]:
            bad(f"no {want} event was written", "-")
    for kind, n in sorted(problems.items()):
        print(f"FAIL {n:6} x {kind}  (first: {examples[kind]})")
    print(f"{len(problems)} kinds of problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
