// copysynth — wisdom: the tuned routines of one host, stored as JSON (best.json).
//
// As FFTW's wisdom (kernel/planner.c), a file carries the signature of the configuration it was
// made on, and import refuses another CPU model or a host that lacks a feature the signature
// records (check_cpu; a capped-ISA file of this very model is accepted); a malformed file is
// rejected as a whole and changes nothing. Layout (schema 1):
//
//   { "schema": 1, "generator_version": "0.2.0", "created": "2026-11-29T23:59:59Z",
//     "command": "autotune --emit best.json",
//     "cpu": { "signature": "...", "vendor": "...", "brand": "...", "family": 26, "model": 2,
//              "stepping": 1, "features": "sse2,avx,..." },
//     "entries": [ { "operation": "memcpy", "workload": "seeds",
//                    "params": { ...CopyParams... },
//                    "plan": { "ladder": "vector", "vector_width": 32, "classes": [...] },
//                    "code_fnv1a64": "0123456789abcdef",
//                    "points": [ { "size": 4096, "src_align": 0, "dst_align": 4,
//                                  "baseline_gbps": 1.7, "tuned_gbps": 60.1,
//                                  "baseline_ns": 2409.0, "tuned_ns": 68.2 } ] } ] }
// A distribution workload's point also has "label" (the distribution's name); "size" is then
// the mean bytes per call. A point measured with hardware counters also has "cycles",
// "instructions" and "cache_misses" (per call; all three, or none). A point's measured figures
// (GB/s, ns, counters) are written rounded to 4 significant digits (to_json): they are medians
// that move by a percent from run to run.
//
// Optional (absent in older files), the verdicts of `autotune --app 'COMMAND' --runs N`: a real
// program timed with the system routines and with the tuned ones (AppVerdict below):
//
//     "app_verdicts": [ { "operation": "memmove", "command": "sqlite3 :memory: < q.sql", "runs": 7,
//                         "with": "lib", "glibc_ms": 812.3, "tuned_ms": 815.6, "ratio": 1.004,
//                         "spread": 0.006, "kept": false, "date": "2026-12-01T21:00:00Z" } ]
//
// An operation whose verdict is not kept has no entry (so every reader, older copysynth versions
// included, leaves it to the system routine); its verdict stays. Readers that do not know the key
// ignore it (wisdom_from_json reads only the keys it knows), so the schema stays 1.
//
// A fleet file (schema 2, `autotune --merge a.json b.json --emit fleet.json`) holds the wisdom of
// several CPUs, each a complete schema-1 document as above, keyed by its cpu.signature:
//
//   { "schema": 2, "generator_version": "0.1.0", "created": "...", "command": "autotune --merge ...",
//     "hosts": [ { "schema": 1, "cpu": { "signature": "AuthenticAMD-26-2:...", ... }, "entries": [...] },
//                { "schema": 1, "cpu": { "signature": "GenuineIntel-6-143:...", ... }, "entries": [...] } ] }
//
// Single-host files stay schema 1 (copysynth 0.1 reads them); a reader of schema 1 only refuses a
// fleet file by its schema number instead of misreading it. load_fleet() and load_wisdom_for()
// read both; select_host() picks the document of the CPU a program runs on.
//
// Throughput is in GB/s = 1e9 bytes per second; sizes and alignments in bytes.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "copysynth/cpu.hpp"
#include "copysynth/plan.hpp"
#include "copysynth/routine.hpp"
#include "copysynth/version.h"

namespace copysynth {

/// Schema of a single-host wisdom document (one CPU's entries).
inline constexpr int kWisdomSchema = 1;
/// Schema of a fleet file: an array of single-host documents, one per CPU signature.
inline constexpr int kFleetSchema = 2;

/// One measured point of the workload (GB/s = 1e9 bytes/s, medians).
struct MeasuredPoint {
  std::uint64_t size = 0;        ///< bytes copied per call (a distribution: the mean, rounded)
  std::uint32_t src_align = 0;   ///< src offset from a page (4096-byte) boundary, 0..4095 (bytes)
  std::uint32_t dst_align = 0;   ///< dst offset from a page (4096-byte) boundary, 0..4095 (bytes)
  double baseline_gbps = 0;      ///< the system routine, same run
  double tuned_gbps = 0;         ///< the tuned routine
  double baseline_ns = 0;        ///< ns per call of the system routine (0 if not recorded)
  double tuned_ns = 0;           ///< ns per call of the tuned routine (0 if not recorded)
  std::string label;             ///< a distribution workload's name; empty for a point
  double cycles = 0;             ///< tuned routine, core cycles per call (0: no PMU)
  double instructions = 0;       ///< tuned routine, instructions per call (0: no PMU)
  double cache_misses = 0;       ///< tuned routine, LLC misses per call (0: no PMU)
  bool operator==(const MeasuredPoint&) const = default;
};

struct WisdomEntry {
  Operation operation = Operation::kMemcpy;
  std::string workload;          ///< what it was tuned for ("seeds", ...)
  CopyPlan plan;                 ///< params + ladder + class weights: rebuilds the same bytes
  std::uint64_t code_hash = 0;   ///< FNV-1a 64 of the routine's bytes when it was tuned
  std::vector<MeasuredPoint> points;
};

/// What a real program said about one tuned operation (`autotune --app 'COMMAND' --runs N`): its
/// wall time with the system routine and with the tuned one, alternating, N runs each.
struct AppVerdict {
  Operation operation = Operation::kMemcpy;  ///< memcpy, memmove or fill (memset)
  std::string command;       ///< the shell command timed (/bin/sh -c COMMAND)
  unsigned runs = 0;         ///< rounds timed (each: the system routines and the candidates once)
  std::string with;          ///< how the tuned routine was put in: "lib" (libcopysynth-tuned.so) or "shim"
  double glibc_ms = 0;       ///< median wall time with the system routines (ms)
  double tuned_ms = 0;       ///< median wall time with only this operation tuned (ms)
  double ratio = 0;          ///< median over rounds of tuned / glibc time in the same round (< 1: faster)
  double spread = 0;         ///< median absolute deviation of those ratios
  bool kept = false;         ///< the tuned routine stays (entry present); false: the system routine
  std::string date;          ///< UTC, ISO 8601, when it was judged
  bool operator==(const AppVerdict&) const = default;
};

struct Wisdom {
  int schema = kWisdomSchema;
  std::string generator_version = COPYSYNTH_VERSION;
  std::string created;           ///< UTC, ISO 8601
  std::string command;           ///< command line that produced it
  std::string cpu_signature;     ///< CpuInfo::signature() of the tuning host
  std::string cpu_vendor, cpu_brand, cpu_features;
  unsigned cpu_family = 0, cpu_model = 0, cpu_stepping = 0;
  std::vector<WisdomEntry> entries;
  std::vector<AppVerdict> app_verdicts;  ///< one per operation at most ("app_verdicts"; may be empty)

  /// The entry for `op`, or nullptr.
  const WisdomEntry* find(Operation op) const;
  /// The app verdict for `op`, or nullptr.
  const AppVerdict* find_verdict(Operation op) const;
  /// True when an app verdict says the system routine is kept for `op` (kept = false): an entry
  /// of `op` from another file must not be carried into this one (save_wisdom_keeping, merge_fleets).
  bool dropped_by_app(Operation op) const;
};

/// Fills the cpu_* fields from `cpu`.
void set_cpu(Wisdom& w, const CpuInfo& cpu);

/// The schema-1 document of `w` (layout above). Each point's measured figures are rounded to 4
/// significant digits (|v| >= 1.7975e308, whose rounding overflows, is kept as it is), so
/// wisdom_from_json(to_json(w)) gives them rounded; everything else comes back exactly. Never
/// fails.
nlohmann::json to_json(const Wisdom& w);

/// Parses and checks a whole document. Every entry's params must pass their domain checks and
/// its plan must be what the named ladder builds from those params (vector width, class bounds,
/// strategies and blocks; the weights are taken from the file). Errors: kWisdomMalformed (names
/// the JSON path, e.g. "entries[0].params.unroll"), kInvalidParams (a value out of its domain),
/// kWisdomMismatch (schema version, unknown ladder or operation, a plan these params do not give).
Result<Wisdom> wisdom_from_json(const nlohmann::json& j);

/// The largest wisdom file read (wisdom files are a few KB; a fleet of many CPUs tens of KB).
inline constexpr std::uint64_t kMaxWisdomBytes = std::uint64_t{64} << 20;

/// The deepest nesting of JSON containers a wisdom or fleet file is read with (load_wisdom,
/// load_fleet): autotune's wisdom files nest 6 deep (down to a size class's weights in the plan)
/// and its fleet files 8. A deeper file is refused before it is parsed, since the parser's time
/// and memory grow with the depth: 4 MB of `[` took 1.5 s and 300 MB at each process start under
/// the LD_PRELOAD shim before this check, 0.02 s and 6 MB with it (a file at kMaxWisdomBytes:
/// 0.4 s, reading it), on a 2-core AMD EPYC (family 26) VM.
inline constexpr std::size_t kMaxWisdomDepth = 64;

/// The deepest nesting of containers (arrays and objects) in `text`, scanned lexically: strings
/// are stepped over with their escapes, and the scan stops at the first byte that makes the depth
/// exceed `stop_above` (returning stop_above + 1) or at the end of the text. Brackets need not
/// match (each `]` or `}` closes one level, none below zero): the parser judges the text after.
std::size_t json_nesting_depth(std::string_view text, std::size_t stop_above);

/// Whether a read keeps each entry's measured points (WisdomEntry::points: the table autotune
/// measured, which `--from`, `--show` and the report use). kSkip drops them while parsing, for a
/// program that only installs the routines (install_wisdom, the LD_PRELOAD shim): of a 51 KB
/// three-entry file, the points are all but 6 KB, and lexing the text took 0.28-0.32 ms of a
/// 0.34-0.38 ms parse on a 2-core AMD EPYC (family 26) VM (docs/perf/startup-check/README.md). With
/// kSkip their arrays are checked against JSON's grammar and emptied in the text before the parse
/// (cut_entry_points), so their numbers are never converted and their schema is not checked; the
/// rest of the file is checked as with kKeep, and text that is not JSON is refused either way
/// (parse_wisdom_text says which members are left out).
enum class WisdomPoints : bool { kKeep, kSkip };

/// The text of a wisdom or fleet file as load_wisdom and load_fleet parse it (nlohmann, no
/// exceptions): a discarded value (is_discarded()) when it is not JSON, with either WisdomPoints
/// (tests/fuzz_wisdom.cpp checks that they agree). With kSkip the member "points" of every object
/// that is an element of an array named "entries" (a document's entries, a fleet's hosts'
/// entries) is left out, its array emptied in the text first (cut_entry_points) and the member
/// erased after the parse; the result is the kKeep document without those members. A "points"
/// anywhere else is kept (and refused where the schema has no such field, e.g.
/// in params).
nlohmann::json parse_wisdom_text(std::string_view text, WisdomPoints points);

/// `text` with the value of each "points" member of an element of an array named "entries"
/// replaced by `[]` where it is an array: what parse_wisdom_text(kSkip) parses, so that the
/// numbers of the measured points are never converted. The text around the arrays is scanned
/// lexically (strings stepped over with their escapes, brackets matched); each array is emptied
/// only when it is one JSON value by the grammar nlohmann reads (RFC 8259: strings with UTF-8 and
/// \u surrogates checked as nlohmann's lexer checks them, escapes, numbers, literals, nesting),
/// and nothing is cut where in doubt (a number that might overflow a double). Every other byte is
/// kept, so the result is JSON exactly when `text` is. A key spelled with escapes is not
/// recognised, and its array is left to the parser as it is; so is an array that is not JSON or
/// in doubt, and so is one that begins inside such an array (not read again); the others after
/// it are still emptied. std::nullopt when there is nothing to empty (no
/// such array, or only empty ones), or when a string is not closed or brackets do not match (the
/// text is then parsed as it is).
std::optional<std::string> cut_entry_points(std::string_view text);

/// What scan_entry_points finds in one pass over a wisdom file's text.
struct EntryPointsScan {
  /// cut_entry_points(text); std::nullopt also when the scan stopped at the depth limit.
  std::optional<std::string> cut;
  /// json_nesting_depth(text, stop_above) where depth_known; otherwise the depth up to where the
  /// scan stopped (brackets that do not match), a lower bound.
  std::size_t deepest = 0;
  bool depth_known = true;
};

/// cut_entry_points and json_nesting_depth in one pass, as the loaders read with
/// WisdomPoints::kSkip (0.61M of the 2.64M instructions of /bin/true under the shim with a 51 KB
/// file were the second pass; docs/perf/startup-check/scan-pass.txt). The scan stops, with no cut,
/// at the first byte that makes the depth exceed `stop_above` (deepest = stop_above + 1), and
/// where brackets do not match (depth_known = false: json_nesting_depth reads on where the scan
/// cannot). tests/fuzz_wisdom.cpp checks both results against the two functions.
EntryPointsScan scan_entry_points(std::string_view text, std::size_t stop_above);

/// Reads and parses `path`. kWisdomIo when it cannot be read, and, without reading it, when it is
/// not a regular file (a directory, a FIFO, a device: the message says which) or is larger than
/// kMaxWisdomBytes (read_regular_file, file_io.hpp); kInvalidArgument for an empty path;
/// kWisdomMalformed for an empty file ("FILE is empty (0 bytes)", or only white space), a file
/// nested more than kMaxWisdomDepth deep (refused before the parse), a file that is not JSON, or a profile (COPYSYNTH_PROFILE's JSON Lines,
/// starts_with_profile_record: "FILE is a profile, not a wisdom file; use --workload
/// profile:FILE ..."); otherwise wisdom_from_json's errors prefixed with the path. `points`:
/// WisdomPoints (kSkip: entries without their measured points, which are checked to be JSON but
/// not against the schema).
Result<Wisdom> load_wisdom(const std::string& path, WisdomPoints points = WisdomPoints::kKeep);

/// Writes `w` to `path` atomically, pretty-printed: into a new temporary file "PATH.XXXXXX" in the
/// same directory (mkstemp: a unique name, so no other file is touched), flushed with fsync, then
/// renamed over `path`; the file keeps the permissions of the one it replaces. A symbolic link at
/// `path` is written through: the file it points to is replaced and the link stays (write_target,
/// file_io.hpp). kWisdomIo on failure, with the temporary file removed and `path` unchanged.
Status save_wisdom(const Wisdom& w, const std::string& path);

/// kWisdomMismatch unless `w` may run on `cpu`: made on a CPU of `cpu`'s signature, or on the same
/// vendor, family and model with features that are a subset of `cpu`'s (wisdom tuned with a
/// capped ISA, `autotune --isa avx2`, on this CPU: its routines use only the features it records;
/// signature_runs_on, cpu.hpp). Another model, or a feature `cpu` lacks, is refused; the message
/// names both signatures and why, and says to re-run autotune on this host.
Status check_cpu(const Wisdom& w, const CpuInfo& cpu);

/// The wisdom of several CPUs (a fleet): one single-host document per CPU signature.
struct Fleet {
  int schema = kFleetSchema;     ///< of the document it was read from: kWisdomSchema for a single-host file
  std::string generator_version = COPYSYNTH_VERSION;
  std::string created;           ///< UTC, ISO 8601 (of the merge)
  std::string command;           ///< command line that produced it
  std::vector<Wisdom> hosts;     ///< signatures unique; each a valid schema-1 document

  /// The host document with exactly this CPU signature, or nullptr (select_host also accepts a
  /// compatible one).
  const Wisdom* find(const std::string& signature) const;
};

/// Schema 2 JSON: the header and "hosts", each host as to_json(Wisdom) gives it.
nlohmann::json to_json(const Fleet& f);

/// Parses a schema-1 document (a fleet of one host, header copied from it) or a schema-2 fleet.
/// A fleet must hold at least one host; each host is checked as wisdom_from_json does, with errors
/// naming the path ("hosts[1].entries[0].params.unroll"); a second host with the same signature is
/// kWisdomMalformed. Other schema numbers: kWisdomMismatch.
Result<Fleet> fleet_from_json(const nlohmann::json& j);

/// Reads and parses `path` as fleet_from_json does; errors as load_wisdom's (the same checks
/// before reading: a regular file of at most kMaxWisdomBytes). `points`: as load_wisdom's.
Result<Fleet> load_fleet(const std::string& path, WisdomPoints points = WisdomPoints::kKeep);

/// Writes `f` to `path` atomically as a schema-2 file, as save_wisdom does. kWisdomIo on failure.
Status save_fleet(const Fleet& f, const std::string& path);

/// The index in f.hosts of the host document for CPU `signature`: the one with exactly that
/// signature; else one that may run there as check_cpu accepts it (the same CPU model tuned with a
/// capped ISA), the one with the most features if several, the first in the file if tied.
/// kWisdomMismatch when there is none: for a fleet of one host check_cpu's message, otherwise a
/// message listing the signatures the fleet holds.
Result<std::size_t> select_host_index(const Fleet& f, const std::string& signature);

/// The host document select_host_index picks, or its error.
Result<Wisdom> select_host(const Fleet& f, const std::string& signature);
Result<Wisdom> select_host(const Fleet& f, const CpuInfo& cpu);

/// load_fleet(path) then select_host(cpu): the wisdom a program on `cpu` should use, from a
/// single-host or a fleet file. Errors are prefixed with the path. `points`: as load_wisdom's.
Result<Wisdom> load_wisdom_for(const std::string& path, const CpuInfo& cpu = CpuInfo::host(),
                               WisdomPoints points = WisdomPoints::kKeep);

/// Combines fleets (or single-host documents read with load_fleet) keyed by CPU signature, in
/// order: a signature seen again adds its entries, and an entry for an operation already present
/// replaces the earlier one (so a re-tuned host's file given last wins); that host's header
/// (created, command, generator version, CPU description) is then the later file's. Hosts keep the
/// order in which their signature first appeared, entries the order of their operation's first
/// appearance. App verdicts (AppVerdict) follow the same rule, and a later verdict with kept =
/// false removes the earlier entry of its operation (the program preferred the system routine);
/// an earlier verdict is dropped when the later file has an entry of its operation (it judged
/// another routine). One line per replaced entry goes to `notes` (when given), naming the input by
/// `names[i]` (e.g. its path) or "input i+1": "AuthenticAMD-26-2:...: memcpy replaced by the
/// entry of b.json". The result's header (created, command) is left for the caller to set.
Fleet merge_fleets(const std::vector<Fleet>& inputs, std::vector<std::string>* notes = nullptr,
                   const std::vector<std::string>& names = {});

/// A name for setting `path` aside that no file has yet: "PATH.bak", else "PATH.bak.1", ".2", ...
std::string free_backup_name(const std::string& path);

/// True for a regular file that holds nothing but white space (or nothing), at most
/// kMaxWisdomBytes: what load_wisdom calls "empty", which a writer may write over without a
/// backup. False for anything else (a FIFO or a device is not opened), or when it cannot be read.
bool blank_file(const std::string& path);

/// Writes this CPU's wisdom `w` (a single-host document made on `cpu`) to `path` without losing
/// what a file already there holds — the rule `autotune --emit` follows:
///   - no file at `path`: `w` is written as it is (schema 1);
///   - a fleet file (schema 2, however many hosts): `w` joins it as merge_fleets() combines
///     them — this CPU's host document takes `w`'s entries (one of the same operation replaced,
///     the others kept) and `w`'s header, the other hosts stay as they were — and the file is
///     written as a fleet whose `created` is `w.created`;
///   - wisdom that may run on `cpu` (check_cpu passes): its entries for operations `w` lacks are
///     kept, after `w`'s own, but for an operation `w` has a kept = false app verdict for
///     (dropped_by_app: the program was not faster with it); its app verdicts for operations `w`
///     has neither an entry nor a verdict for are kept too; the header is `w`'s;
///   - an empty file, or one of white space only (what load_wisdom calls "empty"): written over,
///     no backup (it holds nothing to keep);
///   - anything else (another CPU's wisdom, a file that is not wisdom at all): the file is first
///     renamed to free_backup_name(path), so nothing is overwritten, and then `w` is written.
/// When `path` is a symbolic link, all of this applies to the file it points to
/// (write_target, file_io.hpp), and the link stays; PATH in the lines below is that file.
/// Each step is said through `progress` (when set), one line each: "kept the fill entry of PATH",
/// "moved the existing PATH to PATH.bak: <why it could not be merged>", "wrote this CPU's entries
/// into the fleet file PATH (2 CPUs; the others unchanged)", "wrote PATH".
/// Errors: kWisdomIo when `path` is a directory, when the existing file cannot be renamed (then
/// nothing is written) or when the file cannot be written (save_wisdom, save_fleet).
Status save_wisdom_keeping(Wisdom w, const std::string& path, const CpuInfo& cpu,
                           const std::function<void(const std::string&)>& progress = {});

/// Builds the routine of entry `e` (of the document `w`) for `cpu` and checks that its code is
/// byte-identical to the code that was tuned (code_fnv1a64). This check, not generator_version,
/// decides whether another copysynth version's wisdom is used: accepted when this generator emits
/// the same bytes for the plan, kWisdomMismatch (naming both versions, saying to re-run
/// autotune) when it emits different code. Errors of Routine::build otherwise
/// (kUnsupportedIsa when `cpu` cannot run the params). Does not verify: check_routine() or
/// install() must pass before the routine is used.
Result<Routine> build_entry(const Wisdom& w, const WisdomEntry& e, const CpuInfo& cpu = CpuInfo::host());

/// FNV-1a 64-bit hash of a byte string (identifies a routine's code in wisdom).
std::uint64_t fnv1a64(const std::vector<std::uint8_t>& bytes) noexcept;

}  // namespace copysynth
