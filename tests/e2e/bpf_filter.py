#!/usr/bin/env python3
"""BPF filters on capture files against tcpdump's: `gaspp -r FILE -w OUT EXPR` (and `-f EXPR`) must
keep exactly the records `tcpdump -r FILE -w - EXPR` keeps, in order and byte for byte, and the
summary must count the rest as filtered (every record read is either processed or filtered).
Standard input (`-r -`) gives the same records. Also: a filter that does not compile is exit 1 with libpcap's reason; -f and trailing words
together are refused.

usage: bpf_filter.py GASPP DATA_DIR
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

CAPTURES = [
    "pcaps/zeek/ftp-ipv6.pcap",
    "pcaps/zeek/http-bro.org.pcap",
    "pcaps/tcpdump/802.1ad_QinQ.pcap",
    "pcaps/zeek/http-vlan-0.pcap",
    "pcaps/ndpi/dns.pcap",
    "pcaps/pcapplusplus/one_tcp_stream.pcap",
]
EXPRESSIONS = [
    "tcp",
    "udp port 53",
    "tcp port 80 and tcp[tcpflags] & tcp-syn != 0",
    "ip6",
    "vlan and tcp",
    "greater 200",
    "not ip",
    "host 192.168.1.1 or net 10.0.0.0/8",
]


def records(path):
    """(ts_sec, ts_frac, caplen, wirelen, data) of each record of a classic pcap."""
    with open(path, "rb") as f:
        b = f.read()
    magic = b[:4]
    end = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    nanos = magic in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
    out, off = [], 24
    while off + 16 <= len(b):
        s, frac, cap, wire = struct.unpack(end + "IIII", b[off:off + 16])
        data = b[off + 16:off + 16 + cap]
        out.append((s, frac // 1000 if nanos else frac, cap, wire, data))
        off += 16 + cap
    return out


def main():
    gaspp, data = sys.argv[1], sys.argv[2]
    failures, compared = [], 0
    with tempfile.TemporaryDirectory() as d:
        for cap in CAPTURES:
            path = os.path.join(data, cap)
            if not os.path.exists(path):
                failures.append(f"{cap}: missing")
                continue
            # Every record, as tcpdump rewrites it (it reads pcapng too).
            subprocess.run(["tcpdump", "-r", path, "-w", f"{d}/all.pcap"], capture_output=True, check=True)
            total = len(records(f"{d}/all.pcap"))
            for i, expr in enumerate(EXPRESSIONS):
                want_p = subprocess.run(["tcpdump", "-r", path, "-w", f"{d}/want.pcap", expr], capture_output=True, text=True)
                if want_p.returncode != 0:
                    failures.append(f"{cap} '{expr}': tcpdump failed: {want_p.stderr.strip()}")
                    continue
                # Trailing words for even rows, -f for odd ones.
                how = expr.split() if i % 2 == 0 else ["-f", expr]
                got_p = subprocess.run([gaspp, "-r", path, "--backend", "cpu", "-w", f"{d}/got.pcap", "--stats-json",
                                        f"{d}/s.json", "-q"] + how, capture_output=True, text=True)
                if got_p.returncode != 0:
                    failures.append(f"{cap} '{expr}': gaspp exit {got_p.returncode}: {got_p.stderr.strip()[-300:]}")
                    continue
                want, got = records(f"{d}/want.pcap"), records(f"{d}/got.pcap")
                if [w[2:] for w in want] != [g[2:] for g in got] or [w[:2] for w in want] != [g[:2] for g in got]:
                    failures.append(f"{cap} '{expr}': gaspp kept {len(got)} records, tcpdump {len(want)} (or they differ)")
                    continue
                s = json.load(open(f"{d}/s.json"))
                c = s["capture"]
                if c.get("filter") != expr or c.get("filtered") != total - len(want) or s.get("packets") != len(want):
                    failures.append(f"{cap} '{expr}': summary filter={c.get('filter')!r} filtered={c.get('filtered')} "
                                    f"packets={s.get('packets')}, want {total - len(want)} filtered of {total}")
                    continue
                compared += 1
        # Standard input (-r -), read through libpcap, with a filter: the same records.
        path = os.path.join(data, CAPTURES[1])
        subprocess.run(["tcpdump", "-r", path, "-w", f"{d}/want.pcap", "tcp port 80"], capture_output=True, check=True)
        with open(path, "rb") as stdin:
            got_p = subprocess.run([gaspp, "-r", "-", "--backend", "cpu", "-q", "-w", f"{d}/got.pcap", "tcp", "port", "80"],
                                   stdin=stdin, capture_output=True, text=True)
        if got_p.returncode != 0 or [w[2:] for w in records(f"{d}/want.pcap")] != [g[2:] for g in records(f"{d}/got.pcap")]:
            failures.append(f"-r - (standard input): exit {got_p.returncode}, records differ from tcpdump's")
        else:
            compared += 1
        # Errors: an expression libpcap refuses, and a filter given twice.
        path = os.path.join(data, CAPTURES[0])
        bad = subprocess.run([gaspp, "-r", path, "--backend", "cpu", "-q", "tcp", "port", "eighty"], capture_output=True, text=True)
        if bad.returncode != 1 or "filter 'tcp port eighty'" not in bad.stderr:
            failures.append(f"a bad filter: exit {bad.returncode}, stderr {bad.stderr.strip()[-200:]!r}")
        both = subprocess.run([gaspp, "-r", path, "--backend", "cpu", "-q", "-f", "tcp", "udp"], capture_output=True, text=True)
        if both.returncode != 1:
            failures.append(f"-f and trailing words: exit {both.returncode}")
    for f in failures:
        print("FAIL", f)
    print(f"{compared} capture x filter pairs equal to tcpdump's, {len(failures)} failures")
    return 1 if failures or compared == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
