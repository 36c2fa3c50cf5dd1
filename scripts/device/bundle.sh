#!/usr/bin/env bash
# Prepares bundle/ for a GPU machine: the CUDA build (gaspp, unit tests, benchmarks, the libnids
# peer), the shared
# libraries they load that a bare Ubuntu 24.04 lacks, and the test captures. Run here, then carry
# `bundle` to the device and run scripts/device/run.sh there.
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGASPP_CUDA=ON -DGASPP_BENCH=ON "-DCMAKE_CUDA_ARCHITECTURES=90-real;90-virtual" >/dev/null
cmake --build build
rm -rf bundle
mkdir -p bundle/bin bundle/lib bundle/data
cp build/gaspp build/tests/gaspp_unit_tests build/bench/bench_decode build/bench/bench_flow build/bench/bench_stream \
  build/bench/bench_firewall build/bench/bench_detect build/bench/bench_modules build/bench/bench_head_limits build/bench/bench_eve build/bench/bench_cpu build/bench/bench_multi_gpu build/bench/bench_live \
  build/bench/peer_libnids bundle/bin/
# iproute2's ip, which the device lacks: the live capture test makes namespaces and veth pairs.
cp /usr/sbin/ip bundle/bin/
# libpcap, libnids, ip's libraries and what they pull in beyond glibc and the C++ runtime (the
# device's own are newer).
for lib in $(ldd build/gaspp build/bench/peer_libnids /usr/sbin/ip | awk '/=>/ {print $3}' | sort -u); do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libstdc++.so*|libgcc_s.so*|libpthread.so*|libdl.so*|librt.so*) ;;
    *) cp -L "$lib" bundle/lib/ ;;
  esac
done
cp -r ../shared/data/pcaps bundle/data/pcaps
# suricata-verify's detection tests (11 MB): the defrag and prefilter tests read their captures.
cp -r ../shared/data/detect bundle/data/detect
# All of ET Open (the signature engine's tests run it on every capture) and its classification.config.
mkdir -p bundle/data/rules/et-open
cp ../shared/data/rules/et-open/*.rules ../shared/data/rules/et-open/classification.config bundle/data/rules/et-open/
# Line tables are left out of every binary (the carry limit is 64 MiB); symbols stay for backtraces.
strip --strip-debug bundle/bin/*
# scapy (pure Python) for the flow-tracking cases.
mkdir -p bundle/py
cp -r "$(python3 -c 'import os, scapy; print(os.path.dirname(scapy.__file__))')" bundle/py/
cp -r "$(python3 -c 'import os, yaml; print(os.path.dirname(yaml.__file__))')" bundle/py/
find bundle/py -name __pycache__ -prune -exec rm -rf {} +
git rev-parse HEAD > bundle/COMMIT
git diff --quiet HEAD || echo "dirty" >> bundle/COMMIT
du -sh bundle
# Carried compressed (the carry limit is 64 MiB); run.sh unpacks it when bundle/ is absent.
mkdir -p .gl
tar -cf - bundle | xz -T0 -6 > .gl/bundle.tar.xz.tmp && mv .gl/bundle.tar.xz.tmp .gl/bundle.tar.xz
du -sh .gl/bundle.tar.xz
