// copysynth — the tuner: search CopyParams on the host CPU within a wall-clock budget.
//
// Shape (Highway hwy/auto_tune.h, FFTW kernel/planner.c): candidates are built, verified
// (verify.hpp) — a candidate that fails is never timed — then timed interleaved with the system
// routine (memcpy, memmove, memset) in the same run, so every cost is a ratio to the baseline.
// Scores are geometric means of per-point speedups (median over rounds), with every point where
// a candidate is slower than the system routine counted four times: the targets are per point
// (never slower than the best routine the user already has), so a loss is not bought back by a
// larger win elsewhere. A point workload's lengths repeat in a loop that branch predictors learn,
// so the stages that decide what small calls cost (kernel, small, hand-over, dispatch) blend in
// a replay of the production mix (workload.hpp, production_mix()): their score is the
// geometric mean of the points' score and the mix's speedup in ns per call. The search is
// coordinate descent in stages, each over the parameters that matter for one part of the ladder:
//   1. kernel     vector width x unroll factor, on every workload point below 1 MiB
//                 (successive halving: all candidates few rounds, the best third more rounds);
//   2. small      head/tail register width (full or half the vector width); on AVX-512 hosts
//                 also one masked move for lengths 0..16/32/64 (mask_max) and vector registers
//                 0-15 or 16-31 (register_bank);
//   2b. dispatch  dispatch-tree weights: the production prior, the workload's own, flat, chain;
//   3. prefetch   prefetch distance x hint, on the points that reach the main loop (copies only);
//   3b. alias     4K aliasing: the guard window (copies whose dst is just ahead of src within a
//                 page go backward) x the software-pipelined loop (loads a block ahead of the
//                 stores; unroll <= 4), on the loop points and the misaligned-destination matrix;
//   4. padding    loop alignment x NOP form, on the loop points up to 16 KiB;
//   5. rep        where `rep movs`/`rep stos` beats the loop: a size ladder from the loop's start
//                 (so rep can take over right after the head/tail classes: "rep first", as
//                 FSRM CPUs may favour) and 1 KiB..8 MiB at dst
//                 offsets 0, 1, 4, 15, 33, byte and 8-byte elements, dst as given / aligned to 64
//                 first / rep only when already aligned, each also with the copies that would
//                 4K-alias handed to the loop (alias_window); the threshold T maximises the summed
//                 log-speedup over the ladder
//                 sizes >= T and must gain >= 3% in total (else never);
//   6. nt         where non-temporal stores beat the best so far: 256 KiB..64 MiB, one stream or
//                 2 or 4 interleaved page streams (nt_pages), same rule;
//   then a second pass over 1-3 with the thresholds in place, and a final interleaved
//   measurement of the winner on the whole workload (the table). clear_page has one length, so
//   one flat stage over loop / non-temporal loop (width x unroll) / rep stosb / rep stosq.
// A stage keeps the current choice unless a candidate wins by >= 1% (ties go to the simpler
// configuration), which keeps two runs from flip-flopping on noise.
#pragma once

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
  double budget_seconds = 40;   ///< wall-clock budget of the search (stages 1-5), seconds: 1..86400
  std::uint64_t seed = 1;       ///< orders candidates and seeds verification; same seed, same order
  bool quick = false;           ///< fewer rounds and candidates (about 10 s)
  CpuInfo cpu = CpuInfo::host();///< features to tune for (cap it to tune a lower ISA level)
  VerifyOptions verify;         ///< conformance checks every candidate must pass
  /// Progress lines (no trailing newline); autotune prints them on stderr.
  std::function<void(const std::string&)> progress;
};

struct TuneStats {
  unsigned built = 0;      ///< distinct candidates generated
  unsigned rejected = 0;   ///< failed verification (never timed)
  unsigned timed = 0;      ///< candidates that reached timing
  std::uint64_t verify_cases = 0;
  double seconds = 0;      ///< wall time of the whole tune() call
};

struct TuneResult {
  Routine routine;                   ///< the verified winner
  std::vector<MeasuredPoint> points; ///< final measurement on the workload
  TuneStats stats;
  std::vector<std::string> log;      ///< one line per stage decision
};

/// The system memcpy, called through a pointer the compiler cannot see through.
CopyFn system_memcpy();

/// The system routine an operation is compared with: glibc's memcpy, memmove, memset, and
/// memset(page, 0, 4096) for clear_page. An entry point of the operation's call form.
const void* system_routine(Operation op);

/// What the baseline column is called: "system memcpy", "system memmove", "system memset",
/// "memset(0) page".
std::string baseline_name(Operation op);

/// The search budgets tune() accepts, in seconds (as `autotune --budget`).
inline constexpr double kMinBudgetSeconds = 1;
inline constexpr double kMaxBudgetSeconds = 86400;

/// kInvalidArgument unless `budget_seconds` is a number from kMinBudgetSeconds to
/// kMaxBudgetSeconds (NaN and infinities are not): "budget_seconds must be between 1 and 86400,
/// got nan". tune(), and so tune_and_install() and copysynth_tune(), give this message.
Status check_budget(double budget_seconds);

/// Tunes opt.operation for `w` on the host. Errors: kInvalidArgument for an empty workload or a
/// budget check_budget() refuses (checked first, before anything runs); kVerifyFailed if the
/// default candidate does not pass (a copysynth bug).
Result<TuneResult> tune(const Workload& w, const TuneOptions& opt);

/// Measures `r` against the system routine of its operation on every point of `w`, interleaved,
/// `rounds` per point, in three passes over the workload, each pass on freshly mapped buffers;
/// each figure is the median of the three.
std::vector<MeasuredPoint> measure_table(const Routine& r, const Workload& w, unsigned rounds,
                                         const std::function<void(const std::string&)>& progress = {});

/// The seeds-style table: "Len  Src/Dst align  system memcpy GB/s  tuned GB/s  speedup" (the
/// baseline named for `op`), one row per point, and a last line with the geometric-mean speedup.
std::string format_table(const std::vector<MeasuredPoint>& points, Operation op = Operation::kMemcpy);

/// The wisdom entry of a tune result: its operation, `workload` (the workload's name), the
/// winner's plan, the hash of its code and the final measurement.
WisdomEntry wisdom_entry(const TuneResult& r, const std::string& workload);

/// The table for a commit message, in the layout of the patches copysynth started from:
///   "Len  Src/Dst align     old     new  speedup"
/// one row per point (Len as size_label(): 64, 4096, 1M, ...; alignments in bytes from a 64-byte
/// boundary), old = the system routine and new = the tuned one in ns per call (median TSC time,
/// both measured in the same run; two decimals below 100 ns, one below 10 us, none above),
/// speedup = old / new; then the geometric-mean speedup. Columns widen to fit. The
/// caption, when not empty, comes first (say what old and new are and where they were measured).
/// Distribution points (with a label) give one row each with the label in place of Len and
/// alignments.
std::string format_patch_table(const std::vector<MeasuredPoint>& points, const std::string& caption = {});

/// Geometric mean of tuned/baseline over the points (1.0 when empty).
double geomean_speedup(const std::vector<MeasuredPoint>& points);

}  // namespace copysynth
