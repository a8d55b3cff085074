// scratch: what the masked class's page guard buys: appending short records into fresh pages, and a short copy
// whose source ends just before a PROT_NONE page. V1 (no guard) and V5 (the tight guard) are shapes.cpp's, copied.
#include <sys/mman.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <algorithm>
#include <x86intrin.h>
#include "copysynth/peers.hpp"
using namespace copysynth;
typedef void* (*Fn)(void*, const void*, size_t);
extern "C" { const void* big_entry; void* V1(void*, const void*, size_t); void* V5(void*, const void*, size_t); }
asm(R"(
.text
.p2align 6
V1: # two masked moves 0..128 as emitted, no page guard
  mov %rdi,%rax
  cmp $129,%rdx
  jae 9f
  test %rdx,%rdx
  jz 8f
  lea -64(%rdx),%r10
  xor %r11d,%r11d
  cmp $64,%rdx
  cmovb %r11,%r10
  mov $-1,%rcx
  bzhi %rdx,%rcx,%rcx
  kmovq %rcx,%k1
  vmovdqu8 (%rsi),%zmm16{%k1}{z}
  vmovdqu8 (%rsi,%r10),%zmm17{%k1}{z}
  vmovdqu8 %zmm16,(%rdi){%k1}
  vmovdqu8 %zmm17,(%rdi,%r10){%k1}
8: ret
9: jmp *big_entry(%rip)
.p2align 6
V5: # two masked moves 0..128 with the tight guard, as emitted with the high bank (control)
  mov %rdi,%rax
  cmp $129,%rdx
  jae 9f
  test %rdx,%rdx
  jz 8f
  lea -64(%rdx),%r10
  xor %r11d,%r11d
  cmp $64,%rdx
  cmovb %r11,%r10
  lea -1(%rdi,%rdx),%ecx
  lea 63(%rdi,%r10),%r9d
  xor %r9d,%ecx
  lea -1(%rsi,%rdx),%r9d
  lea 63(%rsi,%r10),%r11d
  xor %r11d,%r9d
  or %r9d,%ecx
  test $4096,%ecx
  jnz 9f
  mov $-1,%rcx
  bzhi %rdx,%rcx,%rcx
  kmovq %rcx,%k1
  vmovdqu8 (%rsi),%zmm16{%k1}{z}
  vmovdqu8 (%rsi,%r10),%zmm17{%k1}{z}
  vmovdqu8 %zmm16,(%rdi){%k1}
  vmovdqu8 %zmm17,(%rdi,%r10){%k1}
8: ret
9: jmp *big_entry(%rip)
)");

int main() {
  Fn g = nullptr, ao = nullptr;
  for (auto& pe : peers(Operation::kMemcpy)) { if (pe.name == "glibc") g = (Fn)pe.entry; if (pe.name == "aocl") ao = (Fn)pe.entry; }
  big_entry = (const void*)g;  // lengths above 128 never occur here
  Fn fs[] = {g, ao ? ao : g, V5, V1}; const char* nm[] = {"glibc", "aocl", "V5 guard", "V1 no guard"};
  const size_t bytes = 64u << 20;
  alignas(64) static unsigned char src[256];
  for (int i = 0; i < 256; ++i) src[i] = i;
  for (unsigned rec : {8u, 24u, 40u}) {
    std::vector<std::vector<double>> t(4);
    for (int round = 0; round < 5; ++round)
      for (int k = 0; k < 4; ++k) {
        unsigned char* d = (unsigned char*)mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        size_t calls = bytes / rec - 4;
        unsigned long long t0 = __rdtsc();
        for (size_t i = 0; i < calls; ++i) fs[k](d + i * rec, src + (i & 63), rec);
        unsigned long long t1 = __rdtsc();
        if (d[rec * 1000 + 5] != src[(1000 & 63) + 5]) { printf("WRONG\n"); return 1; }
        t[k].push_back(double(t1 - t0) / calls);
        munmap(d, bytes);
      }
    printf("append %2u-byte records into 64 MiB of fresh pages, TSC ticks per call (median of 5, page faults included):", rec);
    for (int k = 0; k < 4; ++k) { std::sort(t[k].begin(), t[k].end()); printf(" %s %.2f;", nm[k], t[k][2]); }
    printf("\n");
  }
  // a 3-byte copy whose source ends 8 bytes before a PROT_NONE page
  unsigned char* m = (unsigned char*)mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  memset(m, 1, 4096); mprotect(m + 4096, 4096, PROT_NONE);
  alignas(64) static unsigned char dst[256];
  for (unsigned n : {3u, 32u}) {
    printf("%2u-byte copy, src ending 8 bytes before a PROT_NONE page, ticks per call (median of 5 x 100000 calls):", n);
    for (int k = 0; k < 4; ++k) {
      std::vector<double> t;
      for (int r = 0; r < 5; ++r) { unsigned long long t0 = __rdtsc(); for (int i = 0; i < 100000; ++i) fs[k](dst, m + 4096 - 8 - n, n); t.push_back(double(__rdtsc() - t0) / 100000); }
      std::sort(t.begin(), t.end()); printf(" %s %.1f;", nm[k], t[2]);
    }
    printf("\n");
  }
}
