#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root, with bundle/ (scripts/device/bundle.sh) there.
#   run.sh tests     unit tests on the CUDA backend, the CLI damage cases, the flow-tracking
#                    cases and oracles and the stream oracles (but tshark's, absent there) on CUDA
#   run.sh equivalence  CPU/CUDA equivalence (decode rows, EVE flow records, --dump-streams
#                    output, summaries) on every capture and the generator's workloads;
#                    equivalence-1 / equivalence-2: its two halves, one call each
#   run.sh sanitize  compute-sanitizer memcheck of the unit tests on CUDA (sanitize-heavy: the two
#                    slowest, and the shrinking-capture test without API error reports)
#   run.sh sanitize-cli  compute-sanitizer memcheck of the CLI (transfers, modules, firewall mode, -k all)
#   run.sh racecheck compute-sanitizer racecheck on small cases
#   run.sh bench   bench_flow (flow table and sweep), bench_decode (limits, decode and decode+flow
#                  throughput) and the capture reader end to end
#   run.sh detect  the signature engine on CUDA: the detection tests, patterns split across
#                  segments and batches, ET Open on every capture against the CPU backend
#   run.sh detect-sanitize  compute-sanitizer memcheck of a run with ET Open
#   run.sh bench-app  the application layer end to end (gaspp -r, median of 3 after a warm-up) on the
#                  generator's HTTP: with and without --app-layer, with and without ET Open, CUDA and
#                  CPU (all cores); JSON in $OUT/bench-app.json
#   run.sh bench-flow-pos  the cost of the flow positions (FlowPosAt, written by the flow walk while a
#                  signature reads flow.pkts, flow.bytes or stream_size): ET Open against the same
#                  rules with the stream_size keyword taken out, CUDA, interleaved, median of 5
#                  after a warm-up; JSON in $OUT/bench-flow-pos.json
#   run.sh app-stages  gaspp --stage-times on the HTTP workload, each backend without, with the
#                  application layer and with ET Open: the backend's stages and the host's phases
#   run.sh detect-quick  the split-pattern test on CUDA, bench_detect, then ET Open CPU against CUDA
#                  on as many captures as DETECT_SECONDS (150) allow
#   run.sh bench-detect  bench_detect: ET Open on HTTP and the mix with planted matches, CUDA vs
#                  CPU vs the Hyperscan prefilter alone vs the PCIe limit
#   run.sh detect-stages  where the signature engine's time goes on CUDA: --stage-times of ET Open
#                  on the generator's HTTP and mix captures, with and without the rules
#   run.sh live    live capture (-i) and inline IPS on veth pairs in a namespace, live runs on CUDA
#   run.sh detect-ab  the stage times of ET Open with gaspp and the builds named in VARIANTS, ROUNDS
#                  rounds on one card (same-card comparisons of a change)
#   run.sh quick   a short check: the CUDA unit tests, alert flow objects and modules through the
#                  CLI on CUDA, and bench_eve
#   run.sh bench-stream  bench_stream: decode / +flow / +reassembly, CUDA vs CPU vs libnids; then
#                  bench_eve: EVE flow lines, the streaming writer against nlohmann-json
#   run.sh bench-cpu  bench_cpu: the CPU backend's decode / +flow / +reassembly with 1..16 threads on
#                  the generator's HTTP and mix and the largest real capture, the flows sharded
#                  over backends of 1 and 4 threads, libnids on one core, the host's memory-read
#                  limit, gaspp end to end; JSON in $OUT/bench_cpu.json
#   run.sh bench-cpu-limits  bench_cpu --limits-only: memory reads and register-only arithmetic (one
#                  dependent chain, eight independent ones) on one thread and all; JSON in
#                  $OUT/bench_cpu_limits.json
#   run.sh shards | shards-1 .. shards-4  the sharded backend (backend/sharded/) on CUDA: its unit
#                  tests and a memcheck of the sharded CLI (shards-1), then the CLI's outputs with the
#                  flows sharded against one GPU and the CPU backend on every capture and the
#                  generator's workloads (--gpus 2 where two GPUs are present, else two shards on one
#                  GPU); shards-1..4: a quarter of the captures each (a half took over 10 minutes on
#                  two H100s)
#   run.sh bench-multi-limits  bench_multi_gpu --limits-only: H2D per GPU and together, peer
#                  copies between two GPUs (NVLink on nvidia-h200-x2)
#   run.sh bench-multi  bench_multi_gpu: one GPU against the flows sharded over every GPU (two
#                  shards on one GPU where there is one), with each link's H2D limit alone and
#                  together; JSON in $OUT/multi-gpu.json
#   run.sh bench-live  bench_live: frames sent into a veth pair in a namespace of its own, captured
#                  by a bare AF_PACKET reader (the kernel path's limit) and by gaspp -i on the CPU
#                  and CUDA backends (decode, flow, the firewall on ET's IP lists) at 1%, 10% and
#                  100% of that limit, with the default ring, with a 1 ms block timeout, with
#                  TPACKET_V2 and with 4 rings in a fanout group; JSON in $OUT/bench_live*.json
#                  (bench-live-rings: the 4-ring case alone, 3 repetitions, then 4 TPACKET_V2
#                  rings once; bench-live-stall: the mix at full rate on 1 and 4 rings, 3
#                  repetitions, with --stage-times: each stage's slowest batch, where a stall sat)
#   run.sh bench-firewall  bench_firewall: decode+flow with and without the firewall (10k random
#                  rules, ET IP lists), mix and 64-byte frames, CUDA vs CPU; then bench_modules:
#                  scheduling on/off with 1..64 modules, its cost for a light module, consolidation;
#                  then bench_head_limits: the ceilings of moving the mix's headers to the GPU
# Output goes to stdout and, when OUT is set, JSON/logs under $OUT.
set -uo pipefail
cd "$(dirname "$0")/../.."
[ -d bundle ] || { [ -f .gl/bundle.tar.xz ] && tar -xJf .gl/bundle.tar.xz; }
export LD_LIBRARY_PATH="$PWD/bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$PATH:$PWD/bundle/bin"  # ip (iproute2), carried: the device has none
export GASPP_DATA="$PWD/bundle/data"
export PYTHONPATH="$PWD/bundle/py${PYTHONPATH:+:$PYTHONPATH}"  # scapy, carried (the device has no network)
OUT=${OUT:-/tmp/gaspp-device-out}
mkdir -p "$OUT"
B=bundle/bin
status=0
step() { echo; echo "== $*"; }
check() { local rc=$?; if [ $rc -ne 0 ]; then echo "FAILED ($rc): $1"; status=1; fi; }

echo "commit $(cat bundle/COMMIT | tr '\n' ' ')"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader

# Steps more than one mode runs.
detect_split() {
  step "stream signatures across segments and batches, CUDA against the reference"
  python3 tests/e2e/detect_stream_split.py $B/gaspp cuda | tail -4; check "detect stream split (cuda)"
}
bench_detect_run() {
  step "bench_detect (captures in /dev/shm)"
  $B/bench_detect --json "$OUT/bench_detect.json" --reps 3 --packets 2000000 --tmp /dev/shm --et bundle/data/rules/et-open
  check "bench_detect"
}

cmd="${1:-tests}"
case "$cmd" in
tests)
  step "unit tests, CUDA backend"
  GASPP_TEST_BACKEND=cuda $B/gaspp_unit_tests --gtest_brief=1 2>&1 | tail -15; check "unit tests (cuda)"
  step "unit tests, CPU backend"
  GASPP_TEST_BACKEND=cpu $B/gaspp_unit_tests --gtest_brief=1 2>&1 | tail -5; check "unit tests (cpu)"
  step "damaged captures through the CLI, CUDA backend"
  python3 tests/e2e/cli_bad_captures.py $B/gaspp --backend cuda | tail -3; check "cli bad captures"
  step "flow tracking edge cases and oracles, CUDA backend"
  python3 tests/e2e/flow_cases.py $B/gaspp --backend cuda | tail -3; check "flow cases (cuda)"
  python3 tests/e2e/stream_ips.py $B/gaspp --backend cuda | tail -3; check "invalid segments, IDS and IPS (cuda)"
  python3 tests/e2e/firewall_hooks.py $B/gaspp --backend cuda | tail -3; check "firewall hooks and flow conditions (cuda)"
  python3 tests/e2e/stream_urgent.py $B/gaspp --backend cuda | tail -3; check "urgent data policies (cuda)"
  python3 tests/e2e/stream_offsets.py $B/gaspp --backend cuda | tail -3; check "64-bit offsets past a 5 GiB hole (cuda)"
  python3 tests/e2e/exception_policy.py $B/gaspp --backend cuda | tail -3; check "exception policy on a full flow table (cuda)"
  python3 tests/e2e/defrag.py $B/gaspp --backend cuda | tail -3; check "IP defragmentation (cuda)"
  python3 tests/e2e/alert_flow.py $B/gaspp --backend cuda | tail -3; check "alert flow objects (cuda)"
  python3 tests/e2e/checksums.py $B/gaspp --backend cuda --no-tshark | tail -3; check "checksums -k (cuda)"
  python3 tests/e2e/flow_vs_oracles.py $B/gaspp bundle/data --backend cuda | tail -8; check "flow oracles (cuda)"
  python3 tests/e2e/app_proto_vs_ndpi.py $B/gaspp bundle/data --backend cuda --no-tshark | tail -3; check "app_proto vs nDPI (cuda)"
  python3 tests/e2e/detect_app_proto.py $B/gaspp bundle/data cuda | tail -3; check "alert smtp/ftp/ssh/smb signatures (cuda)"
  python3 tests/e2e/detect_xbits.py $B/gaspp cuda | tail -3; check "xbits vs reference (cuda)"
  python3 tests/e2e/detect_base64.py $B/gaspp cuda | tail -3; check "base64_decode / base64_data (cuda)"
  python3 tests/e2e/detect_body_windows.py $B/gaspp cuda | tail -3; check "HTTP body inspection windows (cuda)"
  python3 tests/e2e/detect_transforms.py $B/gaspp cuda | tail -3; check "transforms (cuda)"
  python3 tests/e2e/detect_http2_headers.py $B/gaspp cuda --no-tshark | tail -3; check "HTTP/2 header buffers (cuda)"
  python3 tests/e2e/smtp_events.py $B/gaspp --backend cuda | tail -3; check "SMTP anomaly rules (cuda)"
  python3 tests/e2e/detect_header.py $B/gaspp cuda 2>&1 | grep -v WARNING | tail -3; check "ttl, ip_proto, tcp.mss, seq, ack, window (cuda)"
  python3 tests/e2e/detect_decode_events.py $B/gaspp cuda 2>&1 | grep -v WARNING | tail -3; check "decoder events, decode-event (cuda)"
  python3 tests/e2e/detect_flow_counts.py $B/gaspp cuda 2>&1 | grep -v WARNING | tail -3; check "flow.pkts, flow.bytes, stream_size, vlan.id (cuda)"
  python3 tests/e2e/detect_dns.py $B/gaspp cuda 2>&1 | grep -v WARNING | tail -3; check "dns names, opcode, rcode, rrtype (cuda)"
  python3 tests/e2e/detect_header_buffers.py $B/gaspp cuda 2>&1 | grep -v WARNING | tail -3; check "header buffers and byte_math (cuda)"
  python3 tests/e2e/smtp_files.py $B/gaspp bundle/data --backend cuda --no-tshark | tail -3; check "SMTP attachments and file.data (cuda)"
  python3 tests/e2e/http_files.py $B/gaspp bundle/data --backend cuda --no-tshark | tail -3; check "HTTP files and the file keywords (cuda)"
  python3 tests/e2e/encapsulations.py $B/gaspp --backend cuda --no-tshark | tail -5; check "encapsulations (cuda)"
  step "stream oracles, CUDA backend"
  python3 tests/e2e/streams_vs_oracles.py $B/gaspp bundle/data --backend cuda --no-tshark | tail -6; check "stream oracles (cuda)"
  step "modules through the CLI (firewall, -w, --dump-packets), CUDA backend"
  python3 tests/e2e/modules_cli.py $B/gaspp bundle/data --backend cuda | tail -8; check "modules cli (cuda)"
  step "suricata-verify through the CLI (firewall mode), CUDA backend"
  python3 tests/e2e/suricata_verify.py $B/gaspp bundle/data --backend cuda | tail -4; check "suricata-verify (cuda)"
  ;;
equivalence|equivalence-1|equivalence-2)
  # The whole run takes about 9.5 minutes on an H100: in one call it is at the 10-minute limit, so
  # equivalence-1 and equivalence-2 run its two halves (every other capture).
  part=""; [ "$cmd" != equivalence ] && part="--part ${cmd#equivalence-}/2"
  step "CPU/CUDA equivalence ${part}"
  python3 tests/e2e/backend_equivalence.py $B/gaspp --generate $part bundle/data/pcaps > "$OUT/$cmd.log" 2>&1
  check "equivalence"; grep -v "^ok " "$OUT/$cmd.log" | tail -20; grep -c "^ok " "$OUT/$cmd.log"
  ;;
shards|shards-1|shards-2|shards-3|shards-4)
  gpus=$(nvidia-smi -L | wc -l)
  if [ "$cmd" = shards ] || [ "$cmd" = shards-1 ]; then
    step "sharded backend unit tests on CUDA"
    GASPP_TEST_BACKEND=cuda $B/gaspp_unit_tests --gtest_filter='*Sharded*:ShardOfPacket*' 2>&1 | tail -3
    check "sharded unit tests"
    # The second backend finds the capture registered by the first (cudaHostRegister answers
    # "already registered", by design: the registration is portable); the sanitizer would count
    # that API error, so these runs go without API error reports (memory errors are reported).
    shard_args="--shards 2"; [ "$gpus" -ge 2 ] && shard_args="--gpus 2 --shards 3"
    step "compute-sanitizer memcheck: gaspp $shard_args (copied and sliced)"
    $B/gaspp gen -o /tmp/sharded.pcap --mode http --packets 20000 --flows 50 --reorder 0.05 --duplicate 0.02 \
      --loss 0.01 --ipv6 0.2 > /dev/null; mkdir -p /tmp/sharded-eve
    for slice in off on; do
      compute-sanitizer --tool memcheck --leak-check full --report-api-errors no --error-exitcode 9 \
        $B/gaspp -r /tmp/sharded.pcap --backend cuda $shard_args --slice $slice --batch 4096 -q \
        --module probe:dport=443,action=drop_flow --module stream_match:pattern=HTTP/1. -l /tmp/sharded-eve \
        > "$OUT/memcheck-sharded-$slice.log" 2>&1
      check "memcheck sharded (slice $slice)"; tail -2 "$OUT/memcheck-sharded-$slice.log"
    done
  fi
  if [ "$gpus" -ge 2 ]; then sides="--backend cuda;--backend cuda --gpus 2;--backend cuda --gpus 2 --shards 3;--backend cpu --shards 2"
  else sides="--backend cuda;--backend cuda --shards 2;--backend cpu --shards 3"; fi
  part=""; [ "$cmd" != shards ] && part="--part ${cmd#shards-}/4"
  step "sharded outputs against one backend ($gpus GPU(s)): $sides $part"
  python3 tests/e2e/backend_equivalence.py $B/gaspp --generate $part --sides "$sides" bundle/data/pcaps > "$OUT/$cmd.log" 2>&1
  check "shard equivalence"; grep -v "^ok " "$OUT/$cmd.log" | tail -20; grep -c "^ok " "$OUT/$cmd.log"
  ;;
bench-multi-limits)
  step "bench_multi_gpu --limits-only: each GPU's H2D alone and together, peer copies between GPUs"
  $B/bench_multi_gpu --limits-only --json "$OUT/multi-gpu-limits.json" --reps 5 --commit "$(head -1 bundle/COMMIT)"
  check "bench_multi_gpu limits"
  ;;
bench-multi)
  step "bench_multi_gpu (captures in /dev/shm)"
  $B/bench_multi_gpu --json "$OUT/multi-gpu.json" --reps 3 --packets 8000000 --batch 262144 --tmp /dev/shm \
    --et bundle/data/rules/et-open --commit "$(head -1 bundle/COMMIT)"
  check "bench_multi_gpu"
  ;;
sanitize)
  step "compute-sanitizer memcheck"
  # Stream.Random* and the long-hole stream tests push thousands of 1- to 7-packet batches: too slow
  # under memcheck; the lossy generated capture of sanitize-cli takes the same paths (held
  # segments, gaps, conflicts) through the CLI. The table tests that never reach the device
  # (firewall matcher, EVE fields, TCP state) are left out too, and the two slowest under memcheck
  # (6 and 2 minutes on an H100) run in sanitize-heavy, so that each part fits one 10-minute call.
  GASPP_TEST_BACKEND=cuda compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 \
    $B/gaspp_unit_tests --gtest_brief=1 \
    --gtest_filter='-Stream.Random*:Stream.TheDefaultOutOfOrderBuffer*:Stream.HeldBytes*:FirewallMatcherTable.*:EveFlowTable.*:TcpStateMachine.*:Modules.StreamHookSeesEveryByte*:Capture.PipelineIndexesLargeFiles*:Capture.PipelineOnAShrunkFile*:Capture.EveryOpenCaptureStaysGuarded' \
    > "$OUT/memcheck.log" 2>&1; check "memcheck"
  tail -4 "$OUT/memcheck.log"
  ;;
sanitize-heavy)
  step "compute-sanitizer memcheck: the slowest unit tests"
  GASPP_TEST_BACKEND=cuda compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 \
    $B/gaspp_unit_tests --gtest_brief=1 \
    --gtest_filter='Modules.StreamHookSeesEveryByte*:Capture.PipelineIndexesLargeFiles*' > "$OUT/memcheck-heavy.log" 2>&1
  check "memcheck heavy"; tail -4 "$OUT/memcheck-heavy.log"
  # A capture that shrinks while it is mapped: registering the mapping with CUDA fails with
  # "invalid argument" by design (the backend then copies); the sanitizer would count that API
  # error, so this test runs without API error reports (memory errors are still reported).
  GASPP_TEST_BACKEND=cuda compute-sanitizer --tool memcheck --leak-check full --report-api-errors no --error-exitcode 9 \
    $B/gaspp_unit_tests --gtest_brief=1 --gtest_filter='Capture.PipelineOnAShrunkFile*' > "$OUT/memcheck-shrunk.log" 2>&1
  check "memcheck shrinking capture"; tail -3 "$OUT/memcheck-shrunk.log"
  ;;
sanitize-cli)
  step "compute-sanitizer memcheck on the CLI (direct, compacted and sliced transfers)"
  $B/gaspp gen -o /tmp/lossy.pcap --mode http --packets 20000 --flows 50 --reorder 0.05 --duplicate 0.02 \
    --loss 0.02 --seed 3 > /dev/null
  for f in bundle/data/pcaps/zeek/http-bro.org.pcap bundle/data/pcaps/tcpdump/802.1ad_QinQ.pcap /tmp/lossy.pcap \
           bundle/data/pcaps/zeek/tcp-reassembly.pcap; do
    for x in "" --force-compact "--dump-streams $OUT/streams-memcheck --batch 256" "--slice on" "-k all"; do
      compute-sanitizer --tool memcheck --error-exitcode 9 $B/gaspp -r "$f" --backend cuda -q $x > "$OUT/memcheck-cli.log" 2>&1
      check "memcheck $f $x"; tail -1 "$OUT/memcheck-cli.log"
    done
  done
  step "compute-sanitizer memcheck on the CLI with modules (firewall on the ET IP lists, probes; header-only, so sliced)"
  R=bundle/data/rules/et-open
  compute-sanitizer --tool memcheck --error-exitcode 9 $B/gaspp -r /tmp/lossy.pcap --backend cuda -q --batch 512 \
    --rules $R/drop.rules --rules $R/compromised.rules --rules $R/tor.rules --module probe:action=to_host \
    --module probe:action=drop_flow,dport=80 -w /tmp/passed.pcap --no-reassembly > "$OUT/memcheck-modules.log" 2>&1
  check "memcheck modules"; tail -1 "$OUT/memcheck-modules.log"
  compute-sanitizer --tool memcheck --error-exitcode 9 $B/gaspp -r /tmp/lossy.pcap --backend cuda -q --batch 512 \
    --rules $R/drop.rules --module probe:route=4 --module probe:ctx=2,action=to_host --module pass \
    --class-order 0,1,2,3 --class-order 3,2,1,0 --schedule on > "$OUT/memcheck-schedule.log" 2>&1
  check "memcheck classes and scheduling"; tail -1 "$OUT/memcheck-schedule.log"
  step "compute-sanitizer memcheck on the CLI in firewall mode (HTTP/1 hooks in the flow walk)"
  printf '%s\n' 'accept:hook tcp:all any any -> any any (sid:1;)' \
    'accept:hook http1:request_started any any -> any any (sid:2;)' \
    'accept:hook http1:request_line any any -> any any (http.method; content:"GET"; alert; sid:3;)' \
    'accept:tx http1:request_headers any any -> any any (sid:4;)' > /tmp/policy.rules
  compute-sanitizer --tool memcheck --error-exitcode 9 $B/gaspp -r /tmp/lossy.pcap --backend cuda -q --batch 512 \
    --firewall-rules /tmp/policy.rules --eve-drops -l /tmp > "$OUT/memcheck-policy.log" 2>&1
  check "memcheck firewall mode"; tail -1 "$OUT/memcheck-policy.log"
  # A 16-flow table (evictions, untracked packets dropped by the exception policy), packet hooks
  # with flow conditions, and urgent data out of band.
  printf '%s\n' 'drop:packet tcp:pre_stream any any -> any 5555 (sid:5;)' \
    'accept:hook tcp:flow_start any any -> any any (flow:to_server; sid:6;)' \
    'accept:hook tcp:all any any -> any any (tcp.session:setup,established; sid:7;)' \
    'accept:hook http1:request_started any any -> any any (sid:2;)' \
    'drop:flow http1:request_line any any -> any any (http.method; content:"GET"; sid:3;)' > /tmp/policy2.rules
  compute-sanitizer --tool memcheck --error-exitcode 9 $B/gaspp -r /tmp/lossy.pcap --backend cuda -q --batch 512 \
    --flow-capacity 16 --firewall-rules /tmp/policy2.rules --eve-drops -l /tmp \
    --set stream.reassembly.urgent.policy=oob > "$OUT/memcheck-policy2.log" 2>&1
  check "memcheck full flow table, hooks, urgent"; tail -1 "$OUT/memcheck-policy2.log"
  ;;
racecheck)
  # racecheck serialises warps, and flow lookups spin on slots another warp is filling: it runs
  # orders of magnitude slower, so it covers small cases (every flow kernel still runs).
  step "compute-sanitizer racecheck"
  GASPP_TEST_BACKEND=cuda timeout 300 compute-sanitizer --tool racecheck --error-exitcode 9 \
    $B/gaspp_unit_tests --gtest_brief=1 --gtest_filter='Flow.Expired*:Pipeline.BatchCloses*:Stream.PcapPlusPlusThree*' > "$OUT/racecheck.log" 2>&1
  check "racecheck (unit)"; tail -3 "$OUT/racecheck.log"
  for f in bundle/data/pcaps/ndpi/ftp.pcap bundle/data/pcaps/suricata-verify/eve-flow-vlan/input.pcap; do
    timeout 120 compute-sanitizer --tool racecheck --error-exitcode 9 $B/gaspp -r "$f" --backend cuda -q \
      --flow-capacity 1024 --batch 64 > "$OUT/racecheck-cli.log" 2>&1
    check "racecheck $f"; tail -1 "$OUT/racecheck-cli.log"
  done
  ;;
bench)
  step "bench_flow"
  $B/bench_flow --json "$OUT/bench_flow.json" --reps 5; check "bench_flow"
  step "bench_decode"
  $B/bench_decode --json "$OUT/bench_decode.json" --reps 5 --tmp /dev/shm; check "bench_decode"
  step "capture reader end to end (gaspp -r, file in the page cache)"
  f=/dev/shm/gaspp-reader.pcap
  $B/gaspp gen -o $f --mode mix --packets 8000000 --seed 11 --ipv6 0.1 --vlan 0.1; check "gen"
  ls -l $f
  R=$(mktemp -d)
  # cuda and cpu with parallel indexing (default), cuda with the serial walk for comparison.
  for cfg in cuda:0 cpu:0 cuda:1; do
    backend=${cfg%:*}; it=${cfg#*:}
    for rep in 0 1 2; do
      $B/gaspp -r $f --backend $backend --index-threads $it --no-progress -q --stats-json "$R/r-$backend-$it-$rep.json"
      check "reader $backend"
      python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(sys.argv[2], 'Mpps %.2f Gbit/s %.2f' % (j['pps']/1e6, j['gbps']))" \
        "$R/r-$backend-$it-$rep.json" "$backend index-threads=$it"
    done
  done
  # One file for all runs (name -> stats JSON), so few files come back.
  python3 -c "import glob,json,os,sys; print(json.dumps({os.path.basename(p)[:-5]: json.load(open(p)) for p in sorted(glob.glob(sys.argv[1]+'/r-*.json'))}))" "$R" > "$OUT/reader.json"
  rm -rf $f "$R"
  ;;
bench-stream)
  step "bench_stream (captures in /dev/shm)"
  $B/bench_stream --json "$OUT/bench_stream.json" --reps 3 --tmp /dev/shm --nids $B/peer_libnids; check "bench_stream"
  step "bench_eve (EVE flow lines: the streaming writer against the library)"
  $B/bench_eve --json "$OUT/bench_eve.json" --reps 3 --packets 1000000 --lines 1000000 --tmp /dev/shm; check "bench_eve"
  ;;
quick)
  step "unit tests, CUDA backend"
  GASPP_TEST_BACKEND=cuda $B/gaspp_unit_tests --gtest_brief=1 2>&1 | tail -15; check "unit tests (cuda)"
  step "alert flow objects and modules through the CLI, CUDA backend"
  python3 tests/e2e/alert_flow.py $B/gaspp --backend cuda | tail -3; check "alert flow objects (cuda)"
  python3 tests/e2e/modules_cli.py $B/gaspp bundle/data --backend cuda | tail -8; check "modules cli (cuda)"
  step "bench_eve (EVE flow lines: the streaming writer against the library)"
  $B/bench_eve --json "$OUT/bench_eve.json" --reps 3 --packets 1000000 --lines 1000000 --tmp /dev/shm; check "bench_eve"
  ;;
detect)
  step "detection tests (suricata-verify), CUDA backend"
  python3 tests/e2e/detect_verify.py $B/gaspp bundle/data --backend cuda --prefilter device | tail -4; check "detect verify (cuda)"
  detect_split
  step "DNS (UDP datagrams through the app-udp module's stage) on CUDA against the reference matcher"
  python3 tests/e2e/dns_cases.py $B/gaspp bundle/data --backend cuda | tail -4; check "dns cases (cuda)"
  step "SIP (UDP on port 5060 through the app-udp module's stage, TCP by content) on CUDA against tshark and the reference"
  python3 tests/e2e/sip_cases.py $B/gaspp bundle/data --backend cuda | tail -4; check "sip cases (cuda)"
  step "TLS certificates on CUDA against the openssl command (skipped where it is missing)"
  python3 tests/e2e/tls_cases.py $B/gaspp --backend cuda | tail -4; check "tls cases (cuda)"
  python3 tests/e2e/tls_mutual.py $B/gaspp --backend cuda | tail -4; check "tls mutual (cuda)"
  step "TLS decoder events on CUDA against the reference (Suricata's record layer)"
  python3 tests/e2e/tls_events.py $B/gaspp --backend cuda | tail -4; check "tls events (cuda)"
  step "Drops decided on the host after the verdicts (late) on CUDA against the reference"
  python3 tests/e2e/detect_late_drops.py $B/gaspp --backend cuda | tail -5; check "late drops (cuda)"
  step "ET Open on every capture: CPU backend against CUDA"
  python3 tests/e2e/detect_equivalence.py $B/gaspp bundle/data cpu cuda | tail -12; check "detect equivalence (cpu, cuda)"
  ;;
detect-quick)
  detect_split
  bench_detect_run
  step "ET Open on the captures, CPU backend against CUDA, for ${DETECT_SECONDS:-150} s"
  python3 tests/e2e/detect_equivalence.py $B/gaspp bundle/data cpu cuda --max-seconds "${DETECT_SECONDS:-150}" | tail -12
  check "detect equivalence (cpu, cuda)"
  ;;
detect-sanitize)
  step "compute-sanitizer memcheck: ET Open on a capture"
  for c in zeek/http-bro.org.pcap; do
    R=""; for f in bundle/data/rules/et-open/*.rules; do R="$R -s $f"; done
    compute-sanitizer --tool memcheck --leak-check full --error-exitcode 3 $B/gaspp -r bundle/data/pcaps/$c --backend cuda \
      -l "$OUT" --flow-capacity 65536 $R 2>&1 | grep -E "ERROR SUMMARY|LEAK SUMMARY|Invalid|gaspp: detect" | head -8
    check "memcheck detect $c"
  done
  step "compute-sanitizer memcheck: pcres reached on packets and streams (the retry kernels)"
  $B/gaspp gen -o /tmp/retry.pcap --mode http --packets 20000 --flows 50 --plant "Host: evil" --plant-rate 0.01 >/dev/null
  cat > /tmp/retry.rules <<'RULES'
alert tcp any any -> any any (msg:"stream pcre"; flow:established; content:"Host: "; pcre:"/Host: e[a-z]+/"; sid:1;)
alert tcp-pkt any any -> any any (msg:"packet pcre"; content:"GET "; pcre:"/^GET \/[a-z0-9]/"; sid:2;)
alert tcp any any -> any any (msg:"stream pcre no match"; content:"HTTP/1."; pcre:"/HTTP\/1\.[2-9]/"; sid:3;)
RULES
  mkdir -p "$OUT/retry-cpu" "$OUT/retry-cuda"
  compute-sanitizer --tool memcheck --leak-check full --error-exitcode 3 $B/gaspp -r /tmp/retry.pcap --backend cuda \
    -l "$OUT/retry-cuda" --flow-capacity 65536 -s /tmp/retry.rules 2>&1 | grep -E "ERROR SUMMARY|LEAK SUMMARY|Invalid" | head -8
  check "memcheck retry"
  for b in cpu cuda; do
    $B/gaspp -r /tmp/retry.pcap --backend $b -l "$OUT/retry-$b" -s /tmp/retry.rules >/dev/null 2>&1
    echo "$b: $(grep -c '"event_type":"alert"' "$OUT/retry-$b/eve.json") alerts," \
      "$(grep '"event_type":"alert"' "$OUT/retry-$b/eve.json" | grep -o '"signature_id":[0-9]*' | sort | uniq -c | tr '\n' ' ')"
  done
  [ "$(grep -c '"event_type":"alert"' "$OUT/retry-cpu/eve.json")" = "$(grep -c '"event_type":"alert"' "$OUT/retry-cuda/eve.json")" ]
  check "retry alerts cpu = cuda"
  ;;
bench-cpu-limits)
  step "bench_cpu --limits-only: the host's memory-read and arithmetic scaling"
  lscpu | grep -E "^(Model name|Socket|Core|Thread|NUMA node\(s\)|L2|L3)" || true
  $B/bench_cpu --limits-only --json "$OUT/bench_cpu_limits.json" --reps 3 --packets 1000 --tmp /dev/shm \
    --commit "$(head -1 bundle/COMMIT)"
  check "bench_cpu limits"
  ;;
bench-cpu)
  step "bench_cpu (captures in /dev/shm)"
  # The host's topology: hardware threads that share a core do not add up as cores do.
  lscpu | grep -E "^(Model name|Socket|Core|Thread|NUMA node\(s\)|L2|L3)" || true
  big=$(ls -S $(find bundle/data/pcaps -type f -name '*.pcap') | head -1)
  $B/bench_cpu --json "$OUT/bench_cpu.json" --reps 3 --packets 2000000 --tmp /dev/shm --nids $B/peer_libnids \
    --gaspp $B/gaspp --capture "$big" --commit "$(head -1 bundle/COMMIT)"
  check "bench_cpu"
  ;;
bench-live|bench-live-rings|bench-live-stall)
  step "bench_live: veth pair in a namespace, bare reader against gaspp -i (CPU, CUDA)"
  ns=gaspp-bench-live
  ip netns del $ns 2>/dev/null
  ip netns add $ns && ip netns exec $ns sh -c 'ip link add blt type veth peer name blr &&
    sysctl -qw net.ipv6.conf.all.disable_ipv6=1 && sysctl -qw net.ipv6.conf.default.disable_ipv6=1 &&
    ip link set lo up && ip link set blt up && ip link set blr up'
  check "veth pair"
  R=bundle/data/rules/et-open
  # The sender takes 8 of the 16 cores (a veth delivers on the sending CPU); gaspp gets the other 8.
  fw="--rules $R/drop.rules --rules $R/compromised.rules --rules $R/tor.rules --no-reassembly --threads 8"
  if [ "$cmd" = bench-live-stall ]; then  # the mix at full rate with each stage's slowest batch
    for rings in ${STALL_RINGS:-1 4}; do  # STALL_RINGS: the ring counts to run
      ip netns exec $ns $B/bench_live --tx blt --rx blr --gaspp $B/gaspp --backend cpu,cuda --seconds 3 --reps 3 \
        --threads 8 --rings $rings --workloads mix --loads 1 --json "$OUT/bench_live_stall_r$rings.json" \
        --commit "$(head -1 bundle/COMMIT)" --device "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" \
        -- $fw --stage-times
      check "bench_live (mix, $rings ring(s), stage times)"
    done
    ip netns del $ns
    [ $status -eq 0 ] && echo "device run: all passed" || echo "device run: FAILURES"
    exit $status
  fi
  if [ "$cmd" = bench-live-rings ]; then  # the 4-ring case alone, 3 repetitions
    ip netns exec $ns $B/bench_live --tx blt --rx blr --gaspp $B/gaspp --backend cpu,cuda --seconds 3 --reps 3 \
      --threads 8 --rings 4 --json "$OUT/bench_live_rings4.json" --commit "$(head -1 bundle/COMMIT)" \
      --device "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" -- $fw
    check "bench_live (4 rings)"
    # The same 4 rings as TPACKET_V2 (a slot per frame): the latency at 1% of the limit.
    ip netns exec $ns $B/bench_live --tx blt --rx blr --gaspp $B/gaspp --backend cpu,cuda --seconds 3 --reps 1 \
      --threads 8 --rings 4 --json "$OUT/bench_live_rings4_v2.json" --commit "$(head -1 bundle/COMMIT)" \
      --device "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" -- $fw --af-packet-version 2
    check "bench_live (4 rings, TPACKET_V2)"
    ip netns del $ns
    echo
    [ $status -eq 0 ] && echo "device run: all passed" || echo "device run: FAILURES"
    exit $status
  fi
  ip netns exec $ns $B/bench_live --tx blt --rx blr --gaspp $B/gaspp --backend cpu,cuda --seconds 3 --reps 3 \
    --threads 8 --json "$OUT/bench_live.json" --commit "$(head -1 bundle/COMMIT)" \
    --device "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" -- $fw
  check "bench_live"
  ip netns exec $ns $B/bench_live --tx blt --rx blr --gaspp $B/gaspp --backend cpu,cuda --seconds 3 --reps 1 \
    --threads 8 --json "$OUT/bench_live_1ms.json" --commit "$(head -1 bundle/COMMIT)" \
    --device "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" -- $fw --af-packet-block-timeout 1
  check "bench_live (1 ms block timeout)"
  ip netns exec $ns $B/bench_live --tx blt --rx blr --gaspp $B/gaspp --backend cpu,cuda --seconds 3 --reps 1 \
    --threads 8 --json "$OUT/bench_live_v2.json" --commit "$(head -1 bundle/COMMIT)" \
    --device "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" -- $fw --af-packet-version 2
  check "bench_live (TPACKET_V2)"
  ip netns exec $ns $B/bench_live --tx blt --rx blr --gaspp $B/gaspp --backend cpu,cuda --seconds 3 --reps 1 \
    --threads 8 --rings 4 --json "$OUT/bench_live_rings4.json" --commit "$(head -1 bundle/COMMIT)" \
    --device "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" -- $fw
  check "bench_live (4 rings)"
  ip netns del $ns
  ;;
bench-flow-pos)
  step "flow positions: ET Open with and without its stream_size keywords (CUDA, HTTP workload in /dev/shm)"
  $B/gaspp gen -o /dev/shm/ab-http.pcap --mode http --packets 2000000 --flows 2000 >/dev/null 2>&1
  rm -rf /tmp/etno && mkdir -p /tmp/etno
  for f in bundle/data/rules/et-open/*.rules; do sed -E 's/stream_size:[^;]*;//g' "$f" > /tmp/etno/$(basename "$f"); done
  python3 - "$B/gaspp" "$OUT/bench-flow-pos.json" "$(head -1 bundle/COMMIT)" <<'PY'
import glob, json, statistics, subprocess, sys
gaspp, out, commit = sys.argv[1:4]
def rules(d): return sum((["-s", r] for r in sorted(glob.glob(d + "/*.rules"))), [])
dirs = {"et_open": "bundle/data/rules/et-open", "et_open_stream_size_keyword_removed": "/tmp/etno"}
runs = {k: [] for k in dirs}
# Interleaved A, B, A, B, ... so that drift hits both alike; the first of each is the warm-up.
for k in range(6):
    for name, d in dirs.items():
        p = subprocess.run([gaspp, "-r", "/dev/shm/ab-http.pcap", "-q", "--stats-json", "/tmp/ab.json", "--backend", "cuda"]
                           + rules(d), capture_output=True, text=True)
        if p.returncode: raise SystemExit(p.stderr[-400:])
        if k: runs[name].append(json.load(open("/tmp/ab.json"))["gbps"])
res = {"commit": commit, "command": "scripts/device/run.sh bench-flow-pos"}
for name, vals in runs.items():
    res[f"cuda_{name}_gbps"] = round(statistics.median(vals), 3)
    res[f"cuda_{name}_runs"] = [round(v, 3) for v in vals]
json.dump(res, open(out, "w"), indent=1)
print(json.dumps(res))
PY
  check "bench-flow-pos"
  ;;
bench-app)
  step "application layer end to end (HTTP workload in /dev/shm)"
  $B/gaspp gen -o /dev/shm/app-http.pcap --mode http --packets 2000000 --flows 2000 >/dev/null 2>&1
  python3 - "$B/gaspp" /dev/shm/app-http.pcap "$OUT/bench-app.json" "$(cat bundle/COMMIT | head -1)" <<'PY'
import glob, json, statistics, subprocess, sys
gaspp, pcap, out, commit = sys.argv[1:5]
rules = []
for r in sorted(glob.glob("bundle/data/rules/et-open/*.rules")):
    rules += ["-s", r]
def gbps(args):
    vals = []
    for k in range(4):  # the first is the warm-up
        p = subprocess.run([gaspp, "-r", pcap, "-q", "--stats-json", "/tmp/app-stats.json"] + args, capture_output=True, text=True)
        if p.returncode != 0:
            raise SystemExit(f"gaspp {' '.join(args)}: {p.stderr.strip()[-300:]}")
        s = json.load(open("/tmp/app-stats.json"))
        if k:
            vals.append(s["gbps"])
    return statistics.median(vals), s
res = {}
# --threads 1 on CUDA: the application layer and its signatures on one host thread (the
# backend itself does not use --threads), against all of them in the runs without it.
for name, args in [("cuda", ["--backend", "cuda"]), ("cuda_app_layer", ["--backend", "cuda", "--app-layer"]),
                   ("cuda_app_layer_1thread", ["--backend", "cuda", "--app-layer", "--threads", "1"]),
                   ("cpu", ["--backend", "cpu"]), ("cpu_app_layer", ["--backend", "cpu", "--app-layer"]),
                   ("cuda_et_open", ["--backend", "cuda"] + rules), ("cuda_et_open_1thread", ["--backend", "cuda", "--threads", "1"] + rules),
                   ("cpu_et_open", ["--backend", "cpu"] + rules)]:
    g, s = gbps(args)
    res[name + "_gbps"] = round(g, 2)
    print(f"{name:16s} {g:8.2f} Gbit/s  {s.get('packets')} packets", flush=True)
    if name == "cuda_app_layer":
        res["app_layer_counters"] = s.get("modules", {}).get("app_layer")
dev = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
json.dump({"device": dev, "commit": commit, "command": "scripts/device/run.sh bench-app",
           "workload": "gaspp gen --mode http --packets 2000000 --flows 2000",
           "method": "gaspp -r end to end (read, decode, flows, reassembly, app layer, detection), median of 3 after a warm-up; Gbit/s of captured bytes",
           **res}, open(out, "w"), indent=1)
PY
  check "bench app"
  ;;
bench-detect)
  bench_detect_run
  ;;
detect-stages)
  R=""; for f in bundle/data/rules/et-open/*.rules; do R="$R -s $f"; done
  for m in http mix; do
    $B/gaspp gen -o /dev/shm/st-$m.pcap --mode $m --packets 2000000 --flows 1000 --plant "Host: evil" --plant-rate 0.001 >/dev/null
    for rules in "" "$R"; do
      step "$m ${rules:+with ET Open}"
      $B/gaspp -r /dev/shm/st-$m.pcap --backend cuda --stage-times -l "$OUT" $rules 2>&1 | grep -vE "^(flow|tcp|streams|stream data|ooo) "
      check "stages $m"
    done
  done
  ;;
app-stages)
  # Where a batch's time goes with the application layer on: the backend's stages and the host's
  # phases (gaspp --stage-times), on the HTTP workload, each backend, alone and with ET Open.
  R=""; for f in bundle/data/rules/et-open/*.rules; do R="$R -s $f"; done
  $B/gaspp gen -o /dev/shm/app-http.pcap --mode http --packets 2000000 --flows 2000 >/dev/null 2>&1
  for be in cuda cpu; do
    for args in "" "--app-layer" "$R"; do
      step "$be ${args:0:12}"
      $B/gaspp -r /dev/shm/app-http.pcap --backend $be --stage-times -q $args 2>&1 | grep -E "^gaspp: (stage|host)|elapsed"
      $B/gaspp -r /dev/shm/app-http.pcap --backend $be -q --stats-json /tmp/st.json $args >/dev/null 2>&1
      python3 -c "import json; print('gbit/s', round(json.load(open('/tmp/st.json'))['gbps'], 2))"
      check "app stages $be"
    done
  done
  ;;
live)
  # Live capture on a veth pair in a namespace of the test's own, the live runs on CUDA (exit 77:
  # the machine cannot make namespaces, veth pairs or packet sockets: said, not failed).
  step "live capture and inline IPS on veth pairs, CUDA backend"
  python3 tests/e2e/live_capture.py $B/gaspp bundle/data --backend cuda; rc=$?
  [ $rc -eq 77 ] && echo "live capture: not possible on this machine (skipped)" || { [ $rc -eq 0 ] || { echo "FAILED ($rc): live"; status=1; }; }
  ;;
detect-ab)
  # The same cards, several builds: gaspp against the binaries named in VARIANTS (carried beside
  # the bundle), ROUNDS rounds of ET Open on the generator's HTTP and mix captures, interleaved.
  R=""; for f in bundle/data/rules/et-open/*.rules; do R="$R -s $f"; done
  for m in http mix; do
    $B/gaspp gen -o /dev/shm/st-$m.pcap --mode $m --packets 2000000 --flows 1000 --plant "Host: evil" --plant-rate 0.001 >/dev/null
  done
  for round in $(seq 1 "${ROUNDS:-3}"); do
    for m in http mix; do
      for bin in $B/gaspp ${VARIANTS:-}; do
        step "round $round $m $bin"
        $bin -r /dev/shm/st-$m.pcap --backend cuda --stage-times -l "$OUT" $R 2>&1 |
          grep -vE "^(flow|tcp|streams|stream data|ooo|link|l3|l4|tunnels|undecoded|malformed|defrag|capture|packets|outcome|batches|backend|module 0|gaspp: rules|gaspp: cuda)"
        check "ab $m $bin"
      done
    done
  done
  ;;
bench-firewall)
  step "bench_firewall (captures in /dev/shm)"
  $B/bench_firewall --json "$OUT/bench_firewall.json" --reps 3 --packets 8000000 --batch 262144 --tmp /dev/shm \
    --et bundle/data/rules/et-open; check "bench_firewall"
  step "bench_modules"
  $B/bench_modules --json "$OUT/bench_modules.json" --reps 3 --packets 8000000 --tmp /dev/shm; check "bench_modules"
  step "bench_head_limits (how fast the mix's headers reach the GPU at all)"
  $B/bench_head_limits --json "$OUT/bench_head_limits.json" --reps 5 --packets 16000000 --tmp /dev/shm
  check "bench_head_limits"
  ;;
esac
echo
[ $status -eq 0 ] && echo "device run: all passed" || echo "device run: FAILURES"
exit $status
