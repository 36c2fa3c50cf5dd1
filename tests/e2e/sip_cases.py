#!/usr/bin/env python3
"""SIP end to end on a capture built here (scapy), and on every capture in DATA_DIR/pcaps that
carries "SIP/2.0".

The built capture: UDP on port 5060 (a REGISTER with compact header names and two Via fields, its
401 and 200, an INVITE with an SDP body, a header folded over two lines, a keep-alive of spaces,
which is no SIP), a flow picked up at its response; TCP to port 5080 (SIP is found by content on
TCP, any port): a request cut in three segments, two messages in one segment, a response whose
Content-Length body comes in its own segment; and an "OPTIONS * HTTP/1.1" request on TCP port 80,
which is HTTP, not SIP.

Checked:
- EVE sip events: for each message built, and for each frame tshark decodes as SIP (sip.Method /
  sip.r-uri / sip.Status-Code / sip.Status-Line's reason, on UDP port 5060 and TCP; tshark does not
  decode port 5080 by itself and is told to; where tshark is missing, the GPU machine, the messages
  built only), one event per message at that frame (pcap_cnt), with method, uri and version, or
  version, code and reason, src_ip and src_port the message's sender; no other sip event.
- Flow events' app_proto: sip for the SIP flows (UDP and TCP), http for the HTTP OPTIONS flow.
- Counters: sip_requests and sip_responses equal the messages built, sip_invalid the keep-alive.
- Signatures on the sip.* buffers (method, uri, request_line, stat_code, stat_msg, response_line,
  protocol, from, to, via as a multi-buffer, user_agent, content_type, content_length, with bsize
  and flow directions) and on SIP's frames (pdu, request/response line, headers and body) alert
  as a reference evaluated here over the messages built says (sid, frame) pairs, each alert with
  app_proto sip and the sip object, a frame rule's with the frame object (type, length, the
  frame's bytes, complete).

usage: sip_cases.py GASPP DATA_DIR [--backend cpu|cuda]
"""
import base64
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile

try:
    from scapy.all import IP, TCP, UDP, Ether, Raw, wrpcap
except ImportError:
    print("scapy is not installed (scripts/setup.sh installs it); skipping")
    sys.exit(77)

CLIENT, SERVER = "10.0.0.1", "10.0.0.2"

REGISTER = (b"REGISTER sip:registrar.example.com SIP/2.0\r\n"
            b"v: SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bK1\r\n"
            b"Via: SIP/2.0/UDP 192.0.2.9:5060;branch=z9hG4bK0\r\n"
            b"f: <sip:alice@example.com>;tag=111\r\n"
            b"t: <sip:alice@example.com>\r\n"
            b"i: 1@10.0.0.1\r\n"
            b"CSeq: 1 REGISTER\r\n"
            b"User-Agent: TestPhone/1.0\r\n"
            b"l: 0\r\n\r\n")
UNAUTH = (b"SIP/2.0 401 Unauthorized\r\n"
          b"Via: SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bK1\r\n"
          b"From: <sip:alice@example.com>;tag=111\r\n"
          b"To: <sip:alice@example.com>;tag=srv\r\n"
          b"Call-ID: 1@10.0.0.1\r\n"
          b"CSeq: 1 REGISTER\r\n"
          b"Content-Length: 0\r\n\r\n")
OK = (b"SIP/2.0 200 OK\r\n"
      b"Via: SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bK2\r\n"
      b"From: <sip:alice@example.com>;tag=111\r\n"
      b"To: <sip:alice@example.com>;tag=srv\r\n"
      b"Call-ID: 1@10.0.0.1\r\n"
      b"CSeq: 2 REGISTER\r\n"
      b"Server: TestRegistrar\r\n"
      b"Content-Length: 0\r\n\r\n")
SDP = (b"v=0\r\no=alice 1 1 IN IP4 10.0.0.1\r\ns=call\r\nc=IN IP4 10.0.0.1\r\nt=0 0\r\n"
       b"m=audio 4000 RTP/AVP 0\r\n")
INVITE = (b"INVITE sip:bob@example.com SIP/2.0\r\n"
          b"Via: SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bK3\r\n"
          b"From: \"Alice\" <sip:alice@example.com>;tag=112\r\n"
          b"To: <sip:bob@example.com>\r\n"
          b"Subject: a folded\r\n  subject line\r\n"
          b"Call-ID: 2@10.0.0.1\r\n"
          b"CSeq: 1 INVITE\r\n"
          b"c: application/sdp\r\n"
          b"Content-Length: " + str(len(SDP)).encode() + b"\r\n\r\n" + SDP)
TRYING = (b"SIP/2.0 100 Trying\r\n"
          b"Via: SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bK3\r\n"
          b"From: \"Alice\" <sip:alice@example.com>;tag=112\r\n"
          b"To: <sip:bob@example.com>\r\n"
          b"Call-ID: 2@10.0.0.1\r\n"
          b"CSeq: 1 INVITE\r\n"
          b"Content-Length: 0\r\n\r\n")
TCP_OPTIONS = (b"OPTIONS sip:carol@example.org SIP/2.0\r\n"
               b"Via: SIP/2.0/TCP 10.0.0.1:40100;branch=z9hG4bK7\r\n"
               b"From: <sip:alice@example.com>;tag=7\r\n"
               b"To: <sip:carol@example.org>\r\n"
               b"Call-ID: 7@10.0.0.1\r\n"
               b"CSeq: 1 OPTIONS\r\n"
               b"User-Agent: TcpPhone/2.0\r\n"
               b"Content-Length: 0\r\n\r\n")
TCP_BYE = (b"BYE sip:carol@example.org SIP/2.0\r\n"
           b"Via: SIP/2.0/TCP 10.0.0.1:40100;branch=z9hG4bK8\r\n"
           b"From: <sip:alice@example.com>;tag=7\r\n"
           b"To: <sip:carol@example.org>\r\n"
           b"Call-ID: 8@10.0.0.1\r\n"
           b"CSeq: 2 BYE\r\n"
           b"Content-Length: 0\r\n\r\n")
TCP_CANCEL = (b"CANCEL sip:carol@example.org SIP/2.0\r\n"
              b"Via: SIP/2.0/TCP 10.0.0.1:40100;branch=z9hG4bK9\r\n"
              b"From: <sip:alice@example.com>;tag=7\r\n"
              b"To: <sip:carol@example.org>\r\n"
              b"Call-ID: 9@10.0.0.1\r\n"
              b"CSeq: 3 CANCEL\r\n"
              b"Content-Length: 0\r\n\r\n")
BODY = b"plain body, not SDP"
TCP_OK = (b"SIP/2.0 200 OK\r\n"
          b"Via: SIP/2.0/TCP 10.0.0.1:40100;branch=z9hG4bK7\r\n"
          b"From: <sip:alice@example.com>;tag=7\r\n"
          b"To: <sip:carol@example.org>;tag=c\r\n"
          b"Call-ID: 7@10.0.0.1\r\n"
          b"CSeq: 1 OPTIONS\r\n"
          b"Content-Type: text/plain\r\n"
          b"Content-Length: " + str(len(BODY)).encode() + b"\r\n\r\n")
HTTP_OPTIONS = b"OPTIONS * HTTP/1.1\r\nHost: www.example.com\r\n\r\n"
HTTP_REPLY = b"HTTP/1.1 200 OK\r\nAllow: GET\r\nContent-Length: 0\r\n\r\n"


def parse(msg):
    """A message's parts as the reference reads them: start line, fields (compact names expanded)."""
    head = msg.split(b"\r\n\r\n", 1)[0].decode()
    lines = head.split("\r\n")
    fields = []
    for ln in lines[1:]:
        if ln[:1] in (" ", "\t"):
            fields[-1] = (fields[-1][0], fields[-1][1] + "\r\n" + ln)
            continue
        name, _, value = ln.partition(":")
        name = {"v": "Via", "f": "From", "t": "To", "i": "Call-ID", "l": "Content-Length",
                "c": "Content-Type", "m": "Contact", "s": "Subject", "k": "Supported", "e": "Content-Encoding"}.get(name.strip(), name.strip())
        fields.append((name, value.strip()))
    first = lines[0]
    if first.startswith("SIP/"):
        version, code, reason = first.split(" ", 2)
        return {"request": False, "version": version, "code": code, "reason": reason, "line": first, "fields": fields,
                "raw": msg}
    method, uri, version = first.split(" ")
    return {"request": True, "method": method, "uri": uri, "version": version, "line": first, "fields": fields,
            "raw": msg}


def frame_bytes(m, name):
    """Suricata's SIP frame `name` of message m (pdu, [request|response].line/headers/body), or None."""
    raw = m["raw"]
    if name == "pdu":
        return raw
    side, part = name.split(".")
    if (side == "request") != m["request"]:
        return None
    line_end = raw.index(b"\r\n") + 2
    head_end = raw.index(b"\r\n\r\n") + 2  # the fields end with their own CRLF
    if part == "line":
        return raw[:line_end]
    if part == "headers":
        return raw[line_end:head_end]
    body = raw[head_end + 2:]
    return body or None


def build(path):
    pkts, t = [], [1700000000.0]
    messages = []  # (frame, sender endpoint, parsed message)

    def add(p):
        t[0] += 0.01
        p.time = t[0]
        pkts.append(p)

    def udp(src, sport, dst, dport, data, sip=True):
        add(Ether() / IP(src=src, dst=dst) / UDP(sport=sport, dport=dport) / Raw(data))
        if sip:
            messages.append((len(pkts), (src, sport), parse(data)))

    udp(CLIENT, 5060, SERVER, 5060, REGISTER)
    udp(SERVER, 5060, CLIENT, 5060, UNAUTH)
    udp(CLIENT, 5060, SERVER, 5060, b"     ", sip=False)  # a keep-alive: no SIP
    udp(CLIENT, 5060, SERVER, 5060, INVITE)
    udp(SERVER, 5060, CLIENT, 5060, TRYING)
    # Picked up at the server's answer: the flow is turned around, the answer still a response.
    udp(SERVER, 5060, CLIENT, 40200, OK)
    udp(CLIENT, 40200, SERVER, 5060, REGISTER.replace(b"branch=z9hG4bK1", b"branch=z9hG4bK2"))

    def tcp_flow(sport, dport, client_segs, server_segs_after):
        """Handshake, the client's segments (each (bytes, message list)), then the server's."""
        seq_c, seq_s = 1000, 5000
        ip_c, ip_s = IP(src=CLIENT, dst=SERVER), IP(src=SERVER, dst=CLIENT)
        add(Ether() / ip_c / TCP(sport=sport, dport=dport, flags="S", seq=seq_c))
        add(Ether() / ip_s / TCP(sport=dport, dport=sport, flags="SA", seq=seq_s, ack=seq_c + 1))
        seq_c += 1
        seq_s += 1
        add(Ether() / ip_c / TCP(sport=sport, dport=dport, flags="A", seq=seq_c, ack=seq_s))
        for data, done in client_segs:
            add(Ether() / ip_c / TCP(sport=sport, dport=dport, flags="PA", seq=seq_c, ack=seq_s) / Raw(data))
            seq_c += len(data)
            for m in done:
                messages.append((len(pkts), (CLIENT, sport), parse(m)))
        for data, done in server_segs_after:
            add(Ether() / ip_s / TCP(sport=dport, dport=sport, flags="PA", seq=seq_s, ack=seq_c) / Raw(data))
            seq_s += len(data)
            for m in done:
                messages.append((len(pkts), (SERVER, dport), parse(m)))
        add(Ether() / ip_c / TCP(sport=sport, dport=dport, flags="FA", seq=seq_c, ack=seq_s))
        add(Ether() / ip_s / TCP(sport=dport, dport=sport, flags="FA", seq=seq_s, ack=seq_c + 1))
        add(Ether() / ip_c / TCP(sport=sport, dport=dport, flags="A", seq=seq_c + 1, ack=seq_s + 1))

    tcp_flow(40100, 5080,
             [(TCP_OPTIONS[:20], []), (TCP_OPTIONS[20:90], []), (TCP_OPTIONS[90:], [TCP_OPTIONS]),
              (TCP_BYE + TCP_CANCEL, [TCP_BYE, TCP_CANCEL])],
             [(TCP_OK, []), (BODY, [TCP_OK + BODY])])
    sip_frames = {f for f, _, _ in messages}
    http_start = len(pkts)
    tcp_flow(40101, 80, [(HTTP_OPTIONS, [])], [(HTTP_REPLY, [])])
    wrpcap(path, pkts)
    return messages, sip_frames, http_start


def tshark_sip(pcap, extra):
    """(frame, field dict) per SIP message tshark reads; tshark decodes UDP/TCP 5060 as SIP."""
    fields = ["frame.number", "ip.src", "udp.srcport", "tcp.srcport", "udp.dstport", "sip.Method", "sip.r-uri",
              "sip.Status-Code", "sip.Status-Line"]
    # Several messages in one frame (TCP): each field lists them all, joined by the aggregator.
    cmd = ["tshark", "-r", pcap] + extra + ["-Y", "sip", "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=|"]
    for f in fields:
        cmd += ["-e", f]
    out = subprocess.run(cmd, capture_output=True, text=True).stdout
    res = []
    for line in out.splitlines():
        f = line.split("\t")
        if len(f) < len(fields):
            continue
        d = dict(zip(fields, f))
        methods, uris = d["sip.Method"].split("|"), d["sip.r-uri"].split("|")
        codes, lines = d["sip.Status-Code"].split("|"), d["sip.Status-Line"].split("|")
        base = {k: d[k].split("|")[0] for k in ("frame.number", "ip.src", "udp.srcport", "tcp.srcport", "udp.dstport")}
        for i in range(max(len([m for m in methods if m]), len([c for c in codes if c]))):
            one = dict(base)
            one["sip.Method"] = methods[i] if i < len(methods) else ""
            one["sip.r-uri"] = uris[i] if one["sip.Method"] and i < len(uris) else ""
            one["sip.Status-Code"] = codes[i] if not one["sip.Method"] and i < len(codes) else ""
            one["sip.Status-Line"] = lines[i] if not one["sip.Method"] and i < len(lines) else ""
            res.append((int(base["frame.number"]), one))
    return res


def gaspp_run(gaspp, pcap, backend, d, extra=()):
    out = os.path.join(d, "run")
    subprocess.run(["rm", "-rf", out])
    os.makedirs(out)
    p = subprocess.run([gaspp, "-r", pcap, "--backend", backend, "-q", "--app-layer", "-l", out,
                        "--stats-json", os.path.join(out, "stats.json")] + list(extra), capture_output=True, text=True)
    if p.returncode != 0:
        return None, None, f"gaspp exit {p.returncode}: {p.stderr.strip()[-300:]}"
    events = [json.loads(line) for line in open(os.path.join(out, "eve.json"))]
    stats = json.load(open(os.path.join(out, "stats.json")))
    return events, stats, None


def compare_events(events, tsh):
    """gaspp's sip events against tshark's messages, frame by frame."""
    bad = []
    mine = {}
    for e in events:
        if e.get("event_type") == "sip":
            mine.setdefault(e["pcap_cnt"], []).append(e)
    per_frame = {}
    for frame, d in tsh:
        per_frame.setdefault(frame, []).append(d)
    for frame, ds in per_frame.items():
        got = mine.pop(frame, [])
        if len(got) != len(ds):
            bad.append(f"frame {frame}: {len(got)} sip events, tshark reads {len(ds)} messages")
            continue
        for e, d in zip(got, ds):
            bad += compare_one(frame, e, d)
    for frame, evs in mine.items():
        bad.append(f"frame {frame}: {len(evs)} sip events, tshark reads no SIP there")
    return bad


def compare_one(frame, e, d):
    """One gaspp sip event against one tshark message of the frame."""
    bad = []
    s = e["sip"]
    port = int(d["udp.srcport"] or d["tcp.srcport"])
    if (e["src_ip"], e["src_port"]) != (d["ip.src"], port):
        bad.append(f"frame {frame}: src {e['src_ip']}:{e['src_port']}, tshark {d['ip.src']}:{port}")
    if d["sip.Method"]:
        want = {"method": d["sip.Method"], "uri": d["sip.r-uri"]}
    else:
        want = {"code": d["sip.Status-Code"], "reason": d["sip.Status-Line"].split(" ", 2)[2]}
    have = {k: s.get(k) for k in want}
    if have != want or s.get("version") != "SIP/2.0":
        bad.append(f"frame {frame}: {s}, tshark {want}")
    return bad


def reference_fields(sender, m):
    """A built message as tshark_sip gives one."""
    return {"ip.src": sender[0], "udp.srcport": str(sender[1]), "tcp.srcport": "",
            "sip.Method": m.get("method", ""), "sip.r-uri": m.get("uri", ""), "sip.Status-Code": m.get("code", ""),
            "sip.Status-Line": m["line"] if not m["request"] else ""}


# The buffer rules: (rule options, predicate over (side, parsed message)) — side 0 a request's
# inspection, 1 a response's. A rule alerts once per message it matches.
def field_values(m, name):
    return [v for n, v in m["fields"] if n == name]


RULES = [
    ('flow:to_server; sip.method; content:"REGISTER"; bsize:8;', lambda m: m["request"] and m["method"] == "REGISTER"),
    ('sip.method; content:"INV"; startswith;', lambda m: m["request"] and m["method"].startswith("INV")),
    ('sip.method; content:"BYE";', lambda m: m["request"] and "BYE" in m["method"]),
    ('sip.uri; content:"@example.org";', lambda m: m["request"] and "@example.org" in m["uri"]),
    ('sip.request_line; content:"sip:bob@example.com SIP/2.0"; endswith;',
     lambda m: m["request"] and m["line"].endswith("sip:bob@example.com SIP/2.0")),
    ('sip.stat_code; content:"401";', lambda m: not m["request"] and m["code"] == "401"),
    ('flow:to_client; sip.stat_msg; content:"OK"; bsize:2;', lambda m: not m["request"] and m["reason"] == "OK"),
    ('sip.response_line; content:"SIP/2.0 100 ";', lambda m: not m["request"] and m["line"].startswith("SIP/2.0 100 ")),
    ('sip.protocol; content:"SIP/2.0"; bsize:7;', lambda m: True),
    ('flow:to_server; sip.protocol; content:"SIP/2.0";', lambda m: m["request"]),
    ('sip.from; content:"alice@example.com";', lambda m: any("alice@example.com" in v for v in field_values(m, "From"))),
    ('sip.to; content:"tag=srv";', lambda m: any("tag=srv" in v for v in field_values(m, "To"))),
    # A multi-buffer: the second Via of the REGISTER, the TCP ones.
    ('sip.via; content:"192.0.2.9";', lambda m: any("192.0.2.9" in v for v in field_values(m, "Via"))),
    ('sip.via; content:"SIP/2.0/TCP";', lambda m: any("SIP/2.0/TCP" in v for v in field_values(m, "Via"))),
    ('sip.user_agent; content:"Phone/";', lambda m: any("Phone/" in v for v in field_values(m, "User-Agent"))),
    ('sip.content_type; content:"application/sdp"; bsize:15;',
     lambda m: any(v == "application/sdp" for v in field_values(m, "Content-Type"))),
    ('sip.content_length; content:"19"; bsize:2;', lambda m: any(v == "19" for v in field_values(m, "Content-Length"))),
    ('sip.method; content:"NOTIFY";', lambda m: False),
    # Frames: the reference cuts each message as Suricata's parser does (frame_bytes); their alerts
    # carry the frame object (checked in check_rules).
    ('frame:pdu; content:"CSeq: 1 ";', lambda m: b"CSeq: 1 " in m["raw"], "pdu"),
    ('frame:request.line; content:"SIP/2.0|0d 0a|"; endswith;',
     lambda m: (frame_bytes(m, "request.line") or b"").endswith(b"SIP/2.0\r\n"), "request.line"),
    ('frame:request.headers; content:"Via:"; startswith; content:"Content-Length: 0|0d 0a|"; endswith;',
     lambda m: (lambda f: f.startswith(b"Via:") and f.endswith(b"Content-Length: 0\r\n"))(frame_bytes(m, "request.headers") or b""),
     "request.headers"),
    ('frame:sip.response.line; content:"401";', lambda m: b"401" in (frame_bytes(m, "response.line") or b""), "response.line"),
    ('frame:response.headers; content:"Content-Type: text/plain|0d 0a|";',
     lambda m: b"Content-Type: text/plain\r\n" in (frame_bytes(m, "response.headers") or b""), "response.headers"),
    ('frame:request.body; content:"m=audio"; content:"|0d 0a|"; endswith;',
     lambda m: (lambda f: b"m=audio" in f and f.endswith(b"\r\n"))(frame_bytes(m, "request.body") or b""), "request.body"),
    ('frame:response.body; content:"plain body"; startswith;',
     lambda m: (frame_bytes(m, "response.body") or b"").startswith(b"plain body"), "response.body"),
]


def check_rules(gaspp, pcap, backend, messages, d):
    rf = os.path.join(d, "sip.rules")
    with open(rf, "w") as f:
        for i, (opts, *_) in enumerate(RULES):
            f.write(f'alert sip any any -> any any (msg:"sip {i + 1}"; {opts} sid:{i + 1}; rev:1;)\n')
    events, _, err = gaspp_run(gaspp, pcap, backend, d, ["--module", f"detect:rules={rf},packet-alert-max=1000"])
    if err:
        return [err]
    # One alert per signature and transaction, as Suricata: two messages of one TCP segment that a
    # signature matches are two alerts of that packet.
    want = sorted((i + 1, frame) for frame, _, m in messages for i, (_, pred, *_) in enumerate(RULES) if pred(m))
    got, bad = [], []
    for e in events:
        if e.get("event_type") != "alert":
            continue
        sid = e["alert"]["signature_id"]
        got.append((sid, e["pcap_cnt"]))
        if e.get("app_proto") != "sip" or "sip" not in e:
            bad.append(f"alert of sid {sid} without app_proto sip and the sip object")
        rule = RULES[sid - 1]
        if len(rule) < 3:
            if "frame" in e:
                bad.append(f"alert of sid {sid} (no frame rule) with a frame object")
            continue
        # The frame object: the frame of one of the packet's messages the rule matched, its bytes
        # (up to the 4 KiB / 256 bytes Suricata logs) and length, direction and completeness.
        f = e.get("frame", {})
        cands = [frame_bytes(m, rule[2]) for fr, _, m in messages if fr == e["pcap_cnt"] and rule[1](m)]
        payload = base64.b64decode(f.get("payload", ""))
        if f.get("type") != rule[2] or f.get("complete") is not True or not any(
                c is not None and f.get("length") == len(c) and payload == c[:len(payload)] and payload for c in cands):
            bad.append(f"alert of sid {sid} at frame {e['pcap_cnt']}: frame object {f}, want type {rule[2]} over {cands}")
        elif rule[2] != "pdu" and f.get("direction") != ("toclient" if rule[2].startswith("response") else "toserver"):
            bad.append(f"alert of sid {sid}: frame direction {f.get('direction')}")
    got.sort()
    if got != want:
        extra = sorted((collections.Counter(got) - collections.Counter(want)).elements())
        missing = sorted((collections.Counter(want) - collections.Counter(got)).elements())
        bad.append(f"alerts (sid, frame): missing {missing}, not expected {extra}")
    return bad


def main():
    args = sys.argv[1:]
    gaspp, data = args[0], args[1]
    backend = args[3] if args[2:3] == ["--backend"] else "cpu"
    failures = 0
    with tempfile.TemporaryDirectory() as d:
        pcap = os.path.join(d, "sip.pcap")
        messages, sip_frames, http_start = build(pcap)
        events, stats, err = gaspp_run(gaspp, pcap, backend, d)
        bad = [err] if err else []
        if not err:
            # The reference (the messages as built) always; tshark's reading of them where it is
            # installed (the GPU machine has none).
            ref = [(frame, reference_fields(sender, m)) for frame, sender, m in messages]
            bad += compare_events(events, ref)
            if shutil.which("tshark"):
                bad += compare_events(events, tshark_sip(pcap, ["-d", "tcp.port==5080,sip"]))
            else:
                print("tshark is not installed: the sip events are compared with the reference only")
            if {f for f, _, _ in messages} != sip_frames:
                bad.append("the build lost track of its frames")
            flows = {}
            for e in events:
                if e.get("event_type") == "flow":
                    flows[(e["proto"], e["src_port"], e["dest_port"])] = e.get("app_proto")
            for key, want in ((("UDP", 5060, 5060), "sip"), (("UDP", 5060, 40200), "sip"), (("TCP", 40100, 5080), "sip"),
                              (("TCP", 40101, 80), "http")):
                if flows.get(key) != want:
                    bad.append(f"flow {key}: app_proto {flows.get(key)}, want {want}")
            al = stats["modules"]["app_layer"]
            nreq = sum(1 for _, _, m in messages if m["request"])
            for k, v in (("sip_requests", nreq), ("sip_responses", len(messages) - nreq), ("sip_invalid", 1)):
                if al.get(k) != v:
                    bad.append(f"{k} {al.get(k)}, want {v}")
            bad += check_rules(gaspp, pcap, backend, messages, d)
        print(f"{'ok  ' if not bad else 'FAIL'} built capture: {len(messages)} SIP messages, {len(RULES)} buffer rules")
        for b in bad:
            print("     " + b)
        failures += bool(bad)
        # The captures of DATA_DIR that carry SIP: the events against tshark's messages (UDP port
        # 5060, where gaspp reads SIP, and TCP).
        compared = 0
        if not shutil.which("tshark"):
            print("tshark is not installed: DATA_DIR's captures are not compared")
            return 1 if failures else 0
        for root, _, fs in os.walk(os.path.join(data, "pcaps")):
            for f in sorted(fs):
                path = os.path.join(root, f)
                if not f.endswith((".pcap", ".pcapng")):
                    continue
                with open(path, "rb") as fh:
                    if b"SIP/2.0" not in fh.read():
                        continue
                events, _, err = gaspp_run(gaspp, path, backend, d)
                tsh = [(fr, x) for fr, x in tshark_sip(path, [])
                       if x["tcp.srcport"] or "5060" in (x["udp.srcport"], x["udp.dstport"])]
                bad = [err] if err else compare_events(events, tsh)
                compared += len(tsh)
                print(f"{'ok  ' if not bad else 'FAIL'} {os.path.relpath(path, data)}: {len(tsh)} SIP messages")
                for b in bad[:10]:
                    print("     " + b)
                failures += bool(bad)
        print(f"sip cases: {failures} failures, {compared} messages of DATA_DIR's captures compared")
        if compared == 0:
            print("FAIL: no capture with SIP in DATA_DIR")
            return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
