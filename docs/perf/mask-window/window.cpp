// scratch: a short copy's masked move, 64-byte window (zmm) against 32-byte (ymm), src 0 or 4 bytes off
#include <cstdio>
#include <cstring>
#include <vector>
#include "copysynth/peers.hpp"
#include "copysynth/timing.hpp"
#include "copysynth/stats.hpp"
using namespace copysynth;
extern "C" void* mZ(void*, const void*, size_t); extern "C" void* mY(void*, const void*, size_t);
asm(R"(
.text
.p2align 6
mZ: # one masked move through a 64-byte window (n <= 32 here)
  mov %rdi,%rax
  mov $-1,%rcx
  bzhi %rdx,%rcx,%rcx
  kmovq %rcx,%k1
  vmovdqu8 (%rsi),%zmm16{%k1}{z}
  vmovdqu8 %zmm16,(%rdi){%k1}
  ret
.p2align 6
mY: # the same through a 32-byte window
  mov %rdi,%rax
  mov $-1,%ecx
  bzhi %edx,%ecx,%ecx
  kmovd %ecx,%k1
  vmovdqu8 (%rsi),%ymm16{%k1}{z}
  vmovdqu8 %ymm16,(%rdi){%k1}
  ret
)");
int main() {
  const void* g = nullptr; const void* a = nullptr;
  for (auto& pe : peers(Operation::kMemcpy)) { if (pe.name == "glibc") g = pe.entry; if (pe.name == "aocl") a = pe.entry; }
  std::vector<const void*> e{g, a ? a : g, (void*)mZ, (void*)mY};
  BenchBuffers buf(1 << 20);
  printf("ns per call, medians of 3: glibc aocl zmm-window ymm-window\n");
  for (unsigned s : {0u, 4u}) for (unsigned n : {1u, 8u, 16u, 32u}) {
    std::vector<std::vector<double>> t(e.size());
    for (int pass = 0; pass < 3; ++pass) { auto m = compare(Operation::kMemcpy, e, buf, n, s, s); for (size_t k = 0; k < e.size(); ++k) t[k].push_back(n / m[k].gbps); }
    printf("n=%2u %u/%u:", n, s, s); for (auto& v : t) printf(" %.3f", median(v)); printf("\n");
  }
}
