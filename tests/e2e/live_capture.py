#!/usr/bin/env python3
"""Live capture (`gaspp -i IFACE`, `gaspp --inline A:B`) against the same capture read from its file.

A network namespace of the test's own holds three veth pairs, tx/rx, in0/in1 and out1/out0, with
IPv6 off before the links come up so that the kernel sends nothing of its own on them. For each
chosen capture, `gaspp -i rx` runs in the namespace; once it says `capturing on rx`, every frame of
the capture goes out of tx through an AF_PACKET socket, in order and byte for byte, and gaspp is
stopped with SIGINT (exit 0 or 130: stopped by a signal, output complete). Oracle: `gaspp -r FILE`
on the same file. From each run's eve.json, the flow records (5-tuple, protocol, packets and bytes
each way) must be the same multiset, and the stats event's decoder counters (packets, bytes, per
protocol) equal. The first chosen capture that has TCP and other traffic runs again with a trailing
BPF filter (`tcp`) both ways: live and offline must keep the same packets. The sender pauses 1 ms
every 32 frames so that the veth backlog never overflows, and the veth pair's own drop counters are
checked, so a frame the kernel lost is not taken for one gaspp lost.

The captures are chosen from DATA_DIR/pcaps by a fixed rule, so the same data gives the same set:
classic pcap, Ethernet link type, nothing cut by the snap length, no 802.1Q/802.1ad tag, every
frame fitting the veth MTU, at most 3000 records spanning under 50 s of capture time (no flow
timeout can then differ between capture time offline and wall time live). Among those: the one
with the most UDP packets, the largest with both TCP and UDP, the one with the largest frame, then
the largest ones, five in all.

Each ring is read by a reader thread of its own unless `--af-packet-readers one` says otherwise.
One case captures through 4 rings in one fanout group (`--af-packet-rings 4`): besides matching
the offline run, every flow's packets must have come through one ring (the source column of
`--decode-out`), and more than one ring must have been used; a second case does the same with
`--af-packet-readers one` (the batcher's thread reads every ring), and a third reads a TPACKET_V2
ring so. One case cuts frames to 128 bytes (`--af-packet-snaplen 128`), against the capture cut by
`editcap -s 128`. One case runs with `--stats-interval 1` and waits 2.5 s after the traffic: gaspp must have written
stats events before the end, one of them counting every packet (a quiet link's batches finish
without waiting for more traffic). One more case sends the smallest capture with 802.1Q-tagged frames: the veth takes the outer tag
out into the packet's metadata (VLAN offload) and gaspp must put it back (the flow records carry
the tags, and the decoder counts them). Two cases send IP fragments (a capture scapy writes: UDP
datagrams in IPv4 and IPv6 fragments, some in reverse order), on one ring and on four: the
datagrams are reassembled as offline.

A second inline run adds `--inline-fail open --inline-fail-after 0` (fail-open, every packet late):
every frame must come out of out0, the dropped ones too, in order, gaspp must count them all as
forwarded uninspected, and its stats as bypassed in at least one overload episode.

The inline IPS case takes the largest chosen capture with both TCP and UDP and a rule file with
one rule, `drop udp any any -> any any`. `gaspp --inline in1:out1 -S RULES` runs in the namespace,
with a receiver (an AF_PACKET socket) on out0 and another on in0, both started first; once gaspp
says `capturing on` for in1 and for out1, every frame of the capture goes into in0 as above, then
gaspp is stopped with SIGINT and the receivers after it. Oracle: `gaspp -r FILE -S RULES -w
PASSED`: the frames that came out of out0 must be PASSED's frames, byte for byte and in the same
order (the whole capture comes in on one side, so capture order is the order in which they go
out); nothing may come back out of in0 (gaspp must not send a packet onto the side it came from);
gaspp's `inline in1:out1: N packets forwarded, M dropped, K lost to send errors` line must say N =
PASSED's frames, M = the capture's packets - N and K = 0; the rule must drop some of the packets
and pass some; and the eve.json flow records and decoder counters must be the offline run's, as
above. The receivers' own drop counters and the veth pairs' are checked as the sender's are.

Three cases read through a TPACKET_V2 ring (`--af-packet-version 2`: a slot per frame): the
capture with the largest frame, the one with the most packets, and the tagged one. The cases with
a stats JSON (snap length, V2) also check its latency (capture to verdict): one sample per packet
read, 0 < median <= p99 <= max.

With --restarts ASAN_GASPP (scripts/test.sh, with the address-sanitizer build), only one case runs:
that build is started and stopped three times on one link with the capture sent each time; every
run must exit cleanly (a leak makes it exit non-zero), count each frame once (the kernel's received
= packets = passed + dropped, no kernel drops, nothing a ring's reader thread read left unprocessed
at the stop) and give the offline run's flow records.

Skipped (exit 77) when not run as root or when a namespace or veth pair cannot be created.

usage: live_capture.py GASPP DATA_DIR [--backend cpu|cuda]   (the live runs' backend; the oracle runs on the CPU)
       live_capture.py GASPP DATA_DIR --restarts ASAN_GASPP      (only the restart case, below)
       (live_capture.py --send IFACE FILE: the sender, run inside the namespace)
       (live_capture.py --receive IFACE FILE: the receiver, run inside the namespace)
"""
import collections
import atexit
import errno
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

MAX_PACKETS = 3000
BACKEND = "cpu"  # the live runs' backend (--backend)
MAX_SPAN_S = 50.0
PICKS = 5
MTU = 9000
BURST = 32            # frames sent between pauses
PAUSE_S = 0.001       # so the veth backlog (netdev_max_backlog) never overflows
READY_TIMEOUT_S = 10
DRAIN_S = 0.5
STOP_TIMEOUT_S = 30
BPF = ["tcp"]
PAIRS = (("tx", "rx"), ("in0", "in1"), ("out1", "out0"))
DEVS = [d for pair in PAIRS for d in pair]
INLINE_RULE = 'drop udp any any -> any any (msg:"drop udp"; sid:1;)\n'
# Reject rules: TCP answered with resets to the source, UDP with ICMP unreachables to the destination.
REJECT_RULES = ('reject tcp any any -> any any (msg:"reject tcp"; sid:7;)\n'
                'rejectdst udp any any -> any any (msg:"reject udp"; sid:8;)\n')


def expected_answer(frame, to_source, mtu=1500):
    """The answer to a rejected Ethernet frame as Suricata's respond-reject-libnet11.c builds it,
    written with scapy (which computes the checksums): a TCP RST|ACK, or an ICMP(v6) destination
    unreachable, administratively prohibited, quoting the packet up to the MTU."""
    from scapy.all import ICMP, IP, TCP, Ether, ICMPv6DestUnreach, IPv6, Raw
    e = Ether(frame)
    ip = e.payload
    v4 = isinstance(ip, IP)
    src, dst = (ip.dst, ip.src) if to_source else (ip.src, ip.dst)
    eth = Ether(src=e.dst, dst=e.src, type=e.type) if to_source else Ether(src=e.src, dst=e.dst, type=e.type)
    net = IP(src=src, dst=dst, ttl=64, id=0, flags=0) if v4 else IPv6(src=src, dst=dst, hlim=64)
    raw_ip = bytes(frame[14:])
    ip_len = (ip.len if v4 else 40 + ip.plen)
    if (ip.proto if v4 else ip.nh) == 6:
        t = ip[TCP]
        seg = ip_len - (ip.ihl * 4 if v4 else 40) - t.dataofs * 4
        if to_source:
            ans = TCP(sport=t.dport, dport=t.sport, seq=t.ack, ack=(t.seq + seg + (1 if t.ack == 0 else 0)) & 0xffffffff,
                      flags="RA", window=t.window)
        else:
            ans = TCP(sport=t.sport, dport=t.dport, seq=t.seq, ack=t.ack, flags="RA", window=t.window)
        return bytes(eth / net / ans)
    quote = raw_ip[:min(ip_len, len(raw_ip), mtu - (20 if v4 else 40) - 8)]
    icmp = ICMP(type=3, code=10) if v4 else ICMPv6DestUnreach(code=1)
    return bytes(eth / net / icmp / Raw(quote))
RECV_BUF = 64 << 20   # the receiver's socket buffer: a whole capture fits
RECV_QUIET_S = 0.1    # after SIGINT, the receiver reads on until nothing has come for this long
SO_RCVBUFFORCE = 33
SOL_PACKET = 263
PACKET_STATISTICS = 6
ETH_P_ALL = 0x0003

MAGICS = {b"\xa1\xb2\xc3\xd4": (">", 1e-6), b"\xd4\xc3\xb2\xa1": ("<", 1e-6),
          b"\xa1\xb2\x3c\x4d": (">", 1e-9), b"\x4d\x3c\xb2\xa1": ("<", 1e-9)}


def read_pcap(path):
    """(link type, [(timestamp, caplen, wirelen, frame)]) of a classic pcap, None for anything else."""
    with open(path, "rb") as f:
        b = f.read()
    if len(b) < 24 or b[:4] not in MAGICS:
        return None
    end, unit = MAGICS[b[:4]]
    linktype = struct.unpack(end + "I", b[20:24])[0]
    recs, off = [], 24
    while off + 16 <= len(b):
        s, frac, cap, wire = struct.unpack(end + "IIII", b[off:off + 16])
        recs.append((s + frac * unit, cap, wire, b[off + 16:off + 16 + cap]))
        off += 16 + cap
    if off != len(b):
        recs.append((0, 1, 0, b""))  # a cut record: caplen != length kept, so never chosen
    return linktype, recs


def l4_counts(frames):
    tcp = udp = 0
    for d in frames:
        et, proto = d[12:14], None
        if et == b"\x08\x00" and len(d) >= 34:
            proto = d[23]
        elif et == b"\x86\xdd" and len(d) >= 54:
            proto = d[20]
        tcp += proto == 6
        udp += proto == 17
    return tcp, udp


def candidates(data, mtu, tagged=False):
    """Captures that qualify; tagged: those with 802.1Q/802.1ad tags instead of those without."""
    out = []
    root = os.path.join(data, "pcaps")
    for dirpath, dirnames, files in os.walk(root):
        dirnames.sort()
        for name in sorted(files):
            path = os.path.join(dirpath, name)
            got = read_pcap(path)
            if not got:
                continue
            linktype, recs = got
            if linktype != 1 or not recs or len(recs) > MAX_PACKETS:
                continue
            if any(cap != wire or len(d) != cap or not 14 <= cap <= mtu + 14 for _, cap, wire, d in recs):
                continue
            if any(d[12:14] in (b"\x81\x00", b"\x88\xa8") for _, _, _, d in recs) != tagged:
                continue
            times = [t for t, _, _, _ in recs]
            if max(times) - min(times) >= MAX_SPAN_S:
                continue
            frames = [d for _, _, _, d in recs]
            tcp, udp = l4_counts(frames)
            out.append({"path": path, "name": os.path.relpath(path, root), "n": len(recs), "tcp": tcp, "udp": udp,
                        "largest": max(len(d) for d in frames)})
    return out


def fragments_capture(data, mtu):
    """A capture of fragmented UDP datagrams (IPv4, and IPv6 with a fragment header), their
    fragments partly reversed, between whole packets, written by scapy into a directory removed at
    exit; None without scapy (a note says so)."""
    try:
        from scapy.all import IP, UDP, Ether, IPv6, IPv6ExtHdrFragment, Raw, fragment, fragment6, wrpcap
    except ImportError:
        print("note: no scapy: the IP fragments case is left out")
        return None
    frames = []
    for k in range(6):
        eth = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
        body = bytes((k * 7 + i) % 251 for i in range(3000 + 100 * k))
        v4 = fragment(eth / IP(src="10.9.0.1", dst="10.9.0.2", id=100 + k) / UDP(sport=4000 + k, dport=53) / Raw(body),
                      fragsize=min(1200, mtu - 40))
        v6 = fragment6(eth / IPv6(src="fd00::1", dst="fd00::2") / IPv6ExtHdrFragment(id=200 + k) /
                       UDP(sport=5000 + k, dport=53) / Raw(body), min(1280, mtu))
        frames += (v4 if k % 2 else list(reversed(v4))) + v6
        frames.append(eth / IP(src="10.9.0.3", dst="10.9.0.4") / UDP(sport=6000 + k, dport=7) / Raw(b"whole"))
    tmp = tempfile.mkdtemp(prefix="gaspp-live-frag-")
    atexit.register(shutil.rmtree, tmp, True)
    path = os.path.join(tmp, "fragments.pcap")
    for i, f in enumerate(frames):
        f.time = 1700000000 + i * 0.001
    wrpcap(path, frames)
    raw = [bytes(f) for f in frames]
    tcp, udp = l4_counts(raw)
    return {"path": path, "name": "generated/fragments.pcap", "n": len(raw), "tcp": tcp, "udp": udp,
            "largest": max(len(d) for d in raw)}


def choose(cands):
    picks = []

    def best(key, cond=lambda c: True):
        left = [c for c in cands if c not in picks and cond(c)]
        if left:
            picks.append(min(left, key=lambda c: (-key(c), c["name"])))

    best(lambda c: c["udp"], lambda c: c["udp"] > 0)
    best(lambda c: c["n"], lambda c: c["tcp"] > 0 and c["udp"] > 0)
    best(lambda c: c["largest"])
    while len(picks) < PICKS and len(picks) < len(cands):
        best(lambda c: c["n"])
    return picks


def send(iface, path):
    """The sender: every frame of the capture out of IFACE, in order, from one CPU (so that no two
    frames can overtake each other through different CPUs' backlogs)."""
    cpus = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpus[0]})
    _, recs = read_pcap(path)
    peer = iface
    try:  # the veth peer: the link whose ifindex is IFACE's iflink
        with open(f"/sys/class/net/{iface}/iflink") as f:
            iflink = f.read().strip()
        for n in os.listdir("/sys/class/net"):
            with open(f"/sys/class/net/{n}/ifindex") as f:
                if f.read().strip() == iflink and n != iface:
                    peer = n
    except OSError:
        pass

    def dropped():  # frames the veth pair itself lost (a full backlog), as its counters say
        total = 0
        for dev, what in ((iface, "tx_dropped"), (peer, "rx_dropped")):
            try:
                with open(f"/sys/class/net/{dev}/statistics/{what}") as f:
                    total += int(f.read())
            except (OSError, ValueError):
                pass
        return total

    before = dropped()
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)  # protocol 0: sends only, receives nothing
    s.bind((iface, 0))
    sent = 0
    for _, _, _, frame in recs:
        while True:
            try:
                s.send(frame)
                break
            except BlockingIOError:
                time.sleep(PAUSE_S)
            except OSError as e:
                if e.errno != errno.ENOBUFS:  # no buffer: wait and send again
                    raise
                time.sleep(PAUSE_S)
        sent += 1
        if sent % BURST == 0:
            time.sleep(PAUSE_S)
    s.close()
    time.sleep(0.05)
    print(f"sent {sent} dropped {dropped() - before}")
    return 0


def receive(iface, path):
    """The receiver: every frame that comes in on IFACE (not those sent out of it), as it came, into
    PATH as length-prefixed records (4 bytes little-endian, then the frame), until SIGINT or SIGTERM
    and then until nothing more comes for RECV_QUIET_S; says `ready` once bound and at the end
    `received N dropped D` (D: frames the socket itself lost, as the kernel counts them)."""
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)  # protocol 0: nothing comes before the bind
    try:
        s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, RECV_BUF)
    except OSError:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECV_BUF)
    s.bind((iface, ETH_P_ALL))
    s.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8)  # the counters are reset on each read: from here on
    s.settimeout(RECV_QUIET_S)
    print("ready", flush=True)
    got = 0
    with open(path, "wb") as f:
        while True:
            try:
                frame, addr = s.recvfrom(1 << 16)
            except socket.timeout:
                if stop.is_set():
                    break
                continue
            if addr[2] == socket.PACKET_OUTGOING:
                continue
            f.write(struct.pack("<I", len(frame)) + frame)
            got += 1
    _, drops = struct.unpack("II", s.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))
    s.close()
    print(f"received {got} dropped {drops}", flush=True)
    return 0


def read_frames(path):
    """The frames of a receiver's file."""
    with open(path, "rb") as f:
        b = f.read()
    frames, off = [], 0
    while off + 4 <= len(b):
        n = struct.unpack("<I", b[off:off + 4])[0]
        frames.append(b[off + 4:off + 4 + n])
        off += 4 + n
    return frames


def ns_run(ns, *args, check=True):
    return subprocess.run(["ip", "netns", "exec", ns, *args], capture_output=True, text=True, check=check)


def setup(ns):
    """Namespace, veth pairs and MTU; returns the MTU set, or a reason to skip."""
    p = subprocess.run(["ip", "netns", "add", ns], capture_output=True, text=True)
    if p.returncode != 0:
        return f"cannot create a network namespace: {p.stderr.strip()}"
    # IPv6 off before any link exists or comes up: no router solicitation, MLD report or DAD probe.
    ipv6 = os.path.exists("/proc/sys/net/ipv6/conf/all")
    for key in ("all", "default") if ipv6 else ():
        p = ns_run(ns, "sysctl", "-qw", f"net.ipv6.conf.{key}.disable_ipv6=1", check=False)
        if p.returncode != 0:
            return f"cannot turn IPv6 off in the namespace: {p.stderr.strip()}"
    for a, b in PAIRS:
        p = ns_run(ns, "ip", "link", "add", "name", a, "type", "veth", "peer", "name", b, check=False)
        if p.returncode != 0:
            return f"cannot create a veth pair: {p.stderr.strip()}"
    for dev in DEVS if ipv6 else ():
        p = ns_run(ns, "sysctl", "-qw", f"net.ipv6.conf.{dev}.disable_ipv6=1", check=False)
        if p.returncode != 0:
            return f"cannot turn IPv6 off on {dev}: {p.stderr.strip()}"
    mtu = None
    for m in (MTU, 4000, 1500):
        if all(ns_run(ns, "ip", "link", "set", "dev", dev, "mtu", str(m), check=False).returncode == 0
               for dev in DEVS):
            mtu = m
            break
    if mtu is None:
        return "cannot set an MTU on the veth pairs"
    for dev in DEVS:
        p = ns_run(ns, "ip", "link", "set", "dev", dev, "up", check=False)
        if p.returncode != 0:
            return f"cannot bring {dev} up: {p.stderr.strip()}"
    return mtu


def teardown(ns):
    subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def eve(outdir):
    """(flow tuples sorted, decoder counters) of DIR/eve.json; raises ValueError with a reason."""
    path = os.path.join(outdir, "eve.json")
    if not os.path.exists(path):
        raise ValueError("no eve.json")
    flows, decoder = [], None
    with open(path) as f:
        for line in f:
            e = json.loads(line)
            if e.get("event_type") == "flow":
                fl = e["flow"]
                flows.append((e.get("src_ip"), e.get("src_port", -1), e.get("dest_ip"), e.get("dest_port", -1),
                              e.get("proto"), tuple(e.get("vlan") or ()), fl["pkts_toserver"], fl["pkts_toclient"],
                              fl["bytes_toserver"], fl["bytes_toclient"]))
            elif e.get("event_type") == "stats":
                decoder = e["stats"]["decoder"]
    if decoder is None:
        raise ValueError("no stats event in eve.json")
    return sorted(flows), decoder


def send_capture(ns, iface, cap):
    """Every frame of the capture out of IFACE (the sender, in the namespace); a failure reason or None."""
    p = ns_run(ns, sys.executable, os.path.abspath(__file__), "--send", iface, cap["path"], check=False)
    if p.returncode != 0:
        return f"the sender failed: {p.stderr.strip()[-300:]}"
    words = p.stdout.split()
    if len(words) != 4 or words[0] != "sent":
        return f"the sender said {p.stdout.strip()[-200:]!r}"
    sent, dropped = int(words[1]), int(words[3])
    if sent != cap["n"]:
        return f"the sender sent {sent} of {cap['n']} frames"
    if dropped:
        return f"the veth pair itself dropped {dropped} frames (the kernel's backlog, not gaspp)"
    return None


def veth_drops(ns, counters):
    """The sum of the namespace's link counters named as (link, counter) pairs."""
    total = 0
    for dev, what in counters:
        p = ns_run(ns, "cat", f"/sys/class/net/{dev}/statistics/{what}", check=False)
        total += int(p.stdout.strip() or 0) if p.returncode == 0 else 0
    return total


def wait_ready(proc, ready, reader, lines, mode, missing):
    """None once gaspp said it captures (ready set), else why not: it exited, or READY_TIMEOUT_S passed."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not ready.is_set() and proc.poll() is None and time.monotonic() < deadline:
        ready.wait(0.05)
    if ready.is_set():
        return None
    if proc.poll() is not None:
        reader.join(5)
        return f"gaspp {mode} exited {proc.returncode} before capturing: {' | '.join(lines)[-300:]}"
    return f"no {missing()} on stderr within {READY_TIMEOUT_S} s: {' | '.join(lines)[-300:]}"


def rings_kept_flows(rows_path):
    """With several fanout rings: None when every flow's packets came through one ring and more than
    one ring was used, else why not (from --decode-out's source column, flows by their symmetric hash
    and endpoints)."""
    flows, used = collections.defaultdict(set), collections.Counter()
    with open(rows_path) as f:
        for line in f:
            if line.startswith("#"):
                continue
            c = line.rstrip("\n").split("\t")
            if c[8] not in ("ipv4", "ipv6"):
                continue
            key = (c[32], c[11], frozenset([(c[9], c[15]), (c[10], c[16])]))
            flows[key].add(c[1])
            used[c[1]] += 1
    split = [k for k, v in flows.items() if len(v) > 1]
    if split:
        return f"{len(split)} of {len(flows)} flows came through more than one ring"
    if len(used) < 2:
        return f"all {sum(used.values())} IP packets came through one ring ({dict(used)}): fanout did not spread them"
    return None


def live(gaspp, ns, cap, outdir, extra, tmp):
    """gaspp -i rx while the capture's frames go out of tx; returns a failure reason or None."""
    os.makedirs(outdir)
    extra = [os.path.join(outdir, {"ROWS": "rows.tsv", "STATS": "stats.json"}[a]) if a in ("ROWS", "STATS") else a
             for a in extra]
    cmd = ["ip", "netns", "exec", ns, gaspp, "-i", "rx", "-l", outdir, "--backend", BACKEND] + extra
    stdout = open(os.path.join(tmp, "live.stdout"), "w")
    proc = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.PIPE, text=True, start_new_session=True)
    lines, ready = [], threading.Event()

    def read_stderr():
        for line in proc.stderr:
            lines.append(line.rstrip("\n"))
            if "capturing on rx" in line:
                ready.set()

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    try:
        why = wait_ready(proc, ready, reader, lines, "-i", lambda: "'capturing on rx'")
        if why:
            return why
        why = send_capture(ns, "tx", cap)
        if why:
            return why
        periodic = "--stats-interval" in extra
        # With periodic stats, wait past two intervals: the traffic has stopped, so a stats event
        # before the end must already count every packet (a quiet source's batches finish at once).
        time.sleep(2.5 if periodic else DRAIN_S)
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return f"gaspp did not stop within {STOP_TIMEOUT_S} s of SIGINT"
        reader.join(5)
        if proc.returncode not in (0, 130):
            return f"gaspp -i exited {proc.returncode} after SIGINT: {' | '.join(lines)[-300:]}"
        if "--af-packet-rings" in extra:
            why = rings_kept_flows(os.path.join(outdir, "rows.tsv"))
            if why:
                return why
            # The CUDA backend registers every ring for device access (batches read in place).
            rings = int(extra[extra.index("--af-packet-rings") + 1])
            if BACKEND == "cuda" and "--stats-json" in extra:
                with open(os.path.join(outdir, "stats.json")) as f:
                    b = json.load(f)["batches"]
                if (b.get("regions_registered"), b.get("regions_not_registered")) != (rings, 0):
                    return (f"{rings} rings: {b.get('regions_registered')} registered for the device, "
                            f"{b.get('regions_not_registered')} not")
        if periodic:
            with open(os.path.join(outdir, "eve.json")) as f:
                stats = [e["stats"] for e in map(json.loads, f) if e.get("event_type") == "stats"]
            early = [st["decoder"]["pkts"] for st in stats[:-1]]
            if len(stats) < 3 or cap["n"] not in early:
                return (f"--stats-interval 1: {len(stats)} stats events, packets before the end {early} "
                        f"(want >= 3 events, one before the end with all {cap['n']})")
        return None
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        stdout.close()


def reject_case(gaspp, ns, c, rules, tmp, mtu):
    """The inline run with reject rules against the offline run's alerts and verdicts (which packets,
    which way) and the answers expected_answer() builds; a failure reason or ""."""
    off_dir = os.path.join(tmp, "reject-offline")
    passed = os.path.join(tmp, "reject-passed.pcap")
    why = offline(gaspp, c, off_dir, ["-S", rules, "-w", passed, "--eve-verdict"])
    if why:
        return why
    frames = [d for _, _, _, d in read_pcap(c["path"])[1]]
    want = [d for _, _, _, d in read_pcap(passed)[1]]
    to_src, to_dst = [], []
    with open(os.path.join(off_dir, "eve.json")) as f:
        for line in f:
            e = json.loads(line)
            if e.get("event_type") != "alert":
                continue
            v = e.get("verdict", {})
            target = v.get("reject_target")
            proto_ok = v.get("reject") == (["tcp-reset"] if e["proto"] == "TCP" else ["icmp-prohib"])
            if v.get("action") != "drop" or target is None or not proto_ok:
                return f"offline alert on packet {e['pcap_cnt']}: verdict {v}, want a drop with reject_target and reject"
            frame = frames[e["pcap_cnt"] - 1]
            if target in ("to_client", "both"):
                to_src.append(expected_answer(frame, True, mtu))
            if target in ("to_server", "both"):
                to_dst.append(expected_answer(frame, False, mtu))
    if not to_src or not to_dst:
        return f"offline: {len(to_src)} answers to sources, {len(to_dst)} to destinations; the case needs both"
    why, got, counts = inline(gaspp, ns, c, os.path.join(tmp, "reject-live"), rules, tmp)
    if why:
        return why
    problems = []
    if got["in0"] != to_src:
        problems.append(f"{len(got['in0'])} frames back out of in0, {len(to_src)} resets to sources expected: "
                        f"{first_difference(got['in0'], to_src)}")
    answers = [d for d in got["out0"] if d in to_dst]
    forwarded = [d for d in got["out0"] if d not in to_dst]
    if forwarded != want:
        problems.append(f"{len(forwarded)} frames forwarded out of out0, {len(want)} passed offline: "
                        f"{first_difference(forwarded, want)}")
    if sorted(answers) != sorted(to_dst):
        problems.append(f"{len(answers)} answers to destinations out of out0, {len(to_dst)} expected")
    if counts != (len(want), len(frames) - len(want), 0, 0, len(to_src) + len(to_dst), 0):
        problems.append(f"gaspp says (forwarded, dropped, send errors, uninspected, answered, unanswerable) {counts}")
    return "; ".join(problems)


def crossed_problems(got, want, what):
    """What is wrong with an inline run's receivers: out0 must have exactly `want` (frames that were
    `what`), in order, and nothing may come back out of in0, the side the frames went in on."""
    problems = []
    if got["out0"] != want:
        problems.append(f"{len(got['out0'])} frames out of out0, {len(want)} {what}: {first_difference(got['out0'], want)}")
    if got["in0"]:
        problems.append(f"{len(got['in0'])} frames came back out of in0, the side they came in on")
    return problems


def inline(gaspp, ns, cap, outdir, rules, tmp, extra=()):
    """gaspp --inline in1:out1 -S RULES [EXTRA] while the capture's frames go into in0, with receivers
    on out0 and in0; returns (failure reason or None, {receiver's link: frames}, (forwarded, dropped,
    send errors, forwarded uninspected) as gaspp says)."""
    os.makedirs(outdir)
    receivers = {}
    proc = stdout = None
    try:
        for dev in ("out0", "in0"):
            path = os.path.join(tmp, f"received-{dev}")
            r = subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, os.path.abspath(__file__), "--receive",
                                  dev, path], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 start_new_session=True)
            receivers[dev] = (r, path)
            if r.stdout.readline().strip() != "ready":
                if r.poll() is None:
                    os.killpg(r.pid, signal.SIGKILL)
                r.wait()
                return f"the receiver on {dev} did not start: {r.stderr.read().strip()[-300:]}", {}, None
        forward_drops = (("out1", "tx_dropped"), ("out0", "rx_dropped"), ("in1", "tx_dropped"), ("in0", "rx_dropped"))
        before = veth_drops(ns, forward_drops)
        cmd = ["ip", "netns", "exec", ns, gaspp, "--inline", "in1:out1", "-l", outdir, "--backend", BACKEND, "-S", rules,
               *extra]
        stdout = open(os.path.join(tmp, "inline.stdout"), "w")
        proc = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.PIPE, text=True, start_new_session=True)
        lines, ready, waiting = [], threading.Event(), {"in1", "out1"}

        def read_stderr():
            for line in proc.stderr:
                lines.append(line.rstrip("\n"))
                for dev in list(waiting):
                    if f"capturing on {dev} " in line:
                        waiting.discard(dev)
                if not waiting:
                    ready.set()

        reader = threading.Thread(target=read_stderr, daemon=True)
        reader.start()
        why = wait_ready(proc, ready, reader, lines, "--inline",
                         lambda: f"'capturing on' for {', '.join(sorted(waiting))}")
        if why:
            return why, {}, None
        why = send_capture(ns, "in0", cap)
        if why:
            return why, {}, None
        time.sleep(DRAIN_S)
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return f"gaspp did not stop within {STOP_TIMEOUT_S} s of SIGINT", {}, None
        reader.join(5)
        if proc.returncode not in (0, 130):
            return f"gaspp --inline exited {proc.returncode} after SIGINT: {' | '.join(lines)[-300:]}", {}, None
        counts = None
        for line in lines:
            m = re.fullmatch(r"gaspp: inline in1:out1: (\d+) packets forwarded \((\d+) of them uninspected: "
                             r"overload, fail-open\), (\d+) dropped, (\d+) lost to send errors; (\d+) rejects "
                             r"answered, (\d+) could not be", line)
            if m:
                fwd, bypassed, dropped, errors, answered, unanswered = (int(g) for g in m.groups())
                counts = (fwd, dropped, errors, bypassed, answered, unanswered)
        if counts is None:
            return f"no 'inline in1:out1: ... forwarded' line on stderr: {' | '.join(lines)[-300:]}", {}, None
        time.sleep(DRAIN_S)  # what gaspp sent last reaches the receivers
        got = {}
        for dev, (r, path) in receivers.items():
            os.killpg(r.pid, signal.SIGINT)
            try:
                out, err = r.communicate(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                return f"the receiver on {dev} did not stop within {STOP_TIMEOUT_S} s", {}, counts
            words = out.split()
            if r.returncode != 0 or len(words) != 4 or words[0] != "received":
                return f"the receiver on {dev} failed: {(out + err).strip()[-300:]}", {}, counts
            if int(words[3]):
                return f"the receiver's socket on {dev} itself dropped {words[3]} frames", {}, counts
            got[dev] = read_frames(path)
            if len(got[dev]) != int(words[1]):
                return f"the receiver on {dev} counted {words[1]} frames, wrote {len(got[dev])}", {}, counts
        dropped = veth_drops(ns, forward_drops) - before
        if dropped:
            return f"the veth pairs themselves dropped {dropped} frames (the kernel's backlog, not gaspp)", got, counts
        return None, got, counts
    finally:
        for p in [proc] + [r for r, _ in receivers.values()]:
            if p is not None and p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        if stdout:
            stdout.close()


def first_difference(got, want):
    """Where two lists of frames first differ, in words."""
    if sorted(got) == sorted(want):
        return "the same frames in another order"
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            return f"frame {i + 1} differs ({len(g)} bytes out, {len(w)} passed offline)"
    return f"the first {min(len(got), len(want))} frames agree"


def offline(gaspp, cap, outdir, extra):
    os.makedirs(outdir)
    extra = [os.path.join(outdir, {"ROWS": "rows.tsv", "STATS": "stats.json"}[a]) if a in ("ROWS", "STATS") else a
             for a in extra]
    path = cap["path"]
    if "--af-packet-snaplen" in extra:
        # The oracle reads the capture cut as the snap length cuts it live (editcap -s keeps the
        # original length of each record, as the kernel reports the wire length).
        snap = extra[extra.index("--af-packet-snaplen") + 1]
        path = os.path.join(outdir, "cut.pcap")
        p = subprocess.run(["editcap", "-s", snap, cap["path"], path], capture_output=True, text=True)
        if p.returncode != 0:
            return f"editcap -s {snap} failed: {p.stderr.strip()[-300:]}"
    p = subprocess.run([gaspp, "-r", path, "-l", outdir, "--backend", "cpu"] + extra, capture_output=True,
                       text=True)
    return None if p.returncode == 0 else f"gaspp -r exited {p.returncode}: {p.stderr.strip()[-300:]}"


def compare(live_dir, off_dir):
    """(failure reason or None, packets, flows)."""
    try:
        lf, ld = eve(live_dir)
    except ValueError as e:
        return f"live: {e}", 0, 0
    try:
        of, od = eve(off_dir)
    except ValueError as e:
        return f"offline: {e}", 0, 0
    problems = []
    if ld.get("pkts") != od.get("pkts"):
        problems.append(f"{ld.get('pkts')} packets live, {od.get('pkts')} offline")
    diff = sorted(k for k in set(ld) | set(od) if k != "pkts" and ld.get(k) != od.get(k))
    if diff:
        problems.append("decoder counters differ: " + ", ".join(f"{k} {ld.get(k)} live, {od.get(k)} offline"
                                                                 for k in diff[:6]))
    if lf != of:
        lc, oc = collections.Counter(lf), collections.Counter(of)
        only_live, only_off = sorted((lc - oc).elements()), sorted((oc - lc).elements())
        problems.append(f"{len(lf)} flows live, {len(of)} offline; only live: {only_live[:3]}; "
                        f"only offline: {only_off[:3]}")
    return ("; ".join(problems) if problems else None), od.get("pkts"), len(of)


def compare_cut(live_dir, off_dir):
    """The summaries' captured bytes and cut packets, live against offline (EVE's decoder counters do
    not show what a snap length cut)."""
    keys = ("packets", "bytes", "captured_bytes", "truncated_by_snaplen")
    got = []
    for d in (live_dir, off_dir):
        with open(os.path.join(d, "stats.json")) as f:
            j = json.load(f)
        got.append({k: j.get(k) for k in keys})
    if got[0] != got[1]:
        return f"summary live {got[0]}, offline {got[1]}"
    if not got[1]["truncated_by_snaplen"]:
        return "the snap length cut nothing: the case proves nothing"
    return None


def restarts(asan, gaspp, ns, cap, tmp, rounds=3):
    """gaspp (an ASan build: a leak makes it exit non-zero) started and stopped `rounds` times on one
    link, the capture sent in each: every run must exit cleanly, count every frame once (the kernel's
    received = packets = passed + dropped, no kernel drops, none left unprocessed at the stop), match
    the offline run's flows and report a latency for every packet. Returns a failure reason or None."""
    off_dir = os.path.join(tmp, "restart-offline")
    why = offline(gaspp, cap, off_dir, [])
    if why:
        return why
    for k in range(rounds):
        d = os.path.join(tmp, f"restart-{k}")
        why = live(asan, ns, cap, d, ["--stats-json", "STATS"], tmp)
        if not why:
            why, _, _ = compare(d, off_dir)
        if not why:
            with open(os.path.join(d, "stats.json")) as f:
                st = json.load(f)
            kp, kd = st["capture"]["kernel_packets"], st["capture"]["kernel_drops"]
            out = st["outcome"]
            left = st["capture"].get("unprocessed_at_stop")
            if kd or kp != cap["n"] or st["packets"] != cap["n"] or out["passed"] + out["dropped"] != cap["n"] or left != 0:
                why = (f"kernel received {kp}, dropped {kd}; packets {st['packets']}, passed {out['passed']}, "
                       f"dropped {out['dropped']}; read at the stop, not processed {left}; sent {cap['n']}")
            else:
                why = latency_problem(st, cap["n"])
        if why:
            return f"run {k + 1} of {rounds}: {why}"
    return None


def latency_problem(st, n):
    """Why the stats JSON's latency block is wrong for a live run of n packets, or None."""
    lat = st.get("latency")
    if not lat:
        return "no latency in the stats JSON of a live run"
    if lat["packets"] != n:
        return f"latency of {lat['packets']} packets, {n} were read"
    if not 0 < lat["median_us"] <= lat["p99_us"] <= lat["max_us"] < 60e6:
        return f"latency out of order or range: {lat}"
    return None


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "--send":
        return send(sys.argv[2], sys.argv[3])
    if len(sys.argv) >= 2 and sys.argv[1] == "--receive":
        return receive(sys.argv[2], sys.argv[3])
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    gaspp, data = sys.argv[1], sys.argv[2]
    global BACKEND
    asan = None
    rest = sys.argv[3:]
    while len(rest) >= 2 and rest[0] in ("--backend", "--restarts"):
        if rest[0] == "--backend":
            BACKEND = rest[1]
        else:
            asan = os.path.abspath(rest[1])
        rest = rest[2:]
    if rest:
        print(__doc__)
        return 2
    if os.sep in gaspp:
        gaspp = os.path.abspath(gaspp)
    if os.geteuid() != 0:
        print("live capture: not root (a network namespace and a packet socket need it); skipping")
        return 77
    if not shutil.which("ip"):
        print("live capture: no `ip` command (iproute2); skipping")
        return 77
    ns = f"gaspp-live-{os.getpid()}"
    failures = checked = 0

    def report(label, why, ok):
        """One case's line: FAIL and the reason (counted), or ok and what ok() says."""
        nonlocal failures
        if why:
            print(f"FAIL {label}: {why}")
            failures += 1
        else:
            detail = ok()
            print(f"ok   {label}" + (f": {detail}" if detail else ""))
    try:
        mtu = setup(ns)
        if isinstance(mtu, str):
            print(f"live capture: {mtu}; skipping")
            return 77
        picks = choose(candidates(data, mtu))
        if not picks:
            print(f"FAIL no capture under {data}/pcaps qualifies (classic pcap, Ethernet, untagged, uncut, frames "
                  f"within MTU {mtu}, <= {MAX_PACKETS} records over < {MAX_SPAN_S:.0f} s)")
            print("live capture: 0 captures, 1 failures")
            return 1
        if asan:  # only the restarts, with the given (sanitizer) build
            c = max(picks, key=lambda c: (c["tcp"] > 0 and c["udp"] > 0, c["n"]))
            with tempfile.TemporaryDirectory(prefix="gaspp-live-") as tmp:
                why = restarts(asan, gaspp, ns, c, tmp)
            print(f"FAIL restarts {c['name']}: {why}" if why else f"ok   restarts {c['name']}: 3 runs of {c['n']} packets")
            print(f"live capture: 1 case, {1 if why else 0} failures")
            return 1 if why else 0
        for c in picks:
            print(f"capture {c['name']}: {c['n']} packets (tcp {c['tcp']}, udp {c['udp']}), largest frame "
                  f"{c['largest']} bytes")
        if not any(c["tcp"] for c in picks) or not any(c["udp"] for c in picks):
            print("FAIL the chosen captures do not carry both TCP and UDP")
            failures += 1
        mixed = [c for c in picks if c["tcp"] and c["n"] > c["tcp"]]
        cases = [(c, []) for c in picks] + [(mixed[0] if mixed else picks[0], BPF)]
        cases.append((picks[0], ["--stats-interval", "1"]))
        # Several rings in one fanout group: the kernel spreads flows over them, each flow on one.
        many = max(picks, key=lambda c: (c["tcp"] > 0 and c["udp"] > 0, c["n"]))
        cases.append((many, ["--af-packet-rings", "4", "--decode-out", "ROWS", "--stats-json", "STATS"]))
        # The same with the batcher's thread reading every ring itself (no reader threads).
        cases.append((many, ["--af-packet-rings", "4", "--af-packet-readers", "one", "--decode-out", "ROWS"]))
        # TPACKET_V2: a slot per frame, read at once; the largest frames and the most packets.
        cases.append((max(picks, key=lambda c: (c["largest"], c["name"])), ["--af-packet-version", "2"]))
        cases.append((many, ["--af-packet-version", "2", "--stats-json", "STATS"]))
        cases.append((many, ["--af-packet-version", "2", "--af-packet-readers", "one"]))
        # IP fragments (IPv4 and IPv6, out of order among other traffic): the reader threads tell
        # the batcher which records may be fragments; the datagrams must be reassembled as offline.
        frag = fragments_capture(data, mtu)
        if frag:
            print(f"capture {frag['name']}: {frag['n']} packets, IP fragments")
            cases.append((frag, []))
            cases.append((frag, ["--af-packet-rings", "4", "--decode-out", "ROWS"]))
        # A snap length: frames cut to 128 bytes live, against the capture cut by editcap.
        if shutil.which("editcap"):
            cases.append((max(picks, key=lambda c: (c["largest"], c["name"])),
                          ["--af-packet-snaplen", "128", "--stats-json", "STATS"]))
        else:
            print("note: no editcap (tshark's package): the snap length case is left out")
        # Tagged frames: the veth takes the outer 802.1Q tag out into the packet's metadata (VLAN
        # offload), which gaspp must put back; the smallest tagged capture is enough.
        tagged = sorted(candidates(data, mtu, tagged=True), key=lambda c: (c["n"], c["name"]))
        if tagged:
            print(f"capture {tagged[0]['name']}: {tagged[0]['n']} packets, 802.1Q-tagged")
            cases.append((tagged[0], []))
            cases.append((tagged[0], ["--af-packet-version", "2"]))
        else:
            print("FAIL no 802.1Q-tagged capture qualifies")
            failures += 1
        with tempfile.TemporaryDirectory(prefix="gaspp-live-") as tmp:
            for i, (c, extra) in enumerate(cases):
                label = c["name"] + (f" '{' '.join(extra)}'" if extra else "")
                live_dir, off_dir = os.path.join(tmp, f"{i}-live"), os.path.join(tmp, f"{i}-offline")
                checked += 1
                why = live(gaspp, ns, c, live_dir, extra, tmp) or offline(gaspp, c, off_dir, extra)
                pkts = flows = 0
                if not why:
                    why, pkts, flows = compare(live_dir, off_dir)
                if not why and "--af-packet-snaplen" in extra:
                    why = compare_cut(live_dir, off_dir)
                if not why and "STATS" in extra:
                    with open(os.path.join(live_dir, "stats.json")) as f:
                        why = why or latency_problem(json.load(f), c["n"])
                report(label, why, lambda: f"{pkts} packets, {flows} flows")
            # Inline IPS: what the rule passes goes out of the other side, frame for frame, as offline's -w.
            both = [c for c in picks if c["tcp"] and c["udp"]]
            if both:
                c = max(both, key=lambda c: (c["n"], c["name"]))
                label = f"inline {c['name']} 'drop udp'"
                rules = os.path.join(tmp, "inline.rules")
                with open(rules, "w") as f:
                    f.write(INLINE_RULE)
                live_dir, off_dir = os.path.join(tmp, "inline-live"), os.path.join(tmp, "inline-offline")
                passed = os.path.join(tmp, "inline-passed.pcap")
                checked += 1
                why = offline(gaspp, c, off_dir, ["-S", rules, "-w", passed])
                want = None
                if not why:
                    got = read_pcap(passed)
                    if got is None:
                        why = "offline: -w did not write a classic pcap"
                    else:
                        want = [d for _, _, _, d in got[1]]
                        if not 0 < len(want) < c["n"]:
                            why = f"offline: the rule passed {len(want)} of {c['n']} packets (some must pass, some not)"
                if not why:
                    why, got, counts = inline(gaspp, ns, c, live_dir, rules, tmp)
                if not why:
                    problems = crossed_problems(got, want, "passed offline")
                    forwarded, dropped, errors, bypassed, _, _ = counts
                    if (forwarded, dropped, errors, bypassed) != (len(want), c["n"] - len(want), 0, 0):
                        problems.append(f"gaspp says {forwarded} forwarded ({bypassed} uninspected), {dropped} dropped, "
                                        f"{errors} send errors; offline passed {len(want)} of {c['n']}")
                    why, _, _ = compare(live_dir, off_dir)
                    if why:
                        problems.append(why)
                    why = "; ".join(problems)
                report(label, why, lambda: f"{forwarded} forwarded, {dropped} dropped")
                # Fail-open on overload with a zero threshold: every packet counts as late, so all
                # of them go out uninspected, in order, the rule's drops included.
                label = f"inline {c['name']} 'drop udp' --inline-fail open --inline-fail-after 0"
                checked += 1
                why, got, counts = inline(gaspp, ns, c, os.path.join(tmp, "inline-open"), rules, tmp,
                                          ["--inline-fail", "open", "--inline-fail-after", "0", "--stats-json",
                                           os.path.join(tmp, "inline-open.json")])
                if not why:
                    every = [d for _, _, _, d in read_pcap(c["path"])[1]]
                    problems = crossed_problems(got, every, "sent")
                    if counts != (len(every), 0, 0, len(every), 0, 0):
                        problems.append(f"gaspp says (forwarded, dropped, send errors, uninspected) {counts}, "
                                        f"want all {len(every)} forwarded uninspected")
                    with open(os.path.join(tmp, "inline-open.json")) as f:
                        cap_stats = json.load(f)["capture"]
                    if cap_stats.get("overload_bypassed") != len(every) or cap_stats.get("overload_episodes", 0) < 1:
                        problems.append(f"stats: overload_bypassed {cap_stats.get('overload_bypassed')}, episodes "
                                        f"{cap_stats.get('overload_episodes')}; want {len(every)} and at least 1")
                    why = "; ".join(problems)
                report(label, why, lambda: f"{len(every)} forwarded uninspected")
                # Reject rules: the packets offline's alerts say were rejected are answered live,
                # towards the source out of in1 (to in0) and towards the destination out of out1.
                label = f"inline {c['name']} reject tcp, rejectdst udp"
                rules = os.path.join(tmp, "reject.rules")
                with open(rules, "w") as f:
                    f.write(REJECT_RULES)
                checked += 1
                why = reject_case(gaspp, ns, c, rules, tmp, mtu)
                report(label, why, lambda: "")
            else:
                print("FAIL inline: no chosen capture carries both TCP and UDP")
                failures += 1
    except KeyboardInterrupt:
        print("live capture: interrupted")
        return 130
    finally:
        teardown(ns)
    print(f"live capture: {checked} captures, {failures} failures")
    return 1 if failures or not checked else 0


if __name__ == "__main__":
    sys.exit(main())
