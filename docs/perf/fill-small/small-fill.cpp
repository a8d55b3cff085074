// small-fill: fills of 1-128 bytes, glibc's memset, AOCL-LibMem's and the wisdom's fill (with its
// masked class as tuned, mask_max 128, and with mask_max 64/32/16/0), TSC ticks per call, in
// three modes (a measurement, not part of the build; README.md here):
//   loops     the same calls timed from several timing loops: the library's compare() (the loop
//             of the seeds' matrix), a C++ loop with the arguments in registers, and eight copies
//             of one assembly loop (below) at eight code addresses; median of 15 batches of 4000
//             calls each. Does the loop decide the ratio?
//   readback  a fixed length, then a load: nothing; the last 8 bytes set (the next call's address
//             waits on it); the 8 bytes after them (same line, not set): store-to-load forwarding
//   flips     the wisdom's fill rebuilt as autotune --from rebuilds it (build_entry, check_routine),
//             then compare() (the seeds' matrix's loop) at 1, 48 and 64 bytes against glibc, five
//             times over: does one routine at one length keep its level within a process?
//   guard     (needs guard-exit.diff applied to the build, see README.md) the mix as below for the
//             wisdom's fill as tuned, without its n = 0 exit, without its page guard, and without
//             both: what the two cost on the production mixes (such routines are never shipped:
//             no page guard is wrong at a page edge, no n = 0 exit slow on a page never touched)
//   mix       the eight production distributions replayed (replay(), 32768 calls, seed 0x5EED as
//             the report), throughput and read back (each call's destination waits on the last
//             bytes of the previous one); medians of 3 passes, ns per call, then geometric means
// Built and run on the Debian 12 host:
//   B=build; g++ -O2 -std=c++20 $(for d in */include; do echo -I$d; done) -I$B/include \
//     docs/perf/fill-small/small-fill.cpp -o /tmp/small-fill \
//     $B/tuner/libcopysynth_tuner.a $B/verify/libcopysynth_verify.a $B/runtime/libcopysynth_runtime.a \
//     $B/templates/libcopysynth_templates.a $B/generator/libcopysynth_generator.a \
//     /usr/lib/x86_64-linux-gnu/libasmjit.a -lpthread -lrt -lZydis -lZycore build-aocl/libaocl-peer.a \
//     -Wl,-u,aocl_memcpy,-u,aocl_memmove,-u,aocl_memset,-u,copysynth_aocl_peer_zen,-u,copysynth_aocl_peer_thresholds
//   COPYSYNTH_AOCL_CACHE_SIZES=48K,1M,32M taskset -c 1 /tmp/small-fill docs/perf/fill-small/best-4a50f59.json loops
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>
#include <x86intrin.h>
#include "copysynth/cpu.hpp"
#include "copysynth/ladders.hpp"
#include "copysynth/peers.hpp"
#include "copysynth/routine.hpp"
#include "copysynth/stats.hpp"
#include "copysynth/timing.hpp"
#include "copysynth/verify.hpp"
#include "copysynth/wisdom.hpp"
#include "copysynth/workload.hpp"
using namespace copysynth;
using FillF = void* (*)(void*, int, std::size_t);

// asm_loop(fn, dst, n, calls, copy): fn(dst, 0x5A, n) `calls` times (calls >= 1) from copy
// `copy` (0-7) of the same five-instruction loop; copy k starts k x 320 bytes into a page of its
// own, so the eight copies' branches lie at eight different addresses (bits 6-14).
extern "C" void asm_loop(FillF fn, void* dst, std::size_t n, unsigned calls, unsigned copy);
asm(R"(
	.text
	.globl asm_loop
	.type asm_loop, @function
	.p2align 4
asm_loop:
	push %rbx
	push %r12
	push %r13
	push %r14
	push %r15
	mov %rdi, %rbx
	mov %rsi, %r12
	mov %rdx, %r13
	mov %ecx, %r14d
	.irp k, 0,1,2,3,4,5,6,7
	cmp $\k, %r8d
	je 30\k\()f
	.endr
	jmp 39f
	.irp k, 0,1,2,3,4,5,6,7
	.p2align 12, 0xcc
	.skip 320 * \k, 0xcc
30\k:
	mov %r12, %rdi
	mov $0x5A, %esi
	mov %r13, %rdx
	call *%rbx
	dec %r14d
	jnz 30\k\()b
	jmp 39f
	.endr
39:
	pop %r15
	pop %r14
	pop %r13
	pop %r12
	pop %rbx
	ret
	.size asm_loop, .-asm_loop
)");

namespace {
struct Named { std::string name; FillF fn; };

double median15(const std::vector<double>& v0) {
  std::vector<double> v = v0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

__attribute__((noinline)) double c_loop(FillF f, void* d, std::size_t n, unsigned calls) {
  const std::uint64_t t0 = __rdtsc();
  for (unsigned c = 0; c < calls; ++c) f(d, 0x5A, n);
  return double(__rdtsc() - t0) / calls;
}

void loops(const std::vector<Named>& fs) {
  BenchBuffers buf(1 << 20);
  std::vector<const void*> en;
  for (const auto& f : fs) en.push_back(reinterpret_cast<const void*>(f.fn));
  std::printf("TSC ticks per call; ratio = glibc / tuned (above 1: the tuned fill faster)\n");
  std::printf("%5s %-10s", "n", "loop");
  for (const auto& f : fs) std::printf(" %8s", f.name.c_str());
  std::printf("  %s\n", "glibc/tuned");
  constexpr unsigned kCalls = 4000;
  for (std::size_t n : {1u, 16u, 32u, 48u, 64u, 100u, 128u}) {
    // The library's loop: compare(), 9 rounds, interleaved, as the seeds' matrix times it.
    const auto m = compare(Operation::kFill, en, buf, n, 0, 0, {});
    std::printf("%5zu %-10s", n, "compare");
    for (const auto& x : m) std::printf(" %8.2f", x.ticks_per_call);
    std::printf("  %.2fx\n", m[0].ticks_per_call / m[2].ticks_per_call);
    std::vector<std::vector<double>> s(fs.size());
    for (int r = 0; r < 15; ++r)
      for (std::size_t k = 0; k < fs.size(); ++k) s[k].push_back(c_loop(fs[k].fn, buf.dst(), n, kCalls));
    std::printf("%5zu %-10s", n, "c++");
    for (auto& v : s) std::printf(" %8.2f", median15(v));
    std::printf("  %.2fx\n", median15(s[0]) / median15(s[2]));
    for (unsigned copy = 0; copy < 8; ++copy) {
      std::vector<std::vector<double>> a(fs.size());
      for (int r = 0; r < 15; ++r)
        for (std::size_t k = 0; k < fs.size(); ++k) {
          const std::uint64_t t0 = __rdtsc();
          asm_loop(fs[k].fn, buf.dst(), n, kCalls, copy);
          a[k].push_back(double(__rdtsc() - t0) / kCalls);
        }
      std::printf("%5zu asm%-7u", n, copy);
      for (auto& v : a) std::printf(" %8.2f", median15(v));
      std::printf("  %.2fx\n", median15(a[0]) / median15(a[2]));
    }
  }
}

void readback(const std::vector<Named>& fs) {
  BenchBuffers buf(1 << 20);
  std::uint8_t* const base = buf.dst() + 320;
  constexpr unsigned kCalls = 4000;
  std::printf("TSC ticks per call; fill: nothing after; last8: load the last 8 bytes set (n >= 8), "
              "the next call's address waits on it; next8: load the 8 bytes after them\n");
  std::printf("%5s %-6s", "n", "use");
  for (const auto& f : fs) std::printf(" %8s", f.name.c_str());
  std::printf("\n");
  for (std::size_t n : {8u, 16u, 24u, 48u, 100u, 128u})
    for (int use = 0; use < 3; ++use) {
      std::vector<std::vector<double>> s(fs.size());
      for (int r = 0; r < 15; ++r)
        for (std::size_t k = 0; k < fs.size(); ++k) {
          const FillF f = fs[k].fn;
          std::uint64_t z = 0, zero = 0;
          asm volatile("" : "+r"(zero));
          const std::uint64_t t0 = __rdtsc();
          for (unsigned c = 0; c < kCalls; ++c) {
            f(base + z, 0x5A, n);
            if (use == 1) z = *reinterpret_cast<volatile std::uint64_t*>(base + n - 8) & zero;
            if (use == 2) z = *reinterpret_cast<volatile std::uint64_t*>(base + n) & zero;
          }
          s[k].push_back(double(__rdtsc() - t0) / kCalls);
        }
      static const char* names[] = {"fill", "last8", "next8"};
      std::printf("%5zu %-6s", n, names[use]);
      for (auto& v : s) std::printf(" %8.2f", median15(v));
      std::printf("\n");
    }
}

void flips(const Wisdom& w, const WisdomEntry& e) {
  auto r = build_entry(w, e, CpuInfo::host());
  if (!r) { std::fprintf(stderr, "%s\n", r.error().message.c_str()); std::exit(1); }
  if (auto st = check_routine(*r); !st) { std::fprintf(stderr, "%s\n", st.error().message.c_str()); std::exit(1); }
  BenchBuffers buf(64 << 20);
  const std::vector<const void*> en{reinterpret_cast<const void*>(&std::memset), r->entry()};
  std::printf("TSC ticks per call (compare(): 9 rounds, interleaved), glibc / tuned\n");
  for (int rep = 0; rep < 5; ++rep) {
    std::printf("repeat %d:", rep + 1);
    for (std::size_t n : {1u, 48u, 64u}) {
      const auto m = compare(Operation::kFill, en, buf, n, 0, 0, {});
      std::printf("  n=%zu %.2f / %.2f (%.2fx)", n, m[0].ticks_per_call, m[1].ticks_per_call,
                  m[0].ticks_per_call / m[1].ticks_per_call);
    }
    std::printf("\n");
  }
}

void mix(const std::vector<Named>& fs) {
  std::vector<const void*> en;
  for (const auto& f : fs) en.push_back(reinterpret_cast<const void*>(f.fn));
  std::printf("ns per call, medians of 3 passes\n%-22s", "distribution");
  for (const auto& f : fs) std::printf(" %8s", f.name.c_str());
  std::printf("\n");
  std::vector<std::vector<double>> logs(2, std::vector<double>(fs.size(), 0.0));
  const char* ds[] = {"MemcpyGoogleA", "MemcpyGoogleB", "MemcpyGoogleD", "MemcpyGoogleL",
                      "MemcpyGoogleM", "MemcpyGoogleQ", "MemcpyGoogleS", "MemcpyGoogleU"};
  for (const char* d : ds) {
    auto w = make_workload(d, Operation::kFill);
    if (!w) { std::fprintf(stderr, "%s\n", w.error().message.c_str()); std::exit(1); }
    const auto calls = replay_calls(*w, 32768, 0x5EED);
    ReplayBuffers rb(w->distribution->max_size(), false);
    for (int u = 0; u < 2; ++u) {
      TimingOptions t;
      t.use = u ? Use::kThenRead : Use::kCopy;
      std::vector<std::vector<double>> s(fs.size());
      for (int pass = 0; pass < 3; ++pass) {
        const auto m = replay(Operation::kFill, en, calls, rb, t);
        for (std::size_t k = 0; k < fs.size(); ++k) s[k].push_back(m[k].ns_per_call);
      }
      std::printf("%-22s", (std::string(d) + (u ? " read back" : "")).c_str());
      for (std::size_t k = 0; k < fs.size(); ++k) {
        const double v = median(s[k]);
        logs[u][k] += std::log(v);
        std::printf(" %8.2f", v);
      }
      std::printf("\n");
    }
  }
  for (int u = 0; u < 2; ++u) {
    std::printf("%-22s", u ? "geomean read back" : "geomean");
    for (std::size_t k = 0; k < fs.size(); ++k) std::printf(" %8.2f", std::exp(logs[u][k] / 8));
    std::printf("\n");
  }
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) { std::fprintf(stderr, "usage: small-fill WISDOM.json loops|readback|flips|mix|guard\n"); return 2; }
  auto w = load_wisdom(argv[1]);
  if (!w) { std::fprintf(stderr, "%s\n", w.error().message.c_str()); return 1; }
  const WisdomEntry* e = w->find(Operation::kFill);
  if (!e) { std::fprintf(stderr, "%s has no fill entry\n", argv[1]); return 1; }
  if (std::string(argv[2]) == "flips") { flips(*w, *e); return 0; }
  std::vector<Named> fs{{"glibc", &std::memset}};
  for (const Peer& p : peers(Operation::kFill))
    if (p.name == "aocl") fs.push_back({"aocl", reinterpret_cast<FillF>(const_cast<void*>(p.entry))});
  if (fs.size() < 2) { std::fprintf(stderr, "AOCL-LibMem is not built into this program\n"); return 1; }
  std::vector<Routine> keep;
  keep.reserve(8);
  const std::string mode = argv[2];
  const auto masks = mode == "loops" ? std::vector<unsigned>{e->plan.params.mask_max.value}
                                     : std::vector<unsigned>{128, 64, 32, 16, 0};
  for (unsigned m : masks) {
    CopyParams p = e->plan.params;
    p.mask_max = m;
    p.mask_shift = m != 0;
    auto plan = make_plan(p, CpuInfo::host().features());
    if (!plan) { std::fprintf(stderr, "mask_max %u: %s\n", m, plan.error().message.c_str()); return 1; }
    auto r = Routine::build(*plan);
    if (!r) { std::fprintf(stderr, "mask_max %u: %s\n", m, r.error().message.c_str()); return 1; }
    keep.push_back(std::move(r).value());
    fs.push_back({mode == "loops" ? "tuned" : "mask" + std::to_string(m),
                  reinterpret_cast<FillF>(const_cast<void*>(keep.back().entry()))});
  }
  if (mode == "guard") {
    fs.resize(2);  // glibc, aocl
    keep.clear();
    const char* names[] = {"tuned", "noexit", "noguard", "neither"};
    for (int v = 0; v < 4; ++v) {
      if (v & 1) setenv("EXP_NO_ZERO_EXIT", "1", 1); else unsetenv("EXP_NO_ZERO_EXIT");
      if (v & 2) setenv("EXP_NO_GUARD", "1", 1); else unsetenv("EXP_NO_GUARD");
      auto plan = make_plan(e->plan.params, CpuInfo::host().features());
      auto r = Routine::build(*plan);
      if (!r) { std::fprintf(stderr, "%s\n", r.error().message.c_str()); return 1; }
      keep.push_back(std::move(r).value());
      fs.push_back({names[v], reinterpret_cast<FillF>(const_cast<void*>(keep.back().entry()))});
    }
    unsetenv("EXP_NO_ZERO_EXIT");
    unsetenv("EXP_NO_GUARD");
    if (keep[0].size() == keep[3].size()) { std::fprintf(stderr, "guard-exit.diff is not applied to this build\n"); return 1; }
    mix(fs);
  } else if (mode == "loops") loops(fs);
  else if (mode == "readback") readback(fs);
  else if (mode == "mix") mix(fs);
  else { std::fprintf(stderr, "unknown mode %s\n", argv[2]); return 2; }
}
