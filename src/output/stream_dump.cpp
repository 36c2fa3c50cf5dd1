#include "output/stream_dump.hpp"

#include <arpa/inet.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace gaspp {
namespace {

std::string endpoint(const FlowKey& k, int e) {
  char b[96];
  if (k.family == 4) {
    const uint8_t* a = reinterpret_cast<const uint8_t*>(&k.addr[e][0]);
    std::snprintf(b, sizeof b, "%03u.%03u.%03u.%03u.%05u", a[0], a[1], a[2], a[3], k.port[e]);
  } else {
    char t[INET6_ADDRSTRLEN];
    inet_ntop(AF_INET6, k.addr[e], t, sizeof t);
    std::snprintf(b, sizeof b, "%s.%05u", t, k.port[e]);
  }
  return b;
}

}  // namespace

std::string stream_file_name(const StreamChunk& c) {
  // Endpoint 0 is the client when kChunkClientLo; direction 0 is client → server.
  const int client = (c.flags & kChunkClientLo) ? 0 : 1;
  const int src = c.dir == 0 ? client : client ^ 1;
  std::string n = endpoint(c.key, src) + "-" + endpoint(c.key, src ^ 1);
  if (c.key.vlan_n) {
    n += "--vlan";
    for (int v = 0; v < c.key.vlan_n; ++v) n += (v ? "." : "") + std::to_string(c.key.vlan[v]);
  }
  return n;
}

StreamDumpWriter::StreamDumpWriter(const std::string& dir) : dir_(dir) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    throw std::runtime_error(dir + ": cannot create directory: " + std::strerror(errno));
  index_ = OutFile(dir + "/index.tsv", "w");
  index_.write(std::string("file\tflow_id\tdir\tevent\tstream_offset\tlength\tfile_offset\n"));
}

void StreamDumpWriter::close() {
  for (uint64_t id : open_) streams_[id].f.close();
  open_.clear();
  index_.close();
}

StreamDumpWriter::Stream& StreamDumpWriter::stream_of(const StreamChunk& c) {
  const uint64_t id = c.flow_id * 2 + c.dir;
  auto it = streams_.find(id);
  if (it != streams_.end()) return it->second;
  // Both directions of a connection get the same connection number, counted per client → server name.
  auto sf = conn_suffix_.find(c.flow_id);
  if (sf == conn_suffix_.end()) {
    StreamChunk fwd = c;
    fwd.dir = 0;
    const uint32_t uses = name_uses_[stream_file_name(fwd)]++;
    sf = conn_suffix_.emplace(c.flow_id, uses ? "c" + std::to_string(uses) : std::string()).first;
  }
  Stream s;
  s.id = id;
  s.name = stream_file_name(c) + sf->second;
  return streams_.emplace(id, std::move(s)).first->second;
}

OutFile& StreamDumpWriter::open(Stream& s) {
  s.last_use = ++clock_;
  if (s.f.is_open()) return s.f;
  if (open_.size() >= kMaxOpen) {
    // Close the least recently used file; it is reopened for appending when needed.
    auto lru = std::min_element(open_.begin(), open_.end(), [&](uint64_t a, uint64_t b) {
      return streams_[a].last_use < streams_[b].last_use;
    });
    streams_[*lru].f.close();
    open_.erase(lru);
  }
  s.f = OutFile(dir_ + "/" + s.name, s.written ? "ab" : "wb");
  open_.push_back(s.id);
  return s.f;
}

void StreamDumpWriter::write(const std::vector<StreamChunk>& chunks, std::span<const uint8_t> bytes) {
  for (const StreamChunk& c : chunks) {
    Stream& s = stream_of(c);
    const char* dir = c.dir == 0 ? "c2s" : "s2c";
    const unsigned long long fid = (unsigned long long)c.flow_id;
    if (c.flags & kChunkConflict) {
      index_.printf("%s\t%llu\t%s\tconflict\t%llu\t%u\t\n", s.name.c_str(), fid, dir,
                   (unsigned long long)c.off, c.len);
      continue;
    }
    if (c.gap)
      index_.printf("%s\t%llu\t%s\tgap\t%llu\t%llu\t%llu\n", s.name.c_str(), fid, dir,
                   (unsigned long long)(c.off - c.gap), (unsigned long long)c.gap, (unsigned long long)s.written);
    if (c.len) {
      open(s).write(bytes.data() + c.data, c.len);
      s.written += c.len;
      bytes_ += c.len;
    }
    if (c.flags & kChunkEnd) {
      index_.printf("%s\t%llu\t%s\tend\t%llu\t0\t%llu\n", s.name.c_str(), fid, dir, (unsigned long long)c.off,
                   (unsigned long long)s.written);
      if (!s.written) open(s);  // an empty direction that ended still gets its (empty) file
    }
  }
}

}  // namespace gaspp
