// copysynth — workloads (see workload.hpp).
#include "copysynth/workload.hpp"

namespace copysynth {

Workload seeds_workload(Operation op) {
  Workload w;
  w.name = "seeds";
  if (op == Operation::kClearPage) {
    w.points.push_back({4096, 0, 0});
    return w;
  }
  for (std::uint64_t n : {1, 7, 8, 16, 32, 48, 64, 80, 128, 256, 512, 1024, 2048, 4096})
    for (auto [s, d] : {std::pair{0u, 0u}, {0u, 4u}, {4u, 0u}, {4u, 4u}}) w.points.push_back({n, s, d});
  for (std::uint64_t n = 1024; n <= 15360; n += 1024)
    if (n != 1024 && n != 2048 && n != 4096) w.points.push_back({n, 0, 0});  // those are above
  for (std::uint32_t d : {0u, 1u, 2u, 4u, 8u, 16u, 32u}) w.points.push_back({262144, 0, d});
  w.points.push_back({64ull << 20, 0, 0});
  w.points.push_back({64ull << 20, 4, 4});
  if (op == Operation::kFill) {
    std::vector<Point> merged;
    for (Point p : w.points) {
      p.src_align = 0;
      bool seen = false;
      for (const auto& q : merged) seen |= q == p;
      if (!seen) merged.push_back(p);
    }
    w.points = merged;
  }
  return w;
}

std::string size_label(std::uint64_t size) {
  if (size >= (1ull << 20) && size % (1ull << 20) == 0) return std::to_string(size >> 20) + "M";
  return std::to_string(size);
}

}  // namespace copysynth
