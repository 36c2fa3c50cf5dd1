// core/config.hpp — the YAML configuration file (`gaspp -c FILE`): which modules run, in which
// order, with which options, the flow classes, scheduling and a few pipeline settings. Without a
// file the built-in defaults apply (no modules; `gaspp -r file` runs decode, flows, reassembly).
// Command-line flags given after -c override its settings and add modules after its modules.
//
//   backend: auto                # auto | cuda | cpu
//   batch: 65536                 # packets per batch
//   threads: 0                   # CPU backend threads (0: all)
//   schedule: auto               # on | off | auto: regroup packets between module stages
//   slice: auto                  # on | off | auto: header-only slicing on CUDA (docs/usage.md)
//   gather_sms: 0                # CUDA slicing: SMs of the gather's own (0: smallest; -1: none)
//   vars:                        # Suricata's names; given to the firewall
//     address-groups:
//       HOME_NET: "[10.0.0.0/8,192.168.0.0/16]"
//     port-groups:
//       HTTP_PORTS: "[80,8080]"
//   modules:                     # in pipeline order
//     - name: firewall
//       rules: [/etc/gaspp/drop.rules, /etc/gaspp/local.rules]
//     - name: probe
//       dport: 53
//       action: to_dump
//   classes:                     # optional: flow classes with their own module order
//     - [0, 1]
//     - [1, 0]
//
// Errors name the file, line and column (std::runtime_error); an unknown key is an error, not
// ignored.
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gaspp/module.hpp"

namespace gaspp {

struct FileConfig {
  std::optional<std::string> backend;
  std::optional<uint32_t> batch;
  std::optional<int> threads;
  std::optional<std::string> schedule;
  std::optional<std::string> slice;
  std::optional<int> gather_sms;
  std::vector<std::pair<std::string, ModuleOptions>> modules;
  std::vector<std::vector<uint16_t>> classes;
};

FileConfig load_config(const std::string& path);

}  // namespace gaspp
