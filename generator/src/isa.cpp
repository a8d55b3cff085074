// copysynth — ISA feature sets (see isa.hpp).
#include "copysynth/isa.hpp"

#include "copysynth/result.hpp"

namespace copysynth {

std::string_view feature_name(Feature f) noexcept {
  switch (f) {
    case Feature::kSSE2: return "sse2";
    case Feature::kAVX: return "avx";
    case Feature::kAVX2: return "avx2";
    case Feature::kAVX512F: return "avx512f";
    case Feature::kAVX512BW: return "avx512bw";
    case Feature::kAVX512VL: return "avx512vl";
    case Feature::kBMI2: return "bmi2";
    case Feature::kERMS: return "erms";
    case Feature::kFSRM: return "fsrm";
    case Feature::kPREFETCHW: return "prefetchw";
    case Feature::kCount: break;
  }
  return "?";
}

std::string_view isa_level_name(IsaLevel l) noexcept {
  switch (l) {
    case IsaLevel::kSSE2: return "sse2";
    case IsaLevel::kAVX2: return "avx2";
    case IsaLevel::kAVX512: return "avx512";
  }
  return "?";
}

std::optional<IsaLevel> parse_isa_level(std::string_view s) noexcept {
  if (s == "sse2") return IsaLevel::kSSE2;
  if (s == "avx2") return IsaLevel::kAVX2;
  if (s == "avx512") return IsaLevel::kAVX512;
  return std::nullopt;
}

IsaFeatures IsaFeatures::capped(IsaLevel level) const noexcept {
  IsaFeatures f = *this;
  if (level < IsaLevel::kAVX512) {
    f.remove(Feature::kAVX512F).remove(Feature::kAVX512BW).remove(Feature::kAVX512VL);
  }
  if (level < IsaLevel::kAVX2) {
    f.remove(Feature::kAVX).remove(Feature::kAVX2);
  }
  return f;
}

IsaFeatures IsaFeatures::for_level(IsaLevel level) noexcept {
  IsaFeatures f;  // SSE2
  if (level >= IsaLevel::kAVX2) f.add(Feature::kAVX).add(Feature::kAVX2).add(Feature::kBMI2);
  if (level >= IsaLevel::kAVX512)
    f.add(Feature::kAVX512F).add(Feature::kAVX512BW).add(Feature::kAVX512VL);
  return f;
}

unsigned IsaFeatures::max_vector_bytes() const noexcept {
  if (has(Feature::kAVX512F)) return 64;
  if (has(Feature::kAVX) && has(Feature::kAVX2)) return 32;
  return 16;
}

std::string IsaFeatures::to_string() const {
  std::string s;
  for (unsigned i = 0; i < static_cast<unsigned>(Feature::kCount); ++i) {
    if (!has(static_cast<Feature>(i))) continue;
    if (!s.empty()) s += ',';
    s += feature_name(static_cast<Feature>(i));
  }
  return s.empty() ? "none" : s;
}

const char* error_code_name(ErrorCode c) noexcept {
  switch (c) {
    case ErrorCode::kOk: return "ok";
    case ErrorCode::kInvalidParams: return "invalid-params";
    case ErrorCode::kUnsupportedIsa: return "unsupported-isa";
    case ErrorCode::kEmitFailed: return "emit-failed";
    case ErrorCode::kJitFailed: return "jit-failed";
    case ErrorCode::kVerifyFailed: return "verify-failed";
    case ErrorCode::kWisdomIo: return "wisdom-io";
    case ErrorCode::kWisdomMalformed: return "wisdom-malformed";
    case ErrorCode::kWisdomMismatch: return "wisdom-mismatch";
    case ErrorCode::kInvalidArgument: return "invalid-argument";
    case ErrorCode::kSystem: return "system";
    case ErrorCode::kJitUnavailable: return "jit-unavailable";
  }
  return "?";
}

}  // namespace copysynth
