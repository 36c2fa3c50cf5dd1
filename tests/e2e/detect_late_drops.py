#!/usr/bin/env python3
"""Drops the host decides after the engine's verdicts (LateVerdicts), built with scapy.

Some signatures are decided on the host after the device's verdicts: application-layer ones (an
HTTP transaction's buffers), those that read flowbits, and matches a rate_filter turns into a drop
or out of one. Their drops must still reach the packets, as Suricata applies them in IPS mode:

  * `drop http` on the URI of a request: that packet and every later packet of its flow are
    dropped (an application-layer signature's action applies to the flow); the flow's later
    request, which another signature would alert on, raises nothing; the flow event says
    `"action":"drop"`; an interleaved flow with the same later request is untouched;
  * a UDP `drop` signature that reads a flowbit: the matching packets only (a packet signature);
  * `rate_filter ... new_action drop` on a UDP alert signature: its matches past the rate are
    dropped with the drop reason "threshold detection_filter", the alert `blocked`;
  * `rate_filter ... new_action alert` on a UDP drop signature: its first match is dropped, the
    later ones only alert (`allowed`);
  * `pass http` on a request's Host: the flow's later request raises no alert, nothing is
    dropped, and the flow event says `"action":"pass"`;
  * a `pass udp` signature with the `alert` keyword (Suricata 8): its match alerts (`allowed`) and
    ends the packet's alerts, an alert signature on the same bytes raises none.

The expected drops are worked out here from how the capture is built (the reference). Checked
with batches of 1, 2, 5 and 65536 packets (a late decision then lands in a later batch than
packets the engine already passed): the packets of -w are the input less the expected drops, byte
for byte; one EVE drop event per dropped packet with its reason; the alerts and their actions;
the stats' ips counters; the run's late-drop counters.

usage: detect_late_drops.py GASPP [--backend cpu|cuda]
"""
import json
import os
import subprocess
import sys
import tempfile

try:
    from scapy.all import IP, TCP, UDP, Ether, Raw, wrpcap, rdpcap
except ImportError:
    print("scapy is not installed (scripts/setup.sh installs it); skipping")
    sys.exit(1 if os.environ.get("CI") else 77)

SRV = "10.0.0.80"
RULES = r"""
drop http any any -> any any (msg:"evil uri"; http.uri; content:"/evil"; sid:10;)
alert http any any -> any any (msg:"second request"; http.uri; content:"/after"; sid:11;)
alert udp any any -> any any (msg:"set"; content:"SETBIT"; flowbits:set,armed; flowbits:noalert; sid:20;)
drop udp any any -> any any (msg:"kill when armed"; flowbits:isset,armed; content:"KILL"; sid:21;)
alert udp any any -> any any (msg:"rate"; content:"RATE"; sid:30;)
drop udp any any -> any any (msg:"soft"; content:"SOFT"; sid:40;)
pass http any any -> any any (msg:"trusted host"; http.host; content:"trusted"; sid:50;)
pass udp any any -> any any (msg:"pass that alerts"; content:"PASSALERT"; alert; sid:60;)
alert udp any any -> any any (msg:"after the pass"; content:"PASSALERT"; sid:61;)
"""
THRESHOLDS = """
rate_filter gen_id 1, sig_id 30, track by_flow, count 2, seconds 60, new_action drop, timeout 60
rate_filter gen_id 1, sig_id 40, track by_rule, count 1, seconds 60, new_action alert, timeout 60
"""


class Tcp:
    """One TCP connection's packets, sequence numbers kept."""

    def __init__(self, client, cport):
        self.c, self.cp = client, cport
        self.cseq, self.sseq = 1000, 9000

    def pkt(self, frm, flags, data=b""):
        if frm == "c":
            p = IP(src=self.c, dst=SRV) / TCP(sport=self.cp, dport=80, flags=flags, seq=self.cseq, ack=self.sseq)
            self.cseq += len(data) + (1 if "S" in flags or "F" in flags else 0)
        else:
            p = IP(src=SRV, dst=self.c) / TCP(sport=80, dport=self.cp, flags=flags, seq=self.sseq, ack=self.cseq)
            self.sseq += len(data) + (1 if "S" in flags or "F" in flags else 0)
        if flags == "S":
            p[TCP].ack = 0
        return Ether() / (p / Raw(data) if data else p)


def udp(src, sport, data):
    return Ether() / IP(src=src, dst=SRV) / UDP(sport=sport, dport=7000) / Raw(data)


def capture():
    """The packets, and per packet (1-based) what the reference expects: 'rules', 'flow drop',
    'threshold detection_filter' or None (passed); and the alerts expected: (pcap_cnt, sid, action)."""
    evil, ok, trusted = Tcp("10.0.1.1", 40001), Tcp("10.0.1.2", 40002), Tcp("10.0.1.3", 40003)
    req = lambda uri, host="h": f"GET {uri} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()
    resp = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi"
    seq = []  # (flow name, packet)
    for t, name in ((evil, "evil"), (ok, "ok"), (trusted, "trusted")):
        seq += [(name, t.pkt("c", "S")), (name, t.pkt("s", "SA")), (name, t.pkt("c", "A"))]
    seq += [
        ("evil", evil.pkt("c", "PA", req("/evil"))),   # the drop: this packet and the flow's later ones
        ("ok", ok.pkt("c", "PA", req("/fine"))),
        ("evil", evil.pkt("s", "PA", resp)),
        ("ok", ok.pkt("s", "PA", resp)),
        ("evil", evil.pkt("c", "PA", req("/after"))),  # would alert (sid 11): its flow is dropped
        ("ok", ok.pkt("c", "PA", req("/after"))),      # alerts
        ("evil", evil.pkt("s", "PA", resp)),
        ("ok", ok.pkt("s", "PA", resp)),
        ("trusted", trusted.pkt("c", "PA", req("/fine", "trusted"))),  # passes the flow
        ("trusted", trusted.pkt("s", "PA", resp)),
        ("trusted", trusted.pkt("c", "PA", req("/after", "trusted"))),  # no alert: the flow passed
        ("trusted", trusted.pkt("s", "PA", resp)),
        ("udp-armed", udp("10.0.2.1", 5001, b"KILL before the bit")),  # no bit yet: passes
        ("udp-armed", udp("10.0.2.1", 5001, b"SETBIT")),
        ("udp-armed", udp("10.0.2.1", 5001, b"harmless")),
        ("udp-armed", udp("10.0.2.1", 5001, b"KILL now")),              # dropped (the packet only)
        ("udp-armed", udp("10.0.2.1", 5001, b"harmless again")),
        ("udp-armed", udp("10.0.2.1", 5001, b"KILL again")),            # dropped
    ]
    seq += [("udp-rate", udp("10.0.2.2", 5002, b"RATE %d" % k)) for k in range(5)]
    seq += [("udp-soft", udp("10.0.2.3", 5003, b"SOFT %d" % k)) for k in range(3)]
    seq += [("udp-passalert", udp("10.0.2.4", 5004, b"PASSALERT"))]
    pkts = [p for _, p in seq]
    for k, p in enumerate(pkts):
        p.time = 1_700_000_000 + k * 0.001
    # The reference.
    want = [None] * len(pkts)
    alerts = []
    dropped_flows, passed_flows = set(), set()
    armed = False
    rate_seen = soft_seen = 0
    for k, (name, p) in enumerate(seq):
        n = k + 1
        data = bytes(p[Raw].load) if Raw in p else b""
        if name in dropped_flows:
            want[k] = "flow drop"
            continue
        if name in ("evil", "ok", "trusted") and data.startswith(b"GET "):
            uri = data.split(b" ")[1]
            if name in passed_flows:
                continue
            if b"Host: trusted" in data:
                passed_flows.add(name)
                continue
            if b"/evil" in uri:
                want[k] = "rules"
                dropped_flows.add(name)
                alerts.append((n, 10, "blocked"))
            if b"/after" in uri:
                alerts.append((n, 11, "allowed"))
        elif name == "udp-armed":
            if data == b"SETBIT":
                armed = True
            if armed and b"KILL" in data:
                want[k] = "rules"
                alerts.append((n, 21, "blocked"))
        elif name == "udp-rate":
            rate_seen += 1
            if rate_seen > 2:
                want[k] = "threshold detection_filter"
            alerts.append((n, 30, "blocked" if rate_seen > 2 else "allowed"))
        elif name == "udp-soft":
            soft_seen += 1
            if soft_seen == 1:
                want[k] = "rules"
            alerts.append((n, 40, "blocked" if soft_seen == 1 else "allowed"))
        elif name == "udp-passalert":
            alerts.append((n, 60, "allowed"))  # the pass alerts; it ends the packet's alerts (no 61)
    return pkts, want, alerts


def main():
    gaspp = sys.argv[1]
    backend = sys.argv[sys.argv.index("--backend") + 1] if "--backend" in sys.argv else "cpu"
    pkts, want, want_alerts = capture()
    failed = 0
    with tempfile.TemporaryDirectory() as d:
        pcap = os.path.join(d, "in.pcap")
        wrpcap(pcap, pkts)
        rules, thr = os.path.join(d, "t.rules"), os.path.join(d, "threshold.config")
        open(rules, "w").write(RULES)
        open(thr, "w").write(THRESHOLDS)
        dropped = {k + 1: r for k, r in enumerate(want) if r}
        for batch in ("1", "2", "5", "65536"):
            for f in ("eve.json", "out.pcap"):
                if os.path.exists(os.path.join(d, f)):
                    os.remove(os.path.join(d, f))
            stats_json = os.path.join(d, "stats.json")
            cmd = [gaspp, "-r", pcap, "--backend", backend, "-q", "-l", d, "-S", rules, "--batch", batch,
                   "--set", f"threshold-file={thr}", "--eve-drops", "-w", os.path.join(d, "out.pcap"),
                   "--stats-json", stats_json]
            p = subprocess.run(cmd, capture_output=True, text=True)
            problems = []
            if p.returncode != 0:
                problems.append(f"exit {p.returncode}: {p.stderr.strip()[-300:]}")
            else:
                events = [json.loads(line) for line in open(os.path.join(d, "eve.json"))]
                drops = {e["pcap_cnt"]: e["drop"]["reason"] for e in events if e["event_type"] == "drop"}
                if drops != dropped:
                    problems.append(f"drop events {sorted(drops.items())}, want {sorted(dropped.items())}")
                alerts = sorted((e["pcap_cnt"], e["alert"]["signature_id"], e["alert"]["action"])
                                for e in events if e["event_type"] == "alert")
                if alerts != sorted(want_alerts):
                    problems.append(f"alerts {alerts}, want {sorted(want_alerts)}")
                actions = {e["src_port"]: e["flow"].get("action") for e in events if e["event_type"] == "flow"}
                if actions.get(40001) != "drop" or actions.get(40002) is not None or actions.get(40003) != "pass":
                    problems.append(f"flow actions {actions}: want drop for the evil flow, pass for the trusted one")
                ips = [e for e in events if e["event_type"] == "stats"][-1]["stats"]["ips"]
                reasons = list(dropped.values())
                want_ips = {"blocked": len(dropped), "rules": reasons.count("rules"),
                            "flow_drop": reasons.count("flow drop"),
                            "threshold_detection_filter": reasons.count("threshold detection_filter")}
                got_ips = {"blocked": ips["blocked"], **{k: ips["drop_reason"][k] for k in list(want_ips)[1:]}}
                if got_ips != want_ips:
                    problems.append(f"stats ips {got_ips}, want {want_ips}")
                kept = [bytes(x) for x in rdpcap(os.path.join(d, "out.pcap"))]
                want_kept = [bytes(x) for k, x in enumerate(pkts, 1) if k not in dropped]
                if kept != want_kept:
                    problems.append(f"-w kept {len(kept)} packets, want {len(want_kept)}")
                late = json.load(open(stats_json))["modules"]["late_drops"]
                followers = reasons.count("flow drop")
                if late["flows"] != 1 or late["flow_packets"] != followers or late["passed_flows"] != 1 or late["flows_full"]:
                    problems.append(f"late_drops {late}: want 1 flow and its {followers} later packets, 1 passed flow")
            print(f"{'ok' if not problems else 'FAIL':5} batch {batch}" + "".join(f"\n      {x}" for x in problems))
            failed += bool(problems)
    print(f"{failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
