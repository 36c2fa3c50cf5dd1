// modules/detect/regex_compile.cpp — PCRE2 syntax to Pike VM programs (regex_compile.hpp).
#define PCRE2_CODE_UNIT_WIDTH 8
#include "modules/detect/regex_compile.hpp"

#include <pcre2.h>

#include <array>
#include <bitset>
#include <memory>

namespace gaspp {
namespace {

using Set = std::bitset<256>;

// The index of class w (8 words) in `classes`, added when new.
uint16_t intern_class(std::vector<uint32_t>& classes, std::map<std::vector<uint32_t>, uint16_t>& ids,
                      const std::vector<uint32_t>& w) {
  auto it = ids.find(w);
  if (it != ids.end()) return it->second;
  const uint16_t id = uint16_t(classes.size() / 8);
  classes.insert(classes.end(), w.begin(), w.end());
  ids.emplace(w, id);
  return id;
}

struct Node {
  enum Kind { kEmpty, kSet, kAssert, kCat, kAlt, kRepeat } kind = kEmpty;
  Set set;
  uint8_t assertion = 0;
  std::vector<std::unique_ptr<Node>> kids;
  uint32_t min = 0, max = 0;  // kRepeat; max kInf: unbounded
  bool greedy = true;
};
constexpr uint32_t kInf = 0xffffffffu;

struct Flags {
  bool caseless = false, dotall = false, multiline = false, extended = false, dollar_endonly = false, ungreedy = false;
};

Set range(int lo, int hi) {
  Set s;
  for (int c = lo; c <= hi; ++c) s.set(size_t(c));
  return s;
}
Set chars(std::initializer_list<int> cs) {
  Set s;
  for (int c : cs) s.set(size_t(c));
  return s;
}
Set digit() { return range('0', '9'); }
Set word() { return range('0', '9') | range('a', 'z') | range('A', 'Z') | chars({'_'}); }
Set space() { return chars({' ', '\t', '\n', 0x0b, '\f', '\r'}); }
Set hspace() { return chars({'\t', ' ', 0xa0}); }
Set vspace() { return chars({'\n', 0x0b, '\f', '\r', 0x85}); }

Set fold(Set s) {
  for (int c = 'a'; c <= 'z'; ++c)
    if (s.test(size_t(c)) || s.test(size_t(c - 32))) {
      s.set(size_t(c));
      s.set(size_t(c - 32));
    }
  return s;
}

class Parser {
 public:
  Parser(const std::string& re, Flags f) : re_(re), f_(f) {}
  std::unique_ptr<Node> parse(std::string& why) {
    auto n = alt();
    if (!err_.empty()) {
      why = err_;
      return nullptr;
    }
    if (i_ < re_.size()) {
      why = "unbalanced ')'";
      return nullptr;
    }
    return n;
  }

 private:
  const std::string& re_;
  size_t i_ = 0;
  Flags f_;
  std::string err_;

  bool fail(const std::string& why) {
    if (err_.empty()) err_ = why;
    return false;
  }
  bool end() const { return i_ >= re_.size(); }
  char peek() const { return re_[i_]; }

  // Extended mode: white space and # comments between items mean nothing.
  void skip_extended() {
    if (!f_.extended) return;
    while (!end()) {
      const char c = peek();
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
        ++i_;
      } else if (c == '#') {
        while (!end() && peek() != '\n') ++i_;
      } else {
        break;
      }
    }
  }

  std::unique_ptr<Node> leaf_set(const Set& s) {
    auto n = std::make_unique<Node>();
    n->kind = Node::kSet;
    n->set = f_.caseless ? fold(s) : s;
    return n;
  }
  std::unique_ptr<Node> leaf_assert(uint8_t a) {
    auto n = std::make_unique<Node>();
    n->kind = Node::kAssert;
    n->assertion = a;
    return n;
  }

  std::unique_ptr<Node> alt() {
    auto n = std::make_unique<Node>();
    n->kind = Node::kAlt;
    const Flags saved = f_;
    n->kids.push_back(cat());
    while (err_.empty() && !end() && peek() == '|') {
      ++i_;
      n->kids.push_back(cat());
    }
    f_ = saved;
    if (n->kids.size() == 1) return std::move(n->kids[0]);
    return n;
  }

  std::unique_ptr<Node> cat() {
    auto n = std::make_unique<Node>();
    n->kind = Node::kCat;
    for (;;) {
      skip_extended();
      if (end() || peek() == '|' || peek() == ')' || !err_.empty()) break;
      auto a = atom();
      if (!a) {
        if (!err_.empty()) return n;
        continue;  // an option setting or a comment: nothing to match
      }
      a = quantified(std::move(a));
      if (!a) return n;
      n->kids.push_back(std::move(a));
    }
    return n;
  }

  // Reads a quantifier {n}, {n,}, {n,m} at i_ (without moving when it is not one: then '{' is a
  // literal, as PCRE2 reads it).
  bool braces(uint32_t& lo, uint32_t& hi, size_t& after) const {
    size_t k = i_ + 1;
    auto num = [&](uint32_t& v) {
      const size_t s = k;
      v = 0;
      while (k < re_.size() && re_[k] >= '0' && re_[k] <= '9' && k - s < 6) v = v * 10 + uint32_t(re_[k++] - '0');
      return k > s;
    };
    if (!num(lo)) return false;
    hi = lo;
    if (k < re_.size() && re_[k] == ',') {
      ++k;
      if (!num(hi)) hi = kInf;
    }
    if (k >= re_.size() || re_[k] != '}') return false;
    after = k + 1;
    return true;
  }

  std::unique_ptr<Node> quantified(std::unique_ptr<Node> a) {
    for (;;) {
      skip_extended();
      if (end()) return a;
      uint32_t lo = 0, hi = 0;
      const char c = peek();
      if (c == '*') {
        lo = 0, hi = kInf, ++i_;
      } else if (c == '+') {
        lo = 1, hi = kInf, ++i_;
      } else if (c == '?') {
        lo = 0, hi = 1, ++i_;
      } else if (c == '{') {
        size_t after = 0;
        if (!braces(lo, hi, after)) {
          if (i_ + 1 < re_.size() && re_[i_ + 1] == ',') {
            fail("a quantifier {,n} (read differently by PCRE2 versions)");
            return nullptr;
          }
          return a;
        }
        if (hi != kInf && hi < lo) {
          fail("a quantifier out of order");
          return nullptr;
        }
        i_ = after;
      } else {
        return a;
      }
      bool greedy = !f_.ungreedy;
      if (!end() && peek() == '?') {
        greedy = !greedy;
        ++i_;
      } else if (!end() && peek() == '+') {
        fail("a possessive quantifier");
        return nullptr;
      }
      if (a->kind == Node::kAssert) {
        fail("a quantified assertion");
        return nullptr;
      }
      auto r = std::make_unique<Node>();
      r->kind = Node::kRepeat;
      r->min = lo;
      r->max = hi;
      r->greedy = greedy;
      r->kids.push_back(std::move(a));
      a = std::move(r);
    }
  }

  bool hex(char c, int& v) const {
    if (c >= '0' && c <= '9') v = c - '0';
    else if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') v = c - 'A' + 10;
    else return false;
    return true;
  }

  // An escape after '\\' (i_ at the character after it). Sets `set` (a class or one byte) or
  // `assertion` (outside classes); false with err_ when it does not compile.
  bool escape(bool in_class, Set& set, int& assertion, bool& single, int& byte) {
    assertion = -1;
    single = false;
    if (end()) return fail("a trailing backslash");
    const char c = re_[i_++];
    auto one = [&](int b) {
      single = true;
      byte = b;
      set = chars({b});
      return true;
    };
    // Zero-width escapes (\b is a byte in a class, below).
    static const std::map<char, uint8_t> kAssertions = {
        {'B', kRxNotWordBoundary}, {'A', kRxBol}, {'z', kRxEolEndOnly}, {'Z', kRxEol}, {'G', kRxStartOffset}};
    if (auto it = kAssertions.find(c); it != kAssertions.end()) {
      if (in_class) return fail(std::string("\\") + c + " in a class");
      assertion = it->second;
      return true;
    }
    switch (c) {
      case 'd': set = digit(); return true;
      case 'D': set = ~digit(); return true;
      case 'w': set = word(); return true;
      case 'W': set = ~word(); return true;
      case 's': set = space(); return true;
      case 'S': set = ~space(); return true;
      case 'h': set = hspace(); return true;
      case 'H': set = ~hspace(); return true;
      case 'v': set = vspace(); return true;
      case 'V': set = ~vspace(); return true;
      case 'N':
        if (in_class) return fail("\\N in a class");
        set = ~chars({'\n'});
        return true;
      case 't': return one('\t');
      case 'n': return one('\n');
      case 'r': return one('\r');
      case 'f': return one('\f');
      case 'e': return one(0x1b);
      case 'a': return one(0x07);
      case 'x': {
        int v = 0, d = 0;
        if (!end() && peek() == '{') {
          size_t k = i_ + 1;
          int digits = 0;
          while (k < re_.size() && hex(re_[k], d)) v = v * 16 + d, ++k, ++digits;
          if (k >= re_.size() || re_[k] != '}' || digits == 0 || digits > 2) return fail("a \\x{...} escape beyond one byte");
          i_ = k + 1;
          return one(v);
        }
        for (int n = 0; n < 2 && !end() && hex(peek(), d); ++n, ++i_) v = v * 16 + d;
        return one(v);
      }
      case '0': {
        int v = 0;
        for (int n = 0; n < 2 && !end() && peek() >= '0' && peek() <= '7'; ++n, ++i_) v = v * 8 + (peek() - '0');
        return one(v);
      }
      case 'b':
        if (in_class) return one(0x08);
        assertion = kRxWordBoundary;
        return true;
      default:
        break;
    }
    if ((c >= '1' && c <= '9')) return fail("a back-reference or octal escape \\" + std::string(1, c));
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return fail("the escape \\" + std::string(1, c));
    return one(uint8_t(c));
  }

  bool posix(Set& s) {
    // At "[:" inside a class.
    const size_t close = re_.find(":]", i_ + 2);
    if (close == std::string::npos) return false;
    std::string name = re_.substr(i_ + 2, close - i_ - 2);
    bool neg = false;
    if (!name.empty() && name[0] == '^') neg = true, name = name.substr(1);
    static const std::map<std::string, Set> kNamed = {
        {"alpha", range('a', 'z') | range('A', 'Z')},
        {"digit", digit()},
        {"alnum", range('a', 'z') | range('A', 'Z') | digit()},
        {"space", space()},
        {"blank", chars({' ', '\t'})},
        {"upper", range('A', 'Z')},
        {"lower", range('a', 'z')},
        {"xdigit", digit() | range('a', 'f') | range('A', 'F')},
        {"word", word()},
        {"punct", range(0x21, 0x2f) | range(0x3a, 0x40) | range(0x5b, 0x60) | range(0x7b, 0x7e)},
        {"print", range(0x20, 0x7e)},
        {"graph", range(0x21, 0x7e)},
        {"cntrl", range(0, 0x1f) | chars({0x7f})},
        {"ascii", range(0, 0x7f)},
    };
    auto it = kNamed.find(name);
    if (it == kNamed.end()) return fail("the POSIX class [:" + name + ":]");
    s = neg ? ~it->second : it->second;
    i_ = close + 2;
    return true;
  }

  std::unique_ptr<Node> klass() {
    // At the character after '['.
    bool neg = false;
    if (!end() && peek() == '^') neg = true, ++i_;
    Set s;
    bool first = true;
    for (;;) {
      if (end()) {
        fail("an unclosed class");
        return nullptr;
      }
      char c = peek();
      if (c == ']' && !first) {
        ++i_;
        break;
      }
      first = false;
      if (c == '[' && i_ + 1 < re_.size() && re_[i_ + 1] == ':') {
        Set p;
        if (!posix(p)) {
          if (!err_.empty()) return nullptr;
          fail("a '[:' that is not a POSIX class");
          return nullptr;
        }
        s |= p;
        continue;
      }
      if (c == '[' && i_ + 1 < re_.size() && (re_[i_ + 1] == '.' || re_[i_ + 1] == '=')) {
        fail("a collating element in a class");
        return nullptr;
      }
      int lo = 0;
      if (c == '\\') {
        ++i_;
        Set e;
        int a = -1, byte = 0;
        bool single = false;
        if (!escape(true, e, a, single, byte)) return nullptr;
        if (!single) {
          if (!end() && peek() == '-' && i_ + 1 < re_.size() && re_[i_ + 1] != ']') {
            fail("a range from a class escape");
            return nullptr;
          }
          s |= e;
          continue;
        }
        lo = byte;
      } else {
        lo = uint8_t(c);
        ++i_;
      }
      // A range lo-hi, unless the '-' is last.
      if (!end() && peek() == '-' && i_ + 1 < re_.size() && re_[i_ + 1] != ']') {
        ++i_;
        int hi = 0;
        if (peek() == '\\') {
          ++i_;
          Set e;
          int a = -1;
          bool single = false;
          if (!escape(true, e, a, single, hi)) return nullptr;
          if (!single) {
            fail("a range to a class escape");
            return nullptr;
          }
        } else if (peek() == '[') {
          fail("a range to '['");
          return nullptr;
        } else {
          hi = uint8_t(peek());
          ++i_;
        }
        if (hi < lo) {
          fail("a range out of order");
          return nullptr;
        }
        s |= range(lo, hi);
      } else {
        s.set(size_t(lo));
      }
    }
    if (f_.caseless) s = fold(s);
    auto n = std::make_unique<Node>();
    n->kind = Node::kSet;
    n->set = neg ? ~s : s;
    return n;
  }

  // Option letters of (?imsx-imsx); false when another letter is there.
  bool options(Flags& f) {
    bool on = true;
    while (!end() && peek() != ')' && peek() != ':') {
      const char c = peek();
      if (c == '-') on = false;
      else if (c == 'i') f.caseless = on;
      else if (c == 'm') f.multiline = on;
      else if (c == 's') f.dotall = on;
      else if (c == 'x') f.extended = on;
      else if (c == 'U') f.ungreedy = on;
      else return fail(std::string("the option letter (?") + c + ")");
      ++i_;
    }
    return !end() || fail("an unclosed group");
  }

  std::unique_ptr<Node> group() {
    // At the character after '('.
    if (!end() && peek() == '*') {
      fail("a verb (*...)");
      return nullptr;
    }
    if (!end() && peek() == '?') {
      ++i_;
      if (end()) {
        fail("an unclosed group");
        return nullptr;
      }
      const char c = peek();
      if (c == '#') {
        while (!end() && peek() != ')') ++i_;
        if (end()) {
          fail("an unclosed comment");
          return nullptr;
        }
        ++i_;
        return nullptr;  // nothing to match
      }
      if (c == ':') {
        ++i_;
      } else if (c == 'P' || (c == '<' && i_ + 1 < re_.size() && re_[i_ + 1] != '=' && re_[i_ + 1] != '!') || c == '\'') {
        // Named group (?<name>...), (?'name'...), (?P<name>...); (?P=name) and (?P>name) are not.
        if (c == 'P') {
          ++i_;
          if (end() || peek() != '<') {
            fail("a (?P= or (?P> reference");
            return nullptr;
          }
        }
        const char close = peek() == '\'' ? '\'' : '>';
        ++i_;  // past the name's opening '<' or quote
        while (!end() && peek() != close) ++i_;
        if (end()) {
          fail("an unclosed group name");
          return nullptr;
        }
        ++i_;
      } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-') {
        Flags f = f_;
        if (!options(f)) return nullptr;
        if (peek() == ')') {
          // (?i) and the like: the rest of the enclosing group reads under the new options.
          ++i_;
          f_ = f;
          return nullptr;
        }
        ++i_;  // ':'
        const Flags outer = f_;
        f_ = f;
        auto n = alt();
        f_ = outer;
        if (end() || peek() != ')') {
          fail("an unclosed group");
          return nullptr;
        }
        ++i_;
        return n ? std::move(n) : std::make_unique<Node>();
      } else {
        fail(std::string("the group kind (?") + c);
        return nullptr;
      }
    }
    auto n = alt();
    if (!err_.empty()) return nullptr;
    if (end() || peek() != ')') {
      fail("an unclosed group");
      return nullptr;
    }
    ++i_;
    return n;
  }

  std::unique_ptr<Node> atom() {
    const char c = peek();
    ++i_;
    switch (c) {
      case '(': {
        auto g = group();
        if (!g && err_.empty()) return nullptr;
        if (!g) return nullptr;
        return g;
      }
      case '[': return klass();
      case '.': return leaf_set(f_.dotall ? ~Set() : ~chars({'\n'}));
      case '^': return leaf_assert(f_.multiline ? kRxBolMulti : kRxBol);
      case '$': return leaf_assert(f_.multiline ? kRxEolMulti : f_.dollar_endonly ? kRxEolEndOnly : kRxEol);
      case '*':
      case '+':
      case '?':
        fail("a quantifier with nothing before it");
        return nullptr;
      case '\\': {
        Set s;
        int a = -1, byte = 0;
        bool single = false;
        if (!escape(false, s, a, single, byte)) return nullptr;
        if (a >= 0) return leaf_assert(uint8_t(a));
        return leaf_set(s);
      }
      default: return leaf_set(chars({uint8_t(c)}));
    }
  }
};

bool nullable(const Node& n) {
  switch (n.kind) {
    case Node::kEmpty:
    case Node::kAssert: return true;
    case Node::kSet: return false;
    case Node::kCat:
      for (const auto& k : n.kids)
        if (!nullable(*k)) return false;
      return true;
    case Node::kAlt:
      for (const auto& k : n.kids)
        if (nullable(*k)) return true;
      return false;
    case Node::kRepeat: return n.min == 0 || nullable(*n.kids[0]);
  }
  return true;
}

class Emitter {
 public:
  Emitter(std::vector<RxInst>& out, std::vector<uint32_t>& classes, std::map<std::vector<uint32_t>, uint16_t>& ids)
      : out_(out), classes_(classes), ids_(ids) {}
  std::string err;

  uint32_t pc() const { return uint32_t(prog_.size()); }
  bool emit(const Node& n) {
    if (prog_.size() > kRxMaxInsts) return fail();
    switch (n.kind) {
      case Node::kEmpty: return true;
      case Node::kSet: return put(RxInst{kRxByte, 0, class_id(n.set), 0, 0});
      case Node::kAssert: return put(RxInst{kRxAssert, 0, n.assertion, 0, 0});
      case Node::kCat:
        for (const auto& k : n.kids)
          if (!emit(*k)) return false;
        return true;
      case Node::kAlt: {
        // split L1, next; L1: a; jmp end; next: split L2, next2; ... last: z; end:
        std::vector<uint32_t> jumps;
        for (size_t k = 0; k < n.kids.size(); ++k) {
          uint32_t split = 0;
          const bool last = k + 1 == n.kids.size();
          if (!last) {
            split = pc();
            if (!put(RxInst{kRxSplit, 0, 0, 0, 0})) return false;
            prog_[split].x = uint16_t(pc());
          }
          if (!emit(*n.kids[k])) return false;
          if (!last) {
            jumps.push_back(pc());
            if (!put(RxInst{kRxJmp, 0, 0, 0, 0})) return false;
            prog_[split].y = uint16_t(pc());
          }
        }
        for (uint32_t j : jumps) prog_[j].x = uint16_t(pc());
        return true;
      }
      case Node::kRepeat: {
        const Node& body = *n.kids[0];
        if (n.max != n.min && nullable(body)) {
          err = "a variable repeat of something that can match the empty string";
          return false;
        }
        for (uint32_t k = 0; k < n.min; ++k)
          if (!emit(body)) return false;
        if (n.max == kInf) {
          // L: split body, out (greedy; lazy: out first); body; jmp L; out:
          const uint32_t l = pc();
          if (!put(RxInst{kRxSplit, 0, 0, 0, 0})) return false;
          const uint32_t b = pc();
          if (!emit(body)) return false;
          if (!put(RxInst{kRxJmp, 0, 0, uint16_t(l), 0})) return false;
          set_split(l, b, pc(), n.greedy);
          return true;
        }
        // (body (body (...)?)?)?: each optional copy may end the repeat.
        std::vector<uint32_t> splits;
        for (uint32_t k = n.min; k < n.max; ++k) {
          splits.push_back(pc());
          if (!put(RxInst{kRxSplit, 0, 0, 0, 0})) return false;
          const uint32_t b = pc();
          if (!emit(body)) return false;
          prog_[splits.back()].x = uint16_t(b);  // provisional; fixed below
        }
        const uint32_t out = pc();
        for (uint32_t s : splits) set_split(s, s + 1, out, n.greedy);
        return true;
      }
    }
    return true;
  }
  bool finish(std::string& why) {
    if (!put(RxInst{kRxMatch, 0, 0, 0, 0})) {
      why = err;
      return false;
    }
    return true;
  }
  const std::vector<RxInst>& program() const { return prog_; }

 private:
  std::vector<RxInst>& out_;
  std::vector<uint32_t>& classes_;
  std::map<std::vector<uint32_t>, uint16_t>& ids_;
  std::vector<RxInst> prog_;

  bool fail() {
    if (err.empty()) err = "longer than " + std::to_string(kRxMaxInsts) + " instructions";
    return false;
  }
  bool put(const RxInst& in) {
    if (prog_.size() >= kRxMaxInsts) return fail();
    prog_.push_back(in);
    return true;
  }
  void set_split(uint32_t at, uint32_t body, uint32_t out, bool greedy) {
    prog_[at].x = uint16_t(greedy ? body : out);
    prog_[at].y = uint16_t(greedy ? out : body);
  }
  uint16_t class_id(const Set& s) {
    std::vector<uint32_t> w(8, 0);
    for (uint32_t c = 0; c < 256; ++c)
      if (s.test(c)) w[c >> 5] |= 1u << (c & 31);
    return intern_class(classes_, ids_, w);
  }
};

}  // namespace

// The bytes a match can start with: the classes of the byte instructions reached from the start
// without reading a byte (assertions taken as passing, which only widens the set); kRxAnyStart when
// the match instruction is reached that way (the expression can match the empty string).
uint32_t RegexTables::start_class(const std::vector<RxInst>& prog) {
  std::vector<uint8_t> seen(prog.size(), 0);
  std::vector<uint16_t> todo = {0};
  std::vector<uint32_t> w(8, 0);
  while (!todo.empty()) {
    const uint16_t pc = todo.back();
    todo.pop_back();
    if (seen[pc]) continue;
    seen[pc] = 1;
    const RxInst& in = prog[pc];
    if (in.op == kRxMatch) return kRxAnyStart;
    if (in.op == kRxJmp) todo.push_back(in.x);
    else if (in.op == kRxSplit) todo.push_back(in.x), todo.push_back(in.y);
    else if (in.op == kRxAssert) todo.push_back(uint16_t(pc + 1));
    else
      for (int k = 0; k < 8; ++k) w[size_t(k)] |= classes_[uint32_t(in.arg) * 8 + uint32_t(k)];
  }
  return intern_class(classes_, class_ids_, w);
}

namespace {

bool newline_is_lf() {
  uint32_t nl = 0;
  pcre2_config(PCRE2_CONFIG_NEWLINE, &nl);
  return nl == PCRE2_NEWLINE_LF;
}

}  // namespace

int RegexTables::add(const std::string& re, uint32_t opts, std::string& why) {
  static const bool lf = newline_is_lf();
  if (!lf) {
    why = "this PCRE2 build's newline is not LF";
    return -1;
  }
  const uint32_t known = PCRE2_CASELESS | PCRE2_DOTALL | PCRE2_MULTILINE | PCRE2_EXTENDED | PCRE2_ANCHORED |
                         PCRE2_DOLLAR_ENDONLY | PCRE2_UNGREEDY;
  if (opts & ~known) {
    why = "PCRE2 options beyond imsxAEG";
    return -1;
  }
  if (classes_.size() / 8 > 60000) {
    why = "the class table is full";
    return -1;
  }
  Flags f;
  f.caseless = opts & PCRE2_CASELESS;
  f.dotall = opts & PCRE2_DOTALL;
  f.multiline = opts & PCRE2_MULTILINE;
  f.extended = opts & PCRE2_EXTENDED;
  f.dollar_endonly = opts & PCRE2_DOLLAR_ENDONLY;
  f.ungreedy = opts & PCRE2_UNGREEDY;
  Parser p(re, f);
  auto root = p.parse(why);
  if (!root) return -1;
  Emitter e(insts_, classes_, class_ids_);
  if (!e.emit(*root) || !e.finish(why)) {
    if (why.empty()) why = e.err;
    return -1;
  }
  RxProgram prog{};
  prog.first = start_class(e.program());
  prog.off = uint32_t(insts_.size());
  prog.n = uint16_t(e.program().size());
  prog.anchored = (opts & PCRE2_ANCHORED) ? 1 : 0;
  insts_.insert(insts_.end(), e.program().begin(), e.program().end());
  progs_.push_back(prog);
  return int(progs_.size() - 1);
}

RegexView RegexTables::place(TableMemory& mem) const {
  RegexView v{};
  v.progs = mem.place(progs_);
  v.insts = mem.place(insts_);
  v.classes = mem.place(classes_);
  v.prog_n = uint32_t(progs_.size());
  return v;
}

}  // namespace gaspp
