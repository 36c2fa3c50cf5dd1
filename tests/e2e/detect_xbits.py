#!/usr/bin/env python3
"""xbits (Suricata's host and address-pair bits) against a reference written here from Suricata's
semantics (detect-xbits.c, host-bit.c, ippair-bit.c, detect-engine-sigorder.c):

  * set stores the bit with expiry = packet time + expire (default 30 s), or renews it;
  * isset holds while expiry >= packet time; an expired bit found by isset/isnotset is removed;
  * unset removes; toggle removes a present bit (expired or not) or adds it;
  * track ip_src / ip_dst: the packet's source / destination host; ip_pair: both, either order;
  * signatures run in Suricata's order: those that test host bits first, then those that test
    pair bits, then the rest, each group in load order; conditions are tested and changes applied
    signature by signature, so a test ranked before a set on the same packet does not see it.

A capture built here (scapy): 600 UDP packets among 5 hosts at 0.25 s steps (so that a packet
falls exactly on an expiry), each payload carrying one to three of the rules' keywords. Every
alert (pcap_cnt, sid) must be the reference's, on the CPU with Hyperscan and on the device's path
(or CUDA: detect_xbits.py GASPP cuda).

usage: detect_xbits.py GASPP [cpu|cpu-device|cuda ...]
"""
import os
import random
import sys
import tempfile

from detect_paths import run_detect

try:
    from scapy.all import IP, UDP, Ether, Raw, wrpcap
except ImportError:
    print("FAIL: scapy is not installed (scripts/setup.sh installs it)")
    sys.exit(1)

# sid: (keyword, [(cmd, name, track, expire or None)], noalert)
RULES = {
    1: ("HSET", [("set", "hx", "ip_src", 5)], True),
    2: ("HCHK", [("isset", "hx", "ip_src", None)], False),
    3: ("HCHK", [("isnotset", "hx", "ip_src", None)], False),
    4: ("DSET", [("set", "hx", "ip_dst", 7)], False),
    5: ("HUNS", [("unset", "hx", "ip_dst", None)], True),
    6: ("PSET", [("set", "px", "ip_pair", 4)], True),
    7: ("PCHK", [("isset", "px", "ip_pair", None)], False),
    8: ("TOGG", [("toggle", "tx", "ip_src", 3)], True),
    9: ("TCHK", [("isset", "tx", "ip_src", None)], False),
    10: ("MIXD", [("isset", "hx", "ip_src", None), ("set", "px", "ip_pair", 2)], False),
    11: ("DFLT", [("set", "dx", "ip_src", None)], True),
    12: ("DCHK", [("isnotset", "dx", "ip_dst", None)], False),
}
HOSTS = [f"10.9.0.{i}" for i in range(1, 6)]
TESTS = ("isset", "isnotset")


def rules_text():
    out = []
    for sid, (kw, cmds, noalert) in RULES.items():
        xb = " ".join(f"xbits:{c},{n},track {t}{f',expire {e}' if e else ''};" for c, n, t, e in cmds)
        out.append(f'alert udp any any -> any any (msg:"xbits {sid}"; content:"{kw}"; {xb}{" noalert;" if noalert else ""} sid:{sid};)')
    return "\n".join(out) + "\n"


def suricata_order():
    def role(sid, pair):
        return 0 if any(c in TESTS and (t == "ip_pair") == pair for c, _, t, _ in RULES[sid][1]) else 1
    return sorted(RULES, key=lambda s: (role(s, False), role(s, True), s))


def reference(packets):
    state = {}  # key -> {name: expiry (microseconds)}
    alerts = []
    order = suricata_order()

    def key(track, src, dst):
        if track == "ip_pair":
            return ("p",) + tuple(sorted([src, dst], key=lambda a: tuple(int(x) for x in a.split("."))))
        return ("h", src if track == "ip_src" else dst)

    for cnt, (t, src, dst, words) in enumerate(packets, 1):
        for sid in order:
            kw, cmds, noalert = RULES[sid]
            if kw not in words:
                continue
            ok = True
            for c, n, tr, _ in cmds:
                if c not in TESTS:
                    continue
                bits = state.get(key(tr, src, dst), {})
                is_set = n in bits and bits[n] >= t
                if n in bits and bits[n] < t:
                    del bits[n]
                if is_set != (c == "isset"):
                    ok = False
                    break
            if not ok:
                continue
            for c, n, tr, e in cmds:
                if c in TESTS:
                    continue
                bits = state.setdefault(key(tr, src, dst), {})
                exp = t + (e or 30) * 1000000
                if c == "set":
                    bits[n] = exp
                elif c == "unset":
                    bits.pop(n, None)
                elif n in bits:  # toggle
                    del bits[n]
                else:
                    bits[n] = exp
            if not noalert:
                alerts.append((cnt, sid))
    return sorted(alerts)


def main():
    gaspp = sys.argv[1]
    paths = sys.argv[2:] or ["cpu", "cpu-device"]
    rng = random.Random(20261127)
    words = sorted({kw for kw, _, _ in RULES.values()})
    packets, frames, t = [], [], 1000 * 1000000
    for _ in range(600):
        t += rng.choice([0, 250000, 500000, 1000000, 2000000])
        src, dst = rng.sample(HOSTS, 2)
        ws = rng.sample(words, rng.choice([1, 1, 2, 3]))
        packets.append((t, src, dst, set(ws)))
        f = Ether() / IP(src=src, dst=dst) / UDP(sport=rng.choice([4000, 4001, 4002]), dport=9999) / Raw(" ".join(ws).encode())
        f.time = t / 1e6
        frames.append(f)
    want = reference(packets)
    problems = 0
    with tempfile.TemporaryDirectory() as d:
        pcap, rules = os.path.join(d, "x.pcap"), os.path.join(d, "x.rules")
        wrpcap(pcap, frames)
        with open(rules, "w") as f:
            f.write(rules_text())
        for path in paths:
            events = run_detect(gaspp, pcap, rules, d, path, ["--stats-json", os.path.join(d, "stats.json")])
            if events is None:
                problems += 1
                continue
            got = sorted((e["pcap_cnt"], e["alert"]["signature_id"]) for e in events if e.get("event_type") == "alert")
            missing, extra = sorted(set(want) - set(got)), sorted(set(got) - set(want))
            ok = got == want
            print(f"{'ok  ' if ok else 'FAIL'} ({path}): {len(got)} alerts, reference {len(want)} "
                  f"(sids {sorted({s for _, s in want})})")
            for what, lst in (("missing", missing), ("extra", extra)):
                for cnt, sid in lst[:8]:
                    print(f"     {what}: pcap_cnt {cnt} sid {sid} (payload {' '.join(sorted(packets[cnt - 1][3]))})")
            problems += not ok
    # Every alerting rule must have alerted in the reference, or the capture tests too little.
    silent = {s for s, (_, _, na) in RULES.items() if not na} - {s for _, s in want}
    if silent:
        print(f"FAIL: the reference never alerts for sids {sorted(silent)}")
        problems += 1
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
