// pvariant: a copy of a wisdom file with parameters of one operation changed (KEY=JSON value,
// e.g. rep_alias_loop=65536 or prefetch_hint='"t0"'), its plan rebuilt (make_plan) and its code
// hash recomputed, so that `autotune --from`, `--versus` and mis.cpp accept it; the measured
// points are dropped. A measurement aid, not part of the build (README.md here); built as
// mis.cpp says, without the AOCL archive:
//   /tmp/pvariant IN.json OUT.json memcpy KEY=VALUE...
#include <cstdio>
#include <cstdlib>
#include <string>
#include <nlohmann/json.hpp>
#include "copysynth/wisdom.hpp"
#include "copysynth/ladders.hpp"
#include "copysynth/routine.hpp"
#include "copysynth/cpu.hpp"
using namespace copysynth;
int main(int argc, char** argv) {
  if (argc < 4) { std::fprintf(stderr, "usage: IN OUT OP key=value...\n"); return 2; }
  auto w = load_wisdom(argv[1]);
  if (!w) { std::fprintf(stderr, "load: %s\n", w.error().message.c_str()); return 1; }
  std::string op = argv[3];
  bool found = false;
  for (auto& e : w->entries) {
    if (std::string(name_of(e.operation)) != op) continue;
    found = true;
    nlohmann::json j = to_json(e.plan.params);
    for (int i = 4; i < argc; ++i) {
      std::string kv = argv[i]; auto eq = kv.find('=');
      j[kv.substr(0, eq)] = nlohmann::json::parse(kv.substr(eq + 1));
    }
    auto p = params_from_json(j);
    if (!p) { std::fprintf(stderr, "params: %s\n", p.error().message.c_str()); return 1; }
    auto plan = make_plan(*p, CpuInfo::host().features());
    if (!plan) { std::fprintf(stderr, "plan: %s\n", plan.error().message.c_str()); return 1; }
    e.plan = *plan;
    auto r = Routine::build(e.plan);
    if (!r) { std::fprintf(stderr, "build: %s\n", r.error().message.c_str()); return 1; }
    e.code_hash = fnv1a64(r->bytes());
    e.points.clear();
    std::fprintf(stderr, "%s\n", to_json(e.plan.params).dump().c_str());
  }
  if (!found) { std::fprintf(stderr, "no entry\n"); return 1; }
  auto s = save_wisdom(*w, argv[2]);
  if (!s) { std::fprintf(stderr, "save failed\n"); return 1; }
  return 0;
}
