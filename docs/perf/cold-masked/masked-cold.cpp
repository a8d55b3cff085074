// masked-cold: where the masked small-length class loses a cold copy. MemcpyGoogleQ's calls of
// at most 64 bytes replayed (timing.hpp, replay(): ReplayBuffers cold = each call in other lines
// of two 256 MiB arenas; warm = one 4 KiB window) by glibc, AOCL-LibMem and four routines of
// this project that differ only in mask_max (0 = the head/tail ladder; 16, 64, 128 masked), with
// the calls' random page offsets, and with the src and/or dst offsets rounded down to 64 bytes
// (a masked window then spans one line). A measurement, not part of the build: docs/perf/
// cold-masked/README.md says what it shows. With a Release build in build/ and the AOCL-LibMem
// archive in build-aocl/ (tools/build-aocl-peer.sh), from the repository root:
//
//   B=build; g++ -O2 -std=c++20 $(for d in */include; do echo -I$d; done) -I$B/include \
//     docs/perf/cold-masked/masked-cold.cpp -o /tmp/masked-cold $B/tuner/libcopysynth_tuner.a \
//     $B/verify/libcopysynth_verify.a $B/runtime/libcopysynth_runtime.a \
//     $B/templates/libcopysynth_templates.a $B/generator/libcopysynth_generator.a \
//     /usr/lib/x86_64-linux-gnu/libasmjit.a -lpthread -lrt -lZydis -lZycore build-aocl/libaocl-peer.a \
//     -Wl,-u,aocl_memcpy,-u,aocl_memmove,-u,aocl_memset,-u,copysynth_aocl_peer_zen,-u,copysynth_aocl_peer_thresholds
//   taskset -c 1 /tmp/masked-cold data/size-distributions/MemcpyGoogleQ.csv
#include <cstdio>
#include <string>
#include <vector>
#include "copysynth/report.hpp"
#include "copysynth/wisdom.hpp"
#include "copysynth/ladders.hpp"
#include "copysynth/cpu.hpp"
#include "copysynth/stats.hpp"
#include "copysynth/peers.hpp"
extern "C" void* aocl_memcpy(void*, const void*, size_t);
using namespace copysynth;
int main(int argc, char** argv) {
  std::printf("cpu: %s\n", CpuInfo::host().brand().c_str());
  std::vector<Routine> rs;
  std::vector<std::string> labels;
  std::vector<const void*> fns;
  fns.push_back(system_routine(Operation::kMemcpy)); labels.push_back("glibc");
  fns.push_back((const void*)&aocl_memcpy); labels.push_back("aocl");
  for (unsigned m : {0u, 16u, 64u, 128u}) {
    CopyParams p;
    p.vector_width = 64;
    p.unroll = 4;
    p.register_bank = RegisterBank::kHigh;
    p.mask_max = m;
    p.mask_shift = m != 0;
    auto plan = make_plan(p, CpuInfo::host().features());
    auto r = Routine::build(*plan);
    rs.push_back(std::move(*r));
    labels.push_back("mask" + std::to_string(m));
  }
  for (auto& r : rs) fns.push_back(r.entry());
  auto d = load_distribution(argc > 1 ? argv[1] : "data/size-distributions/MemcpyGoogleQ.csv");
  auto calls = make_calls(*d, 32768, 7);
  std::vector<Call> small;
  for (auto c : calls) if (c.size <= 64) small.push_back(c);
  std::printf("%zu of %zu calls <= 64 bytes\n", small.size(), calls.size());
  for (int variant = 0; variant < 4; ++variant) {
    std::vector<Call> cs = small;
    const char* what[] = {"random offsets", "offsets rounded down to 64", "src rounded, dst random", "dst rounded, src random"};
    for (auto& c : cs) {
      if (variant == 1 || variant == 2) c.src_offset &= ~63u;
      if (variant == 1 || variant == 3) c.dst_offset &= ~63u;
    }
    for (bool cold : {true, false}) {
      ReplayBuffers rb(64, cold);
      TimingOptions t; t.rounds = 9;
      std::vector<std::vector<double>> s(fns.size());
      for (int pass = 0; pass < 3; ++pass) {
        auto m = replay(Operation::kMemcpy, fns, cs, rb, t);
        for (size_t i = 0; i < fns.size(); ++i) s[i].push_back(m[i].ns_per_call);
      }
      std::printf("%-28s %-5s", what[variant], cold ? "cold" : "warm");
      for (size_t i = 0; i < fns.size(); ++i) std::printf("  %s %6.2f", labels[i].c_str(), median(s[i]));
      std::printf("\n");
    }
  }
}
