// bench/peer_libnids.cpp — the peer for bench_stream: libnids (Debian libnids-dev) reassembling
// every TCP connection of a capture on one core, the way a libnids application does: each stream
// is collected in both directions from its handshake, and each delivered byte is read (summed).
//
// usage: peer_libnids PCAP REPS   → one JSON line: packets, TCP bytes delivered, median seconds
// The capture should sit in memory (/dev/shm): libnids reads it with libpcap. Checksum checks are
// off (generated traffic carries none), and so is libnids's port-scan detection.
#include <nids.h>
#include <pcap.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

unsigned long long g_bytes = 0, g_streams = 0, g_sum = 0;

void on_tcp(struct tcp_stream* s, void** /*param*/) {
  if (s->nids_state == NIDS_JUST_EST) {
    s->client.collect++;
    s->server.collect++;
    ++g_streams;
  } else if (s->nids_state == NIDS_DATA) {
    for (half_stream* h : {&s->client, &s->server}) {
      if (h->count_new) {
        g_bytes += h->count_new;
        for (int k = 0; k < h->count_new; ++k) g_sum += static_cast<unsigned char>(h->data[k]);
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: peer_libnids PCAP REPS\n");
    return 1;
  }
  const int reps = std::max(1, std::atoi(argv[2]));
  unsigned long long packets = 0;
  {
    char err[PCAP_ERRBUF_SIZE];
    pcap_t* p = pcap_open_offline(argv[1], err);
    if (!p) {
      std::fprintf(stderr, "peer_libnids: %s\n", err);
      return 1;
    }
    pcap_pkthdr* h;
    const u_char* d;
    while (pcap_next_ex(p, &h, &d) == 1) ++packets;
    pcap_close(p);
  }
  static nids_chksum_ctl no_checksums = {0, 0, NIDS_DONT_CHKSUM, 0};
  std::vector<double> t;
  unsigned long long bytes = 0, streams = 0;
  for (int rep = 0; rep < reps + 1; ++rep) {  // the first pass warms the page cache and is not counted
    nids_params.filename = argv[1];
    nids_params.n_tcp_streams = 1 << 20;
    nids_params.n_hosts = 1 << 16;
    nids_params.scan_num_hosts = 0;
    nids_params.multiproc = 0;
    g_bytes = g_streams = 0;
    if (!nids_init()) {
      std::fprintf(stderr, "peer_libnids: nids_init: %s\n", nids_errbuf);
      return 1;
    }
    nids_register_chksum_ctl(&no_checksums, 1);
    nids_register_tcp(reinterpret_cast<void*>(on_tcp));
    const auto t0 = std::chrono::steady_clock::now();
    nids_run();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    nids_exit();
    if (rep) t.push_back(s);
    bytes = g_bytes;
    streams = g_streams;
  }
  std::sort(t.begin(), t.end());
  const double s = t[t.size() / 2];
  std::printf("{\"packets\":%llu,\"tcp_bytes\":%llu,\"streams\":%llu,\"seconds\":%.6f,\"mpps\":%.4f,\"checksum\":%llu}\n",
              packets, bytes, streams, s, double(packets) / s / 1e6, g_sum & 0xffff);
  return 0;
}
