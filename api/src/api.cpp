// copysynth — the C++ embedding API (see copysynth.hpp), all but tune_and_install (tune.cpp).
#include "copysynth/copysynth.hpp"

#include <algorithm>
#include <chrono>

namespace copysynth {

const char* version() noexcept { return COPYSYNTH_VERSION; }

Result<Routine> make_routine(const CopyParams& params, const BuildOptions& opt) {
  auto plan = make_plan(params, opt.cpu.features(), opt.ladder);
  if (!plan) return plan.error();
  auto r = Routine::build(*plan, opt.cpu);
  if (!r) return r.error();
  COPYSYNTH_TRY(check_routine(*r, opt.verify));
  return r;
}

Result<Routine> make_routine(const Wisdom& w, const WisdomEntry& e, const BuildOptions& opt) {
  auto r = build_entry(w, e, opt.cpu);
  if (!r) return r.error();
  COPYSYNTH_TRY(check_routine(*r, opt.verify));
  return r;
}

Result<WisdomInstall> install_wisdom(const std::string& path, const WisdomOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  for (Operation op : opt.operations)  // a cast int (the C API checks its own)
    if (op != Operation::kMemcpy && op != Operation::kMemmove && op != Operation::kFill && op != Operation::kClearPage)
      return make_error(ErrorCode::kInvalidArgument, "install_wisdom: operation " + std::to_string(static_cast<int>(op)) +
                                                         " is not one (memcpy, memmove, fill, clear_page)");
  // Only the routines are installed: the measured points are not read (WisdomPoints).
  auto w = load_wisdom_for(path, opt.cpu, WisdomPoints::kSkip);
  if (!w) return w.error();
  WisdomInstall out;
  out.path = path;
  out.signature = w->cpu_signature;
  std::vector<Routine> routines;
  for (const WisdomEntry& e : w->entries) {
    if (!opt.operations.empty() &&
        std::find(opt.operations.begin(), opt.operations.end(), e.operation) == opt.operations.end())
      continue;
    auto r = build_entry(*w, e, opt.cpu);
    if (!r) return make_error(r.error().code, path + ": " + r.error().message);
    out.operations.push_back(e.operation);
    out.routines.push_back(r->name());
    routines.push_back(std::move(r).value());
  }
  if (routines.empty()) {
    std::string wanted, judged;
    for (Operation op : opt.operations) {
      if (!wanted.empty()) wanted += ',';  // autotune's --op list: no spaces
      wanted += name_of(op);
    }
    for (Operation op : opt.operations.empty() ? std::vector<Operation>{Operation::kMemcpy, Operation::kMemmove,
                                                                        Operation::kFill, Operation::kClearPage}
                                               : opt.operations)
      if (w->dropped_by_app(op)) {
        if (!judged.empty()) judged += ", ";
        judged += name_of(op);
      }
    // Dropped by a program's verdict (autotune --app): not something to tune again blindly.
    if (!judged.empty())
      return make_error(ErrorCode::kWisdomMismatch,
                        path + ": holds no routine to install on CPU \"" + w->cpu_signature + "\": a program judged " +
                            judged + " (autotune --app) and was not faster with the tuned routines, so its tuning "
                            "keeps the system's (autotune --show " + path + " lists the verdicts)");
    return make_error(ErrorCode::kWisdomMismatch,
                      path + ": has no entry for " + (wanted.empty() ? std::string("any operation") : wanted) +
                          " on CPU \"" + w->cpu_signature + "\"; tune them with `autotune --op " +
                          (wanted.empty() ? std::string("all") : wanted) + " --emit " + path + "`");
  }
  out.same_cpu = w->cpu_signature == opt.cpu.signature();
  if (auto st = install_all(std::move(routines), out.same_cpu ? opt.verify_same_cpu : opt.verify); !st)
    return make_error(st.error().code, path + ": " + st.error().message);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

// tune_and_install: tune.cpp (libcopysynth-tune.a), as it needs the tuner.

}  // namespace copysynth
