// EVE `flow` events (output/eve.hpp: eve_flow_json) against values written by hand: each table row
// sets some fields of a flow record (flow/flow_record.hpp) and states the EVE fields a reader of
// Suricata's format expects; the line is parsed as JSON and compared field by field. Nothing in
// the expectations is computed by the product (times were converted with `date -u`).
//
// Four tables, each over a base record (TCP over IPv4, client 10.0.0.1:40000, server 10.0.0.2:80,
// 2024-04-01T12:00:00.123456789 to 12:00:05.999999999):
//   endpoints  family, protocol, which key endpoint is the client, VLAN tags, ICMP type/code →
//              src_ip/src_port/dest_ip/dest_port/proto/vlan/icmp_*, and the exact set of top-level keys
//   times      first and last packet → timestamp, flow.start, flow.end, flow.age
//   counters   packets, bytes, flow state, end reason, alert/verdict bits, flow id → flow.*
//   tcp        flags each way, each side's TCP state, no-session and gap bits → tcp.*
// Reasons: timeout, forced, shutdown, and tcp_reuse for a flow replaced by TCP port reuse.
#include <gtest/gtest.h>
#include <arpa/inet.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "flow/flow_record.hpp"
#include "output/eve.hpp"

using namespace gaspp;
using json = nlohmann::json;

namespace {

constexpr uint64_t kT1 = 1711972800123456789ull;  // 2024-04-01T12:00:00.123456789Z
constexpr uint64_t kT2 = 1711972805999999999ull;  // 2024-04-01T12:00:05.999999999Z

// Puts `addr` (text) and `port` at key endpoint `e`, as the decoder stores addresses.
void set_endpoint(FlowKey& k, int e, const char* addr, uint16_t port) {
  uint8_t b[16] = {};
  if (inet_pton(AF_INET, addr, b) == 1) k.family = 4;
  else if (inet_pton(AF_INET6, addr, b) == 1) k.family = 6;
  else ADD_FAILURE() << "not an address: " << addr;
  std::memcpy(k.addr[e], b, 16);
  k.port[e] = port;
}

FlowRecordOut base_record() {
  FlowRecordOut o{};
  FlowRecord& r = o.rec;
  r.key.proto = 6;
  set_endpoint(r.key, 0, "10.0.0.1", 40000);
  set_endpoint(r.key, 1, "10.0.0.2", 80);
  r.client_lo = 1;
  r.first_ts = kT1;
  r.last_ts = kT2;
  r.flow_id = 1234567;
  r.side[0].pkts = 3;
  r.side[1].pkts = 2;
  r.side[0].bytes = 300;
  r.side[1].bytes = 200;
  r.side[0].flags = 0x02;
  r.side[1].flags = 0x12;
  r.side[0].tcp = uint8_t(TcpSide::established);
  r.side[1].tcp = uint8_t(TcpSide::established);
  r.state = uint8_t(FlowState::established);
  r.proto_class = uint8_t(FlowProto::tcp);
  o.reason = uint8_t(FlowReason::shutdown);
  return o;
}

json render(const FlowRecordOut& o, const std::string& row) {
  const std::string line = eve_flow_json(o);
  EXPECT_EQ(line.find('\n'), std::string::npos) << row << ": an EVE event is one line";
  json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(j.is_discarded()) << row << ": not JSON: " << line;
  return j;
}

std::set<std::string> keys_of(const json& j) {
  std::set<std::string> k;
  for (auto it = j.begin(); it != j.end(); ++it) k.insert(it.key());
  return k;
}

// --- endpoints ------------------------------------------------------------------------------------

struct EndpointRow {
  const char* name;
  uint8_t proto;
  const char* client;
  uint16_t cport;
  const char* server;
  uint16_t sport;
  bool client_lo;             // the client is key endpoint 0
  std::vector<uint16_t> vlan;
  int icmp_type, icmp_code;   // set in the key for ICMP rows
  // expected
  const char* src_ip;
  int src_port;               // -1: absent
  const char* dest_ip;
  int dest_port;              // -1: absent
  const char* proto_name;
  const char* vlan_json;      // "": absent
  bool tcp_object;
};

// clang-format off
const std::vector<EndpointRow> kEndpointRows = {
  // name                           proto client              cport  server            sport  lo  vlan          icmp     src_ip               sport  dest_ip            dport  proto        vlan          tcp
  {"tcp v4, client endpoint 0",     6,  "10.0.0.1",           40000, "10.0.0.2",       80,    1, {},            -1, -1,  "10.0.0.1",          40000, "10.0.0.2",        80,    "TCP",       "",           true},
  {"tcp v4, client endpoint 1",     6,  "10.0.0.9",           40000, "10.0.0.2",       80,    0, {},            -1, -1,  "10.0.0.9",          40000, "10.0.0.2",        80,    "TCP",       "",           true},
  {"udp v4, ports 0 and 65535",     17, "0.0.0.0",            0,     "255.255.255.255",65535, 1, {},            -1, -1,  "0.0.0.0",           0,     "255.255.255.255", 65535, "UDP",       "",           false},
  {"udp v4, client endpoint 1",     17, "192.168.1.10",       5353,  "224.0.0.251",    5353,  0, {},            -1, -1,  "192.168.1.10",      5353,  "224.0.0.251",     5353,  "UDP",       "",           false},
  {"udp v6, zero runs written out",            17, "2001:db8::1",        546,   "ff02::1:2",      547,   1, {},            -1, -1,  "2001:0db8:0000:0000:0000:0000:0000:0001",       546,   "ff02:0000:0000:0000:0000:0000:0001:0002",       547,   "UDP",       "",           false},
  {"tcp v6, no zero field",         6,  "2001:db8:1:2:3:4:5:6",1234, "2001:db8:a:b:c:d:e:f",443,0, {},           -1, -1,  "2001:0db8:0001:0002:0003:0004:0005:0006",1234, "2001:0db8:000a:000b:000c:000d:000e:000f",443, "TCP",       "",           true},
  {"tcp v6, loopback and ::",       6,  "::1",                1,     "::",             2,     1, {},            -1, -1,  "0000:0000:0000:0000:0000:0000:0000:0001",               1,     "0000:0000:0000:0000:0000:0000:0000:0000",              2,     "TCP",       "",           true},
  {"tcp v6, two zero runs",6,  "2001:db8:0:0:1:0:0:1",1,    "fe80::1",        2,     1, {},            -1, -1,  "2001:0db8:0000:0000:0001:0000:0000:0001", 1,     "fe80:0000:0000:0000:0000:0000:0000:0001",         2,     "TCP",       "",           true},
  {"tcp v6, lone zero kept",        6,  "2001:db8:0:1:1:1:1:1",1,    "fe80::1",        2,     1, {},            -1, -1,  "2001:0db8:0000:0001:0001:0001:0001:0001",1,   "fe80:0000:0000:0000:0000:0000:0000:0001",         2,     "TCP",       "",           true},
  {"udp v6, v4-mapped",             17, "::ffff:10.0.0.1",    53,    "::ffff:10.0.0.2",53,    1, {},            -1, -1,  "0000:0000:0000:0000:0000:ffff:0a00:0001",   53,    "0000:0000:0000:0000:0000:ffff:0a00:0002", 53,    "UDP",       "",           false},
  {"icmp echo: no ports",           1,  "10.0.0.1",           4660,  "8.8.8.8",        4660,  1, {},             8,  0,  "10.0.0.1",          -1,    "8.8.8.8",         -1,    "ICMP",      "",           false},
  {"icmp unreachable code 3",       1,  "10.0.0.1",           0,     "10.0.0.254",     0,     0, {},             3,  3,  "10.0.0.1",          -1,    "10.0.0.254",      -1,    "ICMP",      "",           false},
  {"icmpv6 echo",                   58, "2001:db8::1",        7,     "2001:db8::2",    7,     1, {},           128,  0,  "2001:0db8:0000:0000:0000:0000:0000:0001",       -1,    "2001:0db8:0000:0000:0000:0000:0000:0002",     -1,    "IPv6-ICMP", "",           false},
  {"sctp has ports",                132,"10.0.0.1",           3868,  "10.0.0.2",       3868,  1, {},            -1, -1,  "10.0.0.1",          3868,  "10.0.0.2",        3868,  "SCTP",      "",           false},
  {"gre: no ports",                 47, "10.0.0.1",           0,     "10.0.0.2",       0,     1, {},            -1, -1,  "10.0.0.1",          -1,    "10.0.0.2",        -1,    "GRE",       "",           false},
  {"esp: no ports",                 50, "10.0.0.1",           0,     "10.0.0.2",       0,     1, {},            -1, -1,  "10.0.0.1",          -1,    "10.0.0.2",        -1,    "ESP",       "",           false},
  {"protocol 99 by number",         99, "10.0.0.1",           0,     "10.0.0.2",       0,     1, {},            -1, -1,  "10.0.0.1",          -1,    "10.0.0.2",        -1,    "99",        "",           false},
  {"one vlan tag",                  6,  "10.0.0.1",           40000, "10.0.0.2",       80,    1, {100},         -1, -1,  "10.0.0.1",          40000, "10.0.0.2",        80,    "TCP",       "[100]",      true},
  {"two vlan tags, outer first",    17, "10.0.0.1",           1,     "10.0.0.2",       2,     0, {100, 4094},   -1, -1,  "10.0.0.1",          1,     "10.0.0.2",        2,     "UDP",       "[100,4094]", false},
  {"three vlan tags",               6,  "10.0.0.1",           1,     "10.0.0.2",       2,     1, {1, 2, 3},     -1, -1,  "10.0.0.1",          1,     "10.0.0.2",        2,     "TCP",       "[1,2,3]",    true},
};
// clang-format on

}  // namespace

TEST(EveFlowTable, Endpoints) {
  for (const EndpointRow& row : kEndpointRows) {
    SCOPED_TRACE(std::string("row \"") + row.name + "\"");
    FlowRecordOut o = base_record();
    FlowKey& k = o.rec.key;
    k.proto = row.proto;
    const int ci = row.client_lo ? 0 : 1;
    set_endpoint(k, ci, row.client, row.cport);
    set_endpoint(k, 1 - ci, row.server, row.sport);
    o.rec.client_lo = row.client_lo;
    k.vlan_n = uint8_t(row.vlan.size());
    for (size_t v = 0; v < row.vlan.size(); ++v) k.vlan[v] = row.vlan[v];
    if (row.icmp_type >= 0) {
      k.icmp_type = uint8_t(row.icmp_type);
      k.icmp_code = uint8_t(row.icmp_code);
    }
    const json j = render(o, row.name);
    const std::string r = std::string("row \"") + row.name + "\"";
    EXPECT_EQ(j.value("event_type", ""), "flow") << r;
    EXPECT_EQ(j.value("src_ip", ""), row.src_ip) << r;
    EXPECT_EQ(j.value("dest_ip", ""), row.dest_ip) << r;
    EXPECT_EQ(j.value("proto", ""), row.proto_name) << r;
    // Suricata 8 writes ip_v in every event: the family of the flow's addresses.
    EXPECT_EQ(j.value("ip_v", 0), std::string(row.src_ip).find(':') == std::string::npos ? 4 : 6) << r;
    std::set<std::string> want_keys = {"timestamp", "flow_id", "event_type", "src_ip", "dest_ip", "ip_v", "proto", "flow"};
    if (row.src_port >= 0) {
      want_keys.insert("src_port");
      EXPECT_EQ(j.value("src_port", -1), row.src_port) << r;
    }
    if (row.dest_port >= 0) {
      want_keys.insert("dest_port");
      EXPECT_EQ(j.value("dest_port", -1), row.dest_port) << r;
    }
    if (*row.vlan_json) {
      want_keys.insert("vlan");
      EXPECT_EQ(j.contains("vlan") ? j["vlan"].dump() : "(absent)", row.vlan_json) << r;
    }
    if (row.icmp_type >= 0) {
      want_keys.insert({"icmp_type", "icmp_code"});
      EXPECT_EQ(j.value("icmp_type", -1), row.icmp_type) << r;
      EXPECT_EQ(j.value("icmp_code", -1), row.icmp_code) << r;
    }
    if (row.tcp_object) want_keys.insert("tcp");
    EXPECT_EQ(keys_of(j), want_keys) << r;
  }
}

// --- times ----------------------------------------------------------------------------------------

namespace {

struct TimeRow {
  const char* name;
  uint64_t first_ts, last_ts;  // ns since the epoch
  const char* start;           // expected flow.start
  const char* end;             // expected flow.end and timestamp
  uint64_t age;                // expected flow.age: whole seconds, as Suricata (last s - first s)
};

// clang-format off
const std::vector<TimeRow> kTimeRows = {
  {"base: microseconds truncated",  1711972800123456789ull, 1711972805999999999ull, "2024-04-01T12:00:00.123456+0000", "2024-04-01T12:00:05.999999+0000", 5},
  {"epoch",                         0ull,                   0ull,                   "1970-01-01T00:00:00.000000+0000", "1970-01-01T00:00:00.000000+0000", 0},
  {"under a microsecond",           999ull,                 1000ull,                "1970-01-01T00:00:00.000000+0000", "1970-01-01T00:00:00.000001+0000", 0},
  {"one packet, same time",         1711972800000001000ull, 1711972800000001000ull, "2024-04-01T12:00:00.000001+0000", "2024-04-01T12:00:00.000001+0000", 0},
  {"leap day into March",           1709251199999999500ull, 1709251200000000001ull, "2024-02-29T23:59:59.999999+0000", "2024-03-01T00:00:00.000000+0000", 1},
  {"age counts second boundaries",  1711972800999999999ull, 1711972801000000000ull, "2024-04-01T12:00:00.999999+0000", "2024-04-01T12:00:01.000000+0000", 1},
  {"nearly a second, same second",  1711972800000000000ull, 1711972800999999999ull, "2024-04-01T12:00:00.000000+0000", "2024-04-01T12:00:00.999999+0000", 0},
  {"across 2038-01-19",             2147483647500000000ull, 2147483648250000000ull, "2038-01-19T03:14:07.500000+0000", "2038-01-19T03:14:08.250000+0000", 1},
  {"into 2100",                     4102444799500000000ull, 4102444800000000000ull, "2099-12-31T23:59:59.500000+0000", "2100-01-01T00:00:00.000000+0000", 1},
  {"an hour long",                  1711972800000000000ull, 1711976400000000000ull, "2024-04-01T12:00:00.000000+0000", "2024-04-01T13:00:00.000000+0000", 3600},
};
// clang-format on

}  // namespace

TEST(EveFlowTable, Times) {
  for (const TimeRow& row : kTimeRows) {
    SCOPED_TRACE(std::string("row \"") + row.name + "\"");
    FlowRecordOut o = base_record();
    o.rec.first_ts = row.first_ts;
    o.rec.last_ts = row.last_ts;
    const json j = render(o, row.name);
    const std::string r = std::string("row \"") + row.name + "\"";
    ASSERT_TRUE(j.contains("flow") && j["flow"].is_object()) << r;
    const json& f = j["flow"];
    EXPECT_EQ(j.value("timestamp", ""), row.end) << r << ": timestamp is the flow's last packet";
    EXPECT_EQ(f.value("start", ""), row.start) << r;
    EXPECT_EQ(f.value("end", ""), row.end) << r;
    ASSERT_TRUE(f.contains("age") && f["age"].is_number_unsigned()) << r;
    EXPECT_EQ(f["age"].get<uint64_t>(), row.age) << r;
  }
}

// --- counters, state, reason, verdict -------------------------------------------------------------

namespace {

struct CounterRow {
  const char* name;
  uint64_t pkts_ts, pkts_tc, bytes_ts, bytes_tc;  // side[0] (client) and side[1] (server)
  FlowState state;
  FlowReason reason;
  uint8_t misc;         // FlowMisc bits
  uint64_t flow_id;
  // expected
  const char* state_name;
  const char* reason_name;
  bool alerted;
  const char* action;   // "": absent
};

// clang-format off
const std::vector<CounterRow> kCounterRows = {
  // name                          pkts ts/tc  bytes ts/tc            state                   reason                 misc                                    flow_id                 state          reason      alerted action
  {"asymmetric counts",            3, 5,        180, 7000,             FlowState::established, FlowReason::shutdown, 0,                                       1,                      "established", "shutdown", false, ""},
  {"nothing back",                 1, 0,        60, 0,                 FlowState::new_,        FlowReason::timeout,  0,                                       2,                      "new",         "timeout",  false, ""},
  {"fresh prints as new",          1, 0,        60, 0,                 FlowState::fresh,       FlowReason::timeout,  0,                                       3,                      "new",         "timeout",  false, ""},
  {"closed, forced out",           10, 9,       1000, 900,             FlowState::closed,      FlowReason::forced,   0,                                       4,                      "closed",      "forced",   false, ""},
  {"closed, replaced by port reuse", 10, 9,     1000, 900,             FlowState::closed,      FlowReason::tcp_reuse, kFlowPortReused,                        11,                     "closed",      "tcp_reuse", false, ""},
  {"large 64-bit counters",        4294967296ull, 1, 1099511627776ull, 18446744073709551615ull, FlowState::established, FlowReason::shutdown, 0,        5,                      "established", "shutdown", false, ""},
  {"51-bit flow id",               1, 1,        1, 1,                  FlowState::established, FlowReason::timeout,  0,                                       2251799813685247ull,    "established", "timeout",  false, ""},
  {"alerted",                      2, 2,        120, 120,              FlowState::established, FlowReason::shutdown, kFlowAlerted,                            6,                      "established", "shutdown", true,  ""},
  {"dropped",                      2, 0,        120, 0,                FlowState::new_,        FlowReason::timeout,  kFlowDecidedDrop,                        7,                      "new",         "timeout",  false, "drop"},
  {"passed",                       2, 2,        120, 120,              FlowState::established, FlowReason::timeout,  kFlowDecidedPass,                        8,                      "established", "timeout",  false, "pass"},
  {"alerted and dropped",          2, 0,        120, 0,                FlowState::new_,        FlowReason::forced,   kFlowAlerted | kFlowDecidedDrop,         9,                      "new",         "forced",   true,  "drop"},
  {"other bits change nothing",    2, 2,        120, 120,              FlowState::established, FlowReason::timeout,  kFlowMidstream | kFlowPortReused | kFlowStreamDropped, 10, "established", "timeout",  false, ""},
};
// clang-format on

}  // namespace

TEST(EveFlowTable, CountersStateReasonVerdict) {
  for (const CounterRow& row : kCounterRows) {
    SCOPED_TRACE(std::string("row \"") + row.name + "\"");
    FlowRecordOut o = base_record();
    FlowRecord& rec = o.rec;
    rec.side[0].pkts = row.pkts_ts;
    rec.side[1].pkts = row.pkts_tc;
    rec.side[0].bytes = row.bytes_ts;
    rec.side[1].bytes = row.bytes_tc;
    rec.state = uint8_t(row.state);
    o.reason = uint8_t(row.reason);
    rec.misc = row.misc;
    rec.flow_id = row.flow_id;
    const json j = render(o, row.name);
    const std::string r = std::string("row \"") + row.name + "\"";
    ASSERT_TRUE(j.contains("flow") && j["flow"].is_object()) << r;
    const json& f = j["flow"];
    ASSERT_TRUE(j.contains("flow_id") && j["flow_id"].is_number_unsigned()) << r;
    EXPECT_EQ(j["flow_id"].get<uint64_t>(), row.flow_id) << r;
    for (const char* key : {"pkts_toserver", "pkts_toclient", "bytes_toserver", "bytes_toclient"})
      ASSERT_TRUE(f.contains(key) && f[key].is_number_unsigned()) << r << ": " << key;
    EXPECT_EQ(f["pkts_toserver"].get<uint64_t>(), row.pkts_ts) << r;
    EXPECT_EQ(f["pkts_toclient"].get<uint64_t>(), row.pkts_tc) << r;
    EXPECT_EQ(f["bytes_toserver"].get<uint64_t>(), row.bytes_ts) << r;
    EXPECT_EQ(f["bytes_toclient"].get<uint64_t>(), row.bytes_tc) << r;
    EXPECT_EQ(f.value("state", ""), row.state_name) << r;
    EXPECT_EQ(f.value("reason", ""), row.reason_name) << r;
    ASSERT_TRUE(f.contains("alerted") && f["alerted"].is_boolean()) << r;
    EXPECT_EQ(f["alerted"].get<bool>(), row.alerted) << r;
    std::set<std::string> want_keys = {"pkts_toserver", "pkts_toclient", "bytes_toserver", "bytes_toclient",
                                       "start", "end", "age", "state", "reason", "alerted"};
    if (*row.action) {
      want_keys.insert("action");
      EXPECT_EQ(f.value("action", ""), row.action) << r;
    }
    EXPECT_EQ(keys_of(f), want_keys) << r;
  }
}

// --- TCP ------------------------------------------------------------------------------------------

namespace {

struct TcpRow {
  const char* name;
  uint16_t flags_ts, flags_tc;  // TCP flags seen from the client, from the server (9 bits: NS is 0x100)
  TcpSide tcp_ts, tcp_tc;
  bool no_session;              // kFlowNoSession
  bool gap_ts, gap_tc;          // kStreamGap on stream[0] / stream[1]
  // expected
  const char* tcp_flags;
  const char* flags_ts_hex;
  const char* flags_tc_hex;
  const char* names;            // the flag keys set to true, in this order, comma-separated
  const char* state;
};

using S = TcpSide;
// clang-format off
const std::vector<TcpRow> kTcpRows = {
  // name                          ts     tc     client side        server side        nosess gap ts/tc     all   ts    tc    names                                  tcp.state
  {"SYN, SYN-ACK",                 0x002, 0x012, S::syn_sent,       S::syn_recv,       false, false, false, "12", "02", "12", "syn,ack",                              "syn_recv"},
  {"SYN only",                     0x002, 0x000, S::syn_sent,       S::none,           false, false, false, "02", "02", "00", "syn",                                  "syn_sent"},
  {"whole session",                0x01b, 0x01b, S::established,    S::established,    false, false, false, "1b", "1b", "1b", "fin,syn,psh,ack",                      "established"},
  {"every flag, NS not printed",   0x1ff, 0x000, S::none,           S::none,           false, false, false, "ff", "ff", "00", "fin,syn,rst,psh,ack,urg,ecn,cwr",      "none"},
  {"NS alone",                     0x100, 0x100, S::established,    S::established,    false, false, false, "00", "00", "00", "",                                     "established"},
  {"hex is lower case",            0x0ab, 0x000, S::established,    S::established,    false, false, false, "ab", "ab", "00", "fin,syn,psh,urg,cwr",                  "established"},
  {"flags split by direction",     0x0c2, 0x014, S::established,    S::established,    false, false, false, "d6", "c2", "14", "syn,rst,ack,ecn,cwr",                  "established"},
  {"client FIN sent",              0x011, 0x010, S::fin_sent,       S::established,    false, false, false, "11", "11", "10", "fin,ack",                              "fin_wait1"},
  {"client FIN acked",             0x011, 0x010, S::fin_acked,      S::established,    false, false, false, "11", "11", "10", "fin,ack",                              "fin_wait2"},
  {"server FIN sent",              0x010, 0x011, S::established,    S::fin_sent,       false, false, false, "11", "10", "11", "fin,ack",                              "fin_wait1"},
  {"server FIN acked",             0x010, 0x011, S::established,    S::fin_acked,      false, false, false, "11", "10", "11", "fin,ack",                              "fin_wait2"},
  {"both FIN, none acked",         0x011, 0x011, S::fin_sent,       S::fin_sent,       false, false, false, "11", "11", "11", "fin,ack",                              "closing"},
  {"both FIN, one acked",          0x011, 0x011, S::fin_acked,      S::fin_sent,       false, false, false, "11", "11", "11", "fin,ack",                              "time_wait"},
  {"both FIN, other acked",        0x011, 0x011, S::fin_sent,       S::fin_acked,      false, false, false, "11", "11", "11", "fin,ack",                              "time_wait"},
  {"both FIN acked",               0x011, 0x011, S::fin_acked,      S::fin_acked,      false, false, false, "11", "11", "11", "fin,ack",                              "closed"},
  {"client reset",                 0x014, 0x010, S::reset,          S::established,    false, false, false, "14", "14", "10", "rst,ack",                              "closed"},
  {"server reset after FIN",       0x011, 0x004, S::fin_sent,       S::reset,          false, false, false, "15", "11", "04", "fin,rst,ack",                          "closed"},
  {"no session",                   0x018, 0x018, S::established,    S::established,    true,  false, false, "18", "18", "18", "psh,ack",                              "none"},
  {"gap to server",                0x018, 0x018, S::established,    S::established,    false, true,  false, "18", "18", "18", "psh,ack",                              "established"},
  {"gap to client",                0x018, 0x018, S::established,    S::established,    false, false, true,  "18", "18", "18", "psh,ack",                              "established"},
  {"gaps both ways",               0x018, 0x018, S::established,    S::established,    false, true,  true,  "18", "18", "18", "psh,ack",                              "established"},
};
// clang-format on

}  // namespace

TEST(EveFlowTable, Tcp) {
  for (const TcpRow& row : kTcpRows) {
    SCOPED_TRACE(std::string("row \"") + row.name + "\"");
    FlowRecordOut o = base_record();
    FlowRecord& rec = o.rec;
    rec.side[0].flags = row.flags_ts;
    rec.side[1].flags = row.flags_tc;
    rec.side[0].tcp = uint8_t(row.tcp_ts);
    rec.side[1].tcp = uint8_t(row.tcp_tc);
    if (row.no_session) rec.misc |= kFlowNoSession;
    if (row.gap_ts) rec.stream[0].flags |= kStreamGap;
    if (row.gap_tc) rec.stream[1].flags |= kStreamGap;
    const json j = render(o, row.name);
    const std::string r = std::string("row \"") + row.name + "\"";
    ASSERT_TRUE(j.contains("tcp") && j["tcp"].is_object()) << r;
    const json& t = j["tcp"];
    EXPECT_EQ(t.value("tcp_flags", ""), row.tcp_flags) << r;
    EXPECT_EQ(t.value("tcp_flags_ts", ""), row.flags_ts_hex) << r;
    EXPECT_EQ(t.value("tcp_flags_tc", ""), row.flags_tc_hex) << r;
    EXPECT_EQ(t.value("state", ""), row.state) << r;
    std::set<std::string> want_keys = {"tcp_flags", "tcp_flags_ts", "tcp_flags_tc", "state"};
    std::string names = row.names;
    for (size_t a = 0; !names.empty() && a != std::string::npos;) {
      const size_t b = names.find(',', a);
      const std::string name = names.substr(a, b == std::string::npos ? std::string::npos : b - a);
      want_keys.insert(name);
      EXPECT_TRUE(t.contains(name) && t[name].is_boolean() && t[name].get<bool>()) << r << ": " << name;
      a = b == std::string::npos ? b : b + 1;
    }
    if (row.gap_ts) {
      want_keys.insert("ts_gap");
      EXPECT_EQ(t.value("ts_gap", false), true) << r;
    }
    if (row.gap_tc) {
      want_keys.insert("tc_gap");
      EXPECT_EQ(t.value("tc_gap", false), true) << r;
    }
    EXPECT_EQ(keys_of(t), want_keys) << r;
  }
}

// ICMP: icmp_type/icmp_code are the first message's from the client, response_icmp_* the first
// from the other side (as Suricata writes them), whatever type the key folded the flow onto.
TEST(EveFlowTable, IcmpTypesEachWay) {
  struct Row {
    const char* name;
    uint8_t proto, key_type;
    int client_type, client_code, server_type, server_code;  // -1: that side sent nothing
    int want_type, want_code, want_rtype, want_rcode;        // -1: key absent
  };
  const Row rows[] = {
      {"echo and reply", 1, 8, 8, 0, 0, 0, 8, 0, 0, 0},
      {"echo, no reply", 1, 8, 8, 0, -1, -1, 8, 0, -1, -1},
      {"reply seen first (the flow's client sent the reply)", 1, 8, 0, 0, 8, 0, 0, 0, 8, 0},
      {"timestamp and its reply", 1, 13, 13, 0, 14, 0, 13, 0, 14, 0},
      {"unreachable, code 3", 1, 3, 3, 3, -1, -1, 3, 3, -1, -1},
      {"icmpv6 echo and reply", 58, 128, 128, 0, 129, 0, 128, 0, 129, 0},
      {"no side recorded (a record from before): the key's type", 1, 8, -1, -1, -1, -1, 8, 0, -1, -1},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    FlowRecordOut o = base_record();
    o.rec.key.proto = row.proto;
    o.rec.key.icmp_type = row.key_type;
    o.rec.key.icmp_code = 0;
    o.rec.proto_class = uint8_t(FlowProto::icmp);
    o.rec.side[0].isn = row.client_type < 0 ? 0 : kIcmpSeen | uint32_t(row.client_type) << 8 | uint32_t(row.client_code);
    o.rec.side[1].isn = row.server_type < 0 ? 0 : kIcmpSeen | uint32_t(row.server_type) << 8 | uint32_t(row.server_code);
    const json j = render(o, row.name);
    EXPECT_EQ(j.value("icmp_type", -1), row.want_type);
    EXPECT_EQ(j.value("icmp_code", -1), row.want_code);
    EXPECT_EQ(j.value("response_icmp_type", -1), row.want_rtype);
    EXPECT_EQ(j.value("response_icmp_code", -1), row.want_rcode);
  }
}

// Strings written into EVE lines (a rule's msg, metadata, a path) come out as JSON that parses back
// to the same text, control characters escaped; bytes that are not UTF-8 become U+FFFD instead of
// making the line invalid. Oracle: the JSON library's parser.
TEST(EveStrings, EscapedAsValidJson) {
  struct Case {
    std::string in, want;  // want: the text after parsing
  };
  const std::vector<Case> cases = {
      {"plain", "plain"},
      {"quote \" backslash \\ slash /", "quote \" backslash \\ slash /"},
      {std::string("nul \0 bell \a tab \t newline \n", 29), std::string("nul \0 bell \a tab \t newline \n", 29)},
      {"caf\xc3\xa9 \xe2\x82\xac", "caf\xc3\xa9 \xe2\x82\xac"},           // UTF-8 kept
      {"latin-1 caf\xe9", "latin-1 caf\xef\xbf\xbd"},                        // a lone byte: U+FFFD
      {"cut \xe2\x82", "cut \xef\xbf\xbd"},                                  // a truncated sequence
      {"\xff\xfe", "\xef\xbf\xbd\xef\xbf\xbd"},
  };
  for (const Case& c : cases) {
    const std::string line = "{\"s\":\"" + json_escape(c.in) + "\"}";
    json j;
    ASSERT_NO_THROW(j = json::parse(line)) << line;
    EXPECT_EQ(j["s"].get<std::string>(), c.want) << line;
  }
}
