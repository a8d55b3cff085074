// autotune --merge FILE... --emit OUT: one fleet file of every input's hosts, keyed by CPU
// signature (the rule: merge_fleets in wisdom.hpp). Nothing is tuned or run.
#include <iostream>

#include "autotune.hpp"
#include "copysynth/wisdom.hpp"

using namespace copysynth;

namespace autotune {

int run_merge(const Options& o) {
  std::vector<Fleet> fleets;
  for (const auto& in : o.merge_paths) {
    auto f = load_fleet(in);
    if (!f) return fail(f.error());
    fleets.push_back(std::move(f).value());
  }
  std::vector<std::string> notes;
  Fleet m = merge_fleets(fleets, &notes, o.merge_paths);
  m.created = utc_now();
  m.command = o.command;
  if (auto st = save_fleet(m, o.emit_path); !st) return fail(st.error());
  if (!o.quiet) {
    for (const auto& n : notes) std::cerr << "autotune: " << n << "\n";
    std::cerr << "autotune: wrote " << o.emit_path << ": " << m.hosts.size() << " CPU(s):";
    for (const auto& h : m.hosts) std::cerr << " " << h.cpu_signature << " (" << h.entries.size() << " entries)";
    std::cerr << "\n";
  }
  return 0;
}

}  // namespace autotune
