// copysynth — the performance report: a tuned routine against every peer, in one process.
//
// `autotune --from best.json --report` prints, for each operation in the wisdom file:
//   1. the seeds' table with a GB/s column per peer (peers.hpp: glibc, rep_movsb, avx2_loop,
//      avx2_nt_loop, dpdk where built), the tuned routine, and its ratio to the best peer and to
//      glibc at each point — every routine of a point timed interleaved, round by round, three
//      passes over the matrix, medians;
//   2. the eight production size distributions (replayed call sequences, ns per call, hot
//      cache) with the same columns and the geometric means;
//   3. for 64 MiB, this machine's read bandwidth (a streaming read of 64 MiB) beside the copy
//      rates: the limit a large copy can approach;
// and, with an SVG path, a plot of the tuned routine's speedup over glibc against the length,
// one line per src/dst alignment.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "copysynth/routine.hpp"
#include "copysynth/workload.hpp"

namespace copysynth {

struct ReportOptions {
  unsigned rounds = 7;       ///< timed rounds per point and pass
  unsigned passes = 3;       ///< passes over the workload; medians across passes
  bool distributions = true; ///< also the eight production distributions (copies only)
  std::string svg_path;      ///< write the speedup plot here (empty: no plot)
  std::function<void(const std::string&)> progress;
};

/// One row of a report: a point or a distribution, with a figure per routine (GB/s for points,
/// ns per call for distributions) in the order of `ReportTable::columns`.
struct ReportRow {
  std::string label;          ///< "4096 0/4" or "MemcpyGoogleA"
  Point point;                ///< for point rows
  std::vector<double> value;  ///< per column: GB/s (points) or ns per call (distributions)
};

struct ReportTable {
  std::vector<std::string> columns;  ///< peer names, then "tuned"
  std::vector<ReportRow> rows;
  bool per_call = false;             ///< values are ns per call (lower is better)
  /// tuned / best peer at each row (>1: tuned faster), and tuned / glibc.
  double vs_best(const ReportRow& r) const;
  double vs_glibc(const ReportRow& r) const;
  std::string format() const;
};

/// Measures `tuned` and every peer of its operation on the points of `w` (a point workload).
ReportTable report_points(const Routine& tuned, const Workload& w, const ReportOptions& opt);

/// Measures `tuned` and every peer on each named distribution (replayed, hot cache).
ReportTable report_distributions(const Routine& tuned, const std::vector<std::string>& names,
                                 const ReportOptions& opt);

/// Streaming read bandwidth of this machine over `bytes` (GB/s, median of 5 passes).
double read_bandwidth_gbps(std::size_t bytes = std::size_t{64} << 20);

/// An SVG line plot of tuned / glibc against the length (log scale), one line per alignment
/// pair. Returns false (and says why in *error) when the file cannot be written.
bool write_speedup_svg(const ReportTable& points, const std::string& title, const std::string& path,
                       std::string* error);

}  // namespace copysynth
