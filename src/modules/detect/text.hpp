// modules/detect/text.hpp — the string helpers the rule and list parsers of this module share.
#pragma once
#include <cctype>
#include <string>
#include <vector>

namespace gaspp {

// s without leading and trailing white space.
inline std::string trim(const std::string& s) {
  size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return s.substr(a, b - a);
}

// Every field of s between separators (empty ones too), trimmed.
inline std::vector<std::string> split_trimmed(const std::string& s, char sep) {
  std::vector<std::string> f;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i)
    if (i == s.size() || s[i] == sep) {
      f.push_back(trim(s.substr(start, i - start)));
      start = i + 1;
    }
  return f;
}

}  // namespace gaspp
