// copysynth — conformance verification of copy routines (DESIGN.md invariants 2, 7, 9).
//
// Every candidate passes this before it is timed, installed or written out. The checker copies
// between buffers placed
//   - in the middle of a mapping, with 64-byte canaries on both sides of dst;
//   - so that src, then dst, ends exactly at a PROT_NONE page;
//   - so that src, then dst, starts right after a PROT_NONE page
// (LLVM libc's op_tests.cpp / protected_pages.h), for
//   - every n in 0..dense_max;
//   - every n within ±edge_radius of each edge (size-class bounds and thresholds);
//   - a seeded sample of larger n,
// with src and dst misaligned by 0..63 bytes (every (src, dst) offset pair is covered over each
// run of 64 consecutive n; large n use fewer pairs). It checks the bytes copied, the canaries,
// the return value (== dst), and that n = 0 with NULL, dangling and PROT_NONE pointers returns dst
// without touching memory. A fault (SIGSEGV/SIGBUS) inside the routine is caught and reported as
// a failure instead of killing the process.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "copysynth/routine.hpp"

namespace copysynth {

struct VerifyOptions {
  std::uint64_t dense_max = 1024;       ///< every n in [0, dense_max] (bytes)
  std::uint64_t edge_radius = 72;       ///< test edge-r .. edge+r for every edge (bytes)
  unsigned random_sizes = 24;           ///< extra n drawn log-uniformly up to twice the largest
                                        ///< edge (at least 1 MiB, at most max_size)
  std::uint64_t max_size = 64ull << 20; ///< largest n tested; larger edges are skipped (reported)
  std::uint64_t large_n = 16384;        ///< n above this use `large_pairs` offset pairs only
  unsigned large_pairs = 2;             ///< offset pairs per large n (plus one random pair and
                                        ///< two of the four guard placements, alternating)
  bool all_pairs = false;               ///< all 64x64 offset pairs for every n <= large_n (slow)
  std::uint64_t seed = 1;               ///< seeds the random sizes and pair order
};

/// Where a failing case placed its buffers.
enum class Placement : std::uint8_t {
  kInterior,       ///< both buffers inside a mapping, canaries around dst
  kSrcEndsAtGuard, ///< src + n is the first byte of a PROT_NONE page
  kDstEndsAtGuard, ///< dst + n is the first byte of a PROT_NONE page
  kSrcAfterGuard,  ///< src is the first byte after a PROT_NONE page
  kDstAfterGuard,  ///< dst is the first byte after a PROT_NONE page
  kZeroLength,     ///< the n = 0 checks with NULL / dangling / PROT_NONE pointers
};
const char* placement_name(Placement p) noexcept;

struct VerifyFailure {
  std::uint64_t n = 0;            ///< length of the failing call (bytes)
  unsigned src_offset = 0;        ///< src address mod 64
  unsigned dst_offset = 0;        ///< dst address mod 64
  Placement placement = Placement::kInterior;
  std::string what;               ///< e.g. "byte 37 of dst differs", "fault (SIGSEGV) at ..."
};

struct VerifyReport {
  std::uint64_t cases = 0;                 ///< calls checked
  std::uint64_t sizes = 0;                 ///< distinct n checked
  std::vector<std::uint64_t> skipped_edges;///< edges above max_size, not tested
  std::optional<VerifyFailure> failure;    ///< the first failure; empty when all passed
  bool ok() const { return !failure.has_value(); }
  /// "passed: 123456 cases over 2800 lengths" or the failure with n, offsets and placement.
  std::string summary() const;
};

/// Verifies any memcpy-form function against the checks above. `edges` are the lengths where
/// behaviour changes (CopyPlan's plan_edges()).
VerifyReport verify_copy(CopyFn fn, const std::vector<std::uint64_t>& edges, const VerifyOptions& opt = {});

/// Verifies a routine with its plan's edges.
VerifyReport verify_routine(const Routine& r, const VerifyOptions& opt = {});

/// verify_routine as a Status: kVerifyFailed naming the routine's params and the first failing
/// (n, src offset, dst offset, placement).
Status check_routine(const Routine& r, const VerifyOptions& opt = {});

}  // namespace copysynth
