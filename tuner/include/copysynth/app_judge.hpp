// copysynth — the program is the judge: `autotune --app 'COMMAND' --runs N`.
//
// A tuned routine that is faster in the tuner's loops can still make a real program slower (code
// size, the start of a different dispatch, the cache state a program leaves). This file runs the
// program itself with glibc's routines and with the tuned ones, alternating, and keeps a tuned
// operation only where the program is not slower with it:
//
//   1. Candidates: one per operation the wisdom holds (memcpy, memmove, fill as memset), each
//      replacing only that operation, and one with all of them (when there are several). A
//      candidate is the ahead-of-time library (write_tuned_library, library_writer.hpp) of a
//      wisdom holding only its entries ("lib", the default: no start-up work), or the LD_PRELOAD
//      shim with COPYSYNTH_WISDOM naming such a wisdom ("shim").
//   2. Rounds (time_app_rounds): one warm-up run of every configuration, then N rounds, each
//      running glibc (no preload) and every candidate once in a rotating order (as
//      tools/bench-preload.sh does); the wall time of `/bin/sh -c COMMAND` from spawn to waitpid
//      (CLOCK_MONOTONIC), the shell itself not preloaded (it exports LD_PRELOAD to what it runs). A run that exits non-zero or dies from a signal, or whose stdout differs
//      from glibc's (FNV-1a of the bytes), stops the judge with an error naming the configuration:
//      a tuned routine that changes what a program does is never kept.
//   3. Statistics (summarize_app_times): per configuration the median wall time (ms); per candidate
//      the median over rounds of its time / glibc's time in the same round, and the median absolute
//      deviation of those ratios as its spread (stats.hpp).
//   4. Verdict (judge_app): an operation is kept iff its ratio + spread <= 1.00 ("never slower",
//      with the noise on glibc's side: a ratio below 1.00 by less than its spread is dropped, as
//      is one above 1.00, and each is said so: app_call). When more than one is kept the
//      combination is checked the same way: the all-operations candidate when all are kept, else
//      the kept set timed in extra rounds; while the combination is not kept, the operation with
//      the worst ratio alone is dropped, and the rest is timed again (when more than one is left).
//   5. The wisdom (apply_app_verdicts): the entry of every operation not kept is removed (every
//      reader, older copysynth versions too, then leaves it to the system routine) and each judged
//      operation's AppVerdict (wisdom.hpp) is recorded in "app_verdicts".
//
// Steps 3-5 are pure functions over tables of times (tests/test_app_judge.cpp); judge_app takes the
// measuring as a function, so the rule is tested with synthetic tables.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "copysynth/cpu.hpp"
#include "copysynth/params.hpp"
#include "copysynth/result.hpp"
#include "copysynth/wisdom.hpp"

namespace copysynth {

/// The C library name of an operation a program calls: "memcpy", "memmove", "memset" (fill).
std::string app_op_name(Operation op);

/// A set of tuned operations put into a program; the rest stay the system routines.
struct AppCandidate {
  std::string name;            ///< "memcpy", "memset", "all", "memcpy+memset" (app_candidate_name)
  std::vector<Operation> ops;  ///< the tuned operations it replaces
};

/// "all" when `ops` is every one of `all_ops` (and there are several), else the C library names
/// joined with '+' ("memcpy+memset"); a single operation is its name.
std::string app_candidate_name(const std::vector<Operation>& ops, const std::vector<Operation>& all_ops);

/// Wall times of rounds, in ms: ms[r][0] is round r's run with the system routines (glibc),
/// ms[r][1 + i] candidate i's run of the same round.
struct AppTimes {
  std::vector<std::vector<double>> ms;
};

/// One configuration's summary over the rounds.
struct AppConfigSummary {
  std::string name;     ///< "glibc" or the candidate's name
  double median_ms = 0; ///< median wall time (ms)
  double ratio = 1;     ///< median over rounds of this time / glibc's time in the same round (glibc: 1)
  double spread = 0;    ///< median absolute deviation of those ratios (glibc: 0)
};

/// Summarises `t` for configurations `names` (names[0] is glibc). kInvalidArgument when there are
/// no rounds, a round has not names.size() times, or a time is not a finite number > 0 (ms).
Result<std::vector<AppConfigSummary>> summarize_app_times(const std::vector<std::string>& names, const AppTimes& t);

/// How a candidate's ratio reads against the rule "never slower".
enum class AppCall {
  kNotSlower,         ///< ratio + spread <= 1.00: faster (or equal) beyond the spread: kept
  kNotClearlyFaster,  ///< ratio <= 1.00 < ratio + spread: faster by less than the spread: dropped
  kWithinSpread,      ///< 1.00 < ratio <= 1.00 + spread: within the spread but not faster: dropped
  kSlower,            ///< ratio > 1.00 + spread: dropped
};
AppCall app_call(double ratio, double spread);

/// The judgement of one operation.
struct AppOpVerdict {
  Operation op = Operation::kMemcpy;
  double glibc_ms = 0, tuned_ms = 0;  ///< medians of the first set of rounds (ms)
  double ratio = 1, spread = 0;       ///< of the candidate replacing only this operation
  bool kept = false;                  ///< the tuned routine stays
  std::string why;  ///< "0.991 ± 0.004: faster: the tuned memcpy is kept", "1.004 ± 0.006: within the
                    ///< spread but not faster: the system memmove is kept", or why the combination dropped it
};

/// One check of kept operations together.
struct AppCombination {
  AppCandidate candidate;
  AppConfigSummary summary;  ///< its ratio to glibc in the rounds it was timed in
  double glibc_ms = 0;       ///< glibc's median wall time in those rounds (ms)
  bool extra_rounds = false; ///< timed in a set of rounds of its own (not the first set's "all")
  std::string note;          ///< what followed: "not slower: kept together" or "slower: memmove dropped ..."
};

struct AppJudgement {
  std::vector<AppCandidate> candidates;          ///< of the first set of rounds
  std::vector<AppConfigSummary> table;           ///< glibc first, then each candidate
  std::vector<AppCombination> combinations;      ///< the combination checks, in order
  std::vector<AppOpVerdict> verdicts;            ///< one per operation, in the order given
  std::vector<Operation> kept() const;           ///< the operations kept, in that order
};

/// Times glibc and `candidates` (in that order in each round) and returns the table; its errors
/// (a failed run, a changed output) end the judge.
using AppMeasure = std::function<Result<AppTimes>(const std::vector<AppCandidate>&)>;

/// Steps 1, 3 and 4 above: the candidates for `ops` (memcpy, memmove, fill; each once), measured
/// with `measure`, the verdict of each and the combination rule. Errors: kInvalidArgument for no
/// operations, clear_page or a repeated one; `measure`'s errors and summarize_app_times' as they are.
Result<AppJudgement> judge_app(const std::vector<Operation>& ops, const AppMeasure& measure);

/// What apply_app_verdicts records with each verdict.
struct AppVerdictInfo {
  std::string command;  ///< the command judged
  unsigned runs = 0;    ///< rounds
  std::string with;     ///< "lib" or "shim"
  std::string date;     ///< UTC, ISO 8601
};

/// `w` with the judgement applied: the entries of operations not kept removed, and a verdict per
/// judged operation in app_verdicts (replacing an earlier one of that operation; others kept).
Wisdom apply_app_verdicts(Wisdom w, const AppJudgement& j, const AppVerdictInfo& info);

/// The table printed after the rounds (columns: configuration, median ms, ratio to glibc, spread,
/// verdict), then the combination checks and one line naming what is kept.
std::string format_app_table(const AppJudgement& j, const std::string& command, unsigned runs, const std::string& with);

// ----- running the program -------------------------------------------------------------------------

/// One run of `/bin/sh -c COMMAND`.
struct AppRun {
  double ms = 0;                   ///< wall time from spawn to the shell's exit (CLOCK_MONOTONIC), ms
  int wait_status = 0;             ///< as waitpid gives it
  std::uint64_t stdout_hash = 0;   ///< FNV-1a 64 of everything the command wrote on stdout
  std::string stderr_tail;         ///< the last 2000 bytes it wrote on stderr
  /// stdout or stderr was still open 2 s after the shell exited and its group was killed: a
  /// process that left the group (`setsid`) holds it; its later output was not read.
  bool output_left_open = false;
  /// The shell exited with status 0 (the command succeeded, as --app requires of every run).
  bool succeeded() const;
};

/// Runs `/bin/sh -c command` with this process's environment less LD_PRELOAD and every COPYSYNTH_
/// variable (the user's COPYSYNTH_PROFILE or COPYSYNTH_PRELOAD_VERIFY would reach the candidates
/// only); the variables of `env` ("NAME=VALUE" each) are exported by the shell
/// before the command, so the shell itself runs without a preload and every program it starts
/// has it (as tools/bench-preload.sh runs its programs). stdin is /dev/null unless the command
/// redirects it; stdout and stderr are read through pipes (and copied to this process's stderr
/// when `show_output`). When the shell exits (seen through a pidfd, beside the pipes), the run
/// and its time end: what the command left running in its process group (a background job, also
/// one that keeps stdout or stderr open) is killed, so that it neither holds the run nor runs on
/// into the next timed run, and what is left in the pipes is read for at most 2 s
/// (AppRun::output_left_open: a process in another group or session still held them). Nothing is
/// killed where the caller ignores SIGCHLD (the shell is reaped at once, and its group's id could
/// be another's). Without pidfd_open (Linux < 5.3, or a seccomp filter denying it) the pipes' end
/// is waited for first, and timed. Errors:
/// kSystem when the pipes cannot be made, the shell cannot be spawned, or its exit status cannot
/// be had (a caller that ignores SIGCHLD: the shell is reaped at once, and nothing is killed).
Result<AppRun> run_app_once(const std::string& command, const std::vector<std::string>& env, bool show_output);

/// "exited with status 1", "was killed by signal 11 (Segmentation fault)".
std::string describe_wait_status(int wait_status);

/// A configuration a program is timed under: its name and the variables it sets.
struct AppConfig {
  std::string name;              ///< "glibc", "memcpy", "all", ...
  std::string description;       ///< for errors: "the system routines (no preload)", "the tuned memcpy (libcopysynth-tuned.so)"
  std::vector<std::string> env;  ///< "LD_PRELOAD=...", "COPYSYNTH_WISDOM=..."; empty for glibc
};

struct AppRoundsOptions {
  std::string command;   ///< run as /bin/sh -c COMMAND
  unsigned runs = 7;     ///< rounds timed, after one warm-up run of each configuration
  bool show_output = false;
  std::function<void(const std::string&)> progress;  ///< a line per round (may be empty)
};

/// Step 2 above: configs[0] must be glibc's. Errors: kInvalidArgument when the command fails with
/// the system routines (the command is to fix, not a routine); kVerifyFailed when it fails or
/// writes other output under a candidate (naming it, its exit status and its last stderr lines);
/// kSystem from run_app_once.
Result<AppTimes> time_app_rounds(const std::vector<AppConfig>& configs, const AppRoundsOptions& opt);

/// Runs opt.command once with the system routines: kInvalidArgument (naming the command, its exit
/// status and its last stderr lines, saying to fix it) when it fails; run_app_once's errors. Done
/// before any candidate is built, so a broken command costs one run.
/// `run`, where given, receives the run.
Status check_app_command(const AppRoundsOptions& opt, AppRun* run = nullptr);

/// Runs `command` once under candidate configuration `cfg` with ld.so's LD_DEBUG=files written
/// under `dir` (a directory of its own is made there and removed, on errors too), and reads which
/// programs the command started loaded cfg's LD_PRELOAD object (ld.so built its link map). Returns
/// the dynamically linked programs that did not (at most 5, each once, as ld.so names them: "env",
/// "/bin/true"), to be said; static and set-user-ID programs write no ld.so output and are not
/// seen. kInvalidArgument when none loaded it (a shell builtin, a static or set-user-ID program, a
/// program started with LD_PRELOAD cleared: timing it would judge the system routines against
/// themselves, from noise) and when cfg sets no LD_PRELOAD; kSystem when the directory cannot be
/// made; run_app_once's errors.
/// `run`, where given, receives the run (its exit status is not checked here).
Result<std::vector<std::string>> check_command_loads(const std::string& command, const AppConfig& cfg,
                                                     const std::string& dir, AppRun* run = nullptr);

/// Where the LD_PRELOAD shim is: `explicit_path` when given (it must exist), else
/// libcopysynth-preload.so next to the running program as the build tree has it (../api/ from
/// tools/autotune) or as `cmake --install` puts it (../lib/<multiarch>/, ../lib64/, ../lib/ from
/// bin/). kInvalidArgument when there is none, naming the places looked at and what to do.
Result<std::string> find_preload_shim(const std::string& explicit_path);

/// How candidates are made.
struct AppSetup {
  std::string with = "lib";  ///< "lib": write_tuned_library; "shim": the LD_PRELOAD shim
  std::string shim_path;     ///< with "shim": find_preload_shim's
  std::string dir;           ///< an existing empty directory for the candidates' files
  std::string wisdom_path;   ///< where the wisdom came from (the library's README)
  std::function<void(const std::string&)> progress;
};

/// Writes what candidate `c` needs under setup.dir (a library in DIR/NAME/, its routines checked
/// with VerifyOptions::startup(), the shim's check for wisdom of another signature: the library is
/// only timed, never deployed, and the judged wisdom's routines passed the full suite when tuned;
/// or the wisdom
/// DIR/NAME.json holding only c's entries of `w`) and returns its configuration. With the shim,
/// checks with /bin/true that the shim installs that wisdom (COPYSYNTH_PRELOAD_STATS),
/// so glibc is never judged against itself. Errors: write_tuned_library's, save_wisdom's, and
/// kVerifyFailed when the shim does not install the wisdom (with its message).
Result<AppConfig> prepare_app_candidate(const Wisdom& w, const AppCandidate& c, const AppSetup& setup,
                                        const CpuInfo& cpu = CpuInfo::host());

}  // namespace copysynth
