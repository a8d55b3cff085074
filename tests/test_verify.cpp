// The verification suite (verify/verify.hpp, verify/static_check.hpp) over every operation, and
// proof that it catches each kind of fault real memcpy/memmove implementations have shipped:
// every fault is injected on purpose (EmitFaults) and must be caught. No test asserts a speed.
#include <csignal>
#include <doctest/doctest.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "copysynth/install.hpp"
#include "copysynth/ladders.hpp"
#include "copysynth/static_check.hpp"
#include "copysynth/verify.hpp"
#include "support/routines.hpp"
#include "support/skip.hpp"
#include "support/snippet.hpp"
#include "support/verify_options.hpp"

using namespace copysynth;

namespace {

const IsaFeatures& host() { return CpuInfo::host().features(); }

using test::build;
using test::host_widths;

/// Cheaper options for the big grid (the full defaults run in the tuner and below).
using test::grid_options;

bool copy_op(Operation op) { return op == Operation::kMemcpy || op == Operation::kMemmove; }

}  // namespace

TEST_CASE("every operation x width x unroll x threshold x NOP form passes the suite") {
  std::uint64_t routines = 0, cases = 0;
  const std::uint64_t thresholds[] = {0, 1, 63, 4095, 65536, kNever};
  int t = 0;
  for (Operation op : {Operation::kMemcpy, Operation::kMemmove, Operation::kFill, Operation::kClearPage}) {
    for (unsigned w : host_widths()) {
      for (unsigned u : {1u, 4u, 16u}) {
        for (NopForm f : {NopForm::kSingleByte, NopForm::kLongNop, NopForm::kPrefixedLongNop, NopForm::kJumpOver}) {
          CopyParams p;
          p.operation = op;
          p.vector_width = w;
          p.unroll = u;
          p.nop_form = f;
          p.loop_align = u == 4 ? 32 : 64;
          // Rotate the thresholds (including 0, 1, 63, 4095 and never), element size, alignment
          // and prefetch so that every combination of classes is built for every width.
          const std::uint64_t rep = thresholds[t % 6], nt = thresholds[(t + 2) % 6];
          p.rep_threshold = rep;
          p.nt_threshold = nt == kNever || nt > rep ? nt : rep * 4 + 4096;
          p.rep_unit = t % 2 ? 8 : 1;
          p.rep_align_dst = t % 3 != 0;
          if (copy_op(op) && t % 4 != 3) {
            p.prefetch_distance = 64u << (t % 5);
            p.prefetch_hint = t % 2 ? PrefetchHint::kNTA : PrefetchHint::kT0;
          }
          // The small-length choices: head/tail width and hand-over, and on AVX-512 hosts the
          // masked class and the high register bank.
          if (w >= 32 && t % 3 == 1) p.head_tail_width = w / 2;
          if (t % 4 == 1) p.rep_aligned_only = true;
          // The rep class's test against src instead (rep_aligned_mutual), in half of those.
          if (copy_op(op) && t % 8 == 5) p.rep_aligned_mutual = true;
          if (op == Operation::kMemcpy && w == 8 && t % 2 == 0) p.shift_realign = true;
          if (copy_op(op) && t % 3 == 2) p.alias_window = 64u << (t % 5 ? 2 : 0);
          if (copy_op(op) && t % 4 == 1) p.rep_alias_window = t % 8 == 1 ? 64 : 1024;
          // 4K-aliasing rep copies to the 32-byte loop below twice the band's start (rep_alias_loop).
          if (copy_op(op) && w >= 32 && t % 3 == 0 && rep <= 65536)
            p.rep_alias_loop = (std::max<std::uint64_t>(rep, 4096) * 2 + 4095) / 4096 * 4096;
          if (w >= 16 && t % 4 == 2) p.nt_pages = t % 8 == 2 ? 4 : 2;
          if (w >= 16 && t % 5 == 2) p.head_tail_max = 2 * w;
          if (copy_op(op) && w >= 16 && u <= 4 && t % 3 != 1) p.loop_pipeline = true;
          // One and two pieces lie inside the grid's lengths (the rep class reaches 64 MiB).
          if (op != Operation::kClearPage && t % 3 != 2) p.rep_chunk = 4096u << (t % 4);
          // ... and one instruction again three pieces into the rep class (rep_chunk_stop): from
          // 4095 on with rep_unit 8 and dst as given (t % 6 == 3), in 65536..266239 with rep_unit 1
          // and dst aligned first (t % 6 == 4: the head's advance counts into n).
          if (op != Operation::kClearPage && (t % 6 == 3 || t % 6 == 4))
            p.rep_chunk_stop = 3 * (4096u << (t % 4)) + (t % 6 == 4 ? 65536u : 0u);
          const IsaFeatures& isa = host();
          const bool evex = isa.has(Feature::kAVX512F) && isa.has(Feature::kAVX512VL);
          if (evex && w >= 16 && op != Operation::kClearPage) {
            if (t % 2) p.register_bank = RegisterBank::kHigh;
            if (isa.has(Feature::kAVX512BW) && isa.has(Feature::kBMI2) && t % 3 != 0)
              p.mask_max = 16u << (t % 4);  // 16, 32, 64, 128
            if (p.head_tail_max.value && p.head_tail_max.value < p.mask_max.value) p.head_tail_max = 0;
          }
          ++t;
          Routine r = build(p);
          const VerifyReport rep_ = verify_routine(r, grid_options());
          CHECK_MESSAGE(rep_.ok(), r.name() << ": " << rep_.summary());
          ++routines;
          cases += rep_.cases;
        }
      }
    }
  }
  MESSAGE("routines verified: " << routines << ", calls checked: " << cases);
  CHECK(routines >= 4 * 2 * 3 * 4);
}

TEST_CASE("the full default suite passes one routine of each operation at the widest width") {
  const unsigned w = host_widths().back();
  for (Operation op : {Operation::kMemcpy, Operation::kMemmove, Operation::kFill, Operation::kClearPage}) {
    CopyParams p;
    p.operation = op;
    p.vector_width = w;
    p.unroll = 8;
    p.rep_threshold = 16384;
    p.nt_threshold = 1 << 20;
    Routine r = build(p);
    const VerifyReport rep = verify_routine(r);
    CHECK_MESSAGE(rep.ok(), r.name() << ": " << rep.summary());
    MESSAGE(r.name() << ": " << rep.summary());
  }
}

TEST_CASE("two rep bands (rep_stop, rep_resume), the first split by dst alignment or not, pass the suite for every operation and width") {
  for (Operation op : {Operation::kMemcpy, Operation::kMemmove, Operation::kFill}) {
    for (unsigned w : host_widths()) {
      for (unsigned unit : {1u, 8u}) {
        for (bool split : {false, true}) {
          CAPTURE(split);
          CopyParams p;
          p.operation = op;
          p.vector_width = w;
          // With the split, the first band takes any dst below 16 KiB and a 64-aligned one from
          // there on; the second band (from 64 KiB) takes any dst again.
          p.rep_threshold = 4096;
          p.rep_stop = split ? 32768 : 16384;
          p.rep_resume = 65536;
          if (split) p.rep_aligned_from = 16384;
          p.nt_threshold = unit == 1 ? kNever : 1 << 20;
          p.rep_unit = unit;
          p.rep_align_dst = unit == 8;
          if (split && op != Operation::kFill) p.rep_alias_window = unit == 8 ? 64 : 0;
          Routine r = build(p);
          std::size_t bands = 0;
          for (const auto& c : r.plan().classes) bands += c.strategy == Strategy::kRepString;
          CHECK(bands == 2);
          if (split) {  // the split is an edge inside a class (class bounds appear as hi + 1 and lo)
            const auto edges = plan_edges(r.plan());
            CHECK(std::count(edges.begin(), edges.end(), std::uint64_t{16384}) == 1);
          }
          const VerifyReport rep = verify_routine(r);
          CHECK_MESSAGE(rep.ok(), r.name() << ": " << rep.summary());
        }
      }
    }
  }
}

TEST_CASE("nt_width 32: the 32-byte non-temporal loop of a 64-byte routine passes the suite") {
  if (!CpuInfo::host().features().has(Feature::kAVX512F)) return;  // vector_width 64 needs AVX-512F
  for (Operation op : {Operation::kMemcpy, Operation::kMemmove, Operation::kFill}) {
    for (unsigned pages : {1u, 4u}) {
      CopyParams p;
      p.operation = op;
      p.vector_width = 64;
      p.nt_threshold = 4096;  // the suite's lengths reach far into the class
      p.nt_pages = pages;
      p.nt_width = 32;
      p.register_bank = pages == 1 ? RegisterBank::kLow : RegisterBank::kHigh;
      Routine r = build(p);
      const VerifyReport rep = verify_routine(r);
      CHECK_MESSAGE(rep.ok(), r.name() << ": " << rep.summary());
      // The class's code is narrower: the plan says 32-byte registers, and it differs from the
      // routine with the 64-byte non-temporal loop.
      bool described = false;
      for (const auto& c : r.plan().classes)
        if (c.strategy == Strategy::kNonTemporalLoop)
          described = describe_class(r.plan(), c).find("x 32 B per iteration") != std::string::npos;
      CHECK(described);
      p.nt_width = 0;
      CHECK(build(p).bytes() != r.bytes());
    }
  }
}

TEST_CASE("prefetch_min: the loop without prefetch below it and the prefetching loop above pass the suite") {
  for (Operation op : {Operation::kMemcpy, Operation::kMemmove})
    for (unsigned w : host_widths()) {
      CopyParams p;
      p.operation = op;
      p.vector_width = w;
      p.prefetch_distance = 256;
      p.prefetch_hint = w % 16 ? PrefetchHint::kT0 : PrefetchHint::kNTA;
      p.prefetch_min = 8192;
      p.rep_threshold = 32768;  // the loop again above the band: the prefetching loop, shared
      p.rep_stop = 65536;
      p.alias_window = op == Operation::kMemcpy ? 256 : 0;  // a backward loop in each copy
      Routine r = build(p);
      std::size_t loops = 0;
      for (const auto& c : r.plan().classes) loops += c.strategy == Strategy::kAlignedLoop;
      CHECK(loops == 3);
      const VerifyReport rep = verify_routine(r);
      CHECK_MESSAGE(rep.ok(), r.name() << ": " << rep.summary());
      // The longest lengths weighted heaviest: the dispatch tree then emits the prefetching
      // loop before the one without prefetch.
      auto heavy_top = Routine::build(with_weights(r.plan(), [](std::uint64_t lo, std::uint64_t) {
        return static_cast<double>(lo) + 1.0;
      }));
      REQUIRE(heavy_top.ok());
      CHECK(heavy_top->bytes() != r.bytes());
      const VerifyReport rep2 = verify_routine(*heavy_top);
      CHECK_MESSAGE(rep2.ok(), heavy_top->name() << " (longest lengths heaviest): " << rep2.summary());
      // Two loop bands below prefetch_min (the rep band ends below it): one loop without
      // prefetch, jumped to from the second band.
      p.prefetch_min = 131072;
      Routine two = build(p);
      const VerifyReport rep3 = verify_routine(two);
      CHECK_MESSAGE(rep3.ok(), two.name() << " (two loop bands below prefetch_min): " << rep3.summary());
    }
}

TEST_CASE("mask_shift: the masked class's page-crossing path passes the suite, next to PROT_NONE pages too") {
  const IsaFeatures& isa = host();
  if (!isa.has(Feature::kAVX512F) || !isa.has(Feature::kAVX512VL) || !isa.has(Feature::kAVX512BW) ||
      !isa.has(Feature::kBMI2))
    return;  // the masked class needs them
  int t = 0;
  for (Operation op : {Operation::kMemcpy, Operation::kMemmove, Operation::kFill})
    for (unsigned m : {16u, 32u, 64u, 128u}) {
      CopyParams p;
      p.operation = op;
      p.vector_width = m == 16 ? 16 : m == 32 ? 32 : 64;
      p.mask_max = m;
      p.mask_shift = true;
      p.register_bank = t++ % 2 ? RegisterBank::kHigh : RegisterBank::kLow;
      Routine r = build(p);
      VerifyOptions o;
      o.dense_max = 300;
      o.all_pairs = true;  // every src/dst offset pair puts some blocks across a page
      o.max_size = 1 << 20;
      const VerifyReport rep = verify_routine(r, o);
      CHECK_MESSAGE(rep.ok(), r.name() << ": " << rep.summary());
      p.mask_shift = false;
      CHECK(build(p).bytes() != r.bytes());
      CHECK(describe_class(r.plan(), r.plan().classes.front()).find("mask_shift") != std::string::npos);
    }
  // Each path of a crossing call, placed by hand: [PROT_NONE][page A][PROT_NONE][page B][PROT_NONE].
  // src in the last bytes of A (its block crosses into the guard page: the shifted moves) with dst
  // in the middle of B, then with dst at B's first byte (shifting would reach into the guard page
  // below B: the ladder). A fault or a wrong byte fails.
  const long page = 4096;
  auto* base = static_cast<std::uint8_t*>(
      mmap(nullptr, 5 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  REQUIRE(base != MAP_FAILED);
  std::uint8_t* A = base + page;
  std::uint8_t* B = base + 3 * page;
  REQUIRE(mprotect(A, page, PROT_READ | PROT_WRITE) == 0);
  REQUIRE(mprotect(B, page, PROT_READ | PROT_WRITE) == 0);
  for (std::size_t i = 0; i < page; ++i) A[i] = static_cast<std::uint8_t>(i * 7 + 1);
  for (Operation op : {Operation::kMemcpy, Operation::kMemmove})
    for (unsigned m : {64u, 128u}) {
      CopyParams p;
      p.operation = op;
      p.vector_width = 64;
      p.mask_max = m;
      p.mask_shift = true;
      Routine r = build(p);
      for (std::size_t n = 0; n <= m; ++n)
        for (std::size_t dst_off : {std::size_t{2048}, std::size_t{0}, std::size_t{1}}) {
          std::uint8_t* src = A + page - n - (n % 3);  // within the last m + 2 bytes of A
          std::uint8_t* dst = B + dst_off;
          std::memset(B, 0xEE, page);
          r.fn()(dst, src, n);
          bool same = std::memcmp(dst, src, n) == 0;
          for (std::size_t i = 0; i < page; ++i)
            if ((B + i < dst || B + i >= dst + n) && B[i] != 0xEE) same = false;
          CHECK_MESSAGE(same, r.name() << ": n = " << n << ", dst at B + " << dst_off);
        }
    }
  munmap(base, 5 * page);
}

TEST_CASE("memmove: one-byte shifts of a short string, dst == src, and every overlap distance") {
  for (unsigned w : host_widths()) {
    CopyParams p;
    p.operation = Operation::kMemmove;
    p.vector_width = w;
    Routine r = build(p);
    char s[] = "hello, overlapping world";
    r.fn()(s + 1, s, 10);  // dst = src + 1
    CHECK(std::string(s) == "hhello, ovelapping world");
    char t[] = "hello, overlapping world";
    r.fn()(t, t + 1, 10);  // dst = src - 1
    CHECK(std::string(t) == "ello, overrlapping world");
    char u[] = "unchanged";
    CHECK(r.fn()(u, u, 9) == u);
    CHECK(std::string(u) == "unchanged");
    // Long copies both ways over distances below one vector, around the loop's saved head/tail.
    std::vector<unsigned char> buf(1 << 16), ref;
    for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<unsigned char>(i * 7 + 3);
    for (std::size_t n : {100u, 1000u, 5000u, 40000u})
      for (long d : {-65L, -64L, -33L, -1L, 1L, 2L, 31L, 63L, 64L, 65L, 257L}) {
        ref = buf;
        std::memmove(ref.data() + 8192 + d, ref.data() + 8192, n);
        r.fn()(buf.data() + 8192 + d, buf.data() + 8192, n);
        REQUIRE_MESSAGE(buf == ref, r.name() << " n=" << n << " dst-src=" << d);
      }
  }
}

TEST_CASE("fill: only the low byte of c counts, and n = 0 touches nothing") {
  for (unsigned w : host_widths()) {
    CopyParams p;
    p.operation = Operation::kFill;
    p.vector_width = w;
    Routine r = build(p);
    std::vector<unsigned char> b(300, 1);
    CHECK(r.fill_fn()(b.data() + 1, 0x1234, 200) == b.data() + 1);
    CHECK(b[0] == 1);
    CHECK(std::all_of(b.begin() + 1, b.begin() + 201, [](unsigned char c) { return c == 0x34; }));
    CHECK(b[201] == 1);
    CHECK(r.fill_fn()(nullptr, 7, 0) == nullptr);
  }
}

// ---- fault injection: each kind must be caught ------------------------------------------------

TEST_CASE("fault: a read past the end of src is caught at the PROT_NONE page") {
  for (unsigned w : host_widths()) {
    CopyParams p;
    p.vector_width = w;
    EmitFaults f;
    f.over_read = true;
    Routine r = build(p, f);
    VerifyOptions o = grid_options();
    o.static_check = false;  // the dynamic checks alone must catch it
    const VerifyReport rep = verify_routine(r, o);
    REQUIRE_FALSE(rep.ok());
    MESSAGE(r.name() << ": " << rep.summary());
    CHECK(rep.failure->n >= 2);
  }
  // guarded_call does not save the signal mask (no system call per case); leaving the handler by
  // siglongjmp must still leave SIGSEGV and SIGBUS unblocked, so the next fault is caught too.
  sigset_t now;
  REQUIRE(pthread_sigmask(SIG_BLOCK, nullptr, &now) == 0);
  CHECK_FALSE(sigismember(&now, SIGSEGV));
  CHECK_FALSE(sigismember(&now, SIGBUS));
  CopyParams p;
  EmitFaults f;
  f.over_read = true;
  Routine r = build(p, f);
  VerifyOptions o = grid_options();
  o.static_check = false;
  for (int again = 0; again < 3; ++again) CHECK_FALSE(verify_routine(r, o).ok());
}

TEST_CASE("fault: a missing sfence after non-temporal stores is caught by the static checks") {
  for (unsigned w : host_widths()) {
    CopyParams p;
    p.vector_width = w;
    p.nt_threshold = 1 << 16;
    EmitFaults f;
    f.skip_sfence = true;
    Routine r = build(p, f);
    const StaticReport st = check_routine_code(r, host());
    CHECK(st.count(StaticRule::kMissingSfence) >= 1);
    const VerifyReport rep = verify_routine(r, grid_options());
    REQUIRE_FALSE(rep.ok());
    CHECK(rep.failure->placement == Placement::kStatic);
    CHECK(rep.failure->what.find("missing-sfence") != std::string::npos);
    // The same routine without the fault is clean.
    CHECK(check_routine_code(build(p), host()).ok());
  }
}

TEST_CASE("fault: a missing vzeroupper is caught statically, and dynamically where XINUSE exists" *
          test::skip_unless(CpuInfo::host().features().max_vector_bytes() >= 32,
                            "needs AVX2 (32-byte vectors): this host has none")) {
  CopyParams p;
  p.vector_width = 32;
  EmitFaults f;
  f.skip_vzeroupper = true;
  Routine r = build(p, f);
  CHECK(check_routine_code(r, host()).count(StaticRule::kMissingVzeroupper) >= 1);
  VerifyOptions o = grid_options();
  o.static_check = false;
  const VerifyReport rep = verify_routine(r, o);
  // Dynamic detection needs XGETBV with ECX = 1; say so when the machine lacks it.
  std::vector<unsigned char> a(64), b(64);
  const AbiCall probe = abi_call(r.entry(), reinterpret_cast<std::uintptr_t>(b.data()),
                                 reinterpret_cast<std::uintptr_t>(a.data()), 40);
  if (probe.upper_checked) {
    CHECK(probe.upper_dirty);
    REQUIRE_FALSE(rep.ok());
    CHECK(rep.failure->what.find("vzeroupper") != std::string::npos);
  } else {
    COPYSYNTH_SKIP_PART("XINUSE not available here: the missing vzeroupper is caught by the static checks only");
  }
}

TEST_CASE("fault: storing before all loads in memmove is caught by the overlap checks") {
  for (unsigned w : host_widths()) {
    CopyParams p;
    p.operation = Operation::kMemmove;
    p.vector_width = w;
    EmitFaults f;
    f.wrong_overlap_order = true;
    Routine r = build(p, f);
    const VerifyReport rep = verify_routine(r, grid_options());
    REQUIRE_FALSE(rep.ok());
    CHECK(rep.failure->placement == Placement::kOverlap);
    MESSAGE(r.name() << ": " << rep.summary());
  }
}

TEST_CASE("fault: a length truncated to 32 bits is caught at n = 2^32 + 4097") {
  CopyParams p;
  p.vector_width = host_widths().back();
  EmitFaults f;
  f.truncate_length = true;
  Routine bad = build(p, f);
  const VerifyReport rep = verify_huge(bad);
  if (!rep.notes.empty() && rep.ok()) {
    COPYSYNTH_SKIP_PART(rep.notes.front());
    return;
  }
  REQUIRE_FALSE(rep.ok());
  CHECK(rep.failure->placement == Placement::kHuge);
  CHECK(rep.failure->n == (std::uint64_t{1} << 32) + 4097);
}

/// The faults a start-up preset `o` must catch by running the routine of width `w` (its static
/// checks off): an over-read, memmove's stores before its loads on overlap, and (w >= 32) a
/// missing vzeroupper.
static void check_catches_run_faults(const VerifyOptions& o, unsigned w) {
  VerifyOptions run = o;
  run.static_check = false;
  CopyParams p;
  p.vector_width = w;
  EmitFaults over;
  over.over_read = true;
  CHECK_FALSE(verify_routine(build(p, over), run).ok());
  CopyParams mv = p;
  mv.operation = Operation::kMemmove;
  EmitFaults order;
  order.wrong_overlap_order = true;
  const VerifyReport rep = verify_routine(build(mv, order), run);
  REQUIRE_FALSE(rep.ok());
  CHECK(rep.failure->placement == Placement::kOverlap);
  if (w >= 32) {
    EmitFaults vz;
    vz.skip_vzeroupper = true;
    CHECK_FALSE(verify_routine(build(p, vz), run).ok());
  }
}

TEST_CASE("the start-up check (VerifyOptions::startup) still catches every injected fault it covers") {
  // Loading wisdom re-verifies with this lighter preset; it must not be a formality. Lengths
  // >= 2^32 are left to the full check at tuning time (truncate_length is not covered here).
  const VerifyOptions o = VerifyOptions::startup();
  for (unsigned w : host_widths()) {
    CAPTURE(w);
    check_catches_run_faults(o, w);
    CopyParams p;
    p.vector_width = w;
    CopyParams nt = p;
    nt.nt_threshold = 1 << 16;
    EmitFaults sf;
    sf.skip_sfence = true;
    CHECK_FALSE(verify_routine(build(nt, sf), o).ok());
    // And a correct routine of each operation passes it.
    for (Operation op : {Operation::kMemcpy, Operation::kMemmove, Operation::kFill, Operation::kClearPage}) {
      CopyParams q = p;
      q.operation = op;
      q.rep_threshold = 4096;
      const VerifyReport ok = verify_routine(build(q), o);
      CHECK_MESSAGE(ok.ok(), name_of(op) << ": " << ok.summary());
    }
  }
}

TEST_CASE("the quick check (VerifyOptions::quick) for code tuned on this CPU still runs the routine for real") {
  // Wisdom tuned on this very CPU is checked with this preset at start-up: the bytes passed the
  // full suite at tuning time, but the check must still catch a routine that does not copy right
  // at small lengths, breaks a guard page or memmove's overlap order, or leaves YMM state dirty.
  const VerifyOptions o = VerifyOptions::quick();
  CHECK_FALSE(o.static_check);
  for (unsigned w : host_widths()) {
    CAPTURE(w);
    check_catches_run_faults(o, w);
    CopyParams p;
    p.vector_width = w;
    for (Operation op : {Operation::kMemcpy, Operation::kMemmove, Operation::kFill}) {
      CopyParams q = p;
      q.operation = op;
      q.rep_threshold = 4096;
      const Routine r = build(q);
      const VerifyReport ok = verify_routine(r, o);
      CHECK_MESSAGE(ok.ok(), name_of(op) << ": " << ok.summary());
      CHECK(ok.cases > 100);                                                 // it does run the routine
      CHECK(ok.cases * 2 < verify_routine(r, VerifyOptions::startup()).cases);  // at a fraction of the start-up cost
    }
  }
}

TEST_CASE("lengths >= 2^32 are copied, moved and filled whole (or skipped with a reason)") {
  for (Operation op : {Operation::kMemcpy, Operation::kMemmove, Operation::kFill}) {
    CopyParams p;
    p.operation = op;
    p.vector_width = host_widths().back();
    p.nt_threshold = 1 << 24;  // the huge length takes the non-temporal path
    Routine r = build(p);
    const VerifyReport rep = verify_huge(r);
    CHECK_MESSAGE(rep.ok(), r.name() << ": " << rep.summary());
    for (const auto& n : rep.notes) COPYSYNTH_SKIP_PART(n);
  }
}

TEST_CASE("the ABI probe reports clobbered callee-saved registers, DF and rsp") {
  const auto make = [](auto body) { return test::assemble_snippet(body); };
  // Run the snippets from an executable, never-writable mapping (mmap + mprotect).
  const auto run = [](const std::vector<std::uint8_t>& bytes) { return test::call_snippet(bytes, 1, 2, 3); };
  namespace x86 = asmjit::x86;
  const AbiCall ok = run(make([](x86::Assembler& a) { a.mov(x86::rax, x86::rdi); a.ret(); }));
  CHECK(ok.problem().empty());
  CHECK(reinterpret_cast<std::uintptr_t>(ok.ret) == 1);
  const AbiCall rbx = run(make([](x86::Assembler& a) { a.xor_(x86::ebx, x86::ebx); a.ret(); }));
  CHECK((rbx.clobbered & 1) != 0);
  CHECK(rbx.problem().find("rbx") != std::string::npos);
  const AbiCall r15 = run(make([](x86::Assembler& a) { a.inc(x86::r15); a.ret(); }));
  CHECK((r15.clobbered & 32) != 0);
  const AbiCall df = run(make([](x86::Assembler& a) { a.std(); a.ret(); }));
  CHECK(df.direction_flag);
  CHECK(df.problem().find("direction flag") != std::string::npos);
  if (host().has(Feature::kAVX)) {
    const AbiCall ymm = run(make([](x86::Assembler& a) { a.vpcmpeqb(x86::ymm3, x86::ymm3, x86::ymm3); a.ret(); }));
    if (ymm.upper_checked) {
      CHECK(ymm.upper_dirty);
    } else {
      COPYSYNTH_SKIP_PART("XINUSE not available here: a dirty upper state is not seen");
    }
    const AbiCall clean = run(make([](x86::Assembler& a) {
      a.vpcmpeqb(x86::ymm3, x86::ymm3, x86::ymm3);
      a.vzeroupper();
      a.ret();
    }));
    CHECK_FALSE(clean.upper_dirty);
  } else {
    COPYSYNTH_SKIP_PART("no AVX here: the upper-state checks of the probe are not tried");
  }
}

// ---- installing while other threads call ------------------------------------------------------

TEST_CASE("install swaps the process-wide routine atomically while other threads copy") {
  CHECK(installed_name(Operation::kMemcpy) == "system");
  std::atomic<bool> stop{false};
  std::atomic<long> calls{0}, wrong{0};
  auto worker = [&](int seed) {
    std::vector<unsigned char> src(70000), dst(70000);
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * seed + 1);
    std::size_t n = 1;
    while (!stop.load()) {
      n = (n * 1103515245 + 12345) % 65536;
      std::memset(dst.data(), 0, n + 64);
      if (copysynth::memcpy(dst.data() + 3, src.data() + 5, n) != dst.data() + 3 ||
          std::memcmp(dst.data() + 3, src.data() + 5, n) != 0 || dst[n + 3] != 0)
        ++wrong;
      ++calls;
    }
  };
  std::thread t1(worker, 3), t2(worker, 5);
  VerifyOptions fast = grid_options();
  int installed = 0;
  for (unsigned i = 0; i < 12; ++i) {
    CopyParams p;
    p.vector_width = host_widths()[i % host_widths().size()];
    p.unroll = 1u << (i % 5);
    p.rep_threshold = i % 3 ? kNever : 8192;
    REQUIRE(install(build(p), fast).ok());
    ++installed;
    CHECK(installed_name(Operation::kMemcpy) == short_name(p));
  }
  stop = true;
  t1.join();
  t2.join();
  CHECK(wrong.load() == 0);
  MESSAGE("calls during " << installed << " installs: " << calls.load());
  CHECK(calls.load() > 0);
  // A routine that fails verification is refused, and the installed one keeps serving.
  const std::string before = installed_name(Operation::kMemcpy);
  CopyParams p;
  p.vector_width = 16;
  EmitFaults f;
  f.over_read = true;
  const Status st = install(build(p, f), fast);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().code == ErrorCode::kVerifyFailed);
  CHECK(installed_name(Operation::kMemcpy) == before);
  char a[16] = "abcdefghijklmno", b[16] = {};
  CHECK(copysynth::memcpy(b, a, 16) == b);
  CHECK(std::memcmp(a, b, 16) == 0);
  uninstall(Operation::kMemcpy);
  CHECK(installed_name(Operation::kMemcpy) == "system");
  CHECK((installed_memcpy() == &std::memcpy));
}

// Regression (round 43): fork() in one thread while another held the registry's lock (an
// install, uninstall or installed_name) left the lock held for ever in the child, whose first
// installed_name or install hung (a hostile-user test: copysynth_load_wisdom in a forked child).
// Each child has 10 s (alarm) to take the lock: a hang shows as SIGALRM, not as a stuck test.
TEST_CASE("fork while another thread takes the install lock: the child can install and ask") {
  std::atomic<bool> stop{false};
  std::thread busy([&] {
    while (!stop.load(std::memory_order_relaxed)) {
      uninstall(Operation::kClearPage);
      (void)installed_name(Operation::kClearPage);
    }
  });
  int hung = 0, other = 0;
  for (int i = 0; i < 100; ++i) {
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      alarm(10);
      const bool ok = installed_name(Operation::kMemcpy) == "system";
      uninstall(Operation::kClearPage);
      _exit(ok ? 0 : 1);
    }
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM) ++hung;
    else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++other;
    if (hung) break;  // one is enough (a hostile user's runs hung at fork 4 in one and fork 45 in another)
  }
  stop = true;
  busy.join();
  CHECK(hung == 0);
  CHECK(other == 0);
}

TEST_CASE("check_verify_options: options that would not end are refused; verify_routine checks nothing then") {
  CHECK(check_verify_options(VerifyOptions{}).ok());
  CHECK(check_verify_options(VerifyOptions::quick()).ok());
  CHECK(check_verify_options(VerifyOptions::startup()).ok());
  const auto refused = [](void (*set)(VerifyOptions&), const char* field) {
    VerifyOptions o;
    set(o);
    const Status st = check_verify_options(o);
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().code == ErrorCode::kInvalidArgument);
    CHECK_MESSAGE(st.error().message.find(field) != std::string::npos, st.error().message);
  };
  refused([](VerifyOptions& o) { o.dense_max = ~std::uint64_t{0}; }, "dense_max");
  refused([](VerifyOptions& o) { o.edge_radius = ~std::uint64_t{0}; }, "edge_radius");
  refused([](VerifyOptions& o) { o.random_sizes = 1u << 20; }, "random_sizes");
  refused([](VerifyOptions& o) { o.large_pairs = 1u << 20; }, "large_pairs");
  refused([](VerifyOptions& o) { o.overlap_dense = 1u << 20; }, "overlap_dense");
  refused([](VerifyOptions& o) { o.overlap_stride = 0; }, "overlap_stride");
  // dense_max above max_size is cut at max_size, not refused: at most the 513 lengths 0..512.
  VerifyOptions cut = grid_options();
  cut.max_size = 512;
  cut.dense_max = 2000;
  CHECK(check_verify_options(cut).ok());
  CopyParams p;
  p.vector_width = 16;
  const Routine r = build(p);
  const VerifyReport within = verify_routine(r, cut);
  CHECK(within.ok());
  CHECK_MESSAGE(within.sizes <= 513, within.sizes);
  VerifyOptions bad;
  bad.overlap_stride = 0;
  const VerifyReport rep = verify_routine(r, bad);
  CHECK_FALSE(rep.ok());
  CHECK(rep.invalid_options);
  CHECK(rep.cases == 0);
  const Status st = check_routine(r, bad);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().code == ErrorCode::kInvalidArgument);
  CHECK_MESSAGE(st.error().message.find("could not be verified: invalid verification options: overlap_stride") !=
                    std::string::npos,
                st.error().message);
}

TEST_CASE("install_all publishes all routines or none") {
  const VerifyOptions fast = grid_options();
  CopyParams c, m;
  c.vector_width = 16;
  m = c;
  m.operation = Operation::kMemmove;
  EmitFaults f;
  f.wrong_overlap_order = true;
  // A failing routine after a good one: nothing changes.
  {
    std::vector<Routine> rs;
    rs.push_back(build(c));
    rs.push_back(build(m, f));
    const Status st = install_all(std::move(rs), fast);
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().code == ErrorCode::kVerifyFailed);
    CHECK(installed_name(Operation::kMemcpy) == "system");
    CHECK(installed_name(Operation::kMemmove) == "system");
  }
  // Two routines for one operation: refused before anything is verified.
  {
    std::vector<Routine> rs;
    rs.push_back(build(c));
    rs.push_back(build(c));
    const Status st = install_all(std::move(rs), fast);
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().code == ErrorCode::kInvalidArgument);
    CHECK(installed_name(Operation::kMemcpy) == "system");
  }
  // All good: all published.
  {
    std::vector<Routine> rs;
    rs.push_back(build(c));
    rs.push_back(build(m));
    REQUIRE(install_all(std::move(rs), fast).ok());
    CHECK(installed_name(Operation::kMemcpy) == short_name(c));
    CHECK(installed_name(Operation::kMemmove) == short_name(m));
    CHECK((installed_memcpy() != &std::memcpy));
    char a[40] = "the quick brown fox jumps over the dog", b[40] = {};
    CHECK(copysynth::memmove(a + 1, a, 20) == a + 1);
    CHECK(std::memcmp(a + 1, "the quick brown fox ", 20) == 0);
    CHECK(copysynth::memcpy(b, a, 40) == b);
    CHECK(std::memcmp(a, b, 40) == 0);
  }
  uninstall(Operation::kMemcpy);
  uninstall(Operation::kMemmove);
}

namespace {
// Fills that are wrong in one way each (memset semantics otherwise). n = 0 comes with NULL and
// dangling pointers (the verifier checks that nothing is touched), so no memset call then.
void* fill_skips_middle(void* d, int c, std::size_t n) {
  if (n) std::memset(d, c, n);
  if (n >= 3) static_cast<unsigned char*>(d)[n / 2] ^= 1;  // one byte in the middle differs
  return d;
}
void* fill_wrong_first(void* d, int c, std::size_t n) {
  if (n) std::memset(d, c, n);
  if (n) static_cast<unsigned char*>(d)[0] ^= 0x80;  // the first byte differs, the rest agree
  return d;
}
void* fill_wrong_byte(void* d, int c, std::size_t n) {  // every byte equal, and wrong
  if (n) std::memset(d, c + 1, n);
  return d;
}
}  // namespace

TEST_CASE("the fill check finds a wrong byte anywhere: first, middle, or all of them") {
  VerifyOptions o = grid_options();
  o.static_check = false;
  const std::vector<std::uint64_t> edges{64, 4096};
  CHECK(verify_fill(reinterpret_cast<FillFn>(&std::memset), edges, o).ok());
  const VerifyReport mid = verify_fill(&fill_skips_middle, edges, o);
  REQUIRE_FALSE(mid.ok());
  CHECK(mid.failure->n == 3);
  CHECK_MESSAGE(mid.failure->what.find("byte 1 of dst") != std::string::npos, mid.failure->what);
  const VerifyReport first = verify_fill(&fill_wrong_first, edges, o);
  REQUIRE_FALSE(first.ok());
  CHECK(first.failure->n == 1);
  CHECK_MESSAGE(first.failure->what.find("byte 0 of dst") != std::string::npos, first.failure->what);
  const VerifyReport all = verify_fill(&fill_wrong_byte, edges, o);
  REQUIRE_FALSE(all.ok());
  CHECK(all.failure->n == 1);
  CHECK_MESSAGE(all.failure->what.find("byte 0 of dst") != std::string::npos, all.failure->what);
}

namespace {

constexpr std::uint64_t kSingleCase = 256 * 1024;  // VerifyOptions::single_case_n in the test below

// Each does its job, and above kSingleCase one thing wrong that only a particular length or
// placement shows. n = 0 comes with NULL and dangling pointers: no libc call then.
void* plain_copy(void* d, const void* s, std::size_t n) {
  if (n) std::memcpy(d, s, n);
  return d;
}
void* copy_drops_byte_at_residue(void* d, const void* s, std::size_t n) {
  return plain_copy(d, s, n > kSingleCase && n % 64 == 37 ? n - 1 : n);
}
const volatile unsigned char* at(const void* p, std::ptrdiff_t i) {
  return static_cast<const volatile unsigned char*>(p) + i;
}
void* copy_reads_past_src(void* d, const void* s, std::size_t n) {
  if (n > kSingleCase) (void)*at(s, static_cast<std::ptrdiff_t>(n));
  return plain_copy(d, s, n);
}
void* copy_reads_before_src(void* d, const void* s, std::size_t n) {
  if (n > kSingleCase) (void)*at(s, -1);
  return plain_copy(d, s, n);
}
void* copy_reads_past_dst(void* d, const void* s, std::size_t n) {
  if (n > kSingleCase) (void)*at(d, static_cast<std::ptrdiff_t>(n));
  return plain_copy(d, s, n);
}
void* copy_reads_before_dst(void* d, const void* s, std::size_t n) {
  if (n > kSingleCase) (void)*at(d, -1);
  return plain_copy(d, s, n);
}
void* plain_fill(void* d, int c, std::size_t n) {
  if (n) std::memset(d, c, n);
  return d;
}
void* fill_reads_past_dst(void* d, int c, std::size_t n) {
  if (n > kSingleCase) (void)*at(d, static_cast<std::ptrdiff_t>(n));
  return plain_fill(d, c, n);
}
void* fill_reads_before_dst(void* d, int c, std::size_t n) {
  if (n > kSingleCase) (void)*at(d, -1);
  return plain_fill(d, c, n);
}

}  // namespace

TEST_CASE("lengths above single_case_n: one case each, every length near an edge, every placement in turn") {
  VerifyOptions o = grid_options();
  o.static_check = false;
  o.single_case_n = kSingleCase;
  o.random_sizes = 0;
  o.edge_radius = 72;
  o.large_n = 16384;
  o.large_pairs = 2;
  const std::uint64_t e = 512 * 1024;
  const std::vector<std::uint64_t> edges{e};
  // e - 72 .. e + 72, of which e - 1, e, e + 1 and the longest, e + 72, keep every case.
  const std::uint64_t single = 2 * o.edge_radius + 1 - 4;
  VerifyOptions every = o;
  every.single_case_n = every.max_size;

  const VerifyReport good = verify_copy(&plain_copy, edges, o);
  REQUIRE(good.ok());
  // A large n otherwise: two pairs, a random pair, two guard placements (fill: one, no src).
  CHECK(verify_copy(&plain_copy, edges, every).cases == good.cases + 4 * single);
  const VerifyReport good_fill = verify_fill(&plain_fill, edges, o);
  REQUIRE(good_fill.ok());
  CHECK(verify_fill(&plain_fill, edges, every).cases == good_fill.cases + 3 * single);

  const VerifyReport residue = verify_copy(&copy_drops_byte_at_residue, edges, o);
  REQUIRE_FALSE(residue.ok());
  CHECK(residue.failure->n % 64 == 37);
  CHECK(residue.failure->n > kSingleCase);

  // Each guard placement comes round within the first 11 lengths of the edge's window, all of
  // them single-case lengths.
  struct Guarded {
    CopyFn copy;
    FillFn fill;
    Placement where;
  };
  for (const Guarded& g : {Guarded{&copy_reads_past_src, nullptr, Placement::kSrcEndsAtGuard},
                           Guarded{&copy_reads_before_src, nullptr, Placement::kSrcAfterGuard},
                           Guarded{&copy_reads_past_dst, nullptr, Placement::kDstEndsAtGuard},
                           Guarded{&copy_reads_before_dst, nullptr, Placement::kDstAfterGuard},
                           Guarded{nullptr, &fill_reads_past_dst, Placement::kDstEndsAtGuard},
                           Guarded{nullptr, &fill_reads_before_dst, Placement::kDstAfterGuard}}) {
    const VerifyReport r = g.copy ? verify_copy(g.copy, edges, o) : verify_fill(g.fill, edges, o);
    REQUIRE_FALSE(r.ok());
    CHECK(r.failure->placement == g.where);
    CHECK(r.failure->n >= e - o.edge_radius);
    CHECK(r.failure->n < e - o.edge_radius + 11);
  }
}

TEST_CASE("verification_error: one wording for the harness's failure and the routine's") {
  VerifyReport rep;
  CHECK(verification_error(rep, "the tuned memcpy").ok());
  rep.failure = VerifyFailure{300, 1, 2, Placement::kInterior, 0, "byte 37 of dst differs"};
  const Status wrong = verification_error(rep, "the tuned memcpy", "; nothing was written");
  REQUIRE_FALSE(wrong.ok());
  CHECK(wrong.error().code == ErrorCode::kVerifyFailed);
  CHECK(wrong.error().message.rfind("the tuned memcpy failed verification: ", 0) == 0);
  CHECK(wrong.error().message.find("byte 37 of dst differs") != std::string::npos);
  CHECK(wrong.error().message.find("; nothing was written") != std::string::npos);
  rep.out_of_memory = true;
  const Status unchecked = verification_error(rep, "the tuned memcpy", "; nothing was written");
  REQUIRE_FALSE(unchecked.ok());
  CHECK(unchecked.error().code == ErrorCode::kSystem);
  CHECK(unchecked.error().message == std::string("the tuned memcpy could not be verified: byte 37 of dst differs (") +
                                         kVerifyNoMemory + "); nothing was written");
}

// Regression (round 41): test buffers that cannot be mapped (`ulimit -v`) were reported as the
// routine failing verification (kVerifyFailed, which the API calls a copysynth bug). In a child
// whose address space is capped just above what it uses: kSystem, "could not be verified".
TEST_CASE("verification without memory for its test buffers is the system's error, not the routine's") {
#if defined(__SANITIZE_ADDRESS__)
  MESSAGE("skipped under AddressSanitizer (its allocator aborts when the address space is capped)");
#else
  CopyParams p;
  p.operation = Operation::kMemcpy;
  p.vector_width = host_widths().back();
  p.nt_threshold = 4u << 20;  // an edge at 4 MiB: test buffers of megabytes
  Routine r = build(p);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    std::FILE* f = std::fopen("/proc/self/status", "r");
    long vm_kb = 0;
    char line[256];
    while (f && std::fgets(line, sizeof line, f))
      if (std::sscanf(line, "VmSize: %ld kB", &vm_kb) == 1) break;
    if (f) std::fclose(f);
    if (vm_kb <= 0) _exit(3);
    const rlim_t cap = static_cast<rlim_t>(vm_kb + 2048) * 1024;  // 2 MiB more than it maps now
    struct rlimit lim{cap, cap};
    if (setrlimit(RLIMIT_AS, &lim) != 0) _exit(3);
    const Status st = check_routine(r, VerifyOptions{});  // the full suite: lengths of megabytes
    if (st) _exit(4);  // verified with 2 MiB to spare: nothing was checked here
    const bool right = st.error().code == ErrorCode::kSystem &&
                       st.error().message.find("could not be verified") != std::string::npos;
    _exit(right ? 0 : 5);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK_MESSAGE(WEXITSTATUS(status) == 0, "child exit " << WEXITSTATUS(status)
                                                         << " (3: no VmSize or setrlimit, 4: verified anyway, 5: another error)");
#endif
}
