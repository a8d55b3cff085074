// copysynth — message helpers of result.hpp.
#include "copysynth/result.hpp"

#include <cstdio>

namespace copysynth {

std::string quoted_bytes(std::string_view text, std::size_t max_bytes) {
  std::string o = "\"";
  const std::size_t n = text.size() < max_bytes ? text.size() : max_bytes;
  for (std::size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      o += static_cast<char>(c);
    } else {
      char b[8];
      std::snprintf(b, sizeof b, "\\%03o", c);
      o += b;
    }
  }
  o += '"';
  if (n < text.size()) o += "... (" + std::to_string(text.size() - n) + " more bytes)";
  return o;
}

}  // namespace copysynth
