// used: the 4K-aliasing rows (dst 1, 4, 15, 33 bytes past a page-aligned src) at 32 and 64 KiB,
// each copy alone, then read back, then its source overwritten (compare(), Use::kCopy /
// kThenRead / kThenWrite, 9 interleaved rounds, median ticks per call turned into GB/s against
// the TSC), for glibc, every peer (peers()) and the memcpy of each wisdom file given. A
// measurement, not part of the build (README.md here); built as mis.cpp says, run as
//   COPYSYNTH_AOCL_CACHE_SIZES=48K,1M,32M taskset -c 1 /tmp/used A.json N.json
#include <cstdio>
#include <cstring>
#include <deque>
#include <string>
#include <vector>
#include "copysynth/peers.hpp"
#include "copysynth/routine.hpp"
#include "copysynth/timing.hpp"
#include "copysynth/wisdom.hpp"
using namespace copysynth;
int main(int argc, char** argv) {
  std::deque<Routine> rs;
  std::vector<const void*> en{reinterpret_cast<const void*>(&std::memcpy)};
  std::vector<std::string> names{"glibc"};
  for (const Peer& p : peers(Operation::kMemcpy))
    if (p.name != "glibc") { en.push_back(p.entry); names.push_back(p.name); }
  for (int i = 1; i < argc; ++i) {
    auto w = load_wisdom(argv[i]);
    if (!w) return 1;
    auto r = Routine::build(w->find(Operation::kMemcpy)->plan);
    if (!r) return 1;
    rs.push_back(std::move(*r));
    en.push_back(rs.back().entry());
    names.push_back(argv[i]);
  }
  BenchBuffers buf(1 << 20);
  const double ghz = tsc_hz() / 1e9;
  std::printf("%-22s", "GB/s");
  for (auto& n : names) std::printf(" %12s", n.c_str());
  std::printf("\n");
  const char* uses[] = {"copy", "copy+read", "copy+write"};
  for (std::uint64_t n : {32768u, 65536u})
    for (int u = 0; u < 3; ++u)
      for (std::uint32_t d : {1u, 4u, 15u, 33u}) {
        TimingOptions t;
        t.use = u == 0 ? Use::kCopy : u == 1 ? Use::kThenRead : Use::kThenWrite;
        const auto m = compare(Operation::kMemcpy, en, buf, n, 0, d, t);
        std::printf("%6llu 0/%-2u %-11s", (unsigned long long)n, d, uses[u]);
        for (const auto& x : m) std::printf(" %12.2f", n / (x.ticks_per_call / ghz));
        std::printf("\n");
      }
}
