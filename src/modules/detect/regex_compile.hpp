// modules/detect/regex_compile.hpp — compiles a pcre's expression into a program for the device's
// regex search (regex.hpp), or says why it stays with PCRE2.
//
// What compiles (PCRE2 syntax, 8-bit, non-UTF, with PCRE2's default character tables):
//   literals and escapes \t \n \r \f \e \a \xHH \x{HH} \0oo, escaped punctuation; `.`;
//   classes [...] with ranges, negation, the escapes below and POSIX [:name:] / [:^name:];
//   \d \D \w \W \s \S \h \H \v \V \N; anchors ^ $ \A \z \Z \G; \b \B;
//   groups ( ), (?: ), named groups, (?#comment), option settings (?imsx-imsx) and (?imsx-imsx: );
//   alternation; quantifiers * + ? {n} {n,} {n,m}, lazy (?) or under PCRE2_UNGREEDY;
//   options PCRE2_CASELESS, DOTALL, MULTILINE, EXTENDED, ANCHORED, DOLLAR_ENDONLY, UNGREEDY.
// What does not (stays with PCRE2, the reason returned): back-references, lookaround, atomic groups
// and possessive quantifiers, \Q..\E, \c, \p, \R, \X, \K, \g, \k, callouts and verbs, other
// options, a quantifier with more than one possible count on something that can match the empty
// string (PCRE2 stops such a loop in a way a breadth-first search does not reproduce), programs
// longer than kRxMaxInsts, and every expression when this PCRE2 build's newline is not LF.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "gaspp/module.hpp"
#include "modules/detect/regex.hpp"

namespace gaspp {

class RegexTables {
 public:
  // Compiles `re` (the text between the slashes) under `pcre2_options`; returns its program index,
  // or -1 with the reason in `why`.
  int add(const std::string& re, uint32_t pcre2_options, std::string& why);
  RegexView place(TableMemory& mem) const;
  uint32_t programs() const { return uint32_t(progs_.size()); }
  uint64_t bytes() const { return progs_.size() * sizeof(RxProgram) + insts_.size() * sizeof(RxInst) + classes_.size() * 4; }

 private:
  std::vector<RxProgram> progs_;
  std::vector<RxInst> insts_;
  std::vector<uint32_t> classes_;
  std::map<std::vector<uint32_t>, uint16_t> class_ids_;
  uint32_t start_class(const std::vector<RxInst>& prog);
};

}  // namespace gaspp
