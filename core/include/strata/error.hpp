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

// Throws unless cond holds. The arguments are evaluated on every call (they
// are function arguments), so pass only cheap values here; when a message
// part must be built (shape_str, Device::str), use STRATA_CHECK, which
// evaluates them only on failure. Hot paths (per-call validation of ops)
// must use STRATA_CHECK.
template <class... Args>
void check(bool cond, const char* op, Args&&... args) {
  if (!cond) fail(op, std::forward<Args>(args)...);
}

}  // namespace strata

// STRATA_CHECK(cond, op, message parts...): like strata::check, but the
// message parts are evaluated only when cond is false.
#define STRATA_CHECK(cond, ...)               \
  do {                                        \
    if (!(cond)) ::strata::fail(__VA_ARGS__); \
  } while (false)
