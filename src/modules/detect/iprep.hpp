// modules/detect/iprep.hpp — Suricata's IP reputation (reputation.c, detect-iprep.c): hosts and
// netblocks with a score 0..127 per category, and the `iprep` keyword that tests them.
//
// Configuration (suricata.yaml, or the detect module's options):
//   reputation-categories-file (iprep-categories)  lines "id,shortname,description", id 0..59
//   reputation-files (iprep-files, comma-separated) lines "ip[/prefix],category id,score", relative
//                                                   to default-reputation-path (iprep-path)
//   '#' comments and blank lines are passed over, a header line starting "ip," too; any other line
//   that does not read is an error with its file and line. A host or netblock named again for a
//   category keeps the last score.
// Keyword: iprep:any|src|dst|both,CATEGORY,OP,VALUE (OP < > = != <= >=, VALUE 0..255) or
// iprep:SIDE,CATEGORY,isset|isnotset. As Suricata's DetectIPRepMatch and reputation.c: a host
// listed by address (no prefix) has a value in every category (0 in those it is not listed under:
// Suricata's zeroed SReputation), and that value is the answer; otherwise the longest netblock
// holding the address listed under the category gives it (netblocks are per category, their
// addresses masked to the prefix); neither: no value; `any` holds when the source's value holds,
// else when the destination's does; `both` when both hold; isnotset when the side has no value
// (any: either side; both: neither). Decided on the host with the packet's addresses (a signature
// with iprep is one the device does not finish, as flowbits).
//
// Limit: kIprepMaxEntries hosts and netblocks in all; loading more is an error (the lists are
// configuration, not traffic).
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "modules/detect/uint_cond.hpp"

namespace gaspp {

constexpr size_t kIprepMaxEntries = size_t(1) << 24;
constexpr int kIprepCategories = 60;  // Suricata's SREP_MAX_CATS

struct IprepCond {
  enum Side : uint8_t { any, src, dst, both } side = any;
  uint8_t cat = 0;
  UintCond c;
  bool isnotset = false;
};

// Reads a categories file into name -> id: "" or the error (file:line).
std::string load_iprep_categories(const std::string& path, std::map<std::string, uint8_t>& out);
// Parses an iprep option value against the categories: "" and out filled, or "error:<why>".
std::string parse_iprep(const std::string& value, const std::map<std::string, uint8_t>& cats, IprepCond& out);

class IpReputation {
 public:
  // Loads one reputation file: "" or the error (file:line).
  std::string load(const std::string& path);
  // The score of the address (fam 4: 4 bytes, 6: 16) in category cat; -1 when neither the host nor a
  // netblock holding it is listed.
  int score(uint8_t fam, const uint8_t* addr, uint8_t cat) const;
  // Whether cond holds for a packet from src to dst (Suricata's DetectIPRepMatch).
  bool holds(const IprepCond& cond, uint8_t fam, const uint8_t* src, const uint8_t* dst) const;
  size_t entries() const { return entries_; }

 private:
  // A listed host's score per category (0 where it is not listed), by address, per family.
  std::unordered_map<std::string, std::array<uint8_t, kIprepCategories>> hosts_[2];
  // Netblocks per family and category: prefix length (longest first) -> masked address -> score.
  std::map<int, std::unordered_map<std::string, uint8_t>, std::greater<int>> nets_[2][kIprepCategories];
  size_t entries_ = 0;
};

}  // namespace gaspp
