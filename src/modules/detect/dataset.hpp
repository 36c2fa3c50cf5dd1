// modules/detect/dataset.hpp — Suricata's datasets: named sets of values that signatures test and
// change (`dataset:CMD,NAME,OPTIONS` after a sticky buffer; Suricata's detect-dataset.c).
//
//   dataset:isset|isnotset|set|unset,NAME[, type string|md5|sha256][, load FILE][, match subdomain]
//           [, memcap SIZE][, hashsize N]
// isset matches when the buffer is in the set (match subdomain: or one of its parent domains,
// each suffix after a '.', at most 126 tried), isnotset when it is not; set adds the buffer and
// matches when it was not there yet; unset removes it and matches when it was there. A buffer that
// does not match ends the signature's evaluation on that buffer (Suricata's no_match_discontinue).
// JSON sets (Suricata 8's datajson; format json or ndjson, value_key, array_key, context_key,
// remove_key) are read as DatasetSpec says; a value that is not a string, or a file that is not
// JSON, is an error naming the file and the entry; an entry without a value at value_key is passed
// over, as Suricata does, and counted (dataset_entries_without_value). A value given twice keeps
// its first entry (its object for alert.context, its reputation).
// md5 and sha256 sets hold 16- and 32-byte digests (a to_md5 / to_sha256 transform's output): other
// lengths are never in them. ipv4 sets hold 4-byte addresses, ipv6 sets (`type ipv6` or `type ip`)
// 16-byte ones: an IPv4 address (a 4-byte buffer, or a dotted or ::ffff: mapped value in the file)
// is its 4 bytes then 12 zeros there, as Suricata stores it, so ip.src of either family can be
// tested against one `type ip` set. The value a buffer is compared with is its bytes, exactly.
//
// Sets are shared by name across all loaded signatures (one type per name: another is an error).
// `load FILE` reads one value a line at load time — string values base64-encoded (strict RFC 4648,
// as Suricata's), digests in hex; empty lines and lines of more than two comma-separated fields are
// passed over as Suricata does, a `value,reputation` line (datarep's form) is read for its value —
// relative to the directory of the rule file that names it, then as given. A line that does not
// decode is an error with the file and line; a missing file is an error. Address sets read
// addresses as text (inet_pton). state, save and enrichment_key skip the rule, counted by reason.
//
// datarep:NAME, >|<|==, VALUE[, type T][, load FILE][, memcap SIZE][, hashsize N] (Suricata's
// detect-datarep.c): matches when the buffer is in the set with a reputation (the file's second
// field, 0..65535) greater than, less than or equal to VALUE. A set is one registry with the
// datasets: one name, one type; values set by `dataset:set` have reputation 0.
//
// Limit: kDatasetMaxItems values per set. A `set` or a loaded value beyond it is not kept, counted
// (dataset_full in the module's stats); the `set` does not match. Suricata's memcap and hashsize
// are read and otherwise ignored.
//
// Threads: the application layer's signatures run on several host threads (detect.hpp on_app), so
// each set has its own lock. Where `set` on one flow races `isset` on another, the outcome
// follows processing order, as with Suricata's worker threads. Datasets are only read on the host:
// a packet signature with one (on ip.src / ip.dst) is matched up to it by a packet pass of either
// backend, which leaves the rest to the host's re-check of the packet (inspect.hpp).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace gaspp {

constexpr size_t kDatasetMaxItems = size_t(1) << 22;

enum class DatasetCmd : uint8_t { set, unset, isset, isnotset };
// ipv6 is also Suricata's `type ip`: IPv4 addresses held as their 4 bytes and 12 zeros.
enum class DatasetType : uint8_t { string, md5, sha256, ipv4, ipv6 };

struct DatasetSpec {
  enum class Format : uint8_t { csv, json, ndjson };
  DatasetCmd cmd = DatasetCmd::isset;
  std::string name;
  DatasetType type = DatasetType::string;
  std::string load;              // as written
  bool match_subdomain = false;
  bool rep = false;              // datarep: compare the value's reputation
  uint8_t rep_op = 0;            // 0 >, 1 <, 2 ==
  uint16_t rep_value = 0;
  // Suricata 8's JSON sets (datajson): `format json` (an array of objects, or the array at
  // array_key of the top object) or `ndjson` (an object a line); value_key (a dotted path) names
  // each object's value, a string (hex for md5/sha256); context_key puts the matched value's object
  // (without the value with remove_key) in the alert as alert.context.<context_key>.
  Format format = Format::csv;
  std::string value_key, array_key, context_key;
  bool remove_key = false;
};

// The contexts of the JSON sets an isset matched while one signature was inspected
// (alert.context): (context_key, the object as JSON text). Datasets::match adds to the calling
// thread's list while it is active; the inspecting code clears it before a signature and reads it
// after (detect_app.cpp).
struct DatasetContexts {
  bool active = false;
  std::vector<std::pair<std::string, std::string>> hits;
};
DatasetContexts& dataset_contexts();

// Parses a dataset option's value: "" and out filled, "skip:<reason>" or "error:<why>".
std::string parse_dataset_option(const std::string& value, DatasetSpec& out);
// The same for a datarep option.
std::string parse_datarep_option(const std::string& value, DatasetSpec& out);

// Where a set's file is read: a relative path beside the rule file when it is there, else as given.
std::string dataset_path(const std::string& load, const std::string& rule_file);

class Datasets {
 public:
  // The command of one signature's dataset option, its set created (and its file loaded, a relative
  // path tried beside rule_file first) when first named. Returns its id for match(); throws
  // std::invalid_argument with the reason (the file, its line) when the set cannot be made.
  uint32_t add(const DatasetSpec& spec, const std::string& rule_file);
  // Whether command id matches the buffer data[0..len) (and what it changes): thread-safe.
  bool match(uint32_t id, const uint8_t* data, uint32_t len);
  size_t sets() const { return sets_.size(); }
  uint64_t full() const;      // values not kept for the limit
  uint64_t values() const;    // values held, all sets
  uint64_t entries_without_value() const;  // JSON entries passed over: nothing at value_key

 private:
  struct Set {
    DatasetType type;
    std::unordered_map<std::string, uint16_t> items;  // value -> reputation
    std::unordered_map<std::string, std::string> context;  // JSON sets: value -> its object (JSON text)
    mutable std::mutex mu;
    uint64_t full = 0;
    uint64_t no_value = 0;  // JSON entries without a value at value_key (passed over)
  };
  // The value's entry (or, with subdomain, its nearest parent domain's); null when absent.
  const std::pair<const std::string, uint16_t>* find(const Set& s, const uint8_t* data, uint32_t len, bool subdomain) const;
  void load(Set& s, const std::string& path, const std::string& name);
  void load_json(Set& s, const DatasetSpec& spec, const std::string& path);
  // Adds a loaded value (counted when the set is full).
  void keep(Set& s, const std::string& v, uint16_t rep);
  std::map<std::string, std::unique_ptr<Set>> sets_;
  struct Command {
    Set* set;
    DatasetSpec spec;
  };
  std::vector<Command> cmds_;
};

}  // namespace gaspp
