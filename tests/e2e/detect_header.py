#!/usr/bin/env python3
"""Packet header conditions of signatures (ttl, ip_proto, tcp.mss, seq, ack, window, icmp_id,
icmp_seq, ipopts, the checksum keywords) on a capture built here (scapy): random IPv4 and IPv6
packets (TCP with and without an MSS option, UDP, ICMP echo with random identifiers and sequence
numbers, GRE, SCTP, a raw protocol number; IPv4 with random options; some with a wrong IPv4 header
or transport checksum), and random rules whose conditions the test evaluates
itself on each packet's fields, as Suricata documents the keywords: ttl, tcp.mss, icmp_id and
icmp_seq take N, <N, >N, <=N, >=N, N-M (exclusive) and !N; tcp.mss matches only packets with the
option, icmp_id and icmp_seq only ICMP messages that have them; ip_proto takes a number or name
after !, < or >; seq, ack and window (with !) compare a TCP packet's fields; ipopts names an IPv4
option the packet must carry (Suricata's flags: eol and nop as met, the others when valid);
ipv4-csum, tcpv4-csum, tcpv6-csum, udpv4-csum, udpv6-csum, icmpv4-csum and icmpv6-csum (valid or
invalid) match only their family and transport, checked whatever -k says. A rule
alerts once per packet that meets its conditions (each packet is a flow of its own); rules with a
malformed value are errors reported with their line. The same runs on the device's path
(detect:prefilter=device on the CPU) and, with `cuda`, on the CUDA backend.

usage: detect_header.py GASPP [cpu|cpu-device|cuda ...]
"""
import operator
import random
import sys

from detect_base64 import bad_rules_reported, check_counts

PROTOS = {"tcp": 6, "udp": 17, "icmp": 1, "gre": 47, "sctp": 132, "ipv6-icmp": 58, "esp": 50}


def build(rng):
    from scapy.all import (GRE, ICMP, IP, SCTP, TCP, UDP, Ether, ICMPv6EchoRequest, IPOption_EOL, IPOption_NOP,
                           IPOption_Router_Alert, IPOption_RR, IPOption_Security, IPv6, Raw)
    pk, facts = [], []
    for k in range(160):
        v6 = rng.random() < 0.25
        ttl = rng.choice([1, 2, 32, 63, 64, 65, 127, 128, 200, 255, rng.randrange(256)])
        src, dst = (f"2001:db8::{k + 1:x}", "2001:db8::ffff") if v6 else (f"10.1.{k // 200}.{k % 200 + 1}", "10.2.0.1")
        opts = set()
        if v6:
            ip = IPv6(src=src, dst=dst, hlim=ttl)
        else:
            choice = rng.choice([[], [], [], ["rr"], ["rtralt"], ["sec", "nop"], ["rr", "nop", "eol"], ["nop"]])
            made = {"rr": lambda: IPOption_RR(routers=["192.0.2.9"]), "rtralt": IPOption_Router_Alert,
                    "sec": IPOption_Security, "nop": IPOption_NOP, "eol": IPOption_EOL}
            opts = set(choice)
            ip = IP(src=src, dst=dst, ttl=ttl, options=[made[o]() for o in choice]) if choice else IP(src=src, dst=dst, ttl=ttl)
            # The options are padded to a word with zeros: an EOL where they end short of one.
            hdr = bytes(ip)
            o, end = 20, (hdr[0] & 15) * 4
            while o < end:
                if hdr[o] == 0:
                    opts.add("eol")
                    break
                o += 1 if hdr[o] == 1 else hdr[o + 1]
        kind = rng.choice(["tcp", "tcp", "tcp", "udp", "icmp", "gre", "sctp", "raw"])
        f = {"ttl": ttl, "proto": None, "seq": None, "ack": None, "win": None, "mss": None, "icmp": None,
             "v4": not v6, "opts": opts}
        if kind == "tcp":
            seq, ack, win = rng.choice([0, 1, 1000, rng.randrange(2**32)]), rng.randrange(2**32), rng.choice([0, 512, 65535, rng.randrange(65536)])
            opts = [("MSS", rng.choice([536, 1460, 8960, rng.randrange(65536)]))] if rng.random() < 0.5 else []
            l4 = TCP(sport=1024 + k, dport=80, flags=rng.choice(["S", "A", "PA", "SA"]), seq=seq, ack=ack, window=win,
                     options=opts)
            f.update(proto=6, seq=seq, ack=ack, win=win, mss=opts[0][1] if opts else None)
        elif kind == "udp":
            l4, f["proto"] = UDP(sport=1024 + k, dport=5000), 17
        elif kind == "icmp":
            iid, iseq = rng.choice([0, 1, 256, rng.randrange(65536)]), rng.choice([0, 7, rng.randrange(65536)])
            l4, f["proto"] = (ICMPv6EchoRequest(id=iid, seq=iseq), 58) if v6 else (ICMP(id=iid, seq=iseq), 1)
            f["icmp"] = (iid, iseq)
        elif kind == "gre":
            l4, f["proto"] = GRE(proto=0x0800) / IP(src="192.0.2.1", dst="192.0.2.2", ttl=9) / UDP(sport=7, dport=9), 47
        elif kind == "sctp":
            l4, f["proto"] = SCTP(sport=1024 + k, dport=80), 132
        else:
            n = rng.choice([103, 112, 253])
            if v6:
                ip.nh = n
            else:
                ip.proto = n
            l4, f["proto"] = Raw(b"x" * 8), n
        if kind == "gre":  # the engine decodes GRE's inner packet: its fields are the inner one's
            f.update(ttl=9, proto=17, v4=True, opts=set())
        frame = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / ip / l4 / Raw(b"payload")
        # Wrong checksums (scapy computes right ones): the IPv4 header's and the transport's, on
        # packets outside a tunnel.
        f["ipbad"] = f["l4bad"] = False
        if kind != "gre":
            built = Ether(bytes(frame))
            if not v6 and rng.random() < 0.3:
                frame[IP].chksum = built[IP].chksum ^ 0x5a5a
                f["ipbad"] = True
            layer = {"tcp": TCP, "udp": UDP, "icmp": ICMPv6EchoRequest if v6 else ICMP}.get(kind)
            if layer is not None and rng.random() < 0.3:
                field = "cksum" if layer is ICMPv6EchoRequest else "chksum"
                setattr(frame[layer], field, getattr(built[layer], field) ^ 0x5a5a)
                f["l4bad"] = True
        pk.append(frame)
        facts.append(f)
    return pk, facts


# The checksum keywords: the family and transport each applies to (None: the IPv4 header's).
CSUMS = {"ipv4-csum": (4, None), "tcpv4-csum": (4, 6), "tcpv6-csum": (6, 6), "udpv4-csum": (4, 17),
         "udpv6-csum": (6, 17), "icmpv4-csum": (4, 1), "icmpv6-csum": (6, 58)}

CMPS = {"": operator.eq, "<": operator.lt, ">": operator.gt, "<=": operator.le, ">=": operator.ge}


def num_cond(rng, values, top):
    """A random ttl/tcp.mss value string and its predicate."""
    n = rng.choice(values) if values and rng.random() < 0.7 else rng.randrange(top + 1)
    form = rng.choice(["", "<", ">", "<=", ">=", "range", "!"])
    if form == "range":
        lo, hi = max(0, n - rng.randrange(1, 4)), min(top, n + rng.randrange(1, 4))
        return f"{lo}-{hi}", lambda x: lo < x < hi
    if form == "!":
        return f"!{n}", lambda x: x != n
    return f"{form}{n}", lambda x, c=CMPS[form]: c(x, n)


def rules_for(rng, facts):
    rules, want = [], {}
    tcp = [f for f in facts if f["proto"] == 6]
    for sid in range(1, 181):
        kind = rng.choice(["ttl", "mss", "proto", "seq", "ack", "win", "ttl+seq", "icmp_id", "icmp_seq", "ipopts",
                           "csum", "csum"])
        opts, preds = [], []
        if kind in ("ttl", "ttl+seq"):
            v, p = num_cond(rng, [f["ttl"] for f in facts], 255)
            opts.append(f"ttl:{v};")
            preds.append(lambda f, p=p: p(f["ttl"]))
        if kind == "mss":
            v, p = num_cond(rng, [f["mss"] for f in tcp if f["mss"] is not None], 65535)
            opts.append(f"tcp.mss:{v};")
            preds.append(lambda f, p=p: f["mss"] is not None and p(f["mss"]))
        if kind == "proto":
            name = rng.choice(list(PROTOS) + ["103", "112", "17"])
            num = PROTOS.get(name, int(name) if name.isdigit() else None)
            pre = rng.choice(["", "!", "<", ">"])
            c = {"": operator.eq, "!": operator.ne, "<": operator.lt, ">": operator.gt}[pre]
            opts.append(f"ip_proto:{pre}{name};")
            preds.append(lambda f, c=c, num=num: c(f["proto"], num))
        if kind in ("seq", "ttl+seq", "ack"):
            field = "ack" if kind == "ack" else "seq"
            n = rng.choice(tcp)[field] if rng.random() < 0.8 else rng.randrange(2**32)
            opts.append(f"{field}:{n};")
            preds.append(lambda f, n=n, field=field: f["proto"] == 6 and f[field] == n)
        if kind == "win":
            n = rng.choice(tcp)["win"] if rng.random() < 0.8 else rng.randrange(65536)
            neg = rng.random() < 0.3
            opts.append(f"window:{'!' if neg else ''}{n};")
            preds.append(lambda f, n=n, neg=neg: f["proto"] == 6 and (f["win"] != n if neg else f["win"] == n))
        if kind in ("icmp_id", "icmp_seq"):
            at = 0 if kind == "icmp_id" else 1
            v, p = num_cond(rng, [f["icmp"][at] for f in facts if f["icmp"]], 65535)
            opts.append(f"{kind}:{v};")
            preds.append(lambda f, p=p, at=at: f["icmp"] is not None and p(f["icmp"][at]))
        if kind == "ipopts":
            name = rng.choice(["rr", "rtralt", "sec", "nop", "eol", "ts", "lsrr", "any"])
            opts.append(f"ipopts:{name};")
            preds.append(lambda f, name=name: f["v4"] and name in f["opts"])  # any: never (Suricata's 0xffff)
        if kind == "csum":
            kw = rng.choice(list(CSUMS))
            want_valid = rng.random() < 0.5
            opts.append(f"{kw}:{'valid' if want_valid else 'invalid'};")
            fam, proto = CSUMS[kw]

            def csum(f, fam=fam, proto=proto, want_valid=want_valid):
                if f["v4"] != (fam == 4) or (proto is not None and f["proto"] != proto):
                    return False
                bad = f["ipbad"] if proto is None else f["l4bad"]
                return bad != want_valid
            preds.append(csum)
        rules.append(f'alert ip any any -> any any (msg:"h{sid}"; {" ".join(opts)} sid:{sid}; rev:1;)')
        want[sid] = sum(1 for f in facts if all(p(f) for p in preds))
    bad = ['ttl:300;', 'ip_proto:nosuchproto;', 'seq:-1;', 'window:70000;', 'tcp.mss:<x;', 'icmp_id:70000;',
           'ipopts:bogus;', 'tcpv4-csum:maybe;']
    for k, b in enumerate(bad):
        rules.append(f'alert ip any any -> any any (msg:"bad"; {b} sid:{1000 + k}; rev:1;)')
        want[1000 + k] = 0
    return rules, want, len(rules) - len(bad) + 1


def main():
    gaspp = sys.argv[1]
    paths = sys.argv[2:] or ["cpu", "cpu-device"]
    rng = random.Random(20261128)
    pk, facts = build(rng)
    rules, want, first_bad = rules_for(rng, facts)

    reported = bad_rules_reported("h", first_bad, len(rules))
    return 1 if check_counts(gaspp, paths, pk, rules, want, "h", ",packet-alert-max=1000", reported) else 0


if __name__ == "__main__":
    sys.exit(main())
