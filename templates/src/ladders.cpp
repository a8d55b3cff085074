// copysynth — the "vector" ladder (see ladders.hpp for the ladder on one page).
#include "copysynth/ladders.hpp"

#include <algorithm>
#include <array>
#include <bit>

namespace copysynth {
namespace {

// Mean share of calls per length bucket over MemcpyGoogle{A,B,D,L,M,Q,S,U}.csv
// (data/size-distributions): bucket 0 = {0}, bucket k = [2^(k-1), 2^k), bucket 13 = [4096, inf).
constexpr double kBucketShare[14] = {0.0295, 0.0878, 0.0860, 0.1091, 0.1972, 0.1883, 0.1160,
                                     0.0724, 0.0459, 0.0555, 0.0068, 0.0026, 0.0029, 0.0};

}  // namespace

double default_class_weight(std::uint64_t lo, std::uint64_t hi) {
  double w = 0;
  for (int k = 0; k < 14; ++k) {
    const std::uint64_t blo = k == 0 ? 0 : std::uint64_t{1} << (k - 1);
    const std::uint64_t bhi = k == 0 ? 0 : k == 13 ? kNever : (std::uint64_t{1} << k) - 1;
    const std::uint64_t a = std::max(lo, blo), b = std::min(hi, bhi);
    if (a > b) continue;
    const double width = double(bhi - blo) + 1.0;
    w += kBucketShare[k] * (k == 13 ? 1.0 : (double(b - a) + 1.0) / width);
  }
  return std::max(w, 0.002);
}

std::vector<SizeClass> small_ladder(std::uint32_t bytes) {
  std::vector<SizeClass> c;
  c.push_back({0, 0, Strategy::kNone, 0, 1.0});
  c.push_back({1, 1, Strategy::kBlock, 1, 1.0});
  for (std::uint32_t b = 1; b < bytes; b *= 2) c.push_back({b + 1, 2ull * b, Strategy::kHeadTail, b, 1.0});
  return c;
}

CopyPlan clear_page_plan(const CopyParams& p) {
  CopyPlan plan;
  plan.params = p;
  plan.ladder = "vector";
  plan.vec = p.vector_width;
  const Strategy s = p.rep_threshold.value <= kPageBytes   ? Strategy::kRepString
                     : p.nt_threshold.value <= kPageBytes ? Strategy::kNonTemporalLoop
                                                          : Strategy::kAlignedLoop;
  plan.classes.push_back({kPageBytes, kPageBytes, s, 0, 1.0});
  return plan;
}

CopyPlan vector_ladder(const CopyParams& p) {
  if (p.operation.value == Operation::kClearPage) return clear_page_plan(p);
  CopyPlan plan;
  plan.params = p;
  plan.ladder = "vector";
  plan.vec = p.vector_width;
  const std::uint64_t V = plan.vec;
  auto& c = plan.classes;
  const std::uint64_t M = p.mask_max;  // 0, or lengths 0..M take one masked move
  if (M) {
    c.push_back({0, M, Strategy::kMasked, static_cast<std::uint32_t>(M)});
    plan.page_cross = small_ladder(static_cast<std::uint32_t>(M));  // when the masked block crosses a page
  } else {
    c.push_back({0, 0, Strategy::kNone, 0});
    c.push_back({1, 1, Strategy::kBlock, 1});
  }
  // Head/tail classes (b, 2b] for b = 1, 2, 4, ... up to the widest block the registers allow
  // (those inside the masked class dropped). Upper bounds are inclusive, as glibc's [VEC, 2*VEC]:
  // a power-of-two length takes the smaller block (128 bytes: two 64-byte moves, not four).
  const std::uint64_t max_block =
      p.head_tail_max.value ? p.head_tail_max.value : (V == 8 ? 16 : 4 * V);
  for (std::uint64_t b = 1; b <= max_block; b *= 2)
    if (2 * b > M) c.push_back({std::max(b + 1, M + 1), 2 * b, Strategy::kHeadTail, static_cast<std::uint32_t>(b)});
  // The loop needs n >= 4V (and 32 at width 8): its saved head and tail cover at least that.
  const std::uint64_t loop_lo = std::max({2 * max_block + 1, M + 1, V == 8 ? 32 : 4 * V});  // default 8V + 1
  // Thresholds below the loop's start are raised to it; "never" stays kNever.
  const std::uint64_t nt_lo =
      p.nt_threshold.value == kNever ? kNever : std::max<std::uint64_t>(p.nt_threshold, loop_lo);
  std::uint64_t rep_lo = p.rep_threshold.value == kNever
                             ? kNever
                             : std::max<std::uint64_t>({p.rep_threshold.value, loop_lo,
                                                        p.rep_align_dst ? 64u : 0u});
  if (rep_lo >= nt_lo) rep_lo = kNever;  // the non-temporal class takes over first
  // The rep band ends at rep_stop (glibc's rep_movsb_stop_threshold), where the loop takes over
  // again up to the non-temporal class; a stop at or below the band's start removes the band.
  const std::uint64_t rep_hi = std::min<std::uint64_t>(p.rep_stop.value, nt_lo);
  if (rep_hi <= rep_lo) rep_lo = kNever;
  // [from, to) with to == kNever meaning "up to and including 2^64-1".
  auto add = [&](std::uint64_t from, std::uint64_t to, Strategy s) {
    if (from < to) c.push_back({from, to == kNever ? kNever : to - 1, s, 0});
  };
  // rep_resume opens a second rep band above the loop band that rep_stop began (up to the
  // non-temporal class); at or below rep_stop it changes nothing.
  const std::uint64_t resume_lo =
      rep_lo == kNever || rep_hi >= nt_lo || p.rep_resume.value <= rep_hi || p.rep_resume.value >= nt_lo
          ? nt_lo
          : p.rep_resume.value;
  add(loop_lo, std::min(rep_lo, nt_lo), Strategy::kAlignedLoop);
  if (rep_lo != kNever) {
    add(rep_lo, rep_hi, Strategy::kRepString);
    add(rep_hi, resume_lo, Strategy::kAlignedLoop);
    add(resume_lo, nt_lo, Strategy::kRepString);
  }
  add(nt_lo, kNever, Strategy::kNonTemporalLoop);
  // prefetch_min splits the loop class it falls in: below it the loop without prefetch.
  if (const std::uint64_t pm = p.prefetch_min.value; pm && p.prefetch_distance.value)
    for (std::size_t i = 0; i < c.size(); ++i)
      if (c[i].strategy == Strategy::kAlignedLoop && c[i].lo < pm && pm <= c[i].hi) {
        SizeClass upper = c[i];
        upper.lo = pm;
        c[i].hi = pm - 1;
        c.insert(c.begin() + static_cast<std::ptrdiff_t>(i) + 1, upper);
        break;
      }
  for (auto& k : c) k.weight = default_class_weight(k.lo, k.hi);
  return plan;
}

Result<CopyPlan> make_plan(const CopyParams& p, const IsaFeatures& target, const std::string& ladder) {
  COPYSYNTH_TRY(validate(p, target));
  if (ladder != "vector")
    return make_error(ErrorCode::kInvalidArgument,
                      "unknown ladder \"" + ladder + "\"; available: vector");
  CopyPlan plan = vector_ladder(p);
  COPYSYNTH_TRY(check_plan(plan));
  return plan;
}

Strategy ladder_strategy(const CopyParams& p, std::uint64_t n) {
  for (const SizeClass& k : vector_ladder(p).classes)
    if (k.lo <= n && n <= k.hi) return k.strategy;
  return Strategy::kNone;
}

CodePath code_path(const CopyPlan& plan, std::uint64_t n, std::uint32_t src_offset, std::uint32_t dst_offset) {
  const CopyParams& p = plan.params;
  const Operation op = p.operation.value;
  const bool pf = p.prefetch_distance.value != 0;
  for (const SizeClass& k : plan.classes) {
    if (n < k.lo || n > k.hi) continue;
    if (k.strategy == Strategy::kRepString && op != Operation::kClearPage) {
      const std::uint32_t d = (dst_offset - src_offset) % kPageBytes;  // (dst - src) mod 4096
      const bool aligned_only = n >= rep_aligned_from_in(p, k);
      const bool misaligned = aligned_only && !rep_alignment_passes(p, src_offset, dst_offset);
      if (misaligned) return {Strategy::kAlignedLoop, pf};
      // emit.cpp, rep_string: memmove's overlap test comes first (code_path() models copies that do
      // not overlap), then rep_alias_loop's test, then rep_alias_window's.
      if (const std::uint64_t stop = rep_alias_loop_in(p, k); stop != kNever && n < stop && d != 0 && d < 64)
        return {Strategy::kAlignedLoop, pf, 32};
      const bool aliasing = op != Operation::kFill && p.rep_alias_window.value != 0 && d != 0 &&
                            d < p.rep_alias_window.value;
      if (aliasing) return {Strategy::kAlignedLoop, pf};
    }
    if (k.strategy == Strategy::kAlignedLoop) return {k.strategy, pf && !(k.hi < p.prefetch_min.value)};
    return {k.strategy, false};
  }
  return {};
}

namespace {

bool differ_at(const CopyPlan& pa, const CopyPlan& pb, std::uint64_t n, std::uint32_t src_offset,
               std::uint32_t dst_offset) {
  const CodePath ca = code_path(pa, n, src_offset, dst_offset), cb = code_path(pb, n, src_offset, dst_offset);
  if (ca.strategy != cb.strategy || ca.prefetch != cb.prefetch || ca.width != cb.width) return true;
  const CopyParams& a = pa.params;
  const CopyParams& b = pb.params;
  // Both run rep here: a guard that did not send this copy to the loop (an aligned dst, no
  // 4K aliasing) is a compare, not other code.
  if (ca.strategy == Strategy::kRepString) {
    // rep_chunk: pieces from one piece on (rep_pieces(), emit.cpp), one instruction below, and
    // from rep_chunk_stop on again (rep_piece_at, plan.hpp).
    return a.rep_unit.value != b.rep_unit.value || a.rep_align_dst.value != b.rep_align_dst.value ||
           rep_piece_at(a, n) != rep_piece_at(b, n);
  }
  if (ca.strategy == Strategy::kNonTemporalLoop)
    return a.nt_pages.value != b.nt_pages.value || a.nt_width.value != b.nt_width.value;
  return false;
}

}  // namespace

bool large_lengths_differ(const CopyParams& a, const CopyParams& b, std::uint64_t n, std::uint32_t src_offset,
                          std::uint32_t dst_offset) {
  return differ_at(vector_ladder(a), vector_ladder(b), n, src_offset, dst_offset);
}

CopyParams without_idle_rep_fields(CopyParams p) {
  if (p.operation.value == Operation::kClearPage) return p;
  bool pieces = false, gate = false, stop = false, alias_loop = false;
  for (const SizeClass& c : vector_ladder(p).classes) {
    pieces = pieces || rep_chunk_in(p, c) != kNever;
    stop = stop || rep_chunk_stop_in(p, c) != kNever;
    alias_loop = alias_loop || rep_alias_loop_in(p, c) != kNever;
    // emit.cpp, rep_string: the alignment test is emitted where it splits or covers the class.
    const std::uint64_t from = rep_aligned_from_in(p, c);
    gate = gate || (from != kNever && from <= c.hi);
  }
  if (!pieces) p.rep_chunk = kNever;
  if (!alias_loop) p.rep_alias_loop = kNever;
  if (!stop) p.rep_chunk_stop = kNever;
  if (!gate) p.rep_aligned_mutual = false;
  return p;
}

std::uint64_t first_large_difference(const CopyParams& a, const CopyParams& b) {
  const CopyPlan pa = vector_ladder(a), pb = vector_ladder(b);
  // Between two consecutive class starts of either ladder (or a rep_aligned_from) neither path
  // changes, so those are the only lengths to look at; at each, one placement of every kind:
  // dst aligned or not, mutually aligned with src or not, 4K-aliasing (dst - src = 1 mod 4096) or not (2049), and at a distance
  // of each rep_alias_window (aliasing for a wider window only).
  std::vector<std::uint64_t> starts;
  for (const CopyPlan* p : {&pa, &pb})
    for (const SizeClass& k : p->classes) starts.push_back(k.lo);
  // ... and where a rep class starts to take only an aligned dst.
  for (const CopyParams* p : {&a, &b})
    if (p->rep_aligned_from.value != kNever) starts.push_back(p->rep_aligned_from.value);
  // ... and where rep starts to run in pieces.
  for (const CopyParams* p : {&a, &b})
    if (p->rep_chunk.value != kNever) starts.push_back(p->rep_chunk.value + 1);
  // ... and where rep_alias_loop hands 4K-aliasing copies back to rep.
  for (const CopyParams* p : {&a, &b})
    if (p->rep_alias_loop.value != kNever) starts.push_back(p->rep_alias_loop.value);
  // ... and where they stop again.
  for (const CopyParams* p : {&a, &b})
    if (p->rep_chunk.value != kNever && p->rep_chunk_stop.value != kNever) starts.push_back(p->rep_chunk_stop.value);
  std::sort(starts.begin(), starts.end());
  // {16, 16}: dst misaligned, src and dst mutually aligned (rep_aligned_mutual tells them apart);
  // {0, 64}: mutually aligned and 4K-aliasing for a window above 64 (rep_alias_window then
  // tells two mutual tests apart).
  std::vector<std::array<std::uint32_t, 2>> placements{{0, 0}, {2048, 1}, {4095, 0}, {0, 1}, {16, 16}, {0, 64}};  // {src, dst}
  for (const CopyParams* p : {&a, &b})
    if (const std::uint32_t w = p->rep_alias_window.value; w != 0 && w < kPageBytes) {
      const auto src = static_cast<std::uint32_t>(kPageBytes - w);
      placements.push_back({src, 0});      // dst - src = w mod 4096, dst aligned
      placements.push_back({src + 1, 1});  // the same, dst misaligned
    }
  for (std::uint64_t n : starts)
    for (const auto& o : placements)
      if (differ_at(pa, pb, n, o[0], o[1])) return n;
  return kNever;
}

std::vector<std::string> ladder_names() { return {"vector"}; }

CopyPlan with_weights(CopyPlan plan,
                      const std::function<double(std::uint64_t, std::uint64_t)>& probability) {
  for (auto& k : plan.classes) k.weight = probability(k.lo, k.hi);
  return plan;
}

}  // namespace copysynth
