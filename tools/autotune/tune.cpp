// autotune (no --from): search each operation within the budget, print its table, and with
// --emit write the winners as wisdom without losing what the file holds (save_wisdom_keeping);
// with --app the program judges the winners first (app.cpp).
#include <algorithm>
#include <iostream>
#include <string>

#include "autotune.hpp"
#include "copysynth/c_format.hpp"
#include "copysynth/peers.hpp"
#include "copysynth/report.hpp"
#include "copysynth/tuner.hpp"
#include "copysynth/wisdom.hpp"
#include "copysynth/workload.hpp"

using namespace copysynth;

namespace autotune {

/// A winner below this speedup over the system routine on its own workload (geomean_speedup of
/// the final table: three passes, medians) is not written: the table's noise is 1-2 %.
constexpr double kNotWritten = 0.97;

int run_tune(const Options& o) {
  Wisdom w;
  set_cpu(w, o.cpu);
  w.created = utc_now();
  w.command = o.command;
  std::vector<Workload> workloads;  // every operation's, before the first search starts
  if (int rc = make_workloads(o.workload_name, o.ops, o.cold, workloads)) return rc;
  for (std::size_t i = 0; i < o.ops.size(); ++i) {
    const Operation op = o.ops[i];
    const Workload& workload = workloads[i];
    TuneOptions opt;
    opt.operation = op;
    opt.budget_seconds = o.quick && !o.budget_given ? std::min(o.budget, 6.0) : o.budget;
    opt.seed = o.seed;
    opt.quick = o.quick;
    opt.cpu = o.cpu;
    opt.progress = o.progress;
    auto result = tune(workload, opt);
    if (!result) return fail(result.error());
    const TuneResult& r = *result;
    o.progress("done in " + std::to_string(static_cast<int>(r.stats.seconds + 0.5)) + " s: " +
               std::to_string(r.stats.built) + " candidates built, " + std::to_string(r.stats.rejected) +
               " rejected by verification, " + std::to_string(r.stats.timed) + " timed, " +
               std::to_string(r.stats.verify_cases) + " verification cases (" +
               format_c("%.1f", r.stats.verify_seconds) + " s)");
    o.progress("winner: " + r.routine.name() + "\n  params: " + to_string(r.routine.params()));
    if (o.show_plan) std::cerr << to_string(r.routine.plan());
    if (o.ops.size() > 1) std::cout << (op == o.ops.front() ? "" : "\n") << "== " << name_of(op) << " ==\n";
    std::cout << format_table(r.points, op) << std::flush;
    const double g = geomean_speedup(r.points);
    if (g < kNotWritten && o.isa == "host" && !o.keep_slower) {
      // Never write a routine clearly slower than the one programs already have on the workload
      // it was tuned for (a search cut short by its budget can end so: a --quick search of a
      // profile of large copies stopped before its rep stage, at 0.64x). With --isa below the
      // host's, the routine is for other CPUs (a fleet) and slower than this host's glibc by design.
      std::cerr << "autotune: the " << name_of(op) << " winner is " << format_c("%.2fx", g) << " the speed of the "
                << baseline_name(op) << " on this workload: not written, programs keep the " << baseline_name(op)
                << (o.quick ? "; try without --quick" : "") << " or with a larger --budget\n";
      continue;
    }
    if (g < 1.0)
      std::cerr << "autotune: warning: the " << name_of(op) << " winner is " << format_c("%.2fx", g)
                << " the speed of the " << baseline_name(op) << " on this workload"
                << (g < kNotWritten && o.keep_slower ? "; written anyway (--keep-slower)" : "")
                << (o.quick ? "; try without --quick" : "") << " or with a larger --budget, or keep the system routine\n";
    w.entries.push_back(wisdom_entry(r, workload.name));
  }
  if (w.entries.empty()) {
    if (!o.emit_path.empty()) std::cerr << "autotune: no routine to write to " << o.emit_path << "; nothing written\n";
    return 0;
  }
  if (!o.app_command.empty()) {  // --app: the program judges the winners before they are saved
    auto judged = judge_with_app(o, w, "");
    if (!judged) return fail(judged.error());
    w = std::move(judged).value();
  }
  if (!o.emit_path.empty())
    if (auto st = save_wisdom_keeping(w, o.emit_path, o.cpu, o.progress); !st) return fail(st.error());
  return 0;
}

}  // namespace autotune
