// copysynth — conformance verification of generated routines (docs/architecture.md, invariants 1-9).
//
// Every candidate passes this before it is timed, installed or written out; tests/ run the same
// checks. Every call goes through an ABI probe (a small assembly trampoline) that loads known
// values into the callee-saved registers and checks afterwards: rbx, rbp, r12-r15 and rsp kept,
// the direction flag clear, the return value, and — where the CPU reports XINUSE (XGETBV with
// ECX = 1) — that no dirty upper YMM/ZMM state is left behind (a missing vzeroupper).
//
// memcpy (and memmove, which must also pass these) is checked between buffers placed
//   - in the middle of a mapping, with 64-byte canaries on both sides of dst;
//   - so that src, then dst, ends exactly at a PROT_NONE page;
//   - so that src, then dst, starts right after a PROT_NONE page
// (LLVM libc's op_tests.cpp / protected_pages.h), for every n in 0..dense_max, every n within
// ±edge_radius of each edge (size-class bounds and thresholds), and a seeded sample of larger n,
// with src and dst misaligned by 0..63 bytes (every (src, dst) offset pair is covered over each
// run of 64 consecutive n; large n use fewer pairs); n = 0 with NULL, dangling and PROT_NONE
// pointers must return dst without touching memory.
// memmove is also checked with src and dst in one buffer, dst - src in
// -(2V+64) .. +(2V+64) and ±(n-1), ±n, ±(n+1), dst == src, against glibc's memmove
// (glibc memmove-vec-unaligned-erms.S and LLVM libc op_generic.h describe the hazards).
// fill is checked like memcpy with several byte values (the int's low byte only); clear_page on
// page-aligned pages between PROT_NONE pages. Lengths >= 2^32 are checked separately
// (verify_huge), on sparse slices, when the machine can map them.
// A fault (SIGSEGV/SIGBUS) inside the routine is caught and reported as a failure instead of
// killing the process.
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
  unsigned random_sizes = 24;           ///< extra n from dense_max+1 up to twice the largest edge
                                        ///< (at least 1 MiB, at most max_size): an octave drawn
                                        ///< uniformly, then n uniformly within it
  std::uint64_t max_size = 64ull << 20; ///< largest n tested; larger edges are skipped (reported)
  std::uint64_t large_edge = 1ull << 20;///< edges above this are tested every `large_edge_stride`
  unsigned large_edge_stride = 1;       ///< bytes within ±edge_radius (plus edge-1, edge, edge+1);
                                        ///< the tuner uses 31 for its candidates
                                        ///< (coprime to 64, so the residues mod 64
                                        ///< still vary) and re-checks its winner with 1
  std::uint64_t large_n = 16384;        ///< n above this use `large_pairs` offset pairs only
  unsigned large_pairs = 2;             ///< offset pairs per large n (plus one random pair and
                                        ///< two of the four guard placements, alternating every
                                        ///< second n)
  std::uint64_t single_case_n = 8ull << 20; ///< n above this get one case each instead (the
                                        ///< offset pairs and guard placements in turn), except
                                        ///< edge-1, edge, edge+1 and the longest n: each case
                                        ///< copies and compares megabytes from DRAM; with five
                                        ///< cases each, the 73 lengths from 64 MiB - 72 to a
                                        ///< 64 MiB edge (the rep pieces' end, kRepChunkTop;
                                        ///< max_size cuts the rest) made a routine's check
                                        ///< 4.7-5.4 s instead of 1.6-1.8 s
                                        ///< (docs/verification.md, "Cost")
  bool all_pairs = false;               ///< all 64x64 offset pairs for every n <= large_n (slow)
  std::uint64_t overlap_dense = 300;    ///< memmove: every n up to this with every distance
  unsigned overlap_stride = 5;          ///< memmove: above overlap_dense, every k-th distance
  std::uint64_t overlap_max = 1 << 20;  ///< memmove: overlap checks for n up to this (and max_size)
  bool huge = false;                    ///< also run verify_huge (2^32 + 4097 bytes; seconds)
  bool static_check = true;             ///< verify_routine also runs the static code checks
  std::uint64_t seed = 1;               ///< seeds the random sizes and pair order

  /// The check run when wisdom is loaded at program start-up (install_wisdom, the LD_PRELOAD
  /// shim): the routine was verified in full when it was tuned and its code is byte-identical
  /// (code_fnv1a64), so this re-checks it on this machine at a cost a program start can bear:
  /// every n in 0..64, every size-class edge and threshold up to 4 MiB ±4 bytes (every 3rd byte
  /// above 64 KiB), 2 random lengths, every src offset 0..63 with one rotating dst offset per n
  /// up to 512 bytes, guard pages on both sides, n = 0 with invalid pointers, memmove overlap
  /// distances within ±(2V+64) for n <= 16 and every 29th above, and the static code checks.
  /// Thresholds above 4 MiB (typically the non-temporal one) are left to the full check at
  /// tuning time: at 16 MiB they alone would cost ~40 ms per start. About 0.7 ms for memcpy,
  /// 1.7 ms for memmove, about 1 ms for fill with a 1 MiB rep threshold (more with a higher one,
  /// as it sets the largest length checked) on a 2-core AMD
  /// EPYC (family 26) VM (docs/performance.md, "Real programs under the shim and the library").
  /// A rep class in 2 MiB pieces (rep_chunk) puts its piece edges in range: eight lengths of
  /// 2-4 MiB (five around 2 MiB, three at 4 MiB, where max_size cuts the window), four cases each
  /// (three for fill), each case filling dst and 64 bytes either side with the canary, copying
  /// and comparing: 19-52 ms per routine on that VM (docs/perf/startup-check/).
  static VerifyOptions startup() {
    VerifyOptions o;
    o.max_size = 4ull << 20;
    o.dense_max = 64;
    o.edge_radius = 4;
    o.random_sizes = 2;
    o.large_edge = 64 * 1024;
    o.large_edge_stride = 3;
    o.large_n = 512;
    o.large_pairs = 1;
    o.overlap_dense = 16;
    o.overlap_stride = 29;
    return o;
  }

  /// The check at start-up for a routine whose code passed the full suite on this very CPU: the
  /// wisdom host's signature is this CPU's (vendor, family, model and features) and the rebuilt
  /// code is byte-identical to the code tuned (code_fnv1a64), which autotune wrote only after the
  /// full suite passed (docs/architecture.md, invariant 9). It only confirms that the installed
  /// copy of that code runs here: n = 0..16, every size-class edge up to 4 KiB ±1, every src
  /// offset 0..63 with a rotating dst offset up to 256 bytes, guard pages on both sides, n = 0 with invalid pointers,
  /// memmove overlap distances within ±(2V+64) for n <= 4 and every 61st above, for edges up to
  /// 1 KiB; no random lengths, no static checks (the bytes are those the static checks passed).
  /// Lengths above 4 KiB (the rep-string and non-temporal classes of most tunes) are left to the
  /// full check at tuning time: each case fills dst and 64 bytes either side with the canary,
  /// copies and compares, so lengths of 64 KiB cost 3x the time. About 0.1-0.5 ms per routine
  /// on a 2-core AMD EPYC (family 26) VM (docs/performance.md, "Real programs under the shim and
  /// the library").
  static VerifyOptions quick() {
    VerifyOptions o;
    o.max_size = 4096;
    o.dense_max = 16;
    o.edge_radius = 1;
    o.random_sizes = 0;
    o.large_edge = 4096;
    o.large_edge_stride = 1;
    o.large_n = 256;
    o.large_pairs = 1;
    o.overlap_dense = 4;
    o.overlap_stride = 61;
    o.overlap_max = 1024;  // the 17 lengths around a 32 KiB rep edge alone took about 10 ms
    o.static_check = false;
    return o;
  }
};

/// Where a failing case placed its buffers.
enum class Placement : std::uint8_t {
  kInterior,       ///< both buffers inside a mapping, canaries around dst
  kSrcEndsAtGuard, ///< src + n is the first byte of a PROT_NONE page
  kDstEndsAtGuard, ///< dst + n is the first byte of a PROT_NONE page
  kSrcAfterGuard,  ///< src is the first byte after a PROT_NONE page
  kDstAfterGuard,  ///< dst is the first byte after a PROT_NONE page
  kZeroLength,     ///< the n = 0 checks with NULL / dangling / PROT_NONE pointers
  kOverlap,        ///< memmove with src and dst in one buffer (see VerifyFailure::distance)
  kHuge,           ///< a length >= 2^32
  kStatic,         ///< a finding of the static checks on the code (no call involved)
};
const char* placement_name(Placement p) noexcept;

struct VerifyFailure {
  std::uint64_t n = 0;            ///< length of the failing call (bytes)
  unsigned src_offset = 0;        ///< src address mod 64
  unsigned dst_offset = 0;        ///< dst address mod 64
  Placement placement = Placement::kInterior;
  std::int64_t distance = 0;      ///< kOverlap: dst - src (bytes)
  std::string what;               ///< e.g. "byte 37 of dst differs", "fault (SIGSEGV) at ..."
};

/// What a verification that could not map its test buffers says about why (VerifyReport::out_of_memory).
inline constexpr const char* kVerifyNoMemory = "the address-space limit, ulimit -v / RLIMIT_AS, or memory is exhausted";

struct VerifyReport {
  std::uint64_t cases = 0;                 ///< calls checked
  std::uint64_t sizes = 0;                 ///< distinct n checked
  std::vector<std::uint64_t> skipped_edges;///< edges above max_size, not tested
  std::vector<std::string> notes;          ///< checks skipped and why (e.g. no XINUSE, no memory)
  std::optional<VerifyFailure> failure;    ///< the first failure; empty when all passed
  /// The failure is the harness's: its test buffers could not be mapped, or (verify_routine) its
  /// own tables allocated (`ulimit -v`, no memory), so the routine was not checked, rather than
  /// found wrong.
  bool out_of_memory = false;
  /// The failure is the caller's: the VerifyOptions were refused (check_verify_options), so
  /// nothing was checked.
  bool invalid_options = false;
  bool ok() const { return !failure.has_value(); }
  /// "passed: 123456 cases over 2800 lengths" or the failure with n, offsets and placement.
  std::string summary() const;
};

/// memcpy semantics (no overlap) for any function of the memcpy form. `edges` are the lengths
/// where behaviour changes (CopyPlan's plan_edges()).
VerifyReport verify_copy(CopyFn fn, const std::vector<std::uint64_t>& edges, const VerifyOptions& opt = {});

/// memmove semantics: everything verify_copy checks, plus the overlap cases above. `vec` is the
/// routine's vector width in bytes (sets the distance range).
VerifyReport verify_move(CopyFn fn, const std::vector<std::uint64_t>& edges, unsigned vec,
                         const VerifyOptions& opt = {});

/// memset semantics for a function of the fill form.
VerifyReport verify_fill(FillFn fn, const std::vector<std::uint64_t>& edges, const VerifyOptions& opt = {});

/// clear_page: 4096 zero bytes at page-aligned addresses between PROT_NONE pages, nothing else
/// touched.
VerifyReport verify_clear_page(ClearPageFn fn, const VerifyOptions& opt = {});

/// Lengths >= 2^32 (2^32 + 4097 with misaligned ends, and for memmove a one-byte overlap each
/// way), checked on sparse slices around 2^31, 2^32 and the end. Needs about 4.1 GiB of
/// available memory per buffer; when the machine cannot provide it the check is skipped and the
/// reason is added to `notes` (not a failure).
VerifyReport verify_huge(const Routine& r, const VerifyOptions& opt = {});

/// Fields that would make a verification never end, or take memory or time without bound, are
/// refused, with what to change: kInvalidArgument when dense_max > 64 KiB (every length up to it,
/// or up to max_size where that is lower, is checked), edge_radius > 64 KiB, random_sizes > 65536, large_pairs > 4096
/// (there are 64 x 64 offset pairs), overlap_dense > 4096 (every length up to it with every
/// distance) or overlap_stride outside 1..4096 (0 never ends). Each field is checked alone: large
/// values of several together can still take hours. The defaults, startup() and quick() pass.
Status check_verify_options(const VerifyOptions& opt);

/// Verifies a routine by its operation (and its plan's edges), plus verify_huge when opt.huge
/// and the static code checks (static_check.hpp) against the host's features when
/// opt.static_check. Options check_verify_options refuses check nothing: the report's failure
/// says why, with VerifyReport::invalid_options set.
VerifyReport verify_routine(const Routine& r, const VerifyOptions& opt = {});

/// verify_routine as a Status: kVerifyFailed naming the routine's params and the first failing
/// (n, src offset, dst offset, placement); kSystem when the test buffers could not be mapped
/// (VerifyReport::out_of_memory: the routine was not checked, not found wrong).
Status check_routine(const Routine& r, const VerifyOptions& opt = {});

/// The error a verification that did not pass is reported as, in one wording (check_routine, the
/// library writer, and the search's winner where its code fails; the search stops at a
/// verification without memory on its own, tune() in tuner.hpp): kSystem "SUBJECT could not be verified:
/// WHAT (kVerifyNoMemory)TAIL" when rep.out_of_memory (the harness could not map its test buffers
/// or allocate its own tables, so the routine was not checked), kInvalidArgument "SUBJECT could
/// not be verified: WHAT TAIL" when rep.invalid_options, else kVerifyFailed "SUBJECT failed verification: SUMMARY TAIL"
/// (VerifyReport::summary()). An empty Status when rep.ok().
Status verification_error(const VerifyReport& rep, const std::string& subject, const std::string& tail = {});

/// Result of one call through the ABI probe.
struct AbiCall {
  void* ret = nullptr;           ///< rax after the call
  unsigned clobbered = 0;        ///< bit 0 rbx, 1 rbp, 2 r12, 3 r13, 4 r14, 5 r15 changed
  bool direction_flag = false;   ///< DF set after the call
  bool rsp_changed = false;      ///< rsp after the call differs from before
  bool upper_dirty = false;      ///< XINUSE shows YMM/ZMM upper state in use after the call
  bool upper_checked = false;    ///< XINUSE was available, so upper_dirty means something
  /// Empty when the call kept the ABI; otherwise what it broke.
  std::string problem() const;
};

/// Calls `entry(a0, a1, a2)` (SysV) through the probe. Does not catch faults.
AbiCall abi_call(const void* entry, std::uint64_t a0, std::uint64_t a1, std::uint64_t a2);

}  // namespace copysynth
