// src4: memcpy of 1-128 bytes at src offset 0 and 4 (dst page-aligned), TSC ticks per call, then
// the eight production distributions (throughput and read back, replayed as the report replays
// them), for glibc, AOCL-LibMem and four builds of one wisdom file's memcpy plan with mask_max
// 128 (as shipped), 64, 32 and 0, all in one process (compare() and replay(): interleaved
// rounds). The last lines: each column's geometric mean over the eight against the best of glibc
// and AOCL-LibMem. A measurement, not part of the build (docs/perf/masked-readback/README.md).
//   B=build; g++ -O2 -std=c++20 $(for d in */include; do echo -I$d; done) -I$B/include \
//     docs/perf/masked-readback/src4.cpp -o /tmp/src4 \
//     $B/tuner/libcopysynth_tuner.a $B/verify/libcopysynth_verify.a $B/runtime/libcopysynth_runtime.a \
//     $B/templates/libcopysynth_templates.a $B/generator/libcopysynth_generator.a \
//     /usr/lib/x86_64-linux-gnu/libasmjit.a -lpthread -lrt -lZydis -lZycore build-aocl/libaocl-peer.a \
//     -Wl,-u,aocl_memcpy,-u,aocl_memmove,-u,aocl_memset,-u,copysynth_aocl_peer_zen,-u,copysynth_aocl_peer_thresholds
//   taskset -c 1 /tmp/src4 docs/perf/debian12/best.json
#include <cstdio>
#include <vector>
#include "copysynth/wisdom.hpp"
#include "copysynth/ladders.hpp"
#include "copysynth/routine.hpp"
#include "copysynth/cpu.hpp"
#include "copysynth/timing.hpp"
#include "copysynth/peers.hpp"
#include "copysynth/workload.hpp"
#include <cmath>
extern "C" void* aocl_memcpy(void*, const void*, size_t);
using namespace copysynth;
int main(int argc, char** argv) {
  if (argc != 2) { std::fprintf(stderr, "usage: src4 WISDOM.json\n"); return 2; }
  auto w = load_wisdom(argv[1]);
  if (!w) { std::fprintf(stderr, "%s\n", w.error().message.c_str()); return 1; }
  const WisdomEntry* e = w->find(Operation::kMemcpy);
  if (!e) { std::fprintf(stderr, "%s has no memcpy entry\n", argv[1]); return 1; }
  std::vector<Routine> rs;
  const char* names[] = {"m128", "m64", "m32", "m0"};
  for (unsigned m : {128u, 64u, 32u, 0u}) {
    CopyParams p = e->plan.params;
    p.mask_max = m; p.mask_shift = m != 0;
    auto plan = make_plan(p, CpuInfo::host().features());
    if (!plan) { std::fprintf(stderr, "mask_max %u: %s\n", m, plan.error().message.c_str()); return 1; }
    auto r = Routine::build(*plan);
    if (!r) { std::fprintf(stderr, "mask_max %u: %s\n", m, r.error().message.c_str()); return 1; }
    rs.push_back(std::move(r).value());
  }
  std::vector<const void*> fns{system_routine(Operation::kMemcpy), (const void*)&aocl_memcpy};
  for (auto& r : rs) fns.push_back(r.entry());
  BenchBuffers buf(1 << 20);
  std::printf("%4s %6s %8s %8s", "len", "s/d", "glibc", "aocl");
  for (auto n : names) std::printf(" %8s", n);
  std::printf("   (TSC ticks per call)\n");
  for (unsigned len : {1u, 7u, 8u, 16u, 32u, 48u, 64u, 96u, 128u})
    for (unsigned sa : {0u, 4u}) {
      TimingOptions t; t.rounds = 31;
      auto m = compare(Operation::kMemcpy, fns, buf, len, sa, 0, t);
      std::printf("%4u %4u/0", len, sa);
      for (auto& x : m) std::printf(" %8.2f", x.ticks_per_call);
      std::printf("\n");
    }
  // The eight production mixes, memcpy, throughput and read back (as the report replays them).
  double g[2][6] = {};
  for (const char* name : {"MemcpyGoogleA", "MemcpyGoogleB", "MemcpyGoogleD", "MemcpyGoogleL", "MemcpyGoogleM", "MemcpyGoogleQ", "MemcpyGoogleS", "MemcpyGoogleU"}) {
    auto wl = make_workload(name, Operation::kMemcpy, false);
    auto calls = replay_calls(*wl, 32768, 0x5EED);
    ReplayBuffers rb(wl->distribution->max_size(), false);
    for (int u = 0; u < 2; ++u) {
      TimingOptions t; t.rounds = 15; t.use = u ? Use::kThenRead : Use::kCopy;
      auto m = replay(Operation::kMemcpy, fns, calls, rb, t);
      std::printf("%s %s", name, u ? "read back" : "throughput");
      double best = std::min(m[0].ns_per_call, m[1].ns_per_call);
      for (std::size_t i = 0; i < m.size(); ++i) { std::printf(" %6.2f", m[i].ns_per_call); g[u][i] += std::log(best / m[i].ns_per_call); }
      std::printf("\n");
    }
  }
  for (int u = 0; u < 2; ++u) {
    std::printf("geomean vs best of glibc/aocl, %s:", u ? "read back" : "throughput");
    for (int i = 0; i < 6; ++i) std::printf(" %6.3f", std::exp(g[u][i] / 8));
    std::printf("\n");
  }
}
