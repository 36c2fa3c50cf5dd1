#include "modules/detect/dataset.hpp"
#include "modules/detect/text.hpp"

#include <arpa/inet.h>
#include <nlohmann/json.hpp>
#include <openssl/evp.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace gaspp {

namespace {

// Strict base64 (RFC 4648 with padding, as the standard engine Suricata reads dataset files with):
// false on anything else. OpenSSL decodes; the checks are the strictness it does not have.
bool base64_strict(const std::string& in, std::string& out) {
  if (in.size() % 4) return false;
  size_t pad = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(in[i]);
    if (c == '=') {
      if (i + 2 < in.size()) return false;
      ++pad;
    } else if (pad || !(std::isalnum(c) || c == '+' || c == '/')) {
      return false;
    }
  }
  out.assign(in.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(in.data()), int(in.size()));
  if (n < 0) return false;
  out.resize(size_t(n) - pad);
  return true;
}

bool hex_bytes(const std::string& in, size_t n, std::string& out) {
  if (in.size() != 2 * n) return false;
  out.clear();
  for (size_t i = 0; i < in.size(); i += 2) {
    const auto nib = [](char c) {
      return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    };
    const int hi = nib(in[i]), lo = nib(in[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out.push_back(char(hi << 4 | lo));
  }
  return true;
}

// Suricata's strtok_r over ',': the non-empty parts, trimmed.
std::vector<std::string> option_parts(const std::string& value) {
  std::vector<std::string> parts = split_trimmed(value, ',');
  std::erase(parts, std::string());
  return parts;
}

// An option part "key value": the key and the value after the white space ("" without one).
std::pair<std::string, std::string> key_value(const std::string& part) {
  const size_t sp = part.find_first_of(" \t");
  return {part.substr(0, sp), sp == std::string::npos ? "" : trim(part.substr(sp))};
}

size_t digest_len(DatasetType t) { return t == DatasetType::md5 ? 16 : t == DatasetType::sha256 ? 32 : 0; }

// An address set's value from its text: ipv4 a dotted quad (4 bytes); ipv6 an IPv6 address (16
// bytes; an IPv4-mapped one, ::ffff:a.b.c.d, as the IPv4 address) or a dotted quad, an IPv4
// address stored as its 4 bytes then 12 zeros (Suricata's DatasetParseIpv6String).
bool address_value(DatasetType t, const std::string& text, std::string& out) {
  unsigned char b[16] = {};
  if (t == DatasetType::ipv4) {
    if (inet_pton(AF_INET, text.c_str(), b) != 1) return false;
    out.assign(reinterpret_cast<const char*>(b), 4);
    return true;
  }
  if (text.find(':') == std::string::npos) {
    if (inet_pton(AF_INET, text.c_str(), b) != 1) return false;
  } else {
    if (inet_pton(AF_INET6, text.c_str(), b) != 1) return false;
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (std::memcmp(b, mapped, 12) == 0) {
      std::memmove(b, b + 12, 4);
      std::memset(b + 4, 0, 12);
    }
  }
  out.assign(reinterpret_cast<const char*>(b), 16);
  return true;
}

bool address_type(DatasetType t) { return t == DatasetType::ipv4 || t == DatasetType::ipv6; }

// A loaded value's bytes from its text: "" when it decodes, else what it should have been.
const char* decode_value(DatasetType t, const std::string& text, bool base64, std::string& out) {
  if (address_type(t))
    return address_value(t, text, out) ? "" : t == DatasetType::ipv4 ? "an IPv4 address" : "an IP address";
  if (t != DatasetType::string) return hex_bytes(text, digest_len(t), out) ? "" : "a hex digest";
  if (!base64) {
    out = text;
    return "";
  }
  return base64_strict(text, out) ? "" : "base64";
}

// The key a buffer is looked up as in a set of type t: false when no value of the set can be it
// (a digest or an address of another length). An ipv6 set takes a 4-byte (IPv4) buffer padded.
bool lookup_key(DatasetType t, const uint8_t* data, uint32_t len, std::string& key) {
  const size_t want = t == DatasetType::ipv4 ? 4 : digest_len(t);
  if (want && len != want) return false;
  if (t == DatasetType::ipv6 && len != 4 && len != 16) return false;
  key.assign(reinterpret_cast<const char*>(data), len);
  if (t == DatasetType::ipv6 && len == 4) key.resize(16, '\0');
  return true;
}

// A set's `type` value for keyword kw (dataset or datarep): "" and t set, or "error:".
std::string parse_type(const char* kw, const std::string& val, DatasetType& t) {
  if (val == "string") t = DatasetType::string;
  else if (val == "md5") t = DatasetType::md5;
  else if (val == "sha256") t = DatasetType::sha256;
  else if (val == "ipv4") t = DatasetType::ipv4;
  else if (val == "ipv6" || val == "ip") t = DatasetType::ipv6;
  else return std::string("error:") + kw + ": bad type '" + val + "'";
  return "";
}

}  // namespace

std::string parse_dataset_option(const std::string& value, DatasetSpec& out) {
  out = DatasetSpec{};
  // Suricata's DetectDatasetParse: comma-separated, the command and the name first, then
  // "key value" pairs.
  const std::vector<std::string> parts = option_parts(value);
  if (parts.size() < 2) return "error:dataset needs a command and a name";
  const std::string& cmd = parts[0];
  if (cmd == "set") out.cmd = DatasetCmd::set;
  else if (cmd == "unset") out.cmd = DatasetCmd::unset;
  else if (cmd == "isset") out.cmd = DatasetCmd::isset;
  else if (cmd == "isnotset") out.cmd = DatasetCmd::isnotset;
  else return "error:dataset: unknown command '" + cmd + "'";
  out.name = parts[1];
  for (char c : out.name)
    if (std::isspace(static_cast<unsigned char>(c))) return "error:dataset: spaces in the name '" + out.name + "'";
  bool load_set = false, type_set = false, format_set = false;
  for (size_t i = 2; i < parts.size(); ++i) {
    const auto [key, val] = key_value(parts[i]);
    if (val.empty()) {
      if (key == "remove_key") {
        out.remove_key = true;
        continue;
      }
      return "error:dataset: '" + key + "' without a value";
    }
    if (key == "type") {
      if (type_set) return "error:dataset: type given twice";
      type_set = true;
      if (const std::string r = parse_type("dataset", val, out.type); !r.empty()) return r;
    } else if (key == "load") {
      if (load_set) return "error:dataset: load given twice";
      load_set = true;
      out.load = val;
    } else if (key == "match") {
      if (val != "subdomain") return "error:dataset: unknown match mode '" + val + "'";
      out.match_subdomain = true;
    } else if (key == "state" || key == "save") {
      return "skip:keyword dataset " + key;
    } else if (key == "format") {
      if (format_set) return "error:dataset: format given twice";
      format_set = true;
      if (val == "json") out.format = DatasetSpec::Format::json;
      else if (val == "ndjson") out.format = DatasetSpec::Format::ndjson;
      else if (val != "csv") return "error:dataset: unknown format '" + val + "'";
    } else if (key == "value_key") {
      out.value_key = val;
    } else if (key == "array_key") {
      out.array_key = val;
    } else if (key == "context_key") {
      out.context_key = val;
    } else if (key == "enrichment_key") {
      return "skip:keyword dataset " + key + " (json datasets)";
    } else if (key == "memcap" || key == "hashsize") {
      // Read and ignored: the set's limit is kDatasetMaxItems (dataset.hpp).
    } else {
      return "error:dataset: unknown option '" + key + "'";
    }
  }
  if (!type_set) return "error:dataset " + out.name + " without a type";
  const bool json = out.format != DatasetSpec::Format::csv;
  if (json && out.value_key.empty()) return "error:dataset " + out.name + ": format json/ndjson without value_key";
  if (!json && (!out.value_key.empty() || !out.array_key.empty() || out.remove_key))
    return "error:dataset " + out.name + ": value_key, array_key and remove_key need format json or ndjson";
  if (!out.context_key.empty() && !json) return "skip:keyword dataset context_key without format json (a csv set's context)";
  if (!out.array_key.empty() && out.format != DatasetSpec::Format::json)
    return "error:dataset " + out.name + ": array_key needs format json";
  return "";
}

std::string parse_datarep_option(const std::string& value, DatasetSpec& out) {
  out = DatasetSpec{};
  out.rep = true;
  const std::vector<std::string> parts = option_parts(value);
  if (parts.size() < 3) return "error:datarep needs a name, an operator and a value";
  out.name = parts[0];
  const std::string& op = parts[1];
  if (op == ">") out.rep_op = 0;
  else if (op == "<") out.rep_op = 1;
  else if (op == "==") out.rep_op = 2;
  else return "error:datarep: unknown operator '" + op + "'";
  char* end = nullptr;
  const unsigned long v = std::strtoul(parts[2].c_str(), &end, 10);
  if (parts[2].empty() || *end || v > 65535) return "error:datarep: bad value '" + parts[2] + "'";
  out.rep_value = uint16_t(v);
  bool type_set = false;
  for (size_t i = 3; i < parts.size(); ++i) {
    const auto [key, val] = key_value(parts[i]);
    if (val.empty()) return "error:datarep: '" + key + "' without a value";
    if (key == "type") {
      type_set = true;
      if (const std::string r = parse_type("datarep", val, out.type); !r.empty()) return r;
    } else if (key == "load") {
      out.load = val;
    } else if (key != "memcap" && key != "hashsize") {
      return "error:datarep: unknown option '" + key + "'";
    }
  }
  if (!type_set) return "error:datarep " + out.name + " without a type";
  return "";
}

std::string dataset_path(const std::string& load, const std::string& rule_file) {
  namespace fs = std::filesystem;
  const fs::path p = load;
  if (p.is_relative() && !rule_file.empty()) {
    const fs::path beside = fs::path(rule_file).parent_path() / p;
    if (fs::exists(beside)) return beside.string();
  }
  return load;
}

DatasetContexts& dataset_contexts() {
  thread_local DatasetContexts c;
  return c;
}

uint32_t Datasets::add(const DatasetSpec& spec, const std::string& rule_file) {
  auto it = sets_.find(spec.name);
  if (it == sets_.end()) {
    auto s = std::make_unique<Set>();
    s->type = spec.type;
    if (!spec.load.empty()) {
      if (spec.format == DatasetSpec::Format::csv) load(*s, dataset_path(spec.load, rule_file), spec.name);
      else load_json(*s, spec, dataset_path(spec.load, rule_file));
    }
    it = sets_.emplace(spec.name, std::move(s)).first;
  } else if (it->second->type != spec.type) {
    throw std::invalid_argument("dataset " + spec.name + " named with two types");
  }
  cmds_.push_back({it->second.get(), spec});
  return uint32_t(cmds_.size() - 1);
}

void Datasets::load(Set& s, const std::string& path, const std::string& name) {
  std::ifstream f(path);
  if (!f) throw std::invalid_argument("dataset " + name + ": cannot read " + path);
  std::string line, v;
  uint64_t n = 0;
  while (std::getline(f, line)) {
    ++n;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    // Suricata's ParseDatasets: empty lines and lines of more than two fields are passed over; the
    // second field is datarep's reputation.
    size_t commas = 0;
    for (char c : line) commas += c == ',';
    if (line.empty() || commas > 1) continue;
    const size_t comma = line.find(',');
    const std::string field = line.substr(0, comma);
    uint16_t rep = 0;
    if (comma != std::string::npos) {
      char* end = nullptr;
      const std::string r = trim(line.substr(comma + 1));
      const unsigned long x = std::strtoul(r.c_str(), &end, 10);
      if (r.empty() || *end || x > 65535)
        throw std::invalid_argument(path + ":" + std::to_string(n) + ": dataset " + name + ": bad reputation '" + r + "'");
      rep = uint16_t(x);
    }
    if (const char* want = decode_value(s.type, field, true, v); *want)
      throw std::invalid_argument(path + ":" + std::to_string(n) + ": dataset " + name + ": '" + field + "' is not " +
                                  want);
    keep(s, v, rep);
  }
}

void Datasets::keep(Set& s, const std::string& v, uint16_t rep) {
  if (s.items.size() >= kDatasetMaxItems && !s.items.count(v)) {
    ++s.full;
    return;
  }
  s.items.try_emplace(v, rep);  // a value given twice keeps its first reputation (Suricata's DatasetAdd)
}

namespace {

// The node at a dotted path ("ioc.host") of an object, or null.
const nlohmann::json* json_at(const nlohmann::json& o, const std::string& path) {
  const nlohmann::json* n = &o;
  for (const std::string& part : split_trimmed(path, '.')) {
    if (!n->is_object()) return nullptr;
    const auto it = n->find(part);
    if (it == n->end()) return nullptr;
    n = &*it;
  }
  return n;
}

// Removes the node at a dotted path (remove_key).
void json_erase(nlohmann::json& o, const std::string& path) {
  const std::vector<std::string> parts = split_trimmed(path, '.');
  nlohmann::json* n = &o;
  for (size_t k = 0; k + 1 < parts.size(); ++k) {
    if (!n->is_object() || !n->contains(parts[k])) return;
    n = &(*n)[parts[k]];
  }
  if (n->is_object()) n->erase(parts.back());
}

}  // namespace

void Datasets::load_json(Set& s, const DatasetSpec& spec, const std::string& path) {
  std::ifstream f(path);
  if (!f) throw std::invalid_argument("dataset " + spec.name + ": cannot read " + path);
  const auto add_object = [&](const nlohmann::json& o, const std::string& where) {
    if (!o.is_object()) throw std::invalid_argument(where + ": dataset " + spec.name + ": an entry is not a JSON object");
    const nlohmann::json* val = json_at(o, spec.value_key);
    if (!val) {
      // Suricata passes such an entry over (a file may mix shapes): counted (dataset_entries_without_value).
      ++s.no_value;
      return;
    }
    if (!val->is_string())
      throw std::invalid_argument(where + ": dataset " + spec.name + ": the value at '" + spec.value_key +
                                  "' is not a string");
    const std::string text = val->get<std::string>();
    std::string v;
    if (const char* want = decode_value(s.type, text, false, v); *want)
      throw std::invalid_argument(where + ": dataset " + spec.name + ": '" + text + "' is not " + want);
    nlohmann::json ctx = o;
    if (spec.remove_key) json_erase(ctx, spec.value_key);
    keep(s, v, 0);
    if (s.items.count(v)) s.context.try_emplace(v, ctx.dump());  // and its first object
  };
  if (spec.format == DatasetSpec::Format::ndjson) {
    std::string line;
    for (uint64_t n = 1; std::getline(f, line); ++n) {
      if (trim(line).empty()) continue;
      const nlohmann::json o = nlohmann::json::parse(line, nullptr, false);
      if (o.is_discarded()) throw std::invalid_argument(path + ":" + std::to_string(n) + ": dataset " + spec.name + ": not JSON");
      add_object(o, path + ":" + std::to_string(n));
    }
    return;
  }
  const nlohmann::json top = nlohmann::json::parse(f, nullptr, false);
  if (top.is_discarded()) throw std::invalid_argument(path + ": dataset " + spec.name + ": not JSON");
  const nlohmann::json* arr = spec.array_key.empty() ? &top : json_at(top, spec.array_key);
  if (!arr || !arr->is_array())
    throw std::invalid_argument(path + ": dataset " + spec.name + ": no JSON array" +
                                (spec.array_key.empty() ? std::string() : " at '" + spec.array_key + "'"));
  for (size_t k = 0; k < arr->size(); ++k) add_object((*arr)[k], path + ": entry " + std::to_string(k + 1));
}

const std::pair<const std::string, uint16_t>* Datasets::find(const Set& s, const uint8_t* data, uint32_t len,
                                                             bool subdomain) const {
  std::string key;
  if (!lookup_key(s.type, data, len, key)) return nullptr;
  auto it = s.items.find(key);
  if (it != s.items.end()) return &*it;
  if (!subdomain || s.type != DatasetType::string) return nullptr;
  // Suricata's DatasetLookupSubdomain: each suffix starting at a '.' that follows another byte.
  int lookups = 0;
  for (uint32_t i = 1; i < len; ++i)
    if (data[i] == '.' && data[i - 1] != '.') {
      if (++lookups > 126) break;
      it = s.items.find(std::string(reinterpret_cast<const char*>(data + i), len - i));
      if (it != s.items.end()) return &*it;
    }
  return nullptr;
}

bool Datasets::match(uint32_t id, const uint8_t* data, uint32_t len) {
  const Command& c = cmds_[id];
  Set& s = *c.set;
  if (!data || len == 0) return false;
  std::lock_guard<std::mutex> lock(s.mu);
  if (c.spec.rep) {
    const auto* e = find(s, data, len, false);
    if (!e) return false;
    const uint16_t r = e->second;
    return c.spec.rep_op == 0 ? r > c.spec.rep_value : c.spec.rep_op == 1 ? r < c.spec.rep_value : r == c.spec.rep_value;
  }
  switch (c.spec.cmd) {
    case DatasetCmd::isset: {
      const auto* e = find(s, data, len, c.spec.match_subdomain);
      if (e && !c.spec.context_key.empty() && dataset_contexts().active) {
        const auto ctx = s.context.find(e->first);
        if (ctx != s.context.end()) dataset_contexts().hits.emplace_back(c.spec.context_key, ctx->second);
      }
      return e != nullptr;
    }
    case DatasetCmd::isnotset: return find(s, data, len, c.spec.match_subdomain) == nullptr;
    case DatasetCmd::set: {
      std::string key;
      if (!lookup_key(s.type, data, len, key) || s.items.count(key)) return false;
      if (s.items.size() >= kDatasetMaxItems) {
        ++s.full;
        return false;
      }
      s.items.emplace(std::move(key), 0);
      return true;
    }
    case DatasetCmd::unset: {
      std::string key;
      if (!lookup_key(s.type, data, len, key)) return false;
      s.context.erase(key);
      return s.items.erase(key) > 0;
    }
  }
  return false;
}

uint64_t Datasets::full() const {
  uint64_t n = 0;
  for (const auto& [name, s] : sets_) {
    std::lock_guard<std::mutex> lock(s->mu);
    n += s->full;
  }
  return n;
}

uint64_t Datasets::entries_without_value() const {
  uint64_t n = 0;
  for (const auto& [name, s] : sets_) n += s->no_value;  // written only while loading
  return n;
}

uint64_t Datasets::values() const {
  uint64_t n = 0;
  for (const auto& [name, s] : sets_) {
    std::lock_guard<std::mutex> lock(s->mu);
    n += s->items.size();
  }
  return n;
}

}  // namespace gaspp
