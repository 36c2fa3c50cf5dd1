// output/packet_tx_ring.cpp — see output/packet_tx_ring.hpp.
#include "output/packet_tx_ring.hpp"

#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "capture/capture_file.hpp"

namespace gaspp {
namespace {

// Where a frame's bytes start in its slot: after the slot header, as the kernel reads them
// (TPACKET2_HDRLEN less the address it leaves room for).
constexpr uint32_t kDataOffset = TPACKET_ALIGN(sizeof(tpacket2_hdr));

[[noreturn]] void fail(const std::string& iface, const std::string& what) {
  throw CaptureError("interface " + iface + ": cannot send (" + what + ")");
}

tpacket2_hdr* hdr(uint8_t* p) { return reinterpret_cast<tpacket2_hdr*>(p); }
uint32_t status_of(uint8_t* p) { return __atomic_load_n(&hdr(p)->tp_status, __ATOMIC_ACQUIRE); }
void set_status(uint8_t* p, uint32_t s) { __atomic_store_n(&hdr(p)->tp_status, s, __ATOMIC_RELEASE); }

}  // namespace

PacketTxRing::PacketTxRing(const TxRingOptions& opt) : opt_(opt) {
  const std::string& name = opt_.iface;
  if (opt_.frame_size && (opt_.frame_size < 256 || (opt_.frame_size & (opt_.frame_size - 1))))
    fail(name, "slot size " + std::to_string(opt_.frame_size) + " is not a power of two of at least 256");
  if (opt_.frame_count == 0) fail(name, "the ring needs at least one slot");
  const unsigned ifindex = if_nametoindex(name.c_str());
  if (ifindex == 0) fail(name, "no such interface");
  fd_ = socket(AF_PACKET, SOCK_RAW, 0);  // protocol 0: it receives nothing
  if (fd_ < 0) fail(name, std::string("an AF_PACKET socket: ") + std::strerror(errno) + "; sending needs CAP_NET_RAW");
  try {
    ifreq ifr{};
    std::strncpy(ifr.ifr_name, name.c_str(), IFNAMSIZ - 1);
    if (ioctl(fd_, SIOCGIFMTU, &ifr) < 0) fail(name, std::string("its MTU: ") + std::strerror(errno));
    max_frame_ = uint32_t(ifr.ifr_mtu) + uint32_t(sizeof(ether_header));
    if (opt_.frame_size == 0) {  // the interface's largest frame, tagged, fits a slot (up to 64 KiB)
      opt_.frame_size = 256;
      while (opt_.frame_size < max_frame_ + 4 + kDataOffset && opt_.frame_size < (1u << 16)) opt_.frame_size *= 2;
    }
    int v = TPACKET_V2;
    if (setsockopt(fd_, SOL_PACKET, PACKET_VERSION, &v, sizeof v) < 0) fail(name, std::string("TPACKET_V2: ") + std::strerror(errno));
    // Frames the kernel cannot build are skipped, not left blocking the ring; the sizes it refuses
    // are checked before queueing (too_large), so none should be.
    int loss = 1;
    if (setsockopt(fd_, SOL_PACKET, PACKET_LOSS, &loss, sizeof loss) < 0) fail(name, std::string("PACKET_LOSS: ") + std::strerror(errno));
    if (opt_.qdisc_bypass) {
      int one = 1;
      if (setsockopt(fd_, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof one) < 0)
        fail(name, std::string("PACKET_QDISC_BYPASS: ") + std::strerror(errno));
    }
    const uint32_t block = std::max<uint32_t>(opt_.frame_size, 1u << 16);
    const uint32_t per_block = block / opt_.frame_size;
    tpacket_req req{};
    req.tp_block_size = block;
    req.tp_block_nr = (opt_.frame_count + per_block - 1) / per_block;
    req.tp_frame_size = opt_.frame_size;
    req.tp_frame_nr = req.tp_block_nr * per_block;
    if (setsockopt(fd_, SOL_PACKET, PACKET_TX_RING, &req, sizeof req) < 0)
      fail(name, "a transmit ring of " + std::to_string(req.tp_frame_nr) + " slots: " + std::strerror(errno));
    opt_.frame_count = req.tp_frame_nr;
    ring_bytes_ = size_t(req.tp_block_size) * req.tp_block_nr;
    void* m = mmap(nullptr, ring_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    if (m == MAP_FAILED) fail(name, std::string("mapping the ring: ") + std::strerror(errno));
    ring_ = static_cast<uint8_t*>(m);
    sockaddr_ll sll{};
    sll.sll_family = AF_PACKET;
    sll.sll_protocol = 0;
    sll.sll_ifindex = int(ifindex);
    if (bind(fd_, reinterpret_cast<sockaddr*>(&sll), sizeof sll) < 0) fail(name, std::string("bind: ") + std::strerror(errno));
  } catch (...) {
    if (ring_) munmap(ring_, ring_bytes_);
    close(fd_);
    throw;
  }
}

PacketTxRing::~PacketTxRing() {
  try {
    flush();
  } catch (...) {
  }
  if (ring_) munmap(ring_, ring_bytes_);
  if (fd_ >= 0) close(fd_);
  if (alone_fd_ >= 0) close(alone_fd_);
}

void PacketTxRing::queue(const uint8_t* frame, uint32_t len) {
  const uint16_t type = len >= sizeof(ether_header) ? uint16_t(frame[12] << 8 | frame[13]) : 0;
  const bool tagged = type == 0x8100 || type == 0x88a8;
  if (len < sizeof(ether_header) || len > max_frame_ + (tagged ? 4u : 0u)) {
    ++too_large_;
    return;
  }
  if (len > opt_.frame_size - kDataOffset) {
    send_alone(frame, len);
    return;
  }
  if (pending_ == opt_.frame_count) flush();
  uint8_t* s = slot(head_);
  if (status_of(s) != TP_STATUS_AVAILABLE) {
    // Not ours though nothing of ours is pending there (the kernel has not given it back): never
    // write into a slot the kernel owns; the frame is counted as not sent.
    flush();
    if (status_of(s) != TP_STATUS_AVAILABLE) {
      ++send_errors_;
      return;
    }
  }
  std::memcpy(s + kDataOffset, frame, len);
  hdr(s)->tp_len = len;
  set_status(s, TP_STATUS_SEND_REQUEST);
  head_ = (head_ + 1) % opt_.frame_count;
  ++pending_;
}

void PacketTxRing::flush() {
  const uint32_t n = opt_.frame_count;
  uint32_t first = (head_ + n - pending_) % n;
  uint32_t stalls = 0;
  while (pending_) {
    const ssize_t r = send(fd_, nullptr, 0, 0);  // blocking: returns when what it took has left
    const int err = r < 0 ? errno : 0;
    uint32_t done = 0;  // slots the kernel has finished with, in ring order
    while (done < pending_ && status_of(slot((first + done) % n)) == TP_STATUS_AVAILABLE) ++done;
    // A failed call stopped at one frame it could not transmit (its slot is free again): lost.
    const uint64_t lost = (r < 0 && err != EINTR && err != EAGAIN && done) ? 1 : 0;
    send_errors_ += lost;
    sent_ += done - lost;
    first = (first + done) % n;
    pending_ -= done;
    if (!pending_) break;
    if (done) {
      stalls = 0;
      continue;
    }
    if (r < 0 && err == EINTR) continue;
    if (++stalls < 3) continue;
    // The interface takes nothing (down, or gone): what is left is lost. The kernel resumes at the
    // first slot it did not take, so the ring starts over there.
    for (uint32_t k = 0; k < pending_; ++k) set_status(slot((first + k) % n), TP_STATUS_AVAILABLE);
    send_errors_ += pending_;
    pending_ = 0;
    head_ = first;
  }
}

void PacketTxRing::send_alone(const uint8_t* frame, uint32_t len) {
  flush();  // the frames queued before it leave first
  // A mapped transmit ring takes every send() on its socket, so a frame longer than a slot goes
  // out of a plain socket bound to the same interface.
  if (alone_fd_ < 0) {
    alone_fd_ = socket(AF_PACKET, SOCK_RAW, 0);
    sockaddr_ll sll{};
    sll.sll_family = AF_PACKET;
    sll.sll_ifindex = int(if_nametoindex(opt_.iface.c_str()));
    if (alone_fd_ >= 0 && bind(alone_fd_, reinterpret_cast<sockaddr*>(&sll), sizeof sll) < 0) {
      close(alone_fd_);
      alone_fd_ = -1;
    }
  }
  const bool ok = alone_fd_ >= 0 && send(alone_fd_, frame, len, 0) == ssize_t(len);
  ok ? ++sent_ : ++send_errors_;
}

}  // namespace gaspp
