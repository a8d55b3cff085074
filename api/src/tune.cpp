// copysynth — the C++ API's tuning entry point, tune_and_install (declared in copysynth.hpp). It
// is built into libcopysynth-tune.a (copysynth::tune), apart from libcopysynth.a, because it runs
// the tuner: programs that only load wisdom or build routines from parameters, and the
// LD_PRELOAD shim, link none of the search, timing or reports.
#include "copysynth/copysynth.hpp"
#include "copysynth/tuner.hpp"

namespace copysynth {

Result<WisdomEntry> tune_and_install(const TuneOptions& opt, const std::string& workload) {
  COPYSYNTH_TRY(check_tuning_workload_name(workload));
  auto wl = make_workload(workload, opt.operation);
  if (!wl) return wl.error();
  // What makes a tuning on it doubtful (a profile of few calls), said where the search says its
  // progress.
  if (!wl->warning.empty() && opt.progress) opt.progress("warning: " + wl->warning);
  auto result = tune(*wl, opt);
  if (!result) return result.error();
  // The wisdom keeps a .csv's or profile's absolute path (the name shows a .csv by its file name).
  WisdomEntry e = wisdom_entry(*result, wisdom_workload_name(workload, *wl));
  COPYSYNTH_TRY(install(std::move(result->routine), opt.verify));
  return e;
}

}  // namespace copysynth
