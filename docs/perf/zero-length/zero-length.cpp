// zero-length: what a call with n = 0 costs in the masked small-length class, before and after
// the class got its n = 0 exit (emit.cpp, zero_length_exit()), against glibc and AOCL-LibMem in the
// same process. A measurement, not part of the build: docs/perf/zero-length/README.md says what
// it shows.
//   1. a program's recorded calls (sqlite3 on tests/preload_sqlite.sql, COPYSYNTH_PROFILE) replayed
//      as the report does (replay_calls(), 32768 calls, warm and cold), split into n = 0 and n > 0;
//   2. n = 0 alone, 4096 calls at offsets inside one page: a page written before, and a mapped
//      page never touched (no page-table entry yet).
// Columns: glibc, AOCL-LibMem, "before" (old_*.S: the routines of a wisdom file as the build
// before the change emitted them), "after" (the same plans, as this build emits them: built from
// the file's plans, so its code hashes, those of the old bytes, are not checked).
//
// From the repository root, with a Release build in build/ and AOCL-LibMem in build-aocl/
// (tools/build-aocl-peer.sh); OLD a build of the commit before the change (17d2299):
//
//   COPYSYNTH_PROFILE=/tmp/sq.prof LD_PRELOAD=$PWD/build/api/libcopysynth-preload.so \
//     COPYSYNTH_WISDOM=/nonexistent sqlite3 :memory: <tests/preload_sqlite.sql >/dev/null
//   git show 17d2299:docs/perf/debian12/best.json > /tmp/old.json
//   for op in memcpy memmove fill; do OLD/tools/autotune --from /tmp/old.json --op $op \
//     --emit-asm /tmp/old_$op.S --name old_$op && gcc -c /tmp/old_$op.S -o /tmp/old_$op.o; done
//   B=build; g++ -O2 -std=c++20 $(for d in */include; do echo -I$d; done) -I$B/include \
//     docs/perf/zero-length/zero-length.cpp /tmp/old_*.o -o /tmp/zero-length \
//     $B/tuner/libcopysynth_tuner.a $B/verify/libcopysynth_verify.a $B/runtime/libcopysynth_runtime.a \
//     $B/templates/libcopysynth_templates.a $B/generator/libcopysynth_generator.a \
//     /usr/lib/x86_64-linux-gnu/libasmjit.a -lpthread -lrt -lZydis -lZycore build-aocl/libaocl-peer.a \
//     -Wl,-u,aocl_memcpy,-u,aocl_memmove,-u,aocl_memset,-u,copysynth_aocl_peer_zen,-u,copysynth_aocl_peer_thresholds
//   taskset -c 1 /tmp/zero-length /tmp/sq.prof /tmp/old.json
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>
#include <sys/mman.h>
#include <x86intrin.h>
#include "copysynth/workload.hpp"
#include "copysynth/timing.hpp"
#include "copysynth/wisdom.hpp"
#include "copysynth/peers.hpp"
#include "copysynth/stats.hpp"
extern "C" void* aocl_memmove(void*, const void*, size_t);
extern "C" void* aocl_memcpy(void*, const void*, size_t);
extern "C" void* aocl_memset(void*, int, size_t);
extern "C" void* old_memmove(void*, const void*, size_t);
extern "C" void* old_memcpy(void*, const void*, size_t);
extern "C" void* old_fill(void*, int, size_t);
using namespace copysynth;
int main(int argc, char** argv) {
  auto w = load_wisdom(argv[2]);
  if (!w) { std::fprintf(stderr, "wisdom: %s\n", w.error().message.c_str()); return 1; }
  const Operation ops[] = {Operation::kMemmove, Operation::kMemcpy, Operation::kFill};
  const void* aocl[] = {(const void*)&aocl_memmove, (const void*)&aocl_memcpy, (const void*)&aocl_memset};
  const void* old[] = {(const void*)&old_memmove, (const void*)&old_memcpy, (const void*)&old_fill};
  std::vector<std::unique_ptr<Result<Routine>>> keep;
  for (int oi = 0; oi < 3; ++oi) {
    const Operation op = ops[oi];
    std::vector<const void*> fns{system_routine(op), aocl[oi], old[oi]};
    for (auto& e : w->entries)
      if (e.operation == op) {
        keep.push_back(std::make_unique<Result<Routine>>(Routine::build(e.plan)));
        if (!*keep.back()) { std::fprintf(stderr, "build: %s\n", keep.back()->error().message.c_str()); return 1; }
        fns.push_back((*keep.back())->entry());
      }
    for (bool cold : {false, true}) {
      auto wl = make_workload(std::string("profile:") + argv[1], op, cold);
      if (!wl) { std::fprintf(stderr, "%s\n", wl.error().message.c_str()); return 1; }
      auto calls = replay_calls(*wl, 32768, 0x5EED);
      for (int part = 0; part < 3; ++part) {
        std::vector<Call> cs;
        for (auto c : calls)
          if (part == 0 || (part == 1 && c.size == 0) || (part == 2 && c.size > 0)) cs.push_back(c);
        if (cs.empty()) continue;
        ReplayBuffers rb(wl->distribution->max_size(), cold);
        TimingOptions t; t.rounds = 9;
        std::vector<std::vector<double>> s(fns.size());
        for (int pass = 0; pass < 3; ++pass) {
          auto m = replay(op, fns, cs, rb, t);
          for (size_t i = 0; i < fns.size(); ++i) s[i].push_back(m[i].ns_per_call);
        }
        const char* what[] = {"all", "n = 0", "n > 0"};
        std::printf("%-7s %s %-5s %6zu calls:", std::string(name_of(op)).c_str(), cold ? "cold" : "warm", what[part], cs.size());
        for (size_t i = 0; i < fns.size(); ++i) std::printf("  %7.2f", median(s[i]));
        std::printf("\n");
      }
    }
    // n = 0 alone, 4096 calls at the 64 offsets of a page, TSC ticks per call (best of 15).
    for (int fresh = 0; fresh < 2; ++fresh) {
      std::printf("%-7s n = 0 alone, %s:", std::string(name_of(op)).c_str(), fresh ? "page never touched" : "page written    ");
      for (const void* f : fns) {
        double best = 1e30;
        for (int rep = 0; rep < 15; ++rep) {
          char* p = (char*)mmap(nullptr, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
          if (!fresh) std::memset(p, 1, 1 << 16);
          unsigned long long t0 = __rdtsc();
          for (int i = 0; i < 4096; ++i) {
            char* d = p + 4096 + (i % 64) * 61 % 4000;
            if (op == Operation::kFill) ((void* (*)(void*, int, size_t))f)(d, 0, 0);
            else ((void* (*)(void*, const void*, size_t))f)(d, p + 8192 + (i * 37) % 4000, 0);
          }
          unsigned long long t1 = __rdtsc();
          best = std::min(best, double(t1 - t0) / 4096);
          munmap(p, 1 << 16);
        }
        std::printf("  %7.2f", best);
      }
      std::printf("\n");
    }
  }
  std::printf("columns: glibc, aocl, before (old), after (this build); replays ns per call, n = 0 alone TSC ticks per call\n");
}
