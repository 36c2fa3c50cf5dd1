// applayer/dns.cpp — see dns.hpp. Follows Suricata's rust/src/dns/{parser,dns}.rs.
#include "applayer/dns.hpp"

#include <algorithm>

namespace gaspp {

namespace {

constexpr size_t kHeader = 12;

uint16_t be16(const uint8_t* p) { return uint16_t((p[0] << 8) | p[1]); }
uint32_t be32(const uint8_t* p) { return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | p[3]; }

// A reader over [p, end) of message msg (msg..msg_end holds the whole message, for pointers).
struct Reader {
  const uint8_t* msg;
  size_t msg_len;
  size_t pos;    // offset in msg
  size_t limit;  // the reader stops here (a record's data ends before the message does)
  uint8_t* flags;

  bool u8(uint8_t& v) {
    if (pos + 1 > limit) return false;
    v = msg[pos++];
    return true;
  }
  bool u16(uint16_t& v) {
    if (pos + 2 > limit) return false;
    v = be16(msg + pos);
    pos += 2;
    return true;
  }
  bool u32(uint32_t& v) {
    if (pos + 4 > limit) return false;
    v = be32(msg + pos);
    pos += 4;
    return true;
  }

  // dns_parse_name: labels and pointers, at most kDnsMaxLabels of them; a pointer to itself ends
  // the name (an error before any pointer was followed), a name past kDnsMaxName is cut.
  bool name(std::string& out, bool& truncated) {
    out.clear();
    truncated = false;
    size_t at = pos;              // where the name is being read (may jump)
    size_t lim = limit;           // the bound of the current read: the message after a jump
    size_t after = SIZE_MAX;      // where reading resumes after the first pointer
    int count = 0;
    uint8_t f = 0;
    for (;;) {
      if (at >= lim) break;  // the input ends: the name ends (as nom's empty-input check)
      const uint8_t len = msg[at];
      if (len == 0) {
        ++at;
        break;
      }
      if ((len & 0xc0) == 0) {
        if (at + 1 + len > lim) return false;
        if (!(f & kDnsNameTruncated)) {
          if (!out.empty()) out += '.';
          out.append(reinterpret_cast<const char*>(msg + at + 1), len);
        }
        at += 1 + size_t(len);
      } else if ((len & 0xc0) == 0xc0) {
        if (at + 2 > lim) return false;
        const size_t off = be16(msg + at) & 0x3fff;
        if (off > msg_len) return false;
        if (off == at) {
          f |= kDnsNameLoop;
          if (after != SIZE_MAX) break;
          return false;
        }
        if (after == SIZE_MAX) after = at + 2;
        at = off;
        lim = msg_len;
      } else {
        return false;  // 01 and 10 label types
      }
      if (++count > kDnsMaxLabels) {
        f |= kDnsNameLabelLimit;
        if (after != SIZE_MAX) {
          f |= kDnsNameTruncated;
          break;
        }
        return false;
      }
      if (out.size() > kDnsMaxName) {
        out.resize(kDnsMaxName);
        f |= kDnsNameTruncated;
        if (after != SIZE_MAX) break;
      }
    }
    *flags |= f;
    truncated = (f & kDnsNameTruncated) != 0;
    pos = after != SIZE_MAX ? after : at;
    return true;
  }
};

// A record's data of type t over [r.pos, r.limit).
bool rdata(Reader r, uint16_t t, DnsRecord& rec) {
  const auto rest = [&](DnsRecord::Kind k) {
    rec.kind = k;
    rec.data.assign(reinterpret_cast<const char*>(r.msg + r.pos), r.limit - r.pos);
    return true;
  };
  switch (t) {
    case 1:   // A
    case 28:  // AAAA
      return rest(DnsRecord::kAddr);
    case 2:   // NS
    case 5:   // CNAME
    case 12:  // PTR
      rec.kind = DnsRecord::kName;
      return r.name(rec.data, rec.data_truncated);
    case 15: {  // MX: the preference, then the exchange
      uint16_t pref;
      rec.kind = DnsRecord::kName;
      return r.u16(pref) && r.name(rec.data, rec.data_truncated);
    }
    case 6: {  // SOA
      rec.kind = DnsRecord::kSoa;
      DnsRecord::Soa& s = rec.soa;
      return r.name(s.mname, s.mname_truncated) && r.name(s.rname, s.rname_truncated) && r.u32(s.serial) &&
             r.u32(s.refresh) && r.u32(s.retry) && r.u32(s.expire) && r.u32(s.minimum);
    }
    case 33:  // SRV
      rec.kind = DnsRecord::kSrv;
      return r.u16(rec.priority) && r.u16(rec.weight) && r.u16(rec.port) && r.name(rec.data, rec.data_truncated);
    case 16:  // TXT: length-prefixed strings to the end of the data
      rec.kind = DnsRecord::kTxt;
      while (r.pos < r.limit) {
        uint8_t len;
        if (!r.u8(len) || r.pos + len > r.limit) return false;
        rec.txt.emplace_back(reinterpret_cast<const char*>(r.msg + r.pos), len);
        r.pos += len;
      }
      return true;
    case 10:  // NULL
      return rest(DnsRecord::kNull);
    case 44:  // SSHFP
      rec.kind = DnsRecord::kSshfp;
      if (!r.u8(rec.algo) || !r.u8(rec.fp_type)) return false;
      rec.data.assign(reinterpret_cast<const char*>(r.msg + r.pos), r.limit - r.pos);
      return true;
    case 41:  // OPT: (code, length-prefixed data) pairs
      rec.kind = DnsRecord::kOpt;
      while (r.pos < r.limit) {
        uint16_t code, len;
        if (!r.u16(code) || !r.u16(len) || r.pos + len > r.limit) return false;
        rec.opt.emplace_back(code, std::string(reinterpret_cast<const char*>(r.msg + r.pos), len));
        r.pos += len;
      }
      return true;
    default:
      return rest(DnsRecord::kUnknown);
  }
}

// count records into out; false: one did not parse.
bool records(Reader& r, uint16_t count, std::vector<DnsRecord>& out) {
  for (uint16_t i = 0; i < count; ++i) {
    DnsRecord rec;
    uint16_t len;
    if (!r.name(rec.name, rec.name_truncated) || !r.u16(rec.rrtype) || !r.u16(rec.rrclass) || !r.u32(rec.ttl) ||
        !r.u16(len) || r.pos + len > r.limit)
      return false;
    Reader d = r;
    d.limit = r.pos + len;
    if (len == 0 && rec.rrtype == 41) {
      rec.kind = DnsRecord::kOpt;  // an OPT record with no data
    } else if (!rdata(d, rec.rrtype, rec)) {
      return false;
    }
    r.pos += len;
    out.push_back(std::move(rec));
  }
  return true;
}

bool header_valid(const DnsMessage& h, size_t rlen) {
  const size_t records = size_t(h.questions) + h.answer_rr + h.authority_rr + h.additional_rr;
  if (2 * records > rlen) return false;
  if (records == 0 && rlen > kHeader) return false;
  if (!(h.flags & 0x8000) && h.questions == 0) return false;
  return true;
}

bool read_header(const uint8_t* p, size_t n, DnsMessage& m) {
  if (n < kHeader) return false;
  m.id = be16(p);
  m.flags = be16(p + 2);
  m.questions = be16(p + 4);
  m.answer_rr = be16(p + 6);
  m.authority_rr = be16(p + 8);
  m.additional_rr = be16(p + 10);
  return true;
}

// dns_parse_body: questions and answers must parse; authorities and additionals that do not are
// flagged and left out.
bool parse_body(const uint8_t* p, size_t n, DnsMessage& m) {
  Reader r{p, n, kHeader, n, &m.name_flags};
  for (uint16_t i = 0; i < m.questions; ++i) {
    DnsQuery q;
    if (!r.name(q.name, q.truncated) || !r.u16(q.rrtype) || !r.u16(q.rrclass)) return false;
    m.queries.push_back(std::move(q));
  }
  if (!records(r, m.answer_rr, m.answers)) return false;
  Reader a = r;
  if (!records(a, m.authority_rr, m.authorities)) {
    m.authorities.clear();
    m.invalid_authorities = true;
    return true;
  }
  if (!records(a, m.additional_rr, m.additionals)) {
    m.additionals.clear();
    m.invalid_additionals = true;
  }
  return true;
}

}  // namespace

DnsParse parse_dns_message(const uint8_t* p, size_t n, DnsMessage& out) {
  out = DnsMessage{};
  if (!read_header(p, n, out) || !header_valid(out, n)) return DnsParse::header_invalid;
  return parse_body(p, n, out) ? DnsParse::ok : DnsParse::malformed;
}

int dns_probe(const uint8_t* p, size_t n, size_t dlen, bool* request) {
  n = std::min(n, dlen);
  DnsMessage m;
  if (!read_header(p, n, m)) return n < kHeader && n < dlen ? -1 : 0;
  // Not all of the message is here: the header alone decides.
  if (n < dlen || parse_body(p, n, m)) {
    if (!header_valid(m, dlen)) return 0;
    if (request) *request = !(m.flags & 0x8000);
    return 1;
  }
  return 0;
}

int dns_probe_tcp(const uint8_t* p, size_t n, bool* request) {
  if (n < 2) return -1;
  return dns_probe(p + 2, n - 2, be16(p), request);
}

std::string dns_rrtype_name(uint16_t t) {
  static const struct {
    uint16_t v;
    const char* n;
  } kTypes[] = {{1, "A"},        {2, "NS"},       {3, "MD"},       {4, "MF"},        {5, "CNAME"},     {6, "SOA"},
                {7, "MB"},       {8, "MG"},       {9, "MR"},       {10, "NULL"},     {11, "WKS"},      {12, "PTR"},
                {13, "HINFO"},   {14, "MINFO"},   {15, "MX"},      {16, "TXT"},      {17, "RP"},       {18, "AFSDB"},
                {19, "X25"},     {20, "ISDN"},    {21, "RT"},      {22, "NSAP"},     {23, "NSAPPTR"},  {24, "SIG"},
                {25, "KEY"},     {26, "PX"},      {27, "GPOS"},    {28, "AAAA"},     {29, "LOC"},      {30, "NXT"},
                {33, "SRV"},     {34, "ATMA"},    {35, "NAPTR"},   {36, "KX"},       {37, "CERT"},     {38, "A6"},
                {39, "DNAME"},   {41, "OPT"},     {42, "APL"},     {43, "DS"},       {44, "SSHFP"},    {45, "IPSECKEY"},
                {46, "RRSIG"},   {47, "NSEC"},    {48, "DNSKEY"},  {49, "DHCID"},    {50, "NSEC3"},    {51, "NSEC3PARAM"},
                {52, "TLSA"},    {55, "HIP"},     {59, "CDS"},     {60, "CDNSKEY"},  {65, "HTTPS"},    {99, "SPF"},
                {249, "TKEY"},   {250, "TSIG"},   {254, "MAILA"},  {255, "ANY"},     {256, "URI"}};
  for (const auto& e : kTypes)
    if (e.v == t) return e.n;
  return std::to_string(t);
}

uint16_t dns_event_bit(const std::string& name) {
  static const std::pair<const char*, uint16_t> kEvents[] = {
      {"not_a_response", kDnsEvNotResponse},       {"not_response", kDnsEvNotResponse},  // (Suricata 9's name)
      {"z_flag_set", kDnsEvZFlagSet},
      {"invalid_opcode", kDnsEvInvalidOpcode},     {"name_too_long", kDnsEvNameTooLong},
      {"infinite_loop", kDnsEvInfiniteLoop},       {"too_many_labels", kDnsEvTooManyLabels},
      {"invalid_additionals", kDnsEvInvalidAdditionals}, {"invalid_authorities", kDnsEvInvalidAuthorities}};
  for (const auto& [n, b] : kEvents)
    if (name == n) return b;
  return 0;
}

std::string dns_rcode_name(uint8_t rcode) {
  static const char* const kCodes[] = {"NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED",
                                       "YXDOMAIN", "YXRRSET", "NXRRSET", "NOTAUTH", "NOTZONE"};
  return rcode < 11 ? kCodes[rcode] : std::to_string(rcode);
}

void DnsConn::message(int dir, const uint8_t* p, size_t n, bool tcp) {
  auto t = std::make_unique<DnsTx>();
  const DnsParse r = parse_dns_message(p, n, t->msg);
  if (r == DnsParse::header_invalid) {
    ++stats_.header_invalid;
    if (tcp) lost_[dir] = true;
    return;
  }
  if (r == DnsParse::malformed) {
    ++stats_.malformed;
    if (tcp) lost_[dir] = true;
    return;
  }
  if (dir == 0 && t->msg.is_response()) {
    ++stats_.not_request;
    if (tcp) lost_[dir] = true;
    return;
  }
  t->request = dir == 0;
  // Suricata's events on the transaction (rust/src/dns/dns.rs dns_parse_request / _response).
  const DnsMessage& m = t->msg;
  t->events = uint16_t((dir == 1 && !m.is_response() ? kDnsEvNotResponse : 0) | ((m.flags & 0x0040) ? kDnsEvZFlagSet : 0) |
                       (m.opcode() >= 7 ? kDnsEvInvalidOpcode : 0) |
                       ((m.name_flags & kDnsNameTruncated) ? kDnsEvNameTooLong : 0) |
                       ((m.name_flags & kDnsNameLoop) ? kDnsEvInfiniteLoop : 0) |
                       ((m.name_flags & kDnsNameLabelLimit) ? kDnsEvTooManyLabels : 0) |
                       (m.invalid_additionals ? kDnsEvInvalidAdditionals : 0) |
                       (m.invalid_authorities ? kDnsEvInvalidAuthorities : 0));
  // p points into the direction's buffer on TCP, just past the message's length.
  t->raw.assign(reinterpret_cast<const char*>(tcp ? p - 2 : p), tcp ? n + 2 : n);
  ++(dir == 0 ? stats_.requests : stats_.responses);
  q_.add(std::move(t), &stats_.txs_dropped);
}

void DnsConn::feed_datagram(int dir, const uint8_t* p, size_t n) { message(dir, p, n, false); }

void DnsConn::feed(int dir, const uint8_t* p, size_t n, bool gap) {
  if (gap) {
    ++stats_.gaps;
    gap_[dir] = true;
    lost_[dir] = false;
    buf_[dir].clear();
  }
  if (lost_[dir] || n == 0) return;
  if (gap_[dir]) {
    // Resume only where a message starts.
    if (dns_probe_tcp(p, n, nullptr) == 0) return;
    gap_[dir] = false;
  }
  std::string& b = buf_[dir];
  b.append(reinterpret_cast<const char*>(p), n);
  size_t at = 0;
  while (!lost_[dir] && b.size() - at >= 2) {
    const size_t len = be16(reinterpret_cast<const uint8_t*>(b.data() + at));
    if (len == 0) {  // an empty frame is skipped
      at += 2;
      continue;
    }
    if (b.size() - at < 2 + len) break;
    message(dir, reinterpret_cast<const uint8_t*>(b.data() + at + 2), len, true);
    at += 2 + len;
  }
  if (lost_[dir]) b.clear();
  else b.erase(0, at);
}

}  // namespace gaspp
