// Scratch benchmark behind docs/perf/masked-small/README.md (not part of the build): the eight
// production distributions replayed (copy, and each call reading back the last; COLD=1: calls
// spread over 256 MiB, copy only) and a few short lengths at src offset 0 and 4, for glibc,
// AOCL-LibMem and the routines of the parameter files given (JSON objects as in a wisdom entry's
// "params"); FILE:LETTERS sets CS_PROTO=LETTERS while that routine is built (prototypes.diff).
// Build against a release build tree with the AOCL peer (see README.md), run from the repository
// root so the distributions in data/ are found.
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>
#include <nlohmann/json.hpp>
#include "copysynth/peers.hpp"
#include "copysynth/timing.hpp"
#include "copysynth/workload.hpp"
#include "copysynth/stats.hpp"
#include "copysynth/routine.hpp"
#include "copysynth/ladders.hpp"
using namespace copysynth;
int main(int argc, char** argv) {
  // args: param json files
  std::vector<Routine> rs; std::vector<std::string> names;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i], pr; auto colon = a.find(':'); if (colon != std::string::npos) { pr = a.substr(colon + 1); a = a.substr(0, colon); }
    setenv("CS_PROTO", pr.c_str(), 1);
    std::ifstream f(a); auto j = nlohmann::json::parse(f);
    auto p = params_from_json(j); if (!p) { fprintf(stderr, "bad %s\n", argv[i]); return 1; }
    auto plan = make_plan(*p, CpuInfo::host().features()); if (!plan) { fprintf(stderr, "plan %s\n", argv[i]); return 1; }
    auto r = Routine::build(*plan); if (!r) { fprintf(stderr, "build %s: %s\n", argv[i], r.error().message.c_str()); return 1; }
    rs.push_back(std::move(*r)); names.push_back(std::string(argv[i]).substr(std::string(argv[i]).find_last_of('/') + 1).substr(0, 12));
  }
  std::vector<const void*> entries; std::vector<std::string> cols;
  for (auto& p : peers(Operation::kMemcpy)) if (p.name == "glibc" || p.name == "aocl") { entries.push_back(p.entry); cols.push_back(p.name); }
  for (size_t i = 0; i < rs.size(); ++i) { entries.push_back(rs[i].entry()); cols.push_back(names[i]); }
  printf("%-26s", "ns/call"); for (auto& c : cols) printf(" %12.12s", c.c_str()); printf("\n");
  std::vector<std::vector<double>> all(entries.size());
  for (auto& name : production_distributions()) {
    auto w = make_workload(name, Operation::kMemcpy); if (!w) continue;
    auto calls = replay_calls(*w, 32768, 0x5EED);
    const bool cold = getenv("COLD") != nullptr;
    ReplayBuffers rb(w->distribution->max_size(), cold);
    for (Use use : cold ? std::vector<Use>{Use::kCopy} : std::vector<Use>{Use::kCopy, Use::kThenRead}) {
      TimingOptions tu; tu.rounds = 15; tu.use = use;
      std::vector<std::vector<double>> s(entries.size());
      for (int pass = 0; pass < 5; ++pass) { auto m = replay(Operation::kMemcpy, entries, calls, rb, tu); for (size_t k = 0; k < entries.size(); ++k) s[k].push_back(m[k].ns_per_call); }
      printf("%-26s", (name + (use == Use::kThenRead ? " rb" : "")).c_str());
      for (size_t k = 0; k < entries.size(); ++k) { double v = median(s[k]); all[k].push_back(v); printf(" %12.2f", v); }
      printf("\n");
    }
  }
  printf("%-26s", "geomean"); for (auto& v : all) printf(" %12.3f", geomean(v)); printf("\n");
  // points
  BenchBuffers buf(1 << 20);
  for (unsigned n : {1u, 8u, 16u, 32u, 48u, 64u, 100u, 128u}) for (unsigned sa : {0u, 4u}) {
    std::vector<std::vector<double>> s(entries.size());
    for (int pass = 0; pass < 3; ++pass) { auto m = compare(Operation::kMemcpy, entries, buf, n, sa, 0); for (size_t k = 0; k < entries.size(); ++k) s[k].push_back(m[k].gbps); }
    printf("%4u %u/0 GB/s            ", n, sa); for (auto& v : s) printf(" %12.2f", median(v)); printf("\n");
  }
}
