// copysynth — the statistics every measurement uses, in one place: median, median absolute
// deviation and geometric mean. Timing (timing.hpp), the decision core (decide.hpp), the search
// and the report summarise samples with these and nothing else.
#pragma once

#include <vector>

namespace copysynth {

/// Median of `v` (by value; the mean of the two middle elements for an even count); 0 for an
/// empty vector.
double median(std::vector<double> v);

/// Median absolute deviation of `v` around its median (same unit as the samples, unscaled: not
/// multiplied by 1.4826); 0 for an empty vector.
double mad(const std::vector<double>& v);

/// Geometric mean of `v` (every element > 0; a ratio or a rate); 1 for an empty vector.
double geomean(const std::vector<double>& v);

}  // namespace copysynth
