#!/usr/bin/env python3
"""Link and tunnel layers no capture in ../shared/data has enough of, built with scapy and checked
three ways:

  * every packet's decoded fields against tshark (decode_vs_tshark.compare: for a packet decoded
    inside a GTP-U, GRE, VXLAN or Geneve tunnel, against tshark's inner IP and transport layers);
  * flows: EVE flow records are keyed on the inner packet of a GTP-U tunnel (as Zeek and nDPI key
    them), so the two directions of one inner connection carried by different outer tunnels are
    one flow, with the packet counts the builder wrote;
  * counters: `tunneled` and the `undecoded` reasons in --stats-json are what the builder wrote;
  * alerts' packets (--eve-packet, a rule on every IP packet): a packet decoded out of a tunnel is
    logged as Suricata logs its tunnel pseudo-packet, the innermost tunnel's payload as scapy built
    it (the inner IP packet, the Ethernet frame VXLAN or Geneve carried, what follows a GRE header)
    with linktype 12
    RAW; any other packet is the frame as written, with the capture's link type as libpcap reports
    it (LINKTYPE_RAW 101 is DLT_RAW 12).

usage: encapsulations.py GASPP [--backend cpu|cuda] [--no-tshark]
(--no-tshark: where tshark is not installed, e.g. the GPU machine; flows and counters still checked)
"""
import base64
import ipaddress
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import decode_vs_tshark  # noqa: E402

try:
    from scapy.all import Ether, IP, IPv6, TCP, UDP, ICMP, Raw, Dot1Q, Dot1AD, wrpcap, NoPayload
    from scapy.contrib.gtp import GTP_U_Header, GTPPDUSessionContainer
    from scapy.contrib.mpls import MPLS
    from scapy.layers.ppp import PPPoE, PPP, PPP_LCP, PPPoED
    from scapy.all import GRE
    from scapy.contrib.erspan import ERSPAN_II, ERSPAN_III
    from scapy.layers.vxlan import VXLAN
    from scapy.layers.l2 import ARP
    from scapy.contrib.geneve import GENEVE, GeneveOptions
except ImportError as e:  # scapy is installed by scripts/setup.sh
    print(f"scapy is missing ({e}); run scripts/setup.sh")
    sys.exit(1)


def gtp_u(outer_src, outer_dst, inner, teid=1, **kw):
    outer = IPv6(src=outer_src, dst=outer_dst) if ":" in outer_src else IP(src=outer_src, dst=outer_dst)
    return Ether() / outer / UDP(sport=2152, dport=2152) / GTP_U_Header(teid=teid, **kw) / inner


def captures():
    """name → (link type, packets, expected: flows {(proto, a, ap, b, bp): (pkts a→b, pkts b→a)},
    tunneled count, undecoded reasons)."""
    c = {}
    # One inner TCP connection; the uplink rides tunnel 1 (IPv4 outer), the downlink tunnel 2
    # (another TEID, other outer addresses): one flow.
    up = IP(src="10.45.0.2", dst="93.184.216.34") / TCP(sport=40001, dport=80, flags="S", seq=100)
    down = IP(src="93.184.216.34", dst="10.45.0.2") / TCP(sport=80, dport=40001, flags="SA", seq=500, ack=101)
    ack = IP(src="10.45.0.2", dst="93.184.216.34") / TCP(sport=40001, dport=80, flags="A", seq=101, ack=501)
    data = IP(src="10.45.0.2", dst="93.184.216.34") / TCP(sport=40001, dport=80, flags="PA", seq=101, ack=501) / Raw(b"GET / HTTP/1.1\r\n\r\n")
    dns = IPv6(src="2001:db8::2", dst="2001:db8::53") / UDP(sport=5353, dport=53) / Raw(b"\x00" * 20)
    ping = IP(src="10.45.0.3", dst="8.8.8.8") / ICMP(id=7)
    pkts = [
        gtp_u("192.0.2.1", "192.0.2.2", up, teid=1),
        gtp_u("192.0.2.2", "192.0.2.1", down, teid=2),
        gtp_u("192.0.2.1", "192.0.2.2", ack, teid=1, S=1, seq=5),
        # An extension header (PDU session container) before the inner packet.
        Ether() / IP(src="192.0.2.1", dst="192.0.2.2") / UDP(sport=2152, dport=2152) /
        GTP_U_Header(teid=1, E=1, next_ex=0x85) / GTPPDUSessionContainer(type=1, QFI=9) / data,
        gtp_u("2001:db8:1::1", "2001:db8:1::2", dns, teid=9),
        gtp_u("192.0.2.1", "192.0.2.2", ping, teid=1),
        # GTP-U inside GTP-U: depth 2, flow on the innermost packet.
        gtp_u("198.51.100.1", "198.51.100.2", IP(src="172.16.0.1", dst="172.16.0.2") / UDP(sport=2152, dport=2152) /
              GTP_U_Header(teid=3) / IP(src="10.45.0.2", dst="93.184.216.34") /
              TCP(sport=40001, dport=80, flags="A", seq=119, ack=501), teid=4),
        # Signalling on port 2152 (echo request): plain UDP on the outer flow.
        Ether() / IP(src="192.0.2.1", dst="192.0.2.2") / UDP(sport=2152, dport=2152) / GTP_U_Header(gtp_type=1, teid=0, S=1, seq=1),
    ]
    c["gtp_u"] = (1, pkts, {
        ("TCP", "10.45.0.2", 40001, "93.184.216.34", 80): (4, 1),
        ("UDP", "2001:db8::2", 5353, "2001:db8::53", 53): (1, 0),
        ("ICMP", "10.45.0.3", 0, "8.8.8.8", 0): (1, 0),
        ("UDP", "192.0.2.1", 2152, "192.0.2.2", 2152): (1, 0),
    }, 7, {})
    # PPPoE sessions, plain and inside QinQ, with PPP control traffic and discovery beside them.
    tcp = IP(src="100.64.0.9", dst="203.0.113.5") / TCP(sport=50000, dport=443, flags="S")
    tcp6 = IPv6(src="2001:db8:a::9", dst="2001:db8:b::5") / UDP(sport=123, dport=123) / Raw(b"x" * 48)
    pkts = [
        Ether() / PPPoE(sessionid=17) / PPP(proto=0x0021) / tcp,
        Ether() / Dot1AD(vlan=100) / Dot1Q(vlan=200) / PPPoE(sessionid=18) / PPP(proto=0x0057) / tcp6,
        Ether() / PPPoE(sessionid=17) / PPP(proto=0xc021) / PPP_LCP(code=9) / Raw(b"\x00" * 4),
        Ether() / PPPoED(code=0x09, sessionid=0) / Raw(b"\x01\x01\x00\x00"),
    ]
    c["pppoe"] = (1, pkts, {
        ("TCP", "100.64.0.9", 50000, "203.0.113.5", 443): (1, 0),
        ("UDP", "2001:db8:a::9", 123, "2001:db8:b::5", 123): (1, 0),
    }, 0, {"ppp_protocol": 1, "pppoe_discovery": 1})
    # MPLS label stacks over Ethernet, an Ethernet pseudowire (control word, then Ethernet), and an
    # associated channel (first nibble 1) left undecoded.
    pkts = [
        Ether(type=0x8847) / MPLS(label=100, s=0) / MPLS(label=200, s=1) / IP(src="10.1.0.1", dst="10.1.0.2") / UDP(sport=1000, dport=2000),
        Ether(type=0x8847) / MPLS(label=16, s=1) / IPv6(src="2001:db8::1", dst="2001:db8::2") / TCP(sport=1, dport=2, flags="S"),
        Ether(type=0x8847) / MPLS(label=77, s=1) / Raw(b"\x00\x00\x00\x00") / Ether(src="00:11:22:33:44:55", dst="00:11:22:33:44:66") / IP(src="10.7.0.1", dst="10.7.0.2") / UDP(sport=7, dport=9),
        Ether(type=0x8847) / MPLS(label=13, s=1) / Raw(b"\x10\x00\x00\x21" + b"\x00" * 20),
    ]
    c["mpls"] = (1, pkts, {
        ("UDP", "10.1.0.1", 1000, "10.1.0.2", 2000): (1, 0),
        ("TCP", "2001:db8::1", 1, "2001:db8::2", 2): (1, 0),
        ("UDP", "10.7.0.1", 7, "10.7.0.2", 9): (1, 0),
    }, 0, {"mpls_payload": 1})
    # Cisco HDLC (link type 104): IPv4, MPLS, and SLARP keepalives.
    ip = IP(src="2.2.2.2", dst="4.4.4.4") / TCP(sport=179, dport=63535, flags="PA") / Raw(b"bgp")
    pkts = [
        b"\x0f\x00\x08\x00" + bytes(ip),
        b"\x0f\x00\x88\x47" + bytes(MPLS(label=18, s=1) / ip),
        b"\x8f\x00\x80\x35" + b"\x00\x00\x00\x02" + b"\x00" * 14,
    ]
    c["cisco_hdlc"] = (104, pkts, {("TCP", "2.2.2.2", 179, "4.4.4.4", 63535): (2, 0)}, 0, {"ethertype": 1})
    # GRE (IP protocol 47): IPv4 and IPv6 inside, with key, sequence number and checksum; Ethernet
    # inside (transparent bridging) with a VLAN tag of its own; ERSPAN types II and III; PPTP's
    # enhanced GRE carrying PPP; over IPv6; and, left undecoded as Suricata does, MPLS inside GRE.
    # One inner TCP connection crosses three encapsulations: one flow.
    out4 = lambda: Ether() / IP(src="192.0.2.10", dst="192.0.2.20")
    syn = IP(src="10.9.0.1", dst="10.9.0.2") / TCP(sport=33000, dport=22, flags="S", seq=1)
    synack = IP(src="10.9.0.2", dst="10.9.0.1") / TCP(sport=22, dport=33000, flags="SA", seq=9, ack=2)
    ack = IP(src="10.9.0.1", dst="10.9.0.2") / TCP(sport=33000, dport=22, flags="A", seq=2, ack=10)
    frame = lambda inner, **kw: Ether(src="00:00:5e:00:53:01", dst="00:00:5e:00:53:02", **kw) / inner
    pkts = [
        out4() / GRE(proto=0x0800) / syn,
        out4() / GRE(proto=0x6558, key_present=1, key=7) / frame(synack),
        out4() / GRE(proto=0x88be, seqnum_present=1, seqence_number=3) / ERSPAN_II(session_id=5) / frame(ack),
        out4() / GRE(proto=0x86dd, chksum_present=1) / IPv6(src="2001:db8:9::1", dst="2001:db8:9::2") / UDP(sport=5000, dport=5001),
        out4() / GRE(proto=0x6558) / Ether(src="00:00:5e:00:53:03", dst="00:00:5e:00:53:04") / Dot1Q(vlan=42) /
        IP(src="10.9.1.1", dst="10.9.1.2") / UDP(sport=53, dport=53),
        out4() / GRE(proto=0x22eb) / ERSPAN_III(session_id=6) / frame(IP(src="10.9.2.1", dst="10.9.2.2") / ICMP(id=3)),
        out4() / GRE(version=1, key_present=1, proto=0x880b, key=(2 << 16) | 9) / Raw(b"\xff\x03\x00\x21") /
        IP(src="10.9.3.1", dst="10.9.3.2") / UDP(sport=1723, dport=1723),
        Ether() / IPv6(src="2001:db8:1::10", dst="2001:db8:1::20") / GRE(proto=0x0800) /
        IP(src="10.9.4.1", dst="10.9.4.2") / UDP(sport=9, dport=9),
        out4() / GRE(proto=0x8847) / MPLS(label=5, s=1) / IP(src="10.9.5.1", dst="10.9.5.2") / UDP(sport=1, dport=2),
    ]
    c["gre"] = (1, pkts, {
        ("TCP", "10.9.0.1", 33000, "10.9.0.2", 22): (2, 1),
        ("UDP", "2001:db8:9::1", 5000, "2001:db8:9::2", 5001): (1, 0),
        ("UDP", "10.9.1.1", 53, "10.9.1.2", 53): (1, 0),
        ("ICMP", "10.9.2.1", 0, "10.9.2.2", 0): (1, 0),
        ("UDP", "10.9.3.1", 1723, "10.9.3.2", 1723): (1, 0),
        ("UDP", "10.9.4.1", 9, "10.9.4.2", 9): (1, 0),
        ("GRE", "192.0.2.10", 0, "192.0.2.20", 0): (1, 0),
    }, 8, {"gre_payload": 1})
    # VXLAN (UDP destination port 4789) and Geneve (UDP port 6081, with options; carrying Ethernet
    # or IPv4 directly), as Suricata's decoders take them: one inner TCP connection crosses both,
    # an inner VLAN tag and an inner ARP frame; left as plain UDP: a VXLAN header with a reserved
    # bit set, port 4789 as the source only, a Geneve header of version 1, and Geneve whose option
    # lengths do not add up to its option length.
    syn = IP(src="10.8.0.1", dst="10.8.0.2") / TCP(sport=41000, dport=443, flags="S", seq=1)
    synack = IP(src="10.8.0.2", dst="10.8.0.1") / TCP(sport=443, dport=41000, flags="SA", seq=9, ack=2)
    ack = IP(src="10.8.0.1", dst="10.8.0.2") / TCP(sport=41000, dport=443, flags="A", seq=2, ack=10)
    udp4 = lambda sport, dport: Ether() / IP(src="192.0.2.30", dst="192.0.2.40") / UDP(sport=sport, dport=dport)
    vx = lambda flags=0x08, **kw: VXLAN(flags=flags, vni=77, **kw)
    opt = GeneveOptions(classid=0x0102, type=0x80, length=1, data=b"\x00\x00\x00\x01")
    pkts = [
        udp4(50000, 4789) / vx() / frame(syn),
        udp4(50001, 4789) / vx() / frame(synack),
        udp4(50007, 4789) / vx() / Ether(src="00:00:5e:00:53:01", dst="00:00:5e:00:53:02") / Dot1Q(vlan=7) /
        IP(src="10.8.7.1", dst="10.8.7.2") / UDP(sport=9, dport=9),
        udp4(6081, 6081) / GENEVE(proto=0x6558, vni=5, optionlen=2, options=[opt]) / frame(ack),
        udp4(40000, 6081) / GENEVE(proto=0x0800, vni=6) / IP(src="10.8.1.1", dst="10.8.1.2") / UDP(sport=7, dport=7),
        udp4(50002, 4789) / vx() / Ether(src="00:00:5e:00:53:05", dst="ff:ff:ff:ff:ff:ff") /
        ARP(psrc="10.8.2.1", pdst="10.8.2.2"),
        udp4(50003, 4789) / vx(flags=0x0c) / frame(IP(src="10.8.3.1", dst="10.8.3.2") / UDP(sport=1, dport=2)),
        udp4(4789, 50004) / vx() / frame(IP(src="10.8.4.1", dst="10.8.4.2") / UDP(sport=1, dport=2)),
        udp4(6081, 50005) / Raw(b"\x40\x00\x08\x00\x00\x00\x09\x00") / IP(src="10.8.5.1", dst="10.8.5.2") / UDP(sport=1, dport=2),
        udp4(50006, 6081) / Raw(b"\x01\x00\x08\x00\x00\x00\x09\x00" + b"\x01\x02\x80\x02" + b"\x00" * 4) /
        IP(src="10.8.6.1", dst="10.8.6.2") / UDP(sport=1, dport=2),
    ]
    c["vxlan_geneve"] = (1, pkts, {
        ("TCP", "10.8.0.1", 41000, "10.8.0.2", 443): (2, 1),
        ("UDP", "10.8.1.1", 7, "10.8.1.2", 7): (1, 0),
        ("UDP", "10.8.7.1", 9, "10.8.7.2", 9): (1, 0),
        ("UDP", "192.0.2.30", 50003, "192.0.2.40", 4789): (1, 0),
        ("UDP", "192.0.2.30", 4789, "192.0.2.40", 50004): (1, 0),
        ("UDP", "192.0.2.30", 6081, "192.0.2.40", 50005): (1, 0),
        ("UDP", "192.0.2.30", 50006, "192.0.2.40", 6081): (1, 0),
    }, 6, {})
    return c


def write(path, link, pkts):
    if link == 1:
        wrpcap(path, pkts)
    else:
        wrpcap(path, [Raw(p) for p in pkts], linktype=link)


def tunnel_payload(pkt):
    """The bytes Suricata's tunnel pseudo-packet holds for pkt: from the innermost IP packet or
    Ethernet frame that a tunnel header (IP in IP, VXLAN, Geneve, GTP-U) carries, or all that
    follows a GRE header (an ERSPAN or PPP header included); None when no tunnel carries one."""
    carriers = (IP, IPv6, VXLAN, GENEVE, GTP_U_Header, GTPPDUSessionContainer)
    layers, layer = [], pkt
    while not isinstance(layer, NoPayload):
        layers.append(layer)
        layer = layer.payload
    start = None
    for outer, inner in zip(layers, layers[1:]):
        if isinstance(outer, GRE) or (isinstance(inner, (Ether, IP, IPv6)) and isinstance(outer, carriers)):
            start = inner
    return bytes(start) if start is not None else None


def packet_problems(eve, link, pkts):
    """Each alert's packet and packet_info against the packet written (see the module's doc)."""
    problems, seen = [], 0
    for line in open(eve):
        r = json.loads(line)
        if r.get("event_type") != "alert":
            continue
        seen += 1
        pkt = pkts[r["pcap_cnt"] - 1]
        inner = tunnel_payload(pkt) if "tunnel" in r else None
        if "tunnel" in r and inner is None:
            problems.append(f"packet {r['pcap_cnt']}: a tunnel alert where the builder wrote no tunnel")
            continue
        want = inner if inner is not None else bytes(pkt)
        want_link = 12 if inner is not None or link == 101 else link
        got = base64.b64decode(r.get("packet", ""))
        info = r.get("packet_info", {})
        if got != want or info.get("linktype") != want_link or (want_link == 12 and info.get("linktype_name") != "RAW"):
            problems.append(f"packet {r['pcap_cnt']}: packet {got.hex()} linktype {info}, want {want.hex()} linktype {want_link}")
    return problems, seen


def flows(eve):
    out = {}
    for line in open(eve):
        r = json.loads(line)
        if r.get("event_type") != "flow":
            continue
        f = r["flow"]
        # Addresses compared parsed (EVE writes IPv6 unshortened, as Suricata does).
        src, dst = str(ipaddress.ip_address(r["src_ip"])), str(ipaddress.ip_address(r["dest_ip"]))
        key = (r["proto"], src, r.get("src_port", 0), dst, r.get("dest_port", 0))
        out[key] = (f["pkts_toserver"], f["pkts_toclient"])
    return out


def main():
    gaspp = sys.argv[1]
    backend = sys.argv[sys.argv.index("--backend") + 1] if "--backend" in sys.argv else "cpu"
    use_tshark = "--no-tshark" not in sys.argv
    failures = 0
    with tempfile.TemporaryDirectory() as d:
        for name, (link, pkts, want_flows, want_tunneled, want_undecoded) in captures().items():
            pcap = os.path.join(d, name + ".pcap")
            write(pcap, link, pkts)
            problems = []
            g, rc = decode_vs_tshark.gaspp_rows(gaspp, backend, pcap, [])
            t = decode_vs_tshark.tshark_rows(pcap) if use_tshark else [{"frame.protocols": ""}] * len(g)
            if len(g) != len(t) or len(g) != len(pkts):
                problems.append(f"packets: gaspp {len(g)} tshark {len(t)} written {len(pkts)}")
            for gr, tr in zip(g, t):
                # Deliberate difference: tshark decodes what an MPLS associated channel (RFC 4385,
                # first nibble 1) carries; gaspp, as Suricata, leaves it undecoded and counts it.
                if use_tshark and not (gr["undecoded"] == "mpls_payload" and "pwach" in tr["frame.protocols"]):
                    decode_vs_tshark.compare(gr, tr, problems)
                if gr["malformed"] != "none":
                    problems.append(f"frame {gr['frame']}: malformed {gr['malformed']}")
            eve_dir = os.path.join(d, name)
            os.makedirs(eve_dir)
            stats = os.path.join(d, name + ".json")
            rules = os.path.join(d, "every-ip-packet.rules")
            with open(rules, "w") as f:
                f.write("alert ip any any -> any any (msg:\"every IP packet\"; sid:1;)\n")
            p = subprocess.run([gaspp, "-r", pcap, "--backend", backend, "-q", "-l", eve_dir, "--stats-json", stats,
                                "--module", f"detect:rules={rules}", "--eve-packet"],
                               capture_output=True, text=True)
            if p.returncode != 0:
                problems.append(f"gaspp exit {p.returncode}: {p.stderr.strip()}")
            else:
                got = flows(os.path.join(eve_dir, "eve.json"))
                if got != want_flows:
                    problems.append(f"flows: gaspp {sorted(got.items())} want {sorted(want_flows.items())}")
                s = json.load(open(stats))
                if s["tunneled"] != want_tunneled:
                    problems.append(f"tunneled: {s['tunneled']}, built {want_tunneled}")
                und = {k: v for k, v in s["undecoded"].items() if k != "total" and v}
                if und != want_undecoded:
                    problems.append(f"undecoded: {und}, built {want_undecoded}")
                bad, seen = packet_problems(os.path.join(eve_dir, "eve.json"), link, pkts)
                problems += bad
                if not seen:
                    problems.append("no alerts: the rule on every IP packet matched none")
            print(f"{'ok  ' if not problems else 'FAIL'} {name}: {len(pkts)} packets")
            for x in problems:
                print("     " + x)
            failures += bool(problems)
    print(f"{failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
