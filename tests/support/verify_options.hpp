// copysynth tests — lighter conformance options for suites that verify many routines; the full
// defaults run in the tuner and in test_verify's "full default suite" case.
#pragma once

#include <cstdint>

#include "copysynth/verify.hpp"

namespace copysynth::test {

/// Every length up to 300 dense, 4 random lengths per band, lengths up to `max_size` bytes.
inline VerifyOptions light_options(std::uint64_t max_size) {
  VerifyOptions o;
  o.dense_max = 300;
  o.random_sizes = 4;
  o.max_size = max_size;
  return o;
}

/// The options of the grids (test_verify's grid, test_asm_linked): light_options(2 MiB) with
/// fewer overlap distances.
inline VerifyOptions grid_options() {
  VerifyOptions o = light_options(2 << 20);
  o.overlap_dense = 96;
  o.overlap_stride = 9;
  return o;
}

}  // namespace copysynth::test
