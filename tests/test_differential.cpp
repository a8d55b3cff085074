// Randomized differential test: random CopyParams x random (n, offsets, overlap) against a
// byte-by-byte reference, for a bounded time. Seeded and reproducible: the seed is printed, and
// COPYSYNTH_DIFF_SEED=<seed> replays a run; COPYSYNTH_DIFF_SECONDS sets the time (default 15).
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "copysynth/ladders.hpp"
#include "copysynth/routine.hpp"

using namespace copysynth;

namespace {

std::uint64_t env_u64(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

/// The reference: one byte at a time, in the direction memmove semantics need.
void reference(Operation op, unsigned char* buf, std::size_t dst, std::size_t src, int c, std::size_t n) {
  if (op == Operation::kFill) {
    for (std::size_t i = 0; i < n; ++i) buf[dst + i] = static_cast<unsigned char>(c);
  } else if (dst <= src) {
    for (std::size_t i = 0; i < n; ++i) buf[dst + i] = buf[src + i];
  } else {
    for (std::size_t i = n; i-- > 0;) buf[dst + i] = buf[src + i];
  }
}

CopyParams random_params(std::mt19937_64& rng, Operation op) {
  auto pick = [&](auto list) { return list[rng() % list.size()]; };
  CopyParams p;
  p.operation = op;
  std::vector<std::uint32_t> widths{8, 16};
  if (CpuInfo::host().features().max_vector_bytes() >= 32) widths.push_back(32);
  if (CpuInfo::host().features().max_vector_bytes() >= 64) widths.push_back(64);
  p.vector_width = pick(widths);
  p.unroll = pick(std::vector<std::uint32_t>{1, 2, 4, 8, 16});
  if (op != Operation::kFill && rng() % 2) {
    p.prefetch_distance = 64 * static_cast<std::uint32_t>(rng() % 129);
    p.prefetch_hint = rng() % 2 ? PrefetchHint::kNTA : PrefetchHint::kT0;
  }
  auto threshold = [&]() -> std::uint64_t {
    switch (rng() % 4) {
      case 0: return kNever;
      case 1: return pick(std::vector<std::uint64_t>{0, 1, 63, 64, 255, 4095, 4096});
      default: return rng() % (1 << 18);
    }
  };
  p.rep_threshold = threshold();
  p.nt_threshold = threshold();
  p.rep_unit = rng() % 2 ? 8 : 1;
  p.rep_align_dst = rng() % 2;
  p.loop_align = pick(std::vector<std::uint32_t>{1, 16, 32, 64});
  const unsigned w = p.vector_width;
  p.rep_aligned_only = rng() % 3 == 0;
  if (rng() % 3 == 0) p.rep_aligned_from = threshold();
  if (op == Operation::kMemcpy && w == 8) p.shift_realign = rng() % 2;
  if (op != Operation::kFill && rng() % 2) p.alias_window = pick(std::vector<std::uint32_t>{64, 256, 1024});
  if (op != Operation::kFill && rng() % 2) p.rep_alias_window = pick(std::vector<std::uint32_t>{64, 256, 1024});
  if (w >= 16 && rng() % 2) p.nt_pages = pick(std::vector<std::uint32_t>{2, 4});
  if (w >= 32 && rng() % 3 == 0) p.head_tail_width = w / 2;
  if (w >= 16 && rng() % 3 == 0) p.head_tail_max = (rng() % 2 ? 2 : 4) * w;
  if (op != Operation::kFill && w >= 16 && p.unroll.value <= 4) p.loop_pipeline = rng() % 2;
  const IsaFeatures& f = CpuInfo::host().features();
  if (w >= 16 && f.has(Feature::kAVX512F) && f.has(Feature::kAVX512VL)) {
    if (rng() % 2) p.register_bank = RegisterBank::kHigh;
    if (f.has(Feature::kAVX512BW) && f.has(Feature::kBMI2) && rng() % 2) p.mask_max = pick(std::vector<std::uint32_t>{16, 32, 64, 128});
    if (p.head_tail_max.value && p.head_tail_max.value < p.mask_max.value) p.head_tail_max = 0;
  }
  p.nop_form = pick(std::vector<NopForm>{NopForm::kSingleByte, NopForm::kLongNop, NopForm::kPrefixedLongNop,
                                         NopForm::kJumpOver});
  // Drawn last, so the draws above stay those of earlier seeds.
  if (p.mask_max.value && rng() % 2) p.mask_shift = true;
  if (p.prefetch_distance.value && rng() % 2) p.prefetch_min = pick(std::vector<std::uint32_t>{8192, 32768, 131072});
  if (op != Operation::kFill && rng() % 2) p.rep_aligned_mutual = true;
  return p;
}

}  // namespace

TEST_CASE("random params x random calls agree with a byte-by-byte reference") {
  const std::uint64_t seed = env_u64("COPYSYNTH_DIFF_SEED", 20261129);
  const double seconds = static_cast<double>(env_u64("COPYSYNTH_DIFF_SECONDS", 15));
  MESSAGE("seed " << seed << " (replay with COPYSYNTH_DIFF_SEED=" << seed << "), " << seconds << " s");
  std::mt19937_64 rng(seed);
  constexpr std::size_t kMax = 300000, kPad = 512;
  std::vector<unsigned char> buf(2 * kMax + 4 * kPad), ref;
  const auto start = std::chrono::steady_clock::now();
  std::uint64_t routines = 0, calls = 0;
  const Operation ops[] = {Operation::kMemcpy, Operation::kMemmove, Operation::kFill};
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds) {
    const Operation op = ops[rng() % 3];
    const CopyParams p = random_params(rng, op);
    auto plan = make_plan(p, CpuInfo::host().features());
    REQUIRE_MESSAGE(plan.ok(), to_string(p));
    auto r = Routine::build(*plan);
    REQUIRE_MESSAGE(r.ok(), to_string(p));
    ++routines;
    for (int k = 0; k < 200; ++k) {
      // n log-uniform up to kMax; offsets 0..63; memmove src and dst often close together.
      const std::size_t n = static_cast<std::size_t>(std::exp(std::uniform_real_distribution<double>(0, std::log(double(kMax)))(rng))) - 1;
      std::size_t src = kPad + rng() % 64;
      std::size_t dst;
      if (op == Operation::kMemmove && rng() % 2) {
        const long d = static_cast<long>(rng() % 512) - 256;
        dst = static_cast<std::size_t>(static_cast<long>(src + kPad) + d);
        src += kPad;
      } else {
        dst = kMax + 2 * kPad + rng() % 64;
      }
      const int c = static_cast<int>(rng());
      // Fresh random bytes over everything the call may touch (and 64 bytes around it).
      const std::size_t lo = std::min(src, dst) - 64, hi = std::max(src, dst) + n + 64;
      for (std::size_t i = lo; i < hi; i += 8) {
        const std::uint64_t x = rng();
        std::memcpy(buf.data() + i, &x, std::min<std::size_t>(8, hi - i));
      }
      ref = buf;
      reference(op, ref.data(), dst, src, c, n);
      void* ret = op == Operation::kFill ? r->fill_fn()(buf.data() + dst, c, n)
                                         : r->fn()(buf.data() + dst, buf.data() + src, n);
      ++calls;
      if (ret != buf.data() + dst || buf != ref) {
        FAIL_CHECK("mismatch: " << to_string(p) << " n=" << n << " dst=" << dst << " src=" << src
                                << " (seed " << seed << ")");
        return;
      }
    }
  }
  MESSAGE("random routines: " << routines << ", calls compared: " << calls);
  CHECK(routines > 0);
}
