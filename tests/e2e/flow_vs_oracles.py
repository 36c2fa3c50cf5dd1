#!/usr/bin/env python3
"""Flow records checked against other tools' expected outputs in ../shared/data:

  * nDPI (`pcaps/ndpi/<name>.pcap.out`): every flow nDPI lists, with its packets and bytes each
    way, must be one of our EVE flow records with the same counts (and nothing else);
  * suricata-verify tests whose test.yaml counts `event_type: flow` events (eve-flow-vlan).

usage: flow_vs_oracles.py GASPP DATA_DIR [--backend cpu|cuda]
"""
import json
import os
import re
import subprocess
import sys
import tempfile

FLOW_LINE = re.compile(r"^\s+\d+\s+(\w+) (\S+):(\d+) (?:<->|->) (\S+):(\d+) .*?\[(\d+) pkts/(\d+) bytes (?:<->|->) (\d+) pkts/(\d+) bytes\]")


def parse_ndpi(path):
    flows = []
    for line in open(path):
        m = FLOW_LINE.match(line)
        if m:
            proto, a, ap, b, bp, p1, b1, p2, b2 = m.groups()
            flows.append(((proto, a.strip("[]"), int(ap), b.strip("[]"), int(bp)), (int(p1), int(b1), int(p2), int(b2))))
    return flows


def eve_flows(gaspp, pcap, backend, d):
    for f in ("eve.json",):
        if os.path.exists(os.path.join(d, f)):
            os.remove(os.path.join(d, f))
    p = subprocess.run([gaspp, "-r", pcap, "--backend", backend, "-q", "-l", d], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"gaspp failed on {pcap}: {p.stderr}")
    return [json.loads(line) for line in open(os.path.join(d, "eve.json")) if '"event_type":"flow"' in line]


def ours_by_tuple(recs):
    out = {}
    for r in recs:
        f = r["flow"]
        key = (r["proto"], r["src_ip"], r.get("src_port", 0), r["dest_ip"], r.get("dest_port", 0))
        out.setdefault(key, []).append((f["pkts_toserver"], f["bytes_toserver"], f["pkts_toclient"], f["bytes_toclient"]))
    return out


def check_ndpi(gaspp, data, backend, d):
    failures = 0
    ndir = os.path.join(data, "pcaps", "ndpi")
    for name in sorted(os.listdir(ndir)):
        if not name.endswith(".pcap"):
            continue
        want = parse_ndpi(os.path.join(ndir, name + ".out"))
        ours = ours_by_tuple(eve_flows(gaspp, os.path.join(ndir, name), backend, d))
        bad = []
        for (proto, a, ap, b, bp), (p1, b1, p2, b2) in want:
            fwd = ours.get((proto, a, ap, b, bp), [])
            rev = ours.get((proto, b, bp, a, ap), [])
            if (p1, b1, p2, b2) in fwd or (p2, b2, p1, b1) in rev:
                continue
            bad.append(f"{proto} {a}:{ap} <-> {b}:{bp}: nDPI {p1}/{b1} <-> {p2}/{b2}, ours {fwd or [x[2:] + x[:2] for x in rev] or 'none'}")
        n_ours = sum(len(v) for v in ours.values())
        if n_ours != len(want):
            bad.append(f"{n_ours} flows, nDPI lists {len(want)}")
        print(f"{'ok  ' if not bad else 'FAIL'} ndpi/{name}: {len(want)} flows")
        for b in bad:
            print("     " + b)
        failures += bool(bad)
    return failures


def check_suricata_flow_counts(gaspp, data, backend, d):
    # eve-flow-vlan/test.yaml: exactly one flow event with vlan [6], one with vlan [1, 10].
    pcap = os.path.join(data, "pcaps", "suricata-verify", "eve-flow-vlan", "input.pcap")
    recs = eve_flows(gaspp, pcap, backend, d)
    got = {str(v): sum(1 for r in recs if r.get("vlan") == v) for v in ([6], [1, 10])}
    ok = got == {"[6]": 1, "[1, 10]": 1}
    print(f"{'ok  ' if ok else 'FAIL'} suricata-verify/eve-flow-vlan: flow events with vlan [6]: {got['[6]']}, "
          f"with vlan [1, 10]: {got['[1, 10]']} (test.yaml: 1 and 1)")
    return 0 if ok else 1


def main():
    args = sys.argv[1:]
    gaspp, data = args[0], args[1]
    backend = args[3] if args[2:3] == ["--backend"] else "cpu"
    if not os.path.isdir(os.path.join(data, "pcaps", "ndpi")):
        print(f"{data}/pcaps/ndpi not found; skipping")
        return 77
    with tempfile.TemporaryDirectory() as d:
        failures = check_ndpi(gaspp, data, backend, d) + check_suricata_flow_counts(gaspp, data, backend, d)
    print(f"{failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
