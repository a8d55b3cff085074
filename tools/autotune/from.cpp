// autotune --from FILE: rebuild each entry's routine (byte-identical to the one tuned), verify it,
// and re-measure it: the usual table, the report against every peer (--report: run_report,
// report.hpp) or the commit-message table (--patch-table). With --emit the re-measured entries
// are written as save_wisdom_keeping (wisdom.hpp) writes them.
#include <gnu/libc-version.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>

#include "autotune.hpp"
#include "copysynth/peers.hpp"
#include "copysynth/report.hpp"
#include "copysynth/tuner.hpp"
#include "copysynth/verify.hpp"
#include "copysynth/wisdom.hpp"
#include "copysynth/workload.hpp"

using namespace copysynth;

namespace autotune {
namespace {

/// --versus FILE: the routine of `op` in another wisdom file of this CPU (loaded once, before
/// anything is measured), rebuilt as build_entry() rebuilds --from's (byte-identical to the one
/// tuned, else kWisdomMismatch) and verified; std::nullopt where the file has no entry for `op`
/// (a tuning that kept the system routine for it: autotune --emit writes no entry slower than
/// the system's).
Result<std::optional<Routine>> versus_routine(const Wisdom& vw, Operation op, const CpuInfo& cpu) {
  const WisdomEntry* ve = vw.find(op);
  if (!ve) return std::optional<Routine>();
  auto vr = build_entry(vw, *ve, cpu);
  if (!vr) return vr.error();
  COPYSYNTH_TRY(check_routine(*vr));
  return std::optional<Routine>(std::move(vr).value());
}

}  // namespace

int run_from(const Options& o) {
  auto w = load_wisdom_for(o.from_path, o.cpu);  // a single-host file, or this CPU's host in a fleet
  if (!w) return fail(w.error());
  Wisdom out = *w;
  out.entries.clear();
  std::vector<const WisdomEntry*> entries;
  for (const auto& e : w->entries)
    if (!o.ops_given || std::find(o.ops.begin(), o.ops.end(), e.operation) != o.ops.end()) entries.push_back(&e);
  if (entries.empty()) {
    std::string want, held;
    for (Operation op : o.ops) want += (want.empty() ? "" : ", ") + std::string(name_of(op));
    for (const auto& e : w->entries) held += (held.empty() ? "" : ", ") + std::string(name_of(e.operation));
    return fail(make_error(ErrorCode::kWisdomMismatch, o.from_path + " has no " + want + " entry (it holds " +
                                                           (held.empty() ? "none" : held) +
                                                           "); tune it with autotune --op " + want + " --emit " +
                                                           o.from_path));
  }
  std::optional<Wisdom> versus;  // --versus FILE, read before anything is measured
  if (!o.versus_path.empty()) {
    auto vw = load_wisdom_for(o.versus_path, o.cpu);
    if (!vw) return fail(make_error(vw.error().code, "--versus " + o.versus_path + ": " + vw.error().message));
    versus = std::move(vw).value();
  }
  // Each entry's workload, made before anything is measured: the entry's own unless --workload
  // says otherwise ("NAME (cold)" for cold ones). Entries of one workload name are made together,
  // so a profile that lacks some of their operations names all of them at once (profile_workloads).
  std::vector<Workload> workloads(entries.size());
  // --report on a program's profile that the entry was not tuned for: the command that tunes for
  // those calls, said after the report (its read-back row is where a seeds-tuned routine loses
  // most on a program's short copies: docs/performance.md, nineteenth round).
  std::vector<std::string> profile_note(entries.size());
  {
    std::vector<std::pair<std::string, bool>> names(entries.size());
    for (std::size_t i = 0; i < entries.size(); ++i) {
      std::string wname = o.workload_given ? o.workload_name : entries[i]->workload;
      bool wcold = o.cold;
      if (const std::string suffix = " (cold)";
          wname.size() > suffix.size() && wname.compare(wname.size() - suffix.size(), suffix.size(), suffix) == 0) {
        wname.resize(wname.size() - suffix.size());
        wcold = true;
      }
      if (wname.empty()) wname = "seeds";
      // --patch-table times the seeds' matrix whatever the entry was tuned on: its workload is not
      // made (a profile-tuned entry needs no profile for it).
      if (o.patch_table) wname = "seeds", wcold = false;
      if (wcold && (wname == "seeds" || wname == "misaligned"))
        return usage_error("--cold applies to size-distribution workloads; the " + std::string(name_of(entries[i]->operation)) +
                           " entry's workload is the " + wname + " points, timed hot (add --workload MemcpyGoogleA, "
                           "a FILE.csv or profile:FILE)");
      names[i] = {wname, wcold};
      const std::string op(name_of(entries[i]->operation));
      const std::string tuned_for = entries[i]->workload.empty() ? "seeds" : entries[i]->workload;
      // Compared with the profile's path made absolute on both sides (wisdom before this
      // copysynth kept the path as given).
      if (o.report && wname.rfind("profile:", 0) == 0 &&
          absolute_workload_name(tuned_for) != absolute_workload_name(wname) + (wcold ? " (cold)" : ""))
        profile_note[i] = "  note    this " + op + " was tuned for " + tuned_for +
                          ", not for these calls; to tune for them: autotune --op " + op + " --workload " + wname +
                          (wcold ? " --cold" : "") + " --emit FILE, then let the program judge it (docs/profile-guided.md)\n";
    }
    std::vector<bool> done(entries.size(), false);
    for (std::size_t i = 0; i < entries.size(); ++i) {
      if (done[i]) continue;
      std::vector<std::size_t> group;
      std::vector<Operation> ops;
      for (std::size_t j = i; j < entries.size(); ++j)
        if (!done[j] && names[j] == names[i]) {
          group.push_back(j);
          ops.push_back(entries[j]->operation);
          done[j] = true;
        }
      std::vector<Workload> wl;
      if (int rc = make_workloads(names[i].first, ops, names[i].second, wl)) return rc;
      for (std::size_t k = 0; k < group.size(); ++k) workloads[group[k]] = std::move(wl[k]);
    }
  }
  // A profile of few calls: what is measured on it says as little as a tuning for it would.
  for (std::size_t i = 0; i < entries.size(); ++i)
    if (!workloads[i].warning.empty() && !o.remeasure)
      std::cerr << "autotune: warning: " << name_of(entries[i]->operation) << " on " << workloads[i].name << ": "
                << workloads[i].warning << "\n";
  // The routine of every operation to be measured (--op), and with --report --versus the other
  // file's routine of each of them, is built and verified before anything is measured: a routine
  // that fails stops the run before the first report rather than after the operations before it
  // (a run of three reports takes minutes). Entries not selected by --op are not looked at.
  std::vector<Routine> routines;
  std::vector<std::optional<Routine>> others(entries.size());  // --versus: the same operation from another file
  routines.reserve(entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const WisdomEntry* e = entries[i];
    auto r = build_entry(*w, *e, o.cpu);
    if (!r) return fail(make_error(r.error().code, o.from_path + ": " + r.error().message));
    o.progress("loaded " + o.from_path + ": " + r->name() + " (" + std::to_string(r->size()) +
               " bytes of code, identical to the tuned one); verifying");
    if (auto st = check_routine(*r); !st) return fail(st.error());
    o.progress("verified " + r->name());
    routines.push_back(std::move(r).value());
    if (!o.report || !versus) continue;
    auto vr = versus_routine(*versus, e->operation, o.cpu);
    if (!vr) {
      // build_entry's advice (re-run autotune --emit on this host) would overwrite the very file
      // the user wants to compare against: say what --versus needs instead.
      std::string msg = vr.error().message;
      const std::string advice = "; re-run autotune --emit on this host";
      if (vr.error().code == ErrorCode::kWisdomMismatch && msg.ends_with(advice))
        msg.replace(msg.size() - advice.size(), advice.size(),
                    "; --versus times only a routine this build rebuilds byte-identically: tune that one again "
                    "into a file of its own (autotune --emit OTHER.json) and compare with that, or leave out --versus");
      return fail(make_error(vr.error().code, "--versus " + o.versus_path + ": " + msg));
    }
    others[i] = std::move(vr).value();
    if (others[i]) {
      o.progress("--versus: " + others[i]->name() + " from " + o.versus_path + ", verified");
    } else {
      // Said on stderr whatever -q says: the table lacks a column the command asked for.
      std::cerr << "autotune: --versus " << o.versus_path << " has no " << name_of(e->operation)
                << " entry (that tuning kept the system routine): the " << name_of(e->operation)
                << " report without its column\n";
    }
  }
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const WisdomEntry* e = entries[i];
    const Routine* r = &routines[i];
    const Workload& workload = workloads[i];
    o.progress(std::string(name_of(e->operation)) + ": measuring " +
               (workload.is_distribution() ? workload.name : std::to_string(workload.points.size()) + " points"));
    if (o.show_plan) std::cerr << to_string(r->plan());
    if (entries.size() > 1) std::cout << (i == 0 ? "" : "\n") << "== " << name_of(e->operation) << " ==\n";
    if (o.report) {
      ReportOptions ro;
      ro.progress = o.progress;
      ro.svg_path = report_svg_path(o.svg_path, e->operation, i);
      ro.svg_title = std::string(name_of(e->operation)) + " on " + o.cpu.brand() + ": tuned vs glibc";
      if (others[i])
        ro.others.push_back({std::filesystem::path(o.versus_path).filename().string(), &*others[i]});
      auto rep = run_report(*r, workload, ro, [](const std::string& text) { std::cout << text << std::flush; });
      if (!rep) return fail(rep.error());
      std::cout << profile_note[i] << std::flush;
      out.entries.push_back(*e);
      continue;
    }
    if (o.patch_table) {  // the seeds' matrix, whatever the entry was tuned on
      const Workload seeds = seeds_workload(e->operation);
      const auto points = measure_table(*r, seeds, 11, o.progress);
      // glibc runs the variant its ifunc picks for this CPU (or GLIBC_TUNABLES): a routine for a
      // lower ISA level than this CPU's is compared with glibc's variant for the higher one, unless
      // the user caps glibc as well; the caption says which, and how (a hostile-user finding).
      const IsaLevel needs = lowest_isa_level(r->params());
      const char* tunables = std::getenv("GLIBC_TUNABLES");
      std::string caption = std::string(name_of(e->operation)) + " on " + o.cpu.brand() + ": old = " +
                            baseline_name(e->operation) + " (glibc " + gnu_get_libc_version() +
                            (tunables && *tunables ? std::string(", GLIBC_TUNABLES=") + tunables
                                                   : std::string(", the variant glibc picks for this CPU")) +
                            "), new = copysynth " + r->name() +
                            ";\nns per call (TSC), medians of 3 passes x 11 rounds, both measured in the same run; "
                            "speedup = old / new; " +
                            (e->operation == Operation::kFill ? "Dst align: the destination's offset from a 64-byte "
                                                                "boundary (memset has no source)"
                                                              : "Src/Dst align: the offsets from a 64-byte boundary") +
                            ".\nCommand: " + o.shell_command + "\n";
      // glibc's choice is the host's, whatever --isa caps (o.cpu is the capped CPU).
      const IsaFeatures& glibc_sees = CpuInfo::host().features();
      if (needs != IsaLevel::kAVX512 && glibc_sees.has(Feature::kAVX512F) && !(tunables && *tunables))
        caption += "Note: the routine needs " + std::string(isa_level_name(needs)) +
                   ", and glibc ran its variant for this CPU's AVX-512; to compare with glibc's " +
                   std::string(isa_level_name(needs)) +
                   " variant, run again with GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX512F,-AVX512VL,-AVX512BW,-AVX512DQ" +
                   (needs == IsaLevel::kSSE2 ? ",-AVX2,-AVX_Fast_Unaligned_Load" : "") + "\n";
      else if (needs == IsaLevel::kSSE2 && glibc_sees.has(Feature::kAVX2) && !(tunables && *tunables))
        caption += "Note: the routine needs sse2, and glibc ran its variant for this CPU's AVX2; to compare with "
                   "glibc's SSE2 variant, run again with GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX2,-AVX_Fast_Unaligned_Load\n";
      std::cout << format_patch_table(points, caption, e->operation == Operation::kFill) << std::flush;
      out.entries.push_back(*e);
      continue;
    }
    const auto points = measure_table(*r, workload, 11, o.progress);
    std::cout << format_table(points, e->operation) << std::flush;
    WisdomEntry ne = *e;
    ne.points = points;
    out.entries.push_back(ne);
  }
  if (!o.emit_path.empty()) {
    out.created = utc_now();
    out.command = o.command;
    note_other_hosts_left(o);
    if (auto st = save_wisdom_keeping(out, o.emit_path, o.cpu, o.progress); !st) return fail(st.error());
  }
  return 0;
}

}  // namespace autotune
