#!/usr/bin/env python3
"""TLS certificates end to end: a CA and a server certificate made with the openssl command, sent
in a TLS 1.2 handshake (ClientHello with a server name; ServerHello, Certificate with the chain of
two cut over two records, ServerHelloDone) on a TCP connection built with scapy, segments cut at
random sizes.

Checked:
- the EVE tls event's subject, issuerdn, serial, notbefore and notafter equal what `openssl x509`
  prints of the server certificate (names as "C=US, O=..., CN=..."), its fingerprint the SHA-1
  of the DER (hashlib), sni the name sent;
- JA3 and JA3S: signatures on ja3.hash / ja3.string / ja3s.hash / ja3s.string with the values
  tshark computes (tls.handshake.ja3, ja3_full, ja3s, ja3s_full) alert (where tshark is installed);
  the ClientHello carries GREASE values, supported groups and point formats;
- alerts of the certificate buffers (tls.cert_subject, tls.cert_issuer, tls.cert_serial,
  tls.cert_fingerprint, tls.certs: bytes only the CA's certificate holds, the multi-buffer's
  second instance) and of tls.sni with dotprefix: each once, at the connection; signatures whose
  content is not there: none;
- the tls event's subjectaltname (DNS names and an IP address as Suricata writes them) and
  client_alpns / server_alpns as built; signatures on tls.subjectaltname, tls.alpn, tls.random,
  tls.random_time, tls.random_bytes, tls.cert_chain_len, the legacy tls.subject / tls.issuerdn /
  tls.fingerprint (upper case) and tls_cert_notbefore / tls_cert_notafter against the dates
  openssl gave the certificate: those that hold alert, the others do not; tls_cert_valid alerts on
  the capture (from 2023, before the certificate's notAfter) and tls_cert_expired does not, the
  other way round on the same capture moved to 40 days from now (past its 30 days); ssl_version
  per direction, lists and negation (`alert tcp` signatures: the keyword makes them TLS ones);
- tls.version per direction (the ClientHello's version to the server, the ServerHello's to the
  client; 1.2 and the raw 0x0303 match, 1.3 does not);
- payload contents on `alert tls` signatures (no buffer) inspect each direction's bytes as sent,
  record headers included: bytes across the Certificate's two records with the second record's
  header between them match, the same handshake bytes without that header do not.

usage: tls_cases.py GASPP [--backend cpu|cuda]
"""
import datetime
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

try:
    from scapy.all import IP, TCP, Ether, Raw, wrpcap
except ImportError:
    print("scapy is not installed (scripts/setup.sh installs it); skipping")
    sys.exit(0)


def sh(*args, cwd=None):
    return subprocess.run(args, cwd=cwd, capture_output=True, check=True).stdout


def make_certs(d):
    """The CA's and the server's certificates (DER) and the server certificate's PEM."""
    sh("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
       "ca.key", "-out", "ca.pem", "-subj", "/C=DE/O=Example Trust/CN=Example Root CA", "-days", "3650",
       "-set_serial", "5", cwd=d)
    sh("openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
       "srv.key", "-out", "srv.csr", "-subj", "/C=US/ST=California/O=Example Org/CN=www.example.org", cwd=d)
    with open(os.path.join(d, "san.cnf"), "w") as f:
        f.write("subjectAltName=" + ",".join(SANS_WRITTEN) + "\n")
    sh("openssl", "x509", "-req", "-in", "srv.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-set_serial",
       "0x8001AB", "-days", "30", "-extfile", "san.cnf", "-out", "srv.pem", cwd=d)
    srv = sh("openssl", "x509", "-in", "srv.pem", "-outform", "DER", cwd=d)
    ca = sh("openssl", "x509", "-in", "ca.pem", "-outform", "DER", cwd=d)
    return srv, ca, os.path.join(d, "srv.pem")


# The server certificate's subjectAltName as written, and as Suricata writes it (DNS names as text,
# an IP address as Rust prints a byte list).
SANS_WRITTEN = ["DNS:www.example.org", "DNS:api.example.org", "IP:192.0.2.7"]
SANS_EVE = ["www.example.org", "api.example.org", "[192, 0, 2, 7]"]
CLIENT_ALPNS, SERVER_ALPNS = ["h2", "http/1.1"], ["http/1.1"]


def alpn_ext(names):
    body = b"".join(bytes([len(n)]) + n.encode() for n in names)
    return b"\x00\x10" + u16(len(body) + 2) + u16(len(body)) + body


def u16(n):
    return n.to_bytes(2, "big")


def u24(n):
    return n.to_bytes(3, "big")


def record(body):
    return b"\x16\x03\x03" + u16(len(body)) + body


def handshake(t, body):
    return bytes([t]) + u24(len(body)) + body


def build(path, srv, ca, sni):
    name = b"\x00" + u16(len(sni)) + sni
    exts = b"\x2a\x2a\x00\x00"                                             # GREASE, empty
    exts += b"\x00\x00" + u16(len(name) + 2) + u16(len(name)) + name          # server_name
    exts += b"\x00\x0a\x00\x08\x00\x06\x3a\x3a\x00\x1d\x00\x17"            # groups: GREASE, x25519, P-256
    exts += b"\x00\x0b\x00\x02\x01\x00"                                     # point formats: uncompressed
    exts += alpn_ext(CLIENT_ALPNS)
    suites = b"\x0a\x0a\xc0\x2f\xc0\x30\x00\x9c"                             # GREASE and three suites
    ch = b"\x03\x03" + b"r" * 32 + b"\x00" + u16(len(suites)) + suites + b"\x01\x00" + u16(len(exts)) + exts
    client = record(handshake(1, ch))
    sh_ext = b"\xff\x01\x00\x01\x00" + alpn_ext(SERVER_ALPNS)                # renegotiation_info, ALPN
    sh_msg = handshake(2, b"\x03\x03" + b"s" * 32 + b"\x00" + b"\xc0\x2f\x00" + u16(len(sh_ext)) + sh_ext)
    chain = u24(len(srv)) + srv + u24(len(ca)) + ca
    cert_msg = handshake(11, u24(len(chain)) + chain)
    half = len(cert_msg) // 2
    server = record(sh_msg) + record(cert_msg[:half]) + record(cert_msg[half:]) + record(handshake(14, b""))
    pkts, t = [], [1700000000.0]

    def add(p):
        t[0] += 0.001
        p.time = t[0]
        pkts.append(p)

    c, s = Ether() / IP(src="10.3.0.1", dst="10.3.0.2"), Ether() / IP(src="10.3.0.2", dst="10.3.0.1")
    isn, rsn = 7000, 90000
    add(c / TCP(sport=50000, dport=443, flags="S", seq=isn))
    add(s / TCP(sport=443, dport=50000, flags="SA", seq=rsn, ack=isn + 1))
    add(c / TCP(sport=50000, dport=443, flags="A", seq=isn + 1, ack=rsn + 1))
    add(c / TCP(sport=50000, dport=443, flags="PA", seq=isn + 1, ack=rsn + 1) / Raw(client))
    cseq = isn + 1 + len(client)
    add(s / TCP(sport=443, dport=50000, flags="A", seq=rsn + 1, ack=cseq))
    off = 0
    for n in (7, 1, 100, 300, 5, 4000):  # the rest in one
        seg = server[off:off + n] if n != 4000 else server[off:]
        if not seg:
            break
        add(s / TCP(sport=443, dport=50000, flags="PA", seq=rsn + 1 + off, ack=cseq) / Raw(seg))
        off += len(seg)
        add(c / TCP(sport=50000, dport=443, flags="A", seq=cseq, ack=rsn + 1 + off))
    while off < len(server):
        seg = server[off:off + 1400]
        add(s / TCP(sport=443, dport=50000, flags="PA", seq=rsn + 1 + off, ack=cseq) / Raw(seg))
        off += len(seg)
        add(c / TCP(sport=50000, dport=443, flags="A", seq=cseq, ack=rsn + 1 + off))
    add(c / TCP(sport=50000, dport=443, flags="FA", seq=cseq, ack=rsn + 1 + off))
    add(s / TCP(sport=443, dport=50000, flags="FA", seq=rsn + 1 + off, ack=cseq + 1))
    add(c / TCP(sport=50000, dport=443, flags="A", seq=cseq + 1, ack=rsn + 2 + off))
    wrpcap(path, pkts)
    return cert_msg, half, server


def openssl_fields(pem):
    out = sh("openssl", "x509", "-in", pem, "-noout", "-subject", "-issuer", "-serial", "-startdate", "-enddate",
             "-nameopt", "sep_comma_plus_space,sname,utf8").decode()
    f = {}
    for line in out.splitlines():
        k, v = line.split("=", 1)
        f[k.strip()] = v.strip()
    serial = f["serial"]
    if len(serial) % 2:
        serial = "0" + serial
    if int(serial[0], 16) >= 8:
        serial = "00" + serial  # the DER content octets of a positive integer with its high bit set
    when = lambda v: datetime.datetime.strptime(v, "%b %d %H:%M:%S %Y %Z").strftime("%Y-%m-%dT%H:%M:%S")
    return {"subject": f["subject"], "issuerdn": f["issuer"],
            "serial": ":".join(serial[i:i + 2] for i in range(0, len(serial), 2)),
            "notbefore": when(f["notBefore"]), "notafter": when(f["notAfter"])}


NEW_ALERTS = []


def run(gaspp, backend, pcap, rules, out):
    """gaspp on the capture: its EVE events, or None when it failed (its stderr printed)."""
    os.mkdir(out)
    p = subprocess.run([gaspp, "-r", pcap, "--backend", backend, "-S", rules, "-l", out, "-q"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        print(p.stderr)
        return None
    return [json.loads(l) for l in open(os.path.join(out, "eve.json"))]


def main():
    gaspp = sys.argv[1]
    backend = sys.argv[sys.argv.index("--backend") + 1] if "--backend" in sys.argv else "cpu"
    if not shutil.which("openssl"):
        print("the openssl command is not installed; skipping")
        return 0
    fails = []
    with tempfile.TemporaryDirectory() as d:
        srv, ca, pem = make_certs(d)
        want = openssl_fields(pem)
        sha = hashlib.sha1(srv).hexdigest()
        want["fingerprint"] = ":".join(sha[i:i + 2] for i in range(0, len(sha), 2))
        want["sni"] = "www.example.org"
        want["subjectaltname"] = SANS_EVE
        want["client_alpns"], want["server_alpns"] = CLIENT_ALPNS, SERVER_ALPNS
        pcap = os.path.join(d, "tls.pcap")
        cert_msg, half, server = build(pcap, srv, ca, want["sni"].encode())
        rules = os.path.join(d, "tls.rules")
        cn = want["subject"].split("CN=")[-1]
        with open(rules, "w") as f:
            f.write(f'alert tls any any -> any any (msg:"subject"; tls.cert_subject; content:"CN={cn}"; sid:1;)\n')
            f.write('alert tls any any -> any any (msg:"issuer"; tls.cert_issuer; content:"Example Root CA"; sid:2;)\n')
            f.write(f'alert tls any any -> any any (msg:"serial"; tls.cert_serial; content:"{want["serial"]}"; sid:3;)\n')
            f.write(f'alert tls any any -> any any (msg:"fingerprint"; tls.cert_fingerprint; '
                    f'content:"{want["fingerprint"]}"; sid:4;)\n')
            # 16 bytes of the CA's certificate (its key) that the server's does not hold.
            only_ca = next(ca[i:i + 16] for i in range(len(ca) - 40, 0, -1) if ca[i:i + 16] not in srv)
            f.write('alert tls any any -> any any (msg:"chain"; flow:to_client; tls.certs; content:"|%s|"; sid:5;)\n'
                    % only_ca.hex(" "))
            f.write('alert tls any any -> any any (msg:"sni dotprefix"; tls.sni; dotprefix; content:".example.org"; '
                    'endswith; sid:6;)\n')
            f.write('alert tls any any -> any any (msg:"not there"; tls.cert_subject; content:"CN=other"; sid:7;)\n')
            f.write('alert tls any any -> any any (msg:"not a subdomain"; tls.sni; dotprefix; content:".ample.org"; '
                    'endswith; sid:8;)\n')
            f.write('alert tls any any -> any any (msg:"client version"; flow:to_server; tls.version:1.2; sid:9;)\n')
            f.write('alert tls any any -> any any (msg:"server version"; flow:to_client; tls.version:1.2; sid:10;)\n')
            f.write('alert tls any any -> any any (msg:"not 1.3"; tls.version:1.3; sid:11;)\n')
            f.write('alert tls any any -> any any (msg:"raw version"; flow:to_server; tls.version:0x0303; sid:12;)\n')
            f.write('alert tls any any -> any any (msg:"server hello suite"; flow:to_client; content:"|00 c0 2f 00|"; '
                    'sid:13;)\n')
            across = cert_msg[half - 4:half] + b"\x16\x03\x03"
            f.write('alert tls any any -> any any (msg:"across records"; flow:to_client; content:"|%s|"; sid:14;)\n'
                    % across.hex(" "))
            # Handshake bytes around the cut that occur nowhere in the bytes as sent (the server's
            # certificate repeats the CA's name, so the window widens until they are unique).
            w = 4
            while cert_msg[half - w:half + w] in server:
                w += 4
            f.write('alert tls any any -> any any (msg:"handshake bytes only"; content:"|%s|"; sid:15;)\n'
                    % cert_msg[half - w:half + w].hex(" "))
            f.write('alert tls any any -> any any (msg:"client suites"; flow:to_server; content:"|0a 0a c0 2f c0 30|"; '
                    'sid:16;)\n')
            # subjectAltName, ALPN and random (multi-buffers matched at any of their instances, two
            # of them in one signature each at its own), the chain's length, the legacy
            # tls.subject / tls.issuerdn / tls.fingerprint, the validity dates. Each (rule, alert?).
            fp_upper = want["fingerprint"].upper()
            year = datetime.datetime.now(datetime.timezone.utc).year
            for sid, (opts, alerts) in enumerate([
                    ('tls.subjectaltname; content:"api.example.org"; bsize:15;', True),
                    ('tls.subjectaltname; content:"[192, 0, 2, 7]";', True),
                    ('tls.subjectaltname; content:"other.example";', False),
                    ('flow:to_server; tls.alpn; content:"h2"; bsize:2;', True),
                    ('flow:to_client; tls.alpn; content:"h2";', False),
                    ('tls.subjectaltname; content:"api.example.org"; tls.alpn; content:"http/1.1"; bsize:8;', True),
                    ('flow:to_server; tls.random; content:"rrrr"; tls.random_time; content:"rrrr"; bsize:4;', True),
                    ('flow:to_client; tls.random_bytes; content:"ssss"; bsize:28;', True),
                    ('tls.cert_chain_len:2;', True),
                    ('tls.cert_chain_len:>2;', False),
                    ('tls.subject:"CN=www.example.org";', True),
                    ('tls.subject:!"CN=www.example.org";', False),
                    ('tls.issuerdn:"O=Example Trust";', True),
                    (f'tls.fingerprint:"{fp_upper}";', True),
                    (f'tls_cert_notbefore:>{year - 1};', True),
                    ('tls_cert_notafter:<2000-01-01;', False),
                    (f'tls_cert_notafter:{year - 1}-01-01<>{year + 2}-01-01;', True),
            ], start=30):
                f.write(f'alert tls any any -> any any (msg:"{sid}"; {opts} sid:{sid};)\n')
                if alerts:
                    NEW_ALERTS.append(sid)
        ja3 = {}
        if shutil.which("tshark"):
            t = subprocess.run(["tshark", "-r", pcap, "-Y", "tls.handshake.type == 1 || tls.handshake.type == 2", "-T",
                                "fields", "-e", "tls.handshake.ja3", "-e", "tls.handshake.ja3_full",
                                "-e", "tls.handshake.ja3s", "-e", "tls.handshake.ja3s_full"],
                               capture_output=True, text=True).stdout
            for line in t.splitlines():
                f = line.split("\t")
                if f[0]:
                    ja3["ja3.hash"], ja3["ja3.string"] = f[0], f[1]
                if len(f) > 2 and f[2]:
                    ja3["ja3s.hash"], ja3["ja3s.string"] = f[2], f[3]
        with open(rules, "a") as f:
            for k, (buf, v) in enumerate(sorted(ja3.items())):
                f.write(f'alert tls any any -> any any (msg:"{buf}"; {buf}; content:"{v}"; bsize:{len(v)}; sid:{20 + k};)\n')
        events = run(gaspp, backend, pcap, rules, os.path.join(d, "out"))
        if events is None:
            return 1
        # The certificate's validity against the packets' time, in a run of their own (the
        # certificate's packet has Suricata's 15 alerts already): the capture is from 2023,
        # before the notAfter (tls_cert_valid); the same capture 40 days after now is past it
        # (30 days: tls_cert_expired).
        validity = os.path.join(d, "validity.rules")
        with open(validity, "w") as f:
            f.write('alert tls any any -> any any (msg:"valid"; tls_cert_valid; sid:1;)\n'
                    'alert tls any any -> any any (msg:"expired"; tls_cert_expired; sid:2;)\n'
                    # ssl_version: each direction's hello is TLS 1.2
                    'alert tcp any any -> any any (msg:"client 1.2"; flow:to_server; ssl_version:tls1.2; sid:3;)\n'
                    'alert tcp any any -> any any (msg:"not 1.2"; ssl_version:!tls1.2; sid:4;)\n'
                    'alert tcp any any -> any any (msg:"old"; ssl_version:sslv3,TLS1.0; sid:5;)\n'
                    'alert tcp any any -> any any (msg:"server"; flow:to_client; ssl_version:tls1.1 tls1.2; sid:6;)\n'
                    'alert tcp any any -> any any (msg:"not 1.3"; flow:to_client; ssl_version:!tls1.3; sid:7;)\n')
        events_valid = run(gaspp, backend, pcap, validity, os.path.join(d, "out-valid"))
        from scapy.all import rdpcap, wrpcap
        late = rdpcap(pcap)
        shift = datetime.datetime.now(datetime.timezone.utc).timestamp() + 40 * 86400 - float(late[0].time)
        for pk in late:
            pk.time = float(pk.time) + shift
        pcap_late = os.path.join(d, "tls-late.pcap")
        wrpcap(pcap_late, late)
        events_late = run(gaspp, backend, pcap_late, validity, os.path.join(d, "out-late"))
        if events_valid is None or events_late is None:
            return 1
    tls = [e for e in events if e["event_type"] == "tls"]
    if len(tls) != 1:
        fails.append(f"{len(tls)} tls events, want 1")
    else:
        for k, v in want.items():
            if tls[0]["tls"].get(k) != v:
                fails.append(f"tls.{k}: gaspp {tls[0]['tls'].get(k)!r}, openssl {v!r}")
    alerts = sorted(e["alert"]["signature_id"] for e in events if e["event_type"] == "alert")
    want_alerts = sorted([1, 2, 3, 4, 5, 6, 9, 10, 12, 13, 14, 16] + [20 + k for k in range(len(ja3))] + NEW_ALERTS)
    if alerts != want_alerts:
        fails.append(f"alerts {alerts}, want {want_alerts} (20 and up: JA3/JA3S as tshark computes them: {ja3})")
    for name, evs, want_sids in (("the capture", events_valid, [1, 3, 6, 7]), ("40 days from now", events_late, [2, 3, 6, 7])):
        got = sorted(e["alert"]["signature_id"] for e in evs if e["event_type"] == "alert")
        if got != want_sids:
            fails.append(f"validity, {name}: alerts {got}, want {want_sids} (1 tls_cert_valid, 2 tls_cert_expired, "
                         "3.. ssl_version)")
    for f in fails:
        print("FAIL", f)
    print(f"tls event fields compared with openssl: {len(want)}, alerts {alerts}, {len(fails)} problems")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
