#pragma once
// strata::Error: every failure a caller can cause ends here, with a message
// naming the operation, the argument and the bad value.
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace strata {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {
// Streams every argument into one string; used to build error messages
// without pulling a formatting library into the public headers.
template <class... Args>
std::string concat(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  return os.str();
}
}  // namespace detail

// Throws strata::Error("<op>: <rest...>").
template <class... Args>
[[noreturn]] void fail(const char* op, Args&&... args) {
  throw Error(detail::concat(op, ": ", std::forward<Args>(args)...));
}

// Throws unless cond holds; the message is only built on failure.
template <class... Args>
void check(bool cond, const char* op, Args&&... args) {
  if (!cond) fail(op, std::forward<Args>(args)...);
}

}  // namespace strata
