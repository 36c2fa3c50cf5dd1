// output/inline_forwarder.cpp — see output/inline_forwarder.hpp.
#include "output/inline_forwarder.hpp"

#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "capture/capture_file.hpp"

namespace gaspp {

InlineForwarder::InlineForwarder(const std::vector<std::string>& ifaces, uint32_t rings) : ifaces_(ifaces), rings_(rings) {
  if (ifaces_.size() != 2) throw CaptureError("inline: two interfaces, not " + std::to_string(ifaces_.size()));
  for (const std::string& name : ifaces_) {
    const unsigned ifindex = if_nametoindex(name.c_str());
    const int fd = ifindex ? socket(AF_PACKET, SOCK_RAW, 0) : -1;
    sockaddr_ll sll{};
    sll.sll_family = AF_PACKET;
    sll.sll_protocol = 0;  // sends only
    sll.sll_ifindex = int(ifindex);
    if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&sll), sizeof sll) < 0) {
      const std::string why = ifindex ? std::strerror(errno) : "no such interface";
      if (fd >= 0) close(fd);
      for (int f : fd_) close(f);
      throw CaptureError("inline: interface " + name + ": cannot open it for sending (" + why + ")");
    }
    fd_.push_back(fd);
  }
}

InlineForwarder::~InlineForwarder() {
  for (int f : fd_) close(f);
}

void InlineForwarder::forward(const PacketBatch& b) {
  const int out = fd_[b.source / rings_ == 0 ? 1 : 0];
  for (uint32_t i = 0; i < b.count; ++i) {
    if (b.is_reassembled(i)) continue;  // its fragments are the packets on the wire
    if (b.record_verdict(i) & kVerdictDrop) {
      ++dropped_;
      continue;
    }
    const uint8_t* r = b.h_span + b.h_rec_off[i];
    const uint32_t len = read_record_header(r, b.fmt).cap_len;
    if (send(out, r + kRecordHeaderBytes, len, 0) == ssize_t(len)) ++forwarded_;
    else ++send_errors_;
  }
}

}  // namespace gaspp
