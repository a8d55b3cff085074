// copysynth tests — plans and routines from parameters, and the vector widths this host runs.
// Include after <doctest/doctest.h> (REQUIRE).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "copysynth/cpu.hpp"
#include "copysynth/emit.hpp"
#include "copysynth/ladders.hpp"
#include "copysynth/routine.hpp"

namespace copysynth::test {

/// The plan of `p` for a target with `features` (a failure to plan fails the test).
inline CopyPlan plan_for(const CopyParams& p, const IsaFeatures& features = CpuInfo::host().features()) {
  auto r = make_plan(p, features);
  REQUIRE_MESSAGE(r.ok(), (r.ok() ? std::string() : r.error().message));
  return r.value();
}

/// The routine of `p`, planned and built for this host, with `faults` injected when any (tests of
/// the checks that must catch them).
inline Routine build(const CopyParams& p, const EmitFaults& faults = {}) {
  const CopyPlan plan = plan_for(p);
  auto r = faults.any() ? Routine::build_with_faults(plan, faults) : Routine::build(plan);
  REQUIRE_MESSAGE(r.ok(), (r.ok() ? std::string() : r.error().message));
  return std::move(r).value();
}

/// Vector widths in bytes this host runs (CPUID and XCR0 as CpuInfo reports them): 8 (GPR) and 16
/// always, 32 with AVX2, 64 with AVX-512F.
inline std::vector<unsigned> host_widths() {
  const unsigned max = CpuInfo::host().features().max_vector_bytes();
  std::vector<unsigned> w{8, 16};
  if (max >= 32) w.push_back(32);
  if (max >= 64) w.push_back(64);
  return w;
}

}  // namespace copysynth::test
