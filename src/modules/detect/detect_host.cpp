// modules/detect/detect_host.cpp — the signature engine's host side: loading and compiling the
// signatures, the CPU matchers (Hyperscan prefilter, PCRE2), and the alerts.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <hs/hs.h>
#include <pcre2.h>

#include <algorithm>
#include <atomic>
#include <atomic>
#include <chrono>
#include <cstring>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <sstream>
#include <stdexcept>

#include "decode/decoder.hpp"
#include "modules/detect/detect.hpp"
#include "modules/detect/base64.hpp"
#include "modules/detect/dataset.hpp"
#include "modules/detect/pcre_capture.hpp"
#include "core/eve_event.hpp"
#include "modules/firewall/alert_eve.hpp"

namespace gaspp {

// The CPU matchers. Hyperscan and PCRE2 keep per-thread scratch: each thread that matches gets
// its own, made on first use from the shared compiled forms.
struct DetectHostMatchers {
  hs_database_t* db = nullptr;
  hs_scratch_t* proto_scratch = nullptr;
  std::vector<pcre2_code*> pcre;
  std::vector<std::vector<PcreCaptureSpec>> captures;  // per pcre: what its groups are stored into
  // Each expression is JIT-compiled on its first match, once: most of a large rule set's pcres
  // never run on a given capture, and compiling them all up front was most of the load time.
  std::vector<std::unique_ptr<std::once_flag>> jit;
  uint64_t generation = 0;  // which matchers a thread's scratch was made for
  std::vector<DetSig> base64_lists;  // the base64_data lists (DetOp::pat_off of a kOpBase64)
  std::unique_ptr<Datasets> datasets = std::make_unique<Datasets>();  // DetOp::pat_off of a kOpDataset
  ~DetectHostMatchers() {
    if (proto_scratch) hs_free_scratch(proto_scratch);
    if (db) hs_free_database(db);
    for (pcre2_code* c : pcre) pcre2_code_free(c);
  }
};

namespace {

// Whether a drop or pass decided on the host applies to the flow (Suricata's SignatureProperties, by its
// SignatureSetType): an IP-only or like-IP-only signature, an application-layer one (a
// transaction's buffers, or only the protocol: `alert http any any -> any any (sid:1;)`), or a
// packet signature whose match was on the stream or a transaction; else the packet only.
bool decides_flow(const Signature& s, uint8_t verdict, bool stateful_match) {
  if ((verdict & kDetFlowScope) || s.app || stateful_match) return true;
  const bool app_only = !s.gate_proto.empty() && s.ops.empty() && !s.flow_keyword && !s.header_conds() &&
                        !s.dsize.on && !s.itype.on && !s.icode.on && !s.has_flags && s.flowbits.empty() &&
                        s.flowints.empty() && s.xbits.empty();
  return app_only;
}

std::atomic<uint64_t> g_generation{1};

struct ThreadScratch {
  const DetectHostMatchers* owner = nullptr;
  uint64_t generation = 0;
  hs_scratch_t* hs = nullptr;
  pcre2_match_data* md = nullptr;
  ~ThreadScratch() {
    if (hs) hs_free_scratch(hs);
    if (md) pcre2_match_data_free(md);
  }
  void bind(const DetectHostMatchers* m) {
    if (owner == m && generation == m->generation) return;
    if (hs) hs_free_scratch(hs);
    hs = nullptr;
    if (m->proto_scratch && hs_clone_scratch(m->proto_scratch, &hs) != HS_SUCCESS)
      throw std::runtime_error("detect: Hyperscan scratch allocation failed");
    if (!md) md = pcre2_match_data_create(64, nullptr);
    owner = m;
    generation = m->generation;
  }
};
thread_local ThreadScratch t_scratch;

struct Collect {
  std::vector<uint32_t>* ids;
};
int on_hs_match(unsigned int id, unsigned long long, unsigned long long, unsigned int, void* ctx) {
  static_cast<Collect*>(ctx)->ids->push_back(id);
  return 0;
}

// Flowbits role as Suricata orders signatures: setters first, then set-and-read, readers, others.
// toggle writes too, as in Suricata 8's SCSigGetFlowbitsType (its later versions drop toggle).
int flowbits_order(const Signature& s) {
  bool rd = false, wr = false;
  for (const FlowbitCmd& c : s.flowbits) {
    if (c.cmd == FlowbitCmd::isset || c.cmd == FlowbitCmd::isnotset) rd = true;
    else wr = true;  // set, unset, toggle
  }
  if (wr && !rd) return 0;
  if (wr && rd) return 1;
  if (rd) return 2;
  return 3;
}

// Flowint role, ordered as flowbits (setters, both, readers, others: SCSigOrderByFlowintCompare).
int flowint_order(const Signature& s) {
  bool rd = false, wr = false;
  for (const FlowintCmd& c : s.flowints) (c.condition() ? rd : wr) = true;
  if (wr && !rd) return 0;
  if (wr && rd) return 1;
  if (rd) return 2;
  return 3;
}

// The xbits role in Suricata's order (SCSigOrderByHostbitsCompare, then ...IPPairbits; its
// SCSigGetXbitsType): setters, then setters that also test, then testers, then the others. Suricata
// counts as tests only the xbits keyword's isset/isnotset, and as writes only the hostbits
// keyword's set/unset/toggle (host bits: never an address pair's); so an xbits setter and a
// hostbits test rank with the signatures that use neither.
int xbits_order(const Signature& s, bool pair) {
  bool rd = false, wr = false;
  for (const XbitCmd& c : s.xbits) {
    if ((c.track == XbitCmd::ip_pair) != pair) continue;
    if (c.condition() && !c.hostbits) rd = true;
    if (!c.condition() && c.hostbits) wr = true;
  }
  if (wr && !rd) return 0;
  if (wr && rd) return 1;
  if (rd) return 2;
  return 3;
}

// Whether the match depends on what only the host keeps (flowbits, flowints, xbits, IP reputation).
bool reads_flowbits(const Signature& s) {
  if (!s.iprep.empty()) return true;
  for (const XbitCmd& c : s.xbits)
    if (c.condition()) return true;
  for (const FlowbitCmd& c : s.flowbits)
    if (c.cmd == FlowbitCmd::isset || c.cmd == FlowbitCmd::isnotset) return true;
  for (const FlowintCmd& c : s.flowints)
    if (c.condition()) return true;
  return false;
}

uint8_t trailing_zeros(uint64_t m) {
  uint8_t n = 0;
  while (m && !(m & 1)) {
    m >>= 1;
    ++n;
  }
  return n;
}

}  // namespace

int detect_host_base64(const DetectView& v, const DetOp& o, const uint8_t* data, uint32_t n) {
  if (!v.host || o.pat_off >= v.host->base64_lists.size()) return kInspectNoMatch;  // no base64_data
  thread_local std::vector<uint8_t> decoded;
  if (decoded.size() < n) decoded.resize(n);
  const size_t got = base64_decode_rfc4648(data, n, decoded.data());
  if (!got) return kInspectNoMatch;
  // No nesting: a base64_data list has no base64_decode (the parser refuses one).
  return detect_inspect(v, v.host->base64_lists[o.pat_off], decoded.data(), uint32_t(got)) == kInspectMatch
             ? kInspectMatch
             : kInspectNoMatch;
}

bool detect_host_dataset(const DetectHostMatchers* m, uint32_t id, const uint8_t* data, uint32_t len) {
  return m->datasets->match(id, data, len);
}

int detect_host_pcre(const DetectHostMatchers* m, uint32_t id, const uint8_t* subject, uint32_t len, uint32_t start,
                     uint32_t& ov0, uint32_t& ov1) {
  t_scratch.bind(m);
  std::call_once(*m->jit[id], [&] { pcre2_jit_compile(m->pcre[id], PCRE2_JIT_COMPLETE); });  // JIT, else the interpreter
  const int rc = pcre2_match(m->pcre[id], subject, len, start, 0, t_scratch.md, nullptr);
  if (rc < 0) return 0;  // no match, or a match limit: no match (as Suricata)
  const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(t_scratch.md);
  if (!m->captures[id].empty()) {
    PcreCaptureRecorder& r = pcre_capture_recorder();
    if (r.active()) r.record(id, m->captures[id], ov, pcre2_get_ovector_count(t_scratch.md), subject);
  }
  ov0 = uint32_t(ov[0]);
  ov1 = uint32_t(ov[1]);
  return 1;
}

void detect_host_candidates(const DetectView& v, const uint8_t* buf, uint32_t len, std::vector<uint32_t>& out) {
  out.clear();
  thread_local std::vector<uint32_t> ids;
  ids.clear();
  if (v.host_hash_prefilter) {
    det_match_patterns(v, buf, len, 0, 1, [&](uint32_t id, uint32_t) { ids.push_back(id); });
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  } else if (v.host->db && len) {
    t_scratch.bind(v.host);
    Collect c{&ids};
    hs_scan(v.host->db, reinterpret_cast<const char*>(buf), len, 0, t_scratch.hs, on_hs_match, &c);
  }
  for (uint32_t id : ids)
    for (uint32_t k = v.pat_sig_off[id]; k < v.pat_sig_off[id + 1]; ++k) out.push_back(v.pat_sigs[k]);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
}

DetectModule::Host::Host(const ModuleOptions& opt) : ModuleHost<DetectModule>({}) {
  const auto t0 = std::chrono::steady_clock::now();
  RuleVars vars;
  std::vector<std::string> files;
  std::string class_file, threshold_file;
  bool leave_to_firewall = false;
  ActionOrder action_order;  // Suricata's default: pass, drop, reject, alert
  for (auto& [k, v] : opt) {
    if (k == "classification-file") {
      class_file = v;
    } else if (k == "rules") {
      std::stringstream ss(v);
      for (std::string f; std::getline(ss, f, ',');)
        if (!f.empty()) files.push_back(f);
    } else if (k == "prefilter") {
      if (v != "hyperscan" && v != "hash" && v != "device")
        throw std::invalid_argument("detect: prefilter is hyperscan, hash or device, not '" + v + "'");
      hash_prefilter_ = v != "hyperscan";
      defer_pcre_ = v == "device";
    } else if (k == "matcher") {
      if (v != "hash" && v != "ac") throw std::invalid_argument("detect: matcher is hash or ac, not '" + v + "'");
      matcher_ac_ = v == "ac";
    } else if (k == "mpm-cache") {
      hs_cache_dir_ = v == "off" ? "" : v;
    } else if (k == "payload") {
      payload_ = v == "on";
    } else if (k == "packet") {
      eve_packet_ = v == "on";
    } else if (k == "verdict") {
      eve_verdict_ = v == "on";
    } else if (k == "ethernet") {
      eve_ether_ = v == "on";
    } else if (k == "flow-vars") {
      if (v != "on" && v != "off") throw std::invalid_argument("detect: flow-vars must be on or off");
      eve_flow_vars_ = v == "on";
    } else if (k == "tagged-packets") {
      tagged_packets_ = v == "on";
    } else if (k == "xff") {
      if (v != "extra-data" && v != "overwrite" && v != "off")
        throw std::invalid_argument("detect: xff is extra-data, overwrite or off, not '" + v + "'");
      xff_mode_ = v == "extra-data" ? 1 : v == "overwrite" ? 2 : 0;
    } else if (k == "xff-deployment") {
      if (v != "reverse" && v != "forward")
        throw std::invalid_argument("detect: xff-deployment is reverse or forward, not '" + v + "'");
      xff_forward_ = v == "forward";
    } else if (k == "xff-header") {
      if (v.empty()) throw std::invalid_argument("detect: xff-header names a header");
      xff_header_ = v;
    } else if (k == "firewall") {
      leave_to_firewall = v == "on";
    } else if (k == "packet-alert-max") {
      if (v.empty() || v.size() > 9 || !std::all_of(v.begin(), v.end(), ::isdigit) || std::stoul(v) == 0)
        throw std::invalid_argument("detect: packet-alert-max is a count of 1 or more, not '" + v + "'");
      packet_alert_max_ = uint32_t(std::stoul(v));
    } else if (k == "action-order") {
      const std::string why = parse_action_order(v, action_order);
      if (!why.empty()) throw std::invalid_argument("detect: action-order: " + why);
    } else if (k == "threshold-file") {
      threshold_file = v;
    } else if (alert_metadata_option(k, v, alert_meta_)) {
    } else if (std::string err; rule_vars_option(k, v, vars, err)) {
      if (!err.empty()) throw std::invalid_argument("detect: " + err);
    } else {
      throw std::invalid_argument("detect: unknown option '" + k +
                                  "' (rules, classification-file, threshold-file, ja3-fingerprints, smtp-body-md5, metadata.flow|app-layer|rule.metadata|rule.raw, packet-alert-max, prefilter, matcher, mpm-cache, firewall, payload, packet, verdict, ethernet, flow-vars, tagged-packets, xff, xff-deployment, xff-header, action-order, datasets-allow-absolute, iprep-categories, iprep-files, iprep-path, address.NAME, port.NAME)");
    }
  }
  const std::set<std::string> read = leave_to_firewall ? flowbits_read(files, vars) : std::set<std::string>{};
  // IP reputation (iprep.hpp): the categories before the rules name them, the lists beside.
  if (!vars.iprep_categories_file.empty()) {
    const std::string err = load_iprep_categories(vars.iprep_categories_file, vars.iprep_categories);
    if (!err.empty()) throw std::invalid_argument("detect: reputation categories: " + err);
  }
  for (const std::string& f : vars.iprep_files) {
    const std::filesystem::path p = f;
    const std::string at = p.is_relative() && !vars.iprep_path.empty() ? (std::filesystem::path(vars.iprep_path) / p).string() : f;
    const std::string err = iprep_.load(at);
    if (!err.empty()) throw std::invalid_argument("detect: reputation file: " + err);
  }
  for (const std::string& f : files)
    if (!load_signature_file(f, vars, set_, leave_to_firewall ? &read : nullptr)) throw std::invalid_argument("detect: rule file " + f + ": " + set_.errors.back().why);
  for (const RuleError& e : set_.errors) std::fprintf(stderr, "gaspp: %s:%u: rule skipped: %s\n", e.file.c_str(), e.line, e.why.c_str());
  if (class_file.empty() && !files.empty()) {
    const auto beside = std::filesystem::path(files.front()).parent_path() / "classification.config";
    if (std::filesystem::exists(beside)) class_file = beside.string();
  }
  if (!class_file.empty() && !load_classification_file(class_file, classes_))
    throw std::invalid_argument("detect: classification file " + class_file + " cannot be read");
  std::vector<Rule> rules;
  for (Signature& s : set_.sigs) rules.push_back(s.rule);
  apply_class_priorities(classes_, rules);
  for (size_t i = 0; i < rules.size(); ++i) set_.sigs[i].rule.priority = rules[i].priority;
  // Suricata's evaluation order (detect-engine-sigorder.c): action, flowbits role, flowint role,
  // host and address-pair xbits roles, priority, then load order.
  std::stable_sort(set_.sigs.begin(), set_.sigs.end(), [&](const Signature& a, const Signature& b) {
    const int aa = action_order.rank(a.rule.action), ab = action_order.rank(b.rule.action);
    if (aa != ab) return aa < ab;
    const int fa = flowbits_order(a), fb = flowbits_order(b);
    if (fa != fb) return fa < fb;
    const int ia = flowint_order(a), ib = flowint_order(b);
    if (ia != ib) return ia < ib;
    const int ha = xbits_order(a, false), hb = xbits_order(b, false);
    if (ha != hb) return ha < hb;
    const int pa = xbits_order(a, true), pb = xbits_order(b, true);
    if (pa != pb) return pa < pb;
    return rule_priority(a.rule) < rule_priority(b.rule);
  });
  rules.clear();
  for (uint32_t i = 0; i < set_.sigs.size(); ++i) {
    Rule r = set_.sigs[i].rule;
    r.action = RuleAction::alert;  // the header tables only match; actions are the module's
    rules.push_back(r);
  }
  hdr_.compile(rules);
  // Payload lists.
  std::map<std::pair<std::string, bool>, uint32_t> pat_id;
  std::vector<std::vector<uint32_t>> pat_sig_lists;
  matchers_ = std::make_unique<DetectHostMatchers>();
  matchers_->generation = g_generation.fetch_add(1);
  for (uint32_t i = 0; i < set_.sigs.size(); ++i) {
    const Signature& s = set_.sigs[i];
    if (s.ops.size() > kDetMaxOps) throw std::logic_error("detect: the parser let a rule with more than 64 payload options through");
    DetSig d{};
    d.op_off = uint32_t(ops_.size());
    d.op_n = uint16_t(s.ops.size());
    d.mode = s.mode;
    d.proto = s.rule.proto;
    d.flow_dir = s.flow_dir;
    d.flow_est = s.flow_est;
    auto cond = [](const NumCond& c) {
      return DetCond{uint8_t(c.on ? (c.range ? 2 : 1) : 0), c.cmp, uint8_t(c.neg ? 1 : 0), 0, c.lo, c.hi};
    };
    d.dsize = cond(s.dsize);
    d.itype = cond(s.itype);
    d.icode = cond(s.icode);
    d.flags = DetFlags{uint8_t(s.has_flags ? 1 : 0), s.flags_mode, s.flags_want, s.flags_ignore};
    d.ttl = cond(s.ttl);
    d.mss = cond(s.tcp_mss);
    d.ip_proto = cond(s.ip_proto);
    d.seq = s.seq;
    d.ack = s.ack;
    d.win = s.win;
    d.hdr = uint8_t((s.seq_on ? kHdrSeq : 0) | (s.ack_on ? kHdrAck : 0) | (s.win_on ? kHdrWin : 0) |
                    (s.win_neg ? kHdrWinNeg : 0));
    d.decode_event = s.decode_event;
    d.icmp_id = cond(s.icmp_id);
    d.icmp_seq = cond(s.icmp_seq);
    d.ipopts = s.ipopts;
    d.ic_off = uint32_t(int_conds_.size());
    d.ic_n = uint16_t(s.int_conds.size());
    d.csum_valid = s.csum_valid;
    d.csum_invalid = s.csum_invalid;
    int_conds_.insert(int_conds_.end(), s.int_conds.begin(), s.int_conds.end());
    flow_positions_ = flow_positions_ || (!s.app && std::any_of(s.int_conds.begin(), s.int_conds.end(), [](const IntCond& c) {
                                            return c.key == kIcFlowPkts || c.key == kIcFlowBytes || c.key == kIcStreamSize || c.key == kIcFlowAge;
                                          }));
    if (s.app) {
      // Matched per HTTP transaction on the host (on_app): no packet or stream pass looks at it.
      d.mode = 0;
      d.op_n = 0;
      d.bidir = s.rule.bidirectional;
      d.sid = s.rule.sid;
      sigs_.push_back(d);
      add_app_sig(i);
      continue;
    }
    // Dropped on the device only when the device decides the match alone: no flowbits to read,
    // no pcre without a program for the device's search (those go to the host, after the verdicts).
    // A pcre's program, or why it has none (the expression stays with PCRE2 on the host).
    std::vector<int> rx(s.ops.size(), -1);
    bool host_pcre = false;
    for (size_t k = 0; k < s.ops.size(); ++k) {
      if (s.ops[k].type != SigOpType::pcre) continue;
      std::string why;
      rx[k] = regex_.add(s.ops[k].bytes, s.ops[k].pcre_options, why);
      host_pcre = host_pcre || rx[k] < 0;
      ++(rx[k] < 0 ? pcre_host_only_ : pcre_device_);
    }
    // A signature of a detected-only protocol (smtp, ...) waits for the flow's app_proto, which
    // the application layer decides on the host after the batch.
    // Nor one with a dataset (ip.src / ip.dst in a packet signature): sets live on the host, which
    // runs the list again on the packet when the device reaches one.
    const bool final_here = !reads_flowbits(s) && !host_pcre && s.gate_proto.empty() && s.datasets.empty();
    gated_sigs_ += !s.gate_proto.empty();
    if (final_here && (s.rule.action == RuleAction::drop || s.rule.action == RuleAction::reject)) d.verdict |= kDetDrop;
    if (final_here && s.rule.action == RuleAction::pass) d.verdict |= kDetPass;
    if (final_here && s.rule.action != RuleAction::pass && !s.noalert) d.verdict |= kDetAlerts;  // thresholds: below
    if (s.ip_only) d.verdict |= kDetFlowScope;
    if (s.ip_only_engine) d.verdict |= kDetFirstOnly;
    d.bidir = s.rule.bidirectional;
    d.sid = s.rule.sid;
    // The payload list, then each header buffer's (in the order the rule names them).
    std::vector<size_t> payload_ops;
    std::vector<std::pair<uint8_t, std::vector<size_t>>> hdr_lists;
    for (size_t k = 0; k < s.ops.size(); ++k) {
      const uint8_t b = s.ops[k].buf;
      if (!header_buf(b)) {
        payload_ops.push_back(k);
        continue;
      }
      auto it = std::find_if(hdr_lists.begin(), hdr_lists.end(), [&](const auto& l) { return l.first == b; });
      if (it == hdr_lists.end()) it = hdr_lists.insert(hdr_lists.end(), {b, {}});
      it->second.push_back(k);
    }
    if (hdr_lists.size() > 2) throw std::logic_error("detect: the parser let a rule with more than two header buffers through");
    add_ops(s, payload_ops, rx, d);
    for (size_t j = 0; j < hdr_lists.size(); ++j) {
      DetSig h{};
      add_ops(s, hdr_lists[j].second, rx, h);
      d.hb[j] = uint8_t(kHbIpv4 + (hdr_lists[j].first - kBufIpv4Hdr));
      d.hop_off[j] = h.op_off;
      d.hop_n[j] = h.op_n;
    }
    sigs_.push_back(d);
    has_stream_sigs_ = has_stream_sigs_ || (d.mode & kSigStream);
    if (s.fast_pattern < 0) {
      nofp_.push_back(i);
      continue;
    }
    const SigOp& fp = s.ops[size_t(s.fast_pattern)];
    const std::string lit = fp.fp_chop ? fp.bytes.substr(fp.fp_off, fp.fp_len) : fp.bytes;
    auto [it, fresh] = pat_id.try_emplace({lit, fp.nocase}, uint32_t(patterns_.size()));
    if (fresh) {
      patterns_.push_back({lit, fp.nocase});
      pat_sig_lists.emplace_back();
    }
    pat_sig_lists[it->second].push_back(i);
  }
  {
    std::vector<Rule> nofp_rules;
    for (uint32_t i : nofp_) nofp_rules.push_back(rules[i]);
    nofp_hdr_.compile(nofp_rules);
  }
  pat_sig_off_.push_back(0);
  for (auto& l : pat_sig_lists) {
    pat_sigs_.insert(pat_sigs_.end(), l.begin(), l.end());
    pat_sig_off_.push_back(uint32_t(pat_sigs_.size()));
  }
  if (!patterns_.empty()) {
    std::vector<std::string> pats;
    std::vector<unsigned> flags, ids;
    for (uint32_t k = 0; k < patterns_.size(); ++k) {
      pats.push_back(patterns_[k].first);
      flags.push_back(HS_FLAG_SINGLEMATCH | (patterns_[k].second ? HS_FLAG_CASELESS : 0));
      ids.push_back(k);
    }
    try {
      matchers_->db = hs_compile_lit_cached(pats, flags, ids, hs_cache_dir_, hs_cache_);
    } catch (const std::runtime_error& e) {
      throw std::runtime_error(std::string("detect: Hyperscan could not compile the fast patterns: ") + e.what());
    }
    if (hs_alloc_scratch(matchers_->db, &matchers_->proto_scratch) != HS_SUCCESS)
      throw std::runtime_error("detect: Hyperscan scratch allocation failed");
  }
  build_app_prefilter();
  pf_tables_.compile(patterns_);
  if (matcher_ac_) ac_tables_.compile(patterns_);
  std::vector<RuleId> ids;
  for (const Signature& s : set_.sigs) {
    RuleThresholds rt;
    if (!s.rule.threshold.empty()) {
      ThresholdSpec t;
      const std::string why = parse_threshold(s.rule.threshold, t);
      if (!why.empty())
        std::fprintf(stderr, "gaspp: %s:%u: threshold ignored: %s\n", s.rule.file.c_str(), s.rule.line, why.c_str());
      else
        rt.thresholds.push_back(t);
    }
    thresholds_.push_back(rt);
    ids.push_back({s.rule.gid, s.rule.sid});
    sig_captures_.push_back(std::any_of(s.ops.begin(), s.ops.end(), [](const SigOp& o) { return !o.captures.empty(); }));
    for (const FlowbitCmd& c : s.flowbits)
      for (const std::string& n : c.names) flowbit_ids_.try_emplace(n, uint32_t(flowbit_ids_.size()));
    for (const XbitCmd& c : s.xbits) xbit_ids_.try_emplace(c.name, uint32_t(xbit_ids_.size()));
    for (const FlowintCmd& c : s.flowints) {
      flowint_ids_.try_emplace(c.name, uint32_t(flowint_ids_.size()));
      if (!c.value_var.empty()) flowint_ids_.try_emplace(c.value_var, uint32_t(flowint_ids_.size()));
    }
  }
  flowbit_names_.assign(flowbit_ids_.size(), {});
  for (const auto& [n, id] : flowbit_ids_) flowbit_names_[id] = n;
  flowint_names_.assign(flowint_ids_.size(), {});
  for (const auto& [n, id] : flowint_ids_) flowint_names_[id] = n;
  if (!threshold_file.empty()) {
    // The firewall, when it shares the files, installs the file on its header-only rules; an
    // entry is reported unmatched here only when it names a rule of neither.
    const size_t mine = ids.size();
    ids.insert(ids.end(), set_.firewall_ids.begin(), set_.firewall_ids.end());
    thresholds_.resize(ids.size());
    threshold_config_ = load_threshold_config_for(threshold_file, vars, ids, thresholds_, true, "detect");
    thresholds_.resize(mine);
  }
  // A threshold, rate filter or suppression decides on the host whether a match alerts.
  // A rate_filter whose new_action is alert or pass can take a drop signature's drop away: its
  // drop is decided on the host too (late, LateVerdicts), after the rate is counted.
  for (size_t i = 0; i < sigs_.size(); ++i) {
    if (thresholds_[i].empty()) continue;
    sigs_[i].verdict &= uint8_t(~kDetAlerts);
    for (const ThresholdSpec& t : thresholds_[i].thresholds)
      if (t.kind == ThresholdSpec::rate_filter && (t.new_action == ThresholdSpec::alert || t.new_action == ThresholdSpec::pass))
        sigs_[i].verdict &= uint8_t(~kDetDrop);
  }
  load_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Suricata's summary of the loading, for all the rules when the firewall shares the files.
  const std::string reasons = top_skip_reasons(set_.skipped_by_reason, set_.errors);
  const uint64_t loaded = set_.sigs.size() + set_.to_firewall;
  std::fprintf(stderr,
               "gaspp: %s: %zu rule file%s processed; %llu rules loaded (%llu header-only by the firewall, %zu signatures), "
               "%llu skipped%s; %llu need the application layer; %zu fast patterns, %.2f s\n",
               leave_to_firewall ? "rules" : "detect", files.size(), files.size() == 1 ? "" : "s", (unsigned long long)loaded,
               (unsigned long long)set_.to_firewall, set_.sigs.size(), (unsigned long long)(set_.skipped() + set_.errors.size()),
               reasons.c_str(), (unsigned long long)set_.skipped_app_layer(), patterns_.size(), load_seconds_);
}

DetectModule::Host::~Host() = default;

// Compiles the options `which` of s (in order) into the op table: d.op_off and d.op_n say where.
// rx: each option's program for the device's regex search (-1: none).
void DetectModule::Host::add_ops(const Signature& s, const std::vector<size_t>& which, const std::vector<int>& rx,
                                 DetSig& d) {
  d.op_off = uint32_t(ops_.size());
  d.op_n = uint16_t(which.size());
  int last_pm = -1;  // the last content or pcre: relative options refer to it
  for (size_t n = 0; n < which.size(); ++n) {
    const size_t k = which[n];
    const SigOp& o = s.ops[k];
    DetOp x{};
    x.type = uint8_t(o.type);
    x.nbytes = o.nbytes;
    x.base = o.base;
    x.cmp = o.cmp;
    x.offset = o.offset;
    x.depth = o.depth;
    x.distance = o.distance;
    x.within = o.within;
    x.offset_var = o.offset_var;
    x.depth_var = o.depth_var;
    x.distance_var = o.distance_var;
    x.within_var = o.within_var;
    x.value_var = o.value_var;
    x.var = o.var;
    x.nbytes_var = o.nbytes_var;
    x.value = o.value;
    x.mask = o.mask;
    x.mask_shift = trailing_zeros(o.mask);
    x.multiplier = o.multiplier;
    x.align = o.align;
    x.post_offset = o.post_offset;
    uint32_t f = 0;
    if (o.negated) f |= kOpNegated;
    if (o.nocase) f |= kOpNocase;
    if (o.relative) f |= kOpRelative;
    if (o.endswith) f |= kOpEndsWith;
    if (o.has_depth) f |= kOpDepth;
    if (o.has_offset) f |= kOpOffset;
    if (o.has_distance) f |= kOpDistance;
    if (o.has_within) f |= kOpWithin;
    if (o.little) f |= kOpLittle;
    if (o.has_mask) f |= kOpMask;
    if (o.from_beginning) f |= kOpFromBeginning;
    if (o.from_end) f |= kOpFromEnd;
    if (n + 1 == which.size()) f |= kOpLast;
    x.flags = f;
    if (o.type == SigOpType::content) {
      x.pat_off = uint32_t(bytes_.size());
      x.pat_len = uint32_t(o.bytes.size());
      bytes_.insert(bytes_.end(), o.bytes.begin(), o.bytes.end());
    } else if (o.type == SigOpType::pcre) {
      int ec;
      PCRE2_SIZE eo;
      pcre2_code* re = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(o.bytes.data()), o.bytes.size(), o.pcre_options,
                                     &ec, &eo, nullptr);
      if (!re) throw std::invalid_argument("detect: pcre of sid " + std::to_string(s.rule.sid) + " does not compile");
      x.pat_off = uint32_t(matchers_->pcre.size());
      matchers_->jit.push_back(std::make_unique<std::once_flag>());
      matchers_->captures.push_back(o.captures);
      x.rx_prog = rx[k] < 0 ? 0 : uint32_t(rx[k]) + 1;
      matchers_->pcre.push_back(re);
    } else if (o.type == SigOpType::dataset) {
      try {
        x.pat_off = matchers_->datasets->add(s.datasets[size_t(o.dataset)], s.rule.file);
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument("detect: sid " + std::to_string(s.rule.sid) + ": " + e.what());
      }
    }
    // A relative base64_decode marks nothing (Suricata's does not flag the content before it): a
    // later occurrence of that content is not tried when what follows fails.
    if (o.relative && last_pm >= 0 && o.type != SigOpType::base64_decode) {
      ops_[d.op_off + uint32_t(last_pm)].flags |= kOpRelativeNext;
      // Suricata retries other occurrences of a content when what follows it depends on where it
      // ended (DETECT_CONTENT_WITHIN_NEXT, part of RELATIVE_NEXT): a content with within, a negated
      // relative content, a relative isdataat, byte_test, byte_jump, byte_extract, byte_math or
      // pcre; not a content with only distance (a later occurrence could only narrow its search).
      const bool distance_only = o.type == SigOpType::content && !o.has_within && !o.negated;
      if (!distance_only) ops_[d.op_off + uint32_t(last_pm)].flags |= kOpWithinNext;
    }
    if (o.type == SigOpType::content || o.type == SigOpType::pcre) last_pm = int(n);
    ops_.push_back(x);
  }
}


uint32_t DetectModule::Host::add_base64_list(const Signature& s, const std::vector<size_t>& which) {
  DetSig d{};
  d.sid = s.rule.sid;
  add_ops(s, which, std::vector<int>(s.ops.size(), -1), d);
  matchers_->base64_lists.push_back(d);
  return uint32_t(matchers_->base64_lists.size() - 1);
}

DetectModule::View DetectModule::Host::upload(TableMemory& mem) {
  struct InPlace final : TableMemory {
    const void* place(const void* h, size_t) override { return h; }
  } here;
  if (!host_view_.sigs && !sigs_.empty()) {
    host_view_ = upload_to(here);
    host_view_.host_hash_prefilter = 0;
    host_view_.host_defer_pcre = 0;
    host_view_.host_datasets = 1;
  }
  return upload_to(mem);
}

DetectModule::View DetectModule::Host::upload_to(TableMemory& mem) {
  View v{};
  v.hdr = hdr_.place(mem);
  v.sigs = mem.place(sigs_);
  v.sig_n = uint32_t(sigs_.size());
  v.ops = mem.place(ops_);
  v.bytes = mem.place(bytes_);
  v.pat_sig_off = mem.place(pat_sig_off_);
  v.pat_sigs = mem.place(pat_sigs_);
  v.pat_n = uint32_t(patterns_.size());
  v.nofp = mem.place(nofp_);
  v.nofp_n = uint32_t(nofp_.size());
  v.nofp_hdr = nofp_hdr_.place(mem);
  v.stream_carry = kDetStreamCarry;
  v.pf = pf_tables_.place(mem);
  if (matcher_ac_) v.ac = ac_tables_.place(mem);
  v.matcher_ac = matcher_ac_ ? 1 : 0;
  v.host_hash_prefilter = hash_prefilter_ ? 1 : 0;
  v.host_defer_pcre = defer_pcre_ ? 1 : 0;
  v.rx = regex_.place(mem);
  v.int_conds = mem.place(int_conds_);
  v.host = matchers_.get();
  return v;
}

int DetectModule::Host::packet_lists_on_host(uint32_t sig, const HostPacket& p) const {
  const DecodedPacket& d = *static_cast<const DecodedPacket*>(p.decoded);
  uint32_t len = 0;
  const uint8_t* payload = nullptr;
  if (d.payload_off[0] != kNoOffset && d.payload_off[0] < d.cap_len[0]) {
    payload = p.frame + d.payload_off[0];
    len = std::min<uint32_t>(d.cap_len[0] - d.payload_off[0], d.payload_len[0]);
  }
  const PacketHeaders h{d.cap_len[0], d.l3[0], d.l4[0], d.l3_off[0], d.l4_off[0], d.payload_off[0], d.payload_len[0]};
  return det_packet_lists(host_view_, host_view_.sigs[sig], payload, len, p.frame, h);
}

std::string DetectModule::Host::apply_captures(const AppAlertText* app, const ModuleEvent& ev, uint32_t sig,
                                               const HostPacket& p) {
  std::vector<CapturedVar> caps;
  if (set_.sigs[sig].app) {
    // Taken where the transaction was inspected (on_app).
    if (app) caps = app->captures;
  } else if (ev.value & 2) {
    ++captures_not_kept_;  // a match on the reassembled stream: its bytes are not at hand
    return {};
  } else {
    // A packet match (made by the backend): its lists again on the payload, recording.
    if (!p.decoded) return {};
    PcreCaptureRecorder& r = pcre_capture_recorder();
    r.begin();
    packet_lists_on_host(sig, p);
    caps = r.take();
  }
  std::string ctx;  // alert variables: alert.context members
  for (CapturedVar& v : caps) {
    if (v.type == PcreCaptureSpec::flow) {
      FlowVars* fv = flow_vars(ev.flow_id, true);
      if (!fv) continue;
      const auto at = std::find_if(fv->strs.begin(), fv->strs.end(), [&](const auto& x) { return x.first == v.name; });
      if (at != fv->strs.end()) at->second = std::move(v.value);
      else fv->strs.emplace_back(std::move(v.name), std::move(v.value));
    } else if (v.type == PcreCaptureSpec::pkt) {
      if (p.number != pkt_vars_packet_ || !p.number) pkt_vars_.clear();
      pkt_vars_packet_ = p.number;
      pkt_vars_.emplace_back(std::move(v.name), std::move(v.value));
    } else {
      ctx += std::string(ctx.empty() ? "" : ",") + "\"" + json_escape(printable_ascii(v.name)) + "\":\"" +
             json_escape(printable_ascii(v.value)) + "\"";
    }
  }
  return ctx;
}

void DetectModule::Host::on_flows_gone(const std::vector<uint64_t>& flow_ids) {
  if (flow_vars_.empty()) return;
  for (const uint64_t id : flow_ids) flow_vars_.erase(id);
}

std::string DetectModule::Host::vars_eve_json(uint64_t flow_id, const NamedValues* pkt_vars) const {
  if (!eve_flow_vars_) return {};
  const auto it = flow_vars_.find(flow_id);
  static const FlowVars kNone;
  const FlowVars& fv = it == flow_vars_.end() ? kNone : it->second;
  static const std::string kId = "traffic/id/", kLabel = "traffic/label/";
  std::string ids, labels, bits, ints;
  const auto add = [](std::string& list, const std::string& v) { list += (list.empty() ? "\"" : ",\"") + json_escape(v) + "\""; };
  for (const uint32_t id : fv.bits_order) {
    const std::string& n = flowbit_names_.at(id);
    if (n.rfind(kId, 0) == 0) add(ids, n.substr(kId.size()));
    else if (n.rfind(kLabel, 0) == 0) add(labels, n.substr(kLabel.size()));
    else add(bits, n);
  }
  for (const auto& [id, v] : fv.ints)
    ints += (ints.empty() ? "\"" : ",\"") + json_escape(flowint_names_.at(id)) + "\":" + std::to_string(v);
  // {"NAME":"value"} objects, the values' printable bytes.
  const auto objects = [](const NamedValues& v) {
    std::string o;
    for (const auto& [n, x] : v)
      o += std::string(o.empty() ? "" : ",") + "{\"" + json_escape(printable_ascii(n)) + "\":\"" + json_escape(printable_ascii(x)) + "\"}";
    return o;
  };
  const std::string strs = objects(fv.strs), pkts = pkt_vars ? objects(*pkt_vars) : std::string();
  std::string j;
  if (!ids.empty() || !labels.empty()) {
    j += ",\"traffic\":{";
    if (!ids.empty()) j += "\"id\":[" + ids + "]";
    if (!labels.empty()) j += std::string(ids.empty() ? "" : ",") + "\"label\":[" + labels + "]";
    j += "}";
  }
  if (!bits.empty() || !ints.empty() || !strs.empty() || !pkts.empty()) {
    std::string m;
    if (!bits.empty()) m += "\"flowbits\":[" + bits + "]";
    if (!ints.empty()) m += std::string(m.empty() ? "" : ",") + "\"flowints\":{" + ints + "}";
    if (!strs.empty()) m += std::string(m.empty() ? "" : ",") + "\"flowvars\":[" + strs + "]";
    if (!pkts.empty()) m += std::string(m.empty() ? "" : ",") + "\"pktvars\":[" + pkts + "]";
    j += ",\"metadata\":{" + m + "}";
  }
  return j;
}

DetectModule::Host::FlowVars* DetectModule::Host::flow_vars(uint64_t flow_id, bool create) {
  if (!flow_id) return nullptr;
  auto it = flow_vars_.find(flow_id);
  if (it != flow_vars_.end()) return &it->second;
  if (!create) return nullptr;
  if (flow_vars_.size() >= kDetFlowbitFlows) {
    ++flowbit_flows_full_;
    return nullptr;
  }
  FlowVars& fv = flow_vars_[flow_id];
  fv.bits.assign((flowbit_ids_.size() + 63) / 64, 0);
  return &fv;
}

bool DetectModule::Host::flow_conditions_hold(const Signature& s, uint64_t flow_id) {
  const FlowVars* fv = flow_vars(flow_id, false);
  auto bit = [&](const std::string& n) {
    const uint32_t id = flowbit_ids_.at(n);
    return fv && id / 64 < fv->bits.size() && ((fv->bits[id / 64] >> (id % 64)) & 1);
  };
  for (const FlowbitCmd& c : s.flowbits) {
    if (c.cmd != FlowbitCmd::isset && c.cmd != FlowbitCmd::isnotset) continue;
    bool any = false, all = true;
    for (const std::string& n : c.names) {
      const bool b = bit(n);
      any = any || b;
      all = all && b;
    }
    // isset a|b: any is set; isset a&b: all are. isnotset a|b: any is not set; a&b: none is set.
    const bool ok = c.cmd == FlowbitCmd::isset ? (c.any ? any : all) : (c.any ? !all : !any);
    if (!ok) return false;
  }
  auto get = [&](const std::string& n, uint32_t& v) {
    if (!fv) return false;
    const uint32_t id = flowint_ids_.at(n);
    for (const auto& [k, x] : fv->ints)
      if (k == id) {
        v = x;
        return true;
      }
    return false;
  };
  for (const FlowintCmd& c : s.flowints) {
    if (!c.condition()) continue;
    if (!flow_id) return false;  // Suricata: no flow, no match
    uint32_t cur = 0, target = c.value;
    const bool have = get(c.name, cur);
    if (!c.value_var.empty() && !get(c.value_var, target)) target = 0;
    bool ok;
    switch (c.op) {
      case FlowintCmd::isset: ok = have; break;
      case FlowintCmd::notset: ok = !have; break;
      case FlowintCmd::eq: ok = have && cur == target; break;
      case FlowintCmd::ne: ok = have && cur != target; break;
      case FlowintCmd::lt: ok = have && cur < target; break;
      case FlowintCmd::le: ok = have && cur <= target; break;
      case FlowintCmd::gt: ok = have && cur > target; break;
      default: ok = have && cur >= target; break;
    }
    if (!ok) return false;
  }
  return true;
}

void DetectModule::Host::flow_effects_apply(const Signature& s, uint64_t flow_id) {
  for (const FlowbitCmd& c : s.flowbits) {
    if (c.cmd == FlowbitCmd::isset || c.cmd == FlowbitCmd::isnotset) continue;
    FlowVars* fv = flow_vars(flow_id, true);
    if (!fv) return;
    for (const std::string& n : c.names) {
      const uint32_t id = flowbit_ids_.at(n);
      uint64_t& w = fv->bits[id / 64];
      const uint64_t b = 1ull << (id % 64);
      const bool was = (w & b) != 0;
      if (c.cmd == FlowbitCmd::set) w |= b;
      else if (c.cmd == FlowbitCmd::unset) w &= ~b;
      else w ^= b;
      const bool now = (w & b) != 0;
      if (now && !was) fv->bits_order.push_back(id);
      if (was && !now) std::erase(fv->bits_order, id);
    }
  }
  for (const FlowintCmd& c : s.flowints) {
    if (c.condition()) continue;
    FlowVars* fv = flow_vars(flow_id, true);
    if (!fv) return;
    auto find = [&](uint32_t id) -> uint32_t* {
      for (auto& [k, x] : fv->ints)
        if (k == id) return &x;
      return nullptr;
    };
    uint32_t target = c.value;
    if (!c.value_var.empty()) {
      const uint32_t* t = find(flowint_ids_.at(c.value_var));
      target = t ? *t : 0;
    }
    const uint32_t id = flowint_ids_.at(c.name);
    uint32_t* cur = find(id);
    // Suricata: set stores the value; add on an unset integer stores the value; sub on an unset
    // one does nothing.
    if (c.op == FlowintCmd::set || (!cur && c.op == FlowintCmd::add)) {
      if (cur) *cur = target;
      else fv->ints.push_back({id, target});
    } else if (cur) {
      *cur = c.op == FlowintCmd::add ? *cur + target : *cur - target;
    }
  }
}

DetectModule::Host::PacketAddrs DetectModule::Host::packet_addrs(const HostPacket& p) {
  PacketAddrs a;
  if (p.decoded) {
    const DecodedPacket& d = *static_cast<const DecodedPacket*>(p.decoded);
    std::memcpy(a.src, d.src_ip, 16);
    std::memcpy(a.dst, d.dst_ip, 16);
    a.fam = d.l3[0] == uint8_t(L3::ipv6) ? 6 : 4;
    a.sport = d.sport[0];
    a.dport = d.dport[0];
  } else if (p.flow) {
    // A flow-only event (data released at the flow's end) has no packet: the key's endpoints.
    std::memcpy(a.src, p.flow->key.addr[0], 16);
    std::memcpy(a.dst, p.flow->key.addr[1], 16);
    a.fam = p.flow->key.family;
    a.sport = p.flow->key.port[0];
    a.dport = p.flow->key.port[1];
  }
  return a;
}

std::string DetectModule::Host::xbit_key(const XbitCmd& c, const PacketAddrs& a) {
  // A host's key is its address; a pair's, both addresses in order (either direction is the pair).
  std::string k(1, char(c.track == XbitCmd::ip_pair ? 'p' : 'h'));
  k.push_back(char(a.fam));
  const uint8_t* x = c.track == XbitCmd::ip_dst ? a.dst : a.src;
  if (c.track != XbitCmd::ip_pair) {
    k.append(reinterpret_cast<const char*>(x), 16);
    return k;
  }
  const bool lo_src = std::memcmp(a.src, a.dst, 16) <= 0;
  k.append(reinterpret_cast<const char*>(lo_src ? a.src : a.dst), 16);
  k.append(reinterpret_cast<const char*>(lo_src ? a.dst : a.src), 16);
  return k;
}

bool DetectModule::Host::xbits_hold(const Signature& s, const PacketAddrs& a, uint64_t ts_ns) {
  for (const XbitCmd& c : s.xbits) {
    if (!c.condition()) continue;
    bool set = false;
    const auto it = xbits_.find(xbit_key(c, a));
    if (it != xbits_.end()) {
      const uint32_t id = xbit_ids_.at(c.name);
      auto& bits = it->second;
      const auto b = std::find_if(bits.begin(), bits.end(), [&](const XbitEntry& x) { return x.id == id; });
      if (b != bits.end()) {
        // Suricata (HostBitIsset, IPPairBitIsset): expired when expire < now, and then removed.
        set = b->expire_ns >= ts_ns;
        if (!set) bits.erase(b);
        if (bits.empty()) xbits_.erase(it);
      }
    }
    if (set != (c.cmd == XbitCmd::isset)) return false;
  }
  return true;
}

void DetectModule::Host::xbits_apply(const Signature& s, const PacketAddrs& a, uint64_t ts_ns) {
  for (const XbitCmd& c : s.xbits) {
    if (c.condition()) continue;
    const std::string key = xbit_key(c, a);
    auto it = xbits_.find(key);
    if (it == xbits_.end()) {
      if (c.cmd == XbitCmd::unset) continue;
      if (xbits_.size() >= kDetXbitKeys) {
        // Full: the keys whose bits all expired go first; when none did, the bit is not kept.
        std::erase_if(xbits_, [&](const auto& kv) {
          return std::all_of(kv.second.begin(), kv.second.end(), [&](const XbitEntry& b) { return b.expire_ns < ts_ns; });
        });
        if (xbits_.size() >= kDetXbitKeys) {
          ++xbits_full_;
          continue;
        }
      }
      it = xbits_.emplace(key, std::vector<XbitEntry>{}).first;
    }
    const uint32_t id = xbit_ids_.at(c.name);
    auto& bits = it->second;
    const auto b = std::find_if(bits.begin(), bits.end(), [&](const XbitEntry& x) { return x.id == id; });
    const uint64_t expire = ts_ns + uint64_t(c.expire) * 1000000000ull;
    // Suricata's HostBitSet/Unset/Toggle: set renews the expiry; toggle removes a present bit (an
    // expired one too) or adds it.
    if (c.cmd == XbitCmd::set) {
      if (b != bits.end()) b->expire_ns = expire;
      else bits.push_back({id, expire});
    } else if (c.cmd == XbitCmd::unset || b != bits.end()) {
      if (b != bits.end()) bits.erase(b);
    } else {
      bits.push_back({id, expire});
    }
    if (bits.empty()) xbits_.erase(it);
  }
}

void DetectModule::Host::on_event(const ModuleEvent& ev, const HostPacket& p, ModuleOutput& out) {
  if (ev.kind == kStreamNeedsHost) {
    ++stream_unresolved_;
    return;
  }
  if (ev.kind != kMatch || (ev.value >> 2) >= set_.sigs.size()) return;
  ModuleEvent e = ev;
  e.value = ev.value >> 2;
  if (ev.value & 1) {
    // The device stopped at a pcre: run the signature's list on the packet's payload here.
    ++host_rechecks_;
    if (!p.decoded) return;
    if (packet_lists_on_host(e.value, p) != kInspectMatch) return;
    ++host_recheck_matches_;
  }
  // One packet's matches come in rank order; its stream and payload matches of one signature are
  // one match; its transactions' matches of one signature (seq) are one alert each.
  const bool same_packet = p.number == last_number_ && e.flow_id == last_flow_ && p.number != 0;
  const bool another_tx = (ev.value & 2) && ev.seq != last_seq_;
  if (same_packet && e.value == last_sig_ && !another_tx) return;
  last_seq_ = ev.seq;
  if (!same_packet) {
    packet_alerts_ = 0;
    packet_passed_ = false;
    packet_late_drop_ = false;
    packet_reject_dirs_ = 0;
  }
  last_number_ = p.number;
  last_flow_ = e.flow_id;
  last_sig_ = e.value;
  ++matches_;
  const Signature& s = set_.sigs[e.value];
  // `http` is both HTTP versions' (Suricata's ALPROTO_HTTP), `http1` HTTP/1's; the others their own.
  const auto gate_holds = [&] {
    if (!p.app_proto) return false;
    if (s.gate_proto == "http1") return std::strcmp(p.app_proto, "http") == 0;
    return s.gate_proto == p.app_proto || (s.gate_proto == "http" && std::strcmp(p.app_proto, "http2") == 0);
  };
  if (!s.gate_proto.empty() && !gate_holds()) {
    // Suricata: a signature's app_proto must be the flow's (as of this packet) before it inspects.
    ++app_proto_rejected_;
    return;
  }
  if (!flow_conditions_hold(s, e.flow_id)) {
    ++flowbits_rejected_;
    return;
  }
  PacketAddrs addrs;
  const RuleThresholds& thr = thresholds_[e.value];
  if (!s.xbits.empty() || !s.iprep.empty() || !thr.empty()) addrs = packet_addrs(p);
  if (!s.xbits.empty() && !xbits_hold(s, addrs, p.ts_ns)) {
    ++xbits_rejected_;
    return;
  }
  for (const IprepCond& c : s.iprep)
    if (!iprep_.holds(c, addrs.fam, addrs.src, addrs.dst)) {
      ++iprep_rejected_;
      return;
    }
  // Flowbits, flowints and xbits change with every match (Suricata applies them while it inspects,
  // before it orders the actions); a pass ends the packet's alerts: those ranked after it are not
  // written.
  flow_effects_apply(s, e.flow_id);
  if (!s.xbits.empty()) xbits_apply(s, addrs, p.ts_ns);
  // pcre captures are stored with the match too (Suricata's post-match), noalert or not.
  // A transaction's match: what on_app kept of it (its object, context, captures, ...).
  const AppAlertText* app_alert = nullptr;
  if (s.app) {
    const auto it = app_alerts_.find({ev.flow_id, ev.packet, e.value, ev.seq});
    if (it != app_alerts_.end()) app_alert = &it->second;
  }
  const std::string alert_vars = sig_captures_[e.value] ? apply_captures(app_alert, ev, e.value, p) : std::string();
  if (packet_passed_) {
    ++after_pass_;
    return;
  }
  // A pass the device did not decide passes the flow late where its scope is the flow
  // (LateVerdicts): the flow's later packets raise no alerts.
  const bool flow_scope = decides_flow(s, sigs_[e.value].verdict, (ev.value & 2) != 0);
  if (s.rule.action == RuleAction::pass) {
    packet_passed_ = true;
    ++pass_matches_;
    if (p.late && flow_scope && !(sigs_[e.value].verdict & kDetPass)) p.late->pass_flow(p);
    if (!s.pass_alerts) return;  // a pass alerts only with the alert keyword: then as an alert rule below
  }
  if (s.noalert || thr.noalert) {
    ++noalert_;
    return;
  }
  ThresholdSpec::NewAction rate_action = ThresholdSpec::keep;
  if (!thr.empty()) {
    const ThresholdTable::Packet tp{addrs.src, addrs.dst, addrs.fam, e.flow_id, p.ts_ns, addrs.sport, addrs.dport};
    if (threshold_table_.check(thr, e.value, tp, rate_action) != ThresholdTable::alert) {
      ++threshold_suppressed_;
      return;
    }
    if (rate_action == ThresholdSpec::pass) {
      // A rate_filter's pass acts as a pass signature's match: no alert, and none after it.
      packet_passed_ = true;
      ++rate_filter_pass_;
      if (p.late && flow_scope) p.late->pass_flow(p);
      return;
    }
  }
  if (packet_alerts_ >= packet_alert_max_) {
    ++alert_overflow_;
    return;
  }
  ++packet_alerts_;
  ++alerts_;
  // The alert's action (a rate_filter's new_action replaces the rule's), and the packet's verdict:
  // the device dropped it when the match was decided there; otherwise the drop is decided here,
  // late (LateVerdicts), for the packet and, with Suricata's scope, its flow.
  const bool rule_blocks = s.rule.action == RuleAction::drop || s.rule.action == RuleAction::reject;
  const bool rate_blocks = rate_action == ThresholdSpec::drop || rate_action == ThresholdSpec::reject;
  const bool blocks = rate_blocks || (rule_blocks && rate_action != ThresholdSpec::alert);
  const bool device_drop = rule_blocks && (sigs_[e.value].verdict & kDetDrop);
  rate_filter_unapplied_ += device_drop && !blocks;  // new_action alert: the device dropped it already
  bool dropped = device_drop;
  HostPacket late_p = p;
  if (blocks && !device_drop) {
    if (p.late) {
      p.late->drop(p, flow_scope, rate_blocks ? LateVerdicts::threshold : LateVerdicts::rules);
      late_p.verdict |= kVerdictDrop;
      dropped = true;
      ++late_drops_;
    } else {
      ++drops_without_packet_;  // a match on data flushed with no packet (the flow's end)
    }
  }
  alerts_blocked_ += dropped;
  AlertExtras x{payload_, (ev.value & 2) != 0, eve_packet_, eve_verdict_, false, {}, alert_meta_, eve_ether_, {}, {}, {}, 0};
  // A reject rule (or a rate_filter's new_action reject) that dropped a packet answers it.
  const uint8_t reject_dirs = dropped && p.number ? reject_dirs_for(s.rule, rate_action) : 0;
  if (reject_dirs && p.late) p.late->reject(p, reject_dirs);
  // The packet's verdict so far for this alert's verdict object: dropped on the host by an
  // earlier alert of the packet, and every reject direction its alerts gave.
  if (late_p.verdict & kVerdictDrop) packet_late_drop_ = packet_late_drop_ || !(p.verdict & kVerdictDrop);
  if (packet_late_drop_) late_p.verdict |= kVerdictDrop;
  packet_reject_dirs_ |= reject_dirs;
  x.reject_dirs = packet_reject_dirs_;
  if (app_alert) {
    x.app = app_alert->app;
    x.context = app_alert->context;
    x.frame = app_alert->frame;
    if (!app_alert->xff.empty()) {
      x.xff = app_alert->xff;
      x.xff_overwrite = xff_mode_ != 2 ? 0 : app_alert->to_client ? 2 : 1;
    }
  }
  if (!alert_vars.empty()) x.context += (x.context.empty() ? "" : ",") + alert_vars;
  x.vars = vars_eve_json(ev.flow_id, p.number && p.number == pkt_vars_packet_ ? &pkt_vars_ : nullptr);
  out.eve(eve_alert_line(s.rule, classes_, late_p, dropped, x));
  out.fast_log(fast_log_line(s.rule, classes_, late_p, dropped));
  if (p.late) p.late->alerted(p);
  // Its tags start at this packet (tag.hpp); a flow-only event has no packet to start at.
  if (!s.tags.empty() && p.decoded && p.number)
    pending_tags_.push_back(PendingTag{p.number, e.value, tag_packet(p)});
}

TagPacket DetectModule::Host::tag_packet(const HostPacket& p) {
  TagPacket t;
  const DecodedPacket& d = *static_cast<const DecodedPacket*>(p.decoded);
  if (d.l3[0] != uint8_t(L3::ipv4) && d.l3[0] != uint8_t(L3::ipv6)) return t;
  t.family = d.l3[0] == uint8_t(L3::ipv6) ? 6 : 4;
  t.ts_ns = p.ts_ns;
  t.len = p.cap_len;
  t.proto = d.ip_proto[0];
  std::memcpy(t.src, d.src_ip, 16);
  std::memcpy(t.dst, d.dst_ip, 16);
  t.sport = d.sport[0];
  t.dport = d.dport[0];
  return t;
}

void DetectModule::Host::on_packet(const HostPacket& p, ModuleOutput& out) {
  // The alerts on this packet add their tags first: the alerting packet is the tags' first.
  for (; pending_at_ < pending_tags_.size() && pending_tags_[pending_at_].number <= p.number; ++pending_at_) {
    const PendingTag& t = pending_tags_[pending_at_];
    const Rule& r = set_.sigs[t.sig].rule;
    for (const TagSpec& spec : set_.sigs[t.sig].tags) tags_.add(spec, r.gid, r.sid, t.pkt);
  }
  if (tags_.empty() || !p.decoded) return;
  if (!tags_.handle(tag_packet(p)) || !tagged_packets_) return;
  // Suricata's tagged packet: the event head and the packet (EvePacket).
  ++tagged_written_;
  out.eve(eve_packet_head(p, "packet") + eve_packet_json(p) + "}");
}

void DetectModule::Host::on_packets_end() {
  // Alerts on no packet of the batch (a reassembled datagram's number is its last fragment's,
  // already passed) have had their packet: what is left starts no tag.
  pending_tags_.clear();
  pending_at_ = 0;
}

void DetectModule::Host::report(std::map<std::string, uint64_t>& r) const {
  r["signatures"] = set_.sigs.size();
  r["signatures_skipped"] = set_.skipped();
  r["signatures_skipped_app_layer"] = set_.skipped_app_layer();
  r["signature_errors"] = set_.errors.size();
  r["signatures_replaced_by_newer_rev"] = set_.duplicates_replaced;
  r["fast_patterns"] = patterns_.size();
  r["matches"] = matches_;
  r["alerts"] = alerts_;
  r["alerts_blocked"] = alerts_blocked_;
  r["pass_matches"] = pass_matches_;
  r["matches_after_pass"] = after_pass_;
  r["alerts_over_packet_max"] = alert_overflow_;
  r["flowbits_not_matched"] = flowbits_rejected_;
  // pcre captures (pcre_capture.hpp): a stream match's are not kept (the stream is not at hand).
  if (captures_not_kept_) r["pcre_captures_not_kept"] = captures_not_kept_;
  r["xbits_not_matched"] = xbits_rejected_;
  r["xbits_keys"] = xbits_.size();
  r["xbits_full"] = xbits_full_;
  r["noalert"] = noalert_;
  r["threshold_suppressed"] = threshold_suppressed_;
  r["threshold_table_entries"] = threshold_table_.entries();
  r["threshold_table_full"] = threshold_table_.table_full();
  r["rate_filter_pass"] = rate_filter_pass_;
  r["rate_filter_unapplied"] = rate_filter_unapplied_;
  r["late_drops"] = late_drops_;
  r["drops_without_packet"] = drops_without_packet_;
  if (threshold_config_) r["threshold_config_entries"] = threshold_config_;
  r["flowbit_flows_full"] = flowbit_flows_full_;
  r["pcre_device"] = pcre_device_;
  r["pcre_host_only"] = pcre_host_only_;
  r["pcre_host_rechecks"] = host_rechecks_;
  if (iprep_.entries()) {
    r["iprep_entries"] = iprep_.entries();
    r["iprep_rejected"] = iprep_rejected_;
  }
  if (!tags_.empty() || tags_.tagged() || tags_.full()) {
    r["tagged_packets"] = tags_.tagged();
    r["tagged_packets_written"] = tagged_written_;
    r["tags_full"] = tags_.full();
  }
  if (matchers_ && matchers_->datasets->sets()) {
    r["dataset_sets"] = matchers_->datasets->sets();
    r["dataset_values"] = matchers_->datasets->values();
    r["dataset_full"] = matchers_->datasets->full();
    r["dataset_entries_without_value"] = matchers_->datasets->entries_without_value();
  }
  r["pcre_host_recheck_matches"] = host_recheck_matches_;
  r["stream_pcre_undecided"] = stream_unresolved_;
  r["hs_cache_hits"] = hs_cache_.hits;
  r["hs_cache_misses"] = hs_cache_.misses;
  r["hs_cache_write_errors"] = hs_cache_.write_errors;
  r["app_signatures"] = app_sigs_.size();
  r["app_tx_updates"] = app_updates_;
  r["app_candidates"] = app_candidates_;
  r["app_matches"] = app_matches_;
  r["app_proto_signatures"] = gated_sigs_;
  r["app_proto_not_matched"] = app_proto_rejected_;
}

void DetectModule::Host::on_host_events(uint32_t packet, const DecodedPacket& d, uint16_t module,
                                        std::vector<ModuleEvent>& out) const {
  if (!host_view_.sigs || (d.l3[0] != uint8_t(L3::ipv4) && d.l3[0] != uint8_t(L3::ipv6))) return;
  PacketFacts f;
  for (int k = 0; k < kDecodeEventSlots; ++k) f.events[k] = d.events[k];
  FwPacket pk;
  pk.family = d.l3[0] == uint8_t(L3::ipv6) ? 6 : 4;
  pk.addr[0] = addr_number(d.src_ip, pk.family);
  pk.addr[1] = addr_number(d.dst_ip, pk.family);
  pk.proto = d.ip_proto[0];
  pk.has_ports = false;  // a fragment (fragment_to_l3): no transport header
  pk.port[0] = pk.port[1] = 0;
  f.dsize = int64_t(captured_payload(d));
  f.ttl = d.ip_ttl[0];
  f.vlan_n = d.vlan_count[0];
  for (int t = 0; t < 3; ++t) f.vlan[t] = d.vlan_id[t];
  for (uint32_t i = 0; i < host_view_.sig_n; ++i) {
    const DetSig& s = host_view_.sigs[i];
    if (!s.decode_event || !decode_event_raised_on_host(DecodeEvent(s.decode_event)) || !f.raised(s.decode_event)) continue;
    if (!(s.mode & kSigPacket) || s.op_n || s.hb[0]) continue;  // payload and header lists on fragments: not read here
    if (!sig_applies(host_view_, i, pk, false, false, false, f)) continue;
    ModuleEvent e{};
    e.packet = packet;
    e.value = i << 2;
    e.module = module;
    e.kind = kMatch;
    out.push_back(e);
  }
}

}  // namespace gaspp
