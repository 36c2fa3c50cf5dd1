// tools/gen.cpp — `gaspp gen`, and the command-line error format the gaspp command shares.
#include <cstdio>
#include <string>

#include "tools/gen/generator.hpp"
#include "tools/cli.hpp"

namespace gaspp {

int cli_error(const CLI::App& app, const CLI::ParseError& e, const char* who) {
  if (e.get_exit_code() == 0) {  // --help
    std::fputs(app.help().c_str(), stdout);
    return 0;
  }
  std::fprintf(stderr, "%s: %s (see --help)\n", who, e.what());
  return 1;
}

int cmd_gen(int argc, char** argv) {
  GenConfig g;
  std::string out, mode;
  uint32_t size = 0;
  CLI::App app{"Writes a synthetic capture (docs/usage.md, tools/gen/generator.hpp).", "gaspp gen"};
  app.add_option("-o", out, "the capture to write")->required()->type_name("FILE");
  app.add_option("--mode", mode, "fixed, mix or http")->check(CLI::IsMember({"fixed", "mix", "http"}));
  app.add_option("--size", size, "frame size of fixed mode (implies --mode fixed)")->check(CLI::Range(60, 1514));
  app.add_option("--packets", g.packets, "packets the traffic model produces")->check(CLI::Range(uint64_t(1), uint64_t(1) << 40));
  app.add_option("--flows", g.flows, "flows")->check(CLI::Range(1u, 1u << 24));
  app.add_option("--seed", g.seed, "random seed");
  app.add_option("--reorder", g.reorder, "share of packets swapped with the next")->check(CLI::Range(0.0, 1.0));
  app.add_option("--duplicate", g.duplicate, "share of packets sent twice")->check(CLI::Range(0.0, 1.0));
  app.add_option("--loss", g.loss, "share of packets left out")->check(CLI::Range(0.0, 1.0));
  app.add_option("--ipv6", g.ipv6_share, "share of IPv6 flows")->check(CLI::Range(0.0, 1.0));
  app.add_option("--vlan", g.vlan_share, "share of 802.1Q-tagged flows")->check(CLI::Range(0.0, 1.0));
  app.add_option("--plant", g.plant, "a string planted in payloads");
  app.add_option("--plant-rate", g.plant_rate, "share of payloads that get it")->check(CLI::Range(0.0, 1.0));
  try {
    app.parse(argc - 1, argv + 1);
  } catch (const CLI::ParseError& e) {
    return cli_error(app, e, "gaspp gen");
  }
  if (mode == "fixed") g.mode = GenMode::fixed;
  else if (mode == "mix") g.mode = GenMode::mix;
  else if (mode == "http") g.mode = GenMode::http;
  if (size) {
    g.size = size;
    g.mode = GenMode::fixed;
  }
  try {
    const uint64_t n = generate_pcap(g, out);
    std::fprintf(stderr, "gaspp gen: wrote %llu packets to %s\n", (unsigned long long)n, out.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gaspp gen: %s\n", e.what());
    return 1;
  }
  return 0;
}

}  // namespace gaspp
