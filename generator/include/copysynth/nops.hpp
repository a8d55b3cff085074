// copysynth — padding bytes before loop heads, emitted exactly.
//
// asmjit's align() writes either a 0x90 run or its own choice of multi-byte NOPs; copysynth needs
// to control every byte (the padding form is a tuned parameter and must be byte-identical in the
// `.S` output), so padding is computed here and embedded raw.
//
// Encodings (all architecturally defined; see Intel SDM vol. 2B "NOP", table "Recommended
// Multi-Byte Sequence of NOP Instruction"; AMD Software Optimization Guide for family 17h/19h,
// "Code Padding with Operand-Size Override and Multibyte NOP"; the Linux kernel's
// arch/x86/include/asm/nops.h uses the same 1..8-byte P6 forms):
//   1: 90                      5: 0F 1F 44 00 00
//   2: 66 90                   6: 66 0F 1F 44 00 00
//   3: 0F 1F 00                7: 0F 1F 80 00 00 00 00
//   4: 0F 1F 40 00             8: 0F 1F 84 00 00 00 00 00
// Prefixed form: 9..11 bytes = one to three 0x66 prefixes before the 8-byte form.
// Jump form: `EB xx` followed by xx bytes of int3 (0xCC).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "copysynth/params.hpp"

namespace copysynth {

/// Exactly `length` bytes of padding in the given form (length 0..255). Long and prefixed forms
/// use as many maximal NOPs as fit, then one shorter NOP for the remainder.
std::vector<std::uint8_t> nop_padding(NopForm form, std::size_t length);

/// Bytes of padding needed at `offset` to reach a multiple of `alignment` (a power of two).
constexpr std::size_t padding_for(std::size_t offset, std::size_t alignment) noexcept {
  return alignment <= 1 ? 0 : (alignment - (offset & (alignment - 1))) & (alignment - 1);
}

}  // namespace copysynth
