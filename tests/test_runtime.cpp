// copysynth — tests of the runtime module: CpuInfo (host detection, capping, synthetic CPUs,
// sysfs cache sizes), Routine (JIT build and install, copying correctness with canaries and
// guard pages, the SysV ABI, W^X) and wisdom files (round trip, CPU check, malformed files).
#include <algorithm>
#include <doctest/doctest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "copysynth/cpu.hpp"
#include "copysynth/emit.hpp"
#include "copysynth/file_io.hpp"
#include "copysynth/ladders.hpp"
#include "copysynth/routine.hpp"
#include "copysynth/wisdom.hpp"
#include "support/routines.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"
#include "support/text.hpp"
#include "support/wisdom.hpp"

using namespace copysynth;
using nlohmann::json;

namespace {

using test::contains;
using test::host_widths;
using test::read_text;
using test::TempDir;
using test::write_file;

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

// ================================================================================ CpuInfo ==

TEST_CASE("CpuInfo::host describes a usable x86-64 CPU") {
  const CpuInfo& h = CpuInfo::host();
  CHECK(&h == &CpuInfo::host());  // read once and cached
  CHECK_FALSE(h.vendor().empty());
  const IsaFeatures& f = h.features();
  CHECK(f.has(Feature::kSSE2));
  if (f.has(Feature::kAVX2)) CHECK(f.has(Feature::kAVX));
  if (f.has(Feature::kAVX512F)) CHECK(f.has(Feature::kAVX));
  if (f.has(Feature::kAVX512BW)) CHECK(f.has(Feature::kAVX512F));
  if (f.has(Feature::kAVX512VL)) CHECK(f.has(Feature::kAVX512F));
  CHECK(h.family() > 0);
  const std::string sig = h.signature();
  CHECK(contains(sig, h.vendor()));
  CHECK(contains(sig, f.to_string()));
  CHECK(sig == h.vendor() + "-" + std::to_string(h.family()) + "-" + std::to_string(h.model()) + ":" +
                   f.to_string());
  const std::string desc = h.describe();
  CHECK(contains(desc, sig));
  CHECK(contains(desc, f.to_string()));
  MESSAGE("host: " << sig);
}

TEST_CASE("CpuInfo::capped removes vector features and changes the signature") {
  const CpuInfo& h = CpuInfo::host();
  const CpuInfo c = h.capped(IsaLevel::kSSE2);
  for (auto v : {Feature::kAVX, Feature::kAVX2, Feature::kAVX512F, Feature::kAVX512BW,
                 Feature::kAVX512VL})
    CHECK_FALSE(c.features().has(v));
  CHECK(c.features().has(Feature::kSSE2));
  CHECK(c.features() == h.features().capped(IsaLevel::kSSE2));
  CHECK(c.vendor() == h.vendor());
  CHECK(c.family() == h.family());
  CHECK(c.model() == h.model());
  CHECK(c.stepping() == h.stepping());
  CHECK(c.brand() == h.brand());
  CHECK(c.features().max_vector_bytes() == 16);
  if (h.features().has(Feature::kAVX2)) {
    CHECK(c.signature() != h.signature());
  } else {
    CHECK(c.signature() == h.signature());
  }
  const CpuInfo c2 = h.capped(IsaLevel::kAVX2);
  for (auto v : {Feature::kAVX512F, Feature::kAVX512BW, Feature::kAVX512VL}) CHECK_FALSE(c2.features().has(v));
  CHECK(c2.features().has(Feature::kAVX2) == h.features().has(Feature::kAVX2));
  CHECK(h.capped(IsaLevel::kAVX512).signature() == h.signature());
  // Capping never adds: an SSE2-only CPU stays SSE2-only.
  const CpuInfo s = CpuInfo::synthetic("X", 1, 2, 3, IsaFeatures::for_level(IsaLevel::kSSE2));
  CHECK(s.capped(IsaLevel::kAVX512).features() == s.features());
}

TEST_CASE("CpuInfo::synthetic") {
  const CpuInfo c =
      CpuInfo::synthetic("GenuineIntel", 6, 143, 8, IsaFeatures::for_level(IsaLevel::kAVX512));
  CHECK(c.vendor() == "GenuineIntel");
  CHECK(c.family() == 6);
  CHECK(c.model() == 143);
  CHECK(c.stepping() == 8);
  CHECK(c.features() == IsaFeatures::for_level(IsaLevel::kAVX512));
  CHECK(c.signature() == "GenuineIntel-6-143:sse2,avx,avx2,avx512f,avx512bw,avx512vl,bmi2");
  CHECK(c.caches().l1d == 0);
  CHECK(c.caches().l2 == 0);
  CHECK(c.caches().l3 == 0);
  const CpuInfo d = c.capped(IsaLevel::kAVX2);
  CHECK(d.signature() == "GenuineIntel-6-143:sse2,avx,avx2,bmi2");
  CHECK(c.capped(IsaLevel::kSSE2).signature() == "GenuineIntel-6-143:sse2,bmi2");
  // Stepping is not part of the signature.
  CHECK(CpuInfo::synthetic("GenuineIntel", 6, 143, 1, c.features()).signature() == c.signature());
  CHECK(CpuInfo::synthetic("GenuineIntel", 6, 144, 8, c.features()).signature() != c.signature());
}

TEST_CASE("read_cache_sizes reads a sysfs cache directory") {
  TempDir tmp;
  const std::string dir = tmp.path + "/cache";
  // Instruction cache first, with a different size, so only the data cache counts as L1d.
  write_file(dir + "/index0/level", "1\n");
  write_file(dir + "/index0/type", "Instruction\n");
  write_file(dir + "/index0/size", "64K\n");
  write_file(dir + "/index1/level", "1\n");
  write_file(dir + "/index1/type", "Data\n");
  write_file(dir + "/index1/size", "32K\n");
  write_file(dir + "/index2/level", "2\n");
  write_file(dir + "/index2/type", "Unified\n");
  write_file(dir + "/index2/size", "1024K\n");
  write_file(dir + "/index3/level", "3\n");
  write_file(dir + "/index3/type", "Unified\n");
  write_file(dir + "/index3/size", "32M\n");
  const CacheSizes c = read_cache_sizes(dir);
  CHECK(c.l1d == 32 * 1024);
  CHECK(c.l2 == 1024 * 1024);
  CHECK(c.l3 == 32ull * 1024 * 1024);

  // Only L1d and L2 present.
  const std::string dir2 = tmp.path + "/cache2";
  write_file(dir2 + "/index0/level", "1\n");
  write_file(dir2 + "/index0/type", "Data\n");
  write_file(dir2 + "/index0/size", "48K\n");
  write_file(dir2 + "/index1/level", "2\n");
  write_file(dir2 + "/index1/type", "Unified\n");
  write_file(dir2 + "/index1/size", "2048K\n");
  const CacheSizes c2 = read_cache_sizes(dir2);
  CHECK(c2.l1d == 48 * 1024);
  CHECK(c2.l2 == 2048 * 1024);
  CHECK(c2.l3 == 0);

  const CacheSizes none = read_cache_sizes(tmp.path + "/does-not-exist");
  CHECK(none.l1d == 0);
  CHECK(none.l2 == 0);
  CHECK(none.l3 == 0);
}

// ================================================================================ Routine ==

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

// ================================================================================= wisdom ==

namespace {

Wisdom sample_wisdom() {
  Wisdom w;
  set_cpu(w, CpuInfo::host());
  w.created = "2026-01-02T03:04:05Z";
  w.command = "autotune --emit best.json --workload seeds";
  CopyParams p;
  p.vector_width = 16;
  p.unroll = 8;
  p.prefetch_distance = 256;
  p.prefetch_hint = PrefetchHint::kNTA;
  p.nt_threshold = std::uint64_t{1} << 20;
  p.rep_threshold = 2048;
  p.rep_align_dst = false;
  p.loop_align = 32;
  p.nop_form = NopForm::kJumpOver;
  WisdomEntry e = test::entry_for(with_weights(plan_for(p), [](std::uint64_t lo, std::uint64_t) {
    return 0.125 + double(lo % 7) / 3.0;  // not the defaults, not round numbers
  }));
  e.points = {{4096, 0, 4, 1.7, 60.1},
              {17, 3, 61, 0.1 + 0.2, 1e-3},
              {std::uint64_t{1} << 20, 63, 0, 12.5, 13.0}};
  w.entries.push_back(e);
  return w;
}

/// Writes `j` (or text) to a file in `dir` and loads it.
Result<Wisdom> load_text(const TempDir& dir, const std::string& text) {
  static int counter = 0;
  const std::string path = dir.path + "/w" + std::to_string(counter++) + ".json";
  write_file(path, text);
  return load_wisdom(path);
}

void expect_load_error(const TempDir& dir, const json& j, ErrorCode code,
                       std::initializer_list<const char*> in_message) {
  auto r = load_text(dir, j.dump(2));
  REQUIRE_FALSE(r.ok());
  CHECK_MESSAGE(r.error().code == code, "code " << error_code_name(r.error().code) << ": "
                                                << r.error().message);
  for (const char* s : in_message)
    CHECK_MESSAGE(contains(r.error().message, s), "\"" << s << "\" not in: " << r.error().message);
  // The in-memory parser gives the same code.
  auto r2 = wisdom_from_json(j);
  REQUIRE_FALSE(r2.ok());
  CHECK(r2.error().code == code);
}

}  // namespace

TEST_CASE("fnv1a64 test vectors") {
  CHECK(fnv1a64({}) == 0xcbf29ce484222325ull);
  CHECK(fnv1a64({'a'}) == 0xaf63dc4c8601ec8cull);
  CHECK(fnv1a64({'f', 'o', 'o', 'b', 'a', 'r'}) == 0x85944171f73967e8ull);
}

TEST_CASE("wisdom: save and load round trip") {
  TempDir dir;
  const Wisdom w = sample_wisdom();
  const std::string path = dir.path + "/best.json";
  const Status st = save_wisdom(w, path);
  REQUIRE_MESSAGE(st.ok(), (st.ok() ? std::string() : st.error().message));
  CHECK_FALSE(std::filesystem::exists(path + ".tmp"));  // written atomically via rename

  // The file is the documented JSON.
  std::ifstream in(path);
  const json j = json::parse(in);
  CHECK(j["schema"] == kWisdomSchema);
  CHECK(j["entries"].size() == 1);
  CHECK(j["entries"][0]["operation"] == "memcpy");
  CHECK(j["entries"][0]["params"]["nop_form"] == "jump");
  const std::string hash = j["entries"][0]["code_fnv1a64"];
  CHECK(hash.size() == 16);
  CHECK(std::strtoull(hash.c_str(), nullptr, 16) == w.entries[0].code_hash);
  CHECK(j["cpu"]["signature"] == CpuInfo::host().signature());

  auto r = load_wisdom(path);
  REQUIRE_MESSAGE(r.ok(), (r.ok() ? std::string() : r.error().message));
  const Wisdom& l = *r;
  CHECK(l.schema == kWisdomSchema);
  CHECK(l.generator_version == w.generator_version);
  CHECK(l.generator_version == COPYSYNTH_VERSION);
  CHECK(l.created == w.created);
  CHECK(l.command == w.command);
  CHECK(l.cpu_signature == w.cpu_signature);
  CHECK(l.cpu_vendor == w.cpu_vendor);
  CHECK(l.cpu_brand == w.cpu_brand);
  CHECK(l.cpu_features == w.cpu_features);
  CHECK(l.cpu_family == w.cpu_family);
  CHECK(l.cpu_model == w.cpu_model);
  CHECK(l.cpu_stepping == w.cpu_stepping);
  REQUIRE(l.entries.size() == 1);
  const WisdomEntry& e = l.entries[0];
  const WisdomEntry& o = w.entries[0];
  CHECK(e.operation == o.operation);
  CHECK(e.workload == o.workload);
  CHECK(e.plan.params == o.plan.params);
  CHECK(e.plan.ladder == o.plan.ladder);
  CHECK(e.plan.vec == o.plan.vec);
  REQUIRE(e.plan.classes.size() == o.plan.classes.size());
  for (std::size_t i = 0; i < e.plan.classes.size(); ++i) {
    CAPTURE(i);
    CHECK(e.plan.classes[i].lo == o.plan.classes[i].lo);
    CHECK(e.plan.classes[i].hi == o.plan.classes[i].hi);
    CHECK(e.plan.classes[i].strategy == o.plan.classes[i].strategy);
    CHECK(e.plan.classes[i].block == o.plan.classes[i].block);
    CHECK(e.plan.classes[i].weight == o.plan.classes[i].weight);  // exact: JSON keeps doubles
  }
  CHECK(e.plan == o.plan);
  CHECK(e.code_hash == o.code_hash);
  CHECK(e.points == o.points);
  // The loaded plan rebuilds the same bytes (the hash matches).
  auto bytes = assemble(e.plan);
  REQUIRE(bytes.ok());
  CHECK(fnv1a64(*bytes) == e.code_hash);
  CHECK(l.find(Operation::kMemcpy) == &l.entries[0]);
  CHECK(Wisdom{}.find(Operation::kMemcpy) == nullptr);

  // Saving again overwrites and round-trips again.
  REQUIRE(save_wisdom(l, path).ok());
  auto r2 = load_wisdom(path);
  REQUIRE(r2.ok());
  CHECK(r2->entries[0].plan == o.plan);
  // In-memory JSON round trip.
  auto r3 = wisdom_from_json(to_json(w));
  REQUIRE(r3.ok());
  CHECK(r3->entries[0].points == o.points);
}

namespace {
/// The names in directory `dir`, sorted.
std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}
}  // namespace

// Regression: the temporary file was PATH.tmp, a fixed name: a user's q.json.tmp was overwritten
// and removed by `autotune --emit q.json`.
TEST_CASE("wisdom: save_wisdom and save_fleet touch no file but the target; a failure leaves none") {
  TempDir dir;
  const std::string path = dir.path + "/q.json";
  write_file(path + ".tmp", "notes\n");
  REQUIRE(save_wisdom(sample_wisdom(), path).ok());
  CHECK(read_text(path + ".tmp") == "notes\n");
  CHECK(names_in(dir.path) == std::vector<std::string>{"q.json", "q.json.tmp"});
  REQUIRE(load_wisdom(path).ok());
  Fleet f;
  f.hosts = {sample_wisdom()};
  REQUIRE(save_fleet(f, path).ok());
  CHECK(read_text(path + ".tmp") == "notes\n");
  CHECK(names_in(dir.path) == std::vector<std::string>{"q.json", "q.json.tmp"});

  // The permissions of the file replaced are kept (mkstemp alone would give 0600).
  std::filesystem::permissions(path, std::filesystem::perms(0640));
  REQUIRE(save_wisdom(sample_wisdom(), path).ok());
  CHECK(std::filesystem::status(path).permissions() == std::filesystem::perms(0640));

  // A rename that fails (the target is a directory): an error naming both, the temporary removed.
  std::filesystem::create_directory(dir.path + "/d.json");
  const Status st = save_wisdom(sample_wisdom(), dir.path + "/d.json");
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().code == ErrorCode::kWisdomIo);
  CHECK_MESSAGE(contains(st.error().message, "cannot rename " + dir.path + "/d.json."), st.error().message);
  CHECK_MESSAGE(contains(st.error().message, "is unchanged"), st.error().message);
  CHECK(names_in(dir.path) == std::vector<std::string>{"d.json", "q.json", "q.json.tmp"});
  // No directory to create the temporary in.
  const Status nodir = save_wisdom(sample_wisdom(), dir.path + "/no/such/dir/best.json");
  REQUIRE_FALSE(nodir.ok());
  CHECK_MESSAGE(contains(nodir.error().message, "cannot create a temporary file next to " + dir.path + "/no/such/dir/best.json"),
                nodir.error().message);
  CHECK_MESSAGE(contains(nodir.error().message, "No such file or directory"), nodir.error().message);
}

TEST_CASE("wisdom: check_cpu") {
  const Wisdom w = sample_wisdom();
  CHECK(check_cpu(w, CpuInfo::host()).ok());
  const CpuInfo other = CpuInfo::synthetic("TestVendor", 25, 1, 1, IsaFeatures::for_level(IsaLevel::kAVX2));
  REQUIRE(other.signature() != CpuInfo::host().signature());
  const Status st = check_cpu(w, other);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().code == ErrorCode::kWisdomMismatch);
  CHECK_MESSAGE(contains(st.error().message, CpuInfo::host().signature()), st.error().message);
  CHECK_MESSAGE(contains(st.error().message, other.signature()), st.error().message);
  if (CpuInfo::host().features().has(Feature::kAVX2)) {
    const Status capped = check_cpu(w, CpuInfo::host().capped(IsaLevel::kSSE2));
    REQUIRE_FALSE(capped.ok());
    CHECK(capped.error().code == ErrorCode::kWisdomMismatch);
  }
}

TEST_CASE("parse_cpu_signature takes CpuInfo::signature() apart") {
  const CpuInfo c = CpuInfo::synthetic("GenuineIntel", 6, 143, 8, IsaFeatures::for_level(IsaLevel::kAVX2));
  auto s = parse_cpu_signature(c.signature());
  REQUIRE(s);
  CHECK(s->vendor == "GenuineIntel");
  CHECK(s->family == 6);
  CHECK(s->model == 143);
  CHECK(s->features == std::vector<std::string>{"sse2", "avx", "avx2", "bmi2"});
  CHECK(parse_cpu_signature(CpuInfo::host().signature()));
  // A vendor string may hold '-' and ':' (CPUID's 12 bytes); the split is at the end.
  auto odd = parse_cpu_signature("Odd-Vendor:x-26-2:sse2,erms");
  REQUIRE(odd);
  CHECK(odd->vendor == "Odd-Vendor:x");
  CHECK(odd->family == 26);
  CHECK(odd->model == 2);
  CHECK(odd->features == std::vector<std::string>{"sse2", "erms"});
  auto none = parse_cpu_signature("V-1-2:none");
  REQUIRE(none);
  CHECK(none->features.empty());
  for (const char* bad : {"", "GenuineIntel", "GenuineIntel-6-143", "GenuineIntel-6:sse2", "GenuineIntel-x-143:sse2",
                          "GenuineIntel-6-14a:sse2", "GenuineIntel-6--1:sse2", "GenuineIntel-6-143:", "GenuineIntel-6-143:sse2,,avx",
                          "GenuineIntel-6-1234567890:sse2", "-6:sse2"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_cpu_signature(bad));
  }
}

// Regression: wisdom tuned with `autotune --isa avx2` records the capped signature and was refused
// on the very host that made it ("tuned on CPU ...:sse2,avx,avx2,... but this host is ...avx512f...").
TEST_CASE("wisdom: check_cpu accepts this CPU model's capped-ISA wisdom, never another model or a missing feature") {
  const CpuInfo host = CpuInfo::synthetic("GenuineIntel", 6, 143, 8, IsaFeatures::for_level(IsaLevel::kAVX512));
  Wisdom w = sample_wisdom();
  SUBCASE("capped signature of this model: accepted") {
    for (IsaLevel cap : {IsaLevel::kAVX2, IsaLevel::kSSE2, IsaLevel::kAVX512}) {
      set_cpu(w, host.capped(cap));
      const Status st = check_cpu(w, host);
      CHECK_MESSAGE(st.ok(), (st.ok() ? std::string() : st.error().message));
    }
    // And on the real host: wisdom of this CPU capped at each level.
    for (IsaLevel cap : {IsaLevel::kAVX2, IsaLevel::kSSE2}) {
      set_cpu(w, CpuInfo::host().capped(cap));
      CHECK(check_cpu(w, CpuInfo::host()).ok());
    }
  }
  SUBCASE("another model, family or vendor: refused") {
    for (const CpuInfo& other : {CpuInfo::synthetic("GenuineIntel", 6, 144, 8, host.features()),
                                 CpuInfo::synthetic("GenuineIntel", 6, 144, 8, host.capped(IsaLevel::kAVX2).features()),
                                 CpuInfo::synthetic("GenuineIntel", 7, 143, 8, host.capped(IsaLevel::kAVX2).features()),
                                 CpuInfo::synthetic("AuthenticAMD", 6, 143, 8, host.capped(IsaLevel::kAVX2).features())}) {
      CAPTURE(other.signature());
      set_cpu(w, other);
      const Status st = check_cpu(w, host);
      REQUIRE_FALSE(st.ok());
      CHECK(st.error().code == ErrorCode::kWisdomMismatch);
      CHECK_MESSAGE(contains(st.error().message, "(another CPU model)"), st.error().message);
      CHECK_MESSAGE(contains(st.error().message, "tuned on CPU \"" + other.signature() + "\""), st.error().message);
    }
  }
  SUBCASE("a feature the host lacks: refused, named") {
    set_cpu(w, host);  // AVX-512 wisdom on the same model with AVX-512 off (capped, or the OS's XCR0)
    const Status st = check_cpu(w, host.capped(IsaLevel::kAVX2));
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().code == ErrorCode::kWisdomMismatch);
    CHECK_MESSAGE(contains(st.error().message, "this host lacks avx512f, avx512bw, avx512vl"), st.error().message);
    IsaFeatures with_erms = host.features();
    with_erms.add(Feature::kERMS);
    set_cpu(w, CpuInfo::synthetic("GenuineIntel", 6, 143, 8, with_erms));
    const Status erms = check_cpu(w, host);
    REQUIRE_FALSE(erms.ok());
    CHECK_MESSAGE(contains(erms.error().message, "this host lacks erms"), erms.error().message);
    // A name this copysynth does not know is a feature the host lacks.
    w.cpu_signature = "GenuineIntel-6-143:sse2,avx,avx2,amx";
    const Status amx = check_cpu(w, host);
    REQUIRE_FALSE(amx.ok());
    CHECK_MESSAGE(contains(amx.error().message, "this host lacks amx"), amx.error().message);
  }
  SUBCASE("an unreadable signature is refused unless identical") {
    w.cpu_signature = "not a signature";
    CHECK_FALSE(check_cpu(w, host).ok());
    CHECK_MESSAGE(contains(check_cpu(w, host).error().message, "is not a CPU signature"), check_cpu(w, host).error().message);
  }
}

TEST_CASE("fleet: select_host prefers the exact signature, else this model's capped-ISA host with the most features") {
  const CpuInfo host = CpuInfo::synthetic("GenuineIntel", 6, 143, 8, IsaFeatures::for_level(IsaLevel::kAVX512));
  auto doc = [](const CpuInfo& cpu, std::uint64_t hash) {
    Wisdom w = sample_wisdom();
    set_cpu(w, cpu);
    w.entries[0].code_hash = hash;  // tells the hosts apart
    return w;
  };
  const Wisdom sse2 = doc(host.capped(IsaLevel::kSSE2), 1), avx2 = doc(host.capped(IsaLevel::kAVX2), 2),
               full = doc(host, 3), other = doc(CpuInfo::synthetic("GenuineIntel", 6, 144, 8, host.features()), 4);
  Fleet f;
  f.hosts = {other, sse2, avx2, full};
  auto i = select_host_index(f, host.signature());
  REQUIRE(i);
  CHECK(*i == 3);  // exact
  f.hosts = {other, sse2, avx2};
  i = select_host_index(f, host.signature());
  REQUIRE(i);
  CHECK(*i == 2);  // compatible, most features
  auto w = select_host(f, host);
  REQUIRE(w);
  CHECK(w->entries[0].code_hash == 2);
  CHECK(select_host_index(f, host.capped(IsaLevel::kSSE2).signature()).value() == 1);  // exact again
  f.hosts = {other, avx2};
  auto miss = select_host_index(f, host.capped(IsaLevel::kSSE2).signature());  // avx2 is more than it has
  REQUIRE_FALSE(miss);
  CHECK(miss.error().code == ErrorCode::kWisdomMismatch);
  CHECK_MESSAGE(contains(miss.error().message, "none of the 2 CPUs"), miss.error().message);
  // A one-host file, capped on this model: load_wisdom_for takes it.
  TempDir dir;
  Wisdom mine = sample_wisdom();
  set_cpu(mine, CpuInfo::host().capped(IsaLevel::kSSE2));
  REQUIRE(save_wisdom(mine, dir.path + "/sse2.json").ok());
  auto l = load_wisdom_for(dir.path + "/sse2.json", CpuInfo::host());
  REQUIRE_MESSAGE(l.ok(), (l.ok() ? std::string() : l.error().message));
  CHECK(l->cpu_signature == CpuInfo::host().capped(IsaLevel::kSSE2).signature());
}

TEST_CASE("wisdom: I/O errors") {
  TempDir dir;
  auto r = load_wisdom(dir.path + "/missing.json");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ErrorCode::kWisdomIo);
  CHECK(contains(r.error().message, dir.path + "/missing.json"));
  const Status st = save_wisdom(sample_wisdom(), dir.path + "/no/such/dir/best.json");
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().code == ErrorCode::kWisdomIo);
}

// Regression: wisdom was read with no size limit and blocking opens: COPYSYNTH_WISDOM=/dev/zero
// grew a program to 3.4 GB, a FIFO hung it, and a directory was "not valid JSON".
TEST_CASE("wisdom: only a regular file of at most kMaxWisdomBytes is read, and what else it is is said") {
  TempDir dir;
  alarm(60);  // a blocking open or an endless read fails the test instead of hanging it
  auto expect_refused = [](const std::string& path, ErrorCode code, std::initializer_list<std::string> texts) {
    CAPTURE(path);
    for (int fleet = 0; fleet < 2; ++fleet) {
      const Error e = fleet ? load_fleet(path).error() : load_wisdom(path).error();
      CHECK_MESSAGE(e.code == code, error_code_name(e.code) << ": " << e.message);
      for (const auto& t : texts) CHECK_MESSAGE(contains(e.message, t), "\"" << t << "\" not in: " << e.message);
      CHECK_FALSE(contains(e.message, "not valid JSON"));
    }
  };
  expect_refused(dir.path, ErrorCode::kWisdomIo, {dir.path + " is a directory, not a wisdom file"});
  const std::string fifo = dir.path + "/fifo.json";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  expect_refused(fifo, ErrorCode::kWisdomIo, {fifo + " is a FIFO (named pipe), not a wisdom file"});
  expect_refused("/dev/zero", ErrorCode::kWisdomIo, {"/dev/zero is a character device, not a wisdom file"});
  expect_refused("/dev/null", ErrorCode::kWisdomIo, {"/dev/null is a character device"});
  // Larger than the limit: refused by its size, not read (a sparse file: no disk used).
  const std::string big = dir.path + "/big.json";
  write_file(big, "{");
  std::filesystem::resize_file(big, kMaxWisdomBytes + 1);
  expect_refused(big, ErrorCode::kWisdomIo,
                 {big + " is " + std::to_string(kMaxWisdomBytes + 1) + " bytes, more than the 64 MiB", "not read"});
  // At the limit it is read (and is not JSON).
  std::filesystem::resize_file(big, kMaxWisdomBytes);
  CHECK(load_wisdom(big).error().code == ErrorCode::kWisdomMalformed);
  // A link to a regular file is read.
  const std::string good = dir.path + "/best.json";
  REQUIRE(save_wisdom(sample_wisdom(), good).ok());
  std::filesystem::create_symlink(good, dir.path + "/link.json");
  CHECK(load_wisdom(dir.path + "/link.json").ok());
  // An empty path is an error of its own.
  expect_refused("", ErrorCode::kInvalidArgument, {"the wisdom path is empty"});
  alarm(0);
}

TEST_CASE("wisdom: malformed files are rejected with the JSON path") {
  TempDir dir;
  const json good = to_json(sample_wisdom());
  REQUIRE(wisdom_from_json(good).ok());

  SUBCASE("not JSON") {
    auto r = load_text(dir, "this is not json {");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == ErrorCode::kWisdomMalformed);
    CHECK(contains(r.error().message, dir.path));
  }
  SUBCASE("truncated JSON") {
    const std::string text = good.dump(2);
    auto r = load_text(dir, text.substr(0, text.size() / 2));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == ErrorCode::kWisdomMalformed);
  }
  SUBCASE("empty file") {
    auto r = load_text(dir, "");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == ErrorCode::kWisdomMalformed);
  }
  SUBCASE("not an object") {
    expect_load_error(dir, json::array({1, 2, 3}), ErrorCode::kWisdomMalformed, {});
  }
  SUBCASE("wrong schema number") {
    json j = good;
    j["schema"] = 3u;
    expect_load_error(dir, j, ErrorCode::kWisdomMismatch, {"schema 3", "it reads schemas 1 (one host) and 2 (a fleet)"});
  }
  SUBCASE("schema not a number") {
    json j = good;
    j["schema"] = "1";
    expect_load_error(dir, j, ErrorCode::kWisdomMalformed, {"schema"});
  }
  SUBCASE("missing entries") {
    json j = good;
    j.erase("entries");
    expect_load_error(dir, j, ErrorCode::kWisdomMalformed, {"entries"});
  }
  SUBCASE("entries not an array") {
    json j = good;
    j["entries"] = json::object();
    expect_load_error(dir, j, ErrorCode::kWisdomMalformed, {"entries"});
  }
  SUBCASE("missing cpu") {
    json j = good;
    j.erase("cpu");
    expect_load_error(dir, j, ErrorCode::kWisdomMalformed, {"cpu"});
  }
  SUBCASE("missing cpu signature") {
    json j = good;
    j["cpu"].erase("signature");
    expect_load_error(dir, j, ErrorCode::kWisdomMalformed, {"cpu.signature"});
  }
  SUBCASE("params with an unknown field") {
    json j = good;
    j["entries"][0]["params"]["unroll_factor"] = 4u;
    expect_load_error(dir, j, ErrorCode::kWisdomMalformed, {"entries[0].params", "unroll_factor"});
  }
  SUBCASE("params.unroll = 3") {
    json j = good;
    j["entries"][0]["params"]["unroll"] = 3u;
    expect_load_error(dir, j, ErrorCode::kInvalidParams, {"entries[0].params.unroll", "3"});
  }
  SUBCASE("params.unroll of the wrong type") {
    json j = good;
    j["entries"][0]["params"]["unroll"] = "8";
    expect_load_error(dir, j, ErrorCode::kWisdomMalformed, {"entries[0].params.unroll"});
  }
  SUBCASE("negative threshold") {
    json j = good;
    j["entries"][0]["params"]["nt_threshold"] = -4096;
    expect_load_error(dir, j, ErrorCode::kInvalidParams, {"entries[0].params.nt_threshold"});
  }
  SUBCASE("params not an object") {
    json j = good;
    j["entries"][0]["params"] = json::array();
    expect_load_error(dir, j, ErrorCode::kWisdomMalformed, {"entries[0].params"});
  }
  SUBCASE("plan classes that do not match the params: moved bound") {
    json j = good;
    const std::string lo = j["entries"][0]["plan"]["classes"][3]["lo"].dump();
    j["entries"][0]["plan"]["classes"][3]["lo"] = 5u;
    expect_load_error(dir, j, ErrorCode::kWisdomMismatch,
                      {("entries[0].plan.classes[3].lo: the file says 5 but these params give " + lo).c_str()});
  }
  // Regression: an edited hi or block gave "starts at n = 129 with "head_tail" but these params
  // give n = 129 with "head_tail"", naming neither the field nor the values that differ.
  SUBCASE("plan classes that do not match the params: hi, block, strategy named with both values") {
    json j = good;
    auto& c1 = j["entries"][0]["plan"]["classes"][1];
    const std::string hi = c1["hi"].dump(), block = c1["block"].dump(), strategy = c1["strategy"].dump();
    json h = j;
    h["entries"][0]["plan"]["classes"][1]["hi"] = 100000u;
    expect_load_error(dir, h, ErrorCode::kWisdomMismatch,
                      {("entries[0].plan.classes[1].hi: the file says 100000 but these params give " + hi).c_str()});
    json b = j;
    b["entries"][0]["plan"]["classes"][1]["block"] = 3u;
    expect_load_error(dir, b, ErrorCode::kWisdomMismatch,
                      {("entries[0].plan.classes[1].block: the file says 3 but these params give " + block).c_str()});
    json m = j;
    m["entries"][0]["plan"]["classes"][1]["hi"] = "max";
    expect_load_error(dir, m, ErrorCode::kWisdomMismatch,
                      {("entries[0].plan.classes[1].hi: the file says \"max\" but these params give " + hi).c_str()});
    json st = j;
    st["entries"][0]["plan"]["classes"][1]["strategy"] = "rep_string";
    expect_load_error(dir, st, ErrorCode::kWisdomMismatch,
                      {("entries[0].plan.classes[1].strategy: the file says \"rep_string\" but these params give " + strategy).c_str()});
    auto& last = j["entries"][0]["plan"]["classes"].back();
    REQUIRE(last["hi"] == "max");
    last["hi"] = 12345u;
    expect_load_error(dir, j, ErrorCode::kWisdomMismatch, {"the file says 12345 but these params give \"max\""});
  }
  SUBCASE("plan classes that do not match the params: other threshold") {
    json j = good;
    j["entries"][0]["params"]["rep_threshold"] = 4096u;  // the file's rep class starts at 2048
    expect_load_error(dir, j, ErrorCode::kWisdomMismatch, {"entries[0].plan.classes"});
  }
  SUBCASE("plan classes that do not match the params: strategy") {
    json j = good;
    auto& classes = j["entries"][0]["plan"]["classes"];
    classes[classes.size() - 1]["strategy"] = "aligned_loop";
    expect_load_error(dir, j, ErrorCode::kWisdomMismatch, {"entries[0].plan.classes"});
  }
  SUBCASE("plan classes that do not match the params: one class missing") {
    json j = good;
    j["entries"][0]["plan"]["classes"].erase(2);
    expect_load_error(dir, j, ErrorCode::kWisdomMismatch, {"entries[0].plan.classes"});
  }
  SUBCASE("plan classes that do not match the params: other width") {
    json j = good;
    j["entries"][0]["params"]["vector_width"] = 32u;
    expect_load_error(dir, j, ErrorCode::kWisdomMismatch, {"entries[0].plan.vector_width"});
  }
  SUBCASE("negative class weight") {
    json j = good;
    j["entries"][0]["plan"]["classes"][1]["weight"] = -0.5;
    expect_load_error(dir, j, ErrorCode::kWisdomMalformed, {"entries[0].plan.classes[1].weight"});
  }
  SUBCASE("class weight not a number") {
    json j = good;
    j["entries"][0]["plan"]["classes"][1]["weight"] = "heavy";
    expect_load_error(dir, j, ErrorCode::kWisdomMalformed, {"entries[0].plan.classes[1].weight"});
  }
  SUBCASE("unknown ladder") {
    json j = good;
    j["entries"][0]["plan"]["ladder"] = "no-such-ladder";
    auto r = load_text(dir, j.dump());
    REQUIRE_FALSE(r.ok());
    CHECK(contains(r.error().message, "entries[0].plan"));
  }
  SUBCASE("bad code_fnv1a64: not hex") {
    json j = good;
    j["entries"][0]["code_fnv1a64"] = "0123456789abcdeg";
    expect_load_error(dir, j, ErrorCode::kWisdomMalformed, {"entries[0].code_fnv1a64"});
  }
  SUBCASE("bad code_fnv1a64: too short") {
    json j = good;
    j["entries"][0]["code_fnv1a64"] = "0123456789abcde";
    expect_load_error(dir, j, ErrorCode::kWisdomMalformed, {"entries[0].code_fnv1a64"});
  }
  SUBCASE("bad code_fnv1a64: too long") {
    json j = good;
    j["entries"][0]["code_fnv1a64"] = "0123456789abcdef0";
    expect_load_error(dir, j, ErrorCode::kWisdomMalformed, {"entries[0].code_fnv1a64"});
  }
  SUBCASE("bad code_fnv1a64: a number") {
    json j = good;
    j["entries"][0]["code_fnv1a64"] = 12345;
    expect_load_error(dir, j, ErrorCode::kWisdomMalformed, {"entries[0].code_fnv1a64"});
  }
  SUBCASE("bad code_fnv1a64: missing") {
    json j = good;
    j["entries"][0].erase("code_fnv1a64");
    expect_load_error(dir, j, ErrorCode::kWisdomMalformed, {"entries[0].code_fnv1a64"});
  }
  SUBCASE("unknown operation") {
    json j = good;
    j["entries"][0]["operation"] = "memfrob";
    expect_load_error(dir, j, ErrorCode::kWisdomMismatch, {"entries[0].operation"});
  }
  SUBCASE("two entries for one operation") {
    json j = good;
    j["entries"].push_back(j["entries"][0]);
    expect_load_error(dir, j, ErrorCode::kWisdomMalformed, {"entries[1]"});
  }
  SUBCASE("point with a bad size") {
    json j = good;
    j["entries"][0]["points"][1]["size"] = "big";
    expect_load_error(dir, j, ErrorCode::kWisdomMalformed, {"entries[0].points[1].size"});
  }
  SUBCASE("point missing tuned_gbps") {
    json j = good;
    j["entries"][0]["points"][0].erase("tuned_gbps");
    expect_load_error(dir, j, ErrorCode::kWisdomMalformed, {"entries[0].points[0].tuned_gbps"});
  }
}

// Regression: code_fnv1a64 must be exactly 16 hex digits. It was once parsed with strtoull alone,
// which also accepts a "0x" prefix, a sign and leading white space ("-000000000000001" became
// 0xffffffffffffffff).
TEST_CASE("wisdom: code_fnv1a64 must be exactly 16 hex digits") {
  TempDir dir;
  const json good = to_json(sample_wisdom());
  for (const std::string h : {"0x0123456789abcd", "-000000000000001", "+123456789abcdef", " 123456789abcdef"}) {
    CAPTURE(h);
    json j = good;
    j["entries"][0]["code_fnv1a64"] = h;
    auto r = wisdom_from_json(j);
    CHECK_FALSE(r.ok());
    if (!r.ok()) {
      CHECK(r.error().code == ErrorCode::kWisdomMalformed);
      CHECK(contains(r.error().message, "entries[0].code_fnv1a64"));
    }
  }
}

// ================================================================================== fleet ==

namespace {

/// sample_wisdom() as made on another CPU (synthetic signature), with `ops` as its operations.
Wisdom other_host(const std::string& vendor, std::initializer_list<Operation> ops) {
  Wisdom w = sample_wisdom();
  const CpuInfo cpu = CpuInfo::synthetic(vendor, 25, 1, 1, IsaFeatures::for_level(IsaLevel::kAVX2));
  set_cpu(w, cpu);
  const WisdomEntry memcpy_entry = w.entries[0];
  w.entries.clear();
  for (Operation op : ops) {
    WisdomEntry e = memcpy_entry;
    e.operation = op;
    CopyParams p = e.plan.params;
    p.operation = op;
    if (op == Operation::kFill || op == Operation::kClearPage) p.prefetch_distance = 0;  // no loads to prefetch
    e.plan = plan_for(p);
    e.code_hash = 0x1111 * (static_cast<unsigned>(op) + 1);
    w.entries.push_back(e);
  }
  return w;
}

}  // namespace

TEST_CASE("fleet: a schema-1 file reads as a fleet of one host") {
  TempDir dir;
  const Wisdom w = sample_wisdom();
  REQUIRE(save_wisdom(w, dir.path + "/best.json").ok());
  auto f = load_fleet(dir.path + "/best.json");
  REQUIRE_MESSAGE(f.ok(), (f.ok() ? std::string() : f.error().message));
  REQUIRE(f->hosts.size() == 1);
  CHECK(f->hosts[0].cpu_signature == w.cpu_signature);
  CHECK(f->hosts[0].entries[0].plan == w.entries[0].plan);
  CHECK(f->command == w.command);
  // load_wisdom_for picks it for this host and refuses it, as check_cpu does, elsewhere.
  auto mine = load_wisdom_for(dir.path + "/best.json", CpuInfo::host());
  REQUIRE(mine.ok());
  CHECK(mine->entries[0].code_hash == w.entries[0].code_hash);
  const CpuInfo other = CpuInfo::synthetic("TestVendor", 25, 1, 1, IsaFeatures::for_level(IsaLevel::kAVX2));
  auto theirs = load_wisdom_for(dir.path + "/best.json", other);
  REQUIRE_FALSE(theirs.ok());
  CHECK(theirs.error().code == ErrorCode::kWisdomMismatch);
  CHECK_MESSAGE(contains(theirs.error().message, "tuned on CPU"), theirs.error().message);
  CHECK_MESSAGE(contains(theirs.error().message, dir.path + "/best.json"), theirs.error().message);
}

TEST_CASE("fleet: save, load, select the running CPU's host") {
  TempDir dir;
  Fleet f;
  f.created = "2026-02-03T04:05:06Z";
  f.command = "autotune --merge a.json b.json --emit fleet.json";
  f.hosts = {other_host("VendorA", {Operation::kMemcpy, Operation::kFill}), sample_wisdom(),
             other_host("VendorB", {Operation::kMemmove})};
  const std::string path = dir.path + "/fleet.json";
  REQUIRE(save_fleet(f, path).ok());
  {
    std::ifstream in(path);
    const json j = json::parse(in);
    CHECK(j["schema"] == kFleetSchema);
    REQUIRE(j["hosts"].size() == 3);
    CHECK(j["hosts"][1]["schema"] == kWisdomSchema);  // every host a complete single-host document
    CHECK(wisdom_from_json(j["hosts"][1]).ok());
  }
  auto l = load_fleet(path);
  REQUIRE_MESSAGE(l.ok(), (l.ok() ? std::string() : l.error().message));
  REQUIRE(l->hosts.size() == 3);
  CHECK(l->command == f.command);
  CHECK(l->created == f.created);
  for (std::size_t i = 0; i < 3; ++i) {
    CAPTURE(i);
    CHECK(l->hosts[i].cpu_signature == f.hosts[i].cpu_signature);
    REQUIRE(l->hosts[i].entries.size() == f.hosts[i].entries.size());
    for (std::size_t k = 0; k < f.hosts[i].entries.size(); ++k) CHECK(l->hosts[i].entries[k].plan == f.hosts[i].entries[k].plan);
  }
  CHECK(to_json(*l) == to_json(f));

  auto mine = load_wisdom_for(path, CpuInfo::host());
  REQUIRE_MESSAGE(mine.ok(), (mine.ok() ? std::string() : mine.error().message));
  CHECK(mine->cpu_signature == CpuInfo::host().signature());
  CHECK(mine->entries[0].code_hash == sample_wisdom().entries[0].code_hash);
  auto b = select_host(*l, f.hosts[2].cpu_signature);
  REQUIRE(b.ok());
  CHECK(b->find(Operation::kMemmove) != nullptr);

  const CpuInfo none = CpuInfo::synthetic("VendorC", 6, 1, 1, IsaFeatures::for_level(IsaLevel::kSSE2));
  auto miss = load_wisdom_for(path, none);
  REQUIRE_FALSE(miss.ok());
  CHECK(miss.error().code == ErrorCode::kWisdomMismatch);
  for (const auto& h : f.hosts) CHECK_MESSAGE(contains(miss.error().message, h.cpu_signature), miss.error().message);
  CHECK_MESSAGE(contains(miss.error().message, none.signature()), miss.error().message);
  CHECK_MESSAGE(contains(miss.error().message, "autotune --merge"), miss.error().message);

  // The single-host reader refuses a fleet by its schema and says what it is.
  auto single = load_wisdom(path);
  REQUIRE_FALSE(single.ok());
  CHECK(single.error().code == ErrorCode::kWisdomMismatch);
  CHECK_MESSAGE(contains(single.error().message, "fleet file"), single.error().message);
}

TEST_CASE("fleet: malformed fleet files are rejected with the JSON path") {
  Fleet f;
  f.hosts = {sample_wisdom(), other_host("VendorA", {Operation::kMemcpy})};
  const json good = to_json(f);
  REQUIRE(fleet_from_json(good).ok());
  auto expect = [](const json& j, ErrorCode code, const std::string& text) {
    auto r = fleet_from_json(j);
    REQUIRE_FALSE(r.ok());
    CHECK_MESSAGE(r.error().code == code, error_code_name(r.error().code) << ": " << r.error().message);
    CHECK_MESSAGE(contains(r.error().message, text), "\"" << text << "\" not in: " << r.error().message);
  };
  SUBCASE("hosts missing") {
    json j = good;
    j.erase("hosts");
    expect(j, ErrorCode::kWisdomMalformed, "hosts");
  }
  SUBCASE("hosts not an array") {
    json j = good;
    j["hosts"] = json::object();
    expect(j, ErrorCode::kWisdomMalformed, "hosts");
  }
  SUBCASE("no hosts") {
    json j = good;
    j["hosts"] = json::array();
    expect(j, ErrorCode::kWisdomMalformed, "at least one host");
  }
  SUBCASE("a host that is not an object") {
    json j = good;
    j["hosts"][1] = 7;
    expect(j, ErrorCode::kWisdomMalformed, "hosts[1]");
  }
  SUBCASE("a malformed host names its path") {
    json j = good;
    j["hosts"][1]["entries"][0]["params"]["unroll"] = "four";
    expect(j, ErrorCode::kWisdomMalformed, "hosts[1].entries[0].params.unroll");
  }
  SUBCASE("a fleet inside a fleet") {
    json j = good;
    j["hosts"][0] = good;
    expect(j, ErrorCode::kWisdomMismatch, "hosts[0]");
  }
  SUBCASE("two hosts with one signature") {
    json j = good;
    j["hosts"][1] = j["hosts"][0];
    expect(j, ErrorCode::kWisdomMalformed, "hosts[1].cpu.signature");
  }
  SUBCASE("generator_version missing") {
    json j = good;
    j.erase("generator_version");
    expect(j, ErrorCode::kWisdomMalformed, "generator_version");
  }
  SUBCASE("schema 3") {
    json j = good;
    j["schema"] = 3;
    expect(j, ErrorCode::kWisdomMismatch, "schema 3");
  }
}

TEST_CASE("fleet: merge keys hosts by CPU signature; a later entry replaces an earlier one") {
  const Wisdom a = other_host("VendorA", {Operation::kMemcpy, Operation::kFill});
  Wisdom a2 = other_host("VendorA", {Operation::kFill, Operation::kMemmove});
  a2.command = "autotune --op fill,memmove --emit a2.json";
  for (auto& e : a2.entries) e.code_hash += 0x100;  // tell the re-tuned entries apart
  const Wisdom b = other_host("VendorB", {Operation::kMemcpy});
  Fleet fa, fb, fa2;
  fa.hosts = {a};
  fb.hosts = {b};
  fa2.hosts = {a2};
  std::vector<std::string> notes;
  const Fleet m = merge_fleets({fa, fb, fa2}, &notes, {"a.json", "b.json", "a2.json"});
  REQUIRE(m.hosts.size() == 2);
  CHECK(m.hosts[0].cpu_signature == a.cpu_signature);
  CHECK(m.hosts[1].cpu_signature == b.cpu_signature);
  const Wisdom& ma = m.hosts[0];
  CHECK(ma.command == a2.command);  // the later header
  REQUIRE(ma.entries.size() == 3);  // memcpy kept from a.json; fill replaced; memmove added
  CHECK(ma.entries[0].operation == Operation::kMemcpy);
  CHECK(ma.entries[0].code_hash == a.entries[0].code_hash);
  CHECK(ma.entries[1].operation == Operation::kFill);
  CHECK(ma.entries[1].code_hash == a2.entries[0].code_hash);
  CHECK(ma.entries[2].operation == Operation::kMemmove);
  REQUIRE(notes.size() == 1);
  CHECK_MESSAGE(contains(notes[0], "fill replaced by the entry of a2.json"), notes[0]);
  CHECK_MESSAGE(contains(notes[0], a.cpu_signature), notes[0]);
  // The merged fleet is a valid document.
  REQUIRE(fleet_from_json(to_json(m)).ok());
}

// ====================================================================== keeping on --emit ==

namespace {

/// sample_wisdom() (this CPU) with entries for `ops`, each told apart by its code hash.
Wisdom this_host(std::initializer_list<Operation> ops, std::uint64_t tag) {
  Wisdom w = other_host("VendorA", ops);
  set_cpu(w, CpuInfo::host());
  for (auto& e : w.entries) e.code_hash += tag;
  return w;
}

/// save_wisdom_keeping with its progress lines collected.
Status save_keeping(const Wisdom& w, const std::string& path, std::vector<std::string>& said) {
  return save_wisdom_keeping(w, path, CpuInfo::host(), [&](const std::string& s) { said.push_back(s); });
}

std::vector<Operation> ops_of(const Wisdom& w) {
  std::vector<Operation> ops;
  for (const auto& e : w.entries) ops.push_back(e.operation);
  return ops;
}

}  // namespace

TEST_CASE("save_wisdom_keeping: a new file is written as it is") {
  TempDir dir;
  const std::string path = dir.path + "/best.json";
  std::vector<std::string> said;
  const Wisdom w = this_host({Operation::kMemcpy}, 1);
  REQUIRE(save_keeping(w, path, said).ok());
  CHECK(said == std::vector<std::string>{"wrote " + path});
  auto back = load_wisdom(path);
  REQUIRE(back.ok());
  CHECK(ops_of(*back) == std::vector<Operation>{Operation::kMemcpy});
  CHECK(back->entries[0].code_hash == w.entries[0].code_hash);
}

TEST_CASE("save_wisdom_keeping: this CPU's file keeps its entries for other operations") {
  TempDir dir;
  const std::string path = dir.path + "/best.json";
  const Wisdom old = this_host({Operation::kMemcpy, Operation::kFill, Operation::kClearPage}, 1);
  REQUIRE(save_wisdom(old, path).ok());
  Wisdom w = this_host({Operation::kMemcpy, Operation::kMemmove}, 2);
  w.command = "autotune --op memcpy,memmove --emit best.json";
  std::vector<std::string> said;
  REQUIRE(save_keeping(w, path, said).ok());
  auto back = load_wisdom(path);
  REQUIRE(back.ok());
  // The new entries first, then the kept ones; memcpy is the new one; the header is the new one's.
  CHECK(ops_of(*back) == std::vector<Operation>{Operation::kMemcpy, Operation::kMemmove, Operation::kFill,
                                                Operation::kClearPage});
  CHECK(back->entries[0].code_hash == w.entries[0].code_hash);
  CHECK(back->entries[2].code_hash == old.entries[1].code_hash);
  CHECK(back->command == w.command);
  CHECK(said == std::vector<std::string>{"kept the fill entry of " + path, "kept the clear_page entry of " + path,
                                         "wrote " + path});
  CHECK_FALSE(std::filesystem::exists(path + ".bak"));
}

TEST_CASE("save_wisdom_keeping: a file it cannot merge is moved to a free backup name, never overwritten") {
  TempDir dir;
  const std::string path = dir.path + "/best.json";
  const Wisdom w = this_host({Operation::kMemcpy}, 1);
  std::vector<std::string> said;
  SUBCASE("another CPU's wisdom") {
    REQUIRE(save_wisdom(other_host("VendorB", {Operation::kFill}), path).ok());
    const std::string before = read_text(path);
    REQUIRE(save_keeping(w, path, said).ok());
    CHECK(read_text(path + ".bak") == before);
    REQUIRE(said.size() == 2);
    CHECK_MESSAGE(contains(said[0], "moved the existing " + path + " to " + path + ".bak: "), said[0]);
    CHECK_MESSAGE(contains(said[0], "tuned on CPU"), said[0]);  // check_cpu's reason
  }
  SUBCASE("not wisdom at all, twice: each file gets its own backup") {
    write_file(path, "not json");
    REQUIRE(save_keeping(w, path, said).ok());
    CHECK_MESSAGE(contains(said[0], "not valid JSON"), said[0]);
    write_file(path, "second text");
    REQUIRE(save_keeping(w, path, said).ok());
    CHECK(read_text(path + ".bak") == "not json");
    CHECK(read_text(path + ".bak.1") == "second text");
  }
  auto back = load_wisdom(path);
  REQUIRE(back.ok());
  CHECK(ops_of(*back) == std::vector<Operation>{Operation::kMemcpy});
}

TEST_CASE("save_wisdom_keeping: into a fleet file this CPU's entries join its host; the others stay") {
  TempDir dir;
  const std::string path = dir.path + "/fleet.json";
  Fleet f;
  f.hosts = {other_host("VendorB", {Operation::kMemcpy}), this_host({Operation::kMemcpy, Operation::kFill}, 1)};
  f.created = "2026-01-01T00:00:00Z";
  REQUIRE(save_fleet(f, path).ok());
  Wisdom w = this_host({Operation::kMemcpy}, 2);
  w.created = "2026-05-06T07:08:09Z";
  std::vector<std::string> said;
  REQUIRE(save_keeping(w, path, said).ok());
  CHECK(said == std::vector<std::string>{"wrote this CPU's entries into the fleet file " + path +
                                         " (2 CPUs; the others unchanged)"});
  auto back = load_fleet(path);
  REQUIRE(back.ok());
  CHECK(back->schema == kFleetSchema);
  CHECK(back->created == w.created);
  REQUIRE(back->hosts.size() == 2);
  CHECK(to_json(back->hosts[0]) == to_json(f.hosts[0]));
  const Wisdom& mine = back->hosts[1];
  CHECK(ops_of(mine) == std::vector<Operation>{Operation::kMemcpy, Operation::kFill});
  CHECK(mine.entries[0].code_hash == w.entries[0].code_hash);        // replaced
  CHECK(mine.entries[1].code_hash == f.hosts[1].entries[1].code_hash);  // kept
}

// Regression: a fleet file of one host (`autotune --merge a.json --emit fleet.json`, or a fleet
// playbook run on one machine) was moved to fleet.json.bak, since only fleets of two or more
// hosts were merged into.
TEST_CASE("save_wisdom_keeping: a fleet of one host is merged into too, never moved aside") {
  TempDir dir;
  const std::string path = dir.path + "/fleet.json";
  Fleet f;
  SUBCASE("of another CPU: this CPU becomes its second host") {
    f.hosts = {other_host("VendorB", {Operation::kMemcpy})};
  }
  SUBCASE("of this CPU: its host takes the entries") {
    f.hosts = {this_host({Operation::kFill}, 1)};
  }
  REQUIRE(save_fleet(f, path).ok());
  std::vector<std::string> said;
  REQUIRE(save_keeping(this_host({Operation::kMemcpy}, 2), path, said).ok());
  CHECK_FALSE(std::filesystem::exists(path + ".bak"));
  REQUIRE(said.size() == 1);
  CHECK_MESSAGE(contains(said[0], "into the fleet file"), said[0]);
  auto back = load_fleet(path);
  REQUIRE(back.ok());
  CHECK(back->schema == kFleetSchema);
  const bool other = f.hosts[0].cpu_signature != CpuInfo::host().signature();
  CHECK(back->hosts.size() == (other ? 2u : 1u));
  const Wisdom* mine = back->find(CpuInfo::host().signature());
  REQUIRE(mine != nullptr);
  CHECK(mine->find(Operation::kMemcpy) != nullptr);
  CHECK((mine->find(Operation::kFill) != nullptr) == !other);
}

TEST_CASE("save_wisdom_keeping: a directory is refused and nothing moves") {
  TempDir dir;
  const std::string path = dir.path + "/adir.json";
  std::filesystem::create_directory(path);
  std::vector<std::string> said;
  const Status st = save_keeping(this_host({Operation::kMemcpy}, 1), path, said);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().code == ErrorCode::kWisdomIo);
  CHECK_MESSAGE(contains(st.error().message, "is a directory"), st.error().message);
  CHECK(std::filesystem::is_directory(path));
  CHECK_FALSE(std::filesystem::exists(path + ".bak"));
  CHECK(said.empty());
}

TEST_CASE("free_backup_name: PATH.bak, then PATH.bak.1, .2, ...") {
  TempDir dir;
  const std::string path = dir.path + "/w.json";
  CHECK(free_backup_name(path) == path + ".bak");
  write_file(path + ".bak", "x");
  CHECK(free_backup_name(path) == path + ".bak.1");
  write_file(path + ".bak.1", "x");
  CHECK(free_backup_name(path) == path + ".bak.2");
}

TEST_CASE("check_output_path: a file in a directory that exists, never a directory") {
  TempDir dir;
  CHECK(check_output_path("--emit", dir.path + "/new.json").ok());
  const Status is_dir = check_output_path("--emit", dir.path);
  REQUIRE_FALSE(is_dir.ok());
  CHECK(is_dir.error().code == ErrorCode::kInvalidArgument);
  CHECK(is_dir.error().message == "--emit " + dir.path + ": is a directory; give a file name");
  const Status missing = check_output_path("--svg", dir.path + "/no/such/x.svg");
  REQUIRE_FALSE(missing.ok());
  CHECK_MESSAGE(contains(missing.error().message, "--svg " + dir.path + "/no/such/x.svg: the directory " + dir.path +
                                                      "/no/such does not exist"),
                missing.error().message);
}

TEST_CASE("build_entry rebuilds the tuned code and refuses code that differs" *
          test::skip_unless(CpuInfo::host().features().has(Feature::kSSE2), "needs SSE2 (the entry is an SSE2 routine)")) {
  const Wisdom w = sample_wisdom();
  auto r = build_entry(w, w.entries[0]);
  REQUIRE_MESSAGE(r.ok(), (r.ok() ? std::string() : r.error().message));
  CHECK(fnv1a64(r->bytes()) == w.entries[0].code_hash);
  WisdomEntry e = w.entries[0];
  e.code_hash ^= 1;
  auto bad = build_entry(w, e);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().code == ErrorCode::kWisdomMismatch);
  CHECK_MESSAGE(contains(bad.error().message, "differs from the one tuned"), bad.error().message);
  // The version that wrote the file does not decide (README, copysynth.h): the code does.
  Wisdom older = w;
  older.generator_version = "0.0.1";
  CHECK(build_entry(older, older.entries[0]).ok());
  auto older_bad = build_entry(older, e);
  REQUIRE_FALSE(older_bad.ok());
  CHECK_MESSAGE(contains(older_bad.error().message, "made by copysynth 0.0.1, this is " COPYSYNTH_VERSION),
                older_bad.error().message);
}
