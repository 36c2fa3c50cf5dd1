#!/usr/bin/env python3
"""The command line as a user meets it: each case runs gaspp with some arguments and checks the exit
status, a piece of stderr or stdout, and where it matters the --stats-json it wrote (oracle: the
capture's packet count from the summary of a plain run, and the values given on the command line).

- `--opt=value` and `--opt value` are the same; short options take their value as the next word;
- an option given twice that makes sense once (-r) is refused, not silently replaced;
- unknown options, missing values and out-of-range values exit 1 naming the option;
- --help exits 0 and lists every option group; --version prints the version;
- --stage-times puts each stage's mean and slowest batch in the stats, the pipeline thread's too;
- options apply in the order given: a later --batch overrides an earlier one, -S drops the rule
  files given before it;
- `gaspp gen` validates its own options the same way.

usage: cli_options.py GASPP
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CAPTURE = os.path.join(HERE, "..", "..", "..", "shared", "data", "pcaps", "zeek", "tcp-reassembly.pcap")


def run(gaspp, args):
    p = subprocess.run([gaspp] + args, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    gaspp = sys.argv[1]
    if not os.path.exists(CAPTURE):
        print(f"{CAPTURE} not found (../shared/data beside the checkout)")
        return 1 if os.environ.get("CI") else 77
    tmp = tempfile.mkdtemp(prefix="gaspp-cli-")
    failures = []
    try:
        stats = os.path.join(tmp, "s.json")
        rules_a = os.path.join(tmp, "a.rules")
        rules_b = os.path.join(tmp, "b.rules")
        with open(rules_a, "w") as f:
            f.write('alert tcp any any -> any any (msg:"a"; sid:1;)\n')
        with open(rules_b, "w") as f:
            f.write('alert tcp any any -> any any (msg:"b"; sid:2;)\nalert udp any any -> any any (msg:"c"; sid:3;)\n')
        rc, _, err = run(gaspp, ["-r", CAPTURE, "-q", "--stats-json", stats])
        if rc != 0:
            raise SystemExit(f"plain run failed ({rc}): {err}")
        packets = json.load(open(stats))["packets"]
        batches = {}  # batch size -> batches of a run with that one --batch (they also close on time)
        for n in (7, 50):
            rc, _, err = run(gaspp, ["-r", CAPTURE, "-q", "--batch", str(n), "--stats-json", stats])
            batches[n] = json.load(open(stats))["batches"]["count"]
        if batches[7] <= batches[50]:
            raise SystemExit(f"batch sizes 7 and 50 give {batches[7]} and {batches[50]} batches: the oracle cannot tell them")

        def stage_times_hold(s, n):
            st = {t["stage"]: t for t in s.get("stage_times", [])}
            mine = [st.get(k) for k in ("pipeline: batch assembly (reading the source)", "pipeline: submit",
                                        "pipeline: wait for the batch's results", "pipeline: outputs")]
            return (all(t is not None and t["batches"] == n and t["max_us"] >= t["mean_us"] >= 0 for t in mine)
                    and "decode" in st)

        def stats_of(args):
            if os.path.exists(stats):
                os.remove(stats)
            rc, out, err = run(gaspp, args + ["--stats-json", stats])
            return rc, (json.load(open(stats)) if rc == 0 and os.path.exists(stats) else None), err

        # (name, args, want rc, text wanted in stderr+stdout, check of the stats (or None))
        cases = [
            ("--opt=value", ["-r", CAPTURE, "-q", "--batch=7"], 0, "",
             lambda s: s["packets"] == packets and s["batches"]["count"] == batches[7]),
            ("--opt value", ["-r", CAPTURE, "-q", "--batch", "7"], 0, "",
             lambda s: s["batches"]["count"] == batches[7]),
            ("later --batch wins", ["-r", CAPTURE, "-q", "--batch", "7", "--batch=50"], 0, "",
             lambda s: s["batches"]["count"] == batches[50]),
            ("-r twice", ["-r", CAPTURE, "-r", CAPTURE, "-q"], 1, "-r", None),
            ("unknown option", ["-r", CAPTURE, "--no-such-option"], 1, "--no-such-option", None),
            ("out of range", ["-r", CAPTURE, "--batch", "0"], 1, "--batch must be 1..16777216", None),
            ("not a number", ["-r", CAPTURE, "--threads", "many"], 1, "--threads", None),
            ("threads bound", ["-r", CAPTURE, "--threads", "100000"], 1, "--threads must be 0..1024", None),
            ("bad choice", ["-r", CAPTURE, "--overlap", "middle"], 1, "--overlap: first or last", None),
            ("no input", ["-q"], 1, "-r FILE", None),
            ("bad device ordinal", ["-r", CAPTURE, "--cuda-device", "-1"], 1, "--cuda-device", None),
            # The CPU backend runs wherever a CUDA device is asked for: the choice is CUDA's alone.
            ("device ordinal on cpu", ["-r", CAPTURE, "-q", "--backend", "cpu", "--cuda-device", "3"], 0, "",
             lambda s: s["packets"] == packets),
            # Sharding the flows (docs/multi-gpu.md): bad counts are refused naming the option; GPUs
            # asked of the CPU backend are an error (it has none), shards run and count every packet.
            ("--shards 0", ["-r", CAPTURE, "--shards", "0"], 1, "--shards", None),
            ("--gpus not a number", ["-r", CAPTURE, "--gpus", "two"], 1, "--gpus", None),
            ("--gpus on cpu", ["-r", CAPTURE, "-q", "--backend", "cpu", "--gpus", "2"], 1, "--gpus", None),
            ("--shards on cpu", ["-r", CAPTURE, "-q", "--backend", "cpu", "--shards", "3", "--batch", "7"], 0, "",
             lambda s: s["packets"] == packets and s["batches"]["count"] == batches[7]),
            # --stage-times: every batch through each of the pipeline thread's stages, the slowest
            # batch no faster than the mean; the backend's stages beside them.
            ("--stage-times", ["-r", CAPTURE, "-q", "--batch", "7", "--stage-times"], 0, "pipeline: wait for the batch's results",
             lambda s: stage_times_hold(s, batches[7])),
            ("rules in order", ["-r", CAPTURE, "-q", "-s", rules_a, "-s", rules_b], 0, "",
             lambda s: s["modules"]["modules"][0]["rules"] == 3),
            ("-S drops earlier rule files", ["-r", CAPTURE, "-q", "-s", rules_a, "-S", rules_b], 0, "",
             lambda s: s["modules"]["modules"][0]["rules"] == 2),
        ]
        for name, args, want_rc, text, check in cases:
            rc, s, err = stats_of(args)
            if rc != want_rc:
                failures.append(f"{name}: exit {rc}, want {want_rc}: {err.strip()[:200]}")
                continue
            if text and text not in err:
                failures.append(f"{name}: stderr does not mention {text!r}: {err.strip()[:200]}")
            if check is not None and (s is None or not check(s)):
                failures.append(f"{name}: stats do not hold: {json.dumps(s)[:300] if s else None}")
        rc, _, err = run(gaspp, ["-r", CAPTURE, "--batch"])  # nothing after it
        if rc != 1 or "--batch" not in err:
            failures.append(f"missing value: exit {rc}, want 1 naming --batch: {err.strip()}")
        rc, out, _ = run(gaspp, ["--help"])
        for want in ("-r FILE", "--batch", "Flow tracking", "TCP reassembly", "Modules", "--set", "-k"):
            if rc != 0 or want not in out:
                failures.append(f"--help: exit {rc}, or no {want!r} in it")
        rc, out, _ = run(gaspp, ["--version"])
        if rc != 0 or not out.startswith("gaspp "):
            failures.append(f"--version: exit {rc}, {out!r}")
        g = os.path.join(tmp, "g.pcap")
        rc, _, err = run(gaspp, ["gen", "-o", g, "--packets=50", "--mode", "mix"])
        if rc != 0 or not os.path.exists(g):
            failures.append(f"gen: exit {rc}: {err.strip()}")
        else:
            rc, s, err = stats_of(["-r", g, "-q"])
            if rc != 0 or s["packets"] != 50:
                failures.append(f"gen: the capture has {s and s['packets']} packets, want 50")
        for args, text in ((["gen", "--packets", "0", "-o", g], "--packets"), (["gen", "--mode", "odd", "-o", g], "--mode"),
                           (["gen", "--packets", "5"], "-o")):
            rc, _, err = run(gaspp, args)
            if rc != 1 or text not in err:
                failures.append(f"{' '.join(args)}: exit {rc}, want 1 naming {text}: {err.strip()}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for f in failures:
        print("FAIL", f)
    if failures:
        print(f"{len(failures)} failures")
        return 1
    print(f"command line: {len(cases) + 6} cases, 0 failures")
    return 0


if __name__ == "__main__":
    sys.exit(main())
