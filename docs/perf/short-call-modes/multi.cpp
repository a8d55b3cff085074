// scratch: the routines of the parameter files given, in one process, each against glibc at 1 and 32 bytes
#include <cstdio>
#include <cstdint>
#include <fstream>
#include <vector>
#include <nlohmann/json.hpp>
#include "copysynth/peers.hpp"
#include "copysynth/timing.hpp"
#include "copysynth/stats.hpp"
#include "copysynth/routine.hpp"
#include "copysynth/ladders.hpp"
using namespace copysynth;
int main(int argc, char** argv) {
  std::ifstream f(argv[1]); auto j = nlohmann::json::parse(f);
  auto p = params_from_json(j); if (!p) return 1;
  Operation op = p->operation;
  std::vector<Routine> rs;
  for (int k = 1; k < argc; ++k) { std::ifstream ff(argv[k]); auto jj = nlohmann::json::parse(ff); auto pp = params_from_json(jj); auto plan = make_plan(*pp, CpuInfo::host().features()); auto r = Routine::build(*plan); rs.push_back(std::move(*r)); }
  const void* g = nullptr;
  for (auto& pe : peers(op)) if (pe.name == "glibc") g = pe.entry;
  BenchBuffers buf(1 << 20);
  std::vector<const void*> e{g};
  for (auto& r : rs) e.push_back(r.entry());
  for (unsigned n : {1u, 32u}) {
    std::vector<std::vector<double>> s(e.size());
    for (int pass = 0; pass < 3; ++pass) { auto m = compare(op, e, buf, n, 0, 0); for (size_t k = 0; k < e.size(); ++k) s[k].push_back(n / m[k].gbps); }
    printf("n=%2u ns:", n); for (auto& v : s) printf(" %.3f", median(v)); printf("\n");
  }
  for (auto& r : rs) printf(" %lx", (unsigned long)((uintptr_t)r.entry() & 0xfffff)); printf("\n");
}
