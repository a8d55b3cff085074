// autotune --show FILE: what a wisdom or fleet file holds, one key=value per line in the manner
// of `ld.so --list-diagnostics` (strings quoted, bytes outside printable ASCII as \ooo); for a
// profile (COPYSYNTH_PROFILE), what was recorded: key=value lines and a size-class table per
// operation (format_profile_summary). Nothing is built or run.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "autotune.hpp"
#include "copysynth/c_format.hpp"
#include "copysynth/file_io.hpp"
#include "copysynth/profile.hpp"
#include "copysynth/report.hpp"
#include "copysynth/tuner.hpp"
#include "copysynth/wisdom.hpp"
#include "copysynth/workload.hpp"

using namespace copysynth;

namespace autotune {
namespace {

/// A value for --show: in double quotes, with ", \\ and bytes outside printable ASCII written as
/// \\ooo (octal), as ld.so --list-diagnostics writes strings; never cut short.
/// (Not named `quoted`: for a non-const std::string argument, argument-dependent lookup would
/// prefer std::quoted's overload for non-const strings, which escapes nothing but " and \\.)
std::string shown(std::string_view s) { return quoted_bytes(s, std::string::npos); }

/// The first length a class of `strategy` serves in `plan`, or "never".
std::string first_length(const CopyPlan& plan, Strategy strategy) {
  for (const auto& c : plan.classes)
    if (c.strategy == strategy) return std::to_string(c.lo);
  return "never";
}

/// `autotune --show FILE`: every fact of a wisdom or fleet file as key=value lines, one per line,
/// strings quoted (ld.so --list-diagnostics); nothing is built or run.
int show_file(const std::string& path) {
  auto f = load_fleet(path);
  if (!f) return fail(f.error());
  const CpuInfo& cpu = CpuInfo::host();
  std::ostringstream o;
  o << "copysynth.version=" << shown(COPYSYNTH_VERSION) << "\n";
  o << "wisdom.path=" << shown(path) << "\n";
  o << "wisdom.schema=" << f->schema << "\n";
  o << "wisdom.generator_version=" << shown(f->generator_version) << "\n";
  o << "wisdom.created=" << shown(f->created) << "\n";
  o << "wisdom.command=" << shown(f->command) << "\n";
  o << "wisdom.hosts=" << f->hosts.size() << "\n";
  o << "this_cpu.signature=" << shown(cpu.signature()) << "\n";
  o << "this_cpu.brand=" << shown(cpu.brand()) << "\n";
  const auto picked = select_host_index(*f, cpu.signature());  // exact, else this model's capped-ISA host
  const int selected = picked ? static_cast<int>(*picked) : -1;
  o << "this_cpu.host=" << selected << "\n";  // -1: none; this_cpu.note says why
  if (!picked) o << "this_cpu.note=" << shown(picked.error().message) << "\n";
  for (std::size_t i = 0; i < f->hosts.size(); ++i) {
    const Wisdom& h = f->hosts[i];
    const std::string hp = "host[" + std::to_string(i) + "].";
    o << hp << "cpu.signature=" << shown(h.cpu_signature) << "\n";
    o << hp << "cpu.vendor=" << shown(h.cpu_vendor) << "\n";
    o << hp << "cpu.brand=" << shown(h.cpu_brand) << "\n";
    o << hp << "cpu.family=" << h.cpu_family << "\n";
    o << hp << "cpu.model=" << h.cpu_model << "\n";
    o << hp << "cpu.stepping=" << h.cpu_stepping << "\n";
    o << hp << "cpu.features=" << shown(h.cpu_features) << "\n";
    o << hp << "generator_version=" << shown(h.generator_version) << "\n";
    o << hp << "created=" << shown(h.created) << "\n";
    o << hp << "command=" << shown(h.command) << "\n";
    o << hp << "entries=" << h.entries.size() << "\n";
    for (std::size_t k = 0; k < h.entries.size(); ++k) {
      const WisdomEntry& e = h.entries[k];
      const std::string ep = hp + "entry[" + std::to_string(k) + "].";
      o << ep << "operation=" << shown(std::string(name_of(e.operation))) << "\n";
      o << ep << "routine=" << shown(short_name(e.plan.params)) << "\n";
      o << ep << "workload=" << shown(e.workload) << "\n";
      char hash[17];
      std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(e.code_hash));
      o << ep << "code_fnv1a64=" << shown(hash) << "\n";
      // Thresholds as the plan applies them (raised to the loop's start; docs/architecture.md, 10).
      o << ep << "threshold.rep_string=" << first_length(e.plan, Strategy::kRepString) << "\n";
      o << ep << "threshold.non_temporal=" << first_length(e.plan, Strategy::kNonTemporalLoop) << "\n";
      const nlohmann::json params = to_json(e.plan.params);
      for (const auto& [key, value] : params.items())
        o << ep << "params." << key << "="
          << (value.is_string() ? shown(value.get<std::string>()) : value.dump()) << "\n";
      o << ep << "plan.ladder=" << shown(e.plan.ladder) << "\n";
      o << ep << "plan.vector_width=" << e.plan.vec << "\n";
      o << ep << "plan.classes=" << e.plan.classes.size() << "\n";
      for (std::size_t c = 0; c < e.plan.classes.size(); ++c) {  // "LO..HI STRATEGY [block B] weight W"
        const SizeClass& sc = e.plan.classes[c];
        char w[32];
        snprintf_c(w, sizeof w, "%.4g", sc.weight);
        o << ep << "plan.class[" << c << "]="
          << shown(std::to_string(sc.lo) + ".." + (sc.hi == kNever ? std::string("max") : std::to_string(sc.hi)) + " " +
                    std::string(strategy_name(sc.strategy)) + (sc.block ? " block " + std::to_string(sc.block) : "") +
                    " weight " + w)
          << "\n";
      }
      if (!e.points.empty()) {
        char g[32];
        snprintf_c(g, sizeof g, "%.3f", geomean_speedup(e.points));
        o << ep << "points=" << e.points.size() << "\n" << ep << "geomean_speedup=" << g << "\n";
      }
    }
    // The program's verdicts (autotune --app): kept=0 means the entry was removed, the system routine stays.
    o << hp << "app_verdicts=" << h.app_verdicts.size() << "\n";
    for (std::size_t k = 0; k < h.app_verdicts.size(); ++k) {
      const AppVerdict& v = h.app_verdicts[k];
      const std::string vp = hp + "app_verdict[" + std::to_string(k) + "].";
      o << vp << "operation=" << shown(std::string(name_of(v.operation))) << "\n";
      o << vp << "command=" << shown(v.command) << "\n";
      o << vp << "runs=" << v.runs << "\n";
      o << vp << "with=" << shown(v.with) << "\n";
      o << vp << "glibc_ms=" << format_c("%.3f", v.glibc_ms) << "\n";
      o << vp << "tuned_ms=" << format_c("%.3f", v.tuned_ms) << "\n";
      o << vp << "ratio=" << format_c("%.4f", v.ratio) << "\n";
      o << vp << "spread=" << format_c("%.4f", v.spread) << "\n";
      o << vp << "kept=" << (v.kept ? 1 : 0) << "\n";
      o << vp << "date=" << shown(v.date) << "\n";
    }
  }
  std::cout << o.str() << std::flush;
  return 0;
}

/// `autotune --show FILE` for a profile (COPYSYNTH_PROFILE): format_profile_summary.
int show_profile(const std::string& path) {
  auto p = load_profile(path);
  if (!p) return fail(p.error());
  std::cout << "copysynth.version=" << shown(COPYSYNTH_VERSION) << "\n" << format_profile_summary(*p) << std::flush;
  return 0;
}

}  // namespace

int run_show(const Options& o) {
  // The file is read once by the loader of its kind, each with its own size limit (a profile's
  // first record is in its first 4 KiB: is_profile_file). A directory, a FIFO (whose open() would
  // wait for a writer) or a device is said for what it is by the loader (read_regular_file,
  // file_io.hpp), before it is opened; blank_file opens regular files only, and reads up to the
  // first byte that is not white space.
  if (is_profile_file(o.show_path)) return show_profile(o.show_path);
  if (blank_file(o.show_path))
    return fail(make_error(ErrorCode::kInvalidArgument,
                           o.show_path + " is empty: --show reads a wisdom file (autotune --emit) or a profile "
                                         "(COPYSYNTH_PROFILE; a process that ends in _exit() or exec() writes no record)"));
  return show_file(o.show_path);
}

}  // namespace autotune
