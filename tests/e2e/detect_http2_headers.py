#!/usr/bin/env python3
"""HTTP/2's header buffers, on a capture built here (scapy's HTTP/2 frames, literal HPACK fields),
each rule's alert count checked against a reference written from Suricata's code (the
packet-alert-max raised, so that none of the many alerts at one packet is cut):

  * http.request_header / http.response_header (and Suricata 7's http2.header): each field of the
    side's header block, pseudo-fields too, "name: value" (rust/src/http2/detect.rs
    SCHttp2TxGetHeader); http2.header_name: each field's name (SCHttp2TxGetHeaderName);
    http.header: the fields but cookies, values without surrounding blanks, each line ending in
    CRLF (SCHttp2TxGetHeaders); http.header_names: CRLF, then each name and CRLF, then CRLF;
  * multi-instance buffers (Suricata's DetectBufferTypeSupportsMultiInstance): one use of the
    keyword with two contents needs one field holding both; the keyword used twice is two buffers,
    each matched at any field (suricata-verify's bug-5780-01-http2-header).
The headers in the capture are first read back with tshark (HTTP/2 decoded on port 80), so the
reference and gaspp see what the capture holds. One alert per transaction (stream) and rule.

usage: detect_http2_headers.py GASPP [cpu|cpu-device|cuda ...] [--no-tshark]
  --no-tshark: the capture is not read back (a machine without tshark; the same seed builds the
  same capture CI checks with it)
"""
import os
import random
import shutil
import subprocess
import sys
import tempfile

from detect_base64 import check_counts, hexs, session

try:
    from scapy.all import wrpcap
    from scapy.contrib.http2 import (H2Frame, H2HeadersFrame, H2SettingsFrame, HPackHdrString,
                                     HPackLitHdrFldWithoutIndexing, HPackLiteralString)
except ImportError:
    print("FAIL: scapy (with scapy.contrib.http2) is needed")
    sys.exit(1)

NAMES = ["user-agent", "accept", "x-alpha", "x-beta", "x-gamma", "cookie", "x-pad"]


def lit(name, value):
    return HPackLitHdrFldWithoutIndexing(index=0, hdr_name=HPackHdrString(data=HPackLiteralString(name)),
                                         hdr_value=HPackHdrString(data=HPackLiteralString(value)))


def block(stream, fields, end_stream):
    flags = {"EH", "ES"} if end_stream else {"EH"}
    return bytes(H2Frame(stream_id=stream, flags=flags) / H2HeadersFrame(hdrs=[lit(n, v) for n, v in fields]))


def token(rng, n=6):
    return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(n))


def fields_of(rng, pseudo):
    out = list(pseudo)
    for name in rng.sample(NAMES, rng.randrange(1, 5)):
        v = token(rng)
        if name == "x-pad":
            v = " " + v + "  "  # blanks around: http.header trims them, the others keep them
        out.append((name, v))
    return out


def connection(rng, cport):
    """One HTTP/2 connection with prior knowledge: its streams' (request fields, response fields)
    and its packets (the client's bytes cut in two segments at a random place)."""
    txs = []
    client = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes(H2Frame() / H2SettingsFrame())
    server = bytes(H2Frame() / H2SettingsFrame())
    for k in range(rng.randrange(1, 4)):
        sid = 1 + 2 * k
        req = fields_of(rng, [(":method", rng.choice(["GET", "POST"])), (":scheme", "http"),
                              (":path", "/" + token(rng)), (":authority", "h" + token(rng, 3) + ".example")])
        resp = fields_of(rng, [(":status", rng.choice(["200", "404"]))])
        client += block(sid, req, True)
        server += block(sid, resp, True)
        txs.append((req, resp))
    return txs, session(cport, client, server, cut=rng.randrange(1, len(client)))


def tshark_fields(pk):
    """Every header field of the capture's HEADERS frames as tshark decodes them, in capture order."""
    with tempfile.TemporaryDirectory() as d:
        f = os.path.join(d, "h2.pcap")
        wrpcap(f, pk)
        p = subprocess.run(["tshark", "-r", f, "-d", "tcp.port==80,http2", "-Y", "http2.type==1", "-T", "fields",
                            "-E", "occurrence=a", "-E", "aggregator=\x1f", "-e", "http2.header.name",
                            "-e", "http2.header.value"], capture_output=True, text=True, check=True)
    out = []
    for line in p.stdout.splitlines():
        names, values = line.split("\t")
        out += list(zip(names.split("\x1f"), values.split("\x1f")))
    return out


def header_buf(fields, side):
    skip = "cookie" if side == 0 else "set-cookie"
    return "".join(f"{n}: {v.strip(' ' + chr(9))}\r\n" for n, v in fields if n != skip)


def names_buf(fields):
    return "\r\n" + "".join(n + "\r\n" for n, _ in fields) + "\r\n"


def piece(rng, s):
    """A random piece of s, 3 to 8 bytes."""
    n = min(len(s), rng.randrange(3, 9))
    a = rng.randrange(0, len(s) - n + 1)
    return s[a:a + n]


def content(s):
    return hexs(s.encode()) if any(c in s for c in '";\\|\r\n') else s


def rules_and_counts(rng, txs):
    """Random rules over the transactions' fields and, per sid, the transactions each matches."""
    rules, want = [], {}

    def add(text, holds):
        sid = len(rules) + 1
        rules.append(f"alert http2 any any -> any any ({text} sid:{sid};)")
        want[sid] = sum(1 for req, resp in txs if holds(req, resp))

    def one_field(fields):
        return f"{rng.choice(fields)[0]}: {rng.choice(fields)[1]}" if rng.random() < 0.15 else \
            "{}: {}".format(*rng.choice(fields))

    for _ in range(90):
        req, resp = rng.choice(txs)
        kind = rng.randrange(8)
        if kind in (0, 1):
            # One field holds the piece (a field's "name: value", or rarely a mix of two).
            side = kind
            f = one_field(req if side == 0 else resp)
            x = piece(rng, f)
            kw = "http.request_header" if side == 0 else "http.response_header"
            if side == 0 and rng.random() < 0.3:
                kw = "http2.header"
            d = "to_server" if side == 0 else "to_client"
            add(f"flow:{d}; {kw}; content:\"{content(x)}\";",
                lambda q, r, x=x, side=side: any(x in f"{n}: {v}" for n, v in (q if side == 0 else r)))
        elif kind == 2:
            # Two contents in one use: both in one field.
            x, y = piece(rng, one_field(req)), piece(rng, one_field(req))
            add(f"flow:to_server; http.request_header; content:\"{content(x)}\"; content:\"{content(y)}\";",
                lambda q, r, x=x, y=y: any(x in f"{n}: {v}" and y in f"{n}: {v}" for n, v in q))
        elif kind == 3:
            # The keyword twice: each its own buffer, matched at any field.
            x, y = piece(rng, one_field(req)), piece(rng, one_field(req))
            add(f"flow:to_server; http.request_header; content:\"{content(x)}\"; "
                f"http.request_header; content:\"{content(y)}\";",
                lambda q, r, x=x, y=y: any(x in f"{n}: {v}" for n, v in q) and any(y in f"{n}: {v}" for n, v in q))
        elif kind == 4:
            side = rng.randrange(2)
            fields = req if side == 0 else resp
            x = piece(rng, rng.choice(fields)[0])
            d = "to_server" if side == 0 else "to_client"
            if rng.random() < 0.5:
                # The name whole: startswith and endswith (bsize-like), or a piece.
                x = rng.choice(fields)[0]
                add(f"flow:{d}; http2.header_name; content:\"{content(x)}\"; startswith; endswith;",
                    lambda q, r, x=x, side=side: any(n == x for n, _ in (q if side == 0 else r)))
            else:
                add(f"flow:{d}; http2.header_name; content:\"{content(x)}\";",
                    lambda q, r, x=x, side=side: any(x in n for n, _ in (q if side == 0 else r)))
        elif kind == 5:
            # http2.header_name twice: two names, each anywhere.
            x, y = rng.choice(req)[0], rng.choice(rng.choice(txs)[0])[0]
            add(f"flow:to_server; http2.header_name; content:\"{content(x)}\"; endswith; "
                f"http2.header_name; content:\"{content(y)}\"; startswith;",
                lambda q, r, x=x, y=y: any(n.endswith(x) for n, _ in q) and any(n.startswith(y) for n, _ in q))
        elif kind == 6:
            side = rng.randrange(2)
            fields = req if side == 0 else resp
            x = piece(rng, header_buf(fields, side))
            d = "to_server" if side == 0 else "to_client"
            add(f"flow:{d}; http.header; content:\"{content(x)}\";",
                lambda q, r, x=x, side=side: x in header_buf(q if side == 0 else r, side))
        else:
            side = rng.randrange(2)
            fields = req if side == 0 else resp
            x = piece(rng, names_buf(fields))
            d = "to_server" if side == 0 else "to_client"
            add(f"flow:{d}; http.header_names; content:\"{content(x)}\";",
                lambda q, r, x=x, side=side: x in names_buf(q if side == 0 else r))
    # Fixed cases: a cookie is not in http.header; the blanks around x-pad's value are.
    add('flow:to_server; http.header; content:"cookie: ";', lambda q, r: False)
    add('flow:to_server; http.request_header; content:"cookie: ";', lambda q, r: any(n == "cookie" for n, _ in q))
    add('flow:to_server; http.request_header; content:"x-pad:  ";', lambda q, r: any(n == "x-pad" for n, _ in q))
    add('flow:to_server; http.header; content:"x-pad: "; content:"|0d 0a|"; within:8;',
        lambda q, r: any(n == "x-pad" for n, _ in q))
    return rules, want


def main():
    gaspp = sys.argv[1]
    no_tshark = "--no-tshark" in sys.argv[2:]
    paths = [a for a in sys.argv[2:] if a != "--no-tshark"] or ["cpu", "cpu-device"]
    if not no_tshark and not shutil.which("tshark"):
        print("FAIL: tshark is needed (the capture's headers are read back with it)")
        return 1
    rng = random.Random(20261207)
    packets, txs = [], []
    expect_fields = []
    for i in range(12):
        t, pk = connection(rng, 40000 + i)
        txs += t
        packets += pk
        # In capture order: the client's blocks, then the server's.
        expect_fields += [f for req, _ in t for f in req] + [f for _, resp in t for f in resp]
    read = expect_fields if no_tshark else tshark_fields(packets)
    if read != expect_fields:
        print(f"FAIL: tshark reads {len(read)} header fields, {len(expect_fields)} were built, or they differ")
        return 1
    print(f"capture: {len(txs)} HTTP/2 transactions, {len(read)} header fields" +
          ("" if no_tshark else ", as tshark reads them"))
    rules, want = rules_and_counts(rng, txs)
    # Many rules match at one packet: Suricata's packet-alert-max (15) raised so that none is cut.
    return 1 if check_counts(gaspp, paths, packets, rules, want, "h2hdr", options=",packet-alert-max=1000") else 0


if __name__ == "__main__":
    sys.exit(main())
