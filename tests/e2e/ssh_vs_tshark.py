#!/usr/bin/env python3
"""EVE `ssh` events against tshark: on every capture in ../shared/data/pcaps where tshark's SSH
dissector reads an identification string (`ssh.protocol`), each TCP connection with one must have
exactly one gaspp `ssh` event whose client and server proto_version and software_version are
that string's fields (SSH-<proto_version>-<software_version>[ SP comments], RFC 4253 §4.2), the
client being the side that sent the SYN; and gaspp writes no ssh event tshark has no banner for.
With app-layer.protocols.ssh.hassh on, each side's `hassh.hash` must be tshark's HASSH of that
side's KEXINIT (ssh.kex.hassh from the client, ssh.kex.hasshserver from the server), and a side
tshark reads none for has none.
Every event must also validate against Suricata's EVE schema (eve_schema.py checks all captures).

Then the buffers ssh.software and ssh.proto: on each such capture whose SSH connections all start
with a SYN (tshark: the client is the SYN's sender), a rule per client software (flow:to_server),
per server software (flow:to_client), each with its bsize, must alert once per connection tshark
reads that string in, and one per protocol version (no direction) once per direction whose string
has it (with app_proto ssh and the ssh object); a rule on a software no connection has, never.

usage: ssh_vs_tshark.py GASPP DATA_DIR [--backend cpu|cuda]
"""
import ipaddress
import json
import os
import subprocess
import sys
import tempfile

from app_rule_counts import content_escape, run_rule_counts


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


def tshark_hassh(pcap):
    """{connection: {sender endpoint: HASSH}} from tshark's KEXINIT fields."""
    out = subprocess.run(["tshark", "-r", pcap, "-Y", "ssh.kex.hassh or ssh.kex.hasshserver", "-T", "fields",
                          "-e", "ip.src", "-e", "ipv6.src", "-e", "tcp.srcport", "-e", "ip.dst", "-e", "ipv6.dst",
                          "-e", "tcp.dstport", "-e", "ssh.kex.hassh", "-e", "ssh.kex.hasshserver"],
                         capture_output=True, text=True).stdout
    res = {}
    for line in out.splitlines():
        f = line.split("\t") + [""] * 8
        src, dst = (norm((f[0] or f[1]).split(",")[-1]), int(f[2])), (norm((f[3] or f[4]).split(",")[-1]), int(f[5]))
        h = (f[6] or f[7]).split(",")[0]
        if h:
            res.setdefault(frozenset([src, dst]), {}).setdefault(src, h)
    return res


def syn_senders(pcap):
    out = subprocess.run(["tshark", "-r", pcap, "-Y", "tcp.flags.syn==1 && tcp.flags.ack==0", "-T", "fields",
                          "-e", "ip.src", "-e", "ipv6.src", "-e", "tcp.srcport"], capture_output=True, text=True).stdout
    res = set()
    for line in out.splitlines():
        f = line.split("\t")
        if len(f) >= 3 and f[2]:
            res.add((norm((f[0] or f[1]).split(",")[-1]), int(f[2])))
    return res


def check_buffers(gaspp, backend, pcap, want, d):
    """The ssh.software / ssh.proto rules on one capture; a list of what went wrong."""
    clients = syn_senders(pcap)
    conns = []  # (client (proto, software), server (proto, software) or None)
    for key, sides in want.items():
        cli = [ep for ep in key if ep in clients]
        if len(cli) != 1:
            return [], 0  # a connection without its SYN: the client is not known
        srv = [ep for ep in key if ep != cli[0]][0]
        conns.append((sides.get(cli[0]), sides.get(srv)))
    rules, expect = [], {}
    sid = 1

    def rule(text, n):
        nonlocal sid
        rules.append(f'alert ssh any any -> any any (msg:"ssh {sid}"; {text} sid:{sid}; rev:1;)')
        expect[sid] = n
        sid += 1

    for sw in sorted({c[1] for c, _ in conns if c}):
        rule(f'flow:to_server; ssh.software; content:"{content_escape(sw)}"; bsize:{len(sw)};', sum(1 for c, _ in conns if c and c[1] == sw))
    for sw in sorted({v[1] for _, v in conns if v}):
        rule(f'flow:to_client; ssh_software; content:"{content_escape(sw)}"; bsize:{len(sw)};', sum(1 for _, v in conns if v and v[1] == sw))
    for pv in sorted({v[0] for c in conns for v in c if v}):
        # No flow direction: once per direction whose string has it (Suricata's detection state is
        # per transaction and direction; suricata-verify's ssh-banner-only expects two alerts).
        rule(f'ssh.proto; content:"{content_escape(pv)}"; bsize:{len(pv)};', sum(1 for c in conns for v in c if v and v[0] == pv))
    rule('flow:to_server; ssh.software; content:"NoSuchSoftware-9.9";', 0)
    return run_rule_counts(gaspp, pcap, backend, rules, expect, d, "ssh", "tshark's banners")


def main():
    args = sys.argv[1:]
    gaspp, data = args[0], args[1]
    backend = args[3] if args[2:3] == ["--backend"] else "cpu"
    pcaps = []
    for root, _, fs in os.walk(os.path.join(data, "pcaps")):
        pcaps += [os.path.join(root, f) for f in fs if f.endswith((".pcap", ".pcapng"))]
    failures = compared = rules_checked = hasshes = 0
    with tempfile.TemporaryDirectory() as d:
        for pcap in sorted(pcaps):
            # A banner is "SSH-" in the capture's bytes (pcapng's blocks keep packet bytes whole):
            # tshark runs only where it can find one. gaspp runs on every capture.
            with open(pcap, "rb") as f:
                want = tshark_banners(pcap) if b"SSH-" in f.read() else {}
            eve = os.path.join(d, "eve.json")
            if os.path.exists(eve):
                os.remove(eve)
            p = subprocess.run([gaspp, "-r", pcap, "--backend", backend, "-q", "--app-layer", "-l", d,
                                "--set", "app-layer.protocols.ssh.hassh=yes"], capture_output=True, text=True)
            if p.returncode != 0:
                print(f"FAIL {pcap}: gaspp exit {p.returncode}: {p.stderr.strip()}")
                failures += 1
                continue
            got, got_hassh = {}, {}
            for line in open(eve):
                e = json.loads(line)
                if e.get("event_type") != "ssh":
                    continue
                cli, srv = (norm(e["src_ip"]), e["src_port"]), (norm(e["dest_ip"]), e["dest_port"])
                key = frozenset([cli, srv])
                sides = {}
                for role, ep in (("client", cli), ("server", srv)):
                    if role in e["ssh"]:
                        sides[ep] = (e["ssh"][role]["proto_version"], e["ssh"][role].get("software_version", ""))
                        if "hassh" in e["ssh"][role]:
                            got_hassh.setdefault(key, {})[ep] = e["ssh"][role]["hassh"]["hash"]
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
            want_hassh = tshark_hassh(pcap) if want else {}
            for key in set(want_hassh) | set(got_hassh):
                if want_hassh.get(key, {}) != got_hassh.get(key, {}):
                    bad.append(f"{sorted(key)}: HASSH {got_hassh.get(key)}, tshark {want_hassh.get(key)}")
            hasshes += sum(len(v) for v in want_hassh.values())
            nrules = 0
            if want:
                more, nrules = check_buffers(gaspp, backend, pcap, want, d)
                bad += more
                rules_checked += nrules
            print(f"{'ok  ' if not bad else 'FAIL'} {os.path.relpath(pcap, data)}: {len(want)} SSH connections, "
                  f"{nrules} ssh.software/ssh.proto rules")
            for b in bad:
                print("     " + b)
            failures += bool(bad)
    print(f"{compared} connections compared, {hasshes} HASSH compared, {rules_checked} ssh buffer rules checked, "
          f"{failures} captures failed")
    if compared == 0 or rules_checked == 0 or hasshes == 0:
        print("FAIL: no capture with SSH (and its handshake) found")
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
