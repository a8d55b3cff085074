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

extern "C" char** environ;

namespace {

/// `e`'s routine measured again in a process of its own: this program (/proc/self/exe) rebuilds
/// it from a temporary wisdom file holding `e` alone (`--from IN --op OP --emit OUT --quiet`,
/// stdout discarded, stderr shared) and re-measures it on `e`'s workload with 11 rounds. Every
/// JIT routine of a process lands in one per-process mode of short calls, and one and the same
/// routine was measured at 0.86-1.14x glibc's memset at 1-32 bytes from one process to the next
/// (docs/perf/short-call-modes/), so the first process's ratio can be its draw. `head`: the
/// wisdom's CPU and schema fields. Returns the entry as the second process wrote it (its points
/// are that process's table), or kSystem (no temporary directory, the program not started, or
/// it failed: the message says which) and the wisdom loaders' errors.
Result<WisdomEntry> measure_in_new_process(const Wisdom& head, const WisdomEntry& e) {
  TempDir dir;
  COPYSYNTH_TRY(make_temp_dir(dir, "remeasure"));
  Wisdom one = head;
  one.entries = {e};
  const std::string in = dir.path + "/in.json", out = dir.path + "/out.json";
  COPYSYNTH_TRY(save_wisdom(one, in));
  std::string exe = "/proc/self/exe", a_from = "--from", a_op = "--op", op(name_of(e.operation)),
              a_emit = "--emit", a_q = "--quiet", a_in = in, a_out = out;
  char* argv[] = {exe.data(), a_from.data(), a_in.data(), a_op.data(), op.data(),
                  a_emit.data(), a_out.data(), a_q.data(), nullptr};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, exe.c_str(), &fa, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return make_error(ErrorCode::kSystem, std::string("cannot start /proc/self/exe: ") + std::strerror(rc));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return make_error(ErrorCode::kSystem, std::string("waitpid: ") + std::strerror(errno));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return make_error(ErrorCode::kSystem, "the second process (autotune --from) " +
                                              (WIFEXITED(status) ? "exited with status " + std::to_string(WEXITSTATUS(status))
                                                                 : "was killed by signal " + std::to_string(WTERMSIG(status))));
  auto w = load_wisdom(out);
  if (!w) return w.error();
  const WisdomEntry* again = w->find(e.operation);
  if (!again || again->points.empty())
    return make_error(ErrorCode::kSystem, "the second process wrote no measured " + std::string(name_of(e.operation)) + " entry");
  return *again;
}

}  // namespace

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
    double g = geomean_speedup(r.points);
    WisdomEntry entry = wisdom_entry(r, workload.name);
    if (g < o.min_speedup && o.isa == "host" && !o.keep_slower) {
      // Never write a routine clearly slower than the one programs already have on the workload
      // it was tuned for (a search cut short by its budget can end so: a --quick search of a
      // profile of large copies stopped before its rep stage, at 0.64x). With --isa below the
      // host's, the routine is for other CPUs (a fleet) and slower than this host's glibc by design.
      // One process's ratio can be its per-process draw (measure_in_new_process): refused only
      // where a second process measures it below the bar too.
      o.progress(std::string(name_of(op)) + ": " + format_c("%.2fx", g) + " the " + baseline_name(op) +
                 ", below " + format_c("%.2fx", o.min_speedup) + "; measuring it again in a process of its own");
      auto again = measure_in_new_process(w, entry);
      const double g2 = again ? geomean_speedup(again->points) : 0.0;
      if (!again || g2 < o.min_speedup) {
        std::cerr << "autotune: the " << name_of(op) << " winner is " << format_c("%.2fx", g) << " the speed of the "
                  << baseline_name(op) << " on this workload"
                  << (again ? " (" + format_c("%.2fx", g2) + " in a second process)"
                            : " (not measured in a second process: " + again.error().message + ")")
                  << ": not written, programs keep the " << baseline_name(op) << (o.quick ? "; try without --quick" : "")
                  << " or with a larger --budget\n";
        continue;
      }
      std::cerr << "autotune: the " << name_of(op) << " winner measured " << format_c("%.2fx", g) << " the speed of the "
                << baseline_name(op) << " in this process and " << format_c("%.2fx", g2)
                << " in a second one (one process's ratio can be its draw: docs/perf/short-call-modes/); written "
                   "with the second measurement\n";
      entry.points = again->points;
      g = g2;
    }
    if (g < 1.0)
      std::cerr << "autotune: warning: the " << name_of(op) << " winner is " << format_c("%.2fx", g)
                << " the speed of the " << baseline_name(op) << " on this workload"
                << (g < o.min_speedup && o.keep_slower ? "; written anyway (--keep-slower)" : "")
                << (o.quick ? "; try without --quick" : "") << " or with a larger --budget, or keep the system routine\n";
    w.entries.push_back(std::move(entry));
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
