#!/usr/bin/env python3
"""Signature conditions on the packet's flow and VLAN tags (flow.pkts, flow.bytes and their
_toserver / _toclient forms, stream_size, flow.age, vlan.id, vlan.layers) on a capture built here (scapy):
TCP connections (handshake, then data both ways in order, random sizes) and UDP conversations,
each with 0 to 3 VLAN tags, their packets interleaved, and random rules whose conditions the test
evaluates itself on each packet as Suricata documents the keywords:

  * flow.pkts / flow.bytes count the flow's packets / frame bytes in a direction (toserver,
    toclient, either, both) with this packet;
  * flow.age COND: whole seconds from the flow's first packet to this one (the seconds of this
    packet's time minus those of the first's, as Suricata's detect-flow-age.c), packets spread
    over about 25 s at random sub-second steps;
  * stream_size SIDE,OP,N compares a TCP side's next_seq - isn (the client's is its SYN plus the
    data it sent, the server's likewise; 0 before the side's SYN), never for UDP;
  * vlan.id COND[,INDEX]: any tag (default), all (none: no match), all_or_absent, or_absent, or the
    one at an index (negative from the innermost; out of range: no match, oob_or: match);
    vlan.layers COND on how many tags there are;
  * Suricata's integer forms: N, =N, !N, !=N, <N, <=N, >N, >=N, N-M and N<>M (ends excluded), !N-M,
    &MASK=V, &MASK!=V, 0x hex, kb / mb units.

A rule alerts once per packet that meets its conditions; rules with a malformed value are errors
reported with their line. Batches of 16 packets make a flow's packets fall in one batch and across
batches. Stream rules (content with stream_size) check the flow as the packet that delivered the
data left it. The same runs on the device's path (detect:prefilter=device on the CPU) and, with
`cuda`, on the CUDA backend.

usage: detect_flow_counts.py GASPP [cpu|cpu-device|cuda ...]
"""
import operator
import random
import sys

from detect_base64 import bad_rules_reported, check_counts


def build(rng):
    from scapy.all import IP, TCP, UDP, Dot1Q, Ether, Raw
    flows = []
    for k in range(36):
        tags = [rng.choice([1, 2, 100, 200, 300, 4094, rng.randrange(1, 4095)]) for _ in range(rng.choice([0, 0, 1, 2, 3]))]
        flows.append({"tcp": k % 4 != 3, "cport": 2000 + k, "tags": tags, "c": f"10.3.0.{k + 1}", "s": "10.4.0.1"})
    # Each flow's packets in order: (flow, frame, from_client, stream size change)
    per_flow = []
    for f in flows:
        seq = [rng.randrange(2**32), rng.randrange(2**32)]  # client, server next seq
        out = []

        def frame(from_client, l4):
            l2 = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
            for t in f["tags"]:
                l2 = l2 / Dot1Q(vlan=t)
            src, dst = (f["c"], f["s"]) if from_client else (f["s"], f["c"])
            return l2 / IP(src=src, dst=dst) / l4

        if f["tcp"]:
            sp, dp = f["cport"], 80
            out.append((frame(True, TCP(sport=sp, dport=dp, flags="S", seq=seq[0])), True, 1))
            out.append((frame(False, TCP(sport=dp, dport=sp, flags="SA", seq=seq[1], ack=seq[0] + 1)), False, 1))
            seq = [seq[0] + 1, seq[1] + 1]
            out.append((frame(True, TCP(sport=sp, dport=dp, flags="A", seq=seq[0], ack=seq[1])), True, 0))
            for m in range(rng.randrange(1, 12)):
                c = rng.random() < 0.6
                data = bytes(rng.choice(b"abcdefgh") for _ in range(rng.choice([1, 10, 100, 300, rng.randrange(1, 600)])))
                data = b"MARK" + data
                s = 0 if c else 1
                l4 = TCP(sport=sp if c else dp, dport=dp if c else sp, flags="PA", seq=seq[s], ack=seq[s ^ 1]) / Raw(data)
                seq[s] += len(data)
                out.append((frame(c, l4), c, len(data)))
        else:
            for m in range(rng.randrange(1, 9)):
                c = m == 0 or rng.random() < 0.5
                l4 = UDP(sport=f["cport"] if c else 53, dport=53 if c else f["cport"]) / Raw(b"u" * rng.randrange(1, 200))
                out.append((frame(c, l4), c, 0))
        per_flow.append(out)
    # Interleave the flows, keeping each flow's order; then each packet's facts after it.
    order = [k for k, o in enumerate(per_flow) for _ in o]
    rng.shuffle(order)
    nxt = [0] * len(per_flow)
    state = [{"pkts": [0, 0], "bytes": [0, 0], "stream": [0, 0], "first": None} for _ in flows]
    pk, facts = [], []
    t = 1700000000.5
    for k in order:
        fr, c, grow = per_flow[k][nxt[k]]
        nxt[k] += 1
        st = state[k]
        t += rng.uniform(0, 0.12)
        fr.time = round(t, 6)
        if st["first"] is None:
            st["first"] = fr.time
        d = 0 if c else 1
        st["pkts"][d] += 1
        st["bytes"][d] += len(bytes(fr))
        st["stream"][d] += grow
        pk.append(fr)
        facts.append({"tcp": flows[k]["tcp"], "tags": flows[k]["tags"], "pkts": list(st["pkts"]),
                      "bytes": list(st["bytes"]), "stream": list(st["stream"]), "data": grow > 0 and nxt[k] > 3,
                      "age": int(fr.time) - int(st["first"])})
    return pk, facts


def int_cond(rng, values, top):
    """A random Suricata integer condition over values seen (or any up to top) and its predicate."""
    n = rng.choice(values) if values and rng.random() < 0.8 else rng.randrange(top + 1)
    form = rng.choice(["", "=", "!", "!=", "<", "<=", ">", ">=", "-", "<>", "!-", "&", "&!", "hex", "unit"])
    if form in ("-", "<>", "!-"):
        lo, hi = max(0, n - rng.randrange(0, 4)), min(top, n + rng.randrange(2, 6))
        if hi - lo <= 1:
            lo, hi = 0, 3
        sep = "<>" if form == "<>" else "-"
        if form == "!-":
            return f"!{lo}-{hi}", lambda x: x <= lo or x >= hi
        return f"{lo}{sep}{hi}", lambda x: lo < x < hi
    if form in ("&", "&!"):
        m = rng.choice([1, 3, 0xff, 0x100, 0xf0f]) & top
        v = n & m
        if form == "&":
            return f"&{m}={v}", lambda x: x & m == v
        return f"&{m}!={v}", lambda x: x & m != v
    if form == "hex":
        return f"0x{n:x}", lambda x: x == n
    if form == "unit" and top >= 2048:
        u = rng.choice([1, 2])
        return f">={u}kb", lambda x: x >= u * 1024
    if form in ("<", ">=") and n == 0:
        n = 1
    if form in ("<=", ">") and n == top:
        n = top - 1
    op = {"": operator.eq, "=": operator.eq, "!": operator.ne, "!=": operator.ne, "<": operator.lt,
          "<=": operator.le, ">": operator.gt, ">=": operator.ge, "unit": operator.eq}[form]
    return f"{'' if form == 'unit' else form}{n}", lambda x: op(x, n)


DIRS = {"toserver": lambda p, xs: p(xs[0]), "toclient": lambda p, xs: p(xs[1]),
        "either": lambda p, xs: p(xs[0]) or p(xs[1]), "both": lambda p, xs: p(xs[0]) and p(xs[1])}


def vlan_pred(index, p):
    if index in (None, "any"):
        return lambda t: any(p(x) for x in t)
    if index == "all":
        return lambda t: bool(t) and all(p(x) for x in t)
    if index == "all_or_absent":
        return lambda t: all(p(x) for x in t)
    if index == "or_absent":
        return lambda t: not t or any(p(x) for x in t)
    oob = index.startswith("oob_or")
    i = int(index[6:] if oob else index)
    return lambda t: (p(t[i]) if -len(t) <= i < len(t) else oob)


def rules_for(rng, facts):
    rules, want = [], {}
    seen = {key: [x for f in facts for x in f[key]] for key in ("pkts", "bytes", "stream")}
    tags = [x for f in facts for x in f["tags"]]
    ages = [f["age"] for f in facts]
    for sid in range(1, 201):
        kinds = rng.choice([["pkts"], ["bytes"], ["old"], ["stream"], ["vlan"], ["layers"], ["pkts", "bytes"],
                            ["stream", "vlan"], ["stream", "stream"], ["layers", "pkts"], ["age"], ["age", "pkts"]])
        opts, preds = [], []
        for kind in kinds:
            if kind in ("pkts", "bytes"):
                v, p = int_cond(rng, seen[kind], 2**32 - 1 if kind == "pkts" else 2**40)
                d = rng.choice(list(DIRS))
                opts.append(f"flow.{kind}:{d},{v};")
                preds.append(lambda f, p=p, d=d, kind=kind: DIRS[d](p, f[kind]))
            elif kind == "old":
                key = rng.choice(["pkts", "bytes"])
                d = rng.choice(["toserver", "toclient"])
                v, p = int_cond(rng, seen[key], 2**32 - 1)
                opts.append(f"flow.{key}_{d}:{v};")
                preds.append(lambda f, p=p, d=d, key=key: DIRS[d](p, f[key]))
            elif kind == "stream":
                side = rng.choice(["client", "server", "both", "either"])
                op = rng.choice(["<", "<=", ">", ">=", "=", "!="])
                n = rng.choice(seen["stream"]) if rng.random() < 0.8 else rng.randrange(3000)
                c = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "=": operator.eq,
                     "!=": operator.ne}[op]
                d = {"client": "toserver", "server": "toclient"}.get(side, side)
                opts.append(f"stream_size:{side},{op},{n};")
                preds.append(lambda f, c=c, n=n, d=d: f["tcp"] and DIRS[d](lambda x: c(x, n), f["stream"]))
            elif kind == "age":
                v, p = int_cond(rng, ages, 2**32 - 1)
                opts.append(f"flow.age:{v};")
                preds.append(lambda f, p=p: p(f["age"]))
            elif kind == "vlan":
                v, p = int_cond(rng, tags, 4095)
                index = rng.choice([None, "any", "all", "all_or_absent", "or_absent", "0", "1", "2", "-1", "-3",
                                    "oob_or 2", "oob_or -2"])
                opts.append(f"vlan.id:{v}{'' if index is None else ',' + index};")
                tp = vlan_pred(index, p)
                preds.append(lambda f, tp=tp: tp(f["tags"]))
            else:
                v, p = int_cond(rng, [0, 1, 2, 3], 3)
                opts.append(f"vlan.layers:{v};")
                preds.append(lambda f, p=p: p(len(f["tags"])))
        rules.append(f'alert ip any any -> any any (msg:"f{sid}"; {" ".join(opts)} sid:{sid}; rev:1;)')
        want[sid] = sum(1 for f in facts if all(p(f) for p in preds))
    # Stream rules: the data's marker, matched on the stream piece each data packet delivers, with
    # the flow as that packet left it.
    for sid in range(201, 241):
        side = rng.choice(["client", "server", "both", "either"])
        op = rng.choice(["<", ">", ">=", "<="])
        n = rng.choice(seen["stream"])
        c = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}[op]
        d = {"client": "toserver", "server": "toclient"}.get(side, side)
        rules.append(f'alert tcp any any -> any any (msg:"s{sid}"; content:"MARK"; stream_size:{side},{op},{n}; '
                     f'sid:{sid}; rev:1;)')
        want[sid] = sum(1 for f in facts if f["data"] and DIRS[d](lambda x: c(x, n), f["stream"]))
    bad = ["flow.pkts:sideways,5;", "flow.pkts:toserver;", "flow.bytes:toclient,5-6;", "flow.pkts:toserver,<0;",
           "flow.pkts_toserver:x;", "stream_size:server,<<,5;", "stream_size:server,<,x;", "stream_size:middle,<,5;",
           "stream_size:server,5;", "vlan.id:5000;", "vlan.id:1,7;", "vlan.layers:4;", "flow.bytes:either,&3=4;", "flow.age:x;",
           "flow.age:toserver,5;"]
    first_bad = len(rules) + 1
    for k, b in enumerate(bad):
        rules.append(f'alert ip any any -> any any (msg:"bad"; {b} sid:{1000 + k}; rev:1;)')
        want[1000 + k] = 0
    return rules, want, first_bad


def main():
    gaspp = sys.argv[1]
    paths = sys.argv[2:] or ["cpu", "cpu-device"]
    rng = random.Random(20261127)
    pk, facts = build(rng)
    rules, want, first_bad = rules_for(rng, facts)

    reported = bad_rules_reported("f", first_bad, len(rules))
    return 1 if check_counts(gaspp, paths, pk, rules, want, "f", ",packet-alert-max=1000", reported,
                             args=("--batch", "16")) else 0


if __name__ == "__main__":
    sys.exit(main())
