// copysynth — the instruction-set features that code generation depends on.
//
// The generator never runs code and never asks the CPU: it is told which features the *target*
// has. `runtime/CpuInfo` produces an `IsaFeatures` for the host (CPUID ∧ XCR0); tests and the `.S`
// writer build one for any target (`IsaFeatures::for_level`), the way Highway's
// `SetSupportedTargetsForTest` and oneDNN's `mayiuse(isa, soft)` let code for any ISA be generated
// and checked on any host.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace copysynth {

/// One ISA feature. Bit positions are internal; names are the lower-case CPUID names.
enum class Feature : std::uint32_t {
  kSSE2 = 0,       ///< baseline of x86-64
  kAVX,            ///< CPUID.1:ECX.AVX and XCR0 has XMM|YMM state
  kAVX2,           ///< CPUID.7.0:EBX bit 5 (needs kAVX)
  kAVX512F,        ///< CPUID.7.0:EBX bit 16 and XCR0 has opmask|ZMM_Hi256|Hi16_ZMM state
  kAVX512BW,       ///< CPUID.7.0:EBX bit 30
  kAVX512VL,       ///< CPUID.7.0:EBX bit 31
  kBMI2,           ///< CPUID.7.0:EBX bit 8
  kERMS,           ///< Enhanced REP MOVSB/STOSB, CPUID.7.0:EBX bit 9
  kFSRM,           ///< Fast Short REP MOV, CPUID.7.0:EDX bit 4 (absent from asmjit's snapshot)
  kPREFETCHW,      ///< PREFETCHW, CPUID.80000001h:ECX bit 8
  kCount
};

/// Lower-case name of a feature ("avx2", "fsrm", ...).
std::string_view feature_name(Feature f) noexcept;

/// ISA levels a target can be capped to (`--target sse2|avx2|avx512`).
enum class IsaLevel : std::uint8_t { kSSE2, kAVX2, kAVX512 };

std::string_view isa_level_name(IsaLevel l) noexcept;
std::optional<IsaLevel> parse_isa_level(std::string_view s) noexcept;

/// A set of features. Value type; cheap to copy.
class IsaFeatures {
 public:
  constexpr IsaFeatures() = default;

  constexpr bool has(Feature f) const noexcept { return (bits_ >> static_cast<unsigned>(f)) & 1u; }
  constexpr IsaFeatures& add(Feature f) noexcept {
    bits_ |= 1u << static_cast<unsigned>(f);
    return *this;
  }
  constexpr IsaFeatures& remove(Feature f) noexcept {
    bits_ &= ~(1u << static_cast<unsigned>(f));
    return *this;
  }
  constexpr std::uint32_t bits() const noexcept { return bits_; }
  constexpr bool operator==(const IsaFeatures&) const = default;

  /// Removes every vector feature above `level` (keeps ERMS/FSRM/BMI2/PREFETCHW, which are not
  /// vector ISA levels). Capping never adds a feature.
  IsaFeatures capped(IsaLevel level) const noexcept;

  /// The full feature set of a level, for generating code for a CPU other than the host:
  /// sse2 = {SSE2}; avx2 = sse2 + {AVX, AVX2, BMI2}; avx512 = avx2 + {AVX512F, BW, VL}.
  /// ERMS/FSRM are not implied (they change speed, not correctness).
  static IsaFeatures for_level(IsaLevel level) noexcept;

  /// Highest vector register width in bytes these features allow: 16, 32 or 64.
  unsigned max_vector_bytes() const noexcept;

  /// Comma-separated feature names, e.g. "sse2,avx,avx2,erms".
  std::string to_string() const;

 private:
  std::uint32_t bits_ = 1u;  // SSE2 only
};

}  // namespace copysynth
