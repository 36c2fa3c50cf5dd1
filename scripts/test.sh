#!/usr/bin/env bash
# Sets up, builds both backends (the CUDA one compiles and links wherever nvcc is; it runs only
# where a GPU is) and runs every test: unit tests, end-to-end tests on ../shared/data against
# tshark, the capture/decoder fuzz target under ASan+UBSan for FUZZ_SECONDS (default 30), and live
# capture stopped and restarted under the same sanitizers.
set -euo pipefail
cd "$(dirname "$0")/.."
# Benchmarks are programs run on the device, not tests; debug info is left out (a third of the
# compile time, which is most of CI's).
GASPP_BENCH=OFF GASPP_DEBUG_INFO=OFF scripts/setup.sh
scripts/check-layers
ctest --test-dir build --output-on-failure -j "$(nproc)"

# Fuzz build: clang, sanitizers on the whole library, CPU backend only.
# -O1 and line tables only: the build is most of this step's time in CI, and the sanitizers'
# reports keep their file:line.
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=None -DGASPP_CUDA=OFF \
  -DGASPP_TESTS=OFF -DGASPP_BENCH=OFF -DGASPP_FUZZ=ON \
  "-DCMAKE_CXX_FLAGS=-O1 -gline-tables-only -fsanitize=address,undefined -fno-sanitize-recover=undefined -fsanitize=fuzzer-no-link" >/dev/null
cmake --build build-fuzz --target fuzz_capture
# gaspp from the same tree (for the live restarts below) builds while the fuzzer runs.
cmake --build build-fuzz --target gaspp >build-fuzz/gaspp-build.log 2>&1 &
gaspp_build=$!
corpus=$(mktemp -d)
seeds=$(mktemp -d)
# Seed with the real captures (small ones) so the fuzzer starts from valid structure.
find ../shared/data/pcaps -type f -size -64k \( -name '*.pcap' -o -name '*.pcapng' \) -exec cp {} "$seeds/" \; 2>/dev/null || true
echo "fuzz: fuzz_capture for ${FUZZ_SECONDS:-30} s"
rc=0
./build-fuzz/tests/fuzz/fuzz_capture -max_total_time="${FUZZ_SECONDS:-30}" -max_len=65536 -print_final_stats=1 \
  "$corpus" "$seeds" >"$corpus.log" 2>&1 || rc=$?
grep -E "^(stat::number_of_executed_units|Done|==[0-9]+==ERROR|SUMMARY)" "$corpus.log" || true
if [ $rc -ne 0 ]; then tail -50 "$corpus.log"; echo "fuzz: failed (exit $rc)"; exit 1; fi
rm -rf "$corpus" "$seeds" "$corpus.log"

# Live capture stopped and restarted under the same sanitizers (a leak fails the run): gaspp from
# the sanitizer build, three runs on one veth link (root; exit 77 without it: skipped, said).
if ! wait $gaspp_build; then cat build-fuzz/gaspp-build.log; echo "live restarts: the sanitizer build of gaspp failed"; exit 1; fi
rc=0
python3 tests/e2e/live_capture.py build/gaspp ../shared/data --restarts build-fuzz/gaspp || rc=$?
if [ $rc -eq 77 ]; then echo "live restarts: skipped (not root, or no namespaces)";
elif [ $rc -ne 0 ]; then echo "live restarts: failed (exit $rc)"; exit 1; fi
echo "all tests passed"
