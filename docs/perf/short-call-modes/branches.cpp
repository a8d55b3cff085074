// scratch (thirty-seventh round): the short fill path with three conditional branches before
// the masked stores (A, as emitted: n >= 129, n = 0, the page guard), two (A2: n = 0 and
// n >= 129 as one unsigned test of n - 1) and one (A3: all three combined), each fresh (its
// rare paths never taken) and trained (n = 0, n = 200 and 16 bytes across a page end, each taken
// TRAINREPS times, default 100), timed in the same rounds as glibc's memset (compare(), median
// of 3, ns per call). The columns printed: glibc, A, A trained, A2, A2 trained, A3, A3 trained.
// Built with -DCOPIES (branches-copies.txt): A and A3 only, one fresh copy and three trained ones
// of each, at 16 bytes.
// Build at 8d0bd7b or earlier: from 06e31dd on, compare() primes every column itself.
#include <sys/mman.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cstdint>
#include <vector>
#include "copysynth/peers.hpp"
#include "copysynth/timing.hpp"
#include "copysynth/stats.hpp"
using namespace copysynth;
extern "C" char fA[], fA_end[], fA2[], fA2_end[], fA3[], fA3_end[];
asm(R"(
.text
.p2align 6
fA: # as emitted (D13 fill): cmp/jae for n >= 129, test/jz for n = 0, the page guard's jnz
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
.p2align 6
fA2: # n - 1 >= 128 unsigned (n = 0 or n >= 129) in one branch; the page guard's jnz
  mov %rdi,%rax
  movzx %sil,%r8d
  mov $0x101010101010101,%r9
  imul %r9,%r8
  lea -1(%rdx),%rcx
  cmp $128,%rcx
  jae 9f
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
fA2_end:
.p2align 6
fA3: # the length test and the page guard combined into one branch
  mov %rdi,%rax
  movzx %sil,%r8d
  mov $0x101010101010101,%r9
  imul %r9,%r8
  xor %r11d,%r11d
  xor %r9d,%r9d
  lea -1(%rdx),%rcx
  cmp $128,%rcx
  setae %r11b
  lea -64(%rdx),%r10
  cmp $64,%rdx
  cmovb %r9,%r10
  lea -1(%rdi,%rdx,1),%ecx
  lea 63(%rdi,%r10,1),%r9d
  xor %r9d,%ecx
  and $4096,%ecx
  or %r11d,%ecx
  jnz 9f
  mov $-1,%rcx
  bzhi %rdx,%rcx,%rcx
  kmovq %rcx,%k1
  vpbroadcastq %r8,%zmm15
  vmovdqu8 %zmm15,(%rdi){%k1}
  vmovdqu8 %zmm15,(%rdi,%r10,1){%k1}
  vzeroupper
9: ret
fA3_end:
)");
static void* copy_of(const char* b, const char* e) {
  void* p = mmap(nullptr, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  memcpy(p, b, e - b);
  mprotect(p, 1 << 16, PROT_READ | PROT_EXEC);
  return p;
}
alignas(4096) static unsigned char page2[3 * 4096];
int main() {
  const void* g = nullptr;
  for (auto& pe : peers(Operation::kFill)) if (pe.name == "glibc") g = pe.entry;
#ifdef COPIES
  std::vector<const void*> e{g, copy_of(fA, fA_end), copy_of(fA, fA_end), copy_of(fA, fA_end), copy_of(fA, fA_end),
                             copy_of(fA3, fA3_end), copy_of(fA3, fA3_end), copy_of(fA3, fA3_end), copy_of(fA3, fA3_end)};
  const std::vector<size_t> trained{2, 3, 4, 6, 7, 8};
  const char* header = "ns per call: glibc A A-trained A-trained A-trained A3 A3-trained A3-trained A3-trained";
  const std::vector<unsigned> lengths{16};
#else
  std::vector<const void*> e{g, copy_of(fA, fA_end), copy_of(fA, fA_end), copy_of(fA2, fA2_end), copy_of(fA2, fA2_end),
                             copy_of(fA3, fA3_end), copy_of(fA3, fA3_end)};
  const std::vector<size_t> trained{2, 4, 6};
  const char* header = "ns per call: glibc A A-trained A2 A2-trained A3 A3-trained";
  const std::vector<unsigned> lengths{8, 16, 32};
#endif
  for (size_t n : {1, 8, 16, 32, 48, 64, 100, 128}) for (size_t k = 1; k < e.size(); ++k) {
    unsigned char b[256]; memset(b, 0xee, sizeof b);
    ((void*(*)(void*,int,size_t))e[k])(b + 64, 0x5a, n);
    for (size_t i = 0; i < 256; ++i) if (b[i] != ((i >= 64 && i < 64 + n) ? 0x5a : 0xee)) { printf("BAD %zu n=%zu\n", k, n); return 1; }
  }
  const int reps = getenv("TRAINREPS") ? atoi(getenv("TRAINREPS")) : 100;
  for (size_t k : trained) {
    auto f = (void*(*)(void*,int,size_t))e[k];
    for (int r = 0; r < reps; ++r) { f(page2, 1, 0); f(page2, 1, 200); f(page2 + 4096 - 20, 1, 16); }
  }
  printf("%s\n", header);
  BenchBuffers buf(1 << 20);
  for (unsigned n : lengths) {
    std::vector<std::vector<double>> s(e.size());
    for (int pass = 0; pass < 3; ++pass) { auto m = compare(Operation::kFill, e, buf, n, 0, 0); for (size_t k = 0; k < e.size(); ++k) s[k].push_back(n / m[k].gbps); }
    printf("n=%2u:", n); for (auto& v : s) printf(" %.3f", median(v)); printf("\n");
  }
}
