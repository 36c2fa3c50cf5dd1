#!/usr/bin/env python3
"""Suricata's decoder events (decode-event, alert pkthdr) on a capture built here (scapy): packets
each made to break one check of Suricata's decoders (decode-ipv4.c, decode-ipv6.c, decode-tcp.c,
decode-udp.c, defrag.c) in the way its source checks it, mixed with clean packets, and one rule a
event as Suricata's decoder-events.rules writes them. Each rule must alert on exactly the packets
built to raise its event (the test knows which from how it built them). Rules naming an event
gaspp does not raise are skipped with their reason, an unknown name is an error, and EVE stats
count each event under decoder.event, and --eve-anomaly writes one EVE anomaly event (type decode)
for each, valid for Suricata's EVE schema. The same runs on the device's path (detect:prefilter=device
on the CPU) and, with `cuda`, on the CUDA backend.

usage: detect_decode_events.py GASPP [cpu|cpu-device|cuda ...]
"""
import json
import os
import random
import subprocess
import sys
import tempfile

from detect_base64 import check_counts

# Suricata's sids for its decoder-events.rules, where it has one (the test only needs them unique).
EVENTS = {
    "ipv4.hlen_too_small": 2200002, "ipv4.iplen_smaller_than_hlen": 2200003, "ipv4.trunc_pkt": 2200004,
    "ipv4.opt_invalid": 2200005, "ipv4.opt_invalid_len": 2200006, "ipv4.opt_malformed": 2200007,
    "ipv4.opt_duplicate": 2200009, "ipv4.icmpv6": 2200092, "ipv6.exthdr_dupl_fh": 2200015,
    "ipv6.exthdr_useless_fh": 2200080, "ipv6.exthdr_dupl_hh": 2200016, "ipv6.hopopts_unknown_opt": 2200084, "ipv6.exthdr_dupl_rh": 2200017,
    "ipv6.rh_type_0": 2200093, "ipv6.dstopts_unknown_opt": 2200086, "ipv6.hopopts_only_padding": 2200085,
    "ipv6.fh_non_zero_reserved_field": 2200095, "ipv6.data_after_none_header": 2200096,
    "ipv6.icmpv4": 2200090, "ipv6.frag_invalid_length": 2200118, "tcp.hlen_too_small": 2200030,
    "tcp.opt_invalid_len": 2200036, "tcp.opt_duplicate": 2200037, "udp.len_invalid": 2200120,
    "udp.pkt_too_small": 2200038, "ipv4.frag_overlap": 2200069, "ipv6.frag_overlap": 2200072,
    "ipv4.frag_pkt_too_large": 2200070, "ipv6.frag_pkt_too_large": 2200071,
    "tcp.pkt_too_small": 2200029, "udp.hlen_too_small": 2200039,
    "gre.pkt_too_small": 2200041, "gre.wrong_version": 2200042, "gre.version0_recur": 2200043,
    "gre.version0_flags": 2200044, "gre.version0_hdr_too_big": 2200045, "gre.version1_chksum": 2200046,
    "gre.version1_route": 2200047, "gre.version1_ssr": 2200048, "gre.version1_recur": 2200049,
    "gre.version1_flags": 2200050, "gre.version1_no_key": 2200051, "gre.version1_wrong_protocol": 2200052,
    "gre.version1_hdr_too_big": 2200054,
}


def build(rng):
    """Packets in a random order, each with the set of events it must raise."""
    from scapy.all import (ICMP, IP, TCP, UDP, Ether, ICMPv6EchoRequest, IPv6, IPv6ExtHdrDestOpt,
                           IPv6ExtHdrFragment, IPv6ExtHdrHopByHop, IPv6ExtHdrRouting, Raw, raw)
    from scapy.layers.inet6 import HBHOptUnknown, PadN

    eth = lambda: Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
    items = []  # (list of frames as bytes, events of each frame)

    def one(frame, events):
        items.append(([bytes(frame)], [set(events)]))

    def opts4(src, tcp, opts):  # IPv4 with raw option bytes (a multiple of 4), lengths fixed
        b = bytearray(raw(eth() / IP(src=src, dst="10.4.0.1") / tcp))
        b[34:34] = opts
        b[14] = 0x45 + len(opts) // 4
        b[16:18] = (len(b) - 14).to_bytes(2, "big")
        return b

    for k in range(12):
        src, src6 = f"10.3.0.{k + 1}", f"2001:db8:3::{k + 1:x}"
        tcp = TCP(sport=2000 + k, dport=80, flags="PA") / Raw(b"data")
        one(eth() / IP(src=src, dst="10.4.0.1") / tcp, [])
        one(eth() / IPv6(src=src6, dst="2001:db8:4::1") / UDP(sport=2000 + k, dport=53) / Raw(b"q" * 8), [])
        # IPv4 header length 16 (ihl 4), and a total length under the header's
        b = bytearray(raw(eth() / IP(src=src, dst="10.4.0.1") / tcp))
        b[14] = 0x44
        one(b, ["ipv4.hlen_too_small"])
        b = bytearray(raw(eth() / IP(src=src, dst="10.4.0.1") / tcp))
        b[16:18] = (12).to_bytes(2, "big")
        one(b, ["ipv4.iplen_smaller_than_hlen"])
        # a total length past the captured bytes (the frame says more than it holds)
        b = bytearray(raw(eth() / IP(src=src, dst="10.4.0.1") / tcp))
        b[16:18] = (len(b) - 14 + 10).to_bytes(2, "big")
        one(b, ["ipv4.trunc_pkt"])
        # IPv4 options: an unknown kind, a length past the header, a record-route pointer off a
        # word, a router alert twice
        one(opts4(src, tcp, b"\x99\x04\x00\x00"), ["ipv4.opt_invalid"])
        one(opts4(src, tcp, b"\x07\x09\x04\x00"), ["ipv4.opt_invalid_len"])
        one(opts4(src, tcp, b"\x07\x07\x05\x00\x00\x00\x00\x00"),
            ["ipv4.opt_malformed"])
        one(opts4(src, tcp, b"\x94\x04\x00\x00\x94\x04\x00\x00"),
            ["ipv4.opt_duplicate"])
        one(eth() / IP(src=src, dst="10.4.0.1", proto=58) / ICMPv6EchoRequest(), ["ipv4.icmpv6"])
        one(eth() / IPv6(src=src6, dst="2001:db8:4::1", nh=1) / ICMP(), ["ipv6.icmpv4"])
        # IPv6 extension headers
        v6 = lambda: eth() / IPv6(src=src6, dst="2001:db8:4::1")
        one(v6() / IPv6ExtHdrFragment(m=0, offset=0, id=k) / tcp, ["ipv6.exthdr_useless_fh"])
        one(v6() / IPv6ExtHdrFragment(m=0, offset=0, id=k) / IPv6ExtHdrFragment(m=0, offset=0, id=k) / tcp,
            ["ipv6.exthdr_useless_fh", "ipv6.exthdr_dupl_fh"])
        one(v6() / IPv6ExtHdrFragment(m=0, offset=0, id=k, res1=3) / tcp,
            ["ipv6.exthdr_useless_fh", "ipv6.fh_non_zero_reserved_field"])
        one(v6() / IPv6ExtHdrHopByHop(options=[PadN(optdata=b"\x00" * 4)]) / tcp, ["ipv6.hopopts_only_padding"])
        one(v6() / IPv6ExtHdrHopByHop(options=[HBHOptUnknown(otype=0x1e, optdata=b"ab")]) /
            IPv6ExtHdrHopByHop(options=[HBHOptUnknown(otype=0x1e, optdata=b"ab")]) / tcp,
            ["ipv6.hopopts_unknown_opt", "ipv6.exthdr_dupl_hh"])
        one(v6() / IPv6ExtHdrDestOpt(options=[HBHOptUnknown(otype=0x1e, optdata=b"ab")]) / tcp,
            ["ipv6.dstopts_unknown_opt"])
        one(v6() / IPv6ExtHdrRouting(type=0, addresses=["2001:db8::9"]) / tcp, ["ipv6.rh_type_0"])
        one(v6() / IPv6ExtHdrRouting(type=2, addresses=["2001:db8::9"]) /
            IPv6ExtHdrRouting(type=2, addresses=["2001:db8::9"]) / tcp, ["ipv6.exthdr_dupl_rh"])
        one(eth() / IPv6(src=src6, dst="2001:db8:4::1", nh=59) / Raw(b"after"), ["ipv6.data_after_none_header"])
        # Transports too short for their header right after the IPv6 header (Suricata's DecodeIPV6
        # hands them over as they are), and IPv4's
        one(eth() / IPv6(src=src6, dst="2001:db8:4::1", nh=6), ["tcp.pkt_too_small"])
        one(eth() / IPv6(src=src6, dst="2001:db8:4::1", nh=17) / Raw(b"\x81\x58\x00\x35"), ["udp.hlen_too_small"])
        one(eth() / IP(src=src, dst="10.4.0.1", proto=6) / Raw(b"\x00" * 12), ["tcp.pkt_too_small"])
        # GRE (Suricata's DecodeGRE, the first fault it meets): a header of 2 bytes, version 2,
        # version 0 with recursion or reserved flags or a key past the datagram, PPTP (version 1)
        # with a checksum, routing, strict source route, recursion, reserved flags, another
        # protocol than PPP, no key, or its sequence number past the datagram
        gre = lambda body, v4=True: (eth() / (IP(src=src, dst="10.4.0.1", proto=47) if v4 else
                                              IPv6(src=src6, dst="2001:db8:4::1", nh=47)) / Raw(body))
        inner = raw(IP(src="192.0.2.1", dst="192.0.2.2") / tcp)
        for body, ev in [(b"\x00\x00", "gre.pkt_too_small"), (b"\x00\x02\x08\x00" + inner, "gre.wrong_version"),
                         (b"\x02\x00\x08\x00" + inner, "gre.version0_recur"),
                         (b"\x00\x40\x08\x00" + inner, "gre.version0_flags"),
                         (b"\x20\x00\x08\x00\x00\x01", "gre.version0_hdr_too_big"),
                         (b"\xa0\x01\x88\x0b" + bytes(8), "gre.version1_chksum"),
                         (b"\x60\x01\x88\x0b" + bytes(8), "gre.version1_route"),
                         (b"\x28\x01\x88\x0b" + bytes(8), "gre.version1_ssr"),
                         (b"\x21\x01\x88\x0b" + bytes(8), "gre.version1_recur"),
                         (b"\x20\x09\x88\x0b" + bytes(8), "gre.version1_flags"),
                         (b"\x20\x01\x08\x00" + bytes(8), "gre.version1_wrong_protocol"),
                         (b"\x00\x01\x88\x0b" + bytes(8), "gre.version1_no_key"),
                         (b"\x30\x01\x88\x0b\x00\x04\x00\x01", "gre.version1_hdr_too_big")]:
            one(gre(body, k % 2 == 0), [ev])
        # TCP: data offset 16, an MSS of length 3, the MSS twice
        b = bytearray(raw(eth() / IP(src=src, dst="10.4.0.1") / tcp))
        b[46] = 0x40
        one(b, ["tcp.hlen_too_small"])
        one(eth() / IP(src=src, dst="10.4.0.1") / TCP(sport=2000 + k, dport=80, flags="S", options=[(2, b"\x05")]),
            ["tcp.opt_invalid_len"])
        one(eth() / IP(src=src, dst="10.4.0.1") / TCP(sport=2000 + k, dport=80, flags="S",
                                                      options=[("MSS", 1460), ("MSS", 1400)]), ["tcp.opt_duplicate"])
        # UDP: length under its header, length past the datagram
        one(eth() / IP(src=src, dst="10.4.0.1") / UDP(sport=2000 + k, dport=53, len=4) / Raw(b"q" * 8),
            ["udp.len_invalid"])
        one(eth() / IP(src=src, dst="10.4.0.1") / UDP(sport=2000 + k, dport=53, len=60) / Raw(b"q" * 8),
            ["udp.pkt_too_small"])
        # Fragments (the defragmenter's events): an overlapping second fragment, a fragment
        # reaching past 65,535 bytes; IPv6: a non-final fragment not a multiple of 8 bytes.
        body = raw(UDP(sport=3000 + k, dport=53, len=48) / Raw(b"A" * 40))  # a valid datagram once whole
        f1 = eth() / IP(src=src, dst="10.4.0.1", id=100 + k, proto=17, flags="MF", frag=0) / Raw(body[:24])
        f2 = eth() / IP(src=src, dst="10.4.0.1", id=100 + k, proto=17, frag=2) / Raw(body[16:])
        items.append(([bytes(f1), bytes(f2)], [set(), {"ipv4.frag_overlap"}]))
        big = eth() / IP(src=src, dst="10.4.0.1", id=300 + k, proto=17, flags="MF", frag=8189) / Raw(b"B" * 32)
        one(big, ["ipv4.frag_pkt_too_large"])
        g1 = v6() / IPv6ExtHdrFragment(nh=17, m=1, offset=0, id=500 + k) / Raw(body[:24])
        g2 = v6() / IPv6ExtHdrFragment(nh=17, m=0, offset=2, id=500 + k) / Raw(body[16:])
        items.append(([bytes(g1), bytes(g2)], [set(), {"ipv6.frag_overlap"}]))
        one(v6() / IPv6ExtHdrFragment(nh=17, m=1, offset=8189, id=700 + k) / Raw(b"C" * 40),
            ["ipv6.frag_pkt_too_large"])
        one(v6() / IPv6ExtHdrFragment(nh=17, m=1, offset=0, id=900 + k) / Raw(b"D" * 20),
            ["ipv6.frag_invalid_length"])
    rng.shuffle(items)
    frames, events = [], []
    for fs, es in items:
        frames += fs
        events += es
    return frames, events


def main():
    gaspp = sys.argv[1]
    paths = sys.argv[2:] or ["cpu", "cpu-device"]
    rng = random.Random(20261127)
    frames, events = build(rng)
    from scapy.all import Ether
    packets = [Ether(f) for f in frames]
    rules, want = [], {}
    for name, sid in EVENTS.items():
        rules.append(f'alert pkthdr any any -> any any (msg:"SURICATA {name}"; decode-event:{name}; '
                     f'classtype:protocol-command-decode; sid:{sid}; rev:2;)')
        want[sid] = sum(1 for e in events if name in e)
    # An event gaspp does not raise: skipped with its reason; an unknown one: an error.
    rules.append('alert pkthdr any any -> any any (msg:"not raised"; decode-event:vlan.too_many_layers; sid:9001;)')
    rules.append('alert pkthdr any any -> any any (msg:"unknown"; decode-event:ipv4.no_such_event; sid:9002;)')
    want[9001] = want[9002] = 0
    failed = check_counts(gaspp, paths, packets, rules, want, "ev", ",packet-alert-max=1000",
                          lambda path, err: 0 if "decode-event vlan.too_many_layers (gaspp does not raise it)" in err
                          and "unknown event 'ipv4.no_such_event'" in err else (print(f"FAIL {path}: {err[-2000:]}") or 1))
    # EVE stats: each event counted as Suricata nests it (decoder.event.LAYER.NAME), on the CPU.
    from scapy.all import wrpcap
    with tempfile.TemporaryDirectory() as d:
        pcap = os.path.join(d, "ev.pcap")
        wrpcap(pcap, packets)
        subprocess.run([gaspp, "-r", pcap, "--backend", "cpu", "-l", d, "--eve-anomaly"], check=True, capture_output=True)
        eve = [json.loads(line) for line in open(os.path.join(d, "eve.json"))]
        stats = [e for e in eve if e["event_type"] == "stats"][-1]
        # --eve-anomaly: one anomaly event (type decode) for each event of each packet.
        anomalies = {}
        for e in eve:
            if e["event_type"] == "anomaly":
                name = e["anomaly"]["event"]
                anomalies[name] = anomalies.get(name, 0) + 1
                if e["anomaly"]["type"] != "decode" or not e.get("pcap_cnt") or "src_ip" not in e:
                    print(f"FAIL anomaly event: {e}")
                    failed += 1
        want_anomalies = {"decoder." + n: want[sid] for n, sid in EVENTS.items() if want[sid]}
        if anomalies != want_anomalies:
            print(f"FAIL anomaly events: {sorted(anomalies.items())}, expected {sorted(want_anomalies.items())}")
            failed += 1
        schema = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../shared/data/eve/schema.json")
        try:
            import jsonschema
            validator = jsonschema.Draft202012Validator(json.load(open(schema)))
            for e in eve:
                for err in validator.iter_errors(e):
                    print(f"FAIL schema: {e['event_type']}: {'/'.join(map(str, err.absolute_path))}: {err.message[:120]}")
                    failed += 1
        except (ImportError, FileNotFoundError):
            print("schema check skipped: no jsonschema or no ../shared/data/eve/schema.json")
        got = stats["stats"]["decoder"].get("event", {})
        for name, sid in EVENTS.items():
            layer, ev = name.split(".", 1)
            n = got.get(layer, {}).get(ev, 0)
            if n != want[sid]:
                print(f"FAIL stats: decoder.event.{name} = {n}, expected {want[sid]}")
                failed += 1
    print(f"{len(frames)} packets, {len(EVENTS)} events: {'ok' if not failed else f'{failed} failures'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
