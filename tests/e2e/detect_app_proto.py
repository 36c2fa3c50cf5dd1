#!/usr/bin/env python3
"""Signatures of the protocols the application layer detects without parsing (`alert smtp`,
`alert ftp`, `alert ssh`, `alert smb`): each is loaded beside a twin with the same options and
protocol `tcp`. The oracle is the twin: an app-protocol signature must alert exactly on the
packets where its twin alerts with the alert's app_proto (the flow's protocol as of that packet)
equal to its protocol, and nowhere else. Each protocol must alert at least once, and the gate must
have stopped at least one match (a twin alert on a flow of another or no protocol), so that
neither half of the check is empty. The captures' protocols are checked against nDPI and tshark
by app_proto_vs_ndpi.py.

Runs on the CPU backend with Hyperscan (`cpu`) and with the device's path (`cpu-device`), or on
`cuda`.

usage: detect_app_proto.py GASPP DATA_DIR [cpu|cpu-device|cuda ...]
"""
import json
import os
import subprocess
import sys
import tempfile

CAPTURES = ["ndpi/smtp.pcap", "ndpi/ftp.pcap", "ndpi/smb_deletefile.pcap", "zeek/tcp-ssh-dups.pcap",
            "zeek/smtp.pcap", "zeek/ftp-ipv6.pcap", "ndpi/irc.pcap", "ndpi/telnet.pcap", "ndpi/imap.pcap",
            "ndpi/nntp.pcap"]
PROTOS = {1: ("smtp", 'content:"|0d 0a|";'), 2: ("ftp", 'content:"|0d 0a|";'), 3: ("ssh", 'content:"|0d 0a|";'),
          4: ("smb", 'content:"SMB"; nocase;'), 5: ("smtp", 'flow:to_server; content:"MAIL FROM"; nocase;'),
          6: ("ftp", 'flow:to_server; content:"USER "; depth:5;')}
TWIN = 1000


def rules_text():
    lines = []
    for sid, (proto, opts) in PROTOS.items():
        lines.append(f'alert {proto} any any -> any any (msg:"{proto} {sid}"; {opts} sid:{sid};)')
        lines.append(f'alert tcp any any -> any any (msg:"tcp twin of {sid}"; {opts} sid:{sid + TWIN};)')
    return "\n".join(lines) + "\n"


def run(gaspp, pcap, rules, path, d):
    eve = os.path.join(d, "eve.json")
    if os.path.exists(eve):
        os.remove(eve)
    backend = "cuda" if path == "cuda" else "cpu"
    cmd = [gaspp, "-r", pcap, "--backend", backend, "-q", "--rules", rules, "-l", d]
    if path == "cpu-device":
        cmd += ["--detect-prefilter", "device"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"FAIL {pcap} ({path}): gaspp exit {p.returncode}: {p.stderr.strip()}")
    return [json.loads(l) for l in open(eve) if '"event_type":"alert"' in l]


def main():
    gaspp, data = sys.argv[1:3]
    paths = sys.argv[3:] or ["cpu", "cpu-device"]
    problems = 0
    with tempfile.TemporaryDirectory() as d:
        rules = os.path.join(d, "app.rules")
        with open(rules, "w") as f:
            f.write(rules_text())
        for path in paths:
            fired = {p for p, _ in PROTOS.values()}
            alerted, gated = set(), 0
            for rel in CAPTURES:
                alerts = run(gaspp, os.path.join(data, "pcaps", rel), rules, path, d)
                got = {(a["pcap_cnt"], a["alert"]["signature_id"]) for a in alerts if a["alert"]["signature_id"] < TWIN}
                want = set()
                for a in alerts:
                    sid = a["alert"]["signature_id"] - TWIN
                    if sid not in PROTOS:
                        continue
                    if a.get("app_proto") == PROTOS[sid][0]:
                        want.add((a["pcap_cnt"], sid))
                    else:
                        gated += 1
                bad = sorted(got ^ want)
                alerted |= {PROTOS[s][0] for _, s in got}
                print(f"{'ok  ' if not bad else 'FAIL'} {rel} ({path}): {len(got)} app-protocol alerts, "
                      f"{sum(1 for a in alerts if a['alert']['signature_id'] > TWIN)} twin alerts")
                for cnt, sid in bad[:10]:
                    side = "alerted, twin says no" if (cnt, sid) in got else "missing"
                    print(f"     pcap_cnt {cnt} sid {sid} ({PROTOS[sid][0]}): {side}")
                problems += bool(bad)
            if alerted != fired:
                print(f"FAIL ({path}): no alert for {sorted(fired - alerted)}")
                problems += 1
            if gated == 0:
                print(f"FAIL ({path}): no twin alert on a flow of another protocol: the gate was never tested")
                problems += 1
            print(f"{path}: {gated} twin alerts on flows of another or no protocol")
    print(f"{problems} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
