#!/usr/bin/env python3
"""Mutual TLS end to end: handshakes made by OpenSSL itself (Python's ssl module over memory BIOs:
no network), certificates made with the openssl command, carried on TCP connections built with
scapy and cut into segments of random sizes.

Two TLS 1.2 connections: one whose server asks for a client certificate (CertificateRequest) and
gets one, one whose server asks for none. Checked:
- the EVE tls event of the first has a `client` object whose subject, issuerdn, serial, notbefore
  and notafter equal what `openssl x509` prints of the client certificate, its fingerprint the
  SHA-1 of the DER (hashlib); the server's fields stay the server certificate's;
- the second has no `client` object;
- the tls event is written at the packet that completed the awaited certificate: the client's
  (its Certificate message's last byte) when the server asked for one, else the server's;
- tls.cert_subject / tls.cert_issuer / tls.cert_fingerprint / tls.certs / tls_cert_notafter read
  the client's certificate to the server and the server's to the client: signatures naming the
  client's values alert once with flow:to_server or no direction and never with flow:to_client,
  the server's the other way round; tls.subjectaltname and tls.cert_chain_len read only the
  server's (Suricata's keywords).

usage: tls_mutual.py GASPP [--backend cpu|cuda]
"""
import datetime
import hashlib
import json
import os
import random
import shutil
import ssl
import subprocess
import sys
import tempfile

try:
    from scapy.all import IP, TCP, Ether, Raw, wrpcap
except ImportError:
    print("scapy is not installed (scripts/setup.sh installs it); skipping")
    sys.exit(0)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tls_cases import openssl_fields, sh  # noqa: E402  (the openssl command's fields, as Suricata logs them)


def make_certs(d):
    sh("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
       "ca.key", "-out", "ca.pem", "-subj", "/C=DE/O=Mutual Trust/CN=Mutual Root CA", "-days", "3650", cwd=d)
    for name, subj, serial in (("srv", "/C=US/O=Server Org/CN=api.example.net", "0x51"),
                               ("cli", "/C=FR/O=Client Org/OU=Devices/CN=device-0042", "0x9A3C77")):
        sh("openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
           name + ".key", "-out", name + ".csr", "-subj", subj, cwd=d)
        with open(os.path.join(d, name + ".cnf"), "w") as f:
            f.write("subjectAltName=DNS:" + ("api.example.net" if name == "srv" else "device-0042.example.net") + "\n")
        sh("openssl", "x509", "-req", "-in", name + ".csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-set_serial",
           serial, "-days", "30" if name == "srv" else "90", "-extfile", name + ".cnf", "-out", name + ".pem", cwd=d)


def handshake(d, ask):
    """A TLS 1.2 handshake between OpenSSL client and server objects: the flights in order, each
    (0 client / 1 server, bytes)."""
    sctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    sctx.maximum_version = ssl.TLSVersion.TLSv1_2
    sctx.load_cert_chain(os.path.join(d, "srv.pem"), os.path.join(d, "srv.key"))
    if ask:
        sctx.verify_mode = ssl.CERT_REQUIRED
        sctx.load_verify_locations(os.path.join(d, "ca.pem"))
    cctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    cctx.maximum_version = ssl.TLSVersion.TLSv1_2
    cctx.check_hostname = False
    cctx.verify_mode = ssl.CERT_NONE
    cctx.load_cert_chain(os.path.join(d, "cli.pem"), os.path.join(d, "cli.key"))
    bio = [(ssl.MemoryBIO(), ssl.MemoryBIO()) for _ in range(2)]  # (incoming, outgoing) per side
    cli = cctx.wrap_bio(bio[0][0], bio[0][1], server_hostname="api.example.net")
    srv = sctx.wrap_bio(bio[1][0], bio[1][1], server_side=True)
    flights, done = [], [False, False]
    for _ in range(20):
        for side, obj in ((0, cli), (1, srv)):
            if not done[side]:
                try:
                    obj.do_handshake()
                    done[side] = True
                except ssl.SSLWantReadError:
                    pass
            out = bio[side][1].read()
            if out:
                flights.append((side, out))
                bio[1 - side][0].write(out)
        if all(done) and not bio[0][1].pending and not bio[1][1].pending:
            break
    assert all(done), "the handshake did not finish"
    # Some application data each way, as a connection goes on.
    for side, obj in ((0, cli), (1, srv)):
        obj.write(b"hello from " + (b"client" if side == 0 else b"server"))
        flights.append((side, bio[side][1].read()))
    return flights


def tls_message_end(data, msg_type):
    """The offset just past the first handshake message of msg_type in a flight (records walked,
    the message gathered across them), or None."""
    hs, ends, off = b"", [], 0
    while off + 5 <= len(data):
        n = int.from_bytes(data[off + 3:off + 5], "big")
        if data[off] == 22:
            for i in range(n):
                ends.append(off + 5 + i + 1)
            hs += data[off + 5:off + 5 + n]
        off += 5 + n
    at = 0
    while at + 4 <= len(hs):
        ln = int.from_bytes(hs[at + 1:at + 4], "big")
        if hs[at] == msg_type:
            return ends[at + 4 + ln - 1]
        at += 4 + ln
    return None


def build(path, conns, rng):
    """The connections one after the other; returns, per connection, the packet number (pcap_cnt)
    whose payload completed the awaited certificate message."""
    pkts, t, marks = [], [1700000000.0], []

    def add(p):
        t[0] += 0.001
        p.time = t[0]
        pkts.append(p)

    for k, (flights, ask) in enumerate(conns):
        c = Ether() / IP(src="10.4.0.1", dst="10.4.0.2")
        s = Ether() / IP(src="10.4.0.2", dst="10.4.0.1")
        cp, seq = 51000 + k, [1000, 70000]
        add(c / TCP(sport=cp, dport=443, flags="S", seq=seq[0]))
        add(s / TCP(sport=443, dport=cp, flags="SA", seq=seq[1], ack=seq[0] + 1))
        seq = [seq[0] + 1, seq[1] + 1]
        add(c / TCP(sport=cp, dport=443, flags="A", seq=seq[0], ack=seq[1]))
        mark = None
        for side, data in flights:
            # The awaited certificate: the client's (second client flight) or the server's.
            want = 11 if (side == 0) == ask else None
            end = tls_message_end(data, 11) if want and mark is None else None
            off = 0
            while off < len(data):
                n = rng.choice([1, 3, 17, 200, 600, 1400])
                seg = data[off:off + n]
                src, sp, dp = (c, cp, 443) if side == 0 else (s, 443, cp)
                add(src / TCP(sport=sp, dport=dp, flags="PA", seq=seq[side], ack=seq[1 - side]) / Raw(seg))
                if end is not None and mark is None and off < end <= off + len(seg):
                    mark = len(pkts)
                seq[side] += len(seg)
                off += len(seg)
        add(c / TCP(sport=cp, dport=443, flags="FA", seq=seq[0], ack=seq[1]))
        add(s / TCP(sport=443, dport=cp, flags="FA", seq=seq[1], ack=seq[0] + 1))
        add(c / TCP(sport=cp, dport=443, flags="A", seq=seq[0] + 1, ack=seq[1] + 1))
        marks.append(mark)
    wrpcap(path, pkts)
    return marks


def main():
    gaspp = sys.argv[1]
    backend = sys.argv[sys.argv.index("--backend") + 1] if "--backend" in sys.argv else "cpu"
    if not shutil.which("openssl"):
        print("the openssl command is not installed; skipping")
        return 0
    fails = []
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as d:
        make_certs(d)
        want = {}
        for name in ("srv", "cli"):
            f = openssl_fields(os.path.join(d, name + ".pem"))
            der = sh("openssl", "x509", "-in", name + ".pem", "-outform", "DER", cwd=d)
            sha = hashlib.sha1(der).hexdigest()
            f["fingerprint"] = ":".join(sha[i:i + 2] for i in range(0, len(sha), 2))
            f["der"] = der
            want[name] = f
        conns = [(handshake(d, True), True), (handshake(d, False), False)]
        pcap = os.path.join(d, "mutual.pcap")
        marks = build(pcap, conns, rng)
        cli, srv = want["cli"], want["srv"]
        cli_cn, srv_cn = cli["subject"].split("CN=")[-1], srv["subject"].split("CN=")[-1]
        # A day after the server certificate's end: before the client's (90 days against 30).
        after_srv = (datetime.datetime.strptime(srv["notafter"], "%Y-%m-%dT%H:%M:%S") +
                     datetime.timedelta(days=1)).strftime("%Y-%m-%d")
        # sid: (rule body, expected alert count); connection 1 has the client certificate.
        cases = {
            1: (f'flow:to_server; tls.cert_subject; content:"CN={cli_cn}";', 1),
            2: (f'flow:to_client; tls.cert_subject; content:"CN={cli_cn}";', 0),
            3: (f'tls.cert_subject; content:"CN={cli_cn}";', 1),
            4: (f'flow:to_client; tls.cert_subject; content:"CN={srv_cn}";', 2),
            5: (f'flow:to_server; tls.cert_subject; content:"CN={srv_cn}";', 0),
            6: (f'tls.cert_issuer; content:"Mutual Root CA";', 3),  # both sides of 1, the server of 2
            7: (f'tls.cert_fingerprint; content:"{cli["fingerprint"]}";', 1),
            8: (f'flow:to_server; tls.cert_serial; content:"{cli["serial"]}";', 1),
            9: ('flow:to_server; tls.certs; content:"device-0042";', 1),
            10: ('flow:to_client; tls.certs; content:"device-0042";', 0),
            11: ('tls.subjectaltname; content:"device-0042";', 0),
            12: ('tls.subjectaltname; content:"api.example.net";', 2),
            13: ('flow:to_server; tls.cert_chain_len:>0;', 0),
            14: ('flow:to_client; tls.cert_chain_len:>0;', 2),
            # The client's certificate is valid for 90 days, the server's for 30.
            15: (f'flow:to_client; tls_cert_notafter:>{after_srv};', 0),
            17: (f'flow:to_server; tls_cert_notafter:>{after_srv};', 1),
            16: ('flow:to_server; tls_cert_notafter:<2100-01-01;', 1),
        }
        rules = os.path.join(d, "m.rules")
        with open(rules, "w") as f:
            for sid, (body, _) in cases.items():
                f.write(f'alert tls any any -> any any (msg:"m{sid}"; {body} sid:{sid};)\n')
        out = os.path.join(d, "out")
        os.mkdir(out)
        p = subprocess.run([gaspp, "-r", pcap, "--backend", backend, "-S", rules, "-l", out, "-q"],
                           capture_output=True, text=True)
        if p.returncode != 0 or "rule skipped" in p.stderr:
            print(p.stderr)
            return 1
        events = [json.loads(line) for line in open(os.path.join(out, "eve.json"))]
        tls = [e for e in events if e["event_type"] == "tls"]
        if len(tls) != 2:
            fails.append(f"{len(tls)} tls events, want 2")
        else:
            for k, e in enumerate(tls):
                for key in ("subject", "issuerdn", "serial", "fingerprint", "notbefore", "notafter"):
                    if e["tls"].get(key) != srv[key]:
                        fails.append(f"connection {k + 1}: tls.{key} {e['tls'].get(key)!r}, want the server's {srv[key]!r}")
                if e.get("pcap_cnt") != marks[k]:
                    fails.append(f"connection {k + 1}: tls event at packet {e.get('pcap_cnt')}, want {marks[k]} "
                                 "(the awaited certificate's last byte)")
            client = tls[0]["tls"].get("client")
            if client is None:
                fails.append("connection 1: no tls.client")
            else:
                for key in ("subject", "issuerdn", "serial", "fingerprint", "notbefore", "notafter"):
                    if client.get(key) != cli[key]:
                        fails.append(f"tls.client.{key} {client.get(key)!r}, want {cli[key]!r}")
            if "client" in tls[1]["tls"]:
                fails.append("connection 2 (no certificate asked): tls.client present")
        for sid, (body, n) in cases.items():
            got = sum(1 for e in events if e["event_type"] == "alert" and e["alert"]["signature_id"] == sid)
            if got != n:
                fails.append(f"sid {sid} ({body}): {got} alerts, want {n}")
    for f in fails:
        print("FAIL", f)
    print(f"{len(cases)} signatures, 2 connections: " + ("OK" if not fails else f"{len(fails)} failures"))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
