// copysynth — routine templates: named ladders of size classes built from CopyParams.
//
// A template decides which strategy handles which lengths; emit() decides the instructions.
// There is one template today, "vector" (the ladder below); another one (a GPR kernel loop, a
// rep-first ladder for FSRM, ...) would register in make_plan() and ladder_names().
//
// The "vector" ladder for vector width V (bytes) — the size ladder on one page:
//
//   n = 0                 return dst
//   n = 1                 one byte
//   n = 2                 head/tail, 1-byte moves        (overlapping; all loads before stores)
//   n = 3..4              head/tail, 2-byte moves
//   n = 5..8              head/tail, 4-byte moves
//   n = 9..16             head/tail, 8-byte moves
//   n = 17..32            head/tail, 16 bytes per end    (xmm; two GPRs at V = 8)
//   n = 33..64            head/tail, 32 bytes per end    (V >= 16)
//   ... doubling up to    head/tail, 4V bytes per end    (n <= 8V; at V = 8 the ladder stops at 32)
//   n = L .. R-1          aligned loop (L = 8V + 1, or 33 at V = 8): unroll x V per iteration,
//                         dst aligned to V, optional prefetch, saved head and last 4V bytes
//   n = R .. S-1          rep movs/stos  (R = max(rep_threshold, L), 64-byte dst alignment optional;
//                         S = min(rep_stop, T): the rep band, glibc's rep_movsb_stop_threshold;
//                         a dst not 64-byte aligned takes the loop with rep_aligned_only, or
//                         from rep_aligned_from on: one compare inside the class, no new class;
//                         with rep_aligned_mutual (copies) the test is (dst - src) mod 64;
//                         the band from Q below takes any dst; a copy that would 4K-alias,
//                         0 < (dst - src) mod 4096 < W, takes the loop with rep_alias_window W;
//                         below rep_alias_loop one with 0 < (dst - src) mod 4096 < 64 takes a
//                         loop of 32-byte vectors instead)
//   n = S .. Q-1          the aligned loop again (present when rep_stop < T; a jump to the same loop)
//   n = Q .. T-1          rep movs/stos again (Q = rep_resume when S < rep_resume < T, else T: a
//                         second rep band beyond the caches, where rep movsb beats the loop again)
//   n >= T                non-temporal loop (T = max(nt_threshold, L)), sfence before the tail
//
// With prefetch_distance and prefetch_min = P, the loop class that holds P splits there; loop
// classes below P (that one's lower part, and any loop band wholly below P) take a copy of the
// loop without prefetch instructions, emitted once.
//
// Classes are (b, 2b] — upper bounds inclusive, as glibc's [VEC, 2*VEC] — so a power-of-two
// length takes the smaller block.
// head_tail_max = B moves the loop's start down to max(2B + 1, 4V) (the default B is 4V).
// With mask_max = M (AVX-512BW hosts), the classes up to M become one: lengths 1..M take a single
// masked load and store of M bytes (M = 128: two of 64 bytes), n = 0 returns at the class's head
// before any access (the emitter's one test; the plan's class is still 0..M), and the head/tail
// classes start at M + 1. A call whose masked block would cross a 4 KiB page (src or dst) takes the unmasked
// classes 0..M instead, inside the masked class (fault suppression into an unmapped page is a
// microcode assist, ~70x slower): small_ladder(M), the plan's `page_cross` classes,
//
//   n = 0   return dst;   n = 1   one byte;   n = (b, 2b] for b = 1, 2, 4, ... M/2   head/tail, b-byte ends
//
// with equal weights (a balanced dispatch tree: which lengths cross a page is not predictable).
// With mask_shift (the tuner sets it with every masked class) such a call first tries the same
// masked moves moved back to end at the copy's last byte (params.hpp); only a call where that
// would reach into the page below src or dst, too, takes these classes.
//
// memcpy, memmove and fill share this ladder (memmove's loop and rep classes pick a direction;
// fill stores a broadcast byte). clear_page has one class, n = 4096: rep stos if rep_threshold <=
// 4096, else a non-temporal loop if nt_threshold <= 4096, else the aligned loop.
//
// Thresholds below L are raised to L: a threshold of 0 can never send tiny copies to rep movsb or
// to non-temporal stores (a fault glibc and others have shipped). Class weights (which shape the
// dispatch tree) default to the mean share of each class in the eight production distributions
// in data/size-distributions (automemcpy, ISMM 2021); `with_weights` replaces them.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "copysynth/isa.hpp"
#include "copysynth/plan.hpp"

namespace copysynth {

/// The "vector" ladder for `p` (the one-class clear_page plan for Operation::kClearPage). Does
/// not validate `p` (make_plan does).
CopyPlan vector_ladder(const CopyParams& p);

/// The strategy of the class of vector_ladder(p) that holds length n (bytes): the class a copy
/// of n bytes takes before any in-class guard (rep_aligned_only, rep_alias_window: code_path()
/// says where those send it). Strategy::kNone only where no class holds n (none: the ladder
/// covers 0..max).
Strategy ladder_strategy(const CopyParams& p, std::uint64_t n);

/// The short-length ladder for 0 <= n <= bytes (a power of two): n = 0, n = 1, then
/// head/tail (b, 2b] for b = 1, 2, ... bytes/2, every weight 1. The page-crossing path of a masked
/// class of `bytes` (CopyPlan::page_cross; vector_ladder fills it in).
std::vector<SizeClass> small_ladder(std::uint32_t bytes);

/// Validates `p` against `target` (CopyParams validate()) and builds the plan of the named ladder.
/// Errors: those of validate(); kInvalidArgument for an unknown ladder name.
Result<CopyPlan> make_plan(const CopyParams& p, const IsaFeatures& target,
                           const std::string& ladder = "vector");

/// Which code runs a call, as code_path() models the emitter (generator/src/emit.cpp).
struct CodePath {
  Strategy strategy = Strategy::kNone;  ///< kNone: no class of the plan holds the length
  bool prefetch = false;                ///< a loop with prefetch instructions
  /// 32 for the rep class's 4K-aliasing copies under rep_alias_loop (params.hpp), whatever the
  /// routine's width (its own loop for them: 0); 0 otherwise, the routine's own width.
  std::uint32_t width = 0;
};

/// The code that runs n bytes (a copy, or a fill of n bytes at dst) under `plan`, with src and dst
/// at `src_offset` and `dst_offset` bytes from page-aligned addresses (only their values mod
/// 4096 matter) and not overlapping: the strategy of the class that holds n, except that a rep
/// class hands the call to the prefetching loop where its alignment test fails
/// (rep_aligned_only, or rep_aligned_from at or below n in the first rep band: rep_aligned_from_in;
/// dst not 64-byte aligned, or with rep_aligned_mutual (dst - src) mod 64 != 0:
/// rep_alignment_passes) or where the copy would 4K-alias (below rep_alias_loop with 0 < (dst - src)
/// mod 4096 < 64: the 32-byte loop, `width` 32, with the main loop's prefetch; else
/// rep_alias_window: 0 < (dst - src) mod 4096 < window; not for fill), and a loop class wholly below prefetch_min runs the loop without
/// prefetch. `prefetch` is true only for the loop; the non-temporal loop reports false. It says
/// which loop runs, not that prefetches execute: a length too short for one full iteration, or a
/// shift_realign memcpy of mutually misaligned buffers (the shift loop copies most of it), runs
/// none in the prefetching loop. For the
/// small classes (up to the loop's start) it is the class's strategy, not which of the masked and
/// page-crossing forms runs. The model that large_lengths_differ() compares and that the tuner
/// trusts to skip timing the same code twice; tests/test_paths.cpp checks it against the code
/// that a routine executes.
CodePath code_path(const CopyPlan& plan, std::uint64_t n, std::uint32_t src_offset, std::uint32_t dst_offset);

/// Whether a copy of n bytes runs different code under `a` and `b`, two parameter sets that
/// share their kernel (every field but the large-length choices: rep_threshold, rep_stop,
/// rep_resume, the rep form and nt_threshold, nt_pages, nt_width; the tuner's floor builds them
/// so), with src and dst at `src_offset` and `dst_offset` bytes from page-aligned addresses
/// (only their values mod 4096 matter) and not overlapping. True when the two run different
/// code there as the emitter (generator/src/emit.cpp) picks it: vector_ladder's strategy for n;
/// inside a rep class, the prefetching loop instead where rep_aligned_only (or rep_aligned_from
/// at or below n in the first rep band: rep_aligned_from_in) meets a dst not 64-byte aligned
/// (with rep_aligned_mutual, for a copy: (dst - src) mod 64 != 0) or rep_alias_window a copy that would 4K-alias
/// (0 < (dst - src) mod 4096 < window; not for fill); inside a loop class, the loop without
/// prefetch below prefetch_min; and where both run rep, its form (rep_unit, rep_align_dst, and
/// whether n > rep_chunk runs it in pieces of which size, below rep_chunk_stop: a guard that let the copy through is
/// one compare, not other code), for the non-temporal loop
/// in both, nt_pages and nt_width. The other fields
/// are not compared: for parameter sets with different kernels the answer says nothing. Not for
/// clear_page (one length). The floor judges a threshold only where it acts (tuner/src/tuner.cpp).
bool large_lengths_differ(const CopyParams& a, const CopyParams& b, std::uint64_t n, std::uint32_t src_offset,
                          std::uint32_t dst_offset);

/// The shortest length (bytes) at which large_lengths_differ(a, b, n, ...) holds for some
/// placement (dst aligned or not, 4K-aliasing or not); kNever when there is none (the two run
/// the same code at every length and placement).
std::uint64_t first_large_difference(const CopyParams& a, const CopyParams& b);

/// `p` with rep_chunk "never" when no rep class of its ladder reaches past one piece,
/// rep_chunk_stop "never" when no rep class with pieces reaches it (rep_chunk_stop_in), and
/// rep_aligned_mutual false when no rep class tests alignment (rep_aligned_only, or
/// rep_aligned_from at or below a rep class's end), and rep_alias_loop "never" when no rep class
/// starts below it (rep_alias_loop_in): such a field changes no byte, and a wisdom
/// file without it is read by builds older than the field (params.hpp, written_at_default).
/// Unchanged otherwise, and for clear_page.
CopyParams without_idle_rep_fields(CopyParams p);

/// Names of the available ladders.
std::vector<std::string> ladder_names();

/// Sets each class's weight to `probability(lo, hi)`: the share of calls with lo <= n <= hi.
CopyPlan with_weights(CopyPlan plan,
                      const std::function<double(std::uint64_t lo, std::uint64_t hi)>& probability);

/// The built-in prior: mean share of calls in [lo, hi] over the eight MemcpyGoogle
/// distributions, by power-of-two bucket, with a floor of 0.002 per class.
double default_class_weight(std::uint64_t lo, std::uint64_t hi);

}  // namespace copysynth
