// pieces64: a fill of 64 MiB (and 64 MiB + 4 KiB) as rep stosb in 2 MiB pieces ("pieces":
// the wisdom's fill with rep_chunk_stop never) against the same routine as one rep instruction
// from just above one piece ("whole"), warm, fill alone and fill then read, GB/s. Two modes:
//   neighbours: medians of 3 passes over fresh buffers (measure_passes), the two timed alone
//               and beside each fill peer in turn, then beside the report's peers and beside the
//               stage beyond the caches' five non-temporal variants: does the neighbour decide?
//   buffers:    six buffers in turn in one process, each timed twice as the stage beyond the
//               caches times a ladder cell (compare(): 5 rounds, batches of at least 4 calls and
//               100 us; the gain shrunk by the two medians' relative MAD, as time_ladder does).
// A measurement, not part of the build (README.md here). Built and run as fill64.cpp
// (docs/perf/fill-readback/) is, on the Debian 12 host:
//   B=build; g++ -O2 -std=c++20 $(for d in */include; do echo -I$d; done) -I$B/include \
//     docs/perf/rep-pieces/pieces64.cpp -o /tmp/pieces64 \
//     $B/tuner/libcopysynth_tuner.a $B/verify/libcopysynth_verify.a $B/runtime/libcopysynth_runtime.a \
//     $B/templates/libcopysynth_templates.a $B/generator/libcopysynth_generator.a \
//     /usr/lib/x86_64-linux-gnu/libasmjit.a -lpthread -lrt -lZydis -lZycore build-aocl/libaocl-peer.a \
//     -Wl,-u,aocl_memcpy,-u,aocl_memmove,-u,aocl_memset,-u,copysynth_aocl_peer_zen,-u,copysynth_aocl_peer_thresholds
//   COPYSYNTH_AOCL_CACHE_SIZES=48K,1M,32M taskset -c 1 /tmp/pieces64 docs/perf/debian12/best.json neighbours
//   taskset -c 1 /tmp/pieces64 docs/perf/debian12/best.json buffers
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>
#include "copysynth/cpu.hpp"
#include "copysynth/ladders.hpp"
#include "copysynth/peers.hpp"
#include "copysynth/routine.hpp"
#include "copysynth/timing.hpp"
#include "copysynth/wisdom.hpp"
using namespace copysynth;
int main(int argc, char** argv) {
  if (argc != 3) { std::fprintf(stderr, "usage: pieces64 WISDOM.json neighbours|buffers\n"); return 2; }
  auto w = load_wisdom(argv[1]);
  if (!w) { std::fprintf(stderr, "%s\n", w.error().message.c_str()); return 1; }
  const WisdomEntry* e = w->find(Operation::kFill);
  if (!e || e->plan.params.rep_chunk.value == kNever) {
    std::fprintf(stderr, "%s has no fill entry with rep in pieces\n", argv[1]);
    return 1;
  }
  std::vector<Routine> rs;
  rs.reserve(8);
  std::vector<std::pair<std::string, const void*>> all;
  for (const Peer& p : peers(Operation::kFill)) all.push_back({p.name, p.entry});
  auto add = [&](const std::string& n, const CopyParams& p) {
    auto plan = make_plan(p, CpuInfo::host().features());
    if (!plan) { std::fprintf(stderr, "%s: %s\n", n.c_str(), plan.error().message.c_str()); std::exit(1); }
    auto r = Routine::build(*plan);
    if (!r) { std::fprintf(stderr, "%s: %s\n", n.c_str(), r.error().message.c_str()); std::exit(1); }
    rs.push_back(std::move(r).value());
    all.push_back({n, rs.back().entry()});
  };
  CopyParams p = e->plan.params;
  p.nt_threshold = kNever;
  p.rep_chunk_stop = kNever;
  add("pieces", p);
  { CopyParams q = p; q.rep_chunk_stop = p.rep_chunk.value + 4096; add("whole", q); }
  for (unsigned pages : {1u, 2u, 4u}) { CopyParams q = p; q.nt_threshold = 0; q.nt_pages = pages; add("nt" + std::to_string(pages), q); }
  for (unsigned pages : {1u, 4u}) { CopyParams q = p; q.nt_threshold = 0; q.nt_pages = pages; q.nt_width = 32; add("nt" + std::to_string(pages) + "v32", q); }
  auto find = [&](const std::string& n) -> const void* {
    for (auto& a : all) if (a.first == n) return a.second;
    return nullptr;
  };
  auto timing = [](Use u) {
    TimingOptions t;
    t.rounds = 5; t.warmup_rounds = 1; t.max_seconds = 1.0; t.min_calls = 4; t.batch_seconds = 100e-6;
    t.state = CacheState::kWarm; t.use = u;
    return t;
  };
  if (std::string(argv[2]) == "neighbours") {
    std::vector<std::vector<std::string>> sets{{"pieces", "whole"}};
    for (const char* n : {"glibc", "avx2_loop", "nt1", "rep_stosb", "aocl"})
      if (find(n)) sets.push_back({"pieces", "whole", n});
    std::vector<std::string> report{"pieces", "whole"};
    for (const char* n : {"glibc", "rep_stosb", "avx2_loop", "aocl"}) if (find(n)) report.insert(report.begin() + (report.size() - 2), n);
    sets.push_back(report);
    sets.push_back({"pieces", "nt1", "nt2", "nt4", "nt1v32", "nt4v32", "whole"});
    std::printf("fill, GB/s, medians of 3 passes, warm; whole/pieces: one instruction over the pieces\n");
    for (std::uint64_t s : {64ull << 20, (64ull << 20) + 4096})
      for (auto& set : sets) {
        std::vector<const void*> fns;
        for (auto& n : set) fns.push_back(find(n));
        std::vector<PassCase> cases;
        for (Use u : {Use::kCopy, Use::kThenRead}) { PassCase c; c.size = s; c.opt = timing(u); cases.push_back(c); }
        const auto m = measure_passes(Operation::kFill, fns, cases, 3);
        std::size_t ip = 0, iw = 0;
        for (std::size_t i = 0; i < set.size(); ++i) { if (set[i] == "pieces") ip = i; if (set[i] == "whole") iw = i; }
        for (int u = 0; u < 2; ++u) {
          std::printf("%s %-9s", s == (64ull << 20) ? "64M   " : "64M+4K", u ? "fill+read" : "fill");
          for (std::size_t i = 0; i < set.size(); ++i) std::printf(" %s=%.2f", set[i].c_str(), m[u][i].gbps);
          std::printf("  whole/pieces=%.3f\n", m[u][iw].gbps / m[u][ip].gbps);
        }
        std::fflush(stdout);
      }
    return 0;
  }
  // buffers: the stage's seven routines (pieces, five non-temporal variants, whole) on one buffer.
  std::vector<const void*> fns{find("pieces"), find("nt1"), find("nt2"), find("nt4"), find("nt1v32"), find("nt4v32"), find("whole")};
  std::printf("fill of 64 MiB + 4 KiB, GB/s, one compare() each (the ladder's timing); raw and shrunk: whole time / pieces time inverted\n");
  for (int b = 0; b < 6; ++b) {
    BenchBuffers buf((64ull << 20) + 8192 + 4096);
    for (int rep = 0; rep < 2; ++rep)
      for (Use u : {Use::kCopy, Use::kThenRead}) {
        const auto m = compare(Operation::kFill, fns, buf, (64ull << 20) + 4096, 0, 0, timing(u));
        const double g = std::log(m[0].ticks_per_call / m[6].ticks_per_call);
        const double noise = m[0].mad_ticks / m[0].ticks_per_call + m[6].mad_ticks / m[6].ticks_per_call;
        const double sh = g > 0 ? std::max(g - noise, 0.0) : std::min(g + noise, 0.0);
        std::printf("buffer %d %-9s pieces %.2f (MAD %.1f%%) whole %.2f (MAD %.1f%%) raw %.3f shrunk %.3f | nt1 %.2f\n", b,
                    u == Use::kThenRead ? "fill+read" : "fill", m[0].gbps, 100 * m[0].mad_ticks / m[0].ticks_per_call,
                    m[6].gbps, 100 * m[6].mad_ticks / m[6].ticks_per_call, std::exp(g), std::exp(sh), m[1].gbps);
        std::fflush(stdout);
      }
  }
}
