// scratch: shapes of the 0..128 path (memcpy), lengths above 128 handed to the tuned routine
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <fstream>
#include <vector>
#include <nlohmann/json.hpp>
#include "copysynth/peers.hpp"
#include "copysynth/timing.hpp"
#include "copysynth/stats.hpp"
#include "copysynth/routine.hpp"
#include "copysynth/ladders.hpp"
#include "copysynth/workload.hpp"
using namespace copysynth;
extern "C" { const void* big_entry; void* V1(void*, const void*, size_t); void* V2(void*, const void*, size_t); void* V3(void*, const void*, size_t); void* V5(void*, const void*, size_t); void* V6(void*, const void*, size_t); void* V7(void*, const void*, size_t); void* V8(void*, const void*, size_t); void* V9(void*, const void*, size_t); void* V11(void*, const void*, size_t); void* V12(void*, const void*, size_t); void* V13(void*, const void*, size_t); }
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
V6: # V1 with the plain 64-byte-window guard
  mov %rdi,%rax
  cmp $129,%rdx
  jae 9f
  test %rdx,%rdx
  jz 8f
  lea -64(%rdx),%r10
  xor %r11d,%r11d
  cmp $64,%rdx
  cmovb %r11,%r10
  lea 63(%rdi),%ecx
  xor %edi,%ecx
  lea 63(%rsi),%r9d
  xor %esi,%r9d
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
.p2align 6
V7: # V1 with two offset checks
  mov %rdi,%rax
  cmp $129,%rdx
  jae 9f
  test %rdx,%rdx
  jz 8f
  lea -64(%rdx),%r10
  xor %r11d,%r11d
  cmp $64,%rdx
  cmovb %r11,%r10
  mov %edi,%ecx
  and $4095,%ecx
  cmp $4032,%ecx
  ja 9f
  mov %esi,%ecx
  and $4095,%ecx
  cmp $4032,%ecx
  ja 9f
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
V8: # two masked moves, a crossing call's block moved back without a branch; a rare branch where the moved block crosses below
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
  mov $-1,%r9
  bzhi %rdx,%r9,%r9
  mov $64,%r11d
  sub %edx,%r11d
  shlx %r11,%r9,%r8
  lea -64(%rdx),%r11
  test $4096,%ecx
  cmovnz %r8,%r9
  cmovnz %r11,%r10
  mov $0,%ecx
  cmovnz %r11,%rcx
    lea (%rdi,%r10),%r8d
  xor %edi,%r8d
  lea (%rsi,%r10),%r11d
  xor %esi,%r11d
  or %r11d,%r8d
  test $4096,%r8d
  jnz 9f
  kmovq %r9,%k1
  vmovdqu8 (%rsi,%rcx),%zmm16{%k1}{z}
  vmovdqu8 (%rsi,%r10),%zmm17{%k1}{z}
  vmovdqu8 %zmm16,(%rdi,%rcx){%k1}
  vmovdqu8 %zmm17,(%rdi,%r10){%k1}
8: ret
9: jmp *big_entry(%rip)
.p2align 6
V9: # V8 without the lower check; two masked moves, a crossing call's block moved back without a branch; a rare branch where the moved block crosses below
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
  mov $-1,%r9
  bzhi %rdx,%r9,%r9
  mov $64,%r11d
  sub %edx,%r11d
  shlx %r11,%r9,%r8
  lea -64(%rdx),%r11
  test $4096,%ecx
  cmovnz %r8,%r9
  cmovnz %r11,%r10
  mov $0,%ecx
  cmovnz %r11,%rcx
  kmovq %r9,%k1
  vmovdqu8 (%rsi,%rcx),%zmm16{%k1}{z}
  vmovdqu8 (%rsi,%r10),%zmm17{%k1}{z}
  vmovdqu8 %zmm16,(%rdi,%rcx){%k1}
  vmovdqu8 %zmm17,(%rdi,%r10){%k1}
8: ret
9: jmp *big_entry(%rip)
.p2align 6
V11: # V5 with the guard computed and tested but no branch (its uops without its mispredictions)
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
  setnz %r8b
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
V12: # V1 with the second move masked off below 64 bytes
  mov %rdi,%rax
  cmp $129,%rdx
  jae 9f
  test %rdx,%rdx
  jz 8f
  lea -64(%rdx),%r10
  xor %r11d,%r11d
  cmp $64,%rdx
  cmovb %r11,%r10
  sbb %r8,%r8
  not %r8
  mov $-1,%rcx
  bzhi %rdx,%rcx,%rcx
  kmovq %rcx,%k1
  kmovq %r8,%k2
  vmovdqu8 (%rsi),%zmm16{%k1}{z}
  vmovdqu8 (%rsi,%r10),%zmm17{%k2}{z}
  vmovdqu8 %zmm16,(%rdi){%k1}
  vmovdqu8 %zmm17,(%rdi,%r10){%k2}
8: ret
9: jmp *big_entry(%rip)
.p2align 6
V13: # V5 with the second move masked off (k2 = 0) below 64 bytes instead of repeating the first
  mov %rdi,%rax
  cmp $129,%rdx
  jae 9f
  test %rdx,%rdx
  jz 8f
  lea -64(%rdx),%r10
  xor %r11d,%r11d
  cmp $64,%rdx
  cmovb %r11,%r10
  sbb %r8,%r8
  not %r8
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
  kmovq %r8,%k2
  vmovdqu8 (%rsi),%zmm16{%k1}{z}
  vmovdqu8 (%rsi,%r10),%zmm17{%k2}{z}
  vmovdqu8 %zmm16,(%rdi){%k1}
  vmovdqu8 %zmm17,(%rdi,%r10){%k2}
8: ret
9: jmp *big_entry(%rip)
.p2align 6
V2: # AOCL's shape: 1..63 one masked move, 64..128 two full moves head and tail; no guard
  mov %rdi,%rax
  cmp $64,%rdx
  jae 1f
  mov $-1,%rcx
  bzhi %rdx,%rcx,%rcx
  kmovq %rcx,%k1
  vmovdqu8 (%rsi),%zmm16{%k1}{z}
  vmovdqu8 %zmm16,(%rdi){%k1}
  ret
1: cmp $128,%rdx
  ja 9f
  vmovdqu64 (%rsi),%zmm16
  vmovdqu64 -64(%rsi,%rdx),%zmm17
  vmovdqu64 %zmm16,(%rdi)
  vmovdqu64 %zmm17,-64(%rdi,%rdx)
  ret
9: jmp *big_entry(%rip)
.p2align 6
V3: # V2 with n = 0 exit and the tight page guard on the masked move (crossing: the tuned routine)
  mov %rdi,%rax
  cmp $64,%rdx
  jae 1f
  test %rdx,%rdx
  jz 8f
  lea -1(%rdi,%rdx),%ecx
  lea 63(%rdi),%r9d
  xor %r9d,%ecx
  lea -1(%rsi,%rdx),%r9d
  lea 63(%rsi),%r11d
  xor %r11d,%r9d
  or %r9d,%ecx
  test $4096,%ecx
  jnz 9f
  mov $-1,%rcx
  bzhi %rdx,%rcx,%rcx
  kmovq %rcx,%k1
  vmovdqu8 (%rsi),%zmm16{%k1}{z}
  vmovdqu8 %zmm16,(%rdi){%k1}
8: ret
1: cmp $128,%rdx
  ja 9f
  vmovdqu64 (%rsi),%zmm16
  vmovdqu64 -64(%rsi,%rdx),%zmm17
  vmovdqu64 %zmm16,(%rdi)
  vmovdqu64 %zmm17,-64(%rdi,%rdx)
  ret
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
int main(int argc, char** argv) {
  const size_t NCALLS = getenv("NCALLS") ? atoi(getenv("NCALLS")) : 32768;
  std::ifstream f(argv[1]); auto j = nlohmann::json::parse(f);
  nlohmann::json pj; for (auto& e : j["entries"]) if (e["operation"] == "memcpy") pj = e["params"];
  auto p = params_from_json(pj); if (!p) return 1;
  auto plan = make_plan(*p, CpuInfo::host().features()); auto r = Routine::build(*plan);
  CopyParams q = *p; q.register_bank.value = RegisterBank::kHigh;
  auto planh = make_plan(q, CpuInfo::host().features()); auto rh = Routine::build(*planh);
  big_entry = rh->entry();
  std::vector<const void*> e; std::vector<std::string> en;
  for (auto& pe : peers(Operation::kMemcpy)) if (pe.name == "glibc" || pe.name == "aocl") { e.push_back(pe.entry); en.push_back(pe.name); }
  e.push_back(r->entry()); en.push_back("tuned");
  e.push_back(rh->entry()); en.push_back("tuned-high");
  e.push_back((void*)V5); en.push_back("V5ctl"); e.push_back((void*)V1); en.push_back("V1noguard");
  e.push_back((void*)V2); en.push_back("V2aocl"); e.push_back((void*)V3); en.push_back("V3aocl+guard"); e.push_back((void*)V6); en.push_back("V6plainguard"); e.push_back((void*)V7); en.push_back("V7offsets"); e.push_back((void*)V8); en.push_back("V8shift"); e.push_back((void*)V9); en.push_back("V9shift-nolow"); e.push_back((void*)V11); en.push_back("V11guard-nobranch"); e.push_back((void*)V12); en.push_back("V12noguard-k2"); e.push_back((void*)V13); en.push_back("V13guard-k2");
  // check each on every length 0..300 and offsets
  {
    std::vector<unsigned char> s(8192), d(8192), ref(8192);
    for (size_t k = 2; k < e.size(); ++k) for (unsigned n = 0; n <= 300; ++n) for (unsigned so : {0u, 5u, 4090u-512u}) for (unsigned dof : {0u, 3u, 4093u-512u}) {
      for (unsigned i = 0; i < 8192; ++i) { s[i] = i * 7 + 1; d[i] = 0xEE; }
      ref = d; memcpy(ref.data() + dof, s.data() + so, n);
      ((void* (*)(void*, const void*, size_t))e[k])(d.data() + dof, s.data() + so, n);
      if (d != ref) { printf("WRONG %s n=%u\n", en[k].c_str(), n); return 1; }
    }
  }
  printf("ns per call, median of 3:"); for (auto& n : en) printf(" %s", n.c_str()); printf("\n");
  BenchBuffers buf(1 << 20);
  unsigned al[][2] = {{0,0},{4,4}};
  for (auto& a : al) for (unsigned n : {1u, 16u, 48u, 64u, 100u, 128u}) {
    std::vector<std::vector<double>> t(e.size());
    for (int pass = 0; pass < 3; ++pass) { auto m = compare(Operation::kMemcpy, e, buf, n, a[0], a[1]); for (size_t k = 0; k < e.size(); ++k) t[k].push_back(m[k].ns_per_call); }
    printf("n=%3u %u/%u:", n, a[0], a[1]); for (auto& v : t) printf(" %.3f", median(v)); printf("\n");
  }
  for (bool rb : {false, true}) {
    std::vector<double> lg(e.size(), 0); int cnt = 0;
    std::vector<std::string> dns = production_distributions(); dns.push_back("mix");
    for (auto& dn : dns) {
      auto d = dn == "mix" ? Result<SizeDistribution>(*production_mix()) : load_distribution(dn); if (!d) continue;
      auto calls = make_calls(*d, NCALLS, 7);
      ReplayBuffers rb2(d->max_size(), false);
      TimingOptions o; if (rb) o.use = Use::kThenRead;
      std::vector<std::vector<double>> t(e.size());
      for (int pass = 0; pass < 3; ++pass) { auto m = replay(Operation::kMemcpy, e, calls, rb2, o); for (size_t k = 0; k < e.size(); ++k) t[k].push_back(m[k].ns_per_call); }
      printf("%-14s %s:", dn.c_str(), rb ? "rdbk" : "thru"); for (size_t k = 0; k < e.size(); ++k) { double v = median(t[k]); printf(" %.3f", v); if (dn != "mix") lg[k] += std::log(v); } printf("\n");
      if (dn != "mix") ++cnt;
    }
    printf("geomean %s:", rb ? "rdbk" : "thru"); for (auto& v : lg) printf(" %.3f", std::exp(v / cnt)); printf("\n");
  }
}
