#!/usr/bin/env python3
"""Invalid TCP segments in IDS and IPS (firewall) mode, built with scapy.

One connection carries three segments that are invalid for its session, each with a payload that
must never reach the stream:
  * data past the server's window (out of window),
  * a RST from the server whose timestamp is older than the server's last one (PAWS),
  * data from the client whose timestamp is 0 in a session that uses timestamps.
Without a firewall they are counted (tcp_out_of_window, tcp_bad_timestamp) and ignored: the flow
stays established and the stream holds only the valid bytes. With --firewall-rules (IPS mode) they
are also dropped, with an EVE drop event whose reason is Suricata's "stream error", the stats key
ips.drop_reason.stream_error, and they are missing from -w. Each run is repeated with batches of 1
and 3 packets, which must not change anything.

Both modes also load a rule that alerts on every TCP packet (like-IP-only: a negated address). An alert on an invalid segment that IPS
mode drops is still an alert: it carries the same `flow` object (the flow's counters right after
that packet) as the IDS run's alert on that packet, the oracle here.

usage: stream_ips.py GASPP [--backend cpu|cuda]
"""
import json
import os
import subprocess
import sys
import tempfile

try:
    from scapy.all import IP, TCP, Ether, Raw, wrpcap, rdpcap
except ImportError:
    print("scapy is not installed (scripts/setup.sh installs it); skipping")
    sys.exit(1 if os.environ.get("CI") else 77)

C, S, CP, SP = "10.0.0.1", "10.0.0.2", 40000, 80


def seg(frm, flags, seq, ack, data=b"", win=1000, ts=None, wscale=None):
    src, dst, sport, dport = (C, S, CP, SP) if frm == "c" else (S, C, SP, CP)
    opts = []
    if wscale is not None:
        opts.append(("WScale", wscale))
    if ts is not None:
        opts.append(("Timestamp", ts))
    seg.n = getattr(seg, "n", 0) + 1
    p = Ether() / IP(src=src, dst=dst, tos=0x28, id=4000 + seg.n, ttl=60 + seg.n) / TCP(
        sport=sport, dport=dport, flags=flags, seq=seq, ack=ack, window=win, urgptr=seg.n, options=opts)
    return p / Raw(data) if data else p


def capture():
    # Client ISN 1000, server ISN 5000; both SYNs carry timestamps and no window scale. The server
    # offers 100 bytes of window throughout.
    good1, good2, resp = b"A" * 60, b"B" * 40, b"response"
    pkts = [
        seg("c", "S", 1000, 0, ts=(100, 0)),
        seg("s", "SA", 5000, 1001, win=100, ts=(900, 100)),
        seg("c", "A", 1001, 5001, ts=(101, 900)),
        seg("c", "PA", 1001, 5001, good1, ts=(102, 900)),                      # 1001..1061: in window
        seg("c", "PA", 1061, 5001, b"X" * 50, ts=(103, 900)),                  # ends at 1111 > 1101: out of window
        seg("s", "A", 5001, 1061, win=100, ts=(901, 102)),                     # edge 1161
        seg("s", "R", 5001, 0, ts=(800, 102)),                                 # PAWS: 800 < 901
        seg("c", "PA", 1061, 5001, b"Y" * 40, ts=(0, 901)),                    # tsval 0
        seg("c", "PA", 1061, 5001, good2, ts=(104, 901)),                      # 1061..1101
        seg("s", "PA", 5001, 1101, resp, win=100, ts=(902, 104)),
    ]
    for k, p in enumerate(pkts):
        p.time = 1_700_000_000 + k * 0.01
    invalid = [5, 7, 8]  # 1-based packet numbers
    return pkts, invalid, good1 + good2, resp


def run(gaspp, backend, pcap, d, extra):
    for f in ("eve.json", "out.pcap", "stats.json"):
        if os.path.exists(os.path.join(d, f)):
            os.remove(os.path.join(d, f))
    cmd = [gaspp, "-r", pcap, "--backend", backend, "-q", "-l", d, "--stats-json", os.path.join(d, "stats.json"),
           "--dump-streams", os.path.join(d, "streams")] + extra
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"gaspp failed ({p.returncode}): {p.stderr}")
    events = [json.loads(line) for line in open(os.path.join(d, "eve.json"))]
    return events, json.load(open(os.path.join(d, "stats.json")))


def stream_bytes(d):
    out = {}
    root = os.path.join(d, "streams")
    for f in sorted(os.listdir(root)):
        if f.endswith(".tsv"):
            continue
        out[f] = open(os.path.join(root, f), "rb").read()
    return out


def main():
    gaspp = sys.argv[1]
    backend = sys.argv[sys.argv.index("--backend") + 1] if "--backend" in sys.argv else "cpu"
    pkts, invalid, want_c, want_s = capture()
    failed = 0
    with tempfile.TemporaryDirectory() as d:
        pcap = os.path.join(d, "in.pcap")
        wrpcap(pcap, pkts)
        rules = os.path.join(d, "fw.rules")
        with open(rules, "w") as f:
            f.write("accept:hook tcp:all any any -> any any (sid:1;)\n")
        alerts_file = os.path.join(d, "alert.rules")
        with open(alerts_file, "w") as f:
            # A negated address makes the rule like-IP-only: inspected on every packet, where
            # Suricata's IP-only engine would see each direction's first packet only.
            f.write('alert tcp any any -> !255.255.255.255 any (msg:"every tcp packet"; sid:2;)\n')
        ids_flow = {}  # batch -> {pcap_cnt: the IDS run's alert flow object}
        for mode in ("ids", "ips"):
            for batch in ("1", "3", "65536"):
                extra = ["--batch", batch, "-s", alerts_file]
                if mode == "ips":
                    extra += ["--firewall-rules", rules, "--eve-drops", "-w", os.path.join(d, "out.pcap")]
                events, st = run(gaspp, backend, pcap, d, extra)
                problems = []
                if st["flows"]["tcp_out_of_window"] != 1:
                    problems.append(f"tcp_out_of_window {st['flows']['tcp_out_of_window']}, want 1")
                if st["flows"]["tcp_bad_timestamp"] != 2:
                    problems.append(f"tcp_bad_timestamp {st['flows']['tcp_bad_timestamp']}, want 2")
                flows = [e for e in events if e["event_type"] == "flow"]
                if len(flows) != 1 or flows[0]["flow"]["state"] != "established":
                    problems.append(f"flows {[f['flow'].get('state') for f in flows]}, want one established")
                streams = stream_bytes(d)
                got = sorted(streams.values(), key=len)
                if got != sorted([want_c, want_s], key=len):
                    problems.append(f"stream contents {got}, want {[want_c, want_s]}")
                drops = [e for e in events if e["event_type"] == "drop"]
                stats = [e for e in events if e["event_type"] == "stats"][-1]["stats"]
                alert_flow = {e["pcap_cnt"]: e.get("flow") for e in events if e["event_type"] == "alert"}
                if sorted(alert_flow) != list(range(1, len(pkts) + 1)):
                    problems.append(f"alerts on packets {sorted(alert_flow)}, want every packet")
                if mode == "ids":
                    ids_flow[batch] = alert_flow
                    if drops or st["outcome"]["dropped"]:
                        problems.append("packets dropped without a firewall")
                else:
                    nums = [e["pcap_cnt"] for e in drops]
                    if nums != invalid:
                        problems.append(f"dropped packets {nums}, want {invalid}")
                    if any(e["drop"]["reason"] != "stream error" for e in drops):
                        problems.append(f"drop reasons {[e['drop']['reason'] for e in drops]}")
                    # Suricata's drop fields, from the packets as built.
                    for e in drops:
                        p = pkts[e["pcap_cnt"] - 1]
                        p = p.__class__(bytes(p))
                        want_f = {"len": p[IP].len, "tos": p[IP].tos, "ttl": p[IP].ttl, "ipid": p[IP].id,
                                  "tcpseq": p[TCP].seq, "tcpack": p[TCP].ack, "tcpwin": p[TCP].window,
                                  "tcpres": p[TCP].reserved, "tcpurgp": p[TCP].urgptr,
                                  "rst": "R" in str(p[TCP].flags), "psh": "P" in str(p[TCP].flags)}
                        got_f = {k: e["drop"].get(k) for k in want_f}
                        if got_f != want_f:
                            problems.append(f"packet {e['pcap_cnt']}: drop fields {got_f}, want {want_f}")
                    for n in invalid:
                        if not alert_flow.get(n) or alert_flow.get(n) != ids_flow[batch].get(n):
                            problems.append(f"packet {n}: alert flow {alert_flow.get(n)}, want {ids_flow[batch].get(n)}")
                    if stats["ips"]["drop_reason"]["stream_error"] != len(invalid):
                        problems.append(f"ips.drop_reason.stream_error {stats['ips']['drop_reason']['stream_error']}")
                    kept = [bytes(p) for p in rdpcap(os.path.join(d, "out.pcap"))]
                    want = [bytes(p) for k, p in enumerate(pkts, 1) if k not in invalid]
                    if kept != want:
                        problems.append(f"-w kept {len(kept)} packets, want the {len(want)} valid ones")
                name = f"{mode} batch {batch}"
                print(f"{'ok' if not problems else 'FAIL':5} {name}" + "".join(f"\n      {p}" for p in problems))
                failed += bool(problems)
    print(f"{failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
