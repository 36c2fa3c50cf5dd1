#!/usr/bin/env python3
"""A mail's attachments (applayer/mime.hpp) against Python's email package: the EVE `fileinfo`
events and `email.attachment` lists gaspp writes, and the file.data signatures they raise.

  * Mails built here with Python's email package (base64 attachments of random bytes, some larger
    than a segment; quoted-printable text with '=' and long lines that need soft breaks; 7bit
    text with lines that start with '.', dot-stuffed on the wire; nested multipart/alternative
    bodies; a forwarded message/rfc822 with its own attachment), sent over SMTP sessions written
    here with scapy in segments of random sizes, over DATA and, one session, over BDAT chunks of
    random sizes. One session's flow ends (RST) inside an attachment: its file is TRUNCATED.
  * The SMTP sessions of every capture in ../shared/data/pcaps that has an attachment: the client's
    bytes as tshark reassembles them (follow,tcp,raw), its DATA messages cut out and dot-unstuffed.
Each message is parsed with email.message_from_bytes; each part with a file name
(get_filename(), which reads Content-Disposition's filename and Content-Type's name) is a file
whose expected bytes are: base64 parts get_payload(decode=True); quoted-printable parts decoded by
quopri with each hard line break as CRLF, the last one too (Suricata keeps the breaks as sent);
other parts the body as sent. gaspp's files of each connection, in order, must have those names,
sizes and MD5s (--force-hash md5), state CLOSED, and every mail's email.attachment the names.
Then for every file a rule with a random piece of its bytes as a file.data content must alert once
on its mail (and file_data to_client, a piece not in any file: never).

usage: smtp_files.py GASPP DATA_DIR [--backend cpu|cuda] [--no-tshark]
(--no-tshark: the built mails only, where tshark is not installed)
"""
import email
import email.policy
import glob
import hashlib
import json
import os
import quopri
import random
import subprocess
import sys
import tempfile
from email.message import EmailMessage

try:
    from scapy.all import IP, TCP, Ether, Raw, wrpcap
except ImportError:
    print("FAIL: scapy is not installed (scripts/setup.sh installs it)")
    sys.exit(1)

C, S = "10.1.0.1", "10.1.0.2"


def session(cport, mails, rng, cut_at=None, bdat=False):
    """An SMTP session delivering each message of mails; the client's bytes in random segments.
    cut_at: the flow ends with a RST after that many bytes of the client's DATA stream. bdat: each
    message in BDAT chunks of random sizes (RFC 3030), the last one LAST, not dot-stuffed."""
    pk = []
    seq = {"c": 1000, "s": 5000}

    def seg(frm, flags, data=b""):
        src, dst, sp, dp = (C, S, cport, 25) if frm == "c" else (S, C, 25, cport)
        other = "s" if frm == "c" else "c"
        p = Ether() / IP(src=src, dst=dst) / TCP(sport=sp, dport=dp, flags=flags, seq=seq[frm], ack=seq[other], window=65535)
        pk.append(p / Raw(data) if data else p)
        seq[frm] += len(data) + (1 if ("S" in flags or "F" in flags) else 0)

    def client(data):
        while data:
            n = rng.randint(1, 1400)
            seg("c", "PA", data[:n])
            data = data[n:]

    seq["c"] -= 1
    seg("c", "S")
    seq["s"] -= 1
    seg("s", "SA")
    seg("c", "A")
    seg("s", "PA", b"220 mx.example ESMTP\r\n")
    client(b"EHLO client.example\r\n")
    seg("s", "PA", b"250-mx.example\r\n250 SIZE 100000000\r\n")
    for k, msg in enumerate(mails):
        client(b"MAIL FROM:<a%d@example.com>\r\n" % k)
        seg("s", "PA", b"250 ok\r\n")
        client(b"RCPT TO:<b@example.org>\r\n")
        seg("s", "PA", b"250 ok\r\n")
        if bdat:
            rest = msg
            while rest:
                n = rng.randint(1, 3000)
                last = n >= len(rest)
                chunk, rest = rest[:n], rest[n:]
                client(b"BDAT %d%s\r\n" % (len(chunk), b" LAST" if last else b"") + chunk)
                seg("s", "PA", b"250 ok\r\n")
            continue
        client(b"DATA\r\n")
        seg("s", "PA", b"354 go ahead\r\n")
        lines = msg.split(b"\r\n")
        body = b"".join((b"." + l if l.startswith(b".") else l) + b"\r\n" for l in lines) + b".\r\n"
        if cut_at is not None:
            client(body[:cut_at])
            seg("c", "R")
            return pk
        client(body)
        seg("s", "PA", b"250 queued\r\n")
    client(b"QUIT\r\n")
    seg("s", "PA", b"221 bye\r\n")
    seg("c", "FA")
    seg("s", "FA")
    seg("c", "A")
    return pk


def text(rng, n_lines):
    alphabet = "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789=.,;:-_"
    out = []
    for _ in range(n_lines):
        w = "".join(rng.choice(alphabet) for _ in range(rng.choice([0, 10, 40, 75, 120, 300])))
        out.append(w.strip(" "))
    return "\n".join(out) + "\n"


def build_mails(rng):
    mails = []
    for k in range(6):
        m = EmailMessage()
        m["From"] = "a@example.com"
        m["To"] = "b@example.org"
        m["Subject"] = f"mail {k}"
        m.set_content("see the attachments\n")
        if k % 2:
            m.add_alternative("<p>see the attachments</p>\n", subtype="html")
        for j in range(rng.randint(1, 3)):
            kind = rng.choice(["bin", "qp", "7bit"])
            if kind == "bin":
                data = bytes(rng.getrandbits(8) for _ in range(rng.choice([3, 100, 2000, 9000])))
                m.add_attachment(data, maintype="application", subtype="octet-stream", filename=f"f{k}_{j}.bin")
            elif kind == "qp":
                m.add_attachment(text(rng, rng.randint(1, 30)), subtype="plain", cte="quoted-printable",
                                 filename=f"t{k}_{j}.txt")
            else:
                t = "".join(rng.choice(["line\n", ".dot start\n", "..two\n", "x y z\n"]) for _ in range(rng.randint(1, 20)))
                m.add_attachment(t, subtype="plain", cte="7bit", filename=f"s{k}_{j}.txt")
        if k == 4:
            inner = EmailMessage()
            inner["Subject"] = "forwarded"
            inner.set_content("inner body\n")
            inner.add_attachment(b"inner attachment bytes", maintype="application", subtype="octet-stream",
                                 filename="inner.bin")
            m.add_attachment(inner)
        mails.append(m.as_bytes(policy=email.policy.SMTP))
    return mails


def expected_files(msg_bytes):
    """[(name, bytes)] of a message's parts with a file name, in order."""
    out = []
    m = email.message_from_bytes(msg_bytes)
    for part in m.walk():
        if part.is_multipart():
            continue
        name = part.get_filename()
        if name is None:
            continue
        cte = (part.get("Content-Transfer-Encoding") or "").strip().lower()
        raw = part.get_payload(decode=False)
        raw = raw.encode("latin-1") if isinstance(raw, str) else raw
        if cte == "base64":
            data = part.get_payload(decode=True)
        elif cte == "quoted-printable":
            body = raw if raw.endswith(b"\n") else raw + b"\r\n"
            data = quopri.decodestring(body.replace(b"\r\n", b"\n")).replace(b"\n", b"\r\n")
        else:
            data = raw
        out.append((name, data))
    return out


def client_messages(pcap):
    """The DATA messages of each SMTP connection of a capture, per tcp stream, from tshark's
    reassembly of the client's bytes."""
    streams = subprocess.run(["tshark", "-r", pcap, "-Y", "smtp.req.command", "-T", "fields", "-e", "tcp.stream"],
                             capture_output=True, text=True).stdout.split()
    out = {}
    for s in sorted(set(streams), key=int):
        f = subprocess.run(["tshark", "-r", pcap, "-q", "-z", f"follow,tcp,raw,{s}"], capture_output=True, text=True).stdout
        nodes = [l for l in f.splitlines() if l.startswith("Node ")]
        client = b""
        for l in f.splitlines():
            if l and not l.startswith("\t") and all(c in "0123456789abcdef" for c in l):
                client += bytes.fromhex(l)
        # Node 0 sent the first segment: the client when it sent the SYN (true for these captures).
        msgs, cur = [], None
        for line in client.split(b"\r\n"):
            if cur is None:
                if line.upper() == b"DATA":
                    cur = []
            elif line == b".":
                msgs.append(b"\r\n".join(cur) + b"\r\n")
                cur = None
            else:
                cur.append(line[1:] if line.startswith(b".") else line)
        ep = nodes[0].split(" ")[-1] if nodes else s
        out[ep] = msgs
    return out


def run_gaspp(gaspp, pcap, backend, out, rules=None):
    subprocess.run(["rm", "-rf", out])
    os.makedirs(out)
    cmd = [gaspp, "-r", pcap, "--backend", backend, "-q", "--app-layer", "--force-hash", "md5", "-l", out]
    if rules:
        cmd += ["--module", f"detect:rules={rules}"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"FAIL: gaspp {pcap}: exit {p.returncode}: {p.stderr.strip()[-300:]}")
    return [json.loads(l) for l in open(os.path.join(out, "eve.json"))]


def check(label, events, want_by_conn):
    """want_by_conn: {client endpoint 'ip:port': [message bytes]}. Returns failures."""
    bad = 0
    got = {}
    attach = {}
    for e in events:
        if e.get("event_type") == "fileinfo":
            got.setdefault(f"{e['src_ip']}:{e['src_port']}", []).append(e)
        if e.get("event_type") == "smtp":
            attach.setdefault(f"{e['src_ip']}:{e['src_port']}", []).append(e.get("email", {}).get("attachment", []))
    for conn, msgs in want_by_conn.items():
        want = [f for m in msgs for f in expected_files(m)]
        have = got.get(conn, [])
        if len(have) != len(want):
            print(f"FAIL {label} {conn}: {len(have)} files, expected {len(want)} ({[w[0] for w in want]})")
            bad += 1
            continue
        for (name, data), e in zip(want, have):
            fi = e["fileinfo"]
            exp = {"filename": name, "size": len(data), "md5": hashlib.md5(data).hexdigest(), "state": "CLOSED"}
            g = {k: fi.get(k) for k in exp}
            if g != exp:
                print(f"FAIL {label} {conn}: file {name}: {g}, expected {exp}")
                bad += 1
        want_att = [[n for n, _ in expected_files(m)] for m in msgs]
        if attach.get(conn, []) != want_att:
            # A forwarded message's own name-less part lists nothing; names come from every part.
            print(f"FAIL {label} {conn}: email.attachment {attach.get(conn)}, expected {want_att}")
            bad += 1
    return bad


def main():
    gaspp, data_dir = sys.argv[1], sys.argv[2]
    backend = "cpu"
    if "--backend" in sys.argv:
        backend = sys.argv[sys.argv.index("--backend") + 1]
    rng = random.Random(20261127)
    failed = 0
    with tempfile.TemporaryDirectory() as d:
        # Built mails.
        mails = build_mails(rng)
        pk, want, cports = [], {}, []
        for k in range(0, len(mails), 2):
            cport = 40000 + k
            pk += session(cport, mails[k:k + 2], rng)
            want[f"{C}:{cport}"] = mails[k:k + 2]
            cports.append(cport)
        bdat_port = 40100
        pk += session(bdat_port, mails[:3], rng, bdat=True)
        want[f"{C}:{bdat_port}"] = mails[:3]
        big = EmailMessage()
        big["Subject"] = "cut"
        big.set_content("x\n")
        big.add_attachment(bytes(rng.getrandbits(8) for _ in range(20000)), maintype="application",
                           subtype="octet-stream", filename="cut.bin")
        big_bytes = big.as_bytes(policy=email.policy.SMTP)
        pk += session(41000, [big_bytes], rng, cut_at=len(big_bytes) // 2)
        pcap = os.path.join(d, "mails.pcap")
        wrpcap(pcap, pk)
        # file.data rules: a random piece of each file (alerts once on its mail), to_client and
        # absent pieces (never).
        rules, want_alerts, sid = [], {}, 1000
        mail_files = [[d for _, d in expected_files(m)] for msgs in want.values() for m in msgs]
        for files in mail_files:
            for data in files:
                if len(data) < 8:
                    continue
                a = rng.randrange(0, len(data) - 8)
                piece = data[a:a + rng.randint(4, 8)]
                sid += 1
                hexs = "|" + " ".join(f"{x:02x}" for x in piece) + "|"
                rules.append(f'alert smtp any any -> any any (msg:"piece"; flow:established,to_server; file.data; '
                             f'content:"{hexs}"; sid:{sid}; rev:1;)')
                # Once a mail whose files hold it (a text piece may be in several).
                want_alerts[sid] = sum(1 for fs in mail_files if any(piece in x for x in fs))
        rules.append('alert smtp any any -> any any (msg:"absent"; file.data; content:"|00 ff 00 ff 00 ff 00 ff 13 37|"; sid:9001;)')
        rules_path = os.path.join(d, "files.rules")
        with open(rules_path, "w") as f:
            f.write("\n".join(rules) + "\n")
        events = run_gaspp(gaspp, pcap, backend, os.path.join(d, "built"), rules_path)
        failed += check("built", events, want)
        cut = [e["fileinfo"] for e in events if e.get("event_type") == "fileinfo" and e["src_port"] == 41000]
        if len(cut) != 1 or cut[0]["state"] != "TRUNCATED" or not 0 < cut[0]["size"] < 20000 or "md5" in cut[0]:
            print(f"FAIL built: the cut mail's file: {cut}, expected one TRUNCATED file of fewer than 20000 bytes, no md5")
            failed += 1
        alerts = {}
        for e in events:
            if e.get("event_type") == "alert":
                alerts[e["alert"]["signature_id"]] = alerts.get(e["alert"]["signature_id"], 0) + 1
                if e.get("app_proto") != "smtp" or "smtp" not in e:
                    print(f"FAIL built: alert {e['alert']['signature_id']} without its smtp object and app_proto")
                    failed += 1
        for s, n in sorted(want_alerts.items()):
            # A piece may also occur in another file of the same mail: still one alert a mail.
            if alerts.get(s, 0) != n:
                print(f"FAIL built: sid {s}: {alerts.get(s, 0)} alerts, expected {n}")
                failed += 1
        if alerts.get(9001):
            print("FAIL built: the absent piece alerted")
            failed += 1
        nfiles = sum(len(expected_files(m)) for ms in want.values() for m in ms)
        print(f"built: {len(mails)} mails, {nfiles} files, {len(want_alerts)} file.data rules, {sum(alerts.values())} alerts")
        # Real captures.
        seen = 0
        real = [] if "--no-tshark" in sys.argv else glob.glob(os.path.join(data_dir, "pcaps", "**", "*.pcap*"), recursive=True)
        for pcap in sorted(real):
            with open(pcap, "rb") as f:
                blob = f.read()
            if b"filename=" not in blob and b"name=" not in blob or b"MAIL FROM" not in blob.upper():
                continue
            msgs = client_messages(pcap)
            if not any(expected_files(m) for ms in msgs.values() for m in ms):
                continue
            seen += 1
            events = run_gaspp(gaspp, pcap, backend, os.path.join(d, "real"))
            n = check(os.path.relpath(pcap, data_dir), events, msgs)
            failed += n
            print(f"{os.path.relpath(pcap, data_dir)}: {sum(len(expected_files(m)) for ms in msgs.values() for m in ms)} files, "
                  f"{'ok' if not n else 'FAILED'}")
        if seen == 0 and real:
            print("FAIL: no capture with an attachment in the data directory")
            failed += 1
    print("all files match" if not failed else f"{failed} failures")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
