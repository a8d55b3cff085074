// autotune --merge FILE... --emit OUT: one fleet file of every input's hosts, keyed by CPU
// signature (the rule: merge_fleets in wisdom.hpp). Nothing is tuned or run.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "autotune.hpp"
#include "copysynth/file_io.hpp"
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
  // The output replaces one of the inputs (`--merge fleet.json new.json --emit fleet.json`),
  // or a new file; any other file there is moved aside first, as --emit does, never lost.
  // A link is written through (write_target), as --emit does: the file it points to is replaced
  // or moved aside, and the link stays.
  auto target = write_target(o.emit_path);
  if (!target) return fail(target.error());
  const std::string out = *target;
  std::error_code ec;
  if (std::filesystem::is_regular_file(out, ec)) {
    bool input = false;
    for (const auto& in : o.merge_paths) input = input || std::filesystem::equivalent(out, in, ec);
    // An empty file, or one of white space only, holds nothing to keep: written over, as --emit does.
    if (!input && !blank_file(out)) {
      const std::string bak = free_backup_name(out);
      if (std::rename(out.c_str(), bak.c_str()) != 0)
        return fail(make_error(ErrorCode::kWisdomIo, "cannot move the existing " + out + " aside to " + bak +
                                                         " (" + std::strerror(errno) + "); nothing was written"));
      if (!o.quiet)
        std::cerr << "autotune: moved the existing " << out << " to " << bak
                  << ": it is not one of the files merged\n";
    }
  }
  if (auto st = save_fleet(m, out); !st) return fail(st.error());
  if (!o.quiet) {
    for (const auto& n : notes) std::cerr << "autotune: " << n << "\n";
    std::cerr << "autotune: wrote " << o.emit_path << ": " << m.hosts.size() << " CPU(s):";
    for (const auto& h : m.hosts) std::cerr << " " << h.cpu_signature << " (" << h.entries.size() << " entries)";
    std::cerr << "\n";
  }
  return 0;
}

}  // namespace autotune
