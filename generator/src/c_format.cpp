// copysynth — printf formatting in the "C" locale (see c_format.hpp).
#include "copysynth/c_format.hpp"

#include <locale.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace copysynth {
namespace {

/// The "C" locale object, made once (never freed: it may be in use at exit).
locale_t c_locale() {
  static const locale_t c = newlocale(LC_ALL_MASK, "C", static_cast<locale_t>(nullptr));
  return c;
}

/// Switches this thread to the "C" locale for its lifetime (uselocale is per thread).
class CLocaleScope {
 public:
  CLocaleScope() : old_(c_locale() ? uselocale(c_locale()) : static_cast<locale_t>(nullptr)) {}
  ~CLocaleScope() {
    if (old_) uselocale(old_);
  }
  CLocaleScope(const CLocaleScope&) = delete;
  CLocaleScope& operator=(const CLocaleScope&) = delete;

 private:
  locale_t old_;
};

}  // namespace

double strtod_c(const char* text, char** end) {
  if (const locale_t c = c_locale()) return strtod_l(text, end, c);
  return std::strtod(text, end);  // no "C" locale object (newlocale failed): as snprintf_c does
}

int snprintf_c(char* buf, std::size_t size, const char* format, ...) {
  CLocaleScope c;
  va_list ap;
  va_start(ap, format);
  const int n = std::vsnprintf(buf, size, format, ap);
  va_end(ap);
  return n;
}

std::string format_c(const char* format, ...) {
  CLocaleScope c;
  va_list ap, ap2;
  va_start(ap, format);
  va_copy(ap2, ap);
  char small[128];
  const int n = std::vsnprintf(small, sizeof small, format, ap);
  va_end(ap);
  std::string out;
  if (n < 0) {
    out = "?";
  } else if (static_cast<std::size_t>(n) < sizeof small) {
    out.assign(small, static_cast<std::size_t>(n));
  } else {
    std::vector<char> big(static_cast<std::size_t>(n) + 1);
    std::vsnprintf(big.data(), big.size(), format, ap2);
    out.assign(big.data(), static_cast<std::size_t>(n));
  }
  va_end(ap2);
  return out;
}

}  // namespace copysynth
