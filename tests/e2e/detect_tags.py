#!/usr/bin/env python3
"""The `tag` keyword and EVE `packet` events (--eve-tagged-packets) against a reference of Suricata's
tag engine written here (detect-engine-tag.c: TagFlowAdd, TagHashAddTag, TagHandlePacketFlow,
TagHandlePacketHost).

On real captures, gaspp runs signatures with session and host tags (packets, bytes and seconds
metrics, both host directions; an HTTP signature, whose alert comes from the application layer,
and packet signatures that alert again and again, restarting their tags). The reference reads the
capture with scapy, takes gaspp's own alerts (pcap_cnt, sid) as the tags' starts, and works out
which packets are tagged: the alerting packet is counted and not logged, a packets tag logs COUNT - 1
more, a bytes tag logs until the captured bytes counted pass COUNT, a seconds tag until more than
COUNT whole seconds lie between its start and the packet; an alert again restarts the tag (the
2nd to 10th time); a host tag follows its address either way and ends after 600 s unseen. gaspp's
`packet` events must be exactly those packets, each once, their `packet` the frame byte for byte,
packet_info.linktype the capture's; and without --eve-tagged-packets there are none.

usage: detect_tags.py GASPP DATA_DIR
"""
import base64
import json
import os
import subprocess
import sys
import tempfile

try:
    from scapy.all import IP, IPv6, TCP, UDP, PcapReader
except ImportError:
    print("scapy is not installed (scripts/setup.sh installs it); skipping")
    sys.exit(1 if os.environ.get("CI") else 77)

CAPTURES = ["zeek/http-bro.org.pcap", "zeek/wikipedia.pcap"]
RULES = [
    'alert http any any -> any any (msg:"get"; http.method; content:"GET"; tag:session,4,packets; sid:1;)',
    'alert tcp any any -> any any (msg:"syn"; flags:S; tag:host,3,packets,dst; sid:2;)',
    'alert udp any any -> any any (msg:"udp"; dsize:>0; tag:host,1500,bytes,src; sid:3;)',
    'alert tcp any any -> any any (msg:"fin"; flags:+F; tag:session,1,seconds; sid:4;)',
]
SPECS = {1: ("session", 4, "packets", None), 2: ("host", 3, "packets", "dst"), 3: ("host", 1500, "bytes", "src"),
         4: ("session", 1, "seconds", None)}


def frames(path):
    """(number, ts, captured length, raw bytes, (proto, src, sport, dst, dport) or None) per frame."""
    out = []
    with PcapReader(path) as r:
        for n, p in enumerate(r, 1):
            raw = bytes(p)
            key = None
            ip = p[IP] if IP in p else (p[IPv6] if IPv6 in p else None)
            if ip is not None:
                l4 = p[TCP] if TCP in p else (p[UDP] if UDP in p else None)
                proto = ip.proto if IP in p else ip.nh
                key = (proto, ip.src, l4.sport if l4 else 0, ip.dst, l4.dport if l4 else 0)
            out.append((n, float(p.time), len(raw), raw, key))
    return out


def reference(fr, alerts):
    """Packet numbers Suricata's tag engine logs, given the alerts {number: [sid, ...]}."""
    sessions, hosts = {}, {}
    tagged = []

    def add(table, k, sid, ts):
        lst = table.setdefault(k, [])
        for e in lst:
            if e["sid"] == sid:
                e["matches"] += 1
                if e["matches"] < 10:
                    e.update(first=ts, last=ts, packets=0, bytes=0)
                return
        if len(lst) < 50:
            kind, count, metric, _ = SPECS[sid]
            lst.insert(0, dict(sid=sid, count=count, metric=metric, first=ts, last=ts, packets=0, bytes=0,
                               matches=0, skipped=False))

    def handle(lst, ts, length, host):
        hit = False
        if host:
            lst[:] = [e for e in lst if e["last"] + 600 >= ts]
        keep = []
        for e in lst:
            e["last"] = ts
            if e["metric"] == "packets":
                e["packets"] += 1
            elif e["metric"] == "bytes":
                e["bytes"] += length
            if not e["skipped"]:
                e["skipped"] = True
                keep.append(e)
                continue
            over = (e["packets"] > e["count"] if e["metric"] == "packets" else
                    e["bytes"] > e["count"] if e["metric"] == "bytes" else
                    int(e["last"]) - int(e["first"]) > e["count"])
            if over:
                continue
            hit = True
            keep.append(e)
        lst[:] = keep
        return hit

    for n, ts, length, _, key in fr:
        if key is None:
            continue
        proto, src, sport, dst, dport = key
        skey = (proto,) + tuple(sorted([(src, sport), (dst, dport)]))
        for sid in alerts.get(n, []):
            kind, _, _, d = SPECS[sid]
            if kind == "session":
                add(sessions, skey, sid, ts)
            else:
                add(hosts, src if d == "src" else dst, sid, ts)
        hit = False
        if skey in sessions:
            hit |= handle(sessions[skey], ts, length, False)
            if not sessions[skey]:
                del sessions[skey]
        for h in (src, dst):
            if h in hosts:
                hit |= handle(hosts[h], ts, length, True)
                if not hosts[h]:
                    del hosts[h]
        if hit:
            tagged.append(n)
    return tagged


def run(gaspp, pcap, rules, out, extra):
    os.makedirs(out)
    p = subprocess.run([gaspp, "-r", pcap, "-q", "-l", out, "-k", "none", "--module", f"detect:rules={rules}"] + extra,
                       capture_output=True, text=True)
    if p.returncode != 0:
        return None, f"gaspp failed ({p.returncode}): {p.stderr.strip()[-300:]}"
    with open(os.path.join(out, "eve.json")) as f:
        return [json.loads(l) for l in f], None


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    gaspp, data = sys.argv[1:3]
    failures = []
    total = 0
    with tempfile.TemporaryDirectory(prefix="gaspp-tags-") as tmp:
        rules = os.path.join(tmp, "tags.rules")
        with open(rules, "w") as f:
            f.write("\n".join(RULES) + "\n")
        for k, cap in enumerate(CAPTURES):
            pcap = os.path.join(data, "pcaps", cap)
            events, why = run(gaspp, pcap, rules, os.path.join(tmp, f"on{k}"), ["--eve-tagged-packets"])
            if why:
                failures.append(f"{cap}: {why}")
                continue
            alerts = {}
            for e in events:
                if e.get("event_type") == "alert":
                    alerts.setdefault(e["pcap_cnt"], []).append(e["alert"]["signature_id"])
            fr = frames(pcap)
            want = reference(fr, alerts)
            got = [e["pcap_cnt"] for e in events if e.get("event_type") == "packet"]
            if not alerts or not want:
                failures.append(f"{cap}: {len(alerts)} alerting packets, {len(want)} tagged: the case proves nothing")
            if sorted(got) != want:
                extra, missing = sorted(set(got) - set(want)), sorted(set(want) - set(got))
                dup = len(got) - len(set(got))
                failures.append(f"{cap}: {len(got)} packet events, want {len(want)}; not tagged but logged "
                                f"{extra[:8]}, tagged but not logged {missing[:8]}, logged twice {dup}")
            by_n = {n: raw for n, _, _, raw, _ in fr}
            for e in events:
                if e.get("event_type") != "packet":
                    continue
                if base64.b64decode(e["packet"]) != by_n.get(e["pcap_cnt"]):
                    failures.append(f"{cap}: packet {e['pcap_cnt']}: `packet` is not the frame")
                    break
                if e.get("packet_info", {}).get("linktype") != 1:
                    failures.append(f"{cap}: packet {e['pcap_cnt']}: packet_info {e.get('packet_info')}")
                    break
            total += len(got)
            events, why = run(gaspp, pcap, rules, os.path.join(tmp, f"off{k}"), [])
            if why:
                failures.append(f"{cap} without --eve-tagged-packets: {why}")
            elif any(e.get("event_type") == "packet" for e in events):
                failures.append(f"{cap}: packet events without --eve-tagged-packets")
            print(f"{cap}: {sum(map(len, alerts.values()))} alerts, {len(got)} tagged packets logged "
                  f"(reference {len(want)})")
    for f in failures:
        print("FAIL", f)
    if failures:
        return 1
    print(f"tags: {total} tagged packets on {len(CAPTURES)} captures, as the reference")
    return 0


if __name__ == "__main__":
    sys.exit(main())
