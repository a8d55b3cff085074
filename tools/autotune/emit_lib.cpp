// autotune --from FILE --emit-lib DIR: this CPU's tuned memcpy, memmove and fill as an
// ahead-of-time library (write_tuned_library, library_writer.hpp: verification, assembly,
// linking and the read-back check are its rules).
#include <algorithm>
#include <filesystem>
#include <iostream>

#include "autotune.hpp"
#include "copysynth/library_writer.hpp"
#include "copysynth/wisdom.hpp"

using namespace copysynth;

namespace autotune {

int run_emit_lib(const Options& o) {
  // A signature that is not one is a bad command line (exit 1), said before the wisdom is read.
  if (!o.lib_guard.empty())
    if (auto st = check_guard_signature(o.lib_guard); !st) return usage_error("--lib-guard: " + st.error().message);
  auto w = load_wisdom_for(o.from_path, o.cpu);
  if (!w) return fail(w.error());
  const Wisdom held = *w;  // before --op selects: which functions a note may tell to keep
  if (o.ops_given) {
    std::erase_if(w->entries, [&](const WisdomEntry& e) {
      return std::find(o.ops.begin(), o.ops.end(), e.operation) == o.ops.end();
    });
    // --op named only operations the library does not hold (clear_page) or the file lacks: said
    // as such, not as a file without entries.
    const bool any = std::any_of(w->entries.begin(), w->entries.end(),
                                 [](const WisdomEntry& e) { return e.operation != Operation::kClearPage; });
    if (!any)
      return usage_error("--emit-lib writes memcpy, memmove and memset: --op names none of them that " + o.from_path +
                         " holds for this CPU (give --op memcpy,memmove,fill, or leave --op out for all it holds)");
  }
  LibraryOptions lo;
  lo.dir = o.lib_dir;
  lo.wisdom_path = o.from_path;
  lo.command = o.shell_command;
  lo.guard_signature = o.lib_guard;
  lo.progress = o.progress;
  auto r = write_tuned_library(*w, lo, o.cpu);
  if (!r) return fail(r.error());
  std::string what;
  for (const auto& x : r->routines) what += " " + x;
  if (const auto& gone = r->no_longer_replaced; !gone.empty()) {
    // Said with --quiet too: programs that used this directory lose a tuned function.
    const auto join = [&](const std::vector<Operation>& ops) {
      std::string s;
      for (std::size_t i = 0; i < ops.size(); ++i) s += (i == 0 ? "" : i + 1 == ops.size() ? " and " : ", ") + std::string(libc_name(ops[i]));
      return s;
    };
    std::vector<Operation> left_out, absent;  // by --op; without an entry in the wisdom file
    for (Operation op : gone) (held.find(op) ? left_out : absent).push_back(op);
    const std::string fns = join(gone);
    std::string why;
    if (!left_out.empty())
      why += "; " + o.from_path + " holds " + join(left_out) + ": name " + (left_out.size() == 1 ? "it" : "them") +
             " in --op, or leave --op out, to keep " + (left_out.size() == 1 ? "it" : "them");
    if (!absent.empty())
      why += "; " + o.from_path + " has no entry for " + join(absent) + " (its tuning kept the system's)";
    std::cerr << "autotune: note: the library " << o.lib_dir << " held before also replaced " << fns
              << "; this one does not, so programs using it call the system's " << fns << " again" << why << "\n";
  }
  o.progress("wrote " + r->files[0] + " (and the link " + std::filesystem::path(r->files[1]).filename().string() + " to it) and " + r->files[2] + " (" +
             r->files[3] + " says how to deploy them):" + what +
             "; the guard accepts " + r->guard_signature);
  return 0;
}

}  // namespace autotune
