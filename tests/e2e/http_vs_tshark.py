#!/usr/bin/env python3
"""EVE http, tls and dns events against tshark: every capture under DATA_DIR/pcaps is run with `--app-layer -l`,
and for each TCP connection gaspp parsed as HTTP, its events' (method, url) in order must
equal what tshark's HTTP dissector finds in that connection (http.request.method,
http.request.uri). Connections whose requests name another protocol (RTSP: Suricata's probe
takes them for HTTP, as gaspp's does) are left out. tshark is told to
dissect HTTP on the server ports gaspp found it on (gaspp detects by content, tshark by port).

Connections tshark finds requests (or a ClientHello's server name) in that gaspp did not parse
are listed, not failed: a capture that missed a connection's start, data that is not HTTP/1 at
its start, TLS inside an HTTP CONNECT tunnel (gaspp does not hand a tunnel back to protocol
detection yet).

TLS: for each connection with a tls event, its `sni` must equal tshark's
tls.handshake.extensions_server_name of the connection's ClientHello (connections tshark sees a
server name in and gaspp has no event for are listed as above); where tshark sees the server's
Certificate, the event's `fingerprint` must be the SHA-1 of tshark's first certificate
(tls.handshake.certificate, hashed here with hashlib) and its `serial` tshark's x509af.serialNumber.
DNS: for each dns event (UDP or TCP, port 53), its queries' names must equal tshark's dns.qry.name
of the same frame, and the message kind (request/response) its dns.flags.response; DNS messages
tshark finds on port 53 that have no event are failures too, unless tshark marks the frame
malformed (gaspp counts those as dns_malformed / dns_header_invalid, as Suricata does).
Every http, tls and dns event must also carry the fields the EVE schema requires of it (checked by
e2e_eve_schema for the captures there).

usage: http_vs_tshark.py GASPP DATA_DIR
"""
import collections
import glob
import json
import os
import subprocess
import sys
import tempfile


def flow_key(a, ap, b, bp):
    return tuple(sorted([(a, int(ap)), (b, int(bp))]))


def gaspp_txs(gaspp, pcap):
    with tempfile.TemporaryDirectory() as d:
        p = subprocess.run([gaspp, "-r", pcap, "--backend", "cpu", "--app-layer", "-l", d, "-q",
                            "--flow-capacity", "65536"], capture_output=True, text=True)
        if p.returncode != 0:
            return None, p.stderr.strip().splitlines()[-1] if p.stderr.strip() else str(p.returncode)
        txs = collections.defaultdict(list)
        snis = {}
        dns = {}
        with open(os.path.join(d, "eve.json")) as f:
            for line in f:
                e = json.loads(line)
                if e.get("event_type") == "tls":
                    k = flow_key(e["src_ip"], e["src_port"], e["dest_ip"], e["dest_port"])
                    snis[k] = e["tls"].get("sni", "")
                    snis[("cert",) + k] = (e["tls"].get("fingerprint"), e["tls"].get("serial"))
                if e.get("event_type") == "dns":
                    q = e["dns"].get("queries", [])
                    dns.setdefault(e["pcap_cnt"], []).append((e["dns"]["type"], [x["rrname"] for x in q]))
                if e.get("event_type") != "http":
                    continue
                h = e["http"]
                k = flow_key(e["src_ip"], e["src_port"], e["dest_ip"], e["dest_port"])
                txs[k].append((e["tx_id"], h.get("http_method", ""), h.get("url", ""), h.get("protocol", ""),
                               e["dest_port"]))
        for k in txs:
            txs[k].sort()
        txs["__tls__"] = snis
        txs["__dns__"] = dns
        return txs, ""


def norm_addr(a):
    # tshark prints IPv6 shortened; EVE writes all eight groups.
    if ":" in a:
        import ipaddress
        return ipaddress.ip_address(a).exploded
    return a


def tshark_txs(pcap, ports):
    args = ["tshark", "-r", pcap, "-o", "tcp.desegment_tcp_streams:TRUE", "-o", "http.desegment_body:TRUE",
            "-Y", "http.request", "-T", "fields", "-E", "separator=\t",
            "-e", "ip.src", "-e", "ipv6.src", "-e", "tcp.srcport", "-e", "ip.dst", "-e", "ipv6.dst", "-e", "tcp.dstport",
            "-e", "http.request.method", "-e", "http.request.uri", "-e", "tcp.stream"]
    for port in sorted(ports):
        args[3:3] = ["-d", f"tcp.port=={port},http"]
    p = subprocess.run(args, capture_output=True, text=True)
    txs = collections.defaultdict(list)
    for line in p.stdout.splitlines():
        f = line.split("\t")
        if len(f) < 9:
            continue
        src = (f[0] or f[1]).split(",")[-1]
        dst = (f[3] or f[4]).split(",")[-1]
        for method, uri in zip(f[6].split(","), f[7].split(",")):
            txs[flow_key(norm_addr(src), f[2], norm_addr(dst), f[5])].append((method, uri))
    return txs


def tshark_other(pcap):
    """One tshark pass for TLS and DNS: ClientHello server names and the server's first certificate
    (SHA-1, serial as EVE writes it) per connection; DNS messages on port 53 per frame, and the
    frames tshark marks malformed."""
    import hashlib
    p = subprocess.run(["tshark", "-r", pcap, "-Y",
                        "tls.handshake.type == 1 || tls.handshake.type == 11 || (dns && (udp.port == 53 || tcp.port == 53))",
                        "-T", "fields", "-E", "separator=\t", "-E", "occurrence=a",
                        "-e", "ip.src", "-e", "ipv6.src", "-e", "tcp.srcport", "-e", "ip.dst", "-e", "ipv6.dst",
                        "-e", "tcp.dstport", "-e", "tls.handshake.type", "-e", "tls.handshake.extensions_server_name",
                        "-e", "tls.handshake.certificate", "-e", "x509af.serialNumber", "-e", "frame.number",
                        "-e", "dns.flags.response", "-e", "dns.qry.name", "-e", "_ws.malformed",
                        "-e", "dns.count.queries"], capture_output=True, text=True)
    snis, certs, dns, bad = {}, {}, {}, set()
    for line in p.stdout.splitlines():
        f = line.split("\t")
        if len(f) < 15:
            continue
        if f[11]:  # a DNS message
            frame = int(f[10])
            if f[13]:
                bad.add(frame)
                continue
            counts = [int(c) for c in f[14].split(",") if c]
            names = f[12].split(",") if f[12] else []
            msgs, at = [], 0
            for kind, n in zip(f[11].split(","), counts):  # a TCP segment may complete several messages
                msgs.append(("response" if kind in ("1", "True") else "request", names[at:at + n]))
                at += n
            dns[frame] = msgs
            continue
        if not f[2]:
            continue
        src = (f[0] or f[1]).split(",")[-1]
        dst = (f[3] or f[4]).split(",")[-1]
        k = flow_key(norm_addr(src.split(",")[0]), f[2].split(",")[0], norm_addr(dst.split(",")[0]), f[5].split(",")[0])
        types = f[6].split(",")
        if "1" in types:
            snis.setdefault(k, f[7].split(",")[0])
        if "11" in types and f[8]:
            der = bytes.fromhex(f[8].split(",")[0].replace(":", ""))
            sha = hashlib.sha1(der).hexdigest()
            serial = f[9].split(",")[0].replace(":", "").upper()
            certs.setdefault(k, (":".join(sha[i:i + 2] for i in range(0, len(sha), 2)),
                                 ":".join(serial[i:i + 2] for i in range(0, len(serial), 2))))
    return snis, certs, dns, bad


def main():
    gaspp, data = sys.argv[1:3]
    pcaps = sorted(glob.glob(os.path.join(data, "pcaps", "**", "*.pcap*"), recursive=True))
    pcaps = [p for p in pcaps if not p.endswith(".out")]
    fails, compared, flows, left = [], 0, 0, []
    tls_flows = [0]
    dns_msgs = [0]
    tls_certs = [0]
    for pcap in pcaps:
        ours, why = gaspp_txs(gaspp, pcap)
        if ours is None:
            fails.append(f"{pcap}: gaspp failed: {why}")
            continue
        snis = ours.pop("__tls__")
        certs = {k[1:]: v for k, v in snis.items() if k[0] == "cert"}
        snis = {k: v for k, v in snis.items() if k[0] != "cert"}
        their_snis, their_certs, their_dns, malformed = tshark_other(pcap)
        for k, want in their_certs.items():
            if k in certs:
                tls_certs[0] += 1
                if certs[k] != want:
                    fails.append(f"{os.path.relpath(pcap, data)} {k}: gaspp certificate (fingerprint, serial) "
                                 f"{certs[k]}, tshark {want}")
        dns = ours.pop("__dns__")
        for frame, msgs in dns.items():
            dns_msgs[0] += len(msgs)
            want = their_dns.get(frame)
            if want is None and frame in malformed:
                continue
            if sorted(msgs) != sorted(want or []):
                fails.append(f"{os.path.relpath(pcap, data)} frame {frame}: gaspp dns {msgs}, tshark {want}")
        for frame, want in their_dns.items():
            if frame not in dns:
                fails.append(f"{os.path.relpath(pcap, data)} frame {frame}: tshark dns {want}, gaspp no dns event")
        for k, sni in snis.items():
            tls_flows[0] += 1
            if k in their_snis and their_snis[k] != sni:
                fails.append(f"{os.path.relpath(pcap, data)} {k}: gaspp sni {sni!r}, tshark {their_snis[k]!r}")
        for k, sni in their_snis.items():
            if sni and k not in snis:
                left.append(f"{os.path.relpath(pcap, data)} {k}: tshark ClientHello sni {sni!r}, gaspp no tls event")
        ports = {t[4] for txs in ours.values() for t in txs}
        theirs = tshark_txs(pcap, ports)
        compared += 1
        for k, txs in ours.items():
            # Suricata's probe takes RTSP's requests (OPTIONS, ...) for HTTP, and so does gaspp;
            # tshark dissects them as RTSP: those connections are not compared.
            if txs and not txs[0][3].upper().startswith("HTTP/"):
                continue
            flows += 1
            got = [(m, u) for _, m, u, _, _ in txs if m]
            want = theirs.get(k, [])
            if got != want:
                fails.append(f"{os.path.relpath(pcap, data)} {k}: gaspp {got[:5]}{'...' if len(got) > 5 else ''} "
                             f"tshark {want[:5]}{'...' if len(want) > 5 else ''}")
        for k, want in theirs.items():
            if k not in ours:
                left.append(f"{os.path.relpath(pcap, data)} {k}: tshark {len(want)} request(s), gaspp none")
    for l in left[:40]:
        print("NOT PARSED", l)
    for f in fails:
        print("FAIL", f)
    print(f"{compared} captures, {flows} HTTP connections, {tls_flows[0]} TLS ones ({tls_certs[0]} certificates) and "
          f"{dns_msgs[0]} DNS messages "
          f"compared with tshark, {len(fails)} differ, "
          f"{len(left)} connections tshark dissects that gaspp did not parse")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
