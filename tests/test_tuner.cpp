// Tests of the tuner: the conformance checker (including that it catches broken routines), the
// timing helpers, the seeds workload and a tiny end-to-end tune. No test asserts a speed.
#include <algorithm>
#include <doctest/doctest.h>

#include <limits>
#include <locale>
#include <clocale>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include <regex>
#include <sstream>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "copysynth/decide.hpp"
#include "copysynth/file_io.hpp"
#include "copysynth/ladders.hpp"
#include "copysynth/perf_counters.hpp"
#include "copysynth/plot.hpp"
#include "copysynth/c_format.hpp"
#include "copysynth/library_writer.hpp"
#include "copysynth/peers.hpp"
#include "copysynth/report.hpp"
#include "copysynth/tuner.hpp"
#include "copysynth/verify.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"
#include "support/text.hpp"
#include "support/verify_options.hpp"
#include "support/wisdom.hpp"

using namespace copysynth;
using test::contains;
using test::read_text;
using test::TempDir;
using test::write_file;

namespace {

VerifyOptions fast_options() { return test::light_options(1 << 20); }

// ---- deliberately broken memcpy variants (volatile so the compiler keeps them as written) ----

void* byte_copy(void* d, const void* s, std::size_t n) {
  auto* dp = static_cast<volatile unsigned char*>(d);
  auto* sp = static_cast<const volatile unsigned char*>(s);
  for (std::size_t i = 0; i < n; ++i) dp[i] = sp[i];
  return d;
}

void* short_by_one(void* d, const void* s, std::size_t n) {  // drops the last byte from n = 17
  byte_copy(d, s, n >= 17 ? n - 1 : n);
  return d;
}

void* writes_past_end(void* d, const void* s, std::size_t n) {  // one extra byte at n = 300
  byte_copy(d, s, n);
  if (n == 300) static_cast<volatile unsigned char*>(d)[n] = 0;
  return d;
}

void* reads_past_end(void* d, const void* s, std::size_t n) {  // 8-byte loads, last one too wide
  auto* dp = static_cast<volatile unsigned char*>(d);
  auto* sp = static_cast<const volatile unsigned char*>(s);
  for (std::size_t i = 0; i < n; i += 8) {
    unsigned char tmp[8];
    for (int k = 0; k < 8; ++k) tmp[k] = sp[i + k];  // reads up to 7 bytes past src + n
    for (std::size_t k = 0; k < 8 && i + k < n; ++k) dp[i + k] = tmp[k];
  }
  return d;
}

void* wrong_return(void* d, const void* s, std::size_t n) {
  byte_copy(d, s, n);
  return static_cast<char*>(d) + (n == 64 ? 1 : 0);
}

// Dereferences the null src on purpose (the checker must catch the fault): UBSan's null check off.
__attribute__((no_sanitize("null")))
void* touches_on_zero(void* d, const void* s, std::size_t n) {  // reads *src even for n = 0
  volatile unsigned char first = *static_cast<const volatile unsigned char*>(s);
  (void)first;
  return byte_copy(d, s, n);
}

void* bad_at_one_alignment(void* d, const void* s, std::size_t n) {  // wrong only at dst%64 == 33
  byte_copy(d, s, n);
  auto* dp = static_cast<volatile unsigned char*>(d);
  if (n == 100 && reinterpret_cast<std::uintptr_t>(d) % 64 == 33) dp[50] = dp[50] ^ 1;
  return d;
}

void* bad_near_edge(void* d, const void* s, std::size_t n) {  // wrong only at n = 5000 (edge - 3)
  byte_copy(d, s, n);
  auto* dp = static_cast<volatile unsigned char*>(d);
  if (n == 5000) dp[4999] = dp[4999] ^ 0x80;
  return d;
}

}  // namespace

TEST_CASE("the checker passes a correct memcpy (glibc's and a byte loop)") {
  const VerifyReport r1 = verify_copy(system_memcpy(), {64, 256, 4096}, fast_options());
  CHECK_MESSAGE(r1.ok(), r1.summary());
  CHECK(r1.cases > 10000);
  const VerifyReport r2 = verify_copy(&byte_copy, {64}, fast_options());
  CHECK_MESSAGE(r2.ok(), r2.summary());
}

TEST_CASE("the checker catches each kind of broken routine, with the first failing case") {
  SUBCASE("a short copy") {
    const auto r = verify_copy(&short_by_one, {}, fast_options());
    REQUIRE_FALSE(r.ok());
    CHECK(r.failure->n == 17);
    CHECK(r.failure->what.find("byte 16 of dst differs") != std::string::npos);
  }
  SUBCASE("a write past the end") {
    const auto r = verify_copy(&writes_past_end, {}, fast_options());
    REQUIRE_FALSE(r.ok());
    CHECK(r.failure->n == 300);
    CHECK(r.failure->what.find("past the end") != std::string::npos);
  }
  SUBCASE("a read past the end faults on the PROT_NONE page and is reported, not fatal") {
    const auto r = verify_copy(&reads_past_end, {}, fast_options());
    REQUIRE_FALSE(r.ok());
    CHECK(r.failure->placement == Placement::kSrcEndsAtGuard);
    CHECK(r.failure->what.find("SIGSEGV") != std::string::npos);
    CHECK(r.failure->what.find("read past the end") != std::string::npos);
    CHECK(r.failure->n % 8 != 0);
  }
  SUBCASE("a wrong return value") {
    const auto r = verify_copy(&wrong_return, {}, fast_options());
    REQUIRE_FALSE(r.ok());
    CHECK(r.failure->n == 64);
    CHECK(r.failure->what.find("instead of dst") != std::string::npos);
  }
  SUBCASE("touching memory when n = 0") {
    const auto r = verify_copy(&touches_on_zero, {}, fast_options());
    REQUIRE_FALSE(r.ok());
    CHECK(r.failure->placement == Placement::kZeroLength);
  }
  SUBCASE("a fault at one misalignment only") {
    const auto r = verify_copy(&bad_at_one_alignment, {}, fast_options());
    REQUIRE_FALSE(r.ok());
    CHECK(r.failure->n == 100);
    CHECK(r.failure->dst_offset == 33);
  }
  SUBCASE("a fault next to an edge above the dense range is found through the edge list") {
    const auto clean = verify_copy(&bad_near_edge, {}, fast_options());
    // Without the edge the random sample is unlikely to hit n = 5000 exactly (seeded: it does not).
    CHECK(clean.ok());
    const auto r = verify_copy(&bad_near_edge, {5003}, fast_options());
    REQUIRE_FALSE(r.ok());
    CHECK(r.failure->n == 5000);
  }
  SUBCASE("check_routine's message names the params and the case") {
    CopyParams p;
    p.vector_width = 16;
    auto plan = make_plan(p, CpuInfo::host().features());
    REQUIRE(plan.ok());
    auto r = Routine::build(*plan);
    REQUIRE(r.ok());
    CHECK(check_routine(*r, fast_options()).ok());
  }
}

TEST_CASE("every width x unroll x NOP form the host supports passes conformance") {
  const unsigned vmax = CpuInfo::host().features().max_vector_bytes();
  VerifyOptions o;
  o.random_sizes = 6;
  o.max_size = 4 << 20;
  int checked = 0;
  for (unsigned w : {8u, 16u, 32u, 64u}) {
    if (w > vmax) continue;
    for (unsigned u : {1u, 2u, 4u, 8u, 16u}) {
      for (NopForm f : {NopForm::kSingleByte, NopForm::kLongNop, NopForm::kPrefixedLongNop, NopForm::kJumpOver}) {
        CopyParams p;
        p.vector_width = w;
        p.unroll = u;
        p.nop_form = f;
        p.loop_align = 64;
        // Alternate the optional classes so every strategy runs for every width.
        if ((u + static_cast<unsigned>(f)) % 2 == 0) {
          p.rep_threshold = 1024 + 8 * u;
          p.rep_align_dst = u % 4 != 0;
          p.nt_threshold = 1u << 18;
          p.prefetch_distance = 64 * u;
          p.prefetch_hint = u % 2 ? PrefetchHint::kNTA : PrefetchHint::kT0;
        }
        auto plan = make_plan(p, CpuInfo::host().features());
        REQUIRE_MESSAGE(plan.ok(), to_string(p));
        auto r = Routine::build(*plan);
        REQUIRE_MESSAGE(r.ok(), to_string(p));
        const VerifyReport rep = verify_routine(*r, o);
        CHECK_MESSAGE(rep.ok(), r->name() << ": " << rep.summary());
        ++checked;
      }
    }
  }
  MESSAGE("routines verified: " << checked);
  CHECK(checked >= 40);
}

TEST_CASE("thresholds of 0, 1, 63 and 4095 never send tiny copies to rep or non-temporal paths") {
  for (std::uint64_t thr : {0ull, 1ull, 63ull, 4095ull}) {
    CopyParams p;
    p.vector_width = 16;
    p.rep_threshold = thr;
    p.nt_threshold = thr == 4095 ? 8192 : thr;
    auto plan = make_plan(p, CpuInfo::host().features());
    REQUIRE(plan.ok());
    for (const auto& c : plan->classes)
      if (c.strategy == Strategy::kRepString || c.strategy == Strategy::kNonTemporalLoop) CHECK(c.lo >= 128);
    auto r = Routine::build(*plan);
    REQUIRE(r.ok());
    const VerifyReport rep = verify_routine(*r, fast_options());
    CHECK_MESSAGE(rep.ok(), rep.summary());
  }
}

TEST_CASE("timing helpers") {
  CHECK(median({3.0, 1.0, 2.0}) == 2.0);
  CHECK(median({4.0, 1.0, 2.0, 3.0}) == 2.5);
  CHECK(tsc_hz() > 1e8);
  BenchBuffers buf(1 << 16);
  TimingOptions t;
  t.rounds = 3;
  const auto m = compare({system_memcpy(), &byte_copy}, buf, 4096, 0, 4, t);
  REQUIRE(m.size() == 2);
  for (const auto& x : m) {
    CHECK(x.ticks_per_call > 0);
    CHECK(x.gbps > 0);
    CHECK(x.samples == 3);
  }
  // Buffers that are too small are refused, not overrun.
  CHECK_THROWS_AS(compare({system_memcpy()}, buf, 1 << 20, 0, 0, t), std::invalid_argument);
}

TEST_CASE("timed_length: a threshold's ladder size is timed inside its band, past any rep head") {
  // Below 64 KiB: the size itself (the loop's and the small classes' lengths).
  for (std::uint64_t n : {0ull, 1ull, 513ull, 4096ull, 32768ull, 65535ull}) CHECK(timed_length(n) == n);
  // From 64 KiB on, a length whose rep count, after a head of up to 64 bytes copied with vector
  // moves (rep_align_dst at any dst offset), is still at least the ladder size, and which stays
  // below the next ladder size: the band [size, 2 x size) the size stands for.
  for (std::uint64_t size = 64ull << 10; size <= (1ull << 40); size *= 2) {
    CAPTURE(size);
    CHECK(timed_length(size) >= size + 64);
    CHECK(timed_length(size) < 2 * size);
    CHECK(timed_length(size) % 4096 == 0);  // the same page-relative tail as the size itself
    CHECK(band_start(timed_length(size)) == size);  // the floor's thresholds stay at the ladder sizes
  }
  // Lengths that are not one page past a ladder size start their own band.
  for (std::uint64_t n : {0ull, 4096ull, 65536ull, 69632ull + 1, 262144ull, 3ull << 20, (3ull << 20) + 4096})
    CHECK(band_start(n) == n);
}

TEST_CASE("keep_rep_split: the floor's composite keeps the winner's split where its band has the winner's form") {
  CopyParams winner;
  winner.operation = Operation::kMemcpy;
  winner.vector_width = 32;
  winner.rep_threshold = 65536;
  winner.rep_stop = 4u << 20;
  winner.rep_align_dst = true;
  winner.rep_aligned_from = 1u << 20;
  // The composite's band from a seed's pick: from 32 KiB, the same form, no split.
  CopyParams comp = winner;
  comp.rep_threshold = 32768;
  comp.rep_aligned_from = kNever;
  REQUIRE(large_lengths_differ(comp, winner, 1u << 20, 0, 1));  // dropped: rep at a misaligned 1 MiB
  const CopyParams kept = keep_rep_split(comp, winner);
  CHECK(kept.rep_aligned_from.value == (1u << 20));
  CHECK(validate_domains(kept).ok());
  CHECK_FALSE(large_lengths_differ(kept, winner, 1u << 20, 0, 1));  // the loop there, as the winner
  CHECK_FALSE(large_lengths_differ(kept, winner, (4u << 20) - 1, 0, 33));
  CHECK(large_lengths_differ(kept, winner, 32768, 0, 0));  // the composite's own start stays
  CHECK(kept.rep_threshold.value == 32768);
  CHECK_FALSE(kept.rep_aligned_mutual.value);
  // The split's test goes with it: a winner testing dst against src (rep_aligned_mutual).
  CopyParams mutual = winner;
  mutual.rep_aligned_mutual = true;
  const CopyParams kept_mutual = keep_rep_split(comp, mutual);
  CHECK(kept_mutual.rep_aligned_from.value == (1u << 20));
  CHECK(kept_mutual.rep_aligned_mutual.value);
  CHECK_FALSE(large_lengths_differ(kept_mutual, mutual, 1u << 20, 16, 16));  // rep, as the winner
  CHECK(large_lengths_differ(kept, mutual, 1u << 20, 16, 16));
  // Unchanged: another form (element size, dst not aligned first, 4K-aliasing to the loop, rep
  // in pieces) ...
  for (auto change : {+[](CopyParams& p) { p.rep_unit = 8; }, +[](CopyParams& p) { p.rep_align_dst = false; },
                      +[](CopyParams& p) { p.rep_alias_window = 64; }, +[](CopyParams& p) { p.rep_aligned_only = true; },
                      +[](CopyParams& p) { p.rep_chunk = 2u << 20; }}) {
    CopyParams c = comp;
    change(c);
    CHECK(keep_rep_split(c, winner).rep_aligned_from.value == kNever);
  }
  // ... a split of its own, a band that ends at or before the split ...
  CopyParams own = comp;
  own.rep_aligned_from = 2u << 20;
  CHECK(keep_rep_split(own, winner).rep_aligned_from.value == (2u << 20));
  CopyParams shorter = comp;
  shorter.rep_stop = 1u << 20;
  CHECK(keep_rep_split(shorter, winner).rep_aligned_from.value == kNever);
  // ... or one that reaches past the winner's second band (rep again from 16 MiB, any dst) ...
  CopyParams two = winner;
  two.rep_resume = 16u << 20;
  CopyParams endless = comp;
  endless.rep_stop = kNever;
  CHECK(keep_rep_split(endless, two).rep_aligned_from.value == kNever);
  CHECK_FALSE(large_lengths_differ(endless, two, 32u << 20, 0, 1));  // rep for any dst in both
  CopyParams forced = endless;
  forced.rep_aligned_from = 1u << 20;
  CHECK(large_lengths_differ(forced, two, 32u << 20, 0, 1));  // what keeping it would do
  endless.rep_stop = 32u << 20;
  CHECK(keep_rep_split(endless, two).rep_aligned_from.value == kNever);
  endless.rep_stop = 8u << 20;  // ends below the second band: kept
  CHECK(keep_rep_split(endless, two).rep_aligned_from.value == (1u << 20));
  // Without a second band, a band to the end keeps the split: the winner runs the loop for a
  // misaligned dst from its rep_stop on, the composite from the split on.
  CopyParams to_end = comp;
  to_end.rep_stop = kNever;
  CHECK(keep_rep_split(to_end, winner).rep_aligned_from.value == (1u << 20));
  // A band starting at or above the split keeps it: rep only for an aligned dst there, as the
  // winner runs it (the loop for a misaligned dst at 2-4 MiB).
  CopyParams later = comp;
  later.rep_threshold = 2u << 20;
  REQUIRE(large_lengths_differ(later, winner, 2u << 20, 0, 1));
  const CopyParams later_kept = keep_rep_split(later, winner);
  CHECK(later_kept.rep_aligned_from.value == (1u << 20));
  CHECK(validate_domains(later_kept).ok());
  CHECK_FALSE(large_lengths_differ(later_kept, winner, 2u << 20, 0, 1));
  // ... and a winner without a split (or one for an aligned dst only throughout).
  CopyParams plain = winner;
  plain.rep_aligned_from = kNever;
  CHECK(keep_rep_split(comp, plain).rep_aligned_from.value == kNever);
  CopyParams only = winner;
  only.rep_aligned_only = true;
  CHECK(keep_rep_split(comp, only).rep_aligned_from.value == kNever);
}

namespace {
/// A 32-byte memcpy with rep from 32 KiB, the loop from 256 KiB to below `resume`, rep again
/// from there and non-temporal stores from 32 MiB: two rep bands and the gap between them.
CopyParams two_rep_bands(std::uint64_t resume) {
  CopyParams p;
  p.operation = Operation::kMemcpy;
  p.vector_width = 32;
  p.rep_threshold = 32768;
  p.rep_stop = 262144;
  p.rep_resume = resume;
  p.nt_threshold = 32u << 20;
  return p;
}
}  // namespace

TEST_CASE("rep_gap: only a loop between two rep bands that closing changes nowhere else is judged") {
  const CopyParams p = two_rep_bands(1u << 20);
  REQUIRE(validate_domains(p).ok());
  const RepGap g = rep_gap(p);
  CHECK(g.from == 262144);
  CHECK(g.to == (1u << 20));
  CHECK(g.why_not.empty());
  // Closing it (rep throughout) changes only the gap's lengths, at every placement.
  CopyParams closed = p;
  closed.rep_stop = kNever;
  closed.rep_resume = kNever;
  for (std::uint64_t n : {32768ull, 262143ull, 262144ull + 4096, (1ull << 20) - 1, 1ull << 20, 16ull << 20})
    for (auto [s, d] : {std::pair<std::uint64_t, std::uint64_t>{0, 0}, {0, 1}, {2048, 4}, {16, 16}}) {
      const bool in_gap = n >= 262144 && n < (1u << 20);
      CHECK(large_lengths_differ(p, closed, n, s, d) == in_gap);
    }
  // No gap: no second band, a stop below the band's start, a resume the non-temporal class takes.
  CopyParams none = p;
  none.rep_resume = kNever;
  CHECK(rep_gap(none).from == kNever);
  none = p;
  none.rep_stop = 16384;
  CHECK(rep_gap(none).from == kNever);
  none = p;
  none.nt_threshold = 512u << 10;
  CHECK(rep_gap(none).from == kNever);
  CHECK(rep_gap(none).why_not.empty());
  // rep only for an aligned dst from 128 KiB holds in the first band alone: closing the gap
  // would carry it over the second band (a misaligned 2 MiB copy: rep before, the loop after).
  CopyParams split = p;
  split.rep_align_dst = true;
  split.rep_aligned_from = 131072;
  REQUIRE(validate_domains(split).ok());
  CopyParams split_closed = split;
  split_closed.rep_stop = kNever;
  split_closed.rep_resume = kNever;
  REQUIRE(large_lengths_differ(split, split_closed, 2u << 20, 0, 1));
  const RepGap gs = rep_gap(split);
  CHECK(gs.from == kNever);
  CHECK(gs.why_not.find("aligned dst") != std::string::npos);
  // rep_aligned_only holds in both bands: judged.
  split.rep_aligned_only = true;
  CHECK(rep_gap(split).from == 262144);
}

TEST_CASE("hot_first: the class of 33 bytes falls through first, shorter lengths longest first") {
  // A plain 16-byte ladder (SSE2: every host has it): 0, 1, 2, 3-4, 5-8, 9-16, 17-32, 33-64, ...
  CopyParams p;
  p.operation = Operation::kMemcpy;
  p.vector_width = 16;
  auto base = make_plan(p, CpuInfo::host().features());
  REQUIRE(base.ok());
  const CopyPlan plan = hot_first(*base);
  REQUIRE(plan.classes.size() == base->classes.size());
  // Compares on the way to each class (depth of its leaf).
  const auto depths = [](const CopyPlan& pl) {
    const auto t = dispatch_tree(pl);
    std::vector<int> d(pl.classes.size(), -1);
    const auto walk = [&](auto&& self, int id, int depth) -> void {
      if (t[id].leaf >= 0) {
        d[t[id].leaf] = depth;
        return;
      }
      self(self, t[id].left, depth + 1);
      self(self, t[id].right, depth + 1);
    };
    walk(walk, 0, 0);
    return d;
  };
  std::size_t hot = 0;
  for (std::size_t i = 0; i < plan.classes.size(); ++i) {
    CHECK(plan.classes[i].lo == base->classes[i].lo);  // only the weights change
    CHECK(plan.classes[i].strategy == base->classes[i].strategy);
    if (plan.classes[i].lo <= 33 && 33 <= plan.classes[i].hi) hot = i;
  }
  REQUIRE(hot > 3);
  CHECK(plan.classes[hot].weight == 1.0);
  CHECK(plan.classes[hot - 1].weight == doctest::Approx(0.4));
  CHECK(plan.classes[hot + 1].weight == doctest::Approx(0.4));
  const std::vector<int> d = depths(plan);
  for (std::size_t i = 0; i < d.size(); ++i) CHECK(d[hot] <= d[i]);
  CHECK(d[hot] <= 2);
  // Away from it the depth never falls: shorter lengths longest first, longer ones shortest first.
  for (std::size_t i = 0; i + 1 <= hot; ++i) CHECK(d[i] >= d[i + 1]);
  for (std::size_t i = hot; i + 1 < d.size(); ++i) CHECK(d[i] <= d[i + 1]);
  // The production prior's tree takes more compares to reach 33 bytes than this one.
  CHECK(depths(*base)[hot] > d[hot]);
}

TEST_CASE("gap_params: the gap stage's verdict as the params it installs") {
  const CopyParams p = two_rep_bands(4u << 20);
  const std::vector<std::uint64_t> sizes = {262144, 524288, 1u << 20, 2u << 20};
  REQUIRE(rep_gap(p).from == 262144);
  // No size for the loop: the gap is closed, rep from rep_threshold on without a stop.
  const CopyParams closed = gap_params(p, sizes, decide::kNoThreshold, 0);
  CHECK(closed.rep_stop.value == kNever);
  CHECK(closed.rep_resume.value == kNever);
  CHECK(closed.rep_threshold.value == 32768);
  CHECK(rep_gap(closed).from == kNever);
  // The loop keeps the whole gap: the params are p's own.
  CHECK(to_string(gap_params(p, sizes, 0, sizes.size())) == to_string(p));
  // The loop keeps 512 KiB to below 2 MiB: rep below and from 2 MiB again.
  const CopyParams mid = gap_params(p, sizes, 1, 3);
  CHECK(mid.rep_stop.value == 524288);
  CHECK(mid.rep_resume.value == (2u << 20));
  CHECK(ladder_strategy(mid, 524287) == Strategy::kRepString);
  CHECK(ladder_strategy(mid, 524288) == Strategy::kAlignedLoop);
  CHECK(ladder_strategy(mid, (2u << 20) - 1) == Strategy::kAlignedLoop);
  CHECK(ladder_strategy(mid, 2u << 20) == Strategy::kRepString);
  // The loop keeps the gap's top sizes: rep again where p had it.
  const CopyParams top = gap_params(p, sizes, 2, sizes.size());
  CHECK(top.rep_stop.value == (1u << 20));
  CHECK(top.rep_resume.value == (4u << 20));
  // Only the gap's lengths change (every placement), and only those the loop gave back.
  for (std::uint64_t n : {262144ull, 524287ull, 524288ull, (1ull << 20) + 4096, (2ull << 20) - 1, 2ull << 20,
                          (4ull << 20) - 1, 4ull << 20})
    for (auto [s, d] : {std::pair<std::uint64_t, std::uint64_t>{0, 0}, {0, 1}, {2048, 4}}) {
      CAPTURE(n);
      CHECK(large_lengths_differ(p, mid, n, s, d) == ((n >= 262144 && n < 524288) || (n >= (2u << 20) && n < (4u << 20))));
    }
  // A verdict the ladder cannot hold closes the gap rather than inventing bounds.
  CHECK(gap_params(p, sizes, 4, 5).rep_stop.value == kNever);
  CHECK(gap_params(p, sizes, 2, 2).rep_stop.value == kNever);
}

TEST_CASE("the seeds workload has the seeds' points") {
  const Workload w = seeds_workload();
  CHECK(w.points.size() == 14 * 4 + 12 + 7 + 2);
  auto has = [&](std::uint64_t n, std::uint32_t s, std::uint32_t d) {
    return std::find(w.points.begin(), w.points.end(), Point{n, s, d}) != w.points.end();
  };
  CHECK(has(1, 0, 0));
  CHECK(has(4096, 4, 4));
  CHECK(has(15360, 0, 0));
  CHECK(has(262144, 0, 32));
  CHECK(has(64ull << 20, 4, 4));
  CHECK(size_label(64ull << 20) == "64M");
  CHECK(size_label(4096) == "4096");
}

// Regression: a missing file said "cannot read size distribution /tmp/nonexist.csv" with no reason,
// and a bad field's raw bytes went into the message unescaped (a newline split it).
TEST_CASE("distribution files: errors give the reason and escape the bytes they quote") {
  auto missing = load_distribution("/tmp/copysynth-no-such-dir/nonexist.csv");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().code == ErrorCode::kWisdomIo);  // an input file that cannot be read: exit 2
  CHECK(missing.error().message ==
        "cannot read size distribution /tmp/copysynth-no-such-dir/nonexist.csv: No such file or directory");
  auto dir = load_distribution("/tmp/");
  REQUIRE_FALSE(dir.ok());
  CHECK_MESSAGE(contains(dir.error().message, "/tmp/ is a directory, not a size distribution"), dir.error().message);

  {  // a file that is not a distribution: malformed input, the path named
    TempDir t;
    const std::string path = t.path + "/bad.csv";
    std::ofstream(path) << "0.5,x\n";
    auto bad = load_distribution(path);
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.error().code == ErrorCode::kWisdomMalformed);
    CHECK_MESSAGE(bad.error().message.rfind(path + ": field 1 (the probability of length 1) is \"x\"", 0) == 0,
                  bad.error().message);
  }
  {  // a user's file is named by its file name, .csv kept: not read as the shipped MemcpyGoogleA
    TempDir t;
    const std::string path = t.path + "/MemcpyGoogleA.csv";
    std::ofstream(path) << "0.5,0.5\n";
    auto mine = load_distribution(path);
    REQUIRE(mine.ok());
    CHECK(mine->name == "MemcpyGoogleA.csv");
    // A name ending in the cold mark (" (cold)") would come back from wisdom as another workload,
    // cold: refused for tuning, whatever it names (a file, a data directory's distribution, a
    // profile); a profile's selected program's name is part of it.
    for (const std::string& n : {t.path + "/dist (cold)", std::string("Foo (cold)"), "profile:" + t.path + "/run (cold)",
                                "profile:" + t.path + "/run.prof,program=a (cold)"}) {
      auto c = check_tuning_workload_name(n);
      REQUIRE_FALSE(c.ok());
      CHECK(c.error().code == ErrorCode::kInvalidArgument);
      CHECK_MESSAGE(contains(c.error().message, "the mark the wisdom gives a cold replay"), c.error().message);
      CHECK_MESSAGE(contains(c.error().message, "give --cold"), c.error().message);
    }
    CHECK(check_tuning_workload_name("profile:" + t.path + "/run (cold),program=a").ok());  // ends otherwise
    CHECK(check_tuning_workload_name("MemcpyGoogleA").ok());
  }
  auto unknown = load_distribution("NoSuchDistribution");
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().code == ErrorCode::kInvalidArgument);  // a name that names nothing: exit 1

  auto raw = parse_distribution("d", std::string("0.5,\377\376\0,0.1", 12));
  REQUIRE_FALSE(raw.ok());
  CHECK_MESSAGE(contains(raw.error().message, "field 1 (the probability of length 1) is \"\\377\\376\\000\", not a"),
                raw.error().message);
  auto nl = parse_distribution("d", "0.5,1\n2,0.1");
  REQUIRE_FALSE(nl.ok());
  CHECK(nl.error().message.find('\n') == std::string::npos);
  CHECK_MESSAGE(contains(nl.error().message, "is \"1\\0122\""), nl.error().message);
  auto q = parse_distribution("d", "0.5,\"x\\\"");
  REQUIRE_FALSE(q.ok());
  CHECK_MESSAGE(contains(q.error().message, "is \"\\042x\\134\\042\""), q.error().message);
  auto longer = parse_distribution("d", "0.5," + std::string(1000, 'z'));
  REQUIRE_FALSE(longer.ok());
  CHECK_MESSAGE(contains(longer.error().message, "... (936 more bytes)"), longer.error().message);
  CHECK(longer.error().message.size() < 400);
}

// Regression: an autotune installed under a prefix other than the configured one (cmake --install
// --prefix P) did not find P/share/copysynth/size-distributions once the source tree was gone.
TEST_CASE("data_dirs: $COPYSYNTH_DATA_DIR, then <exe dir>/../share/copysynth/size-distributions, then the compiled-in ones") {
  const char* old = std::getenv("COPYSYNTH_DATA_DIR");
  const std::string saved = old ? old : "";
  ::setenv("COPYSYNTH_DATA_DIR", "/opt/my-distributions", 1);
  const auto dirs = data_dirs();
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe");
  const std::string next_to_exe = (exe.parent_path().parent_path() / "share/copysynth/size-distributions").string();
  REQUIRE(dirs.size() >= 3);
  CHECK(dirs[0] == "/opt/my-distributions");
  CHECK(dirs[1] == next_to_exe);
  CHECK(std::find(dirs.begin() + 2, dirs.end(), next_to_exe) == dirs.end());  // once
  ::unsetenv("COPYSYNTH_DATA_DIR");
  CHECK(data_dirs().front() == next_to_exe);
  if (old) ::setenv("COPYSYNTH_DATA_DIR", saved.c_str(), 1);
}

TEST_CASE("the production mix is the mean of the eight distributions") {
  const auto mix = production_mix();
  REQUIRE(mix.has_value());
  double sum = 0, mean = 0;
  std::uint64_t longest = 0;
  for (const auto& name : production_distributions()) {
    auto d = load_distribution(name);
    REQUIRE(d.ok());
    longest = std::max(longest, d->max_size());
    mean += d->mean_size() / double(production_distributions().size());
  }
  for (double v : mix->p) sum += v;
  CHECK(sum == doctest::Approx(1.0));
  CHECK(mix->max_size() == longest);
  CHECK(mix->mean_size() == doctest::Approx(mean));
}

TEST_CASE("the misaligned workload: 4 KiB..512 KiB, dst 0, 1, 4, 15, 33 past src 0; 4, 33 past src 2048") {
  const Workload w = misaligned_workload();
  CHECK(w.name == "misaligned");
  CHECK(w.points.size() == 8 * 7);
  CHECK(w.points.front() == Point{4096, 0, 0});
  CHECK(w.points.back() == Point{512 * 1024, 2048, 33});
  // Per length: the aligned reference, four 4K-aliasing placements (0 < (dst - src) mod 4096 <
  // 64) and two misaligned ones that do not alias.
  for (std::uint64_t n = 4096; n <= 512 * 1024; n *= 2) {
    int ref = 0, aliasing = 0, apart = 0;
    for (const Point& p : w.points) {
      if (p.size != n) continue;
      const std::uint32_t d = (p.dst_align - p.src_align) % 4096;
      if (p.dst_align == 0 && p.src_align == 0) ++ref;
      else if (d != 0 && d < 64) ++aliasing;
      else if (p.dst_align % 64 != 0) ++apart;
    }
    CHECK(ref == 1);
    CHECK(aliasing == 4);
    CHECK(apart == 2);
  }
  // A fill has no src: the src-2048 rows would time the same as src 0.
  const Workload f = misaligned_workload(Operation::kFill);
  CHECK(f.points.size() == 8 * 5);
  CHECK(std::all_of(f.points.begin(), f.points.end(), [](const Point& p) { return p.src_align == 0; }));
  auto mw = make_workload("misaligned", Operation::kMemcpy);
  REQUIRE(mw.ok());
  CHECK(mw->points == w.points);
  CHECK_FALSE(make_workload("misaligned", Operation::kMemcpy, /*cold=*/true).ok());
  CHECK_FALSE(make_workload("misaligned", Operation::kClearPage).ok());
}

namespace {

/// A recorded profile of one process: memcpy of 24 (three times, at page offsets 4090 -> 100) and
/// 5000 bytes, one memset, in windows as the shim writes them.
Profile tiny_profile() {
  ProfileRecord r;
  r.program = "/usr/bin/prog";
  r.pid = 42;
  r.reason = "exit";
  r.cpu = "test-cpu";
  r.window_calls = 64;
  r.sample_period = 4096;
  OpProfile& m = r.ops[profile_index(Operation::kMemcpy)];
  m.calls = 4;
  m.bytes = 3 * 24 + 5000;
  m.sizes = {{24, 24, 3}, {4096, 5119, 1}};
  m.src_mod64[4090 % 64] = 3;
  m.src_mod64[0] = 1;
  m.dst_mod64[100 % 64] = 3;
  m.dst_mod64[0] = 1;
  m.distance[static_cast<int>(Distance::kFar)] = 3;
  m.distance[static_cast<int>(Distance::kAlias4k)] = 1;
  OpProfile& f = r.ops[profile_index(Operation::kFill)];
  f.calls = 1;
  f.bytes = 64;
  f.sizes = {{64, 64, 1}};
  f.dst_mod64[0] = 1;
  f.distance[0] = 1;
  ProfileWindow w1{1, 0, {}};
  w1.calls = {{Operation::kMemcpy, 24, 4090, 100, Distance::kFar},
              {Operation::kFill, 64, 0, 0, Distance::kFar},
              {Operation::kMemcpy, 5000, 0, 64, Distance::kAlias4k}};
  ProfileWindow w2{1, 4096, {}};
  w2.calls = {{Operation::kMemcpy, 24, 4090, 100, Distance::kFar}, {Operation::kMemcpy, 24, 4090, 100, Distance::kFar}};
  r.windows = {w1, w2};
  Profile p;
  p.path = "tiny.prof";
  p.records = {r};
  return p;
}

}  // namespace

TEST_CASE("profile workload: the program's lengths weigh the distribution, its windows are replayed in program order") {
  const Profile p = tiny_profile();
  auto w = profile_workload(p, Operation::kMemcpy, "profile:tiny.prof");
  REQUIRE(w.ok());
  CHECK(w->name == "profile:tiny.prof");
  REQUIRE(w->is_distribution());
  CHECK(w->distribution->max_size() == 5119);
  CHECK(w->distribution->p[24] == doctest::Approx(0.75));
  CHECK(w->distribution->p[4096] == doctest::Approx(0.25 / 1024));
  CHECK(w->distribution->p[5119] == doctest::Approx(0.25 / 1024));
  CHECK(w->distribution->p[23] == 0);
  // The memset of window 1 is not memcpy's; each window keeps its memcpy calls in order.
  REQUIRE(w->recorded.size() == 2);
  std::vector<std::vector<std::uint32_t>> sizes;
  for (const auto& win : w->recorded) {
    sizes.emplace_back();
    for (const Call& c : win) sizes.back().push_back(c.size);
  }
  CHECK(std::find(sizes.begin(), sizes.end(), std::vector<std::uint32_t>{24, 5000}) != sizes.end());
  CHECK(std::find(sizes.begin(), sizes.end(), std::vector<std::uint32_t>{24, 24}) != sizes.end());
  CHECK(w->note.find("4 memcpy calls, 4 of them in 2 windows") != std::string::npos);
  // Four calls are few: the warning (said with --quiet too) says a tuning for them says little.
  CHECK(w->warning.find("only 4 calls: a tuning for so few says little") != std::string::npos);
  CHECK(w->note.find("only ") == std::string::npos);
  {
    Profile many = p;
    many.records[0].ops[profile_index(Operation::kMemcpy)].calls = kFewProfileCalls;
    auto m = profile_workload(many, Operation::kMemcpy, "profile:tiny.prof");
    REQUIRE(m.ok());
    CHECK(m->warning.empty());
  }
  // The replay strings whole windows together: every call at its recorded page offsets, every
  // 5000 preceded by a 24 (its window's first call), about 3 of 4 calls of 24 bytes.
  const auto calls = replay_calls(*w, 1000, 7);
  REQUIRE(calls.size() >= 1000);
  CHECK(calls.size() <= 1001);
  std::size_t n24 = 0;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    if (calls[i].size == 24) {
      ++n24;
      CHECK(calls[i].src_offset == 4090);
      CHECK(calls[i].dst_offset == 100);
      CHECK(calls[i].src_delta == 0);  // far: separate buffers
    } else {
      REQUIRE(calls[i].size == 5000);
      CHECK(calls[i].dst_offset == 64);
      // alias4k with no overlap: its source 64 + 2 x 4096 bytes behind it, in its buffer (the
      // nearest distance with those low 12 bits that 5000 bytes do not overlap).
      CHECK(calls[i].src_delta == 64 + 2 * 4096);
      REQUIRE(i > 0);
      CHECK(calls[i - 1].size == 24);
    }
  }
  CHECK(double(n24) / double(calls.size()) == doctest::Approx(0.75).epsilon(0.1));
  CHECK(replay_calls(*w, 1000, 7).size() == calls.size());  // seeded: the same sequence again
  bool differs = false;
  const auto other = replay_calls(*w, 1000, 8);
  for (std::size_t i = 0; i < std::min(other.size(), calls.size()); ++i) differs |= other[i].size != calls[i].size;
  CHECK(differs);  // another seed, another order of the windows
  // memset: the fill workload of the same file.
  auto f = profile_workload(p, Operation::kFill, "profile:tiny.prof");
  REQUIRE(f.ok());
  CHECK(f->distribution->max_size() == 64);
  REQUIRE(f->recorded.size() == 1);
}

TEST_CASE("profile workload: the distribution reaches the longest call of a window, which sizes the replay's buffers") {
  // A window's call in no bucket of the histogram (a signal's dump between counting and sampling,
  // or an edited record): the replay once ran past its buffers (a crash).
  Profile p = tiny_profile();
  p.records[0].windows[1].calls.push_back({Operation::kMemcpy, 9000, 0, 0, Distance::kFar});
  auto w = profile_workload(p, Operation::kMemcpy, "x");
  REQUIRE(w.ok());
  REQUIRE(w->distribution->max_size() >= 9000);
  CHECK(w->distribution->p[9000] == 0.0);  // weighs nothing: the histogram has no such call
  double sum = 0;
  for (double v : w->distribution->p) sum += v;
  CHECK(sum == doctest::Approx(1.0));
  const auto calls = replay_calls(*w, 256, 1);
  CHECK(std::any_of(calls.begin(), calls.end(), [](const Call& c) { return c.size == 9000; }));
}

TEST_CASE("profile workload: an overlapping memmove is replayed inside one buffer, either way") {
  Profile p = tiny_profile();
  OpProfile& m = p.records[0].ops[profile_index(Operation::kMemmove)];
  m.calls = 2;
  m.bytes = 200;
  m.sizes = {{100, 100, 2}};
  m.src_mod64[0] = 2;
  m.dst_mod64[8] = 1;
  m.dst_mod64[56] = 1;
  m.distance[static_cast<int>(Distance::kOverlap)] = 2;
  p.records[0].windows[0].calls.push_back({Operation::kMemmove, 100, 0, 8, Distance::kOverlap});      // dst = src + 8
  p.records[0].windows[0].calls.push_back({Operation::kMemmove, 100, 1024, 1016, Distance::kOverlap});  // dst = src - 8
  auto w = profile_workload(p, Operation::kMemmove, "x");
  REQUIRE(w.ok());
  REQUIRE(w->recorded.size() == 1);
  REQUIRE(w->recorded[0].size() == 2);
  CHECK(w->recorded[0][0].src_delta == 8);
  CHECK(w->recorded[0][1].src_delta == -8);
  // Replayed: the source that far from the destination, in the destination's buffer, and the
  // replay runs (memmove overlapping both ways) with each entry.
  ReplayBuffers rb(w->distribution->max_size(), false);
  const Call& c = w->recorded[0][1];
  CHECK(rb.src(0, c) == rb.dst(0, c) + 8);
  const auto calls = replay_calls(*w, 64, 1);
  const auto m2 = replay(Operation::kMemmove, {system_routine(Operation::kMemmove)}, calls, rb);
  REQUIRE(m2.size() == 1);
  CHECK(m2[0].ns_per_call > 0);
}

namespace {
// A fill that records each call's destination and length (replay() below).
std::vector<std::pair<std::uintptr_t, std::size_t>> g_fill_calls;
void* recording_fill(void* d, int c, std::size_t n) {
  g_fill_calls.push_back({reinterpret_cast<std::uintptr_t>(d), n});
  return std::memset(d, c, n);
}
}  // namespace

TEST_CASE("replay: fill read back makes the same calls as the throughput replay, and sets the bytes") {
  auto w = make_workload("MemcpyGoogleQ", Operation::kFill);
  REQUIRE(w.ok());
  const auto calls = replay_calls(*w, 256, 7);
  ReplayBuffers rb(w->distribution->max_size(), false);
  const auto entry = reinterpret_cast<const void*>(&recording_fill);
  TimingOptions t;
  t.rounds = 1;
  t.warmup_rounds = 1;
  g_fill_calls.clear();
  (void)replay(Operation::kFill, {entry}, calls, rb, t);
  const auto plain = g_fill_calls;
  REQUIRE(plain.size() == 2 * calls.size());  // one warm-up pass, one timed
  t.use = Use::kThenRead;
  g_fill_calls.clear();
  // Every call's window cleared first (hot: one window, dst_offset < 4096), so the bytes below
  // are the read-back replay's own.
  std::memset(rb.dst(0), 0, w->distribution->max_size() + 4096);
  const auto m = replay(Operation::kFill, {entry}, calls, rb, t);
  CHECK(g_fill_calls == plain);  // the load's opaque zero moves no destination
  CHECK(m[0].ns_per_call > 0);
  const Call& last = calls.back();
  const std::uint8_t* d = rb.dst(calls.size() - 1) + last.dst_offset;
  for (std::uint32_t i = 0; i < last.size; ++i) REQUIRE(d[i] == 0x5A);
}

TEST_CASE("profile workload: errors say what the profile has and what to do") {
  const Profile p = tiny_profile();
  auto mm = profile_workload(p, Operation::kMemmove, "profile:tiny.prof");
  REQUIRE_FALSE(mm.ok());
  CHECK(mm.error().message.find("no memmove call") != std::string::npos);
  CHECK(mm.error().message.find("--op memcpy,fill") != std::string::npos);
  CHECK_FALSE(profile_workload(p, Operation::kClearPage, "x").ok());
  // Counted calls without a window: a record cut short.
  Profile cut = p;
  cut.records[0].windows.clear();
  auto c = profile_workload(cut, Operation::kMemcpy, "x");
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().message.find("none in a recorded window") != std::string::npos);
  // Calls above 16 MiB are left out of the replay and said.
  Profile big = p;
  big.records[0].ops[0].sizes.push_back({std::uint64_t{32} << 20, (std::uint64_t{40} << 20) - 1, 2});
  big.records[0].ops[0].calls += 2;
  big.records[0].windows[0].calls.push_back({Operation::kMemcpy, std::uint64_t{32} << 20, 0, 0, Distance::kFar});
  auto b = profile_workload(big, Operation::kMemcpy, "x");
  REQUIRE(b.ok());
  CHECK(b->distribution->max_size() == 5119);
  CHECK(b->note.find("2 calls above 16 MiB left out") != std::string::npos);
  for (const auto& win : b->recorded)
    for (const Call& k : win) CHECK(k.size <= kMaxReplaySize);
  // By name: an empty path and a missing file.
  auto e = make_workload("profile:", Operation::kMemcpy);
  REQUIRE_FALSE(e.ok());
  CHECK(e.error().message.find("COPYSYNTH_PROFILE") != std::string::npos);
  auto m = make_workload("profile:/nonexistent/x.prof", Operation::kMemcpy);
  REQUIRE_FALSE(m.ok());
  CHECK(m.error().message.find("/nonexistent/x.prof") != std::string::npos);
}

TEST_CASE("profile workload: every operation a profile lacks is named at once, before any workload is made") {
  const Profile p = tiny_profile();  // memcpy and memset calls
  auto all = profile_workloads(p, {Operation::kMemcpy, Operation::kMemmove, Operation::kFill, Operation::kClearPage},
                               "profile:tiny.prof");
  REQUIRE_FALSE(all.ok());
  CHECK(all.error().code == ErrorCode::kInvalidArgument);
  CHECK_MESSAGE(all.error().message == "tiny.prof: clear_page is not recorded in profiles (memcpy, memmove and memset "
                                       "are), and the program made no memmove call; tune what it has: --op memcpy,fill",
                all.error().message);
  auto page = profile_workloads(p, {Operation::kMemcpy, Operation::kClearPage}, "x");
  REQUIRE_FALSE(page.ok());
  CHECK_MESSAGE(page.error().message == "tiny.prof: clear_page is not recorded in profiles (memcpy, memmove and memset "
                                        "are); tune what it has: --op memcpy,fill",
                page.error().message);
  Profile memset_only = p;
  memset_only.records[0].ops[profile_index(Operation::kMemcpy)] = OpProfile{};
  auto two = profile_workloads(memset_only, {Operation::kMemcpy, Operation::kMemmove, Operation::kFill}, "x");
  REQUIRE_FALSE(two.ok());
  CHECK_MESSAGE(contains(two.error().message, "the program made no memcpy or memmove call; tune what it has: --op fill"),
                two.error().message);
  // What it has: one workload per operation, in the order asked, cold when asked.
  auto ok = profile_workloads(p, {Operation::kFill, Operation::kMemcpy}, "profile:tiny.prof", /*cold=*/true);
  REQUIRE_MESSAGE(ok.ok(), ok.error().message);
  REQUIRE(ok->size() == 2);
  CHECK((*ok)[0].name == "profile:tiny.prof (cold)");
  CHECK((*ok)[0].distribution->max_size() == 64);
  CHECK((*ok)[1].distribution->max_size() == 5119);
  CHECK(((*ok)[0].cold && (*ok)[1].cold));
}

TEST_CASE("make_workload: a profile named without profile: is told to add it") {
  TempDir dir;
  const std::string prof = dir.path + "/prog.prof";
  write_file(prof, profile_record_json(tiny_profile().records[0]) + "\n");
  auto r = make_workload(prof, Operation::kMemcpy);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ErrorCode::kInvalidArgument);
  CHECK_MESSAGE(contains(r.error().message, prof + " is a profile (COPYSYNTH_PROFILE); use --workload profile:" + prof),
                r.error().message);
  CHECK(make_workload("profile:" + prof, Operation::kMemcpy).ok());
  // A file here that is no distribution's name and no .csv: both ways of giving it are said.
  const std::string cwd = std::filesystem::current_path().string();
  std::filesystem::current_path(dir.path);
  write_file(dir.path + "/notes.txt", "");
  auto n = make_workload("notes.txt", Operation::kMemcpy);
  std::filesystem::current_path(cwd);
  REQUIRE_FALSE(n.ok());
  CHECK_MESSAGE(contains(n.error().message, "notes.txt is a file here: give a profile (COPYSYNTH_PROFILE) as --workload "
                                            "profile:notes.txt, a size distribution as ./notes.txt"),
                n.error().message);
}

namespace {

/// A profile a shell script leaves: the program's record (tiny_profile's, 5 calls), then two of
/// /usr/bin/bash (5 calls each), as "two.prof".
Profile two_program_profile() {
  Profile p = tiny_profile();
  p.path = "two.prof";
  ProfileRecord bash = p.records[0];
  bash.program = "/usr/bin/bash";
  bash.pid = 43;
  p.records.push_back(bash);
  bash.pid = 44;
  p.records.push_back(bash);
  return p;
}

}  // namespace

TEST_CASE("profile workload: profile_programs counts each program's records and calls, most calls first") {
  const auto programs = profile_programs(two_program_profile());
  REQUIRE(programs.size() == 2);
  CHECK(programs[0].path == "/usr/bin/bash");  // after prog in the file, but more calls
  CHECK(programs[0].records == 2);
  CHECK(programs[0].calls == 10);
  CHECK(programs[1].path == "/usr/bin/prog");
  CHECK(programs[1].records == 1);
  CHECK(programs[1].calls == 5);  // 4 memcpy + 1 memset
  CHECK(profile_programs(tiny_profile()).size() == 1);
}

TEST_CASE("profile workload: select_program keeps one program's records, by last component or full path") {
  const Profile p = two_program_profile();
  auto by_base = select_program(p, "prog");
  REQUIRE_MESSAGE(by_base.ok(), by_base.error().message);
  CHECK(by_base->path == "two.prof");
  REQUIRE(by_base->records.size() == 1);
  CHECK(by_base->records[0].program == "/usr/bin/prog");
  auto by_path = select_program(p, "/usr/bin/bash");
  REQUIRE_MESSAGE(by_path.ok(), by_path.error().message);
  REQUIRE(by_path->records.size() == 2);
  CHECK(by_path->records[0].pid == 43);  // file order
  CHECK(by_path->records[1].pid == 44);
  CHECK(select_program(p, "bash").ok());
  // The selection is what is tuned: prog's 4 memcpy calls, not the 12 of the file.
  CHECK(p.total(Operation::kMemcpy).calls == 12);
  auto w = profile_workload(*by_base, Operation::kMemcpy, "profile:two.prof,program=prog");
  REQUIRE_MESSAGE(w.ok(), w.error().message);
  CHECK(w->note.find("1 record, 4 memcpy calls") != std::string::npos);
  CHECK(w->note.find("programs") == std::string::npos);  // one program: nothing to say
  // Neither the whole path nor its last component: no match (no prefixes, no substrings).
  for (const char* partial : {"bin/prog", "pro", "/usr/bin", "prog ", "/prog"}) {
    CAPTURE(partial);
    CHECK_FALSE(select_program(p, partial).ok());
  }
}

TEST_CASE("profile workload: no record of the program selected: the error lists what the file has") {
  const Profile p = two_program_profile();
  auto none = select_program(p, "python3");
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().code == ErrorCode::kInvalidArgument);
  CHECK_MESSAGE(none.error().message ==
                    "profile two.prof: no record of program \"python3\"; it has /usr/bin/bash (2 records, 10 "
                    "calls), /usr/bin/prog (1 record, 5 calls); select one with profile:two.prof,program=NAME",
                none.error().message);
  auto empty = select_program(p, "");
  REQUIRE_FALSE(empty.ok());
  CHECK(empty.error().code == ErrorCode::kInvalidArgument);
  CHECK_MESSAGE(contains(empty.error().message, "empty; it has /usr/bin/bash (2 records, 10 calls), /usr/bin/prog"),
                empty.error().message);
}

TEST_CASE("profile workload: records of several programs are tuned together, and the note says how to select one") {
  auto w = profile_workload(two_program_profile(), Operation::kMemcpy, "profile:two.prof");
  REQUIRE_MESSAGE(w.ok(), w.error().message);
  CHECK(w->note.find("3 records, 12 memcpy calls") != std::string::npos);
  CHECK_MESSAGE(contains(w->note, "; records of 2 programs, tuned for together: /usr/bin/bash (2 records, 10 calls), "
                                  "/usr/bin/prog (1 record, 5 calls); select one with profile:two.prof,program=NAME"),
                w->note);
}

TEST_CASE("profile workload: parse_profile_spec splits FILE,program=NAME unless the whole text names a file") {
  TempDir dir;
  auto plain = parse_profile_spec(dir.path + "/x.prof");
  REQUIRE(plain.ok());
  CHECK(plain->path == dir.path + "/x.prof");
  CHECK_FALSE(plain->program.has_value());
  auto sel = parse_profile_spec(dir.path + "/x.prof,program=sqlite3");
  REQUIRE(sel.ok());
  CHECK(sel->path == dir.path + "/x.prof");
  CHECK(sel->program == std::optional<std::string>("sqlite3"));
  auto full = parse_profile_spec("x.prof,program=/usr/bin/sqlite3");
  REQUIRE(full.ok());
  CHECK(full->program == std::optional<std::string>("/usr/bin/sqlite3"));
  auto last = parse_profile_spec("a,program=b,program=c");  // split at the last one
  REQUIRE(last.ok());
  CHECK(last->path == "a,program=b");
  CHECK(last->program == std::optional<std::string>("c"));
  // A file of that very name is the file, selector and all.
  write_file(dir.path + "/odd,program=prog", "");
  auto odd = parse_profile_spec(dir.path + "/odd,program=prog");
  REQUIRE(odd.ok());
  CHECK(odd->path == dir.path + "/odd,program=prog");
  CHECK_FALSE(odd->program.has_value());
  // Errors: an empty NAME, no FILE.
  auto empty = parse_profile_spec("x.prof,program=");
  REQUIRE_FALSE(empty.ok());
  CHECK(empty.error().code == ErrorCode::kInvalidArgument);
  CHECK_MESSAGE(contains(empty.error().message, "the program to select is empty"), empty.error().message);
  CHECK_FALSE(parse_profile_spec(",program=prog").ok());
  CHECK_FALSE(parse_profile_spec("").ok());
  // A misspelt or repeated selector after an existing file is named as such, not as a missing file.
  write_file(dir.path + "/x.prof", "");
  for (const char* tail : {",prog=xz", ",program=xz,program=sort", ",program", ",", ",,"}) {
    auto typo = parse_profile_spec(dir.path + "/x.prof" + std::string(tail));
    REQUIRE_FALSE(typo.ok());
    CHECK(typo.error().code == ErrorCode::kInvalidArgument);
    CHECK_MESSAGE(contains(typo.error().message, "is not the one selector a profile takes, once"), typo.error().message);
  }
  // A file whose name holds a comma, with a trailing comma: the file is named, not its first part.
  write_file(dir.path + "/a,b.prof", "");
  auto comma = parse_profile_spec(dir.path + "/a,b.prof,");
  REQUIRE_FALSE(comma.ok());
  CHECK_MESSAGE(contains(comma.error().message, dir.path + "/a,b.prof is a file"), comma.error().message);
}

TEST_CASE("workload names in wisdom: a .csv's and a profile's file made absolute, '.' dropped, '..' kept") {
  const std::string cwd = std::filesystem::current_path().string();
  CHECK(absolute_path("x/./y.prof") == cwd + "/x/y.prof");
  CHECK(absolute_path("/a/./b") == "/a/b");
  CHECK(absolute_path("/a//b/") == "/a/b");  // repeated slashes dropped, as the shim names its profile
  CHECK(absolute_path("/") == "/");
  CHECK(absolute_path("lnk/../x.prof") == cwd + "/lnk/../x.prof");  // a link's parent is not the lexical one
  CHECK(absolute_workload_name("profile:./run.prof,program=python3") == "profile:" + cwd + "/run.prof,program=python3");
  CHECK(absolute_workload_name("profile:run.prof") == "profile:" + cwd + "/run.prof");
  CHECK(absolute_workload_name("./d/x.csv (cold)") == cwd + "/d/x.csv (cold)");
  CHECK(absolute_workload_name("MemcpyGoogleA (cold)") == "MemcpyGoogleA (cold)");
  CHECK(absolute_workload_name("seeds") == "seeds");
  // The name a tuned entry keeps: the file's absolute path (the workload shows a .csv by its file name).
  auto a = make_workload("MemcpyGoogleA", Operation::kMemcpy, true);
  REQUIRE(a.ok());
  CHECK(wisdom_workload_name("MemcpyGoogleA", *a) == "MemcpyGoogleA (cold)");
  Workload csv;
  csv.name = "x";
  csv.cold = true;
  CHECK(wisdom_workload_name("sub/x.csv", csv) == cwd + "/sub/x.csv (cold)");
  CHECK(wisdom_workload_name("profile:p.prof", csv) == "profile:" + cwd + "/p.prof (cold)");
}

TEST_CASE("profile workload: make_workload reads profile:FILE,program=NAME, and a file name with a comma whole") {
  TempDir dir;
  const Profile two = two_program_profile();
  std::string text;
  for (const ProfileRecord& r : two.records) text += profile_record_json(r) + "\n";
  const std::string prof = dir.path + "/run,1.prof";  // a comma in the file's name
  write_file(prof, text);
  auto all = make_workload("profile:" + prof, Operation::kMemcpy);
  REQUIRE_MESSAGE(all.ok(), all.error().message);
  CHECK(all->name == "profile:" + prof);
  CHECK_MESSAGE(contains(all->note, "records of 2 programs"), all->note);
  auto one = make_workload("profile:" + prof + ",program=prog", Operation::kMemcpy, /*cold=*/true);
  REQUIRE_MESSAGE(one.ok(), one.error().message);
  CHECK(one->name == "profile:" + prof + ",program=prog (cold)");  // the name the wisdom keeps
  CHECK(one->cold);
  CHECK_MESSAGE(contains(one->note, "1 record, 4 memcpy calls"), one->note);
  auto bash = make_workload("profile:" + prof + ",program=/usr/bin/bash", Operation::kFill);
  REQUIRE_MESSAGE(bash.ok(), bash.error().message);
  CHECK_MESSAGE(contains(bash->note, "2 records, 2 memset calls"), bash->note);
  auto none = make_workload("profile:" + prof + ",program=nosuch", Operation::kMemcpy);
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().code == ErrorCode::kInvalidArgument);
  CHECK_MESSAGE(contains(none.error().message, "no record of program \"nosuch\"; it has /usr/bin/bash (2 records, "
                                               "10 calls), /usr/bin/prog (1 record, 5 calls); select one with profile:" +
                                                   prof + ",program=NAME"),
                none.error().message);
  CHECK_FALSE(make_workload("profile:" + prof + ",program=", Operation::kMemcpy).ok());
}

TEST_CASE("format_profile_summary: records, totals, alignment, distance and a size-class table per operation") {
  const std::string s = format_profile_summary(tiny_profile());
  CHECK(s.find("profile.records=1\n") != std::string::npos);
  CHECK(s.find("record[0].program=\"/usr/bin/prog\"\n") != std::string::npos);
  CHECK(s.find("record[0].calls_in_windows=5\n") != std::string::npos);
  CHECK(s.find("memcpy.calls=4\n") != std::string::npos);
  CHECK(s.find("memcpy.bytes=5072\n") != std::string::npos);
  CHECK(s.find("memcpy.mean_bytes=1268.0\n") != std::string::npos);
  CHECK(s.find("memcpy.dst_aligned_64_percent=25.0\n") != std::string::npos);
  CHECK(s.find("memcpy.distance.alias4k_percent=25.0\n") != std::string::npos);
  CHECK(s.find("memmove.calls=0\n") != std::string::npos);
  CHECK(s.find("memmove:") == std::string::npos);  // no table without calls
  CHECK(s.find("memset.calls=1\n") != std::string::npos);
  // 16-31: 3 of 4 calls, 72 of about 4680 bytes (the bucket counted at its middle); 4096-8191 the rest.
  CHECK(std::regex_search(s, std::regex(R"(\n  16-31 +75\.0 +1\.5 +75\.0\n)")));
  CHECK(std::regex_search(s, std::regex(R"(\n  4096-8191 +25\.0 +98\.5 +100\.0\n)")));
  CHECK(std::regex_search(s, std::regex(R"(\n  64-127 +100\.0 +100\.0 +100\.0\n)")));
  CHECK(s.find("profile.programs=1\nprogram[0].path=\"/usr/bin/prog\"\nprogram[0].records=1\nprogram[0].calls=5\n") !=
        std::string::npos);
}

TEST_CASE("format_profile_summary: each program's path, records and calls, most calls first") {
  const std::string s = format_profile_summary(two_program_profile());
  CHECK_MESSAGE(contains(s, "profile.records=3\nprofile.programs=2\n"
                            "program[0].path=\"/usr/bin/bash\"\nprogram[0].records=2\nprogram[0].calls=10\n"
                            "program[1].path=\"/usr/bin/prog\"\nprogram[1].records=1\nprogram[1].calls=5\n"),
                s);
  CHECK(contains(s, "record[2].program=\"/usr/bin/bash\"\n"));
  CHECK(contains(s, "memcpy.calls=12\n"));
}

TEST_CASE("compare: every use pattern, cache state and solo run gives a measurement per routine") {
  BenchBuffers buf(1 << 20);
  for (Use use : {Use::kCopy, Use::kThenRead, Use::kThenWrite})
    for (CacheState st : {CacheState::kAsLeft, CacheState::kWarm, CacheState::kCold})
      for (bool solo : {false, true}) {
        CAPTURE(use_name(use));
        CAPTURE(cache_state_name(st));
        CAPTURE(solo);
        TimingOptions t;
        t.rounds = 3;
        t.warmup_rounds = 1;
        t.min_calls = 3;
        t.use = use;
        t.state = st;
        t.solo = solo;
        const auto m = compare({system_memcpy(), system_memcpy()}, buf, 65536, 0, 1, t);
        REQUIRE(m.size() == 2);
        for (const auto& x : m) {
          CHECK(x.ticks_per_call > 0);
          CHECK(x.samples == 3);
        }
      }
  // copy+write really stores to the source: its first line no longer holds the fill pattern.
  // (The fill pattern's first 8 bytes are 7, 138, 13, ...: no call count stored there equals them.)
  BenchBuffers fresh(8192);
  std::uint64_t before, after;
  std::memcpy(&before, fresh.src(), 8);
  TimingOptions t;
  t.rounds = 3;
  t.use = Use::kThenWrite;
  compare({system_memcpy()}, fresh, 4096, 0, 0, t);
  std::memcpy(&after, fresh.src(), 8);
  CHECK(after != before);
  CHECK(after < (std::uint64_t{1} << 40));  // a call count, not the pattern
  CHECK(use_name(Use::kThenRead) == "copy+read");
  CHECK(cache_state_name(CacheState::kCold) == "cold");
}

namespace {
// What prime_branches() and compare() call a routine with: lengths, where, and which way.
struct PrimeLog {
  const BenchBuffers* buf = nullptr;
  std::set<std::uint64_t> lengths;
  unsigned calls = 0;
  bool outside = false, src_crosses = false, dst_crosses = false, forward = false, backward = false;
  void clear() { *this = PrimeLog{buf}; }
};
PrimeLog g_prime;
bool crosses_page(const void* p, std::uint64_t n) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  return n > 0 && (a >> 12) != ((a + n - 1) >> 12);
}
bool inside(const std::uint8_t* p, std::uint64_t n, const std::uint8_t* base) {
  return p >= base && p + n <= base + g_prime.buf->bytes();
}
void* logged_copy(void* d, const void* s, std::size_t n) {
  auto* dp = static_cast<std::uint8_t*>(d);
  const auto* sp = static_cast<const std::uint8_t*>(s);
  ++g_prime.calls;
  g_prime.lengths.insert(n);
  const bool s_src = inside(sp, n, g_prime.buf->src()), s_dst = inside(sp, n, g_prime.buf->dst());
  if (!inside(dp, n, g_prime.buf->dst()) || !(s_src || s_dst)) g_prime.outside = true;
  if (n > 0 && dp < sp + n && sp < dp + n) (dp > sp ? g_prime.backward : g_prime.forward) = true;  // overlapping
  g_prime.src_crosses |= s_src && crosses_page(sp, n);
  g_prime.dst_crosses |= crosses_page(dp, n);
  return std::memmove(d, s, n);
}
void* logged_fill(void* d, int c, std::size_t n) {
  auto* dp = static_cast<std::uint8_t*>(d);
  ++g_prime.calls;
  g_prime.lengths.insert(n);
  if (!inside(dp, n, g_prime.buf->dst())) g_prime.outside = true;
  g_prime.dst_crosses |= crosses_page(dp, n);
  return std::memset(d, c, n);
}
}  // namespace

TEST_CASE("prime_branches: the lengths and placements a program's calls take, inside the buffers; compare() primes once") {
  BenchBuffers buf(1 << 16);
  g_prime.buf = &buf;
  const auto* copy = reinterpret_cast<const void*>(&logged_copy);
  const auto* fill = reinterpret_cast<const void*>(&logged_fill);
  std::vector<std::uint8_t> src_before(buf.src(), buf.src() + buf.bytes());
  for (const Operation op : {Operation::kMemcpy, Operation::kMemmove, Operation::kFill}) {
    CAPTURE(name_of(op));
    g_prime.clear();
    prime_branches(op, op == Operation::kFill ? fill : copy, buf);
    CHECK(g_prime.calls > 300);
    CHECK_FALSE(g_prime.outside);
    for (std::uint64_t n : {0, 1, 63, 64, 65, 128, 129, 256, 4096}) CHECK(g_prime.lengths.count(n) == 1);
    CHECK(g_prime.dst_crosses);
    CHECK(g_prime.src_crosses == (op != Operation::kFill));
    CHECK(g_prime.forward == (op == Operation::kMemmove));  // overlapping calls for memmove only
    CHECK(g_prime.backward == (op == Operation::kMemmove));
    CHECK(std::equal(src_before.begin(), src_before.end(), buf.src()));  // the source is never written
  }
  g_prime.clear();
  prime_branches(Operation::kClearPage, copy, buf);
  CHECK(g_prime.calls == 0);
  // Buffers too small for some placements: those calls are left out, the others made.
  for (std::size_t bytes : {std::size_t{256}, std::size_t{8192}}) {
    CAPTURE(bytes);
    BenchBuffers small(bytes);
    g_prime.buf = &small;
    g_prime.clear();
    prime_branches(Operation::kMemmove, copy, small);
    CHECK_FALSE(g_prime.outside);
    CHECK((g_prime.calls > 0) == (bytes > 4096));
  }

  // compare(): the first call on this CPU primes each entry in buffers of its own, whatever the
  // caller's are (a 256-byte one here): every length, across page ends; a later call does not.
  // Pinned: the priming is per CPU.
  ThreadPin pin;
  BenchBuffers tiny(256);
  TimingOptions t;
  t.rounds = 2;
  t.warmup_rounds = 1;
  g_prime.clear();
  g_prime.buf = &tiny;
  compare(Operation::kFill, {fill}, tiny, 100, 0, 0, t);
  CHECK(g_prime.lengths.count(0) == 1);
  CHECK(g_prime.lengths.count(4096) == 1);
  CHECK(g_prime.lengths.count(100) == 1);
  CHECK(g_prime.dst_crosses);
  if (pin.ok()) {
    g_prime.clear();
    compare(Operation::kFill, {fill}, tiny, 100, 0, 0, t);
    CHECK(g_prime.lengths == std::set<std::uint64_t>{100});
    // The same address as another operation is primed again, with that operation's calls.
    g_prime.clear();
    compare(Operation::kMemmove, {copy}, tiny, 100, 0, 0, t);
    CHECK(g_prime.lengths.count(4096) == 1);
    CHECK(g_prime.backward);
  }
}

TEST_CASE("report tables: other routines are columns but not peers; vs aligned; the targets") {
  // Hand-made tables (no timing): columns glibc, dpdk (peers), other.json (not a peer), tuned.
  ReportTable t;
  t.columns = {"glibc", "dpdk", "other.json", "tuned"};
  t.peers = 2;
  t.rows.push_back({"64 0/0", {64, 0, 0}, {10, 20, 1000, 30}});
  t.rows.push_back({"80 0/0", {80, 0, 0}, {40, 20, 1, 38}});
  t.rows.push_back({"64M 0/0", {64ull << 20, 0, 0}, {9, 10, 1, 9.8}});
  CHECK(t.best_peer(t.rows[0]) == "dpdk");  // other.json's 1000 is not a peer
  CHECK(t.vs_best(t.rows[0]) == doctest::Approx(1.5));
  CHECK(t.best_peer(t.rows[1]) == "glibc");
  CHECK(t.vs_best(t.rows[1]) == doctest::Approx(0.95));
  CHECK(t.vs_glibc(t.rows[0]) == doctest::Approx(3.0));
  const std::string text = t.format();
  CHECK(text.find("vs other.json") != std::string::npos);
  CHECK(text.find("vs aligned") == std::string::npos);
  // A name longer than a column (a --versus file's) widens every column: names and values stay
  // apart by a space at least, and each value sits under its name.
  ReportTable wide = t;
  wide.columns[2] = "a-rather-long-tuning-run.json";
  const std::string wt = wide.format();
  CHECK(wt.find("dpdk a-rather-long-tuning-run.json") != std::string::npos);  // (was "dpdka-rather-...")
  const std::size_t header_end = wt.find("a-rather-long-tuning-run.json") + std::string("a-rather-long-tuning-run.json").size();
  const std::size_t row = wt.find('\n') + 1;
  const std::size_t value_end = wt.find("1000.00", row) + std::string("1000.00").size();
  CHECK(value_end - row == header_end);  // right-aligned under the name

  ReportTable m;
  m.columns = {"glibc", "tuned"};
  m.peers = 1;
  m.aligned_ratio = true;
  m.rows.push_back({"4096 0/0", {4096, 0, 0}, {100, 200}});
  m.rows.push_back({"4096 0/1", {4096, 0, 1}, {90, 180}});
  m.rows.push_back({"4096 0/33", {4096, 0, 33}, {150, 120}});
  CHECK(m.vs_aligned(m.rows[1]) == doctest::Approx(0.9));
  CHECK(m.vs_aligned(m.rows[2]) == doctest::Approx(0.6));
  CHECK(m.format().find("vs aligned") != std::string::npos);

  ReportTable d;
  d.per_call = true;
  d.columns = {"glibc", "dpdk", "tuned"};
  d.peers = 2;
  d.rows.push_back({"A", {}, {10, 12, 8}});
  d.rows.push_back({"B", {}, {10, 12, 9}});

  const std::string targets = format_targets(&t, &m, &d, 12.5);
  // 80 0/0 is 0.95x glibc: below 0.97.
  CHECK(targets.find("MISSED  every seeds' point >= 0.97x the best peer: 1 of 3 points below: 80 0/0 0.95x (best peer glibc)") !=
        std::string::npos);
  // 64 MiB: 9.8 vs dpdk 10 = 0.98x (enough for the per-point target, not for this one).
  CHECK(targets.find("MISSED  64 MiB 0/0 >= 1.0x the best peer (0.98x) and >= 90% of the read bandwidth (78%)") !=
        std::string::npos);
  CHECK(targets.find("reads stream at 12.50 GB/s") != std::string::npos);
  // Misaligned: 0/33 loses to glibc (0.80x) and to its aligned copy (0.60x); 0/1 is fine. The
  // table has no src offset (as a fill's): one peer line.
  CHECK(targets.find("MISSED  4 KiB-512 KiB, dst misaligned: >= 1.0x the best peer: 1 of 2 points below: 4096 0/33 0.80x") !=
        std::string::npos);
  CHECK(targets.find("aliasing") == std::string::npos);
  CHECK(targets.find("MISSED  4 KiB-512 KiB, dst misaligned: >= 0.85x the tuned routine's aligned copy: 1 points below: "
                     "4096 0/33 0.60x") != std::string::npos);
  {
    // With src offsets the peer target is judged apart for 4K-aliasing rows and the others, and a
    // 2048/4 row's aligned reference is 0/0 (there is no 2048/0 row).
    ReportTable m2 = m;
    m2.rows.push_back({"4096 2048/4", {4096, 2048, 4}, {100, 190}});   // 1.90x glibc, 0.95x aligned
    m2.rows.push_back({"4096 2048/33", {4096, 2048, 33}, {250, 150}}); // 0.60x glibc
    CHECK(m2.vs_aligned(m2.rows[3]) == doctest::Approx(0.95));
    // A same-src dst-0 row, where the table has one, is the reference before 0/0.
    ReportTable m3 = m;
    m3.rows.push_back({"4096 4/4", {4096, 4, 4}, {100, 120}});
    m3.rows.push_back({"4096 4/0", {4096, 4, 0}, {100, 160}});
    CHECK(m3.vs_aligned(m3.rows[3]) == doctest::Approx(0.75));
    const std::string t2 = format_targets(nullptr, &m2, nullptr, 0);
    CHECK(t2.find("MISSED  4 KiB-512 KiB, dst misaligned, 4K-aliasing (dst 1-63 bytes past src mod 4096): >= 1.0x the "
                  "best peer: 1 of 2 points below: 4096 0/33 0.80x") != std::string::npos);
    CHECK(t2.find("MISSED  4 KiB-512 KiB, dst misaligned, not aliasing: >= 1.0x the best peer: 1 of 2 points below: "
                  "4096 2048/33 0.60x") != std::string::npos);
    // Measured against the routine's own aligned copy: no peer named.
    CHECK(t2.find("aligned copy: 2 points below: 4096 0/33 0.60x, 4096 2048/33 0.75x\n") != std::string::npos);
  }
  // Distributions: glibc/tuned = 1.25 and 1.11: geometric mean 1.18x, met; dpdk 1.5 and 1.33.
  CHECK(targets.find("met     production distributions: >= 1.05x the best of glibc in ns per call (geometric mean over 2): "
                     "1.18x, 1.41x vs dpdk") != std::string::npos);
  // With an aocl column the distribution target is against the better of glibc and aocl, and
  // the read-back rows are a target of their own.
  ReportTable d2;
  d2.per_call = true;
  d2.columns = {"glibc", "aocl", "tuned"};
  d2.peers = 2;
  d2.rows.push_back({"A", {}, {10, 8, 8}});
  d2.rows.push_back({"A read back", {}, {20, 30, 10}, Use::kThenRead});
  const std::string t2 = format_targets(nullptr, nullptr, &d2, 0);
  CHECK(t2.find("MISSED  production distributions: >= 1.05x the best of glibc and aocl in ns per call (geometric mean over 1): 1.00x") !=
        std::string::npos);
  CHECK(t2.find("met     production distributions, each call reading back the last: >= 1.05x the best of glibc and aocl "
                "in ns per call (geometric mean over 1): 2.00x") != std::string::npos);
  // The use table: warm rows from 256 KiB to 16 MiB against the best of glibc and aocl; cold
  // rows are a check line; 64 KiB and 64 MiB are outside the target.
  ReportTable u;
  u.labelled = true;
  u.columns = {"glibc", "rep_movsb", "aocl", "tuned"};
  u.peers = 3;
  u.rows.push_back({"64K copy warm", {64 << 10, 0, 0}, {10, 99, 10, 5}, Use::kCopy, CacheState::kWarm});
  u.rows.push_back({"1M copy+read warm", {1 << 20, 0, 0}, {10, 99, 12, 11}, Use::kThenRead, CacheState::kWarm});
  u.rows.push_back({"1M copy warm", {1 << 20, 0, 0}, {10, 99, 9, 10}, Use::kCopy, CacheState::kWarm});
  u.rows.push_back({"1M copy cold", {1 << 20, 0, 0}, {10, 1, 9, 20}, Use::kCopy, CacheState::kCold});
  // report_uses() times 16 MiB one page past it (timed_length): still a target row; 64 MiB + 4 KiB is not.
  u.rows.push_back({"16M+4K copy warm", {timed_length(16 << 20), 0, 0}, {10, 99, 10, 11}, Use::kCopy, CacheState::kWarm});
  u.rows.push_back({"64M+4K copy warm", {timed_length(64 << 20), 0, 0}, {10, 99, 10, 1}, Use::kCopy, CacheState::kWarm});
  const std::string t3 = format_targets(nullptr, nullptr, nullptr, 0, &u);
  CHECK(t3.find("MISSED  256 KiB-16 MiB, the copy alone, read and overwritten (warm): >= 1.0x the best of glibc and aocl: "
                "1 of 3 below: 1M copy+read warm 0.92x (aocl)") != std::string::npos);
  CHECK(t3.find("check   256 KiB-16 MiB, cold (not a target): lowest 2.00x over 1 cases") != std::string::npos);
  CHECK(u.format().find("1M copy+read warm") != std::string::npos);
  // A null table skips its targets.
  const std::string only_d = format_targets(nullptr, nullptr, &d, 0);
  CHECK(only_d.find("seeds") == std::string::npos);
  CHECK(only_d.find("production distributions") != std::string::npos);
  // Cold rows of the production distributions: a check line of their own, outside the target.
  ReportTable dc = d2;
  dc.rows.push_back({"A (cold)", {}, {40, 40, 50}, Use::kCopy, CacheState::kCold});
  const std::string tc = format_targets(nullptr, nullptr, &dc, 0);
  CHECK(tc.find("MISSED  production distributions: >= 1.05x the best of glibc and aocl in ns per call (geometric mean over 1): 1.00x") !=
        std::string::npos);
  CHECK(tc.find("check   production distributions, cold (not a target): tuned vs the best of glibc and aocl in ns per call "
                "(geometric mean over 1): 0.80x; 1 below 1.0x: A (cold) 0.80x (glibc)") != std::string::npos);
  CHECK(t2.find("cold") == std::string::npos);
  // The table's summary: the warm rows apart from the cold ones; a long label widens the column.
  dc.rows.push_back({"profile:/a/path/longer/than/the/twenty-six/columns.prof", {}, {10, 10, 5}});
  const std::string fc = dc.format();
  CHECK(fc.find("geometric mean over 3 workloads (warm)") != std::string::npos);
  CHECK(fc.find("geometric mean over 1 workloads (cold): tuned vs best peer 0.800x") != std::string::npos);
  CHECK(fc.find("profile:/a/path/longer/than/the/twenty-six/columns.prof ") != std::string::npos);
  CHECK(fc.rfind("Workload (ns/call)" + std::string(std::string("profile:/a/path/longer/than/the/twenty-six/columns.prof").size() + 1 - 18, ' ') + "        glibc", 0) == 0);
  // The workload's own replay (a profile): the same figures as a check line, not a target.
  ReportTable dw = d2;
  dw.workload_replay = true;
  const std::string tw = format_targets(nullptr, nullptr, &dw, 0);
  CHECK(tw.find("production distributions") == std::string::npos);
  CHECK(tw.find("MISSED") == std::string::npos);
  CHECK(tw.find(std::string("check   the workload's calls (not a target): tuned vs the best of glibc and aocl in ns per call 1.00x") +
                (have_dpdk_peer() ? "\n" : ", dpdk not built\n")) != std::string::npos);
  CHECK(tw.find("check   the workload's calls, each call reading back the last (not a target): tuned vs the best of "
                "glibc and aocl in ns per call 2.00x") != std::string::npos);
}

TEST_CASE("a tiny tune returns a verified routine and a table row per point") {
  Workload w{"tiny", {{16, 0, 0}, {100, 1, 3}, {4096, 0, 4}, {20000, 0, 0}}};
  TuneOptions opt;
  opt.quick = true;
  opt.budget_seconds = 2;
  opt.verify = fast_options();
  int lines = 0;
  opt.progress = [&](const std::string&) { ++lines; };
  auto r = tune(w, opt);
  REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().message));
  CHECK(r->points.size() == w.points.size());
  CHECK(r->stats.built >= 1);
  CHECK(r->stats.rejected == 0);
  CHECK(lines > 0);
  CHECK(verify_routine(r->routine, fast_options()).ok());
  // The search moves a crossing masked block back (mask_shift) with every masked class it builds.
  const CopyParams& won = r->routine.plan().params;
  CHECK(won.mask_shift.value == (won.mask_max.value != 0));
  for (std::size_t i = 0; i < w.points.size(); ++i) {
    CHECK(r->points[i].size == w.points[i].size);
    CHECK(r->points[i].baseline_gbps > 0);
    CHECK(r->points[i].tuned_gbps > 0);
  }
  const std::string table = format_table(r->points);
  CHECK(table.find("Len") != std::string::npos);
  CHECK(table.find("Src/Dst align") != std::string::npos);
  CHECK(table.find("system memcpy GB/s") != std::string::npos);
  CHECK(table.find("tuned GB/s") != std::string::npos);
  CHECK(table.find("speedup") != std::string::npos);
}

TEST_CASE("format_patch_table: the seeds' layout, old / new in ns per call, speedup = old / new") {
  MeasuredPoint a;
  a.size = 4096;
  a.src_align = 0;
  a.dst_align = 4;
  a.baseline_ns = 120.0;
  a.tuned_ns = 60.0;
  a.baseline_gbps = 4096 / 120.0;
  a.tuned_gbps = 4096 / 60.0;
  MeasuredPoint b = a;
  b.size = std::uint64_t{64} << 20;
  b.src_align = 33;
  b.dst_align = 1;
  b.baseline_ns = 2.0e6;
  b.tuned_ns = 4.0e6;
  b.baseline_gbps = double(b.size) / b.baseline_ns;
  b.tuned_gbps = double(b.size) / b.tuned_ns;
  const std::string t = format_patch_table({a, b}, "memcpy on a test CPU");
  std::istringstream in(t);
  std::string caption, header, row1, row2, last;
  std::getline(in, caption);
  std::getline(in, header);
  std::getline(in, row1);
  std::getline(in, row2);
  std::getline(in, last);
  CHECK(caption == "memcpy on a test CPU");
  CHECK(std::regex_match(header, std::regex(R"( *Len  Src/Dst align +old +new  speedup)")));
  CHECK(std::regex_match(row1, std::regex(R"( *4096 +0/4 +120\.0 +60\.00 +2\.00x)")));
  CHECK(std::regex_match(row2, std::regex(R"( *64M +33/1 +2000000 +4000000 +0\.50x)")));
  CHECK(last == "geometric-mean speedup over 2 points: 1.00x");
  // Columns line up: every row as long as the header.
  CHECK(row1.size() == header.size());
  CHECK(row2.size() == header.size());
  // No caption: the header comes first.
  CHECK(format_patch_table({a}).rfind("   Len", 0) == 0);
  // memset's table has no source: its alignment column is the destination's.
  const std::string f = format_patch_table({a}, {}, /*fill=*/true);
  CHECK_MESSAGE(std::regex_search(f, std::regex(R"(^ *Len +Dst align +old +new  speedup\n *4096 +4 +120\.0)")), f);
}

// Regression: tune() (and so tune_and_install) took a budget of 0, a negative one, NaN or 1e12;
// only the C API refused them.
TEST_CASE("tune refuses a budget outside 1..86400 s, NaN and infinities, before it runs anything") {
  Workload w{"tiny", {{16, 0, 0}}};
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const std::pair<double, const char*> bad[] = {{0, "got 0"},     {-5, "got -5"},       {0.5, "got 0.5"},
                                                {nan, "got nan"}, {inf, "got inf"},     {-inf, "got -inf"},
                                                {1e12, "got 1e+12"}, {86400.5, "got 86400.5"}};
  for (auto [budget, got] : bad) {
    CAPTURE(budget);
    TuneOptions opt;
    opt.budget_seconds = budget;
    int lines = 0;
    opt.progress = [&](const std::string&) { ++lines; };
    auto r = tune(w, opt);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == ErrorCode::kInvalidArgument);
    CHECK_MESSAGE(r.error().message == std::string("budget_seconds must be between 1 and 86400, ") + got, r.error().message);
    CHECK(lines == 0);  // nothing ran
    CHECK(check_budget(budget).error().message == r.error().message);
  }
  for (double good : {1.0, 2.5, 86400.0}) CHECK(check_budget(good).ok());
}

TEST_CASE("an empty workload is an error, not a crash") {
  TuneOptions opt;
  auto r = tune(Workload{"empty", {}}, opt);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ErrorCode::kInvalidArgument);
}

TEST_CASE("hardware counters: a reason when unavailable, counts when available") {
  PerfCounters pmu;
  pmu.start();
  volatile std::uint64_t x = 0;
  for (int i = 0; i < 100000; ++i) x = x + static_cast<std::uint64_t>(i);
  const CounterValues v = pmu.stop(1000);
  if (pmu.available()) {
    CHECK(pmu.unavailable().empty());
    CHECK(v.cycles > 0);
    CHECK(v.instructions > 0);
  } else {
    COPYSYNTH_SKIP_PART("no hardware counters here (" + pmu.unavailable() + "): only their absence is checked");
    CHECK_FALSE(pmu.unavailable().empty());
    CHECK(v.cycles == 0);
    CHECK(v.ipc() == 0);
  }
}

TEST_CASE("the report compares the tuned routine with every peer and plots the speedup") {
  CopyParams p;
  p.vector_width = CpuInfo::host().features().max_vector_bytes() >= 32 ? 32 : 16;
  auto plan = make_plan(p, CpuInfo::host().features());
  REQUIRE(plan.ok());
  auto r = Routine::build(*plan);
  REQUIRE(r.ok());
  ReportOptions ro;
  ro.rounds = 3;
  ro.passes = 1;
  const Workload w{"tiny", {{64, 0, 0}, {4096, 0, 4}, {4096, 4, 4}, {20000, 0, 0}}};
  // Another routine timed beside the peers, as `--versus` does.
  auto other = Routine::build(*plan);
  REQUIRE(other.ok());
  ro.others.push_back({"other.json", &*other});
  const ReportTable t = report_points(*r, w, ro);
  REQUIRE(t.rows.size() == w.points.size());
  REQUIRE(t.columns.size() >= 3);
  CHECK(t.columns.front() == "glibc");
  CHECK(t.columns.back() == "tuned");
  CHECK(t.columns[t.columns.size() - 2] == "other.json");
  CHECK(t.peers == t.columns.size() - 2);
  for (const auto& row : t.rows) {
    REQUIRE(row.value.size() == t.columns.size());
    for (double v : row.value) CHECK(v > 0);
    CHECK(t.vs_glibc(row) > 0);
    CHECK(t.vs_best(row) <= t.vs_glibc(row) + 1e-12);  // glibc is one of the peers
  }
  const std::string text = t.format();
  CHECK(text.find("vs best peer") != std::string::npos);
  CHECK(text.find("geometric mean over 4 points") != std::string::npos);

  const ReportTable d = report_distributions(*r, {"MemcpyGoogleQ", "NoSuchDistribution"}, ro, /*with_cold=*/true);
  REQUIRE(d.rows.size() == 3);  // the unknown one is skipped, not fatal; throughput, read back, cold
  CHECK(d.per_call);
  CHECK(d.rows[0].label == "MemcpyGoogleQ");
  CHECK(d.rows[1].label == "MemcpyGoogleQ read back");
  CHECK(d.rows[1].use == Use::kThenRead);
  CHECK(d.rows[1].state != CacheState::kCold);
  CHECK(d.rows[2].label == "MemcpyGoogleQ (cold)");
  CHECK(d.rows[2].use == Use::kCopy);
  CHECK(d.rows[2].state == CacheState::kCold);
  for (const auto& row : d.rows)
    for (double v : row.value) CHECK(v > 0);

  // A program's profile (`--report --workload profile:FILE`): its recorded calls, replayed.
  auto pw = profile_workload(tiny_profile(), Operation::kMemcpy, "profile:tiny.prof");
  REQUIRE(pw.ok());
  const ReportTable pr = report_replays(*r, {*pw, w}, ro);  // the point workload is skipped
  REQUIRE(pr.rows.size() == 2);
  CHECK(pr.rows[0].label == "profile:tiny.prof");
  CHECK(pr.rows[1].label == "profile:tiny.prof read back");
  for (const auto& row : pr.rows)
    for (double v : row.value) CHECK(v > 0);
  ReportOptions quiet = ro;
  quiet.others.clear();
  std::string printed;
  auto rep = run_report(*r, *pw, quiet, [&](const std::string& text) { printed += text; });
  REQUIRE(rep.ok());
  REQUIRE(rep->distributions);
  CHECK(rep->distributions->workload_replay);
  CHECK_FALSE(rep->points);
  CHECK(printed.find("recorded calls, replayed window by window in program order") != std::string::npos);
  CHECK(printed.find("check   the workload's calls (not a target)") != std::string::npos);

  const std::string svg = "copysynth-test-plot.svg";
  std::string err;
  REQUIRE(write_speedup_svg(t, "test", svg, &err));
  std::ifstream in(svg);
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(content.rfind("<svg", 0) == 0);
  CHECK(content.find("src/dst 0/4") != std::string::npos);
  CHECK(content.find("polyline") != std::string::npos);
  std::remove(svg.c_str());
  CHECK_FALSE(write_speedup_svg(t, "test", "/nonexistent-dir/x.svg", &err));
  CHECK(read_bandwidth_gbps(std::size_t{8} << 20) > 0);
}

// ==================================================================================== plot ==

namespace {

/// A report of glibc and tuned with the given tuned / glibc speedups at 16 B .. 512 KiB, for two
/// alignment pairs (0/0 and 0/4, the second at `spread` times the first's speedup).
ReportTable speedup_table(double lo, double hi) {
  ReportTable t;
  t.columns = {"glibc", "tuned"};
  t.peers = 1;
  int i = 0;
  for (std::uint64_t n = 16; n <= 512 * 1024; n *= 4, ++i) {
    const double f = std::pow(hi / lo, double(i) / 7.0);  // lo .. hi over the 8 sizes
    for (std::uint32_t dst : {0u, 4u}) {
      ReportRow r;
      r.label = std::to_string(n);
      r.point = {n, 0, dst};
      r.value = {10.0, 10.0 * lo * f * (dst ? 0.8 : 1.0)};
      t.rows.push_back(r);
    }
  }
  return t;
}

/// The y-axis labels of a speedup plot: {y position, label} from `<text ... text-anchor="end">Nx</text>`.
std::vector<std::pair<double, std::string>> y_labels(const std::string& svg) {
  std::vector<std::pair<double, std::string>> out;
  const std::regex re("<text x=\"[0-9.]+\" y=\"([-0-9.]+)\" text-anchor=\"end\">([0-9.]+)x</text>");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), re); it != std::sregex_iterator(); ++it)
    out.push_back({std::stod((*it)[1].str()), (*it)[2].str()});
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("report_sections: which tables run for an operation and a workload") {
  const ReportSections seeds = report_sections(Operation::kMemcpy, seeds_workload(Operation::kMemcpy));
  CHECK(seeds.points);
  CHECK(seeds.misaligned);
  CHECK(seeds.uses);
  CHECK(seeds.distributions == production_distributions());
  // The misaligned matrix as the workload: its own table, no second copy of it, no use table.
  const ReportSections mis = report_sections(Operation::kMemmove, misaligned_workload(Operation::kMemmove));
  CHECK(mis.points);
  CHECK_FALSE(mis.misaligned);
  CHECK_FALSE(mis.uses);
  CHECK(mis.distributions == production_distributions());
  // fill: the distributions' lengths as memset calls (its search's mix); clear_page: one page,
  // nothing misaligned, no uses, no distributions.
  const ReportSections fill = report_sections(Operation::kFill, seeds_workload(Operation::kFill));
  CHECK(fill.misaligned);
  CHECK(fill.uses);
  CHECK(fill.distributions == production_distributions());
  const ReportSections page = report_sections(Operation::kClearPage, seeds_workload(Operation::kClearPage));
  CHECK(page.points);
  CHECK_FALSE(page.misaligned);
  CHECK_FALSE(page.uses);
  CHECK(page.distributions.empty());
  CHECK_FALSE(seeds.replay);
  CHECK_FALSE(page.replay);
  // A distribution workload: no point table, no production distributions, its own replay.
  auto d = make_workload("MemcpyGoogleQ", Operation::kMemcpy, false);
  REQUIRE(d.ok());
  const ReportSections dist = report_sections(Operation::kMemcpy, *d);
  CHECK_FALSE(dist.points);
  CHECK_FALSE(dist.misaligned);
  CHECK_FALSE(dist.uses);
  CHECK(dist.distributions.empty());
  CHECK(dist.replay);
  // A program's profile, for fill too (its memset calls): the recorded calls are the replay.
  auto pf = profile_workload(tiny_profile(), Operation::kFill, "profile:tiny.prof");
  REQUIRE(pf.ok());
  const ReportSections prof = report_sections(Operation::kFill, *pf);
  CHECK_FALSE(prof.points);
  CHECK(prof.distributions.empty());
  CHECK(prof.replay);
}

TEST_CASE("report_svg_path: the first operation's plot at the path, the others' beside it") {
  CHECK(report_svg_path("speedup.svg", Operation::kMemcpy, 0) == "speedup.svg");
  CHECK(report_svg_path("speedup.svg", Operation::kFill, 1) == "speedup-fill.svg");
  CHECK(report_svg_path("out/plot.v2.svg", Operation::kClearPage, 3) == "out/plot.v2-clear_page.svg");
  CHECK(report_svg_path("plot", Operation::kMemmove, 1) == "plot-memmove");
  CHECK(report_svg_path("a.dir/plot", Operation::kMemmove, 1) == "a.dir/plot-memmove");
  CHECK(report_svg_path("", Operation::kMemmove, 1).empty());
}

TEST_CASE("run_report prints each section as it is measured, then the targets; a plot it cannot write is an error") {
  CopyParams p;
  p.operation = Operation::kClearPage;
  p.vector_width = 16;
  p.prefetch_distance = 0;
  auto plan = make_plan(p, CpuInfo::host().features());
  REQUIRE_MESSAGE(plan.ok(), (plan.ok() ? std::string() : plan.error().message));
  auto r = Routine::build(*plan);
  REQUIRE(r.ok());
  ReportOptions ro;
  ro.rounds = 2;
  ro.passes = 1;
  const Workload w = seeds_workload(Operation::kClearPage);
  std::vector<std::string> printed;
  auto res = run_report(*r, w, ro, [&](const std::string& text) { printed.push_back(text); });
  REQUIRE_MESSAGE(res.ok(), (res.ok() ? std::string() : res.error().message));
  REQUIRE(res->points.has_value());
  CHECK_FALSE(res->misaligned.has_value());
  CHECK_FALSE(res->uses.has_value());
  CHECK_FALSE(res->distributions.has_value());
  CHECK(res->read_gbps == 0);  // no 64 MiB row
  REQUIRE(printed.size() == 3);  // the peers, the table, then the targets
  CHECK(printed[0].rfind("peers (each timed in the same rounds as the tuned routine):\n", 0) == 0);
  for (const Peer& peer : peers(Operation::kClearPage)) CHECK(contains(printed[0], "  " + peer.name + ": " + peer.description + "\n"));
  // Where each routine's code lies from the timing code (for clear_page the glibc column is a
  // wrapper in this program; the tuned routine is in JIT memory), named with a distance and its
  // unit, in the C locale's digits.
  CHECK(std::regex_search(printed[0], std::regex("code placement, [^\n]*: glibc [0-9.]+ (B|KiB|MiB|GiB|TiB),[^\n]* tuned [0-9.]+ (B|KiB|MiB|GiB|TiB)\n")));
  CHECK(printed[1] == "seeds matrix, GB/s (higher is better):\n" + res->points->format());
  CHECK(contains(printed[2], "performance targets"));
  CHECK(contains(printed[2], "note: AOCL-LibMem read no cache sizes") == !aocl_peer_caveat().empty());

  TempDir dir;
  ro.svg_path = dir.path + "/page.svg";
  ro.svg_title = "clear_page here";
  auto plotted = run_report(*r, w, ro, {});
  REQUIRE(plotted.ok());
  CHECK(contains(read_text(ro.svg_path), "clear_page here"));
  ro.svg_path = dir.path + "/no/such/dir/page.svg";
  auto bad = run_report(*r, w, ro, {});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().code == ErrorCode::kInvalidArgument);
}

TEST_CASE("check_asm_destination: never the wisdom file, never a file copysynth did not write") {
  TempDir dir;
  const std::string wisdom = dir.path + "/best.json", S = dir.path + "/memcpy.S";
  test::write_file(wisdom, "{}");
  CHECK(check_asm_destination(S, wisdom).ok());  // a new file
  const Status self = check_asm_destination(wisdom, wisdom);
  REQUIRE_FALSE(self.ok());
  CHECK(contains(self.error().message, "is the wisdom file --from reads"));
  test::write_file(S, "my notes\n");
  const Status theirs = check_asm_destination(S, wisdom);
  REQUIRE_FALSE(theirs.ok());
  CHECK(contains(theirs.error().message, "not overwriting it"));
  test::write_file(S, "/* memcpy_copysynth: written by copysynth 0.1 */\n");
  CHECK(check_asm_destination(S, wisdom).ok());  // its own earlier file
  CHECK_FALSE(check_asm_destination(dir.path, wisdom).ok());
}

TEST_CASE("asm_entry: the operation asked for, else memcpy, else the only entry") {
  CopyParams c;
  c.vector_width = 16;
  CopyParams f = c;
  f.operation = Operation::kFill;
  const Wisdom both = test::wisdom_of(CpuInfo::host(), {test::entry_for(c), test::entry_for(f)});
  const Wisdom fill_only = test::wisdom_of(CpuInfo::host(), {test::entry_for(f)});
  CHECK((*asm_entry(both, std::nullopt, "w.json"))->operation == Operation::kMemcpy);
  CHECK((*asm_entry(both, Operation::kFill, "w.json"))->operation == Operation::kFill);
  CHECK((*asm_entry(fill_only, std::nullopt, "w.json"))->operation == Operation::kFill);
  auto none = asm_entry(fill_only, Operation::kMemmove, "w.json");
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().code == ErrorCode::kWisdomMismatch);
  CHECK_MESSAGE(contains(none.error().message, "w.json has no memmove entry (it holds fill)"), none.error().message);
}

TEST_CASE("write_asm_file: verified before anything is written; what ran is in the header") {
  TempDir dir;
  const IsaFeatures& host = CpuInfo::host().features();
  CopyParams p;
  p.vector_width = host.max_vector_bytes() >= 32 ? 32 : 16;
  const Wisdom w = test::wisdom_of(CpuInfo::host(), {test::entry_for(p)});
  AsmFileOptions o;
  o.path = dir.path + "/memcpy.S";
  o.wisdom_path = dir.path + "/best.json";
  o.command = "autotune --from best.json --emit-asm memcpy.S";
  o.verify = test::light_options(1 << 16);
  std::vector<std::string> said;
  o.progress = [&](const std::string& s) { said.push_back(s); };

  SUBCASE("this host runs it: the conformance suite, then the file") {
    auto r = write_asm_file(w, w.entries[0], o);
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? std::string() : r.error().message));
    CHECK(r->executed);
    CHECK(r->symbol == "memcpy_copysynth");
    CHECK(r->code_bytes == assemble(w.entries[0].plan)->size());
    CHECK(r->warnings.empty());
    const std::string text = read_text(o.path);
    CHECK(contains(text.substr(0, text.find('\n')), "written by copysynth"));
    CHECK(contains(text, "Verified: the static checks for "));
    CHECK(contains(text, "; the conformance suite "));
    CHECK(contains(text, "Command: " + o.command));
    CHECK(contains(said.front(), "verifying the memcpy routine on this host before writing it"));
  }
  SUBCASE("a host that cannot run it: written after the static checks alone, and said so") {
    o.target = IsaLevel::kAVX2;
    CopyParams q;
    q.vector_width = 32;
    const Wisdom w2 = test::wisdom_of(CpuInfo::host(), {test::entry_for(q, IsaFeatures::for_level(IsaLevel::kAVX2))});
    auto r = write_asm_file(w2, w2.entries[0], o, CpuInfo::host().capped(IsaLevel::kSSE2));
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? std::string() : r.error().message));
    CHECK_FALSE(r->executed);
    CHECK(r->target == IsaLevel::kAVX2);
    CHECK(contains(read_text(o.path), "not executed"));
    // A host capped by --isa is named as capped, not as a CPU without the features (the test
    // hosts have AVX2 at least).
    CHECK(contains(read_text(o.path), "capped by --isa to"));
  }
  SUBCASE("the linux flavour with vector registers: written, with a warning") {
    o.flavor = "linux";
    auto r = write_asm_file(w, w.entries[0], o);
    REQUIRE(r.ok());
    REQUIRE(r->warnings.size() == 1);
    CHECK(contains(r->warnings[0], "kernel_fpu_begin()"));
  }
  SUBCASE("refused, nothing written") {
    WisdomEntry e = w.entries[0];
    ErrorCode want = ErrorCode::kInvalidArgument;
    std::string why;
    SUBCASE("a target below what the plan needs") {
      o.target = IsaLevel::kSSE2;
      e.plan.params.vector_width = 32;
      e = test::entry_for(e.plan.params, IsaFeatures::for_level(IsaLevel::kAVX2));
      want = ErrorCode::kUnsupportedIsa;
      why = "cannot run on --target sse2";
    }
    SUBCASE("code other than the one tuned") {
      e.code_hash ^= 1;
      want = ErrorCode::kWisdomMismatch;
      why = "emits other code";
    }
    SUBCASE("a symbol GNU as does not take") {
      o.symbol = "$x";
      why = "is not a symbol GNU as takes";
    }
    auto r = write_asm_file(w, e, o);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == want);
    CHECK_MESSAGE(contains(r.error().message, why), r.error().message);
    CHECK_FALSE(std::filesystem::exists(o.path));
  }
}

TEST_CASE("plot: a speedup axis from 0.3x to 30x is logarithmic, labelled 0.5 1 2 5 10 20, labels apart") {
  TempDir dir;
  const std::string svg = dir.path + "/wide.svg";
  std::string err;
  REQUIRE(write_speedup_svg(speedup_table(0.3, 30), "0.3x .. 30x", svg, &err));
  std::ifstream in(svg);
  const std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto labels = y_labels(content);
  INFO(content.substr(0, 3000));
  REQUIRE(labels.size() >= 3);
  CHECK(labels.size() <= 12);
  for (std::size_t i = 1; i < labels.size(); ++i)  // 12 px text: at least 20 px from one label to the next
    CHECK_MESSAGE(labels[i].first - labels[i - 1].first >= 20, labels[i - 1].second << " and " << labels[i].second);
  std::map<std::string, double> y;
  for (const auto& [pos, text] : labels) y[text] = pos;
  // Top to bottom (SVG y grows downwards): 20 10 5 2 1 0.5.
  std::vector<std::string> texts;
  for (auto it = labels.begin(); it != labels.end(); ++it) texts.push_back(it->second);
  CHECK(texts == std::vector<std::string>{"20", "10", "5", "2", "1", "0.5"});
  // Log scale: 1 -> 2 is as far as 5 -> 10 and as 0.5 -> 1; 1 -> 10 is a decade.
  REQUIRE(y.count("1"));
  REQUIRE(y.count("2"));
  REQUIRE(y.count("5"));
  REQUIRE(y.count("10"));
  REQUIRE(y.count("0.5"));
  CHECK(y["1"] - y["2"] == doctest::Approx(y["5"] - y["10"]).epsilon(0.01));
  CHECK(y["0.5"] - y["1"] == doctest::Approx(y["1"] - y["2"]).epsilon(0.01));
  // Every series is drawn; the numbers are SVG numbers (a '.' decimal point, no ',').
  CHECK(content.find("src/dst 0/0") != std::string::npos);
  CHECK(content.find("src/dst 0/4") != std::string::npos);
}

TEST_CASE("plot: log_ticks keeps labels apart at any range and length, at round values, with 1 in range") {
  // The report's plot: 410 px for 0.25x .. 30x gives the 1-2-5 sequence.
  std::vector<std::string> got;
  for (const auto& t : log_ticks(0.25, 30, 410, 40)) got.push_back(t.label);
  CHECK(got == std::vector<std::string>{"0.5", "1", "2", "5", "10", "20"});
  // Narrow: finer round values.
  got.clear();
  for (const auto& t : log_ticks(0.8, 1.3, 410, 40)) got.push_back(t.label);
  CHECK(got == std::vector<std::string>{"0.8", "1", "1.2"});
  // Very wide and short: every other power of ten or fewer.
  got.clear();
  for (const auto& t : log_ticks(1e-3, 1e5, 150, 40)) got.push_back(t.label);
  CHECK(got == std::vector<std::string>{"0.001", "1", "1000"});
  // Properties over a grid of ranges and lengths.
  for (double lo : {0.01, 0.05, 0.2, 0.5, 0.9, 0.99})
    for (double hi : {1.01, 1.1, 1.6, 3.0, 30.0, 1000.0, 1e5})
      for (double len : {100.0, 200.0, 410.0, 800.0}) {
        const auto ticks = log_ticks(lo, hi, len, 40);
        CAPTURE(lo);
        CAPTURE(hi);
        CAPTURE(len);
        bool has_one = false;
        for (std::size_t i = 0; i < ticks.size(); ++i) {
          const LogTick& t = ticks[i];
          CHECK(t.value >= lo * (1 - 1e-9));
          CHECK(t.value <= hi * (1 + 1e-9));
          CHECK(t.offset == doctest::Approx(std::log(t.value / lo) / std::log(hi / lo) * len));
          CHECK(std::stod(t.label) == doctest::Approx(t.value));
          CHECK(t.label.size() <= 6);  // "0.001", "1000", "1.2": no 0.30000000000000004
          if (i > 0) CHECK(t.offset - ticks[i - 1].offset >= 40);
          has_one = has_one || t.value == 1.0;
        }
        CHECK(has_one);  // the glibc line is always labelled
        if (hi / lo >= 1.6 && len >= 200) CHECK(ticks.size() >= 2);
      }
  CHECK(log_ticks(0, 1, 100, 10).empty());
  CHECK(log_ticks(2, 1, 100, 10).empty());
  // The axis range holds 1 and the points, padded, and spans at least a factor of 1.6.
  for (auto [a, b] : {std::pair{0.3, 30.0}, {1.02, 1.05}, {0.5, 0.9}, {2.0, 3.0}}) {
    const auto [lo, hi] = speedup_axis_range(a, b);
    CHECK(lo < std::min(a, 1.0));
    CHECK(hi > std::max(b, 1.0));
    CHECK(hi / lo >= 1.6 - 1e-9);
  }
}

// ================================================================================== locale ==

namespace {

/// Switches this program to a decimal-comma locale (de_DE.UTF-8), as a German user's program
/// does with setlocale(LC_ALL, ""). When the system has not generated it, it is built with
/// localedef (Debian `locales`, tools/install-deps.sh --test) into a temporary directory named by
/// LOCPATH, which needs no root. Returns false with the reason when neither works.
bool set_decimal_comma_locale(const std::string& dir, std::string& why) {
  auto comma = [] { return std::strcmp(localeconv()->decimal_point, ",") == 0; };
  if (std::setlocale(LC_ALL, "de_DE.UTF-8") && comma()) return true;
  const std::string cmd = "localedef -i de_DE -f UTF-8 '" + dir + "/de_DE.UTF-8' >'" + dir + "/localedef.log' 2>&1";
  const int rc = std::system(cmd.c_str());
  // localedef exits 1 for warnings with a usable locale, 4 for errors.
  setenv("LOCPATH", dir.c_str(), 1);
  if (std::setlocale(LC_ALL, "de_DE.UTF-8") && comma()) return true;
  unsetenv("LOCPATH");
  std::setlocale(LC_ALL, "C");
  why = "no de_DE.UTF-8 locale and `" + cmd + "` did not make one (status " + std::to_string(rc) +
        "; install the Debian package `locales`: tools/install-deps.sh --test)";
  return false;
}

/// Back to the "C" locale at scope exit, whatever the test did.
struct RestoreCLocale {
  ~RestoreCLocale() {
    std::setlocale(LC_ALL, "C");
    unsetenv("LOCPATH");
  }
};

}  // namespace

TEST_CASE("locale: under setlocale(LC_ALL, \"de_DE.UTF-8\") numbers are read and written with '.'") {
  TempDir dir;
  RestoreCLocale restore;
  std::string why;
  if (!set_decimal_comma_locale(dir.path, why)) {
    COPYSYNTH_SKIP_PART(why);
    return;
  }
  char probe[32];
  std::snprintf(probe, sizeof probe, "%.2f", 1.5);
  REQUIRE(std::string(probe) == "1,50");  // the locale is in force: plain printf writes a comma

  // Reading: a distribution file's probabilities, and a shipped distribution by name (what
  // tune_and_install(opt, "MemcpyGoogleA") and the production-mix replay load).
  auto d = parse_distribution("t", "0.25,0.5,0.00655738,0.24344262\n");
  REQUIRE_MESSAGE(d.ok(), (d.ok() ? std::string() : d.error().message));
  CHECK(d->p.size() == 4);
  CHECK(d->p[1] == doctest::Approx(0.5));
  CHECK(d->p[2] == doctest::Approx(0.00655738));
  auto a = load_distribution("MemcpyGoogleA");
  CHECK_MESSAGE(a.ok(), (a.ok() ? std::string() : a.error().message));
  CHECK(production_mix().has_value());
  auto w = make_workload("MemcpyGoogleA", Operation::kMemcpy);
  CHECK_MESSAGE(w.ok(), (w.ok() ? std::string() : w.error().message));
  // A comma is still no decimal point in a distribution file: "0,5" is two fields.
  auto two = parse_distribution("t", "0,5");
  REQUIRE(two.ok());
  CHECK(two->p.size() == 2);

  // Writing: the tables.
  MeasuredPoint p;
  p.size = 4096;
  p.baseline_gbps = 12.5;
  p.tuned_gbps = 25.25;
  p.baseline_ns = 327.68;
  p.tuned_ns = 162.22;
  const std::string t = format_table({p});
  INFO(t);
  CHECK(t.find("12.50") != std::string::npos);
  CHECK(t.find("25.25") != std::string::npos);
  CHECK(t.find("2.02x") != std::string::npos);
  CHECK(t.find("12,50") == std::string::npos);
  const std::string pt = format_patch_table({p});
  INFO(pt);
  CHECK(pt.find("327.7") != std::string::npos);
  CHECK(pt.find(',') == std::string::npos);
  CHECK(format_c("%.3f|%g", 0.125, 2.5) == "0.125|2.5");
  char b[16];
  CHECK(snprintf_c(b, sizeof b, "%.1f", 3.25) == 3);
  CHECK(std::string(b) == "3.2");
  char* end = nullptr;
  const char* text = "1.625e+01";
  CHECK(strtod_c(text, &end) == 16.25);  // strtod would stop at the '.'
  CHECK(end == text + 9);
  // Wisdom: a point's figures are rounded in the "C" locale (wisdom.cpp's measured()). Written
  // with snprintf_c and read back with a reader of the program's locale, "6.377e+00" would stop
  // at the '.', and the file would say 6.
  Wisdom wz;
  wz.entries.emplace_back();
  MeasuredPoint q;
  q.baseline_gbps = 6.377450411760036;
  q.tuned_ns = 1234.5678;
  wz.entries[0].points = {q};
  const nlohmann::json jz = to_json(wz)["entries"][0]["points"][0];
  CHECK(jz["baseline_gbps"].dump() == "6.377");
  CHECK(jz["tuned_ns"].dump() == "1235.0");
  // The thread's locale is the program's again afterwards.
  std::snprintf(probe, sizeof probe, "%.1f", 0.5);
  CHECK(std::string(probe) == "0,5");
}

TEST_CASE("locale: under std::locale::global(de_DE.UTF-8) the texts copysynth writes are those of the C locale") {
  // A C++ program may set the global C++ locale, which every new std::ostringstream takes:
  // de_DE groups digits ("4.096") and writes a decimal comma.
  CopyParams p;
  p.rep_threshold = 32768;
  auto plan = make_plan(p, CpuInfo::host().features());
  REQUIRE(plan.ok());
  MeasuredPoint m;
  m.size = 65536;
  m.baseline_gbps = 12.5;
  m.tuned_gbps = 25.25;
  VerifyReport rep;
  rep.cases = 123456;
  rep.sizes = 2800;
  const auto texts = [&] {
    return std::vector<std::string>{to_string(*plan), describe_params(), format_table({m}), rep.summary(),
                                    CpuInfo::host().describe()};
  };
  const std::vector<std::string> in_c = texts();
  TempDir dir;
  RestoreCLocale restore;
  std::string why;
  if (!set_decimal_comma_locale(dir.path, why)) {
    COPYSYNTH_SKIP_PART(why);
    return;
  }
  const std::locale old = std::locale::global(std::locale("de_DE.UTF-8"));
  std::ostringstream probe;
  probe << 4096;
  const std::vector<std::string> in_de = texts();
  std::locale::global(old);
  REQUIRE(probe.str() == "4.096");  // the locale is in force: a plain stream groups digits
  for (std::size_t i = 0; i < in_c.size(); ++i) CHECK(in_de[i] == in_c[i]);
}

TEST_CASE("ReplayBuffers: cold calls spread over 256 MiB whatever the longest length") {
  // With an 8 MiB length in the workload, slots side by side gave 64 places, which stayed cached.
  ReplayBuffers rb(std::uint64_t{8} << 20, true);
  std::set<std::uintptr_t> pages;
  std::uintptr_t lo = UINTPTR_MAX, hi = 0;
  std::size_t top = 0;
  for (std::size_t i = 0; i < 4096; ++i) {
    const auto p = reinterpret_cast<std::uintptr_t>(rb.dst(i));
    pages.insert(p >> 12);
    lo = std::min(lo, p);
    if (p > hi) hi = p, top = i;
  }
  CHECK(pages.size() >= 4000);
  CHECK(hi - lo >= (std::uintptr_t{200} << 20));
  // A source up to max_size + 4095 bytes behind its destination (Call::src_delta) stays mapped.
  CHECK(rb.dst(top) - rb.src(top) >= static_cast<std::ptrdiff_t>((std::size_t{8} << 20) + 4096));
  // The call placed highest still has its whole window: an 8 MiB copy at the largest page offset
  // and the read-back's 64 bytes past it.
  std::memset(rb.dst(top) + 4095, 1, (std::size_t{8} << 20) + 64);
  std::memcpy(rb.dst(top) + 4095, rb.src(top) + 4095, std::size_t{8} << 20);
}

TEST_CASE("geomean_speedup: by time where both times are known, so a workload of 0-byte calls has a ratio") {
  // A program whose copies are all 0 bytes: no GB/s (0/0 gave "-nanx" beside a table that said 1.19x).
  MeasuredPoint zero;
  zero.label = "profile:z0.prof,program=zero";
  zero.baseline_ns = 3.96;
  zero.tuned_ns = 3.33;
  CHECK(geomean_speedup({zero}) == doctest::Approx(3.96 / 3.33));
  // Points without times (wisdom of older versions) still go by GB/s, the same ratio for one length.
  MeasuredPoint old;
  old.size = 4096;
  old.baseline_gbps = 50;
  old.tuned_gbps = 100;
  CHECK(geomean_speedup({old}) == doctest::Approx(2.0));
  CHECK(geomean_speedup({zero, old}) == doctest::Approx(std::sqrt(3.96 / 3.33 * 2.0)));
}
