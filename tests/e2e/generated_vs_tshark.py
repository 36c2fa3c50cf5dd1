#!/usr/bin/env python3
"""The generator: same seed gives the same bytes, another seed other bytes, and every workload it
writes decodes cleanly in gaspp and identically in tshark (with checksum validation on).

usage: generated_vs_tshark.py GASPP [--backend B]
"""
import hashlib
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

WORKLOADS = {
    "fixed64": ["--mode", "fixed", "--size", "64", "--packets", "3000"],
    "fixed1514": ["--mode", "fixed", "--size", "1514", "--packets", "2000"],
    "mix": ["--mode", "mix", "--packets", "5000", "--ipv6", "0.3", "--vlan", "0.2"],
    "http": ["--mode", "http", "--packets", "6000", "--flows", "8", "--reorder", "0.01", "--duplicate", "0.01",
             "--loss", "0.01", "--plant", "EVIL-PAYLOAD", "--plant-rate", "0.05", "--ipv6", "0.25", "--vlan", "0.25"],
}


def sha(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def bad_checksums(path):
    """Packets tshark finds with a bad IP/TCP/UDP checksum."""
    p = subprocess.run(["tshark", "-n", "-r", path, "-o", "ip.check_checksum:TRUE", "-o", "tcp.check_checksum:TRUE",
                        "-o", "udp.check_checksum:TRUE", "-Y", "ip.checksum.status==0 || tcp.checksum.status==0 || "
                        "udp.checksum.status==0 || _ws.malformed || _ws.expert.severity==error",
                        "-T", "fields", "-e", "frame.number"], capture_output=True, text=True)
    return p.stdout.split()


def main():
    gaspp = sys.argv[1]
    backend = sys.argv[sys.argv.index("--backend") + 1] if "--backend" in sys.argv else "cpu"
    failed = 0
    with tempfile.TemporaryDirectory() as d:
        paths = []
        for name, args in WORKLOADS.items():
            a, b, c = (os.path.join(d, f"{name}-{k}.pcap") for k in "abc")
            for path, seed in ((a, "7"), (b, "7"), (c, "8")):
                subprocess.run([gaspp, "gen", "-o", path, "--seed", seed] + args, check=True, capture_output=True)
            same, differ = sha(a) == sha(b), sha(a) != sha(c)
            bad = bad_checksums(a)
            ok = same and differ and not bad
            print(f"{'ok' if ok else 'FAIL':5} {name}: same seed same bytes {same}, other seed differs {differ}, "
                  f"tshark errors/bad checksums {len(bad)}{' ' + ','.join(bad[:5]) if bad else ''}")
            failed += not ok
            paths.append(a)
        p = subprocess.run([sys.executable, os.path.join(HERE, "decode_vs_tshark.py"), gaspp, "--backend", backend,
                            "--expect-clean"] + paths, text=True)
        failed += p.returncode != 0
    print("generator checks", "failed" if failed else "passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
