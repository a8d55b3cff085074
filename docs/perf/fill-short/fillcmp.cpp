// scratch: the fill as emitted before (pattern made with imul at the entry: fill_old.S from df419a8) and now (JIT)
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
#include "copysynth/wisdom.hpp"
#include "copysynth/ladders.hpp"
#include "copysynth/workload.hpp"
using namespace copysynth;
extern "C" void* fill_old(void*, int, size_t); extern "C" void* fill_new(void*, int, size_t);
int main(int argc, char** argv) {
  std::ifstream f(argv[1]); auto j = nlohmann::json::parse(f);
  auto w = wisdom_from_json(j); if (!w) return 1; const CopyPlan* plan = nullptr; for (auto& e : w->entries) if (e.operation == Operation::kFill) plan = &e.plan;
  auto r = Routine::build(*plan);
  std::vector<const void*> e; std::vector<std::string> en;
  for (auto& pe : peers(Operation::kFill)) if (pe.name == "glibc" || pe.name == "aocl") { e.push_back(pe.entry); en.push_back(pe.name); }
  e.push_back((void*)fill_old); en.push_back("old");
  e.push_back((void*)fill_new); en.push_back("new.S"); e.push_back(r->entry()); en.push_back("new-jit");
  printf("ns per call, median of 3:"); for (auto& n : en) printf(" %s", n.c_str()); printf("\n");
  BenchBuffers buf(1 << 20);
  for (unsigned d : {0u, 4u}) for (unsigned n : {1u, 8u, 16u, 32u, 48u, 64u, 100u, 128u, 256u, 1024u}) {
    std::vector<std::vector<double>> t(e.size());
    for (int pass = 0; pass < 3; ++pass) { auto m = compare(Operation::kFill, e, buf, n, 0, d); for (size_t k = 0; k < e.size(); ++k) t[k].push_back(m[k].ns_per_call); }
    printf("n=%4u dst+%u:", n, d); for (auto& v : t) printf(" %.3f", median(v)); printf("\n");
  }
  for (bool rb : {false, true}) {
    std::vector<double> lg(e.size(), 0); int cnt = 0;
    for (auto& dn : production_distributions()) {
      auto d = load_distribution(dn); if (!d) continue;
      auto calls = make_calls(*d, 32768, 7);
      ReplayBuffers rb2(d->max_size(), false);
      TimingOptions o; if (rb) o.use = Use::kThenRead;
      std::vector<std::vector<double>> t(e.size());
      for (int pass = 0; pass < 3; ++pass) { auto m = replay(Operation::kFill, e, calls, rb2, o); for (size_t k = 0; k < e.size(); ++k) t[k].push_back(m[k].ns_per_call); }
      printf("%-14s %s:", dn.c_str(), rb ? "rdbk" : "thru"); for (size_t k = 0; k < e.size(); ++k) { double v = median(t[k]); printf(" %.3f", v); lg[k] += std::log(v); } printf("\n");
      ++cnt;
    }
    printf("geomean %s:", rb ? "rdbk" : "thru"); for (auto& v : lg) printf(" %.3f", std::exp(v / cnt)); printf("\n");
  }
}
