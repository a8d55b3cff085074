// autotune — tune a memcpy routine for this CPU and write it as wisdom (best.json).
//
//   autotune --emit best.json          search within the budget, print the table, write wisdom
//   autotune --from best.json          re-verify and re-measure a wisdom file, print the table
//   autotune --merge a.json b.json --emit fleet.json   combine hosts' wisdom, keyed by CPU
//   autotune --show best.json          print what a wisdom file holds (ld.so --list-diagnostics)
//   autotune --from best.json --emit-asm memcpy_64.S --flavor linux
//                                      write the tuned routine as a GNU as file (no timing)
//   autotune --from best.json --emit-lib DIR
//                                      the tuned memcpy, memmove and fill as libcopysynth-tuned.so.1/.a
//   autotune --from best.json --patch-table
//                                      the commit-message table, measured against the system routine
//   autotune --from best.json --app 'sqlite3 :memory: < q.sql' --runs 7 --emit judged.json
//                                      the program is the judge: each tuned operation kept only
//                                      where the program is not slower with it (app.cpp)
//
// Progress goes to stderr, the table to stdout. Exit status: 0 success, 1 bad command line (an
// option's value, a workload name that names nothing, an operation a profile lacks, a program it
// has no record of: profile:FILE,program=NAME), 2 the work failed (a wisdom file, profile or
// size distribution that cannot be read or is not one, an output path refused, mismatched wisdom,
// verification failure, I/O error).
//
// This file defines the options and dispatches; each mode is a file of its own (autotune.hpp).
#include <CLI/CLI.hpp>
#include <signal.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <new>
#include <string>

#include "autotune.hpp"
#include "copysynth/interrupt.hpp"
#include "copysynth/app_judge.hpp"
#include "copysynth/asm_flavors.hpp"
#include "copysynth/asm_writer.hpp"
#include "copysynth/c_format.hpp"
#include "copysynth/file_io.hpp"
#include "copysynth/library_writer.hpp"
#include "copysynth/params.hpp"
#include "copysynth/report.hpp"

using namespace copysynth;
using namespace autotune;

namespace {

/// --op's names in order, each once: "all" is the four operations, "memset" is fill.
std::vector<Operation> resolve_ops(const std::vector<std::string>& names) {
  std::vector<Operation> ops;
  for (const auto& name : names) {
    if (name == "all") return {Operation::kMemcpy, Operation::kMemmove, Operation::kFill, Operation::kClearPage};
    for (std::size_t k = 0; k < spec::Operation::choices.size(); ++k)
      if (spec::Operation::names[k] == (name == "memset" ? "fill" : name) &&
          std::find(ops.begin(), ops.end(), spec::Operation::choices[k]) == ops.end())
        ops.push_back(spec::Operation::choices[k]);
  }
  return ops;
}

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

/// A check that an option's value is a number (a whole number with `whole`) in [lo, hi] of
/// `unit`, whose errors name the option and the unit ("--runs must be 1..1000 rounds, got 0").
/// One shape for every numeric option (--budget, --runs).
CLI::Validator number_in(const std::string& option, const std::string& unit, double lo, double hi, bool whole) {
  const std::string range = format_c("%g", lo) + ".." + format_c("%g", hi);
  return CLI::Validator(
      [=](std::string& in) -> std::string {
        char* end = nullptr;
        errno = 0;
        const double v = whole ? double(std::strtol(in.c_str(), &end, 10)) : copysynth::strtod_c(in.c_str(), &end);
        if (end == in.c_str() || *end != '\0' || (whole && errno))
          return option + " takes a " + (whole ? "whole " : "") + "number of " + unit + ", got '" + in + "'";
        if (!std::isfinite(v) || v < lo || v > hi) return option + " must be " + range + " " + unit + ", got " + in;
        return {};
      },
      upper(unit) + " in [" + format_c("%g", lo) + ", " + format_c("%g", hi) + "]");
}

/// A check that `--seed`'s value is a whole number that fits 64 bits: CLI11 reads a longer one
/// as 2^64 - 1 without a word (strtoull's ERANGE), so two different seeds would run the same.
CLI::Validator seed_number() {
  return CLI::Validator(
      [](std::string& in) -> std::string {
        std::uint64_t v = 0;
        const auto [end, ec] = std::from_chars(in.data(), in.data() + in.size(), v);
        if (in.empty() || ec != std::errc() || end != in.data() + in.size())
          return "--seed takes a whole number from 0 to 18446744073709551615 (2^64 - 1), got '" + in + "'";
        return {};
      },
      "UINT64");
}

/// SIGINT, SIGQUIT, SIGTERM, SIGHUP: passed on to the child autotune waits for, if any
/// (interrupt.hpp: the wait then throws Interrupted and main() ends the process by the signal,
/// after the unwinding removed the temporary files); noted, where no child runs, while code that
/// holds a temporary directory defers them (StopsDeferred); otherwise the default action at once.
extern "C" void on_stop_signal(int sig) {
  if (copysynth::pass_on_stop_signal(sig)) return;
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

int run_main(int argc, char** argv);

}  // namespace

int main(int argc, char** argv) {
  // SIGCHLD ignored survives exec (a parent that set SIG_IGN): the children autotune waits for
  // (the --app command, binutils, a second autotune) would be reaped at once, their status lost,
  // and a failing command read as a success.
  ::signal(SIGCHLD, SIG_DFL);
  for (int sig : copysynth::kStopSignals) {
    struct sigaction sa {}, old {};
    sigaction(sig, nullptr, &old);
    if (old.sa_handler == SIG_IGN) continue;  // nohup, or a shell's background job: left ignored
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    // No SA_RESTART: a write blocked on a pipe nobody reads (`autotune ... 2>&1 | less`, less no
    // longer reading) returns EINTR instead of blocking on with a noted signal (StopsDeferred).
    // The waits (waitpid, poll, read) retry on EINTR themselves.
    sa.sa_flags = 0;
    sigaction(sig, &sa, nullptr);
  }
  try {
    return run_main(argc, argv);
  } catch (const copysynth::Interrupted& i) {
    ::signal(i.signal, SIG_DFL);
    ::raise(i.signal);
    return 128 + i.signal;
  } catch (const std::bad_alloc&) {
    // Under `ulimit -v` an allocation outside the search (a report's tables, the library writer)
    // ended in std::terminate and SIGABRT. The scopes unwound have removed their temporary
    // directories (a file being replaced may leave its temporary file beside it); wisdom and
    // libraries are written whole or not at all. A constant line: no allocation. A stop signal
    // noted meanwhile still ends the process by that signal.
    try {
      copysynth::throw_if_stopped();
    } catch (const copysynth::Interrupted& i) {
      ::signal(i.signal, SIG_DFL);
      ::raise(i.signal);
      return 128 + i.signal;
    }
    std::fputs("autotune: error (system): out of memory: an allocation failed (the address-space limit, "
               "ulimit -v / RLIMIT_AS, or memory is exhausted); raise the limit and run it again\n",
               stderr);
    return 2;
  }
}

namespace {

int run_main(int argc, char** argv) {
  CLI::App app{
      "autotune: generate, verify and time memcpy routines on this CPU and keep the fastest.\n"
      "Every candidate passes conformance verification (all lengths near every size-class edge,\n"
      "src/dst misalignment 0..63, buffers ending at PROT_NONE pages) before it is timed.\n"
      "Timings are TSC medians, interleaved with the system memcpy in the same run.\n"
      "Progress goes to stderr; the table (Len, Src/Dst align, GB/s, speedup) to stdout.",
      "autotune"};
  app.set_version_flag("--version", std::string("copysynth ") + COPYSYNTH_VERSION);

  Options o;
  std::vector<std::string> op_names{"memcpy"};
  bool list_params = false;

  app.add_option("--emit", o.emit_path,
                 "Write the winners (params, plan, CPU signature, measured points) as a wisdom file, "
                 "e.g. best.json. Entries of an existing file of this CPU for other operations are "
                 "kept; into an existing fleet file (--merge) this CPU's entries are added; an empty file "
                 "(or one of white space only) is written over; any other file that cannot be merged is moved to FILE.bak. With --merge: "
                 "the fleet file to write")
      ->type_name("FILE");
  app.add_option("--from", o.from_path,
                 "Load a wisdom file (of a fleet file, this CPU's entries) instead of searching: refuse it "
                 "if it was made on another CPU or schema, rebuild the same routine, re-verify it, "
                 "re-measure it and print the table")
      ->type_name("FILE");
  const CLI::Validator seconds = number_in("--budget", "seconds", 1, 86400, false);
  app.add_option("--budget", o.budget,
                 "Wall-clock budget of the search in seconds (verification + timing); the floor (the "
                 "winner against every peer) and the final measurement come on top. A full memcpy run "
                 "takes 32-60 s on a 2-core machine, --quick 7-10 s "
                 "(docs/performance.md has the measured times). --quick searches for 6 s unless --budget "
                 "is given. A winner clearly slower than the system routine on its own workload "
                 "(below --min-speedup, in this process and in a second one) is not written by --emit; "
                 "stderr says so")
      ->check(seconds)
      ->capture_default_str();
  app.add_option("--op", op_names,
                 "Operation(s) to tune, comma-separated: memcpy, memmove, fill (memset; `memset` is taken "
                 "too), clear_page, or "
                 "all. Each gets its own search, table and wisdom entry. With --from: only these "
                 "entries (default: every entry in the file)")
      ->delimiter(',')
      ->check(CLI::IsMember({"memcpy", "memmove", "fill", "memset", "clear_page", "all"}))
      ->capture_default_str();
  app.add_option("--seed", o.seed, "Seed for candidate order and verification sampling (same seed, same "
                                 "search order)")
      ->check(seed_number())
      ->capture_default_str();
  app.add_flag("--quick", o.quick, "Fewer candidates and rounds (7-10 s for memcpy on 2 cores)");
  app.add_flag("--keep-slower", o.keep_slower,
               "With --emit: write every winner, even one clearly slower than the system routine on its "
               "workload (below 0.97x, --min-speedup's default; said on stderr). For tests and fleets that need an entry per "
               "operation; programs run slower with such an entry");
  app.add_option("--min-speedup", o.min_speedup,
                 "With --emit: the speedup over the system routine on the winner's own workload (geometric "
                 "mean of the final table) below which it is not written. A winner below it is measured "
                 "again in a process of its own (autotune --from, 11 rounds), and written if that "
                 "measurement reaches it (with that measurement's table): one process's ratio can be its "
                 "draw (docs/perf/short-call-modes/). 1.0 writes only winners measured at least level with "
                 "the system routine in one of the two processes. Not with --keep-slower; with --isa "
                 "other than host no bar applies (the routine is for other CPUs)")
      ->type_name("RATIO")
      ->check(number_in("--min-speedup", "times the system routine's speed", 0, 100, false))
      ->capture_default_str();
  app.add_option("--isa", o.isa,
                 "Tune for at most this ISA level on this host: host, sse2, avx2 or avx512 (a level "
                 "above the host's is refused). With --emit-asm: execute at most this level here (a "
                 "routine that needs more is written after the static checks alone)")
      ->check(CLI::IsMember({"host", "sse2", "avx2", "avx512"}))
      ->capture_default_str();
  app.add_option("--workload", o.workload_name,
                 "Workload to tune and report on: seeds (the seeds' matrix of sizes and alignments), "
                 "the name of a shipped size distribution (MemcpyGoogleA, B, D, L, M, Q, S, U, "
                 "Uniform384To4096), or a FILE.csv in the same format (one line of comma-separated "
                 "probabilities, field i for length i). Distributions are replayed as a sequence of "
                 "calls with random offsets in a 4 KiB window. profile:FILE: a program's own calls, "
                 "recorded by the shim (COPYSYNTH_PROFILE=FILE), replayed window by window in program "
                 "order at the program's page offsets; `--show FILE` summarises it. A command that runs "
                 "other programs (a shell script, a pyenv shim, make) leaves a record per process, all "
                 "tuned for together; profile:FILE,program=NAME keeps the records of one program, NAME "
                 "its path or the last component of it (program=sqlite3 or program=/usr/bin/sqlite3). "
                 "The wisdom's workload keeps the selection: --from re-measures on the same records")
      ->capture_default_str();
  app.add_flag("--cold", o.cold, "With a distribution workload: spread the calls over 256 MiB so the data is "
                               "not in cache");
  app.add_flag("--show-plan", o.show_plan, "Print the winner's size ladder (stderr)");
  app.add_flag("--report", o.report,
               "With --from: compare the routine with every peer (glibc, rep movsb, plain AVX2 loops, DPDK "
               "rte_memcpy and AMD AOCL-LibMem where built) on the seeds' matrix, the misaligned-destination matrix "
               "(4 KiB-512 KiB, dst offsets 1, 4, 15, 33 past src, 4K-aliasing, and 4, 33 with src 2048 past), the copy being used (32 KiB-64 MiB: alone, read "
               "back, source overwritten; warm and cold cache) and the eight production distributions "
               "(throughput and read back; then cold, throughput, as a check), all in this process, interleaved; "
               "print the tables, the read bandwidth and which performance targets are met. With a distribution "
               "or profile:FILE workload (the entry's own, or --workload; --cold too): that workload's calls "
               "replayed instead (throughput, and read back for memcpy, memmove and fill when warm), its ratio to the "
               "best of glibc and AOCL-LibMem printed as a check; for a profile the entry was not tuned "
               "for, a note with the command that tunes for those calls");
  app.add_option("--svg", o.svg_path,
                 "With --report: write a plot of the speedup over glibc against the length, one line per "
                 "alignment (other operations than the first get -OPERATION before the extension). Never the "
                 "wisdom file read; an existing FILE only when it is an SVG image (checked before the report)")
      ->type_name("FILE");
  app.add_option("--versus", o.versus_path,
                 "With --report: also time the routine of another wisdom file of this CPU (same "
                 "operation) in the same rounds, as an extra column, e.g. to compare two tuning runs; an "
                 "operation the file has no entry for (its tuning kept the system routine) is said and "
                 "reported without that column. Both files' routines of every operation reported (--op) are "
                 "rebuilt (byte-identical to the ones tuned, as --from requires) and verified before anything "
                 "is measured")
      ->type_name("FILE");
  app.add_option("--emit-asm", o.asm_path,
                 "With --from: write the tuned routine (one operation: --op, default memcpy, or the only entry of a file without one) as a GNU "
                 "assembler file in AT&T syntax, e.g. memcpy_64.S. Assembled, it gives exactly the JIT "
                 "routine's bytes; a header comment gives the size ladder, the parameters, the CPU tuned "
                 "on and this command line. A single-host wisdom file needs no matching host (a fleet file: the "
                 "entry of this CPU); the routine is verified (the "
                 "conformance suite where this host can run it, static checks always) before it is written; "
                 "FILE - writes it to standard output")
      ->type_name("FILE");
  app.add_option("--emit-lib", o.lib_dir,
                 "With --from: write this CPU's tuned memcpy, memmove and fill as an ahead-of-time library "
                 "into DIR: libcopysynth-tuned.so.1 and its link libcopysynth-tuned.so (LD_PRELOAD, "
                 "/etc/ld.so.preload or -lcopysynth-tuned), "
                 "libcopysynth-tuned.a (static linking), README and src/. No work at process start: the "
                 "first call checks the CPU (CPUID) and picks the tuned routines on the CPU tuned for, else "
                 "built-in SSE2 ones. Every routine passes the full conformance suite here first; the linked code is read "
                 "back and compared with the verified bytes. DIR is new, empty, or one an earlier --emit-lib wrote "
                 "(its README and src/ are replaced): a directory holding other files is refused before any work. "
                 "Needs GNU binutils (as, ld, ar)")
      ->type_name("DIR");
  app.add_option("--lib-guard", o.lib_guard,
                 "With --emit-lib: the CPU signature (VENDOR-FAMILY-MODEL:features) the library's guard "
                 "accepts instead of the wisdom's: a library that falls back to the built-in routines on "
                 "this host, to test the fallback")
      ->type_name("SIGNATURE");
  app.add_option("--flavor", o.flavor,
                 "With --emit-asm: linux (linux/linkage.h, SYM_FUNC_START/SYM_FUNC_END, .L labels, RET, "
                 "ASM_NOPn), glibc (sysdep.h, ENTRY_P2ALIGN/END, L() labels) or plain (.globl, .type, .size; "
                 "assembles with as or gcc alone)")
      ->check(CLI::IsMember({"linux", "glibc", "plain"}))
      ->capture_default_str();
  app.add_option("--name", o.asm_symbol,
                 "With --emit-asm: the function's symbol (default memcpy_copysynth, memmove_copysynth, "
                 "memset_copysynth or clear_page_copysynth)")
      ->type_name("SYMBOL");
  app.add_option("--target", o.target,
                 "With --emit-asm: the ISA level the file is for, sse2, avx2 or avx512 (default: the lowest "
                 "the routine needs); a routine that needs more is refused. Nothing is executed for a level "
                 "this host lacks")
      ->check(CLI::IsMember({"sse2", "avx2", "avx512"}));
  app.add_flag("--patch-table", o.patch_table,
               "With --from: print the commit-message table (Len  Src/Dst align  old  new  speedup; old = the "
               "system routine, new = the tuned one, ns per call, both measured in this run on the seeds' "
               "matrix) instead of the usual one");
  app.add_option("--merge", o.merge_paths,
                 "Combine wisdom files (from several hosts, or fleet files) into one fleet file keyed by CPU "
                 "signature, written with --emit: a CPU seen again keeps its entries and takes the later file's "
                 "entry for an operation both have. Programs (install_wisdom, copysynth_load_wisdom, the "
                 "LD_PRELOAD shim) pick the entry of the CPU they run on. The --emit FILE may be one of the inputs "
                 "(replaced); any other existing file is moved to FILE.bak first. Nothing is tuned or run")
      ->type_name("FILE...")
      ->expected(1, -1);
  app.add_option("--show", o.show_path,
                 "Print what a wisdom or fleet file holds, one key=value per line in the manner of "
                 "`ld.so --list-diagnostics`: each CPU's signature and features, each entry's routine, "
                 "parameters, effective rep/non-temporal thresholds and size ladder, and which host this CPU "
                 "would use. For a profile recorded with COPYSYNTH_PROFILE: the programs (records and calls "
                 "each: the NAME of profile:FILE,program=NAME), the records (program, pid), each "
                 "operation's calls, bytes, alignment and distance classes, and the share of calls and bytes "
                 "per size class. Nothing is built or run")
      ->type_name("FILE");
  app.add_option("--app", o.app_command,
                 "The program is the judge: run COMMAND (with /bin/sh -c; stdin /dev/null unless it "
                 "redirects) with glibc's memcpy/memmove/memset and with the tuned ones, alternating (--runs "
                 "rounds after one warm-up run each): one candidate per operation and one with all. Prints "
                 "each configuration's median wall time (ms), its ratio to glibc (median over rounds of "
                 "candidate / glibc in the same round) and the spread (MAD of those ratios). An operation is "
                 "kept only where its ratio plus its spread is <= 1.00 (the kept ones together too; else the worst alone is "
                 "dropped); with --emit its entry is removed otherwise and the verdicts are recorded in the "
                 "wisdom (app_verdicts; --show prints them). A run that fails or writes other stdout than "
                 "glibc's stops it, naming the configuration; nothing is written then. With --from: judge "
                 "that wisdom; without: judge the search's winners before --emit writes them")
      ->type_name("'COMMAND ...'");
  const CLI::Validator rounds = number_in("--runs", "rounds", 1, 1000, true);
  app.add_option("--runs", o.app_runs,
                 "With --app: rounds to time; each runs the command once with glibc's routines and once per "
                 "candidate (so 5 configurations for memcpy, memmove and fill: a 1 s command takes about "
                 "5 x (RUNS + 1) s)")
      ->check(rounds)
      ->capture_default_str();
  app.add_option("--app-with", o.app_with,
                 "With --app: how the tuned routines get into the program: lib (the ahead-of-time library "
                 "--emit-lib writes, built into a temporary directory: no start-up work; needs binutils) or "
                 "shim (LD_PRELOAD=libcopysynth-preload.so with COPYSYNTH_WISDOM: its start-up cost, a few ms, "
                 "counts in every run)")
      ->check(CLI::IsMember({"lib", "shim"}))
      ->capture_default_str();
  app.add_option("--shim", o.shim_path,
                 "With --app-with shim: the LD_PRELOAD shim to use (default: libcopysynth-preload.so of this "
                 "build, ../api/ from autotune, or as installed, ../lib/<multiarch>/ from bin/)")
      ->type_name("FILE");
  app.add_flag("--app-output", o.app_output,
               "With --app: show the command's stdout and stderr (on autotune's stderr; otherwise they are "
               "read, stdout only compared between configurations, and stderr shown when a run fails)");
  app.add_flag("--list-params", list_params, "Print every tunable parameter with unit, range and default, then exit");
  app.add_flag("-q,--quiet", o.quiet, "No progress lines on stderr");
  app.add_flag("--remeasure", o.remeasure, "(internal: a second process measuring a refused winner)")->group("");
  app.footer(
      "Examples:\n"
      "  autotune --emit best.json            tune (about a minute), print the table, write best.json\n"
      "  autotune --quick                     a short search, table only\n"
      "  autotune --from best.json            check a wisdom file on this host and re-measure it\n"
      "  autotune --isa avx2 --emit avx2.json tune without AVX-512 (load it with --isa avx2 too)\n"
      "  autotune --op all --emit best.json   memcpy, memmove, fill and clear_page in one file\n"
      "  autotune --workload MemcpyGoogleA    tune for a production size distribution\n"
      "  COPYSYNTH_PROFILE=prog.prof LD_PRELOAD=libcopysynth-preload.so PROGRAM\n"
      "  autotune --show prog.prof            record a program's own copies; summarise them\n"
      "  autotune --op memcpy,memmove,fill --workload profile:prog.prof --emit best.json\n"
      "                                       tune for exactly those calls\n"
      "  autotune --workload profile:run.prof,program=python3 --emit best.json\n"
      "                                       only python3's records of a script's profile\n"
      "  autotune --from best.json --emit-asm memcpy_64.S --flavor linux --name __memcpy\n"
      "                                       the tuned memcpy as a kernel-style .S file\n"
      "  autotune --from best.json --emit-asm memcpy.S --target avx512\n"
      "                                       for an AVX-512 CPU, written on any host\n"
      "  autotune --from best.json --emit-lib lib/   libcopysynth-tuned.so.1 and .a for this CPU\n"
      "  autotune --from best.json --patch-table   the table for a commit message\n"
      "  autotune --merge a.json b.json --emit fleet.json   one file for several CPUs\n"
      "  autotune --show best.json            what a wisdom file holds, key=value lines\n"
      "  autotune --from best.json --app 'xz -d -c data.xz' --runs 7 --emit judged.json\n"
      "                                       keep each tuned operation only where xz is not slower\n"
      "  autotune --op memcpy,memmove,fill --app 'sqlite3 :memory: < q.sql' --emit best.json\n"
      "                                       tune, then let sqlite3 judge before writing\n"
      "Programs use wisdom with copysynth_load_wisdom()/install_wisdom() or, unmodified, with\n"
      "  COPYSYNTH_WISDOM=best.json LD_PRELOAD=libcopysynth-preload.so PROGRAM\n"
      "or, with no start-up work, the library --emit-lib writes:\n"
      "  LD_PRELOAD=lib/libcopysynth-tuned.so PROGRAM\n"
      "Exit status: 0 success, 1 bad command line (before any work), 2 failure: a wisdom file, profile\n"
      "or size distribution that cannot be read or is not one, an output path refused, verification,\n"
      "I/O (message on stderr).");
  app.get_option("--from")->excludes("--quick")->excludes("--budget");
  app.get_option("--report")->needs("--from");
  app.get_option("--svg")->needs("--report");
  app.get_option("--versus")->needs("--report");
  for (const char* o : {"--flavor", "--name", "--target"}) app.get_option(o)->needs("--emit-asm");
  app.get_option("--emit-asm")->excludes("--report")->excludes("--patch-table")->excludes("--emit")
      ->excludes("--workload")->excludes("--cold");  // nothing is timed: they would be ignored
  app.get_option("--lib-guard")->needs("--emit-lib");
  app.get_option("--emit-lib")->excludes("--report")->excludes("--patch-table")->excludes("--emit")
      ->excludes("--emit-asm")->excludes("--isa")->excludes("--workload")->excludes("--cold");
  app.get_option("--patch-table")->excludes("--report")->excludes("--workload")->excludes("--cold");  // the seeds matrix
  for (const char* a : {"--runs", "--app-with", "--shim", "--app-output"}) app.get_option(a)->needs("--app");
  app.get_option("--app")->excludes("--report")->excludes("--patch-table")->excludes("--emit-asm")
      ->excludes("--emit-lib");
  app.get_option("--merge")->needs("--emit")->excludes("--from")->excludes("--quick")->excludes("--budget")
      ->excludes("--op")->excludes("--workload")->excludes("--isa")
      ->excludes("--emit-asm")->excludes("--patch-table")->excludes("--report")->excludes("--emit-lib")
      ->excludes("--app");
  app.get_option("--keep-slower")->needs("--emit");
  app.get_option("--min-speedup")->needs("--emit")->excludes("--from")->excludes("--merge")->excludes("--keep-slower");
  app.get_option("--show")->excludes("--from")->excludes("--emit")->excludes("--merge")->excludes("--quick")
      ->excludes("--budget")->excludes("--op")
      ->excludes("--emit-asm")->excludes("--patch-table")->excludes("--report")->excludes("--app");

  // The options whose value names something (a file, a directory, a workload, a signature): an
  // empty value names nothing, so `--from "$WISDOM"` with the variable unset must not start a
  // search, nor `--emit ""` tune and write nothing (--merge's list, --app's command and --name's
  // symbol are checked where they are used, with their own reasons). `--from=` is said before
  // parsing: CLI11 would take the next argument as its value.
  static constexpr const char* kNamed[] = {"--emit", "--from",     "--show", "--emit-asm", "--emit-lib",
                                           "--svg",  "--versus",   "--workload", "--shim", "--lib-guard"};
  // --merge takes the files that follow it, up to the next option: `--merge --emit OUT A B` gave
  // it none, which CLI11 reported as "--merge requires --emit", and `--emit OUT A --merge B` left
  // A unexpected.
  const std::string merge_order = "--merge takes the wisdom files right after it, before any other option: "
                                  "autotune --merge A.json B.json --emit OUT.json";
  bool merging = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") break;
    const bool next_is_option = i + 1 < argc && std::string(argv[i + 1]).rfind("-", 0) == 0;
    if (a == "--merge=" || a == "--app=" || a == "--name=") return usage_error(a + " was given an empty value (an unset shell variable?)");
    if (a == "--merge" && (i + 1 == argc || next_is_option))
      return usage_error("--merge was given no file (a file whose name starts with '-': give it as ./NAME); " +
                         merge_order);
    merging |= a == "--merge" || a.rfind("--merge=", 0) == 0;
    for (const char* name : kNamed) {
      if (a == std::string(name) + "=") return usage_error(a + " was given an empty value (an unset shell variable?)");
      // CLI11 takes the next argument as the value even where it is an option (`--emit-lib
      // --quiet` made a directory named --quiet, `--emit -q` a search that wrote ./-q): a long
      // option or a short one ("-q") is refused; "-" alone is a value (--emit-asm -: stdout),
      // and so is a longer name starting with '-' (--emit-lib -dashlib).
      const std::string next = i + 1 < argc ? argv[i + 1] : "";
      if (a == name && next_is_option && (next.rfind("--", 0) == 0 || next.size() == 2))
        return usage_error(a + " was given no value: the next argument, " + argv[i + 1] +
                           ", is an option (a file whose name starts with '-': give it as ./NAME)");
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const std::string what = e.what();
    if (merging && what.rfind("The following argument", 0) == 0) return usage_error(what + "; " + merge_order);
    if (e.get_name() == "ArgumentMismatch" && what.rfind("--show:", 0) == 0 && what.find("At Most") != std::string::npos)
      return usage_error("--show takes one file; run autotune --show once for each");
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 1;
  }

  if (list_params) {
    // It prints and exits: any other option would be ignored (--list-params --emit wrote nothing).
    for (const CLI::Option* opt : app.get_options())
      if (opt->count() && opt->get_name() != "--list-params" && opt->get_name() != "--quiet")
        return usage_error("--list-params prints the parameters and exits; it takes no other option (got " +
                           opt->get_name() + ")");
    std::cout << "Tunable parameters (CopyParams; JSON field names):\n" << describe_params();
    return 0;
  }
  for (const char* name : kNamed) {
    const CLI::Option* opt = app.get_option(name);
    if (opt->count() && opt->as<std::string>().empty())
      return usage_error(std::string(name) + " was given an empty value; give it " + opt->get_type_name() +
                         " (an unset shell variable?)");
  }
  for (const auto& m : o.merge_paths)
    if (m.empty()) return usage_error("--merge was given an empty file name (an unset shell variable?)");
  o.shell_command = shell_line(argc, argv);
  o.command = o.shell_command;  // quoted: --app 'sqlite3 db < q.sql' can be pasted back
  o.budget_given = app.get_option("--budget")->count() > 0;
  o.ops = resolve_ops(op_names);
  o.ops_given = app.get_option("--op")->count() > 0;
  o.workload_given = app.get_option("--workload")->count() > 0;
  if (!o.show_path.empty()) return run_show(o);
  if (app.get_option("--name")->count()) {
    auto fl = asm_flavor(o.flavor);
    if (!fl) return fail(fl.error());
    if (auto st = check_asm_symbol(o.asm_symbol, *fl); !st) return usage_error("--name " + st.error().message);
  }
  // With --from and no --workload the entry's own workload decides (run_from() checks it).
  if (o.cold && (o.workload_given || o.from_path.empty()) && (o.workload_name == "seeds" || o.workload_name == "misaligned"))
    return usage_error("--cold applies to size-distribution workloads; the " + o.workload_name +
                       " points are timed hot (use --workload MemcpyGoogleA or a FILE.csv)");
  for (auto [option, path] : {std::pair<const char*, const std::string*>{"--emit", &o.emit_path}, {"--svg", &o.svg_path}}) {
    // "-" is stdout for --emit-asm; here it made a file named "-".
    if (*path == "-")
      return usage_error(std::string(option) + " - : " + option + " writes a file, not stdout; give a file name (./- for one named -)");
    if (!path->empty())
      if (auto st = check_output_path(option, *path); !st) return fail(st.error());
  }
  // Before the search: wisdom replaces the file, so a device (/dev/null) is refused, not replaced.
  if (!o.emit_path.empty())
    if (auto st = check_replaceable(o.emit_path, "wisdom file", ErrorCode::kInvalidArgument); !st)
      return fail(make_error(ErrorCode::kInvalidArgument, "--emit " + st.error().message));
  if (!o.merge_paths.empty()) return run_merge(o);
  if (!o.asm_path.empty() && !o.from_path.empty())
    if (auto st = check_asm_destination(o.asm_path, o.from_path); !st) return fail(st.error());
  if (!o.svg_path.empty()) {  // the plot, and those of the other operations reported (report_svg_path)
    std::vector<std::string> plots{o.svg_path};
    for (const Operation op : {Operation::kMemcpy, Operation::kMemmove, Operation::kFill, Operation::kClearPage})
      plots.push_back(report_svg_path(o.svg_path, op, 1));
    for (const auto& plot : plots)
      if (auto st = check_svg_destination(plot, {o.from_path, o.versus_path}); !st) return fail(st.error());
  }
  if ((!o.asm_path.empty() || o.patch_table || !o.lib_dir.empty()) && o.from_path.empty())
    return usage_error(std::string(o.patch_table ? "--patch-table" : !o.lib_dir.empty() ? "--emit-lib" : "--emit-asm") +
                       " works on a tuned routine: give its wisdom file with --from best.json (autotune --emit "
                       "best.json makes one)");

  if (app.get_option("--app")->count()) {
    if (o.app_command.find_first_not_of(" \t\n") == std::string::npos)
      return usage_error("--app needs a command to run, e.g. --app 'xz -d -c data.xz'");
    for (Operation op : o.ops)
      if (op == Operation::kClearPage)
        return usage_error("--app judges memcpy, memmove and fill (memset), the routines a program calls; clear_page "
                           "has none: give --op memcpy,memmove,fill");
    if (!o.shim_path.empty() && o.app_with != "shim")
      return usage_error("--shim applies to --app-with shim (--app-with lib builds the library instead)");
    if (o.app_with == "shim")
      if (auto shim = find_preload_shim(o.shim_path); !shim) return fail_or_usage(shim.error());
  }
  o.progress = [quiet = o.quiet](const std::string& s) {
    if (!quiet) std::cerr << s << "\n" << std::flush;
  };
  if (!o.app_command.empty() && o.app_runs < 5)
    std::cerr << "autotune: warning: --runs " << o.app_runs
              << ": the spread of so few rounds says little (one round has none), so a verdict may not hold "
                 "in the next run; judge with 7 or more\n";
  if (o.isa != "host") {
    const IsaLevel level = *parse_isa_level(o.isa);
    const IsaFeatures capped = o.cpu.features().capped(level);
    if (capped.max_vector_bytes() < IsaFeatures::for_level(level).max_vector_bytes())
      return fail(make_error(ErrorCode::kUnsupportedIsa,
                             "--isa " + o.isa + " is above what this CPU runs (" + o.cpu.features().to_string() +
                                 "); pick a lower level or `host`"));
    o.cpu = o.cpu.capped(level);
  }
  o.progress(o.cpu.describe());

  if (!o.asm_path.empty()) return run_emit_asm(o);  // writing a file: no matching host, no timing
  if (!o.lib_dir.empty()) return run_emit_lib(o);   // the ahead-of-time library: this CPU's wisdom, verified here
  if (!o.from_path.empty() && !o.app_command.empty()) return run_app(o);  // the program judges the wisdom
  if (!o.from_path.empty()) return run_from(o);
  return run_tune(o);
}

}  // namespace
