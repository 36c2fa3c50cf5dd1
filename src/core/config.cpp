// core/config.cpp — see config.hpp.
#include "core/config.hpp"

#include <yaml-cpp/yaml.h>

#include <stdexcept>

namespace gaspp {
namespace {

[[noreturn]] void fail(const std::string& path, const YAML::Node& n, const std::string& why) {
  const YAML::Mark m = n.Mark();
  throw std::runtime_error(path + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1) + ": " + why);
}

std::string scalar(const std::string& path, const YAML::Node& n, const std::string& key) {
  if (!n.IsScalar()) fail(path, n, key + ": expected a value");
  return n.as<std::string>();
}

uint64_t number(const std::string& path, const YAML::Node& n, const std::string& key, uint64_t max) {
  const std::string s = scalar(path, n, key);
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 0);
  if (s.empty() || *end || s[0] == '-' || v > max) fail(path, n, key + ": expected 0.." + std::to_string(max) + ", got '" + s + "'");
  return v;
}

// A module option: a scalar, or a list of scalars (joined by commas, as rule file lists are).
std::string option_text(const std::string& path, const YAML::Node& n, const std::string& key) {
  if (n.IsScalar()) return n.as<std::string>();
  if (!n.IsSequence()) fail(path, n, key + ": expected a value or a list of values");
  std::string s;
  for (const auto& x : n) s += (s.empty() ? "" : ",") + scalar(path, x, key);
  return s;
}

}  // namespace

FileConfig load_config(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw std::runtime_error(path + ": cannot be read");
  } catch (const YAML::Exception& e) {
    throw std::runtime_error(path + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                             ": " + e.msg);
  }
  FileConfig c;
  if (root.IsNull()) return c;
  if (!root.IsMap()) fail(path, root, "expected a map of settings");
  ModuleOptions vars;
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    const YAML::Node& v = kv.second;
    if (key == "backend") c.backend = scalar(path, v, key);
    else if (key == "batch") c.batch = uint32_t(number(path, v, key, 1u << 24));
    else if (key == "threads") c.threads = int(number(path, v, key, 4096));
    else if (key == "schedule") {
      c.schedule = scalar(path, v, key);
      if (*c.schedule != "on" && *c.schedule != "off" && *c.schedule != "auto") fail(path, v, "schedule: on, off or auto");
    } else if (key == "slice") {
      c.slice = scalar(path, v, key);
      if (*c.slice != "on" && *c.slice != "off" && *c.slice != "auto") fail(path, v, "slice: on, off or auto");
    } else if (key == "gather_sms") {
      const std::string t = scalar(path, v, key);
      c.gather_sms = t == "-1" ? -1 : int(number(path, v, key, 4096));
    } else if (key == "vars") {
      if (!v.IsMap()) fail(path, v, "vars: expected address-groups and port-groups");
      for (const auto& g : v) {
        const std::string group = g.first.as<std::string>();
        if (group != "address-groups" && group != "port-groups") fail(path, g.first, "vars: address-groups or port-groups, not '" + group + "'");
        if (!g.second.IsMap()) fail(path, g.second, group + ": expected NAME: value");
        for (const auto& var : g.second)
          vars[(group == "address-groups" ? "address." : "port.") + var.first.as<std::string>()] =
              scalar(path, var.second, var.first.as<std::string>());
      }
    } else if (key == "modules") {
      if (!v.IsSequence()) fail(path, v, "modules: expected a list");
      for (const auto& m : v) {
        if (!m.IsMap() || !m["name"]) fail(path, m, "a module needs a name");
        std::pair<std::string, ModuleOptions> spec{scalar(path, m["name"], "name"), {}};
        for (const auto& o : m) {
          const std::string k = o.first.as<std::string>();
          if (k != "name") spec.second[k] = option_text(path, o.second, k);
        }
        c.modules.push_back(spec);
      }
    } else if (key == "classes") {
      if (!v.IsSequence()) fail(path, v, "classes: expected a list of module orders");
      for (const auto& order : v) {
        if (!order.IsSequence()) fail(path, order, "a class is a list of module numbers, e.g. [1, 0]");
        std::vector<uint16_t> o;
        for (const auto& x : order) o.push_back(uint16_t(number(path, x, "classes", 255)));
        c.classes.push_back(o);
      }
    } else {
      fail(path, kv.first, "unknown setting '" + key + "' (backend, batch, threads, schedule, slice, gather_sms, vars, modules, classes)");
    }
  }
  for (auto& [name, opt] : c.modules)
    if (name == "firewall")
      for (auto& [k, val] : vars) opt.emplace(k, val);
  return c;
}

}  // namespace gaspp
