// Scratch (thirty-ninth round, docs/performance.md): do the seeds matrix's short rows depend on the
// buffer layout or on the timing loop's form? Times the tuned memcpy of a wisdom file, AOCL-LibMem's
// aocl_memcpy and glibc's memcpy at 1-128 bytes, src 0 or 4 bytes past a page start, in 31 rounds of
// 20000 calls each, interleaved, in four setups: dst at the same page offset as src, as the seeds
// matrix places them (BenchBuffers: each call's loads then share page offsets with the last call's
// stores, 4K aliasing), or 2048 bytes past it; the loop keeping the arguments in registers, or
// loading them through pointers at every call, as the Debian 12 build of compare() does. TSC ticks
// per call, medians. Build: README.md in this directory.
//   usage: alias-short WISDOM
#include <sys/mman.h>
#include <x86intrin.h>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>
#include "copysynth/copysynth.hpp"
extern "C" void* aocl_memcpy(void*, const void*, size_t);
using Fn = void* (*)(void*, const void*, size_t);
struct Args { void* d; const void* s; size_t n; };
__attribute__((noinline)) void loop_reg(Fn f, void* d, const void* s, size_t n, unsigned calls) {
  for (unsigned c = 0; c < calls; ++c) { f(d, s, n); asm volatile("" ::: "memory"); }
}
__attribute__((noinline)) void loop_mem(Fn f, Args* const* pa, const unsigned* pcalls) {
  for (unsigned c = 0; c < *pcalls; ++c) { Args* a = *pa; f(a->d, a->s, a->n); }
}
int main(int argc, char** argv) {
  using namespace copysynth;
  auto w = load_wisdom(argv[1], WisdomPoints::kSkip);
  if (!w) { std::fprintf(stderr, "%s\n", w.error().message.c_str()); return 1; }
  auto r = make_routine(*w, *w->find(Operation::kMemcpy));
  if (!r) { std::fprintf(stderr, "%s\n", r.error().message.c_str()); return 1; }
  Fn fns[3] = {r->fn(), aocl_memcpy, nullptr};
  const char* names[3] = {"tuned", "aocl", "glibc"};
  volatile Fn keep = static_cast<Fn>(&::memcpy); fns[2] = keep;
  char* buf = (char*)mmap(nullptr, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  std::memset(buf, 1, 1 << 20);
  const unsigned calls = 20000;
  for (int layout = 0; layout < 2; ++layout)
    for (int form = 0; form < 2; ++form) {
      std::printf("layout %s, loop %s (ticks per call, median of 31)\n", layout ? "dst 2048 past src mod 4096" : "dst = src mod 4096 (BenchBuffers)", form ? "args reloaded through pointers" : "args in registers");
      for (size_t n : {1, 7, 8, 16, 32, 48, 64, 80, 128})
        for (int so : {0, 4}) {
          char* src = buf + 8192 + so;
          char* dst = buf + 65536 + (layout ? 2048 : 0);
          std::vector<double> t[3];
          Args a{dst, src, n}; Args* pa = &a;
          for (int round = 0; round < 31; ++round)
            for (int i = 0; i < 3; ++i) {
              unsigned long long t0 = __rdtsc();
              if (form) loop_mem(fns[i], &pa, &calls); else loop_reg(fns[i], dst, src, n, calls);
              unsigned long long t1 = __rdtsc();
              t[i].push_back(double(t1 - t0) / calls);
            }
          double m[3];
          for (int i = 0; i < 3; ++i) { std::nth_element(t[i].begin(), t[i].begin() + 15, t[i].end()); m[i] = t[i][15]; }
          std::printf("  %4zu src+%d: tuned %5.2f aocl %5.2f glibc %5.2f  tuned/aocl time %.2f\n", n, so, m[0], m[1], m[2], m[0] / m[1]);
        }
    }
}
