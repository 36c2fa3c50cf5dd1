#!/usr/bin/env python3
"""The packet's header buffers (ipv4.hdr, ipv6.hdr, tcp.hdr, udp.hdr, icmpv4.hdr, icmpv6.hdr, ip.src,
ip.dst) and byte_math, on a capture built here (scapy): IPv4 with and without options, IPv6 with
and without a hop-by-hop header, TCP with and without options, UDP, ICMP and ICMPv6, random fields
and addresses. Each rule's alert count is computed from the packets as built — the header bytes
Suricata's buffers hold (its detect-ipv4hdr.c, ..., detect-ipaddr.c: an address's 4 or 16 bytes),
byte_math's arithmetic (detect-bytemath.c) and address datasets (type ipv4, ipv6 and ip, loaded
from files written here as Suricata reads them: an `ip` set holds an IPv4 address as its 4 bytes
then 12 zeros, so it matches ip.src of either family) — and compared with gaspp's on each path:
the CPU backend, the device's path on the CPU (detect:prefilter=device) and, with `cuda`, the CUDA
backend (where a dataset leaves the packet to the host's re-check).

usage: detect_header_buffers.py GASPP [cpu|cpu-device|cuda ...]
"""
import ipaddress
import os
import random
import sys
import tempfile

from detect_base64 import check_counts


V4_ADDRS = ["10.0.0.1", "10.0.0.2", "192.0.2.7", "198.51.100.20", "10.1.2.3"]
V6_ADDRS = ["2001:db8::1", "2001:db8::2", "2001:db8:1::7", "fe80::1"]


def addr_bytes(a):
    return ipaddress.ip_address(a).packed


def hexbytes(b):
    return " ".join(f"{x:02x}" for x in b)


def build(rng):
    from scapy.all import ICMP, IP, TCP, UDP, Ether, ICMPv6EchoRequest, IPOption_NOP, IPv6, IPv6ExtHdrHopByHop, Raw
    pk, facts = [], []
    eth = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
    for k in range(240):
        v6 = rng.random() < 0.35
        l4 = rng.choice(["tcp", "tcp", "udp", "icmp"])
        ttl = rng.choice([64, rng.randrange(1, 256)])
        f = {"v6": v6, "l4": l4, "ttl": ttl}
        src, dst = rng.sample(V6_ADDRS if v6 else V4_ADDRS, 2)
        f.update(src=src, dst=dst)
        if v6:
            hbh = rng.random() < 0.4
            ip = IPv6(src=src, dst=dst, hlim=ttl)
            f["hbh"] = hbh
            if hbh:
                ip = ip / IPv6ExtHdrHopByHop()
        else:
            opts = rng.random() < 0.4
            ip = IP(src=src, dst=dst, ttl=ttl, options=[IPOption_NOP()] * 4 if opts else [])
            f["ihl"] = 6 if opts else 5
        payload = bytes(rng.randrange(256) for _ in range(rng.choice([0, 3, 20, rng.randrange(0, 40)])))
        f["plen"] = len(payload)
        if l4 == "tcp":
            dport = rng.choice([80, 443, 8080, rng.randrange(1024, 65535)])
            urg = rng.choice([ttl, (ttl + 1) & 0xff, rng.randrange(256)])
            topts = [("MSS", 1460)] if rng.random() < 0.5 else []
            flags = rng.choice(["S", "A", "PA", "SA", "FA"])
            t = TCP(sport=40000 + k, dport=dport, flags=flags, urgptr=urg, options=topts, seq=rng.randrange(1 << 32))
            f.update(dport=dport, urg=urg, doff=5 + (1 if topts else 0), syn="S" in flags)
            pkt = eth / ip / t / Raw(payload) if payload else eth / ip / t
        elif l4 == "udp":
            pkt = eth / ip / UDP(sport=40000 + k, dport=rng.choice([53, 123, 5353])) / Raw(payload)
            f["ulen"] = 8 + len(payload)
        else:
            msg = ICMPv6EchoRequest(id=k, seq=k) if v6 else ICMP(type=8, id=k, seq=k)
            pkt = eth / ip / msg / Raw(payload)
            f["icmp_id"] = k
        pk.append(pkt)
        facts.append(f)
    return pk, facts


def rules_for(facts, sets):
    rules, want = [], {}

    def rule(proto, text, pred):
        sid = len(rules) + 1
        rules.append(f'alert {proto} any any -> any any (msg:"hdr {sid}"; {text} sid:{sid}; rev:1;)')
        want[sid] = sum(1 for f in facts if pred(f))

    v4 = lambda f: not f["v6"]
    tcp = lambda f: f["l4"] == "tcp"
    for port in (80, 443, 8080):
        rule("tcp", f'tcp.hdr; content:"|{port >> 8:02x} {port & 0xff:02x}|"; offset:2; depth:2;',
             lambda f, port=port: tcp(f) and f["dport"] == port)
    rule("tcp", "tcp.hdr; byte_test:1,&,0x02,13;", lambda f: tcp(f) and f["syn"])
    rule("tcp", "tcp.hdr; isdataat:20;", lambda f: tcp(f) and f["doff"] > 5)          # options
    rule("tcp", 'tcp.hdr; content:"|02 04 05 b4|"; offset:20; endswith;', lambda f: tcp(f) and f["doff"] == 6)
    rule("ip", "ipv4.hdr; byte_test:1,>,0x45,0;", lambda f: v4(f) and f["ihl"] > 5)
    rule("ip", "ipv4.hdr; isdataat:!20;", lambda f: v4(f) and f["ihl"] == 5)
    rule("ip", "ipv6.hdr; content:\"|00|\"; offset:6; depth:1;", lambda f: f["v6"] and f["hbh"])
    rule("ip", "ipv6.hdr; isdataat:40;", lambda f: f["v6"] and f["hbh"])             # the extension header's bytes
    rule("ip", "ipv6.hdr; byte_test:1,=,64,7;", lambda f: f["v6"] and f["ttl"] == 64)
    rule("udp", "udp.hdr; isdataat:7; isdataat:!8;", lambda f: f["l4"] == "udp")
    rule("ip", "icmpv4.hdr; byte_test:2,<,120,4;", lambda f: v4(f) and f["l4"] == "icmp" and f["icmp_id"] < 120)
    rule("ip", "icmpv6.hdr; content:\"|80 00|\"; depth:2;", lambda f: f["v6"] and f["l4"] == "icmp")
    # Variables across header buffers and byte_math
    rule("tcp", "ipv4.hdr; byte_extract:1,8,ttl; tcp.hdr; byte_test:1,=,ttl,19;",
         lambda f: v4(f) and tcp(f) and f["urg"] & 0xff == f["ttl"])
    rule("tcp", "ipv4.hdr; byte_math:bytes 1, offset 8, oper +, rvalue 1, result t; tcp.hdr; byte_test:1,=,t,19;",
         lambda f: v4(f) and tcp(f) and f["urg"] & 0xff == f["ttl"] + 1)
    rule("udp", "udp.hdr; byte_math:bytes 2, offset 4, oper -, rvalue 8, result n; byte_test:2,>,n,4;",
         lambda f: f["l4"] == "udp")   # length - 8 < length: always (a length under 8 would wrap: never)
    rule("udp", "udp.hdr; byte_math:bytes 2, offset 4, oper -, rvalue 20, result n; byte_test:2,=,28,4;",
         lambda f: f["l4"] == "udp" and f["ulen"] == 28)
    # The payload first, then a header buffer
    rule("tcp", 'tcp.hdr; byte_test:1,&,0x02,13; pkt_data; isdataat:!5;', lambda f: tcp(f) and f["syn"] and 1 <= f["plen"] <= 5)
    # ip.src / ip.dst: the address's bytes (4 or 16), contents and sizes on them
    for a in ("192.0.2.7", "2001:db8:1::7"):
        rule("ip", f'ip.src; content:"|{hexbytes(addr_bytes(a))}|"; startswith; endswith;', lambda f, a=a: f["src"] == a)
        rule("ip", f'ip.dst; content:"|{hexbytes(addr_bytes(a))}|";', lambda f, a=a: f["dst"] == a)
    rule("ip", "ip.src; isdataat:4;", lambda f: f["v6"])
    rule("ip", "ip.dst; isdataat:!4; ip.src; byte_test:1,=,10,0;", lambda f: not f["v6"] and f["src"].startswith("10."))
    rule("tcp", 'ip.src; content:"|0a|"; depth:1; tcp.hdr; byte_test:1,&,0x02,13;',
         lambda f: tcp(f) and f["syn"] and f["src"].startswith("10."))
    # Address datasets: ipv4 and ipv6 sets, and `ip` sets holding both families
    rule("ip", f"ip.src; dataset:isset,v4set,type ipv4,load {sets['v4']};", lambda f: f["src"] in SET_V4)
    rule("ip", f"ip.dst; dataset:isnotset,v4set,type ipv4,load {sets['v4']};", lambda f: f["dst"] not in SET_V4)
    rule("ip", f"ip.src; dataset:isset,v6set,type ipv6,load {sets['v6']};", lambda f: f["src"] in SET_V6)
    rule("ip", f"ip.dst; dataset:isset,ipset,type ip,load {sets['ip']};", lambda f: f["dst"] in SET_V4 + SET_V6)
    rule("udp", f"ip.src; dataset:isset,ipset,type ip,load {sets['ip']}; pkt_data; isdataat:1;",
         lambda f: f["l4"] == "udp" and f["src"] in SET_V4 + SET_V6 and f["plen"] >= 2)
    return rules, want


# The sets' members: ipv4 and ipv6 files as Suricata's loader reads them (one address a line); the
# `ip` file mixes families, one IPv4 address written IPv4-mapped (::ffff:a.b.c.d).
SET_V4 = ["192.0.2.7", "10.1.2.3"]
SET_V6 = ["2001:db8:1::7", "fe80::1"]


def write_sets(d):
    paths = {k: os.path.join(d, k + ".lst") for k in ("v4", "v6", "ip")}
    with open(paths["v4"], "w") as f:
        f.write("\n".join(SET_V4) + "\n")
    with open(paths["v6"], "w") as f:
        f.write("\n".join(SET_V6) + "\n")
    with open(paths["ip"], "w") as f:
        f.write(f"{SET_V4[0]}\n::ffff:{SET_V4[1]}\n" + "\n".join(SET_V6) + "\n")
    return paths


def main():
    gaspp = sys.argv[1]
    paths = sys.argv[2:] or ["cpu", "cpu-device"]
    rng = random.Random(20261128)
    pk, facts = build(rng)
    sets_dir = tempfile.TemporaryDirectory()
    rules, want = rules_for(facts, write_sets(sets_dir.name))

    def loaded(path, err):
        if "hdr.rules:" in err:  # a rule that did not load
            print(f"FAIL {path}: rules not loaded: {err.strip()[-400:]}")
            return 1
        return 0

    # The sets' files by absolute path (datasets-allow-absolute, as Suricata's
    # datasets.rules.allow-absolute-filenames).
    return 1 if check_counts(gaspp, paths, pk, rules, want, "hdr", ",packet-alert-max=1000,datasets-allow-absolute=yes",
                             loaded, args=("-k", "none")) else 0


if __name__ == "__main__":
    sys.exit(main())
