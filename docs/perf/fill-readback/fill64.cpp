// fill64: a wisdom file's fill beyond the caches, against every fill peer (glibc's memset,
// rep stosb, the AVX2 loop, AOCL-LibMem), at 32, 64 and 128 MiB + 4 KiB: the fill warm, fill then
// read (the program reads what it filled), fill cold. Variants of the wisdom's plan: as tuned
// ("tuned"), rep in pieces to the end ("pieces": rep_chunk_stop never), rep as one instruction
// from the rep threshold on ("whole": rep_chunk never), the vector loop from 32 MiB on ("loop32M":
// rep_stop 32 MiB, temporal stores) and non-temporal stores from 32 MiB ("nt32M"). GB/s, medians
// of 5 passes over fresh buffers (measure_passes). A measurement, not part of the build
// (README.md here). libstdc++ linked in and asmjit static (Zydis is not pulled in), so that one
// binary built on Debian 12 runs in a Debian 13 root against that root's glibc (2.41):
//   B=build; g++ -O2 -std=c++20 $(for d in */include; do echo -I$d; done) -I$B/include \
//     docs/perf/fill-readback/fill64.cpp -o /tmp/fill64 \
//     $B/tuner/libcopysynth_tuner.a $B/verify/libcopysynth_verify.a $B/runtime/libcopysynth_runtime.a \
//     $B/templates/libcopysynth_templates.a $B/generator/libcopysynth_generator.a \
//     /usr/lib/x86_64-linux-gnu/libasmjit.a -lpthread -lrt -lZydis -lZycore \
//     -static-libstdc++ -static-libgcc build-aocl/libaocl-peer.a \
//     -Wl,-u,aocl_memcpy,-u,aocl_memmove,-u,aocl_memset,-u,copysynth_aocl_peer_zen,-u,copysynth_aocl_peer_thresholds
//   COPYSYNTH_AOCL_CACHE_SIZES=48K,1M,32M taskset -c 1 /tmp/fill64 docs/perf/debian13/best.json
//   mkdir -p OUT; cp /tmp/fill64 docs/perf/debian13/best.json OUT/; tools/in-debian.sh --out OUT trixie \
//     'ldd --version | head -1; COPYSYNTH_AOCL_CACHE_SIZES=48K,1M,32M taskset -c 1 /out/fill64 /out/best.json'
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "copysynth/wisdom.hpp"
#include "copysynth/ladders.hpp"
#include "copysynth/routine.hpp"
#include "copysynth/cpu.hpp"
#include "copysynth/timing.hpp"
#include "copysynth/peers.hpp"
using namespace copysynth;
int main(int argc, char** argv) {
  if (argc != 2) { std::fprintf(stderr, "usage: fill64 WISDOM.json\n"); return 2; }
  auto w = load_wisdom(argv[1]);
  if (!w) { std::fprintf(stderr, "%s\n", w.error().message.c_str()); return 1; }
  const WisdomEntry* e = w->find(Operation::kFill);
  if (!e) { std::fprintf(stderr, "%s has no fill entry\n", argv[1]); return 1; }
  std::vector<Routine> rs;
  std::vector<std::string> names;
  std::vector<const void*> fns;
  for (const Peer& p : peers(Operation::kFill)) { fns.push_back(p.entry); names.push_back(p.name); }
  auto add = [&](const char* n, CopyParams p) {
    auto plan = make_plan(p, CpuInfo::host().features());
    if (!plan) { std::fprintf(stderr, "%s: %s\n", n, plan.error().message.c_str()); exit(1); }
    auto r = Routine::build(*plan);
    if (!r) { std::fprintf(stderr, "%s: %s\n", n, r.error().message.c_str()); exit(1); }
    rs.push_back(std::move(r).value()); names.push_back(n);
  };
  const CopyParams p = e->plan.params;
  add("tuned", p);
  { CopyParams q = p; q.rep_chunk_stop = kNever; add("pieces", q); }
  { CopyParams q = p; q.rep_chunk = kNever; q.rep_chunk_stop = kNever; add("whole", q); }
  { CopyParams q = p; q.rep_stop = 32ull << 20; q.rep_chunk_stop = kNever; add("loop32M", q); }
  { CopyParams q = p; q.nt_threshold = 32ull << 20; q.nt_width = 32; add("nt32M", q); }
  for (auto& r : rs) fns.push_back(r.entry());
  std::vector<PassCase> cases;
  std::vector<std::string> labels;
  for (std::uint64_t s : {32ull << 20, 64ull << 20, 128ull << 20})
    for (int u = 0; u < 3; ++u) {
      PassCase c; c.size = s + 4096; c.opt.rounds = 5; c.opt.warmup_rounds = 1; c.opt.min_calls = 4;
      c.opt.batch_seconds = 100e-6; c.opt.max_seconds = 1.0;
      c.opt.use = u == 1 ? Use::kThenRead : Use::kCopy;
      c.opt.state = u == 2 ? CacheState::kCold : CacheState::kWarm;
      cases.push_back(c);
      labels.push_back(std::to_string(s >> 20) + "M+4K " + (u == 0 ? "fill warm" : u == 1 ? "fill+read warm" : "fill cold"));
    }
  auto m = measure_passes(Operation::kFill, fns, cases, 5);
  std::printf("fill, GB/s, medians of 5 passes; %s\n%-22s", argv[1], "");
  for (auto& s : names) std::printf(" %9s", s.c_str());
  std::printf("\n");
  for (std::size_t i = 0; i < cases.size(); ++i) {
    std::printf("%-22s", labels[i].c_str());
    for (auto& x : m[i]) std::printf(" %9.2f", x.gbps);
    std::printf("\n");
  }
}
