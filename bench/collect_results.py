#!/usr/bin/env python3
"""Turns what `scripts/device/run.sh bench` left in its OUT folder into one committed result file.

usage: collect_results.py OUT_DIR COMMIT DEVICE COMMAND RESULT_JSON
The result holds the commit, the device, the command, the bench_decode figures (limits, decode and
decode+flow throughput), the bench_flow figures (table throughput, sweep grid) when present, the
capture reader end-to-end runs (median), and the targets checked against them (ratios, not verdicts
by hand).
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
    rows = bench["decode"]
    for d in rows:
        d.setdefault("stages", "decode")
    dec = {(d["workload"], d["backend"], d["batch"], d["stages"]): d for d in rows}
    best = lambda w, st="decode": max((d for d in rows if d["workload"] == w and d["backend"] == "cuda" and
                                       d["stages"] == st), key=lambda d: d["mpps"])
    b64, b1514 = best("fixed64"), best("fixed1514")
    targets = {
        "decode64_fraction_of_h2d_limit_pps": {"target": 0.90, "measured": b64["fraction_of_limit"],
                                               "mpps": b64["mpps"], "batch": b64["batch"]},
        "decode1514_fraction_of_h2d_limit_bytes": {"target": 0.95, "measured": b1514["fraction_of_limit"],
                                                   "mpps": b1514["mpps"], "batch": b1514["batch"]},
    }
    mix_cuda, mix_cpu = best("mix"), dec.get(("mix", "cpu", 65536, "decode"))
    ratios = {"mix_cuda_over_cpu_all_cores": round(mix_cuda["mpps"] / mix_cpu["mpps"], 2) if mix_cpu else None}
    flow = None
    if any(d["stages"] == "decode+flow" for d in rows):
        for w in ("mix", "http", "fixed64", "fixed1514"):
            for batch in (65536, 131072):
                alone, both = dec.get((w, "cuda", batch, "decode")), dec.get((w, "cuda", batch, "decode+flow"))
                if alone and both:
                    over = round(1 - both["mpps"] / alone["mpps"], 4)
                    key = f"flow_overhead_{w}_batch{batch}"
                    if w in ("mix", "http"):
                        targets[key] = {"target_max": 0.05, "measured": over, "decode_mpps": alone["mpps"],
                                        "decode_flow_mpps": both["mpps"]}
                    else:
                        ratios[key] = over
            c_cpu = dec.get((w, "cpu", 65536, "decode+flow"))
            if c_cpu:
                ratios[f"decode_flow_{w}_cuda_over_cpu_all_cores"] = round(best(w, "decode+flow")["mpps"] / c_cpu["mpps"], 2)
    try:
        flow = json.load(open(f"{out}/bench_flow.json"))
    except FileNotFoundError:
        pass
    if flow:
        t = {(r["flows"], r["variant"]): r for r in flow["table"]}
        for n in sorted({r["flows"] for r in flow["table"]}):
            lf, lk, cpu = t.get((n, "cuda lock-free claim")), t.get((n, "cuda bucket locks")), t.get((n, "cpu all threads"))
            if lf and lk:
                ratios[f"table_{n}_lockfree_over_bucket_locks_lookup"] = round(lf["lookup_mops"] / lk["lookup_mops"], 2)
                ratios[f"table_{n}_lockfree_over_bucket_locks_insert"] = round(lf["insert_mops"] / lk["insert_mops"], 2)
            if lf and cpu:
                ratios[f"table_{n}_cuda_over_cpu_lookup"] = round(lf["lookup_mops"] / cpu["lookup_mops"], 2)
                ratios[f"table_{n}_cuda_over_cpu_insert"] = round(lf["insert_mops"] / cpu["insert_mops"], 2)
        one_m = [r for r in flow["sweep"] if r["slots"] == 1 << 20]
        if one_m:
            ratios["sweep_1m_slots_us_vs_paper_463us_gtx480"] = one_m[0]["sweep_none_us"]
    if "cuda" in reader:
        ratios["reader_end_to_end_over_decode_from_memory_mix"] = round(reader["cuda"]["median_mpps"] / mix_cuda["mpps"], 3)
    result = {"commit": commit, "device": device, "command": command, "bench_decode": bench,
              "bench_flow": flow, "reader_end_to_end": reader, "targets": targets, "ratios": ratios}
    with open(dest, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    print(json.dumps({"targets": targets, "ratios": ratios, "reader": reader}, indent=1))


if __name__ == "__main__":
    main()
