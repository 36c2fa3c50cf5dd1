// capture/af_packet_source.cpp — see capture/af_packet_source.hpp.
#include "capture/af_packet_source.hpp"

#include <arpa/inet.h>
#include <linux/filter.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <pcap/pcap.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <ctime>
#include <cerrno>
#include <cstring>

#include "capture/capture_file.hpp"
#include "capture/filtered_source.hpp"

namespace gaspp {
namespace {

// Room the socket keeps before each frame: the record header, and 4 bytes to put a VLAN tag back.
constexpr uint32_t kReserve = uint32_t(kRecordHeaderBytes) + 4;

[[noreturn]] void fail(const std::string& iface, const std::string& what) {
  throw CaptureError("interface " + iface + ": " + what);
}
std::string errno_text() { return std::strerror(errno); }

void put_u32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }  // host order (AfPacketSource::kFormat)

int fanout_mode(const std::string& iface, const std::string& cluster) {
  if (cluster == "cluster_flow") return PACKET_FANOUT_HASH;
  if (cluster == "cluster_cpu") return PACKET_FANOUT_CPU;
  if (cluster == "cluster_qm") return PACKET_FANOUT_QM;
  fail(iface, "unknown cluster type '" + cluster + "' (cluster_flow, cluster_cpu or cluster_qm)");
}

uint64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

}  // namespace

AfPacketSource::AfPacketSource(const AfPacketOptions& opt) : opt_(opt) {
  const std::string& name = opt_.iface;
  const long page = sysconf(_SC_PAGESIZE);
  if (opt_.block_size == 0 || (opt_.block_size & (opt_.block_size - 1)) || opt_.block_size % uint32_t(page))
    fail(name, "block size " + std::to_string(opt_.block_size) + " is not a power of two multiple of the page size");
  if (opt_.block_count == 0) fail(name, "the ring needs at least one block");
  if (opt_.snaplen < 64) fail(name, "snap length " + std::to_string(opt_.snaplen) + " is below 64 bytes");
  const unsigned ifindex = if_nametoindex(name.c_str());
  if (ifindex == 0) fail(name, "no such interface (" + errno_text() + ")");
  // Protocol 0: nothing arrives before the filter is attached and the socket bound.
  fd_ = socket(AF_PACKET, SOCK_RAW, 0);
  if (fd_ < 0) fail(name, "cannot open an AF_PACKET socket (" + errno_text() + "; capture needs CAP_NET_RAW)");
  try {
    // The link type the frames come in.
    ifreq ifr{};
    std::strncpy(ifr.ifr_name, name.c_str(), IFNAMSIZ - 1);
    if (ioctl(fd_, SIOCGIFHWADDR, &ifr) < 0) fail(name, "cannot read its hardware type (" + errno_text() + ")");
    const int hw = ifr.ifr_hwaddr.sa_family;
    if (hw != ARPHRD_ETHER && hw != ARPHRD_LOOPBACK)
      fail(name, "hardware type " + std::to_string(hw) + " is not Ethernet (only Ethernet-framed interfaces are read)");
    raw_link_ = 1;
    link_ = LinkType::ethernet;
    if (opt_.version != 2 && opt_.version != 3) fail(name, "TPACKET_V" + std::to_string(opt_.version) + ": only 2 and 3");
    int v = opt_.version == 3 ? TPACKET_V3 : TPACKET_V2;
    if (setsockopt(fd_, SOL_PACKET, PACKET_VERSION, &v, sizeof v) < 0)
      fail(name, "TPACKET_V" + std::to_string(opt_.version) + ": " + errno_text());
    int reserve = int(kReserve);
    if (setsockopt(fd_, SOL_PACKET, PACKET_RESERVE, &reserve, sizeof reserve) < 0)
      fail(name, "PACKET_RESERVE: " + errno_text());
    if (!opt_.filter.empty()) {
      bpf_program prog{};
      const std::string why = compile_filter(opt_.filter, link_, prog);
      if (!why.empty()) fail(name, "filter '" + opt_.filter + "': " + why);
      sock_fprog fp{};
      fp.len = uint16_t(prog.bf_len);
      fp.filter = reinterpret_cast<sock_filter*>(prog.bf_insns);
      const int rc = setsockopt(fd_, SOL_SOCKET, SO_ATTACH_FILTER, &fp, sizeof fp);
      pcap_freecode(&prog);
      if (rc < 0) fail(name, "cannot attach the filter '" + opt_.filter + "' (" + errno_text() + ")");
    }
    tpacket_req3 req{};
    req.tp_block_size = opt_.block_size;
    req.tp_block_nr = opt_.block_count;
    req.tp_frame_size = TPACKET_ALIGNMENT << 7;  // only sizes the frame count for V3
    if (opt_.version == 2) {
      if (opt_.frame_size == 0) {  // the largest frame, tagged, behind the slot header and the reserve
        if (ioctl(fd_, SIOCGIFMTU, &ifr) < 0) fail(name, "cannot read its MTU (" + errno_text() + ")");
        const uint32_t need = uint32_t(TPACKET2_HDRLEN) + kReserve + 16 + uint32_t(ifr.ifr_mtu) + 14 + 4;
        opt_.frame_size = 256;
        while (opt_.frame_size < need && opt_.frame_size < opt_.block_size) opt_.frame_size *= 2;
      }
      if (opt_.frame_size < 256 || (opt_.frame_size & (opt_.frame_size - 1)) || opt_.frame_size > opt_.block_size)
        fail(name, "slot size " + std::to_string(opt_.frame_size) + " is not a power of two from 256 to the block size");
      req.tp_frame_size = opt_.frame_size;
    }
    req.tp_frame_nr = uint32_t(uint64_t(opt_.block_size) / req.tp_frame_size * opt_.block_count);
    frames_ = req.tp_frame_nr;
    req.tp_retire_blk_tov = opt_.version == 3 ? opt_.block_timeout_ms : 0;
    req.tp_feature_req_word = 0;
    // V2 reads the first fields of tpacket_req3, which are tpacket_req's.
    if (setsockopt(fd_, SOL_PACKET, PACKET_RX_RING, &req, opt_.version == 3 ? sizeof req : sizeof(tpacket_req)) < 0)
      fail(name, "the kernel refused a ring of " + std::to_string(opt_.block_count) + " blocks of " +
                     std::to_string(opt_.block_size) + " bytes (" + errno_text() + ")");
    ring_bytes_ = size_t(opt_.block_size) * opt_.block_count;
    void* m = mmap(nullptr, ring_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    if (m == MAP_FAILED) fail(name, "cannot map the ring (" + errno_text() + ")");
    ring_ = static_cast<uint8_t*>(m);
    sockaddr_ll sll{};
    sll.sll_family = AF_PACKET;
    sll.sll_protocol = htons(ETH_P_ALL);
    sll.sll_ifindex = int(ifindex);
    if (bind(fd_, reinterpret_cast<sockaddr*>(&sll), sizeof sll) < 0) fail(name, "cannot bind (" + errno_text() + ")");
    if (opt_.fanout_group >= 0) {
      const int arg = (opt_.fanout_group & 0xffff) | (fanout_mode(name, opt_.cluster_type) << 16);
      if (setsockopt(fd_, SOL_PACKET, PACKET_FANOUT, &arg, sizeof arg) < 0)
        fail(name, "cannot join fanout group " + std::to_string(opt_.fanout_group) + " (" + errno_text() + ")");
    }
    if (opt_.ignore_outgoing) {
      int one = 1;
      if (setsockopt(fd_, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one) < 0)
        fail(name, "PACKET_IGNORE_OUTGOING: " + errno_text());
    }
    read_kernel_stats();  // counts from here on
    kernel_packets_ = kernel_drops_ = 0;
  } catch (...) {
    if (ring_) munmap(ring_, ring_bytes_);
    close(fd_);
    throw;
  }
}

AfPacketSource::~AfPacketSource() {
  if (ring_) munmap(ring_, ring_bytes_);
  if (fd_ >= 0) close(fd_);
}

void AfPacketSource::make_record(SourceRecord& r, uint8_t* frame, uint32_t cap, uint32_t wire, uint32_t sec,
                                 uint32_t nsec, uint32_t status, uint16_t tci, uint16_t tpid) {
  if ((status & TP_STATUS_VLAN_VALID) && cap >= 12) {
    // The tag the kernel took out goes back where it was: the MAC addresses move 4 bytes into the
    // reserved room, the tag follows them.
    if (!(status & TP_STATUS_VLAN_TPID_VALID)) tpid = uint16_t(ETH_P_8021Q);
    std::memmove(frame - 4, frame, 12);
    frame -= 4;
    frame[12] = uint8_t(tpid >> 8);
    frame[13] = uint8_t(tpid);
    frame[14] = uint8_t(tci >> 8);
    frame[15] = uint8_t(tci);
    cap += 4;
    wire += 4;
    ++vlan_restored_;
  }
  if (cap > opt_.snaplen) cap = opt_.snaplen;  // the rest is cut, as tcpdump -s does (wire stays)
  uint8_t* rec = frame - kRecordHeaderBytes;
  put_u32(rec, sec);
  put_u32(rec + 4, nsec);
  put_u32(rec + 8, cap);
  put_u32(rec + 12, wire);
  r.rec = rec;
  r.seq = seq_++;
  r.ts_ns = uint64_t(sec) * 1000000000ull + nsec;
  r.cap_len = cap;
  r.wire_len = wire;
  r.fmt = kFormat;
  r.link = link_;
  r.interface = 0;
}

bool AfPacketSource::wait_ring(uint64_t& deadline, uint64_t wait_ns, const volatile uint32_t* status_word) {
  // poll() also reports readable while the frame or block the kernel wrote last is still ours, so
  // it is a hint, not a promise: the caller looks again after each wake, and it sleeps in short
  // steps when it woke for nothing.
  const uint64_t now = monotonic_ns();
  if (!deadline) deadline = now + wait_ns;
  if (now >= deadline) return false;
  const int ms = int(std::min<uint64_t>((deadline - now + 999999) / 1000000, 1000));
  pollfd p{fd_, POLLIN | POLLERR, 0};
  const int rc = poll(&p, 1, ms);
  if (rc < 0 && errno != EINTR) {
    socket_error_ = errno;
    return false;
  }
  if (rc > 0 && !(__atomic_load_n(status_word, __ATOMIC_ACQUIRE) & TP_STATUS_USER)) {
    timespec ts{0, 200000};  // readable for a frame or block that is ours: nothing new yet
    nanosleep(&ts, nullptr);
  }
  return true;
}

SourceStatus AfPacketSource::next_v2(SourceRecord& r, uint64_t wait_ns) {
  uint64_t deadline = 0;
  for (;;) {
    if (seq_ - released_ == frames_) return SourceStatus::idle;  // every slot waits for a batch to finish
    uint8_t* s = slot(seq_);
    auto* h = reinterpret_cast<tpacket2_hdr*>(s);
    const uint32_t status = __atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE);
    if (status & TP_STATUS_USER) {
      make_record(r, s + h->tp_mac, h->tp_snaplen, h->tp_len, h->tp_sec, h->tp_nsec, status, h->tp_vlan_tci,
                  h->tp_vlan_tpid);
      return SourceStatus::record;
    }
    if (!wait_ring(deadline, wait_ns, &h->tp_status)) return socket_error_ ? SourceStatus::end : SourceStatus::idle;
  }
}

SourceStatus AfPacketSource::next(SourceRecord& r, uint64_t wait_ns) {
  if (opt_.version == 2) return next_v2(r, wait_ns);
  uint64_t deadline = 0;  // set when the first wait starts
  for (;;) {
    if (open_ && left_ > 0) {
      auto* h = reinterpret_cast<tpacket3_hdr*>(pkt_);
      make_record(r, pkt_ + h->tp_mac, h->tp_snaplen, h->tp_len, h->tp_sec, h->tp_nsec, h->tp_status,
                  h->hv1.tp_vlan_tci, h->hv1.tp_vlan_tpid);
      if (--left_ > 0) pkt_ += h->tp_next_offset;
      return SourceStatus::record;
    }
    if (open_) {  // read to its end: ours until its last record is released
      held_.emplace_back(cur_, seq_ - 1);
      open_ = false;
      cur_ = (cur_ + 1) % opt_.block_count;
    }
    // The next block, once the kernel hands it over (and unless it is still ours from last lap).
    bool ours = false;
    for (const auto& [b, s] : held_) ours |= b == cur_;
    auto* bd = reinterpret_cast<tpacket_block_desc*>(block(cur_));
    if (!ours && (__atomic_load_n(&bd->hdr.bh1.block_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER)) {
      left_ = bd->hdr.bh1.num_pkts;
      pkt_ = block(cur_) + bd->hdr.bh1.offset_to_first_pkt;
      if (left_ == 0) {  // nothing in it: straight back
        std::atomic_thread_fence(std::memory_order_release);
        bd->hdr.bh1.block_status = TP_STATUS_KERNEL;
        cur_ = (cur_ + 1) % opt_.block_count;
      } else {
        open_ = true;
      }
      continue;
    }
    if (ours) return SourceStatus::idle;  // every block waits for a batch to finish: let it go out
    // Wait for the kernel, at most until the deadline; a failed socket ends the capture (report()
    // says so).
    if (!wait_ring(deadline, wait_ns, &bd->hdr.bh1.block_status)) return socket_error_ ? SourceStatus::end : SourceStatus::idle;
  }
}

void AfPacketSource::release(uint64_t seq) {
  if (opt_.version == 2) {  // slot by slot, in ring order
    for (; released_ <= seq && released_ < seq_; ++released_)
      __atomic_store_n(&reinterpret_cast<tpacket2_hdr*>(slot(released_))->tp_status, uint32_t(TP_STATUS_KERNEL),
                       __ATOMIC_RELEASE);
    return;
  }
  while (!held_.empty() && held_.front().second <= seq) {
    auto* bd = reinterpret_cast<tpacket_block_desc*>(block(held_.front().first));
    std::atomic_thread_fence(std::memory_order_release);
    bd->hdr.bh1.block_status = TP_STATUS_KERNEL;
    held_.pop_front();
  }
}

void AfPacketSource::read_kernel_stats() {
  tpacket_stats_v3 st{};
  socklen_t len = sizeof st;
  if (getsockopt(fd_, SOL_PACKET, PACKET_STATISTICS, &st, &len) == 0) {  // the kernel resets them on reading
    kernel_packets_ += st.tp_packets;
    kernel_drops_ += st.tp_drops;
  }
}

void AfPacketSource::finish() { read_kernel_stats(); }

SourceReport AfPacketSource::report() const {
  SourceReport rep;
  rep.name = opt_.iface;
  rep.container = "live";
  rep.link = "ethernet";
  rep.raw_link = raw_link_;
  rep.filter = opt_.filter;
  rep.live = true;
  rep.kernel_packets = kernel_packets_;
  rep.kernel_drops = kernel_drops_;
  rep.vlan_restored = vlan_restored_;
  if (socket_error_) {
    rep.damaged = true;
    rep.issues.push_back(SourceIssue{true, seq_, 0, "interface " + opt_.iface + ": capture stopped: " +
                                                        std::strerror(socket_error_)});
  }
  return rep;
}

}  // namespace gaspp
