#!/usr/bin/env python3
"""64-bit stream offsets: data more than 2^31 (and 4 GiB) beyond the lowest hole, built with scapy.

The client sends 1000 bytes; then the capture misses 5 GiB of its data (the capture dropped it, the
server received it: its ACKs, 1 GiB apart, say so); then the client sends 1000 and 500 more bytes
and closes. The client's ISN is near the top of the sequence space, so its sequence numbers also
wrap. What must come out, written out by hand: the three pieces at their true offsets, one gap of
exactly 5 GiB at offset 1000, the end at 5 GiB + 2500, and no retransmission, overlap or conflict.
Unwrapping a sequence number to the offset nearest the lowest hole would put the later data 4 GiB
too early (sequence numbers repeat every 4 GiB). Runs at batches of 1, 3 and 65536 packets.

usage: stream_offsets.py GASPP [--backend cpu|cuda]
"""
import json
import os
import subprocess
import sys
import tempfile

try:
    from scapy.all import IP, TCP, Ether, Raw, wrpcap
except ImportError:
    print("scapy is not installed (scripts/setup.sh installs it); skipping")
    sys.exit(1 if os.environ.get("CI") else 77)

C, S, CP, SP = "10.0.0.1", "10.0.0.2", 40000, 80
GIB = 1 << 30
HOLE = 5 * GIB


def capture(isn):
    def tcp(frm, flags, seq, ack, data=b"", opts=()):
        src, dst, sport, dport = (C, S, CP, SP) if frm == "c" else (S, C, SP, CP)
        p = Ether() / IP(src=src, dst=dst) / TCP(sport=sport, dport=dport, flags=flags, seq=seq % 2**32,
                                                 ack=ack % 2**32, window=65535, options=list(opts))
        return p / Raw(data) if data else p

    c, s = isn, 7000
    base = c + 1  # sequence number of offset 0
    # Both SYNs scale windows by 2^14: the server's window is 65535 << 14, just under 1 GiB.
    pkts = [tcp("c", "S", c, 0, opts=[("WScale", 14)]), tcp("s", "SA", s, base, opts=[("WScale", 14)]),
            tcp("c", "A", base, s + 1), tcp("c", "PA", base, s + 1, b"A" * 1000), tcp("s", "A", s + 1, base + 1000)]
    # The missing 5 GiB, acknowledged in steps within the server's window (an ACK past the window
    # it advertised does not count).
    step = GIB - (1 << 20)
    at = 0
    while at < HOLE:
        at = min(at + step, HOLE)
        pkts.append(tcp("s", "A", s + 1, base + 1000 + at))
    far = base + 1000 + HOLE
    pkts += [tcp("c", "PA", far, s + 1, b"B" * 1000), tcp("c", "PA", far + 1000, s + 1, b"C" * 500),
             tcp("s", "A", s + 1, far + 1500), tcp("c", "FA", far + 1500, s + 1),
             tcp("s", "FA", s + 1, far + 1501), tcp("c", "A", far + 1501, s + 2)]
    for k, p in enumerate(pkts):
        p.time = 1_700_000_000 + k * 0.01
    return pkts


def forged_acks():
    """The client sends pure ACKs for server data far past the server's window (each less than 2^31
    ahead of the last, 4 GiB in all), then the server sends 200 bytes: they are its stream's first
    200 bytes, with no gap (an ACK past the advertised window cannot move the stream)."""
    def tcp(frm, flags, seq, ack, data=b""):
        src, dst, sport, dport = (C, S, CP, SP) if frm == "c" else (S, C, SP, CP)
        p = Ether() / IP(src=src, dst=dst) / TCP(sport=sport, dport=dport, flags=flags, seq=seq % 2**32,
                                                 ack=ack % 2**32, window=65535)
        return p / Raw(data) if data else p
    c, s = 1000, 7000
    pkts = [tcp("c", "S", c, 0), tcp("s", "SA", s, c + 1), tcp("c", "A", c + 1, s + 1)]
    for k in range(1, 4):
        pkts.append(tcp("c", "A", c + 1, s + 1 + k * ((1 << 31) - 1)))
    pkts += [tcp("s", "PA", s + 1, c + 1, b"S" * 200), tcp("c", "A", c + 1, s + 201)]
    for k, p in enumerate(pkts):
        p.time = 1_700_000_000 + k * 0.01
    return pkts


def main():
    gaspp = sys.argv[1]
    backend = sys.argv[sys.argv.index("--backend") + 1] if "--backend" in sys.argv else "cpu"
    failed = 0
    with tempfile.TemporaryDirectory() as d:
        for isn in (2**32 - 10, 12345):
            pcap = os.path.join(d, "in.pcap")
            wrpcap(pcap, capture(isn))
            for batch in ("1", "3", "65536"):
                out = os.path.join(d, f"out-{isn}-{batch}")
                os.makedirs(out)
                p = subprocess.run([gaspp, "-r", pcap, "--backend", backend, "-q", "-l", out, "--batch", batch,
                                    "--stats-json", os.path.join(out, "stats.json"), "--dump-streams",
                                    os.path.join(out, "streams")], capture_output=True, text=True)
                problems = []
                if p.returncode != 0:
                    problems.append(f"gaspp failed ({p.returncode}): {p.stderr.strip()}")
                else:
                    root = os.path.join(out, "streams")
                    name = f"010.000.000.001.{CP:05d}-010.000.000.002.{SP:05d}"
                    data = open(os.path.join(root, name), "rb").read() if os.path.exists(os.path.join(root, name)) else None
                    if data != b"A" * 1000 + b"B" * 1000 + b"C" * 500:
                        problems.append(f"client stream {len(data or b'')} bytes: {(data or b'')[:8]!r}...")
                    rows = [r.rstrip("\n").split("\t") for r in open(os.path.join(root, "index.tsv")) if not r.startswith("#")]
                    mine = [(r[3], int(r[4]), int(r[5]), r[6]) for r in rows if r[0] == name]
                    want = [("gap", 1000, HOLE, "1000"), ("end", HOLE + 2500, 0, "")]
                    got = [(e, off, ln, fo if e == "gap" else "") for e, off, ln, fo in mine]
                    if got != want:
                        problems.append(f"index {got}, want {want}")
                    st = json.load(open(os.path.join(out, "stats.json")))["streams"]
                    for k, v in (("gaps", 1), ("gap_bytes", HOLE), ("retransmissions", 0), ("overlaps_same_data", 0),
                                 ("overlaps_different_data", 0), ("bytes", 2500)):
                        if st[k] != v:
                            problems.append(f"streams.{k} {st[k]}, want {v}")
                name = f"ISN {isn}, batch {batch}"
                print(f"{'ok' if not problems else 'FAIL':5} {name}" + "".join(f"\n      {x}" for x in problems))
                failed += bool(problems)
        pcap = os.path.join(d, "forged.pcap")
        wrpcap(pcap, forged_acks())
        out = os.path.join(d, "out-forged")
        os.makedirs(out)
        p = subprocess.run([gaspp, "-r", pcap, "--backend", backend, "-q", "-l", out, "--dump-streams",
                            os.path.join(out, "streams")], capture_output=True, text=True)
        root = os.path.join(out, "streams")
        name = f"010.000.000.002.{SP:05d}-010.000.000.001.{CP:05d}"
        data = open(os.path.join(root, name), "rb").read() if p.returncode == 0 and os.path.exists(os.path.join(root, name)) else None
        gaps = [r for r in open(os.path.join(root, "index.tsv")) if "\tgap\t" in r] if data is not None else None
        ok = data == b"S" * 200 and gaps == []
        print(f"{'ok' if ok else 'FAIL':5} forged ACKs past the window do not move the other direction"
              + ("" if ok else f"\n      server stream {len(data or b'')} bytes, gaps {gaps}, rc {p.returncode} {p.stderr.strip()}"))
        failed += not ok
    print(f"{failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
