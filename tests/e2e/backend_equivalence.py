#!/usr/bin/env python3
"""CPU and CUDA backends agree: for every capture given (and generated workloads), the per-packet
decode rows are identical, the EVE flow records are identical, the reassembled streams
(`--dump-streams`: every file and the index) are identical, and the summaries are identical
(except the fields that describe the backend itself, timing and transfers). In the small-batch and
compacted settings a firewall runs too (FIREWALL_RULES below): its alerts are in the EVE file, its
counters in the summary, and the `-w` output (the packets that passed) is compared as well; the
compacted setting adds modules in two flow classes with scheduling on, and a stream module whose
matches are EVE events; a fourth setting runs the firewall with header-only slicing forced on (CUDA
reads the records through the capture's mapping, reassembly included), and a fifth runs the firewall
in firewall mode (POLICY_RULES: default drop, HTTP/1 hooks) with EVE drop events; a sixth runs the
firewall and a flow-dropping probe without reassembly (the flow walk without its reassembly path,
and on CUDA header-only slicing where the packets are large enough).

The firewall-mode rules use the packet hooks (pre_stream, flow_start) and flow conditions
(flow:established and direction, tcp.session), and the compacted setting takes urgent data out of
band (stream.reassembly.urgent.policy oob).

With --sides the runs compared are others: each side is a list of gaspp arguments, the first the
reference, e.g. the sharded CPU backend (backend/sharded/) against one shard:
  --sides "--backend cpu;--backend cpu --shards 2;--backend cpu --shards 7"
Sides that shard the flows (--shards, --gpus) report the flow table's and the out-of-order buffer's
gauges for all shards together (capacities summed, peaks the sum of each shard's peak): those
gauges (SHARD_GAUGES) are left out of the comparison then; every count is compared.

usage: backend_equivalence.py GASPP [--generate] [--part K/N] [--sides A;B...] [--settings I,J...]
                              [--gen-scale F] CAPTURE_OR_DIR...
  --part K/N     only every N-th capture from the K-th (1-based), to split a run in parts
  --settings     only the settings with these indices (0: defaults, 1: small batches with a firewall,
                 2: compacted with modules and classes, 3: slicing, 4: firewall mode, 5: no reassembly)
  --gen-scale F  the generated workloads with F times their packets
"""
import hashlib
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from decode_vs_tshark import find_captures  # noqa: E402

GENERATED = {
    "gen-mix": ["--mode", "mix", "--packets", "200000", "--ipv6", "0.3", "--vlan", "0.3"],
    "gen-http": ["--mode", "http", "--packets", "200000", "--flows", "100", "--reorder", "0.01", "--duplicate", "0.01",
                 "--loss", "0.01", "--ipv6", "0.2", "--vlan", "0.1", "--plant", "needle", "--plant-rate", "0.01"],
    "gen-fixed64": ["--mode", "fixed", "--size", "64", "--packets", "300000"],
}
VOLATILE = {"backend", "elapsed_s", "pps", "gbps", "batches"}
SHARD_GAUGES = {"flows": {"capacity", "slots", "table_bytes", "active", "peak"},
                "streams": {"ooo_segments_capacity", "ooo_bytes_capacity", "ooo_peak_segments", "ooo_peak_bytes",
                           "ooo_compactions"}}
# Rules that hit ordinary traffic in every way: drops (flows stay dropped), passes (flows pass),
# alerts, <>, lists, negation, ranges, IPv6.
# Firewall mode: packet hooks with default drop, and HTTP/1 hooks (GET and HEAD requests only,
# flows answered 404 dropped), so the HTTP progress tracker runs on every capture's TCP data.
POLICY_RULES = """
drop:packet tcp:pre_stream any any -> any 5555 (sid:30;)
accept:hook tcp:flow_start any any -> any any (flow:to_server; alert; sid:31;)
drop:packet tcp:all any any -> any any (tcp.session:closing; flow:to_client; alert; sid:32;)
accept:hook tcp:all any any -> any any (sid:1;)
drop:packet udp:all any any -> any any (flow:not_established,to_client; alert; sid:33;)
accept:hook udp:all any any -> any any (sid:2;)
drop:packet icmp:all any any -> any any (alert; sid:3;)
accept:hook http1:request_started any any -> any any (sid:10;)
accept:hook http1:request_line any any -> any any (http.method; content:"GET"; sid:11;)
accept:tx http1:request_line any any -> any any (http.method; content:"HEAD"; alert; sid:12;)
accept:hook http1:request_headers any any -> any any (sid:13;)
accept:hook http1:request_body any any -> any any (sid:14;)
accept:hook http1:request_trailer any any -> any any (sid:15;)
accept:hook http1:request_complete any any -> any any (sid:16;)
accept:hook http1:response_started any any -> any any (sid:20;)
drop:flow http1:response_line any any -> any any (http.stat_code; content:"404"; alert; sid:21;)
accept:hook http1:response_line any any -> any any (sid:22;)
accept:hook http1:response_headers any any -> any any (sid:23;)
accept:hook http1:response_body any any -> any any (sid:24;)
accept:hook http1:response_trailer any any -> any any (sid:25;)
accept:hook http1:response_complete any any -> any any (alert; sid:26;)
"""
FIREWALL_RULES = """
alert ip any any -> any any (msg:"every packet"; sid:1;)
drop tcp any any -> any [80,8080] (msg:"web"; sid:2;)
pass udp any any <> any 53 (msg:"dns"; sid:3;)
reject tcp any any -> $EXTERNAL_NET 1024: (msg:"high port"; sid:4;)
alert tcp [10.0.0.0/8,!10.1.0.0/16,192.168.0.0/16] any <> any ![22,25] (msg:"inside"; sid:5;)
drop udp any any -> 2001:db8::/32 any (msg:"v6 doc"; sid:6;)
alert icmp any any -> any any (msg:"icmp"; sid:7;)
pass tcp any 443 -> any any (msg:"tls replies"; sid:8;)
"""


def run(gaspp, side, path, d, extra, label, sharded=False, cuda_involved=True):
    backend = label
    passed = os.path.join(d, f"passed-{backend}.pcap")
    if "--rules" in extra or "--firewall-rules" in extra:
        extra = extra + ["-w", passed]
    rows = os.path.join(d, f"{backend}.tsv")
    js = os.path.join(d, f"{backend}.json")
    eve = os.path.join(d, f"eve-{backend}")
    os.makedirs(eve, exist_ok=True)
    streams = os.path.join(d, f"streams-{backend}")
    if os.path.isdir(streams):
        for f in os.listdir(streams):
            os.remove(os.path.join(streams, f))
    dump = [] if "--no-reassembly" in extra else ["--dump-streams", streams]
    # The same batch size on both: their defaults differ (CUDA 65536, the CPU 8192), and what a
    # batch boundary decides (the out-of-order buffer's peak, packets that reach a module after
    # their flow was dropped earlier in the batch) is counted in the summary.
    if "--batch" not in extra and "--batch" not in side and (not sharded or cuda_involved):
        extra = extra + ["--batch", "65536"]
    p = subprocess.run([gaspp, "-r", path, "--decode-out", rows, "--stats-json", js, "-q",
                        "-l", eve] + side + dump + extra, capture_output=True, text=True)
    if p.returncode not in (0, 2):
        raise SystemExit(f"gaspp {' '.join(side)} failed on {path}: {p.stderr}")
    summary = {k: v for k, v in json.load(open(js)).items() if k not in VOLATILE}
    if sharded:
        for section, keys in SHARD_GAUGES.items():
            if isinstance(summary.get(section), dict):
                summary[section] = {k: v for k, v in summary[section].items() if k not in keys}
    h = hashlib.sha256(open(rows, "rb").read())
    # The EVE file without its last line: the stats event carries the wall-clock time.
    h.update(b"".join(open(os.path.join(eve, "eve.json"), "rb").readlines()[:-1]))
    for f in sorted(os.listdir(streams)) if dump else []:
        h.update(f.encode() + b"\0" + open(os.path.join(streams, f), "rb").read())
    if "-w" in extra:
        h.update(open(passed, "rb").read())
    return h.hexdigest(), summary, p.returncode


def main():
    args = sys.argv[1:]
    gaspp = args.pop(0)
    generate = "--generate" in args
    args = [a for a in args if a != "--generate"]
    part, parts = 1, 1
    sides = [["--backend", "cpu"], ["--backend", "cuda"]]
    if "--sides" in args:
        k = args.index("--sides")
        sides = [x.split() for x in args[k + 1].split(";")]
        del args[k:k + 2]
    sharded = any("--shards" in x or "--gpus" in x for x in sides)
    only = None
    if "--settings" in args:
        k = args.index("--settings")
        only = [int(x) for x in args[k + 1].split(",")]
        del args[k:k + 2]
    scale = 1.0
    if "--gen-scale" in args:
        k = args.index("--gen-scale")
        scale = float(args[k + 1])
        del args[k:k + 2]
    cuda = any("cuda" in x for x in sides)
    if "--part" in args:
        k = args.index("--part")
        part, parts = (int(x) for x in args[k + 1].split("/"))
        del args[k:k + 2]
    failed = 0
    with tempfile.TemporaryDirectory() as d:
        captures = find_captures(args)
        rules = os.path.join(d, "firewall.rules")
        with open(rules, "w") as f:
            f.write(FIREWALL_RULES)
        fw = ["--rules", rules]
        policy = os.path.join(d, "policy.rules")
        with open(policy, "w") as f:
            f.write(POLICY_RULES)
        fwmode = ["--firewall-rules", policy, "--eve-drops"]
        if generate:
            for name, gen_args in GENERATED.items():
                path = os.path.join(d, name + ".pcap")
                k = gen_args.index("--packets")
                gen_args = gen_args[:k + 1] + [str(max(1000, int(int(gen_args[k + 1]) * scale)))] + gen_args[k + 2:]
                subprocess.run([gaspp, "gen", "-o", path, "--seed", "5"] + gen_args, check=True, capture_output=True)
                captures.append(path)
        captures = captures[part - 1::parts]
        settings = ()
        for c in captures:
            # Small batches with an out-of-order buffer that still holds every waiting segment (which
            # segment a full buffer drops depends on the order threads reach it). The generated
            # workloads (200k packets) use 512-packet batches, to keep the run short.
            small = ["--batch", "512" if c.startswith(d) else "7", "--ooo-segments", "65536"]
            # The compacted setting adds two modules, two flow classes with different module orders and
            # scheduling between stages.
            classes = ["--module", "probe:dport=443,action=drop_flow", "--module", "pass", "--class-order", "0,1,2,3",
                       "--class-order", "2,0,1,3", "--schedule", "on", "--module", "stream_match:pattern=HTTP/1.",
                       "--set", "stream.reassembly.urgent.policy=oob"]
            # Slicing on: CUDA reads every batch through the capture's mapping, reassembly included.
            # Firewall mode (default drop, HTTP/1 hooks) at small batches: drops, their reasons, alerts.
            # Without reassembly, in 512-packet batches (several packets of a flow in one batch).
            header_only = ["--no-reassembly", "--batch", "512", "--module", "probe:dport=443,action=drop_flow"] + fw
            settings = ([], small + fw, ["--force-compact"] + fw + classes, ["--slice", "on"] + fw, small + fwmode,
                        header_only)
            if only is not None:
                settings = tuple(settings[i] for i in only)
            for extra in settings:
                h_ref, s_ref, rc_ref = run(gaspp, sides[0], c, d, extra, "side0", sharded, cuda)
                for n, side in enumerate(sides[1:], 1):
                    h_o, s_o, rc_o = run(gaspp, side, c, d, extra, f"side{n}", sharded, cuda)
                    ok = h_ref == h_o and s_ref == s_o and rc_ref == rc_o
                    if not ok or not extra:
                        print(f"{'ok' if ok else 'DIFFER':7} {s_ref['packets']:8} packets [{' '.join(side)}] {' '.join(x for x in extra if x not in (rules, policy)):16} {os.path.basename(os.path.dirname(c))}/{os.path.basename(c)} rows {h_ref[:12]}")
                    if not ok:
                        for k in s_ref:
                            if s_ref[k] != s_o.get(k):
                                print(f"        {k}: [{' '.join(sides[0])}] {s_ref[k]} [{' '.join(side)}] {s_o.get(k)}")
                    failed += not ok
        print(f"{len(captures)} captures x {len(settings)} settings x {len(sides) - 1} comparisons, {failed} differ")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
