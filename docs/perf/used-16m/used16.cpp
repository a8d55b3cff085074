// used16: memcpy at 8-24 MiB + 4 KiB, the copy alone, then read (a consumer) and then the source
// overwritten (a producer), warm, for a wisdom file's memcpy plan and variants of it beside
// glibc and AOCL-LibMem: "tuned" as in the file (rep in 2 MiB pieces), "whole" (one rep
// instruction: rep_chunk never), "loop8M" (rep_stop 8 MiB: the tuned AVX-512 loop, prefetch as
// tuned, from 8 MiB on), "loop8M-nopf" (the same without prefetch), "nt16M" (non-temporal stores
// from 16 MiB), "loop8M-ntaD" (the loop from 8 MiB prefetching D bytes ahead with prefetchnta),
// "loop8M-nopipe" and "loop8M-u8" (the loop without prefetch, not pipelined; unrolled 8).
// GB/s, medians of 3 passes over fresh buffers (measure_passes, timing.hpp), the
// tuner's ladder batch settings. A measurement, not part of the build (README.md here).
// Build and run lines: README.md.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>
#include "copysynth/wisdom.hpp"
#include "copysynth/ladders.hpp"
#include "copysynth/routine.hpp"
#include "copysynth/cpu.hpp"
#include "copysynth/timing.hpp"
#include "copysynth/peers.hpp"
extern "C" void* aocl_memcpy(void*, const void*, size_t);
using namespace copysynth;
int main(int argc, char** argv) {
  if (argc != 2) { std::fprintf(stderr, "usage: used16 WISDOM.json\n"); return 2; }
  auto w = load_wisdom(argv[1]);
  if (!w) { std::fprintf(stderr, "%s\n", w.error().message.c_str()); return 1; }
  const WisdomEntry* e = w->find(Operation::kMemcpy);
  if (!e) { std::fprintf(stderr, "%s has no memcpy entry\n", argv[1]); return 1; }
  std::vector<Routine> rs;
  std::vector<std::string> names{"glibc", "aocl"};
  auto add = [&](const char* n, CopyParams p) {
    auto plan = make_plan(p, CpuInfo::host().features());
    if (!plan) { std::fprintf(stderr, "%s: %s\n", n, plan.error().message.c_str()); std::exit(1); }
    auto r = Routine::build(*plan);
    if (!r) { std::fprintf(stderr, "%s: %s\n", n, r.error().message.c_str()); std::exit(1); }
    rs.push_back(std::move(r).value());
    names.push_back(n);
  };
  const CopyParams p = e->plan.params;
  add("tuned", p);
  CopyParams q = p; q.rep_chunk = kNever; add("whole", q);
  CopyParams l = p; l.rep_stop = 8ull << 20; add("loop8M", l);
  CopyParams lnp = l; lnp.prefetch_distance = 0; lnp.prefetch_min = 0; add("loop8M-nopf", lnp);
  CopyParams n = p; n.nt_threshold = 16ull << 20; add("nt16M", n);
  // AOCL-LibMem's zen5 loop for lengths above L2 prefetches with prefetchnta the lines it is about
  // to load (memcpy_impl_avx512.c, PFTCH_TWO_CL_ONE_STEP in its load_store_impls.h): the loop
  // with the nta hint at the shortest distances.
  // And the loop's own shape: not software-pipelined (AOCL-LibMem's loads all four, then stores
  // all four), and unrolled 8, both without prefetch.
  CopyParams np = lnp; np.loop_pipeline = false; add("loop8M-nopipe", np);
  CopyParams u8 = lnp; u8.loop_pipeline = false; u8.unroll = 8; add("loop8M-u8", u8);
  for (std::uint32_t d : {64u, 256u, 2048u}) {
    CopyParams a = l; a.prefetch_hint = PrefetchHint::kNTA; a.prefetch_distance = d;
    static std::vector<std::string> keep;
    keep.push_back("loop8M-nta" + std::to_string(d));
    add(keep.back().c_str(), a);
  }
  std::vector<const void*> fns{system_routine(Operation::kMemcpy), reinterpret_cast<const void*>(&aocl_memcpy)};
  for (auto& r : rs) fns.push_back(r.entry());
  std::vector<PassCase> cases;
  std::vector<std::string> labels;
  for (std::uint64_t s : {8ull << 20, 16ull << 20, 24ull << 20})
    for (Use u : {Use::kCopy, Use::kThenRead, Use::kThenWrite}) {
      PassCase c;
      c.size = s + 4096;
      c.opt.rounds = 5;
      c.opt.warmup_rounds = 1;
      c.opt.min_calls = 2;
      c.opt.batch_seconds = 100e-6;
      c.opt.max_seconds = 0.67;  // near the tuner's ladder (tuner.cpp, ladder_timing)
      c.opt.use = u;
      c.opt.state = CacheState::kWarm;
      cases.push_back(c);
      labels.push_back(std::to_string(s >> 20) + "M+4K " + std::string(use_name(u)));
    }
  auto m = measure_passes(Operation::kMemcpy, fns, cases, 3);
  std::printf("== memcpy, warm (GB/s)\n%-18s", "");
  for (const auto& nm : names) std::printf(" %14s", nm.c_str());
  std::printf("\n");
  for (std::size_t i = 0; i < cases.size(); ++i) {
    std::printf("%-18s", labels[i].c_str());
    for (std::size_t k = 0; k < fns.size(); ++k) std::printf(" %14.2f", m[i][k].gbps);
    std::printf("\n");
  }
  return 0;
}
