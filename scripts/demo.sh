#!/usr/bin/env bash
# Sets up, builds, generates a demo capture (HTTP-like downloads over mixed IPv4/IPv6 and VLANs)
# and runs gaspp on it: the main job end to end. Uses the GPU when there is one.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
mkdir -p build/demo
./build/gaspp gen -o build/demo/demo.pcap --mode http --packets 200000 --flows 64 --ipv6 0.2 --vlan 0.1 \
  --reorder 0.001 --loss 0.001 --seed 1
rm -rf build/demo/streams
./build/gaspp -r build/demo/demo.pcap --stats-json build/demo/stats.json -l build/demo --dump-streams build/demo/streams
echo "summary as JSON: build/demo/stats.json; flow records and stats (EVE JSON): build/demo/eve.json;"
echo "reassembled TCP streams: build/demo/streams (gaps and ends in build/demo/streams/index.tsv)"
