// small-memcpy: memcpy of 1-128 bytes at src/dst offsets 0/0 and 4/4, glibc, AOCL-LibMem and a
// wisdom's memcpy, TSC ticks per call from compare() (the seeds' matrix's loop: 9 rounds,
// interleaved). A measurement, not part of the build (README.md here). Built as
// docs/perf/fill-small/small-fill.cpp says (the same libraries and AOCL-LibMem archive), run as
//   taskset -c 1 /tmp/small-memcpy docs/perf/debian12/best.json LABEL
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>
#include "copysynth/peers.hpp"
#include "copysynth/routine.hpp"
#include "copysynth/timing.hpp"
#include "copysynth/wisdom.hpp"
using namespace copysynth;
int main(int argc, char** argv) {
  auto w = load_wisdom(argv[1]);
  auto r = Routine::build(w->find(Operation::kMemcpy)->plan);
  std::vector<const void*> en{reinterpret_cast<const void*>(&std::memcpy)};
  for (const Peer& p : peers(Operation::kMemcpy)) if (p.name == "aocl") en.push_back(p.entry);
  en.push_back(r->entry());
  BenchBuffers buf(1 << 20);
  std::printf("%s: ticks per call glibc / aocl / tuned\n", argc > 2 ? argv[2] : "");
  for (unsigned so : {0u, 4u}) {
    std::printf("src %u:", so);
    for (std::uint64_t n : {1, 8, 16, 32, 48, 64, 128}) {
      const auto m = compare(Operation::kMemcpy, en, buf, n, so, so, {});
      std::printf("  %llu: %.2f/%.2f/%.2f", (unsigned long long)n, m[0].ticks_per_call, m[1].ticks_per_call, m[2].ticks_per_call);
    }
    std::printf("\n");
  }
}
