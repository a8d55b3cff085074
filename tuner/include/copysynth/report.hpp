// copysynth — the performance report: a tuned routine against every peer, in one process.
//
// `autotune --from best.json --report` prints, for each operation in the wisdom file:
//   1. the seeds' table with a GB/s column per peer (peers.hpp: glibc, rep_movsb, avx2_loop,
//      avx2_nt_loop, dpdk where built), the tuned routine, and its ratio to the best peer and to
//      glibc at each point — every routine of a point timed interleaved, round by round, three
//      passes over the matrix, medians;
//   2. the eight production size distributions (replayed call sequences, ns per call, hot
//      cache, then each again cold: report_distributions()) with the same columns and the
//      geometric means; for a distribution or profile workload (`--workload profile:FILE`), that
//      workload's own calls instead (report_replays());
//   3. the misaligned-destination matrix (workload.hpp, misaligned_workload(): 4 KiB..512 KiB at
//      dst offsets 0, 1, 4, 15, 33 past a page-aligned src, and 4, 33 past with src 2048 past)
//      with the tuned routine's ratio to its own aligned copy;
//   4. for 64 MiB, this machine's read bandwidth (a streaming read of 64 MiB) beside the copy
//      rates: the limit a large copy can approach;
//   5. the performance targets (docs/performance.md), each "met" or "MISSED" with the figure behind it;
// and, with an SVG path, a plot of the tuned routine's speedup over glibc against the length,
// one line per src/dst alignment.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "copysynth/routine.hpp"
#include "copysynth/timing.hpp"
#include "copysynth/wisdom.hpp"
#include "copysynth/workload.hpp"

namespace copysynth {

/// A routine timed beside the peers that is not a peer: another wisdom file's routine
/// (`autotune --report --versus FILE`), to compare two tunings in one run.
struct OtherRoutine {
  std::string name;              ///< column name (the file's name)
  const Routine* routine = nullptr;
};

struct ReportOptions {
  unsigned rounds = 7;       ///< timed rounds per point and pass
  unsigned passes = 3;       ///< passes over the workload; medians across passes. Each pass of a
                             ///< point workload gets freshly mapped buffers, so one lucky or
                             ///< unlucky physical placement does not decide a figure
  std::vector<OtherRoutine> others;  ///< columns between the peers and "tuned"; not peers
  std::string svg_path;      ///< run_report(): write the speedup plot here (empty: no plot; a
                             ///< distribution or profile workload has no point table to plot,
                             ///< said through `progress`)
  std::string svg_title;     ///< run_report(): the plot's title (empty: "OPERATION: tuned vs glibc")
  std::function<void(const std::string&)> progress;
};

/// One row of a report: a point or a distribution, with a figure per routine (GB/s for points,
/// ns per call for distributions) in the order of `ReportTable::columns`.
struct ReportRow {
  std::string label;          ///< "4096 0/4", "MemcpyGoogleA", "1M copy+read warm"
  Point point;                ///< for point rows
  std::vector<double> value;  ///< per column: GB/s (points) or ns per call (distributions)
  Use use = Use::kCopy;       ///< what followed each call (report_uses(); distributions: kThenRead
                              ///< for the read-back replay)
  CacheState state = CacheState::kAsLeft;  ///< the cache state each batch started from
};

struct ReportTable {
  std::vector<std::string> columns;  ///< peer names, then other routines, then "tuned"
  std::size_t peers = 0;             ///< the first `peers` columns are peers (glibc first)
  std::vector<ReportRow> rows;
  bool per_call = false;             ///< values are ns per call (lower is better)
  bool aligned_ratio = false;        ///< format() adds "vs aligned": vs_aligned()
  bool labelled = false;             ///< format() names each row by its label (use tables)
  /// Distribution tables: the report's workload replayed (ReportSections::replay), which
  /// format_targets() prints as a check line; false: the production distributions, a target.
  bool workload_replay = false;
  /// The operation measured (report_replays() sets it): format_targets() names a DPDK build
  /// missing only for memcpy, the one operation DPDK has a peer for.
  Operation op = Operation::kMemcpy;
  /// tuned / best peer at each row (>1: tuned faster), and tuned / glibc.
  double vs_best(const ReportRow& r) const;
  double vs_glibc(const ReportRow& r) const;
  /// Name of the best peer at a row.
  const std::string& best_peer(const ReportRow& r) const;
  /// tuned at this row / tuned at the row of the same size and src offset with dst offset 0
  /// (point tables), or, without one, at the same size's 0/0 row; 0 when there is neither.
  double vs_aligned(const ReportRow& r) const;
  /// The table as text (C locale, whatever std::locale::global() says): a header, one line per
  /// row — its label (or length and src/dst offsets), one value per column in the table's unit
  /// (GB/s, or ns per call where per_call), then vs best peer, vs glibc and, with aligned_ratio,
  /// vs aligned — and a geometric-mean summary line (one for the warm rows and one for the cold
  /// rows where a replay table has both). Value columns are 13 characters wide, or one more than
  /// the longest column name (names of more than 48 characters are cut there).
  std::string format() const;
};

/// Measures `tuned` and every peer of its operation on the points of `w` (a point workload).
ReportTable report_points(const Routine& tuned, const Workload& w, const ReportOptions& opt);

/// Measures `tuned` and every peer on each named distribution (load_distribution(): a shipped
/// name or a .csv file; replayed, hot cache), rows as report_replays() makes them. With `with_cold`,
/// after those rows one more per distribution, "NAME (cold)" (CacheState::kCold, throughput
/// only): the same lengths with each call's lines in none of the caches (calls spread over
/// 256 MiB), where a masked move pays for every line its window spans (docs/performance.md,
/// seventeenth round). A name that cannot be loaded is skipped, said through opt.progress.
ReportTable report_distributions(const Routine& tuned, const std::vector<std::string>& names,
                                 const ReportOptions& opt, bool with_cold = false);

/// Measures `tuned` and every peer on the replayed calls of each distribution workload of `ws`
/// (replay_calls(), 32768 calls: lengths drawn from the distribution, or for a profile the
/// program's own calls window by window in program order at its page offsets; spread over
/// 256 MiB when Workload::cold), every routine interleaved round by round, medians of
/// opt.passes. Rows, ns per call: one row of throughput (the calls independent), labelled with
/// the workload's name, and for memcpy, memmove and fill of a warm workload one "NAME read back"
/// row (each call's source, for fill its destination, waits on a load of the previous call's
/// last bytes: timing.hpp, replay(); from cold lines every routine would wait as long on memory). A point workload in `ws` is skipped.
ReportTable report_replays(const Routine& tuned, const std::vector<Workload>& ws, const ReportOptions& opt);

/// The lengths of the use table (bytes): 32 KiB, 64 KiB, 256 KiB, 1 MiB, 4 MiB, 16 MiB, 64 MiB.
const std::vector<std::uint64_t>& use_sizes();

/// The copy being used: `tuned` and every peer at each of use_sizes(), from 64 KiB on plus one
/// page (timed_length(), tuner.hpp: inside the band each size begins, as the search times its
/// thresholds; src and dst 64-aligned),
/// for each use (timing.hpp, Use: the copy alone, then read, then its source overwritten; fill:
/// alone and read) and each cache state (warm, cold), every routine interleaved with a reset of
/// the cache state before each batch of at least 4 calls and 200 us (so "cold" is cold for a
/// batch's first call: a copy that fits the caches runs warm from its second on, and the 32 KiB
/// rows' cold figures are close to the warm ones); GB/s of copied bytes (the use's time
/// included), medians over opt.passes. Rows are labelled "1M+4K copy+read warm".
ReportTable report_uses(const Routine& tuned, const ReportOptions& opt);

/// The performance targets checked against measured tables, one line each ("met" / "MISSED"
/// with the figures; docs/performance.md lists them): seeds' points >= 0.97 x the best peer;
/// 64 MiB >= 1.0 x the best peer and >= 90% of the read bandwidth `read_gbps` (0 = not
/// measured); misaligned dst >= 1.0 x the best peer (one line for the 4K-aliasing rows, 0 <
/// (dst - src) mod 4096 < 64, and one for the others, when the table has src offsets) and >= 0.85 x
/// the tuned routine's aligned copy; distributions >= 1.05 x the best of glibc and aocl (geometric mean; throughput and
/// read back separately; the cold rows, CacheState::kCold, apart on a check line), with the ratio
/// to dpdk where it was measured (a `workload_replay` table: the same figures on "check ... (not a
/// target)" lines, cold or not); 256 KiB-16 MiB, every
/// use warm, >= 1.0 x the best of glibc and aocl at every size (the cold rows are printed as a
/// check, not a target). "aocl" counts where the table has that peer. A null table skips its
/// targets.
std::string format_targets(const ReportTable* seeds, const ReportTable* misaligned,
                           const ReportTable* distributions, double read_gbps,
                           const ReportTable* uses = nullptr);

/// Streaming read bandwidth of this machine over `bytes` (GB/s, median of 5 passes).
double read_bandwidth_gbps(std::size_t bytes = std::size_t{64} << 20);

/// An SVG line plot of tuned / glibc against the length (log scale), one line per alignment
/// pair; the speedup axis is logarithmic with ticks at round values (plot.hpp: log_ticks), so
/// 0.3x and 30x are both legible. Returns false (and says why in *error) when there is no point
/// with a positive speedup or the file cannot be written. Defined in plot.cpp.
bool write_speedup_svg(const ReportTable& points, const std::string& title, const std::string& path,
                       std::string* error);

// ----- the search's final table (tune(), autotune --from) -----------------------------------

/// Measures `r` against the system routine of its operation on every point of `w`, interleaved,
/// `rounds` per point, in three passes over the workload, each pass on freshly mapped buffers;
/// each figure is the median of the three.
std::vector<MeasuredPoint> measure_table(const Routine& r, const Workload& w, unsigned rounds,
                                         const std::function<void(const std::string&)>& progress = {});

/// The seeds-style table: "Len  Src/Dst align  system memcpy GB/s  tuned GB/s  speedup" (the
/// baseline named for `op`), one row per point, and a last line with the geometric-mean speedup.
std::string format_table(const std::vector<MeasuredPoint>& points, Operation op = Operation::kMemcpy);

/// The table for a commit message, in the layout of the patches copysynth started from:
///   "Len  Src/Dst align     old     new  speedup"
/// one row per point (Len as size_label(): 64, 4096, 1M, ...; alignments in bytes from a 64-byte
/// boundary), old = the system routine and new = the tuned one in ns per call (median TSC time,
/// both measured in the same run; two decimals below 100 ns, one below 10 us, none above),
/// speedup = old / new; then the geometric-mean speedup. Columns widen to fit. The
/// caption, when not empty, comes first (say what old and new are and where they were measured).
/// Distribution points (with a label) give one row each with the label in place of Len and
/// alignments. `fill`: memset's table, whose alignment column is the destination's alone ("Dst
/// align": memset has no source).
std::string format_patch_table(const std::vector<MeasuredPoint>& points, const std::string& caption = {},
                               bool fill = false);

/// Geometric mean over the points of the baseline's ns per call over the tuned routine's where
/// both are recorded, else of tuned over baseline GB/s (the same ratio for one length; a
/// distribution of 0-byte calls has no GB/s); 1.0 when empty.
double geomean_speedup(const std::vector<MeasuredPoint>& points);

// ----- the whole report (autotune --from FILE --report) ----------------------------------------

/// Which parts of the report run for an operation on a workload (run_report() follows it):
///   - `points`: a point workload's own table (seeds or misaligned), with the plot;
///   - `misaligned`: the misaligned-destination matrix, after the seeds' table (seeds workload;
///     not clear_page, which has one page-aligned length);
///   - `uses`: the use table (seeds workload; not clear_page);
///   - `distributions`: for a point workload, memcpy, memmove and fill (not clear_page): the eight
///     production distributions (production_distributions(); fill replays their lengths as memset
///     calls, as its search does);
///   - `replay`: a distribution workload (a shipped or .csv distribution, or a program's profile,
///     `profile:FILE`), any operation: the workload's own calls (report_replays()), in place of
///     the production distributions.
struct ReportSections {
  bool points = false;
  bool misaligned = false;
  bool uses = false;
  std::vector<std::string> distributions;
  bool replay = false;
};
ReportSections report_sections(Operation op, const Workload& w);

/// Where the plot of the `index`-th operation of one report goes: `svg_path` itself for the first
/// (index 0), else "-OPERATION" inserted before the extension ("speedup.svg" -> "speedup-fill.svg";
/// no extension: appended). Empty when `svg_path` is.
std::string report_svg_path(const std::string& svg_path, Operation op, std::size_t index);

/// What run_report() measured (the tables a section did not run are empty).
struct ReportResult {
  std::optional<ReportTable> points, misaligned, uses, distributions;
  double read_gbps = 0;  ///< measured when the point table has a 64 MiB row at 0/0; else 0
};

/// The whole report for one routine, the sections of report_sections(), in this order: the point
/// table ("NAME matrix, GB/s ..."; then, for a 64 MiB row at 0/0, this machine's read bandwidth
/// beside it) and its plot (opt.svg_path, opt.svg_title), the misaligned-destination matrix, the
/// use table, the distributions (ns per call), and last the performance targets
/// (format_targets()). Each part goes to `print` as soon as it is measured, as text ending in a
/// newline (autotune prints it on stdout, so a long report shows its tables one by one).
/// Errors: kInvalidArgument when the plot cannot be written (the tables before it were printed).
Result<ReportResult> run_report(const Routine& tuned, const Workload& w, const ReportOptions& opt,
                                const std::function<void(const std::string&)>& print);

}  // namespace copysynth
