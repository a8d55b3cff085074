// copysynth — the embedding API for C++ programs: one header for what an application needs.
//
//   #include <copysynth/copysynth.hpp>
//   CMake: find_package(copysynth) + target_link_libraries(app PRIVATE copysynth::copysynth)
//   pkg-config: c++ -std=c++20 app.cpp $(pkg-config --cflags --libs copysynth)
//
// Two libraries provide it. libcopysynth.a (copysynth::copysynth, pkg-config copysynth) holds
// everything here but tune_and_install, on top of verification and installation (verify.hpp,
// install.hpp) and nothing of the tuner. tune_and_install, which runs the tuner, is in
// libcopysynth-tune.a: link copysynth::tune (pkg-config copysynth-tune) as well to call it, and
// include <copysynth/tuner.hpp> for TuneOptions.
//
// Three ways in, each ending in verified routines behind typed function pointers:
//
//   1. Wisdom at start-up (FFTW's import_wisdom): tune once with `autotune --emit best.json`, then
//        if (auto r = copysynth::install_wisdom("best.json"); !r) log(r.error().message);
//      rebuilds the routines tuned for this CPU (its host in a fleet file), checks the code is
//      byte-identical to what was tuned, verifies it (VerifyOptions::startup(), a few ms) and
//      installs it process-wide. On any error nothing changes: the routines serving calls before
//      keep serving them.
//   2. Tuning in-process, for programs that tune at start-up (libcopysynth-tune.a, see above):
//        auto e = copysynth::tune_and_install(opt);   // opt.budget_seconds bounds the search
//   3. From parameters: copysynth::make_routine(params) gives a verified Routine the caller owns
//      and calls through `routine.fn()` (or entry<Operation::kMemcpy>(routine)).
//
// Process-wide routines are called through copysynth::memcpy / memmove / memset / clear_page
// (install.hpp) or the typed pointer installed<Operation::kMemcpy>(). An install swaps the
// pointer atomically (release store; each call loads it with acquire), so any thread sees the old
// or the new routine, never a torn one; a routine once installed stays mapped for the life of the
// process (another thread may still run it). Every routine is verified before it is installed or
// returned (docs/architecture.md, invariant 9).
//
// Errors are Result / Status values with an ErrorCode and a message that says what to do
// (result.hpp); nothing here throws for an expected failure. C programs use copysynth.h.
// Unmodified programs get the same routines with LD_PRELOAD=libcopysynth-preload.so (README).
#pragma once

#if __cplusplus < 202002L
#error "copysynth's C++ headers need C++20 (g++ -std=c++20); C programs include <copysynth/copysynth.h>"
#endif

#include <string>
#include <vector>

#include "copysynth/install.hpp"
#include "copysynth/ladders.hpp"
#include "copysynth/routine.hpp"
#include "copysynth/verify.hpp"
#include "copysynth/version.h"
#include "copysynth/wisdom.hpp"

namespace copysynth {

/// The library's version, e.g. "0.2.0" (COPYSYNTH_VERSION of the headers it was built with).
const char* version() noexcept;

/// The call form of each operation: memcpy and memmove CopyFn, fill FillFn, clear_page
/// ClearPageFn (routine.hpp).
template <Operation Op>
struct OperationTraits;
template <>
struct OperationTraits<Operation::kMemcpy> { using Fn = CopyFn; };
template <>
struct OperationTraits<Operation::kMemmove> { using Fn = CopyFn; };
template <>
struct OperationTraits<Operation::kFill> { using Fn = FillFn; };
template <>
struct OperationTraits<Operation::kClearPage> { using Fn = ClearPageFn; };
template <Operation Op>
using FnFor = typename OperationTraits<Op>::Fn;

/// The routine serving `Op` process-wide now (the system routine until an install succeeds),
/// typed for its operation: installed<Operation::kFill>() is a FillFn.
template <Operation Op>
FnFor<Op> installed() noexcept {
  if constexpr (Op == Operation::kMemcpy) return installed_memcpy();
  else if constexpr (Op == Operation::kMemmove) return installed_memmove();
  else if constexpr (Op == Operation::kFill) return installed_fill();
  else return installed_clear_page();
}

/// `r`'s entry point typed for `Op`; nullptr when `r` is a routine of another operation.
template <Operation Op>
FnFor<Op> entry(const Routine& r) noexcept {
  if (r.operation() != Op) return nullptr;
  return reinterpret_cast<FnFor<Op>>(const_cast<void*>(r.entry()));
}

/// How make_routine builds and checks a routine.
struct BuildOptions {
  std::string ladder = "vector";   ///< the template of size classes (ladder_names())
  CpuInfo cpu = CpuInfo::host();   ///< what the code may use; e.g. CpuInfo::host().capped(IsaLevel::kAVX2)
  VerifyOptions verify;            ///< the checks it must pass (default: the full suite, ~15-40 ms)
};

/// A verified routine from parameters: make_plan(params, opt.cpu, opt.ladder), Routine::build,
/// check_routine(opt.verify). Errors: kInvalidParams (a field out of range, named with its
/// range), kUnsupportedIsa (a width this CPU cannot run), kInvalidArgument (unknown ladder),
/// kEmitFailed, kJitFailed, kVerifyFailed (the first failing case; a copysynth bug: report it),
/// kSystem (the verification's test buffers could not be mapped: ulimit -v, not the routine's fault).
Result<Routine> make_routine(const CopyParams& params, const BuildOptions& opt = {});

/// A verified routine from entry `e` of the wisdom document `w` (build_entry: the code must be
/// byte-identical to the code tuned, else kWisdomMismatch; then check_routine(opt.verify)).
/// opt.ladder is not used: the entry names its own.
Result<Routine> make_routine(const Wisdom& w, const WisdomEntry& e, const BuildOptions& opt = {});

/// What install_wisdom installs and how it checks it.
struct WisdomOptions {
  /// The operations to install: those of them the file has an entry for. Empty: every entry of
  /// this CPU's host in the file.
  std::vector<Operation> operations;
  /// The check each routine passes first when the host it is taken from has another signature
  /// than opt.cpu (a fleet's or file's host of this CPU model tuned with a capped ISA).
  VerifyOptions verify = VerifyOptions::startup();
  /// The check when that host's signature is opt.cpu's own (vendor, family, model, features):
  /// the code, byte-identical to the code tuned, passed the full suite on this CPU when autotune
  /// wrote the file, so a quick check that the installed copy runs is enough (about 1 ms for
  /// memcpy, memmove and fill together instead of 5-12 ms; docs/performance.md). Set it to `verify` (or to
  /// VerifyOptions{} for the full suite) to check more.
  VerifyOptions verify_same_cpu = VerifyOptions::quick();
  CpuInfo cpu = CpuInfo::host();                     ///< whose entries to use (select_host: its signature,
                                                     ///< else its model's capped-ISA host)
};

/// What install_wisdom did.
struct WisdomInstall {
  std::string path;                    ///< the file read
  std::string signature;               ///< the CPU signature whose entries were used
  std::vector<Operation> operations;   ///< what was installed, in the file's order
  std::vector<std::string> routines;   ///< Routine::name() of each, same order
  double seconds = 0;                  ///< wall time: read, select, build, verify, install
  bool same_cpu = false;               ///< the host's signature was opt.cpu's: verify_same_cpu ran
};

/// Wisdom at start-up: reads `path` (a single-host file or a fleet; load_wisdom_for without the
/// entries' measured points, WisdomPoints::kSkip: they are checked to be JSON, not against the
/// schema, and not kept), takes the entries of opt.cpu's signature for opt.operations, rebuilds
/// each (code identical to what was tuned), verifies them all with opt.verify_same_cpu when the
/// host in the file has exactly opt.cpu's signature, else with opt.verify, and installs them all
/// (install_all). All or nothing: on any error the routines installed before keep serving.
/// Errors: kInvalidArgument
/// (an empty path, an opt.operations value that is no Operation), kWisdomIo (cannot read; not a regular file, or above kMaxWisdomBytes),
/// kWisdomMalformed (names the JSON path), kWisdomMismatch (another CPU model or a feature this
/// CPU lacks, another schema, a routine whose rebuilt code differs from the code tuned — the
/// code-hash check decides, not the copysynth version that wrote the file —, or no entry for any
/// of opt.operations; where a program's verdict, autotune --app, dropped them the message says so),
/// kUnsupportedIsa, kJitFailed, kJitUnavailable (the system denies executable memory),
/// kVerifyFailed, kSystem (the verification's test buffers could not be mapped: ulimit -v);
/// every message starts with the path (but kInvalidArgument for an empty path or operation).
Result<WisdomInstall> install_wisdom(const std::string& path, const WisdomOptions& opt = {});

/// Tuning options (tuner.hpp). Only declared here: include <copysynth/tuner.hpp> to fill them in.
struct TuneOptions;

/// Provided by libcopysynth-tune.a (CMake: copysynth::tune; pkg-config: copysynth-tune), not by
/// libcopysynth.a, since it runs the tuner; TuneOptions is in <copysynth/tuner.hpp>.
/// Tunes opt.operation on this host for the named workload (make_workload: "seeds", a shipped
/// size distribution such as "MemcpyGoogleA", or a .csv path) within opt.budget_seconds (plus the
/// final measurement: about budget + 2 s; opt.quick for a short search), then installs the
/// verified winner process-wide. Returns its wisdom entry, to save with save_wisdom so the next
/// start can use install_wisdom instead of tuning (wisdom_entry(), tuner.hpp, does the same for a
/// TuneResult of tune()). A workload's warning (Workload::warning: a profile of few calls) goes to
/// opt.progress as "warning: ...". Errors: kInvalidArgument for a name ending in " (cold)"
/// (check_tuning_workload_name), those of make_workload and tune(); on any error nothing is
/// installed.
Result<WisdomEntry> tune_and_install(const TuneOptions& opt, const std::string& workload = "seeds");

}  // namespace copysynth
