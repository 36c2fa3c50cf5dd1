#!/usr/bin/env python3
"""base64_decode and base64_data on HTTP buffers, on a capture built here (scapy), each rule's
alert count checked against an oracle:

  * suricata-verify's `base64` test, rebuilt: a GET of /?arg=dGhpc2lzYXRlc3QK ("thisisatest\\n")
    with that test's four rules and its expected counts (sids 1 and 2 alert once, 3 and 4 never);
  * random payloads encoded by Python's base64 module and posted as SAMLResponse=...: a rule
    whose base64_data content is a random piece of the payload alerts once; one whose piece lies
    beyond what `bytes` lets it decode, or that is not in the payload, never;
  * the decoder's corner cases, counts written out by hand from Suricata's RFC 4648 decoder
    (rust/src/utils/base64.rs): decoding stops at the first byte outside the alphabet and '='
    (the group in progress padded); '=' in a group's third or fourth place ends that group only;
    a group with '=' in its first or second place (or one character left over) fails the whole
    decode, the groups before it included;
  * the decode ends its buffer's list: a content after the base64_decode in the same buffer does
    not count, and without base64_data nothing matches; the content before a relative decode is
    not tried again at a later occurrence when the decoded data does not match.
The same runs on the device's path (detect:prefilter=device on the CPU) and, with `cuda`, on the
CUDA backend.

usage: detect_base64.py GASPP [cpu|cpu-device|cuda ...]
"""
import base64
import json
import os
import random
import re
import subprocess
import sys
import tempfile

try:
    from scapy.all import IP, TCP, Ether, Raw
except ImportError:
    print("FAIL: scapy is not installed (scripts/setup.sh installs it)")
    sys.exit(1)

C, S = "10.0.0.1", "10.0.0.2"


def session(cport, request, response=b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", cut=None):
    """One TCP connection: handshake, the request (in two segments when cut, a place in it, is
    given), the response, FIN both ways."""
    c, s = 1000, 5000
    pk = []

    def seg(frm, flags, seq, ack, data=b""):
        src, dst, sp, dp = (C, S, cport, 80) if frm == "c" else (S, C, 80, cport)
        p = Ether() / IP(src=src, dst=dst) / TCP(sport=sp, dport=dp, flags=flags, seq=seq, ack=ack, window=65535)
        pk.append(p / Raw(data) if data else p)

    seg("c", "S", c, 0)
    seg("s", "SA", s, c + 1)
    seg("c", "A", c + 1, s + 1)
    if cut:
        seg("c", "PA", c + 1, s + 1, request[:cut])
        seg("c", "PA", c + 1 + cut, s + 1, request[cut:])
    else:
        seg("c", "PA", c + 1, s + 1, request)
    seg("s", "PA", s + 1, c + 1 + len(request), response)
    seg("c", "FA", c + 1 + len(request), s + 1 + len(response))
    seg("s", "FA", s + 1 + len(response), c + 2 + len(request))
    seg("c", "A", c + 2 + len(request), s + 2 + len(response))
    return pk


def post(path, body):
    return (f"POST {path} HTTP/1.1\r\nHost: test\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body


def hexs(b):
    return "|" + " ".join(f"{x:02x}" for x in b) + "|"


def build(rng):
    """(packets, rules text, {sid: expected alerts})."""
    pk, rules, want = [], [], {}
    port = 40000

    def add(sid, text, n):
        rules.append(text.replace("SID", f"sid:{sid}; rev:1;"))
        want[sid] = n

    # suricata-verify tests/base64: its rules and counts.
    pk += session(port, b"GET /?arg=dGhpc2lzYXRlc3QK HTTP/1.1\r\nHost: home.regit.org\r\n\r\n")
    port += 1
    sv = 'alert http any any -> any any (msg:"Example"; content:"arg"; http_uri; base64_decode:bytes {b}, offset 1, relative; base64_data; content:"{c}"; SID)'
    add(1, sv.format(b=17, c="thisisatest"), 1)
    add(2, sv.format(b=17, c="thisisatest"), 1)
    add(3, sv.format(b=10, c="test"), 0)
    add(4, sv.format(b=17, c="toast"), 0)

    # Random payloads (Python's encoder), one request each; a marker names the request.
    sid = 100
    for k in range(40):
        raw = bytes(rng.randrange(256) for _ in range(rng.randrange(20, 400)))
        enc = base64.b64encode(raw)
        marker = f"case{k:03d}".encode()
        body = b"id=" + marker + b"&SAMLResponse=" + enc + rng.choice([b"", b"&next=1", b"\r\n", b" tail"])
        pk += session(port, post("/saml", body))
        port += 1
        head = f'alert http any any -> any any (msg:"b64 {k}"; flow:to_server,established; http.request_body; content:"{marker.decode()}"; content:"SAMLResponse="; distance:0; '
        # A piece of the payload: found.
        a = rng.randrange(0, len(raw) - 4)
        piece = raw[a:a + rng.randrange(4, min(12, len(raw) - a) + 1)]
        add(sid, head + f"base64_decode:offset 0,relative; base64_data; content:\"{hexs(piece)}\"; SID)", 1)
        # Limited to `bytes` characters: a piece that ends within what they decode is found, one
        # that ends past it is not.
        nbytes = rng.randrange(8, len(enc))
        decodable = len(raw[: (nbytes // 4) * 3]) + {0: 0, 1: 0, 2: 1, 3: 2}[nbytes % 4]
        end = rng.randrange(4, len(raw) + 1)
        piece2 = raw[end - 4:end]
        # A single leftover character fails the whole decode (nbytes % 4 == 1).
        found = nbytes % 4 != 1 and piece2 in raw[:min(decodable, len(raw))]
        add(sid + 1, head + f"base64_decode:bytes {nbytes}, offset 0, relative; base64_data; content:\"{hexs(piece2)}\"; SID)",
            1 if found else 0)
        # Not in the payload.
        missing = b"\x00NOT-IN-PAYLOAD\x00"
        add(sid + 2, head + f"base64_decode:offset 0,relative; base64_data; content:\"{hexs(missing)}\"; SID)", 0)
        sid += 3

    # Corner cases of the decoder.
    corner = [
        (b"k1=QUJD&", b"ABC", 1),          # a whole group, stopped at '&'
        (b"k2=QQ&", b"A", 1),              # two characters: padded, one byte
        (b"k3=QUI&", b"AB", 1),            # three: two bytes
        (b"k4=Q&", b"A", 0),               # one character left over: the decode fails
        (b"k5=QUJD=QUJD&", b"ABC", 0),     # '=' opens a group: the whole decode fails
        (b"k6=QQ==QUE=&", b"AAA", 1),      # "A", then "AA": '=' ends a group, decoding goes on
        (b"k7=QUJD\r\nQUJD", b"ABCABC", 0),  # stops at the line break
        (b"k8=QUJD\r\nQUJD", b"ABC", 1),
        (b"k9=QU=D&", b"A", 1),            # '=' third: one byte, the fourth ignored
        (b"k9=QU=D&", b"A\x03", 0),
    ]
    body = b"&".join(c[0] for c in corner)
    pk += session(port, post("/corner", body))
    port += 1
    for k, (text, content, n) in enumerate(corner):
        key = text.split(b"=")[0] + b"="
        add(1000 + k, f'alert http any any -> any any (msg:"corner {k}"; http.request_body; content:"{key.decode()}"; '
                     f'base64_decode:relative; base64_data; content:"{hexs(content)}"; startswith; SID)', n)

    # The decode ends its buffer's list; without base64_data nothing matches.
    add(1100, 'alert http any any -> any any (msg:"after"; http.request_body; content:"k1="; '
             'base64_decode:relative; content:"k2="; base64_data; content:"ABC"; SID)', 1)
    # (the absent content is shorter than "k1=", so not the fast pattern the prefilter looks for)
    add(1101, 'alert http any any -> any any (msg:"after, absent"; http.request_body; content:"k1="; '
             'base64_decode:relative; content:"zq"; base64_data; content:"ABC"; SID)', 1)
    add(1102, 'alert http any any -> any any (msg:"no data list"; http.request_body; content:"k1="; '
             'base64_decode:relative; SID)', 0)
    # A relative base64_decode does not make the content before it tried again at its next
    # occurrence (Suricata's sets no RELATIVE_NEXT on it): the first "rq=" is followed by "foobar"
    # encoded, the second by "hello", which is not found.
    pk += session(port, post("/retry", b"rq=Zm9vYmFy&rq=aGVsbG8="))
    port += 1
    for k, (content, n) in enumerate([(b"foobar", 1), (b"hello", 0)]):
        add(1110 + k, f'alert http any any -> any any (msg:"no retry {k}"; http.request_body; content:"rq="; '
                      f'base64_decode:bytes 8,relative; base64_data; content:"{hexs(content)}"; SID)', n)
    add(1112, 'alert http any any -> any any (msg:"second"; http.request_body; content:"rq="; '
              'base64_decode:bytes 8,offset 15; base64_data; content:"hello"; SID)', 1)
    # Offset past the end of the buffer: nothing to decode.
    add(1103, 'alert http any any -> any any (msg:"offset"; http.request_body; content:"k1="; '
             'base64_decode:offset 100000,relative; base64_data; content:"ABC"; SID)', 0)
    return pk, "\n".join(rules) + "\n", want


def run(gaspp, path, pcap, rules, d, options="", args=()):
    """gaspp on the capture through `path` (cpu, cpu-device, cuda); ({sid: [its alert events]}, stderr).
    options: more of the detect module's, ",KEY=VALUE..."; args: more of gaspp's."""
    out = os.path.join(d, path)
    os.makedirs(out, exist_ok=True)
    backend = "cuda" if path == "cuda" else "cpu"
    mod = f"detect:rules={rules}{options}" + (",prefilter=device" if path == "cpu-device" else "")
    p = subprocess.run([gaspp, "-r", pcap, "--backend", backend, "-q", "-l", out, "--module", mod, *args],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"FAIL: gaspp ({path}) exited {p.returncode}: {p.stderr.strip()[-500:]}")
    got = {}
    for line in open(os.path.join(out, "eve.json")):
        e = json.loads(line)
        if e.get("event_type") == "alert":
            got.setdefault(e["alert"]["signature_id"], []).append(e)
    return got, p.stderr


def runs(gaspp, paths, packets, rules, name, options="", args=()):
    """Writes the capture and the rules (one a line), runs gaspp (with `args`) through each path;
    yields (path, {sid: [its alert events]}, stderr)."""
    from scapy.all import wrpcap
    with tempfile.TemporaryDirectory() as d:
        pcap = os.path.join(d, name + ".pcap")
        wrpcap(pcap, packets)
        rf = os.path.join(d, name + ".rules")
        with open(rf, "w") as f:
            f.write("\n".join(rules) + "\n")
        for path in paths:
            got, err = run(gaspp, path, pcap, rf, d, options, args)
            yield path, got, err


def bad_rules_reported(name, first_bad, n_rules):
    """An on_stderr for check_counts: the malformed rules (lines first_bad..n_rules of NAME.rules),
    and only they, are reported with their line."""
    def reported(path, err):
        lines = {int(m.group(1)) for m in re.finditer(re.escape(name) + r"\.rules:(\d+): ", err)}
        missing = [n for n in range(first_bad, n_rules + 1) if n not in lines]
        extra = sorted(n for n in lines if n < first_bad)
        if missing or extra:
            print(f"FAIL {path}: malformed rules not reported at lines {missing}; reported good lines {extra}")
        return len(missing) + len(extra)
    return reported


def check_counts(gaspp, paths, packets, rules, want, name, options="", on_stderr=None, args=()):
    """Writes the capture and the rules (one a line, sid N on line N where the test says so), runs
    gaspp (with `args`) through each path and compares the alerts of each sid with want.
    on_stderr(path, err) may return more failures. Returns the failures."""
    failed = 0
    for path, at, err in runs(gaspp, paths, packets, rules, name, options, args):
        got = {sid: len(cnts) for sid, cnts in at.items()}
        bad = [(sid, n, got.get(sid, 0)) for sid, n in sorted(want.items()) if got.get(sid, 0) != n]
        extra = sorted(set(got) - set(want))
        for sid, n, g in bad:
            print(f"FAIL {path}: sid {sid}: {g} alerts, expected {n}")
        if extra:
            print(f"FAIL {path}: alerts of unknown sids {extra}")
        failed += len(bad) + len(extra) + (on_stderr(path, err) if on_stderr else 0)
        print(f"{path}: {len(want)} rules, {sum(want.values())} alerts expected, {sum(got.values())} raised, "
              f"{len(bad)} wrong")
    return failed


def main():
    gaspp = sys.argv[1]
    paths = sys.argv[2:] or ["cpu", "cpu-device"]
    rng = random.Random(20261127)
    pk, rules_text, want = build(rng)
    return 1 if check_counts(gaspp, paths, pk, rules_text.splitlines(), want, "b64") else 0


if __name__ == "__main__":
    sys.exit(main())
