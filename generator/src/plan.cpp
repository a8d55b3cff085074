// copysynth — CopyPlan checks, printing and the dispatch tree.
#include "copysynth/plan.hpp"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <locale>
#include <sstream>

namespace copysynth {

std::string_view strategy_name(Strategy s) noexcept {
  switch (s) {
    case Strategy::kNone: return "none";
    case Strategy::kBlock: return "block";
    case Strategy::kHeadTail: return "head_tail";
    case Strategy::kAlignedLoop: return "aligned_loop";
    case Strategy::kRepString: return "rep_string";
    case Strategy::kNonTemporalLoop: return "nt_loop";
    case Strategy::kMasked: return "masked";
  }
  return "?";
}

namespace {
std::string range_text(const SizeClass& c) {
  std::string hi = c.hi == kNever ? "" : std::to_string(c.hi);
  return std::to_string(c.lo) + (c.lo == c.hi ? "" : (c.hi == kNever ? " .. " : " .. ") + hi);
}
/// `which`: "size class" (plan.classes) or "page-crossing class" (plan.page_cross).
Error class_error(const char* which, std::size_t i, const SizeClass& c, const std::string& what) {
  return make_error(ErrorCode::kInvalidParams, std::string(which) + " " + std::to_string(i) + " [" +
                                                   range_text(c) + "] (" +
                                                   std::string(strategy_name(c.strategy)) +
                                                   "): " + what);
}

/// The rules of one class of a ladder that starts at 0 and is contiguous: `expect` is where the
/// previous class ended (+1).
Status check_class(const CopyPlan& plan, const char* which, std::size_t i, const SizeClass& c, std::uint64_t expect) {
  const std::uint64_t V = plan.vec;
  if (c.lo != expect) return class_error(which, i, c, "does not start where the previous class ended");
  if (c.hi < c.lo) return class_error(which, i, c, "is empty");
  if (!(c.weight >= 0)) return class_error(which, i, c, "has a negative or NaN weight");
  switch (c.strategy) {
    case Strategy::kNone:
      if (c.lo != 0 || c.hi != 0) return class_error(which, i, c, "kNone only handles n == 0");
      break;
    case Strategy::kMasked:
      if (c.lo != 0 || c.block == 0 || c.hi != c.block || (c.block != 16 && c.block != 32 && c.block != 64 && c.block != 128))
        return class_error(which, i, c, "a masked class covers n = 0..block with block 16, 32, 64 or 128");
      break;
    case Strategy::kBlock:
      if (c.lo != c.hi || c.block != c.lo || c.block == 0 || c.block > 8 || !std::has_single_bit(c.block))
        return class_error(which, i, c, "a block move handles exactly n == block, a power of two <= 8");
      break;
    case Strategy::kHeadTail:
      if (c.block == 0 || !std::has_single_bit(c.block) || c.block > c.lo || c.hi > 2ull * c.block)
        return class_error(which, i, c, "head/tail needs a power-of-two block with block <= n <= 2*block");
      // Registers free for one end's moves: 2 GPRs at width 8, 8 vectors otherwise.
      if (c.block > (V == 8 ? 16 : 4 * V) ||
          (c.block > 16 && plan.params.head_tail_width.value &&
           c.block / std::min<std::uint64_t>(c.block, plan.params.head_tail_width.value) > 8))
        return class_error(which, i, c, "head/tail block exceeds the registers available at this width");
      break;
    case Strategy::kAlignedLoop:
    case Strategy::kNonTemporalLoop:
      if (c.lo < 4 * V) return class_error(which, i, c, "a loop class needs n >= 4 x vector width");
      break;
    case Strategy::kRepString:
      if (c.lo < 4 * V) return class_error(which, i, c, "the rep class must lie above the loop's start");
      // rep_pieces() (emit.cpp) takes the piece and the stop as imm32s, the piece a whole
      // number of qwords.
      for (const auto& [k, field] : {std::pair{plan.params.rep_chunk.value, "rep_chunk"},
                                     std::pair{plan.params.rep_chunk_stop.value, "rep_chunk_stop"}})
        if (k != kNever && (k < 4096 || k % 4096 != 0 || k > (std::uint64_t{1} << 30)))
          return class_error(which, i, c, std::string(field) + " must be a multiple of 4096 up to 2^30, or never");
      if (plan.params.rep_align_dst && c.lo < 64)
        return class_error(which, i, c, "rep movsb with dst alignment needs n >= 64");
      break;
  }
  return {};
}

/// The page-crossing ladder of a masked class: exactly its lengths 0..block, in none, block and
/// head/tail classes (emit() lays them out behind the page guard, where no loop can follow).
Status check_page_cross(const CopyPlan& plan) {
  const bool masked = plan.classes.front().strategy == Strategy::kMasked;
  if (!masked) {
    if (plan.page_cross.empty()) return {};
    return make_error(ErrorCode::kInvalidParams, "the plan has page-crossing classes but no masked class");
  }
  const std::uint64_t top = plan.classes.front().hi;
  if (plan.page_cross.empty())
    return make_error(ErrorCode::kInvalidParams,
                      "a masked class needs the unmasked classes 0.." + std::to_string(top) +
                          " its page-crossing calls take (page_cross; the template builds them)");
  std::uint64_t expect = 0;
  for (std::size_t i = 0; i < plan.page_cross.size(); ++i) {
    const auto& c = plan.page_cross[i];
    if (c.strategy != Strategy::kNone && c.strategy != Strategy::kBlock && c.strategy != Strategy::kHeadTail)
      return class_error("page-crossing class", i, c, "must be n = 0, a block move or head/tail");
    COPYSYNTH_TRY(check_class(plan, "page-crossing class", i, c, expect));
    expect = c.hi + 1;
  }
  if (expect != top + 1)
    return make_error(ErrorCode::kInvalidParams, "the page-crossing classes end at n = " + std::to_string(expect - 1) +
                                                     ", not at the masked block's " + std::to_string(top));
  return {};
}
}  // namespace

Status check_plan(const CopyPlan& plan) {
  if (plan.classes.empty()) return make_error(ErrorCode::kInvalidParams, "plan has no size classes");
  if (plan.vec != plan.params.vector_width)
    return make_error(ErrorCode::kInvalidParams, "plan vector width differs from its params");
  if (plan.params.operation.value == Operation::kClearPage) {
    const auto& c = plan.classes[0];
    if (plan.classes.size() != 1 || c.lo != kPageBytes || c.hi != kPageBytes ||
        !(c.strategy == Strategy::kAlignedLoop || c.strategy == Strategy::kRepString ||
          c.strategy == Strategy::kNonTemporalLoop) || !plan.page_cross.empty())
      return make_error(ErrorCode::kInvalidParams,
                        "a clear_page plan has exactly one size class, n = 4096, with strategy "
                        "aligned_loop, rep_string or nt_loop");
    return {};
  }
  std::uint64_t expect = 0;
  for (std::size_t i = 0; i < plan.classes.size(); ++i) {
    const auto& c = plan.classes[i];
    COPYSYNTH_TRY(check_class(plan, "size class", i, c, expect));
    if (c.hi == kNever) {
      if (i + 1 != plan.classes.size()) return class_error("size class", i, c, "unbounded class is not the last");
      return check_page_cross(plan);
    }
    expect = c.hi + 1;
  }
  return make_error(ErrorCode::kInvalidParams,
                    "the last size class must extend to n = 2^64-1 (hi = never)");
}

std::uint64_t rep_aligned_from_in(const CopyParams& p, const SizeClass& c) {
  if (c.strategy != Strategy::kRepString || p.operation.value == Operation::kClearPage) return kNever;
  if (p.rep_aligned_only) return 0;
  return c.lo < p.rep_stop.value ? p.rep_aligned_from.value : kNever;
}

bool rep_test_mutual(const CopyParams& p) {
  const Operation op = p.operation.value;
  return p.rep_aligned_mutual && (op == Operation::kMemcpy || op == Operation::kMemmove);
}

bool rep_alignment_passes(const CopyParams& p, std::uint64_t src, std::uint64_t dst) {
  return (rep_test_mutual(p) ? dst - src : dst) % 64 == 0;
}

std::uint64_t rep_alias_loop_in(const CopyParams& p, const SizeClass& c) {
  const std::uint64_t stop = p.rep_alias_loop.value;
  const Operation op = p.operation.value;
  const bool copy = op == Operation::kMemcpy || op == Operation::kMemmove;
  return copy && c.strategy == Strategy::kRepString && stop != kNever && c.lo < stop ? stop : kNever;
}

std::uint64_t rep_chunk_in(const CopyParams& p, const SizeClass& c) {
  const std::uint64_t k = p.rep_chunk.value;
  return c.strategy == Strategy::kRepString && k != kNever && c.hi > k ? k : kNever;
}

std::uint64_t rep_chunk_stop_in(const CopyParams& p, const SizeClass& c) {
  const std::uint64_t piece = rep_chunk_in(p, c), stop = p.rep_chunk_stop.value;
  return piece != kNever && stop != kNever && stop > piece && c.hi >= stop ? stop : kNever;
}

std::uint64_t rep_piece_at(const CopyParams& p, std::uint64_t n) {
  const std::uint64_t k = p.rep_chunk.value, stop = p.rep_chunk_stop.value;
  return k != kNever && n > k && (stop == kNever || stop <= k || n < stop) ? k : kNever;
}

std::vector<std::uint64_t> plan_edges(const CopyPlan& plan) {
  std::vector<std::uint64_t> e;
  const CopyParams& p = plan.params;
  for (const auto& c : plan.classes) {
    e.push_back(c.lo);
    if (c.hi != kNever) e.push_back(c.hi + 1);
    // Inside a rep class, a dst not 64-byte aligned takes the loop from rep_aligned_from on.
    if (const std::uint64_t from = rep_aligned_from_in(p, c); from != kNever && from > c.lo && from <= c.hi)
      e.push_back(from);
    // rep_chunk: the first two multiples of a piece above the class's start (one and two whole
    // pieces in a class that starts below one; rep_align_dst's head moves them up by 1..64
    // bytes, within the edge radius), where the piece loop first runs and first runs again.
    if (const std::uint64_t piece = rep_chunk_in(p, c); piece != kNever)
      for (std::uint64_t k = c.lo / piece + 1, j = 0; j < 2; ++k, ++j)
        if (const std::uint64_t n = k * piece; n > c.lo && n <= c.hi) e.push_back(n);
    // rep_alias_loop inside the class: 4K-aliasing copies go back to rep there.
    if (const std::uint64_t stop = rep_alias_loop_in(p, c); stop != kNever && stop <= c.hi) e.push_back(stop);
    // rep_chunk_stop: where one instruction takes over from the pieces again.
    if (const std::uint64_t stop = rep_chunk_stop_in(p, c); stop != kNever && stop > c.lo) e.push_back(stop);
  }
  return e;
}

std::uint32_t head_tail_unit(const CopyParams& p, std::uint32_t vec, std::uint32_t block) {
  if (block <= 8) return block;
  if (vec == 8) return 8;
  const std::uint32_t ht = p.head_tail_width.value;
  return std::min<std::uint32_t>(block, ht != 0 && block <= 2 * ht ? ht : vec);
}

std::string describe_class(const CopyPlan& plan, const SizeClass& c) {
  const auto& p = plan.params;
  const bool fill = p.operation.value == Operation::kFill || p.operation.value == Operation::kClearPage;
  std::ostringstream o;
  o.imbue(std::locale::classic());  // whatever std::locale::global() says
  const auto reg = [&](std::uint32_t bytes) -> std::string {
    if (bytes <= 8) return std::to_string(bytes) + "-byte GPR";
    const std::uint32_t r = head_tail_unit(p, plan.vec, bytes);
    const char* name = r == 16 ? "xmm" : r == 32 ? "ymm" : r == 64 ? "zmm" : "gpr";
    return std::to_string(bytes / std::max<std::uint32_t>(r, 8)) + " x " + name;
  };
  switch (c.strategy) {
    case Strategy::kNone: o << "return dst; no memory touched"; break;
    case Strategy::kMasked:
      if (c.block == 128 && p.mask_shift.value)
        o << "two masked 64-byte " << (fill ? "stores" : "loads and stores")
          << " at +0 and +max(n - 64, 0), both with the mask bzhi(n) (AVX-512BW; 64..128: two full "
             "moves, overlapping below 128)";
      else if (c.block == 128)
        o << "two masked 64-byte " << (fill ? "stores" : "loads and stores")
          << " (AVX-512BW, masks from bzhi: bytes [0, n) of the first, [64, n) of the second)";
      else
        o << "one masked " << c.block << "-byte " << (fill ? "store" : "load and store")
          << " (AVX-512BW, mask (1 << n) - 1)";
      if (p.mask_shift.value)
        o << "; masked-off bytes crossing a 4 KiB page move the block back to end at byte n - 1 "
             "(mask_shift), the head/tail ladder where that would cross a page too";
      else
        o << "; a block crossing a 4 KiB page takes the head/tail ladder";
      o << "; n = 0 returns before any access";
      break;
    case Strategy::kBlock: o << "one " << c.block << "-byte " << (fill ? "store" : "move"); break;
    case Strategy::kHeadTail:
      o << "head/tail: " << reg(c.block) << " at each end, overlapping"
        << (fill ? "" : "; all loads before stores");
      break;
    case Strategy::kAlignedLoop:
    case Strategy::kNonTemporalLoop: {
      // nt_width narrows the non-temporal loop's registers (params.hpp).
      const std::uint32_t w =
          c.strategy == Strategy::kNonTemporalLoop && p.nt_width.value ? p.nt_width.value : plan.vec;
      o << (c.strategy == Strategy::kNonTemporalLoop ? "non-temporal loop: " : "aligned loop: ")
        << p.unroll.value << " x " << w << " B per iteration, dst aligned to " << w;
      if (p.prefetch_distance.value && c.hi < p.prefetch_min.value)
        o << ", no prefetch (below prefetch_min)";
      else if (p.prefetch_distance.value)
        o << ", prefetch" << name_of(p.prefetch_hint.value) << " +" << p.prefetch_distance.value
          << " B";
      if (p.loop_pipeline) o << ", software-pipelined (next block loaded before this one is stored)";
      if (c.strategy == Strategy::kNonTemporalLoop) o << ", movnt stores, sfence";
      // The loop saves 4 vectors of tail (one word at width 8: the GPRs run out; emit.cpp).
      o << "; head " << w << " B and tail " << (w == 8 ? 8 : 4 * w) << " B overlapping";
      if (p.alias_window.value && c.strategy == Strategy::kAlignedLoop && !p.loop_pipeline)
        o << "; backward when 0 < (dst - src) mod 4096 < " << p.alias_window.value;
      if (p.operation.value == Operation::kMemmove)
        o << (c.strategy == Strategy::kNonTemporalLoop ? "; overlapping buffers take the loop"
                                                      : "; backward when dst - src < n");
      break;
    }
    case Strategy::kRepString:
      o << (fill ? (p.rep_unit.value == 8 ? "rep stosq" : "rep stosb")
                 : (p.rep_unit.value == 8 ? "rep movsq" : "rep movsb"))
        << (p.rep_unit.value == 8 ? " + overlapping 8-byte tail" : "")
        << (p.rep_align_dst && p.operation.value != Operation::kClearPage ? " after aligning dst to 64" : "");
      // rep_chunk: one instruction per piece (emit.cpp, rep_pieces).
      // rep_chunk_stop at or below the class's start: no length of it runs the pieces.
      if (const std::uint64_t piece = rep_chunk_in(p, c), stop = rep_chunk_stop_in(p, c);
          piece != kNever && (stop == kNever || stop > c.lo)) {
        o << ", in pieces of at most " << piece << " bytes";
        if (stop != kNever) o << " below " << stop << " bytes (one instruction from there)";
      }
      // rep_aligned_only, or rep_aligned_from at or inside this class (emit.cpp, rep_string).
      if (const std::uint64_t from = rep_aligned_from_in(p, c); from != kNever) {
        const char* when = rep_test_mutual(p) ? "dst and src are not mutually 64-byte aligned"
                                              : "dst is not 64-byte aligned";
        if (from <= c.lo) o << "; the loop when " << when;
        else if (from <= c.hi) o << "; from " << from << " bytes the loop when " << when;
      }
      if (p.operation.value == Operation::kMemmove) o << "; the backward loop when dst - src < n";
      if (p.rep_alias_window.value && !fill) o << "; the loop when 0 < (dst - src) mod 4096 < " << p.rep_alias_window.value;
      if (const std::uint64_t stop = rep_alias_loop_in(p, c); stop != kNever)
        o << "; " << (stop <= c.hi ? "below " + std::to_string(stop) + " bytes a" : std::string("a"))
          << " 4K-aliasing copy (0 < (dst - src) mod 4096 < 64) takes a loop of 32-byte vectors";
      break;
  }
  return o.str();
}

std::string to_string(const CopyPlan& plan) {
  const auto& p = plan.params;
  std::ostringstream o;
  o.imbue(std::locale::classic());  // whatever std::locale::global() says
  o << name_of(p.operation.value) << " plan (ladder \"" << plan.ladder << "\", VEC = " << plan.vec
    << " bytes";
  o << (plan.vec == 8 ? ", GPR" : plan.vec == 16 ? ", SSE2" : plan.vec == 32 ? ", AVX2" : ", AVX-512F")
    << ")\n";
  for (const auto& c : plan.classes) {
    char range[64];
    if (c.hi == kNever)
      std::snprintf(range, sizeof range, "%10llu .. %-10s", (unsigned long long)c.lo, "max");
    else if (c.lo == c.hi)
      std::snprintf(range, sizeof range, "%10llu %13s", (unsigned long long)c.lo, "");
    else
      std::snprintf(range, sizeof range, "%10llu .. %-10llu", (unsigned long long)c.lo,
                    (unsigned long long)c.hi);
    o << "  n = " << range << "  " << describe_class(plan, c) << "\n";
  }
  o << "  loop heads aligned to " << p.loop_align.value << " with " << name_of(p.nop_form.value)
    << " NOP padding; vector registers " << (p.register_bank.value == RegisterBank::kHigh ? "16-31 (EVEX)" : "0-15")
    << "\n";
  return o.str();
}

nlohmann::json to_json(const CopyPlan& plan) {
  nlohmann::json classes = nlohmann::json::array();
  for (const auto& c : plan.classes) {
    classes.push_back({{"lo", c.lo},
                       {"hi", c.hi == kNever ? nlohmann::json("max") : nlohmann::json(c.hi)},
                       {"strategy", strategy_name(c.strategy)},
                       {"block", c.block},
                       {"weight", c.weight}});
  }
  return {{"ladder", plan.ladder}, {"vector_width", plan.vec}, {"classes", classes}};
}

std::vector<DispatchNode> dispatch_tree(const CopyPlan& plan) { return dispatch_tree(plan.classes); }

std::vector<DispatchNode> dispatch_tree(const std::vector<SizeClass>& classes) {
  const int k = static_cast<int>(classes.size());
  std::vector<DispatchNode> nodes;
  if (k == 0) return nodes;
  // cost[i][j]: expected compares for classes i..j; split[i][j]: first class of the right side.
  std::vector<double> W(k + 1, 0.0);
  for (int i = 0; i < k; ++i) W[i + 1] = W[i] + classes[i].weight + 1e-9;
  std::vector<std::vector<double>> cost(k, std::vector<double>(k, 0.0));
  std::vector<std::vector<int>> split(k, std::vector<int>(k, -1));
  for (int len = 2; len <= k; ++len) {
    for (int i = 0; i + len - 1 < k; ++i) {
      const int j = i + len - 1;
      double best = std::numeric_limits<double>::infinity();
      int best_s = -1;
      for (int s = i + 1; s <= j; ++s) {
        const double c = cost[i][s - 1] + cost[s][j];
        if (c < best - 1e-12) {
          best = c;
          best_s = s;
        }
      }
      cost[i][j] = best + (W[j + 1] - W[i]);
      split[i][j] = best_s;
    }
  }
  // Materialise depth-first (root first).
  auto build = [&](auto&& self, int i, int j) -> int {
    const int id = static_cast<int>(nodes.size());
    nodes.emplace_back();
    nodes[id].weight = W[j + 1] - W[i];
    if (i == j) {
      nodes[id].leaf = i;
      return id;
    }
    const int s = split[i][j];
    nodes[id].pivot = classes[s].lo;
    const int l = self(self, i, s - 1);
    const int r = self(self, s, j);
    nodes[id].left = l;
    nodes[id].right = r;
    return id;
  };
  build(build, 0, k - 1);
  return nodes;
}

}  // namespace copysynth
