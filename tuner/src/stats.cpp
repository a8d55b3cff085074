// copysynth — statistics (see stats.hpp).
#include "copysynth/stats.hpp"

#include <algorithm>
#include <cmath>

namespace copysynth {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  const std::size_t m = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + m, v.end());
  if (v.size() % 2) return v[m];
  const double hi = v[m];
  const double lo = *std::max_element(v.begin(), v.begin() + m);
  return (lo + hi) / 2;
}

double mad(const std::vector<double>& v) {
  const double m = median(v);
  std::vector<double> dev;
  dev.reserve(v.size());
  for (double s : v) dev.push_back(std::fabs(s - m));
  return median(std::move(dev));
}

double geomean(const std::vector<double>& v) {
  if (v.empty()) return 1.0;
  double s = 0;
  for (double x : v) s += std::log(x);
  return std::exp(s / double(v.size()));
}

}  // namespace copysynth
