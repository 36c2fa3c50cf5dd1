// core/modules.cpp — ModuleOf<M>, the registry lookup, ModuleSet's module list and summaries, and the
// stream hooks of a pipeline (see modules.hpp). Event delivery: module_events.cpp; verdict
// accounting: verdict_stats.cpp; EVE drop events: drop_event.cpp; stage planning: stage_plan.cpp.
#include "core/modules.hpp"

#include <algorithm>
#include <stdexcept>

#include "applayer/app_layer.hpp"
#include "core/engine_config.hpp"
#include "core/module_stage.hpp"
#include "gaspp/stream_hook.hpp"
#include "core/packet_batch.hpp"
#include "decode/decoder.hpp"
#include "flow/flow_table.hpp"
#include "modules/registry.hpp"
#include "core/eve_event.hpp"

namespace gaspp {
namespace {

template <class M>
class ModuleOf final : public ModuleInstance {
 public:
  ModuleOf(int type, const ModuleOptions& opt) : type_(type), host_(opt) {}
  const char* name() const override { return M::kName; }
  int type() const override { return type_; }
  // The host may narrow what the type declares (a firewall without http1 hooks reads no stream and
  // keeps no state): M::Host::layers() within M::kLayers, M::Host::flow_state_bytes() 0 or all.
  uint32_t layers() const override {
    if constexpr (requires { host_.layers(); }) return host_.layers() & M::kLayers;
    else return M::kLayers;
  }
  uint32_t flow_state_bytes() const override {
    if constexpr (requires { host_.flow_state_bytes(); })
      return host_.flow_state_bytes() ? module_flow_state_bytes<M>() : 0u;
    else return module_flow_state_bytes<M>();
  }
  bool default_drop() const override {
    if constexpr (requires { host_.default_drop(); }) return host_.default_drop();
    else return false;
  }
  bool changes_context() const override {
    if constexpr (requires { host_.changes_context(); }) return host_.changes_context();
    else if constexpr (requires { M::kChangesContext; }) return M::kChangesContext;
    else return true;
  }
  void upload(TableMemory& mem) override { view_ = host_.upload(mem); }
  const void* view() const override { return &view_; }
  size_t view_bytes() const override { return sizeof(view_); }
  bool has_stream_hook() const override { return (HasOnStream<M> || HasOnStreamBulk<M>) && (layers() & kLayerStream); }
  bool stream_bulk() const override { return HasOnStreamBulk<M>; }
  void run_cpu(const StageArgs& a, uint32_t begin, uint32_t end, unsigned long long* counts) const override {
    for (uint32_t k = begin; k < end; ++k) module_stage_packet<M>(a, view_, k, counts);
  }
  bool has_ip_retry() const override { return HasOnIpRetry<M>; }
  void run_cpu_retry(const StageArgs& a, uint32_t begin, uint32_t end, unsigned long long* counts) const override {
    for (uint32_t e = begin; e < end; ++e) module_stage_retry<M>(a, view_, e, counts);
  }
  void on_event(const ModuleEvent& e, const HostPacket& p, ModuleOutput& out) override { host_.on_event(e, p, out); }
  void report(std::map<std::string, uint64_t>& r) const override { host_.report(r); }
  bool wants_app_layer() const override {
    if constexpr (requires { host_.wants_app_layer(); }) return host_.wants_app_layer();
    else return false;
  }
  bool wants_flow_positions() const override {
    if constexpr (requires { host_.wants_flow_positions(); }) return host_.wants_flow_positions();
    else return false;
  }
  void amend_app_layer(AppLayerConfig& c) const override {
    if constexpr (requires { host_.amend_app_layer(c); }) host_.amend_app_layer(c);
  }
  void set_app_workers(int n) override {
    if constexpr (requires { host_.set_app_workers(n); }) host_.set_app_workers(n);
  }
  void on_app(std::span<const AppUpdate> u, std::vector<ModuleEvent>& out, int worker) override {
    if constexpr (requires { host_.on_app(u, out, worker); }) host_.on_app(u, out, worker);
  }
  void on_app_end() override {
    if constexpr (requires { host_.on_app_end(); }) host_.on_app_end();
  }
  void on_host_events(uint32_t packet, const DecodedPacket& d, uint16_t module, std::vector<ModuleEvent>& out) override {
    if constexpr (requires { host_.on_host_events(packet, d, module, out); }) host_.on_host_events(packet, d, module, out);
  }
  bool wants_packets() const override {
    if constexpr (requires { host_.wants_packets(); }) return host_.wants_packets();
    return false;
  }
  void on_packet(const HostPacket& p, ModuleOutput& out) override {
    if constexpr (requires { host_.on_packet(p, out); }) host_.on_packet(p, out);
  }
  void on_flows_gone(const std::vector<uint64_t>& ids) override {
    if constexpr (requires { host_.on_flows_gone(ids); }) host_.on_flows_gone(ids);
  }
  std::string flow_eve_json(uint64_t flow_id) const override {
    if constexpr (requires { host_.flow_eve_json(flow_id); }) return host_.flow_eve_json(flow_id);
    return {};
  }
  void on_packets_end() override {
    if constexpr (requires { host_.on_packets_end(); }) host_.on_packets_end();
  }

 private:
  int type_;
  typename M::Host host_;
  typename M::View view_{};
};

}  // namespace

const char* module_counter_name(int c) {
  static const char* const names[] = {
#define GASPP_X(id, name) name,
      GASPP_MODULE_COUNTERS(GASPP_X)
#undef GASPP_X
  };
  return c >= 0 && c < kModuleCounters ? names[c] : "?";
}

std::unique_ptr<ModuleInstance> make_module(const std::string& name, const ModuleOptions& opt) {
  int type = 0;
  std::unique_ptr<ModuleInstance> m;
#define GASPP_X(M)                                                   \
  if (!m && name == M::kName) m = std::make_unique<ModuleOf<M>>(type, opt); \
  ++type;
  GASPP_MODULE_TYPES(GASPP_X)
#undef GASPP_X
  if (!m) {
    std::string all;
    for (auto& n : module_names()) all += (all.empty() ? "" : ", ") + n;
    throw std::invalid_argument("unknown module '" + name + "' (modules: " + all + ")");
  }
  return m;
}

std::vector<std::string> module_names() {
  std::vector<std::string> v;
#define GASPP_X(M) v.push_back(M::kName);
  GASPP_MODULE_TYPES(GASPP_X)
#undef GASPP_X
  return v;
}

void ModuleSet::add(std::unique_ptr<ModuleInstance> m) {
  m->index = uint16_t(mods_.size());
  m->state_off = state_bytes_;
  state_bytes_ += (m->flow_state_bytes() + 15) & ~15u;
  stream_modules_ = stream_modules_ || m->has_stream_hook();
  // A module that needs more of the parsers than the running ones give restarts them (before the
  // run: nothing has been parsed yet).
  bool restart = false;
  if (m->wants_app_layer()) {
    AppLayerConfig now = app_cfg_, more;
    for (auto& k : mods_) k->amend_app_layer(now);
    more = now;
    m->amend_app_layer(more);
    restart = !app_ || more.mail_body_md5 != now.mail_body_md5;
  }
  payload_counts_ = payload_counts_ || m->wants_app_layer();
  if (std::string(m->name()) == AppUdpModule::kName) app_udp_ = int(mods_.size());
  mods_.push_back(std::move(m));
  counts_.push_back(Counts{});
  if (restart) start_app_layer(app_cfg_, app_threads_);
  else if (app_) mods_.back()->set_app_workers(app_->workers());
}

void ModuleSet::start_app_layer(const AppLayerConfig& c, int threads) {
  app_cfg_ = c;
  app_threads_ = threads;
  AppLayerConfig amended = c;
  for (auto& m : mods_) m->amend_app_layer(amended);
  app_ = std::make_shared<AppShards>(amended, threads);
  shard_events_.assign(AppShards::kShards, {});
  for (auto& m : mods_) m->set_app_workers(app_->workers());
}

void ModuleSet::set_app_layer_config(const AppLayerConfig& c, bool on, int threads) {
  if (!app_ && !on) return;
  start_app_layer(c, threads);
  if (app_udp_ >= 0) return;
  // app-udp goes first, as Suricata parses the application layer before detection: a packet a
  // later module drops is still parsed (and logged).
  std::vector<std::unique_ptr<ModuleInstance>> rest = std::move(mods_);
  mods_.clear();
  counts_.clear();
  state_bytes_ = 0;
  stream_modules_ = false;
  add(make_module(AppUdpModule::kName, {{"dns-ports", port_ranges_text(c.dns_udp_ports)},
                                        {"sip-ports", port_ranges_text(c.sip_udp_ports)}}));
  for (auto& m : rest) add(std::move(m));
}

std::vector<ModuleInstance*> ModuleSet::pointers() const {
  std::vector<ModuleInstance*> v;
  for (auto& m : mods_) v.push_back(m.get());
  return v;
}

bool ModuleSet::firewall_mode() const {
  for (const auto& m : mods_)
    if (m->default_drop()) return true;
  return false;
}

std::string ModuleSet::summary_text() const {
  std::string s;
  for (size_t k = 0; k < mods_.size(); ++k) {
    s += "module " + std::to_string(k) + " " + mods_[k]->name() + ":";
    for (int c = 0; c < kModuleCounters; ++c)
      if (counts_[k][size_t(c)] || c == mc_packets) s += std::string(" ") + module_counter_name(c) + "=" + std::to_string(counts_[k][size_t(c)]);
    std::map<std::string, uint64_t> r;
    mods_[k]->report(r);
    for (auto& [n, v] : r) s += " " + n + "=" + std::to_string(v);
    s += "\n";
  }
  if (suppressed_) s += "module events discarded (flow already decided): " + std::to_string(suppressed_) + "\n";
  if (flow_only_) s += "module events with no packet, handed over with their flow: " + std::to_string(flow_only_) + "\n";
  if (unattributed_) s += "module events whose packet or flow was not found (not handed over): " + std::to_string(unattributed_) + "\n";
  if (app_) {
    std::map<std::string, uint64_t> r;
    app_->report(r);
    s += "app-layer:";
    for (auto& [n, v] : r) s += " " + n + "=" + std::to_string(v);
    s += "\n";
  }
  if (late_n_.packets || late_n_.passed_flows || late_n_.flows_full)
    s += "late decisions (on the host after the verdicts): packets dropped " + std::to_string(late_n_.packets) +
         ", flows dropped " + std::to_string(late_n_.flows) + ", their later packets " + std::to_string(late_n_.followers) +
         ", flows passed " + std::to_string(late_n_.passed_flows) + " (flows not remembered, table full: " +
         std::to_string(late_n_.flows_full) + ")\n";
  if (recalled_ || forgotten_)
    s += "drop events given their flow's id: " + std::to_string(recalled_) + " (dropped flows forgotten, memory full: " +
         std::to_string(forgotten_) + ")\n";
  return s;
}

nlohmann::ordered_json ModuleSet::summary_json() const {
  nlohmann::ordered_json j = verdict_stats_json();
  j["events_suppressed"] = suppressed_;
  j["events_flow_only"] = flow_only_;
  j["events_unattributed"] = unattributed_;
  j["drop_flow_ids_recalled"] = recalled_;
  j["dropped_flows_forgotten"] = forgotten_;
  j["late_drops"] = {{"packets", late_n_.packets},
                     {"flows", late_n_.flows},
                     {"flow_packets", late_n_.followers},
                     {"passed_flows", late_n_.passed_flows},
                     {"flows_full", late_n_.flows_full}};
  if (app_) {
    std::map<std::string, uint64_t> r;
    app_->report(r);
    auto& a = j["app_layer"];
    a = nlohmann::ordered_json::object();
    for (auto& [n, v] : r) a[n] = v;
  }
  auto& list = j["modules"];
  list = nlohmann::ordered_json::array();
  for (size_t k = 0; k < mods_.size(); ++k) {
    nlohmann::ordered_json m;
    m["name"] = mods_[k]->name();
    for (int c = 0; c < kModuleCounters; ++c) m[module_counter_name(c)] = counts_[k][size_t(c)];
    std::map<std::string, uint64_t> r;
    mods_[k]->report(r);
    for (auto& [n, v] : r) m[n] = v;
    list.push_back(std::move(m));
  }
  return j;
}

StreamHooks stream_hooks_of(const std::vector<ModuleInstance*>& mods, TableMemory* mem) {
  StreamHooks h{};
  for (size_t k = 0; k < mods.size(); ++k) {
    const ModuleInstance& m = *mods[k];
    if (!m.has_stream_hook()) continue;
    if (h.n == kMaxStreamModules)
      throw std::invalid_argument("more than " + std::to_string(kMaxStreamModules) + " modules with on_stream");
    h.type[h.n] = uint16_t(m.type());
    h.module[h.n] = uint16_t(k);
    h.state_off[h.n] = m.state_off;
    h.view[h.n] = mem ? mem->place(m.view(), m.view_bytes()) : m.view();
    h.bulk[h.n] = m.stream_bulk() ? 1 : 0;
    h.bulk_n += h.bulk[h.n];
    ++h.n;
  }
  return h;
}

}  // namespace gaspp
