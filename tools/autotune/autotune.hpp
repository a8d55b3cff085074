// autotune — what the modes of the command line share: the parsed options, how errors end the
// program, and one function per mode. Each mode is a thin layer over library functions that hold
// the rules (tuner.hpp, wisdom.hpp, report.hpp, library_writer.hpp); main.cpp defines the
// options and dispatches.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "copysynth/cpu.hpp"
#include "copysynth/file_io.hpp"
#include "copysynth/params.hpp"
#include "copysynth/result.hpp"
#include "copysynth/wisdom.hpp"
#include "copysynth/workload.hpp"

namespace autotune {

/// Every option of the command line, as parsed and checked by main.cpp.
struct Options {
  std::string emit_path, from_path, show_path, svg_path, versus_path;
  std::vector<std::string> merge_paths;
  std::string isa = "host";
  std::string workload_name = "seeds";
  bool workload_given = false;  ///< --workload was on the command line
  /// --remeasure (hidden): this process measures a refused winner again for a parent autotune
  /// (measure_in_new_process), whose stderr it shares: what the parent said about the workload
  /// (a profile of few calls) is not said twice.
  bool remeasure = false;
  std::vector<copysynth::Operation> ops;  ///< --op, resolved ("all", "memset"), in order
  bool ops_given = false;       ///< --op was on the command line
  double budget = 30;           ///< seconds
  bool keep_slower = false;     ///< --keep-slower: write a winner below min_speedup too
  /// --min-speedup: a winner below this speedup over the system routine on its own workload
  /// (geomean_speedup of the final table, in this process and again in a second one) is not
  /// written; the table's noise is 1-2 %.
  double min_speedup = 0.97;
  bool budget_given = false;    ///< --budget on the command line (--quick's 6 s cap does not apply then)
  std::uint64_t seed = 1;
  bool quick = false, quiet = false, show_plan = false, cold = false, report = false, patch_table = false;
  std::string asm_path, flavor = "plain", asm_symbol, target;  ///< --emit-asm; target "" = the lowest level
  std::string lib_dir, lib_guard;                              ///< --emit-lib
  std::string app_command;    ///< --app: the program that judges (/bin/sh -c COMMAND); empty: none
  unsigned app_runs = 7;      ///< --runs: rounds, each the system routines and every candidate once
  std::string app_with = "lib";  ///< --app-with: "lib" (libcopysynth-tuned.so) or "shim" (the LD_PRELOAD shim)
  std::string shim_path;      ///< --shim: the shim's path; empty: found next to autotune (find_preload_shim)
  bool app_output = false;    ///< --app-output: the command's stdout and stderr on our stderr
  std::string command;        ///< the command line as recorded in wisdom, quoted as a shell takes it back
  std::string shell_command;  ///< the command line quoted as a shell takes it back (.S headers, README)
  copysynth::CpuInfo cpu = copysynth::CpuInfo::host();  ///< this CPU, capped by --isa
  std::function<void(const std::string&)> progress;      ///< a line on stderr unless --quiet
};

/// Prints "autotune: error (CODE): MESSAGE" on stderr; returns 2 (the work failed).
int fail(const copysynth::Error& e);

/// Prints "autotune: MESSAGE" on stderr; returns 1 (a command-line value that does not work).
int usage_error(const std::string& message);

/// Checks, before any work, that `--svg PATH` may be written: never one of `inputs` (the wisdom
/// files read: --from, --versus; empty strings are skipped), and an existing file only when it is
/// a regular file that is empty (or white space) or an SVG image (its first 512 bytes hold
/// "<svg"), as an earlier --svg wrote. Errors (kInvalidArgument; autotune exits 2 for them, as
/// for every refused output path) say what to do; nothing is written.
copysynth::Status check_svg_destination(const std::string& path, const std::vector<std::string>& inputs);

/// A library error that names a bad command-line value (kInvalidArgument) as a usage error (1),
/// any other as a failure (2).
int fail_or_usage(const copysynth::Error& e);

/// The workload of each of `ops` for the workload `name` (--workload, or a wisdom entry's), made
/// before any is tuned, into `out`: make_workload's, but a profile (profile:FILE, or
/// profile:FILE,program=NAME: select_program) is read once and every operation it lacks is named
/// in one error (profile_workloads). A profile that cannot be read or is not one fails the run
/// (2), as a wisdom file --from cannot read does; a name that names nothing, a program the profile
/// has no record of (or an empty NAME), an operation the profile lacks or --cold with points is a
/// bad command line (1).
/// A profile's workloads are named with the file's absolute path (absolute_workload_name), the
/// name the wisdom keeps.
/// Returns 0, or the exit status of the error it printed.
int make_workloads(const std::string& name, const std::vector<copysynth::Operation>& ops, bool cold,
                   std::vector<copysynth::Workload>& out);

/// A directory of its own under $TMPDIR (or /tmp), removed with everything in it when this
/// object goes, or by a later autotune when this one could not (copysynth::ScratchDir).
using TempDir = copysynth::ScratchDir;

/// Makes `dir` a new directory "$TMPDIR/copysynth-STEM.XXXXXX", an absolute path without links
/// (make_scratch_dir; /tmp where TMPDIR is unset or empty), first removing those of earlier runs
/// of this STEM that no live run holds. kSystem, saying to set TMPDIR to a writable directory,
/// where it cannot.
copysynth::Status make_temp_dir(TempDir& dir, const std::string& stem);

/// Before `--from FILE ... --emit OUT` writes this CPU's entries: when FILE is a fleet holding
/// other CPUs too and OUT is another file that is not a fleet (save_wisdom_keeping then writes
/// this CPU's host alone), a note on stderr says so and how to keep them (--emit FILE, --merge),
/// --quiet or not. Nothing otherwise.
void note_other_hosts_left(const Options& o);

/// The current time, UTC, ISO 8601 ("2026-03-04T05:06:07Z"), for the wisdom header.
std::string utc_now();

/// A command line as a POSIX shell takes it back: an argument that is empty or holds a byte other
/// than ASCII letters, digits and `_@%+=:,./-` in single quotes, a `'` in it as `'\''`,
/// and a `*/` in it as `*''/` (the same argument to a shell), so that the line can stand in a
/// C comment (.S headers); comment_safe still writes a `/*`, a C1 control or a bidirectional
/// override in it otherwise there, so such an argument does not paste back. An argument with a control character (CR, newline, ...) in
/// bash's $'...' instead (`\r`, `\n`, `\NNN` in octal; `*/` as `*\057`): one line of text that
/// bash, zsh and ksh take back (not dash).
std::string shell_line(int argc, char** argv);

// The modes; each returns the exit status.
int run_show(const Options& o);      ///< show.cpp: --show FILE
int run_merge(const Options& o);     ///< merge.cpp: --merge FILE... --emit OUT
int run_tune(const Options& o);      ///< tune.cpp: the search (the default)
int run_from(const Options& o);      ///< from.cpp: --from FILE [--report | --patch-table] [--emit]
int run_emit_asm(const Options& o);  ///< emit_asm.cpp: --from FILE --emit-asm FILE.S
int run_emit_lib(const Options& o);  ///< emit_lib.cpp: --from FILE --emit-lib DIR
int run_app(const Options& o);       ///< app.cpp: --from FILE --app COMMAND [--runs N] [--emit OUT]

/// app.cpp: `w` judged by the program of --app (app_judge.hpp): the table on stdout, progress on
/// stderr; returns `w` without the entries the program was not faster with and with their
/// verdicts (apply_app_verdicts). `wisdom_path` names where `w` came from in messages ("" after a
/// search). `checked`: check_app_before_search has already run the command with the system
/// routines, which is not done again (whether the first candidate loads is checked in every
/// case). Errors: the judge's (a failed or changed run of the program, a library that cannot be
/// built, the shim not found); nothing is written then.
copysynth::Result<copysynth::Wisdom> judge_with_app(const Options& o, const copysynth::Wisdom& w,
                                                    const std::string& wisdom_path, bool checked = false);

/// app.cpp: before a search whose winners --app will judge (`--op ... --app`), so that a command
/// that cannot judge is refused in seconds rather than after the search: the command runs once
/// with the system routines (check_app_command), and once with ld.so's LD_DEBUG=files and glibc's
/// libdl.so.2 as the LD_PRELOAD object (an empty stub since glibc 2.34: preloading it changes no
/// program) in the candidates' place (check_command_loads: a command that starts no program that
/// loads a preload is refused). Where libdl.so.2 is not found by an absolute path ld.so can take
/// (no space or colon), that second run is left to the judge's first candidate. Errors: theirs.
copysynth::Status check_app_before_search(const Options& o);

}  // namespace autotune
