"""Helpers for the event-rule scripts (tls_events.py, smtp_events.py): TCP sessions of
acknowledged segments built with scapy, and gaspp's alerts on them by client port."""
import json
import os
import subprocess
import tempfile


def acked_session(pk, cport, sport, steps, client="10.9.0.1", server="10.9.0.2"):
    """Handshake; each (sender "c"/"s", bytes) step in segments of at most 1400 bytes, each
    acknowledged by the other side; FIN both ways. Appends the packets to pk."""
    from scapy.all import IP, TCP, Ether, Raw
    seq = {"c": 1000, "s": 5000}

    def seg(frm, flags, data=b""):
        src, dst, sp, dp = (client, server, cport, sport) if frm == "c" else (server, client, sport, cport)
        ack = 0 if flags == "S" else seq["s" if frm == "c" else "c"]
        p = Ether() / IP(src=src, dst=dst) / TCP(sport=sp, dport=dp, flags=flags, seq=seq[frm], ack=ack, window=65535)
        pk.append(p / Raw(data) if data else p)
        seq[frm] += len(data) + (1 if "S" in flags or "F" in flags else 0)

    seg("c", "S")
    seg("s", "SA")
    seg("c", "A")
    for frm, data in steps:
        for k in range(0, len(data), 1400):
            seg(frm, "PA", data[k:k + 1400])
        seg("s" if frm == "c" else "c", "A")
    seg("c", "FA")
    seg("s", "FA")
    seg("c", "A")


def alerts_by_port(gaspp, backend, pk, rules, server_port):
    """Runs gaspp on the packets with the rules (lines); {sid: [client port of each alert]}, or
    None (the error printed) when gaspp fails."""
    from scapy.all import wrpcap
    with tempfile.TemporaryDirectory() as d:
        pcap, rf, out = os.path.join(d, "in.pcap"), os.path.join(d, "in.rules"), os.path.join(d, "out")
        wrpcap(pcap, pk)
        with open(rf, "w") as f:
            f.write("\n".join(rules) + "\n")
        os.mkdir(out)
        p = subprocess.run([gaspp, "-r", pcap, "--backend", backend, "-S", rf, "-l", out, "-q"],
                           capture_output=True, text=True)
        if p.returncode != 0:
            print(p.stderr)
            return None
        got = {}
        for line in open(os.path.join(out, "eve.json")):
            e = json.loads(line)
            if e["event_type"] == "alert":
                port = e["src_port"] if e["src_port"] != server_port else e["dest_port"]
                got.setdefault(e["alert"]["signature_id"], []).append(port)
        return got
