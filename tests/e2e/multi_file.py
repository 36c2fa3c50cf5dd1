#!/usr/bin/env python3
"""`gaspp -r DIR` reads the directory's captures one after the other with one flow state: a capture
split into pieces (editcap -c N) must give the same EVE flow records, the same reassembled streams
(--dump-streams) and the same -w output as the whole capture, whatever the piece size. A file in
the directory that is not a capture is reported by name, left out, and the run ends with exit
status 2 after processing the rest.

usage: multi_file.py GASPP DATA_DIR
"""
import filecmp
import os
import subprocess
import sys
import tempfile

CAPTURES = ["pcaps/zeek/http-bro.org.pcap", "pcaps/zeek/tcp-reassembly.pcap", "pcaps/zeek/ftp-ipv6.pcap"]


def run(gaspp, inp, out):
    os.makedirs(out)
    p = subprocess.run([gaspp, "-r", inp, "--backend", "cpu", "-q", "-l", out, "--dump-streams", f"{out}/streams",
                        "-w", f"{out}/passed.pcap"], capture_output=True, text=True)
    return p


def flows(d):
    with open(f"{d}/eve.json") as f:
        return sorted(line for line in f if '"event_type":"stats"' not in line)


def same_tree(a, b):
    c = filecmp.dircmp(a, b)
    if c.left_only or c.right_only or c.diff_files:
        return False
    return all(same_tree(os.path.join(a, s), os.path.join(b, s)) for s in c.common_dirs)


def main():
    gaspp, data = sys.argv[1], sys.argv[2]
    failures, compared = [], 0
    with tempfile.TemporaryDirectory() as d:
        for cap in CAPTURES:
            path = os.path.join(data, cap)
            whole = f"{d}/{os.path.basename(cap)}-whole"
            p = run(gaspp, path, whole)
            if p.returncode != 0:
                failures.append(f"{cap}: exit {p.returncode}: {p.stderr[-300:]}")
                continue
            for n in (1, 7, 100):
                parts = f"{d}/{os.path.basename(cap)}-parts{n}"
                os.makedirs(parts)
                subprocess.run(["editcap", "-F", "pcap", "-c", str(n), path, f"{parts}/p.pcap"], check=True,
                               capture_output=True)
                out = parts + "-out"
                p = run(gaspp, parts, out)
                if p.returncode != 0:
                    failures.append(f"{cap} in pieces of {n}: exit {p.returncode}: {p.stderr[-300:]}")
                elif flows(whole) != flows(out):
                    failures.append(f"{cap} in pieces of {n}: EVE events differ from the whole capture's")
                elif not same_tree(f"{whole}/streams", f"{out}/streams"):
                    failures.append(f"{cap} in pieces of {n}: reassembled streams differ")
                elif not filecmp.cmp(f"{whole}/passed.pcap", f"{out}/passed.pcap", shallow=False):
                    failures.append(f"{cap} in pieces of {n}: -w output differs")
                else:
                    compared += 1
        # A file that is not a capture: named, left out, exit 2, the rest processed.
        parts = f"{d}/junk"
        os.makedirs(parts)
        subprocess.run(["editcap", "-F", "pcap", "-c", "100", os.path.join(data, CAPTURES[0]), f"{parts}/p.pcap"], check=True)
        with open(f"{parts}/zz-notes.txt", "w") as f:
            f.write("not a capture\n")
        p = run(gaspp, parts, f"{d}/junk-out")
        if p.returncode != 2 or "zz-notes.txt" not in p.stderr or flows(f"{d}/junk-out") != flows(
                f"{d}/{os.path.basename(CAPTURES[0])}-whole"):
            failures.append(f"a directory with a file that is not a capture: exit {p.returncode}, stderr {p.stderr[-200:]!r}")
    for f in failures:
        print("FAIL", f)
    print(f"{compared} split captures equal to the whole, {len(failures)} failures")
    return 1 if failures or compared == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
