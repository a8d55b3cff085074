// copysynth — workloads: the (size, src alignment, dst alignment) points a routine is tuned and
// reported on.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "copysynth/params.hpp"

namespace copysynth {

/// One measured case: copy `size` bytes from an address = src_align mod 64 to one = dst_align
/// mod 64 (bytes), repeated in a loop.
struct Point {
  std::uint64_t size = 0;
  std::uint32_t src_align = 0;
  std::uint32_t dst_align = 0;
  bool operator==(const Point&) const = default;
};

struct Workload {
  std::string name;
  std::vector<Point> points;
};

/// The seeds' matrix (the Linux memcpy threads this project started from):
///   lengths 1, 7, 8, 16, 32, 48, 64, 80, 128, 256, 512, 1024, 2048, 4096 at src/dst alignment
///   0/0, 0/4, 4/0, 4/4; lengths 1024..15360 step 1024 at 0/0; 262144 with dst misaligned by
///   0, 1, 2, 4, 8, 16, 32; plus 64 MiB at 0/0 and 4/4.
/// For fill the source alignment means nothing, so points differing only in it are merged; for
/// clear_page the workload is the one page (4096 bytes, page-aligned).
Workload seeds_workload(Operation op = Operation::kMemcpy);

/// Size in bytes as the seeds' tables print it ("64", "4K"... no: always plain bytes, except
/// multiples of 1 MiB which print as "64M").
std::string size_label(std::uint64_t size);

}  // namespace copysynth
