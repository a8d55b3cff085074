// copysynth tests — the lighter conformance options for suites that verify many routines
// (test_verify's grid, test_asm_linked); the full defaults run in the tuner and in test_verify's
// "full default suite" case.
#pragma once

#include "copysynth/verify.hpp"

namespace copysynth::test {

inline VerifyOptions grid_options() {
  VerifyOptions o;
  o.dense_max = 300;
  o.random_sizes = 4;
  o.max_size = 2 << 20;
  o.overlap_dense = 96;
  o.overlap_stride = 9;
  return o;
}

}  // namespace copysynth::test
