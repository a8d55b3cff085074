// copysynth — the search's decision core: rules over cost tables, never the clock.
//
// The search (tuner.cpp) builds candidates, times them (timing.hpp) and hands the costs here;
// these functions decide — which candidate replaces the incumbent, where a threshold goes,
// which routine wins a size class, where a peer still beats the winner — from the numbers
// alone, so every rule is unit-tested on synthetic tables (tests/test_decide.cpp). The shape
// is Highway's hwy/auto_tune.h (candidates, costs notified, best out) and FFTW's planner
// (kernel/planner.c: the planner compares costs and never measures).
//
// Units: a cost is any positive time per call (the tuner passes TSC ticks per call), lower is
// better; a spread is in the same unit (the tuner passes the median absolute deviation). A
// ratio r = cost(reference) / cost(candidate): r > 1 means the candidate is faster.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace copysynth::decide {

/// cost[c][j]: candidate (or peer) c on case j. spread[c][j]: its measured spread, same unit
/// (may be left empty: then no case is noisier than `min_noise` below). weight[j]: how much case
/// j counts (empty: all 1).
struct CostTable {
  std::vector<std::vector<double>> cost;
  std::vector<std::vector<double>> spread;
  std::vector<double> weight;
  std::size_t rows() const { return cost.size(); }
  std::size_t cases() const { return cost.empty() ? 0 : cost.front().size(); }
};

/// Extra weight of a case where the candidate is slower than the reference: the score counts a
/// loss (1 + kLossWeight) times, so a loss at one length is not bought back by a larger win at
/// another (the targets are per length: never slower than what the user already has).
inline constexpr double kLossWeight = 3.0;

/// The loss-weighted geometric mean of cost(ref_j) / cost(c, j) over the cases, where ref_j is
/// the reference cost of case j (e.g. the system routine's, or the best peer's):
///   exp( sum_j w_j * (l_j + kLossWeight * min(l_j, 0)) / sum_j w_j ),  l_j = log(ref_j / cost_cj).
/// 1.0 for no cases. Costs <= 0 are skipped (a case that could not be timed).
double score(const std::vector<double>& cost, const std::vector<double>& ref, const std::vector<double>& weight = {});

/// Per case, the lowest cost over `rows` of the table (the best peer at each case).
std::vector<double> best_of(const CostTable& t, const std::vector<std::size_t>& rows);

/// The incumbent rule. scores[0] is the incumbent; the others are challengers listed simplest
/// first. A challenger replaces the incumbent only when its score is at least (1 + margin) times
/// the incumbent's; among the challengers that do, the highest score wins, and ties within
/// `margin` of that go to the one listed first (the simpler configuration). Returns the index
/// kept (0: the incumbent). Keeps two runs from flip-flopping on noise.
std::size_t pick(const std::vector<double>& scores, double margin = 0.01);

/// The incumbent rule of pick() with a second judge for near ties. Where pick() keeps the
/// incumbent (no challenger beats it by `margin`), so does this: the incumbent keeps its place
/// whatever the tiebreak says. Otherwise every challenger that beats the incumbent by `margin`
/// and comes within `tie` (relative) of the highest such score counts as tied, and so does the
/// incumbent if it comes within `tie` of that score; the tied one with the highest `tiebreak[i]`
/// replaces pick()'s choice if its tiebreak is more than `tiebreak_margin` (relative) above that
/// choice's (a tiebreak difference inside its own noise decides nothing). The tuner's blended
/// stages pass the production mix's speedup as `tiebreak`, 0.05 as `tie` and 0.02 as
/// `tiebreak_margin`: where the blend of points and mix cannot tell two configurations apart
/// (near-identical mask_max 128 candidates spread 2-7 % within one small stage for memcpy on a
/// Zen 5 host, mask_max 64 came 3-8 % behind them in the blend and 3-12 % in the mix, and noise
/// picked 64 in some tunings: docs/performance.md, twenty-first round), the calls of real
/// programs decide. Within the band the scores' other part counts for nothing. `tiebreak`
/// shorter than `scores` counts missing entries as 0. Returns the index kept (0: the incumbent).
std::size_t pick_tiebreak(const std::vector<double>& scores, const std::vector<double>& tiebreak,
                          double margin = 0.01, double tie = 0.05, double tiebreak_margin = 0.02);

/// The successive-halving cut of a stage's first, short round: which candidates go on to the
/// full round. scores[i]: candidate i's score in the short round (higher is better; index 0 the
/// incumbent). Keeps the incumbent, then the highest-scoring others until `keep` are kept (all
/// where there are no more), then, where `group` is given (one value per candidate, e.g. the
/// masked class a small-length candidate takes), the highest-scoring candidate of each group none
/// of whose members is kept yet, in order of score. So one short round cannot
/// cut a whole class: a class whose point scores dropped in one process (the small stage's 0..128
/// in the twenty-ninth and thirtieth rounds: docs/performance.md) still reaches the full round,
/// where the production mix's tie rule sees it. Returns indices into `scores`, the incumbent
/// first, then in the order kept; candidates past the end of a shorter `group` are in no group
/// (kept by score only).
std::vector<std::size_t> halving_keep(const std::vector<double>& scores, std::size_t keep,
                                      const std::vector<unsigned>& group = {});

/// The incumbent rule when each challenger differs from the incumbent at other cases (a rep
/// band from 32 KiB, a non-temporal threshold at 16 MiB): challenger i (rows 1.. of `cost`)
/// and the incumbent (row 0) are both scored (score()) against `ref` on `weight[i]` (per case;
/// where the two rows run different code), and pick() decides over the ratios
/// score_i / score_0, the incumbent's ratio being 1. So the cases where a challenger runs the
/// incumbent's own code do not dilute it, and another challenger's cases do not decide it. A
/// challenger with no weighted case has ratio 1 and is never picked. `ratios`, when given,
/// receives the ratios (incumbent first). Returns the index kept (0: the incumbent).
std::size_t pick_pairwise(const std::vector<std::vector<double>>& cost, const std::vector<double>& ref,
                          const std::vector<std::vector<double>>& weight, double margin = 0.01,
                          std::vector<double>* ratios = nullptr);

/// pick_pairwise with a margin per challenger (margins[i] for row i; margins[0] is not used):
/// challenger i qualifies when its ratio is at least 1 + margins[i]; among those the highest
/// ratio wins, and one listed earlier wins instead if its ratio is within 1 % of that. A
/// missing margin counts as 0.01. With `ref` the incumbent's own costs the ratios are the
/// challengers' loss-weighted speedups over it, in the units of pairwise_margin().
std::size_t pick_pairwise(const std::vector<std::vector<double>>& cost, const std::vector<double>& ref,
                          const std::vector<std::vector<double>>& weight, const std::vector<double>& margins,
                          std::vector<double>* ratios = nullptr);

/// A size ladder's verdict on a variant (rep string instructions, non-temporal stores) that
/// takes over every length >= T from the base routine.
/// gain[p][s]: log(cost_base / cost_variant) for use pattern p (copy, copy+read, copy+write: the
/// objective) at ladder size s, sizes ascending. check[q][s]: the same for patterns that only
/// veto (the cold-cache case). A threshold at size index t is admissible when, for every row of
/// gain and check, no size s >= t loses by more than `tolerance` (log(cost) units, e.g.
/// log(1.03)) and, for every row of gain, the sum over s >= t is not negative: a variant is a
/// win only where it wins or ties each way the data is used (a tie: a row where it runs the
/// base's own code, e.g. a misaligned dst under a rep class for aligned dst only). Among
/// admissible t, the one with the largest
/// mean-over-patterns summed gain wins, if that is at least `min_gain`. Returns the size index,
/// or kNoThreshold when no t qualifies.
inline constexpr std::size_t kNoThreshold = std::numeric_limits<std::size_t>::max();
struct ThresholdChoice {
  std::size_t index = kNoThreshold;  ///< first ladder size that takes the variant
  std::size_t end = 0;               ///< one past the last ladder size that takes it (the
                                     ///< ladder's length: every size from `index` on)
  double gain = 0;                   ///< its mean-over-patterns summed log gain
  std::string why;                   ///< one line: what decided it (for the tuning log)
};
/// `band` = false: only suffixes [t, n) of the ladder (a threshold); true: also bands [t, e)
/// that hand the sizes from e on back to the base (rep_stop), under the same rules.
/// `start_ok` (empty: every size): only sizes s with start_ok[s] may be the first that takes the
/// variant (non-temporal stores start only where they gain the copy read back:
/// nt_starts_where_read_gains).
ThresholdChoice choose_threshold(const std::vector<std::vector<double>>& gain,
                                 const std::vector<std::vector<double>>& check, double tolerance,
                                 double min_gain, bool band = false, const std::vector<bool>& start_ok = {});

/// The sizes where a non-temporal threshold may start: those where its copy-read-back row
/// `read` gains more than `min_read_gain` (log units; 1 %, the tuning log's resolution). A
/// threshold is a win only where it wins the patterns that use the data; at its first size a
/// tie read back does not count as one: in a Debian 12 memcpy tuning (Zen 5, 32 MiB L3) the
/// 32-byte non-temporal loop tied rep movsb read back at 16 MiB on the ladder (1.00) and took
/// it, and the report then read that copy back at 0.85x the speed of the other tuning's routine,
/// which ran rep there (14.50 against 17.00 GB/s: docs/perf/nt-read-start/). Ties above the start do not veto (at 64 MiB both
/// stream from memory). `read` out of range: every size.
std::vector<bool> nt_starts_where_read_gains(const std::vector<std::vector<double>>& gain, std::size_t read,
                                             double min_read_gain = 0.00995033085316809);  // log(1.01)

/// Up to two bands of a ladder for a variant: choose_threshold's best single band (band = true),
/// or a band [index, end) and a second from `resume` to the ladder's end, with at least one size
/// between them left to the base (rep_threshold, rep_stop, rep_resume: rep movsb where it wins
/// in the caches and beyond them, the loop between). Each band must be admissible under
/// choose_threshold's rules (no row loses more than `tolerance` at a size, no objective row
/// loses over the band) and gain at least `min_gain` on its own; two bands are taken when their
/// summed gain beats the best single band's. So one size where the variant loses one use
/// pattern (a Zen 5 memcpy: rep movsb read back 0.95x at 256 KiB while it won 17-19 % at 64 and
/// 128 KiB; docs/perf/debian12/tune.log at commit 3e43156) no longer leaves every size below it
/// to the base.
struct BandsChoice {
  ThresholdChoice band;                 ///< the first band; gain: both bands' summed gain
  std::size_t resume = kNoThreshold;    ///< the second band's first size; kNoThreshold: one band
};
BandsChoice choose_bands(const std::vector<std::vector<double>>& gain, const std::vector<std::vector<double>>& check,
                         double tolerance, double min_gain);

/// A variant that takes the first sizes of a ladder up to a stop and hands the rest back to the
/// base (rep_alias_loop: the rep band's 4K-aliasing copies in a loop of 32-byte vectors below
/// the stop; the variant's start is fixed, so only the stop is chosen). The rows and the rule
/// are choose_threshold's: gain[p][s] = log(cost_base / cost_variant) for objective row p (a use
/// pattern at a placement) at ladder size s, check[q][s] the veto rows; among the ranges
/// [0, e), e = 1..n, that are admissible (no row loses more than `tolerance` at any size, no
/// objective row loses in total), the one with the largest mean-over-rows summed gain wins if
/// that is at least `min_gain`; among equal gains the shorter range. Returns index 0 and `end`
/// = e (e == n: every size of the ladder), or kNoThreshold.
ThresholdChoice choose_stop(const std::vector<std::vector<double>>& gain,
                            const std::vector<std::vector<double>>& check, double tolerance, double min_gain);

/// One rep band that runs variant a below a split length and variant b from it on (rep with
/// dst aligned first, then rep only for a 64-aligned dst, or for dst and src mutually aligned:
/// `rep_aligned_from`, `rep_aligned_mutual`), scored from the
/// two variants' rows of one ladder (same rows, same rounds, as for choose_threshold): for each
/// split index x in 1..n-1 the composite's rows are a's at sizes < x and, from x on, b's on the
/// rows where the composite runs b's code (b_rows[r] / b_check_rows[r] true; an empty mask: every
/// row) and a's on the others (where b's alignment test passes: the composite keeps a's
/// dst-aligning prologue);
/// its band comes from choose_threshold(rows, check rows, tolerance, min_gain, band = true).
/// Only a band that runs both (it starts below x and ends after x) is a composite — others are
/// one of the two variants. The band ends inside the ladder (end <= n - 1: the rows are scored
/// without the last size): the split covers the first rep band only, so the sizes the ladder
/// did not measure go back to the loop (rep_stop) and the stage beyond the caches decides them
/// for every dst (a Zen 5 run whose split reached 64 MiB left a misaligned 64 MiB copy to the
/// loop at 0.72-0.83x rep movsb and non-temporal stores; docs/performance.md, ninth round).
/// The split with the largest gain wins (the earliest on a tie); `split` is kNoThreshold when
/// none qualifies. A table of fewer than three sizes gives none.
struct SplitChoice {
  std::size_t split = kNoThreshold;  ///< first ladder size index that takes variant b
  ThresholdChoice band;              ///< the composite's band (index, end, gain, why)
};
SplitChoice choose_split(const std::vector<std::vector<double>>& a_gain, const std::vector<std::vector<double>>& a_check,
                         const std::vector<std::vector<double>>& b_gain, const std::vector<std::vector<double>>& b_check,
                         double tolerance, double min_gain, const std::vector<bool>& b_rows = {},
                         const std::vector<bool>& b_check_rows = {});

/// Two variants that each take every length from a threshold on, timed against one base in the
/// same rounds, where the later threshold takes over from the earlier one: beyond the caches,
/// rep string instructions again (`rep_resume`, variant a) up to non-temporal stores
/// (`nt_threshold`, variant b) — the ladder's order (templates/include/copysynth/ladders.hpp).
/// a_gain/a_check and b_gain/b_check are each variant's rows against the base, as for
/// choose_threshold (same rows, same ladder). Every composite is scored on its own rows against
/// the base (a from ta to below tb, b from tb on; a alone; b alone) under choose_threshold's
/// rules (no size of any row loses more than `tolerance`, no objective row loses in total, mean
/// over patterns of the summed gain >= min_gain). A composite with both variants must beat the
/// best single one by a further `min_gain`: the second threshold has to earn its place. Since
/// the variants were timed in the same rounds, b's rows minus a's are b against a: b takes the
/// sizes from tb (in a pair, or alone where a alone is admissible, from where a would run) only
/// if it loses to a in no row (check rows included) by more than `tolerance` — non-temporal
/// stores that win the copy alone but lose the copy read back to rep again do not take those
/// sizes. An empty table: that variant is absent.
struct TwoThresholds {
  std::size_t a = kNoThreshold;  ///< first ladder size index taking variant a (up to b)
  std::size_t b = kNoThreshold;  ///< first ladder size index taking variant b (to the end)
  double gain = 0;               ///< the composite's mean-over-patterns summed log gain
  std::string why;               ///< one line: what decided it (for the tuning log)
};
/// `b_start_ok` (empty: every size): b's first size must have b_start_ok set (see
/// choose_threshold's start_ok).
TwoThresholds choose_two_thresholds(const std::vector<std::vector<double>>& a_gain,
                                    const std::vector<std::vector<double>>& a_check,
                                    const std::vector<std::vector<double>>& b_gain,
                                    const std::vector<std::vector<double>>& b_check, double tolerance,
                                    double min_gain, const std::vector<bool>& b_start_ok = {});

/// The gap between two rep bands (rep_stop .. rep_resume: the loop there, rep string
/// instructions below and above it). Each band was chosen by a stage of its own, each against
/// the loop, so the gap is what is left where neither stage's rule admitted rep — not a place
/// where the loop was shown to win: on a Zen 5 host the loop took one ladder size, 256 KiB,
/// because rep lost the copy read back by 5 % there, while it won the copy alone by 5-21 % and
/// cold by 16 % (docs/performance.md, fifteenth round). Between two rep bands rep is the
/// incumbent and the loop the variant: gain[p][s] = log(cost_rep / cost_loop) for use pattern
/// p at the gap's ladder size s (ascending), check[q][s] the same for the veto rows, and the
/// loop keeps the sizes of choose_threshold(gain, check, tolerance, min_gain, band = true):
/// the range whose summed gain, averaged over the use patterns, is largest and at least
/// `min_gain`, where no pattern's sum is negative and no row (objective or check) loses more
/// than `tolerance` at any size. Returns that choice: index == kNoThreshold closes the gap (rep
/// throughout); else the loop keeps sizes [index, end) and rep takes the sizes below index
/// (rep_stop moves up) and from end on (rep_resume moves down, when end < the gap's length).
ThresholdChoice choose_gap(const std::vector<std::vector<double>>& gain, const std::vector<std::vector<double>>& check,
                           double tolerance, double min_gain);

/// A threshold's confirmation in solo runs (the tuner's confirmed_solo(): each routine timed in
/// runs of its own, no neighbour's cache footprint). runs[c]: case c's ratios cost(base) /
/// cost(chosen), one per run (a case: one size and use pattern); the case's ratio is their
/// median, so one run hit by interference does not decide it. Confirmed when the geometric mean
/// of the cases' ratios is >= min_gain and no case's ratio is below 1 / max_loss.
inline constexpr std::size_t kNoCase = std::numeric_limits<std::size_t>::max();
struct Confirmation {
  bool ok = false;
  double gain = 1;          ///< geometric mean of the cases' ratios
  double worst_ratio = 1;   ///< the lowest case ratio, or 1 when no case is below 1
  std::size_t worst = kNoCase;  ///< that case; kNoCase when no case is below 1 (nothing lost)
};
Confirmation confirm(const std::vector<std::vector<double>>& runs, double min_gain = 1.01, double max_loss = 1.06);

/// The noise of comparing rows a and b at case j, as a relative figure: the larger of their
/// spread/cost, and at least min_noise.
double case_noise(const CostTable& t, std::size_t a, std::size_t b, std::size_t j, double min_noise);

/// The margin by which row b must beat row a on the cases of `weight` (those with weight > 0) for
/// pick_pairwise: the median of their case_noise(t, a, b, j, min_noise) (the upper median for an
/// even number) over the square root of their number, and at least `min_margin`. So a
/// difference judged on one or two cases must clear their measured noise (a relative figure,
/// e.g. 0.02 for 2 %), and one judged on many only `min_margin`. `min_margin` when no case has
/// weight.
double pairwise_margin(const CostTable& t, std::size_t a, std::size_t b, const std::vector<double>& weight,
                       double min_noise = 0.02, double min_margin = 0.01);

/// After pick_pairwise over challengers that each differ from the incumbent at other cases:
/// their ratios are over different cases (a composite judged on the 2 cases where it brings a
/// rep band, the same composite with rep for 4K-aliasing copies on those 2 and 11 more), so the
/// highest ratio is not the best routine. The challengers that qualified (`qualified`: rows of
/// t, each beat the incumbent by its own margin) are judged against the one kept, `kept`, where
/// each pair runs different code (differ(a, b): per-case weights, as pick_pairwise's), against
/// the kept row's own costs and by pairwise_margin(t, kept, i, differ(kept, i)); the one
/// pick_pairwise picks there is kept and the others are judged against it in turn, until none
/// wins or every row was kept once (no cycle: a row kept once is not judged again, so the last
/// row kept is not compared again with rows kept before it). The caller checks that each row of
/// `qualified` beat the incumbent; `kept` itself and rows out of range are ignored in it.
/// `steps`, when given, receives each change (row kept, its ratio over the row it replaced).
/// Returns the row kept (`kept` when none wins).
std::size_t settle_pairwise(const CostTable& t, std::size_t kept, const std::vector<std::size_t>& qualified,
                            const std::function<std::vector<double>(std::size_t, std::size_t)>& differ,
                            std::vector<std::pair<std::size_t, double>>* steps = nullptr);

/// A size class (or any group of cases) where a peer beats the routine under test.
struct Loss {
  std::size_t group = 0;  ///< index into the groups passed in
  std::size_t peer = 0;   ///< row of the peer that wins by the most
  double ratio = 1;       ///< geometric mean over the group's cases of cost(peer) / cost(routine) (< 1)
  double noise = 0;       ///< the group's relative noise (median of the cases' case_noise())
};

/// Groups of cases (group[j] = group of case j; size `groups`) where some row of `peers` beats
/// row `routine` by more than the measured noise: geomean over the group of cost(peer)/cost(routine)
/// < 1 - noise. One Loss per such group (the peer that wins most), groups in order.
std::vector<Loss> losses_to_peers(const CostTable& t, std::size_t routine, const std::vector<std::size_t>& peers,
                                  const std::vector<std::size_t>& group, std::size_t groups, double min_noise = 0.02);

/// Per group, the row of `rows` (rows[0] the incumbent) that the incumbent rule picks on the
/// group's cases, scored against the per-case best of `reference` rows (best_of). A row wins a
/// group only by its score there; used to see which configuration each size class wants.
std::vector<std::size_t> per_group_pick(const CostTable& t, const std::vector<std::size_t>& rows,
                                        const std::vector<std::size_t>& reference,
                                        const std::vector<std::size_t>& group, std::size_t groups,
                                        double margin = 0.01);

/// The start rule of nt_starts_where_read_gains, for a threshold the floor's per-class composite
/// takes from one size class's pick (tuner/src/tuner.cpp, floor_stage): whether row `nt` (a
/// configuration that runs non-temporal stores at the length of `cases`) is faster than every
/// row of `others` at each of `cases` (the table's columns of one length, timed with the copy
/// read back) by more than `min_gain` (log units; 1 %). The floor passes as `others` every
/// configuration it timed that runs other code at that length (the loop, rep, another
/// non-temporal form; not the peers). The composite's threshold then starts at that measured
/// length, never at a shorter one no column timed: a pick's threshold of 24 MiB (the AOCL-LibMem
/// and glibc seeds', for a 32 MiB L3), judged on 64 MiB alone, reached two final routines of the
/// Debian 13 tunings of commit 733ea56 (memmove and fill; docs/perf/debian13/tune2.log and
/// tune.log as committed in 6af9e21).
/// True when `others` is empty (nothing measured runs other code). False when `cases` is empty,
/// a row or case is out of range, or a cost is not positive (a case that could not be timed).
bool nt_start_gains(const CostTable& t, std::size_t nt, const std::vector<std::size_t>& others,
                    const std::vector<std::size_t>& cases, double min_gain = 0.00995033085316809);  // log(1.01)

}  // namespace copysynth::decide
