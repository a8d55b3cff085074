// copysynth — the tuner: search CopyParams on the host CPU within a wall-clock budget.
//
// Shape (Highway hwy/auto_tune.h, FFTW kernel/planner.c): candidates are built, verified
// (verify.hpp; up to twice the longest length its stage times, in full before it leaves the
// stage) — a candidate is never timed at a length it did not pass — then timed interleaved with the system
// routine (memcpy, memmove, memset) in the same run, so every cost is a ratio to the baseline;
// the decisions are the decision core's (decide.hpp), which sees the cost tables and never the
// clock. Scores are decide::score: geometric means of per-point speedups (median over rounds),
// a loss counted four times, so a loss at one length is not bought back by a larger win at
// another. A point workload's lengths repeat in a loop that branch predictors learn, so the
// stages that decide what small calls cost (seeds, kernel, small, hand-over, dispatch) blend in
// a replay of the production mix (workload.hpp, production_mix()), its throughput and its
// copy-then-read latency: their score is the geometric mean of the points' score and the mix's
// (the mix weighted two thirds in small, hand-over and dispatch, which place the class edges
// and order their compares).
// From 64 KiB on, every batch starts from a set cache state (timing.hpp, CacheState::kWarm) with
// at least 4 calls, so no candidate is timed in the state its neighbour left.
// The search is coordinate descent in stages, each over the parameters of one part of the ladder:
//   0. seeds      the default against the peers' strategies where the parameters can express
//                 them (the plain AVX2 loop, rep from the loop's start, glibc's and AOCL-LibMem's
//                 choices for this CPU); the search goes on from the winner's kernel;
//   1. kernel     vector width x unroll factor, on every workload point below 1 MiB
//                 (successive halving: all candidates few rounds, the best third more rounds);
//   2. small      head/tail register width (full or half the vector width); on AVX-512 hosts
//                 also one masked move for lengths 0..16/32/64/128 (mask_max, with mask_shift:
//                 the page guard on the masked-off bytes only) and vector registers 0-15 or
//                 16-31 (register_bank); successive halving as the kernel's, keeping each
//                 masked class's best as well (decide::halving_keep); then the hand-over to
//                 the loop;
//   2b. dispatch  dispatch-tree weights: the production prior, hot-first (hot_first(): the
//                 class of 33 bytes first, glibc's AVX2 order; not where the first class holds
//                 33 bytes, as a masked class does) or smallest-first (chain); for a
//                 distribution workload also its own weights and a flat tree. On a point workload
//                 scored two thirds on the production mix and one third on the points below 1 MiB
//                 (the mix alone chose the chain, which a repeated length pays for branch by branch);
//   3. prefetch   prefetch distance x hint, each also from 32 KiB only (prefetch_min), then
//                 where the chosen distance starts (0, 8, 32, 128 KiB), on the points that
//                 reach the main loop (copies only);
//   3b. alias     4K aliasing: the guard window x the software-pipelined loop, on the loop points
//                 and the misaligned-destination matrix;
//   4. padding    loop alignment x NOP form, on the loop points up to 16 KiB;
//   5. rep        where `rep movs`/`rep stos` beats the loop: a size ladder from the loop's start
//                 to 8 MiB, byte and 8-byte elements, dst as given / aligned to 64 first / rep
//                 only when aligned (for copies in byte elements also: only when dst and src
//                 are mutually aligned, rep_aligned_mutual, timed with both 16 bytes off and
//                 with dst aligned and src 4 off), each also with 4K-aliasing copies handed to the loop, and
//                 the last two split at a ladder size (rep_aligned_from; decide::choose_split);
//                 every variant moves lengths above 2 MiB in 2 MiB pieces (rep_chunk), and the
//                 byte forms dst as given / aligned first also as one instruction, which must
//                 win by 2 % more (not in --quick);
//   6. beyond the caches: non-temporal stores (one stream, or 2 or 4 page streams; in a 64-byte
//                 routine also the 32-byte loop, nt_width, one stream or 4) and, where
//                 the rep band ends in the loop below 64 MiB, rep string instructions again
//                 (rep_resume; not in --quick), on one ladder 256 KiB..64 MiB in the same rounds:
//                 decide::choose_two_thresholds gives rep again from one size, non-temporal stores
//                 from a larger one, either alone, or neither (the faster takes each size).
//                 Every option is built on and timed against the rep class in 2 MiB pieces
//                 above one piece and one instruction from 64 MiB (rep_chunk, rep_chunk_stop),
//                 whatever the incumbent ran there; in the same rounds, rep as one instruction
//                 from a smaller size on is an option of its own (not in --quick).
//                 Then, where a gap of the loop is left between the two rep bands (rep_stop ..
//                 rep_resume, at most four ladder sizes, one rep_gap() accepts; not in --quick),
//                 the routine with the gap and the same with rep throughout are timed on the
//                 gap's sizes (the rep stage's rows) and the loop keeps only what
//                 decide::choose_gap gives it: the roles of choose_threshold swapped, rep the
//                 base between two rep bands, the sizes the loop loses going back to rep; no
//                 solo runs (they time 0/0 warm only). Again after the floor, whatever the
//                 budget (its per-class composite can open such a gap).
//   The threshold stages time each ladder size warm with the copy alone (at every dst offset),
//   read back and its source overwritten, and cold as a veto; decide::choose_threshold keeps a
//   variant only from the size (rep: for the band of sizes, then rep_stop) where it wins every
//   use by 3% in total and loses nowhere by more than 3%, and the result is confirmed with each
//   routine timed in runs of its own (beyond the caches: if the best option does not confirm,
//   it is tried one ladder size up where its worst case was its threshold, then the best option
//   of the other kind).
//   Then a second pass over 1-3 with the thresholds in place, when the budget allows, and,
//   whatever the budget, 7. floor: the winner, the winner without each threshold, the seeds
//   and every peer (peers.hpp) at every workload point plus 32, 64 and 128 KiB (dst aligned, 1
//   byte past a page-aligned src, 4 past with src 2048 past), 512 KiB (misaligned both ways) and
//   1, 4 and 16 MiB (1 and 4 MiB also misaligned both ways; a fill: 1 byte off only), in the
//   same rounds (from
//   64 KiB on warm, the copy read back); a per-class composite (a rep band from the shortest
//   point of the first class that picks rep, and again from the first class after it that
//   picks rep again, keeping the winner's split by dst alignment where the form is the same:
//   keep_rep_split; the last class's non-temporal threshold) is timed with them unless it runs the winner's code at every
//   point; where a peer wins a size class beyond the noise, a seed with another kernel that
//   scores best against the best peer at each point replaces the winner when it beats it by 1%
//   (with the winner's thresholds unless its own win where they differ), else a row that
//   differs in thresholds only (the winner without one, the composite, a seed) when it beats
//   the winner itself at the points where the two run different code (templates'
//   large_lengths_differ) by the median of those points' noise (at least 2%) over the square
//   root of their number, at least 1% (decide::pick_pairwise, decide::pairwise_margin), and
//   every class still lost is logged with the peer and the figure. Then (copies, not in --quick,
//   a rep band starting below 1 MiB, 32- or 64-byte routines) 8. alias loop: the winner with
//   rep_alias_loop at each stop from 64 KiB to 1 MiB that runs other code, on the misaligned
//   matrix's rows in the band where a stop changes the code (4K-aliasing copies) and the band's
//   first length's other rows. Last, the full verification and the final measurement (the table). clear_page has one length, so one flat stage over
//   loop / non-temporal loop (width x unroll) / rep stosb / rep stosq.
// A stage keeps the current choice unless a candidate wins by >= 1% (decide::pick; a narrow win
// is confirmed head to head), which keeps two runs from flip-flopping on noise.
// --quick: one pass, fewer candidates and rounds, the rep stage right after the small lengths
// (a short budget still decides it), no padding stage, no composite in the floor.
#pragma once

#if __cplusplus < 202002L
#error "copysynth's C++ headers need C++20 (g++ -std=c++20); C programs include <copysynth/copysynth.h>"
#endif

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "copysynth/cpu.hpp"
#include "copysynth/routine.hpp"
#include "copysynth/timing.hpp"
#include "copysynth/verify.hpp"
#include "copysynth/wisdom.hpp"
#include "copysynth/workload.hpp"

namespace copysynth {

struct TuneOptions {
  Operation operation = Operation::kMemcpy;  ///< what to tune
  double budget_seconds = 30;   ///< wall-clock budget of the search (stages 0-6 and the second
                                ///< pass; the floor and the final measurement come after), seconds: 1..86400
  std::uint64_t seed = 1;       ///< orders candidates and seeds verification; same seed, same order
  bool quick = false;           ///< fewer rounds and candidates (autotune --quick: a 6 s budget)
  CpuInfo cpu = CpuInfo::host();///< features to tune for (cap it to tune a lower ISA level)
  VerifyOptions verify;         ///< conformance checks every candidate must pass
  /// Progress lines (no trailing newline); autotune prints them on stderr.
  std::function<void(const std::string&)> progress;
};

struct TuneStats {
  unsigned built = 0;      ///< distinct candidates generated
  unsigned rejected = 0;   ///< failed verification (never timed)
  unsigned timed = 0;      ///< candidates that reached timing
  std::uint64_t verify_cases = 0;  ///< calls the conformance checks made, over all candidates
  double verify_seconds = 0;       ///< wall time of those checks (part of `seconds`)
  double seconds = 0;      ///< wall time of the whole tune() call
};

struct TuneResult {
  Routine routine;                   ///< the verified winner
  std::vector<MeasuredPoint> points; ///< final measurement on the workload
  TuneStats stats;
  std::vector<std::string> log;      ///< one line per stage decision
};


/// The length (bytes) at which the search times a threshold's ladder size `size` (the rep
/// stage, the stage beyond the caches, their solo confirmations, and the floor's added 1, 4
/// and 16 MiB points): from 64 KiB on, one page (4096 bytes) past it, inside the band
/// [size, next size) it stands for; below 64 KiB, `size` itself. A rep form that copies a head
/// of up to 64 bytes with vector moves first (rep_align_dst) then runs `rep movs`/`rep stos`
/// with a count of at least `size`, as every length of the band does. Timed at `size` itself
/// it ran a count 64 bytes short: on the Zen 5 host of docs/performance.md (tenth round),
/// whose rep movsb and rep stosb switch to a slower streaming protocol at a count of exactly
/// 4 MiB (rep stosb 117 -> 40 GB/s, rep movsb 58 -> 36), a fill's rep band up to 8 MiB looked
/// 1.26-1.54x faster than the loop at "4 MiB" and ran 0.44x the loop from 4 MiB + 1 byte on.
constexpr std::uint64_t timed_length(std::uint64_t size) noexcept {
  return size >= (std::uint64_t{64} << 10) ? size + 4096 : size;
}

/// Where the band a timed length stands for begins (bytes): timed_length()'s inverse for a
/// power of two from 64 KiB on (4 MiB + 4096 -> 4 MiB), any other length itself. A threshold
/// the floor takes from a point it timed goes there, so that the band's edge stays at the
/// ladder size, not one page past it.
constexpr std::uint64_t band_start(std::uint64_t timed) noexcept {
  const std::uint64_t n = timed - 4096;
  return timed >= (std::uint64_t{64} << 10) + 4096 && (n & (n - 1)) == 0 ? n : timed;
}

/// The search budgets tune() accepts, in seconds (as `autotune --budget`).
inline constexpr double kMinBudgetSeconds = 1;
inline constexpr double kMaxBudgetSeconds = 86400;

/// kInvalidArgument unless `budget_seconds` is a number from kMinBudgetSeconds to
/// kMaxBudgetSeconds (NaN and infinities are not): "budget_seconds must be between 1 and 86400,
/// got nan". tune(), and so tune_and_install() and copysynth_tune(), give this message.
Status check_budget(double budget_seconds);

/// Tunes opt.operation for `w` on the host. Errors: kInvalidArgument for an empty workload, a
/// budget check_budget() refuses, an operation outside Operation's values or verification options
/// check_verify_options() refuses (checked first, before anything runs); kVerifyFailed if the
/// default candidate does not pass (a copysynth bug) or the winner fails its full check; kSystem
/// when any candidate's verification could not map its test buffers (ulimit -v:
/// VerifyReport::out_of_memory; the search stops there rather than leave the candidate out as if
/// its code had failed) or the search itself ran out of memory (std::bad_alloc, caught).
Result<TuneResult> tune(const Workload& w, const TuneOptions& opt);


/// The floor's per-class composite takes its rep band's form (rep_unit, rep_align_dst,
/// rep_aligned_only, rep_alias_window, rep_aligned_from, rep_aligned_mutual) from the size class where the band
/// starts, often a seed, and seeds never split a band. Returns `composite` with `winner`'s
/// rep_aligned_from (and its test, rep_aligned_mutual) where the two forms (rep_unit,
/// rep_align_dst, rep_alias_window, rep_chunk, rep_chunk_stop) are otherwise the same, the composite has no split of
/// its own, the split lies below the composite's rep_stop (a band starting at or above it then
/// takes rep only for an aligned dst, as the winner does there), and the composite's first band
/// does not reach past the winner's rep_resume (where the winner's second band takes any dst);
/// `composite` unchanged otherwise. Why: the rep stage chose the split on rows with dst 1, 4,
/// 15 and 33 bytes off at every ladder size up to 8 MiB and three use patterns; from 512 KiB up
/// the floor has six misaligned points (512 KiB, 1 and 4 MiB, dst 1 byte past a page-aligned src
/// and 4 past with src 2048 past, copy then read), and
/// a composite whose band came from a class further down would otherwise be judged mostly on
/// that class's points (Zen 5, docs/performance.md, ninth round: a split at 1 MiB went on a
/// judgement of two 32 KiB points, and rep movsb then ran a misaligned dst at 1-2 MiB, which the
/// rep stage had timed at 0.89-0.95x the loop).
CopyParams keep_rep_split(CopyParams composite, const CopyParams& winner);

/// A gap of the loop between two rep bands, as the tuner's gap stage sees it (lengths in bytes).
struct RepGap {
  std::uint64_t from = kNever;  ///< p.rep_stop: the gap's first length; kNever: nothing to judge
  std::uint64_t to = kNever;    ///< p.rep_resume: rep again from this length
  std::string why_not;          ///< from == kNever: why (one line, for the tuning log)
};

/// The gap of `p` that the gap stage may judge: [rep_stop, rep_resume) where p's size ladder
/// (vector_ladder, templates/) runs rep string instructions at rep_stop - 1, the aligned loop at
/// rep_stop and rep again at rep_resume, below the non-temporal class. Not judged (from ==
/// kNever, why_not says why) where there is no such gap, and where closing it would change code
/// outside it: with rep_aligned_from set (and not rep_aligned_only) only the first band takes
/// rep for an aligned dst alone (plan.cpp, rep_aligned_from_in), so rep throughout would carry
/// that split over the second band, lengths the stage does not time.
RepGap rep_gap(const CopyParams& p);

/// The parameters the gap stage installs for its verdict on the gap of `p` (rep_gap()):
/// `sizes` the gap's ladder as timed (bytes, ascending from p.rep_stop), `loop_from` the index
/// of the first size the loop keeps (decide::kNoThreshold: none, the gap is closed and rep runs
/// throughout: rep_stop and rep_resume "never") and `loop_end` one past the last (sizes.size():
/// to p.rep_resume). A verdict the ladder cannot hold (loop_from >= loop_end, or past the
/// ladder) closes the gap too. decide::choose_gap gives the two indices (its index and end).
CopyParams gap_params(const CopyParams& p, const std::vector<std::uint64_t>& sizes, std::size_t loop_from,
                      std::size_t loop_end);

/// `plan` with the dispatch weights of the tuner's "hot-first" tree: the class holding length
/// `n` (bytes) weighs 1 and each class k places away 0.4^k, so dispatch_tree() (generator/)
/// lets that class fall through at the root's side, tests the shorter lengths longest first and
/// the longer ones shortest first, the order of glibc's AVX2 ladder (split at 32 and 64 first).
/// Only the weights change: the same classes, the same code in each. Where the first class holds
/// n (a masked class 0..64 or 0..128) the weights are 0.4^k from it: smallest-first's tree, which
/// the dispatch stage then does not try twice.
CopyPlan hot_first(CopyPlan plan, std::uint64_t n = 33);

/// The wisdom entry of a tune result: its operation, `workload` (the workload's name), the
/// winner's plan, the hash of its code and the final measurement.
WisdomEntry wisdom_entry(const TuneResult& r, const std::string& workload);



}  // namespace copysynth
