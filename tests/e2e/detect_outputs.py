#!/usr/bin/env python3
"""Alert outputs of the signature engine: --eve-payload, --eve-ethernet and --fast-log.

On suricata-verify captures with their rules: every EVE alert carries payload, payload_printable
and stream; for a packet match (stream 0) the payload is the packet's TCP/UDP payload as tshark
reads it (tcp.payload / udp.payload of frame pcap_cnt); payload_printable is that payload with
bytes outside printable ASCII (and \\r, \\n) as '.'; ether.src_mac and ether.dest_mac are tshark's
eth.src and eth.dst of frame pcap_cnt (every alert of an Ethernet capture has them). fast.log has one line per EVE alert, in the same
order, naming the same gid:sid:rev, protocol and endpoints. A fast.log that cannot be written ends
the run with exit status 3.

usage: detect_outputs.py GASPP DATA_DIR
"""
import base64
import json
import os
import re
import subprocess
import sys
import tempfile

TESTS = ["eve-payload-05-tcp-data-gap", "detect-pcre/detect-pcre-03", "bug-4503", "alert-testmyids-midstream"]


def tshark_payloads(pcap):
    """frame number -> (TCP or UDP payload, (eth.src, eth.dst) of the outermost Ethernet header)"""
    out = subprocess.run(["tshark", "-r", pcap, "-T", "fields", "-E", "occurrence=f", "-e", "frame.number", "-e",
                          "eth.src", "-e", "eth.dst", "-e", "tcp.payload", "-e", "udp.payload"],
                         capture_output=True, text=True, check=True).stdout
    res = {}
    for line in out.splitlines():
        parts = line.split("\t")
        n = int(parts[0])
        hexs = next((p for p in parts[3:] if p), "")
        res[n] = (bytes.fromhex(hexs.replace(":", "")), (parts[1], parts[2]) if parts[1] else None)
    return res


def main():
    gaspp, data = sys.argv[1:3]
    problems = 0
    checked = packet_matches = ether_checked = 0
    for t in TESTS:
        d = os.path.join(data, "detect", "suricata-verify", t)
        pcap = next(os.path.join(d, f) for f in sorted(os.listdir(d)) if f.endswith(".pcap"))
        with tempfile.TemporaryDirectory() as out:
            p = subprocess.run([gaspp, "-r", pcap, "-S", os.path.join(d, "test.rules"), "-l", out, "-q", "--eve-payload",
                                "--eve-ethernet", "--fast-log", "--midstream", "on"], capture_output=True, text=True)
            if p.returncode != 0:
                print(f"FAIL {t}: exit {p.returncode}: {p.stderr.strip()[-200:]}")
                problems += 1
                continue
            alerts = [json.loads(l) for l in open(os.path.join(out, "eve.json")) if '"event_type":"alert"' in l]
            fast = open(os.path.join(out, "fast.log")).read().splitlines()
        pays = tshark_payloads(pcap)
        if len(fast) != len(alerts):
            print(f"FAIL {t}: {len(alerts)} EVE alerts, {len(fast)} fast.log lines")
            problems += 1
            continue
        for a, line in zip(alerts, fast):
            checked += 1
            al = a["alert"]
            m = re.search(r"\[(\d+):(\d+):(\d+)\].*\{(\w+)\} (\S+) -> (\S+)$", line)
            want = (al["gid"], al["signature_id"], al["rev"], a["proto"],
                    f"{a['src_ip']}:{a['src_port']}", f"{a['dest_ip']}:{a['dest_port']}")
            if not m or (int(m[1]), int(m[2]), int(m[3]), m[4], m[5], m[6]) != want:
                print(f"FAIL {t}: fast.log line {line!r} does not name EVE's {want}")
                problems += 1
            if not all(k in a for k in ("payload", "payload_printable", "stream")):
                print(f"FAIL {t}: alert without payload fields: {a}")
                problems += 1
                continue
            got = base64.b64decode(a["payload"])
            printable = "".join(chr(b) if 32 <= b < 127 or b in (10, 13) else "." for b in got)
            if a["payload_printable"] != printable:
                print(f"FAIL {t}: payload_printable {a['payload_printable']!r}, want {printable!r}")
                problems += 1
            packet_matches += a["stream"] == 0
            tpay, macs = pays.get(a["pcap_cnt"], (b"", None))
            if a["stream"] == 0 and got != tpay:
                print(f"FAIL {t}: pcap_cnt {a['pcap_cnt']}: payload {got!r}, tshark {tpay!r}")
                problems += 1
            ether = a.get("ether")
            got_macs = (ether["src_mac"], ether["dest_mac"]) if ether else None
            if got_macs != macs:
                print(f"FAIL {t}: pcap_cnt {a['pcap_cnt']}: ether {got_macs}, tshark's eth.src/eth.dst {macs}")
                problems += 1
            ether_checked += macs is not None
    # A fast.log that cannot be written: exit status 3.
    with tempfile.TemporaryDirectory() as out:
        os.mkdir(os.path.join(out, "fast.log"))  # a directory where the file should go
        d = os.path.join(data, "detect", "suricata-verify", "bug-4503")
        p = subprocess.run([gaspp, "-r", os.path.join(d, "input.pcap"), "-S", os.path.join(d, "test.rules"), "-l", out,
                            "-q", "--fast-log"], capture_output=True, text=True)
        if p.returncode == 0:
            print("FAIL: an unwritable fast.log exits 0")
            problems += 1
    if ether_checked == 0:
        print("FAIL: no alert on an Ethernet frame: ether was never compared with tshark's")
        problems += 1
    if packet_matches == 0:
        print("FAIL: no packet match: the payload was never compared with tshark's")
        problems += 1
    print(f"alert outputs: {checked} alerts checked on {len(TESTS)} captures ({packet_matches} packet matches "
          f"against tshark's payload, {ether_checked} ether objects against its eth fields), {problems} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
