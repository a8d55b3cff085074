// copysynth tests — the grid of plans the `.S` writer is checked on (test_asm.cpp: byte identity
// with GNU as; asm_gen.cpp + test_asm_linked.cpp: the assembled object linked into a program and
// run through the conformance suite). Every operation x every width x every unroll factor, twice,
// with the other parameters rotated so that each NOP form meets each loop alignment, and the
// thresholds (including 0 and above 2^32), rep element size and dst alignment, prefetch, the
// 4K-aliasing guard, page streams, head/tail width and hand-over, shift_realign, and on AVX-512
// targets the masked class and the high register bank all occur at every width. Some plans get
// flat or chain-shaped class weights, so the dispatch tree (and every branch distance) changes.
// Deterministic: the same list in every program.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "copysynth/ladders.hpp"

namespace copysynth::test {

struct GridPlan {
  CopyPlan plan;
  IsaLevel target;    ///< the ISA level the plan is made for (capped or extended: no host needed)
  std::string label;  ///< "memcpy/v32u4/..." plus the target, for messages
};

inline std::vector<GridPlan> asm_grid() {
  std::vector<GridPlan> out;
  const std::uint64_t thresholds[] = {0, 1, 4095, 65536, std::uint64_t{1} << 33, kNever};
  const NopForm forms[] = {NopForm::kSingleByte, NopForm::kLongNop, NopForm::kPrefixedLongNop, NopForm::kJumpOver};
  const std::uint32_t aligns[] = {64, 16, 32, 1};
  unsigned t = 0;
  for (const Operation op : spec::Operation::choices) {
    const bool copy = op == Operation::kMemcpy || op == Operation::kMemmove;
    for (const std::uint32_t w : spec::VectorWidth::choices) {
      for (const std::uint32_t u : spec::Unroll::choices) {
        for (int variant = 0; variant < 2; ++variant, ++t) {
          CopyParams p;
          p.operation = op;
          p.vector_width = w;
          p.unroll = u;
          p.nop_form = forms[t % 4];
          p.loop_align = aligns[(t / 4) % 4];
          const std::uint64_t rep = thresholds[t % 6], nt = thresholds[(t + 2) % 6];
          p.rep_threshold = rep;
          p.nt_threshold = nt == kNever || nt > rep ? nt : rep * 4 + 4096;
          p.rep_unit = t % 2 ? 8 : 1;
          p.rep_align_dst = t % 3 != 0;
          p.rep_aligned_only = t % 4 == 1;
          // A rep band with the loop again above it (rep_stop) in every fifth plan.
          if (t % 5 == 1 && rep != kNever) p.rep_stop = std::max<std::uint64_t>(rep, 4096) * 4;
          if (copy && t % 4 != 3) {
            p.prefetch_distance = 64u << (t % 5);
            p.prefetch_hint = t % 2 ? PrefetchHint::kNTA : PrefetchHint::kT0;
          }
          if (copy && t % 3 == 2) p.alias_window = 64u << (t % 5 ? 2 : 0);
          if (copy && t % 4 == 1) p.rep_alias_window = t % 8 == 1 ? 64 : 1024;
          // rep_alias_loop (32-byte loop for 4K-aliasing copies) two lengths past the rep band's start.
          if (copy && w >= 32 && t % 3 == 0 && rep <= 65536)
            p.rep_alias_loop = (std::max<std::uint64_t>(rep, 4096) * 2 + 4095) / 4096 * 4096;
          if (w >= 16 && t % 4 == 2) p.nt_pages = t % 8 == 2 ? 4 : 2;
          if (w >= 16 && t % 5 == 2) p.head_tail_max = 2 * w;
          if (w >= 32 && t % 3 == 1) p.head_tail_width = w / 2;
          if (op == Operation::kMemcpy && w == 8 && variant == 0) p.shift_realign = true;
          if (copy && w >= 16 && u <= 4 && t % 3 != 1) p.loop_pipeline = true;
          // AVX-512 targets: every 64-byte plan, and the second variant of the narrower vector
          // widths, which then also get the masked class and the high register bank.
          IsaLevel target = w == 64 ? IsaLevel::kAVX512 : w == 32 ? IsaLevel::kAVX2 : IsaLevel::kSSE2;
          if (w >= 16 && variant == 1) target = IsaLevel::kAVX512;
          if (target == IsaLevel::kAVX512 && op != Operation::kClearPage) {
            if (t % 2) p.register_bank = RegisterBank::kHigh;
            if (t % 3 != 0) p.mask_max = 16u << (t % 4);  // 16, 32, 64, 128
            if (p.head_tail_max.value && p.head_tail_max.value < p.mask_max.value) p.head_tail_max = 0;
          }
          auto plan = make_plan(p, IsaFeatures::for_level(target));
          if (!plan) continue;  // test_asm.cpp checks the grid is large enough
          CopyPlan pl = std::move(plan).value();
          if (t % 7 == 3) pl = with_weights(std::move(pl), [](std::uint64_t, std::uint64_t) { return 1.0; });
          if (t % 7 == 5)  // a chain: each class twice as likely as the next
            pl = with_weights(std::move(pl), [](std::uint64_t lo, std::uint64_t) {
              double w = 1;
              for (std::uint64_t v = lo; v > 0; v >>= 1) w /= 2;
              return w;
            });
          out.push_back({std::move(pl), target, {}});
          out.back().label = to_string(p) + " [target " + std::string(isa_level_name(target)) + "]";
        }
      }
    }
  }
  return out;
}

}  // namespace copysynth::test
