#!/usr/bin/env python3
"""IP fragments reassembled before flow tracking, end to end, on captures built with scapy.

The capture holds an IPv4 TCP conversation whose data segments travel as fragments (in order, in
reverse, interleaved with another flow), an IPv6 TCP conversation fragmented with fragment
headers, a fragmented UDP datagram, and a datagram whose middle fragment never comes. Oracles:
- the bytes each client sent (known by construction) and tshark's own reassembly of the same
  capture (tcp.payload of the reassembled segments, per stream): the client streams must equal both;
- the counts by construction: fragments, datagrams reassembled, one incomplete at the end; flow
  records count datagrams, not fragments (Suricata's flows never see a fragment);
- `-w` writes the capture's records, not the reassembled datagrams; --decode has one row per record;
- batches of 1, 2, 3 and 65536 packets change nothing;
- an overlap rewritten by a later fragment starting at the same offset: bsd keeps the first
  fragment's bytes, linux takes the later one's (Suricata's policies);
- with defrag.enabled=no the streams lose the fragmented data (the test can fail);
- a drop rule on the UDP datagram's port (IPS), at batches of 1, 2, 3 and 65536 packets: the
  reassembled datagram matches it, once; the fragment that completed it is dropped with it (not in
  -w, a drop event with its number, one record dropped in the outcome and in EVE's ips stats); the
  other fragments carry no ports, as in Suricata, and pass. Without reassembly the rule sees the
  first fragment's ports instead. A module's to_dump on the datagram dumps that fragment.

usage: defrag.py GASPP [--backend cpu|cuda]
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

try:
    from scapy.all import IP, TCP, UDP, Ether, IPv6, IPv6ExtHdrFragment, Raw, fragment, fragment6, wrpcap
except ImportError:
    print("scapy is not installed (scripts/setup.sh installs it); skipping")
    sys.exit(1 if os.environ.get("CI") else 77)

C4, S4, O4 = "10.1.0.1", "10.1.0.2", "10.1.0.3"
C6, S6 = "2001:db8::1", "2001:db8::2"


def tcp_conversation(ip, c, s, cport, pieces, frag, mtu_frag, v6=False):
    """Handshake, the client's pieces (each fragmented when frag(piece index) says how), the
    server's ACKs, FIN. Returns the list of frames and the bytes the client sent."""
    mk = (lambda src, dst: IPv6(src=src, dst=dst)) if v6 else (lambda src, dst: IP(src=src, dst=dst))
    frames = []
    cs, ss = 1000, 5000

    def seg(frm, flags, seq, ack, data=b""):
        src, dst, sp, dp = (c, s, cport, 80) if frm == "c" else (s, c, 80, cport)
        p = mk(src, dst) / TCP(sport=sp, dport=dp, flags=flags, seq=seq, ack=ack, window=65535)
        return p / Raw(data) if data else p

    frames += [seg("c", "S", cs, 0), seg("s", "SA", ss, cs + 1), seg("c", "A", cs + 1, ss + 1)]
    seq = cs + 1
    sent = b""
    for k, data in enumerate(pieces):
        p = seg("c", "PA", seq, ss + 1, data)
        how = frag(k)
        if how is None:
            frames.append(p)
        else:
            if v6:
                pv6 = IPv6(src=c, dst=s) / IPv6ExtHdrFragment(id=0x100 + k) / p[TCP]
                parts = fragment6(pv6, mtu_frag)
            else:
                p[IP].id = 0x100 + k
                parts = fragment(p, fragsize=mtu_frag)
            frames += list(reversed(parts)) if how == "reverse" else parts
        seq += len(data)
        sent += data
        frames.append(seg("s", "A", ss + 1, seq))
    frames += [seg("c", "FA", seq, ss + 1), seg("s", "FA", ss + 1, seq + 1), seg("c", "A", seq + 1, ss + 2)]
    return frames, sent


def build(path):
    a = bytes(range(256)) * 12          # 3072 bytes: 4 IPv4 fragments of 800
    b = b"B" * 2000 + b"end-of-b"      # reversed fragments
    c = b"plain segment"
    f4, sent4 = tcp_conversation(IP, C4, S4, 40000, [a, b, c], lambda k: [None, "reverse", None][k] if k else "order", 800)
    # The other flow's packet lands between the fragments of the first segment.
    other = IP(src=O4, dst=S4) / UDP(sport=999, dport=53) / Raw(b"x" * 20)
    k = next(i for i, p in enumerate(f4) if p.haslayer(IP) and p[IP].flags.MF)
    f4.insert(k + 1, other)
    f6, sent6 = tcp_conversation(IPv6, C6, S6, 40001, [b"six" * 1000, b"tail"], lambda k: "order" if k == 0 else None,
                                 1280, v6=True)
    udp = IP(src=C4, dst=S4, id=0x777) / UDP(sport=5353, dport=5353) / Raw(b"U" * 5000)
    fu = fragment(udp, fragsize=1480)
    # A datagram whose middle fragment is lost: never completes.
    lost = fragment(IP(src=C4, dst=O4, id=0x999) / UDP(sport=1, dport=2) / Raw(b"L" * 3000), fragsize=1000)
    lost = [lost[0], lost[2]]
    frames = [Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / p for p in f4 + f6 + fu + lost]
    for i, p in enumerate(frames):
        p.time = 1_700_000_000 + i * 0.001
    wrpcap(path, frames)
    n4 = sum(1 for p in f4 + fu + lost if p.haslayer(IP) and (p[IP].flags.MF or p[IP].frag))
    n6 = sum(1 for p in f6 if p.haslayer(IPv6ExtHdrFragment))
    return {"frames": len(frames), "sent4": sent4, "sent6": sent6, "ipv4_fragments": n4, "ipv6_fragments": n6,
            "ipv4_reassembled": 3, "ipv6_reassembled": 1, "incomplete": 1}


def build_overlap(path):
    """A segment of 24 payload bytes "aaaa...", fragments at 0 (IP+TCP header + 8), 8..24 of the
    datagram, and a later fragment at the same offset 8 with "ZZZZZZZZ" over the first half."""
    p = IP(src=C4, dst=S4, id=0x55) / TCP(sport=40009, dport=80, flags="PA", seq=1, ack=1) / Raw(b"a" * 24)
    raw = bytes(p[IP].payload)  # 20 TCP header + 24 data = 44 bytes
    hs = [IP(src=C4, dst=S4) / TCP(sport=40009, dport=80, flags="S", seq=0),
          IP(src=S4, dst=C4) / TCP(sport=80, dport=40009, flags="SA", seq=0, ack=1),
          IP(src=C4, dst=S4) / TCP(sport=40009, dport=80, flags="A", seq=1, ack=1)]
    f1 = IP(src=C4, dst=S4, id=0x55, flags="MF", frag=0, proto=6) / Raw(raw[:24])
    f2 = IP(src=C4, dst=S4, id=0x55, flags="MF", frag=3, proto=6) / Raw(raw[24:32])
    f3 = IP(src=C4, dst=S4, id=0x55, flags="MF", frag=3, proto=6) / Raw(b"ZZZZZZZZ")
    f4 = IP(src=C4, dst=S4, id=0x55, flags=0, frag=4, proto=6) / Raw(raw[32:])
    frames = [Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / x for x in hs + [f1, f2, f3, f4]]
    for i, x in enumerate(frames):
        x.time = 1_700_000_000 + i * 0.001
    wrpcap(path, frames)
    # Datagram bytes 24..32 are payload bytes 4..12.
    return {"bsd": b"a" * 24, "linux": b"aaaa" + b"ZZZZZZZZ" + b"a" * 12}


def run(gaspp, backend, pcap, out, batch="65536", sets=(), extra=()):
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    cmd = [gaspp, "-r", pcap, "--backend", backend, "-q", "-l", out, "--batch", batch, "--stats-json",
           os.path.join(out, "stats.json"), "--dump-streams", os.path.join(out, "streams"), "-w",
           os.path.join(out, "passed.pcap"), "--decode-out", os.path.join(out, "rows.tsv")]
    for s in sets:
        cmd += ["--set", s]
    cmd += list(extra)
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"gaspp failed ({p.returncode}): {p.stderr}")
    return out


def client_bytes(out, prefix):
    root = os.path.join(out, "streams")
    names = [n for n in os.listdir(root) if n.startswith(prefix)]
    return open(os.path.join(root, names[0]), "rb").read() if len(names) == 1 else None


def tshark_client_streams(pcap):
    """tshark's reassembly: the TCP payload of each client segment, per TCP stream, concatenated."""
    p = subprocess.run(["tshark", "-r", pcap, "-o", "tcp.desegment_tcp_streams:FALSE", "-Y", "tcp.len > 0 && tcp.dstport == 80",
                        "-T", "fields", "-e", "tcp.srcport", "-e", "tcp.payload"], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"tshark failed: {p.stderr}")
    got = {}
    for line in p.stdout.splitlines():
        port, payload = line.split("\t")
        got[int(port)] = got.get(int(port), b"") + bytes.fromhex(payload.replace(":", ""))
    return got


def records(pcap):
    """The record bytes (header + frame) of a classic little-endian pcap."""
    b = open(pcap, "rb").read()
    out, at = [], 24
    while at < len(b):
        n = int.from_bytes(b[at + 8:at + 12], "little")
        out.append(b[at:at + 16 + n])
        at += 16 + n
    return out


def frames_of(pcap):
    return [r[16:] for r in records(pcap)]


def main():
    gaspp = sys.argv[1]
    backend = sys.argv[sys.argv.index("--backend") + 1] if "--backend" in sys.argv else "cpu"
    have_tshark = shutil.which("tshark") is not None
    if not have_tshark and os.environ.get("CI"):
        raise SystemExit("tshark not found (scripts/setup.sh installs it)")
    problems = []
    with tempfile.TemporaryDirectory() as d:
        pcap = os.path.join(d, "frag.pcap")
        want = build(pcap)
        base = None
        for batch in ("65536", "1", "2", "3"):
            tag = f"batch {batch}"
            out = run(gaspp, backend, pcap, os.path.join(d, "out" + batch), batch)
            s4 = client_bytes(out, "010.001.000.001.40000-")
            s6 = client_bytes(out, "2001:db8::1.40001-")
            if s4 != want["sent4"]:
                problems.append(f"{tag}: IPv4 client stream {len(s4 or b'')} bytes, want {len(want['sent4'])}")
            if s6 is None or not s6.startswith(b"six") or s6 != want["sent6"]:
                problems.append(f"{tag}: IPv6 client stream {len(s6 or b'')} bytes, want {len(want['sent6'])}")
            st = json.load(open(os.path.join(out, "stats.json")))
            dg = st["defrag"]
            for k in ("ipv4_fragments", "ipv6_fragments", "ipv4_reassembled", "ipv6_reassembled"):
                if dg[k] != want[k]:
                    problems.append(f"{tag}: defrag.{k} {dg[k]}, want {want[k]}")
            if dg["incomplete_at_end"] != want["incomplete"]:
                problems.append(f"{tag}: defrag.incomplete_at_end {dg['incomplete_at_end']}")
            if st["packets"] != want["frames"] or st["outcome"]["passed"] != want["frames"]:
                problems.append(f"{tag}: packets {st['packets']} passed {st['outcome']['passed']}, want {want['frames']}")
            frags = want["ipv4_fragments"] + want["ipv6_fragments"]
            if st["flows"]["fragment"] != frags:
                problems.append(f"{tag}: flows.fragment {st['flows']['fragment']}, want {frags} (no fragment keys a flow)")
            events = [json.loads(x) for x in open(os.path.join(out, "eve.json"))]
            stats = [e for e in events if e["event_type"] == "stats"][-1]["stats"]
            if stats["defrag"]["ipv4"] != {"fragments": want["ipv4_fragments"], "reassembled": 3}:
                problems.append(f"{tag}: EVE stats defrag.ipv4 {stats['defrag']['ipv4']}")
            flows = {(e["src_port"], e["proto"]): e["flow"] for e in events if e["event_type"] == "flow"}
            # The IPv4 client sends SYN, ACK, 3 data segments (2 of them as 7 fragments), FIN, ACK.
            f4 = flows.get((40000, "TCP"))
            if not f4 or f4["pkts_toserver"] != 7:
                problems.append(f"{tag}: IPv4 flow pkts_toserver {f4 and f4['pkts_toserver']}, want 7 (datagrams, not fragments)")
            fu = flows.get((5353, "UDP"))
            if not fu or fu["pkts_toserver"] != 1 or fu["bytes_toserver"] != 14 + 20 + 8 + 5000:
                problems.append(f"{tag}: UDP flow {fu}, want 1 packet of {14 + 28 + 5000} bytes")
            if (1, "UDP") in flows:
                problems.append(f"{tag}: the incomplete datagram's first fragment made a flow")
            if records(os.path.join(out, "passed.pcap")) != records(pcap):
                problems.append(f"{tag}: -w did not write exactly the capture's records")
            rows = [x for x in open(os.path.join(out, "rows.tsv")) if not x.startswith("#")]
            if len(rows) != want["frames"]:
                problems.append(f"{tag}: {len(rows)} decode rows, want {want['frames']}")
            # The files, and the index's rows (written as flows end, so in an order batches decide).
            dump = {n: open(os.path.join(out, "streams", n), "rb").read() for n in os.listdir(os.path.join(out, "streams"))}
            dump["index.tsv"] = sorted(dump["index.tsv"].splitlines())
            if base is None:
                base = dump
            elif dump != base:
                problems.append(f"{tag}: stream dumps differ from batch 65536's")
        if have_tshark:
            ts = tshark_client_streams(pcap)
            out = os.path.join(d, "out65536")
            for port, prefix in ((40000, "010.001.000.001.40000-"), (40001, "2001:db8::1.40001-")):
                if ts.get(port) != client_bytes(out, prefix):
                    problems.append(f"tshark: client {port} {len(ts.get(port) or b'')} bytes, gaspp's differ")
        # Without reassembly the fragmented data is not in the streams.
        out = run(gaspp, backend, pcap, os.path.join(d, "off"), sets=["defrag.enabled=no"])
        if client_bytes(out, "010.001.000.001.40000-") == want["sent4"]:
            problems.append("defrag.enabled=no: the IPv4 stream is complete anyway (the test cannot fail)")
        if "defrag" in json.load(open(os.path.join(out, "stats.json"))):
            problems.append("defrag.enabled=no: defrag statistics reported")
        # IPS: a drop rule on the fragmented UDP datagram's port.
        rules = os.path.join(d, "drop.rules")
        with open(rules, "w") as f:
            f.write('drop udp any any -> any 5353 (msg:"frag"; sid:7;)\n')
        udp_frags = [k for k, fr in enumerate(frames_of(pcap), 1) if b"U" * 64 in fr]
        runs = [([], [udp_frags[-1]], b) for b in ("1", "2", "3", "65536")] + [(["defrag.enabled=no"], [udp_frags[0]], "3")]
        for sets, dropped, batch in runs:
            tag = "IPS" + (" without reassembly" if sets else "") + f", batch {batch}"
            out = run(gaspp, backend, pcap, os.path.join(d, "ips" + str(len(sets)) + batch), batch, sets,
                      ["--rules", rules, "--eve-drops"])
            events = [json.loads(x) for x in open(os.path.join(out, "eve.json"))]
            alerts = [e["pcap_cnt"] for e in events if e["event_type"] == "alert"]
            drops = [e["pcap_cnt"] for e in events if e["event_type"] == "drop"]
            if alerts != dropped or drops != dropped:
                problems.append(f"{tag}: alerts at {alerts}, drops at {drops}, want both at {dropped}")
            kept = records(os.path.join(out, "passed.pcap"))
            want_kept = [r for k, r in enumerate(records(pcap), 1) if k not in dropped]
            if kept != want_kept:
                problems.append(f"{tag}: -w kept {len(kept)} records, want all but {dropped}")
            st = json.load(open(os.path.join(out, "stats.json")))
            ips = [e for e in events if e["event_type"] == "stats"][-1]["stats"]["ips"]
            if st["outcome"]["dropped"] != 1 or ips["blocked"] != 1 or ips["accepted"] != want["frames"] - 1:
                problems.append(f"{tag}: outcome {st['outcome']}, EVE ips {ips}: want 1 record dropped, the rest accepted")
        # A module's to_dump on the datagram dumps the fragment that completed it.
        dumpf = os.path.join(d, "dumped.pcap")
        out = run(gaspp, backend, pcap, os.path.join(d, "dump"), "2", (),
                  ["--module", "probe:dport=5353,action=to_dump", "--dump-packets", dumpf])
        if [r[16:] for r in records(dumpf)] != [frames_of(pcap)[udp_frags[-1] - 1]]:
            problems.append(f"to_dump: {len(records(dumpf))} records dumped, want the completing fragment")
        # Overlap policies.
        opcap = os.path.join(d, "overlap.pcap")
        expect = build_overlap(opcap)
        for pol, data in expect.items():
            out = run(gaspp, backend, opcap, os.path.join(d, "ov" + pol), sets=[f"defrag.policy={pol}"])
            got = client_bytes(out, "010.001.000.001.40009-")
            if got != data:
                problems.append(f"overlap, policy {pol}: client stream {got!r}, want {data!r}")
            ov = json.load(open(os.path.join(out, "stats.json")))["defrag"]
            if ov["overlaps"] != 1 or ov["policy"] != pol:
                problems.append(f"overlap, policy {pol}: defrag {ov}")
    for p in problems:
        print("FAIL", p)
    print(f"defrag: {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
