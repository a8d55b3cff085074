// copysynth — tests of Routine (runtime/routine.hpp): JIT build and install, copying
// correctness with canaries and guard pages, n == 0, the SysV ABI, what a CPU refuses, W^X and
// fork().
#include <algorithm>
#include <doctest/doctest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "copysynth/cpu.hpp"
#include "copysynth/emit.hpp"
#include "copysynth/ladders.hpp"
#include "copysynth/routine.hpp"
#include "support/routines.hpp"
#include "support/text.hpp"

using namespace copysynth;

namespace {

using test::contains;
using test::host_widths;

constexpr NopForm kForms[] = {NopForm::kSingleByte, NopForm::kLongNop, NopForm::kPrefixedLongNop,
                              NopForm::kJumpOver};
constexpr std::uint32_t kUnrolls[] = {1, 2, 4, 8, 16};

/// The plan of `p` for the widest level (AVX-512): these tests build it for the host, or check
/// that a host without the level refuses it.
CopyPlan plan_for(const CopyParams& p) { return test::plan_for(p, IsaFeatures::for_level(IsaLevel::kAVX512)); }

Routine build(const CopyParams& p) {
  auto r = Routine::build(plan_for(p));
  REQUIRE_MESSAGE(r.ok(), (r.ok() ? std::string() : r.error().message));
  return std::move(r).value();
}

/// Page-aligned heap memory.
struct Buffer {
  explicit Buffer(std::size_t n) : size((n + 4095) / 4096 * 4096) {
    data = static_cast<std::uint8_t*>(std::aligned_alloc(4096, size));
    REQUIRE(data != nullptr);
  }
  ~Buffer() { std::free(data); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  std::uint8_t* data = nullptr;
  std::size_t size = 0;
};

constexpr std::uint8_t kCanary = 0xA5;
constexpr std::size_t kGuard = 320;  // canary bytes checked on each side of dst (> 4 x 64)

/// A source pattern that never contains the canary, so a byte not written (or written from
/// outside [src, src+n)) shows.
void fill_pattern(std::uint8_t* p, std::size_t n, unsigned seed = 0) {
  for (std::size_t i = 0; i < n; ++i) {
    std::uint8_t v = static_cast<std::uint8_t>((i * 131 + 7 + seed * 29) ^ (i >> 8));
    p[i] = v == kCanary ? static_cast<std::uint8_t>(v ^ 0x5A) : v;
  }
}

/// Copies n bytes from src_base + kGuard + so to dst_base + kGuard + dof with `fn`; returns an
/// empty string when the result is right (return value, contents, canaries, source untouched).
std::string check_copy(CopyFn fn, std::uint8_t* dst_base, std::uint8_t* src_base, std::size_t n,
                       std::size_t so, std::size_t dof) {
  std::uint8_t* d = dst_base + kGuard + dof;
  std::uint8_t* s = src_base + kGuard + so;
  std::memset(d - kGuard, kCanary, n + 2 * kGuard);
  // Snapshot a few source bytes around the range to detect writes to src.
  std::uint8_t before[4] = {s[-1], s[0], s[n > 0 ? n - 1 : 0], s[n]};
  void* r = fn(d, s, n);
  std::ostringstream o;
  o << "n=" << n << " src%64=" << so << " dst%64=" << dof << ": ";
  if (r != d) {
    o << "returned " << r << " instead of dst " << static_cast<void*>(d);
    return o.str();
  }
  if (std::memcmp(d, s, n) != 0) {
    std::size_t i = 0;
    while (d[i] == s[i]) ++i;
    o << "dst[" << i << "] = " << int(d[i]) << " but src[" << i << "] = " << int(s[i]);
    return o.str();
  }
  for (std::size_t i = 0; i < kGuard; ++i) {
    if (d[-1 - static_cast<std::ptrdiff_t>(i)] != kCanary) {
      o << "wrote dst[-" << (i + 1) << "]";
      return o.str();
    }
    if (d[n + i] != kCanary) {
      o << "wrote dst[n+" << i << "]";
      return o.str();
    }
  }
  std::uint8_t after[4] = {s[-1], s[0], s[n > 0 ? n - 1 : 0], s[n]};
  if (std::memcmp(before, after, 4) != 0) {
    o << "modified the source";
    return o.str();
  }
  return {};
}

struct CopyRig {
  static constexpr std::size_t kMax = (std::size_t{1} << 20) + 300000;
  Buffer src{kMax + 2 * kGuard + 128};
  Buffer dst{kMax + 2 * kGuard + 128};
  CopyRig() { fill_pattern(src.data, src.size); }

  /// Runs every size at every misalignment; returns the number of failures and the first message.
  int run(CopyFn fn, const std::vector<std::size_t>& sizes, std::string& first) {
    static const std::pair<std::size_t, std::size_t> kAligns[] = {{0, 0}, {1, 7}, {33, 63}, {60, 2}};
    int failures = 0;
    for (std::size_t n : sizes) {
      REQUIRE(n <= kMax);
      for (auto [so, dof] : kAligns) {
        const std::string err = check_copy(fn, dst.data, src.data, n, so, dof);
        if (!err.empty() && failures++ == 0) first = err;
      }
    }
    return failures;
  }
};

CopyRig& rig() {
  static CopyRig r;
  return r;
}

std::vector<std::size_t> standard_sizes() {
  std::vector<std::size_t> s;
  for (std::size_t n = 0; n <= 600; ++n) s.push_back(n);
  for (std::size_t n : {std::size_t{1000}, std::size_t{4096 + 3}, std::size_t{65536 + 17},
                        std::size_t{1} << 20})
    s.push_back(n);
  return s;
}
}  // namespace

// ================================================================================ Routine ==

TEST_CASE("short_name: rep in pieces, and one instruction again from rep_chunk_stop") {
  CopyParams p;
  p.rep_threshold = 4096;
  p.rep_chunk = 2u << 20;
  CHECK(short_name(p) == "memcpy/v32u4/pf0/nt-never/rep-4096a/al64long/repchunk2097152");
  p.rep_chunk_stop = 64u << 20;
  CHECK(short_name(p) == "memcpy/v32u4/pf0/nt-never/rep-4096a/al64long/repchunk2097152-67108864");
  p.prefetch_distance = 1024;
  p.prefetch_min = 32768;
  p.rep_stop = 8u << 20;
  p.rep_resume = 32u << 20;
  CHECK(short_name(p) == "memcpy/v32u4/pf1024t0+32768/nt-never/rep-4096a-8388608+33554432/al64long/repchunk2097152-67108864");
}

TEST_CASE("short_name: rep_alias_loop, with and without rep_alias_window, and not without a rep class") {
  CopyParams p;
  p.rep_threshold = 32768;
  p.rep_alias_loop = 65536;
  CHECK(short_name(p) == "memcpy/v32u4/pf0/nt-never/rep-32768a/al64long/aliasloop65536");
  p.rep_alias_window = 64;
  CHECK(short_name(p) == "memcpy/v32u4/pf0/nt-never/rep-32768a/al64long/repalias64/aliasloop65536");
  p.rep_threshold = kNever;
  CHECK(short_name(p).find("aliasloop") == std::string::npos);
}

TEST_CASE("Routine::build copies correctly for every host width, unroll and NOP form") {
  const auto sizes = standard_sizes();
  const std::uint32_t aligns[] = {64, 16, 32, 64, 1};  // per unroll index: cover every loop_align
  int built = 0;
  for (auto w : host_widths()) {
    for (std::size_t ui = 0; ui < std::size(kUnrolls); ++ui) {
      for (auto form : kForms) {
        CopyParams p;
        p.vector_width = w;
        p.unroll = kUnrolls[ui];
        p.nop_form = form;
        p.loop_align = aligns[ui];
        if (form == NopForm::kLongNop) p.prefetch_distance = 256;
        if (form == NopForm::kJumpOver) {
          p.prefetch_distance = 64;
          p.prefetch_hint = PrefetchHint::kNTA;
        }
        Routine r = build(p);
        ++built;
        INFO(r.name());
        REQUIRE((r.fn() != nullptr));
        CHECK(r.size() > 0);
        CHECK(r.size() == r.bytes().size());
        CHECK(r.params() == p);
        CHECK(r.plan().params == p);
        // loop_align is absolute: routines start 64-byte aligned (runtime/src/jit_memory.cpp,
        // allocation granularity 64).
        CHECK(reinterpret_cast<std::uintptr_t>(r.fn()) % 64 == 0);
        std::string first;
        const int failures = rig().run(r.fn(), sizes, first);
        CHECK_MESSAGE(failures == 0, failures << " failures; first: " << first);
      }
    }
  }
  CHECK(built == static_cast<int>(host_widths().size() * 5 * 4));
}

TEST_CASE("Routine::build copies correctly through the rep movsb and non-temporal classes") {
  auto sizes = standard_sizes();
  for (std::size_t n : {1023, 1024, 1025, 1089, 4096, 262143, 262144, 262145, 300001})
    sizes.push_back(n);
  for (auto w : host_widths()) {
    for (auto u : kUnrolls) {
      for (bool align_dst : {true, false}) {
        CopyParams p;
        p.vector_width = w;
        p.unroll = u;
        p.rep_threshold = 1024;
        p.nt_threshold = 1 << 18;
        p.rep_align_dst = align_dst;
        p.prefetch_distance = 512;
        Routine r = build(p);
        INFO(r.name());
        int rep = 0, nt = 0;
        for (const auto& c : r.plan().classes) {
          rep += c.strategy == Strategy::kRepString;
          nt += c.strategy == Strategy::kNonTemporalLoop;
        }
        REQUIRE(rep == 1);
        REQUIRE(nt == 1);
        std::string first;
        const int failures = rig().run(r.fn(), sizes, first);
        CHECK_MESSAGE(failures == 0, failures << " failures; first: " << first);
      }
    }
  }
}

namespace {
/// A region of `pages` read-write pages between two PROT_NONE pages.
struct GuardedRegion {
  explicit GuardedRegion(std::size_t pages) : len(pages * 4096) {
    void* m = ::mmap(nullptr, len + 2 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(m != MAP_FAILED);
    base = static_cast<std::uint8_t*>(m);
    REQUIRE(::mprotect(base, 4096, PROT_NONE) == 0);
    REQUIRE(::mprotect(base + 4096 + len, 4096, PROT_NONE) == 0);
    begin = base + 4096;
    end = begin + len;
  }
  ~GuardedRegion() { ::munmap(base, len + 2 * 4096); }
  std::size_t len;
  std::uint8_t* base;
  std::uint8_t* begin;
  std::uint8_t* end;
};
}  // namespace

TEST_CASE("Routine: no access outside [src, src+n) and [dst, dst+n) next to PROT_NONE pages") {
  // A read or write past either end faults (the test binary crashes: a failure).
  GuardedRegion src(3), dst(3);
  fill_pattern(src.begin, src.len, 3);
  std::vector<std::size_t> sizes;
  for (std::size_t n = 0; n <= 1100; ++n) sizes.push_back(n);
  for (std::size_t n : {2047, 2048, 2049, 4096, 8191, 12287, 12288}) sizes.push_back(n);
  int calls = 0, wrong = 0;
  for (auto w : host_widths()) {
    for (std::uint32_t u : {1u, 4u, 16u}) {
      for (int variant = 0; variant < 2; ++variant) {
        CopyParams p;
        p.vector_width = w;
        p.unroll = u;
        if (variant == 1) {  // every class below 12 KiB
          p.rep_threshold = 1024;
          p.nt_threshold = 2048;
        }
        Routine r = build(p);
        INFO(r.name());
        for (std::size_t n : sizes) {
          // src at the end of its region, dst at the start, then the other way round.
          const std::uint8_t* s1 = src.end - n;
          std::uint8_t* d1 = dst.begin;
          CHECK(r.fn()(d1, s1, n) == d1);
          wrong += std::memcmp(d1, s1, n) != 0;
          const std::uint8_t* s2 = src.begin;
          std::uint8_t* d2 = dst.end - n;
          CHECK(r.fn()(d2, s2, n) == d2);
          wrong += std::memcmp(d2, s2, n) != 0;
          calls += 2;
        }
      }
    }
  }
  CHECK(wrong == 0);
  CHECK(calls > 0);
}

TEST_CASE("Routine: n == 0 touches no memory whatever the pointers") {
  GuardedRegion g(1);
  for (auto w : host_widths()) {
    CopyParams p;
    p.vector_width = w;
    Routine r = build(p);
    INFO(r.name());
    void* bogus_dst = reinterpret_cast<void*>(std::uintptr_t{0x10});
    const void* bogus_src = reinterpret_cast<const void*>(std::uintptr_t{0x20});
    CHECK(r.fn()(bogus_dst, bogus_src, 0) == bogus_dst);
    CHECK(r.fn()(nullptr, nullptr, 0) == nullptr);
    CHECK(r.fn()(g.base, g.base, 0) == g.base);  // a PROT_NONE page
  }
}

// cs_call_check(fn, dst, src, n, &ret): calls fn(dst, src, n) with known values in every
// callee-saved register and returns a bit mask of the ones that changed (bit 0 rbx, 1 rbp,
// 2 r12, 3 r13, 4 r14, 5 r15) plus bit 6 if the direction flag is set after the call.
extern "C" std::uint64_t cs_call_check(CopyFn fn, void* dst, const void* src, std::size_t n,
                                       void** ret);
asm(R"(
    .pushsection .text
    .globl cs_call_check
    .type cs_call_check, @function
cs_call_check:
    pushq %rbx
    pushq %rbp
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    pushq %r8
    movq %rdi, %rax
    movq %rsi, %rdi
    movq %rdx, %rsi
    movq %rcx, %rdx
    movabsq $0x1111111111111111, %rbx
    movabsq $0x2222222222222222, %rbp
    movabsq $0x3333333333333333, %r12
    movabsq $0x4444444444444444, %r13
    movabsq $0x5555555555555555, %r14
    movabsq $0x6666666666666666, %r15
    callq *%rax
    popq %r8
    movq %rax, (%r8)
    xorl %eax, %eax
    movabsq $0x1111111111111111, %rcx
    cmpq %rcx, %rbx
    je 1f
    orl $1, %eax
1:  movabsq $0x2222222222222222, %rcx
    cmpq %rcx, %rbp
    je 2f
    orl $2, %eax
2:  movabsq $0x3333333333333333, %rcx
    cmpq %rcx, %r12
    je 3f
    orl $4, %eax
3:  movabsq $0x4444444444444444, %rcx
    cmpq %rcx, %r13
    je 4f
    orl $8, %eax
4:  movabsq $0x5555555555555555, %rcx
    cmpq %rcx, %r14
    je 5f
    orl $16, %eax
5:  movabsq $0x6666666666666666, %rcx
    cmpq %rcx, %r15
    je 6f
    orl $32, %eax
6:  pushfq
    popq %rcx
    testq $0x400, %rcx
    jz 7f
    orl $64, %eax
    cld
7:  popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbp
    popq %rbx
    ret
    .size cs_call_check, .-cs_call_check
    .popsection
)");

TEST_CASE("Routine: SysV ABI - callee-saved registers kept, direction flag clear, returns dst") {
  auto& R = rig();
  const std::size_t sizes[] = {0, 1, 2, 3, 5, 8, 15, 17, 33, 64, 70, 127, 130, 255, 300, 511, 600,
                               1000, 1030, 5000, 70000, 300000};
  int calls = 0;
  for (auto w : host_widths()) {
    for (std::uint32_t u : {1u, 4u}) {
      for (int variant = 0; variant < 2; ++variant) {
        CopyParams p;
        p.vector_width = w;
        p.unroll = u;
        if (variant == 1) {
          p.rep_threshold = 1024;
          p.nt_threshold = 65536;
          p.prefetch_distance = 128;
        }
        Routine r = build(p);
        INFO(r.name());
        for (std::size_t n : sizes) {
          std::uint8_t* d = R.dst.data + kGuard + 5;
          const std::uint8_t* s = R.src.data + kGuard + 9;
          void* ret = nullptr;
          const std::uint64_t mask = cs_call_check(r.fn(), d, s, n, &ret);
          CHECK_MESSAGE(mask == 0, "n=" << n << " clobbered mask " << mask);
          CHECK(ret == d);
          CHECK(std::memcmp(d, s, n) == 0);
          ++calls;
        }
      }
    }
  }
  CHECK(calls > 0);
}

TEST_CASE("Routine: installed code, name and size") {
  CopyParams p;  // defaults: memcpy, width 32, unroll 4, no prefetch, nt/rep never
  p.vector_width = host_widths().back() >= 32 ? 32 : 16;
  Routine r = build(p);
  CHECK(r.name() == short_name(p));
  CHECK(r.name().rfind("memcpy/v" + std::to_string(p.vector_width.value) + "u4/pf0/nt-never/rep-never", 0) == 0);
  CopyParams q = p;
  q.unroll = 16;
  q.prefetch_distance = 512;
  q.rep_threshold = 4096;
  CHECK(short_name(q) != short_name(p));
  CHECK(contains(short_name(q), "u16"));
  CHECK(contains(short_name(q), "rep-4096"));
  // The installed code is the plan's code: the same bytes as assemble(), readable at fn().
  auto expected = assemble(r.plan());
  REQUIRE(expected.ok());
  CHECK(r.bytes() == *expected);
  CHECK(r.size() == expected->size());
  CHECK(std::memcmp(reinterpret_cast<const void*>(r.fn()), r.bytes().data(), r.size()) == 0);
  CHECK(r.size() < 16384);  // a routine is a few hundred bytes to a few KiB
}

TEST_CASE("Routine: moves keep fn valid") {
  auto& R = rig();
  CopyParams p;
  p.vector_width = 16;
  auto res = Routine::build(plan_for(p));
  REQUIRE(res.ok());
  Routine a = std::move(res).value();
  const CopyFn f = a.fn();
  REQUIRE((f != nullptr));
  const std::size_t size = a.size();
  const std::string name = a.name();

  Routine b(std::move(a));
  CHECK((b.fn() == f));
  CHECK((a.fn() == nullptr));  // NOLINT(bugprone-use-after-move): moved-from state is documented by the test
  CHECK(b.size() == size);
  CHECK(b.name() == name);
  std::string first;
  CHECK(R.run(b.fn(), {0, 1, 31, 100, 1000, 5000}, first) == 0);

  CopyParams q;
  q.vector_width = 8;
  Routine c = build(q);
  c = std::move(b);  // releases c's old code, takes b's
  CHECK((c.fn() == f));
  CHECK((b.fn() == nullptr));  // NOLINT(bugprone-use-after-move)
  CHECK(c.params() == p);
  CHECK(R.run(c.fn(), {0, 1, 31, 100, 1000, 5000}, first) == 0);

  // Many routines built and destroyed: code memory is reused, nothing breaks.
  for (int i = 0; i < 50; ++i) {
    CopyParams t;
    t.vector_width = i % 2 ? 8 : 16;
    t.unroll = kUnrolls[i % 5];
    Routine tmp = build(t);
    CHECK(tmp.fn()(R.dst.data + kGuard, R.src.data + kGuard, 777) == R.dst.data + kGuard);
  }
  CHECK(std::memcmp(R.dst.data + kGuard, R.src.data + kGuard, 777) == 0);
}

TEST_CASE("Routine::build refuses what the CPU cannot run") {
  const CpuInfo sse2 = CpuInfo::host().capped(IsaLevel::kSSE2);
  {
    CopyParams p;
    p.vector_width = 32;
    auto r = Routine::build(plan_for(p), sse2);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == ErrorCode::kUnsupportedIsa);
    CHECK_MESSAGE(contains(r.error().message, "avx2"), r.error().message);
  }
  {
    CopyParams p;
    p.vector_width = 64;
    auto r = Routine::build(plan_for(p), CpuInfo::host().capped(IsaLevel::kAVX2));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == ErrorCode::kUnsupportedIsa);
    CHECK_MESSAGE(contains(r.error().message, "avx512f"), r.error().message);
  }
  {
    const CpuInfo old = CpuInfo::synthetic("GenuineIntel", 6, 15, 1, IsaFeatures::for_level(IsaLevel::kSSE2));
    CopyParams p;
    p.vector_width = 64;
    auto r = Routine::build(plan_for(p), old);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == ErrorCode::kUnsupportedIsa);
  }
  // Widths the host lacks are refused on the host itself.
  for (std::uint32_t w : {32u, 64u}) {
    bool supported = false;
    for (auto hw : host_widths()) supported |= hw == w;
    if (supported) continue;
    CopyParams p;
    p.vector_width = w;
    auto r = Routine::build(plan_for(p));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == ErrorCode::kUnsupportedIsa);
  }
  // SSE2-capped CPUs still build the GPR and SSE2 widths, and they run here.
  for (std::uint32_t w : {8u, 16u}) {
    CopyParams p;
    p.vector_width = w;
    auto r = Routine::build(plan_for(p), sse2);
    REQUIRE(r.ok());
    std::string first;
    CHECK(rig().run(r->fn(), {0, 7, 64, 129, 4099}, first) == 0);
  }
  // A plan that fails check_plan.
  {
    CopyParams p;
    p.vector_width = 16;
    CopyPlan plan = plan_for(p);
    plan.classes[3].lo += 1;
    auto r = Routine::build(plan);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == ErrorCode::kInvalidParams);
  }
  // Params out of their domain.
  {
    CopyParams p;
    p.vector_width = 16;
    CopyPlan plan = plan_for(p);
    plan.params.unroll = 3;
    auto r = Routine::build(plan);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == ErrorCode::kInvalidParams);
    CHECK(contains(r.error().message, "unroll"));
  }
}

// ==================================================================================== W^X ==

TEST_CASE("W^X: no mapping is writable and executable while routines are alive") {
  std::vector<Routine> alive;
  for (auto w : host_widths())
    for (auto u : {1u, 16u}) {
      CopyParams p;
      p.vector_width = w;
      p.unroll = u;
      alive.push_back(build(p));
    }
  REQUIRE(alive.size() >= 4);
  std::ifstream maps("/proc/self/maps");
  REQUIRE(maps.good());
  std::string line;
  int lines = 0, wx = 0;
  std::vector<bool> found(alive.size(), false);
  while (std::getline(maps, line)) {
    ++lines;
    std::istringstream l(line);
    std::string range, perms;
    l >> range >> perms;
    REQUIRE(perms.size() >= 4);
    if (perms[1] == 'w' && perms[2] == 'x') {
      ++wx;
      FAIL_CHECK("writable and executable mapping: " << line);
    }
    const auto dash = range.find('-');
    const std::uintptr_t lo = std::stoull(range.substr(0, dash), nullptr, 16);
    const std::uintptr_t hi = std::stoull(range.substr(dash + 1), nullptr, 16);
    for (std::size_t i = 0; i < alive.size(); ++i) {
      const auto a = reinterpret_cast<std::uintptr_t>(alive[i].fn());
      if (a >= lo && a < hi) {
        found[i] = true;
        CHECK_MESSAGE(perms[2] == 'x', line);  // the code runs from an executable view ...
        CHECK_MESSAGE(perms[1] == '-', line);  // ... that is not writable
      }
    }
  }
  CHECK(lines > 0);
  CHECK(wx == 0);
  for (std::size_t i = 0; i < alive.size(); ++i) CHECK_MESSAGE(found[i], "routine " << i << " not mapped");
}

TEST_CASE("Routine: after fork() parent and child build into separate code memory") {
  // The JIT's dual mapping is shared memory (one memfd mapped twice). A child process inherits it
  // with MAP_SHARED, so if parent and child both kept allocating from it, each would write code
  // over the other's. Here the child builds b, the parent then builds c (which its allocator would
  // place where b is), and the child checks that b's code is still b's.
  CopyParams p;
  p.vector_width = 16;
  p.unroll = 1;
  const Routine a = build(p);  // the parent's code memory exists before the fork
  int to_child[2], to_parent[2];
  REQUIRE(pipe(to_child) == 0);
  REQUIRE(pipe(to_parent) == 0);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    CopyParams q = p;
    q.unroll = 2;
    auto plan = make_plan(q, CpuInfo::host().features());
    if (!plan) _exit(10);
    auto b = Routine::build(*plan);
    if (!b) _exit(11);
    char go = 0;
    if (write(to_parent[1], "b", 1) != 1 || read(to_child[0], &go, 1) != 1) _exit(12);
    if (std::memcmp(b->entry(), b->bytes().data(), b->size()) != 0) _exit(13);  // overwritten
    unsigned char src[3000], dst[3000] = {};
    for (std::size_t i = 0; i < sizeof src; ++i) src[i] = static_cast<unsigned char>(i * 7 + 1);
    if (b->fn()(dst, src, sizeof src) != dst || std::memcmp(dst, src, sizeof src) != 0) _exit(14);
    if (a.fn()(dst, src + 1, 100) != dst || std::memcmp(dst, src + 1, 100) != 0) _exit(15);  // inherited code runs
    _exit(0);
  }
  char ready = 0;
  REQUIRE(read(to_parent[0], &ready, 1) == 1);
  CopyParams r = p;
  r.unroll = 4;
  r.loop_align = 64;
  const Routine c = build(r);
  REQUIRE(write(to_child[1], "c", 1) == 1);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK_MESSAGE(WEXITSTATUS(status) == 0, "child exit status " << WEXITSTATUS(status)
                                                                 << " (13: the parent's new code overwrote the child's)");
  for (int fd : {to_child[0], to_child[1], to_parent[0], to_parent[1]}) close(fd);
  unsigned char s2[500], d2[500] = {};
  for (std::size_t i = 0; i < sizeof s2; ++i) s2[i] = static_cast<unsigned char>(i ^ 0x5A);
  CHECK(c.fn()(d2, s2, sizeof s2) == d2);
  CHECK(std::memcmp(d2, s2, sizeof s2) == 0);
}
