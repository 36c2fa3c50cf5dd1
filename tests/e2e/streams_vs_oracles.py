#!/usr/bin/env python3
"""Reassembled TCP streams (`gaspp --dump-streams`) checked against other tools:

  * tshark's "follow tcp stream" on every capture in ../shared/data/pcaps: each direction's bytes
    must be equal where our index reports no gap and no conflict for it (tshark fills neither);
    gaspp runs without idle expiry there, as tshark follows a connection however long it pauses
    (oracle_settings.py);
  * suricata-verify `lua-output-http`: `output-tcp-data/expected/tcp-data.log` (Suricata's
    reassembled data per direction);
  * suricata-verify `bug-3286-02-linux-evasion` goes through the tshark comparison: its injected RST
    and FIN (timestamp echoes older than the client's SYN) must be ignored, so both directions are
    delivered whole;
  * suricata-verify `eve-payload-01-tcp-exact-overlap`: the stream holds the first copy ("GOOD",
    never "EVIL"); `eve-payload-05-tcp-data-gap`: "VERY", a 4-byte gap, "DATA", as its test.yaml
    expects ("VERY[4 bytes missing]DATA");
  * Zeek `tcp-reassembly.pcap` (`baselines/core.reassembly`): retransmissions with different data
    while the first copy is still held; as many conflicts as Zeek's rexmit_inconsistency events,
    and the first copy delivered (each short original Zeek prints is in our stream, its
    replacement is not).

usage: streams_vs_oracles.py GASPP DATA_DIR [--backend cpu|cuda] [--no-tshark]
(--no-tshark: where tshark is not installed, e.g. the GPU machine; the other oracles still run)
"""
import ipaddress
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oracle_settings import NO_IDLE_EXPIRY  # noqa: E402


def run_gaspp(gaspp, pcap, backend, d, *extra):
    p = subprocess.run([gaspp, "-r", pcap, "--backend", backend, "-q", "--dump-streams", d, *extra],
                       capture_output=True, text=True)
    if p.returncode not in (0, 2):
        raise SystemExit(f"gaspp failed on {pcap}: {p.stderr}")
    events = {}
    with open(os.path.join(d, "index.tsv")) as f:
        next(f)
        for line in f:
            name, _fid, _dir, ev, off, length, _fo = line.rstrip("\n").split("\t")
            events.setdefault(name, []).append((ev, int(off), int(length)))
    files = {n: open(os.path.join(d, n), "rb").read() for n in os.listdir(d) if n != "index.tsv"}
    return files, events


def endpoint(addr, port):
    a = ipaddress.ip_address(addr)
    if a.version == 4:
        return ".".join(f"{int(x):03d}" for x in addr.split(".")) + f".{int(port):05d}"
    return f"{a.compressed}.{int(port):05d}"


def tshark_follow(pcap, syn_data=None):
    """tshark's "follow tcp" of every connection; syn_data (a set), when given, receives the senders
    (endpoint names) of a SYN without ACK carrying data and no TCP Fast Open option: tshark follows
    that data, Suricata's stream engine (and gaspp, as it) does not take it."""
    rows = subprocess.run(["tshark", "-r", pcap, "-T", "fields", "-e", "tcp.stream", "-e", "tcp.flags.syn", "-e",
                           "tcp.flags.ack", "-e", "tcp.len", "-e", "tcp.options.tfo", "-e", "ip.src", "-e", "ipv6.src", "-e",
                           "tcp.srcport"], capture_output=True, text=True).stdout.splitlines()
    ids = set()
    for row in rows:
        f = row.split("\t")
        if not f[0]:
            continue
        ids.add(int(f[0]))
        if syn_data is not None and len(f) >= 8 and f[1] in ("1", "True") and f[2] in ("0", "False") and \
                f[3] not in ("", "0") and not f[4] and f[7]:
            syn_data.add(endpoint((f[5] or f[6]).split(",")[-1], f[7]))
    ids = sorted(ids)
    if not ids:
        return []
    args = ["tshark", "-r", pcap, "-q"]
    for i in ids:
        args += ["-z", f"follow,tcp,raw,{i}"]
    out = subprocess.run(args, capture_output=True, text=True).stdout
    streams = []
    for block in out.split("===================================================================\n"):
        m0 = re.search(r"^Node 0: (.+):(\d+)$", block, re.M)
        m1 = re.search(r"^Node 1: (.+):(\d+)$", block, re.M)
        if not m0 or not m1:
            continue
        data = [bytearray(), bytearray()]
        body = block[m1.end():]
        for line in body.split("\n"):
            if not line.strip():
                continue
            side = 1 if line.startswith("\t") else 0
            h = line.strip()
            if re.fullmatch(r"[0-9a-f]+", h):
                data[side] += bytes.fromhex(h)
        a0, p0 = m0.group(1).strip("[]"), m0.group(2)
        a1, p1 = m1.group(1).strip("[]"), m1.group(2)
        streams.append(((endpoint(a0, p0), endpoint(a1, p1)), bytes(data[0]), bytes(data[1])))
    return streams


def base_name(n):
    n = re.sub(r"--vlan[\d.]+", "", n)
    return re.sub(r"c\d+$", "", n)


# Directions where tshark and we differ by design (evasion captures), with why.
KNOWN = {
    ("tcp-rst-inject-rae.pcap", "001.002.000.002.02527-001.002.000.003.06649"):
        "150 bytes sent after the server's in-window RST: the flow is closed, we count them (after_end) "
        "and do not deliver them, as Suricata's stream engine does; tshark shows every payload",
}


def check_tshark(gaspp, data, backend, errors):
    compared = skipped = 0
    pcaps = []
    for root, _, fs in os.walk(os.path.join(data, "pcaps")):
        pcaps += [os.path.join(root, f) for f in fs if f.endswith((".pcap", ".pcapng"))]
    for pcap in sorted(pcaps):
        syn_data = set()
        streams = tshark_follow(pcap, syn_data)
        if not streams:
            continue
        with tempfile.TemporaryDirectory() as d:
            files, events = run_gaspp(gaspp, pcap, backend, d, *NO_IDLE_EXPIRY)
        ours = {}
        for n, b in files.items():
            ours.setdefault(base_name(n), []).append(n)
        tuples = [s[0] for s in streams]
        for (n0, n1), d0, d1 in streams:
            if tuples.count((n0, n1)) + tuples.count((n1, n0)) > 1:
                skipped += 2  # the same 5-tuple reused: tshark and we number connections differently
                continue
            for src, dst, want in ((n0, n1, d0), (n1, n0, d1)):
                name = f"{src}-{dst}"
                if src in syn_data:
                    skipped += 1  # SYN data without TCP Fast Open: tshark has it, Suricata's stream not
                    continue
                cand = ours.get(name, [])
                if not want and not cand:
                    continue
                if len(cand) != 1:
                    errors.append(f"{os.path.basename(pcap)}: {name}: {len(cand)} files (tshark has {len(want)} bytes)")
                    continue
                if (os.path.basename(pcap), name) in KNOWN:
                    skipped += 1
                    continue
                ev = events.get(cand[0], [])
                if any(e[0] in ("gap", "conflict") for e in ev):
                    skipped += 1
                    continue
                got = files[cand[0]]
                compared += 1
                if got != want:
                    at = next((i for i in range(min(len(got), len(want))) if got[i] != want[i]), min(len(got), len(want)))
                    errors.append(f"{os.path.basename(pcap)}: {name}: {len(got)} bytes, tshark {len(want)}; first difference at {at}")
    print(f"tshark follow: {compared} directions compared, {skipped} skipped (gap, conflict, reused 5-tuple, SYN data without TFO or "
          f"{len(KNOWN)} known difference)")


def parse_tcp_data_log(path):
    out, cur = {}, None
    for line in open(path):
        if line.rstrip().endswith(("-ts:", "-tc:")):
            cur = line.rstrip()[:-1]
            out.setdefault(cur, bytearray())
        elif cur and re.match(r"^ [0-9A-F]{4}  ", line):
            hexpart = line[7:56]
            out[cur] += bytes.fromhex(hexpart.replace(" ", ""))
    return out


def check_suricata(gaspp, data, backend, errors):
    sv = os.path.join(data, "pcaps", "suricata-verify")
    # lua-output-http: Suricata's tcp-data.log, blocks named SRC_SPORT-DST_DPORT-ts|tc by the client.
    want = parse_tcp_data_log(os.path.join(sv, "output-tcp-data", "expected", "tcp-data.log"))
    with tempfile.TemporaryDirectory() as d:
        files, _ = run_gaspp(gaspp, os.path.join(sv, "lua-output-http", "input.pcap"), backend, d)
    n = 0
    for key, b in want.items():
        m = re.fullmatch(r"(.+)_(\d+)-(.+)_(\d+)-(ts|tc)", key)
        cli, srv = endpoint(m.group(1), m.group(2)), endpoint(m.group(3), m.group(4))
        name = f"{cli}-{srv}" if m.group(5) == "ts" else f"{srv}-{cli}"
        got = files.get(name)
        if got != bytes(b):
            errors.append(f"lua-output-http {key}: {len(got or b'')} bytes, Suricata {len(b)}")
        n += 1
    print(f"suricata tcp-data.log: {n} directions")
    with tempfile.TemporaryDirectory() as d:
        files, _ = run_gaspp(gaspp, os.path.join(sv, "eve-payload-01-tcp-exact-overlap", "tcp-overlap.pcap"), backend, d)
    if b"GOOD" not in b"".join(files.values()) or b"EVIL" in b"".join(files.values()):
        errors.append(f"exact overlap: streams {list(files.values())}, want GOOD and no EVIL")
    with tempfile.TemporaryDirectory() as d:
        files, events = run_gaspp(gaspp, os.path.join(sv, "eve-payload-05-tcp-data-gap", "tcp-simple-gap2.pcap"), backend, d)
    gap_ok = any(v == b"VERYDATA" and ("gap", 4, 4) in events.get(k, []) for k, v in files.items())
    if not gap_ok:
        errors.append(f"data gap: streams {files}, events {events}; want VERY, gap (4, 4), DATA")
    print("suricata exact overlap and data gap: checked")


def file_pos(events, off):
    """Where stream offset `off` is in the dumped file (gaps are not written)."""
    return off - sum(l for ev, o, l in events if ev == "gap" and o + l <= off)


def check_zeek(gaspp, data, backend, errors):
    z = os.path.join(data, "pcaps", "zeek")
    lines = [l for l in open(os.path.join(z, "baselines", "core.reassembly", "output")) if l.startswith("rexmit_inconsistency")]
    with tempfile.TemporaryDirectory() as d:
        files, events = run_gaspp(gaspp, os.path.join(z, "tcp-reassembly.pcap"), backend, d)
    conflicts = sum(1 for ev in events.values() for e in ev if e[0] == "conflict")
    if conflicts != len(lines):
        errors.append(f"zeek tcp-reassembly: {conflicts} conflicts, Zeek {len(lines)} rexmit_inconsistency")
    short = 0
    for l in lines:
        parts = l.rstrip("\n").split(", ")
        old, new = parts[-3].encode(), parts[-2].encode()
        if len(old) < 40 and "\\x" not in parts[-3]:
            short += 1
            # A conflict we reported where the file holds Zeek's first copy (not its replacement).
            hit = False
            for name, ev in events.items():
                for e, off, length in ev:
                    if e == "conflict":
                        p = file_pos(ev, off)
                        at = files[name][p - (len(old) - length) if length < len(old) else p:][:len(old)]
                        hit |= at == old or files[name][p:p + len(old)] == old
            if not hit:
                errors.append(f"zeek tcp-reassembly: no conflict where the first copy {old!r} was delivered (later {new!r})")
    print(f"zeek tcp-reassembly: {conflicts} conflicts ({len(lines)} in Zeek), {short} short first copies checked")


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    gaspp, data = sys.argv[1], sys.argv[2]
    backend = sys.argv[sys.argv.index("--backend") + 1] if "--backend" in sys.argv else "cpu"
    errors = []
    if "--no-tshark" not in sys.argv:
        check_tshark(gaspp, data, backend, errors)
    check_suricata(gaspp, data, backend, errors)
    check_zeek(gaspp, data, backend, errors)
    for e in errors:
        print("FAIL", e)
    print(f"{len(errors)} failures")
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
