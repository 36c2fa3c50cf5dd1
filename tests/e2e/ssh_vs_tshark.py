#!/usr/bin/env python3
"""EVE `ssh` events against tshark: on every capture in ../shared/data/pcaps where tshark's SSH
dissector reads an identification string (`ssh.protocol`), each TCP connection with one must have
exactly one gaspp `ssh` event whose client and server proto_version and software_version are
that string's fields (SSH-<proto_version>-<software_version>[ SP comments], RFC 4253 §4.2), the
client being the side that sent the SYN; and gaspp writes no ssh event tshark has no banner for.
Every event must also validate against Suricata's EVE schema (eve_schema.py checks all captures).

usage: ssh_vs_tshark.py GASPP DATA_DIR [--backend cpu|cuda]
"""
import ipaddress
import json
import os
import subprocess
import sys
import tempfile


def norm(a):
    return str(ipaddress.ip_address(a))


def tshark_banners(pcap):
    out = subprocess.run(["tshark", "-r", pcap, "-Y", "ssh.protocol", "-T", "fields", "-e", "ip.src", "-e", "ipv6.src",
                          "-e", "tcp.srcport", "-e", "ip.dst", "-e", "ipv6.dst", "-e", "tcp.dstport", "-e", "ssh.protocol"],
                         capture_output=True, text=True).stdout
    res = {}
    for line in out.splitlines():
        f = line.split("\t")
        if len(f) < 7 or not f[6].startswith("SSH-"):
            continue
        src, dst = (norm((f[0] or f[1]).split(",")[-1]), int(f[2])), (norm((f[3] or f[4]).split(",")[-1]), int(f[5]))
        banner = f[6].split(",")[0]
        proto, _, rest = banner[4:].partition("-")
        res.setdefault(frozenset([src, dst]), {}).setdefault(src, (proto, rest.split(" ")[0]))
    return res


def main():
    args = sys.argv[1:]
    gaspp, data = args[0], args[1]
    backend = args[3] if args[2:3] == ["--backend"] else "cpu"
    pcaps = []
    for root, _, fs in os.walk(os.path.join(data, "pcaps")):
        pcaps += [os.path.join(root, f) for f in fs if f.endswith((".pcap", ".pcapng"))]
    failures = compared = 0
    with tempfile.TemporaryDirectory() as d:
        for pcap in sorted(pcaps):
            # A banner is "SSH-" in the capture's bytes (pcapng's blocks keep packet bytes whole):
            # tshark runs only where it can find one. gaspp runs on every capture.
            with open(pcap, "rb") as f:
                want = tshark_banners(pcap) if b"SSH-" in f.read() else {}
            eve = os.path.join(d, "eve.json")
            if os.path.exists(eve):
                os.remove(eve)
            p = subprocess.run([gaspp, "-r", pcap, "--backend", backend, "-q", "--app-layer", "-l", d], capture_output=True, text=True)
            if p.returncode != 0:
                print(f"FAIL {pcap}: gaspp exit {p.returncode}: {p.stderr.strip()}")
                failures += 1
                continue
            got = {}
            for line in open(eve):
                e = json.loads(line)
                if e.get("event_type") != "ssh":
                    continue
                cli, srv = (norm(e["src_ip"]), e["src_port"]), (norm(e["dest_ip"]), e["dest_port"])
                key = frozenset([cli, srv])
                sides = {}
                for role, ep in (("client", cli), ("server", srv)):
                    if role in e["ssh"]:
                        sides[ep] = (e["ssh"][role]["proto_version"], e["ssh"][role]["software_version"])
                got.setdefault(key, []).append(sides)
            if not want and not got:
                continue
            bad = []
            for key, sides in want.items():
                compared += 1
                mine = got.get(key, [])
                if len(mine) != 1 or mine[0] != sides:
                    bad.append(f"{sorted(key)}: tshark {sides}, ours {mine}")
            for key in got:
                if key not in want:
                    bad.append(f"{sorted(key)}: an ssh event, tshark reads no banner")
            print(f"{'ok  ' if not bad else 'FAIL'} {os.path.relpath(pcap, data)}: {len(want)} SSH connections")
            for b in bad:
                print("     " + b)
            failures += bool(bad)
    print(f"{compared} connections compared, {failures} captures failed")
    if compared == 0:
        print("FAIL: no capture with SSH found")
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
