// autotune --app 'COMMAND' --runs N: the program is the judge. With --from FILE the wisdom of this
// CPU in FILE is judged (run_app); after a search (tune.cpp) the new wisdom is judged before it is
// saved (judge_with_app). The rules — candidates, rounds, statistics, verdicts, what the wisdom
// keeps — are in app_judge.hpp; this file makes the temporary directory, prints and saves.
#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>

#include "autotune.hpp"
#include "copysynth/app_judge.hpp"
#include "copysynth/interrupt.hpp"
#include "copysynth/wisdom.hpp"

using namespace copysynth;

namespace autotune {
namespace {

AppRoundsOptions rounds_options(const Options& o) {
  AppRoundsOptions ro;
  ro.command = o.app_command;
  ro.runs = o.app_runs;
  ro.show_output = o.app_output;
  ro.progress = o.progress;
  return ro;
}

/// check_command_loads under `cfg`, with the programs that did not load it named on stderr.
Status check_loads_and_say(const Options& o, const AppConfig& cfg, const std::string& dir) {
  auto without = check_command_loads(o.app_command, cfg, dir);
  throw_if_stopped();
  if (!without) return without.error();
  if (!without->empty()) {
    std::string names;
    for (const auto& n : *without) names += (names.empty() ? "" : ", ") + n;
    std::cerr << "autotune: warning: --app: some programs the command started did not load the candidate "
                 "(they run the system routines in every configuration): "
              << names << "\n";
  }
  return {};
}

}  // namespace

Status check_app_before_search(const Options& o) {
  StopsDeferred stops;
  AppRun plain;
  if (auto st = check_app_command(rounds_options(o), &plain); !st) return st;
  // The stand-in: glibc's libdl.so.2, an empty stub since glibc 2.34 (it defines placeholder
  // symbols only), so preloading it changes no program; the C library itself would come before
  // the program's own libraries and bypass an allocator or other interposer it links.
  void* h = ::dlopen("libdl.so.2", RTLD_LAZY);
  link_map* map = nullptr;
  std::string stand_in;
  if (h && ::dlinfo(h, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name) stand_in = map->l_name;
  if (h) ::dlclose(h);
  // ld.so splits LD_PRELOAD at spaces and colons: such a path is not used (the judge checks with
  // the first candidate, after the search).
  if (stand_in.empty() || stand_in[0] != '/' || stand_in.find_first_of(" \t\n:") != std::string::npos) return {};
  TempDir dir;
  if (auto st = make_temp_dir(dir, "app"); !st) return st;
  o.progress("app: checking that `" + o.app_command + "` starts a program that loads a preloaded library");
  // Refused here; the programs that do not load it are named by the judge, with the candidate.
  AppRun preloaded;
  auto without = check_command_loads(
      o.app_command, {"a stand-in for the candidates", "glibc's empty libdl.so.2", {"LD_PRELOAD=" + stand_in}},
      dir.path, &preloaded);
  throw_if_stopped();
  if (!without) return without.error();
  // The stand-in changes no routine: a command that fails or writes other output with it would
  // be found to after the whole search, blamed on the tuned routine. Where it does, the command
  // runs once more without it, so that a first run's own effect (a stamp file, a cache) is not
  // taken for the preload's or for output that differs from run to run.
  if (preloaded.succeeded() && preloaded.stdout_hash == plain.stdout_hash) return {};
  auto again = run_app_once(o.app_command, {}, o.app_output);
  throw_if_stopped();
  if (!again) return again.error();
  if (again->succeeded() && preloaded.succeeded() && again->stdout_hash == preloaded.stdout_hash) return {};  // the first run's own
  const std::string cmd = "the command `" + o.app_command + "` ";
  if (!again->succeeded())
    return make_error(ErrorCode::kInvalidArgument,
                      cmd + "succeeds once but " + describe_wait_status(again->wait_status) +
                          " when run again without any preload: --app runs it many times, so give a command that "
                          "can be run again (one that removes what it makes, or writes to a fresh place each time)");
  const std::string with = "with " + stand_in + " preloaded (an empty stub that changes no routine)";
  if (!preloaded.succeeded())
    return make_error(ErrorCode::kInvalidArgument,
                      cmd + describe_wait_status(preloaded.wait_status) + " " + with +
                          " and succeeds without it: it fails whenever a library is preloaded (does it test "
                          "LD_PRELOAD?), so it cannot judge preloaded routines; give a command that runs the program "
                          "the same way with and without LD_PRELOAD");
  if (again->stdout_hash != plain.stdout_hash)
    return make_error(ErrorCode::kInvalidArgument,
                      cmd + "wrote other output from one run to the next, without any preload too (times, random "
                            "numbers, addresses), which the judge would take for a routine that changes what the "
                            "program does; send it to /dev/null in the command");
  return make_error(ErrorCode::kInvalidArgument,
                    cmd + "wrote other output " + with +
                        " than in two runs without it: its output depends on LD_PRELOAD, so the judge would take it "
                        "for a routine that changes what the program does; send it to /dev/null in the command");
}

Result<Wisdom> judge_with_app(const Options& o, const Wisdom& w, const std::string& wisdom_path, bool checked) {
  std::vector<Operation> ops;
  for (const auto& e : w.entries)
    if (e.operation != Operation::kClearPage &&
        (!o.ops_given || std::find(o.ops.begin(), o.ops.end(), e.operation) != o.ops.end()))
      ops.push_back(e.operation);
  for (Operation op : o.ops)
    if (o.ops_given && !w.find(op))
      return make_error(ErrorCode::kWisdomMismatch, (wisdom_path.empty() ? std::string("the wisdom") : wisdom_path) +
                                                        " has no " + std::string(name_of(op)) +
                                                        " entry to judge; tune it first (autotune --op " +
                                                        std::string(name_of(op)) + " --emit FILE)");
  if (ops.empty())
    return make_error(ErrorCode::kWisdomMismatch, (wisdom_path.empty() ? std::string("the wisdom") : wisdom_path) +
                                                      " has no memcpy, memmove or fill entry to judge");
  AppSetup setup;
  setup.with = o.app_with;
  setup.wisdom_path = wisdom_path;
  setup.progress = o.progress;
  if (o.app_with == "shim") {
    auto shim = find_preload_shim(o.shim_path);
    if (!shim) return shim.error();
    setup.shim_path = *shim;
  }
  // A stop signal between two of the command's runs (a candidate's library being written) is
  // noted: no further run starts, `dir` is removed, and the process ends by it (interrupt.hpp).
  StopsDeferred stops;
  TempDir dir;
  if (auto st = make_temp_dir(dir, "app"); !st) return st.error();
  setup.dir = dir.path;

  std::map<std::string, AppConfig> prepared;  // each candidate's library or wisdom, made once
  const AppRoundsOptions ro = rounds_options(o);
  // A broken command: before any candidate is built (before the search, where `checked`).
  if (!checked)
    if (auto st = check_app_command(ro); !st) return st.error();
  // Checked with the first candidate in every case: the stand-in before the search shows that
  // some preload loads, not that this one does (a library ld.so rejects, a shim whose own
  // dependencies a program's loader cannot find).
  bool loads_checked = false;
  const AppMeasure measure = [&](const std::vector<AppCandidate>& candidates) -> Result<AppTimes> {
    std::vector<AppConfig> configs{{"glibc", "the system routines (no preload)", {}}};
    for (const auto& c : candidates) {
      if (!prepared.count(c.name)) {
        auto cfg = prepare_app_candidate(w, c, setup, o.cpu);
        throw_if_stopped();
        if (!cfg) return cfg.error();
        prepared[c.name] = *cfg;
      }
      configs.push_back(prepared[c.name]);
      // Once, before anything is timed: a command whose programs never load the candidate
      // (`:`, a static program) would be judged from noise (verdicts were written for `:`).
      if (!loads_checked) {
        loads_checked = true;
        if (auto st = check_loads_and_say(o, configs.back(), setup.dir); !st) return st.error();
      }
    }
    std::string names;
    for (const auto& c : configs) names += (names.empty() ? "" : ", ") + c.name;
    o.progress("app: timing `" + o.app_command + "` under " + names + " (" + std::to_string(o.app_runs) + " rounds)");
    return time_app_rounds(configs, ro);
  };
  auto j = judge_app(ops, measure);
  if (!j) return j.error();
  std::cout << format_app_table(*j, o.app_command, o.app_runs, o.app_with) << std::flush;
  return apply_app_verdicts(w, *j, {o.app_command, o.app_runs, o.app_with, utc_now()});
}

int run_app(const Options& o) {
  auto w = load_wisdom_for(o.from_path, o.cpu);  // a single-host file, or this CPU's host in a fleet
  if (!w) return fail(w.error());
  auto judged = judge_with_app(o, *w, o.from_path);
  if (!judged) return fail(judged.error());
  if (!o.emit_path.empty()) {
    judged->created = utc_now();
    judged->command = o.command;
    note_other_hosts_left(o);
    if (auto st = save_wisdom_keeping(*judged, o.emit_path, o.cpu, o.progress); !st) return fail(st.error());
  }
  return 0;
}

}  // namespace autotune
