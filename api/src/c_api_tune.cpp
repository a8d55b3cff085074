// copysynth — the C API's tuning entry point, copysynth_tune (declared in copysynth.h). It is
// built into libcopysynth-tune.a (copysynth::tune), apart from libcopysynth.a, because it runs
// the tuner; its errors go to the same per-thread message as the rest of the C API
// (c_api_status.hpp).
#include "c_api_status.hpp"
#include "copysynth/copysynth.h"
#include "copysynth/copysynth.hpp"
#include "copysynth/tuner.hpp"

using namespace copysynth;
using namespace copysynth::c_api;

extern "C" copysynth_status copysynth_tune(copysynth_operation op, double budget_seconds) {
  return guarded([&]() -> Status {
    if (!known(op)) return unknown_op(op);
    COPYSYNTH_TRY(check_budget(budget_seconds));  // before the workload is made; tune() checks it again
    TuneOptions opt;
    opt.operation = static_cast<Operation>(op);
    opt.budget_seconds = budget_seconds;
    auto e = tune_and_install(opt);
    if (!e) return e.error();
    return {};
  });
}
