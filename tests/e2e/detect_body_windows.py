#!/usr/bin/env python3
"""HTTP bodies inspected in Suricata's windows, on a capture built here (scapy): a 100,000-byte
response and a 50,000-byte request body sent in 1,400-byte segments, and a 5,000-byte response in
four, with marker strings placed in them. Which packet each file_data / http.request_body rule
alerts at (pcap_cnt) comes from a reference written here from Suricata 8's code: the response
body's FiledataGetDataCallback (detect-file-data.c) and the request body's
HttpRequestBodyGetDataCallback (detect-http-client-body.c) choose what each packet inspects (wait
for the minimal inspect size, the body's end or its limit; then the new bytes with at least the
inspect window, or a quarter window of old bytes before more than a window of new), and the
content inspection's stream_start_offset counts a content's depth from the body's start
(detect-engine-content-inspection.c). The sizes are suricata.yaml's defaults (request 32 KiB and 4
KiB, response 40 KiB and 16 KiB), which gaspp takes.

The cases are chosen where that differs from inspecting each body whole at every packet, and the
test checks that they do: a marker near the start alerts only once the body reached its minimal
size; a marker with `depth` placed just after a later window's start does not alert; two contents
60 KB apart are never in one window; a small body is inspected at its last packet; a marker split
across two segments alerts at the second.

usage: detect_body_windows.py GASPP [cpu|cpu-device|cuda ...]
"""
import sys

from detect_base64 import C, S, runs

SEG = 1400
RESP_MIN, RESP_WIN = 40 * 1024, 16 * 1024
REQ_MIN, REQ_WIN = 32 * 1024, 4 * 1024
LIMIT = 100 * 1024


def response_window(size, done, inspected, min_size=RESP_MIN, win=RESP_WIN):
    """Suricata's FiledataGetDataCallback for an HTTP body (IDS): (inspect, offset, inspected)."""
    if inspected == size or size == 0:
        return False, 0, inspected
    if size < LIMIT and size < min_size and not done:
        return False, 0, inspected
    offset = 0
    if inspected != 0:
        new_data = size - inspected
        if new_data < win:
            inspect_short = win - new_data
            offset = 0 if inspected < inspect_short else inspected - inspect_short
        else:
            margin = win // 4
            offset = inspected - margin if margin <= inspected else 0
    return True, offset, max(inspected, size)


def request_window(size, done, inspected):
    """Suricata's HttpRequestBodyGetDataCallback (IDS): (inspect, offset, inspected)."""
    if inspected == size:
        return False, 0, inspected
    if size < LIMIT and size < REQ_MIN and not done:
        return False, 0, inspected
    offset = 0
    if inspected > REQ_MIN:
        inspect_win = size - inspected
        if inspect_win < REQ_WIN:
            inspect_short = REQ_WIN - inspect_win
            offset = 0 if inspected < inspect_short else inspected - inspect_short
        else:
            offset = inspected - REQ_WIN // 4
    return True, offset, size


def matches(body, base, size, rule):
    """A rule's contents on body[base:size] with Suricata's depth (counted from the body's start)."""
    window = body[base:size]
    first = rule["contents"][0]
    pos = window.find(first)
    while pos >= 0:
        ok = "depth" not in rule or base + pos + len(first) <= rule["depth"]
        if ok and len(rule["contents"]) == 1:
            return True
        end = pos + len(first) + rule["within"] if "within" in rule else len(window)
        if ok and window.find(rule["contents"][1], pos + len(first), end) >= 0:
            return True
        pos = window.find(first, pos + 1)
    return False


def first_alert(body, ends, window_fn, rule, whole=False):
    """The index into ends (a packet's body size after it) of the first packet the rule matches at;
    None when none. whole: every packet inspects the whole body (what the windows replace)."""
    inspected = 0
    for i, size in enumerate(ends):
        if whole:
            ok, base = True, 0
        else:
            ok, base, inspected = window_fn(size, i == len(ends) - 1, inspected)
        if ok and matches(body, base, size, rule):
            return i
    return None


def tcp_session(cport, request_head, request_body, response_head, response_body, pk):
    """Handshake, the request (head, then its body in SEG pieces, each acknowledged), the response
    likewise, FINs.
    Returns the pcap_cnt (1-based) of each request and response body segment."""
    from scapy.all import IP, TCP, Ether, Raw
    seq = {"c": 1000, "s": 5000}  # the next sequence number each side sends

    def seg(frm, flags, data=b""):
        src, dst, sp, dp = (C, S, cport, 80) if frm == "c" else (S, C, 80, cport)
        ack = 0 if flags == "S" else seq["s" if frm == "c" else "c"]
        p = Ether() / IP(src=src, dst=dst) / TCP(sport=sp, dport=dp, flags=flags, seq=seq[frm], ack=ack, window=65535)
        pk.append(p / Raw(data) if data else p)
        seq[frm] += len(data) + (1 if "S" in flags or "F" in flags else 0)
        return len(pk)

    seg("c", "S")
    seg("s", "SA")
    seg("c", "A")
    seg("c", "PA", request_head)
    req_cnt, resp_cnt = [], []
    for k in range(0, len(request_body), SEG):  # each acknowledged: the sender stays in the window
        req_cnt.append(seg("c", "PA", request_body[k:k + SEG]))
        seg("s", "A")
    seg("s", "PA", response_head)
    for k in range(0, len(response_body), SEG):
        resp_cnt.append(seg("s", "PA", response_body[k:k + SEG]))
        seg("c", "A")
    seg("c", "FA")
    seg("s", "FA")
    seg("c", "A")
    return req_cnt, resp_cnt


def filler(n, seed):
    import random
    rng = random.Random(seed)
    return bytearray(rng.choice(b"abcdefghijklmnopqrstuvwxyz ") for _ in range(n))


def put(body, at, text):
    body[at:at + len(text)] = text


def check_alerts_at(gaspp, paths, packets, rules, want, name, args=()):
    """Each sid's alerts' pcap_cnt against want, through each path (cpu, cpu-device: the device's
    prefilter on the CPU, cuda). Returns the failures."""
    failed = 0
    for path, alerts, _ in runs(gaspp, paths, packets, rules, name, args=args):
        got = {sid: [e.get("pcap_cnt") for e in es] for sid, es in alerts.items()}
        bad = 0
        for sid in sorted(set(want) | set(got)):
            if sorted(got.get(sid, [])) != want.get(sid):
                print(f"FAIL {path}: sid {sid}: alerts at packets {sorted(got.get(sid, []))}, expected {want.get(sid)}")
                bad += 1
        print(f"{path}: {len(want)} rules, alerts expected at {want}, {bad} wrong")
        failed += bad
    return failed


def main():
    gaspp = sys.argv[1]
    paths = sys.argv[2:] or ["cpu", "cpu-device"]
    # The big response: where its windows start decides where LATEMARK goes.
    big = filler(100000, 1)
    ends = [min(k + SEG, len(big)) for k in range(0, len(big), SEG)]
    inspected, starts = 0, []
    for i, size in enumerate(ends):
        ok, base, inspected = response_window(size, i == len(ends) - 1, inspected)
        if ok:
            starts.append(base)
    late = next(b for b in starts if b > 50000)
    put(big, 10, b"EARLYMARK")
    put(big, late + 2, b"LATEMARK")
    put(big, 1000, b"FARONE")
    put(big, 61000, b"FARTWO")
    put(big, 70000, b"NEARPAIRA")
    put(big, 70300, b"NEARPAIRB")
    put(big, 3 * SEG - 4, b"STRADDLE")  # split by the third segment's end
    small = filler(5000, 2)
    put(small, 100, b"SMALLMARK")
    post = filler(50000, 3)
    put(post, 45000, b"REQMARK")
    put(post, 20, b"REQEARLY")

    pk = []
    _, big_cnt = tcp_session(40001, b"GET /big HTTP/1.1\r\nHost: test\r\n\r\n", b"",
                             f"HTTP/1.1 200 OK\r\nContent-Length: {len(big)}\r\n\r\n".encode(), bytes(big), pk)
    _, small_cnt = tcp_session(40002, b"GET /small HTTP/1.1\r\nHost: test\r\n\r\n", b"",
                               f"HTTP/1.1 200 OK\r\nContent-Length: {len(small)}\r\n\r\n".encode(), bytes(small), pk)
    post_cnt, _ = tcp_session(40003, f"POST /up HTTP/1.1\r\nHost: test\r\nContent-Length: {len(post)}\r\n\r\n".encode(),
                              bytes(post), b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n", b"ok", pk)

    # (sid, options, rule for the reference, the body, its packets, window function)
    cases = [
        (1, 'file_data; content:"EARLYMARK"; depth:64;', {"contents": [b"EARLYMARK"], "depth": 64}, big, big_cnt, response_window),
        (2, 'file_data; content:"LATEMARK"; depth:64;', {"contents": [b"LATEMARK"], "depth": 64}, big, big_cnt, response_window),
        (3, 'file_data; content:"FARONE"; content:"FARTWO"; distance:0;', {"contents": [b"FARONE", b"FARTWO"]}, big, big_cnt,
         response_window),
        (4, 'file_data; content:"NEARPAIRA"; content:"NEARPAIRB"; distance:0;', {"contents": [b"NEARPAIRA", b"NEARPAIRB"]},
         big, big_cnt, response_window),
        (5, 'file_data; content:"STRADDLE";', {"contents": [b"STRADDLE"]}, big, big_cnt, response_window),
        (6, 'file_data; content:"SMALLMARK";', {"contents": [b"SMALLMARK"]}, small, small_cnt, response_window),
        (7, 'http.request_body; content:"REQMARK";', {"contents": [b"REQMARK"]}, post, post_cnt, request_window),
        (8, 'http.request_body; content:"REQEARLY"; depth:64;', {"contents": [b"REQEARLY"], "depth": 64}, post, post_cnt,
         request_window),
    ]
    rules, want, differ = [], {}, 0
    for sid, opts, rule, body, cnts, fn in cases:
        flow = "to_server" if fn is request_window else "to_client"
        rules.append(f'alert http any any -> any any (msg:"window {sid}"; flow:established,{flow}; {opts} sid:{sid};)')
        body_ends = [min(k + SEG, len(body)) for k in range(0, len(body), SEG)]
        i = first_alert(bytes(body), body_ends, fn, rule)
        want[sid] = [cnts[i]] if i is not None else []
        whole = first_alert(bytes(body), body_ends, fn, rule, whole=True)
        differ += whole != i
    # The cases are there to tell the windows from whole-body inspection: most must differ.
    if differ < 5:
        print(f"FAIL: only {differ} cases differ from whole-body inspection")
        return 1
    failed = check_alerts_at(gaspp, paths, pk, rules, want, "body-windows")
    return 1 if failed or small_windows(gaspp, paths) else 0


def small_windows(gaspp, paths):
    """Windows set small in suricata.yaml (minimal size 100, window 64: a quarter window of 16 old
    bytes before more than a window of new), where a fast pattern is longer than a quarter window:
    the body's scan for patterns then starts before the window. A 40-byte pattern no body has
    makes that so for the rules on file_data. sid 10's fast pattern "XY" occurs in the first
    segment, before the second packet's window, and again in the second segment: the second one is
    in the window and alerts. sid 11 reads the body upper-cased: each packet's window is the same
    size (its new segment and 16 old bytes) and holds other bytes; "markq" is in the third."""
    import os
    import tempfile
    min_size, win = 100, 64
    body = filler(5 * SEG, 4)
    put(body, SEG - 30, b"XY")        # ends 28 before the first packet's end: before the next window
    put(body, SEG + 500, b"XYW")
    put(body, 2 * SEG + 700, b"markq")
    pk = []
    _, cnt = tcp_session(40004, b"GET /w HTTP/1.1\r\nHost: test\r\n\r\n", b"",
                         f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n\r\n".encode(), bytes(body), pk)
    fn = lambda size, done, inspected: response_window(size, done, inspected, min_size, win)  # noqa: E731
    ends = [min(k + SEG, len(body)) for k in range(0, len(body), SEG)]
    cases = [
        (9, 'file_data; content:"' + "Q" * 40 + '";', {"contents": [b"Q" * 40]}, bytes(body)),
        (10, 'file_data; content:"XY"; content:"W"; distance:0; within:1;', {"contents": [b"XY", b"W"], "within": 1},
         bytes(body)),
        (11, 'file_data; to_uppercase; content:"MARKQ";', {"contents": [b"MARKQ"]}, bytes(body).upper()),
    ]
    rules, want = [], {}
    for sid, opts, rule, b in cases:
        rules.append(f'alert http any any -> any any (msg:"small window {sid}"; flow:established,to_client; {opts} sid:{sid};)')
        i = first_alert(b, ends, fn, rule)
        want[sid] = [cnt[i]] if i is not None else []
    assert want[10] == [cnt[1]] and want[11] == [cnt[2]], want
    with tempfile.TemporaryDirectory() as d:
        cfg = os.path.join(d, "suricata.yaml")
        with open(cfg, "w") as f:
            f.write("%YAML 1.1\n---\napp-layer:\n  protocols:\n    http:\n      libhtp:\n        default-config:\n"
                    f"          response-body-minimal-inspect-size: {min_size}\n"
                    f"          response-body-inspect-window: {win}\n")
        return check_alerts_at(gaspp, paths, pk, rules, want, "body-windows-small", args=("-c", cfg))


if __name__ == "__main__":
    sys.exit(main())
