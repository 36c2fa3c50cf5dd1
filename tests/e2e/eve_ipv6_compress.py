#!/usr/bin/env python3
"""IPv6 addresses in EVE: by default eight groups of four hex digits (Suricata's form without
ipv6-compress), with --eve-ipv6-compress or suricata.yaml's eve-log `ipv6-compress: yes` RFC 5952's
compressed form. Oracle: Python's ipaddress (exploded / compressed) on every address of every
event of IPv6 captures (flows, http, alerts of a signature matching every packet); the runs' events
are otherwise identical, line for line.

usage: eve_ipv6_compress.py GASPP DATA [--backend cpu|cuda]
"""
import ipaddress
import json
import os
import subprocess
import sys
import tempfile

CAPTURES = ["zeek/ftp-ipv6.pcap", "pcapplusplus/one_ipv6_http_stream.pcap"]
ADDRESS_KEYS = ("src_ip", "dest_ip")


def addresses(ev, path=""):
    """(path, value) of every address field in an event, nested objects (tunnel, ...) included."""
    for k, v in ev.items():
        if isinstance(v, dict):
            yield from addresses(v, path + k + ".")
        elif k in ADDRESS_KEYS:
            yield path + k, v


def strip(ev):
    """The event without its address fields, nested objects included."""
    return {k: strip(v) if isinstance(v, dict) else v for k, v in ev.items() if k not in ADDRESS_KEYS}


def run(gaspp, pcap, rules, out, backend, extra):
    os.mkdir(out)
    p = subprocess.run([gaspp, "-r", pcap, "--backend", backend, "-S", rules, "--app-layer", "-l", out, "-q"] + extra,
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"gaspp failed on {pcap}: {p.stderr}")
    return [json.loads(l) for l in open(os.path.join(out, "eve.json")) if '"event_type":"stats"' not in l]


def main():
    gaspp, data = sys.argv[1], sys.argv[2]
    backend = sys.argv[sys.argv.index("--backend") + 1] if "--backend" in sys.argv else "cpu"
    fails, checked = [], 0
    with tempfile.TemporaryDirectory() as d:
        rules = os.path.join(d, "all.rules")
        with open(rules, "w") as f:
            f.write('alert ip any any -> any any (msg:"every packet"; sid:1;)\n')
        yaml = os.path.join(d, "suricata.yaml")
        with open(yaml, "w") as f:
            f.write("%YAML 1.1\n---\noutputs:\n  - eve-log:\n      enabled: yes\n      ipv6-compress: yes\n"
                    "      types:\n        - alert\n        - flow\n")
        for k, cap in enumerate(CAPTURES):
            pcap = os.path.join(data, "pcaps", cap)
            plain = run(gaspp, pcap, rules, os.path.join(d, f"p{k}"), backend, [])
            for name, extra in (("--eve-ipv6-compress", ["--eve-ipv6-compress"]), ("ipv6-compress: yes", ["-c", yaml])):
                short = run(gaspp, pcap, rules, os.path.join(d, f"{k}{len(extra)}"), backend, extra)
                if len(short) != len(plain):
                    fails.append(f"{cap} {name}: {len(short)} events, {len(plain)} without")
                    continue
                for a, b in zip(plain, short):
                    pa, pb = dict(addresses(a)), dict(addresses(b))
                    if pa.keys() != pb.keys():
                        fails.append(f"{cap} {name}: address fields {sorted(pb)} against {sorted(pa)}")
                        continue
                    for key, v in pa.items():
                        ip = ipaddress.ip_address(v)
                        if ip.version == 6 and v != ip.exploded:
                            fails.append(f"{cap}: {key} {v!r} by default, want {ip.exploded!r}")
                        want = ip.compressed if ip.version == 6 else v
                        if pb[key] != want:
                            fails.append(f"{cap} {name}: {key} {pb[key]!r}, want {want!r}")
                        checked += ip.version == 6
                    # Nothing else differs.
                    if json.dumps(strip(a), sort_keys=True) != json.dumps(strip(b), sort_keys=True):
                        fails.append(f"{cap} {name}: an event differs beyond its addresses")
    if checked == 0:
        fails.append("no IPv6 address checked")
    for f in fails[:20]:
        print("FAIL", f)
    print(f"{checked} IPv6 addresses checked: " + ("OK" if not fails else f"{len(fails)} failures"))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
