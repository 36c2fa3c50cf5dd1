#!/usr/bin/env python3
"""Protocol detection checked against nDPI: every TCP flow of `pcaps/ndpi/*.pcap` that nDPI's
expected output (`<name>.pcap.out`) names with a protocol gaspp detects must have that app_proto in
gaspp's EVE flow record, and every flow gaspp calls one of the protocols it detects without parsing
(smtp, ftp, ssh, smb) must be that protocol in nDPI's eyes too.

nDPI names → Suricata's app_proto: SMTP smtp, FTP_CONTROL ftp, SSH ssh, NetBIOS.SMBv1 and
NetBIOS.SMBv23 smb, HTTP (and its sub-protocols: HTTP.IPP, ...) http, HTTP_Connect http as the
flow's app_proto_orig (a CONNECT tunnel's app_proto is what it carries), TLS (and
TLS.*) tls, DNS (and DNS.*) dns. Not compared: FTP_DATA (Suricata names it ftp-data from the FTP
control flow's PORT/PASV commands, which gaspp does not parse: such flows are "failed" here), and
STARTTLS sessions nDPI calls IMAPS, SMTPS, ... (neither names the plain start a TLS flow).

Where Suricata's patterns say another protocol than nDPI, Suricata's say wins (gaspp detects
as Suricata does): an IRC client's first command may be `USER ...`, which is FTP's pattern
("USER ", app-layer-ftp.c); such flows are allowed to be ftp.

The same for Zeek's SMTP, FTP (IPv6) and SSH captures with tshark's dissectors as the oracle:
a TCP stream whose frames tshark dissects as one of smtp, ftp, ssh, smb/smb2, tls, http must have
that app_proto.

usage: app_proto_vs_ndpi.py GASPP DATA_DIR [--backend cpu|cuda] [--no-tshark]
"""
import ipaddress
import json
import os
import re
import subprocess
import sys
import tempfile

FLOW = re.compile(r"^\s+\d+\s+TCP (\S+):(\d+) (?:<->|->) (\S+):(\d+) .*?\[proto: [\d.]+/([\w.]+)\]")

# nDPI's master protocol (before any '.') or full name → app_proto
NDPI_TO_SURICATA = {"SMTP": "smtp", "FTP_CONTROL": "ftp", "SSH": "ssh", "NetBIOS.SMBv1": "smb",
                    "NetBIOS.SMBv23": "smb", "HTTP": "http", "HTTP_Connect": "http", "TLS": "tls", "DNS": "dns"}
DETECTED_ONLY = {"smtp", "ftp", "ssh", "smb"}
# nDPI protocols whose first bytes are another protocol's Suricata pattern: the app_proto allowed.
SHARED_PATTERNS = {"IRC": {"ftp"}}


def want_of(ndpi_name):
    if ndpi_name in NDPI_TO_SURICATA:
        return NDPI_TO_SURICATA[ndpi_name]
    return NDPI_TO_SURICATA.get(ndpi_name.split(".")[0]) if ndpi_name.split(".")[0] in ("HTTP", "TLS", "DNS") else None


TSHARK_CAPTURES = ["zeek/smtp.pcap", "zeek/ftp-ipv6.pcap", "zeek/tcp-ssh-dups.pcap"]
TSHARK_TO_SURICATA = {"smtp": "smtp", "ftp": "ftp", "ssh": "ssh", "smb": "smb", "smb2": "smb", "tls": "tls", "http": "http"}


def tshark_streams(pcap):
    """tcp stream endpoints → the one app_proto tshark's dissectors name for it (None: none or several)."""
    out = subprocess.run(["tshark", "-r", pcap, "-Y", "tcp", "-T", "fields", "-e", "ip.src", "-e", "ipv6.src", "-e", "tcp.srcport",
                          "-e", "ip.dst", "-e", "ipv6.dst", "-e", "tcp.dstport", "-e", "frame.protocols"],
                         capture_output=True, text=True, check=True).stdout
    seen = {}
    for line in out.splitlines():
        f = line.split("\t")
        if len(f) < 7:
            continue
        a, b = (f[0] or f[1]).split(",")[-1], (f[3] or f[4]).split(",")[-1]
        key = frozenset([(norm(a), int(f[2])), (norm(b), int(f[5]))])
        layers = f[6].split(":")
        after = layers[layers.index("tcp") + 1:] if "tcp" in layers else []
        names = {TSHARK_TO_SURICATA[x] for x in after if x in TSHARK_TO_SURICATA}
        seen.setdefault(key, set()).update(names)
    return {k: next(iter(v)) if len(v) == 1 else None for k, v in seen.items()}


# A CONNECT tunnel's flow: its first protocol (app_proto_orig), by flow ends; its app_proto is the
# tunnel's (Suricata's protocol change).
origs = {}


def gaspp_tcp_protos(gaspp, pcap, backend, d):
    eve = os.path.join(d, "eve.json")
    if os.path.exists(eve):
        os.remove(eve)
    p = subprocess.run([gaspp, "-r", pcap, "--backend", backend, "-q", "--app-layer", "-l", d], capture_output=True, text=True)
    if p.returncode != 0:
        return None, f"gaspp exit {p.returncode}: {p.stderr.strip()}"
    ours = {}
    origs.clear()
    for line in open(eve):
        e = json.loads(line)
        if e.get("event_type") == "flow" and e.get("proto") == "TCP":
            ends = frozenset([(norm(e["src_ip"]), e["src_port"]), (norm(e["dest_ip"]), e["dest_port"])])
            ours[ends] = e.get("app_proto")
            if e.get("app_proto_orig"):
                origs[ends] = e["app_proto_orig"]
    return ours, None


def norm(a):
    try:
        return str(ipaddress.ip_address(a.strip("[]")))
    except ValueError:  # nDPI's IPv6 text is not always valid (flow_vs_oracles.py): kept as text
        return a.strip("[]")


def main():
    args = sys.argv[1:]
    gaspp, data = args[0], args[1]
    backend = args[3] if args[2:3] == ["--backend"] else "cpu"
    use_tshark = "--no-tshark" not in args
    ndir = os.path.join(data, "pcaps", "ndpi")
    if not os.path.isdir(ndir):
        print(f"{ndir} not found")
        return 1
    failures = checked = 0
    with tempfile.TemporaryDirectory() as d:
        for name in sorted(n for n in os.listdir(ndir) if n.endswith((".pcap", ".pcapng"))):
            ndpi = {}
            for line in open(os.path.join(ndir, name + ".out")):
                m = FLOW.match(line)
                if m:
                    a, ap, b, bp, proto = m.groups()
                    ndpi[frozenset([(norm(a), int(ap)), (norm(b), int(bp))])] = proto
            ours, err = gaspp_tcp_protos(gaspp, os.path.join(ndir, name), backend, d)
            if err:
                print(f"FAIL ndpi/{name}: {err}")
                failures += 1
                continue
            bad = []
            for key, proto in ndpi.items():
                want = want_of(proto)
                # nDPI's HTTP_Connect names the proxy's CONNECT: the flow's first protocol (what
                # follows the CONNECT is the tunnel's, TLS here, Suricata's app_proto).
                got = origs.get(key, ours.get(key)) if proto == "HTTP_Connect" else ours.get(key)
                ends = " <-> ".join(f"{a}:{p}" for a, p in sorted(key))
                if want is not None:
                    checked += 1
                    if got != want:
                        bad.append(f"{ends}: nDPI {proto} (app_proto {want}), ours {got}")
                elif got in DETECTED_ONLY and got not in SHARED_PATTERNS.get(proto.split(".")[0], set()):
                    checked += 1
                    bad.append(f"{ends}: ours {got}, nDPI {proto}")
            print(f"{'ok  ' if not bad else 'FAIL'} ndpi/{name}: {len(ndpi)} TCP flows")
            for b in bad:
                print("     " + b)
            failures += bool(bad)
        for rel in TSHARK_CAPTURES if use_tshark else []:
            pcap = os.path.join(data, "pcaps", rel)
            want_all = tshark_streams(pcap)
            ours, err = gaspp_tcp_protos(gaspp, pcap, backend, d)
            bad = [err] if err else []
            for key, want in (want_all.items() if not err else []):
                if want is None:
                    continue
                checked += 1
                if ours.get(key) != want:
                    ends = " <-> ".join(f"{a}:{p}" for a, p in sorted(key))
                    bad.append(f"{ends}: tshark {want}, ours {ours.get(key)}")
            print(f"{'ok  ' if not bad else 'FAIL'} {rel}: {sum(1 for v in want_all.values() if v)} TCP streams tshark names")
            for b in bad:
                print("     " + b)
            failures += bool(bad)
    print(f"{checked} flows compared, {failures} captures failed")
    if checked < 10:
        print("FAIL: fewer than 10 flows compared (nDPI's outputs not read?)")
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
