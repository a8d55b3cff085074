// scratch: one process, the same comparison run at different stack depths (alloca)
#include <alloca.h>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <vector>
#include <nlohmann/json.hpp>
#include "copysynth/peers.hpp"
#include "copysynth/timing.hpp"
#include "copysynth/stats.hpp"
#include "copysynth/routine.hpp"
#include "copysynth/ladders.hpp"
using namespace copysynth;
__attribute__((noinline)) void at_depth(size_t d, Operation op, std::vector<const void*>& e, BenchBuffers& buf) {
  volatile char* pad = (volatile char*)alloca(d + 1); pad[0] = 0;
  std::vector<std::vector<double>> s(e.size());
  for (int pass = 0; pass < 3; ++pass) { auto m = compare(op, e, buf, 1, 0, 0); for (size_t k = 0; k < e.size(); ++k) s[k].push_back(1 / m[k].gbps); }
  volatile int here = 0;
  printf("depth %5zu stack%%4096 %4lu ns:", d, (unsigned long)((uintptr_t)&here % 4096)); for (auto& v : s) printf(" %.3f", median(v)); printf("\n");
}
int main(int argc, char** argv) {
  std::ifstream f(argv[1]); auto j = nlohmann::json::parse(f);
  auto p = params_from_json(j); if (!p) return 1;
  Operation op = p->operation;
  auto plan = make_plan(*p, CpuInfo::host().features()); auto r = Routine::build(*plan);
  const void* g = nullptr;
  for (auto& pe : peers(op)) if (pe.name == "glibc") g = pe.entry;
  BenchBuffers buf(1 << 20);
  std::vector<const void*> e{g, r->entry()};
  for (size_t d = 0; d < 4096; d += 256) at_depth(d, op, e, buf);
  for (size_t d = 0; d < 128; d += 16) at_depth(d, op, e, buf);
}
