// scratch: the wisdom's memcpy with mask_max as tuned and at 64, short copies by alignment and the 8 distributions
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
int main(int argc, char** argv) {
  const size_t NCALLS = getenv("NCALLS") ? atoi(getenv("NCALLS")) : 32768;
  std::ifstream f(argv[1]); auto j = nlohmann::json::parse(f);
  const char* opname = argc > 2 ? argv[2] : "memcpy";
  nlohmann::json pj; for (auto& e : j["entries"]) if (e["operation"] == opname) pj = e["params"];
  auto p = params_from_json(pj); if (!p) { fprintf(stderr, "params\n"); return 1; }
  Operation op = p->operation;
  std::vector<Routine> rs; std::vector<std::string> names;
  for (unsigned mm : {128u, 64u, 32u}) {
    CopyParams q = *p; q.mask_max.value = mm;
    auto plan = make_plan(q, CpuInfo::host().features()); if (!plan) { fprintf(stderr, "plan %u\n", mm); continue; }
    auto r = Routine::build(*plan); if (!r) { fprintf(stderr, "build %u\n", mm); continue; }
    rs.push_back(std::move(*r)); names.push_back("mask" + std::to_string(mm));
  }
  std::vector<const void*> e; std::vector<std::string> en;
  for (auto& pe : peers(op)) if (pe.name == "glibc" || pe.name == "aocl") { e.push_back(pe.entry); en.push_back(pe.name); }
  for (size_t i = 0; i < rs.size(); ++i) { e.push_back(rs[i].entry()); en.push_back(names[i]); }
  printf("ns per call, median of 3:"); for (auto& n : en) printf(" %s", n.c_str()); printf("\n");
  BenchBuffers buf(1 << 20);
  unsigned al[][2] = {{0,0},{4,0},{0,4},{4,4}};
  for (auto& a : al) for (unsigned n : {1u, 8u, 16u, 32u, 48u, 64u, 80u, 128u}) {
    std::vector<std::vector<double>> t(e.size());
    for (int pass = 0; pass < 3; ++pass) { auto m = compare(op, e, buf, n, a[0], a[1]); for (size_t k = 0; k < e.size(); ++k) t[k].push_back(m[k].ns_per_call); }
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
      for (int pass = 0; pass < 3; ++pass) { auto m = replay(op, e, calls, rb2, o); for (size_t k = 0; k < e.size(); ++k) t[k].push_back(m[k].ns_per_call); }
      printf("%-18s %s:", dn.c_str(), rb ? "readback" : "thru"); for (size_t k = 0; k < e.size(); ++k) { double v = median(t[k]); printf(" %.3f", v); if (dn != "mix") lg[k] += std::log(v); } printf("\n");
      if (dn != "mix") ++cnt;
    }
    printf("geomean %s:", rb ? "readback" : "thru"); for (auto& v : lg) printf(" %.3f", std::exp(v / cnt)); printf("\n");
  }
}
