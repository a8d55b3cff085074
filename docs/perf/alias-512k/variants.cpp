// scratch: 4K-aliasing copies at 256 KiB-1 MiB: the routine with rep, with its rep band's aliasing
// copies handed to its loop forward, or to its loop backward (alias_window), against glibc and rep movsb
#include <cstdio>
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
  std::vector<Routine> rs;
  for (int k = 1; k < argc; ++k) { std::ifstream f(argv[k]); auto j = nlohmann::json::parse(f); auto p = params_from_json(j);
    if (!p) { printf("bad %s\n", argv[k]); return 1; }
    auto plan = make_plan(*p, CpuInfo::host().features()); if (!plan) { printf("plan %s\n", argv[k]); return 1; }
    auto r = Routine::build(*plan); if (!r) { printf("build %s\n", argv[k]); return 1; } rs.push_back(std::move(*r)); }
  const void* g = nullptr; const void* rep = nullptr;
  for (auto& pe : peers(Operation::kMemcpy)) { if (pe.name == "glibc") g = pe.entry; if (pe.name == "rep_movsb") rep = pe.entry; }
  std::vector<const void*> e{g, rep};
  for (auto& r : rs) e.push_back(r.entry());
  BenchBuffers buf(4 << 20);
  printf("GB/s, medians of 3: glibc rep_movsb");
  for (int k = 1; k < argc; ++k) printf(" %s", argv[k]); printf("\n");
  for (unsigned n : {262144u, 524288u, 1048576u}) for (unsigned d : {0u, 1u, 15u, 33u}) {
    std::vector<std::vector<double>> s(e.size());
    for (int pass = 0; pass < 3; ++pass) { auto m = compare(Operation::kMemcpy, e, buf, n, 0, d); for (size_t k = 0; k < e.size(); ++k) s[k].push_back(m[k].gbps); }
    printf("%7u 0/%-2u:", n, d); for (auto& v : s) printf(" %7.2f", median(v)); printf("\n");
  }
}
