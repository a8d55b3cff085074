// copysynth — exact NOP padding (see nops.hpp for the encodings and their sources).
#include "copysynth/nops.hpp"

#include <algorithm>
#include <stdexcept>

namespace copysynth {
namespace {

// P6 long NOPs of length 1..8 (index = length).
constexpr std::uint8_t kLongNops[9][8] = {
    {},
    {0x90},
    {0x66, 0x90},
    {0x0F, 0x1F, 0x00},
    {0x0F, 0x1F, 0x40, 0x00},
    {0x0F, 0x1F, 0x44, 0x00, 0x00},
    {0x66, 0x0F, 0x1F, 0x44, 0x00, 0x00},
    {0x0F, 0x1F, 0x80, 0x00, 0x00, 0x00, 0x00},
    {0x0F, 0x1F, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00},
};

// One NOP of `len` bytes (1..11): lengths above 8 prefix the 8-byte form with 0x66 bytes.
void append_long_nop(std::vector<std::uint8_t>& out, std::size_t len) {
  if (len > 8) {
    out.insert(out.end(), len - 8, 0x66);
    len = 8;
  }
  out.insert(out.end(), kLongNops[len], kLongNops[len] + len);
}

}  // namespace

std::vector<std::uint8_t> nop_padding(NopForm form, std::size_t length) {
  if (length > 255) throw std::invalid_argument("nop_padding: length above 255");
  std::vector<std::uint8_t> out;
  out.reserve(length);
  switch (form) {
    case NopForm::kSingleByte:
      out.assign(length, 0x90);
      break;
    case NopForm::kLongNop:
    case NopForm::kPrefixedLongNop: {
      const std::size_t max = form == NopForm::kLongNop ? 8 : 11;
      for (std::size_t left = length; left > 0;) {
        const std::size_t n = std::min(left, max);
        append_long_nop(out, n);
        left -= n;
      }
      break;
    }
    case NopForm::kJumpOver:
      if (length == 1) {
        out.push_back(0x90);
      } else if (length >= 2) {
        // Gaps above 129 bytes never occur (loop alignment <= 64), but stay correct anyway.
        std::size_t left = length;
        while (left >= 2) {
          const std::size_t skip = std::min<std::size_t>(left - 2, 127);
          out.push_back(0xEB);
          out.push_back(static_cast<std::uint8_t>(skip));
          out.insert(out.end(), skip, 0xCC);
          left -= skip + 2;
        }
        if (left == 1) out.push_back(0x90);
      }
      break;
  }
  return out;
}

}  // namespace copysynth
