// copysynth — the staged search (see tuner.hpp).
#include "copysynth/tuner.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <memory>
#include <new>
#include <optional>
#include <random>
#include <locale>
#include <sstream>

#include "copysynth/c_format.hpp"
#include "copysynth/decide.hpp"
#include "copysynth/ladders.hpp"
#include "copysynth/peers.hpp"
#include "copysynth/perf_counters.hpp"
#include "copysynth/report.hpp"

namespace copysynth {

namespace {
double now() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

std::string fmt(const char* f, double v) {
  char b[64];
  snprintf_c(b, sizeof b, f, v);
  return b;
}
}  // namespace

namespace {

/// Largest size of a workload (sizes the bench buffers).
std::uint64_t max_size(const std::vector<Point>& pts) {
  std::uint64_t m = 0;
  for (const auto& p : pts) m = std::max(m, p.size);
  return m;
}

/// How the dispatch tree is weighted (CopyPlan class weights): by the production prior, by the
/// workload's own points, flat (a balanced tree), hot-first (hot_first(): the class of 33 bytes
/// first, glibc's AVX2 order) or smallest-first (a chain of compares).
enum class Dispatch { kPrior, kWorkload, kFlat, kHot, kChain };
const char* dispatch_name(Dispatch d) {
  switch (d) {
    case Dispatch::kPrior: return "prior";
    case Dispatch::kWorkload: return "workload";
    case Dispatch::kFlat: return "flat";
    case Dispatch::kHot: return "hot";
    case Dispatch::kChain: return "chain";
  }
  return "?";
}

/// From this length on (bytes) a copy is timed from a set cache state and, where a threshold
/// is decided, with the data used afterwards (timing.hpp: CacheState, Use).
constexpr std::uint64_t kLargeCopy = 64 * 1024;

/// The rep stage's rep variants move lengths above this in pieces of this many bytes
/// (rep_chunk, params.hpp): on an AMD family 26 guest rep movsb / rep stosb switched to a
/// streaming protocol at a count of exactly 4 MiB for minutes at a time (rep stosb 117 -> 38
/// GB/s, a fill read back 54 -> 19), and 2 MiB pieces kept the cached speed while it was on
/// (docs/performance.md, eleventh round). Half the switch's count, so a CPU switching at
/// 2-4 MiB is covered too; a piece costs one more rep start-up per 2 MiB. One variant of each
/// byte form stays one instruction, for a CPU whose streaming rep wins.
constexpr std::uint64_t kRepChunk = 2ull << 20;

/// Where a rep class in kRepChunk pieces runs as one instruction again (rep_chunk_stop), unless
/// the stage beyond the caches finds one instruction winning from a smaller length: beyond the
/// last-level cache the pieces' speed moves by a third from run to run while one instruction's
/// stays with glibc's and AOCL-LibMem's, which use it (AMD family 26, fill of 64 MiB: one
/// instruction 1.02-1.39x the pieces in all 56 cells beside every neighbour, and a tuning that
/// kept the pieces there had the report's fill of 64 MiB at 0.76-0.81x glibc:
/// docs/performance.md, twentieth, twenty-second and twenty-third rounds). The top of the
/// stage's ladder.
constexpr std::uint64_t kRepChunkTop = 64ull << 20;

/// Calls replayed per round for a distribution workload: long enough that branch predictors
/// cannot learn the sequence by heart (a 4096-call sequence replayed in a loop partly is).
constexpr std::size_t kReplayCalls = 32768;

/// One point of the search: parameters plus the dispatch-tree weighting.
struct Candidate {
  CopyParams params;
  Dispatch dispatch = Dispatch::kPrior;
};

/// Thrown when a verification could not map its test buffers (VerifyReport::out_of_memory):
/// the search stops with kSystem (tune()) instead of dropping the candidate as if its code had
/// failed, which made a search under `ulimit -v` quietly leave out the candidates with long
/// lengths (rep bands, non-temporal stores) and end with another winner than without the limit.
struct VerifyOutOfMemory {
  std::string subject;  ///< "a candidate", "the winner (its full check ...)"
  std::string what;
};

class Search {
 public:
  Search(const Workload& w, const TuneOptions& opt) : w_(w), opt_(opt), t0_(now()), rng_(opt.seed) {
    timing_.rounds = opt.quick ? 7 : 31;
    if (w.is_distribution()) {
      calls_ = replay_calls(w, kReplayCalls, opt.seed);
      replay_buf_ = std::make_unique<ReplayBuffers>(w.distribution->max_size(), w.cold);
    } else if (opt.operation != Operation::kClearPage) {
      // A point workload times each length in a loop that branch predictors learn by heart, so
      // it cannot see what the small classes cost when lengths vary from call to call (dropping
      // the masked class looked free on the seeds and cost 2.4x in ns per call on the
      // production mix). The stages that shape the small lengths also replay the mix of the
      // eight production distributions (production_mix()), when they are installed.
      if (auto mix = production_mix()) {
        mix_calls_ = make_calls(*mix, kReplayCalls, opt.seed);
        mix_buf_ = std::make_unique<ReplayBuffers>(mix->max_size(), false);
      }
    }
  }

  Result<TuneResult> run() {
    ThreadPin pin;
    PerfCounters pmu;
    say(std::string("timing with the TSC (") + fmt("%.3f", tsc_hz() / 1e9) + " GHz), " +
        (pin.ok() ? "pinned to cpu " + std::to_string(pin.cpu()) : std::string("not pinned")) +
        (pmu.available() ? "; hardware counters available: cycles, IPC and LLC misses go in the final table"
                         : "; TSC only: hardware counters unavailable (" + pmu.unavailable() + ")"));
    vmax_ = opt_.cpu.features().max_vector_bytes();
    op_ = opt_.operation;
    say("tuning " + std::string(name_of(op_)) + " against the " + baseline_name(op_));
    Candidate best;  // defaults
    best.params.operation = op_;
    best.params.vector_width = std::min(32u, vmax_);
    if (!get(best))
      return make_error(ErrorCode::kVerifyFailed, "the default routine failed verification: " + last_reject_);

    for (const auto& p : w_.points)
      if (p.size < (1u << 20)) below_1m_.push_back(p);
    if (below_1m_.empty()) below_1m_ = w_.points;
    // A size distribution is scored by replaying its call sequence; the rep and non-temporal
    // thresholds only matter for lengths it never has (they are measured on a ladder from 1 KiB).
    const bool thresholds = !w_.is_distribution() || w_.distribution->max_size() >= 16384;
    if (mix_buf_)
      say("the seeds, kernel, small-length and dispatch stages also replay the production mix (the "
          "eight MemcpyGoogle distributions, " + std::to_string(mix_calls_.size()) +
          " calls): half of the seeds' and kernel stage's score, two thirds of the small-length, "
          "hand-over and dispatch stages'");
    if (w_.is_distribution())
      say("workload " + w_.name + ": " + std::to_string(calls_.size()) + " calls replayed per round, mean " +
          fmt("%.1f", w_.distribution->mean_size()) + " bytes, largest " +
          std::to_string(w_.distribution->max_size()) + (w_.cold ? ", cold cache" : ", hot cache") +
          (w_.recorded.empty() ? "" : "; the program's own windows of calls in program order (" + w_.note + ")") +
          (op_ == Operation::kClearPage ? "" : "; scored by throughput and copy-then-read latency"));

    // Pass 1 sets every coordinate once; pass 2 revisits the kernel, dispatch and prefetch with
    // the thresholds in place (they interact), when the budget allows.
    const bool copy = op_ == Operation::kMemcpy || op_ == Operation::kMemmove;
    if (op_ == Operation::kClearPage) {
      // One length, so one flat stage over every way to clear a page (the clear_page threads:
      // rep stosq, rep stosb, unrolled vector stores, non-temporal stores), then the padding.
      best = clear_page_stage(best);
      if (time_left() && !opt_.quick) best = padding_stage(best);
    } else {
      if (time_left()) best = seed_stage(best);
      for (int pass = 1; pass <= (opt_.quick ? 1 : 2); ++pass) {
        if (pass == 2 && !time_left()) break;
        if (pass == 2) say("second pass over kernel, dispatch" + std::string(copy ? " and prefetch" : ""));
        best = kernel_stage(best);
        if (time_left() && best.params.vector_width.value >= 16) best = small_stage(best);
        // --quick: the rep threshold before the finer stages, so that a short budget still
        // decides it (rep wins 1.3-1.5x on aligned 32 KiB-2 MiB copies on AMD Zen 5).
        if (opt_.quick && time_left() && thresholds) best = rep_stage(best);
        if (time_left()) best = dispatch_stage(best);
        if (time_left() && copy) best = prefetch_stage(best);
        if (pass == 1) {
          if (time_left() && copy) best = alias_stage(best);
          if (time_left() && !opt_.quick) best = padding_stage(best);
          if (time_left() && thresholds && !opt_.quick) best = rep_stage(best);
          if (time_left() && thresholds) best = beyond_caches_stage(best);
          if (time_left() && thresholds && !opt_.quick) best = rep_gap_stage(best);
        }
      }
    }
    if (!time_left()) say("budget of " + fmt("%.0f", opt_.budget_seconds) + " s reached; keeping the best so far");
    // The floor: before anything is written, the winner against every peer, whatever the budget.
    if (!w_.is_distribution() && op_ != Operation::kClearPage) {
      best = floor_stage(best);
      // The floor's per-class composite can open a gap of the loop between two rep bands (its
      // classes are judged on the copy read back alone): judged as one the stages left (a
      // Debian 13 memcpy's composite ran the loop at 4-16 MiB, 0.93x glibc at 4 MiB; fifteenth
      // round). Whatever the budget, as the floor: at most 4 sizes x 10 rows, a comparison each.
      if (thresholds && !opt_.quick) best = rep_gap_stage(best);
      if (thresholds && copy && !opt_.quick) best = alias_loop_stage(best);
    }
    // Pieces no rep class reaches, and a mutual-alignment test no rep class makes, change no
    // byte: left out, so the wisdom file stays readable by builds older than those fields (the
    // routine is verified again, as any new candidate).
    {
      Candidate plain = best;
      plain.params = without_idle_rep_fields(best.params);
      if (plain.params != best.params && get(plain)) best = plain;
    }

    // ---- final measurement ------------------------------------------------------------------
    const Routine* winner = get(best);
    if (!winner) return make_error(ErrorCode::kVerifyFailed, "winner vanished: " + last_reject_);
    say("final: " + label(best) + "; measuring " +
        (w_.is_distribution() ? "the replay" : std::to_string(w_.points.size()) + " points") + " against the " +
        baseline_name(op_));
    TuneResult result{std::move(*pool_.at(key(best))), {}, {}, log_};
    pool_.erase(key(best));
    // Candidates were checked with a stride over the ±72 windows of edges above 1 MiB; the
    // winner gets every length.
    {
      VerifyOptions vo = opt_.verify;
      vo.large_edge_stride = 1;
      const VerifyReport full =
          checked(result.routine, vo, "the winner (its full check: every length near every edge)");
      if (!full.ok())
        return verification_error(full, "the winner " + result.routine.name(),
                                  " (its full check: every length near every edge)")
            .error();
      say("winner verified in full: " + full.summary());
    }
    result.points = measure_table(result.routine, w_, opt_.quick ? 3 : 7, opt_.progress);
    stats_.seconds = now() - t0_;
    result.stats = stats_;
    return result;
  }

 private:
  // ----- stages ----------------------------------------------------------------------------

  Candidate kernel_stage(const Candidate& best) {
    std::vector<Candidate> cands;
    for (unsigned v : {8u, 16u, 32u, 64u}) {
      if (v > vmax_) continue;
      for (unsigned u : {1u, 2u, 4u, 8u, 16u}) {
        if (opt_.quick && (u == 1 || u == 16 || v == 8)) continue;
        Candidate c = best;
        c.params.vector_width = v;
        c.params.unroll = u;
        // Width-dependent choices of the small stage start over at a new width.
        if (v != best.params.vector_width.value) {
          c.params.head_tail_width = 0;
          c.params.head_tail_max = 0;
        }
        if (v < 16) {
          c.params.register_bank = RegisterBank::kLow;
          c.params.mask_max = 0;
          c.params.mask_shift = false;
        }
        c.params.shift_realign = false;
        if (v != 64) c.params.nt_width = 0;  // a narrower non-temporal loop is an AVX-512 routine's option
        if (v < 16 || u > 4) c.params.loop_pipeline = false;  // it needs two groups of u vectors
        cands.push_back(c);
        // The kernel-style GPR loop also comes in the shift-realigning form (memcpy).
        if (v == 8 && op_ == Operation::kMemcpy && !opt_.quick) {
          c.params.shift_realign = true;
          cands.push_back(c);
        }
      }
    }
    WithMix m(*this, Mix::kHalf);
    return stage("kernel", best, cands, below_1m_, /*halving=*/true);
  }

  /// The peers' strategies, where the parameter space can express them (peers.hpp; the vendor's
  /// and glibc's published choices for this CPU), as complete configurations: the search starts
  /// from the best of them, and the floor stage falls back on them.
  ///   avx2_loop   4 x 32-byte loop, no rep, no non-temporal stores (the plain AVX2 loop peer);
  ///   rep_first   `rep movsb` / `rep stosb` from the loop's start (the rep_movsb peer; FSRM);
  ///   glibc       4 vectors per iteration, `rep movsb` from 2112 bytes (glibc's
  ///               rep_movsb_threshold default for 16-byte vectors, scaled as glibc scales it:
  ///               x V/16), non-temporal stores from 3/4 of the L3 (glibc's
  ///               non_temporal_threshold);
  ///   aocl        AMD AOCL-LibMem's choices on Zen (src/threshold.c of its release): no rep
  ///               string instructions, the widest vectors, non-temporal stores from 3/4 of the L3.
  std::vector<std::pair<std::string, Candidate>> seeds(const Candidate& def) const {
    std::vector<std::pair<std::string, Candidate>> out;
    const std::uint64_t l3 = opt_.cpu.caches().l3 ? opt_.cpu.caches().l3 : (32ull << 20);
    Candidate plain = def;
    plain.params.rep_threshold = kNever;
    plain.params.rep_stop = kNever;
    plain.params.rep_resume = kNever;
    plain.params.rep_aligned_from = kNever;  // the peers' rep takes any dst
    plain.params.rep_aligned_only = false;
    plain.params.rep_aligned_mutual = false;
    plain.params.rep_chunk = kNever;         // ... as one instruction
    plain.params.rep_chunk_stop = kNever;
    plain.params.nt_threshold = kNever;
    plain.params.nt_width = 0;  // the seeds' own widths (a 32-byte routine has no narrower loop)
    plain.params.prefetch_distance = 0;
    plain.params.prefetch_min = 0;
    plain.params.unroll = 4;
    if (vmax_ >= 32) {
      Candidate c = plain;
      c.params.vector_width = 32;
      out.emplace_back("avx2_loop", c);
    }
    {
      Candidate c = plain;
      c.params.rep_threshold = 0;  // raised to the loop's start (docs/architecture.md, invariant 10)
      c.params.rep_unit = 1;
      out.emplace_back("rep_first", c);
    }
    {
      Candidate c = plain;
      c.params.vector_width = std::min(32u, vmax_);
      c.params.rep_threshold = 2112ull * std::max(1u, c.params.vector_width.value / 16);
      c.params.rep_stop = opt_.cpu.caches().l2 ? opt_.cpu.caches().l2 : kNever;  // rep_movsb_stop_threshold on AMD
      c.params.rep_unit = 1;
      c.params.nt_threshold = l3 / 4 * 3;
      out.emplace_back("glibc", c);
    }
    {
      Candidate c = plain;
      c.params.vector_width = vmax_;
      c.params.nt_threshold = l3 / 4 * 3;
      out.emplace_back("aocl", c);
    }
    return out;
  }

  /// The first stage: the default routine against the peers' strategies (seeds()), on the
  /// points below 1 MiB and the production mix. The search goes on from the winner.
  Candidate seed_stage(const Candidate& def) {
    std::vector<Candidate> cands;
    for (auto& [name, c] : seeds(def)) cands.push_back(c);
    WithMix m(*this, Mix::kHalf);
    Candidate out = stage("seeds", def, cands, below_1m_, false);
    // The points below 1 MiB judge the kernel; the thresholds are the threshold stages' to
    // decide on used copies (and a seed's edges above 1 MiB would slow every candidate's
    // verification). The floor stage tries the seeds again whole.
    out.params.rep_threshold = kNever;
    out.params.rep_stop = kNever;
    out.params.rep_resume = kNever;
    out.params.rep_aligned_from = kNever;
    out.params.nt_threshold = kNever;
    return out;
  }

  /// `kernel` with the large-length choices of `from`: its rep band (rep_threshold, rep_stop,
  /// rep_resume and how rep runs) and non-temporal threshold (nt_threshold, nt_pages, and
  /// nt_width where `kernel` has 64-byte registers, the only width with a narrower nt loop).
  static Candidate with_thresholds_of(const Candidate& kernel, const Candidate& from) {
    Candidate c = kernel;
    const CopyParams& f = from.params;
    c.params.rep_threshold = f.rep_threshold;
    c.params.rep_stop = f.rep_stop;
    c.params.rep_resume = f.rep_resume;
    c.params.rep_unit = f.rep_unit;
    c.params.rep_align_dst = f.rep_align_dst;
    c.params.rep_aligned_only = f.rep_aligned_only;
    c.params.rep_aligned_from = f.rep_aligned_from;
    c.params.rep_aligned_mutual = f.rep_aligned_mutual;
    c.params.rep_alias_window = f.rep_alias_window;
    c.params.rep_chunk = f.rep_chunk;
    c.params.rep_chunk_stop = f.rep_chunk_stop;
    c.params.nt_threshold = f.nt_threshold;
    take_nt_form(c.params, f);
    return c;
  }

  /// How `from` runs non-temporal stores, onto `to`: nt_pages, and nt_width where `to` has
  /// 64-byte registers (the only width with a narrower nt loop; 0 otherwise). Not the threshold.
  static void take_nt_form(CopyParams& to, const CopyParams& from) {
    to.nt_pages = from.nt_pages;
    to.nt_width = to.vector_width.value == 64 ? from.nt_width.value : 0u;
  }

  /// Size classes of the floor check (bytes): each workload point falls in the first class
  /// whose upper bound is >= its length.
  static constexpr std::uint64_t kFloorClassHi[] = {16,     64,      256,     1024,     4096,    16384,
                                                    65535, 262143, 2097151, 16777215, kNever};
  static std::size_t floor_class(std::uint64_t n) {
    std::size_t g = 0;
    while (kFloorClassHi[g] < n) ++g;
    return g;
  }
  static std::string floor_class_name(std::size_t g) {
    const std::uint64_t lo = g == 0 ? 0 : kFloorClassHi[g - 1] + 1;
    return "n = " + std::to_string(lo) + ".." +
           (kFloorClassHi[g] == kNever ? std::string("max") : std::to_string(kFloorClassHi[g]));
  }

  /// The floor: the winner, the winner without each threshold (and with rep for the 4K-aliasing
  /// copies its rep class hands to the loop), the seeds and every peer of the
  /// operation (peers.hpp) timed in the same rounds at every point of the workload (from 64 KiB
  /// on, warm and with the copy read back), plus a composite of what each size class from 4 KiB
  /// on picks for itself (decide::per_group_pick: a rep band, a non-temporal threshold that
  /// starts at a length timed here: decide::nt_start_gains). Where a
  /// peer beats the winner in a size class by more than the measured noise
  /// (decide::losses_to_peers), every configuration is scored against the best peer at each
  /// point: a seed with another kernel that beats the winner there by 1% (decide::pick)
  /// replaces it, with the winner's thresholds unless its own win where they differ; else the
  /// winner without a threshold (or with rep for 4K-aliasing copies), the composite (also
  /// without non-temporal stores, or with rep for 4K-aliasing copies) or a seed on the winner's
  /// kernel with other thresholds replaces it if it beats the winner itself at the points
  /// where the two run different code (large_lengths_differ) by the median of those points'
  /// noise (at least 2%) over the square root of their number, at least 1% (decide::pick_pairwise,
  /// decide::pairwise_margin); among those that qualify, the one kept is then judged against the
  /// others where they differ (decide::settle_pairwise). A composite that runs the winner's code
  /// at every point is not timed. Every class still lost is printed with the peer and the figure.
  Candidate floor_stage(const Candidate& winner) {
    const std::vector<Peer> ps = peers(op_, opt_.cpu.features());
    if (ps.empty() || w_.points.empty()) return winner;
    std::vector<Candidate> rows{winner};
    std::vector<std::string> names{"winner"};
    // The winner without each of its thresholds, then the peers' strategies on its kernel.
    std::vector<std::pair<std::string, Candidate>> alt;
    if (winner.params.rep_threshold.value != kNever) {
      Candidate c = winner;
      c.params.rep_threshold = kNever;
      c.params.rep_stop = kNever;
      c.params.rep_resume = kNever;
      c.params.rep_aligned_from = kNever;  // no rep class: the fields would change no code
      c.params.rep_chunk = kNever;
      c.params.rep_chunk_stop = kNever;
      alt.emplace_back("the winner without rep", c);
    }
    if (winner.params.nt_threshold.value != kNever) {
      Candidate c = winner;
      c.params.nt_threshold = kNever;
      alt.emplace_back("the winner without non-temporal stores", c);
    }
    // The rep stage handed 4K-aliasing copies to the loop as the loop was then; the kernel's
    // second pass may change that loop (unroll, prefetch) after it. A Debian 13 memcpy tuning
    // took the window against a loop that rep movsb did not beat at 256 KiB (dst 1 byte past
    // src: rep at 0.93-0.98x the loop's speed), then an unroll of 16 without prefetch, and its
    // report ran those copies at 0.77x rep movsb's speed (docs/perf/debian13/tune.log and
    // report-1.txt as committed in 6af9e21: the tuning and report of 733ea56). Only where the two
    // differ somewhere (a rep class that holds them).
    if (winner.params.rep_threshold.value != kNever && winner.params.rep_alias_window.value != 0) {
      Candidate c = winner;
      c.params.rep_alias_window = 0;
      if (first_large_difference(winner.params, c.params) != kNever)
        alt.emplace_back("the winner with rep for 4K-aliasing copies", c);
    }
    for (auto& [name, c] : seeds(winner)) alt.emplace_back("seed " + name, c);
    for (auto& [name, c] : alt) {
      if (std::any_of(rows.begin(), rows.end(), [&](const Candidate& r) { return key(r) == key(c); })) continue;
      rows.push_back(c);
      names.push_back(name);
    }
    std::vector<Candidate> live;
    std::vector<std::string> live_names;
    for (std::size_t i = 0; i < rows.size(); ++i)
      if (get(rows[i])) {
        live.push_back(rows[i]);
        live_names.push_back(names[i]);
      }
    if (live.empty() || key(live[0]) != key(winner)) return winner;
    say("floor: the winner, " + std::to_string(live.size() - 1) + " other configurations and " +
        std::to_string(ps.size()) + " peers (from 64 KiB on: warm, the copy read back)");
    const std::size_t groups = std::size(kFloorClassHi);
    // The workload's points, plus 32, 64 and 128 KiB (dst aligned, 1 byte past a page-aligned
    // src, 4 past with src 2048 past), 512 KiB misaligned both ways and 1, 4 and 16 MiB (1 and
    // 4 MiB also misaligned both ways) when it reaches 1 MiB or more: a point workload's
    // large lengths are few (the seeds have 256 KiB and 64 MiB only), and a rep band or a
    // non-temporal threshold between them would otherwise go unjudged, or be moved by the
    // composite to the next point it has.
    std::vector<Point> pts = w_.points;
    // --quick: lengths of 16 MiB and more at src and dst offset 0 only. Each of them costs
    // about 0.6 s with every configuration and peer timed (4 warm calls per batch, 3 rounds), on
    // a budget of 10 s (docs/performance.md, fifth round).
    if (opt_.quick)
      std::erase_if(pts, [](const Point& p) { return p.size >= (16u << 20) && (p.src_align || p.dst_align); });
    auto add_point = [&](const Point& q) {
      if (std::none_of(pts.begin(), pts.end(), [&](const Point& p) {
            return p.size == q.size && p.src_align == q.src_align && p.dst_align == q.dst_align;
          }))
        pts.push_back(q);
    };
    if (max_size(pts) >= (1u << 20)) {
      // (--quick: 64 KiB, 1 and 4 MiB only.)
      // Each with dst misaligned twice: 1 byte past a page-aligned src (4K-aliasing) and 4 bytes
      // past with src 2048 past (not aliasing): rep and the loop each win one of the two on some
      // CPUs (docs/performance.md, thirteenth round), so a floor that saw one only would choose
      // for that one.
      for (std::uint64_t n : {32ull << 10, 64ull << 10, 128ull << 10}) {
        if (opt_.quick && n != (64u << 10)) continue;
        add_point({n, 0, 0});
        add_point({n, 0, 1});
        if (op_ != Operation::kFill) add_point({n, 2048, 4});  // (a fill has no src)
      }
      // Each one page inside the band its power of two begins (timed_length(), tuner.hpp).
      for (std::uint64_t n : {1ull << 20, 4ull << 20, 16ull << 20})
        if (!opt_.quick || n < (16u << 20)) add_point({timed_length(n), 0, 0});
      // 1 and 4 MiB with dst misaligned as well, both ways as above (not in --quick): where a rep
      // band meets a misaligned dst (rep_aligned_from, rep_aligned_only, rep_aligned_mutual,
      // rep_alias_window). Without them a composite that brought rep movsb for any dst to 1-8 MiB
      // was judged on aligned points only (Zen 5, ninth round: the rep stage had timed rep there
      // at 0.89-0.95x the loop with dst off, 4K-aliasing).
      if (!opt_.quick)
        for (std::uint64_t n : {1ull << 20, 4ull << 20}) {
          add_point({timed_length(n), 0, 1});
          if (op_ != Operation::kFill) add_point({timed_length(n), 2048, 4});
        }
      // 512 KiB with dst misaligned both ways (not in --quick): the class from 256 KiB to 2 MiB
      // otherwise saw 4K-aliasing copies at 256 KiB (the seeds) and 1 MiB only, and a tuning
      // that kept its alias window ran 512 KiB aliasing copies in its loop at 0.70-0.85x the
      // best peer where rep movsb ran them at 1.01-1.25x (Debian 13, twenty-ninth round:
      // docs/performance.md). At 512 KiB itself, as the report's misaligned matrix times it.
      if (!opt_.quick) {
        add_point({512u << 10, 0, 1});
        if (op_ != Operation::kFill) add_point({512u << 10, 2048, 4});
      }
    }
    std::vector<std::size_t> group;
    for (const Point& p : pts) group.push_back(floor_class(p.size));
    // The points where a and b (the winner's kernel with other thresholds) run different code
    // (weight 1) and where the same (0): large_lengths_differ at each point's length and offsets.
    auto differ_mask = [&](const Candidate& a, const Candidate& b) {
      std::vector<double> mask(pts.size(), 0.0);
      for (std::size_t j = 0; j < pts.size(); ++j)
        mask[j] = large_lengths_differ(a.params, b.params, pts[j].size, pts[j].src_align, pts[j].dst_align);
      return mask;
    };
    // Rows 0..live-1 the configurations, then the peers.
    std::vector<std::size_t> peer_rows;
    auto time_all = [&] {
      std::vector<const void*> fns;
      for (const Candidate& c : live) fns.push_back(get(c)->entry());
      peer_rows.clear();
      for (const Peer& p : ps) {
        peer_rows.push_back(fns.size());
        fns.push_back(p.entry);
      }
      TimingOptions t = timing_;
      t.rounds = opt_.quick ? 3 : 7;
      t.max_seconds = opt_.quick ? 0.25 : 1.0;
      decide::CostTable table;
      table.cost.assign(fns.size(), std::vector<double>(pts.size(), 0.0));
      table.spread = table.cost;
      BenchBuffers& buf = bench_buffers();
      for (std::size_t j = 0; j < pts.size(); ++j) {
        const Point& p = pts[j];
        const TimingOptions tj = timing_for(t, p.size, p.size >= kLargeCopy ? Use::kThenRead : Use::kCopy);
        const auto m = compare(op_, fns, buf, p.size, p.src_align, p.dst_align, tj);
        for (std::size_t f = 0; f < fns.size(); ++f) {
          table.cost[f][j] = m[f].ticks_per_call;
          table.spread[f][j] = m[f].mad_ticks;
        }
      }
      return table;
    };
    decide::CostTable table = time_all();
    auto want_of = [&](std::size_t incumbent) {
      std::vector<std::size_t> cand_rows(live.size());
      for (std::size_t i = 0; i < live.size(); ++i) cand_rows[i] = i;
      std::swap(cand_rows[0], cand_rows[incumbent]);
      return decide::per_group_pick(table, cand_rows, peer_rows, group, groups);
    };
    // Per-class choices for the large classes (from 4 KiB on): where a class would pick a
    // configuration that runs it with rep string instructions, the winner gets a rep band over
    // those classes (rep_threshold .. rep_stop); where the last class would pick non-temporal
    // stores other than the winner's, the winner takes them from the first length timed at or
    // past that pick's threshold (its own threshold where it runs them there already), if the
    // pick reads the copy back faster there than every configuration that runs other code
    // (decide::nt_start_gains). The composite is timed with the rest (not in --quick, which
    // keeps the first table).
    if (!opt_.quick) {
      const auto want = want_of(0);
      Candidate comp = winner;
      std::uint64_t rep_lo = kNever, rep_hi = kNever, rep_again = kNever;
      const Candidate* rep_src = nullptr;
      // Each length measured from 4 KiB on (ascending), with what its size class's pick runs
      // there. From a point, not a class's lower bound: below a class's shortest point nothing
      // was measured (rep movsb loses 1.6x at 16 KiB on a Zen 5 host and wins 1.5x at 32 KiB),
      // and a pick whose own rep band starts inside its class must keep it there (Debian 13,
      // sixth round: the rep stage's band from 512 KiB, in the class from 256 KiB, read at
      // 256 KiB only, left the loop at 256 KiB-4 MiB: 0.83x AOCL-LibMem at 1 MiB).
      std::vector<std::pair<std::uint64_t, std::size_t>> at;  // (length, size class)
      for (std::size_t j = 0; j < pts.size(); ++j)
        if (group[j] >= 5) at.emplace_back(pts[j].size, group[j]);
      std::sort(at.begin(), at.end());
      at.erase(std::unique(at.begin(), at.end()), at.end());
      // A band starts at the ladder size a point was timed for (band_start: the added points
      // are one page past theirs, timed_length), not at the point itself.
      for (const auto& [n, g] : at) {
        const bool wants_rep = ladder_strategy(live[want[g]].params, n) == Strategy::kRepString;
        if (wants_rep && rep_lo == kNever) {
          rep_lo = band_start(n);
          rep_src = &live[want[g]];
        } else if (!wants_rep && rep_lo != kNever && rep_hi == kNever) {
          rep_hi = band_start(n);
        } else if (wants_rep && rep_hi != kNever && rep_again == kNever) {
          // rep again beyond the caches (rep_resume): on a Zen 5 host the loop wins 2-16 MiB
          // and rep movsb 64 MiB by 1.3x (the fourth round's report, 64M rows).
          rep_again = band_start(n);
        }
      }
      if (rep_src) {
        comp.params.rep_threshold = rep_lo;
        comp.params.rep_stop = rep_hi;
        // A second band the beyond-the-caches stage confirmed in solo runs (every use pattern)
        // stays unless a class beyond the caches picks rep itself: the floor's classes there
        // are judged on two points, copy then read only (a Zen 5 run swapped a confirmed 1.33x
        // for the glibc seed's loop and non-temporal stores, and the report found 0.81x).
        comp.params.rep_resume = rep_again != kNever ? rep_again : winner.params.rep_resume.value;
        comp.params.rep_unit = rep_src->params.rep_unit;
        comp.params.rep_align_dst = rep_src->params.rep_align_dst;
        comp.params.rep_aligned_only = rep_src->params.rep_aligned_only;
        comp.params.rep_aligned_from = rep_src->params.rep_aligned_from;
        comp.params.rep_aligned_mutual = rep_src->params.rep_aligned_mutual;
        comp.params.rep_alias_window = rep_src->params.rep_alias_window;
        // Pieces or one instruction is the rep stage's call (it timed both from 2 MiB on); a
        // seed's band (seeds(): the peers' one instruction) takes the winner's pieces.
        comp.params.rep_chunk =
            winner.params.rep_chunk.value != kNever ? winner.params.rep_chunk.value : rep_src->params.rep_chunk.value;
        // One instruction again beyond the caches is the stage beyond the caches' call.
        comp.params.rep_chunk_stop =
            winner.params.rep_chunk.value != kNever ? winner.params.rep_chunk_stop.value : kNever;
        comp.params = keep_rep_split(comp.params, winner.params);
        // Neither has pieces (the winner's band ended within one piece, the seed's is one
        // instruction): a band the composite brings past 2 MiB runs in pieces up to 64 MiB, as the
        // rep stage's variants do (one instruction there ran 0.39-0.66x the pieces at 4-16 MiB
        // while the CPU's streaming switch was on, docs/perf/debian12/tune.log; a Debian 12 memcpy
        // composite took the glibc seed's one instruction from 32 KiB to 16 MiB:
        // docs/performance.md, twenty-second and twenty-third rounds). The composite is timed
        // before anything adopts it. (Set after keep_rep_split, which keeps the winner's alignment
        // split only where the two agree on the pieces.)
        if (comp.params.rep_chunk.value == kNever && op_ != Operation::kClearPage) {
          comp.params.rep_chunk = kRepChunk;
          comp.params.rep_chunk_stop = kRepChunkTop;
        }
      }
      const std::size_t last_row = want[groups - 1];
      const Candidate& last = live[last_row];
      const auto runs_nt = [](const Candidate& c, std::uint64_t n) {
        return ladder_strategy(c.params, n) == Strategy::kNonTemporalLoop;
      };
      const bool other_nt = last.params.nt_threshold.value != winner.params.nt_threshold.value ||
                            last.params.nt_pages.value != winner.params.nt_pages.value ||
                            last.params.nt_width.value != winner.params.nt_width.value;
      if (last.params.nt_threshold.value != kNever && runs_nt(last, 64ull << 20) && other_nt) {
        // Non-temporal stores start only at a length the floor timed, and only where the pick
        // reads the copy back faster there than every configuration that runs other code
        // (decide::nt_start_gains; the winner's own non-temporal stores included): the first
        // measured length at or past the pick's threshold, its band's start the composite's
        // threshold. The pick's own threshold below it was never timed here. Where the winner
        // runs non-temporal stores there too, its threshold stays (confirmed in solo runs beyond
        // the caches) and only the pick's form (pages, register width) is taken.
        std::uint64_t first = kNever;
        for (const auto& [n, g] : at)
          if (runs_nt(last, n)) {
            first = n;
            break;
          }
        if (first == kNever) {
          say("floor: no non-temporal stores from " + live_names[last_row] + " in the composite: no length from " +
              size_label(last.params.nt_threshold.value) + " on was timed here");
        } else {
          // A row with the pick's kernel and non-temporal form runs the pick's code at `first`:
          // a tie by construction, not a configuration to beat.
          const auto same_code = [&](const Candidate& c) {
            return runs_nt(c, first) && key(with_thresholds_of(c, last)) == key(last) &&
                   c.params.nt_pages.value == last.params.nt_pages.value &&
                   c.params.nt_width.value == last.params.nt_width.value;
          };
          std::vector<std::size_t> cases, others;
          for (std::size_t j = 0; j < pts.size(); ++j)
            if (pts[j].size == first) cases.push_back(j);
          for (std::size_t i = 0; i < live.size(); ++i)
            if (i != last_row && !same_code(live[i])) others.push_back(i);
          std::uint64_t start = std::max<std::uint64_t>(last.params.nt_threshold.value, band_start(first));
          if (runs_nt(winner, first)) start = std::min<std::uint64_t>(start, winner.params.nt_threshold.value);
          const std::string what = live_names[last_row] + " (non-temporal stores from " +
                                   size_label(last.params.nt_threshold.value) + ") at " + size_label(first) +
                                   ", the first length timed at or past that,";
          if (decide::nt_start_gains(table, last_row, others, cases)) {
            comp.params.nt_threshold = start;
            take_nt_form(comp.params, last.params);
            say("floor: non-temporal stores from " + size_label(start) + " in the composite: " + what +
                " reads the copy back over 1% faster than every configuration that runs other code there");
          } else {
            say("floor: no non-temporal stores from the last size class's pick in the composite: " + what +
                " does not read the copy back over 1% faster than every configuration that runs other code there");
          }
        }
      }
      // (Pieces that run nowhere dropped from each: without_idle_rep_fields.)
      const auto clean = [](Candidate c) {
        c.params = without_idle_rep_fields(c.params);
        return c;
      };
      std::vector<std::pair<std::string, Candidate>> extra;
      extra.emplace_back("per-class composite", clean(comp));
      // A rep band the composite brings (other than the winner's: the rep stage may have kept
      // none) can reach the non-temporal threshold, which the beyond-the-caches stage chose
      // against the winner's own routine there (the loop), never against rep movsb: the
      // composite without non-temporal stores is judged beside it (Zen 5: rep movsb from 32 KiB
      // to the end 1.12x non-temporal stores at 16 MiB, docs/performance.md, sixth round).
      if (rep_src && comp.params.nt_threshold.value != kNever &&
          winner.params.rep_threshold.value != comp.params.rep_threshold.value) {
        Candidate c = comp;
        c.params.nt_threshold = kNever;
        c.params.nt_pages = 1;
        c.params.nt_width = 0;
        extra.emplace_back("per-class composite without non-temporal stores", clean(c));
      }
      // The composite takes its rep band's alias window from the class pick that brought the
      // band, and the alternative of rep for 4K-aliasing copies above was built on the winner's
      // band: judged beside the composite, it can only keep the composite's window. A Debian 13
      // memcpy floor timed rep for them at 1.035x the winner and adopted the composite at 1.091x,
      // which handed 256 KiB aliasing copies to its loop at 0.76-0.79x the best peer
      // (docs/perf/debian13/tune2.log and report-1.txt as committed in 62d3adb). So the composite
      // with rep for them is judged too.
      if (comp.params.rep_threshold.value != kNever && comp.params.rep_alias_window.value != 0) {
        Candidate c = comp;
        c.params.rep_alias_window = 0;
        if (first_large_difference(comp.params, c.params) != kNever)
          extra.emplace_back("per-class composite with rep for 4K-aliasing copies", clean(c));
      }
      unsigned added = 0;
      // (Not one that runs the winner's code at every point, e.g. a rep band stopping beyond
      // the non-temporal threshold: a table timed again for nothing, 7 s on a Zen 5 host.)
      const auto differs_somewhere = [&](const Candidate& c) {
        const std::vector<double> m = differ_mask(c, winner);
        return std::find(m.begin(), m.end(), 1.0) != m.end();
      };
      for (auto& [what, c] : extra)
        if (differs_somewhere(c) &&
            std::none_of(live.begin(), live.end(), [&](const Candidate& r) { return key(r) == key(c); }) && get(c)) {
          live.push_back(c);
          live_names.push_back(what);
          say("floor: " + (what == "per-class composite" ? std::string("the size classes' own picks combined") : what) +
              ": " + label(c));
          ++added;
        }
      if (added) {
        say("floor: timing again with " + std::string(added == 1 ? "it" : "them"));
        table = time_all();
      }
    }
    std::size_t chosen = 0;
    auto losses = decide::losses_to_peers(table, 0, peer_rows, group, groups);
    if (!losses.empty() && live.size() > 1) {
      // Two decisions. The kernel (the winner or a seed) on every point. Then the large lengths
      // (the winner without a threshold or with rep for 4K-aliasing copies, the composite and its
      // two variants, a seed that runs the winner's kernel with other thresholds), each against the
      // winner at the points where the two run different code (large_lengths_differ, which knows
      // the placements where a rep class hands the copy to the loop; decide::pick_pairwise), then
      // those that qualify against each other (decide::settle_pairwise), by a margin that grows as
      // those points get fewer (decide::pairwise_margin: the median of their measured noise over
      // the square root of their number, at least 1%), so that neither the points where both run
      // the same code nor one noisy point decides. A Zen 5 fill run adopted the aocl seed (the
      // winner's kernel with non-temporal stores and no rep) on every point at 1.000x against
      // 0.875x because fills of 1-128 bytes, the same code in both, took 1.14x as long in the
      // winner's row; the rep band from 1 MiB it dropped is worth 1.09x on the report's used copies
      // (docs/performance.md, seventh round). Judged from 64 KiB on, a composite whose rep band ran
      // to 4 MiB where the winner's stopped at 1 MiB scored 0.990x over a dozen same-code points
      // (Debian 13, seventh round: 1 MiB then 0.81-0.86x AOCL-LibMem in the report).
      std::vector<double> ref = decide::best_of(table, peer_rows);
      std::vector<std::size_t> kernels{0}, tails{0};
      // A seed belongs to the large-length decision when it is the winner's kernel with other
      // thresholds (or rep or non-temporal form).
      auto same_kernel = [&](const Candidate& c) { return key(with_thresholds_of(c, winner)) == key(winner); };
      for (std::size_t i = 1; i < live.size(); ++i)
        (live_names[i].rfind("seed ", 0) == 0 && !same_kernel(live[i]) ? kernels : tails).push_back(i);
      std::vector<double> sk;
      for (std::size_t i : kernels) sk.push_back(decide::score(table.cost[i], ref));
      chosen = kernels[decide::pick(sk, 0.01)];
      std::string line = "floor: against the best peer at each point, " + live_names[0] + " scores " +
                         fmt("%.3f", sk[0]) + "x";
      if (chosen != 0) {
        line += "; " + live_names[chosen] + " (" + label(live[chosen]) + ") " +
                fmt("%.3f", sk[std::find(kernels.begin(), kernels.end(), chosen) - kernels.begin()]) + "x";
        // A seed's kernel won; its thresholds are the peer's, not those the threshold stages
        // chose and confirmed in solo runs on used copies. The seed's kernel with the winner's
        // thresholds is timed beside it (not in --quick, which keeps one table): the seed stays
        // as it is only if it beats that by 1% where the two differ (a rep band from the loop's
        // start counts from there), and whichever stays must still beat the winner by 1% on
        // every point of the new table, or the winner is kept.
        const Candidate g = with_thresholds_of(live[chosen], winner);
        if (!opt_.quick && key(g) != key(live[chosen]) && key(g) != key(winner) && get(g)) {
          const std::size_t seed = chosen;
          std::size_t gi = std::find_if(live.begin(), live.end(), [&](const Candidate& r) { return key(r) == key(g); }) -
                           live.begin();
          if (gi == live.size()) {
            live.push_back(g);
            live_names.push_back(live_names[seed] + "'s kernel with the winner's thresholds");
            say("floor: timing again with " + live_names.back() + ": " + label(g));
            table = time_all();
            ref = decide::best_of(table, peer_rows);
          }
          const std::uint64_t from = first_large_difference(live[gi].params, live[seed].params);
          std::vector<double> r;
          const std::vector<double> mask = differ_mask(live[gi], live[seed]);
          const std::vector<double> margin{0, decide::pairwise_margin(table, gi, seed, mask)};
          const bool as_is =
              decide::pick_pairwise({table.cost[gi], table.cost[seed]}, table.cost[gi], {{}, mask}, margin, &r) == 1;
          const std::size_t kept = as_is ? seed : gi;
          const double s0 = decide::score(table.cost[0], ref), sk_kept = decide::score(table.cost[kept], ref);
          line += "; its own thresholds " + fmt("%.3f", r[1]) + "x the winner's" +
                  (from != kNever ? " from " + size_label(from) + " on" : std::string()) + "; " +
                  live_names[kept] + " " + fmt("%.3f", sk_kept) + "x against the winner's " + fmt("%.3f", s0) + "x";
          chosen = sk_kept >= s0 * 1.01 ? kept : 0;
        }
        line += chosen != 0 ? ": adopting " + live_names[chosen] : std::string(": keeping the winner");
      }
      if (chosen == 0 && tails.size() > 1) {
        std::vector<std::vector<double>> cost, weight;
        std::vector<double> margin;
        for (std::size_t i : tails) {
          cost.push_back(table.cost[i]);
          weight.push_back(differ_mask(live[0], live[i]));
          margin.push_back(decide::pairwise_margin(table, 0, i, weight.back()));
        }
        std::vector<double> r;
        // Against the winner itself at those points (not the best peer: a ratio of scores that
        // both lose to a peer would count a 1 % difference four times, kLossWeight, and the
        // margin is in the costs' own units).
        const std::size_t k = decide::pick_pairwise(cost, table.cost[0], weight, margin, &r);
        chosen = tails[k];
        {
          std::string all = "floor: the large-length configurations against the winner where they differ:";
          for (std::size_t i = 1; i < r.size(); ++i)
            all += " " + live_names[tails[i]] + " " + fmt("%.3f", r[i]) + "x (" +
                   std::to_string(std::count(weight[i].begin(), weight[i].end(), 1.0)) + " points, margin " +
                   fmt("%.1f", 100 * margin[i]) + "%);";
          say(all);
        }
        // Shown: the one adopted, else the one judged somewhere that came closest to its margin.
        std::size_t shown = k;
        auto judged = [&](std::size_t i) { return std::count(weight[i].begin(), weight[i].end(), 1.0) > 0; };
        for (std::size_t i = 1; k == 0 && i < r.size(); ++i)
          if (shown == 0 || (judged(i) && !judged(shown)) ||
              (judged(i) == judged(shown) && r[i] / (1 + margin[i]) > r[shown] / (1 + margin[shown])))
            shown = i;
        const auto n_points = std::count(weight[shown].begin(), weight[shown].end(), 1.0);
        const std::uint64_t from = first_large_difference(live[0].params, live[tails[shown]].params);
        line += "; " + live_names[tails[shown]] + " (" + label(live[tails[shown]]) + ") " + fmt("%.3f", r[shown]) +
                "x the winner on the " + std::to_string(n_points) + (n_points == 1 ? " point" : " points") +
                " where they differ" +
                (from != kNever ? " (from " + size_label(from) + ")" : std::string()) +
                (k != 0         ? ": adopted"
                 : n_points == 0 ? ": not judged"
                                 : ": not by " + fmt("%.1f", 100 * margin[shown]) + "%");
        // Each ratio above is over the points where that configuration differs from the winner:
        // a composite judged on the 2 points of its rep band can rank above the same composite
        // with rep for 4K-aliasing copies judged on those and 11 more (1.790x against 1.143x:
        // docs/perf/debian13/tune2.log line 288). The ones that beat the winner are
        // judged against each other where they differ (decide::settle_pairwise).
        if (k != 0) {
          std::vector<std::size_t> qualified;
          for (std::size_t i = 1; i < r.size(); ++i)
            if (r[i] >= 1 + margin[i]) qualified.push_back(tails[i]);
          std::vector<std::pair<std::size_t, double>> steps;
          chosen = decide::settle_pairwise(
              table, chosen, qualified,
              [&](std::size_t a, std::size_t b) { return differ_mask(live[a], live[b]); }, &steps);
          std::size_t before = tails[k];
          for (const auto& [row, ratio] : steps) {
            line += "; " + live_names[row] + " (" + label(live[row]) + ") " + fmt("%.3f", ratio) + "x " +
                    live_names[before] + " where the two differ: adopted instead";
            before = row;
          }
        }
      }
      say(line);
      log_.push_back(line);
    }
    // Again on the final table: the graft above may have timed it again with one row more, so
    // the peers' rows moved (a fill run on Zen 5 read a peer's name one row off and aborted).
    losses = decide::losses_to_peers(table, chosen, peer_rows, group, groups);
    {
      // Which configuration each size class would pick on its own (decide::per_group_pick, against
      // the best peer): where it is not the one kept, the ladder cannot yet give that class its
      // own kernel, and the log says so.
      const auto want = want_of(chosen);
      for (std::size_t g = 0; g < groups; ++g)
        if (want[g] != chosen && std::find(group.begin(), group.end(), g) != group.end()) {
          const std::string line = "floor: " + floor_class_name(g) + " alone would pick " + live_names[want[g]] + " (" +
                                   label(live[want[g]]) + ")";
          say(line);
          log_.push_back(line);
        }
    }
    for (const auto& l : losses) {
      const std::string line = "floor: " + floor_class_name(l.group) + ": " + ps[l.peer - peer_rows.front()].name + " is " +
                               fmt("%.2f", 1 / l.ratio) + "x faster than the tuned routine (noise " +
                               fmt("%.1f", 100 * l.noise) + "%); no configuration tried beats it there";
      say(line);
      log_.push_back(line);
    }
    if (losses.empty()) {
      const std::string line = "floor: no size class where a peer beats the " +
                               std::string(chosen ? "adopted configuration" : "winner") + " beyond the noise";
      say(line);
      log_.push_back(line);
    }
    return live[chosen];
  }

  Candidate clear_page_stage(const Candidate& best) {
    std::vector<Candidate> cands;
    for (unsigned v : {8u, 16u, 32u, 64u}) {
      if (v > vmax_) continue;
      for (unsigned u : {1u, 2u, 4u, 8u, 16u})
        for (bool nt : {false, true}) {
          Candidate c = best;
          c.params.vector_width = v;
          c.params.unroll = u;
          c.params.nt_threshold = nt ? 0 : kNever;
          c.params.rep_threshold = kNever;
          cands.push_back(c);
        }
    }
    for (unsigned unit : {1u, 8u}) {
      Candidate c = best;
      c.params.rep_threshold = 0;
      c.params.rep_unit = unit;
      cands.push_back(c);
    }
    return stage("clear_page", best, cands, w_.points, /*halving=*/true);
  }

  /// The small lengths: one masked move for 0..M (AVX-512BW), the vector register bank, and
  /// the head/tail register width (full or half the vector width).
  Candidate small_stage(const Candidate& best) {
    const IsaFeatures& f = opt_.cpu.features();
    const bool evex = f.has(Feature::kAVX512F) && f.has(Feature::kAVX512VL) && f.has(Feature::kAVX2);
    const bool masks = evex && f.has(Feature::kAVX512BW) && f.has(Feature::kBMI2);
    std::vector<Candidate> cands;
    const unsigned V = best.params.vector_width;
    for (unsigned m : {0u, 16u, 32u, 64u, 128u})
      for (RegisterBank b : {RegisterBank::kLow, RegisterBank::kHigh})
        for (unsigned h : {0u, V / 2}) {
          if ((m && !masks) || (!evex && (m || b == RegisterBank::kHigh)) || (h && h < 16)) continue;
          Candidate c = best;
          c.params.mask_max = m;
          // A page-crossing call moves the block back rather than taking the ladder: the same
          // common path, one mispredicted branch on a crossing call instead of several
          // (params.hpp; docs/performance.md, fifth round).
          c.params.mask_shift = m != 0;
          c.params.register_bank = b;
          c.params.head_tail_width = h;
          cands.push_back(c);
        }
    // The mix counts two thirds here. Where a class edge falls (mask_max 64 or 128, head_tail_max)
    // decides how often neighbouring lengths of a real mix take different branches, which a point
    // (one length in a loop) never shows: on a Zen 5 host two masked moves for 0..128 replayed
    // the production mix 1.16-1.26x faster than one masked move and the head/tail ladder from
    // 65 bytes, and ran the points of 1-128 bytes 0.68-0.88x as fast; blended half and half the
    // two came within 3 %, and the runs that took 64 replayed the eight distributions at
    // 0.84-0.88x the best of glibc and AOCL-LibMem where those that took 128 reached 1.02-1.08x
    // (docs/performance.md, eighth and ninth rounds).
    WithMix m(*this, Mix::kTwoThirds);
    // The halving keeps each masked class's best: one short round does not cut a class whose
    // points dropped in one process before the mix's tie rule sees it (decide::halving_keep).
    StageScores sc;
    Candidate out = stage("small", best, cands, below_1m_, /*halving=*/true, kSmallMixTie, &sc,
                          [](const Candidate& c) { return unsigned(c.params.mask_max.value); });
    if (masks && !sc.live.empty()) {
      // Each masked class's best candidate of the final round, blend and mix: where two tunings
      // take different classes, the log shows by how much each won.
      std::string line = std::string("small: best of each masked class in the last round (") +
                         (sc.mix.empty() ? "score" : "blend, mix") + "):";
      for (unsigned mm : {0u, 16u, 32u, 64u, 128u}) {
        std::size_t b = sc.live.size();
        for (std::size_t i = 0; i < sc.live.size(); ++i)
          if (sc.live[i].params.mask_max.value == mm && (b == sc.live.size() || sc.score[i] > sc.score[b])) b = i;
        if (b == sc.live.size()) continue;
        line += std::string(" ") + (mm ? "0.." + std::to_string(mm) : "none") + " " + fmt("%.3f", sc.score[b]) + "x";
        if (b < sc.mix.size()) line += " / " + fmt("%.3f", sc.mix[b]) + "x";
        line += ";";
      }
      say(line);
      log_.push_back(line);
    }
    if (!time_left()) return out;
    // Where the head/tail classes hand over to the loop.
    cands.clear();
    for (unsigned m : {0u, 32u, 64u, 128u, 256u}) {
      if (m && (m > 4 * V || m < 2 * V)) continue;
      Candidate c = out;
      c.params.head_tail_max = m;
      cands.push_back(c);
    }
    return stage("hand-over", out, cands, below_1m_, false);
  }

  /// The dispatch tree's weighting. A distribution workload tries all five (the workload's own
  /// weights are the program's). A point workload is a grid of lengths, not a frequency: weighting
  /// the tree by it, or balancing it, moves the short lengths that programs copy most behind more
  /// branches (on a Zen 5 host the seeds' winner with a flat tree copied 1-128 bytes 0.8-0.85x as
  /// fast as the same routine with the prior's tree). There the choice is between the production
  /// prior, hot-first (hot_first(): glibc's order) and smallest-first, scored like the
  /// small-length stage: two thirds the production mix, one third the points below 1 MiB. The
  /// mix alone chose smallest-first for every AVX2 ladder (on random lengths it mispredicts
  /// least), and a length a program copies again and again then walks every shorter class
  /// first, taken branch after taken branch: an --isa avx2 ladder copied 16-128 bytes 1.6-2.5x
  /// as slowly as with hot-first on a Zen 5 host, and 8-256 bytes 2-3x as slowly as glibc on an
  /// Intel Xeon (docs/performance.md, sixteenth round). Hot-first is not tried where the first
  /// class holds 33 bytes (a masked class 0..64 or 0..128): its tree is then smallest-first's.
  Candidate dispatch_stage(const Candidate& best) {
    std::vector<Candidate> cands;
    const bool points = !w_.is_distribution();
    const auto plan = make_plan(best.params, opt_.cpu.features());
    const bool hot_differs = plan && !plan->classes.empty() && plan->classes.front().hi < 33;
    for (Dispatch d : {Dispatch::kPrior, Dispatch::kWorkload, Dispatch::kFlat, Dispatch::kHot, Dispatch::kChain}) {
      if (points && (d == Dispatch::kWorkload || d == Dispatch::kFlat)) continue;
      if (d == Dispatch::kHot && !hot_differs) continue;
      Candidate c = best;
      c.dispatch = d;
      cands.push_back(c);
    }
    WithMix m(*this, points ? Mix::kTwoThirds : Mix::kHalf);
    return stage("dispatch", best, cands, below_1m_, false);
  }

  /// Prefetch distance and hint, and from which length the loop prefetches (prefetch_min): on a
  /// Zen 5 host any prefetch cost a 1-16 KiB copy from L1 7 % while 256 KiB gained, and a single
  /// distance for the whole loop class let the 256 KiB points (the loop until the rep stage takes
  /// them) decide for the short ones too.
  Candidate prefetch_stage(const Candidate& best) {
    std::vector<Candidate> cands;
    for (unsigned d : {0u, 128u, 256u, 512u, 1024u, 2048u})
      for (PrefetchHint h : {PrefetchHint::kT0, PrefetchHint::kNTA}) {
        if (d == 0 && h == PrefetchHint::kNTA) continue;
        if (opt_.quick && (d == 128 || d == 2048)) continue;
        for (unsigned from : {0u, 32768u}) {
          if (from && (!d || opt_.quick)) continue;
          Candidate c = best;
          c.params.prefetch_distance = d;
          c.params.prefetch_hint = d ? h : PrefetchHint::kT0;
          c.params.prefetch_min = from;
          cands.push_back(c);
        }
      }
    Candidate out = stage("prefetch", best, cands, loop_points(best, 1u << 20), false);
    if (!out.params.prefetch_distance.value || opt_.quick || !time_left()) return out;
    // Where the prefetch starts, for the distance and hint just chosen; 16 and 64 KiB are timed
    // too, so each choice has a length of its own (the seeds have none from 16 to 255 KiB).
    cands.clear();
    for (unsigned from : {0u, 8192u, 32768u, 131072u}) {
      Candidate c = out;
      c.params.prefetch_min = from;
      cands.push_back(c);
    }
    std::vector<Point> pts = loop_points(out, 1u << 20);
    for (std::uint64_t n : {16384u, 65536u})
      if (std::none_of(pts.begin(), pts.end(), [&](const Point& q) { return q.size == n; })) pts.push_back({n, 0, 0});
    return stage("prefetch from", out, cands, pts, false);
  }

  /// The 4K-aliasing guard, on the loop points plus the misaligned-destination matrix
  /// (workload.hpp: 4 KiB..512 KiB at dst offsets 0, 1, 4, 15, 33 from a page-aligned src, so
  /// 0 < (dst - src) mod 4096 < 64: a forward loop's loads wait on its own stores there; and dst
  /// 4, 33 with src 2048, not aliasing, where the guard costs only its test and the pipelined
  /// loop must still hold its own).
  Candidate alias_stage(const Candidate& best) {
    std::vector<Candidate> cands;
    const unsigned V = best.params.vector_width, U = best.params.unroll;
    for (unsigned w : {0u, 64u, 256u, 1024u}) {  // a plain loop, backward for aliasing copies
      Candidate c = best;
      c.params.alias_window = w;
      c.params.loop_pipeline = false;
      cands.push_back(c);
    }
    if (V >= 16) {  // the pipelined loop, which stays forward (the window would mean nothing)
      Candidate c = best;
      c.params.alias_window = 0;
      c.params.loop_pipeline = true;
      if (U > 4) c.params.unroll = 4;  // it holds two blocks of unroll vectors
      cands.push_back(c);
    }
    std::vector<Point> pts = loop_points(best, 1u << 20);
    if (!w_.is_distribution() && op_ != Operation::kClearPage)
      for (const Point& p : misaligned_workload(op_).points)
        if (std::find(pts.begin(), pts.end(), p) == pts.end()) pts.push_back(p);
    return stage("alias", best, cands, pts, false);
  }

  /// rep_alias_loop (params.hpp): the rep band's copies that would 4K-alias handed to a loop of
  /// 32-byte vectors below a stop, against what runs them now (rep, or the routine's own loop
  /// with rep_alias_window, which still takes them from the stop on). After the floor, as the rep
  /// gap: it changes no code but for those copies, so the floor's verdict on the rest stands.
  ///
  /// Judged as the rep band is, with the copy used: a ladder from the band's start to 512 KiB
  /// (one page past from 64 KiB on), the winner against itself with the loop below 1 MiB, in the
  /// same rounds, at five 4K-aliasing placements (dst 1, 15, 33 past a page-aligned src; dst
  /// aligned with src 1 and 32 bytes below a page's end, which a rep class for aligned dst only
  /// still runs through the test), each with every use pattern (copy alone, read back, source
  /// overwritten), warm, and cold at the first as a check; placements where the two run the same
  /// code at every size (a rep class for an aligned dst only) are left out. The stop is
  /// decide::choose_stop's: the range from the band's start with the largest gain, at least 2 %,
  /// where no row loses more than 3 % at a size nor anything in total; then confirmed in solo
  /// runs, whatever the budget. On a Zen 5 host the report's
  /// matrix (copy alone, fresh buffers) had the loop at 89-93 GB/s against rep movsb's 80-81 at
  /// 32 KiB, but compare() on one buffer pair had rep ahead alone (72.9-76.6 against 65.0-70.3)
  /// and level to 4 % read back or overwritten (docs/performance.md, twenty-fifth round), and a
  /// stage that timed the copy alone took the loop on the first harness's word.
  Candidate alias_loop_stage(const Candidate& best) {
    const CopyParams& p = best.params;
    const unsigned v = p.vector_width.value;
    if (v != 32 && v != 64) return best;
    std::uint64_t rep_lo = kNever;
    for (const SizeClass& c : vector_ladder(p).classes)
      if (c.strategy == Strategy::kRepString) {
        rep_lo = c.lo;
        break;
      }
    if (rep_lo >= (1u << 20)) return best;
    Candidate all = best;  // the loop for every aliasing copy of the band below 1 MiB
    all.params.rep_alias_loop = 1u << 20;
    all.params = without_idle_rep_fields(all.params);
    const Routine* r0 = get(best);
    const Routine* r1 = all.params.rep_alias_loop.value != kNever &&
                                first_large_difference(best.params, all.params) != kNever
                            ? get(all)
                            : nullptr;
    if (!r0 || !r1) {
      log_.push_back("alias loop: not judged: no stop runs other code than the winner in the rep band");
      return best;
    }
    std::vector<std::uint64_t> sizes{rep_lo};
    for (std::uint64_t s = 4096; s < (1u << 20); s *= 2)
      if (s > rep_lo) sizes.push_back(s);
    // Only placements where the two run different code at some size: a rep class for an aligned
    // dst only runs the loop at a misaligned dst either way, and rows that tie by construction
    // would thin the gain and leave the cold check on a row that cannot veto.
    std::vector<Offsets> placements;
    for (const Offsets q : std::vector<Offsets>{{0, 1}, {0, 15}, {0, 33}, {4095, 0}, {4064, 0}})
      if (std::any_of(sizes.begin(), sizes.end(), [&](std::uint64_t s) {
            return large_lengths_differ(best.params, all.params, timed_length(s), q.src, q.dst);
          }))
        placements.push_back(q);
    if (placements.empty()) {
      log_.push_back("alias loop: not judged: no 4K-aliasing placement runs other code than the winner in the rep band");
      return best;
    }
    say("alias loop: the rep band's 4K-aliasing copies in a loop of 32-byte vectors, at " +
        std::to_string(sizes.size()) + " sizes x " + std::to_string(placements.size()) + " placements x " +
        std::to_string(uses().size()) + " use patterns, warm, and cold as a check");
    const Ladder l = time_ladder("alias loop", {r0, r1}, sizes, placements, {0}, true, true);
    const decide::ThresholdChoice c = decide::choose_stop(l.objective(0), l.check(0), std::log(1.03), std::log(1.02));
    const std::uint64_t stop =
        c.index == decide::kNoThreshold ? kNever : c.end < l.sizes.size() ? l.sizes[c.end] : std::uint64_t{1} << 20;
    // What runs these copies now: rep, or with rep_alias_window the routine's own loop.
    const std::string now = p.rep_alias_window.value ? "own loop" : "rep";
    std::string line = "alias loop, " + now + " time / 32-byte loop time:" + ladder_lines(l, 0) + "\n    -> " +
                       (stop == kNever ? c.why : "below " + size_label(stop) + ": " + c.why);
    say(line);
    Candidate out = best;
    std::string why_not = "no stop below which the loop wins without losing a use pattern";
    if (stop != kNever) {
      out.params.rep_alias_loop = stop;
      out.params = without_idle_rep_fields(out.params);
      const Routine* chosen = get(out);
      // Solo runs at the band's first size and the last the stop keeps, at the first placement
      // where the two run different code at both (else at the first size), whatever the budget
      // (after the floor it is spent; 2 sizes x the use patterns x 3 runs).
      const std::uint64_t last = l.sizes[c.end - 1];
      const auto differs_at = [&](const Offsets& q, std::uint64_t s) {
        return large_lengths_differ(best.params, out.params, timed_length(s), q.src, q.dst);
      };
      Offsets o = placements.front();
      const auto both = std::find_if(placements.begin(), placements.end(),
                                     [&](const Offsets& q) { return differs_at(q, l.sizes.front()) && differs_at(q, last); });
      const auto first = std::find_if(placements.begin(), placements.end(),
                                      [&](const Offsets& q) { return differs_at(q, l.sizes.front()); });
      if (both != placements.end())
        o = *both;
      else if (first != placements.end())
        o = *first;
      if (!chosen) {
        out = best;
        why_not = "the routine with the stop did not verify";
      } else if (!confirmed_solo("alias loop below " + size_label(stop), *r0, *chosen, {l.sizes.front(), last}, nullptr,
                                 o.src, o.dst)) {
        out = best;
        why_not = "the stop below " + size_label(stop) + " did not confirm in solo runs";
      }
    }
    line = "alias loop: " + (out.params.rep_alias_loop.value == kNever
                                 ? "never (" + why_not + ")"
                                 : "below " + std::to_string(out.params.rep_alias_loop.value) + " bytes");
    say(line);
    log_.push_back(line);
    return out;
  }

  Candidate padding_stage(const Candidate& best) {
    std::vector<Candidate> cands;
    for (unsigned a : {1u, 16u, 32u, 64u})
      for (NopForm f : {NopForm::kSingleByte, NopForm::kLongNop, NopForm::kPrefixedLongNop, NopForm::kJumpOver}) {
        if (a == 1 && f != NopForm::kLongNop) continue;
        Candidate c = best;
        c.params.loop_align = a;
        c.params.nop_form = f;
        cands.push_back(c);
      }
    return stage("padding", best, cands, loop_points(best, 16384), false);
  }

  /// Workload points below 1 MiB that reach the main loop of `c` and are at most `cap` bytes.
  std::vector<Point> loop_points(const Candidate& c, std::uint64_t cap) const {
    std::vector<Point> out;
    const std::uint64_t lo = loop_start(c.params);
    for (const auto& p : below_1m_)
      if (p.size >= lo && p.size <= cap) out.push_back(p);
    return out.empty() ? below_1m_ : out;
  }

  // ----- candidates --------------------------------------------------------------------------

  std::string key(const Candidate& c) const { return to_string(c.params) + " dispatch=" + dispatch_name(c.dispatch); }
  std::string label(const Candidate& c) const {
    return short_name(c.params) + "/" + dispatch_name(c.dispatch);
  }

  /// The small-length fields label() leaves out, for the lines where two configurations differ
  /// only there: " (mask_max 128, head/tail width 32, hand-over 256, registers high)".
  static std::string small_detail(const Candidate& c) {
    const CopyParams& p = c.params;
    return " (mask_max " + std::to_string(p.mask_max.value) + ", head/tail width " +
           std::to_string(p.head_tail_width.value) + ", hand-over " + std::to_string(p.head_tail_max.value) +
           ", registers " + (p.register_bank == RegisterBank::kHigh ? "high" : "low") + ")";
  }

  void say(const std::string& s) {
    if (opt_.progress) opt_.progress(fmt("[%5.1fs] ", now() - t0_) + s);
  }
  bool time_left() const { return now() - t0_ < opt_.budget_seconds; }

  static std::uint64_t loop_start(const CopyParams& p) {
    for (const auto& c : vector_ladder(p).classes)
      if (c.strategy == Strategy::kAlignedLoop || c.strategy == Strategy::kRepString ||
          c.strategy == Strategy::kNonTemporalLoop)
        return c.lo;
    return 256;
  }

  /// The plan of a candidate, with its dispatch weights.
  Result<CopyPlan> plan_of(const Candidate& c) const {
    auto plan = make_plan(c.params, opt_.cpu.features());
    if (!plan) return plan;
    switch (c.dispatch) {
      case Dispatch::kPrior: break;
      case Dispatch::kFlat:
        for (auto& k : plan->classes) k.weight = 1.0;
        break;
      case Dispatch::kWorkload:
        for (auto& k : plan->classes) {
          k.weight = 0.0001;  // classes the workload never reaches still get a leaf
          if (w_.is_distribution()) {
            const auto& p = w_.distribution->p;
            for (std::uint64_t n = k.lo; n <= k.hi && n < p.size(); ++n) k.weight += p[n];
          } else {
            for (const auto& p : w_.points)
              if (p.size >= k.lo && p.size <= k.hi) k.weight += 1.0 / double(w_.points.size());
          }
        }
        break;
      case Dispatch::kHot:
        *plan = hot_first(std::move(*plan));
        break;
      case Dispatch::kChain: {
        // Each class outweighs all larger ones: tested smallest first.
        double w = 1.0;
        for (auto& k : plan->classes) {
          k.weight = w;
          w *= 0.4;
        }
        break;
      }
    }
    return plan;
  }

  /// Builds and verifies a candidate once; nullptr if it cannot be built or fails verification.
  /// Inside a VerifyBelow scope lengths above its bound are left unverified (and the candidate
  /// remembered as such); a candidate so verified is verified again in full the first time it
  /// is asked for outside such a scope, before anything times it at a larger length.
  const Routine* get(const Candidate& c) {
    const std::string k = key(c);
    if (auto it = pool_.find(k); it != pool_.end()) {
      const auto part = partly_verified_.find(k);
      if (part != partly_verified_.end() && (verify_below_ == 0 || verify_below_ > part->second)) {
        const std::uint64_t was = part->second;
        partly_verified_.erase(part);
        const VerifyReport rep = checked(*it->second, verify_options());
        if (!rep.ok()) {
          retired_.push_back(std::move(it->second));  // a stage may still hold the pointer
          pool_.erase(it);
          return reject(k, label(c) + ": " + rep.summary(),
                        "rejected (timed only below " + size_label(was) + ", where it passed): ");
        }
        if (verify_below_ != 0 && verify_below_ < opt_.verify.max_size) partly_verified_.emplace(k, verify_below_);
      }
      return it->second.get();
    }
    if (rejected_.count(k)) return nullptr;
    auto plan = plan_of(c);
    if (!plan) return invalid(k, plan.error().message);
    auto r = Routine::build(*plan, opt_.cpu);
    if (!r) return invalid(k, r.error().message);
    ++stats_.built;
    const VerifyReport rep = checked(*r, verify_options());
    if (!rep.ok()) return reject(k, label(c) + ": " + rep.summary());
    if (verify_below_ != 0 && verify_below_ < opt_.verify.max_size) partly_verified_.emplace(k, verify_below_);
    auto owned = std::make_unique<Routine>(std::move(r).value());
    const Routine* out = owned.get();
    pool_.emplace(k, std::move(owned));
    return out;
  }

  /// verify_routine, counted in stats_ (cases and wall time). `subject` names the routine in the
  /// error when the harness could not map its buffers.
  VerifyReport checked(const Routine& r, const VerifyOptions& vo, const char* subject = "a candidate") {
    const double t = now();
    VerifyReport rep = verify_routine(r, vo);
    // The harness's failure, not the candidate's: the search stops, said as such (tune()).
    if (rep.out_of_memory) throw VerifyOutOfMemory{subject, r.name() + ": " + rep.failure->what};
    stats_.verify_cases += rep.cases;
    stats_.verify_seconds += now() - t;
    return rep;
  }

  /// The verification of a candidate (the winner is verified again with opt_.verify as given).
  VerifyOptions verify_options() const {
    VerifyOptions vo = opt_.verify;
    vo.seed = opt_.seed + stats_.built;
    if (verify_below_ != 0) vo.max_size = std::min(vo.max_size, verify_below_);
    // Near edges above 1 MiB the winner is re-checked with every length; candidates with every
    // 31st (edge - 1, edge and edge + 1 always; 31 is coprime to 64, so the residues mod 64
    // still vary): with every 7th a 16-24 MiB non-temporal edge cost each candidate about 0.3 s.
    if (vo.large_edge_stride == 1) vo.large_edge_stride = 31;
    return vo;
  }

  /// Candidates built in this scope are verified up to `bytes` only (get()): a stage that times
  /// below that length, and whose candidates carry thresholds far above it, need not verify them
  /// there unless one is kept. The second pass's kernel stage built 25 candidates with a rep band,
  /// rep again and non-temporal stores (edges 1, 8 and 32 MiB) in 22 s, nearly all of it spent
  /// copying and checking lengths of 4 MiB and more (docs/performance.md, sixth round).
  struct VerifyBelow {
    Search& s;
    std::uint64_t saved;
    VerifyBelow(Search& search, std::uint64_t bytes) : s(search), saved(search.verify_below_) { s.verify_below_ = bytes; }
    ~VerifyBelow() { s.verify_below_ = saved; }
  };
  /// Parameters the generator refuses (a search step that does not fit): not a verification
  /// failure, skipped quietly.
  const Routine* invalid(const std::string& k, const std::string& why) {
    rejected_.emplace(k, why);
    last_reject_ = why;
    return nullptr;
  }
  /// A candidate that failed verification: remembered (never built again), counted and said,
  /// `how` telling whether it was ever timed.
  const Routine* reject(const std::string& k, const std::string& why,
                        const std::string& how = "rejected (never timed): ") {
    ++stats_.rejected;
    rejected_.emplace(k, why);
    last_reject_ = why;
    say(how + why);
    return nullptr;
  }

  // ----- scoring -----------------------------------------------------------------------------

  /// Each routine's score against the system routine on `pts` (decide::score: the
  /// loss-weighted geometric mean of the per-point speedups), from one cost table timed in the
  /// same rounds; distribution workloads: the replay's speedup in ns per call (replay_speedups).
  /// Where the stage blends in the production mix (mix_), `mix_out`, when given, receives the
  /// mix's speedups alone, one per routine (empty when the stage blends none).
  std::vector<double> score(const std::vector<const Routine*>& rs, const std::vector<Point>& pts,
                            unsigned rounds, std::vector<double>* mix_out = nullptr) {
    if (mix_out) mix_out->clear();
    TimingOptions t = timing_;
    t.rounds = rounds;
    std::vector<const void*> fns{system_routine(op_)};
    for (auto* r : rs) fns.push_back(r->entry());
    // A distribution workload: its replay alone (replay_speedups).
    if (w_.is_distribution()) return replay_speedups(fns, calls_, *replay_buf_, t);
    // Blended stages: the weighted geometric mean of the points' score and the production
    // mix's speedup (replay_speedups): each counts half, or the mix two thirds.
    const bool blend = mix_ != Mix::kNone && mix_buf_;
    const std::vector<double> mix = blend ? replay_speedups(fns, mix_calls_, *mix_buf_, t) : std::vector<double>{};
    if (mix_out) *mix_out = mix;
    const decide::CostTable table = cost_table(fns, pts, t);
    std::vector<double> s(rs.size());
    for (std::size_t i = 0; i < rs.size(); ++i) {
      s[i] = decide::score(table.cost[i + 1], table.cost[0]);
      if (blend) s[i] = mix_ == Mix::kTwoThirds ? std::cbrt(s[i] * mix[i] * mix[i]) : std::sqrt(s[i] * mix[i]);
    }
    return s;
  }

  /// Each of fns[1..]'s speedup over fns[0] (the system routine) replaying `calls` (one replay of
  /// the whole sequence per round, ns per call); for copies and fill the geometric mean of the
  /// throughput and the latency with each call reading back the last (each call's source, or
  /// fill's destination, waiting on the previous call's last bytes: timing.hpp, replay()), as a
  /// program that reads what it copied or set sees them.
  std::vector<double> replay_speedups(const std::vector<const void*>& fns, const std::vector<Call>& calls,
                                      ReplayBuffers& buf, const TimingOptions& t) {
    const bool read_back = op_ != Operation::kClearPage;
    std::vector<double> s(fns.size() - 1, 1.0);
    for (const Use use : read_back ? std::vector<Use>{Use::kCopy, Use::kThenRead} : std::vector<Use>{Use::kCopy}) {
      TimingOptions tu = t;
      tu.use = use;
      const auto m = replay(op_, fns, calls, buf, tu);
      for (std::size_t i = 0; i < s.size(); ++i)
        s[i] *= std::pow(m[0].ticks_per_call / m[i + 1].ticks_per_call, read_back ? 0.5 : 1.0);
    }
    return s;
  }

  /// Times `fns` on every point of `pts` (each point interleaved in its own rounds) into a cost
  /// table: cost[f][j] = TSC ticks per call of fns[f] at pts[j], spread = its MAD. Lengths of
  /// 64 KiB and more start every batch warm (timing.hpp, CacheState::kWarm) with at least 4 calls
  /// per batch, so no routine is timed in the cache state its neighbour left.
  decide::CostTable cost_table(const std::vector<const void*>& fns, const std::vector<Point>& pts,
                               const TimingOptions& base, Use use = Use::kCopy) {
    decide::CostTable table;
    table.cost.assign(fns.size(), std::vector<double>(pts.size(), 0.0));
    table.spread = table.cost;
    BenchBuffers& buf = bench_buffers();
    for (std::size_t j = 0; j < pts.size(); ++j) {
      const TimingOptions t = timing_for(base, pts[j].size, use);
      const auto m = compare(op_, fns, buf, pts[j].size, pts[j].src_align, pts[j].dst_align, t);
      for (std::size_t f = 0; f < fns.size(); ++f) {
        table.cost[f][j] = m[f].ticks_per_call;
        table.spread[f][j] = m[f].mad_ticks;
      }
    }
    return table;
  }

  /// The timing of one length: below 64 KiB as the tight loop leaves the caches (the data stay
  /// in L1/L2 whatever the routine); from 64 KiB on, every batch starts warm and holds at least
  /// 4 calls and 100 us, so the first call after the reset does not decide it.
  static TimingOptions timing_for(TimingOptions t, std::uint64_t size, Use use) {
    t.use = use;
    if (size >= kLargeCopy) {
      t.state = CacheState::kWarm;
      t.min_calls = std::max(t.min_calls, 4u);
      t.batch_seconds = std::max(t.batch_seconds, 100e-6);
    }
    return t;
  }

  /// How much of score() the production mix is, on a point workload with the mix installed (set
  /// per stage: the seeds and the kernel take half, the small lengths, the hand-over and the
  /// dispatch tree two thirds; the other stages none).
  enum class Mix { kNone, kHalf, kTwoThirds };
  /// In a blended stage, winners whose scores lie within this of the best winner's (relative)
  /// are a tie that the production mix decides (decide::pick_tiebreak): within the band the
  /// points' part of the blend counts for nothing (with the mix at two thirds, a challenger up
  /// to about 20 % ahead on the points alone is tied). Within one small stage on
  /// this project's host the four mask_max 128 candidates (register bank and head/tail width,
  /// which change a few instructions) spread 2-7 % (docs/performance.md, twenty-first round).
  static constexpr double kMixTie = 0.05;
  /// ... and the mix decides such a tie only when it favours one by more than this (relative):
  /// a mix difference inside its own noise leaves the blend's pick.
  static constexpr double kMixTieMargin = 0.02;
  /// The small-length stage's tie band, wider: which masked class (0..64 or 0..128) a tuning
  /// takes flipped between runs. In the twenty-ninth round's memcpy and memmove tunings 0..128
  /// led that stage's blend in every run but one, where 0..64 led by 5.5 % and 6.2 % (both
  /// passes) while the mix favoured 0..128 by 11 % and 10 % (docs/perf/debian13/tune-memcpy.log
  /// lines 17 and 270; every tuning's "best of each masked class" lines in docs/perf/debian12/ and
  /// debian13/). 0..64's blend stayed at 1.36-1.50x across the runs and 0..128's ranged
  /// 1.34-1.64x; in that run 0..128's mix part was 1.91-1.95x (1.71-2.03x in the others) and its
  /// points part, worked back from the blend (cube root of points x mix x mix), about 0.66x the
  /// system memcpy against 0..64's 0.96-0.97x (0.99-1.10x in the other Debian 13 runs): a drop of
  /// one class in one process, not explained (docs/perf/short-call-modes/ measures a per-process
  /// mode that moves every JIT routine of a process alike). Where 0..64 and 0..128 were compared
  /// on the eight distributions, 0..64 replayed them at 0.84-0.88x the best of glibc and
  /// AOCL-LibMem and 0..128 at 1.02-1.08x (docs/performance.md, eighth and ninth rounds).
  static constexpr double kSmallMixTie = 0.08;
  /// One stage's candidates as finally scored (after the halving's second round): each's blended
  /// score and, in a blended stage, the production mix's part (both x the baseline); stage()'s
  /// optional out-parameter.
  struct StageScores {
    std::vector<Candidate> live;
    std::vector<double> score, mix;
  };
  Mix mix_ = Mix::kNone;
  /// Sets mix_ for one stage's scope.
  struct WithMix {
    Search& s;
    Mix saved;
    WithMix(Search& search, Mix m) : s(search), saved(search.mix_) { s.mix_ = m; }
    ~WithMix() { s.mix_ = saved; }
  };

  /// Scores `cands` (plus `incumbent`) on `pts`; returns the incumbent unless one wins by >= 1%
  /// (decide::pick); in a stage that blends the production mix in, a near tie among the winners
  /// (within `tie`: kMixTie, the small-length stage kSmallMixTie) goes to the one the mix
  /// favours (decide::pick_tiebreak), and should that one not confirm head to head, pick()'s
  /// choice is tried. With `scores`, the candidates as finally scored are written there (left
  /// empty where nothing was timed). With `group` (a halving stage), the halving keeps the best
  /// candidate of each group as well as the best third (decide::halving_keep).
  Candidate stage(const char* name, const Candidate& incumbent, std::vector<Candidate> cands,
                  const std::vector<Point>& pts, bool halving, double tie = kMixTie,
                  StageScores* scores = nullptr, unsigned (*group)(const Candidate&) = nullptr) {
    // Its candidates are timed on pts and the replayed calls (a distribution's, or the production
    // mix: at most 4 KiB), so they are verified up to twice the longest of those, at least 2 MiB
    // (get()); the one kept is verified in full below, before it leaves the stage.
    std::uint64_t timed = max_size(pts);
    if (w_.is_distribution()) timed = std::max<std::uint64_t>(timed, w_.distribution->max_size());
    if (mix_ != Mix::kNone)
      for (const Call& c : mix_calls_) timed = std::max<std::uint64_t>(timed, c.size);
    std::shuffle(cands.begin(), cands.end(), rng_);
    cands.insert(cands.begin(), incumbent);
    std::vector<Candidate> live;
    std::vector<const Routine*> rs;
    {
      VerifyBelow v(*this, std::max<std::uint64_t>(2u << 20, 2 * timed));
      for (const auto& c : cands) {
        const Routine* r = get(c);
        if (!r || std::find(rs.begin(), rs.end(), r) != rs.end()) continue;
        live.push_back(c);
        rs.push_back(r);
      }
    }
    if (scores) *scores = {};
    if (rs.empty()) return incumbent;
    stats_.timed += static_cast<unsigned>(rs.size());
    say(std::string(name) + ": timing " + std::to_string(rs.size()) + " verified candidates on " +
        (w_.is_distribution() ? "the replay of " + w_.name : std::to_string(pts.size()) + " points"));
    std::vector<double> mix;  // the production mix's part of each score (blended stages only)
    std::vector<double> s = score(rs, pts, halving ? std::max(3u, timing_.rounds / 3) : timing_.rounds, &mix);
    if (halving && rs.size() > 4 && time_left()) {
      // Keep the best third (and the incumbent, index 0), and with `group` the best of each
      // group (decide::halving_keep); re-score them with full rounds.
      std::vector<unsigned> groups;
      if (group)
        for (const Candidate& c : live) groups.push_back(group(c));
      const std::vector<std::size_t> keep =
          decide::halving_keep(s, std::max<std::size_t>(3, rs.size() / 3 + 1), groups);
      std::vector<Candidate> l2;
      std::vector<const Routine*> r2;
      for (auto i : keep) {
        l2.push_back(live[i]);
        r2.push_back(rs[i]);
      }
      live = l2;
      rs = r2;
      s = score(rs, pts, timing_.rounds, &mix);
    }
    // The incumbent unless beaten by 1 % (decide::pick). Where the stage blends the mix in, a
    // near tie among the winners (within `tie` of the best; the incumbent too if within it)
    // goes to the one the production mix favours by more than kMixTieMargin
    // (decide::pick_tiebreak). The incumbent keeps its place unless some challenger beats it
    // by 1 % in the blend.
    const std::size_t by_pick = decide::pick(s, 0.01);
    std::size_t bi = by_pick;
    if (!mix.empty()) {
      const std::size_t by_mix = decide::pick_tiebreak(s, mix, 0.01, tie, kMixTieMargin);
      if (by_mix != bi) {
        const std::string line = std::string(name) + ": " + label(live[by_mix]) + small_detail(live[by_mix]) +
                                 " and " + label(live[bi]) + small_detail(live[bi]) + " within " +
                                 fmt("%.0f", 100 * tie) + "% (" + fmt("%.3f", s[by_mix]) + "x vs " +
                                 fmt("%.3f", s[bi]) + "x); the production mix decides (" + fmt("%.3f", mix[by_mix]) +
                                 "x vs " + fmt("%.3f", mix[bi]) + "x)";
        say(line);
        log_.push_back(line);
        bi = by_mix;
      }
    }
    if (scores) *scores = {live, s, mix};
    // A narrow win may be noise: confirm it head to head with twice the rounds. In a blended
    // stage the tie rule holds here too: a win within `tie` that the mix does not share keeps
    // the incumbent. Returns whether challenger i stands (s[0] and s[i] then the head-to-head's).
    const auto stands = [&](std::size_t i) {
      if (i == 0 || s[i] >= s[0] * 1.05 || !time_left()) return true;
      std::vector<double> cmix;
      const auto c = score({rs[0], rs[i]}, pts, 2 * timing_.rounds, &cmix);
      if (c[1] < c[0] * 1.01) {
        say(std::string(name) + ": " + label(live[i]) + " did not confirm its " + fmt("%.1f", 100 * (s[i] / s[0] - 1)) +
            "% win head to head (" + fmt("%.3f", c[1]) + "x vs " + fmt("%.3f", c[0]) + "x)");
        return false;
      }
      if (!cmix.empty() && decide::pick_tiebreak({c[0], c[1]}, {cmix[0], cmix[1]}, 0.01, tie, kMixTieMargin) == 0) {
        const std::string line = std::string(name) + ": " + label(live[i]) + " won by " +
                                 fmt("%.1f", 100 * (c[1] / c[0] - 1)) + "% head to head, within " +
                                 fmt("%.0f", 100 * tie) + "%, and the production mix favours the incumbent (" +
                                 fmt("%.3f", cmix[0]) + "x vs " + fmt("%.3f", cmix[1]) + "x)";
        say(line);
        log_.push_back(line);
        return false;
      }
      s[0] = c[0];
      s[i] = c[1];
      return true;
    };
    if (!stands(bi)) {
      // The mix's choice of a near tie fell: the blend's own pick (pick()) still may stand.
      if (bi != by_pick && by_pick != 0 && stands(by_pick)) {
        say(std::string(name) + ": falling back to the blend's pick, " + label(live[by_pick]));
        bi = by_pick;
      } else {
        say(std::string(name) + ": keeping the incumbent");
        bi = 0;
      }
    }
    // The one kept is verified in full (get() outside the scope above); should it fail above
    // the lengths timed here, the next best by score is, down to the first one that passes.
    if (!get(live[bi])) {
      std::vector<std::size_t> order(live.size());
      for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return s[a] > s[b]; });
      const auto ok = std::find_if(order.begin(), order.end(), [&](std::size_t i) { return get(live[i]) != nullptr; });
      if (ok == order.end()) return incumbent;  // run() reports the winner's verification failure
      bi = *ok;
    }
    const std::string line = std::string(name) + ": " + label(live[bi]) + " at " + fmt("%.3f", s[bi]) + "x the " +
                             baseline_name(op_) + " (incumbent " + fmt("%.3f", s[0]) + "x)";
    say(line);
    log_.push_back(line);
    return live[bi];
  }

  /// The use patterns a threshold must win (timing.hpp, Use): a copy that the program then
  /// reads, or whose source it refills, pays for where the variant left the data.
  std::vector<Use> uses() const { return uses_of(op_); }
  /// memcpy or memmove: an operation with a src (rep_aligned_mutual applies).
  bool copies() const { return op_ == Operation::kMemcpy || op_ == Operation::kMemmove; }

  // ----- threshold ladders: timing shared by the rep stage and the beyond-the-caches stage ---

  /// Where a ladder row's buffers start: bytes past the bench buffers' page-aligned src and
  /// dst (compare()'s src_align, dst_align).
  struct Offsets {
    std::uint32_t src = 0;
    std::uint32_t dst = 0;
  };
  /// One row of a threshold ladder: a use pattern in a cache state at src and dst offsets.
  struct LadderRow {
    Use use;
    CacheState state;
    Offsets at;
    std::string name;
  };
  /// A threshold ladder timed: rows (the copy alone at each placement, then each other use
  /// pattern at offset 0, all warm: the objective; last, the cold copy: a check) x sizes; with
  /// time_ladder's uses_at_every_placement, every use pattern at each placement in turn, then the
  /// cold copy at the first placement.
  /// gain[v][p][s] = log(t_base / t_variant v) at row p, size s, shrunk toward 0 by the two
  /// medians' relative spread (MAD); exactly 0 (not timed) where variant v runs the base's own
  /// code: below its `from`, and where large_lengths_differ says the two run the same code at
  /// that length and placement.
  struct Ladder {
    std::vector<std::uint64_t> sizes;  ///< the sizes measured (the budget may cut the ladder)
    std::vector<LadderRow> rows;
    std::vector<std::vector<std::vector<double>>> gain;
    std::vector<std::vector<double>> objective(std::size_t v) const { return {gain[v].begin(), gain[v].end() - 1}; }
    std::vector<std::vector<double>> check(std::size_t v) const { return {gain[v].end() - 1, gain[v].end()}; }
  };

  /// Times `rs[0]` (the base) and the variants rs[1..] in the same rounds at each of `sizes`,
  /// each batch warm (the caller just wrote the source and read the destination), each call
  /// followed by each use pattern in turn, and cold (both buffers flushed) as a check. The copy
  /// alone at each of `placements` (src and dst offsets), the other rows with both page-aligned.
  /// Variant v is timed only from `from[v]` on: below it, it runs the base's code (gain 0).
  /// Stops early, said, when the budget runs out (unless `whatever_budget`). With
  /// `uses_at_every_placement` every use pattern is timed at every placement, and the cold check
  /// at the first placement (for a variant that acts only at some placements: rep_alias_loop).
  Ladder time_ladder(const std::string& name, const std::vector<const Routine*>& rs, std::vector<std::uint64_t> sizes,
                     const std::vector<Offsets>& placements, const std::vector<std::uint64_t>& from,
                     bool whatever_budget = false, bool uses_at_every_placement = false) {
    Ladder l;
    const std::vector<Use> pats = uses();
    const auto at = [](const Offsets& o) {
      return (o.src ? "src+" + std::to_string(o.src) + " " : std::string()) + "dst+" + std::to_string(o.dst);
    };
    for (const Offsets& o : placements)
      for (std::size_t p = 0; p < (uses_at_every_placement ? pats.size() : 1); ++p)
        l.rows.push_back({pats[p], CacheState::kWarm, o, std::string(use_name(pats[p])) + ", " + at(o)});
    if (!uses_at_every_placement)
      for (std::size_t p = 1; p < pats.size(); ++p)
        l.rows.push_back({pats[p], CacheState::kWarm, {}, std::string(use_name(pats[p]))});
    const Offsets cold_at = uses_at_every_placement && !placements.empty() ? placements.front() : Offsets{};
    l.rows.push_back({Use::kCopy, CacheState::kCold, cold_at,
                      "copy, cold" + (uses_at_every_placement ? ", " + at(cold_at) : std::string()) + " (check)"});
    const std::size_t nv = rs.size() - 1, np = l.rows.size();
    l.gain.assign(nv, std::vector<std::vector<double>>(np, std::vector<double>(sizes.size(), 0.0)));
    stats_.timed += static_cast<unsigned>(nv);
    TimingOptions t = ladder_timing();
    BenchBuffers& buf = bench_buffers();
    std::size_t measured = sizes.size();
    for (std::size_t si = 0; si < sizes.size(); ++si) {
      if (!whatever_budget && !time_left() && si > 0) {
        say(name + ": budget spent; sizes from " + std::to_string(sizes[si]) + " not measured");
        measured = si;
        break;
      }
      std::vector<const void*> fns{rs[0]->entry()};
      std::vector<std::size_t> who;  // fns[i + 1] is variant who[i]
      for (std::size_t v = 0; v < nv; ++v)
        if (sizes[si] >= from[v]) {
          fns.push_back(rs[v + 1]->entry());
          who.push_back(v);
        }
      if (who.empty()) continue;
      for (std::size_t p = 0; p < np; ++p) {
        TimingOptions tp = t;
        tp.use = l.rows[p].use;
        tp.state = l.rows[p].state;
        const Offsets o = l.rows[p].at;
        const std::uint64_t n = timed_length(sizes[si]);
        // A variant that runs the base's own code at this length and placement (a rep class
        // whose alignment or alias test hands the copy to the loop: large_lengths_differ, the
        // model tests/test_paths.cpp checks against the code that runs) ties it: gain exactly
        // 0, not timed. Timed, two runs of the same code differed by 2-5 % on a busy Zen 5
        // host, and that noise vetoed rep for 4K-aliasing-aware variants (decide::choose_threshold:
        // a row whose sum is negative; fifteenth round).
        std::vector<const void*> fp{fns[0]};
        std::vector<std::size_t> timed;  // fp[k + 1] is who[timed[k]]
        for (std::size_t i = 0; i < who.size(); ++i)
          if (op_ == Operation::kClearPage ||
              large_lengths_differ(rs[0]->params(), rs[who[i] + 1]->params(), n, o.src, o.dst)) {
            fp.push_back(fns[i + 1]);
            timed.push_back(i);
          }
        if (timed.empty()) continue;
        const auto m = compare(op_, fp, buf, n, o.src, o.dst, tp);
        // On a shared machine a single batch's luck must neither veto a variant nor win it a
        // threshold: each gain is shrunk by the two medians' relative spread.
        for (std::size_t k = 0; k < timed.size(); ++k) {
          const double g = std::log(m[0].ticks_per_call / m[k + 1].ticks_per_call);
          const double noise = m[0].mad_ticks / m[0].ticks_per_call + m[k + 1].mad_ticks / m[k + 1].ticks_per_call;
          l.gain[who[timed[k]]][p][si] = g > 0 ? std::max(g - noise, 0.0) : std::min(g + noise, 0.0);
        }
      }
    }
    sizes.resize(measured);
    for (auto& v : l.gain)
      for (auto& row : v) row.resize(measured);
    l.sizes = std::move(sizes);
    return l;
  }

  /// Rounds, batches and time limits of a ladder's comparisons (and, x3 rounds, solo, of the
  /// confirmation).
  TimingOptions ladder_timing() const {
    TimingOptions t = timing_;
    t.rounds = opt_.quick ? 3 : 5;
    t.warmup_rounds = 1;
    t.max_seconds = 1.0;
    t.min_calls = 4;
    t.batch_seconds = 100e-6;
    return t;
  }

  /// Variant v's rows of a ladder, one line each, base time / variant time per size.
  std::string ladder_lines(const Ladder& l, std::size_t v) const {
    std::ostringstream o;
    o.imbue(std::locale::classic());  // whatever std::locale::global() says
    for (std::size_t p = 0; p < l.rows.size(); ++p) {
      o << "\n    " << l.rows[p].name << ":";
      for (std::size_t si = 0; si < l.sizes.size(); ++si)
        o << ' ' << size_label(l.sizes[si]) << '=' << fmt("%.2f", std::exp(l.gain[v][p][si]));
    }
    return o.str();
  }

  /// Confirms a threshold: `base` and `chosen`, the complete routines, each timed in runs of its
  /// own (no neighbour's cache footprint), at each of `sizes` (src and dst `src_at`, `dst_at`
  /// bytes past page-aligned buffers: by default both page-aligned), every
  /// use pattern, warm. Confirmed when `chosen` is at least 1.01 times as fast on the
  /// geometric mean and no pattern loses
  /// more than 6%. Says and logs the verdict with the worst case, `what` naming the
  /// threshold; *worst_size (if given) is the size of the worst case (0 when none loses). The
  /// rule is decide::confirm().
  ///
  /// Each case is three runs of each routine, in the order base, chosen | chosen, base | base,
  /// chosen, and its ratio the median of the three: one burst of interference (this VM shares
  /// its host) hits one run, not the verdict, and a drift over the case favours neither. A fill
  /// at 64 MiB whose rep stosb band beats the loop 1.16-1.47x in every later measurement
  /// confirmed at 1.000x once in one run of each (docs/performance.md, sixth round).
  bool confirmed_solo(const std::string& what, const Routine& base, const Routine& chosen,
                      std::vector<std::uint64_t> sizes, std::uint64_t* worst_size = nullptr, std::uint32_t src_at = 0,
                      std::uint32_t dst_at = 0) {
    TimingOptions tc = ladder_timing();
    tc.solo = true;
    tc.max_seconds = (opt_.quick ? 0.5 : 2.0) / 3;
    std::sort(sizes.begin(), sizes.end());
    sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
    std::vector<std::vector<double>> runs;  // per case (size x use pattern): base / chosen, per run
    std::vector<std::string> names;
    std::vector<std::uint64_t> case_size;
    for (std::uint64_t sz : sizes)
      for (Use u : uses()) {
        tc.use = u;
        tc.state = CacheState::kWarm;
        std::vector<double> r;
        for (int run = 0; run < 3; ++run) {
          const bool swap = run == 1;
          const auto m = compare(op_, {swap ? chosen.entry() : base.entry(), swap ? base.entry() : chosen.entry()},
                                 bench_buffers(), timed_length(sz), src_at, dst_at, tc);
          r.push_back(swap ? m[1].ticks_per_call / m[0].ticks_per_call : m[0].ticks_per_call / m[1].ticks_per_call);
        }
        runs.push_back(r);
        names.push_back(size_label(sz) + " " + std::string(use_name(u)));
        case_size.push_back(sz);
      }
    const decide::Confirmation c = decide::confirm(runs, 1.01, 1.06);
    // Only a loss names a size: a threshold retried one size up is one that lost there.
    if (worst_size) *worst_size = c.worst != decide::kNoCase ? case_size[c.worst] : 0;
    const std::string line = what + (c.ok ? " confirmed in solo runs: " : " did not confirm in solo runs: ") +
                             fmt("%.3f", c.gain) + "x on average, worst pattern " + fmt("%.3f", c.worst_ratio) + "x" +
                             (c.worst != decide::kNoCase ? " (" + names[c.worst] + ")" : std::string());
    say(line);
    log_.push_back(line);
    return c.ok;
  }

  /// The src/dst offsets at which the rep stage and the gap stage time the copy alone. dst 1
  /// and 15 bytes past a page-aligned src: misaligned and 4K-aliasing (0 < dst - src < 64 mod
  /// 4096); dst 4 and 33 past with src 2048 past: misaligned, not aliasing, as most pairs of
  /// buffers are (on Zen 5 rep movsb is 1.1-1.4x the loop there from 64 KiB to 8 MB, with one
  /// exception at 8 MB, and ties or loses where the copy aliases: docs/performance.md,
  /// thirteenth round). For copies also the two placements where testing dst alone and testing
  /// dst against src disagree: malloc's buffers (both 16 bytes off 64) and dst aligned with src
  /// 4 bytes off.
  std::vector<Offsets> rep_placements() const {
    std::vector<Offsets> placements{{0, 0}, {0, 1}, {2048, 4}, {0, 15}, {2048, 33}};
    if (copies()) placements.insert(placements.end(), {{16, 16}, {4, 0}});
    return placements;
  }

  /// Stage 5, rep: where `rep movs`/`rep stos` beats the loop. The incumbent without rep (a
  /// threshold a seed brought along is decided again here, by the same rule) against itself with
  /// rep from the loop's start, on a ladder from the loop's start to 8 MiB, with src/dst offsets
  /// 0/0, 0/1 and 0/15 (4K-aliasing), 2048/4 and 2048/33 (misaligned, not aliasing), and for copies
  /// 16/16 (mutually aligned, as malloc's buffers are) and 4/0; variants: byte or 8-byte elements,
  /// dst as given / aligned to 64 first / rep only when dst is 64-aligned (for copies in byte
  /// elements also: only when dst and src are mutually 64-aligned), each also with 4K-aliasing
  /// copies handed to the loop. Each variant's band comes from decide::choose_threshold (band:
  /// rep_threshold .. rep_stop, the loop again above it: on Zen 5 the loop wins 2-8 MiB), and so
  /// does the band of the last two forms split at a ladder size (rep_aligned_from; from their
  /// measured rows, not timed again); the best band is confirmed solo.
  Candidate rep_stage(const Candidate& incumbent) {
    const std::string name = "rep";
    Candidate base = incumbent;
    base.params.rep_threshold = kNever;
    base.params.rep_stop = kNever;
    base.params.rep_resume = kNever;
    base.params.rep_aligned_from = kNever;
    base.params.rep_aligned_mutual = false;
    if (!get(base)) base = incumbent;
    const std::uint64_t loop_lo = loop_start(base.params);
    // From the loop's own start (so "rep first", as FSRM CPUs favour, can win), then powers of
    // two (--quick: every other one).
    std::vector<std::uint64_t> sizes{loop_lo};
    for (std::uint64_t s = 1024; s <= (8ull << 20); s *= opt_.quick ? 4 : 2)
      if (s > loop_lo) sizes.push_back(s);
    std::vector<Candidate> variants;
    const std::uint64_t chunk = op_ == Operation::kClearPage ? kNever : kRepChunk;
    for (unsigned unit : {1u, 8u})
      for (int mode = 0; mode < 3; ++mode) {  // dst as given, aligned first, aligned only
        if (opt_.quick && (unit == 8 || mode == 2)) continue;
        Candidate c = base;
        c.params.rep_threshold = 0;
        c.params.rep_stop = kNever;
        c.params.rep_resume = kNever;
        c.params.rep_unit = unit;
        c.params.rep_align_dst = mode == 1;
        c.params.rep_aligned_only = mode == 2;
        c.params.rep_aligned_from = kNever;
        c.params.rep_aligned_mutual = false;  // dst alone (base may be an incumbent with it)
        c.params.rep_alias_window = 0;
        c.params.rep_chunk = chunk;
        c.params.rep_chunk_stop = kNever;  // the stage beyond the caches decides it
        variants.push_back(c);
        // The same as one instruction whatever the length (the ladder's sizes from 2 MiB on,
        // timed one page past, tell them apart), for a CPU whose rep wins there only as one
        // instruction.
        if (chunk != kNever && unit == 1 && mode < 2 && !opt_.quick) {
          Candidate whole = c;
          whole.params.rep_chunk = kNever;
          variants.push_back(whole);
        }
        // The same, handing copies that would 4K-alias to the loop (the rows with dst 1 and 15
        // past a page-aligned src alias; those with src 2048 past do not).
        if (op_ != Operation::kFill && !opt_.quick) {
          Candidate a = c;
          a.params.rep_alias_window = 64;
          variants.push_back(a);
        }
        // Rep only for mutually aligned buffers ((dst - src) mod 64 == 0): rep movsb is slow
        // when src and dst are misaligned against each other, and fast with both 16 bytes off
        // 64, where a test of dst alone sends malloc's buffers to the loop (Zen 5 memcpy
        // 1M+4K: rep 61.6-62.2 GB/s, the loop 39.0; docs/performance.md, eleventh round).
        if (mode == 2 && unit == 1 && copies()) {
          c.params.rep_aligned_mutual = true;
          variants.push_back(c);
        }
      }
    std::vector<const Routine*> rs{get(base)};
    std::vector<Candidate> live;
    for (const auto& v : variants)
      if (const Routine* r = get(v)) {
        rs.push_back(r);
        live.push_back(v);
      }
    if (rs[0] == nullptr || rs.size() < 2) return base;
    const std::vector<Offsets> placements = rep_placements();
    say(name + ": comparing the loop with rep string instructions at " + std::to_string(sizes.size()) + " sizes x " +
        std::to_string(placements.size()) + " src/dst offsets, warm, " + std::to_string(uses().size()) +
        " use patterns, and cold as a check (sizes from 64 KiB on timed one page past the size)");
    const Ladder l = time_ladder(name, rs, sizes, placements, std::vector<std::uint64_t>(live.size(), 0));
    if (l.sizes.empty()) return base;
    Candidate out = base;
    double best_gain = -1;
    for (std::size_t v = 0; v < live.size(); ++v) {
      const CopyParams& p = live[v].params;
      // Handing aliasing copies to the loop is one more branch on every rep call: it must win
      // by 2% more in total than the plain variant, or the simpler routine is kept. One rep
      // instruction for every length must win by 2% more than rep in pieces: where the
      // streaming switch (kRepChunk) is off while this runs, the two tie, and in the other
      // state only the pieces keep their speed.
      const double extra = (p.rep_alias_window.value ? std::log(1.02) : 0) +
                           (chunk != kNever && p.rep_chunk.value == kNever ? std::log(1.02) : 0);
      // Two bands (rep_resume) where one size lost in between would veto every single band
      // holding it; not with --quick, whose stage beyond the caches does not judge rep again and
      // would drop the second band.
      const decide::BandsChoice bc =
          opt_.quick ? decide::BandsChoice{decide::choose_threshold(l.objective(v), l.check(v), std::log(1.03),
                                                                    std::log(1.03) + extra, true)}
                     : decide::choose_bands(l.objective(v), l.check(v), std::log(1.03), std::log(1.03) + extra);
      const decide::ThresholdChoice& c = bc.band;
      const std::uint64_t stop = c.index != decide::kNoThreshold && c.end < l.sizes.size() ? l.sizes[c.end] : kNever;
      const std::uint64_t resume = bc.resume != decide::kNoThreshold ? l.sizes[bc.resume] : kNever;
      say(name + (p.rep_unit.value == 8 ? " (8-byte elements" : " (byte elements") +
          (p.rep_aligned_only && p.rep_aligned_mutual ? ", only when dst and src are mutually 64-aligned"
           : p.rep_aligned_only                        ? ", only when dst is 64-aligned"
           : p.rep_align_dst                           ? ", dst aligned to 64 first"
                                                       : ", dst as given") +
          (p.rep_alias_window.value ? ", 4K-aliasing copies to the loop" : "") +
          (p.rep_chunk.value != kNever ? ", " + size_label(p.rep_chunk.value) + " pieces)"
                                       : chunk != kNever ? ", one instruction)" : ")") +
          ", loop time / variant time:" + ladder_lines(l, v) + "\n    -> " +
          (c.index == decide::kNoThreshold ? c.why
                                           : "from " + size_label(l.sizes[c.index]) +
                                                 (stop == kNever ? "" : " to below " + size_label(stop)) +
                                                 (resume == kNever ? "" : " and from " + size_label(resume)) + ": " +
                                                 c.why));
      if (c.index != decide::kNoThreshold && c.gain - extra > best_gain) {
        best_gain = c.gain - extra;
        out = base;
        out.params.rep_threshold = l.sizes[c.index];
        out.params.rep_stop = stop;
        out.params.rep_resume = resume;
        out.params.rep_unit = p.rep_unit;
        out.params.rep_align_dst = p.rep_align_dst;
        out.params.rep_aligned_only = p.rep_aligned_only;
        out.params.rep_aligned_mutual = p.rep_aligned_mutual;
        out.params.rep_alias_window = p.rep_alias_window;
        out.params.rep_chunk = p.rep_chunk;
        out.params.rep_chunk_stop = p.rep_chunk_stop;
      }
    }
    // Both forms per length: rep with dst aligned first below a length X, rep only for a
    // 64-aligned dst (or dst and src mutually aligned) from X on (rep_aligned_from). Its rows are
    // the two measured forms' rows, each where the composite runs that form's code (same ladder,
    // same rounds: from X on the aligned-only form's where its test fails, where it runs the
    // loop); the split is one compare
    // more and is chosen over X, so it must beat the best single form by 1 % more.
    // On a Zen 5 host dst aligned first won up to 512 KiB and lost 5 % at 1 MiB with dst
    // misaligned, where rep for an aligned dst still won 1.12-1.35x (docs/performance.md,
    // eighth round).
    for (std::size_t v1 = 0; v1 < live.size(); ++v1)
      for (std::size_t v2 = 0; v2 < live.size(); ++v2) {
        const CopyParams& a = live[v1].params;
        const CopyParams& b = live[v2].params;
        if (!a.rep_align_dst || a.rep_aligned_only || !b.rep_aligned_only || a.rep_unit != b.rep_unit ||
            a.rep_alias_window != b.rep_alias_window || a.rep_chunk != b.rep_chunk || op_ == Operation::kClearPage)
          continue;
        const double extra = (a.rep_alias_window.value ? std::log(1.02) : 0) + std::log(1.01);
        // From the split on the composite runs b's code (the loop) only where b's test fails
        // (dst alone, or with rep_aligned_mutual dst against src); elsewhere it keeps a's
        // prologue and rep.
        const auto runs_b = [&b](const LadderRow& r) { return !rep_alignment_passes(b, r.at.src, r.at.dst); };
        std::vector<bool> b_rows, b_check_rows;
        for (std::size_t r = 0; r + 1 < l.rows.size(); ++r) b_rows.push_back(runs_b(l.rows[r]));
        b_check_rows.push_back(runs_b(l.rows.back()));
        const decide::SplitChoice sc =
            decide::choose_split(l.objective(v1), l.check(v1), l.objective(v2), l.check(v2), std::log(1.03),
                                 std::log(1.03) + extra, b_rows, b_check_rows);
        const decide::ThresholdChoice& best = sc.band;
        const std::size_t best_x = sc.split;
        const std::string form = std::string(a.rep_unit.value == 8 ? " (8-byte elements" : " (byte elements") +
                                 ", dst aligned to 64 first, only when " +
                                 (b.rep_aligned_mutual ? "dst and src are mutually" : "dst is") +
                                 " 64-aligned from the split" +
                                 (a.rep_alias_window.value ? ", 4K-aliasing copies to the loop)" : ")");
        if (sc.split == decide::kNoThreshold) {
          say(name + form + ": no band that runs both forms qualifies");
          continue;
        }
        const std::uint64_t stop = best.end < l.sizes.size() ? l.sizes[best.end] : kNever;
        say(name + form + ", split at " + size_label(l.sizes[best_x]) + ": from " + size_label(l.sizes[best.index]) +
            (stop == kNever ? "" : " to below " + size_label(stop)) + ": " + best.why);
        if (best.gain - extra > best_gain) {
          best_gain = best.gain - extra;
          out = base;
          out.params.rep_threshold = l.sizes[best.index];
          out.params.rep_stop = stop;
          out.params.rep_unit = a.rep_unit;
          out.params.rep_align_dst = true;
          out.params.rep_aligned_only = false;
          out.params.rep_aligned_from = l.sizes[best_x];
          out.params.rep_aligned_mutual = b.rep_aligned_mutual;
          out.params.rep_alias_window = a.rep_alias_window;
          out.params.rep_chunk = a.rep_chunk;
          out.params.rep_chunk_stop = a.rep_chunk_stop;
        }
      }
    out.params = without_idle_rep_fields(out.params);  // a band within one piece: no pieces
    const bool found = out.params.rep_threshold.value != kNever;
    const std::string line =
        name + " threshold: " +
        (!found ? std::string("never (no size range where it wins every use pattern by 3% in total without a 3% loss)")
                : std::to_string(out.params.rep_threshold.value) + " bytes" +
                      (out.params.rep_stop.value != kNever
                           ? ", the loop again from " + std::to_string(out.params.rep_stop.value) + " bytes"
                           : std::string()) +
                      (out.params.rep_resume.value != kNever
                           ? ", rep again from " + std::to_string(out.params.rep_resume.value) + " bytes"
                           : std::string()) +
                      (out.params.rep_aligned_from.value != kNever
                           ? std::string(out.params.rep_aligned_mutual ? ", only for mutually 64-aligned dst and src from "
                                                                       : ", only for a 64-aligned dst from ") +
                                 std::to_string(out.params.rep_aligned_from.value) + " bytes"
                           : std::string()));
    say(line);
    log_.push_back(line);
    if (!found || !time_left()) return found && get(out) ? out : base;
    // Confirmed at the threshold and at the largest size the band keeps (every use pattern). A
    // band that does not confirm because of its threshold's own size is tried once more from the
    // next ladder size: on a Zen 5 host rep movsb from 32 KiB won 1.25x on average and lost 7% at
    // 32 KiB copy then read, and dropping the whole band left the loop at 32 KiB-16 MiB, where
    // the beyond-the-caches stage then chose non-temporal stores against the loop, not rep movsb
    // (the report: rep movsb 1.12x the tuned routine at 16 MiB; docs/performance.md, sixth round).
    const std::uint64_t last = out.params.rep_stop.value != kNever ? out.params.rep_stop.value / 2 : l.sizes.back();
    for (int attempt = 0; attempt < 2; ++attempt) {
      const Routine* chosen = get(out);
      if (!chosen) break;
      std::uint64_t worst_at = 0;
      const std::uint64_t first = out.params.rep_threshold.value;
      if (confirmed_solo(name + " threshold " + std::to_string(first), *rs[0], *chosen, {first, last}, &worst_at))
        return out;
      const auto next = one_size_up(l.sizes, first, worst_at);
      // A threshold moved up to the split would leave a band for an aligned dst only: never scored.
      if (attempt == 1 || !next || *next >= last || *next >= out.params.rep_aligned_from.value || !time_left()) break;
      out.params.rep_threshold = *next;
      const std::string again = name + " threshold " + std::to_string(*next) + ": one ladder size up";
      say(again);
      log_.push_back(again);
    }
    log_.push_back("keeping " + bytes_or_never(base.params.rep_threshold));
    return base;
  }

  /// The threshold to try once more after a solo confirmation failed: the ladder size after
  /// `first` when the confirmation's worst case (`worst_at`, bytes, from confirmed_solo) was at
  /// `first` itself; nullopt when it lost elsewhere, or `first` is the ladder's last size.
  static std::optional<std::uint64_t> one_size_up(const std::vector<std::uint64_t>& ladder, std::uint64_t first,
                                                  std::uint64_t worst_at) {
    const auto next = std::upper_bound(ladder.begin(), ladder.end(), first);
    if (worst_at != first || next == ladder.end()) return std::nullopt;
    return *next;
  }

  /// After stage 6, the gap between two rep bands: where the rep band ends in the loop (rep_stop) and
  /// rep starts again beyond the caches (rep_resume), the two stages each admitted rep only
  /// where it won against the loop, so the sizes between are the loop by default, never shown
  /// to win (a Zen 5 memcpy kept the loop at 256 KiB only, where rep lost the copy read back
  /// by 5 % and won the copy alone by 5-21 %; back to back the loop copied 256 KiB at 0.76x:
  /// docs/performance.md, fourteenth and fifteenth rounds). Only a gap rep_gap() says may be
  /// judged. The routine with the gap and the same routine with rep throughout are timed on the
  /// gap's ladder sizes (powers of two from rep_stop; a gap of more than four is left as it is),
  /// at the rep stage's placements, every use pattern and cold, and the loop keeps only the
  /// sizes decide::choose_gap gives it (it is the variant, rep the base); the rest go to rep.
  /// The ladder is the whole verdict: a solo run times 0/0 warm only, and would give back sizes
  /// the loop lost at a misaligned placement or cold. Run after the stage beyond the caches and
  /// again after the floor, whose per-class composite can open a gap; at most 4 sizes x 10 rows
  /// of one comparison each (about 1 s each at the most).
  Candidate rep_gap_stage(const Candidate& incumbent) {
    const std::string name = "rep gap";
    const CopyParams& p = incumbent.params;
    const RepGap gap = rep_gap(p);
    if (gap.from == kNever) {
      if (!gap.why_not.empty()) log_.push_back(name + ": not judged: " + gap.why_not);
      return incumbent;
    }
    std::vector<std::uint64_t> sizes;
    for (std::uint64_t s = p.rep_stop.value; s < p.rep_resume.value; s *= 2) sizes.push_back(s);
    if (sizes.size() > 4) {  // a gap the rep stage's ladder measured as the loop's over many sizes
      log_.push_back(name + ": the loop keeps " + size_label(p.rep_stop.value) + " to below " +
                     size_label(p.rep_resume.value) + " (not judged: more than four ladder sizes)");
      return incumbent;
    }
    Candidate closed = incumbent;  // rep throughout
    closed.params = gap_params(p, sizes, decide::kNoThreshold, 0);
    const Routine* rc = get(closed);
    const Routine* rg = get(incumbent);
    if (!rc || !rg) return incumbent;
    const std::vector<Offsets> placements = rep_placements();
    say(name + ": the loop between the rep bands (" + size_label(p.rep_stop.value) + " to below " +
        size_label(p.rep_resume.value) + ") against rep there, at " + std::to_string(sizes.size()) + " sizes x " +
        std::to_string(placements.size()) + " src/dst offsets, warm, " + std::to_string(uses().size()) +
        " use patterns, and cold as a check");
    // Every size of the gap, whatever the budget (after the floor it is spent): a verdict on
    // part of the gap would close the rest unmeasured.
    const Ladder l = time_ladder(name, {rc, rg}, sizes, placements, {0}, true);
    if (l.sizes.size() != sizes.size()) return incumbent;
    const decide::ThresholdChoice c = decide::choose_gap(l.objective(0), l.check(0), std::log(1.03), std::log(1.03));
    Candidate out = incumbent;
    out.params = gap_params(p, l.sizes, c.index, c.end);
    say(name + ": rep time / loop time:" + ladder_lines(l, 0) + "\n    -> " +
        (c.index == decide::kNoThreshold ? "the loop keeps no size: " + c.why
                                         : "the loop keeps " + size_label(out.params.rep_stop.value) + " to below " +
                                               size_label(out.params.rep_resume.value) + ": " + c.why));
    if (key(out) == key(incumbent) || !get(out)) {
      log_.push_back(name + ": the loop keeps " + size_label(p.rep_stop.value) + " to below " +
                     size_label(p.rep_resume.value));
      return incumbent;
    }
    const std::string line =
        name + ": " +
        (out.params.rep_stop.value == kNever
             ? "closed: rep from " + std::to_string(p.rep_threshold.value) + " bytes without a gap"
             : "the loop only from " + std::to_string(out.params.rep_stop.value) + " to below " +
                   std::to_string(out.params.rep_resume.value) + " bytes");
    say(line);
    log_.push_back(line);
    return out;
  }

  /// "1 stream", "4 page streams", "1 stream, 32-byte registers": a non-temporal loop's variant.
  static std::string nt_name(const CopyParams& p) {
    return (p.nt_pages.value == 1 ? std::string("1 stream") : std::to_string(p.nt_pages.value) + " page streams") +
           (p.nt_width.value ? ", " + std::to_string(p.nt_width.value) + "-byte registers" : std::string());
  }

  /// Stage 6, beyond the caches: non-temporal stores (one stream, or 2 or 4 page streams) and,
  /// where the rep band hands back to the loop below 64 MiB, rep string instructions again
  /// (rep_resume), in one comparison: the incumbent without either against each, on one ladder 256
  /// KiB..64 MiB (--quick: 256 KiB..16 MiB, every other size, one stream at the routine's width, no
  /// rep again; else also, in a 64-byte routine, the 32-byte loop: nt_width), src/dst at offsets
  /// 0/0 and 2048/4 (dst misaligned, not 4K-aliasing). decide::choose_two_thresholds picks rep
  /// again from one size, non-temporal stores from a larger one, either alone, or neither — the
  /// faster at each size, since both were timed in the same rounds (two separate stages each
  /// compared its variant with the loop only: one Zen 5 run took non-temporal stores from 16 MiB
  /// where rep again was 1.2x faster than both). The choice is confirmed solo; if it does not
  /// confirm, it is tried again with its first threshold one ladder size up when its worst case was
  /// there, then the best option of the other kind, then (where rep again was timed) non-temporal
  /// stores chosen against the loop alone, which rep again's rows ruled out while rep again was
  /// still to confirm. The base every option is built on and timed
  /// against runs a rep class that reaches past one piece in 2 MiB pieces (rep_chunk) below the
  /// ladder's top and as one instruction from it (rep_chunk_stop = kRepChunkTop), whatever the
  /// incumbent did there; one instruction from a smaller size, wherever the pieces run, is a third
  /// option (not in --quick), timed in the same rounds and chosen alone (choose_threshold), never
  /// with the others, and confirmed solo.
  Candidate beyond_caches_stage(const Candidate& incumbent) {
    const std::string name = "beyond the caches";
    Candidate base = incumbent;
    base.params.nt_threshold = kNever;
    base.params.nt_width = 0;
    base.params.rep_resume = kNever;
    base.params.rep_chunk_stop = kNever;
    const std::uint64_t loop_lo = loop_start(base.params);
    std::vector<std::uint64_t> sizes;
    for (std::uint64_t s = 256 * 1024; s <= (opt_.quick ? 16ull << 20 : 64ull << 20); s *= opt_.quick ? 4 : 2)
      if (s > loop_lo) sizes.push_back(s);
    if (sizes.empty()) return incumbent;
    // Rep in 2 MiB pieces wherever the rep class runs above one piece and below the top: this
    // CPU, part of the time, moves a rep instruction of about 4 MiB or more with a streaming
    // protocol, and one instruction then ran 0.39-0.66x the pieces' speed at 4-16 MiB (a fill
    // ladder, docs/perf/debian12/tune.log), while the pieces lost at most about 14 % in the other
    // state; one instruction that tied the pieces while the tuner ran read back at 0.60x glibc in
    // the report that followed (docs/performance.md, eleventh to twenty-third rounds). One instruction is the `whole`
    // option below, taken only where it wins. (A ladder size s is timed one
    // page past it: 2 MiB + 4 KiB is two pieces.)
    const auto pieces_at = [&](const CopyParams& q, std::uint64_t s) {
      return timed_length(s) > kRepChunk && s < sizes.back() &&
             ladder_strategy(q, timed_length(s)) == Strategy::kRepString;
    };
    const bool rep = op_ != Operation::kClearPage && base.params.rep_threshold.value != kNever;
    const bool pieces = rep && base.params.rep_chunk.value == kNever &&
                        std::any_of(sizes.begin(), sizes.end(), [&](std::uint64_t s) { return pieces_at(base.params, s); });
    // In pieces up to kRepChunkTop and one instruction from there (without_idle_rep_fields drops
    // the stop where no rep class with pieces reaches it).
    if (pieces || (rep && base.params.rep_chunk.value == kRepChunk)) {
      Candidate q = base;
      q.params.rep_chunk = kRepChunk;
      q.params.rep_chunk_stop = kRepChunkTop;
      q.params = without_idle_rep_fields(q.params);
      if (get(q)) base = q;
    }
    if (!get(base)) base = incumbent;
    const bool has_pieces = pieces && base.params.rep_chunk.value != kNever;
    // One rep instruction (rep_chunk_stop) against the pieces wherever they run on the ladder:
    // beyond the caches the CPU's streaming rep can beat both the pieces and the non-temporal
    // loop (AMD family 26, fill of 64 MiB: 42.5 GB/s against 36.7 in pieces and 41.0
    // non-temporal; a fill of 32 MiB in one instruction lost 26 %: docs/performance.md,
    // twentieth round). Timed as one instruction from just above one piece; the ladder picks
    // where it starts to win.
    const bool whole = !opt_.quick && rep && base.params.rep_chunk.value != kNever &&
                       std::any_of(sizes.begin(), sizes.end(), [&](std::uint64_t s) { return pieces_at(base.params, s); });
    if (base.params.rep_chunk.value != incumbent.params.rep_chunk.value ||
        base.params.rep_chunk_stop.value != incumbent.params.rep_chunk_stop.value)
      say(name + ": starting from the rep class " + (has_pieces ? "(one instruction above " + size_label(kRepChunk) + ") " : "") +
          "in " + size_label(kRepChunk) + " pieces" +
          (base.params.rep_chunk_stop.value != kNever ? ", one instruction from " + size_label(base.params.rep_chunk_stop.value)
                                                      : std::string()) +
          (whole ? " (one instruction from a smaller size is timed against them)" : std::string()));
    // rep again: a rep band that ends in the loop below the ladder's top.
    const bool again = !opt_.quick && base.params.rep_threshold.value != kNever &&
                       base.params.rep_stop.value < sizes.back() &&
                       ladder_strategy(base.params, base.params.rep_stop.value) == Strategy::kAlignedLoop;
    std::vector<Candidate> variants;  // [0] rep again when `again`, then non-temporal stores
    std::vector<std::uint64_t> from;
    if (again) {
      Candidate c = base;
      c.params.rep_resume = *std::find_if(sizes.begin(), sizes.end(),
                                           [&](std::uint64_t s) { return s > base.params.rep_stop.value; });
      // In 2 MiB pieces below the top, one instruction from it, where the first band ended
      // within one piece (without_idle_rep_fields dropped the rep stage's pieces): one
      // instruction again from 2 MiB ran at 0.39-0.66x the pieces' speed at 4-16 MiB while the
      // CPU's streaming switch was on (docs/perf/debian12/tune.log; docs/performance.md,
      // twenty-second and twenty-third rounds).
      if (c.params.rep_chunk.value == kNever && base.params.rep_stop.value <= kRepChunk + 1 &&
          op_ != Operation::kClearPage)
        c.params.rep_chunk = kRepChunk;
      // (One instruction again from kRepChunkTop, as the base's own pieces.)
      if (c.params.rep_chunk.value != kNever) c.params.rep_chunk_stop = kRepChunkTop;
      c.params = without_idle_rep_fields(c.params);
      variants.push_back(c);
      from.push_back(c.params.rep_resume.value);
    }
    // Page streams x the loop's register width: in a 64-byte routine also the 32-byte
    // non-temporal loop (nt_width; on AMD family 26 it copies 16 MiB 1.1x as fast as the 64-byte
    // one, docs/performance.md), one stream and four.
    for (unsigned width : {0u, 32u})
      for (unsigned pages : {1u, 2u, 4u}) {
        if (pages > 1 && (base.params.vector_width.value < 16 || opt_.quick)) continue;
        if (width && (base.params.vector_width.value != 64 || pages == 2 || opt_.quick)) continue;
        Candidate c = base;
        c.params.nt_threshold = 0;
        c.params.nt_pages = pages;
        c.params.nt_width = width;
        variants.push_back(c);
        from.push_back(0);
      }
    // From here on one instruction and the base run the same code: one instruction from the
    // base's stop, or the loop past the rep band's end.
    const std::uint64_t same_from = std::min(base.params.rep_chunk_stop.value, base.params.rep_stop.value);
    const std::size_t whole_variant = whole ? variants.size() : variants.size() + 1;  // the last, if any
    if (whole) {
      Candidate c = base;
      c.params.rep_chunk_stop = base.params.rep_chunk.value + 4096;
      variants.push_back(c);
      from.push_back(0);
    }
    std::vector<const Routine*> rs{get(base)};
    std::vector<Candidate> live;
    std::vector<std::uint64_t> live_from;
    bool has_whole = false;  // the whole variant built and verified: then live.back()
    for (std::size_t i = 0; i < variants.size(); ++i)
      if (const Routine* r = get(variants[i])) {
        rs.push_back(r);
        live.push_back(variants[i]);
        live_from.push_back(from[i]);
        has_whole = has_whole || i == whole_variant;
      }
    const bool has_again = again && !live.empty() && live[0].params.rep_resume.value != kNever;
    if (rs[0] == nullptr || live.size() < (has_again ? 2u : 1u) + (has_whole ? 1u : 0u))
      return incumbent;
    // non-temporal variants: [first_nt, nt_end)
    const std::size_t nt_end = live.size() - (has_whole ? 1 : 0);
    // dst 4 past with src 2048 past: misaligned without 4K aliasing (as the rep stage's rows),
    // so a variant that hands aliasing copies to the loop is timed on a misaligned rep too.
    const std::vector<Offsets> dst_aligns{{0, 0}, {2048, 4}};
    say(name + ": comparing the incumbent without them (its loop or rep class at these sizes) with " +
        (has_again ? "rep string instructions again and " : "") + (has_whole ? "rep as one instruction and " : "") +
        "non-temporal stores at " + std::to_string(sizes.size()) + " sizes x " + std::to_string(dst_aligns.size()) +
        " src/dst offsets, warm, " + std::to_string(uses().size()) + " use patterns, and cold as a check");
    const Ladder l = time_ladder(name, rs, sizes, dst_aligns, live_from);
    if (l.sizes.empty()) return base;
    const std::size_t first_nt = has_again ? 1 : 0;
    // The warm copy read back (fill: the fill read back); none: no start is refused.
    std::size_t read_row = l.rows.size();
    for (std::size_t p = 0; p + 1 < l.rows.size(); ++p)
      if (l.rows[p].use == Use::kThenRead && l.rows[p].state == CacheState::kWarm) read_row = p;
    // Each non-temporal variant with rep again (choose_two_thresholds: either alone, or both),
    // rep again and one instruction alone (choose_threshold), and, where rep again was not timed,
    // each non-temporal variant alone (choose_threshold): the admissible options, the best first;
    // the others are fallbacks.
    struct Option {
      Candidate c;
      double gain;
      std::string what;
    };
    std::vector<Option> options;
    std::optional<Option> nt_fallback;  // where rep again was timed: the best non-temporal option against the loop
    const double tol = std::log(1.03), min_gain = std::log(1.03);
    const auto describe = [&base](const Candidate& c) {
      std::string what;
      if (c.params.rep_resume.value != kNever)
        what = "rep again from " + std::to_string(c.params.rep_resume.value) + " bytes";
      const auto add_part = [&what](const std::string& part) { what += (what.empty() ? "" : ", ") + part; };
      const bool gives = c.params.rep_chunk.value != kNever && c.params.rep_chunk.value != base.params.rep_chunk.value;
      if (gives) add_part("rep in " + size_label(c.params.rep_chunk.value) + " pieces");
      // (One instruction again at or past the non-temporal threshold runs nowhere: not named.)
      if (c.params.rep_chunk_stop.value < c.params.nt_threshold.value)
        add_part(std::string(gives ? "then " : "") +
                 "rep as one instruction (not in " + size_label(c.params.rep_chunk.value) + " pieces) from " +
                 std::to_string(c.params.rep_chunk_stop.value) + " bytes");
      if (c.params.nt_threshold.value != kNever)
        what += (what.empty() ? "" : ", then ") + std::string("non-temporal stores (") + nt_name(c.params) +
                ") from " + std::to_string(c.params.nt_threshold.value) + " bytes";
      return what;
    };
    // The base with rep again from ladder size ta and variant v's non-temporal stores from tb
    // (decide::kNoThreshold: not that part), named.
    const auto make_option = [&](std::size_t ta, std::size_t tb, std::size_t v, double gain) {
      Option o{base, gain, {}};
      if (ta != decide::kNoThreshold) {
        o.c.params.rep_resume = std::max(l.sizes[ta], live[0].params.rep_resume.value);
        o.c.params.rep_chunk = live[0].params.rep_chunk;  // rep again as it was timed
        o.c.params.rep_chunk_stop = live[0].params.rep_chunk_stop;
      }
      if (tb != decide::kNoThreshold) {
        o.c.params.nt_threshold = l.sizes[tb];
        o.c.params.nt_pages = live[v].params.nt_pages;
        o.c.params.nt_width = live[v].params.nt_width;
      }
      o.c.params = without_idle_rep_fields(o.c.params);
      o.what = describe(o.c);
      return o;
    };
    const auto add = [&](std::size_t ta, std::size_t tb, std::size_t v, double gain) {
      if (ta == decide::kNoThreshold && tb == decide::kNoThreshold) return;
      const Option o = make_option(ta, tb, v, gain);
      if (std::none_of(options.begin(), options.end(), [&](const Option& x) { return key(x.c) == key(o.c); }))
        options.push_back(o);
    };
    if (has_again) {
      const decide::ThresholdChoice a = decide::choose_threshold(l.objective(0), l.check(0), tol, min_gain);
      say(name + ": rep string instructions again from " + size_label(live[0].params.rep_resume.value) +
          " (the rep band ends at " + size_label(base.params.rep_stop.value) + "), incumbent time / variant time:" +
          ladder_lines(l, 0) + "\n    -> alone: " + a.why);
      add(a.index, decide::kNoThreshold, 0, a.gain);
    }
    if (has_whole) {
      const std::size_t v = live.size() - 1;
      const decide::ThresholdChoice w = decide::choose_threshold(l.objective(v), l.check(v), tol, min_gain);
      say(name + ": rep as one instruction (the rep class runs in " + size_label(base.params.rep_chunk.value) +
          " pieces), incumbent time / variant time:" + ladder_lines(l, v) + "\n    -> alone: " + w.why);
      // (From same_from on the two are the same code: a "win" there is noise.)
      if (w.index != decide::kNoThreshold && timed_length(l.sizes[w.index]) < same_from) {
        Option o{base, w.gain, {}};
        o.c.params.rep_chunk_stop = std::max(l.sizes[w.index], base.params.rep_chunk.value + 4096);
        o.what = describe(o.c);
        options.push_back(o);
      }
    }
    for (std::size_t v = first_nt; v < nt_end; ++v) {
      // Non-temporal stores start only at a size where they gain the copy read back (a tie
      // there does not count: decide::nt_starts_where_read_gains).
      // Where rep again was timed it must also gain on rep again there: in a pair (rep again,
      // then non-temporal stores) they take their first size from rep again, and alone they
      // take it from a routine that rep again was timed against (review of 733ea56).
      std::vector<bool> starts = decide::nt_starts_where_read_gains(l.objective(v), read_row);
      if (has_again && !starts.empty()) {
        std::vector<std::vector<double>> over_again = l.objective(v);
        for (std::size_t p = 0; p < over_again.size(); ++p)
          for (std::size_t sz = 0; sz < over_again[p].size(); ++sz) over_again[p][sz] -= l.gain[0][p][sz];
        const std::vector<bool> vs_again = decide::nt_starts_where_read_gains(over_again, read_row);
        for (std::size_t sz = 0; sz < starts.size() && sz < vs_again.size(); ++sz)
          starts[sz] = starts[sz] && vs_again[sz];
      }
      const decide::ThresholdChoice b =
          decide::choose_threshold(l.objective(v), l.check(v), tol, min_gain, false, starts);
      std::string verdict = "\n    -> alone: " + b.why;
      // Where rep again was timed, the options come from choose_two_thresholds, which gives
      // non-temporal stores (alone or after rep again) no size from rep again's first admissible
      // size on where they lose a row to it. Offered against the loop as well, the single option
      // won on its summed gain: a Debian 12 memcpy whose rep band stopped at 8 MiB took
      // non-temporal stores from 16 MiB (85.8 % against rep again's 63.5 %) though they read back
      // 0.92x as fast as rep again there, and the report found that routine 0.79x the other
      // tuning's rep at 16 MiB (docs/perf/debian12/tune.log and report-1.txt at commit 97e67ea).
      // That single option is kept as a fallback, tried only after the options failed to confirm
      // (then rep again is not taken, and the loop is what they are against).
      if (has_again) {
        const decide::TwoThresholds t =
            decide::choose_two_thresholds(l.objective(0), l.check(0), l.objective(v), l.check(v), tol, min_gain, starts);
        if (b.index != decide::kNoThreshold) verdict += " (kept only as a fallback: rep again was timed)";
        verdict += "\n    -> with rep again: " + t.why;
        add(t.a, t.b, v, t.gain);
        if (b.index != decide::kNoThreshold && (!nt_fallback || b.gain > nt_fallback->gain)) {
          nt_fallback = make_option(decide::kNoThreshold, b.index, v, b.gain);
          nt_fallback->what += ", the fallback";
        }
      } else {
        add(decide::kNoThreshold, b.index, v, b.gain);
      }
      say(name + ": non-temporal stores (" + nt_name(live[v].params) + "), incumbent time / variant time:" +
          ladder_lines(l, v) + verdict);
    }
    std::stable_sort(options.begin(), options.end(), [](const Option& a, const Option& b) { return a.gain > b.gain; });
    if (options.empty()) {
      const std::string line = name + ": neither " + std::string(has_again ? "rep again nor " : "") +
                               std::string(has_whole ? "rep as one instruction nor " : "") +
                               "non-temporal stores (no size from which it wins every use pattern by 3% in total "
                               "without a 3% loss)" +
                               (has_pieces ? "; the rep class in " + size_label(kRepChunk) + " pieces" : std::string());
      say(line);
      log_.push_back(line);
      return base;
    }
    // The best, confirmed solo at its first threshold and the largest size. If it does not
    // confirm and its worst case is at the first threshold, the same with that threshold one
    // ladder size up (non-temporal stores from 16 MiB can lose a copy read back that the loop
    // leaves in a 32 MiB L3); then the best option of the other kind; then, where rep again was
    // timed, the best non-temporal option against the loop (nt_fallback).
    std::vector<Option> tries{options[0]};
    for (const auto& o : options)
      if ((o.c.params.rep_resume.value == kNever) != (options[0].c.params.rep_resume.value == kNever) ||
          (o.c.params.nt_threshold.value == kNever) != (options[0].c.params.nt_threshold.value == kNever) ||
          (o.c.params.rep_chunk_stop.value == kNever) != (options[0].c.params.rep_chunk_stop.value == kNever)) {
        tries.push_back(o);
        break;
      }
    // Last, the non-temporal option against the loop that rep again's timing ruled out.
    if (nt_fallback &&
        std::none_of(tries.begin(), tries.end(), [&](const Option& x) { return key(x.c) == key(nt_fallback->c); }))
      tries.push_back(*nt_fallback);
    for (std::size_t i = 0; i < tries.size() && i < 5; ++i) {
      const Option o = tries[i];  // a copy: tries grows below
      const Routine* r = get(o.c);
      if (!r) continue;
      const std::string line = name + ": " + o.what + " (" + fmt("%.1f", 100 * (std::exp(o.gain) - 1)) +
                               "% summed gain, mean over the use patterns)";
      say(line);
      log_.push_back(line);
      // The ladder's verdict stands when there is no time to confirm it; a fallback's does not.
      if (!time_left()) return i == 0 ? o.c : base;
      const std::uint64_t first =
          std::min({o.c.params.rep_resume.value, o.c.params.nt_threshold.value, o.c.params.rep_chunk_stop.value});
      // At the largest size, and the first threshold; one instruction from a smaller size than
      // the base's is the same code as the base from there on: confirmed below it instead.
      std::uint64_t largest = l.sizes.back();
      if (o.c.params.rep_resume.value == kNever && o.c.params.nt_threshold.value == kNever)
        for (std::uint64_t sz : l.sizes)
          if (timed_length(sz) < same_from) largest = sz;
      std::vector<std::uint64_t> at{largest};
      if (first != kNever && first != largest) at.push_back(first);
      std::uint64_t worst_at = 0;
      if (confirmed_solo(name + ": " + o.what, *rs[0], *r, at, &worst_at)) return o.c;
      if (const auto next = one_size_up(l.sizes, first, worst_at)) {
        Option up = o;
        if (up.c.params.rep_chunk_stop.value == first) {
          up.c.params.rep_chunk_stop = *next;
          if (*next >= same_from) continue;  // that is the base
        } else if (up.c.params.rep_resume.value == first) {
          up.c.params.rep_resume = *next;
          if (*next >= up.c.params.nt_threshold.value) up.c.params.rep_resume = kNever;  // nothing left of the band
        } else {
          up.c.params.nt_threshold = *next;
        }
        up.what = describe(up.c) + ", one size up";
        tries.insert(tries.begin() + static_cast<std::ptrdiff_t>(i) + 1, up);
      }
    }
    log_.push_back(name + (has_pieces ? ": keeping the loop, the rep class in " + size_label(kRepChunk) + " pieces"
                                      : ": keeping the loop"));
    return base;
  }

  const Workload& w_;
  const TuneOptions& opt_;
  const double t0_;
  std::mt19937_64 rng_;
  TimingOptions timing_;
  std::unique_ptr<BenchBuffers> buffers_;    // point timing; made on first use
  std::vector<Call> calls_;                  // distribution workloads: the replayed sequence
  std::unique_ptr<ReplayBuffers> replay_buf_;
  std::vector<Call> mix_calls_;              // point workloads: the production mix (blended stages)
  std::unique_ptr<ReplayBuffers> mix_buf_;
  /// Buffers for point timing, large enough for the workload and the 64 MiB threshold ladder
  /// (timed one page past its sizes: timed_length()).
  BenchBuffers& bench_buffers() {
    if (!buffers_)
      buffers_ = std::make_unique<BenchBuffers>(timed_length(std::max<std::uint64_t>(max_size(w_.points), 64ull << 20)) + 4096);
    return *buffers_;
  }
  unsigned vmax_ = 16;
  Operation op_ = Operation::kMemcpy;
  std::vector<Point> below_1m_;
  std::map<std::string, std::unique_ptr<Routine>> pool_;
  std::map<std::string, std::uint64_t> partly_verified_;  // pool_ keys verified only up to this length
  std::vector<std::unique_ptr<Routine>> retired_;         // failed their full verification late
  std::uint64_t verify_below_ = 0;        // 0: get() verifies every length; else up to this
  std::map<std::string, std::string> rejected_;
  std::string last_reject_;
  TuneStats stats_;
  std::vector<std::string> log_;
};

}  // namespace

RepGap rep_gap(const CopyParams& p) {
  RepGap g;
  const std::uint64_t stop = p.rep_stop.value, resume = p.rep_resume.value;
  if (p.rep_threshold.value == kNever || stop == kNever || resume == kNever) return g;
  if (stop == 0 || resume <= stop || ladder_strategy(p, stop - 1) != Strategy::kRepString ||
      ladder_strategy(p, stop) != Strategy::kAlignedLoop || ladder_strategy(p, resume) != Strategy::kRepString)
    return g;  // no loop between two rep bands (a stop below the band, a resume the nt class takes)
  if (p.rep_aligned_from.value != kNever && !p.rep_aligned_only.value) {
    g.why_not = "rep only for an aligned dst from " + std::to_string(p.rep_aligned_from.value) +
                " bytes holds in the first rep band alone; rep throughout would carry it over the second";
    return g;
  }
  g.from = stop;
  g.to = resume;
  return g;
}

CopyPlan hot_first(CopyPlan plan, std::uint64_t n) {
  std::size_t hot = 0;
  for (std::size_t i = 0; i < plan.classes.size(); ++i)
    if (plan.classes[i].lo <= n && n <= plan.classes[i].hi) hot = i;
  for (std::size_t i = 0; i < plan.classes.size(); ++i)
    plan.classes[i].weight = std::pow(0.4, i > hot ? double(i - hot) : double(hot - i));
  return plan;
}

CopyParams gap_params(const CopyParams& p, const std::vector<std::uint64_t>& sizes, std::size_t loop_from,
                      std::size_t loop_end) {
  CopyParams out = p;
  if (loop_from == decide::kNoThreshold || loop_from >= sizes.size() || loop_end <= loop_from) {
    out.rep_stop = kNever;
    out.rep_resume = kNever;
    return out;
  }
  out.rep_stop = sizes[loop_from];
  out.rep_resume = loop_end < sizes.size() ? sizes[loop_end] : p.rep_resume.value;
  return out;
}

CopyParams keep_rep_split(CopyParams composite, const CopyParams& winner) {
  CopyParams& c = composite;
  const std::uint64_t x = winner.rep_aligned_from.value;
  if (x == kNever || c.rep_aligned_from.value != kNever || c.rep_aligned_only.value || winner.rep_aligned_only.value)
    return composite;
  if (c.rep_unit.value != winner.rep_unit.value || c.rep_align_dst.value != winner.rep_align_dst.value ||
      c.rep_alias_window.value != winner.rep_alias_window.value || c.rep_chunk.value != winner.rep_chunk.value ||
      c.rep_chunk_stop.value != winner.rep_chunk_stop.value)
    return composite;
  // Not when the composite's first band reaches into the winner's second one (rep_resume, which
  // takes any dst): the split would send a misaligned dst to the loop there. A band starting at
  // or above the split keeps it too: rep then only for an aligned dst, as the winner runs it.
  if (x >= c.rep_stop.value) return composite;
  if (winner.rep_resume.value != kNever && c.rep_stop.value > winner.rep_resume.value) return composite;
  c.rep_aligned_from = x;
  c.rep_aligned_mutual = winner.rep_aligned_mutual;  // the split's test, as the winner runs it
  return composite;
}

WisdomEntry wisdom_entry(const TuneResult& r, const std::string& workload) {
  WisdomEntry e;
  e.operation = r.routine.operation();
  e.workload = workload;
  e.plan = r.routine.plan();
  e.code_hash = fnv1a64(r.routine.bytes());
  e.points = r.points;
  return e;
}

Status check_budget(double budget_seconds) {
  if (budget_seconds >= kMinBudgetSeconds && budget_seconds <= kMaxBudgetSeconds) return {};  // false for NaN
  return make_error(ErrorCode::kInvalidArgument, "budget_seconds must be between " + fmt("%g", kMinBudgetSeconds) +
                                                     " and " + fmt("%g", kMaxBudgetSeconds) + ", got " +
                                                     fmt("%g", budget_seconds));
}

Result<TuneResult> tune(const Workload& w, const TuneOptions& opt) {
  COPYSYNTH_TRY(check_budget(opt.budget_seconds));
  // An operation out of the enum's range read as the default routine failing its verification
  // (kVerifyFailed, which the API calls a copysynth bug): the caller's error, said as such.
  if (static_cast<unsigned>(opt.operation) > static_cast<unsigned>(Operation::kClearPage))
    return make_error(ErrorCode::kInvalidArgument,
                      "TuneOptions::operation " + std::to_string(static_cast<unsigned>(opt.operation)) +
                          " is not an operation: memcpy, memmove, fill or clear_page (Operation::kMemcpy ... kClearPage)");
  COPYSYNTH_TRY(check_verify_options(opt.verify));
  if (w.points.empty() && !w.is_distribution())
    return make_error(ErrorCode::kInvalidArgument, "workload \"" + w.name + "\" has no points");
  // Executable memory denied is no candidate's fault: say so (kJitUnavailable) before searching.
  COPYSYNTH_TRY(jit_available());
  try {
    Search s(w, opt);
    return s.run();
  } catch (const VerifyOutOfMemory& e) {
    return make_error(ErrorCode::kSystem, "the search stopped: " + e.subject + " could not be verified (" + e.what + "; " +
                                              kVerifyNoMemory + "); raise the limit, or give the search more memory");
  } catch (const std::bad_alloc&) {
    return make_error(ErrorCode::kSystem, std::string("the search ran out of memory (") + kVerifyNoMemory +
                                              "); raise the limit, or give the search more memory");
  }
}

}  // namespace copysynth
