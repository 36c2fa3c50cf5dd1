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
# A small rule set over the demo's addresses: alerts on IPv6, drops the flows to half the web servers
# (header-only rules: the firewall), and a signature on the HTTP requests (content with depth,
# distance and within: the signature engine, on the reassembled stream and the packets).
cat > build/demo/demo.rules <<'RULES'
alert ip any any -> ::/0 any (msg:"IPv6 traffic"; sid:1000001; rev:1;)
drop tcp 10.0.0.0/8 any -> 198.19.0.0/17 80 (msg:"web servers in the lower half"; sid:1000002; rev:1;)
alert tcp any any <> 192.168.0.0/16 any (msg:"home network"; sid:1000003; rev:1;)
alert tcp any any -> any 80 (msg:"a .bin download from cdn7"; flow:to_server,established; content:"GET /files/"; depth:11; content:".bin HTTP/1.1|0d 0a|Host: cdn7."; distance:16; within:32; sid:1000004; rev:1;)
RULES
./build/gaspp -r build/demo/demo.pcap --stats-json build/demo/stats.json -l build/demo --dump-streams build/demo/streams \
  --rules build/demo/demo.rules -w build/demo/passed.pcap --fast-log
echo "summary as JSON: build/demo/stats.json; flow records, alerts and stats (EVE JSON): build/demo/eve.json;"
echo "alerts, a line each: build/demo/fast.log;"
echo "reassembled TCP streams: build/demo/streams (gaps and ends in build/demo/streams/index.tsv);"
echo "packets the firewall passed: build/demo/passed.pcap"
