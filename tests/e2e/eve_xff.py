#!/usr/bin/env python3
"""eve-log alert xff on a capture built here (scapy): HTTP requests whose X-Forwarded-For (or
another header the configuration names) holds one address, a chain, an IPv4 address with a port, a
bracketed IPv6 address, a value too short or not an address. Each transaction alerts on its
request and on its response; with each configuration (extra-data / overwrite, reverse / forward,
the header) the alerts' alert.xff, src_ip and dest_ip are compared with a reference written here
from Suricata 8's code: app-layer-htp-xff.c (HttpXFFGetIPFromTxAux: a value of 7 to 255 bytes,
reverse takes what follows the last space, forward what precedes the first comma; ParseXFFString:
brackets and an IPv4 port dropped, the rest must be an address) and output-json-alert.c (overwrite
puts the address in place of the packet's source, or its destination on a packet to the client;
extra-data writes alert.xff).

usage: eve_xff.py GASPP
"""
import ipaddress
import os
import sys
import tempfile

from detect_base64 import runs, session

VALUES = ["10.1.1.1", "10.1.1.1, 10.2.2.2, 10.3.3.3", "192.0.2.9:8080", "[2001:db8::5]:443", "1.2.3",
          "not an address", "2001:db8::7, 10.9.9.9", None]


def reference(value, forward):
    """Suricata's address from the header's value, or None."""
    if value is None or not 7 <= len(value) < 256:
        return None
    v = value.split(",")[0] if forward else value[value.rfind(" ") + 1:]
    if v.startswith("["):
        if "]" not in v:
            return None
        v = v[1:v.index("]")]
    elif v.count(".") == 3 and v.count(":") == 1:
        v = v[:v.index(":")]
    try:
        ipaddress.ip_address(v)
        return v
    except ValueError:
        return None


def main():
    gaspp = sys.argv[1]
    pk = []
    for k, value in enumerate(VALUES):
        head = f"GET /x{k} HTTP/1.1\r\nHost: test\r\n"
        if value is not None:
            head += f"X-Forwarded-For: {value}\r\nX-Real-Client: {value}\r\n"
        pk += session(41000 + k, (head + "\r\n").encode(), b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nbody")
    rules = ['alert http any any -> any any (msg:"request"; flow:to_server; http.method; content:"GET"; sid:1;)',
             'alert http any any -> any any (msg:"response"; flow:to_client; file_data; content:"body"; sid:2;)']
    failed = 0
    with tempfile.TemporaryDirectory() as d:
        for mode in ("extra-data", "overwrite"):
            for deployment in ("reverse", "forward"):
                for header in ("X-Forwarded-For", "X-Real-Client"):
                    cfg = os.path.join(d, "xff.yaml")
                    with open(cfg, "w") as f:
                        f.write("%YAML 1.1\n---\noutputs:\n  - eve-log:\n      types:\n        - alert:\n"
                                f"            xff:\n              enabled: yes\n              mode: {mode}\n"
                                f"              deployment: {deployment}\n              header: {header}\n")
                    _, got, _ = next(runs(gaspp, ["cpu"], pk, rules, "xff", args=("-c", cfg)))
                    alerts = [a for es in got.values() for a in es]
                    bad = 0
                    for a in alerts:
                        k = (a["src_port"] if a["alert"]["signature_id"] == 1 else a["dest_port"]) - 41000
                        want = reference(VALUES[k], deployment == "forward")
                        to_client = a["alert"]["signature_id"] == 2
                        client, server = "10.0.0.1", "10.0.0.2"
                        src, dst = (server, client) if to_client else (client, server)
                        if mode == "overwrite" and want:
                            src, dst = (src, want) if to_client else (want, dst)
                        got_fields = (a["src_ip"], a["dest_ip"], a["alert"].get("xff"))
                        exp = (src, dst, want if mode == "extra-data" else None)
                        if got_fields != exp:
                            print(f"FAIL {mode} {deployment} {header}: value {VALUES[k]!r}, sid {a['alert']['signature_id']}: "
                                  f"(src_ip, dest_ip, xff) {got_fields}, expected {exp}")
                            bad += 1
                    if len(alerts) != 2 * len(VALUES):
                        print(f"FAIL {mode} {deployment} {header}: {len(alerts)} alerts, expected {2 * len(VALUES)}")
                        bad += 1
                    print(f"{mode} {deployment} {header}: {len(alerts)} alerts, {bad} wrong")
                    failed += bad
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
