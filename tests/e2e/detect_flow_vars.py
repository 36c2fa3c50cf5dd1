#!/usr/bin/env python3
"""Flow variables in EVE (Suricata's EveAddMetadata, eve-log's top-level `metadata`, on by default),
against a reference written here from Suricata's output-json.c:

  * a flow's flowbits named traffic/id/NAME and traffic/label/NAME make `"traffic":{"id":[NAME...],
    "label":[NAME...]}`; the others `"metadata":{"flowbits":[...]}`, and its flowints
    `"metadata":{"flowints":{NAME: value}}`, each list in the order the variables were first set
    (a bit unset and set again goes to the end: Suricata's variable list);
  * pcre captures (detect-pcre.c): `flow:NAME` into the flow's `"metadata":{"flowvars":[{NAME:
    value}]}` (a name set again keeps its place, with the new value), `(?P<pkt_NAME>...)` into the
    packet's `"metadata":{"pktvars":[...]}` on its alert, `(?P<alert_NAME>...)` into the alert's
    `alert.context`; a noalert signature stores its captures too;
  * an alert carries the flow's variables as its packet left them (the packet's own flowbits and
    flowints applied), a flow event as the flow ended; a flow without variables has neither member;
  * the firewall module's alerts (a header-only rule, on the first packet of the flow's reply
    direction, after all of its client's packets) carry the flow's variables too;
  * with eve-log's top-level `metadata: no` (suricata.yaml), no event has `traffic` or `metadata`,
    and alert.context keeps the alert captures.

A capture built here (scapy): 30 UDP flows of 3 to 15 packets, each payload one of the rules'
keywords (set, unset, toggle, traffic id/label, flowint set/add, a flow capture) or ALRT / ALPV, which
alert (ALPV with a packet and an alert capture). Every alert's
and every flow event's `traffic` and `metadata` must be the reference's, on the CPU with Hyperscan and
on the device's path (or CUDA: detect_flow_vars.py GASPP cuda).

usage: detect_flow_vars.py GASPP [cpu|cpu-device|cuda ...]
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

# keyword: (option, effect) where effect is (kind, name, arg)
RULES = {
    "SETA": ("flowbits:set,a;", ("set", "a", None)),
    "SETB": ("flowbits:set,b;", ("set", "b", None)),
    "UNSB": ("flowbits:unset,b;", ("unset", "b", None)),
    "TOGC": ("flowbits:toggle,c;", ("toggle", "c", None)),
    "TIDX": ("flowbits:set,traffic/id/app1;", ("set", "traffic/id/app1", None)),
    "TIDY": ("flowbits:set,traffic/id/app2;", ("set", "traffic/id/app2", None)),
    "TLAB": ("flowbits:set,traffic/label/lab1;", ("set", "traffic/label/lab1", None)),
    "INTS": ("flowint:n,=,5;", ("iset", "n", 5)),
    "INTA": ("flowint:m,+,2;", ("iadd", "m", 2)),
    "UIDx": ('pcre:"/UID(.)/, flow:uid";', ("fvar", "uid", None)),
    "OSNx": ('pcre:"/OSN(?P<flow_os>.)/";', ("fvar", "os", None)),
}


def rules_text():
    out = [f'alert udp any any -> any any (msg:"{k}"; content:"{k.rstrip("x")}"; {opt} noalert; sid:{i + 1};)'
           for i, (k, (opt, _)) in enumerate(RULES.items())]
    out.append('alert udp any any -> any any (msg:"alert"; content:"ALRT"; sid:100;)')
    out.append('alert udp any any -> any any (msg:"alert with captures"; content:"ALPV"; '
               'pcre:"/ALPV(?P<pkt_pv>[a-z])(?P<alert_ac>[a-z])/"; sid:101;)')
    out.append('alert udp 10.7.9.9 7777 -> any any (msg:"reply, header only"; sid:300;)')
    return "\n".join(out) + "\n"


def members(bits, ints, fvars=(), pvars=()):
    """The event members the reference expects: {"traffic": ..., "metadata": ...} (absent when empty)."""
    m = {}
    ids = [b[len("traffic/id/"):] for b in bits if b.startswith("traffic/id/")]
    labels = [b[len("traffic/label/"):] for b in bits if b.startswith("traffic/label/")]
    plain = [b for b in bits if not b.startswith("traffic/")]
    if ids or labels:
        m["traffic"] = {k: v for k, v in (("id", ids), ("label", labels)) if v}
    md = {}
    if plain:
        md["flowbits"] = plain
    if ints:
        md["flowints"] = dict(ints)
    if fvars:
        md["flowvars"] = [{k: v} for k, v in fvars]
    if pvars:
        md["pktvars"] = [{k: v} for k, v in pvars]
    if md:
        m["metadata"] = md
    return m


def main():
    gaspp = sys.argv[1]
    paths = sys.argv[2:] or ["cpu", "cpu-device"]
    rng = random.Random(20261208)
    words = list(RULES) + ["ALRT"] * 3 + ["ALPV"] * 2
    frames, t = [], 1000.0
    want_alerts, want_flows = {}, {}
    flows = [(f"10.7.{i // 200}.{i % 200 + 1}", 5000 + i) for i in range(30)]
    seq = []
    for fl in flows:
        for _ in range(rng.randint(3, 15)):
            seq.append((fl, rng.choice(words)))
    rng.shuffle(seq)
    state = {}
    for n, ((src, sport), w) in enumerate(seq, start=1):
        bits, ints, fvars = state.setdefault((src, sport), ([], [], []))
        ch = rng.choice("abcdefgh")
        if w == "ALRT":
            want_alerts[n] = members(bits, ints, fvars)
        elif w == "ALPV":
            c2 = rng.choice("xyz")
            want_alerts[n] = dict(members(bits, ints, fvars, [("pv", ch)]), context={"ac": c2})
            w = "ALPV" + ch + c2
        else:
            kind, name, arg = RULES[w][1]
            if kind == "set" and name not in bits:
                bits.append(name)
            elif kind == "unset" and name in bits:
                bits.remove(name)
            elif kind == "toggle":
                bits.remove(name) if name in bits else bits.append(name)
            elif kind == "fvar":
                at = next((i for i, (k, _) in enumerate(fvars) if k == name), None)
                if at is None:
                    fvars.append((name, ch))
                else:
                    fvars[at] = (name, ch)
                w = w[:3] + ch
            elif kind in ("iset", "iadd"):
                cur = next((i for i, (k, _) in enumerate(ints) if k == name), None)
                if cur is None:
                    ints.append((name, arg))  # add on an unset integer stores the value (Suricata)
                elif kind == "iset":
                    ints[cur] = (name, arg)
                else:
                    ints[cur] = (name, ints[cur][1] + arg)
        f = Ether() / IP(src=src, dst="10.7.9.9") / UDP(sport=sport, dport=7777) / Raw(w.encode())
        f.time = t
        t += 0.01
        frames.append(f)
    want_replies = {}
    for fl, (bits, ints, fvars) in state.items():
        want_flows[fl] = members(bits, ints, fvars)
        # Each flow's reply, after its last packet: the firewall's header-only alert.
        f = Ether() / IP(src="10.7.9.9", dst=fl[0]) / UDP(sport=7777, dport=fl[1]) / Raw(b"REPLY")
        f.time = t
        t += 0.01
        frames.append(f)
        want_replies[len(frames)] = want_flows[fl]
    problems = 0
    with tempfile.TemporaryDirectory() as d:
        pcap, rules = os.path.join(d, "v.pcap"), os.path.join(d, "v.rules")
        wrpcap(pcap, frames)
        with open(rules, "w") as f:
            f.write(rules_text())
        for path in paths:
            events = run_detect(gaspp, pcap, rules, d, path)
            if events is None:
                problems += 1
                continue
            bad = []
            got_alerts, got_flows = {}, {}
            got_replies = {}
            for e in events:
                m = {k: e[k] for k in ("traffic", "metadata") if k in e}
                if "context" in e.get("alert", {}):
                    m["context"] = e["alert"]["context"]
                if e.get("event_type") == "alert" and e["alert"]["signature_id"] == 300:
                    got_replies[e["pcap_cnt"]] = m
                elif e.get("event_type") == "alert":
                    got_alerts[e["pcap_cnt"]] = m
                elif e.get("event_type") == "flow":
                    got_flows[(e["src_ip"], e["src_port"])] = m
            for n, w in want_alerts.items():
                if got_alerts.get(n) != w:
                    bad.append(f"alert at pcap_cnt {n}: {got_alerts.get(n)}, reference {w}")
            if set(got_alerts) != set(want_alerts):
                bad.append(f"alerts at {sorted(set(got_alerts) ^ set(want_alerts))[:8]}: not the reference's")
            for fl, w in want_flows.items():
                if got_flows.get(fl) != w:
                    bad.append(f"flow {fl}: {got_flows.get(fl)}, reference {w}")
            for n, w in want_replies.items():
                if got_replies.get(n) != w:
                    bad.append(f"firewall alert at pcap_cnt {n}: {got_replies.get(n)}, reference {w}")
            print(f"{'ok  ' if not bad else 'FAIL'} ({path}): {len(got_alerts)} alerts, {len(got_flows)} flow events compared")
            for b in bad[:10]:
                print("     " + b)
            problems += bool(bad)
        # eve-log metadata: no
        conf = os.path.join(d, "off.yaml")
        with open(conf, "w") as f:
            f.write("%YAML 1.1\n---\noutputs:\n  - eve-log:\n      enabled: yes\n      metadata: no\n      types:\n        - alert\n")
        events = run_detect(gaspp, pcap, rules, d, "cpu", ["-c", conf])
        if events is None:
            problems += 1
        else:
            leaked = [e for e in events if "metadata" in e or "traffic" in e]
            contexts = sum(1 for e in events if "context" in e.get("alert", {}))
            want_contexts = sum(1 for w in want_alerts.values() if "context" in w)
            ok = not leaked and contexts == want_contexts
            print(f"{'ok  ' if ok else 'FAIL'} (metadata: no): {len(leaked)} events with traffic/metadata, "
                  f"{contexts} alert contexts (reference {want_contexts})")
            problems += not ok
    # The capture must exercise every kind of member.
    kinds = {k for m in list(want_alerts.values()) + list(want_flows.values()) for k in m}
    md = [m.get("metadata", {}) for m in list(want_alerts.values()) + list(want_flows.values())]
    if kinds != {"traffic", "metadata", "context"} or not all(any(k in x for x in md) for k in ("flowints", "flowvars", "pktvars")):
        print(f"FAIL: the reference exercises only {sorted(kinds)}")
        problems += 1
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
