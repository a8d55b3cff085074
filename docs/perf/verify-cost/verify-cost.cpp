// verify-cost: how long verify_routine takes on one wisdom's memcpy, with max_size 64 MiB (the
// default), 64 MiB - 1 (below the rep pieces' 64 MiB edge) and 4 MiB, each at every length near
// the edges (the winner's check) and at every 31st (a candidate's); a second argument checks with
// every case at every length (single_case_n = max_size, as before 980d0ce). A measurement, not
// part of the build (README.md here). Built and run on the Debian 12 host:
//   g++ -std=c++20 -O2 -I api/include -I runtime/include -I verify/include -I generator/include \
//     -I templates/include -I build/include docs/perf/verify-cost/verify-cost.cpp \
//     build/verify/libcopysynth_verify.a build/runtime/libcopysynth_runtime.a \
//     build/generator/libcopysynth_generator.a build/templates/libcopysynth_templates.a \
//     -lasmjit -lZydis -lseccomp -o /tmp/verify-cost
//   taskset -c 1 /tmp/verify-cost docs/perf/verify-cost/quick-winner.json [all]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include "copysynth/routine.hpp"
#include "copysynth/verify.hpp"
#include "copysynth/wisdom.hpp"
using namespace copysynth;
int main(int argc, char** argv) {
  auto w = load_wisdom(argv[1]);
  auto r = Routine::build(w->find(Operation::kMemcpy)->plan);
  for (std::uint64_t cap : {std::uint64_t(64) << 20, std::uint64_t(64 << 20) - 1, std::uint64_t(4) << 20}) {
    for (unsigned stride : {1u, 31u}) {
      VerifyOptions vo; vo.max_size = cap; vo.large_edge_stride = stride; if (argc > 2) vo.single_case_n = vo.max_size;
      auto t0 = std::chrono::steady_clock::now();
      auto rep = verify_routine(*r, vo);
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::printf("cap %llu stride %u: %.2f s, %s\n", (unsigned long long)cap, stride, s, rep.summary().c_str());
    }
  }
}
