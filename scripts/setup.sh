#!/usr/bin/env bash
# Installs what gaspp needs to build and test, from Debian packages (idempotent: installs only
# what is missing), then configures and builds into build/ (the CUDA backend too when nvcc is
# on PATH or in /usr/local/cuda/bin).
# usage: scripts/setup.sh [--no-build]
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake ninja-build g++ pkg-config libpcap-dev libgtest-dev python3 tshark clang libnids-dev libyaml-cpp-dev
          nlohmann-json3-dev libcli11-dev libhyperscan-dev libpcre2-dev libssl-dev zlib1g-dev liblzma-dev libnghttp2-dev openssl tcpdump iproute2)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  # tshark asks whether non-root users may capture; answer no without a prompt.
  echo "wireshark-common wireshark-common/install-setuid boolean false" | $sudo debconf-set-selections
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# scapy builds the flow-tracking test cases; the python3 on PATH may not be the system one.
python3 -c "import scapy" 2>/dev/null || python3 -m pip install --quiet scapy
# PyYAML reads suricata-verify's test.yaml files; jsonschema validates EVE against Suricata's schema.
python3 -c "import yaml" 2>/dev/null || python3 -m pip install --quiet pyyaml
python3 -c "import jsonschema" 2>/dev/null || python3 -m pip install --quiet jsonschema

[ "${1:-}" = "--no-build" ] && exit 0
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi
# Machine code for the GPU (ptxas: most of the CUDA build's time) only where a GPU will run it;
# elsewhere (CI) the CUDA code is compiled to PTX and linked, which checks all a GPU-less machine
# can. GASPP_CUDA_ARCHS overrides (scripts/device/bundle.sh always builds sm_90 machine code).
# Where no GPU is, the device compiler's optimizer also runs at -O1 (GASPP_CUDA_CHECK_ONLY, most of
# the rest of the CUDA build's time).
archs="90-real;90-virtual"
check_only=OFF
if ! nvidia-smi -L >/dev/null 2>&1; then archs="90-virtual"; check_only=ON; fi
[ -n "${GASPP_CUDA_ARCHS:-}" ] && check_only=OFF
# GASPP_BENCH=OFF (scripts/test.sh): the benchmarks are not built; no test runs them, and the
# device bundle (scripts/device/bundle.sh) builds them where they run.
# GASPP_DEBUG_INFO=OFF (scripts/test.sh): no -g, a third less compile time.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGASPP_CUDA="${GASPP_CUDA:-AUTO}" \
  -DGASPP_BENCH="${GASPP_BENCH:-ON}" -DGASPP_DEBUG_INFO="${GASPP_DEBUG_INFO:-ON}" \
  -DCMAKE_CUDA_ARCHITECTURES="${GASPP_CUDA_ARCHS:-$archs}" -DGASPP_CUDA_CHECK_ONLY=$check_only >/dev/null
cmake --build build
