// scratch: one fill routine against glibc memset at short lengths, with where things lie
#include <cstdio>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>
#include <nlohmann/json.hpp>
#include "copysynth/peers.hpp"
#include "copysynth/timing.hpp"
#include "copysynth/workload.hpp"
#include "copysynth/stats.hpp"
#include "copysynth/routine.hpp"
#include "copysynth/ladders.hpp"
using namespace copysynth;
int main(int argc, char** argv) {
  std::ifstream f(argv[1]); auto j = nlohmann::json::parse(f);
  auto p = params_from_json(j); if (!p) return 1;
  Operation op = p->operation;
  auto plan = make_plan(*p, CpuInfo::host().features()); if (!plan) return 1;
  auto r = Routine::build(*plan); if (!r) return 1;
  const void* g = nullptr;
  for (auto& pe : peers(op)) if (pe.name == "glibc") g = pe.entry;
  BenchBuffers buf(1 << 20);
  std::vector<const void*> e{g, r->entry()};
  std::vector<double> rat, ga, ta;
  for (unsigned n : {1u, 8u, 32u}) {
    std::vector<double> a, b;
    for (int pass = 0; pass < 3; ++pass) { auto m = compare(op, e, buf, n, 0, 0); a.push_back(m[0].gbps); b.push_back(m[1].gbps); }
    rat.push_back(median(b) / median(a)); ga.push_back(n / median(a)); ta.push_back(n / median(b));
  }
  volatile int stackvar = 0;
  printf("ns glibc %.3f %.3f tuned %.3f %.3f ", ga[0], ga[2], ta[0], ta[2]);
  printf("ratio %.3f %.3f %.3f  entry %p (mod 4096 %lu)  glibc %p  buf dst %p stack %p main %p\n", rat[0], rat[1], rat[2],
         r->entry(), (unsigned long)((uintptr_t)r->entry() % 4096), g, (void*)buf.dst(), (void*)&stackvar, (void*)&main);
}
