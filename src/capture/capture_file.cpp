#include "capture/capture_file.hpp"

#include "core/thread_pool.hpp"

#include <fcntl.h>
#include <pcap/pcap.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <utility>

namespace gaspp {
namespace {

constexpr uint32_t kMagicUsec = 0xa1b2c3d4;
constexpr uint32_t kMagicNsec = 0xa1b23c4d;
constexpr uint32_t kMagicPcapng = 0x0a0d0d0a;

uint32_t bswap32(uint32_t v) { return __builtin_bswap32(v); }

std::string hex32(uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%08x", v);
  return b;
}

void put_le32(std::vector<uint8_t>& out, uint32_t v) {
  for (int k = 0; k < 4; ++k) out.push_back(uint8_t(v >> (8 * k)));
}

// The SIGBUS guard (see the header). A fixed table, so the handler reads it without locks; a slot
// is claimed with a compare-exchange on `base` and released by the owner.
struct GuardSlot {
  std::atomic<uintptr_t> base{0};
  std::atomic<uint64_t> len{0};
  std::atomic<bool> faulted{false};
};
constexpr int kGuardSlots = 64;
GuardSlot g_guard[kGuardSlots];
struct sigaction g_prev_sigbus;
uintptr_t g_page_bytes = 4096;
std::once_flag g_guard_installed;

void on_sigbus(int sig, siginfo_t* si, void* ctx) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(si->si_addr);
  for (GuardSlot& s : g_guard) {
    const uintptr_t b = s.base.load(std::memory_order_acquire);
    if (b == 0 || a < b || a - b >= s.len.load(std::memory_order_acquire)) continue;
    // A page of the capture past the file's new end: put zeros there and let the read go on.
    void* m = mmap(reinterpret_cast<void*>(a & ~(g_page_bytes - 1)), g_page_bytes, PROT_READ,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    if (m != MAP_FAILED) {
      s.faulted.store(true, std::memory_order_release);
      return;
    }
  }
  // Not a capture page: hand the fault to whoever had SIGBUS before (the default ends the process).
  if ((g_prev_sigbus.sa_flags & SA_SIGINFO) && g_prev_sigbus.sa_sigaction) {
    g_prev_sigbus.sa_sigaction(sig, si, ctx);
    return;
  }
  if (g_prev_sigbus.sa_handler != SIG_DFL && g_prev_sigbus.sa_handler != SIG_IGN && g_prev_sigbus.sa_handler) {
    g_prev_sigbus.sa_handler(sig);
    return;
  }
  signal(SIGBUS, SIG_DFL);  // returning re-runs the faulting access, which now ends the process
}

int guard_mapping(const void* base, uint64_t len) {
  std::call_once(g_guard_installed, [] {
    g_page_bytes = uintptr_t(sysconf(_SC_PAGESIZE));
    struct sigaction sa {};
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, &g_prev_sigbus);
  });
  for (int k = 0; k < kGuardSlots; ++k) {
    uintptr_t expect = 0;
    GuardSlot& s = g_guard[k];
    // Only a slot this call claims is reset: the others guard live mappings. A free slot's len is
    // already 0 (release() clears it before base), so the handler matches nothing in it until
    // len is stored.
    if (s.base.compare_exchange_strong(expect, reinterpret_cast<uintptr_t>(base))) {
      s.faulted.store(false);
      s.len.store(len, std::memory_order_release);
      return k;
    }
  }
  return -1;  // table full: this mapping is unguarded (a shrink then ends the process)
}

}  // namespace

bool link_type_from_pcap(uint32_t linktype, LinkType& out) {
  switch (linktype) {
    case 0: out = LinkType::null_bsd; return true;
    case 1: out = LinkType::ethernet; return true;
    case 9: out = LinkType::ppp; return true;
    case 50: out = LinkType::ppp_hdlc; return true;
    case 12:  // LINKTYPE_RAW on some OpenBSD writers
    case 14:
    case 101: out = LinkType::raw; return true;
    case 104: out = LinkType::cisco_hdlc; return true;
    case 108: out = LinkType::loop; return true;
    case 113: out = LinkType::linux_sll; return true;
    case 228: out = LinkType::ipv4; return true;
    case 229: out = LinkType::ipv6; return true;
    case 276: out = LinkType::linux_sll2; return true;
    default: return false;
  }
}

CaptureFile::CaptureFile(CaptureFile&& o) noexcept { *this = std::move(o); }

void CaptureFile::release() {
  if (guard_ >= 0) {
    g_guard[guard_].len.store(0, std::memory_order_release);
    g_guard[guard_].base.store(0, std::memory_order_release);
    guard_ = -1;
  }
  if (mapped_ && data_) munmap(const_cast<uint8_t*>(data_), size_);
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

uint64_t CaptureFile::current_size() const {
  struct stat st {};
  if (fd_ < 0 || fstat(fd_, &st) != 0) return size_;
  return uint64_t(st.st_size);
}

bool CaptureFile::faulted() const {
  return guard_ >= 0 && g_guard[guard_].faulted.load(std::memory_order_acquire);
}

CaptureFile& CaptureFile::operator=(CaptureFile&& o) noexcept {
  if (this != &o) {
    release();
    path_ = std::move(o.path_);
    size_ = o.size_;
    first_record_ = o.first_record_;
    fmt_ = o.fmt_;
    link_ = o.link_;
    raw_link_ = o.raw_link_;
    snaplen_ = o.snaplen_;
    container_ = o.container_;
    mapped_ = o.mapped_;
    fd_ = o.fd_;
    guard_ = o.guard_;
    tail_error_ = std::move(o.tail_error_);
    file_offsets_ = o.file_offsets_;
    owned_ = std::move(o.owned_);
    data_ = mapped_ ? o.data_ : owned_.data();
    o.data_ = nullptr;
    o.mapped_ = false;
    o.size_ = 0;
    o.fd_ = -1;
    o.guard_ = -1;
  }
  return *this;
}

CaptureFile::~CaptureFile() { release(); }

void CaptureFile::map_fd(int fd, uint64_t size, const std::string& what) {
  void* m = mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) {
    const int e = errno;
    ::close(fd);
    throw CaptureError(what + ": " + std::strerror(e));
  }
  madvise(m, size, MADV_SEQUENTIAL);
  data_ = static_cast<const uint8_t*>(m);
  size_ = size;
  mapped_ = true;
  fd_ = fd;
  guard_ = guard_mapping(m, size);
}

void CaptureFile::parse_global_header() {
  uint32_t magic;
  std::memcpy(&magic, data_, 4);
  fmt_.swapped = 0;
  if (magic == kMagicUsec || magic == kMagicNsec) {
    fmt_.swapped = 0;
  } else if (bswap32(magic) == kMagicUsec || bswap32(magic) == kMagicNsec) {
    fmt_.swapped = 1;
    magic = bswap32(magic);
  }
  fmt_.nanos = magic == kMagicNsec;
  auto rd = [&](int off) { uint32_t v; std::memcpy(&v, data_ + off, 4); return fmt_.swapped ? bswap32(v) : v; };
  snaplen_ = rd(16);
  raw_link_ = rd(20) & 0x0fffffff;  // upper bits carry FCS information
  if (!link_type_from_pcap(raw_link_, link_)) link_ = static_cast<LinkType>(255);
}

CaptureFile CaptureFile::open(const std::string& path) {
  CaptureFile f;
  f.path_ = path;
  char err[PCAP_ERRBUF_SIZE] = {0};
  if (path == "-") {
    // Standard input (a pipe): libpcap reads the stream (pcap or pcapng), converted like pcapng.
    f.path_ = "standard input";
    pcap_t* p = pcap_fopen_offline_with_tstamp_precision(stdin, PCAP_TSTAMP_PRECISION_NANO, err);
    if (!p) throw CaptureError(std::string("standard input: not a pcap or pcapng stream: ") + err);
    f.container_ = "pcap stream (standard input)";
    return convert(std::move(f), p);
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw CaptureError(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    throw CaptureError(path + ": cannot stat: " + std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw CaptureError(path + ": not a regular file");
  }
  const uint64_t size = uint64_t(st.st_size);
  if (size == 0) {
    ::close(fd);
    throw CaptureError(path + ": empty file (0 bytes): no capture header");
  }
  uint32_t magic = 0;
  if (size >= 4 && ::pread(fd, &magic, 4, 0) != 4) {
    const int e = errno;
    ::close(fd);
    throw CaptureError(path + ": cannot read: " + std::strerror(e));
  }
  const bool classic = size >= 4 && (magic == kMagicUsec || magic == kMagicNsec ||
                                     bswap32(magic) == kMagicUsec || bswap32(magic) == kMagicNsec);
  if (classic) {
    if (size < kPcapGlobalHeaderBytes) {
      ::close(fd);
      throw CaptureError(path + ": pcap global header cut short: " + std::to_string(size) + " of 24 bytes");
    }
    f.map_fd(fd, size, path + ": cannot map");
    f.container_ = "pcap";
    f.parse_global_header();
    return f;
  }
  ::close(fd);
  if (size < 4) throw CaptureError(path + ": file too short for any capture format (" + std::to_string(size) + " bytes)");
  // Anything else (pcapng, modified pcap): libpcap reads it record by record, and the records are
  // written in our layout to an unlinked temporary file, which is then mapped like a classic pcap.
  // Memory stays bounded (the page cache holds what is in use) whatever the capture's size.
  pcap_t* p = pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_NANO, err);
  if (!p) {
    throw CaptureError(path + ": not a pcap or pcapng file (first word " + hex32(magic) + "): " + err);
  }
  f.container_ = magic == kMagicPcapng ? "pcapng" : "pcap-variant";
  return convert(std::move(f), p);
}

CaptureFile CaptureFile::convert(CaptureFile f, pcap_t* p) {
  const std::string& path = f.path_;
  f.file_offsets_ = false;
  f.raw_link_ = uint32_t(pcap_datalink(p));
  if (!link_type_from_pcap(f.raw_link_, f.link_)) f.link_ = static_cast<LinkType>(255);
  f.snaplen_ = uint32_t(pcap_snapshot(p));
  const char* tmp_env = std::getenv("TMPDIR");
  const std::string tmpdir = tmp_env && *tmp_env ? tmp_env : "/tmp";
  const std::string what = path + ": " + f.container_ + " is converted to pcap through a temporary file in " + tmpdir +
                           " (TMPDIR)";
  int out = ::open(tmpdir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (out < 0) {  // a file system without O_TMPFILE: a named file, unlinked at once
    std::string name = tmpdir + "/gaspp-convert-XXXXXX";
    out = ::mkostemp(name.data(), O_CLOEXEC);
    if (out >= 0) ::unlink(name.c_str());
  }
  if (out < 0) {
    const int e = errno;
    pcap_close(p);
    throw CaptureError(what + ", which cannot be created: " + std::strerror(e));
  }
  std::vector<uint8_t> buf;
  constexpr size_t kFlushBytes = 4u << 20;
  buf.reserve(kFlushBytes + kMaxRecordBytes + 16);
  uint64_t written = 0;
  auto flush = [&] {
    size_t at = 0;
    while (at < buf.size()) {
      const ssize_t w = ::write(out, buf.data() + at, buf.size() - at);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        const int e = w < 0 ? errno : ENOSPC;
        ::close(out);
        pcap_close(p);
        throw CaptureError(what + ", which cannot be written: " + std::strerror(e));
      }
      at += size_t(w);
    }
    written += buf.size();
    buf.clear();
  };
  // Global header: little-endian, nanosecond.
  put_le32(buf, kMagicNsec);
  put_le32(buf, 0x00040002);
  put_le32(buf, 0);
  put_le32(buf, 0);
  put_le32(buf, f.snaplen_);
  put_le32(buf, f.raw_link_);
  pcap_pkthdr* h;
  const u_char* bytes;
  int rc;
  while ((rc = pcap_next_ex(p, &h, &bytes)) == 1) {
    put_le32(buf, uint32_t(h->ts.tv_sec));
    put_le32(buf, uint32_t(h->ts.tv_usec));  // nanoseconds at this precision
    put_le32(buf, h->caplen);
    put_le32(buf, h->len);
    buf.insert(buf.end(), bytes, bytes + h->caplen);
    if (buf.size() >= kFlushBytes) flush();
  }
  // libpcap stops at the first damaged block; the records before it are kept and the walker
  // reports the damage where they end.
  if (rc == PCAP_ERROR) f.tail_error_ = std::string("libpcap stopped reading: ") + pcap_geterr(p);
  flush();
  pcap_close(p);
  f.map_fd(out, written, what + ", which cannot be mapped");
  f.fmt_ = {0, 1};
  return f;
}

CaptureFile CaptureFile::from_memory(std::vector<uint8_t> bytes, const std::string& name) {
  CaptureFile f;
  f.path_ = name;
  if (bytes.size() < kPcapGlobalHeaderBytes) throw CaptureError(name + ": pcap global header cut short");
  f.owned_ = std::move(bytes);
  f.data_ = f.owned_.data();
  f.size_ = f.owned_.size();
  f.container_ = "pcap (memory)";
  f.parse_global_header();
  return f;
}

void RecordWalker::report(bool fatal, uint64_t offset, std::string msg) {
  if (fatal) stopped_ = true;
  else ++warnings_;
  if (issues_.size() >= kMaxStoredIssues && !fatal) {
    ++suppressed_;
    return;
  }
  std::string where = f_->path() + ": record " + std::to_string(records_ + 1);
  if (f_->file_offsets()) where += " at byte offset " + std::to_string(offset);
  issues_.push_back({fatal, records_ + 1, offset, where + ": " + msg});
}

namespace {

// A record header at `o` that needs no message: it and its frame fit in the file, and its lengths
// are within the limits. Returns the offset of the next record, or 0 if not clean.
uint64_t clean_record_end(const CaptureFile& f, uint64_t size, uint64_t o) {
  if (size - o < kRecordHeaderBytes) return 0;
  const RecordHeader h = read_record_header(f.data() + o, f.format());
  if (h.cap_len > kMaxRecordBytes || h.wire_len < h.cap_len) return 0;
  if (f.snaplen() != 0 && h.cap_len > f.snaplen()) return 0;
  if (size - o - kRecordHeaderBytes < h.cap_len) return 0;
  return o + kRecordHeaderBytes + h.cap_len;
}

// First offset in [from, limit) where a run of `run` clean records starts (or that reaches the
// end of the file cleanly); `limit` if none.
uint64_t find_record_start(const CaptureFile& f, uint64_t size, uint64_t from, uint64_t limit) {
  constexpr int kRun = 8;
  const uint64_t last = std::min(limit, from + kMaxRecordBytes + kRecordHeaderBytes);
  for (uint64_t o = from; o < last; ++o) {
    uint64_t p = o;
    int n = 0;
    while (n < kRun && p < size && (p = clean_record_end(f, size, p)) != 0) ++n;
    if (n == kRun || p == size) return o;
  }
  return limit;
}

}  // namespace

RecordWalker::Window RecordWalker::index_window(const CaptureFile& f, ThreadPool& pool, uint64_t chunk_bytes,
                                                uint64_t size, uint64_t base) {
  const int threads = pool.size();
  const uint64_t window_end = std::min(size, base + uint64_t(threads) * chunk_bytes);
  struct Chunk {
    uint64_t start = 0, stop = 0;
    bool clean = true;
    std::vector<uint64_t> offsets;
  };
  std::vector<Chunk> chunks(static_cast<size_t>(threads));
  const uint64_t span = window_end - base;
  pool.parallel_for(uint64_t(threads), [&](uint64_t b, uint64_t e, int) {
    for (uint64_t k = b; k < e; ++k) {
      Chunk& c = chunks[k];
      const uint64_t lo = base + span * k / uint64_t(threads);
      const uint64_t hi = base + span * (k + 1) / uint64_t(threads);
      c.start = k == 0 ? base : find_record_start(f, size, lo, hi);
      uint64_t o = c.start;
      c.offsets.reserve((hi - lo) / 64);
      while (o < hi) {
        const uint64_t next = clean_record_end(f, size, o);
        if (next == 0) { c.clean = false; break; }
        c.offsets.push_back(o);
        o = next;
      }
      c.stop = o;
    }
  });
  Window w;
  w.base = base;
  w.size = size;
  // Chunk 0 is on the true chain. If chunk k is, its stop is a true record start; chunk k+1 is
  // accepted if its chain passes through that offset (a start found a little early merges into
  // the true chain: the records before the meeting point are dropped). Otherwise give up.
  bool ok = chunks[0].clean;
  for (int k = 0; k + 1 < threads && ok; ++k) {
    Chunk& next = chunks[size_t(k) + 1];
    const uint64_t stop = chunks[size_t(k)].stop;
    ok = next.clean;
    if (!ok || stop == next.start) continue;
    const auto it = std::lower_bound(next.offsets.begin(), next.offsets.end(), stop);
    if (it != next.offsets.end() && *it == stop) {
      next.offsets.erase(next.offsets.begin(), it);
      next.start = stop;
    } else if (next.offsets.empty() && stop >= next.stop) {
      next.start = next.stop = stop;  // no record starts in this chunk: the chain passed over it
    } else {
      ok = false;
    }
  }
  if (!ok) {
    w.end = window_end;
    return w;
  }
  w.ok = true;
  w.end = chunks.back().stop;
  size_t n = 0;
  for (const auto& c : chunks) n += c.offsets.size();
  w.offsets.reserve(n);
  for (const auto& c : chunks) w.offsets.insert(w.offsets.end(), c.offsets.begin(), c.offsets.end());
  return w;
}

RecordWalker::~RecordWalker() {
  if (ahead_.joinable()) ahead_.join();
}

bool RecordWalker::fill_parallel() {
  check_file();
  if (stopped_) return false;
  Window w;
  bool have = false;
  if (ahead_.joinable()) {  // indexed while the last window was read (or still being indexed)
    ahead_.join();
    have = ahead_win_.base == pos_ && ahead_win_.size == size_;
    if (have) w = std::move(ahead_win_);
    ahead_win_ = Window{};
  }
  if (!have) w = index_window(*f_, *pool_, chunk_bytes_, size_, pos_);
  if (!w.ok) {
    serial_until_ = w.end;
    ++windows_serial_;
    return false;
  }
  ready_ = std::move(w.offsets);
  ready_pos_ = 0;
  ++windows_parallel_;
  windows_ahead_ += have;
  // The next window, on a thread of its own while this one is read. It starts where this one's
  // chain ends, a true record start; it is used only if reading gets there with the same size.
  if (size_ > w.end && size_ - w.end >= 2 * chunk_bytes_) {
    const uint64_t base = w.end, size = size_;
    ahead_ = std::thread([this, base, size] { ahead_win_ = index_window(*f_, *pool_, chunk_bytes_, size, base); });
  }
  return !ready_.empty();
}

std::string RecordWalker::shrink_text() const {
  return "the file shrank while it was read (" + std::to_string(size_) + " bytes now, " + std::to_string(f_->size()) +
         " when opened)";
}

std::string RecordWalker::shrink_note() const { return size_ < f_->size() ? "; " + shrink_text() : ""; }

void RecordWalker::check_file() {
  if (stopped_) return;
  const uint64_t now = f_->current_size();
  if (now < size_) size_ = now;
  if (f_->faulted()) report(true, pos_, shrink_text() + ": frames past its new end read as zeros");
}

bool RecordWalker::next(RecordInfo& r) {
  if (stopped_) return false;
  if (records_ % kSizeCheckRecords == 0) {
    check_file();
    if (stopped_) return false;
  }
  uint64_t size = size_;
  if (ready_pos_ < ready_.size()) {
    // Validated when the window was indexed; only a shrink since then can cut it.
    const uint64_t o = ready_[ready_pos_];
    // The caller reads each record as it gets it, and a window is far larger than the caches, so
    // the header and the frame's first line of a record a few ahead are asked for now: read one
    // after the other they were a memory wait per packet on the reading thread, which bounds
    // `gaspp -r` when the backend runs on many cores.
    if (ready_pos_ + kReadyAhead < ready_.size()) {
      const uint8_t* ahead = f_->data() + ready_[ready_pos_ + kReadyAhead];
      __builtin_prefetch(ahead);
      __builtin_prefetch(ahead + 64);
    }
    const RecordHeader h = read_record_header(f_->data() + o, f_->format());
    if (size < o + kRecordHeaderBytes + h.cap_len) {
      ready_.clear();
      ready_pos_ = 0;
      pos_ = o;
      report(true, pos_, "record cut short by the end of the file" + shrink_note());
      return false;
    }
    ++ready_pos_;
    r = {o, h.ts_ns, h.cap_len, h.wire_len};
    pos_ = o + kRecordHeaderBytes + h.cap_len;
    ++records_;
    return true;
  }
  if (pool_ && pos_ >= serial_until_ && size - pos_ >= 2 * chunk_bytes_ && fill_parallel()) return next(r);
  size = size_;  // the window's check may have found the file shorter
  if (pos_ >= size) {
    if (!f_->tail_error().empty()) report(true, pos_, f_->tail_error());
    else if (size < f_->size()) report(true, pos_, "reading stopped at the end of the file" + shrink_note());
    else check_file();  // a fault in a frame already handed out
    return false;
  }
  const uint8_t* p = f_->data() + pos_;
  if (size - pos_ < kRecordHeaderBytes) {
    report(true, pos_, "record header cut short by the end of the file (" + std::to_string(size - pos_) +
                           " of 16 bytes)" + shrink_note());
    return false;
  }
  const RecordHeader h = read_record_header(p, f_->format());
  if (f_->faulted()) {  // that header (or an earlier frame) was past the end of a shrunk file
    check_file();
    return false;
  }
  if (h.cap_len > kMaxRecordBytes) {
    report(true, pos_, "captured length " + std::to_string(h.cap_len) + " exceeds the 262144-byte limit; "
                       "the file is damaged from here on");
    return false;
  }
  if (size - pos_ - kRecordHeaderBytes < h.cap_len) {
    report(true, pos_, "packet data cut short by the end of the file (" +
                           std::to_string(size - pos_ - kRecordHeaderBytes) + " of " +
                           std::to_string(h.cap_len) + " bytes)" + shrink_note());
    return false;
  }
  if (f_->snaplen() != 0 && h.cap_len > f_->snaplen())
    report(false, pos_, "captured length " + std::to_string(h.cap_len) + " exceeds the snap length " +
                            std::to_string(f_->snaplen()) + " (processed anyway)");
  if (h.wire_len < h.cap_len)
    report(false, pos_, "captured length " + std::to_string(h.cap_len) + " exceeds the original length " +
                            std::to_string(h.wire_len) + " (processed anyway)");
  r.offset = pos_;
  r.ts_ns = h.ts_ns;
  r.cap_len = h.cap_len;
  r.wire_len = h.wire_len;
  pos_ += kRecordHeaderBytes + h.cap_len;
  ++records_;
  return true;
}

}  // namespace gaspp
