// code_path() (templates/include/copysynth/ladders.hpp) against the code a routine executes.
//
// Every correctness test passes whichever of rep and the loop a copy takes: both copy right. The
// tuner trusts code_path() (through large_lengths_differ and first_large_difference) to know
// which code a length runs, and skips timing a candidate where it says nothing changes; the
// plan's text and the .S file say the same. So a rep class's alignment test that sends the wrong
// copies to the loop (an inverted test, dst tested where src and dst should be, a 4K-alias window
// off by one) would ship unseen. Here each call is single-stepped (support/trace.hpp) and what
// ran (a rep string instruction, non-temporal stores, the loop with or without prefetch) must be
// what code_path() says, at every large class's edges, rep_aligned_from and the first rep piece,
// and at the placements first_large_difference() uses: dst aligned or not, src and dst mutually
// aligned or not, 4K-aliasing or not, at each rep_alias_window's distance.
#include <doctest/doctest.h>
#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "copysynth/ladders.hpp"
#include "copysynth/routine.hpp"
#include "support/routines.hpp"
#include "support/skip.hpp"
#include "support/trace.hpp"

using namespace copysynth;

namespace {

constexpr std::uint64_t kMaxLength = 3u << 20;  // lengths above are not traced (buffer size)
constexpr std::uint64_t kMinLength = 8192;      // below: the small classes, and loops too short to prefetch

/// Page-aligned, anonymous, freed on scope exit.
struct Region {
  explicit Region(std::size_t bytes) : size(bytes) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(p != MAP_FAILED);
    base = static_cast<unsigned char*>(p);
  }
  ~Region() { munmap(base, size); }
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;
  unsigned char* base = nullptr;
  std::size_t size = 0;
};

std::string describe(const CodePath& c) {
  return std::string(strategy_name(c.strategy)) + (c.strategy == Strategy::kAlignedLoop ? (c.prefetch ? "+prefetch" : "") : "");
}

/// What ran, in code_path()'s terms.
CodePath observed(const test::ExecutedCode& e) {
  if (e.rep) return {Strategy::kRepString, false};
  if (e.non_temporal) return {Strategy::kNonTemporalLoop, false};
  return {Strategy::kAlignedLoop, e.prefetch};
}

/// Lengths at which the large-length choices change under `p`, and one inside each class.
std::vector<std::uint64_t> lengths_of(const CopyPlan& plan) {
  const CopyParams& p = plan.params;
  std::vector<std::uint64_t> n;
  for (const SizeClass& k : plan.classes) {
    if (k.strategy != Strategy::kAlignedLoop && k.strategy != Strategy::kRepString &&
        k.strategy != Strategy::kNonTemporalLoop)
      continue;
    for (std::uint64_t v : {k.lo, k.lo + 1, k.hi, k.lo + (std::min(k.hi, kMaxLength) - k.lo) / 2}) n.push_back(v);
    if (const std::uint64_t from = rep_aligned_from_in(p, k); from != kNever) n.insert(n.end(), {from - 1, from});
    if (const std::uint64_t piece = rep_chunk_in(p, k); piece != kNever) n.insert(n.end(), {piece, piece + 1});
    if (const std::uint64_t stop = rep_chunk_stop_in(p, k); stop != kNever) n.insert(n.end(), {stop - 1, stop});
    if (const std::uint64_t stop = rep_alias_loop_in(p, k); stop != kNever) n.insert(n.end(), {stop - 1, stop});
  }
  if (p.prefetch_min.value) n.insert(n.end(), {p.prefetch_min.value - 1, p.prefetch_min.value});
  std::sort(n.begin(), n.end());
  n.erase(std::unique(n.begin(), n.end()), n.end());
  std::erase_if(n, [](std::uint64_t v) { return v < kMinLength || v > kMaxLength; });
  return n;
}

/// {src, dst} offsets from page-aligned addresses: first_large_difference's placements, and for
/// each bit of a 64-byte alignment test, dst aligned with src off by it, dst off by it and src
/// aligned, and both off by it (mutually aligned): a test of the wrong bits or of the wrong
/// pointer takes the other branch at one of them.
std::vector<std::array<std::uint32_t, 2>> placements_of(const CopyParams& p) {
  std::vector<std::array<std::uint32_t, 2>> o{{0, 0}, {2048, 1}, {4095, 0}, {0, 64}};
  for (std::uint32_t bit = 1; bit < 64; bit *= 2) o.insert(o.end(), {{bit, 0}, {0, bit}, {bit, bit}});
  if (const std::uint32_t w = p.rep_alias_window.value; w != 0 && w < kPageBytes) {
    o.push_back({static_cast<std::uint32_t>(kPageBytes - w), 0});      // dst - src = w: not aliasing
    o.push_back({static_cast<std::uint32_t>(kPageBytes - w + 1), 0});  // w - 1: aliasing
    o.push_back({static_cast<std::uint32_t>(kPageBytes - w + 1), 1});  // w: dst misaligned
  }
  return o;
}

constexpr std::size_t kTraced = 160;  // instructions traced per call; the first marker comes far earlier

struct Tally {
  std::size_t calls = 0, rep = 0, nt = 0, loop = 0, prefetching = 0;
  // calls in a rep class that code_path() sends to the loop: for alignment, for 4K aliasing
  std::size_t rep_class_misaligned = 0, rep_class_aliasing = 0;
  std::size_t narrow_loop = 0;  // calls code_path() sends to the 32-byte loop (rep_alias_loop)
  std::size_t latest_marker = 0;  // the latest first rep / non-temporal store / prefetch seen
};

/// Traces every length x placement of `p`'s plan; memmove with src and dst at equal offsets
/// also with the two buffers' roles swapped (dst below src in one order, above in the other).
void check_paths(const CopyParams& p, Region& a, Region& b, Tally& t) {
  const CopyPlan plan = test::plan_for(p);
  const Routine r = test::build(p);
  const std::vector<std::uint64_t> lengths = lengths_of(plan);
  const Operation op = p.operation.value;
  for (std::uint64_t n : lengths)
    for (const auto& [so, dof] : placements_of(p))
      for (int swap = 0; swap < (op == Operation::kMemmove && so == dof ? 2 : 1); ++swap) {
        Region& from = swap ? b : a;
        Region& to = swap ? a : b;
        unsigned char* src = from.base + so;
        unsigned char* dst = to.base + dof;
        const unsigned char c = static_cast<unsigned char>(0x5a + n % 7);
        src[0] = c;
        src[n - 1] = static_cast<unsigned char>(c + 1);
        std::memset(dst, 0, n);
        const test::ExecutedCode e = test::trace_call(r, dst, src, c, n, kTraced);
        const CodePath want = code_path(plan, n, so, dof);
        const CodePath got = observed(e);
        INFO(short_name(p) << ": n = " << n << ", src offset " << so << ", dst offset " << dof
                           << std::string(dst < src ? " (dst below src)" : " (dst above src)")
                           << ": code_path() says " << describe(want)
                           << ", the routine ran " << describe(got) << " (" << e.instructions
                           << " instructions traced)");
        REQUIRE(e.instructions > 0);
        CHECK(got.strategy == want.strategy);
        if (want.strategy == Strategy::kAlignedLoop) CHECK(got.prefetch == want.prefetch);
        // rep_alias_loop: the rep class's 4K-aliasing copies run the 32-byte loop, the others
        // that leave the rep class the routine's own (64-byte stores in a 64-byte routine).
        if (want.strategy == Strategy::kAlignedLoop && p.rep_alias_loop.value != kNever) {
          INFO("widest store " << e.widest_store << " bytes, code_path() width " << want.width);
          if (want.width != 0) CHECK(e.widest_store == want.width);
          else if (plan.vec == 64) CHECK(e.widest_store == 64);
        }
        // Pieces or one instruction (rep_chunk, rep_chunk_stop): the first rep's count is one
        // piece exactly where more than a piece is left after rep_align_dst's head (1..64 bytes)
        // and n is below the stop, which applies to n itself.
        if (got.strategy == Strategy::kRepString && op != Operation::kClearPage) {
          const auto k = std::find_if(plan.classes.begin(), plan.classes.end(),
                                      [n](const SizeClass& c) { return c.lo <= n && n <= c.hi; });
          REQUIRE(k != plan.classes.end());
          const std::uint64_t piece = rep_chunk_in(p, *k), stop = rep_chunk_stop_in(p, *k);
          const std::uint64_t head =
              p.rep_align_dst ? 64 - (reinterpret_cast<std::uintptr_t>(dst) & 63) : 0;  // 1..64
          const std::uint64_t unit = p.rep_unit.value;
          const bool pieces = piece != kNever && n - head > piece && (stop == kNever || n < stop);
          INFO("first rep count " << e.first_rep_count << ", piece " << piece << ", stop " << stop);
          if (pieces) CHECK(e.first_rep_count == piece / unit);
          else CHECK(e.first_rep_count == (n - head) / unit);
        }
        // The call still did its job with the trap flag on.
        if (op == Operation::kFill) {
          CHECK(dst[0] == c);
          CHECK(dst[n - 1] == c);
        } else {
          CHECK(dst[0] == src[0]);
          CHECK(dst[n - 1] == src[n - 1]);
        }
        ++t.calls;
        const auto k = std::find_if(plan.classes.begin(), plan.classes.end(),
                                    [n](const SizeClass& c) { return c.lo <= n && n <= c.hi; });
        if (k != plan.classes.end() && k->strategy == Strategy::kRepString && want.strategy == Strategy::kAlignedLoop) {
          const std::uint32_t d = (dof - so) % kPageBytes;
          const std::uint32_t w = p.rep_alias_window.value;
          if (want.width != 0) ++t.narrow_loop;
          else (op != Operation::kFill && w != 0 && d != 0 && d < w ? t.rep_class_aliasing : t.rep_class_misaligned)++;
        }
        t.latest_marker = std::max(t.latest_marker, e.first_marker);
        (got.strategy == Strategy::kRepString ? t.rep : got.strategy == Strategy::kNonTemporalLoop ? t.nt : t.loop)++;
        t.prefetching += got.strategy == Strategy::kAlignedLoop && got.prefetch;
      }
}

/// Whether this process gets single-step traps (not under a debugger that takes them).
bool single_step_works() {
  CopyParams p;
  p.operation = Operation::kMemcpy;
  const Routine r = test::build(p);
  unsigned char s[64] = {1}, d[64] = {};
  return test::trace_call(r, d, s, 0, sizeof s).instructions > 0;
}

/// Hand-made parameter sets: each rule of code_path() in play at lengths this test traces.
std::vector<CopyParams> rule_cases(Operation op) {
  const bool copy = op != Operation::kFill;
  const unsigned w = CpuInfo::host().features().max_vector_bytes() >= 32 ? 32 : 16;
  std::vector<CopyParams> out;
  auto base = [&] {
    CopyParams p;
    p.operation = op;
    p.vector_width = w;
    p.unroll = 4;
    p.rep_threshold = 16384;
    p.nt_threshold = 2u << 20;
    if (copy) {
      p.prefetch_distance = 512;
      p.prefetch_min = 32768;
    }
    return p;
  };
  out.push_back(base());  // loop without prefetch, loop with, rep any dst, non-temporal
  {
    CopyParams p = base();  // rep only for an aligned dst
    p.rep_aligned_only = true;
    out.push_back(p);
    if (copy) {
      p.rep_aligned_mutual = true;  // ... or mutually aligned src and dst
      out.push_back(p);
    }
  }
  {
    CopyParams p = base();  // a rep band, the loop again, a second rep band beyond; aligned from 64 KiB
    p.rep_stop = 256u << 10;
    p.rep_resume = 1u << 20;
    p.rep_aligned_from = 65536;
    p.rep_chunk = 131072;
    p.rep_chunk_stop = 3 * 131072;  // pieces from 128 KiB, one instruction again from 384 KiB
    p.rep_unit = 8;
    p.rep_align_dst = true;
    out.push_back(p);
    if (copy) {
      p.rep_aligned_mutual = true;
      p.rep_alias_window = 256;
      out.push_back(p);
    }
  }
  for (unsigned form : {0u, 1u, 2u, 3u}) {
    const unsigned unit = form & 1 ? 8 : 1;
    CopyParams p = base();  // rep in 16 KiB pieces, one instruction again from 64 KiB
    p.rep_aligned_from = kNever;
    p.rep_aligned_only = false;
    p.rep_stop = kNever;
    p.rep_resume = kNever;
    p.rep_chunk = 16384;
    p.rep_chunk_stop = 65536;
    p.rep_unit = unit;
    p.rep_align_dst = form < 2;  // the head moves the count left below the stop
    out.push_back(p);
  }
  if (copy) {
    CopyParams p = base();  // 4K-alias window, any dst
    p.rep_alias_window = 1024;
    p.prefetch_min = 0;
    out.push_back(p);
    if (w >= 32) {  // 4K-aliasing copies to the 32-byte loop below 64 KiB, the window's loop from there
      p.rep_alias_loop = 65536;
      out.push_back(p);
      p.rep_alias_window = 0;  // ... rep from there
      out.push_back(p);
      p.rep_align_dst = false;
      p.prefetch_min = 32768;
      out.push_back(p);
      if (CpuInfo::host().features().max_vector_bytes() >= 64) {  // the 32-byte loop in a zmm routine
        p.vector_width = 64;
        out.push_back(p);
      }
    }
  }
  return out;
}

/// Random parameter sets (valid for this host) with thresholds this test reaches. Not
/// shift_realign: its memcpy copies most of a mutually misaligned call in the shift loop and
/// runs no prefetch, where code_path()'s `prefetch` (the loop that holds prefetch instructions)
/// is true.
std::vector<CopyParams> random_cases(Operation op, std::mt19937_64& rng, int count) {
  auto pick = [&](auto list) { return list[rng() % list.size()]; };
  const bool copy = op != Operation::kFill;
  std::vector<CopyParams> out;
  while (static_cast<int>(out.size()) < count) {
    CopyParams p;
    p.operation = op;
    p.vector_width = pick(test::host_widths());
    p.unroll = pick(std::vector<std::uint32_t>{1, 2, 4, 8});
    auto at = [&] { return pick(std::vector<std::uint64_t>{kNever, 8192, 12288, 20480, 65536, 200000, 1u << 20, 2u << 20}); };
    p.rep_threshold = at();
    p.nt_threshold = at();
    p.rep_stop = at();
    p.rep_resume = at();
    if (rng() % 3 == 0) p.rep_aligned_only = true;
    else if (rng() % 2) p.rep_aligned_from = at();
    if (rng() % 3 == 0) p.rep_chunk = pick(std::vector<std::uint64_t>{4096, 16384, 65536});
    if (p.rep_chunk.value != kNever && rng() % 2) p.rep_chunk_stop = p.rep_chunk.value * pick(std::vector<std::uint64_t>{2, 3, 8});
    p.rep_unit = rng() % 2 ? 8 : 1;
    p.rep_align_dst = rng() % 2;
    if (copy) {
      if (rng() % 2) {
        p.prefetch_distance = 64 * static_cast<std::uint32_t>(1 + rng() % 32);
        if (rng() % 2) p.prefetch_min = pick(std::vector<std::uint64_t>{8192, 32768, 131072});
      }
      if (rng() % 2) p.rep_alias_window = pick(std::vector<std::uint32_t>{64, 256, 1024});
      p.rep_aligned_mutual = rng() % 2;
      if (p.vector_width.value >= 32 && rng() % 3 == 0)
        p.rep_alias_loop = pick(std::vector<std::uint64_t>{16384, 65536, 262144});
      if (p.vector_width.value >= 16 && p.unroll.value <= 4) p.loop_pipeline = rng() % 2;
    }
    if (p.vector_width.value >= 16 && rng() % 2) p.nt_pages = pick(std::vector<std::uint32_t>{2, 4});
    if (!make_plan(p, CpuInfo::host().features()).ok()) continue;  // an invalid draw: draw again
    out.push_back(p);
  }
  return out;
}

}  // namespace

TEST_CASE("code_path() names the code each large copy, move and fill executes (single-stepped)") {
  if (!single_step_works()) {
    COPYSYNTH_SKIP_PART("this process gets no single-step traps (SIGTRAP taken by a debugger?)");
    return;
  }
  Region a(kMaxLength + 2 * kPageBytes), b(kMaxLength + 2 * kPageBytes);
  std::mt19937_64 rng(20261203);
  for (Operation op : {Operation::kMemcpy, Operation::kMemmove, Operation::kFill}) {
    Tally t;
    std::vector<CopyParams> cases = rule_cases(op);
    for (const CopyParams& p : random_cases(op, rng, 8)) cases.push_back(p);
    for (const CopyParams& p : cases) check_paths(p, a, b, t);
    MESSAGE(name_of(op) << ": " << cases.size() << " plans, " << t.calls << " calls traced: " << t.rep
                               << " ran rep, " << t.nt << " non-temporal stores, " << t.loop << " the loop ("
                               << t.prefetching << " with prefetch; " << t.rep_class_misaligned << " + " << t.rep_class_aliasing
                               << " in a rep class, by its alignment / alias test; " << t.narrow_loop
                               << " to the 32-byte loop); the first rep, non-temporal store or "
                               << "prefetch within " << t.latest_marker << " instructions (" << kTraced << " traced)");
    // A routine whose first such instruction came after the traced ones would read as the plain
    // loop: keep a margin (a longer preamble needs a larger kTraced).
    CHECK(t.latest_marker <= kTraced / 2);
    // The cases reach every kind of code, or the test checks less than it says.
    CHECK(t.rep > 0);
    CHECK(t.nt > 0);
    CHECK(t.loop > t.prefetching);
    if (op != Operation::kFill) CHECK(t.prefetching > 0);
    // ... and the rep class's tests sent calls both ways (else "the routine took rep where the
    // model said rep" is all the rep rules were checked on).
    CHECK(t.rep_class_misaligned > 0);
    if (op != Operation::kFill) CHECK(t.rep_class_aliasing > 0);
    if (op != Operation::kFill && CpuInfo::host().features().max_vector_bytes() >= 32) CHECK(t.narrow_loop > 0);
  }
}

TEST_CASE("n = 0 executes no load or store, masked classes too (single-stepped)") {
  if (!single_step_works()) {
    COPYSYNTH_SKIP_PART("this process gets no single-step traps (SIGTRAP taken by a debugger?)");
    return;
  }
  // A masked load or store with a zero mask touches no byte but is still issued: it fetches the
  // lines of its window, and in a page not yet faulted in takes a microcode assist on every call
  // (docs/performance.md, eighteenth round). So n = 0 must leave before any memory access, at a
  // page's start, middle and end, for the plain ladder and every masked class.
  const IsaFeatures& isa = CpuInfo::host().features();
  const bool masks = isa.has(Feature::kAVX2) && isa.has(Feature::kAVX512F) && isa.has(Feature::kAVX512VL) &&
                     isa.has(Feature::kAVX512BW) && isa.has(Feature::kBMI2);
  if (!masks) COPYSYNTH_SKIP_PART("masked classes: this CPU lacks AVX-512BW (the plain ladder alone is traced)");
  Region a(3 * kPageBytes), b(3 * kPageBytes);
  std::size_t plans = 0;
  for (Operation op : {Operation::kMemcpy, Operation::kMemmove, Operation::kFill})
    for (unsigned m : {0u, 16u, 32u, 64u, 128u})
      for (bool shift : {false, true}) {
        if ((m != 0 && !masks) || (m == 0 && shift)) continue;
        CopyParams p;
        p.operation = op;
        p.vector_width = m == 16 ? 16 : m == 32 ? 32 : CpuInfo::host().features().max_vector_bytes() >= 64 ? 64 : 16;
        p.mask_max = m;
        p.mask_shift = shift;
        const Routine r = test::build(p);
        ++plans;
        for (std::size_t off : {std::size_t{0}, std::size_t{1}, std::size_t{2048}, kPageBytes - 1}) {
          const test::ExecutedCode e = test::trace_call(r, b.base + kPageBytes + off, a.base + kPageBytes + off, 0x5a, 0);
          CHECK_MESSAGE(e.complete, r.name() << " at page offset " << off);
          CHECK_MESSAGE(e.undecoded == 0, r.name() << " at page offset " << off);
          CHECK_MESSAGE(e.memory_accesses == 0, r.name() << " at page offset " << off << ": " << e.memory_accesses
                                                         << " loads or stores for n = 0");
        }
      }
  MESSAGE(plans << " plans traced with n = 0");
  // The tracer counts what it is shown: 1 byte is a load and a store, in the plain ladder and
  // (where the CPU has them) through the masked moves.
  CopyParams p;
  p.operation = Operation::kMemcpy;
  CHECK(test::trace_call(test::build(p), b.base, a.base, 0, 1).memory_accesses >= 2);
  if (masks) {
    p.vector_width = 64;
    p.mask_max = 128;
    p.mask_shift = true;
    const test::ExecutedCode e = test::trace_call(test::build(p), b.base + kPageBytes + 2048, a.base + kPageBytes + 2048, 0, 1);
    CHECK(e.undecoded == 0);
    CHECK(e.memory_accesses >= 4);  // two masked loads and two masked stores
  }
}

TEST_CASE("the tracer sees what it is shown: rep, non-temporal stores, prefetch") {
  if (!single_step_works()) {
    COPYSYNTH_SKIP_PART("this process gets no single-step traps (SIGTRAP taken by a debugger?)");
    return;
  }
  // A routine whose rep class starts at 16 KiB: below it the loop, from it rep. The rep test
  // above would pass with a tracer that saw nothing if code_path() said "loop" everywhere.
  Region a(1u << 20), b(1u << 20);
  for (std::size_t i = 0; i < a.size; ++i) a.base[i] = static_cast<unsigned char>(i * 7 + 1);
  CopyParams p;
  p.operation = Operation::kMemcpy;
  p.rep_threshold = 16384;
  p.nt_threshold = 65536;
  p.prefetch_distance = 256;
  const Routine r = test::build(p);
  const test::ExecutedCode loop = test::trace_call(r, b.base, a.base, 0, 12288, 1u << 20);
  CHECK(!loop.rep);
  CHECK(!loop.non_temporal);
  CHECK(loop.prefetch);
  CHECK(loop.complete);                  // traced to the return: the whole loop
  CHECK(loop.instructions > 12288 / 64);  // at least one instruction per 64 bytes (v <= 64 B stores)
  const test::ExecutedCode rep = test::trace_call(r, b.base, a.base, 0, 20000);
  CHECK(rep.rep);
  CHECK(!rep.complete);  // stopped at the rep
  CHECK(rep.instructions < 200);
  const test::ExecutedCode nt = test::trace_call(r, b.base, a.base, 0, 100000);
  CHECK(nt.non_temporal);
  CHECK(!nt.rep);
  CHECK(std::memcmp(a.base, b.base, 100000) == 0);
}
