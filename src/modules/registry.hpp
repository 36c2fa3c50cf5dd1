// modules/registry.hpp — every module type gaspp is built with. A module is compiled into the
// pipeline (both backends instantiate its stage from this list): to add one, include its header
// and add it to GASPP_MODULE_TYPES. Names (M::kName) must be unique.
#pragma once
#include "modules/app_udp/app_udp.hpp"
#include "modules/examples/pass.hpp"
#include "modules/examples/probe.hpp"
#include "modules/examples/stream_match.hpp"
#include "modules/detect/detect.hpp"
#include "modules/firewall/firewall.hpp"

#define GASPP_MODULE_TYPES(X) \
  X(FirewallModule)           \
  X(DetectModule)             \
  X(PassModule)               \
  X(ProbeModule)               \
  X(StreamMatchModule)        \
  X(AppUdpModule)
