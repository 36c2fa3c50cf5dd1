#!/usr/bin/env python3
"""Stream signatures find patterns that cross segments and batches, once each, against a
brute-force reference.

A capture of FLOWS TCP connections (handshake, then client data in segments of random sizes, from
1 byte up, then FIN) is written with scapy; each connection's stream carries a few of PATTERNS
random patterns planted at random offsets, so they fall inside segments, across two, or across
many one-byte segments. One `only_stream` rule per pattern (content alone, with nocase for some,
planted in a random case). The reference: a pattern planted in a connection's stream gives one alert
for that connection, an unplanted one none (background bytes come from an alphabet the patterns
do not use). gaspp runs with batches of 1, 7 and 65536 packets (a pattern then also crosses batch
boundaries) on each path given (cpu: Hyperscan; cpu-device: the device's whole path on the CPU;
cuda), and every (connection, sid) alert count must equal the reference's.

The same again with HTTP: each connection is one POST whose body is the stream (the patterns
planted in the body, cut into the same random segments), and one `http.request_body` rule per
pattern: the body grows over many updates, so a pattern also crosses the point where the
application layer's prefilter resumes its scan of a grown body.

usage: detect_stream_split.py GASPP [PATH ...]   (default paths: cpu cpu-device)
"""
import json
import os
import random
import subprocess
import sys
import tempfile

try:
    from scapy.all import IP, TCP, Ether, wrpcap
except ImportError:
    print("scapy is missing", file=sys.stderr)
    sys.exit(1)

FLOWS = 24
PATTERNS = 40


def build(d, rng, http=False):
    pats = []
    for k in range(PATTERNS):
        n = rng.randint(4, 60)
        pats.append(("".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") for _ in range(n)), rng.random() < 0.3))
    rules = os.path.join(d, "split-http.rules" if http else "split.rules")
    with open(rules, "w") as f:
        for k, (p, nocase) in enumerate(pats):
            if http:
                f.write('alert http any any -> any any (msg:"body %d"; flow:to_server; http.request_body; '
                        'content:"%s";%s sid:%d; rev:1;)\n' % (k, p, " nocase;" if nocase else "", 100 + k))
            else:
                f.write('alert tcp any any -> any any (msg:"split %d"; flow:to_server,established,only_stream; '
                        'content:"%s";%s sid:%d; rev:1;)\n' % (k, p, " nocase;" if nocase else "", 100 + k))
    pkts, expect = [], {}
    t = 1700000000.0
    for fl in range(FLOWS):
        cli, srv, sport = "10.1.%d.%d" % (fl // 200, fl % 200 + 1), "10.2.0.1", 20000 + fl
        stream = bytearray(rng.choice(b"abcdefghijklmnopqrstuvwxyz ") for _ in range(rng.randint(600, 4000)))
        chosen = rng.sample(range(PATTERNS), rng.randint(1, 4))
        at = sorted(rng.sample(range(0, len(stream) - 70, 1), len(chosen)))
        # Plant without overlaps: each pattern after the previous one ends.
        pos = 0
        for k, a in zip(chosen, at):
            p, nocase = pats[k]
            a = max(a, pos)
            if a + len(p) > len(stream):
                continue
            b = "".join(c.lower() if nocase and rng.random() < 0.5 else c for c in p).encode()
            stream[a:a + len(p)] = b
            pos = a + len(p)
            expect[(fl, 100 + k)] = 1
        if http:
            stream = (b"POST /upload HTTP/1.1\r\nHost: example\r\nContent-Length: %d\r\n\r\n" % len(stream)) + stream
        c, s = Ether() / IP(src=cli, dst=srv), Ether() / IP(src=srv, dst=cli)
        isn, rsn = 1000 + fl * 7, 50000 + fl * 11

        def add(p):
            nonlocal t
            t += 0.0001
            p.time = t
            pkts.append(p)
        add(c / TCP(sport=sport, dport=80, flags="S", seq=isn))
        add(s / TCP(sport=80, dport=sport, flags="SA", seq=rsn, ack=isn + 1))
        add(c / TCP(sport=sport, dport=80, flags="A", seq=isn + 1, ack=rsn + 1))
        off = 0
        while off < len(stream):
            n = rng.choice([1, 1, 2, 3, 7, 16, 40, 100, 300, 1000])
            seg = bytes(stream[off:off + n])
            add(c / TCP(sport=sport, dport=80, flags="PA", seq=isn + 1 + off, ack=rsn + 1) / seg)
            off += len(seg)
            add(s / TCP(sport=80, dport=sport, flags="A", seq=rsn + 1, ack=isn + 1 + off))
        add(c / TCP(sport=sport, dport=80, flags="FA", seq=isn + 1 + off, ack=rsn + 1))
        add(s / TCP(sport=80, dport=sport, flags="FA", seq=rsn + 1, ack=isn + 2 + off))
        add(c / TCP(sport=sport, dport=80, flags="A", seq=isn + 2 + off, ack=rsn + 2))
    pcap = os.path.join(d, "split-http.pcap" if http else "split.pcap")
    wrpcap(pcap, pkts)
    return pcap, rules, expect


def run(gaspp, pcap, rules, path, batch, d):
    backend = "cuda" if path == "cuda" else "cpu"
    pf = "device" if path == "cpu-device" else "hyperscan"
    out = os.path.join(d, "%s-%d-%s" % (path, batch, os.path.basename(rules)))
    os.makedirs(out, exist_ok=True)
    cmd = [gaspp, "-r", pcap, "--backend", backend, "-l", out, "--flow-capacity", "4096", "--batch", str(batch),
           "--detect-prefilter", pf, "-s", rules]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return None, p.stderr.strip()[-400:]
    flows, got = {}, {}
    with open(os.path.join(out, "eve.json")) as f:
        for line in f:
            e = json.loads(line)
            if e.get("event_type") != "alert":
                continue
            port = e["src_port"] if e["dest_port"] == 80 else e["dest_port"]
            key = (port - 20000, e["alert"]["signature_id"])
            got[key] = got.get(key, 0) + 1
    return got, ""


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    gaspp, paths = sys.argv[1], sys.argv[2:] or ["cpu", "cpu-device"]
    rng = random.Random(23)
    failed = 0
    with tempfile.TemporaryDirectory() as d:
      for http in (False, True):
        pcap, rules, expect = build(d, rng, http)
        for path in paths:
            for batch in (1, 7, 65536):
                got, err = run(gaspp, pcap, rules, path, batch, d)
                if got is None:
                    print("FAIL %s batch %d: gaspp failed: %s" % (path, batch, err))
                    failed += 1
                    continue
                wrong = sorted(k for k in set(got) | set(expect) if got.get(k, 0) != expect.get(k, 0))
                for k in wrong[:10]:
                    print("FAIL %s batch %d: connection %d sid %d: %d alerts, the reference %d" %
                          (path, batch, k[0], k[1], got.get(k, 0), expect.get(k, 0)))
                failed += bool(wrong)
                print("%s%s batch %d: %d planted, %d alerts, %d wrong" % (path, " http" if http else "", batch,
                                                                            len(expect), sum(got.values()), len(wrong)))
    print("%d failed" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
