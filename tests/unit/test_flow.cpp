// Flow tracking: the table's per-item functions, and whole runs through the backend under test
// checked against a reference written here (per-flow packet and byte counts each way).
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <thread>

#include "tools/gen/generator.hpp"
#include "pipeline/pipeline.hpp"
#include "flow/flow_track.hpp"
#include "output/eve.hpp"
#include "test_support.hpp"

using namespace gaspp;

namespace {

// Ethernet/IPv4/TCP or UDP frame between two hosts (checksums not needed by the tracker).
std::vector<uint8_t> ip4_frame(uint32_t src, uint32_t dst, uint16_t sport, uint16_t dport, uint8_t proto,
                               uint8_t flags = 0, uint32_t seq = 0, uint32_t ack = 0, uint16_t payload = 0) {
  const uint32_t l4 = proto == 6 ? 20 : 8;
  std::vector<uint8_t> f(14 + 20 + l4 + payload, 0);
  f[0] = 0x02; f[6] = 0x02; f[12] = 0x08;
  uint8_t* ip = f.data() + 14;
  ip[0] = 0x45;
  const uint16_t tot = uint16_t(20 + l4 + payload);
  ip[2] = uint8_t(tot >> 8); ip[3] = uint8_t(tot);
  ip[8] = 64; ip[9] = proto;
  for (int k = 0; k < 4; ++k) { ip[12 + k] = uint8_t(src >> (24 - 8 * k)); ip[16 + k] = uint8_t(dst >> (24 - 8 * k)); }
  uint8_t* t = ip + 20;
  t[0] = uint8_t(sport >> 8); t[1] = uint8_t(sport); t[2] = uint8_t(dport >> 8); t[3] = uint8_t(dport);
  if (proto == 6) {
    for (int k = 0; k < 4; ++k) { t[4 + k] = uint8_t(seq >> (24 - 8 * k)); t[8 + k] = uint8_t(ack >> (24 - 8 * k)); }
    t[12] = 0x50; t[13] = flags; t[14] = 0xff; t[15] = 0xff;
  } else {
    t[4] = uint8_t((8 + payload) >> 8); t[5] = uint8_t(8 + payload);
  }
  return f;
}

struct FlowRun {
  RunReport rep;
  std::vector<FlowRecordOut> recs;
  std::vector<std::pair<uint64_t, std::vector<FlowRecordOut>>> per_batch;  // (batch max ts, records)
};

// Runs the capture in batches of `batch` packets; keeps every record, and per batch the records
// that left the table with the batch's newest packet time.
FlowRun run_flows(const CaptureFile& cap, BackendConfig bc, uint32_t batch) {
  bc.batch_packets = batch;
  RunOptions ro;
  ro.policy.max_packets = batch;
  ro.policy.timeout_ns = 0;
  auto be = test::make_backend(bc);
  FlowRun r;
  r.rep = run_capture(cap, *be, ro, [&](const PacketBatch& b) { r.per_batch.emplace_back(b.max_ts_ns, b.flow_records); },
                      [&](const std::vector<FlowRecordOut>& v) { r.recs.insert(r.recs.end(), v.begin(), v.end()); });
  return r;
}

CaptureFile from_builder(const test::PcapBuilder& b, const char* name) {
  return CaptureFile::from_memory(b.bytes(), name);
}

// The reference: group packets by an independently built canonical key; count per sender.
struct RefCounts {
  uint64_t pkts = 0, bytes = 0;
};
using RefKey = std::tuple<std::string, std::string, uint8_t, std::string>;  // lo endpoint, hi endpoint, proto, vlans
using Ref = std::map<RefKey, std::map<std::string, RefCounts>>;             // sender endpoint → counts

std::string endpoint(const DecodedPacket& p, bool src) {
  const uint32_t* a = src ? p.src_ip : p.dst_ip;
  char b[96];
  uint16_t port = src ? p.sport[0] : p.dport[0];
  if (p.l4[0] == uint8_t(L4::icmp) || p.l4[0] == uint8_t(L4::icmpv6)) port = p.icmp_id[0];
  std::snprintf(b, sizeof b, "%08x%08x%08x%08x:%05u", __builtin_bswap32(a[0]), __builtin_bswap32(a[1]),
                __builtin_bswap32(a[2]), __builtin_bswap32(a[3]), port);
  return b;
}

Ref reference(const CaptureFile& cap) {
  Ref ref;
  RecordWalker w(cap);
  RecordInfo r;
  DecodedPacket p;
  while (w.next(r)) {
    decode_record(cap.data() + r.offset, cap.size() - r.offset, cap.format(), cap.link(), p);
    if ((p.l3[0] != uint8_t(L3::ipv4) && p.l3[0] != uint8_t(L3::ipv6)) || p.malformed[0]) continue;
    if ((p.ip_frag[0] & kFragIsFragment) && !(p.ip_frag[0] & kFragFirst)) continue;
    const std::string s = endpoint(p, true), d = endpoint(p, false);
    std::string vl;
    for (int k = 0; k < p.vlan_count[0]; ++k) vl += std::to_string(p.vlan_id[k]) + ",";
    RefKey key{std::min(s, d), std::max(s, d), p.ip_proto[0], vl};
    auto& c = ref[key][s];
    ++c.pkts;
    c.bytes += p.cap_len[0];
  }
  return ref;
}

std::string rec_endpoint(const FlowRecord& r, int e) {
  char b[96];
  const uint32_t* a = r.key.addr[e];
  std::snprintf(b, sizeof b, "%08x%08x%08x%08x:%05u", __builtin_bswap32(a[0]), __builtin_bswap32(a[1]),
                __builtin_bswap32(a[2]), __builtin_bswap32(a[3]), r.key.port[e]);
  return b;
}

Ref from_records(const std::vector<FlowRecordOut>& recs) {
  Ref got;
  for (const auto& o : recs) {
    const FlowRecord& r = o.rec;
    std::string vl;
    for (int k = 0; k < r.key.vlan_n; ++k) vl += std::to_string(r.key.vlan[k]) + ",";
    const std::string lo = rec_endpoint(r, 0), hi = rec_endpoint(r, 1);
    RefKey key{std::min(lo, hi), std::max(lo, hi), r.key.proto, vl};
    const std::string client = r.client_lo ? lo : hi, server = r.client_lo ? hi : lo;
    for (int s = 0; s < 2; ++s) {
      if (!r.side[s].pkts) continue;
      auto& c = got[key][s == 0 ? client : server];
      c.pkts += r.side[s].pkts;
      c.bytes += r.side[s].bytes;
    }
  }
  return got;
}

void expect_same(const Ref& got, const Ref& want) {
  EXPECT_EQ(got.size(), want.size());
  size_t bad = 0;
  for (const auto& [k, sides] : want) {
    auto it = got.find(k);
    if (it == got.end()) { if (++bad < 5) ADD_FAILURE() << "flow missing: " << std::get<0>(k) << " " << std::get<1>(k); continue; }
    for (const auto& [e, c] : sides) {
      auto jt = it->second.find(e);
      if (jt == it->second.end() || jt->second.pkts != c.pkts || jt->second.bytes != c.bytes)
        if (++bad < 5) ADD_FAILURE() << "counts differ for sender " << e;
    }
  }
  EXPECT_EQ(bad, 0u);
}

std::multiset<std::string> as_json_set(const std::vector<FlowRecordOut>& v) {
  std::multiset<std::string> s;
  for (const auto& r : v) s.insert(eve_flow_json(r));
  return s;
}

CaptureFile generated(GenMode mode, uint64_t packets, uint32_t flows, uint64_t seed) {
  GenConfig g;
  g.mode = mode;
  g.packets = packets;
  g.flows = flows;
  g.seed = seed;
  g.ipv6_share = 0.3;
  g.vlan_share = 0.2;
  g.reorder = 0.02;
  g.duplicate = 0.02;
  g.loss = 0.01;
  return test::generated_capture(g, "generated.pcap");
}

}  // namespace

TEST(FlowTable, ConcurrentClaimsOfOneKeyMeetAtOneSlot) {
  FlowConfig cfg;
  cfg.capacity = 4096;
  cfg.module_state_bytes = 24;
  HostFlowTable table(cfg);
  FlowTableRef t = table.ref();
  EXPECT_EQ(t.module_state_bytes, 32u);  // slices are 16-byte aligned
  std::vector<FlowKey> keys(500);
  for (uint32_t k = 0; k < keys.size(); ++k) {
    keys[k] = FlowKey{};
    keys[k].addr[0][0] = 0x0a000001;
    keys[k].addr[1][0] = 0x0a000002 + k;
    keys[k].proto = 17;
    keys[k].family = 4;
  }
  std::vector<std::vector<uint32_t>> slot(8, std::vector<uint32_t>(keys.size()));
  std::vector<uint32_t> created(8, 0);
  std::vector<std::thread> th;
  for (int w = 0; w < 8; ++w)
    th.emplace_back([&, w] {
      for (uint32_t k = 0; k < keys.size(); ++k) {
        const uint32_t j = (k * 7 + uint32_t(w) * 131) % uint32_t(keys.size());  // different orders per thread
        bool c;
        slot[size_t(w)][j] = flow_find_or_claim(t, keys[j], flow_key_hash(keys[j]), 1, c);
        created[size_t(w)] += c;
      }
    });
  for (auto& x : th) x.join();
  uint32_t total_created = 0;
  for (uint32_t c : created) total_created += c;
  EXPECT_EQ(total_created, keys.size());
  EXPECT_EQ(table.state().live, keys.size());
  std::set<uint32_t> distinct;
  for (uint32_t k = 0; k < keys.size(); ++k) {
    for (int w = 1; w < 8; ++w) ASSERT_EQ(slot[size_t(w)][k], slot[0][k]) << "key " << k;
    ASSERT_NE(slot[0][k], kNoFlow);
    EXPECT_TRUE(flow_key_eq(t.recs[slot[0][k]].key, keys[k]));
    distinct.insert(slot[0][k]);
    for (uint32_t b = 0; b < t.module_state_bytes; ++b) EXPECT_EQ(t.module_slice(slot[0][k], 0)[b], 0);
  }
  EXPECT_EQ(distinct.size(), keys.size());
}

namespace {

// UDP flow keys 1 -> 100+k: with capacity 8 the table is one bucket, so they all meet there.
FlowKey bucket_key(uint32_t k) {
  FlowKey x{};
  x.addr[0][0] = 1;
  x.addr[1][0] = 100 + k;
  x.proto = 17;
  x.family = 4;
  return x;
}

}  // namespace

TEST(FlowTable, FullBucketEvictsClosedThenNewThenEstablishedOldestFirst) {
  FlowConfig cfg;
  cfg.capacity = 8;  // one bucket of 32 slots, at most 8 flows
  HostFlowTable table(cfg);
  FlowTableRef t = table.ref();
  ASSERT_EQ(t.buckets, 1u);
  const auto key = bucket_key;
  for (uint32_t k = 0; k < 8; ++k) {
    bool c;
    const uint32_t s = flow_find_or_claim(t, key(k), flow_key_hash(key(k)), 1, c);
    ASSERT_NE(s, kNoFlow);
    t.recs[s].state = uint8_t(k < 2 ? FlowState::established : k < 6 ? FlowState::new_ : FlowState::established);
    t.recs[s].last_ts = 1000 - k;  // higher k: idler
  }
  bool c;
  EXPECT_EQ(flow_find_or_claim(t, key(8), flow_key_hash(key(8)), 2, c), kNoFlow);  // at capacity
  std::vector<uint32_t> evicted;
  for (uint32_t k = 8; k < 13; ++k) {
    bool cr, ev;
    const uint32_t s = flow_claim_or_evict(t, key(k), flow_key_hash(key(k)), 2, cr, ev, [&](const FlowRecord& v, FlowReason why) {
      EXPECT_EQ(why, FlowReason::forced);
      evicted.push_back(v.key.addr[1][0] - 100);
    });
    ASSERT_NE(s, kNoFlow);
    EXPECT_TRUE(cr && ev);
  }
  // `new` flows first (2..5), the idlest first: 5, 4, 3, 2; then established, idlest first: 7.
  EXPECT_EQ(evicted, (std::vector<uint32_t>{5, 4, 3, 2, 7}));
  EXPECT_EQ(table.state().live, 8u);
  // Everything left was touched by batch 2: nothing more can be evicted in that batch.
  for (uint32_t s = 0; s < t.slots(); ++s) if (t.tags[s] >= 2) t.recs[s].epoch = 2;
  bool cr, ev;
  EXPECT_EQ(flow_claim_or_evict(t, key(20), flow_key_hash(key(20)), 2, cr, ev, [](const FlowRecord&, FlowReason) {}), kNoFlow);
}

// A flow a module decided to drop is never evicted (its later packets must keep meeting the drop):
// the victim is the idlest other flow, and a bucket of dropped flows only leaves the packet
// untracked (the exception policy then decides; tests/e2e/exception_policy.py).
TEST(FlowTable, DroppedFlowsAreNeverEvicted) {
  FlowConfig cfg;
  cfg.capacity = 8;
  HostFlowTable table(cfg);
  FlowTableRef t = table.ref();
  const auto key = bucket_key;
  for (uint32_t k = 0; k < 8; ++k) {
    bool c;
    const uint32_t s = flow_find_or_claim(t, key(k), flow_key_hash(key(k)), 1, c);
    ASSERT_NE(s, kNoFlow);
    t.recs[s].state = uint8_t(FlowState::new_);
    t.recs[s].last_ts = 1000 - k;                         // higher k: idler
    if (k != 3) t.recs[s].misc |= kFlowDecidedDrop;       // all but flow 3 dropped
  }
  std::vector<uint32_t> evicted;
  auto emit = [&](const FlowRecord& v, FlowReason) { evicted.push_back(v.key.addr[1][0] - 100); };
  bool cr, ev;
  // The idlest flows (7, 6, ...) are dropped ones: flow 3 goes.
  ASSERT_NE(flow_claim_or_evict(t, key(8), flow_key_hash(key(8)), 2, cr, ev, emit), kNoFlow);
  EXPECT_EQ(evicted, (std::vector<uint32_t>{3}));
  // Only dropped flows (and flow 8, in use by this batch) are left: no room.
  EXPECT_EQ(flow_claim_or_evict(t, key(9), flow_key_hash(key(9)), 2, cr, ev, emit), kNoFlow);
  // In a later batch flow 8 (not dropped) can go; then nothing can.
  EXPECT_NE(flow_claim_or_evict(t, key(9), flow_key_hash(key(9)), 3, cr, ev, emit), kNoFlow);
  EXPECT_EQ(flow_claim_or_evict(t, key(10), flow_key_hash(key(10)), 3, cr, ev, emit), kNoFlow);
  EXPECT_EQ(evicted, (std::vector<uint32_t>{3, 8}));
  EXPECT_EQ(table.state().live, 8u);
}

TEST(Flow, CountsMatchTheReferenceAtEveryBatchSize) {
  const CaptureFile http = generated(GenMode::http, 6000, 40, 7);
  const CaptureFile mix = generated(GenMode::mix, 6000, 300, 8);
  for (const CaptureFile* cap : {&http, &mix}) {
    const Ref want = reference(*cap);
    ASSERT_GT(want.size(), 10u);
    std::multiset<std::string> first;
    for (uint32_t n : {1u, 2u, 3u, 7u, 64u, 65536u}) {
      SCOPED_TRACE("batch " + std::to_string(n));
      FlowRun r = run_flows(*cap, BackendConfig{}, n);
      expect_same(from_records(r.recs), want);
      EXPECT_EQ(r.rep.totals.v[c_flow_created], r.recs.size());
      EXPECT_EQ(r.rep.totals.v[c_flow_untracked], 0u);
      EXPECT_EQ(r.rep.totals.v[c_flow_packets] + r.rep.totals.v[c_flow_skip_not_ip] +
                    r.rep.totals.v[c_flow_skip_malformed] + r.rep.totals.v[c_flow_skip_fragment],
                r.rep.totals.v[c_packets]);
      const auto set = as_json_set(r.recs);
      if (n == 1) first = set;
      else EXPECT_TRUE(set == first) << "records differ from batch size 1";
    }
  }
}

TEST(Flow, ManyPacketsOfNewFlowsInOneBatchCreateOneRecordEach) {
  test::PcapBuilder b(1, false, true);
  // 1000 flows × 8 packets, interleaved, all in one batch; plus 4000 packets of one flow.
  for (int round = 0; round < 8; ++round)
    for (uint32_t f = 0; f < 1000; ++f) {
      b.record(ip4_frame(0x0a000001, 0x0b000000 + f, 1000, 53, 17, 0, 0, 0, 10), 10, round * 1000 + f);
      if (f % 2 == 0) b.record(ip4_frame(0x0c000001, 0x0c000002, 7, 7, 17, 0, 0, 0, 1), 10, round * 1000 + f);
    }
  const CaptureFile cap = from_builder(b, "many.pcap");
  FlowRun r = run_flows(cap, BackendConfig{}, 65536);
  ASSERT_EQ(r.recs.size(), 1001u);
  for (const auto& o : r.recs) {
    if (o.rec.key.addr[0][0] == load_bytes32(reinterpret_cast<const uint8_t*>("\x0c\x00\x00\x01")))
      EXPECT_EQ(o.rec.side[0].pkts, 4000u);
    else
      EXPECT_EQ(o.rec.side[0].pkts, 8u);
    EXPECT_EQ(o.reason, uint8_t(FlowReason::shutdown));
  }
}

TEST(Flow, FloodLargerThanCapacityKeepsMemoryFixedAndEstablishedFlowsWhole) {
  // 30 established TCP connections exchanging data every 10 ms for 2 s, under a flood of 40000
  // SYNs from random sources (20 per ms); the table holds 1024 flows.
  test::PcapBuilder b(1, false, true);
  std::mt19937 rng(5);
  std::map<uint32_t, uint64_t> est_pkts;
  uint64_t t_ns = 0, total = 0;
  auto rec = [&](const std::vector<uint8_t>& f) {
    b.record(f, uint32_t(100 + t_ns / 1000000000ull), uint32_t(t_ns % 1000000000ull));
    ++total;
  };
  const uint32_t srv = 0xc0a80001;
  for (uint32_t c = 0; c < 30; ++c) {
    const uint32_t cli = 0x0a000100 + c;
    rec(ip4_frame(cli, srv, uint16_t(20000 + c), 80, 6, 0x02, 1000, 0));
    rec(ip4_frame(srv, cli, 80, uint16_t(20000 + c), 6, 0x12, 5000, 1001));
    rec(ip4_frame(cli, srv, uint16_t(20000 + c), 80, 6, 0x10, 1001, 5001));
    est_pkts[c] = 3;
  }
  std::vector<uint32_t> seq(30, 1001);
  for (uint32_t ms = 0; ms < 2000; ++ms) {
    t_ns = uint64_t(ms) * 1000000ull;
    for (int k = 0; k < 20; ++k)
      rec(ip4_frame(rng(), srv, uint16_t(rng()), 80, 6, 0x02, rng(), 0));
    if (ms % 10 == 0)
      for (uint32_t c = 0; c < 30; ++c) {
        rec(ip4_frame(0x0a000100 + c, srv, uint16_t(20000 + c), 80, 6, 0x18, seq[c], 5001, 100));
        seq[c] += 100;
        ++est_pkts[c];
      }
  }
  const CaptureFile cap = from_builder(b, "flood.pcap");
  BackendConfig bc;
  bc.flow.capacity = 1024;
  // Batches smaller than the table (as in practice: 64k packets, 1M flows), and larger: then a
  // batch's own new flows fill the table and cannot be evicted by the same batch (their packets
  // point at them), so the excess is untracked instead, and counted.
  for (uint32_t n : {256u, 4096u}) {
    SCOPED_TRACE("batch " + std::to_string(n));
    FlowRun r = run_flows(cap, bc, n);
    const auto& g = r.rep.flows;
    EXPECT_EQ(g.capacity, 1024u);
    EXPECT_EQ(g.bytes, flow_table_shape(bc.flow).bytes());
    EXPECT_LE(g.peak, 1024u);
    if (n < 1024) {
      EXPECT_GT(r.rep.totals.v[c_flow_evicted], 38000u);
    }
    EXPECT_GT(r.rep.totals.v[c_flow_evicted] + r.rep.totals.v[c_flow_untracked], 38000u);
    EXPECT_GE(r.rep.totals.v[c_flow_emergency], 1u);
    // Every packet ends in a flow or in a counter.
    uint64_t in_records = 0;
    for (const auto& o : r.recs) in_records += o.rec.side[0].pkts + o.rec.side[1].pkts;
    EXPECT_EQ(in_records, r.rep.totals.v[c_flow_packets]);
    EXPECT_EQ(r.rep.totals.v[c_flow_packets] + r.rep.totals.v[c_flow_untracked], total);
    // Established connections survive whole: one record each, never forced out.
    std::map<uint32_t, int> seen;
    for (const auto& o : r.recs) {
      const FlowRecord& fr = o.rec;
      const uint32_t port = fr.key.port[0] == 80 ? fr.key.port[1] : fr.key.port[0];
      if (port < 20000 || port >= 20030 || fr.key.proto != 6) continue;
      const uint32_t c = port - 20000;
      if (fr.key.addr[0][0] != load_bytes32(reinterpret_cast<const uint8_t*>("\x0a\x00\x01\x00")) + (c << 24) &&
          fr.key.addr[1][0] != load_bytes32(reinterpret_cast<const uint8_t*>("\x0a\x00\x01\x00")) + (c << 24))
        continue;
      ++seen[c];
      EXPECT_NE(o.reason, uint8_t(FlowReason::forced)) << "connection " << c;
      EXPECT_EQ(fr.side[0].pkts + fr.side[1].pkts, est_pkts[c]) << "connection " << c;
      EXPECT_EQ(fr.state, uint8_t(FlowState::established));
    }
    EXPECT_EQ(seen.size(), 30u);
    for (auto& [c, k] : seen) EXPECT_EQ(k, 1) << "connection " << c;
  }
}

TEST(Flow, ExpiredFlowsLeaveAtTheRightPacketTime) {
  // UDP flow A: packets at 0 s and 1 s. Filler UDP flow every second until 100 s.
  // With a 1 s sweep, A (new, 30 s timeout) leaves in the batch whose time first exceeds 31 s.
  test::PcapBuilder b(1, false, true);
  b.record(ip4_frame(0x0a000001, 0x0a000002, 5000, 53, 17, 0, 0, 0, 4), 1000, 0);
  b.record(ip4_frame(0x0a000001, 0x0a000002, 5000, 53, 17, 0, 0, 0, 4), 1001, 0);
  for (uint32_t s = 2; s <= 100; ++s) b.record(ip4_frame(0x0a000009, 0x0a00000a, 7, 7, 17, 0, 0, 0, 4), 1000 + s, 0);
  const CaptureFile cap = from_builder(b, "expiry.pcap");
  for (uint32_t n : {1u, 3u}) {
    SCOPED_TRACE("batch " + std::to_string(n));
    FlowRun r = run_flows(cap, BackendConfig{}, n);
    int found = 0;
    for (const auto& [max_ts, v] : r.per_batch)
      for (const auto& o : v) {
        if (o.rec.key.port[0] != 53 && o.rec.key.port[1] != 53) continue;
        ++found;
        EXPECT_EQ(o.reason, uint8_t(FlowReason::timeout));
        EXPECT_EQ(o.rec.first_ts, 1000ull * 1000000000ull);
        EXPECT_EQ(o.rec.last_ts, 1001ull * 1000000000ull);
        EXPECT_GT(max_ts - o.rec.last_ts, 30ull * 1000000000ull);
        EXPECT_LE(max_ts - o.rec.last_ts, (30ull + n + 1) * 1000000000ull) << "left too late";
      }
    EXPECT_EQ(found, 1);
    EXPECT_EQ(r.rep.totals.v[c_flow_timed_out], 1u);
  }
}

// ---------------------------------------------------------------------------------------------
// Every timeout at its boundary: idle exactly the timeout keeps the flow, one nanosecond more
// ends it. First the rule itself, for every protocol, state and mode; then through the pipeline,
// where a packet after the boundary starts a new flow (inline expiry) in either backend.

TEST(FlowTimeouts, EveryTimeoutAtItsBoundary) {
  FlowTimeouts t;
  // Distinct values so that a mixed-up index shows.
  for (int p = 0; p < 4; ++p)
    for (int s = 0; s < 3; ++s) {
      t.normal[p][s] = 100 + 10 * uint32_t(p) + uint32_t(s);
      t.emergency[p][s] = 7 + 10 * uint32_t(p) + uint32_t(s);
    }
  const FlowState states[] = {FlowState::new_, FlowState::established, FlowState::closed};
  for (int p = 0; p < 4; ++p)
    for (int s = 0; s < 3; ++s)
      for (bool emergency : {false, true}) {
        FlowRecord r{};
        r.proto_class = uint8_t(p);
        r.state = uint8_t(states[s]);
        r.last_ts = 5'000'000'000'000ull;
        const uint64_t secs = emergency ? t.emergency[p][s] : t.normal[p][s];
        const uint64_t at = r.last_ts + secs * 1'000'000'000ull;
        SCOPED_TRACE("proto " + std::to_string(p) + " state " + std::to_string(s) + (emergency ? " emergency" : ""));
        EXPECT_EQ(flow_timeout_s(t, r, emergency), secs);
        EXPECT_FALSE(flow_timed_out(t, r, at, emergency));
        EXPECT_TRUE(flow_timed_out(t, r, at + 1, emergency));
        EXPECT_FALSE(flow_timed_out(t, r, r.last_ts - 1, emergency)) << "packets out of time order never expire";
      }
}

TEST(FlowTimeouts, InlineExpiryAtEachDefaultBoundary) {
  const uint32_t A = 0x0a000001, B = 0x0a000002;
  using F = std::vector<uint8_t>;
  struct Case {
    const char* name;
    std::vector<F> opening;  // packets at t0 that put the flow in its state
    F later;                 // the packet sent `timeout` (then timeout + 1 ns) after them
    uint32_t timeout;        // Suricata's default for that protocol and state
  };
  const F syn = ip4_frame(A, B, 1000, 80, 6, 0x02, 100), synack = ip4_frame(B, A, 80, 1000, 6, 0x12, 500, 101),
          ack = ip4_frame(A, B, 1000, 80, 6, 0x10, 101, 501), data = ip4_frame(A, B, 1000, 80, 6, 0x18, 101, 501, 4),
          rst = ip4_frame(B, A, 80, 1000, 6, 0x04, 501), udp_q = ip4_frame(A, B, 5000, 53, 17, 0, 0, 0, 4),
          udp_r = ip4_frame(B, A, 53, 5000, 17, 0, 0, 0, 4), gre_a = ip4_frame(A, B, 0, 0, 47, 0, 0, 0, 4),
          gre_b = ip4_frame(B, A, 0, 0, 47, 0, 0, 0, 4);
  F echo = ip4_frame(A, B, 0, 0, 1, 0, 0, 0, 4), reply = ip4_frame(B, A, 0, 0, 1, 0, 0, 0, 4);
  echo[34] = 8;   // ICMP echo request, id 0
  reply[34] = 0;  // echo reply
  const Case cases[] = {
      {"tcp new", {syn}, syn, 60},
      {"tcp established", {syn, synack, ack}, data, 600},
      {"tcp closed", {syn, synack, ack, rst}, ack, 60},
      {"udp new", {udp_q}, udp_q, 30},
      {"udp established", {udp_q, udp_r}, udp_q, 300},
      {"icmp new", {echo}, echo, 30},
      {"icmp established", {echo, reply}, echo, 300},
      {"other new", {gre_a}, gre_a, 30},
      {"other established", {gre_a, gre_b}, gre_a, 300},
  };
  for (const Case& c : cases)
    for (uint32_t extra_ns : {0u, 1u}) {
      SCOPED_TRACE(std::string(c.name) + (extra_ns ? " + 1 ns" : " exactly"));
      test::PcapBuilder b(1, false, true);
      for (const F& f : c.opening) b.record(f, 1000, 0);
      b.record(c.later, 1000 + c.timeout, extra_ns);
      const FlowRun r = run_flows(from_builder(b, "boundary.pcap"), BackendConfig{}, 1);
      EXPECT_EQ(r.recs.size(), extra_ns ? 2u : 1u);
      EXPECT_EQ(r.rep.totals.v[c_flow_timed_out], extra_ns ? 1u : 0u);
    }
}

// ---------------------------------------------------------------------------------------------
// The TCP state machine, transition by transition: each row feeds packets (sender 0 = client,
// the first packet's sender) to one flow record and states what each side and the flow end in,
// and which counter moved.

namespace {

// A TCP flow record begun by a first packet with these flags (flow_begin decides the client).
FlowRecord tcp_record(uint16_t first_flags) {
  FlowRecord r{};
  TrackedPacket first{};
  first.l4 = uint8_t(L4::tcp);
  first.flags = first_flags;
  flow_begin(r, first, true);
  return r;
}

TrackedPacket tcp_segment(uint16_t flags, uint32_t seq, uint32_t ack, uint32_t len, uint16_t win) {
  TrackedPacket t{};
  t.l4 = uint8_t(L4::tcp);
  t.flags = flags;
  t.seq = seq;
  t.ack = ack;
  t.payload_len = len;
  t.win = win;
  return t;
}

}  // namespace

TEST(TcpStateMachine, Transitions) {
  struct P {
    int from;  // 0: the flow's first sender's side (client), 1: the other
    uint16_t flags;
    uint32_t seq, ack, len;
    uint8_t opts = 0;  // TcpOpt bits (kOptTfo: TCP Fast Open)
  };
  using T = TcpSide;
  struct Row {
    const char* name;
    bool midstream;
    std::vector<P> pkts;
    TcpSide client, server;
    FlowState flow;
    Counter counter;  // c_count_: none expected
  };
  const uint16_t S = kTcpSyn, A = kTcpAck, F = kTcpFin, R = kTcpRst, PA = kTcpPsh | kTcpAck;
  const Row rows[] = {
      {"syn", true, {{0, S, 100, 0, 0}}, T::syn_sent, T::none, FlowState::new_, c_count_},
      {"syn retransmitted", true, {{0, S, 100, 0, 0}, {0, S, 100, 0, 0}}, T::syn_sent, T::none, FlowState::new_, c_tcp_syn_retransmit},
      {"syn-ack", true, {{0, S, 100, 0, 0}, {1, S | A, 500, 101, 0}}, T::syn_sent, T::syn_recv, FlowState::new_, c_count_},
      {"syn-ack with a wrong ack", true, {{0, S, 100, 0, 0}, {1, S | A, 500, 777, 0}}, T::syn_sent, T::none, FlowState::new_, c_tcp_synack_bad_ack},
      {"handshake", true, {{0, S, 100, 0, 0}, {1, S | A, 500, 101, 0}, {0, A, 101, 501, 0}}, T::established, T::established, FlowState::established, c_tcp_established},
      {"third ack with a wrong seq: ignored", true, {{0, S, 100, 0, 0}, {1, S | A, 500, 101, 0}, {0, A, 5000, 501, 0}}, T::syn_sent, T::syn_recv, FlowState::new_, c_tcp_handshake_bad_seq},
      {"wrong-seq ack, then the right one", true, {{0, S, 100, 0, 0}, {1, S | A, 500, 101, 0}, {0, A, 99, 501, 0}, {0, A, 101, 501, 0}}, T::established, T::established, FlowState::established, c_tcp_handshake_bad_seq},
      {"third ack with a wrong ack", true, {{0, S, 100, 0, 0}, {1, S | A, 500, 101, 0}, {0, A, 101, 400, 0}}, T::syn_sent, T::syn_recv, FlowState::new_, c_count_},
      {"fast open: the syn-ack acknowledges the syn's data", true, {{0, S, 100, 0, 10, kOptTfo}, {1, S | A, 500, 111, 0}, {0, A, 111, 501, 0}}, T::established, T::established, FlowState::established, c_tcp_established},
      {"fast open: the syn-ack acknowledges the syn only", true, {{0, S, 100, 0, 10, kOptTfo}, {1, S | A, 500, 101, 0}, {0, A, 101, 501, 0}}, T::established, T::established, FlowState::established, c_tcp_established},
      {"fast open: an ack inside the syn's data is wrong", true, {{0, S, 100, 0, 10, kOptTfo}, {1, S | A, 500, 105, 0}}, T::syn_sent, T::none, FlowState::new_, c_tcp_synack_bad_ack},
      {"syn data without fast open is not the session's: a syn-ack acknowledging it is wrong", true, {{0, S, 100, 0, 10}, {1, S | A, 500, 111, 0}}, T::syn_sent, T::none, FlowState::new_, c_tcp_synack_bad_ack},
      {"syn data without fast open: the syn-ack acknowledges the syn", true, {{0, S, 100, 0, 10}, {1, S | A, 500, 101, 0}, {0, A, 101, 501, 0}}, T::established, T::established, FlowState::established, c_tcp_established},
      {"two syns, then a bare ack: ignored, a syn-ack is due", true, {{0, S, 100, 0, 0}, {1, S, 500, 0, 0}, {0, A, 100, 0, 0}}, T::syn_sent, T::syn_sent, FlowState::new_, c_tcp_handshake_no_synack},
      {"split handshake: a bare ack to the syn, then the server's syn (5 packets)", false, {{0, S, 1000, 0, 0}, {1, A, 2000, 1001, 0}, {1, S, 3000, 0, 0}, {0, S | A, 1000, 3001, 0}, {1, A, 3001, 1001, 0}}, T::established, T::established, FlowState::established, c_tcp_handshake_no_synack},
      {"simultaneous open", true, {{0, S, 100, 0, 0}, {1, S, 500, 0, 0}, {1, S | A, 500, 101, 0}, {0, S | A, 100, 501, 0}}, T::established, T::established, FlowState::established, c_tcp_established},
      {"midstream data", true, {{0, PA, 100, 500, 10}}, T::established, T::established, FlowState::established, c_tcp_midstream},
      {"midstream off", false, {{0, PA, 100, 500, 10}}, T::none, T::none, FlowState::new_, c_tcp_no_session},
      {"lone syn-ack (midstream): its sender is the server", true, {{0, S | A, 500, 101, 0}}, T::syn_sent, T::syn_recv, FlowState::new_, c_tcp_midstream},
      {"fin from the client", true, {{0, S, 100, 0, 0}, {1, S | A, 500, 101, 0}, {0, A, 101, 501, 0}, {0, F | A, 101, 501, 0}}, T::fin_sent, T::established, FlowState::established, c_count_},
      {"fin acknowledged", true, {{0, S, 100, 0, 0}, {1, S | A, 500, 101, 0}, {0, A, 101, 501, 0}, {0, F | A, 101, 501, 0}, {1, A, 501, 102, 0}}, T::fin_acked, T::established, FlowState::established, c_count_},
      {"both fins, one acked: closed", true, {{0, S, 100, 0, 0}, {1, S | A, 500, 101, 0}, {0, A, 101, 501, 0}, {0, F | A, 101, 501, 0}, {1, F | A, 501, 102, 0}}, T::fin_acked, T::fin_sent, FlowState::closed, c_count_},
      {"rst in window", true, {{0, S, 100, 0, 0}, {1, S | A, 500, 101, 0}, {0, A, 101, 501, 0}, {1, R, 501, 0, 0}}, T::established, T::reset, FlowState::closed, c_count_},
      {"rst out of window", true, {{0, S, 100, 0, 0}, {1, S | A, 500, 101, 0}, {0, A, 101, 501, 0}, {1, R, 9000000, 0, 0}}, T::established, T::established, FlowState::established, c_tcp_rst_invalid},
      {"rst from a side in syn_sent", true, {{0, S, 100, 0, 0}, {0, R, 101, 0, 0}}, T::syn_sent, T::none, FlowState::new_, c_tcp_rst_invalid},
      {"refused: rst-ack to the syn", true, {{0, S, 100, 0, 0}, {1, R | A, 0, 101, 0}}, T::syn_sent, T::reset, FlowState::closed, c_count_},
      {"syn on an established side", true, {{0, S, 100, 0, 0}, {1, S | A, 500, 101, 0}, {0, A, 101, 501, 0}, {1, S, 900, 0, 0}}, T::established, T::established, FlowState::established, c_tcp_syn_unexpected},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    FlowRecord r = tcp_record(row.pkts[0].flags);
    Counters c{};
    HostCounterSink sink{c};
    for (const P& p : row.pkts) {
      TrackedPacket t = tcp_segment(p.flags, p.seq, p.ack, p.len, 65535);
      t.opts = p.opts;
      // Side 0 of the record is the client: the first packet's sender, except a lone SYN-ACK's.
      const uint16_t f0 = row.pkts[0].flags;
      const int client_sender = (f0 & kTcpSyn) && (f0 & kTcpAck) ? 1 : 0;
      flow_detail::tcp_update(r, p.from == client_sender ? 0 : 1, t, row.midstream, sink);
    }
    EXPECT_EQ(TcpSide(r.side[0].tcp), row.client);
    EXPECT_EQ(TcpSide(r.side[1].tcp), row.server);
    EXPECT_EQ(FlowState(r.state), row.flow);
    if (row.counter != c_count_) {
      EXPECT_EQ(c.v[row.counter], 1u) << "counter " << row.counter;
    }
  }
}

// The timestamp rules (flow_track.hpp's header, as Suricata's stream engine): each row's segments
// carry the timestamp option unless ts is false; the last column is what tcp_bad_timestamp reads.
// Suricata's flow:established and tcp.session's closing phase from the two sides' states,
// written out from Suricata's TcpState order (stream-tcp-private.h: established and every state
// after it, closed included, are "established"; fin_wait1 to closing are "closing", closed is not).
TEST(TcpStateMachine, EstablishedAndClosingAsSuricata) {
  using T = TcpSide;
  struct Row {
    const char* suricata_state;
    T client, server;
    bool established, closing;
  };
  const Row rows[] = {
      {"none", T::none, T::none, false, false},
      {"syn_sent", T::syn_sent, T::none, false, false},
      {"syn_recv", T::syn_sent, T::syn_recv, false, false},
      {"established", T::established, T::established, true, false},
      {"fin_wait1 (client FIN)", T::fin_sent, T::established, true, true},
      {"fin_wait1 (server FIN)", T::established, T::fin_sent, true, true},
      {"fin_wait2", T::fin_acked, T::established, true, true},
      {"closing (FINs crossed)", T::fin_sent, T::fin_sent, true, true},
      {"time_wait", T::fin_acked, T::fin_sent, true, true},
      {"closed (both FINs acked)", T::fin_acked, T::fin_acked, true, false},
      {"closed (RST during the handshake)", T::syn_sent, T::reset, true, false},
      {"closed (RST when established)", T::reset, T::established, true, false},
      {"closed (RST after a FIN)", T::fin_sent, T::reset, true, false},
  };
  for (const Row& r : rows) {
    FlowRecord rec{};
    rec.side[0].tcp = uint8_t(r.client);
    rec.side[1].tcp = uint8_t(r.server);
    EXPECT_EQ(tcp_established(rec), r.established) << r.suricata_state;
    EXPECT_EQ(tcp_closing(rec), r.closing) << r.suricata_state;
  }
}

TEST(TcpStateMachine, Timestamps) {
  struct P {
    int from;  // 0 client, 1 server
    uint16_t flags;
    uint32_t seq, ack;
    bool ts;
    uint32_t tsval, tsecr;
  };
  using T = TcpSide;
  struct Row {
    const char* name;
    std::vector<P> pkts;
    TcpSide client, server;
    FlowState flow;
    uint64_t bad_ts;
  };
  const uint16_t S = kTcpSyn, A = kTcpAck, R = kTcpRst, PA = kTcpPsh | kTcpAck;
  // A handshake in which both SYNs carry timestamps (client 1000, server 5000).
  const std::vector<P> hs = {{0, S, 100, 0, true, 1000, 0}, {1, S | A, 500, 101, true, 5000, 1000}, {0, A, 101, 501, true, 1001, 5000}};
  auto with = [&](std::vector<P> tail) {
    std::vector<P> v = hs;
    v.insert(v.end(), tail.begin(), tail.end());
    return v;
  };
  const Row rows[] = {
      {"timestamps throughout", with({{1, PA, 501, 101, true, 5001, 1001}}), T::established, T::established, FlowState::established, 0},
      {"rst answering a syn without timestamps, echoing something", {{0, S, 100, 0, false, 0, 0}, {1, R | A, 0, 101, true, 9, 777}}, T::syn_sent, T::none, FlowState::new_, 1},
      {"rst answering a syn without timestamps, echoing nothing", {{0, S, 100, 0, false, 0, 0}, {1, R | A, 0, 101, true, 9, 0}}, T::syn_sent, T::reset, FlowState::closed, 0},
      {"syn-ack echoing a value the syn did not send", {{0, S, 100, 0, true, 1000, 0}, {1, S | A, 500, 101, true, 5000, 4242}}, T::syn_sent, T::none, FlowState::new_, 1},
      {"syn-ack echoing the resent syn", {{0, S, 100, 0, true, 1000, 0}, {0, S, 100, 0, true, 1100, 0}, {1, S | A, 500, 101, true, 5000, 1100}}, T::syn_sent, T::syn_recv, FlowState::new_, 0},
      {"syn-ack echoing the first of two syns", {{0, S, 100, 0, true, 1000, 0}, {0, S, 100, 0, true, 1100, 0}, {1, S | A, 500, 101, true, 5000, 1000}}, T::syn_sent, T::syn_recv, FlowState::new_, 0},
      {"paws: in-window rst with an older tsval", with({{1, R, 501, 0, true, 4999, 1001}}), T::established, T::established, FlowState::established, 1},
      {"rst with a newer tsval closes", with({{1, R, 501, 0, true, 5002, 1001}}), T::established, T::reset, FlowState::closed, 0},
      {"rst with the same tsval closes (bsd policy)", with({{1, R, 501, 0, true, 5000, 1001}}), T::established, T::reset, FlowState::closed, 0},
      {"tsval 0 in a session with timestamps", with({{0, R, 101, 0, true, 0, 5000}}), T::established, T::established, FlowState::established, 1},
      {"paws after the sender's clock moved on", with({{0, PA, 101, 501, true, 2000, 5000}, {0, R, 101, 0, true, 1500, 5000}}), T::established, T::established, FlowState::established, 1},
      {"segment without the option in a session with timestamps", with({{0, R, 101, 0, false, 0, 0}}), T::reset, T::established, FlowState::closed, 0},
      {"session without timestamps (syn-ack had none): no paws", {{0, S, 100, 0, true, 1000, 0}, {1, S | A, 500, 101, false, 0, 0}, {0, A, 101, 501, true, 1001, 0}, {0, R, 101, 0, true, 3, 0}}, T::reset, T::established, FlowState::closed, 0},
      {"echo older than the peer's syn (bug 3286)", with({{0, R | A, 101, 501, true, 1002, 4000}}), T::established, T::established, FlowState::established, 1},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    FlowRecord r = tcp_record(row.pkts[0].flags);
    Counters c{};
    HostCounterSink sink{c};
    for (const P& p : row.pkts) {
      TrackedPacket t = tcp_segment(p.flags, p.seq, p.ack, 0, 65535);
      t.opts = p.ts ? kOptTimestamp : 0;
      t.tsval = p.tsval;
      t.tsecr = p.tsecr;
      flow_detail::tcp_update(r, p.from, t, true, sink);
    }
    EXPECT_EQ(TcpSide(r.side[0].tcp), row.client);
    EXPECT_EQ(TcpSide(r.side[1].tcp), row.server);
    EXPECT_EQ(FlowState(r.state), row.flow);
    EXPECT_EQ(c.v[c_tcp_bad_timestamp], row.bad_ts);
  }
}

// The receiver's window (flow_track.hpp's header): data ending past the furthest ack + window the
// receiver advertised is out of window, counted and ignored; a SYN-ACK's window is never scaled.
TEST(TcpStateMachine, Window) {
  struct P {
    int from;
    uint16_t flags;
    uint32_t seq, ack, len;
    uint16_t win;
    uint8_t wscale;  // 0xff: no window scale option
  };
  struct Row {
    const char* name;
    bool midstream_first;  // the capture starts with data (no handshake)
    std::vector<P> pkts;
    uint64_t out_of_window;
    uint32_t client_next;  // the client's next_seq at the end: ignored data does not move it
  };
  const uint16_t S = kTcpSyn, A = kTcpAck, PA = kTcpPsh | kTcpAck;
  const uint8_t no = 0xff;
  // Handshake: the server's SYN-ACK offers 1000 bytes (its ack 101: edge 1101).
  const std::vector<P> hs = {{0, S, 100, 0, 0, 64000, no}, {1, S | A, 500, 101, 0, 1000, no}, {0, A, 101, 501, 0, 64000, no}};
  auto with = [&](std::vector<P> tail) {
    std::vector<P> v = hs;
    v.insert(v.end(), tail.begin(), tail.end());
    return v;
  };
  const Row rows[] = {
      {"data up to the edge", false, with({{0, PA, 101, 501, 1000, 64000, no}}), 0, 1101},
      {"one byte past the edge", false, with({{0, PA, 101, 501, 1001, 64000, no}}), 1, 101},
      {"past the edge after data filled the window", false, with({{0, PA, 101, 501, 1000, 64000, no}, {0, PA, 1101, 501, 10, 64000, no}}), 1, 1101},
      {"the server's ack moves the edge", false, with({{0, PA, 101, 501, 1000, 64000, no}, {1, A, 501, 1101, 0, 1000, no}, {0, PA, 1101, 501, 1000, 64000, no}}), 0, 2101},
      {"a smaller window later does not pull the edge back", false, with({{1, A, 501, 101, 0, 10, no}, {0, PA, 101, 501, 1000, 64000, no}}), 0, 1101},
      {"scaled window once both SYNs scale", false,
       {{0, S, 100, 0, 0, 64000, 2}, {1, S | A, 500, 101, 0, 1000, 2}, {0, A, 101, 501, 0, 64000, 2}, {1, A, 501, 101, 0, 1000, 2}, {0, PA, 101, 501, 4000, 64000, no}}, 0, 4101},
      {"the SYN-ACK's window is not scaled", false,
       {{0, S, 100, 0, 0, 64000, 2}, {1, S | A, 500, 101, 0, 1000, 2}, {0, A, 101, 501, 0, 64000, 2}, {0, PA, 101, 501, 1001, 64000, no}}, 1, 101},
      {"midstream: no window check", true, {{0, PA, 101, 501, 10, 10, no}, {1, A, 501, 111, 0, 10, no}, {0, PA, 111, 501, 5000, 10, no}}, 0, 5111},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    FlowRecord r = tcp_record(row.pkts[0].flags);
    Counters c{};
    HostCounterSink sink{c};
    for (const P& p : row.pkts) {
      TrackedPacket t = tcp_segment(p.flags, p.seq, p.ack, p.len, p.win);
      t.opts = p.wscale != no ? kOptWscale : 0;
      t.wscale = p.wscale != no ? p.wscale : 0;
      flow_detail::tcp_update(r, p.from, t, true, sink);
    }
    EXPECT_EQ(c.v[c_tcp_out_of_window], row.out_of_window);
    EXPECT_EQ(r.side[0].next_seq, row.client_next);
  }
}
