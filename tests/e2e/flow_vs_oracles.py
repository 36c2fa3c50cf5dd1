#!/usr/bin/env python3
"""Flow records checked against other tools' expected outputs in ../shared/data:

  * nDPI (`pcaps/ndpi/<name>.pcap.out`, .pcap and .pcapng): every flow nDPI lists, with its
    packets and bytes each way, must be one of our EVE flow records with the same counts (and
    nothing else). gaspp runs with settings that match nDPI's flow semantics; the deliberate
    differences from gaspp's defaults (Suricata's) are:
      - timeouts: ndpiReader reading a capture file never expires an idle flow, so gaspp runs
        without idle expiry (oracle_settings.py says why and how).
      - addresses: nDPI's text for IPv6 addresses is not always valid (`2600:1900:4160:5999::19::`
        in stun.pcap.out has two `::`), so addresses are compared parsed: each `::` of nDPI's text
        stands for one or more zero groups, and ours must fit it.
  * suricata-verify tests whose test.yaml counts `event_type: flow` events (eve-flow-vlan).

usage: flow_vs_oracles.py GASPP DATA_DIR [--backend cpu|cuda]
"""
import ipaddress
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oracle_settings import NO_IDLE_EXPIRY  # noqa: E402

FLOW_LINE = re.compile(r"^\s+\d+\s+(\w+) (\S+):(\d+) (?:<->|->) (\S+):(\d+) .*?\[(\d+) pkts/(\d+) bytes (?:<->|->) (\d+) pkts/(\d+) bytes\]")


def parse_ndpi(path):
    flows = []
    for line in open(path):
        m = FLOW_LINE.match(line)
        if m:
            proto, a, ap, b, bp, p1, b1, p2, b2 = m.groups()
            flows.append(((proto, a.strip("[]"), int(ap), b.strip("[]"), int(bp)), (int(p1), int(b1), int(p2), int(b2))))
    return flows


def ndpi_groups(text):
    """nDPI's IPv6 text → (chunks of explicit 16-bit groups, number of `::` gaps between them)."""
    chunks = [[int(g, 16) for g in part.split(":")] if part else [] for part in text.split("::")]
    return chunks


def ndpi_addr_matches(text, ours):
    """Whether our address (ipaddress object) fits nDPI's text for it, compared as numbers."""
    if ":" not in text:
        return ours.version == 4 and ipaddress.ip_address(text) == ours
    if ours.version != 6:
        return False
    groups = [int.from_bytes(ours.packed[i:i + 2], "big") for i in range(0, 16, 2)]
    chunks = ndpi_groups(text)

    def fits(at, k):  # chunks[k:] fit groups[at:], chunk k starting exactly at `at`
        c = chunks[k]
        if groups[at:at + len(c)] != c:
            return False
        at += len(c)
        if k + 1 == len(chunks):
            return at == 8
        # a `::` gap of one or more zero groups, then the next chunk
        for gap in range(1, 9 - at):
            if any(groups[at:at + gap]):
                break
            if fits(at + gap, k + 1):
                return True
        return False

    return fits(0, 0)


def eve_flows(gaspp, pcap, backend, d, extra=()):
    for f in ("eve.json",):
        if os.path.exists(os.path.join(d, f)):
            os.remove(os.path.join(d, f))
    p = subprocess.run([gaspp, "-r", pcap, "--backend", backend, "-q", "-l", d, *extra], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"gaspp failed on {pcap}: {p.stderr}")
    return [json.loads(line) for line in open(os.path.join(d, "eve.json")) if '"event_type":"flow"' in line]


def ours_list(recs):
    out = []
    for r in recs:
        f = r["flow"]
        out.append((r["proto"], ipaddress.ip_address(r["src_ip"]), r.get("src_port", 0), ipaddress.ip_address(r["dest_ip"]),
                    r.get("dest_port", 0), (f["pkts_toserver"], f["bytes_toserver"], f["pkts_toclient"], f["bytes_toclient"])))
    return out


def check_ndpi(gaspp, data, backend, d):
    failures = 0
    ndir = os.path.join(data, "pcaps", "ndpi")
    names = sorted(n for n in os.listdir(ndir) if n.endswith((".pcap", ".pcapng")))
    if os.environ.get("CI") and len(names) < 32:
        print(f"FAIL {ndir}: {len(names)} captures, the data's README lists 32")
        failures += 1
    for name in names:
        want = parse_ndpi(os.path.join(ndir, name + ".out"))
        ours = ours_list(eve_flows(gaspp, os.path.join(ndir, name), backend, d, NO_IDLE_EXPIRY))
        bad = []
        for (proto, a, ap, b, bp), (p1, b1, p2, b2) in want:
            same = []
            for (op, oa, oap, ob, obp, counts) in ours:
                if op != proto:
                    continue
                if oap == ap and obp == bp and ndpi_addr_matches(a, oa) and ndpi_addr_matches(b, ob):
                    same.append(counts)
                elif oap == bp and obp == ap and ndpi_addr_matches(a, ob) and ndpi_addr_matches(b, oa):
                    same.append(counts[2:] + counts[:2])
            if (p1, b1, p2, b2) in same:
                continue
            bad.append(f"{proto} {a}:{ap} <-> {b}:{bp}: nDPI {p1}/{b1} <-> {p2}/{b2}, ours {same or 'none'}")
        if len(ours) != len(want):
            bad.append(f"{len(ours)} flows, nDPI lists {len(want)}")
        print(f"{'ok  ' if not bad else 'FAIL'} ndpi/{name}: {len(want)} flows")
        for b in bad:
            print("     " + b)
        failures += bool(bad)
    return failures


def check_suricata_flow_counts(gaspp, data, backend, d):
    # eve-flow-vlan/test.yaml: exactly one flow event with vlan [6], one with vlan [1, 10].
    pcap = os.path.join(data, "pcaps", "suricata-verify", "eve-flow-vlan", "input.pcap")
    recs = eve_flows(gaspp, pcap, backend, d)
    got = {str(v): sum(1 for r in recs if r.get("vlan") == v) for v in ([6], [1, 10])}
    ok = got == {"[6]": 1, "[1, 10]": 1}
    print(f"{'ok  ' if ok else 'FAIL'} suricata-verify/eve-flow-vlan: flow events with vlan [6]: {got['[6]']}, "
          f"with vlan [1, 10]: {got['[1, 10]']} (test.yaml: 1 and 1)")
    return 0 if ok else 1


def main():
    args = sys.argv[1:]
    gaspp, data = args[0], args[1]
    backend = args[3] if args[2:3] == ["--backend"] else "cpu"
    if not os.path.isdir(os.path.join(data, "pcaps", "ndpi")):
        print(f"{data}/pcaps/ndpi not found")
        return 1 if os.environ.get("CI") else 77
    with tempfile.TemporaryDirectory() as d:
        failures = check_ndpi(gaspp, data, backend, d) + check_suricata_flow_counts(gaspp, data, backend, d)
    print(f"{failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
