// modules/firewall/firewall_compile.hpp — turns parsed rules into the firewall's tables
// (firewall_tables.hpp) and places them with the backend.
//
// Limits: elementary-interval lists may hold at most FirewallLimits::max_list_entries entries in
// all (overlapping ranges repeat an entry in each piece they cover); compile() throws
// std::length_error naming the limit when a rule set needs more. Table sizes are reported.
//
// Example:
//   FirewallTables t;
//   t.compile(rule_set.rules);
//   FirewallView v = t.place(memory);   // host memory (CPU) or a device copy (CUDA)
#pragma once
#include <cstdint>
#include <vector>

#include "gaspp/module.hpp"
#include "modules/firewall/firewall_tables.hpp"
#include "modules/firewall/rules.hpp"

namespace gaspp {

struct FirewallLimits {
  uint64_t max_list_entries = 64ull << 20;
};

class FirewallTables {
 public:
  // Rules are ranked by `order` (then priority, then file order): FwRule::rank.
  void compile(const std::vector<Rule>& rules, const FirewallLimits& lim = {}, const ActionOrder& order = {});
  FirewallView place(TableMemory& mem) const;
  // A view over the host vectors themselves (the CPU backend and tests).
  FirewallView host_view() const;

  uint64_t bytes() const;
  uint32_t hash_keys() const { return hash_keys_; }
  uint32_t elementary() const { return elementary_; }
  uint64_t list_entries() const { return entries_.size(); }
  uint32_t wildcard_entries() const { return wildcard_entries_; }

 private:
  std::vector<FwRule> rules_;
  std::vector<FwInterval> intervals_;
  std::vector<FwPortRange> ports_;
  std::vector<uint32_t> entries_;
  std::vector<FwHashSlot> hash_[2][2];
  std::vector<FwElementary> elem_[2][2];
  std::vector<FwPortPiece> by_port_[2][2];
  FwSpan wildcard_[2]{};
  uint32_t hash_keys_ = 0, elementary_ = 0, wildcard_entries_ = 0;
};

}  // namespace gaspp
