#pragma once
// A plain-text table with left-aligned columns, for terminal output.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <ostream>
#include <string>
#include <vector>

namespace strata::cli {

class Table {
 public:
  explicit Table(std::vector<std::string> header) { rows_.push_back(std::move(header)); }
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }

  void print(std::ostream& os, const std::string& indent = "  ") const {
    std::vector<std::size_t> width;
    for (const auto& r : rows_) {
      width.resize(std::max(width.size(), r.size()), 0);
      for (std::size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
    }
    for (const auto& r : rows_) {
      std::string line = indent;
      for (std::size_t c = 0; c < r.size(); ++c) {
        line += r[c];
        if (c + 1 < r.size()) line += std::string(width[c] - r[c].size() + 2, ' ');
      }
      os << line << '\n';
    }
  }

 private:
  std::vector<std::vector<std::string>> rows_;
};

// printf-style formatting of one number ("%.3g" and friends).
inline std::string fmt(const char* spec, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, spec, v);
  return buf;
}

// A one-line progress message on stderr, rewritten in place; only when
// stderr is a terminal, so logs and pipes stay clean.
inline bool is_tty_stderr() {
  static const bool tty = ::isatty(2) == 1;
  return tty;
}
inline void progress(const std::string& msg) {
  if (is_tty_stderr()) std::cerr << "\r\033[K" << msg.substr(0, 150) << std::flush;
}

}  // namespace strata::cli
