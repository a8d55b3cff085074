// scratch: fill small-path variants vs glibc memset at 1-48 bytes (compare(), medians of 3 passes)
#include <cstdio>
#include <cstring>
#include <vector>
#include "copysynth/peers.hpp"
#include "copysynth/timing.hpp"
#include "copysynth/stats.hpp"
using namespace copysynth;
extern "C" void* fA(void*, int, size_t); extern "C" void* fB(void*, int, size_t);
extern "C" void* fC(void*, int, size_t); extern "C" void* fD(void*, int, size_t);
extern "C" void* fE(void*, int, size_t);
// Each variant handles n in 1..63 only on the masked path (the scratch never crosses a page).
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
.p2align 6
fB: # A in registers 16-31: no vzeroupper
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
  vpbroadcastq %r8,%zmm16
  vmovdqu8 %zmm16,(%rdi){%k1}
  vmovdqu8 %zmm16,(%rdi,%r10,1){%k1}
9: ret
.p2align 6
fC: # B with the byte broadcast straight from esi (vpbroadcastb), r8 still made
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
  vpbroadcastb %esi,%zmm16
  vmovdqu8 %zmm16,(%rdi){%k1}
  vmovdqu8 %zmm16,(%rdi,%r10,1){%k1}
9: ret
.p2align 6
fD: # C without r8 at entry (made only on the paths that store GPRs)
  mov %rdi,%rax
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
  vpbroadcastb %esi,%zmm16
  vmovdqu8 %zmm16,(%rdi){%k1}
  vmovdqu8 %zmm16,(%rdi,%r10,1){%k1}
9: ret
.p2align 6
fE: # D with one masked store below 64 bytes (a branch)
  mov %rdi,%rax
  cmp $129,%rdx
  jae 9f
  test %rdx,%rdx
  jz 9f
  lea -1(%rdi,%rdx,1),%ecx
  lea 63(%rdi),%r9d
  xor %r9d,%ecx
  test $4096,%ecx
  jnz 9f
  cmp $64,%rdx
  jae 9f
  mov $-1,%rcx
  bzhi %rdx,%rcx,%rcx
  kmovq %rcx,%k1
  vpbroadcastb %esi,%zmm16
  vmovdqu8 %zmm16,(%rdi){%k1}
9: ret
)");
int main() {
  const void* g = nullptr;
  for (auto& pe : peers(Operation::kFill)) if (pe.name == "glibc") g = pe.entry;
  std::vector<const void*> e{g, (void*)fA, (void*)fB, (void*)fC, (void*)fD, (void*)fE};
  BenchBuffers buf(1 << 20);
  // correctness at the timed lengths
  for (size_t n : {1, 8, 16, 32, 48}) for (int k = 1; k < 6; ++k) {
    unsigned char b[256]; memset(b, 0xee, sizeof b);
    ((void*(*)(void*,int,size_t))e[k])(b + 64, 0x5a, n);
    for (size_t i = 0; i < 256; ++i) if (b[i] != ((i >= 64 && i < 64 + n) ? 0x5a : 0xee)) { printf("BAD %d n=%zu\n", k, n); return 1; }
  }
  printf("ns per call, medians of 3: glibc A(as emitted) B(regs 16-31) C(+vpbroadcastb) D(+no r8) E(+one store <64)\n");
  for (unsigned n : {1u, 8u, 16u, 32u, 48u}) {
    std::vector<std::vector<double>> s(e.size());
    for (int pass = 0; pass < 3; ++pass) { auto m = compare(Operation::kFill, e, buf, n, 0, 0); for (size_t k = 0; k < e.size(); ++k) s[k].push_back(n / m[k].gbps); }
    printf("n=%2u:", n); for (auto& v : s) printf(" %.3f", median(v)); printf("   glibc/X:"); for (size_t k = 1; k < s.size(); ++k) printf(" %.2f", median(s[0]) / median(s[k])); printf("\n");
  }
}
