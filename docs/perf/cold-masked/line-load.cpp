// line-load: a prototype, not project code. Masked moves for n <= 64 whose load stays inside
// the source's own cache lines (a masked load of the line holding the copied bytes, then
// vpcompressb to move them to the low end; AVX-512 VBMI2), against the emitted masked class
// (mask_max 64), the head/tail ladder (mask_max 0), glibc and AOCL-LibMem, on MemcpyGoogleQ's
// calls of at most 64 bytes, cold (throughput) and warm (throughput and read back). It checks
// the prototypes' bytes first (every src/dst offset 0..127, n 0..64). The prototypes have no
// page guard (the replay buffers have none near them); docs/perf/cold-masked/README.md says
// which of them would need one. Built and run as masked-cold.cpp:
//
//   B=build; g++ -O2 -std=c++20 $(for d in */include; do echo -I$d; done) -I$B/include \
//     docs/perf/cold-masked/line-load.cpp -o /tmp/line-load $B/tuner/libcopysynth_tuner.a \
//     $B/verify/libcopysynth_verify.a $B/runtime/libcopysynth_runtime.a \
//     $B/templates/libcopysynth_templates.a $B/generator/libcopysynth_generator.a \
//     /usr/lib/x86_64-linux-gnu/libasmjit.a -lpthread -lrt -lZydis -lZycore build-aocl/libaocl-peer.a \
//     -Wl,-u,aocl_memcpy,-u,aocl_memmove,-u,aocl_memset,-u,copysynth_aocl_peer_zen,-u,copysynth_aocl_peer_thresholds
//   taskset -c 1 /tmp/line-load
#include <immintrin.h>
#include <cstdio>
#include <cstdint>
#include <string>
#include <vector>
#include "copysynth/report.hpp"
#include "copysynth/ladders.hpp"
#include "copysynth/cpu.hpp"
#include "copysynth/stats.hpp"
#include "copysynth/peers.hpp"
extern "C" void* aocl_memcpy(void*, const void*, size_t);
using namespace copysynth;
#define T __attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi,avx512vbmi2,bmi2"), noinline))
// Both the source's and the destination's bytes inside one line each: a masked load of the source
// line (only the copied bytes), compress to the low end, expand to the destination's offset, a
// masked store of the destination line. Else one masked move at s/d (its window may span lines).
extern "C" T void* line_copy(void* d, const void* s, size_t n) {
  const uintptr_t so = (uintptr_t)s & 63, dof = (uintptr_t)d & 63;
  const uint64_t m = _bzhi_u64(~0ull, (unsigned)n);
  if (so + n <= 64 && dof + n <= 64) {
    const __mmask64 lm = m << so, sm = m << dof;
    __m512i v = _mm512_maskz_loadu_epi8(lm, (const char*)s - so);
    v = _mm512_maskz_compress_epi8(lm, v);
    v = _mm512_maskz_expand_epi8(sm, v);
    _mm512_mask_storeu_epi8((char*)d - dof, sm, v);
    return d;
  }
  __m512i v = _mm512_maskz_loadu_epi8(m, s);
  _mm512_mask_storeu_epi8(d, m, v);
  return d;
}
// Only the load confined to its line (the source side is where Zen 5 pays); the store as emitted.
extern "C" T void* line_load(void* d, const void* s, size_t n) {
  const uintptr_t so = (uintptr_t)s & 63;
  const uint64_t m = _bzhi_u64(~0ull, (unsigned)n);
  __m512i v;
  if (so + n <= 64) {
    const __mmask64 lm = m << so;
    v = _mm512_maskz_compress_epi8(lm, _mm512_maskz_loadu_epi8(lm, (const char*)s - so));
  } else {
    v = _mm512_maskz_loadu_epi8(m, s);
  }
  _mm512_mask_storeu_epi8(d, m, v);
  return d;
}
// line_load without the branch: base and mask chosen by cmov, the compress always done (with the
// mask at bit 0 it keeps the bytes where they are).
extern "C" T void* line_load_bf(void* d, const void* s, size_t n) {
  const uintptr_t so = (uintptr_t)s & 63;
  const uint64_t m = _bzhi_u64(~0ull, (unsigned)n);
  const bool fits = so + n <= 64;
  uintptr_t base = (uintptr_t)s, sh = 0;
  asm("cmp $64, %[e]\n\tcmovbe %[so], %[sh]" : [sh] "+r"(sh) : [so] "r"(so), [e] "r"(so + n) : "cc");
  (void)fits;
  base -= sh;
  const __mmask64 lm = m << sh;
  const __m512i v = _mm512_maskz_compress_epi8(lm, _mm512_maskz_loadu_epi8(lm, (const char*)base));
  _mm512_mask_storeu_epi8(d, m, v);
  return d;
}
// Branch-free: the source's two lines loaded line-aligned (the second masked to nothing when
// the copy ends in the first), joined with vpermt2b, one masked store at d.
extern "C" T void* two_lines(void* d, const void* s, size_t n) {
  const uintptr_t so = (uintptr_t)s & 63;
  const char* a = (const char*)s - so;
  const uint64_t m = _bzhi_u64(~0ull, (unsigned)n);
  const __mmask64 m0 = m << so;                       // bytes of the first line
  const __mmask64 m1 = so ? _bzhi_u64(m >> (64 - so), 64) : 0;  // bytes in the second line
  const __m512i lo = _mm512_maskz_loadu_epi8(m0, a);
  const __m512i hi = _mm512_maskz_loadu_epi8(m1, a + 64);
  static const __m512i iota = _mm512_set_epi8(63,62,61,60,59,58,57,56,55,54,53,52,51,50,49,48,47,46,45,44,43,42,41,40,39,38,37,36,35,34,33,32,31,30,29,28,27,26,25,24,23,22,21,20,19,18,17,16,15,14,13,12,11,10,9,8,7,6,5,4,3,2,1,0);
  const __m512i idx = _mm512_add_epi8(iota, _mm512_set1_epi8((char)so));
  const __m512i v = _mm512_permutex2var_epi8(lo, idx, hi);
  _mm512_mask_storeu_epi8(d, m, v);
  return d;
}
int main(int argc, char** argv) {
  std::vector<Routine> rs;
  std::vector<std::string> labels;
  std::vector<const void*> fns;
  fns.push_back(system_routine(Operation::kMemcpy)); labels.push_back("glibc");
  fns.push_back((const void*)&aocl_memcpy); labels.push_back("aocl");
  for (unsigned mm : {0u, 64u}) {
    CopyParams p;
    p.vector_width = 64;
    p.unroll = 4;
    p.register_bank = RegisterBank::kHigh;
    p.mask_max = mm;
    p.mask_shift = mm != 0;
    auto plan = make_plan(p, CpuInfo::host().features());
    auto r = Routine::build(*plan);
    rs.push_back(std::move(*r));
    labels.push_back("mask" + std::to_string(mm));
  }
  for (auto& r : rs) fns.push_back(r.entry());
  fns.push_back((const void*)&line_copy); labels.push_back("line_copy");
  fns.push_back((const void*)&line_load); labels.push_back("line_load");
  fns.push_back((const void*)&two_lines); labels.push_back("two_lines");
  fns.push_back((const void*)&line_load_bf); labels.push_back("line_load_bf");
  auto d = load_distribution(argc > 1 ? argv[1] : "data/size-distributions/MemcpyGoogleQ.csv");
  auto calls = make_calls(*d, 32768, 7);
  std::vector<Call> small;
  for (auto c : calls) if (c.size <= 64) small.push_back(c);
  // Correctness of the prototypes on these calls and every offset pair near a line end.
  {
    alignas(64) static unsigned char src[8192], dst[4][8192];
    for (int i = 0; i < 8192; ++i) src[i] = (unsigned char)(i * 7 + 1);
    void* (*pf[4])(void*, const void*, size_t) = {line_copy, line_load, two_lines, line_load_bf};
    for (unsigned so = 0; so < 128; ++so) for (unsigned dof = 0; dof < 128; ++dof) for (unsigned n = 0; n <= 64; ++n)
      for (int f = 0; f < 4; ++f) {
        __builtin_memset(dst[f], 0, 512);
        pf[f](dst[f] + 64 + dof, src + 64 + so, n);
        for (unsigned i = 0; i < 512; ++i) {
          const bool in = i >= 64 + dof && i < 64 + dof + n;
          if (dst[f][i] != (in ? src[64 + so + (i - 64 - dof)] : 0)) { std::printf("WRONG f%d so %u do %u n %u\n", f, so, dof, n); return 1; }
        }
      }
    std::printf("prototypes correct at src/dst offsets 0..127, n 0..64\n");
  }
  std::printf("%zu of %zu calls <= 64 bytes (MemcpyGoogleQ), ns per call, medians of 3 passes x 9 rounds\n", small.size(), calls.size());
  for (bool cold : {true, false}) {
    ReplayBuffers rb(64, cold);
    TimingOptions t; t.rounds = 9;
    for (Use use : {Use::kCopy, Use::kThenRead}) {
      if (cold && use == Use::kThenRead) continue;
      t.use = use;
      std::vector<std::vector<double>> s(fns.size());
      for (int pass = 0; pass < 3; ++pass) {
        auto m = replay(Operation::kMemcpy, fns, small, rb, t);
        for (size_t i = 0; i < fns.size(); ++i) s[i].push_back(m[i].ns_per_call);
      }
      std::printf("%-5s %-9s", cold ? "cold" : "warm", use == Use::kThenRead ? "read back" : "copy");
      for (size_t i = 0; i < fns.size(); ++i) std::printf("  %s %6.2f", labels[i].c_str(), median(s[i]));
      std::printf("\n");
    }
  }
}
