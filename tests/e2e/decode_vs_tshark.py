#!/usr/bin/env python3
"""Decoded fields of every packet against tshark (the oracle).

usage: decode_vs_tshark.py GASPP [--backend B] CAPTURE...   (directories are searched for captures)

For each capture, `gaspp -r CAPTURE --decode-out` gives one row per packet; tshark gives the same
fields. Compared per packet: captured and wire length, the L3 protocol (tshark's first ip/ipv6/arp
layer), outer addresses, IP protocol and TTL / hop limit, VLAN ids, the L4 protocol (the layer tshark
puts right after the outer IP layer), TCP/UDP ports, TCP seq/ack/flags/window/payload length and the
MSS, window-scale and timestamp options, UDP payload length, ICMP/ICMPv6 type and code.
Where tshark shows several values (tunnels, ICMP errors quoting a packet), the value of the layer
our decoder reports is taken: the outermost IP layer, or for a packet decoded inside N tunnels
(GTP-U, GRE; the `tunnel` column) the (N+1)-th IP layer and the transport layer after it, each field
picked by how many layers of its protocol come before that one in tshark's frame.protocols. Fields after a point where our decoder flagged the
packet malformed are not compared; such packets are listed. Exit 0 when every compared field agrees.
"""
import os
import subprocess
import sys
import tempfile

FIELDS = [
    "frame.number", "frame.cap_len", "frame.len", "frame.protocols", "vlan.id", "ieee8021ad.id",
    "ip.src", "ip.dst", "ip.proto", "ip.ttl", "ipv6.src", "ipv6.dst", "ipv6.hlim",
    "tcp.srcport", "tcp.dstport", "tcp.seq_raw", "tcp.ack_raw", "tcp.flags", "tcp.len",
    "tcp.window_size_value", "tcp.options.mss_val", "tcp.options.wscale.shift",
    "tcp.options.timestamp.tsval", "tcp.options.timestamp.tsecr",
    "udp.srcport", "udp.dstport", "udp.length", "icmp.type", "icmp.code", "icmpv6.type", "icmpv6.code",
]
TSHARK_OPTS = ["-o", "ip.defragment:FALSE", "-o", "ipv6.defragment:FALSE", "-o", "tcp.desegment_tcp_streams:FALSE",
               "-o", "tcp.relative_sequence_numbers:FALSE"]
L3_LAYERS = {"ip": "ipv4", "ipv6": "ipv6", "arp": "arp"}
L4_LAYERS = {"tcp": "tcp", "udp": "udp", "icmp": "icmp", "icmpv6": "icmpv6"}
CAPTURE_MAGICS = {b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d", b"\x0a\x0d\x0d\x0a"}


def is_capture(path):
    try:
        with open(path, "rb") as f:
            return f.read(4) in CAPTURE_MAGICS
    except OSError:
        return False


def find_captures(args):
    out = []
    for a in args:
        if os.path.isdir(a):
            for root, _, files in os.walk(a):
                out += [os.path.join(root, f) for f in sorted(files) if is_capture(os.path.join(root, f))]
        else:
            out.append(a)
    return sorted(out)


def first(v):
    return v.split(",")[0] if v else ""


def nth(v, k):
    parts = v.split(",") if v else []
    return parts[k] if k < len(parts) else ""


def tshark_rows(path):
    cmd = ["tshark", "-n", "-r", path, "-T", "fields", "-E", "separator=/t", "-E", "occurrence=a", "-E", "aggregator=,"]
    cmd += TSHARK_OPTS
    for f in FIELDS:
        cmd += ["-e", f]
    p = subprocess.run(cmd, capture_output=True, text=True)
    rows = []
    for line in p.stdout.splitlines():
        parts = line.split("\t")
        parts += [""] * (len(FIELDS) - len(parts))
        rows.append(dict(zip(FIELDS, parts)))
    return rows


def gaspp_rows(gaspp, backend, path, extra):
    with tempfile.NamedTemporaryFile("r", suffix=".tsv") as out:
        p = subprocess.run([gaspp, "-r", path, "--backend", backend, "--decode-out", out.name, "-q"] + extra,
                           capture_output=True, text=True)
        if p.returncode not in (0, 2):
            raise RuntimeError(f"gaspp failed on {path} (exit {p.returncode}): {p.stderr.strip()}")
        lines = out.read().splitlines()
    header = lines[0].lstrip("#").split("\t")
    return [dict(zip(header, l.split("\t"))) for l in lines[1:]], p.returncode


def tshark_layers(t, depth=0):
    """(l3, l4, l3 index, l4 index) of the IP layer `depth` tunnels in, as tshark sees it; the
    indexes count the earlier layers of the same protocol (which occurrence of its fields to take)."""
    layers = t["frame.protocols"].split(":")
    l3, seen = "other", 0
    for i, name in enumerate(layers):
        if name in L3_LAYERS:
            if name != "arp" and seen < depth:
                seen += 1
                continue
            l3 = L3_LAYERS[name]
            l3_index = layers[:i].count(name)
            rest = layers[i + 1:]
            break
    else:
        return l3, None, 0, 0
    if l3 == "arp":
        return l3, None, l3_index, 0
    for j, name in enumerate(rest):
        if name.startswith("ipv6.") or name == "ah":  # extension headers are part of the IPv6 layer
            continue
        return l3, L4_LAYERS.get(name, "other"), l3_index, layers[:i + 1 + j].count(name)
    return l3, "none", l3_index, 0


def compare(g, t, problems):
    def check(name, ours, theirs):
        if str(ours) != str(theirs):
            problems.append(f"frame {g['frame']}: {name}: gaspp {ours!r} tshark {theirs!r}")

    check("cap_len", g["cap_len"], t["frame.cap_len"])
    check("wire_len", g["wire_len"], t["frame.len"])
    if g["malformed"] in ("empty_record", "l2_truncated", "link_unsupported"):
        return
    # 802.1ad (outer, 0x88a8) and 802.1Q tags are separate fields in tshark; outer first.
    vl = ",".join(v for v in (t["ieee8021ad.id"], t["vlan.id"]) if v)
    if vl or g["vlan"] != "-":
        check("vlan", g["vlan"], vl if vl else "-")
    depth = int(g.get("tunnel", "0"))
    l3, l4, i3, i4 = tshark_layers(t, depth)
    if depth and g["undecoded"] == "none":
        check("tunnel layers", depth, sum(1 for n in t["frame.protocols"].split(":") if n in ("gtp", "gre", "vxlan", "geneve")))
    ours_l3 = g["l3"] if g["l3"] in ("ipv4", "ipv6", "arp") else "other"
    check("l3", ours_l3, l3)
    if l3 != ours_l3 or l3 not in ("ipv4", "ipv6"):
        return
    if l3 == "ipv4":
        check("src", g["src"], nth(t["ip.src"], i3))
        check("dst", g["dst"], nth(t["ip.dst"], i3))
        if g["malformed"].startswith("ipv4_truncated") and not t["ip.proto"]:
            return
        check("ip_proto", g["ip_proto"], nth(t["ip.proto"], i3))
        check("ttl", g["ttl"], nth(t["ip.ttl"], i3))
    else:
        check("src", g["src"], nth(t["ipv6.src"], i3))
        check("dst", g["dst"], nth(t["ipv6.dst"], i3))
        check("hop_limit", g["ttl"], nth(t["ipv6.hlim"], i3))
    if g["malformed"] != "none" and not g["malformed"].startswith(("tcp_bad_options", "ipv4_bad_options")):
        return
    ours_l4 = g["l4"]
    if l4 is not None:
        check("l4", ours_l4, l4)
    if ours_l4 != l4:
        return
    if l4 == "tcp":
        check("sport", g["sport"], nth(t["tcp.srcport"], i4))
        check("dport", g["dport"], nth(t["tcp.dstport"], i4))
        check("seq", g["seq"], nth(t["tcp.seq_raw"], i4))
        check("ack", g["ack"], nth(t["tcp.ack_raw"], i4))
        check("flags", int(g["flags"], 16), int(nth(t["tcp.flags"], i4), 16) & 0x1ff)
        check("win", g["win"], nth(t["tcp.window_size_value"], i4))
        check("tcp_len", g["payload_len"], nth(t["tcp.len"], i4))
        opts = int(g["tcp_opts"])
        if t["tcp.options.mss_val"] or opts & 1:
            check("mss", g["mss"] if opts & 1 else "-", nth(t["tcp.options.mss_val"], i4) or "-")
        if t["tcp.options.wscale.shift"] or opts & 2:
            check("wscale", g["wscale"] if opts & 2 else "-", nth(t["tcp.options.wscale.shift"], i4) or "-")
        if t["tcp.options.timestamp.tsval"] or opts & 16:
            check("tsval", g["tsval"] if opts & 16 else "-", nth(t["tcp.options.timestamp.tsval"], i4) or "-")
            check("tsecr", g["tsecr"] if opts & 16 else "-", nth(t["tcp.options.timestamp.tsecr"], i4) or "-")
    elif l4 == "udp":
        check("sport", g["sport"], nth(t["udp.srcport"], i4))
        check("dport", g["dport"], nth(t["udp.dstport"], i4))
        if t["udp.length"] and g["malformed"] == "none":
            check("udp_payload_len", g["payload_len"], int(nth(t["udp.length"], i4)) - 8)
    elif l4 == "icmp":
        check("icmp_type", g["icmp_type"], nth(t["icmp.type"], i4))
        check("icmp_code", g["icmp_code"], nth(t["icmp.code"], i4))
    elif l4 == "icmpv6":
        check("icmp_type", g["icmp_type"], nth(t["icmpv6.type"], i4))
        check("icmp_code", g["icmp_code"], nth(t["icmpv6.code"], i4))


def main():
    args = sys.argv[1:]
    if not args:
        print(__doc__)
        return 2
    gaspp = args.pop(0)
    backend, extra, paths = "cpu", [], []
    expect_clean = False
    while args:
        a = args.pop(0)
        if a == "--backend":
            backend = args.pop(0)
        elif a == "--expect-clean":
            expect_clean = True  # generated traffic: no packet may be malformed
        elif a == "--gaspp-arg":
            extra.append(args.pop(0))
        else:
            paths.append(a)
    captures = find_captures(paths)
    if not captures:
        print("no captures found under", paths)
        return 1
    failed = 0
    total = 0
    for c in captures:
        g, rc = gaspp_rows(gaspp, backend, c, extra)
        t = tshark_rows(c)
        problems = []
        if len(g) != len(t):
            problems.append(f"packet count: gaspp {len(g)} tshark {len(t)}")
        malformed = [r["frame"] + ":" + r["malformed"] for r in g if r["malformed"] != "none"]
        if expect_clean and malformed:
            problems.append(f"malformed packets in generated traffic: {malformed[:5]}")
        for gr, tr in zip(g, t):
            compare(gr, tr, problems)
        total += len(g)
        status = "ok" if not problems else "MISMATCH"
        note = f" ({len(malformed)} malformed: {', '.join(malformed[:3])}{'...' if len(malformed) > 3 else ''})" if malformed else ""
        print(f"{status:8} {len(g):6} packets  {os.path.relpath(c)}{note}")
        for p in problems[:10]:
            print("         ", p)
        if len(problems) > 10:
            print(f"          ... {len(problems) - 10} more")
        failed += bool(problems)
    print(f"{len(captures)} captures, {total} packets, {failed} with mismatches")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
