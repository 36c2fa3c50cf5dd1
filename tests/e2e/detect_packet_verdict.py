#!/usr/bin/env python3
"""The verdict object of every alert on a packet is the packet's, as Suricata's EveAddVerdict
writes it from the packet's final action (output-json-alert.c), not the alerting signature's own:

  * a packet a reject signature dropped: its reject alert and the plain alerts of the same packet
    all say `"verdict":{"action":"drop","reject_target":"to_client","reject":["tcp-reset"]}` (a
    reject answers the source: Suricata's "to_client");
  * a packet a drop signature dropped on the host (one reading a flowbit): its later plain alerts
    say "drop" too, without reject members;
  * a packet nothing dropped: "alert";
  * with --eve-drops, the drop event of a packet of a flow with flowbits carries them
    (`metadata.flowbits`, as Suricata's EveAddCommonOptions adds them to drop events), the other none.

A capture built here (scapy): a TCP flow whose client segments carry REJ, DRP or ALR; the
signatures below. Every alert's verdict must be the reference's, on the CPU with Hyperscan and on
the device's path (or CUDA: detect_packet_verdict.py GASPP cuda).

usage: detect_packet_verdict.py GASPP [cpu|cpu-device|cuda ...]
"""
import os
import sys
import tempfile

from detect_paths import run_detect

try:
    from scapy.all import IP, TCP, Ether, Raw, wrpcap
except ImportError:
    print("FAIL: scapy is not installed (scripts/setup.sh installs it)")
    sys.exit(1)

RULES = """alert tcp any any -> any any (msg:"set"; flow:established; content:"SYN-DONE"; flowbits:set,f; noalert; sid:10;)
reject tcp any any -> any any (msg:"reject"; content:"REJ"; sid:1;)
alert tcp any any -> any any (msg:"alert on rej"; content:"REJ"; sid:2;)
drop tcp any any -> any any (msg:"drop with a flowbit"; flowbits:isset,f; content:"DRP"; sid:3;)
alert tcp any any -> any any (msg:"alert on drp"; content:"DRP"; sid:4;)
alert tcp any any -> any any (msg:"alert"; content:"ALR"; sid:5;)
"""


def main():
    gaspp = sys.argv[1]
    paths = sys.argv[2:] or ["cpu", "cpu-device"]
    frames, want, want_drops = [], {}, {}
    t = 100.0

    def add(f):
        nonlocal t
        f.time = t
        t += 0.01
        frames.append(Ether() / f)

    # One flow per case: a content match on a TCP flow is a stream match, whose drop takes the flow
    # (Suricata's too), so nothing after it would alert.
    for k, words in enumerate([["ALR", "REJ"], ["SYN-DONE", "ALR", "DRP"], ["ALR", "ALR"]]):
        c, s, sport = "10.8.0.1", "10.8.0.2", 40000 + k
        seq_c, seq_s = 1000, 5000
        add(IP(src=c, dst=s) / TCP(sport=sport, dport=80, flags="S", seq=seq_c - 1))
        add(IP(src=s, dst=c) / TCP(sport=80, dport=sport, flags="SA", seq=seq_s - 1, ack=seq_c))
        add(IP(src=c, dst=s) / TCP(sport=sport, dport=80, flags="A", seq=seq_c, ack=seq_s))
        for word in words:
            add(IP(src=c, dst=s) / TCP(sport=sport, dport=80, flags="PA", seq=seq_c, ack=seq_s) / Raw(word.encode()))
            n = len(frames)
            if word == "REJ":
                want_drops[n + 0] = None
                v = {"action": "drop", "reject_target": "to_client", "reject": ["tcp-reset"]}
                want[(n, 1)] = v
                want[(n, 2)] = v
            elif word == "DRP":
                want[(n, 3)] = {"action": "drop"}
                want[(n, 4)] = {"action": "drop"}
                want_drops[n] = {"flowbits": ["f"]}
            elif word == "ALR":
                want[(n, 5)] = {"action": "alert"}
            seq_c += len(word)
            add(IP(src=s, dst=c) / TCP(sport=80, dport=sport, flags="A", seq=seq_s, ack=seq_c))
    problems = 0
    with tempfile.TemporaryDirectory() as d:
        pcap, rules = os.path.join(d, "v.pcap"), os.path.join(d, "v.rules")
        wrpcap(pcap, frames)
        with open(rules, "w") as f:
            f.write(RULES)
        for path in paths:
            events = run_detect(gaspp, pcap, rules, d, path, ["--eve-verdict", "--eve-drops"])
            if events is None:
                problems += 1
                continue
            got = {(e["pcap_cnt"], e["alert"]["signature_id"]): e.get("verdict") for e in events
                   if e.get("event_type") == "alert"}
            bad = [f"pcap_cnt {k[0]} sid {k[1]}: {got.get(k)}, reference {v}" for k, v in sorted(want.items())
                   if got.get(k) != v]
            bad += [f"pcap_cnt {k[0]} sid {k[1]}: an alert the reference has not" for k in sorted(set(got) - set(want))]
            drops = {e["pcap_cnt"]: e.get("metadata") for e in events if e.get("event_type") == "drop"}
            bad += [f"drop event at pcap_cnt {n}: metadata {drops.get(n, 'missing')}, reference {m}"
                    for n, m in sorted(want_drops.items()) if n not in drops or drops[n] != m]
            print(f"{'ok  ' if not bad else 'FAIL'} ({path}): {len(got)} alerts, reference {len(want)}")
            for b in bad[:10]:
                print("     " + b)
            problems += bool(bad)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
