// whole: a wisdom file's fill and memcpy plans (non-temporal stores taken out) with rep in
// pieces as tuned (rep_chunk, "chunked"), as one instruction ("whole": rep_chunk never) and with
// non-temporal stores from 16 MiB ("nt16M", 32-byte registers), against glibc and AOCL-LibMem,
// at 4-64 MiB + 4 KiB: the copy warm, copy then read, the copy cold, and the copy warm with each
// routine timed in a run of its own (solo). GB/s, medians of 3 passes over fresh buffers
// (measure_passes). A measurement, not part of the build (README.md here).
//   B=build; g++ -O2 -std=c++20 $(for d in */include; do echo -I$d; done) -I$B/include \
//     docs/perf/rep-whole/whole.cpp -o /tmp/whole \
//     $B/tuner/libcopysynth_tuner.a $B/verify/libcopysynth_verify.a $B/runtime/libcopysynth_runtime.a \
//     $B/templates/libcopysynth_templates.a $B/generator/libcopysynth_generator.a \
//     /usr/lib/x86_64-linux-gnu/libasmjit.a -lpthread -lrt -lZydis -lZycore build-aocl/libaocl-peer.a \
//     -Wl,-u,aocl_memcpy,-u,aocl_memmove,-u,aocl_memset,-u,copysynth_aocl_peer_zen,-u,copysynth_aocl_peer_thresholds
//   COPYSYNTH_AOCL_CACHE_SIZES=48K,1M,32M taskset -c 1 /tmp/whole docs/perf/debian12/best.json
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "copysynth/wisdom.hpp"
#include "copysynth/ladders.hpp"
#include "copysynth/routine.hpp"
#include "copysynth/cpu.hpp"
#include "copysynth/timing.hpp"
#include "copysynth/peers.hpp"
extern "C" void* aocl_memcpy(void*, const void*, size_t);
extern "C" void* aocl_memset(void*, int, size_t);
using namespace copysynth;
int main(int argc, char** argv) {
  if (argc != 2) { std::fprintf(stderr, "usage: whole WISDOM.json\n"); return 2; }
  auto w = load_wisdom(argv[1]);
  if (!w) { std::fprintf(stderr, "%s\n", w.error().message.c_str()); return 1; }
  for (Operation op : {Operation::kFill, Operation::kMemcpy}) {
    const WisdomEntry* e = w->find(op);
    if (!e) { std::fprintf(stderr, "%s has no %s entry\n", argv[1], op == Operation::kFill ? "fill" : "memcpy"); return 1; }
    std::vector<Routine> rs;
    std::vector<std::string> names;
    auto add = [&](const char* n, CopyParams p) {
      auto plan = make_plan(p, CpuInfo::host().features());
      if (!plan) { std::fprintf(stderr, "%s: %s\n", n, plan.error().message.c_str()); exit(1); }
      auto r = Routine::build(*plan);
      rs.push_back(std::move(r).value()); names.push_back(n);
    };
    CopyParams p = e->plan.params;
    p.nt_threshold = kNever;
    add("chunked", p);
    CopyParams q = p; q.rep_chunk = kNever; add("whole", q);
    CopyParams n = p; n.nt_threshold = 16ull << 20; n.nt_width = 32; add("nt16M", n);
    std::vector<const void*> fns{system_routine(op), op == Operation::kFill ? (const void*)&aocl_memset : (const void*)&aocl_memcpy};
    for (auto& r : rs) fns.push_back(r.entry());
    std::vector<PassCase> cases;
    std::vector<std::string> labels;
    for (std::uint64_t s : {4ull << 20, 8ull << 20, 16ull << 20, 32ull << 20, 64ull << 20})
      for (int u = 0; u < 4; ++u) {
        PassCase c; c.size = s + 4096; c.opt.rounds = 5; c.opt.warmup_rounds = 1; c.opt.min_calls = 2;
        c.opt.batch_seconds = 100e-6; c.opt.max_seconds = 0.67;  // near the tuner's ladder (tuner.cpp, ladder_timing: 4 calls)
        c.opt.use = u == 1 ? Use::kThenRead : Use::kCopy; c.opt.solo = u == 3;
        c.opt.state = u == 2 ? CacheState::kCold : CacheState::kWarm;
        cases.push_back(c);
        labels.push_back(std::to_string(s >> 20) + "M " + (u == 0 ? "copy warm" : u == 1 ? "copy+read warm" : u == 2 ? "copy cold" : "copy warm solo"));
      }
    auto m = measure_passes(op, fns, cases, 3);
    std::printf("== %s (GB/s)\n%-22s %8s %8s", op == Operation::kFill ? "fill" : "memcpy", "", "glibc", "aocl");
    for (auto& s : names) std::printf(" %8s", s.c_str());
    std::printf("\n");
    for (std::size_t i = 0; i < cases.size(); ++i) {
      std::printf("%-22s", labels[i].c_str());
      for (auto& x : m[i]) std::printf(" %8.2f", x.gbps);
      std::printf("\n");
    }
  }
}
