#!/usr/bin/env python3
"""The command line on damaged captures: the message names the file, record and byte offset; the
packets before the damage are processed and counted; the exit status is as documented
(0 read to the end, 1 unreadable, 2 damaged: processed up to the damage).

usage: cli_bad_captures.py GASPP [--backend B]
"""
import json
import os
import struct
import subprocess
import sys
import tempfile


def frame(seq, payload=0):
    ip_len = 40 + payload
    eth = b"\x02\x00\x00\x00\x00\x01\x02\x00\x00\x00\x00\x02\x08\x00"
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, ip_len, 0, 0, 64, 6, 0, bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
    tcp = struct.pack("!HHIIBBHHH", 1234, 80, seq, 0, 0x50, 0x18, 65535, 0, 0)
    return eth + ip + tcp + bytes((65 + i % 26) for i in range(payload))


def pcap(frames, snaplen=65535, caplens=None):
    out = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, snaplen, 1)
    for i, f in enumerate(frames):
        cl = caplens[i] if caplens and caplens[i] is not None else len(f)
        out += struct.pack("<IIII", 1000 + i, 0, cl, len(f)) + f
    return out


def pcapng(frames):
    """Section header, one Ethernet interface, an enhanced packet block per frame."""
    out = struct.pack("<IIIHHqI", 0x0A0D0D0A, 28, 0x1A2B3C4D, 1, 0, -1, 28)
    out += struct.pack("<IIHHII", 1, 20, 1, 0, 65535, 20)
    for i, f in enumerate(frames):
        pad = (-len(f)) % 4
        n = 32 + len(f) + pad
        out += struct.pack("<IIIIIII", 6, n, 0, 0, 1000000 + i, len(f), len(f)) + f + bytes(pad) + struct.pack("<I", n)
    return out


def run(gaspp, backend, data):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "in.pcap")
        with open(path, "wb") as f:
            f.write(data)
        js = os.path.join(d, "stats.json")
        p = subprocess.run([gaspp, "-r", path, "--backend", backend, "--stats-json", js, "-q"],
                           capture_output=True, text=True)
        stats = json.load(open(js)) if os.path.exists(js) else None
        return p.returncode, p.stderr.replace(path, "IN"), stats


def main():
    gaspp = sys.argv[1]
    backend = sys.argv[sys.argv.index("--backend") + 1] if "--backend" in sys.argv else "cpu"
    good = pcap([frame(1, 10), frame(2, 20), frame(3, 0)])
    third = 24 + (16 + 64) + (16 + 74)
    cases = [
        # name, bytes, exit, packets (None: no stats), text the message must hold
        ("intact", good, 0, 3, ""),
        ("empty file", b"", 1, None, "IN: empty file (0 bytes)"),
        ("bad magic", b"GIF89a" + good[6:], 1, None, "not a pcap or pcapng file (first word 0x38464947)"),
        ("truncated global header", good[:13], 1, None, "global header cut short: 13 of 24 bytes"),
        ("record cut short", good[:-5], 2, 2, f"record 3 at byte offset {third}: packet data cut short"),
        ("record header cut short", good[:third + 7], 2, 2, f"record 3 at byte offset {third}: record header cut short"),
        ("caplen over snaplen", pcap([frame(1, 10), frame(2)], snaplen=60), 0, 2, "record 1 at byte offset 24: captured length 64 exceeds the snap length 60"),
        ("caplen over 256 KiB", pcap([frame(1)]) + struct.pack("<IIII", 5, 0, 300000, 300000) + frame(2), 2, 1,
         "record 2 at byte offset 94: captured length 300000 exceeds the 262144-byte limit"),
        ("zero-length records", pcap([b"", frame(1), b""]), 0, 3, ""),
        ("pcapng intact", pcapng([frame(1, 10), frame(2, 20), frame(3, 0)]), 0, 3, ""),
        ("pcapng block cut short", pcapng([frame(1, 10), frame(2, 20), frame(3, 0)])[:-6], 2, 2,
         "IN: record 3: libpcap stopped reading"),
    ]
    failed = 0
    for name, data, want_rc, want_packets, want_text in cases:
        rc, err, stats = run(gaspp, backend, data)
        problems = []
        if rc != want_rc:
            problems.append(f"exit {rc}, want {want_rc}")
        if want_text and want_text not in err:
            problems.append(f"stderr lacks {want_text!r}: {err.strip()!r}")
        if want_packets is None:
            if stats is not None:
                problems.append("stats written for an unreadable file")
        else:
            if stats is None:
                problems.append("no stats")
            else:
                if stats["packets"] != want_packets:
                    problems.append(f"packets {stats['packets']}, want {want_packets}")
                if stats["outcome"]["passed"] + stats["outcome"]["dropped"] != stats["packets"]:
                    problems.append("outcomes do not add up to packets")
                if stats["capture"]["damaged"] != (want_rc == 2):
                    problems.append("damaged flag wrong")
        if name == "zero-length records" and stats and stats["malformed"]["empty_record"] != 2:
            problems.append(f"empty records counted {stats['malformed']['empty_record']}, want 2")
        print(f"{'ok' if not problems else 'FAIL':5} {name}" + "".join(f"\n      {p}" for p in problems))
        failed += bool(problems)
    print(f"{len(cases)} cases, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
