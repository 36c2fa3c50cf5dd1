// modules/detect/regex.hpp — pcre on the device: a compiled regular expression and the search that
// runs it, written once for both backends.
//
// A pcre whose expression is regular (no back-references, lookaround, atomic groups or other
// PCRE-only constructs; regex_compile.hpp says what compiles) becomes a small program for a Pike
// VM: a breadth-first simulation of the expression's NFA that keeps its threads in priority order.
// That gives exactly the match PCRE2 finds — the leftmost start, and at that start the end that
// PCRE's backtracking reaches first (greedy and lazy quantifiers, alternation order) — in
// O(length x program) steps with no backtracking, no recursion and fixed memory, which is what a
// GPU thread can run. Expressions that do not compile stay with PCRE2 on the host (counted).
//
// Program: instructions in RegexView::insts from a program's offset; a byte instruction tests the
// byte against a 256-bit class (RegexView::classes, 8 words each, case folding already applied).
// Assertions are zero-width tests at the current position (anchors, word boundaries), with the
// subject's PCRE2 options (multiline, dollar-end-only) folded into the assertion kind.
//
// Limits: kRxMaxInsts instructions a program (the compiler refuses longer ones, which stay with
// PCRE2); a search gives up after kRxMaxSteps thread steps and answers "unknown" (the caller hands
// the match to the host, or counts it undecided).
#pragma once
#include <cstdint>
#include <type_traits>

#include "gaspp/hd.hpp"

namespace gaspp {

constexpr uint32_t kRxMaxInsts = 256;
constexpr uint32_t kRxMaxSteps = 4u << 20;

enum RxOpcode : uint8_t {
  kRxByte,    // the byte at the position is in class `arg`: go on at pc+1, one byte later
  kRxSplit,   // try x first, then y (x has priority)
  kRxJmp,     // go on at x
  kRxAssert,  // zero-width test `arg` (RxAssertion) at the position; on success pc+1
  kRxMatch,
};

enum RxAssertion : uint8_t {
  kRxBol,           // ^ without multiline, \A: the subject's start
  kRxBolMulti,      // ^ with multiline: the start, or after a newline that is not the last byte
  kRxEol,           // $ without multiline: the end, or before a newline that is the last byte
  kRxEolEndOnly,    // $ with dollar-end-only (Suricata's E), \z: the end
  kRxEolMulti,      // $ with multiline: the end, or before any newline
  kRxWordBoundary,  // \b
  kRxNotWordBoundary,  // \B
  kRxStartOffset,   // \G: where the search started
};

struct RxInst {
  uint8_t op;     // RxOpcode
  uint8_t pad_;
  uint16_t arg;   // kRxByte: class index; kRxAssert: RxAssertion
  uint16_t x, y;  // kRxSplit: both targets; kRxJmp: x
};
static_assert(std::is_trivially_copyable_v<RxInst>, "RxInst is a table entry");

struct RxProgram {
  uint32_t off;       // first instruction in RegexView::insts
  uint16_t n;         // instructions
  uint8_t anchored;   // PCRE2_ANCHORED (Suricata's A): the match starts at the start offset
  uint8_t pad_;
  // The class of bytes a match can start with (PCRE's start bits), kRxAnyStart when a match may be
  // empty: while no thread is alive the search skips to the next such byte instead of starting a
  // thread at every position (most expressions start with a literal, and most buffers do not match).
  uint32_t first;
};
constexpr uint32_t kRxAnyStart = 0xffffffffu;
static_assert(std::is_trivially_copyable_v<RxProgram>, "RxProgram is a table entry");

struct RegexView {
  const RxProgram* progs;
  const RxInst* insts;
  const uint32_t* classes;  // 8 words a class
  uint32_t prog_n;
};
static_assert(std::is_trivially_copyable_v<RegexView>, "RegexView is a kernel argument");

enum RxResult : int { kRxNoMatch = 0, kRxMatched = 1, kRxUnknown = 2 };

GASPP_HD GASPP_FORCEINLINE bool rx_word(uint8_t c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

GASPP_HD inline bool rx_assert(uint16_t kind, const uint8_t* s, uint32_t n, uint32_t i, uint32_t start) {
  switch (kind) {
    case kRxBol: return i == 0;
    case kRxBolMulti: return i == 0 || (s[i - 1] == '\n' && i < n);
    case kRxEol: return i == n || (i + 1 == n && s[i] == '\n');
    case kRxEolEndOnly: return i == n;
    case kRxEolMulti: return i == n || s[i] == '\n';
    case kRxWordBoundary:
    case kRxNotWordBoundary: {
      const bool a = i > 0 && rx_word(s[i - 1]), b = i < n && rx_word(s[i]);
      return (a != b) == (kind == kRxWordBoundary);
    }
    case kRxStartOffset: return i == start;
    default: return false;
  }
}

// Searches s[0..n) for program p from `start` on, as pcre2_match(code, s, n, start) does: the
// leftmost match's start and end in ov0, ov1. kRxUnknown after kRxMaxSteps steps.
GASPP_HD inline int rx_search(const RegexView& v, uint32_t p, const uint8_t* s, uint32_t n, uint32_t start, uint32_t& ov0,
                              uint32_t& ov1) {
  if (p >= v.prog_n || start > n) return start > n ? kRxNoMatch : kRxUnknown;
  const RxProgram& prog = v.progs[p];
  const RxInst* ins = v.insts + prog.off;
  // Thread lists in priority order: the pc and where its match started. A pc enters a list once a
  // step (mark), so a list never holds more than the program's instructions.
  struct Thread {
    uint16_t pc;
    uint32_t from;
  };
  Thread lists[2][kRxMaxInsts];
  uint32_t mark[kRxMaxInsts];
  uint16_t stack[kRxMaxInsts];  // the closure's pending pcs (each pushed at most once a step)
  uint32_t cn = 0, nn = 0;
  Thread* cl = lists[0];
  Thread* nl = lists[1];
  for (uint32_t k = 0; k < prog.n; ++k) mark[k] = 0xffffffffu;
  uint32_t steps = 0;
  bool matched = false;
  // Adds pc and what it reaches without reading a byte to list l, at position i, in priority order.
  // A split pushes y under x, so x's closure is listed first; the mark stops loops of empty steps.
  auto add = [&](Thread* l, uint32_t& ln, uint16_t pc0, uint32_t from, uint32_t i) {
    uint32_t sp = 0;
    stack[sp++] = pc0;
    while (sp) {
      uint16_t pc = stack[--sp];
      for (;;) {
        if (mark[pc] == i) break;
        mark[pc] = i;
        const RxInst& in = ins[pc];
        if (in.op == kRxJmp) {
          pc = in.x;
        } else if (in.op == kRxSplit) {
          if (sp < kRxMaxInsts) stack[sp++] = in.y;
          pc = in.x;
        } else if (in.op == kRxAssert) {
          if (!rx_assert(in.arg, s, n, i, start)) break;
          pc = uint16_t(pc + 1);
        } else {
          l[ln++] = Thread{pc, from};
          break;
        }
      }
    }
  };
  const uint32_t* first = prog.first == kRxAnyStart ? nullptr : v.classes + prog.first * 8;
  for (uint32_t i = start;; ++i) {
    if (cn == 0 && first && !prog.anchored) {
      // Nothing alive: no match can start before the next byte of the start class.
      while (i < n && !((first[s[i] >> 5] >> (s[i] & 31)) & 1u)) ++i;
      if (i >= n) break;
    }
    // A new thread for a match starting here, behind every earlier start (leftmost wins).
    if (!matched && (i == start || !prog.anchored)) add(cl, cn, 0, i, i);
    nn = 0;
    for (uint32_t t = 0; t < cn; ++t) {
      if (++steps > kRxMaxSteps) return kRxUnknown;
      const RxInst& in = ins[cl[t].pc];
      if (in.op == kRxMatch) {
        // This thread outranks every later one in the list: they are cut. Threads already moved to
        // the next position outrank it and may still end in a match that replaces this one.
        matched = true;
        ov0 = cl[t].from;
        ov1 = i;
        break;
      }
      if (i < n && ((v.classes[uint32_t(in.arg) * 8 + (s[i] >> 5)] >> (s[i] & 31)) & 1u))
        add(nl, nn, uint16_t(cl[t].pc + 1), cl[t].from, i + 1);
    }
    if (i >= n) break;  // no byte left to read: no thread moved on
    if (nn == 0 && (matched || prog.anchored)) break;  // nothing alive and no new start to come
    Thread* tmp = cl;
    cl = nl;
    nl = tmp;
    cn = nn;
  }
  return matched ? kRxMatched : kRxNoMatch;
}

}  // namespace gaspp
