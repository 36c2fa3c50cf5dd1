#!/usr/bin/env python3
"""HTTP's files (applayer/http1.hpp HttpTx::files) against independent oracles: the EVE `fileinfo`
events gaspp writes, and the file keywords' alerts.

  * Sessions built here with scapy, in segments of random sizes: responses whose bodies are random
    bytes sent plain, chunked, gzip-compressed (Python's gzip) and named by Content-Disposition; a
    PUT and a plain POST (their bodies are files named by the URI's path); a multipart/form-data
    POST built with Python's email package (its parts' bytes are what email.message_from_bytes
    gives back); a response cut by a RST (TRUNCATED) and one past the
    body limit (TRUNCATED at the limit). Each file's name, size, state and SHA-256 (hashlib) must
    be gaspp's, in order.
  * Rules with the file keywords over those sessions: filemd5 / filesha256 lists of some files'
    hashes (hashlib), negated, fileext, filename, file.name, filesize; each must alert once for
    each file the oracle says satisfies it (per file, as Suricata's MATCH_MORE_FILES).
  * Every capture in ../shared/data/pcaps with HTTP: each CLOSED file gaspp writes must
    have the SHA-256 of one of the objects `tshark --export-objects http` writes (tshark dechunks
    and decompresses bodies itself), and at least one such file must exist over all captures.

usage: http_files.py GASPP DATA_DIR [--backend cpu|cuda] [--no-tshark]
"""
import email
import email.policy
import glob
import gzip
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from email.message import EmailMessage

try:
    from scapy.all import IP, TCP, Ether, Raw, wrpcap
except ImportError:
    print("FAIL: scapy is not installed (scripts/setup.sh installs it)")
    sys.exit(1)

C, S = "10.2.0.1", "10.2.0.2"
LIMIT = 100 * 1024  # Suricata's response-body-limit default, gaspp's too


def session(cport, exchanges, rng, rst_in_response=None):
    """One connection: each (request, response) in turn, the bytes in random segments; with
    rst_in_response=k, the server sends k bytes of the last response and resets."""
    pk = []
    seq = {"c": 1000, "s": 5000}

    def seg(frm, flags, data=b""):
        src, dst, sp, dp = (C, S, cport, 80) if frm == "c" else (S, C, 80, cport)
        other = "s" if frm == "c" else "c"
        p = Ether() / IP(src=src, dst=dst) / TCP(sport=sp, dport=dp, flags=flags, seq=seq[frm], ack=seq[other], window=65535)
        pk.append(p / Raw(data) if data else p)
        seq[frm] += len(data) + (1 if ("S" in flags or "F" in flags) else 0)

    def send(frm, data):
        while data:
            n = rng.randint(1, 1460)
            seg(frm, "PA", data[:n])
            data = data[n:]
            seg("s" if frm == "c" else "c", "A")

    seq["c"] -= 1
    seg("c", "S")
    seq["s"] -= 1
    seg("s", "SA")
    seg("c", "A")
    for k, (req, resp) in enumerate(exchanges):
        send("c", req)
        if rst_in_response is not None and k == len(exchanges) - 1:
            send("s", resp[:rst_in_response])
            seg("s", "R")
            return pk
        send("s", resp)
    seg("c", "FA")
    seg("s", "FA")
    seg("c", "A")
    return pk


def response(body, headers=b""):
    return b"HTTP/1.1 200 OK\r\n" + headers + b"Content-Length: %d\r\n\r\n" % len(body) + body


def chunked(body, rng):
    out, rest = b"", body
    while rest:
        n = rng.randint(1, 3000)
        out += b"%x\r\n" % len(rest[:n]) + rest[:n] + b"\r\n"
        rest = rest[n:]
    return b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + out + b"0\r\n\r\n"


def form_post(rng):
    """A multipart/form-data request (Python's email package) and its files as the package reads
    them back: [(filename, bytes)]."""
    m = EmailMessage()
    m.make_mixed()
    files = []
    for j in range(rng.randint(1, 3)):
        part = EmailMessage()
        data = bytes(rng.getrandbits(8) for _ in range(rng.choice([1, 50, 3000, 20000])))
        part.set_content(data, maintype="application", subtype="octet-stream", cte="binary",
                         disposition="form-data", filename=f"up{j}.bin")
        part.replace_header("Content-Disposition", f'form-data; name="f{j}"; filename="up{j}.bin"')
        m.attach(part)
    raw = m.as_bytes(policy=email.policy.HTTP)
    head, body = raw.split(b"\r\n\r\n", 1)
    ctype = [l for l in head.split(b"\r\n") if l.lower().startswith(b"content-type:")][0].split(b":", 1)[1].strip()
    ctype = ctype.replace(b"multipart/mixed", b"multipart/form-data")
    back = email.message_from_bytes(b"Content-Type: " + ctype + b"\r\n\r\n" + body, policy=email.policy.HTTP)
    for p in back.iter_parts():
        files.append((p.get_filename(), p.get_payload(decode=True)))
    req = (b"POST /upload HTTP/1.1\r\nHost: h\r\nContent-Type: " + ctype + b"\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    return req, files


def build(rng, tmp):
    """The capture and, per transaction in capture order, its files: [(side, name, bytes, state)]."""
    pk, txs = [], []
    port = 40000
    for k in range(8):
        exch, want = [], []
        for j in range(rng.randint(1, 3)):
            kind = rng.choice(["plain", "chunked", "gzip", "disposition", "put", "post", "form", "big"])
            body = bytes(rng.getrandbits(8) for _ in range(rng.choice([1, 700, 5000, 40000])))
            path = f"/d{k}/f{j}.{rng.choice(['exe', 'bin', 'txt'])}"
            get = b"GET %s?q=%d HTTP/1.1\r\nHost: h\r\n\r\n" % (path.encode(), j)
            if kind == "plain":
                exch.append((get, response(body)))
                want.append([(1, path, body, "CLOSED")])
            elif kind == "chunked":
                exch.append((get, chunked(body, rng)))
                want.append([(1, path, body, "CLOSED")])
            elif kind == "gzip":
                exch.append((get, response(gzip.compress(body), b"Content-Encoding: gzip\r\n")))
                want.append([(1, path, body, "CLOSED")])
            elif kind == "disposition":
                exch.append((get, response(body, b'Content-Disposition: attachment; filename="named.pdf"\r\n')))
                want.append([(1, "named.pdf", body, "CLOSED")])
            elif kind == "put":
                exch.append((b"PUT %s HTTP/1.1\r\nHost: h\r\nContent-Length: %d\r\n\r\n" % (path.encode(), len(body)) + body,
                             response(b"")))
                want.append([(0, path, body, "CLOSED")])
            elif kind == "post":
                exch.append((b"POST %s?a=b HTTP/1.1\r\nHost: h\r\nContent-Length: %d\r\n\r\n" % (path.encode(), len(body)) + body,
                             response(b"")))
                want.append([(0, path, body, "CLOSED")])
            elif kind == "form":
                req, files = form_post(rng)
                exch.append((req, response(b"done")))
                want.append([(0, n, b, "CLOSED") for n, b in files] + [(1, "/upload", b"done", "CLOSED")])
            else:
                big = bytes(rng.getrandbits(8) for _ in range(LIMIT + 5000))
                exch.append((get, response(big)))
                want.append([(1, path, big[:LIMIT], "TRUNCATED")])
        rst = None
        if k == 7:
            body = bytes(rng.getrandbits(8) for _ in range(3000))
            path = "/cut.bin"
            resp = response(body)
            exch.append((b"GET /cut.bin HTTP/1.1\r\nHost: h\r\n\r\n", resp))
            rst = len(resp) - 1000
            want.append([(1, path, body[:2000], "TRUNCATED")])
        pk += session(port + k, exch, rng, rst)
        txs += want
    path = os.path.join(tmp, "files.pcap")
    wrpcap(path, pk)
    return path, txs


def run(gaspp, pcap, backend, out, extra=()):
    os.makedirs(out, exist_ok=True)
    p = subprocess.run([gaspp, "-r", pcap, "--backend", backend, "-l", out] + list(extra), capture_output=True, text=True)
    if p.returncode != 0:
        print(f"FAIL: gaspp {pcap}: {p.stderr.strip()[-400:]}")
        sys.exit(1)
    return [json.loads(l) for l in open(os.path.join(out, "eve.json"))]


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    gaspp, data = args[0], args[1]
    backend = sys.argv[sys.argv.index("--backend") + 1] if "--backend" in sys.argv else "cpu"
    fails = []
    rng = random.Random(20261129)
    with tempfile.TemporaryDirectory() as tmp:
        pcap, txs = build(rng, tmp)
        ev = run(gaspp, pcap, backend, os.path.join(tmp, "o1"), ["--app-layer", "--force-hash", "md5,sha256"])
        got = [(e["flow_id"], e["fileinfo"]["tx_id"], e["fileinfo"]) for e in ev if e["event_type"] == "fileinfo"]
        # Files of a connection in order of their transactions (the request's before the response's).
        want_list = [f for tx in txs for f in tx]
        if len(got) != len(want_list):
            fails.append(f"built sessions: {len(got)} fileinfo events, want {len(want_list)}")
        for (flow, tx, fi), (side, name, b, state) in zip(got, want_list):
            w = {"filename": name, "size": len(b), "state": state}
            if state == "CLOSED":
                w["sha256"] = hashlib.sha256(b).hexdigest()
                w["md5"] = hashlib.md5(b).hexdigest()
            g = {k: fi.get(k) for k in w}
            if g != w:
                fails.append(f"built sessions: flow {flow} tx {tx}: {g} want {w}")
        # The file keywords: each rule alerts on the transactions (by their files) the oracle picks.
        closed = [(i, f) for i, tx in enumerate(txs) for f in tx if f[3] == "CLOSED"]
        pick = rng.sample(closed, min(4, len(closed)))
        with open(os.path.join(tmp, "md5.list"), "w") as f:
            f.write("# picked files\n\n" + "".join(hashlib.md5(x[1][2]).hexdigest() + "\n" for x in pick[:2]))
        with open(os.path.join(tmp, "sha.list"), "w") as f:
            f.write("".join(hashlib.sha256(x[1][2]).hexdigest().upper() + "  name\n" for x in pick[2:]))
        # Each rule's predicate on one file (side, name, bytes, state): a file signature alerts once
        # per file it matches (Suricata's MATCH_MORE_FILES), not once per transaction.
        md5s = {hashlib.md5(x[1][2]).hexdigest() for x in pick[:2]}
        shas = {hashlib.sha256(x[1][2]).hexdigest() for x in pick[2:]}
        rules = {
            1: ("filemd5:md5.list;", lambda f: f[3] == "CLOSED" and hashlib.md5(f[2]).hexdigest() in md5s),
            2: ("filesha256:sha.list;", lambda f: f[3] == "CLOSED" and hashlib.sha256(f[2]).hexdigest() in shas),
            3: ('fileext:"EXE";', lambda f: f[1].lower().endswith(".exe")),
            4: ('filename:"named";', lambda f: "named" in f[1].lower()),
            5: ('file.name; content:"up1.bin"; endswith;', lambda f: f[1].endswith("up1.bin")),
            6: ("filesize:>30000;", lambda f: f[3] != "UNKNOWN" and len(f[2]) > 30000),
            7: ("filesha256:!sha.list;", lambda f: f[3] == "CLOSED" and hashlib.sha256(f[2]).hexdigest() not in shas),
        }
        rf = os.path.join(tmp, "files.rules")
        with open(rf, "w") as f:
            for sid, (opt, _) in rules.items():
                # Per direction: a transaction's request files and response files are inspected apart.
                f.write(f'alert http any any -> any any (msg:"file {sid}"; flow:to_server; {opt} sid:{sid};)\n')
                f.write(f'alert http any any -> any any (msg:"file {sid}"; flow:to_client; {opt} sid:{sid + 100};)\n')
        ev = run(gaspp, pcap, backend, os.path.join(tmp, "o2"), ["--module", f"detect:rules={rf}"])
        counts = {}
        for e in ev:
            if e["event_type"] == "alert":
                counts[e["alert"]["signature_id"]] = counts.get(e["alert"]["signature_id"], 0) + 1
        for sid, (opt, pred) in rules.items():
            for side, s2 in ((0, sid), (1, sid + 100)):
                want = sum(1 for tx in txs for f in tx if f[0] == side and pred(f))
                if counts.get(s2, 0) != want:
                    fails.append(f"rule {s2} ({opt} side {side}): {counts.get(s2, 0)} alerts, want {want}")
        if "--no-tshark" not in sys.argv and shutil.which("tshark"):
            matched = 0
            for cap in sorted(glob.glob(os.path.join(data, "pcaps", "*", "*.pcap"))):
                if not subprocess.run(["tshark", "-r", cap, "-Y", "http.response"], capture_output=True,
                                      text=True).stdout.strip():
                    continue
                exp = os.path.join(tmp, "exp", os.path.basename(cap))
                os.makedirs(exp)
                subprocess.run(["tshark", "-r", cap, "-q", "--export-objects", f"http,{exp}"], capture_output=True)
                oracle = {hashlib.sha256(open(os.path.join(exp, x), "rb").read()).hexdigest() for x in os.listdir(exp)}
                ev = run(gaspp, cap, backend, os.path.join(tmp, "o3", os.path.basename(cap)), ["--app-layer", "--force-hash", "sha256"])
                for e in ev:
                    if e["event_type"] != "fileinfo" or e["fileinfo"]["state"] != "CLOSED":
                        continue
                    if e["fileinfo"]["sha256"] in oracle:
                        matched += 1
                    else:
                        fails.append(f"{os.path.basename(cap)}: file {e['fileinfo']['filename']} ({e['fileinfo']['size']} bytes) is none of tshark's objects")
            if matched == 0:
                fails.append("no capture's file matched tshark's objects (the check would be empty)")
            print(f"captures: {matched} closed files, each one of tshark's exported objects")
    for f in fails:
        print("FAIL:", f)
    if fails:
        sys.exit(1)
    print(f"OK: {len(want_list)} files of built sessions as their oracles, {len(rules) * 2} file keyword rules")


if __name__ == "__main__":
    main()
