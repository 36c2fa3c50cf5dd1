#!/usr/bin/env python3
"""TCP urgent data under each of Suricata's stream.reassembly.urgent policies, built with scapy.

The client sends "hello", then "abcX" with URG and the urgent pointer after the X (RFC 6093: the
byte before the pointer, the segment's last, is the urgent one), "def", a lone urgent "Z", "ghi",
then closes. What the client's stream must hold, written out by hand from Suricata's reassembly
(stream-tcp-reassemble.c):
  inline  every byte as sent:                          helloabcXdefZghi
  oob     the urgent bytes out of band, no hole:       helloabcdefghi     (tcp.urgent_oob_data 2)
  gap     the urgent bytes left out, each a 1-byte gap: helloabc|def|ghi
  drop    without a firewall, as inline; in IPS mode (--firewall-rules) the two URG segments are
          dropped (EVE drop reason "stream urgent", ips.drop_reason.stream_urgent 2), ignored by
          the session, and their bytes are a gap (4 and 1 bytes).
Each of these runs is repeated with batches of 1, 2 and 65536 packets, which must not change
anything. A second capture sends more urgent bytes than the out-of-band limit allows (65535 per
direction): past it, oob-limit-policy inline keeps the byte, gap leaves it out (a gap), drop leaves
the segment out.

usage: stream_urgent.py GASPP [--backend cpu|cuda]
"""
import json
import struct
import os
import subprocess
import sys
import tempfile

try:
    from scapy.all import IP, TCP, Ether, Raw, rdpcap
except ImportError:
    print("scapy is not installed (scripts/setup.sh installs it); skipping")
    sys.exit(1 if os.environ.get("CI") else 77)

C, S, SP = "10.0.0.1", "10.0.0.2", 80
LIMIT = 65535


def conversation(cport, pieces, ack_every=0, fin_on_last=False):
    """pieces: (bytes, urgent) in order; returns one connection's segments as (sender, flags, seq,
    ack, data, urgent pointer). With ack_every, the server acknowledges the data after every
    ack_every pieces (its window is 65535 bytes)."""
    c, s = 1000, 9000
    segs = [("c", "S", c, 0, b"", 0), ("s", "SA", s, c + 1, b"", 0), ("c", "A", c + 1, s + 1, b"", 0)]
    seq = c + 1
    for k, (data, urgent) in enumerate(pieces, 1):
        flags = ("PAU" if urgent else "PA") + ("F" if fin_on_last and k == len(pieces) else "")
        segs.append(("c", flags, seq, s + 1, data, len(data) if urgent else 0))
        seq += len(data)
        if ack_every and k % ack_every == 0:
            segs.append(("s", "A", s + 1, seq, b"", 0))
    if not fin_on_last:
        segs.append(("c", "FA", seq, s + 1, b"", 0))
    segs += [("s", "FA", s + 1, seq + 1, b"", 0), ("c", "A", seq + 1, s + 2, b"", 0)]
    return [(cport,) + x for x in segs]


def frame(seg):
    cport, frm, flags, seq, ack, data, urgptr = seg
    src, dst, sport, dport = (C, S, cport, SP) if frm == "c" else (S, C, SP, cport)
    p = Ether() / IP(src=src, dst=dst) / TCP(sport=sport, dport=dport, flags=flags, seq=seq, ack=ack, window=65535,
                                             urgptr=urgptr)
    return p / Raw(data) if data else p


def write_pcap(path, segs):
    """A classic pcap of the segments, 100 us apart. scapy builds one frame of each shape; the
    sequence and ack numbers are patched into copies of it, with the TCP checksum adjusted for the
    changed words (RFC 1624): scapy alone takes minutes for the limit capture's 65,000 packets."""
    cache = {}
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
        for k, seg in enumerate(segs):
            cport, frm, flags, seq, ack, data, urgptr = seg
            shape = (cport, frm, flags, data, urgptr)
            if shape not in cache:
                cache[shape] = (bytes(frame(seg)), seq, ack)
            b0, seq0, ack0 = cache[shape]
            b = bytearray(b0)
            struct.pack_into("!II", b, 14 + 20 + 4, seq, ack)
            acc = ~struct.unpack_from("!H", b, 14 + 20 + 16)[0] & 0xffff
            for before, after in ((seq0, seq), (ack0, ack)):
                for sh in (16, 0):
                    acc += (~(before >> sh) & 0xffff) + ((after >> sh) & 0xffff)
            while acc >> 16:
                acc = (acc & 0xffff) + (acc >> 16)
            struct.pack_into("!H", b, 14 + 20 + 16, ~acc & 0xffff)
            f.write(struct.pack("<IIII", 1_700_000_000 + k // 10000, (k % 10000) * 100, len(b), len(b)))
            f.write(b)


def run(gaspp, backend, pcap, d, batch, sets, ips):
    out = os.path.join(d, "out")
    subprocess.run(["rm", "-rf", out])
    os.makedirs(out)
    cmd = [gaspp, "-r", pcap, "--backend", backend, "-q", "-l", out, "--batch", batch, "--stats-json",
           os.path.join(out, "stats.json"), "--dump-streams", os.path.join(out, "streams")]
    for s in sets:
        cmd += ["--set", s]
    if ips:
        rules = os.path.join(d, "fw.rules")
        with open(rules, "w") as f:
            f.write("accept:hook tcp:all any any <> any any (sid:1;)\n")
        cmd += ["--firewall-rules", rules, "--eve-drops"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"gaspp failed ({p.returncode}): {p.stderr}")
    events = [json.loads(line) for line in open(os.path.join(out, "eve.json"))]
    st = json.load(open(os.path.join(out, "stats.json")))
    root = os.path.join(out, "streams")
    idx = [line.rstrip("\n").split("\t") for line in open(os.path.join(root, "index.tsv")) if not line.startswith("#")]
    return events, st, root, idx


def client_stream(root, idx, cport):
    """The client's bytes with each gap as '|', and the gaps' lengths, from the stream dump."""
    f = [n for n in os.listdir(root) if n.startswith("010.000.000.001." + f"{cport:05d}-")]
    if len(f) != 1:
        return None, None
    data = open(os.path.join(root, f[0]), "rb").read()
    gaps = sorted((int(r[6]), int(r[5])) for r in idx if r[0] == f[0] and r[3] == "gap")
    out, at = b"", 0
    for file_off, _ in gaps:
        out += data[at:file_off] + b"|"
        at = file_off
    return out + data[at:], [g[1] for g in gaps]


def check(events, st, root, idx, cport, want, want_gaps, counters, ips, urg_pkts, problems, tag):
    got, gaps = client_stream(root, idx, cport)
    if got != want or (want_gaps is not None and gaps != want_gaps):
        shown = got if got is None or len(got) < 80 else got[:20] + b"..." + got[-20:]
        problems.append(f"{tag}: client stream {shown!r} ({len(got or b'')} bytes) gaps {(gaps or [])[:6]}, "
                        f"want {want if len(want) < 80 else len(want)!r} {want_gaps}")
    for k in ("urgent_oob_bytes", "urgent_gap_bytes", "urgent_oob_limit"):
        if st["streams"].get(k) != counters.get(k, 0):
            problems.append(f"{tag}: streams.{k} {st['streams'].get(k)}, want {counters.get(k, 0)}")
    if st["flows"].get("tcp_urgent_dropped") != counters.get("tcp_urgent_dropped", 0):
        problems.append(f"{tag}: flows.tcp_urgent_dropped {st['flows'].get('tcp_urgent_dropped')}")
    stats = [e for e in events if e["event_type"] == "stats"][-1]["stats"]
    if stats["tcp"].get("urgent_oob_data") != counters.get("urgent_oob_bytes", 0):
        problems.append(f"{tag}: EVE tcp.urgent_oob_data {stats['tcp'].get('urgent_oob_data')}")
    drops = [e for e in events if e["event_type"] == "drop"]
    if ips:
        if [e["pcap_cnt"] for e in drops] != urg_pkts or any(e["drop"]["reason"] != "stream urgent" for e in drops):
            problems.append(f"{tag}: drops {[(e['pcap_cnt'], e['drop']['reason']) for e in drops][:4]}, want {urg_pkts[:4]}")
        if stats["ips"]["drop_reason"].get("stream_urgent") != len(urg_pkts):
            problems.append(f"{tag}: ips.drop_reason {stats['ips']['drop_reason']}")
    elif drops:
        problems.append(f"{tag}: {len(drops)} drops without a firewall")


def main():
    gaspp = sys.argv[1]
    backend = sys.argv[sys.argv.index("--backend") + 1] if "--backend" in sys.argv else "cpu"
    first = conversation(40000, [(b"hello", False), (b"abcX", True), (b"def", False), (b"Z", True), (b"ghi", False)])
    urg1 = [5, 7]  # the URG segments' packet numbers
    # The limit: LIMIT + 2 urgent two-byte segments "aU", then "end".
    n = LIMIT + 2
    second = conversation(40001, [(b"aU", True)] * n + [(b"end", False)], ack_every=1000)
    policy = "stream.reassembly.urgent.policy="
    limit = "stream.reassembly.urgent.oob-limit-policy="
    # name, --set values, IPS, stream, gaps, counters
    cases = [
        ("default (inline)", [], False, b"helloabcXdefZghi", [], {}),
        ("inline", [policy + "inline"], False, b"helloabcXdefZghi", [], {}),
        ("oob", [policy + "oob"], False, b"helloabcdefghi", [], {"urgent_oob_bytes": 2}),
        ("gap", [policy + "gap"], False, b"helloabc|def|ghi", [1, 1], {"urgent_gap_bytes": 2}),
        ("drop, IDS: inline", [policy + "drop"], False, b"helloabcXdefZghi", [], {}),
        ("drop, IPS", [policy + "drop"], True, b"hello|def|ghi", [4, 1], {"tcp_urgent_dropped": 2}),
    ]
    # Past the limit (65535 bytes out of band): oob-limit-policy inline keeps the urgent byte, gap
    # leaves a 1-byte hole, drop leaves the segment out of the stream (a 4-byte hole for two).
    a = b"a" * LIMIT
    limit_cases = [
        ("oob past the limit, inline", [policy + "oob"], False, a + b"aUaU" + b"end", [],
         {"urgent_oob_bytes": LIMIT, "urgent_oob_limit": 2}),
        ("oob past the limit, gap", [policy + "oob", limit + "gap"], False, a + b"a|a|end", [1, 1],
         {"urgent_oob_bytes": LIMIT, "urgent_oob_limit": 2, "urgent_gap_bytes": 2}),
        ("oob past the limit, drop", [policy + "oob", limit + "drop"], False, a + b"|end", [4],
         {"urgent_oob_bytes": LIMIT, "urgent_oob_limit": 2}),
    ]
    # The urgent byte is the last before a FIN in the same segment: under gap it keeps its place
    # (the direction ends after it, a 1-byte gap); out of band it takes none.
    third = conversation(40002, [(b"abcd", False), (b"efgh", True)], fin_on_last=True)
    fin_cases = [
        ("URG with FIN, inline", [], b"abcdefgh", [], {}),
        ("URG with FIN, oob", [policy + "oob"], b"abcdefg", [], {"urgent_oob_bytes": 1}),
        ("URG with FIN, gap", [policy + "gap"], b"abcdefg|", [1], {"urgent_gap_bytes": 1}),
    ]
    failed = 0
    with tempfile.TemporaryDirectory() as d:
        pcap1, pcap2, pcap3 = (os.path.join(d, n) for n in ("urgent.pcap", "limit.pcap", "urgfin.pcap"))
        write_pcap(pcap1, first)
        write_pcap(pcap2, second)
        write_pcap(pcap3, third)
        # The patched frames are the frames scapy builds.
        if [bytes(p) for p in rdpcap(pcap1)] != [bytes(frame(x)) for x in first]:
            raise SystemExit("write_pcap: frames differ from scapy's")
        for name, sets, ips, want, want_gaps, counters in cases:
            problems = []
            for batch in ("1", "2", "65536"):
                events, st, root, idx = run(gaspp, backend, pcap1, d, batch, sets, ips)
                check(events, st, root, idx, 40000, want, want_gaps, counters, ips, urg1, problems, f"batch {batch}")
            print(f"{'ok' if not problems else 'FAIL':5} {name}" + "".join(f"\n      {p}" for p in problems))
            failed += bool(problems)
        for name, sets, want, want_gaps, counters in fin_cases:
            problems = []
            for batch in ("1", "65536"):
                events, st, root, idx = run(gaspp, backend, pcap3, d, batch, sets, False)
                check(events, st, root, idx, 40002, want, want_gaps, counters, False, [], problems, f"batch {batch}")
                ends = [int(r[4]) for r in idx if r[3] == "end" and r[0].startswith("010.000.000.001.40002-")]
                want_end = 7 if "oob" in name else 8
                if ends != [want_end]:
                    problems.append(f"batch {batch}: the direction ends at {ends}, want {want_end}")
            print(f"{'ok' if not problems else 'FAIL':5} {name}" + "".join(f"\n      {p}" for p in problems))
            failed += bool(problems)
        for name, sets, ips, want, want_gaps, counters in limit_cases:
            problems = []
            events, st, root, idx = run(gaspp, backend, pcap2, d, "65536", sets, ips)
            check(events, st, root, idx, 40001, want, want_gaps, counters, ips, [], problems, "limit")
            print(f"{'ok' if not problems else 'FAIL':5} {name}" + "".join(f"\n      {p}" for p in problems))
            failed += bool(problems)
    print(f"{failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
