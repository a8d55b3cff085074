// tree-weights: one wisdom's memcpy ladder rebuilt with other dispatch-tree weights (the same
// classes and code; only the order of the compares changes): the stored weights ("chain" for
// best-chain.json), the production prior, and "hotN" (the class holding N bytes weighs 1, each
// class k places away 0.4^k, as the tuner's hot_first() does for N = 33), against glibc, on fixed
// lengths (100000 calls each) and the eight MemcpyGoogle mixes (32768 independent lengths,
// random offsets in a 4 KiB window), interleaved, medians. A measurement, not part of the build.
// From the repository root, with a Release build in build/:
//
//   g++ -O2 -std=c++20 -Iruntime/include -Igenerator/include -Itemplates/include -Iverify/include \
//     -Ibuild/include docs/perf/isa-avx2-zen5/tree-weights.cpp -o tree-weights \
//     build/runtime/libcopysynth_runtime.a build/templates/libcopysynth_templates.a \
//     build/generator/libcopysynth_generator.a /usr/lib/x86_64-linux-gnu/libasmjit.a -lpthread -lrt -lZydis -lZycore
//   taskset -c 1 ./tree-weights docs/perf/isa-avx2-zen5/best-chain.json
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>
#include "copysynth/ladders.hpp"
#include "copysynth/routine.hpp"
#include "copysynth/wisdom.hpp"
using namespace copysynth;
typedef void* (*fn_t)(void*, const void*, size_t);
static double now() { timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e9 + t.tv_nsec; }
int main(int argc, char** argv) {
  auto w = load_wisdom(argv[1]);
  if (!w) { std::printf("load failed\n"); return 1; }
  const CopyPlan base = w->find(Operation::kMemcpy)->plan;
  struct V { std::string name; CopyPlan plan; };
  std::vector<V> vs;
  vs.push_back({"chain", base});
  { CopyPlan p = base; for (auto& k : p.classes) k.weight = default_class_weight(k.lo, k.hi); vs.push_back({"prior", p}); }
  for (std::uint64_t hot : {5ull, 9ull, 17ull, 33ull}) {
    CopyPlan p = base; int h = 0;
    for (int i = 0; i < (int)p.classes.size(); ++i) if (p.classes[i].lo == hot) h = i;
    for (int i = 0; i < (int)p.classes.size(); ++i) p.classes[i].weight = std::pow(0.4, std::abs(i - h));
    vs.push_back({"hot" + std::to_string(hot), p});
  }
  std::vector<Routine> rs; std::vector<fn_t> fs;
  for (auto& v : vs) { auto r = Routine::build(v.plan); if (!r) { std::printf("build failed %s\n", v.name.c_str()); return 1; } rs.push_back(std::move(*r)); }
  for (auto& r : rs) fs.push_back((fn_t)r.entry());
  fs.push_back((fn_t)&std::memcpy); vs.push_back({"glibc", base});
  char* buf = static_cast<char*>(aligned_alloc(4096, 1 << 20)); std::memset(buf, 1, 1 << 20);
  std::printf("%6s", "n"); for (auto& v : vs) std::printf(" %8s", v.name.c_str()); std::printf("  (ns/call)\n");
  for (size_t n : {1, 3, 7, 8, 16, 24, 32, 48, 64, 100, 128, 200}) {
    std::vector<std::vector<double>> t(fs.size());
    for (int round = 0; round < 7; ++round) for (size_t i = 0; i < fs.size(); ++i) {
      fn_t volatile fv = fs[i]; fn_t f = fv; double a = now();
      for (int k = 0; k < 100000; ++k) { f(buf + 65536, buf, n); asm volatile("" ::: "memory"); }
      t[i].push_back((now() - a) / 100000); }
    std::printf("%6zu", n); for (auto& v : t) { std::sort(v.begin(), v.end()); std::printf(" %8.2f", v[3]); } std::printf("\n");
  }
  const char* names[] = {"A", "B", "D", "L", "M", "Q", "S", "U"};
  std::vector<double> g(fs.size(), 0);
  for (const char* nm : names) {
    std::ifstream in(std::string("data/size-distributions/MemcpyGoogle") + nm + ".csv");
    std::string line; std::getline(in, line); std::vector<double> wts; std::stringstream ss(line); std::string f;
    while (std::getline(ss, f, ',')) wts.push_back(std::stod(f));
    std::mt19937_64 rng(7); std::discrete_distribution<size_t> dist(wts.begin(), wts.end()); std::uniform_int_distribution<size_t> off(0, 4095);
    const int N = 32768; std::vector<size_t> len(N), so(N), dof(N);
    for (int i = 0; i < N; ++i) { len[i] = dist(rng); so[i] = off(rng); dof[i] = off(rng); }
    std::vector<std::vector<double>> t(fs.size());
    for (int round = 0; round < 9; ++round) for (size_t i = 0; i < fs.size(); ++i) {
      fn_t volatile fv = fs[i]; fn_t fn = fv; char* S = buf; char* D = buf + 524288; double a = now();
      for (int k = 0; k < N; ++k) fn(D + dof[k], S + so[k], len[k]);
      t[i].push_back((now() - a) / N); }
    std::printf("mix %s", nm);
    for (size_t i = 0; i < fs.size(); ++i) { std::sort(t[i].begin(), t[i].end()); std::printf(" %8.2f", t[i][4]); g[i] += std::log(t[i][4]); }
    std::printf("\n");
  }
  std::printf("geomean");
  for (size_t i = 0; i < fs.size(); ++i) std::printf(" %8.2f", std::exp(g[i] / 8));
  std::printf("\n");
}
