// copysynth — the report's speedup plot (autotune --report --svg): axes and ticks.
//
// Speedups over glibc span two decades on some hosts (0.3x to 30x on Zen 3 with glibc 2.36), so
// the speedup axis is logarithmic: 2x faster and 2x slower are the same distance from the 1x
// line, and every line stays visible. Ticks sit at round values of a 1-2-5 style sequence
// (0.5, 1, 2, 5, 10, ...), chosen as the finest sequence whose labels keep a minimum distance on
// the page, so the axis is legible at any range and any plot height. The tick computation is a
// pure function, tested without drawing (tests/test_tuner.cpp, "plot:").
#pragma once

#include <string>
#include <vector>

namespace copysynth {

/// One tick of a logarithmic axis.
struct LogTick {
  double value = 0;   ///< the value at the tick (> 0)
  double offset = 0;  ///< its distance from the axis' low end, in the same unit as `length`
  std::string label;  ///< the value in the shortest decimal form: "0.5", "1", "2.5", "1000"
};

/// The displayed range of the speedup axis for speedups in [lo, hi] (both > 0): it always
/// holds 1 (the glibc line), is padded by 10% on each side in ratio, and spans at least a factor
/// of 1.6, so a flat set of points still gets two ticks. Returns {low, high}.
std::pair<double, double> speedup_axis_range(double lo, double hi);

/// Ticks for a logarithmic axis from `lo` to `hi` (0 < lo < hi) drawn over `length` units (px),
/// with at least `min_gap` units between neighbouring ticks. Candidate values are, from finest
/// to coarsest, the mantissas {1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8}, {1, 1.5, 2, 3, 5, 7},
/// {1, 2, 5}, {1, 3}, then powers of ten, then every 2nd, 3rd, ... power of ten; the finest
/// whose ticks inside [lo, hi] keep `min_gap` apart is used. The result is ordered by value and
/// holds the tick at 1 when 1 is in range. Empty when the range or length is not positive.
std::vector<LogTick> log_ticks(double lo, double hi, double length, double min_gap);

/// The shortest decimal text of a tick value, locale-independent: 0.5 -> "0.5", 20 -> "20".
std::string tick_label(double v);

}  // namespace copysynth
