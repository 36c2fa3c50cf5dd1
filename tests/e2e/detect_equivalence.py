#!/usr/bin/env python3
"""The signature engine gives the same alerts on two paths: all of ET Open loaded, every capture
under DATA_DIR/pcaps, alerts compared as (pcap_cnt, signature_id, flow_id, action), and the
application layer's EVE events (http, tls, dns, ssh, smtp) line for line, in order. The captures
are read in groups (one run per path over a directory of links to a dozen of them); a group that
differs is compared again capture by capture.

Paths: `cpu` (Hyperscan prefilter, PCRE2 in the match), `cpu-device` (the device's path run on the
CPU: hashed prefilter, pcre handed to the host handler) and `cuda`. Stream matches the device path
leaves undecided (a pcre on stream data; stats detect.stream_pcre_undecided) are reported per
capture; a capture whose alerts differ while nothing was left undecided is a failure.

usage: detect_equivalence.py GASPP DATA_DIR PATH_A PATH_B [--max-seconds N]
  (--max-seconds: compare the captures in order until N seconds have passed, and say how many)
"""
import glob
import json
import os
import subprocess
import sys
import tempfile
import time


def run(gaspp, pcap, rules, path, d):
    backend = "cuda" if path == "cuda" else "cpu"
    pf = "device" if path == "cpu-device" else "hyperscan"
    cmd = [gaspp, "-r", pcap, "--backend", backend, "-l", d, "--flow-capacity", "65536", "--stats-json",
           os.path.join(d, "stats.json"), "--detect-prefilter", pf]
    # The device's path on the CPU runs on one thread, the other CPU path on all of them: the
    # application layer and its signatures run sharded over the threads (core/app_shards.hpp) and
    # must give the same events either way.
    if path == "cpu-device":
        cmd += ["--threads", "1"]
    for r in rules:
        cmd += ["-s", r]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return None, 0, p.stderr.strip().splitlines()[-1] if p.stderr.strip() else str(p.returncode)
    alerts = []
    app = []  # the application layer's events, whole and in order
    with open(os.path.join(d, "eve.json")) as f:
        for line in f:
            e = json.loads(line)
            if e.get("event_type") == "alert":
                alerts.append((e.get("pcap_cnt", 0), e["alert"]["signature_id"], e.get("flow_id", 0), e["alert"]["action"]))
            elif e.get("event_type") in ("http", "tls", "dns", "ssh", "smtp"):
                app.append(line.strip())
    undecided = 0
    try:
        with open(os.path.join(d, "stats.json")) as f:
            st = json.load(f)
        for m in st.get("modules", {}).get("modules", []):
            if m.get("name") == "detect":
                undecided += int(m.get("stream_pcre_undecided", 0))
    except (OSError, ValueError):
        pass
    return (sorted(alerts), app), undecided, None


def main():
    args = sys.argv[1:]
    limit = None
    if "--max-seconds" in args:
        i = args.index("--max-seconds")
        limit = float(args[i + 1])
        del args[i:i + 2]
    gaspp, data, a, b = args[:4]
    rules = sorted(glob.glob(os.path.join(data, "rules", "et-open", "*.rules")))
    caps = sorted(c for c in glob.glob(os.path.join(data, "pcaps", "**", "*.pcap*"), recursive=True)
                  if c.endswith((".pcap", ".pcapng")))
    differ = failed = undecided_caps = total_alerts = total_app = 0
    start = time.monotonic()

    def compare(name, target):
        nonlocal differ, failed, undecided_caps, total_alerts, total_app
        res = []
        for path in (a, b):
            with tempfile.TemporaryDirectory() as d:
                res.append(run(gaspp, target, rules, path, d))
        (xa, ua, ea), (xb, ub, eb) = res
        if ea or eb:
            if (ea is None) != (eb is None) or ea != eb:
                print(f"FAIL {name}: {a}: {ea}; {b}: {eb}")
                failed += 1
                return False
            print(f"not compared {name}: both paths: {ea}")
            return False
        (xa, app_a), (xb, app_b) = xa, xb
        if app_a != app_b:
            failed += 1
            at = next((i for i, (p, q) in enumerate(zip(app_a, app_b)) if p != q), min(len(app_a), len(app_b)))
            print(f"FAIL {name}: application-layer events differ ({len(app_a)} vs {len(app_b)}), first at {at}:\n"
                  f"  {a}: {app_a[at] if at < len(app_a) else None}\n  {b}: {app_b[at] if at < len(app_b) else None}")
            return False
        if xa != xb:
            differ += 1
            if ua or ub:
                undecided_caps += 1
                print(f"differ {name}: {len(xa)} vs {len(xb)} alerts; {ua + ub} stream matches left undecided (pcre)")
                return True
            failed += 1
            only_a = sorted(set(xa) - set(xb))[:5]
            only_b = sorted(set(xb) - set(xa))[:5]
            print(f"FAIL {name}: {len(xa)} vs {len(xb)} alerts; only {a}: {only_a}; only {b}: {only_b}")
            return False
        total_alerts += len(xa)
        total_app += len(app_a)
        return True

    # The captures go in groups of kGroup, each group one run per path over a directory of links to
    # them (read in order, flow state shared): loading ET Open is most of a run's time. A group
    # that differs or fails is compared again capture by capture, to name the capture.
    kGroup = 12
    done = 0
    for g in range(0, len(caps), kGroup):
        if limit is not None and time.monotonic() - start > limit:
            print(f"time limit: {done} of {len(caps)} captures compared")
            caps = caps[:done]
            break
        group = caps[g:g + kGroup]
        with tempfile.TemporaryDirectory() as links:
            for k, cap in enumerate(group):
                os.symlink(os.path.abspath(cap), os.path.join(links, f"{k:03d}-{os.path.basename(cap)}"))
            before = (differ, failed, undecided_caps, total_alerts, total_app)
            import io, contextlib
            quiet = io.StringIO()
            with contextlib.redirect_stdout(quiet):
                whole = compare(f"group {g // kGroup}", links)
            if not whole or failed != before[1]:
                differ, failed, undecided_caps, total_alerts, total_app = before
                for cap in group:
                    compare(os.path.relpath(cap, data), cap)
            else:
                print(quiet.getvalue(), end="")
        done += len(group)
    print(f"{len(caps)} captures, {total_alerts} alerts ({a}), {total_app} application-layer events, {differ} differ "
          f"({undecided_caps} where the device path left pcre stream matches undecided), {failed} failures")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
