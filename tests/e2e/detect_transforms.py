#!/usr/bin/env python3
"""Buffer transforms (to_lowercase, url_decode, to_sha256, xor, pcrexform, from_base64, ...) on HTTP
buffers, on a capture built here (scapy), each rule's alert count checked against an oracle:

  * random requests (mixed case, percent escapes, whitespace runs, base64 bodies); for each rule,
    a random buffer and a chain of one to three transforms, and a piece of what the chain makes of
    one request's buffer as its content. The oracle applies the chain to every request's buffer
    with reference transforms written here (hashlib for the digests, Python's re for pcrexform,
    base64 for from_base64, and Suricata's state machines for url_decode and compress_whitespace
    as read from rust/src/detect/transforms) and counts the requests whose result holds the
    content: a rule alerts once per transaction;
  * a content that is in no request's result: never;
  * http.request_header, each header "Name: value" an instance of its own: a header's whole text
    alerts on its request only, and two contents in different headers of one request never match;
  * a content the chain's transforms reject (uppercase after to_lowercase, whitespace after
    strip_whitespace, ...): the rule is an error, reported with its file and line, and never alerts.
The same runs on the device's path (detect:prefilter=device on the CPU) and, with `cuda`, on the
CUDA backend.

usage: detect_transforms.py GASPP [cpu|cpu-device|cuda ...]
"""
import base64
import hashlib
import random
import re
import sys

from detect_base64 import check_counts, hexs, session

WS = b" \t\n\x0b\x0c\r"


def url_decode(b):
    """Suricata's url_decode (rust/src/detect/transforms/urldecode.rs)."""
    out, state, first = bytearray(), 0, 0
    hexd = b"0123456789abcdefABCDEF"
    for c in b:
        if state:
            if c in hexd and state == 1:
                state, first = 2, c
            elif c in hexd:
                out.append(int(bytes([first, c]), 16))
                state = 0
            else:
                out.append(ord("%"))
                if state == 2:
                    out.append(first)
                out.append(c)
                state = 0
        elif c == ord("%"):
            state = 1
        else:
            out.append(32 if c == ord("+") else c)
    if state:
        out.append(ord("%"))
        if state == 2:
            out.append(first)
    return bytes(out)


def compress_ws(b):
    out, space = bytearray(), False
    for c in b:
        ws = c in WS
        if not ws or not space:
            out.append(c)
        space = ws
    return bytes(out)


def header_lower(b):
    out, value = bytearray(), False
    for c in b:
        if not value:
            if c == ord(":"):
                value = True
            out.append(c + 32 if 65 <= c <= 90 else c)
        else:
            if c == ord("\n"):
                value = False
            out.append(c)
    return bytes(out)


def from_b64(b, offset):
    """from_base64: offset N, mode rfc4648 (the bodies here are whole groups, so Python's decoder
    gives what Suricata's does up to the first byte outside the alphabet)."""
    if offset >= len(b):
        return b
    s = b[offset:]
    m = re.match(rb"[A-Za-z0-9+/=]*", s).group(0)
    try:
        return base64.b64decode(m) if m else b
    except Exception:
        return b


# name -> (rule text, reference, the contents it rejects)
def transforms(_rng):
    key = b"\x5a\xc3\x01"  # one key: another key would be another buffer
    return {
        "to_lowercase": ("to_lowercase;", lambda b: b.lower(), lambda c: any(65 <= x <= 90 for x in c)),
        "to_uppercase": ("to_uppercase;", lambda b: b.upper(), lambda c: any(97 <= x <= 122 for x in c)),
        "strip_whitespace": ("strip_whitespace;", lambda b: bytes(x for x in b if x not in WS),
                             lambda c: any(x in WS for x in c)),
        "compress_whitespace": ("compress_whitespace;", compress_ws,
                                lambda c: any(c[i] in WS and c[i + 1] in WS for i in range(len(c) - 1))),
        "to_md5": ("to_md5;", lambda b: hashlib.md5(b).digest(), None),
        "to_sha1": ("to_sha1;", lambda b: hashlib.sha1(b).digest(), None),
        "to_sha256": ("to_sha256;", lambda b: hashlib.sha256(b).digest(), None),
        "url_decode": ("url_decode;", url_decode, None),
        "dotprefix": ("dotprefix;", lambda b: b"." + b, None),
        "header_lowercase": ("header_lowercase;", header_lower, None),
        "xor": (f'xor:"{key.hex()}";', lambda b, k=key: bytes(x ^ k[i % len(k)] for i, x in enumerate(b)), None),
        "pcrexform": ('pcrexform:"id=([a-z0-9%]+)";',
                      lambda b: (lambda m: m.group(1) if m else b)(re.search(rb"id=([a-z0-9%]+)", b)), None),
        "from_base64": ("from_base64: offset 2, mode rfc4648;", lambda b: from_b64(b, 2), None),
    }


def apply(chain, table, b):
    for name in chain:
        if b:  # an empty buffer stays empty
            b = table[name][1](b)
    return b


def rejects(chain, table, content):
    return any(table[n][2] and table[n][2](content) for n in chain)


def build(rng):
    """(packets, requests' buffers, rules text, {sid: expected alerts}, rejected rules)."""
    pk, reqs = [], []
    port = 41000
    alpha = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    for k in range(30):
        path = "/" + "".join(rng.choice(alpha + "%+") for _ in range(rng.randrange(4, 20)))
        path = path.replace("%", "%" + rng.choice(["41", "2F", "7e", "zz", "%", "4", "+"]))
        uri = f"{path}?id=k{k:02d}%{rng.randrange(16, 256):02X}&v={rng.randrange(10**6)}"
        ua = "".join(rng.choice(alpha + "  \t") for _ in range(rng.randrange(10, 40)))
        raw = bytes(rng.randrange(256) for _ in range(rng.randrange(6, 60)))
        body = b"d=" + base64.b64encode(raw)
        req = (f"POST {uri} HTTP/1.1\r\nHost: Example{k}.Test\r\nUser-Agent: {ua}\r\n"
               f"X-Mixed-Case: Value{k}\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body
        pk += session(port, req)
        port += 1
        reqs.append({
            "http.uri.raw": uri.encode(),
            "http.user_agent": ua.encode().strip(b" \t"),  # a header value without the spaces around it
            "http.request_body": body,
            "http.header_names": b"\r\nHost\r\nUser-Agent\r\nX-Mixed-Case\r\nContent-Length\r\n\r\n",
        })
    # Which transforms make sense on which buffer (each may also come after any other).
    fits = {
        "http.uri.raw": ["to_lowercase", "to_uppercase", "url_decode", "to_md5", "to_sha1", "to_sha256", "xor",
                         "pcrexform", "dotprefix", "strip_whitespace"],
        "http.user_agent": ["to_lowercase", "to_uppercase", "strip_whitespace", "compress_whitespace", "to_sha256",
                            "xor", "dotprefix"],
        "http.request_body": ["from_base64", "to_md5", "to_sha256", "to_lowercase", "xor"],
        "http.header_names": ["header_lowercase", "to_lowercase", "to_uppercase", "to_sha1"],
    }
    # Seven chains a buffer: each (buffer, chain) pair is a buffer of its own in the engine, which
    # holds 64 of them (transform.hpp).
    pool = [(buf, [rng.choice(fits[buf]) for _ in range(rng.randrange(1, 4))]) for buf in sorted(fits) for _ in range(7)]
    rules, want, rejected = [], {}, set()
    sid = 1
    for _ in range(220):
        table = transforms(rng)
        buf, chain = rng.choice(pool)
        src = rng.choice(reqs)
        out = apply(chain, table, src[buf])
        if not out:
            continue
        if rng.random() < 0.15:
            content = b"\x00\xffnot-there\x01"
        else:
            a = rng.randrange(len(out))
            content = out[a:a + rng.randrange(1, 12)]
        n = sum(1 for r in reqs if content in apply(chain, table, r[buf]))
        text = " ".join(table[c][0] for c in chain)
        rules.append(f'alert http any any -> any any (msg:"t{sid}"; flow:to_server; {buf}; {text} '
                     f'content:"{hexs(content)}"; sid:{sid}; rev:1;)')
        if rejects(chain, table, content):
            rejected.add(sid)
            n = 0
        want[sid] = n
        sid += 1
    # http.request_header: each header "Name: value" an instance of its own (the two contents of
    # sid+3 are in different headers of every request: never in one instance).
    for k in rng.sample(range(len(reqs)), 5):
        v = f"X-Mixed-Case: Value{k}".encode()
        rules.append(f'alert http any any -> any any (msg:"hdr"; http.request_header; content:"{hexs(v)}"; bsize:{len(v)}; '
                     f'sid:{sid}; rev:1;)')
        want[sid] = 1
        sid += 1
    for text, n in [('http.request_header; content:"Host|3a 20|Example"; startswith;', len(reqs)),
                    ('http.request_header; to_lowercase; content:"user-agent|3a 20|"; startswith;', len(reqs)),
                    ('http.request_header; content:"Content-Length|3a 20|"; content:"X-Mixed";', 0),
                    ('http.request_header; bsize:>200;', 0)]:
        rules.append(f'alert http any any -> any any (msg:"hdr"; {text} sid:{sid}; rev:1;)')
        want[sid] = n
        sid += 1
    # A content that one transform of the chain rejects, by hand.
    for text, content in [("to_lowercase;", b"ABC"), ("strip_whitespace;", b"a b"),
                          ("compress_whitespace;", b"a  b"), ("to_uppercase; to_sha256;", b"abc")]:
        rules.append(f'alert http any any -> any any (msg:"bad"; http.uri.raw; {text} content:"{hexs(content)}"; '
                     f'sid:{sid}; rev:1;)')
        rejected.add(sid)
        want[sid] = 0
        sid += 1
    return pk, "\n".join(rules) + "\n", want, rejected


def main():
    gaspp = sys.argv[1]
    paths = sys.argv[2:] or ["cpu", "cpu-device"]
    rng = random.Random(20261127)
    pk, rules_text, want, rejected = build(rng)

    def reported(path, err):
        # Each rejected rule is reported with the file, its line and the transform.
        lines = {int(m.group(1)) for m in re.finditer(r"t\.rules:(\d+): .*incompatible with the \w+ transform", err)}
        wrong = sorted(lines ^ rejected)
        if wrong:
            print(f"FAIL {path}: rules reported incompatible vs expected differ at lines {wrong}")
        print(f"{path}: {len(rejected)} rules rejected as expected" if not wrong else "")
        return len(wrong)

    # Many rules match each request: all their alerts are kept (Suricata keeps 15 a packet).
    return 1 if check_counts(gaspp, paths, pk, rules_text.splitlines(), want, "t", ",packet-alert-max=1000",
                             reported) else 0


if __name__ == "__main__":
    sys.exit(main())
