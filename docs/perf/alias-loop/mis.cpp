// mis: the misaligned-destination matrix (workload.hpp, misaligned_workload()) from 16 KiB on,
// memcpy, for several wisdom files' memcpy routines beside every peer, in one process
// (report_points(): interleaved rounds, medians of passes over fresh buffers; GB/s). The last
// file is the "tuned" column, the others extra columns. A measurement, not part of the build
// (README.md here). Built and run on the Debian 12 host:
//   B=build; g++ -O2 -std=c++20 $(for d in */include; do echo -I$d; done) -I$B/include \
//     docs/perf/alias-loop/mis.cpp -o /tmp/mis \
//     $B/tuner/libcopysynth_tuner.a $B/verify/libcopysynth_verify.a $B/runtime/libcopysynth_runtime.a \
//     $B/templates/libcopysynth_templates.a $B/generator/libcopysynth_generator.a \
//     /usr/lib/x86_64-linux-gnu/libasmjit.a -lpthread -lrt -lZydis -lZycore build-aocl/libaocl-peer.a \
//     -Wl,-u,aocl_memcpy,-u,aocl_memmove,-u,aocl_memset,-u,copysynth_aocl_peer_zen,-u,copysynth_aocl_peer_thresholds
//   COPYSYNTH_AOCL_CACHE_SIZES=48K,1M,32M taskset -c 1 /tmp/mis B.json C.json A.json
#include <cstdio>
#include <string>
#include <vector>
#include <deque>
#include "copysynth/report.hpp"
#include "copysynth/routine.hpp"
#include "copysynth/wisdom.hpp"
#include "copysynth/workload.hpp"
using namespace copysynth;
int main(int argc, char** argv) {
  std::deque<Routine> rs;
  ReportOptions opt;
  for (int i = 1; i < argc; ++i) {
    auto w = load_wisdom(argv[i]);
    if (!w) { std::fprintf(stderr, "%s\n", w.error().message.c_str()); return 1; }
    auto r = Routine::build(w->find(Operation::kMemcpy)->plan);
    if (!r) return 1;
    rs.push_back(std::move(*r));
  }
  for (int i = 1; i + 1 < argc; ++i) opt.others.push_back({argv[i], &rs[i - 1]});
  Workload m = misaligned_workload(Operation::kMemcpy);
  std::vector<Point> keep;
  for (auto& p : m.points) if (p.size >= 16384) keep.push_back(p);
  m.points = keep;
  auto t = report_points(rs.back(), m, opt);
  std::printf("%s", t.format().c_str());
}
