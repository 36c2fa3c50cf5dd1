"""The ways the e2e detection tests run the signature engine on a capture: `cpu` (Hyperscan),
`cpu-device` (the device's prefilter and inspection on the CPU) and `cuda`; each run's EVE events.

Example:
    events = run_detect(gaspp, pcap, rules, d, "cpu-device")  # None (and a FAIL line) on an error
"""
import json
import os
import subprocess


def run_detect(gaspp, pcap, rules, out_dir, path, extra=()):
    """gaspp on `pcap` with `rules` along `path`, EVE into out_dir: its events, or None when gaspp failed."""
    eve = os.path.join(out_dir, "eve.json")
    if os.path.exists(eve):
        os.remove(eve)
    cmd = [gaspp, "-r", pcap, "--backend", "cuda" if path == "cuda" else "cpu", "-q", "--rules", rules, "-l", out_dir]
    if path == "cpu-device":
        cmd += ["--detect-prefilter", "device"]
    p = subprocess.run(cmd + list(extra), capture_output=True, text=True)
    if p.returncode != 0:
        print(f"FAIL ({path}): gaspp exit {p.returncode}: {p.stderr.strip()}")
        return None
    with open(eve) as f:
        return [json.loads(line) for line in f]
