// mix: what the n = 0 exit costs on the eight production distributions (memcpy and memmove,
// throughput and read back, replayed as the report does), against the forms measured beside it.
// A measurement, not part of the build (docs/perf/zero-length/README.md). Columns: glibc,
// AOCL-LibMem, then four builds of the same plans (those of a wisdom file), each written with
// `autotune --from FILE --op OP --emit-asm X_OP.S --name X_OP` and assembled with gcc -c, so all
// four sit in the program's .text (a JIT routine is placed elsewhere: docs/performance.md,
// sixteenth round, "code placement"):
//   old_*  the build before the change (17d2299): zero-length calls run the masked moves
//   jz_*   fac5fa0: test rdx, rdx; jz to a ret at the masked class's head (kept)
//   g_*    an experimental emitter: lea r, [rdx - 1]; or ecx, r before the page guard's test
//          (n = 0 fails the guard; its path, then the unmasked ladder, returns), no new branch
//   cm_*   an experimental emitter: lea r11, [rsp - 64]; test rdx, rdx; cmovz rdi, r11;
//          cmovz rsi, r11 at the class's head (zero-mask accesses to the stack), no branch
// A wisdom file written before fac5fa0 gives each build the same plans (only the bytes differ:
// autotune --from refuses a file whose hash differs, so the experimental builds need a copy of
// the file with their own hashes, Routine::build(entry.plan) of that build).
//
//   B=build; g++ -O2 -std=c++20 $(for d in */include; do echo -I$d; done) -I$B/include \
//     docs/perf/zero-length/mix.cpp /tmp/old_*.o /tmp/jz_*.o /tmp/g_*.o /tmp/cm_*.o -o /tmp/mix \
//     $B/tuner/libcopysynth_tuner.a $B/verify/libcopysynth_verify.a $B/runtime/libcopysynth_runtime.a \
//     $B/templates/libcopysynth_templates.a $B/generator/libcopysynth_generator.a \
//     /usr/lib/x86_64-linux-gnu/libasmjit.a -lpthread -lrt -lZydis -lZycore build-aocl/libaocl-peer.a \
//     -Wl,-u,aocl_memcpy,-u,aocl_memmove,-u,aocl_memset,-u,copysynth_aocl_peer_zen,-u,copysynth_aocl_peer_thresholds
//   taskset -c 1 /tmp/mix
#include <cstdio>
#include <vector>
#include <string>
#include "copysynth/workload.hpp"
#include "copysynth/timing.hpp"
#include "copysynth/peers.hpp"
#include "copysynth/stats.hpp"
extern "C" void* aocl_memmove(void*, const void*, size_t);
extern "C" void* aocl_memcpy(void*, const void*, size_t);
extern "C" void* old_memmove(void*, const void*, size_t);
extern "C" void* old_memcpy(void*, const void*, size_t);
extern "C" void* jz_memcpy(void*, const void*, size_t);
extern "C" void* jz_memmove(void*, const void*, size_t);
extern "C" void* g_memcpy(void*, const void*, size_t);
extern "C" void* g_memmove(void*, const void*, size_t);
extern "C" void* cm_memcpy(void*, const void*, size_t);
extern "C" void* cm_memmove(void*, const void*, size_t);
using namespace copysynth;
int main() {
  const Operation ops[] = {Operation::kMemcpy, Operation::kMemmove};
  const void* aocl[] = {(const void*)&aocl_memcpy, (const void*)&aocl_memmove};
  const void* old[] = {(const void*)&old_memcpy, (const void*)&old_memmove};
  const void* jz[] = {(const void*)&jz_memcpy, (const void*)&jz_memmove};
  const void* g[] = {(const void*)&g_memcpy, (const void*)&g_memmove};
  const void* cm[] = {(const void*)&cm_memcpy, (const void*)&cm_memmove};
  for (int oi = 0; oi < 2; ++oi) {
    const Operation op = ops[oi];
    std::vector<const void*> fns{system_routine(op), aocl[oi], old[oi], jz[oi], g[oi], cm[oi]};
    std::vector<double> r[4][2];
    for (const char* name : {"MemcpyGoogleA", "MemcpyGoogleB", "MemcpyGoogleD", "MemcpyGoogleL", "MemcpyGoogleM", "MemcpyGoogleQ", "MemcpyGoogleS", "MemcpyGoogleU"}) {
      auto wl = make_workload(name, op, false);
      auto calls = replay_calls(*wl, 32768, 0x5EED);
      ReplayBuffers rb(wl->distribution->max_size(), false);
      for (int u = 0; u < 2; ++u) {
        TimingOptions t; t.rounds = 9; t.use = u ? Use::kThenRead : Use::kCopy;
        std::vector<std::vector<double>> s(fns.size());
        for (int pass = 0; pass < 5; ++pass) {
          auto m = replay(op, fns, calls, rb, t);
          for (size_t i = 0; i < fns.size(); ++i) s[i].push_back(m[i].ns_per_call);
        }
        std::printf("%-7s %-14s %-9s", std::string(name_of(op)).c_str(), name, u ? "read back" : "");
        for (size_t i = 0; i < fns.size(); ++i) std::printf("  %7.2f", median(s[i]));
        const double best = std::min(median(s[0]), median(s[1]));
        for (int k = 0; k < 4; ++k) r[k][u].push_back(best / median(s[2 + k]));
        std::printf("\n");
      }
    }
    for (int u = 0; u < 2; ++u)
      std::printf("%s %s: vs best of glibc/aocl, geomean: before %.3fx, jz %.3fx, guard %.3fx, cmov %.3fx (all .text)\n", std::string(name_of(op)).c_str(),
                  u ? "read back" : "throughput", geomean(r[0][u]), geomean(r[1][u]), geomean(r[2][u]), geomean(r[3][u]));
  }
}
