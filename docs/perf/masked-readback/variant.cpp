// variant: a copy of a wisdom file with one operation's mask_max (and head_tail_max) changed,
// its plan rebuilt (make_plan) and its code hash recomputed, so that `autotune --from` and
// `--versus` accept it. A measurement aid, not part of the build (docs/perf/masked-readback/).
//   variant IN.json OUT.json OPERATION MASK_MAX [HEAD_TAIL_MAX]
// mask_shift follows mask_max (on where it is > 0, as the search sets it); the entry's measured
// points are dropped (they were the other routine's).
//   B=build; g++ -O2 -std=c++20 $(for d in */include; do echo -I$d; done) -I$B/include \
//     docs/perf/masked-readback/variant.cpp -o /tmp/variant \
//     $B/tuner/libcopysynth_tuner.a $B/verify/libcopysynth_verify.a $B/runtime/libcopysynth_runtime.a \
//     $B/templates/libcopysynth_templates.a $B/generator/libcopysynth_generator.a \
//     /usr/lib/x86_64-linux-gnu/libasmjit.a -lpthread -lrt -lZydis -lZycore

#include <cstdio>
#include <cstdlib>
#include <string>
#include "copysynth/wisdom.hpp"
#include "copysynth/ladders.hpp"
#include "copysynth/routine.hpp"
#include "copysynth/cpu.hpp"
using namespace copysynth;
int main(int argc, char** argv) {
  if (argc < 5) { std::fprintf(stderr, "usage: variant IN.json OUT.json OPERATION MASK_MAX [HEAD_TAIL_MAX]\n"); return 2; }
  auto w = load_wisdom(argv[1]);
  if (!w) { std::fprintf(stderr, "load: %s\n", w.error().message.c_str()); return 1; }
  std::string op = argv[3];
  for (auto& e : w->entries) {
    if (std::string(name_of(e.operation)) != op) continue;
    CopyParams p = e.plan.params;
    p.mask_max = std::atoi(argv[4]);
    p.mask_shift = p.mask_max.value != 0;
    if (argc > 5) p.head_tail_max = std::atoi(argv[5]);
    auto weights = e.plan.classes;
    auto plan = make_plan(p, CpuInfo::host().features());
    if (!plan) { std::fprintf(stderr, "plan: %s\n", plan.error().message.c_str()); return 1; }
    e.plan = *plan;
    auto r = Routine::build(e.plan);
    if (!r) { std::fprintf(stderr, "build: %s\n", r.error().message.c_str()); return 1; }
    e.code_hash = fnv1a64(r->bytes());
    e.points.clear();
  }
  auto s = save_wisdom(*w, argv[2]);
  if (!s) { std::fprintf(stderr, "save failed\n"); return 1; }
  return 0;
}
