// autotune --from FILE --emit-asm FILE.S: one tuned routine as a GNU as file. The rules (which
// entry, verification before writing, the header) are write_asm_file's (library_writer.hpp);
// this picks the host document and says what was written.
#include <iostream>

#include "autotune.hpp"
#include "copysynth/library_writer.hpp"
#include "copysynth/wisdom.hpp"

using namespace copysynth;

namespace autotune {

int run_emit_asm(const Options& o) {
  // One host's wisdom: a single-host file, or of a fleet this CPU's host (or its only one).
  auto fleet = load_fleet(o.from_path);
  if (!fleet) return fail(fleet.error());
  auto w = fleet->hosts.size() == 1 ? Result<Wisdom>(fleet->hosts.front()) : select_host(*fleet, o.cpu);
  if (!w)
    return fail(make_error(w.error().code, o.from_path + ": --emit-asm writes one host's routine and this CPU is not "
                                                         "in the fleet: " + w.error().message +
                                                         "; run it with that host's own wisdom file"));
  if (o.ops_given && o.ops.size() != 1) {
    std::string held;
    for (const auto& e : w->entries) held += (held.empty() ? "" : ", ") + std::string(name_of(e.operation));
    return usage_error("--emit-asm writes one routine per file: give one --op (" + o.from_path + " holds " + held + ")");
  }
  auto e = asm_entry(*w, o.ops_given ? std::optional<Operation>(o.ops.front()) : std::nullopt, o.from_path);
  if (!e) return fail_or_usage(e.error());
  AsmFileOptions a;
  a.path = o.asm_path;
  a.flavor = o.flavor;
  a.symbol = o.asm_symbol;
  if (!o.target.empty()) a.target = parse_isa_level(o.target);
  a.wisdom_path = o.from_path;
  a.command = o.shell_command;
  a.progress = o.progress;
  auto r = write_asm_file(*w, **e, a, o.cpu);
  if (!r) return fail(r.error());
  for (const auto& warning : r->warnings) std::cerr << "autotune: warning: " << warning << "\n";
  if (!r->backup.empty())
    std::cerr << "autotune: the earlier " << r->path << " held other text (edits?); it is kept as " << r->backup << "\n";
  o.progress("wrote " + (r->path == kAsmToStdout ? std::string("the .S file to standard output") : r->path) + ": " + r->symbol + ", " + o.flavor + " flavour, " + std::to_string(r->instructions) +
             " instructions, " + std::to_string(r->code_bytes) +
             " bytes of code (GNU as assembles it to exactly the JIT routine's bytes)");
  return 0;
}

}  // namespace autotune
