#!/usr/bin/env python3
"""A full flow table in IPS mode fails closed (Suricata's exception policies), built with scapy.

The flow table holds 8 flows (--flow-capacity 8). Firewall rules accept TCP and UDP packets and
every HTTP/1 hook but drop the flow at a GET request line. Eight HTTP connections send a GET each
(their flows are dropped there), then eight DNS-like UDP flows arrive while the table is full of
dropped flows, then every HTTP connection sends more data. Written out by hand:
  * a dropped flow is never evicted, so the later packets of the HTTP connections are still
    dropped by their flow's decision (reason "flow drop") — before, the UDP flows evicted them and
    the later segments, picked up midstream and not seen as HTTP, were let through;
  * the UDP packets find no room: with the default exception policy (auto) in IPS mode they are
    dropped, reason "flow memcap" (ips.drop_reason.flow_memcap, flows.table_full_dropped);
    with `--set exception-policy=ignore` (or flow.memcap-policy=pass-packet) they pass untracked;
    with flow.memcap-policy=drop-packet they are dropped even without a firewall (shown on a second
    capture whose new flow meets a full table of flows all in use by its batch).
Each run is repeated with batches of 1 and 5 packets: within one batch, which of more new flows
than there is room for get the last slots depends on the order threads reach the table.

usage: exception_policy.py GASPP [--backend cpu|cuda]
"""
import json
import os
import subprocess
import sys
import tempfile

try:
    from scapy.all import IP, TCP, UDP, Ether, Raw, wrpcap
except ImportError:
    print("scapy is not installed (scripts/setup.sh installs it); skipping")
    sys.exit(1 if os.environ.get("CI") else 77)

RULES = """accept:hook tcp:all any any <> any any (sid:1;)
accept:hook udp:all any any <> any any (sid:2;)
accept:hook http1:request_started any any -> any any (sid:3;)
drop:flow http1:request_line any any -> any any (http.method; content:"GET"; sid:4;)
accept:hook http1:request_line any any -> any any (sid:5;)
"""


def capture():
    pkts, http, later, udp = [], [], [], []
    for k in range(8):
        c, s, cp = f"10.0.1.{k + 1}", "10.0.0.80", 40000 + k
        def tcp(frm, flags, seq, ack, data=b""):
            src, dst, sport, dport = (c, s, cp, 80) if frm == "c" else (s, c, 80, cp)
            p = Ether() / IP(src=src, dst=dst) / TCP(sport=sport, dport=dport, flags=flags, seq=seq, ack=ack, window=65535)
            return p / Raw(data) if data else p
        req = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
        http.append([tcp("c", "S", 100, 0), tcp("s", "SA", 900, 101), tcp("c", "A", 101, 901),
                     tcp("c", "PA", 101, 901, req)])
        later.append([tcp("c", "PA", 101 + len(req), 901, b"more data"), tcp("s", "PA", 901, 101 + len(req), b"HTTP/1.1 200 OK\r\n\r\n")])
    for k in range(8):
        udp.append(Ether() / IP(src=f"10.0.2.{k + 1}", dst="10.0.0.53") / UDP(sport=5000 + k, dport=53) / Raw(b"query"))
    for h in http:
        pkts += h
    first_udp = len(pkts) + 1
    pkts += udp
    first_later = len(pkts) + 1
    for l in later:
        pkts += l
    for k, p in enumerate(pkts):
        p.time = 1_700_000_000 + k * 0.001
    udp_nums = list(range(first_udp, first_udp + 8))
    later_nums = list(range(first_later, len(pkts) + 1))
    get_nums = [4 * k + 4 for k in range(8)]
    return pkts, get_nums, udp_nums, later_nums


def full_table_ids():
    """Eight UDP flows fill the table in the first batch of 9 packets; the second batch touches all
    eight again and brings a ninth flow, which can evict none of them (all in use by the batch)."""
    pkts = [Ether() / IP(src=f"10.0.3.{k + 1}", dst="10.0.0.53") / UDP(sport=6000 + k, dport=53) / Raw(b"q")
            for k in list(range(8)) + [0] + list(range(8))]
    pkts.insert(17, Ether() / IP(src="10.0.4.1", dst="10.0.0.53") / UDP(sport=7000, dport=53) / Raw(b"new"))
    for k, p in enumerate(pkts):
        p.time = 1_700_000_000 + k * 0.001
    return pkts, 18  # the new flow's packet number


def main():
    gaspp = sys.argv[1]
    backend = sys.argv[sys.argv.index("--backend") + 1] if "--backend" in sys.argv else "cpu"
    pkts, gets, udps, later = capture()
    failed = 0
    with tempfile.TemporaryDirectory() as d:
        pcap = os.path.join(d, "in.pcap")
        wrpcap(pcap, pkts)
        pcap_ids = os.path.join(d, "ids.pcap")
        ids_pkts, new_flow = full_table_ids()
        wrpcap(pcap_ids, ids_pkts)
        rules = os.path.join(d, "fw.rules")
        with open(rules, "w") as f:
            f.write(RULES)
        fw = ["--firewall-rules", rules]
        # IDS: detection rules that never drop (a module, so verdicts are accounted and reported).
        alert = os.path.join(d, "alert.rules")
        with open(alert, "w") as f:
            f.write('alert udp any any -> any 9999 (msg:"never"; sid:9;)\n')
        ids = ["--rules", alert]
        # name, extra args, {packet: drop reason}
        drops_fw = {n: "rules" for n in gets} | {n: "flow drop" for n in later}
        cases = [
            ("IPS, default (auto): untracked packets dropped", fw, drops_fw | {n: "flow memcap" for n in udps}),
            ("IPS, exception-policy ignore", fw + ["--set", "exception-policy=ignore"], drops_fw),
            ("IPS, flow.memcap-policy pass-packet over the master switch",
             fw + ["--set", "exception-policy=drop-flow", "--set", "flow.memcap-policy=pass-packet"], drops_fw),
            ("IDS, default (auto): nothing dropped", ids, {}),
            # Without drops, a new flow finds room by evicting an idle one; here none is idle.
            ("IDS, flow.memcap-policy drop-packet, every flow in use", ids + ["--set", "flow.memcap-policy=drop-packet"],
             {new_flow: "flow memcap"}),
            ("IDS, default (auto), every flow in use: passes untracked", ids, {}),
            # Suricata ignores the master switch's drop values outside IPS mode.
            ("IDS, exception-policy drop-packet ignored, every flow in use", ids + ["--set", "exception-policy=drop-packet"], {}),
        ]
        for name, extra, want in cases:
            problems = []
            # Which flows of one batch get the last slots of a full table depends on the order
            # threads reach it (docs/flows.md), so the cases use batches that never bring more new
            # flows than there is room: 1 and 5 packets; 9 for the every-flow-in-use capture.
            in_use = "every flow in use" in name
            for batch in ("9",) if in_use else ("1", "5"):
                out = os.path.join(d, "out")
                subprocess.run(["rm", "-rf", out])
                os.makedirs(out)
                cmd = [gaspp, "-r", pcap_ids if in_use else pcap, "--backend", backend, "-q", "-l", out, "--batch", batch, "--flow-capacity", "8",
                       "--eve-drops", "-w", os.path.join(out, "pass.pcap"), "--stats-json",
                       os.path.join(out, "stats.json")] + extra
                p = subprocess.run(cmd, capture_output=True, text=True)
                if p.returncode != 0:
                    problems.append(f"batch {batch}: gaspp failed ({p.returncode}): {p.stderr.strip()}")
                    continue
                events = [json.loads(line) for line in open(os.path.join(out, "eve.json"))]
                got = {e["pcap_cnt"]: e["drop"]["reason"] for e in events if e["event_type"] == "drop"}
                if got != want:
                    problems.append(f"batch {batch}: drops {sorted(got.items())}, want {sorted(want.items())}")
                st = json.load(open(os.path.join(out, "stats.json")))
                memcap = sum(1 for r in want.values() if r == "flow memcap")
                if st["flows"].get("table_full_dropped") != memcap:
                    problems.append(f"batch {batch}: flows.table_full_dropped {st['flows'].get('table_full_dropped')}, want {memcap}")
                stats = [e for e in events if e["event_type"] == "stats"][-1]["stats"]
                if want and stats["ips"]["drop_reason"].get("flow_memcap") != memcap:
                    problems.append(f"batch {batch}: ips.drop_reason {stats['ips']['drop_reason']}")
            print(f"{'ok' if not problems else 'FAIL':5} {name}" + "".join(f"\n      {x}" for x in problems))
            failed += bool(problems)
    print(f"{failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
