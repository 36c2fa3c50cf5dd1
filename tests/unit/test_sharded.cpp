// The sharded backend (backend/sharded/): N backends of the backend under test, the flows sharded
// over them, hand the pipeline exactly what one backend hands it — batch by batch: verdicts,
// counters, decoded fields, flow records, stream chunks and their bytes, module events and
// counters; and at the end the flushed streams and flows. The oracle is one backend of the same
// kind over the same capture; cases cover reordered, lossy, duplicated HTTP (reassembly, the
// out-of-order buffer, flows expiring mid-run) and the mix (IPv6, VLANs, UDP, ICMP), batch sizes
// from 7 packets, and a firewall whose drops make flow decisions.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <cstdio>
#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include "backend/sharded/sharded_backend.hpp"
#include "core/modules.hpp"
#include "output/decode_rows.hpp"
#include "pipeline/pipeline.hpp"
#include "test_support.hpp"

using namespace gaspp;

namespace {

// What the pipeline received, flattened in the order it received it.
struct Seen {
  std::vector<std::string> lines;  // one per item, comparable as text
  uint64_t packets = 0, chunks = 0, records = 0, events = 0;
};

std::string key_text(const FlowKey& k) {
  char b[160];
  std::snprintf(b, sizeof b, "%08x%08x%08x%08x-%08x%08x%08x%08x:%u-%u/%u", k.addr[0][0], k.addr[0][1], k.addr[0][2],
                k.addr[0][3], k.addr[1][0], k.addr[1][1], k.addr[1][2], k.addr[1][3], k.port[0], k.port[1], k.proto);
  return b;
}

void add_chunks(Seen& s, const std::vector<StreamChunk>& chunks, std::span<const uint8_t> bytes, const char* what) {
  for (const StreamChunk& c : chunks) {
    const bool has_bytes = !(c.flags & kChunkConflict) && c.len;
    const std::string data = has_bytes ? std::string(reinterpret_cast<const char*>(bytes.data()) + c.data, c.len) : "";
    s.lines.push_back(std::string(what) + " " + key_text(c.key) + " id " + std::to_string(c.flow_id) + " dir " +
                      std::to_string(c.dir) + " off " + std::to_string(c.off) + " gap " + std::to_string(c.gap) +
                      " len " + std::to_string(c.len) + " flags " + std::to_string(c.flags) + " packet " +
                      std::to_string(c.packet) + " data " + std::to_string(std::hash<std::string>{}(data)));
    ++s.chunks;
  }
}

void add_records(Seen& s, const std::vector<FlowRecordOut>& v, const char* what) {
  for (const FlowRecordOut& r : v) {
    s.lines.push_back(std::string(what) + " " + key_text(r.rec.key) + " id " + std::to_string(r.rec.flow_id) +
                      " reason " + std::to_string(r.reason) + " pkts " + std::to_string(r.rec.side[0].pkts) + "/" +
                      std::to_string(r.rec.side[1].pkts) + " bytes " + std::to_string(r.rec.side[0].bytes) + "/" +
                      std::to_string(r.rec.side[1].bytes) + " ts " + std::to_string(r.rec.first_ts) + "-" +
                      std::to_string(r.rec.last_ts) + " state " + std::to_string(r.rec.state));
    ++s.records;
  }
}

std::string event_text(const ModuleEvent& e) {
  return "event packet " + std::to_string(e.packet) + " flow " + std::to_string(e.flow_id) + " module " +
         std::to_string(e.module) + " kind " + std::to_string(e.kind) + " value " + std::to_string(e.value) + " dir " +
         std::to_string(e.to_client);
}

const char* kRules = R"(alert ip any any -> any any (msg:"every packet"; sid:1;)
drop tcp any any -> any [80,8080] (msg:"web"; sid:2;)
pass udp any any <> any 53 (msg:"dns"; sid:3;)
alert tcp any any <> any any (msg:"tcp"; sid:4;)
drop icmp any any -> any any (msg:"icmp"; sid:5;)
)";

Seen run(const CaptureFile& cap, uint32_t batch, int shards, bool firewall) {
  ModuleSet mods;
  std::string rules_path;
  if (firewall) {
    rules_path = (std::filesystem::temp_directory_path() / ("gaspp-sharded-" + std::to_string(::getpid()) + ".rules")).string();
    std::FILE* f = std::fopen(rules_path.c_str(), "w");
    std::fputs(kRules, f);
    std::fclose(f);
    mods.add(make_module("firewall", {{"rules", rules_path}}));
  }
  BackendConfig bc;
  bc.batch_packets = batch;
  bc.stream.enabled = true;
  bc.modules = mods.pointers();
  bc.flow.module_state_bytes = mods.flow_state_bytes();
  // Short timeouts: flows expire mid-run, in the sweep of a batch.
  for (auto& t : bc.flow.timeouts.normal) {
    t[0] = 1;
    t[1] = 2;
    t[2] = 1;
  }
  std::unique_ptr<Backend> be;
  if (shards == 0) {
    be = test::make_backend(bc);
  } else {
    std::vector<std::unique_ptr<Backend>> parts;
    for (int k = 0; k < shards; ++k) {
      BackendConfig sc = bc;
      sc.threads = 1 + k % 2;
      parts.push_back(test::make_backend(sc));
    }
    be = make_sharded_backend(std::move(parts), bc, 2);
  }
  RunOptions ro;
  ro.policy.max_packets = batch;
  ro.want_decoded = true;
  ro.want_streams = true;
  Seen s;
  run_capture(
      cap, *be, ro,
      [&](const PacketBatch& b) {
        DecodedView v = const_cast<PacketBatch&>(b).decoded.view();
        DecodedPacket p;
        for (uint32_t i = 0; i < b.count; ++i) {
          load(v, i, p);
          std::string row;
          format_decode_row(b.first_index + i + 1, p, row);
          s.lines.push_back(row + " verdict " + std::to_string(b.h_verdict[i]) + " flags " +
                            std::to_string(b.flow_flags.size() > i ? b.flow_flags[i] : 255) + " tracked " +
                            std::to_string(b.flow_slot.size() > i && b.flow_slot[i] != kNoFlow));
          if (b.h_pkt_counts && (b.h_verdict[i] & kVerdictAlerted) && b.h_pkt_counts[i].first_ts)
            s.lines.push_back("counts " + std::to_string(b.h_pkt_counts[i].pkts[0]) + "/" +
                              std::to_string(b.h_pkt_counts[i].pkts[1]));
          ++s.packets;
        }
        std::string c = "counters";
        for (int k = 0; k < c_count_; ++k) c += " " + std::to_string(b.counters.v[k]);
        s.lines.push_back(c);
        std::vector<ModuleEvent> ev = b.events;
        std::sort(ev.begin(), ev.end(), [](const ModuleEvent& x, const ModuleEvent& y) {
          return event_text(x) < event_text(y);
        });
        for (const ModuleEvent& e : ev) s.lines.push_back(event_text(e));
        s.events += ev.size();
        std::string m = "module counts";
        for (uint64_t x : b.module_counts) m += " " + std::to_string(x);
        s.lines.push_back(m);
      },
      [&](const std::vector<FlowRecordOut>& r) { add_records(s, r, "record"); },
      [&](const std::vector<StreamChunk>& c, std::span<const uint8_t> b) { add_chunks(s, c, b, "chunk"); },
      [&](const StreamFlushModules& m, const std::vector<FlowRecordOut>&) {
        std::vector<std::string> ev;
        for (const ModuleEvent& e : m.events) ev.push_back(event_text(e));
        std::sort(ev.begin(), ev.end());
        s.lines.insert(s.lines.end(), ev.begin(), ev.end());
        std::string x = "flush module counts";
        for (uint64_t v : m.module_counts) x += " " + std::to_string(v);
        s.lines.push_back(x);
      });
  if (!rules_path.empty()) std::filesystem::remove(rules_path);
  return s;
}

CaptureFile capture(GenMode mode, uint64_t packets, uint32_t flows) {
  GenConfig g;
  g.mode = mode;
  g.packets = packets;
  g.flows = flows;
  g.seed = 11;
  g.reorder = 0.05;
  g.duplicate = 0.02;
  g.loss = 0.01;
  g.ipv6_share = 0.3;
  g.vlan_share = 0.2;
  return test::generated_capture(g);
}

}  // namespace

using Case = std::tuple<GenMode, uint32_t /*batch*/, int /*shards*/, bool /*firewall*/>;
class Sharded : public ::testing::TestWithParam<Case> {};

TEST_P(Sharded, HandsThePipelineWhatOneBackendDoes) {
  const auto [mode, batch, shards, firewall] = GetParam();
  const CaptureFile cap = capture(mode, mode == GenMode::http ? 6000 : 4000, mode == GenMode::http ? 40 : 300);
  const Seen want = run(cap, batch, 0, firewall);
  const Seen got = run(cap, batch, shards, firewall);
  // The captures exercise what is compared.
  ASSERT_GT(want.packets, 3000u);
  ASSERT_GT(want.records, 20u);
  if (mode == GenMode::http) {
    ASSERT_GT(want.chunks, 500u);
  }
  if (firewall) {
    ASSERT_GT(want.events, 100u);
  }
  ASSERT_EQ(got.lines.size(), want.lines.size());
  for (size_t i = 0; i < want.lines.size(); ++i) ASSERT_EQ(got.lines[i], want.lines[i]) << "item " << i;
}

INSTANTIATE_TEST_SUITE_P(Cases, Sharded,
                         ::testing::Values(Case{GenMode::http, 7, 2, false}, Case{GenMode::http, 512, 3, true},
                                           Case{GenMode::http, 4096, 7, true}, Case{GenMode::mix, 7, 3, true},
                                           Case{GenMode::mix, 1024, 2, false}, Case{GenMode::mix, 65536, 7, true}));

TEST(ShardOfPacket, BothDirectionsOfAFlowShareAShard) {
  // Every packet of a flow goes where its flow's table entry lives: the shard follows the flow key,
  // which both directions share; packets without a flow spread by index.
  const CaptureFile cap = capture(GenMode::mix, 3000, 200);
  RecordWalker w(cap);
  RecordInfo r;
  DecodedPacket p;
  DecodedView one;
#define GASPP_X(type, name, n) one.name = p.name;
  GASPP_DECODED_FIELDS(GASPP_X)
#undef GASPP_X
  std::map<std::string, uint32_t> shard_of_flow;
  std::vector<uint32_t> per_shard(5, 0);
  uint32_t i = 0;
  while (w.next(r)) {
    decode_record(cap.data() + r.offset, cap.size() - r.offset, cap.format(), cap.link(), p);
    const uint32_t s = shard_of_packet(p, i++, 5, false, false);
    ASSERT_LT(s, 5u);
    ++per_shard[s];
    FlowKey k;
    bool lo = false;
    if (flow_key_of(one, 0, false, false, k, lo) != FlowSkip::none) continue;
    const auto [it, fresh] = shard_of_flow.emplace(key_text(k), s);
    if (!fresh) {
      ASSERT_EQ(it->second, s) << "packet " << i;
    }
  }
  ASSERT_GT(shard_of_flow.size(), 100u);
  for (uint32_t n : per_shard) EXPECT_GT(n, 3000u / 5 / 2);  // spread, not piled on one shard
}
