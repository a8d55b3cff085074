// scratch (thirty-seventh round): glibc's and AOCL-LibMem's memset at 16 bytes (compare(), median
// of 3, ns per call), fresh or with their rare paths taken first (TRAIN=1: n = 0, n = 200, 16
// bytes 20 before a page end, 100 bytes 60 before one; 100 times each).
// Build at 8d0bd7b or earlier: from 06e31dd on, compare() primes every column itself.
#include <sys/mman.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include "copysynth/peers.hpp"
#include "copysynth/timing.hpp"
#include "copysynth/stats.hpp"
using namespace copysynth;
extern "C" void* aocl_memset(void*, int, size_t);
alignas(4096) static unsigned char page2[3 * 4096];
int main(int argc, char** argv) {
  const void* g = nullptr; const void* a = nullptr;
  for (auto& pe : peers(Operation::kFill)) { if (pe.name == "glibc") g = pe.entry; if (pe.name == "aocl") a = pe.entry; }
  if (!a) { printf("no aocl peer\n"); return 1; }
  std::vector<const void*> e{g, a};
  if (getenv("TRAIN")) for (size_t k = 0; k < e.size(); ++k) {
    auto f = (void*(*)(void*,int,size_t))e[k];
    for (int r = 0; r < 100; ++r) { f(page2, 1, 0); f(page2, 1, 200); f(page2 + 4096 - 20, 1, 16); f(page2 + 4096 - 60, 1, 100); }
  }
  BenchBuffers buf(1 << 20);
  std::vector<std::vector<double>> s(e.size());
  for (int pass = 0; pass < 3; ++pass) { auto m = compare(Operation::kFill, e, buf, 16, 0, 0); for (size_t k = 0; k < e.size(); ++k) s[k].push_back(16 / m[k].gbps); }
  printf("n=16 %s: glibc %.3f aocl %.3f\n", getenv("TRAIN") ? "trained" : "fresh  ", median(s[0]), median(s[1]));
}
