// copysynth — the staged search (see tuner.hpp).
#include "copysynth/tuner.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <locale>
#include <sstream>

#include "copysynth/c_format.hpp"
#include "copysynth/ladders.hpp"
#include "copysynth/perf_counters.hpp"

namespace copysynth {

namespace {
void* (*volatile g_system_memcpy)(void*, const void*, std::size_t) = &std::memcpy;
void* (*volatile g_system_memmove)(void*, const void*, std::size_t) = &std::memmove;
void* (*volatile g_system_memset)(void*, int, std::size_t) = &std::memset;
void system_clear_page(void* page) { g_system_memset(page, 0, kPageBytes); }

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

CopyFn system_memcpy() { return g_system_memcpy; }

const void* system_routine(Operation op) {
  switch (op) {
    case Operation::kMemcpy: return reinterpret_cast<const void*>(g_system_memcpy);
    case Operation::kMemmove: return reinterpret_cast<const void*>(g_system_memmove);
    case Operation::kFill: return reinterpret_cast<const void*>(g_system_memset);
    case Operation::kClearPage: return reinterpret_cast<const void*>(&system_clear_page);
  }
  return nullptr;
}

std::string baseline_name(Operation op) {
  switch (op) {
    case Operation::kMemcpy: return "system memcpy";
    case Operation::kMemmove: return "system memmove";
    case Operation::kFill: return "system memset";
    case Operation::kClearPage: return "memset(0) page";
  }
  return "system";
}

double geomean_speedup(const std::vector<MeasuredPoint>& points) {
  if (points.empty()) return 1.0;
  double s = 0;
  for (const auto& p : points) s += std::log(p.tuned_gbps / p.baseline_gbps);
  return std::exp(s / double(points.size()));
}

std::string format_table(const std::vector<MeasuredPoint>& points, Operation op) {
  std::ostringstream o;
  o.imbue(std::locale::classic());  // whatever std::locale::global() says
  char line[200];
  if (!points.empty() && !points.front().label.empty()) {
    // Distribution workloads: ns per call of the replayed sequence.
    const std::string base = baseline_name(op) + " ns/call";
    std::snprintf(line, sizeof line, "%-24s  %10s  %*s  %13s  %7s\n", "Workload", "mean bytes",
                  static_cast<int>(base.size()), base.c_str(), "tuned ns/call", "speedup");
    o << line;
    for (const auto& p : points) {
      snprintf_c(line, sizeof line, "%-24s  %10llu  %*.2f  %13.2f  %6.2fx\n", p.label.c_str(),
                    static_cast<unsigned long long>(p.size), static_cast<int>(base.size()), p.baseline_ns,
                    p.tuned_ns, p.baseline_ns / p.tuned_ns);
      o << line;
    }
    return o.str();
  }
  const std::string base = baseline_name(op) + " GB/s";
  const bool counters = std::any_of(points.begin(), points.end(), [](const MeasuredPoint& p) { return p.cycles > 0; });
  std::snprintf(line, sizeof line, "%10s  %13s  %18s  %10s  %7s", "Len", "Src/Dst align", base.c_str(),
                "tuned GB/s", "speedup");
  o << line << (counters ? "  cycles/call    IPC  LLC misses/call\n" : "\n");
  for (const auto& p : points) {
    char al[32];
    std::snprintf(al, sizeof al, "%u/%u", p.src_align, p.dst_align);
    snprintf_c(line, sizeof line, "%10s  %13s  %*.2f  %10.2f  %6.2fx", size_label(p.size).c_str(), al,
                  static_cast<int>(std::max<std::size_t>(18, base.size())), p.baseline_gbps, p.tuned_gbps,
                  p.tuned_gbps / p.baseline_gbps);
    o << line;
    if (counters) {
      snprintf_c(line, sizeof line, "  %11.1f  %5.2f  %15.2f", p.cycles, p.cycles > 0 ? p.instructions / p.cycles : 0.0,
                    p.cache_misses);
      o << line;
    }
    o << "\n";
  }
  snprintf_c(line, sizeof line, "geometric-mean speedup over %zu points: %.2fx\n", points.size(),
                geomean_speedup(points));
  o << line;
  return o.str();
}

std::string format_patch_table(const std::vector<MeasuredPoint>& points, const std::string& caption) {
  std::ostringstream o;
  o.imbue(std::locale::classic());  // whatever std::locale::global() says
  if (!caption.empty()) o << caption << (caption.back() == '\n' ? "" : "\n");
  // Three or four significant digits whatever the length: 1.67, 123.4, 5495631.
  const auto ns = [](double v) {
    char b[32];
    snprintf_c(b, sizeof b, v < 100 ? "%.2f" : v < 10000 ? "%.1f" : "%.0f", v);
    return std::string(b);
  };
  struct Row {
    std::string len, align, old_ns, new_ns, speedup;
  };
  std::vector<Row> rows;
  std::size_t w[5] = {3, 13, 3, 3, 7};  // at least the headers' widths
  for (const auto& p : points) {
    char al[32], sp[32];
    std::snprintf(al, sizeof al, "%u/%u", p.src_align, p.dst_align);
    snprintf_c(sp, sizeof sp, "%.2fx", p.baseline_ns / p.tuned_ns);
    rows.push_back({p.label.empty() ? size_label(p.size) : p.label, p.label.empty() ? al : "-", ns(p.baseline_ns),
                    ns(p.tuned_ns), sp});
    const Row& r = rows.back();
    w[0] = std::max(w[0], r.len.size());
    w[2] = std::max(w[2], r.old_ns.size());
    w[3] = std::max(w[3], r.new_ns.size());
  }
  w[0] = std::max<std::size_t>(w[0], 6);
  w[2] = std::max<std::size_t>(w[2], 8);
  w[3] = std::max<std::size_t>(w[3], 8);
  const auto line = [&](const Row& r) {
    char b[256];
    std::snprintf(b, sizeof b, "%*s  %*s  %*s  %*s  %*s\n", int(w[0]), r.len.c_str(), int(w[1]), r.align.c_str(),
                  int(w[2]), r.old_ns.c_str(), int(w[3]), r.new_ns.c_str(), int(w[4]), r.speedup.c_str());
    return std::string(b);
  };
  o << line({"Len", "Src/Dst align", "old", "new", "speedup"});
  for (const Row& r : rows) o << line(r);
  char b[128];
  snprintf_c(b, sizeof b, "geometric-mean speedup over %zu points: %.2fx\n", points.size(), geomean_speedup(points));
  o << b;
  return o.str();
}

namespace {

/// Largest size of a workload (sizes the bench buffers).
std::uint64_t max_size(const std::vector<Point>& pts) {
  std::uint64_t m = 0;
  for (const auto& p : pts) m = std::max(m, p.size);
  return m;
}

/// How the dispatch tree is weighted (CopyPlan class weights): by the production prior, by the
/// workload's own points, or flat (a balanced tree).
enum class Dispatch { kPrior, kWorkload, kFlat, kChain };
const char* dispatch_name(Dispatch d) {
  switch (d) {
    case Dispatch::kPrior: return "prior";
    case Dispatch::kWorkload: return "workload";
    case Dispatch::kFlat: return "flat";
    case Dispatch::kChain: return "chain";
  }
  return "?";
}

/// Extra weight of a point where a candidate is slower than the system routine (point
/// workloads): the score is exp(mean(log r + kLossWeight * min(log r, 0))) over the points.
constexpr double kLossWeight = 3.0;

/// Calls replayed per round for a distribution workload: long enough that branch predictors
/// cannot learn the sequence by heart (a 4096-call sequence replayed in a loop partly is).
constexpr std::size_t kReplayCalls = 32768;

/// One point of the search: parameters plus the dispatch-tree weighting.
struct Candidate {
  CopyParams params;
  Dispatch dispatch = Dispatch::kPrior;
};

class Search {
 public:
  Search(const Workload& w, const TuneOptions& opt) : w_(w), opt_(opt), t0_(now()), rng_(opt.seed) {
    timing_.rounds = opt.quick ? 7 : 31;
    if (w.is_distribution()) {
      calls_ = make_calls(*w.distribution, kReplayCalls, opt.seed);
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
    if (!get(best)) return make_error(ErrorCode::kVerifyFailed, "the default routine failed verification: " + last_reject_);

    for (const auto& p : w_.points)
      if (p.size < (1u << 20)) below_1m_.push_back(p);
    if (below_1m_.empty()) below_1m_ = w_.points;
    // A size distribution is scored by replaying its call sequence; the rep and non-temporal
    // thresholds only matter for lengths it never has (they are measured on a ladder from 1 KiB).
    const bool thresholds = !w_.is_distribution() || w_.distribution->max_size() >= 16384;
    if (mix_buf_)
      say("the kernel, small-length and dispatch stages also replay the production mix (the eight "
          "MemcpyGoogle distributions, " + std::to_string(mix_calls_.size()) + " calls): half of their score");
    if (w_.is_distribution())
      say("workload " + w_.name + ": " + std::to_string(calls_.size()) + " calls replayed per round, mean " +
          fmt("%.1f", w_.distribution->mean_size()) + " bytes, largest " +
          std::to_string(w_.distribution->max_size()) + (w_.cold ? ", cold cache" : ", hot cache"));

    // Pass 1 sets every coordinate once; pass 2 revisits the kernel, dispatch and prefetch with
    // the thresholds in place (they interact), when the budget allows.
    const bool copy = op_ == Operation::kMemcpy || op_ == Operation::kMemmove;
    if (op_ == Operation::kClearPage) {
      // One length, so one flat stage over every way to clear a page (the clear_page threads:
      // rep stosq, rep stosb, unrolled vector stores, non-temporal stores), then the padding.
      best = clear_page_stage(best);
      if (time_left() && !opt_.quick) best = padding_stage(best);
    } else {
      for (int pass = 1; pass <= (opt_.quick ? 1 : 2); ++pass) {
        if (pass == 2 && !time_left()) break;
        if (pass == 2) say("second pass over kernel, dispatch" + std::string(copy ? " and prefetch" : ""));
        best = kernel_stage(best);
        if (time_left() && best.params.vector_width.value >= 16) best = small_stage(best);
        if (time_left()) best = dispatch_stage(best);
        if (time_left() && copy) best = prefetch_stage(best);
        if (pass == 1) {
          if (time_left() && copy) best = alias_stage(best);
          if (time_left() && !opt_.quick) best = padding_stage(best);
          if (time_left() && thresholds) best = threshold_stage("rep", best);
          if (time_left() && thresholds) best = threshold_stage("nt", best);
        }
      }
    }
    if (!time_left()) say("budget of " + fmt("%.0f", opt_.budget_seconds) + " s reached; keeping the best so far");

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
      const VerifyReport full = verify_routine(result.routine, vo);
      stats_.verify_cases += full.cases;
      if (!full.ok())
        return make_error(ErrorCode::kVerifyFailed, "the winner " + result.routine.name() +
                                                         " failed the full verification: " + full.summary());
      say("winner verified in full: " + full.summary());
    }
    result.points = measure_table(result.routine, w_, opt_.quick ? 5 : 7, opt_.progress);
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
        }
        c.params.shift_realign = false;
        if (v < 16 || u > 4) c.params.loop_pipeline = false;  // it needs two groups of u vectors
        cands.push_back(c);
        // The kernel-style GPR loop also comes in the shift-realigning form (memcpy).
        if (v == 8 && op_ == Operation::kMemcpy && !opt_.quick) {
          c.params.shift_realign = true;
          cands.push_back(c);
        }
      }
    }
    Blend b(*this, true);
    return stage("kernel", best, cands, below_1m_, /*halving=*/true);
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
          c.params.register_bank = b;
          c.params.head_tail_width = h;
          cands.push_back(c);
        }
    Blend b(*this, true);
    Candidate out = stage("small", best, cands, below_1m_, /*halving=*/true);
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

  Candidate dispatch_stage(const Candidate& best) {
    std::vector<Candidate> cands;
    for (Dispatch d : {Dispatch::kPrior, Dispatch::kWorkload, Dispatch::kFlat, Dispatch::kChain}) {
      Candidate c = best;
      c.dispatch = d;
      cands.push_back(c);
    }
    Blend b(*this, true);
    return stage("dispatch", best, cands, below_1m_, false);
  }

  Candidate prefetch_stage(const Candidate& best) {
    std::vector<Candidate> cands;
    for (unsigned d : {0u, 128u, 256u, 512u, 1024u, 2048u})
      for (PrefetchHint h : {PrefetchHint::kT0, PrefetchHint::kNTA}) {
        if (d == 0 && h == PrefetchHint::kNTA) continue;
        if (opt_.quick && (d == 128 || d == 2048)) continue;
        Candidate c = best;
        c.params.prefetch_distance = d;
        c.params.prefetch_hint = d ? h : PrefetchHint::kT0;
        cands.push_back(c);
      }
    return stage("prefetch", best, cands, loop_points(best, 1u << 20), false);
  }

  /// The 4K-aliasing guard, on the loop points plus the misaligned-destination matrix
  /// (workload.hpp: 4 KiB..512 KiB at dst offsets 0, 1, 4, 15, 33 from a page-aligned src, so
  /// 0 < (dst - src) mod 4096 < 64: a forward loop's loads wait on its own stores there).
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
      case Dispatch::kChain: {
        // Each class outweighs all larger ones: tested smallest first, as glibc's ladder does.
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
  const Routine* get(const Candidate& c) {
    const std::string k = key(c);
    if (auto it = pool_.find(k); it != pool_.end()) return it->second.get();
    if (rejected_.count(k)) return nullptr;
    auto plan = plan_of(c);
    if (!plan) return invalid(k, plan.error().message);
    auto r = Routine::build(*plan, opt_.cpu);
    if (!r) return invalid(k, r.error().message);
    ++stats_.built;
    VerifyOptions vo = opt_.verify;
    vo.seed = opt_.seed + stats_.built;
    if (vo.large_edge_stride == 1) vo.large_edge_stride = 7;  // the winner is re-checked with 1
    const VerifyReport rep = verify_routine(*r, vo);
    stats_.verify_cases += rep.cases;
    if (!rep.ok()) return reject(k, label(c) + ": " + rep.summary());
    auto owned = std::make_unique<Routine>(std::move(r).value());
    const Routine* out = owned.get();
    pool_.emplace(k, std::move(owned));
    return out;
  }
  /// Parameters the generator refuses (a search step that does not fit): not a verification
  /// failure, skipped quietly.
  const Routine* invalid(const std::string& k, const std::string& why) {
    rejected_.emplace(k, why);
    last_reject_ = why;
    return nullptr;
  }
  const Routine* reject(const std::string& k, const std::string& why) {
    ++stats_.rejected;
    rejected_.emplace(k, why);
    last_reject_ = why;
    say("rejected (never timed): " + why);
    return nullptr;
  }

  // ----- scoring -----------------------------------------------------------------------------

  /// Geometric-mean speedup over the system routine of each routine on `pts`.
  std::vector<double> score(const std::vector<const Routine*>& rs, const std::vector<Point>& pts,
                            unsigned rounds) {
    std::vector<double> logsum(rs.size(), 0.0);
    TimingOptions t = timing_;
    t.rounds = rounds;
    std::vector<const void*> fns{system_routine(op_)};
    for (auto* r : rs) fns.push_back(r->entry());
    if (w_.is_distribution()) {  // one replay of the whole call sequence per round
      const auto m = replay(op_, fns, calls_, *replay_buf_, t);
      std::vector<double> s(rs.size());
      for (std::size_t i = 0; i < rs.size(); ++i) s[i] = m[0].ticks_per_call / m[i + 1].ticks_per_call;
      return s;
    }
    // Blended stages: the geometric mean of the points' score and the production mix's
    // speedup (ns per call), so each counts half.
    std::vector<double> mix(rs.size(), 1.0);
    const bool blend = blend_ && mix_buf_;
    if (blend) {
      const auto m = replay(op_, fns, mix_calls_, *mix_buf_, t);
      for (std::size_t i = 0; i < rs.size(); ++i) mix[i] = m[0].ticks_per_call / m[i + 1].ticks_per_call;
    }
    BenchBuffers& buf = bench_buffers();
    for (const auto& p : pts) {
      const auto m = compare(op_, fns, buf, p.size, p.src_align, p.dst_align, t);
      // Losses weigh kLossWeight + 1 times as much as gains: a routine that is much faster at
      // some points must not buy that with being slower than the system routine at others.
      for (std::size_t i = 0; i < rs.size(); ++i) {
        const double l = std::log(m[0].ticks_per_call / m[i + 1].ticks_per_call);
        logsum[i] += l + kLossWeight * std::min(l, 0.0);
      }
    }
    std::vector<double> s(rs.size());
    for (std::size_t i = 0; i < rs.size(); ++i) {
      s[i] = std::exp(logsum[i] / double(std::max<std::size_t>(1, pts.size())));
      if (blend) s[i] = std::sqrt(s[i] * mix[i]);
    }
    return s;
  }

  /// Whether score() blends in the production mix (set per stage: the kernel, the small
  /// lengths, the hand-over and the dispatch tree, which decide what small calls cost).
  bool blend_ = false;
  struct Blend {
    Search& s;
    bool saved;
    Blend(Search& search, bool on) : s(search), saved(search.blend_) { s.blend_ = on; }
    ~Blend() { s.blend_ = saved; }
  };

  /// Scores `cands` (plus `incumbent`) on `pts`; returns the incumbent unless one wins by >= 1%.
  Candidate stage(const char* name, const Candidate& incumbent, std::vector<Candidate> cands,
                  const std::vector<Point>& pts, bool halving) {
    std::shuffle(cands.begin(), cands.end(), rng_);
    cands.insert(cands.begin(), incumbent);
    std::vector<Candidate> live;
    std::vector<const Routine*> rs;
    for (const auto& c : cands) {
      const Routine* r = get(c);
      if (!r || std::find(rs.begin(), rs.end(), r) != rs.end()) continue;
      live.push_back(c);
      rs.push_back(r);
    }
    if (rs.empty()) return incumbent;
    stats_.timed += static_cast<unsigned>(rs.size());
    say(std::string(name) + ": timing " + std::to_string(rs.size()) + " verified candidates on " +
        (w_.is_distribution() ? "the replay of " + w_.name : std::to_string(pts.size()) + " points"));
    std::vector<double> s = score(rs, pts, halving ? std::max(3u, timing_.rounds / 3) : timing_.rounds);
    if (halving && rs.size() > 4 && time_left()) {
      // Keep the best third (and the incumbent, index 0); re-score them with full rounds.
      std::vector<std::size_t> idx(rs.size());
      for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
      std::sort(idx.begin(), idx.end(), [&](auto a, auto b) { return s[a] > s[b]; });
      std::vector<std::size_t> keep{0};
      for (std::size_t i = 0; i < idx.size() && keep.size() < std::max<std::size_t>(3, rs.size() / 3 + 1); ++i)
        if (idx[i] != 0) keep.push_back(idx[i]);
      std::vector<Candidate> l2;
      std::vector<const Routine*> r2;
      for (auto i : keep) {
        l2.push_back(live[i]);
        r2.push_back(rs[i]);
      }
      live = l2;
      rs = r2;
      s = score(rs, pts, timing_.rounds);
    }
    std::size_t bi = 0;
    for (std::size_t i = 1; i < rs.size(); ++i)
      if (s[i] > s[bi]) bi = i;
    if (bi != 0 && s[bi] < s[0] * 1.01) bi = 0;  // not a clear win: keep the incumbent
    if (bi != 0 && s[bi] < s[0] * 1.05 && time_left()) {
      // A narrow win may be noise: confirm it head to head with twice the rounds.
      const auto c = score({rs[0], rs[bi]}, pts, 2 * timing_.rounds);
      if (c[1] < c[0] * 1.01) {
        say(std::string(name) + ": " + label(live[bi]) + " did not confirm its " + fmt("%.1f", 100 * (s[bi] / s[0] - 1)) +
            "% win head to head (" + fmt("%.3f", c[1]) + "x vs " + fmt("%.3f", c[0]) + "x); keeping the incumbent");
        bi = 0;
      } else {
        s[0] = c[0];
        s[bi] = c[1];
      }
    }
    const std::string line = std::string(name) + ": " + label(live[bi]) + " at " + fmt("%.3f", s[bi]) + "x the " +
                             baseline_name(op_) + " (incumbent " + fmt("%.3f", s[0]) + "x)";
    say(line);
    log_.push_back(line);
    return live[bi];
  }

  /// Measures `variant` (rep movs/stos, or non-temporal stores, for every size from the loop's
  /// start) against `base` on a size ladder, and returns `base` with the threshold T that
  /// maximises the summed log-speedup over the ladder sizes >= T (at least 3% in total).
  Candidate threshold_stage(const char* name, const Candidate& base) {
    const bool rep = std::string(name) == "rep";
    const std::uint64_t loop_lo = loop_start(base.params);
    std::vector<std::uint64_t> sizes;
    // rep starts at the loop's own start (so "rep first", as FSRM CPUs favour, can win), then
    // powers of two; the non-temporal ladder starts at 256 KiB.
    const std::uint64_t hi = rep ? (8ull << 20) : (64ull << 20);
    if (rep) sizes.push_back(loop_lo);
    for (std::uint64_t s = rep ? 1024 : 256 * 1024; s <= hi; s *= 2)
      if (s > loop_lo) sizes.push_back(s);
    const std::vector<std::uint32_t> dst_aligns =
        rep ? std::vector<std::uint32_t>{0, 1, 4, 15, 33} : std::vector<std::uint32_t>{0, 4};

    std::vector<Candidate> variants;
    if (rep) {
      for (unsigned unit : {1u, 8u})
        for (int mode = 0; mode < 3; ++mode) {  // dst as given, aligned first, aligned only
          if (opt_.quick && (unit == 8 || mode == 2)) continue;
          Candidate c = base;
          c.params.rep_threshold = 0;
          c.params.rep_unit = unit;
          c.params.rep_align_dst = mode == 1;
          c.params.rep_aligned_only = mode == 2;
          c.params.rep_alias_window = 0;
          variants.push_back(c);
          // The same, handing copies that would 4K-alias to the loop (the dst offsets below
          // alias: src is page-aligned).
          if (op_ != Operation::kFill && !opt_.quick) {
            c.params.rep_alias_window = 64;
            variants.push_back(c);
          }
        }
    } else {
      for (unsigned pages : {1u, 2u, 4u}) {
        if (pages > 1 && (base.params.vector_width.value < 16 || opt_.quick)) continue;
        Candidate c = base;
        c.params.nt_threshold = 0;
        c.params.nt_pages = pages;
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
    stats_.timed += static_cast<unsigned>(rs.size() - 1);
    say(std::string(name) + ": comparing the loop with " + (rep ? "rep string instructions" : "non-temporal stores") +
        " at " + std::to_string(sizes.size()) + " sizes x " + std::to_string(dst_aligns.size()) +
        " dst offsets");
    // ratio[v][s] = mean over offsets of log(t_base / t_variant).
    std::vector<std::vector<double>> ratio(live.size(), std::vector<double>(sizes.size(), 0.0));
    TimingOptions t = timing_;
    t.rounds = opt_.quick ? 3 : 7;
    t.warmup_rounds = 1;
    std::vector<const void*> fns;
    for (auto* r : rs) fns.push_back(r->entry());
    BenchBuffers& buf = bench_buffers();
    for (std::size_t si = 0; si < sizes.size(); ++si) {
      if (!time_left() && si > 0) {
        say(std::string(name) + ": budget spent; sizes from " + std::to_string(sizes[si]) + " not measured");
        sizes.resize(si);
        for (auto& r : ratio) r.resize(si);
        break;
      }
      for (std::uint32_t d : dst_aligns) {
        const auto m = compare(op_, fns, buf, sizes[si], rep ? 0 : d, d, t);
        for (std::size_t v = 0; v < live.size(); ++v)
          ratio[v][si] += std::log(m[0].ticks_per_call / m[v + 1].ticks_per_call) / double(dst_aligns.size());
      }
    }
    Candidate out = base;
    std::uint64_t best_thr = kNever;
    double best_gain = std::log(1.03);
    for (std::size_t v = 0; v < live.size(); ++v) {
      std::ostringstream o;
      o.imbue(std::locale::classic());  // whatever std::locale::global() says
      o << name;
      if (rep)
        o << (live[v].params.rep_unit.value == 8 ? " (8-byte elements" : " (byte elements")
          << (live[v].params.rep_aligned_only ? ", only when dst is 64-aligned"
              : live[v].params.rep_align_dst  ? ", dst aligned to 64 first"
                                              : ", dst as given")
          << (live[v].params.rep_alias_window.value ? ", 4K-aliasing copies to the loop)" : ")");
      else
        o << " (" << live[v].params.nt_pages.value << (live[v].params.nt_pages.value == 1 ? " stream)" : " page streams)");
      o << ", loop time / variant time:";
      for (std::size_t si = 0; si < sizes.size(); ++si)
        o << ' ' << size_label(sizes[si]) << '=' << fmt("%.2f", std::exp(ratio[v][si]));
      say(o.str());
      // Handing aliasing copies to the loop is one more branch on every rep call: it must win
      // by 2% more in total than the plain variant, or the simpler routine is kept.
      const double extra = rep && live[v].params.rep_alias_window.value ? std::log(1.02) : 0;
      double suffix = 0;
      for (std::size_t si = sizes.size(); si-- > 0;) {
        suffix += ratio[v][si];
        if (suffix - extra > best_gain) {
          best_gain = suffix - extra;
          best_thr = sizes[si];
          out = base;
          if (rep) {
            out.params.rep_threshold = sizes[si];
            out.params.rep_unit = live[v].params.rep_unit;
            out.params.rep_align_dst = live[v].params.rep_align_dst;
            out.params.rep_aligned_only = live[v].params.rep_aligned_only;
            out.params.rep_alias_window = live[v].params.rep_alias_window;
          } else {
            out.params.nt_threshold = sizes[si];
            out.params.nt_pages = live[v].params.nt_pages;
          }
        }
      }
    }
    const std::string line = std::string(name) + " threshold: " +
                             (best_thr == kNever ? std::string("never (no size range where it wins by 3% in total)")
                                                 : std::to_string(best_thr) + " bytes");
    say(line);
    log_.push_back(line);
    const Routine* chosen = get(out);
    if (!chosen) return base;
    if (best_thr != kNever && time_left()) {
      // Confirm head to head, the complete routines, at the threshold and the largest ladder
      // size (large copies are the noisiest here: DRAM bandwidth is shared), twice the rounds.
      TimingOptions tc = t;
      tc.rounds = 2 * t.rounds + 1;
      double l = 0;
      int k = 0;
      for (std::uint64_t sz : {best_thr, sizes.back()})
        for (std::uint32_t d : {0u, 4u}) {
          const auto m = compare(op_, {rs[0]->entry(), chosen->entry()}, buf, sz, rep ? 0 : d, d, tc);
          l += std::log(m[0].ticks_per_call / m[1].ticks_per_call);
          ++k;
        }
      const double gain = std::exp(l / k);
      if (gain < 1.02) {
        const std::string why = std::string(name) + " threshold " + std::to_string(best_thr) +
                                " did not confirm head to head (" + fmt("%.3f", gain) + "x); keeping " +
                                (rep ? bytes_or_never(base.params.rep_threshold) : bytes_or_never(base.params.nt_threshold));
        say(why);
        log_.push_back(why);
        return base;
      }
    }
    return out;
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
  /// Buffers for point timing, large enough for the workload and the 64 MiB threshold ladder.
  BenchBuffers& bench_buffers() {
    if (!buffers_)
      buffers_ = std::make_unique<BenchBuffers>(std::max<std::uint64_t>(max_size(w_.points), 64ull << 20) + 4096);
    return *buffers_;
  }
  unsigned vmax_ = 16;
  Operation op_ = Operation::kMemcpy;
  std::vector<Point> below_1m_;
  std::map<std::string, std::unique_ptr<Routine>> pool_;
  std::map<std::string, std::string> rejected_;
  std::string last_reject_;
  TuneStats stats_;
  std::vector<std::string> log_;
};

}  // namespace

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
  if (w.points.empty() && !w.is_distribution())
    return make_error(ErrorCode::kInvalidArgument, "workload \"" + w.name + "\" has no points");
  // Executable memory denied is no candidate's fault: say so (kJitUnavailable) before searching.
  COPYSYNTH_TRY(jit_available());
  Search s(w, opt);
  return s.run();
}

std::vector<MeasuredPoint> measure_table(const Routine& r, const Workload& w, unsigned rounds,
                                         const std::function<void(const std::string&)>& progress) {
  ThreadPin pin;
  TimingOptions t;
  t.rounds = rounds;
  if (w.is_distribution()) {
    // A fresh sequence (another seed than the search's), three passes, medians.
    const auto calls = make_calls(*w.distribution, kReplayCalls, 0x5EED);
    ReplayBuffers rb(w.distribution->max_size(), w.cold);
    std::vector<double> base_ns, tuned_ns, base_gb, tuned_gb;
    for (int pass = 0; pass < 3; ++pass) {
      const auto m = replay(r.operation(), {system_routine(r.operation()), r.entry()}, calls, rb, t);
      base_ns.push_back(m[0].ns_per_call);
      tuned_ns.push_back(m[1].ns_per_call);
      base_gb.push_back(m[0].gbps);
      tuned_gb.push_back(m[1].gbps);
    }
    if (progress) progress("measured " + w.name + ": 3 passes of " + std::to_string(calls.size()) + " calls");
    MeasuredPoint mp;
    mp.label = w.name;
    mp.size = static_cast<std::uint64_t>(w.distribution->mean_size() + 0.5);
    mp.baseline_gbps = median(base_gb);
    mp.tuned_gbps = median(tuned_gb);
    mp.baseline_ns = median(base_ns);
    mp.tuned_ns = median(tuned_ns);
    return {mp};
  }
  const std::uint64_t buf_bytes = std::max<std::uint64_t>(max_size(w.points), 4096) + 4096;
  std::unique_ptr<BenchBuffers> bufp;
  // Three passes over the whole workload, a median per point across passes: a burst of
  // interference from another process hits one pass of a point, not all three; and each pass
  // maps fresh buffers, so one physical placement (which can move a point by 10-30% here, for
  // glibc as for copysynth) does not decide a figure.
  constexpr int kPasses = 3;
  std::vector<std::vector<double>> base(w.points.size()), tuned(w.points.size());
  std::vector<std::vector<double>> base_ns(w.points.size()), tuned_ns(w.points.size());
  for (int pass = 0; pass < kPasses; ++pass) {
    bufp.reset();
    bufp = std::make_unique<BenchBuffers>(buf_bytes);
    BenchBuffers& buf = *bufp;
    for (std::size_t i = 0; i < w.points.size(); ++i) {
      const Point& p = w.points[i];
      const auto m = compare(r.operation(), {system_routine(r.operation()), r.entry()}, buf, p.size, p.src_align,
                             p.dst_align, t);
      base[i].push_back(m[0].gbps);
      tuned[i].push_back(m[1].gbps);
      base_ns[i].push_back(m[0].ns_per_call);
      tuned_ns[i].push_back(m[1].ns_per_call);
    }
    if (progress) progress("measured pass " + std::to_string(pass + 1) + "/" + std::to_string(kPasses) +
                           " over " + std::to_string(w.points.size()) + " points");
  }
  PerfCounters pmu;
  std::vector<MeasuredPoint> out;
  for (std::size_t i = 0; i < w.points.size(); ++i) {
    const Point& p = w.points[i];
    MeasuredPoint mp;
    if (pmu.available()) {  // one extra batch of the tuned routine, counted
      const unsigned calls = static_cast<unsigned>(std::clamp(2e5 / (double(p.size) + 64), 1.0, 1e5));
      std::uint8_t* src = bufp->src() + p.src_align;
      std::uint8_t* dst = bufp->dst() + p.dst_align;
      pmu.start();
      for (unsigned c = 0; c < calls; ++c) {
        switch (r.operation()) {
          case Operation::kFill: r.fill_fn()(dst, 0x5A, p.size); break;
          case Operation::kClearPage: r.clear_page_fn()(bufp->dst()); break;
          default: r.fn()(dst, src, p.size); break;
        }
      }
      const CounterValues cv = pmu.stop(calls);
      mp.cycles = cv.cycles;
      mp.instructions = cv.instructions;
      mp.cache_misses = cv.cache_misses;
    }
    mp.size = p.size;
    mp.src_align = p.src_align;
    mp.dst_align = p.dst_align;
    mp.baseline_gbps = median(base[i]);
    mp.tuned_gbps = median(tuned[i]);
    mp.baseline_ns = median(base_ns[i]);
    mp.tuned_ns = median(tuned_ns[i]);
    out.push_back(mp);
  }
  return out;
}

}  // namespace copysynth
