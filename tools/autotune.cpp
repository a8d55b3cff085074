// autotune — tune a memcpy routine for this CPU and write it as wisdom (best.json).
//
//   autotune --emit best.json          search within the budget, print the table, write wisdom
//   autotune --from best.json          re-verify and re-measure a wisdom file, print the table
//   autotune --merge a.json b.json --emit fleet.json   combine hosts' wisdom, keyed by CPU
//   autotune --show best.json          print what a wisdom file holds (ld.so --list-diagnostics)
//   autotune --from best.json --emit-asm memcpy_64.S --flavor linux
//                                      write the tuned routine as a GNU as file (no timing)
//   autotune --from best.json --emit-lib DIR
//                                      the tuned memcpy, memmove and fill as libcopysynth-tuned.so/.a
//   autotune --from best.json --patch-table
//                                      the commit-message table, measured against the system routine
//
// Progress goes to stderr, the table to stdout. Exit status: 0 success, 1 bad command line,
// 2 the work failed (unreadable or mismatched wisdom, verification failure, I/O error).
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <functional>
#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include <gnu/libc-version.h>

#include "copysynth/asm_flavors.hpp"
#include "copysynth/ladders.hpp"
#include "copysynth/library_writer.hpp"
#include "copysynth/static_check.hpp"
#include "copysynth/peers.hpp"
#include "copysynth/report.hpp"
#include "copysynth/tuner.hpp"
#include "copysynth/wisdom.hpp"

using namespace copysynth;

namespace {

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  char b[32];
  std::strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return b;
}

int fail(const Error& e) {
  std::cerr << "autotune: error (" << error_code_name(e.code) << "): " << e.message << "\n";
  return 2;
}

/// A command-line value that does not work (exit status 1, as a parse error).
int usage_error(const std::string& message) {
  std::cerr << "autotune: " << message << "\n";
  return 1;
}

/// Checks before any work that an output file can be written: not a directory, in a directory
/// that exists and is writable. Errors name the option, the path and the reason (errno).
Status check_output(const char* option, const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec))
    return make_error(ErrorCode::kInvalidArgument, std::string(option) + " " + path + ": is a directory; give a file name");
  const fs::path dir = fs::path(path).has_parent_path() ? fs::path(path).parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec))
    return make_error(ErrorCode::kInvalidArgument, std::string(option) + " " + path + ": the directory " + dir.string() +
                                                       " does not exist; create it or pick another path");
  if (::access(dir.c_str(), W_OK) != 0)
    return make_error(ErrorCode::kInvalidArgument, std::string(option) + " " + path + ": cannot write in " +
                                                       dir.string() + " (" + std::strerror(errno) + ")");
  return {};
}

/// A name for setting `path` aside that no file has yet: PATH.bak, else PATH.bak.1, .2, ...
std::string free_backup_name(const std::string& path) {
  std::error_code ec;
  std::string bak = path + ".bak";
  for (int i = 1; std::filesystem::exists(bak, ec); ++i) bak = path + ".bak." + std::to_string(i);
  return bak;
}

/// Writes this CPU's wisdom `w` to `path` without losing what an existing file holds: into a fleet
/// file, as this CPU's host (other CPUs stay); into a wisdom file of this CPU, keeping its entries
/// for operations `w` lacks; any other existing file (another CPU's, not wisdom at all) is first
/// moved to a backup name no file has (never overwritten), and the reason is said.
Status write_wisdom_keeping(Wisdom w, const std::string& path, const CpuInfo& cpu,
                            const std::function<void(const std::string&)>& progress) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    if (std::filesystem::is_directory(path, ec))
      return make_error(ErrorCode::kWisdomIo, path + " is a directory; give --emit a file name");
    if (auto fleet = load_fleet(path); fleet && fleet->hosts.size() > 1) {
      Fleet mine;
      mine.hosts = {w};
      Fleet out = *fleet;
      out.hosts = merge_fleets({*fleet, mine}).hosts;
      out.created = utc_now();
      COPYSYNTH_TRY(save_fleet(out, path));
      progress("wrote this CPU's entries into the fleet file " + path + " (" + std::to_string(out.hosts.size()) +
               " CPUs; the others unchanged)");
      return {};
    }
    auto old = load_wisdom(path);
    Status same_cpu = old ? check_cpu(*old, cpu) : Status(old.error());
    if (same_cpu.ok()) {
      for (const auto& e : old->entries)
        if (!w.find(e.operation)) {
          w.entries.push_back(e);
          progress("kept the " + std::string(name_of(e.operation)) + " entry of " + path);
        }
    } else {
      const std::string bak = free_backup_name(path);
      if (std::rename(path.c_str(), bak.c_str()) != 0)
        return make_error(ErrorCode::kWisdomIo, "cannot move the existing " + path + " aside to " + bak + " (" +
                                                    std::strerror(errno) + "); nothing was written");
      progress("moved the existing " + path + " to " + bak + ": " + same_cpu.error().message);
    }
  }
  COPYSYNTH_TRY(save_wisdom(w, path));
  progress("wrote " + path);
  return {};
}

/// A symbol GNU as takes for --name: [A-Za-z_.$][A-Za-z0-9_.$]*, not empty.
bool valid_asm_symbol(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (unsigned char c : s)
    if (!(std::isalnum(c) || c == '_' || c == '.' || c == '$')) return false;
  return true;
}

/// A value for --show: in double quotes, with ", \\ and bytes outside printable ASCII written as
/// \\ooo (octal), as ld.so --list-diagnostics writes strings; never cut short.
std::string quoted(const std::string& s) { return quoted_bytes(s, std::string::npos); }

/// The first length a class of `strategy` serves in `plan`, or "never".
std::string first_length(const CopyPlan& plan, Strategy strategy) {
  for (const auto& c : plan.classes)
    if (c.strategy == strategy) return std::to_string(c.lo);
  return "never";
}

/// `autotune --show FILE`: every fact of a wisdom or fleet file as key=value lines, one per line,
/// strings quoted (ld.so --list-diagnostics); nothing is built or run.
int show(const std::string& path) {
  auto f = load_fleet(path);
  if (!f) return fail(f.error());
  const CpuInfo& cpu = CpuInfo::host();
  std::ostringstream o;
  o << "copysynth.version=" << quoted(COPYSYNTH_VERSION) << "\n";
  o << "wisdom.path=" << quoted(path) << "\n";
  o << "wisdom.schema=" << f->schema << "\n";
  o << "wisdom.generator_version=" << quoted(f->generator_version) << "\n";
  o << "wisdom.created=" << quoted(f->created) << "\n";
  o << "wisdom.command=" << quoted(f->command) << "\n";
  o << "wisdom.hosts=" << f->hosts.size() << "\n";
  o << "this_cpu.signature=" << quoted(cpu.signature()) << "\n";
  o << "this_cpu.brand=" << quoted(cpu.brand()) << "\n";
  const auto picked = select_host_index(*f, cpu.signature());  // exact, else this model's capped-ISA host
  const int selected = picked ? static_cast<int>(*picked) : -1;
  o << "this_cpu.host=" << selected << "\n";  // -1: none; this_cpu.note says why
  if (!picked) o << "this_cpu.note=" << quoted(picked.error().message) << "\n";
  for (std::size_t i = 0; i < f->hosts.size(); ++i) {
    const Wisdom& h = f->hosts[i];
    const std::string hp = "host[" + std::to_string(i) + "].";
    o << hp << "cpu.signature=" << quoted(h.cpu_signature) << "\n";
    o << hp << "cpu.vendor=" << quoted(h.cpu_vendor) << "\n";
    o << hp << "cpu.brand=" << quoted(h.cpu_brand) << "\n";
    o << hp << "cpu.family=" << h.cpu_family << "\n";
    o << hp << "cpu.model=" << h.cpu_model << "\n";
    o << hp << "cpu.stepping=" << h.cpu_stepping << "\n";
    o << hp << "cpu.features=" << quoted(h.cpu_features) << "\n";
    o << hp << "generator_version=" << quoted(h.generator_version) << "\n";
    o << hp << "created=" << quoted(h.created) << "\n";
    o << hp << "command=" << quoted(h.command) << "\n";
    o << hp << "entries=" << h.entries.size() << "\n";
    for (std::size_t k = 0; k < h.entries.size(); ++k) {
      const WisdomEntry& e = h.entries[k];
      const std::string ep = hp + "entry[" + std::to_string(k) + "].";
      o << ep << "operation=" << quoted(std::string(name_of(e.operation))) << "\n";
      o << ep << "routine=" << quoted(short_name(e.plan.params)) << "\n";
      o << ep << "workload=" << quoted(e.workload) << "\n";
      char hash[17];
      std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(e.code_hash));
      o << ep << "code_fnv1a64=" << quoted(hash) << "\n";
      // Thresholds as the plan applies them (raised to the loop's start; docs/architecture.md, 10).
      o << ep << "threshold.rep_string=" << first_length(e.plan, Strategy::kRepString) << "\n";
      o << ep << "threshold.non_temporal=" << first_length(e.plan, Strategy::kNonTemporalLoop) << "\n";
      const nlohmann::json params = to_json(e.plan.params);
      for (const auto& [key, value] : params.items())
        o << ep << "params." << key << "="
          << (value.is_string() ? quoted(value.get<std::string>()) : value.dump()) << "\n";
      o << ep << "plan.ladder=" << quoted(e.plan.ladder) << "\n";
      o << ep << "plan.vector_width=" << e.plan.vec << "\n";
      o << ep << "plan.classes=" << e.plan.classes.size() << "\n";
      for (std::size_t c = 0; c < e.plan.classes.size(); ++c) {  // "LO..HI STRATEGY [block B] weight W"
        const SizeClass& sc = e.plan.classes[c];
        char w[32];
        std::snprintf(w, sizeof w, "%.4g", sc.weight);
        o << ep << "plan.class[" << c << "]="
          << quoted(std::to_string(sc.lo) + ".." + (sc.hi == kNever ? std::string("max") : std::to_string(sc.hi)) + " " +
                    std::string(strategy_name(sc.strategy)) + (sc.block ? " block " + std::to_string(sc.block) : "") +
                    " weight " + w)
          << "\n";
      }
      if (!e.points.empty()) {
        char g[32];
        std::snprintf(g, sizeof g, "%.3f", geomean_speedup(e.points));
        o << ep << "points=" << e.points.size() << "\n" << ep << "geomean_speedup=" << g << "\n";
      }
    }
  }
  std::cout << o.str() << std::flush;
  return 0;
}

/// `autotune --merge FILE... --emit OUT`: one fleet file of every input's hosts, keyed by CPU.
int merge(const std::vector<std::string>& inputs, const std::string& out, const std::string& command, bool quiet) {
  std::vector<Fleet> fleets;
  for (const auto& in : inputs) {
    auto f = load_fleet(in);
    if (!f) return fail(f.error());
    fleets.push_back(std::move(f).value());
  }
  std::vector<std::string> notes;
  Fleet m = merge_fleets(fleets, &notes, inputs);
  m.created = utc_now();
  m.command = command;
  if (auto st = save_fleet(m, out); !st) return fail(st.error());
  if (!quiet) {
    for (const auto& n : notes) std::cerr << "autotune: " << n << "\n";
    std::cerr << "autotune: wrote " << out << ": " << m.hosts.size() << " CPU(s):";
    for (const auto& h : m.hosts) std::cerr << " " << h.cpu_signature << " (" << h.entries.size() << " entries)";
    std::cerr << "\n";
  }
  return 0;
}

/// A command line as a shell would take it back (arguments with spaces or quotes are quoted).
std::string shell_line(int argc, char** argv) {
  std::string line;
  for (int i = 0; i < argc; ++i) {
    std::string a = i ? argv[i] : "autotune";
    if (a.find_first_of(" \t'\"$\\") != std::string::npos) {
      std::string q = "'";
      for (char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
      a = q + "'";
    }
    line += (i ? " " : "") + a;
  }
  return line;
}

/// --emit-asm must not destroy a file it did not write: not the wisdom it reads, nor any existing
/// file that is not a copysynth `.S` file (its first line says "written by copysynth").
Status check_asm_output(const std::string& path, const std::string& from) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(path, ec)) {
    if (fs::equivalent(path, from, ec))
      return make_error(ErrorCode::kInvalidArgument, "--emit-asm " + path + " is the wisdom file --from reads; "
                                                     "give the .S file another name");
    std::ifstream in(path);
    std::string first;
    std::getline(in, first);
    if (first.find("written by copysynth") == std::string::npos)
      return make_error(ErrorCode::kInvalidArgument, "--emit-asm " + path + " exists and is not a .S file copysynth "
                                                     "wrote; not overwriting it: remove it or pick another name");
  }
  return check_output("--emit-asm", path);
}

/// The entry of `w` that --emit-asm writes: the one --op names, else memcpy, else the only one.
Result<const WisdomEntry*> entry_for_asm(const Wisdom& w, const std::string& path, const std::vector<Operation>& ops,
                                         bool ops_given) {
  std::string held;
  for (const auto& e : w.entries) held += (held.empty() ? "" : ", ") + std::string(name_of(e.operation));
  if (ops_given && ops.size() != 1)
    return make_error(ErrorCode::kInvalidArgument, "--emit-asm writes one routine per file: give one --op (" + path +
                                                       " holds " + held + ")");
  const Operation want = ops_given ? ops.front() : Operation::kMemcpy;
  if (const WisdomEntry* e = w.find(want)) return e;
  if (!ops_given && w.entries.size() == 1) return &w.entries.front();
  return make_error(ErrorCode::kWisdomMismatch,
                    path + " has no " + std::string(name_of(want)) + " entry (it holds " + (held.empty() ? "none" : held) +
                        "): pick one of those with --op, or tune it with autotune --op " + std::string(name_of(want)) +
                        " --emit " + path);
}

struct AsmRequest {
  std::string from, path, flavor, symbol, target;  // target: "" = the lowest level the plan needs
  std::string command;
};

/// --emit-asm: writes the tuned routine of `entry` as a `.S` file. Needs no matching host: the
/// code is generated, checked statically for the target and, where `host` (this CPU, capped by
/// --isa) can run it, verified by the conformance suite before anything is written (invariant 9).
int emit_asm_file(const Wisdom& w, const WisdomEntry& entry, const AsmRequest& req, const CpuInfo& host,
                  const std::function<void(const std::string&)>& progress) {
  const CopyPlan& plan = entry.plan;
  const std::string op = std::string(name_of(entry.operation));
  // The target: --target, or the lowest ISA level the plan runs on.
  IsaLevel level = IsaLevel::kSSE2;
  if (!req.target.empty()) {
    level = *parse_isa_level(req.target);
    if (auto st = validate(plan.params, IsaFeatures::for_level(level)); !st)
      return fail(make_error(ErrorCode::kUnsupportedIsa,
                             "the " + op + " routine in " + req.from + " cannot run on --target " + req.target + ": " +
                                 st.error().message + "; pick a higher --target, or tune for it with autotune --isa " +
                                 req.target + " --emit FILE"));
  } else {
    for (IsaLevel l : {IsaLevel::kSSE2, IsaLevel::kAVX2, IsaLevel::kAVX512}) {
      level = l;
      if (validate(plan.params, IsaFeatures::for_level(l)).ok()) break;
    }
  }
  const IsaFeatures target = IsaFeatures::for_level(level);
  auto bytes = assemble(plan);
  if (!bytes) return fail(bytes.error());
  if (fnv1a64(*bytes) != entry.code_hash)
    return fail(make_error(ErrorCode::kWisdomMismatch,
                           "this copysynth (" + std::string(COPYSYNTH_VERSION) + ") emits other code for the " + op +
                               " plan in " + req.from + " (made by copysynth " + w.generator_version +
                               "), so the file would not be the routine that was tuned; re-run autotune --emit " +
                               req.from + " with this version"));
  // Verification before writing: static checks for the target always, the conformance suite
  // when this host can run the code.
  const StaticReport sr = check_code(*bytes, target);
  if (!sr.ok())
    return fail(make_error(ErrorCode::kVerifyFailed, "the " + op + " routine fails the static checks for " +
                                                         std::string(isa_level_name(level)) + ": " + sr.summary()));
  std::string verified = "Verified: the static checks for " + std::string(isa_level_name(level)) + " passed";
  if (validate(plan.params, host.features()).ok()) {
    auto r = Routine::build(plan, host);
    if (!r) return fail(r.error());
    progress("verifying the " + op + " routine on this host before writing it");
    const VerifyReport rep = verify_routine(*r);
    if (!rep.ok())
      return fail(make_error(ErrorCode::kVerifyFailed, "the " + op + " routine failed verification: " + rep.summary()));
    verified += "; the conformance suite " + rep.summary() + " on " + host.brand();
  } else {
    verified += "; not executed (the generating host, " + host.brand() + " with " + host.features().to_string() +
                ", lacks features it needs)";
    progress("not executing the routine: this host (with --isa: " + host.features().to_string() +
             ") lacks features it needs; static checks only");
  }
  auto flavor = asm_flavor(req.flavor);
  if (!flavor) return fail(flavor.error());
  AsmOptions o;
  o.symbol = req.symbol.empty() ? default_asm_symbol(entry.operation) : req.symbol;
  o.header.push_back("Tuned on: " + (w.cpu_brand.empty() ? w.cpu_vendor : w.cpu_brand) + " (" + w.cpu_signature +
                     "), workload " + entry.workload + ", " + w.created + ", copysynth " + w.generator_version + ".");
  if (!entry.points.empty()) {
    char b[160];
    std::snprintf(b, sizeof b, "Measured then: %.2fx the speed of the %s (geometric mean over %zu points).",
                  geomean_speedup(entry.points), baseline_name(entry.operation).c_str(), entry.points.size());
    o.header.push_back(b);
  }
  o.header.push_back("Target: " + std::string(isa_level_name(level)) + " (" + target.to_string() + ").");
  o.header.push_back(verified + ".");
  o.header.push_back("Command: " + req.command);
  auto text = write_asm(plan, *flavor, o);
  if (!text) return fail(text.error());
  if (req.flavor == "linux" && plan.vec > 8)
    std::cerr << "autotune: warning: this " << op << " routine uses " << plan.vec
              << "-byte vector registers; the kernel allows them only between kernel_fpu_begin() and "
                 "kernel_fpu_end(), so this file cannot replace an arch/x86/lib routine as it is (that needs a "
                 "GPR plan, CopyParams vector_width = 8, which autotune's search does not force)\n";
  std::ofstream f(req.path, std::ios::binary);
  f << text->text;
  f.close();
  if (!f)
    return fail(make_error(ErrorCode::kInvalidArgument, "cannot write " + req.path + " (" + std::strerror(errno) + ")"));
  progress("wrote " + req.path + ": " + o.symbol + ", " + req.flavor + " flavour, " +
           std::to_string(text->instructions) + " instructions, " + std::to_string(text->code_bytes) +
           " bytes of code (assembled with GNU as: exactly the JIT routine's bytes)");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "autotune: generate, verify and time memcpy routines on this CPU and keep the fastest.\n"
      "Every candidate passes conformance verification (all lengths near every size-class edge,\n"
      "src/dst misalignment 0..63, buffers ending at PROT_NONE pages) before it is timed.\n"
      "Timings are TSC medians, interleaved with the system memcpy in the same run.\n"
      "Progress goes to stderr; the table (Len, Src/Dst align, GB/s, speedup) to stdout.",
      "autotune"};
  app.set_version_flag("--version", std::string("copysynth ") + COPYSYNTH_VERSION);

  std::string emit_path, from_path, isa = "host", workload_name = "seeds";
  std::vector<std::string> op_names{"memcpy"};
  double budget = 30;
  std::uint64_t seed = 1;
  bool quick = false, quiet = false, show_plan = false, list_params = false, cold = false, report = false;
  std::string svg_path, versus_path, show_path;
  std::string asm_path, flavor = "plain", asm_symbol, target;
  std::string lib_dir, lib_guard;
  bool patch_table = false;
  std::vector<std::string> merge_paths;

  app.add_option("--emit", emit_path,
                 "Write the winners (params, plan, CPU signature, measured points) as a wisdom file, "
                 "e.g. best.json. Entries of an existing file of this CPU for other operations are "
                 "kept; into an existing fleet file (--merge) this CPU's entries are added; a file that "
                 "cannot be merged is moved to FILE.bak. With --merge: the fleet file to write")
      ->type_name("FILE");
  app.add_option("--from", from_path,
                 "Load a wisdom file (of a fleet file, this CPU's entries) instead of searching: refuse it "
                 "if it was made on another CPU or schema, rebuild the same routine, re-verify it, "
                 "re-measure it and print the table")
      ->type_name("FILE");
  const CLI::Validator seconds(
      [](std::string& in) -> std::string {
        char* end = nullptr;
        errno = 0;
        const double v = std::strtod(in.c_str(), &end);
        if (end == in.c_str() || *end != '\0') return "--budget takes a number of seconds, got '" + in + "'";
        if (!std::isfinite(v) || v < 1 || v > 86400) return "--budget must be between 1 and 86400 seconds, got " + in;
        return {};
      },
      "SECONDS in [1, 86400]");
  app.add_option("--budget", budget,
                 "Wall-clock budget of the search in seconds (verification + timing); the floor (the "
                 "winner against every peer) and the final measurement come on top, about 20 s. A full "
                 "memcpy run takes about 55 s on a 2-core machine, --quick about 15 s")
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
  app.add_option("--seed", seed, "Seed for candidate order and verification sampling (same seed, same "
                                 "search order)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_flag("--quick", quick, "Fewer candidates and rounds (about 2 s)");
  app.add_option("--isa", isa,
                 "Tune for at most this ISA level on this host: host, sse2, avx2 or avx512 (a level "
                 "above the host's is refused). With --emit-asm: execute at most this level here (a "
                 "routine that needs more is written after the static checks alone)")
      ->check(CLI::IsMember({"host", "sse2", "avx2", "avx512"}))
      ->capture_default_str();
  app.add_option("--workload", workload_name,
                 "Workload to tune and report on: seeds (the seeds' matrix of sizes and alignments), "
                 "the name of a shipped size distribution (MemcpyGoogleA, B, D, L, M, Q, S, U, "
                 "Uniform384To4096), or a FILE.csv in the same format (one line of comma-separated "
                 "probabilities, field i for length i). Distributions are replayed as a sequence of "
                 "calls with random offsets in a 4 KiB window")
      ->capture_default_str();
  app.add_flag("--cold", cold, "With a distribution workload: spread the calls over 256 MiB so the data is "
                               "not in cache");
  app.add_flag("--show-plan", show_plan, "Print the winner's size ladder (stderr)");
  app.add_flag("--report", report,
               "With --from: compare the routine with every peer (glibc, rep movsb, plain AVX2 loops, DPDK "
               "rte_memcpy and AMD AOCL-LibMem where built) on the seeds' matrix, the misaligned-destination matrix "
               "(4 KiB-512 KiB, dst offsets 1, 4, 15, 33), the copy being used (64 KiB-64 MiB: alone, read "
               "back, source overwritten; warm and cold cache) and the eight production distributions "
               "(throughput and read back), all in this process, interleaved; print the tables, the read "
               "bandwidth and which performance targets are met");
  app.add_option("--svg", svg_path,
                 "With --report: write a plot of the speedup over glibc against the length, one line per "
                 "alignment (other operations than the first get -OPERATION before the extension)")
      ->type_name("FILE");
  app.add_option("--versus", versus_path,
                 "With --report: also time the routine of another wisdom file of this CPU (same "
                 "operation) in the same rounds, as an extra column, e.g. to compare two tuning runs")
      ->type_name("FILE");
  app.add_option("--emit-asm", asm_path,
                 "With --from: write the tuned routine (one operation: --op, default memcpy) as a GNU "
                 "assembler file in AT&T syntax, e.g. memcpy_64.S. Assembled, it gives exactly the JIT "
                 "routine's bytes; a header comment gives the size ladder, the parameters, the CPU tuned "
                 "on and this command line. Needs no matching host; the routine is verified (the "
                 "conformance suite where this host can run it, static checks always) before it is written")
      ->type_name("FILE");
  app.add_option("--emit-lib", lib_dir,
                 "With --from: write this CPU's tuned memcpy, memmove and fill as an ahead-of-time library "
                 "into DIR: libcopysynth-tuned.so (LD_PRELOAD, /etc/ld.so.preload or -lcopysynth-tuned), "
                 "libcopysynth-tuned.a (static linking), README and src/. No work at process start: the "
                 "first call checks the CPU (CPUID) and picks the tuned routines on the CPU tuned for, else "
                 "built-in SSE2 ones. Every routine passes the full conformance suite here first; the linked code is read "
                 "back and compared with the verified bytes. Needs GNU binutils (as, ld, ar)")
      ->type_name("DIR");
  app.add_option("--lib-guard", lib_guard,
                 "With --emit-lib: the CPU signature (VENDOR-FAMILY-MODEL:features) the library's guard "
                 "accepts instead of the wisdom's: a library that falls back to the built-in routines on "
                 "this host, to test the fallback")
      ->type_name("SIGNATURE");
  app.add_option("--flavor", flavor,
                 "With --emit-asm: linux (linux/linkage.h, SYM_FUNC_START/SYM_FUNC_END, .L labels, RET, "
                 "ASM_NOPn), glibc (sysdep.h, ENTRY_P2ALIGN/END, L() labels) or plain (.globl, .type, .size; "
                 "assembles with as or gcc alone)")
      ->check(CLI::IsMember({"linux", "glibc", "plain"}))
      ->capture_default_str();
  app.add_option("--name", asm_symbol,
                 "With --emit-asm: the function's symbol (default memcpy_copysynth, memmove_copysynth, "
                 "memset_copysynth or clear_page_copysynth)")
      ->type_name("SYMBOL");
  app.add_option("--target", target,
                 "With --emit-asm: the ISA level the file is for, sse2, avx2 or avx512 (default: the lowest "
                 "the routine needs); a routine that needs more is refused. Nothing is executed for a level "
                 "this host lacks")
      ->check(CLI::IsMember({"sse2", "avx2", "avx512"}));
  app.add_flag("--patch-table", patch_table,
               "With --from: print the commit-message table (Len  Src/Dst align  old  new  speedup; old = the "
               "system routine, new = the tuned one, ns per call, both measured in this run on the seeds' "
               "matrix) instead of the usual one");
  app.add_option("--merge", merge_paths,
                 "Combine wisdom files (from several hosts, or fleet files) into one fleet file keyed by CPU "
                 "signature, written with --emit: a CPU seen again keeps its entries and takes the later file's "
                 "entry for an operation both have. Programs (install_wisdom, copysynth_load_wisdom, the "
                 "LD_PRELOAD shim) pick the entry of the CPU they run on. Nothing is tuned or run")
      ->type_name("FILE...")
      ->expected(1, -1);
  app.add_option("--show", show_path,
                 "Print what a wisdom or fleet file holds, one key=value per line in the manner of "
                 "`ld.so --list-diagnostics`: each CPU's signature and features, each entry's routine, "
                 "parameters, effective rep/non-temporal thresholds and size ladder, and which host this CPU "
                 "would use. Nothing is built or run")
      ->type_name("FILE");
  app.add_flag("--list-params", list_params, "Print every tunable parameter with unit, range and default, then exit");
  app.add_flag("-q,--quiet", quiet, "No progress lines on stderr");
  app.footer(
      "Examples:\n"
      "  autotune --emit best.json            tune (about 10 s), print the table, write best.json\n"
      "  autotune --quick                     a short search, table only\n"
      "  autotune --from best.json            check a wisdom file on this host and re-measure it\n"
      "  autotune --isa avx2 --emit avx2.json tune without AVX-512 (load it with --isa avx2 too)\n"
      "  autotune --op all --emit best.json   memcpy, memmove, fill and clear_page in one file\n"
      "  autotune --workload MemcpyGoogleA    tune for a production size distribution\n"
      "  autotune --from best.json --emit-asm memcpy_64.S --flavor linux --name __memcpy\n"
      "                                       the tuned memcpy as a kernel-style .S file\n"
      "  autotune --from best.json --emit-asm memcpy.S --target avx512\n"
      "                                       for an AVX-512 CPU, written on any host\n"
      "  autotune --from best.json --emit-lib lib/   libcopysynth-tuned.so and .a for this CPU\n"
      "  autotune --from best.json --patch-table   the table for a commit message\n"
      "  autotune --merge a.json b.json --emit fleet.json   one file for several CPUs\n"
      "  autotune --show best.json            what a wisdom file holds, key=value lines\n"
      "Programs use wisdom with copysynth_load_wisdom()/install_wisdom() or, unmodified, with\n"
      "  COPYSYNTH_WISDOM=best.json LD_PRELOAD=libcopysynth-preload.so PROGRAM\n"
      "or, with no start-up work, the library --emit-lib writes:\n"
      "  LD_PRELOAD=lib/libcopysynth-tuned.so PROGRAM\n"
      "Exit status: 0 success, 1 bad command line, 2 failure (message on stderr).");
  app.get_option("--from")->excludes("--quick")->excludes("--budget");
  app.get_option("--report")->needs("--from");
  app.get_option("--svg")->needs("--report");
  app.get_option("--versus")->needs("--report");
  for (const char* o : {"--flavor", "--name", "--target"}) app.get_option(o)->needs("--emit-asm");
  app.get_option("--emit-asm")->excludes("--report")->excludes("--patch-table")->excludes("--emit");
  app.get_option("--lib-guard")->needs("--emit-lib");
  app.get_option("--emit-lib")->excludes("--report")->excludes("--patch-table")->excludes("--emit")
      ->excludes("--emit-asm")->excludes("--isa");
  app.get_option("--patch-table")->excludes("--report");
  app.get_option("--merge")->needs("--emit")->excludes("--from")->excludes("--quick")->excludes("--budget")
      ->excludes("--op")->excludes("--workload")->excludes("--isa")
      ->excludes("--emit-asm")->excludes("--patch-table")->excludes("--report")->excludes("--emit-lib");
  app.get_option("--show")->excludes("--from")->excludes("--emit")->excludes("--merge")->excludes("--quick")
      ->excludes("--budget")->excludes("--op")
      ->excludes("--emit-asm")->excludes("--patch-table")->excludes("--report");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 1;
  }

  if (list_params) {
    std::cout << "Tunable parameters (CopyParams; JSON field names):\n" << describe_params();
    return 0;
  }
  std::string command;
  for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(i ? argv[i] : "autotune");
  if (!show_path.empty()) return show(show_path);
  if (!merge_paths.empty()) return merge(merge_paths, emit_path, command, quiet);
  if (app.get_option("--name")->count() && !valid_asm_symbol(asm_symbol))
    return usage_error("--name \"" + asm_symbol + "\" is not a symbol GNU as takes: letters, digits, _ . $, "
                       "not starting with a digit");
  if (cold && (workload_name == "seeds" || workload_name == "misaligned"))
    return usage_error("--cold applies to size-distribution workloads; the " + workload_name +
                       " points are timed hot (use --workload MemcpyGoogleA or a FILE.csv)");
  for (auto [option, path] : {std::pair<const char*, const std::string*>{"--emit", &emit_path}, {"--svg", &svg_path}})
    if (!path->empty())
      if (auto st = check_output(option, *path); !st) return fail(st.error());
  if (!asm_path.empty() && !from_path.empty())
    if (auto st = check_asm_output(asm_path, from_path); !st) return fail(st.error());
  if ((!asm_path.empty() || patch_table || !lib_dir.empty()) && from_path.empty()) {
    std::cerr << "autotune: " << (patch_table ? "--patch-table" : !lib_dir.empty() ? "--emit-lib" : "--emit-asm")
              << " works on a tuned routine: give its wisdom file with --from best.json (autotune --emit "
                 "best.json makes one)\n";
    return 1;
  }

  auto progress = [&](const std::string& s) {
    if (!quiet) std::cerr << s << "\n" << std::flush;
  };

  CpuInfo cpu = CpuInfo::host();
  if (isa != "host") {
    const IsaLevel level = *parse_isa_level(isa);
    const IsaFeatures capped = cpu.features().capped(level);
    if (capped.max_vector_bytes() < IsaFeatures::for_level(level).max_vector_bytes())
      return fail(make_error(ErrorCode::kUnsupportedIsa,
                             "--isa " + isa + " is above what this CPU runs (" + cpu.features().to_string() +
                                 "); pick a lower level or `host`"));
    cpu = cpu.capped(level);
  }
  progress(cpu.describe());

  // The operations to work on, in order.
  std::vector<Operation> ops;
  const bool ops_given = app.get_option("--op")->count() > 0;
  for (const auto& name : op_names) {
    if (name == "all") {
      ops = {Operation::kMemcpy, Operation::kMemmove, Operation::kFill, Operation::kClearPage};
      break;
    }
    for (std::size_t k = 0; k < spec::Operation::choices.size(); ++k)
      if (spec::Operation::names[k] == (name == "memset" ? "fill" : name) &&
          std::find(ops.begin(), ops.end(), spec::Operation::choices[k]) == ops.end())
        ops.push_back(spec::Operation::choices[k]);
  }
  if (!asm_path.empty()) {  // writing a file: no matching host, no timing
    // One host's wisdom: a single-host file, or of a fleet this CPU's host (or its only one).
    auto fleet = load_fleet(from_path);
    if (!fleet) return fail(fleet.error());
    auto w = fleet->hosts.size() == 1 ? Result<Wisdom>(fleet->hosts.front()) : select_host(*fleet, cpu);
    if (!w)
      return fail(make_error(w.error().code, from_path + ": --emit-asm writes one host's routine and this CPU is not "
                                                         "in the fleet: " + w.error().message +
                                                         "; run it with that host's own wisdom file"));
    auto e = entry_for_asm(*w, from_path, ops, ops_given);
    if (!e) return e.error().code == ErrorCode::kInvalidArgument ? usage_error(e.error().message) : fail(e.error());
    return emit_asm_file(*w, **e, {from_path, asm_path, flavor, asm_symbol, target, shell_line(argc, argv)}, cpu,
                         progress);
  }
  if (!lib_dir.empty()) {  // the ahead-of-time library: this CPU's wisdom, verified here
    auto w = load_wisdom_for(from_path, cpu);
    if (!w) return fail(w.error());
    if (ops_given)
      std::erase_if(w->entries, [&](const WisdomEntry& e) {
        return std::find(ops.begin(), ops.end(), e.operation) == ops.end();
      });
    LibraryOptions lo;
    lo.dir = lib_dir;
    lo.wisdom_path = from_path;
    lo.command = shell_line(argc, argv);
    lo.guard_signature = lib_guard;
    lo.progress = progress;
    auto r = write_tuned_library(*w, lo, cpu);
    if (!r) return fail(r.error());
    std::string what;
    for (const auto& x : r->routines) what += " " + x;
    progress("wrote " + r->files[0] + " and " + r->files[1] + " (" + r->files[2] + " says how to deploy them):" + what +
             "; the guard accepts " + r->guard_signature);
    return 0;
  }
  const auto heading = [&](Operation op, std::size_t count) {
    if (count > 1) std::cout << (op == ops.front() ? "" : "\n") << "== " << name_of(op) << " ==\n";
  };

  if (!from_path.empty()) {
    auto w = load_wisdom_for(from_path, cpu);  // a single-host file, or this CPU's host in a fleet
    if (!w) return fail(w.error());
    Wisdom out = *w;
    out.entries.clear();
    std::vector<const WisdomEntry*> entries;
    for (const auto& e : w->entries)
      if (!ops_given || std::find(ops.begin(), ops.end(), e.operation) != ops.end()) entries.push_back(&e);
    if (entries.empty()) {
      std::string want, held;
      for (Operation op : ops) want += (want.empty() ? "" : ", ") + std::string(name_of(op));
      for (const auto& e : w->entries) held += (held.empty() ? "" : ", ") + std::string(name_of(e.operation));
      return fail(make_error(ErrorCode::kWisdomMismatch, from_path + " has no " + want + " entry (it holds " +
                                                             (held.empty() ? "none" : held) + "); tune it with autotune --op " +
                                                             want + " --emit " + from_path));
    }
    for (const WisdomEntry* e : entries) {
      auto r = build_entry(*w, *e, cpu);
      if (!r) return fail(make_error(r.error().code, from_path + ": " + r.error().message));
      progress("loaded " + from_path + ": " + r->name() + " (" + std::to_string(r->size()) +
               " bytes of code, identical to the tuned one); verifying");
      if (auto st = check_routine(*r); !st) return fail(st.error());
      // The entry's own workload unless --workload says otherwise ("NAME (cold)" for cold ones).
      std::string wname = app.get_option("--workload")->count() ? workload_name : e->workload;
      bool wcold = cold;
      if (const std::string suffix = " (cold)"; wname.size() > suffix.size() &&
                                                 wname.compare(wname.size() - suffix.size(), suffix.size(), suffix) == 0) {
        wname.resize(wname.size() - suffix.size());
        wcold = true;
      }
      if (wname.empty()) wname = "seeds";
      auto wl = make_workload(wname, e->operation, wcold);
      if (!wl) return wl.error().code == ErrorCode::kInvalidArgument ? usage_error(wl.error().message) : fail(wl.error());
      const Workload& workload = *wl;
      progress("verified; measuring " + (workload.is_distribution() ? workload.name
                                                                     : std::to_string(workload.points.size()) + " points"));
      if (show_plan) std::cerr << to_string(r->plan());
      heading(e->operation, entries.size());
      if (report) {
        ReportOptions ro;
        ro.progress = progress;
        if (!svg_path.empty()) {
          ro.svg_path = svg_path;
          if (e != entries.front()) {
            const auto dot = svg_path.rfind('.');
            const std::string suffix = "-" + std::string(name_of(e->operation));
            ro.svg_path = dot == std::string::npos ? svg_path + suffix : svg_path.substr(0, dot) + suffix + svg_path.substr(dot);
          }
        }
        std::optional<Routine> other;  // --versus: the same operation from another file
        if (!versus_path.empty()) {
          auto vw = load_wisdom_for(versus_path, cpu);
          if (!vw) return fail(make_error(vw.error().code, "--versus " + versus_path + ": " + vw.error().message));
          const WisdomEntry* ve = vw->find(e->operation);
          if (!ve)
            return fail(make_error(ErrorCode::kWisdomMismatch, versus_path + " has no " +
                                                                   std::string(name_of(e->operation)) + " entry"));
          auto vr = Routine::build(ve->plan, cpu);
          if (!vr) return fail(vr.error());
          if (auto st = check_routine(*vr); !st) return fail(st.error());
          other.emplace(std::move(vr).value());
          ro.others.push_back({std::filesystem::path(versus_path).filename().string(), &*other});
          progress("--versus: " + other->name() + " from " + versus_path + ", verified");
        }
        std::optional<ReportTable> seeds_t, misaligned_t, dist_t, uses_t;
        double read_gbps = 0;
        if (!workload.is_distribution()) {
          ReportTable& t = seeds_t.emplace(report_points(*r, workload, ro));
          t.aligned_ratio = workload.name == "misaligned";
          std::cout << workload.name << " matrix, GB/s (higher is better):\n" << t.format() << std::flush;
          for (const auto& row : t.rows)
            if (row.point.size >= (std::uint64_t{64} << 20) && row.point.src_align == 0 && row.point.dst_align == 0) {
              read_gbps = read_bandwidth_gbps();
              char b[160];
              std::snprintf(b, sizeof b, "64 MiB: tuned %.2f GB/s; this machine streams reads at %.2f GB/s (the limit)\n",
                            row.value.back(), read_gbps);
              std::cout << b << std::flush;
            }
          if (!ro.svg_path.empty()) {
            std::string err;
            if (!write_speedup_svg(t, std::string(name_of(e->operation)) + " on " + cpu.brand() + ": tuned vs glibc",
                                   ro.svg_path, &err))
              return fail(make_error(ErrorCode::kInvalidArgument, err));
            progress("wrote " + ro.svg_path);
          }
          if (e->operation != Operation::kClearPage && workload.name == "seeds") {
            ReportTable& m = misaligned_t.emplace(report_points(*r, misaligned_workload(e->operation), ro));
            m.aligned_ratio = true;
            std::cout << "\nmisaligned destination, GB/s (vs aligned: tuned / tuned at dst offset 0):\n"
                      << m.format() << std::flush;
          }
        }
        if (e->operation != Operation::kClearPage && workload.name == "seeds") {
          const ReportTable& u = uses_t.emplace(report_uses(*r, ro));
          std::cout << "\nthe copy being used, 64 KiB-64 MiB, GB/s (higher is better; the use's time included: "
                       "copy+read loads every line of dst afterwards, copy+write stores to every line of src; "
                       "warm: src just written and dst just read, cold: both flushed):\n"
                    << u.format() << std::flush;
        }
        if (e->operation == Operation::kMemcpy || e->operation == Operation::kMemmove) {
          const ReportTable& d = dist_t.emplace(report_distributions(
              *r, workload.is_distribution() ? std::vector<std::string>{workload.distribution->name} : production_distributions(),
              ro));
          std::cout << "\nproduction size distributions, ns per call (lower is better):\n" << d.format() << std::flush;
        }
        std::cout << "\n"
                  << format_targets(seeds_t && workload.name == "seeds" ? &*seeds_t : nullptr,
                                    misaligned_t                            ? &*misaligned_t
                                    : seeds_t && workload.name == "misaligned" ? &*seeds_t
                                                                               : nullptr,
                                    dist_t ? &*dist_t : nullptr, read_gbps, uses_t ? &*uses_t : nullptr)
                  << std::flush;
        out.entries.push_back(*e);
        continue;
      }
      if (patch_table) {  // the seeds' matrix, whatever the entry was tuned on
        const Workload seeds = seeds_workload(e->operation);
        const auto points = measure_table(*r, seeds, 11, progress);
        std::cout << format_patch_table(points, std::string(name_of(e->operation)) + " on " + cpu.brand() + ": old = " +
                                                    baseline_name(e->operation) + " (glibc " + gnu_get_libc_version() +
                                                    "), new = copysynth " + r->name() +
                                                    ";\nns per call (TSC), medians of 3 passes x 11 rounds, both "
                                                    "measured in the same run; speedup = old / new")
                  << std::flush;
        out.entries.push_back(*e);
        continue;
      }
      const auto points = measure_table(*r, workload, 11, progress);
      std::cout << format_table(points, e->operation) << std::flush;
      WisdomEntry ne = *e;
      ne.points = points;
      out.entries.push_back(ne);
    }
    if (!emit_path.empty()) {
      out.created = utc_now();
      out.command = command;
      if (auto st = write_wisdom_keeping(out, emit_path, cpu, progress); !st) return fail(st.error());
    }
    return 0;
  }

  Wisdom w;
  set_cpu(w, cpu);
  w.created = utc_now();
  w.command = command;
  for (Operation op : ops) {
    auto wl = make_workload(workload_name, op, cold);
    if (!wl) return wl.error().code == ErrorCode::kInvalidArgument ? usage_error(wl.error().message) : fail(wl.error());
    const Workload& workload = *wl;
    TuneOptions opt;
    opt.operation = op;
    opt.budget_seconds = quick ? std::min(budget, 6.0) : budget;
    opt.seed = seed;
    opt.quick = quick;
    opt.cpu = cpu;
    opt.progress = progress;
    auto result = tune(workload, opt);
    if (!result) return fail(result.error());
    const TuneResult& r = *result;
    progress("done in " + std::to_string(static_cast<int>(r.stats.seconds + 0.5)) + " s: " +
             std::to_string(r.stats.built) + " candidates built, " + std::to_string(r.stats.rejected) +
             " rejected by verification, " + std::to_string(r.stats.timed) + " timed, " +
             std::to_string(r.stats.verify_cases) + " verification cases");
    progress("winner: " + r.routine.name() + "\n  params: " + to_string(r.routine.params()));
    if (show_plan) std::cerr << to_string(r.routine.plan());
    heading(op, ops.size());
    std::cout << format_table(r.points, op) << std::flush;
    if (const double g = geomean_speedup(r.points); g < 1.0) {
      char b[64];
      std::snprintf(b, sizeof b, "%.2fx", g);
      std::cerr << "autotune: warning: the " << name_of(op) << " winner is " << b << " the speed of the "
                << baseline_name(op) << " on this workload" << (quick ? "; try without --quick" : "")
                << " or with a larger --budget, or keep the system routine\n";
    }
    w.entries.push_back(wisdom_entry(r, workload.name));
  }
  if (!emit_path.empty())
    if (auto st = write_wisdom_keeping(w, emit_path, cpu, progress); !st) return fail(st.error());
  return 0;
}
