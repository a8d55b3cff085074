// scratch (thirty-seventh round): the emitted short fill path (variant A of
// docs/perf/fill-short/variants.cpp) at five placements, and the Debian 13 fill built by the JIT,
// timed in the same rounds as glibc's memset (compare(), median of 3, ns per call), fresh or
// after their rarely taken branches were taken: VERIFY=full|quick runs the conformance check on
// the JIT routine first; TRAIN="k:flags ..." calls column k on the paths in flags (0: n = 0,
// b: n = 200, p: 16 bytes whose 64-byte window crosses a page end) TRAINREPS times each.
// Columns: glibc, text (the program's .text), dual (a shared mapping twice, RW and RX, as
// runtime/src/jit_memory.cpp maps), dual-rw-unmapped (the RW view unmapped), private (a private
// mapping made RX), private-near (the same, 64 MiB above the program's text), jit.
// Build at 8d0bd7b or earlier: from 06e31dd on, compare() primes every column itself.
#include <sys/mman.h>
#include <cstdio>
#include <cstring>
#include <cstdint>
#include <vector>
#include <string>
#include "copysynth/peers.hpp"
#include "copysynth/timing.hpp"
#include "copysynth/stats.hpp"
#include "copysynth/wisdom.hpp"
#include "copysynth/routine.hpp"
#include "copysynth/cpu.hpp"
#include "copysynth/verify.hpp"
#include <cstdlib>
using namespace copysynth;
extern "C" void* fA(void*, int, size_t); extern "C" char fA_end[];
asm(R"(
.text
.p2align 6
fA: # as emitted (D13 fill): imul pattern, low bank, two masked stores, vzeroupper
  mov %rdi,%rax
  movzx %sil,%r8d
  mov $0x101010101010101,%r9
  imul %r9,%r8
  cmp $129,%rdx
  jae 9f
  test %rdx,%rdx
  jz 9f
  lea -64(%rdx),%r10
  xor %r11d,%r11d
  cmp $64,%rdx
  cmovb %r11,%r10
  lea -1(%rdi,%rdx,1),%ecx
  lea 63(%rdi,%r10,1),%r9d
  xor %r9d,%ecx
  test $4096,%ecx
  jnz 9f
  mov $-1,%rcx
  bzhi %rdx,%rcx,%rcx
  kmovq %rcx,%k1
  vpbroadcastq %r8,%zmm15
  vmovdqu8 %zmm15,(%rdi){%k1}
  vmovdqu8 %zmm15,(%rdi,%r10,1){%k1}
  vzeroupper
9: ret
fA_end:
)");
static void* put_dual(const void* code, size_t len, bool drop_rw) {
  void* rw = mmap(nullptr, 1 << 18, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  void* rx = mremap(rw, 0, 1 << 18, MREMAP_MAYMOVE);
  memcpy(rw, code, len);
  mprotect(rx, 1 << 18, PROT_READ | PROT_EXEC);
  if (drop_rw) munmap(rw, 1 << 18);
  return rx;
}
static void* put_private(const void* code, size_t len, void* hint) {
  void* p = mmap(hint, 1 << 18, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  memcpy(p, code, len);
  mprotect(p, 1 << 18, PROT_READ | PROT_EXEC);
  return p;
}
int main(int argc, char** argv) {
  const void* g = nullptr;
  for (auto& pe : peers(Operation::kFill)) if (pe.name == "glibc") g = pe.entry;
  const size_t len = (size_t)(fA_end - (char*)fA);
  void* near = (void*)(((uintptr_t)fA + (64u << 20)) & ~(uintptr_t)0xfffff);
  std::vector<const void*> e{g, (void*)fA, put_dual((void*)fA, len, false), put_dual((void*)fA, len, true),
                             put_private((void*)fA, len, nullptr), put_private((void*)fA, len, near)};
  const char* names = "glibc text dual dual-rw-unmapped private private-near jit";
  std::unique_ptr<Routine> keep;
  if (argc > 1) {
    const CpuInfo& cpu = CpuInfo::host();
    auto w = load_wisdom_for(argv[1], cpu, WisdomPoints::kSkip);
    if (!w) { printf("%s\n", w.error().message.c_str()); return 1; }
    for (auto& en : w->entries) if (en.operation == Operation::kFill) {
      auto r = build_entry(*w, en, cpu);
      if (!r) { printf("build failed\n"); return 1; }
      keep = std::make_unique<Routine>(std::move(*r));
      e.push_back(keep->entry());
      if (getenv("VERIFY")) { auto rep = verify_routine(*keep, std::string(getenv("VERIFY")) == "full" ? VerifyOptions{} : VerifyOptions::quick()); printf("verified: %llu cases\n", (unsigned long long)rep.cases); }
    }
  }
  static unsigned char page2[3 * 4096] __attribute__((aligned(4096)));
  // TRAIN="k:flags k:flags": column k called on the cold paths in flags (0: n = 0, b: n = 200,
  // p: a 16-byte call whose 64-byte window crosses a page), TRAINREPS times each, before timing.
  if (const char* t = getenv("TRAIN")) {
    const int reps = getenv("TRAINREPS") ? atoi(getenv("TRAINREPS")) : 1;
    for (const char* p = t; *p;) {
      if (*p < '0' || *p > '9') { ++p; continue; }
      auto f = (void*(*)(void*,int,size_t))e[*p - '0'];
      p += 2;
      for (; *p && *p != ' '; ++p)
        for (int r = 0; r < reps; ++r) {
          if (*p == '0') f(page2, 1, 0);
          if (*p == 'b') f(page2, 1, 200);
          if (*p == 'p') f(page2 + 4096 - 20, 1, 16);
        }
    }
  }
  for (size_t n : {8, 16, 32}) for (size_t k = 1; k < e.size(); ++k) {
    unsigned char b[256]; memset(b, 0xee, sizeof b);
    ((void*(*)(void*,int,size_t))e[k])(b + 64, 0x5a, n);
    for (size_t i = 0; i < 256; ++i) if (b[i] != ((i >= 64 && i < 64 + n) ? 0x5a : 0xee)) { printf("BAD %zu n=%zu\n", k, n); return 1; }
  }
  printf("%s\n", names);
  printf("addresses:"); for (auto p : e) printf(" %p", p); printf("\n");
  BenchBuffers buf(1 << 20);
  for (unsigned n : {8u, 16u, 32u}) {
    std::vector<std::vector<double>> s(e.size());
    for (int pass = 0; pass < 3; ++pass) { auto m = compare(Operation::kFill, e, buf, n, 0, 0); for (size_t k = 0; k < e.size(); ++k) s[k].push_back(n / m[k].gbps); }
    printf("n=%2u ns:", n); for (auto& v : s) printf(" %.3f", median(v)); printf("\n");
  }
}
