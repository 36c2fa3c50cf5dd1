#!/usr/bin/env python3
"""Turns what `scripts/device/run.sh bench` left in its OUT folder into one committed result file.

usage: collect_results.py OUT_DIR COMMIT DEVICE COMMAND RESULT_JSON
The result holds the commit, the device, the command, the bench_decode figures (limits and decode
throughput), the capture reader end-to-end runs (median), and the issue's targets checked against
them (ratios, not verdicts by hand).
"""
import json
import statistics
import sys


def main():
    out, commit, device, command, dest = sys.argv[1:6]
    bench = json.load(open(f"{out}/bench_decode.json"))
    all_runs = json.load(open(f"{out}/reader.json"))
    reader = {}
    for backend, label in (("cuda-0", "cuda"), ("cpu-0", "cpu"), ("cuda-1", "cuda_serial_index")):
        runs = [v for k, v in sorted(all_runs.items()) if k.startswith(f"r-{backend}-")]
        # The first run of each backend is the warm-up; the rest are timed.
        timed = runs[1:] if len(runs) > 1 else runs
        if timed:
            reader[label] = {
                "runs": len(timed),
                "packets": timed[0]["packets"],
                "bytes": timed[0]["bytes"],
                "median_mpps": round(statistics.median(r["pps"] for r in timed) / 1e6, 3),
                "median_gbps": round(statistics.median(r["gbps"] for r in timed), 3),
            }
    dec = {(d["workload"], d["backend"], d["batch"]): d for d in bench["decode"]}
    best = lambda w: max((d for d in bench["decode"] if d["workload"] == w and d["backend"] == "cuda"),
                         key=lambda d: d["mpps"])
    b64, b1514 = best("fixed64"), best("fixed1514")
    targets = {
        "decode64_fraction_of_h2d_limit_pps": {"target": 0.90, "measured": b64["fraction_of_limit"],
                                               "mpps": b64["mpps"], "batch": b64["batch"]},
        "decode1514_fraction_of_h2d_limit_bytes": {"target": 0.95, "measured": b1514["fraction_of_limit"],
                                                   "mpps": b1514["mpps"], "batch": b1514["batch"]},
    }
    mix_cuda, mix_cpu = best("mix"), dec.get(("mix", "cpu", 65536))
    ratios = {"mix_cuda_over_cpu_all_cores": round(mix_cuda["mpps"] / mix_cpu["mpps"], 2) if mix_cpu else None}
    if "cuda" in reader:
        ratios["reader_end_to_end_over_decode_from_memory_mix"] = round(reader["cuda"]["median_mpps"] / mix_cuda["mpps"], 3)
    result = {"commit": commit, "device": device, "command": command, "bench_decode": bench,
              "reader_end_to_end": reader, "targets": targets, "ratios": ratios}
    with open(dest, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    print(json.dumps({"targets": targets, "ratios": ratios, "reader": reader}, indent=1))


if __name__ == "__main__":
    main()
