// autotune (no --from): search each operation within the budget, print its table, and with
// --emit write the winners as wisdom without losing what the file holds (save_wisdom_keeping);
// with --app the program judges the winners first (app.cpp).
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>

#include "autotune.hpp"
#include "copysynth/app_judge.hpp"
#include "copysynth/c_format.hpp"
#include "copysynth/interrupt.hpp"
#include "copysynth/peers.hpp"
#include "copysynth/report.hpp"
#include "copysynth/tuner.hpp"
#include "copysynth/wisdom.hpp"
#include "copysynth/workload.hpp"

using namespace copysynth;

namespace autotune {

extern "C" char** environ;

namespace {

/// `e`'s routine measured again in a process of its own: this program (/proc/self/exe) rebuilds
/// it from a temporary wisdom file holding `e` alone (`--from IN --op OP --workload W [--cold]
/// --emit OUT --quiet`, W and --cold as this run's, so a .csv file is read again from its path;
/// stdout discarded, stderr shared) and re-measures it on that workload: the final table's
/// measure_table with 11 rounds (the search's own final table: 7, --quick 3). Every JIT routine
/// of a process lands in one per-process mode of short calls, and one and the same routine was
/// measured at 0.86-1.14x glibc's memset at 1-32 bytes from one process to the next
/// (docs/perf/short-call-modes/), so the first process's ratio can be its draw. `head`: the
/// wisdom's CPU and schema fields. Returns the entry as the second process wrote it (its points
/// are that process's table). Errors: kSystem (no temporary directory, the program not started,
/// or it failed: the message says which), save_wisdom's kWisdomIo, load_wisdom's errors.
Result<WisdomEntry> measure_in_new_process(const Options& o, const Wisdom& head, const WisdomEntry& e) {
  StopsDeferred stops;  // an interrupt before the child runs: `dir` is removed, then the process ends by it
  TempDir dir;
  COPYSYNTH_TRY(make_temp_dir(dir, "remeasure"));
  Wisdom one = head;
  one.entries = {e};
  const std::string in = dir.path + "/in.json", out = dir.path + "/out.json";
  COPYSYNTH_TRY(save_wisdom(one, in));
  std::vector<std::string> args{"/proc/self/exe", "--from", in,  "--op",   std::string(name_of(e.operation)),
                                "--workload",     o.workload_name, "--emit", out, "--quiet", "--remeasure"};
  if (o.cold) args.emplace_back("--cold");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  if (int err = posix_spawn_file_actions_init(&fa))
    return make_error(ErrorCode::kSystem, std::string("posix_spawn_file_actions_init: ") + std::strerror(err));
  int rc = posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  // Registered, so that an interrupt is passed on to it (interrupt.hpp); none starts after one.
  if (rc == 0) rc = spawn_waited_child(&pid, args[0].c_str(), false, &fa, argv.data(), environ, false);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw_if_stopped();  // refused after a noted stop, or the file action failed as one came
  if (rc != 0) return make_error(ErrorCode::kSystem, "cannot start " + args[0] + ": " + std::strerror(rc));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) {
      set_waited_child(0);
      return make_error(ErrorCode::kSystem, std::string("waitpid: ") + std::strerror(errno));
    }
  set_waited_child(0);
  throw_if_stopped();  // unwinds: `dir` is removed on the way out
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return make_error(ErrorCode::kSystem, "the second process (autotune --from) " + describe_wait_status(status));
  auto w = load_wisdom(out);
  if (!w) return w.error();
  const WisdomEntry* again = w->find(e.operation);
  if (!again || again->points.empty())
    return make_error(ErrorCode::kSystem,
                      "the second process wrote no measured " + std::string(name_of(e.operation)) + " entry");
  return *again;
}

}  // namespace

int run_tune(const Options& o) {
  Wisdom w;
  set_cpu(w, o.cpu);
  w.created = utc_now();
  w.command = o.command;
  if (auto st = check_tuning_workload_name(o.workload_name); !st) return usage_error(st.error().message);
  std::vector<Workload> workloads;  // every operation's, before the first search starts
  if (int rc = make_workloads(o.workload_name, o.ops, o.cold, workloads)) return rc;
  // --app: a command that cannot judge is refused before the search, not after it.
  if (!o.app_command.empty())
    if (auto st = check_app_before_search(o); !st) return fail(st.error());
  for (std::size_t i = 0; i < o.ops.size(); ++i) {
    const Operation op = o.ops[i];
    const Workload& workload = workloads[i];
    // Said on a line of its own, --quiet or not.
    if (!workload.warning.empty())
      std::cerr << "autotune: warning: " << name_of(op) << " on " << workload.name << ": " << workload.warning << "\n";
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
    double g = geomean_speedup(r.points);
    // A .csv is shown by its file name, but the wisdom keeps the file's absolute path, so that
    // `--from` in any directory finds it again; a profile's likewise.
    WisdomEntry entry = wisdom_entry(r, wisdom_workload_name(o.workload_name, workload));
    if (!(g >= o.min_speedup) && o.isa == "host" && !o.keep_slower) {  // (a NaN ratio too)
      // Never write a routine clearly slower than the one programs already have on the workload
      // it was tuned for (a search cut short by its budget can end so: a --quick search of a
      // profile of large copies stopped before its rep stage, at 0.64x). With --isa below the
      // host's, the routine is for other CPUs (a fleet) and slower than this host's glibc by
      // design. One process's ratio can be its draw (measure_in_new_process): where the winner
      // would be written or judged by --app, it is refused only if a second process measures it
      // below the bar too (a few seconds, on a refusal only).
      std::string second;  // what the second process said, for the message
      if (!o.emit_path.empty() || !o.app_command.empty()) {
        o.progress(std::string(name_of(op)) + ": " + format_c("%.3fx", g) + " the " + baseline_name(op) + ", below " +
                   format_c("%.3fx", o.min_speedup) + "; measuring it again in a process of its own");
        auto again = measure_in_new_process(o, w, entry);
        const double g2 = again ? geomean_speedup(again->points) : 0.0;
        if (again && g2 >= o.min_speedup) {
          std::cerr << "autotune: the " << name_of(op) << " winner measured " << format_c("%.3fx", g)
                    << " the speed of the " << baseline_name(op) << " in this process and " << format_c("%.3fx", g2)
                    << " in a second one (one process's ratio can be its draw: docs/perf/short-call-modes/); "
                       "written with the second measurement\n";
          entry.points = again->points;
          g = g2;
        } else {
          second = again ? " (" + format_c("%.3fx", g2) + " in a second process)"
                         : " (not measured in a second process: " + again.error().message + ")";
        }
      }
      if (!(g >= o.min_speedup)) {
        // What programs keep: the file --emit names may already hold an entry for this operation
        // in the host of exactly this CPU's signature, which the save keeps as it is (a host of
        // this model tuned with a capped ISA does not count: a winner of another operation
        // written in this run adds a host of this signature, which programs then pick).
        std::string kept = "the " + baseline_name(op);
        if (!o.emit_path.empty())
          if (auto old = load_fleet(o.emit_path, WisdomPoints::kSkip); old)
            for (const Wisdom& h : old->hosts)
              if (h.cpu_signature == o.cpu.signature() && h.find(op))
                kept = "the " + std::string(name_of(op)) + " entry that " + o.emit_path + " already holds (left as it is)";
        std::cerr << "autotune: the " << name_of(op) << " winner is " << format_c("%.3fx", g) << " the speed of the "
                  << baseline_name(op) << " on this workload" << second << ", below " << format_c("%.3fx", o.min_speedup)
                  << (o.emit_path.empty() && o.app_command.empty() ? ": with --emit it would not be written"
                                                                   : ": not written")
                  << ", programs keep " << kept << "; try again " << (o.quick ? "without --quick or " : "")
                  << "with a larger --budget\n";
        continue;
      }
    }
    if (!(g >= 1.0))  // (a NaN ratio too)
      std::cerr << "autotune: warning: the " << name_of(op) << " winner is " << format_c("%.3fx", g)
                << " the speed of the " << baseline_name(op) << " on this workload"
                << (g < o.min_speedup && o.keep_slower ? "; written anyway (--keep-slower)" : "")
                << "; try again " << (o.quick ? "without --quick or " : "") << "with a larger --budget, or keep the system routine\n";
    w.entries.push_back(std::move(entry));
  }
  if (w.entries.empty()) {
    if (!o.emit_path.empty()) {
      std::error_code ec;
      std::cerr << "autotune: no routine to write to " << o.emit_path << "; nothing written"
                << (std::filesystem::exists(o.emit_path, ec) ? " (the file is left as it was)" : "") << "\n";
    }
    return 0;
  }
  if (!o.app_command.empty()) {  // --app: the program judges the winners before they are saved
    auto judged = judge_with_app(o, w, "", /*checked=*/true);
    if (!judged) return fail(judged.error());
    w = std::move(judged).value();
  }
  if (!o.emit_path.empty())
    if (auto st = save_wisdom_keeping(w, o.emit_path, o.cpu, o.progress); !st) return fail(st.error());
  return 0;
}

}  // namespace autotune
