#!/usr/bin/env python3
"""EVE `ftp` events against tshark: on every capture in DATA_DIR/pcaps (and the suricata-verify
FTP captures) whose TCP connections tshark's FTP dissector reads requests of, each connection's
transactions, in order, as gaspp logs them must be tshark's:
  * one transaction per request line whose command Suricata's command table knows (the table is
    written out here: the entry found in the line, any case, that ends first), with `command` that
    entry and `command_data` tshark's ftp.request.arg as Suricata takes it (what follows the
    command's name and one character: for a request tshark splits at its first space, the same);
  * the first completion code of each transaction is the code tshark reads on the first reply
    after its request (replies going to the oldest transaction still waiting, a 1xx leaving it
    waiting, as RFC 959 pairs them) — but for a multi-line reply, whose first line ("230-...")
    Suricata reads as a text without a code: its first reply text starts with the code and "-";
  * dynamic_port: tshark's ftp.active.port / ftp.eprt.port (for PORT, EPRT) and
    ftp.passive.port / ftp.epsv.port (of the 227 / 229 reply), with mode active or passive.
Every event must also validate against Suricata's EVE schema (eve_schema.py checks all captures).

Data connections: every connection tshark's FTP-DATA dissector reads (it ties a data connection to
its control connection's PASV/EPSV answer or PORT command) must have one EVE `ftp_data` event whose
command and filename are tshark's ftp-data.command ("RETR robots.txt": the command, then the name
for RETR, STOR, APPE, STOU), and for a file command a `fileinfo` event (app_proto ftp-data) whose
size is the bytes tshark's segments cover in the data's direction (the union of their relative
tcp.seq ranges: a retransmission or an out-of-order segment counts once). gaspp
may tie more connections than tshark (tshark leaves active EPRT transfers over IPv6 as plain TCP):
each must be to a port tshark reads in the same capture's PORT/EPRT/PASV/EPSV.

Then the buffers: on each such capture, a rule per distinct (command, command data) pair
(ftp.command with ftp.command_data, each with its bsize) must alert once per transaction tshark
has with that pair (app_proto ftp), and one on a command no transaction has, never.

usage: ftp_vs_tshark.py GASPP DATA_DIR [--backend cpu|cuda]
"""
import glob
import ipaddress
import json
import os
import subprocess
import sys
import tempfile

from app_rule_counts import content_escape, run_rule_counts, split_backend

# Suricata's FTP_COMMANDS (rust/src/ftp/ftp.rs), in its order.
COMMANDS = ["PORT", "EPRT", "AUTH_TLS", "PASV", "EPSV", "RETR", "STOR", "ABOR", "ACCT", "ALLO", "APPE", "CDUP",
            "CHMOD", "CWD", "DELE", "HELP", "IDLE", "LIST", "MAIL", "MDTM", "MKD", "MLFL", "MLSD", "MODE", "MRCP",
            "MRSQ", "MSAM", "MSND", "MSOM", "NLST", "NOOP", "PASS", "PWD", "QUIT", "REIN", "REST", "RMD", "RNFR",
            "RNTO", "SITE", "SIZE", "SMNT", "STAT", "STOU", "STRU", "SYST", "TYPE", "UMASK", "USER", "UNKNOWN"]


def command_of(line):
    """The table's entry Suricata finds in a request line (the match that ends first), or None."""
    up = line.upper()
    best, best_end = None, None
    for c in COMMANDS:
        at = up.find(c)
        if at >= 0 and (best_end is None or at + len(c) < best_end):
            best, best_end = c, at + len(c)
    return best


def norm(a):
    return str(ipaddress.ip_address(a))


def tshark_txs(pcap):
    """{connection: [tx dicts]} from tshark's FTP fields."""
    names = ["ip.src", "ipv6.src", "tcp.srcport", "ip.dst", "ipv6.dst", "tcp.dstport", "ftp.request.command",
             "ftp.request.arg", "ftp.response.code", "ftp.active.port", "ftp.eprt.port", "ftp.passive.port",
             "ftp.epsv.port"]
    out = subprocess.run(["tshark", "-r", pcap, "-Y", "ftp", "-T", "fields", "-E", "occurrence=f"] +
                         sum([["-e", n] for n in names], []), capture_output=True, text=True).stdout
    conns = {}
    for line in out.splitlines():
        f = line.split("\t") + [""] * len(names)
        src, dst = (norm(f[0] or f[1]), int(f[2])), (norm(f[3] or f[4]), int(f[5]))
        key = frozenset([src, dst])
        c = conns.setdefault(key, [])
        if f[6]:
            text = f[6] + (" " + f[7] if f[7] else "")
            cmd = command_of(text)
            if cmd is None or cmd == "UNKNOWN":
                continue
            data = text[len(cmd) + 1:] if len(text) > len(cmd) + 1 else ""
            port = int(f[9] or f[10] or 0)
            c.append({"command": cmd, "command_data": data.rstrip(), "code": None, "waiting": True,
                      "port": port if cmd in ("PORT", "EPRT") else 0})
        elif f[8]:
            t = next((t for t in c if t["waiting"]), None)
            if t is None:
                continue  # the greeting, or a late line: no transaction with a command to check
            if t["code"] is None:
                t["code"] = f[8]
            if t["command"] in ("PASV", "EPSV") and (f[11] or f[12]):
                t["port"] = int(f[11] or f[12])
            if not f[8].startswith("1"):
                t["waiting"] = False
    return conns


def gaspp_txs(gaspp, pcap, backend, d):
    out = os.path.join(d, "out")
    subprocess.run(["rm", "-rf", out])
    os.makedirs(out)
    p = subprocess.run([gaspp, "-r", pcap, "--backend", backend, "-q", "--app-layer", "-l", out], capture_output=True,
                       text=True)
    if p.returncode != 0:
        raise SystemExit(f"FAIL: gaspp {pcap}: exit {p.returncode}: {p.stderr.strip()[-300:]}")
    res = {}
    for line in open(os.path.join(out, "eve.json")):
        e = json.loads(line)
        if e.get("event_type") != "ftp" or "command" not in e["ftp"]:
            continue
        key = frozenset([(norm(e["src_ip"]), e["src_port"]), (norm(e["dest_ip"]), e["dest_port"])])
        res.setdefault(key, []).append(e["ftp"])
    return res


def tshark_data(pcap):
    """({data connection: (command, filename or None, server endpoint)}, {data bytes per connection and
    sender}, {announced ports}) from tshark."""
    f = ["ip.src", "ipv6.src", "tcp.srcport", "ip.dst", "ipv6.dst", "tcp.dstport", "ftp-data.command", "tcp.len",
         "tcp.seq", "ftp.active.port", "ftp.eprt.port", "ftp.passive.port", "ftp.epsv.port"]
    out = subprocess.run(["tshark", "-r", pcap, "-Y", "ftp-data or ftp or tcp.len > 0", "-T", "fields", "-E", "occurrence=f"] +
                         sum([["-e", n] for n in f], []), capture_output=True, text=True).stdout
    conns, ranges, ports = {}, {}, set()
    for line in out.splitlines():
        v = line.split("\t") + [""] * len(f)
        for x in v[9:13]:
            if x:
                ports.add(int(x))
        if not v[6] and not (v[7] and int(v[7])):
            continue
        src, dst = (norm(v[0] or v[1]), int(v[2])), (norm(v[3] or v[4]), int(v[5]))
        key = frozenset([src, dst])
        if v[6] and key not in conns:
            cmd, _, name = v[6].partition(" ")
            conns[key] = (cmd, name if cmd in ("RETR", "STOR", "APPE", "STOU") and name else None)
        if v[7] and int(v[7]):
            ranges.setdefault((key, src), []).append((int(v[8]), int(v[8]) + int(v[7])))
    sizes = {}
    for k, rs in ranges.items():
        n, end = 0, None
        for a, b in sorted(rs):
            a = a if end is None else max(a, end)
            if b > a:
                n += b - a
                end = b
        sizes[k] = n
    return conns, sizes, ports


def check_data(name, pcap, d):
    """Failures of the ftp_data and fileinfo events of the last gaspp run (gaspp_txs's) against tshark."""
    want, sizes, ports = tshark_data(pcap)
    got, files = {}, {}
    for line in open(os.path.join(d, "out", "eve.json")):
        e = json.loads(line)
        if e.get("event_type") not in ("ftp_data", "fileinfo") or "ftp_data" not in e:
            continue
        src, dst = (norm(e["src_ip"]), e["src_port"]), (norm(e["dest_ip"]), e["dest_port"])
        key = frozenset([src, dst])
        if e["event_type"] == "ftp_data":
            got.setdefault(key, []).append((e["ftp_data"].get("command"), e["ftp_data"].get("filename"), dst[1]))
        else:
            files.setdefault(key, []).append((src, e["fileinfo"]["size"], e.get("app_proto")))
    bad = []
    for key, (cmd, fname) in want.items():
        g = got.get(key, [])
        if [x[:2] for x in g] != [(cmd, fname)]:
            bad.append(f"{name} {sorted(key)}: ftp_data {g}, tshark ({cmd}, {fname})")
            continue
        if fname is None:
            continue
        fs = files.get(key, [])
        if len(fs) != 1 or fs[0][2] != "ftp-data" or fs[0][1] != sizes.get((key, fs[0][0]), 0):
            bad.append(f"{name} {sorted(key)}: fileinfo {fs}, tshark's bytes "
                       f"{[v for (k, s), v in sizes.items() if k == key]}")
    for key, g in got.items():
        if key not in want and not all(x[2] in ports for x in g):
            bad.append(f"{name} {sorted(key)}: ftp_data {g} to a port no PORT/EPRT/PASV/EPSV named")
    return len(want), len(got), bad


def buffer_rules(gaspp, pcap, backend, conns, d):
    txs = [t for c in conns.values() for t in c]
    rules, want = [], {}
    for cmd, data in sorted({(t["command"], t["command_data"]) for t in txs}):
        sid = len(rules) + 1
        opt = f'ftp.command; content:"{cmd}"; bsize:{len(cmd)};'
        if data:
            opt += f' ftp.command_data; content:"{content_escape(data)}"; bsize:{len(data.encode())};'
        rules.append(f'alert ftp any any -> any any (msg:"ftp {sid}"; flow:to_server; {opt} sid:{sid}; rev:1;)')
        want[sid] = sum(1 for t in txs if (t["command"], t["command_data"]) == (cmd, data) and
                        (data or not t["command_data"]))
    sid = len(rules) + 1
    rules.append(f'alert ftp any any -> any any (msg:"none"; ftp.command; content:"MSOM"; sid:{sid}; rev:1;)')
    want[sid] = 0
    return run_rule_counts(gaspp, pcap, backend, rules, want, d, "ftp", "tshark's requests")


def main():
    backend, args = split_backend(sys.argv[1:])
    gaspp, data = args[:2]
    caps = sorted(c for c in glob.glob(os.path.join(data, "pcaps", "**", "*.pcap*"), recursive=True) +
                  glob.glob(os.path.join(data, "detect", "suricata-verify", "*ftp*", "**", "*.pcap"), recursive=True)
                  if c.endswith((".pcap", ".pcapng")))
    failed = compared = txs = rules = data_want = data_got = 0
    with tempfile.TemporaryDirectory() as d:
        for cap in caps:
            # Without these words there is no FTP login or transfer for tshark to read: skipped,
            # which keeps the test's time to the captures with FTP.
            with open(cap, "rb") as f:
                raw = f.read()
            if not any(w in raw for w in (b"USER ", b"PASV", b"EPSV", b"PORT ", b"RETR ")):
                continue
            want = tshark_txs(cap)
            if not any(want.values()):
                continue
            got = gaspp_txs(gaspp, cap, backend, d)
            name = os.path.relpath(cap, data)
            w, g, bad = check_data(name, cap, d)
            data_want += w
            data_got += g
            for b in bad:
                failed += 1
                print(f"FAIL {b}")
            for key, w in want.items():
                if not w:
                    continue
                compared += 1
                g = got.get(key, [])
                if [(t["command"], t.get("command_data", "")) for t in g] != [(t["command"], t["command_data"]) for t in w]:
                    failed += 1
                    print(f"FAIL {name} {sorted(key)}: commands {[(t['command'], t.get('command_data', '')) for t in g]}, "
                          f"tshark {[(t['command'], t['command_data']) for t in w]}")
                    continue
                for k, (e, t) in enumerate(zip(g, w)):
                    txs += 1
                    problems = []
                    codes = e.get("completion_code", [])
                    # A multi-line reply's first line ("230-...") has no completion code in
                    # Suricata's reading (three digits and a space): its text keeps the code.
                    first = e.get("reply", [""])[0]
                    continued = t["code"] is not None and not codes and first.startswith(t["code"] + "-")
                    if t["code"] is not None and not continued and (not codes or codes[0] != t["code"]):
                        problems.append(f"completion_code {codes}, tshark's first reply {t['code']}")
                    if t["port"] and (e.get("dynamic_port") != t["port"] or
                                      e.get("mode") != ("active" if t["command"] in ("PORT", "EPRT") else "passive")):
                        problems.append(f"dynamic_port {e.get('dynamic_port')} mode {e.get('mode')}, tshark's port {t['port']}")
                    if problems:
                        failed += 1
                        print(f"FAIL {name} transaction {k} ({t['command']}): " + "; ".join(problems))
            bad, n = buffer_rules(gaspp, cap, backend, want, d)
            rules += n
            for b in bad:
                failed += 1
                print(f"FAIL {name}: {b}")
    print(f"{compared} FTP connections, {txs} transactions compared with tshark, {rules} ftp.command rules, "
          f"{data_want} data connections tshark ties ({data_got} gaspp ties); {failed} failures")
    if not compared or not data_want:
        print("FAIL: no capture with FTP" + ("" if compared else " data connections"))
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
