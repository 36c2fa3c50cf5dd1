#!/usr/bin/env python3
"""Suricata 8's `absent` on HTTP buffers, on a capture built here (scapy): GET and POST requests
with and without a body, a User-Agent and a Cookie, answered with and without a body. Each rule's
alert count comes from a reference evaluated here over the transactions as built, with Suricata's
semantics (detect-isdataat.c, DetectAbsentValidateContentCallback and the content inspection's
DETECT_ABSENT): a buffer's list with `absent` holds when the transaction has no such buffer (no
header; a body without bytes) once that side of the transaction is done; plain `absent` fails on a
buffer that exists; `absent: or_else` goes on to the list's other options when it exists. Rules
Suricata refuses (absent beside other options without or_else, or_else alone, absent after a
content, absent with fast_pattern) must be reported, not loaded.

usage: detect_absent.py GASPP [cpu|cpu-device|cuda ...]
"""
import sys

from detect_base64 import bad_rules_reported, check_counts, session

# (request line and headers without the final CRLF, request body, response body)
TXS = [
    ("GET /a HTTP/1.1\r\nHost: test\r\nUser-Agent: curl", b"", b"hello"),
    ("GET /b HTTP/1.1\r\nHost: test", b"", b""),
    ("POST /c HTTP/1.1\r\nHost: test\r\nCookie: k=v", b"abc", b"ok"),
    ("POST /d HTTP/1.1\r\nHost: test\r\nUser-Agent: xyz", b"", b"ok"),
    ("POST /e HTTP/1.1\r\nHost: test", b"login=abcdef", b""),
]

# (rule options, reference over (method, headers dict, request body, response body)); None: refused
RULES = [
    ("http.request_body; absent;", lambda m, h, q, r: not q),
    ("http.request_body; absent; http.method; content:\"POST\";", lambda m, h, q, r: not q and m == "POST"),
    ("http.request_body; absent: or_else; content:!\"abc\";", lambda m, h, q, r: not q or b"abc" not in q),
    ("http.request_body; content:!\"abc\";", lambda m, h, q, r: bool(q) and b"abc" not in q),
    ("http.user_agent; absent;", lambda m, h, q, r: "user-agent" not in h),
    ("http.user_agent; absent: or_else; content:\"curl\";", lambda m, h, q, r: "user-agent" not in h or "curl" in h["user-agent"]),
    ("http.cookie; absent; http.user_agent; absent;", lambda m, h, q, r: "cookie" not in h and "user-agent" not in h),
    ("http.response_body; absent; flow:to_client;", lambda m, h, q, r: not r),
    ("http.user_agent; absent; content:\"x\";", None),
    ("http.user_agent; absent: or_else;", None),
    ("http.user_agent; content:\"x\"; absent;", None),
    ("http.user_agent; absent: or_else; content:\"x\"; fast_pattern;", None),
]


def main():
    gaspp = sys.argv[1]
    paths = sys.argv[2:] or ["cpu", "cpu-device"]
    pk = []
    parsed = []
    for k, (head, body, resp_body) in enumerate(TXS):
        req = (head + (f"\r\nContent-Length: {len(body)}" if head.startswith("POST") else "") + "\r\n\r\n").encode() + body
        resp = f"HTTP/1.1 200 OK\r\nContent-Length: {len(resp_body)}\r\n\r\n".encode() + resp_body
        pk += session(40000 + k, req, resp)
        lines = head.split("\r\n")
        hdrs = {l.split(":", 1)[0].lower(): l.split(":", 1)[1].strip() for l in lines[1:]}
        parsed.append((lines[0].split(" ")[0], hdrs, body, resp_body))
    rules, want = [], {}
    for sid, (opts, ref) in enumerate(RULES, 1):
        rules.append(f'alert http any any -> any any (msg:"absent {sid}"; {opts} sid:{sid};)')
        if ref:
            want[sid] = sum(1 for t in parsed if ref(*t))
    n_refused = sum(1 for _, ref in RULES if ref is None)
    first_bad = len(RULES) - n_refused + 1
    failed = check_counts(gaspp, paths, pk, rules, want, "absent", on_stderr=bad_rules_reported("absent", first_bad, len(RULES)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
