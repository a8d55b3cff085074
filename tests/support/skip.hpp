// copysynth tests — skips that are seen and counted. A test that cannot run on this host (no
// AVX2, no AOCL-LibMem peer built, no de_DE locale) must not pass silently as if it had run:
//
//   TEST_CASE("..." * copysynth::test::skip_unless(host_has_avx2(), "needs AVX2"))
//       decided when the test registers: doctest skips the case and counts it in its summary
//       ("| 1 skipped"), and the listener in doctest_main.cpp prints "skipped: NAME: REASON";
//   COPYSYNTH_SKIP_PART("no XINUSE here: ...")
//       inside a case that runs, for the part that could not: printed at once ("skipped: ...")
//       and listed again with the case's name at the end of the run.
// Include after <doctest/doctest.h>.
#pragma once

#include <string>
#include <vector>

namespace copysynth::test {

/// A doctest decorator: the test case is skipped, with `reason` (a string literal) as its
/// description, when `runs` is false.
struct skip_unless {
  bool runs;
  const char* reason;
  void fill(doctest::detail::TestCase& state) const {
    if (runs) return;
    state.m_skip = true;
    state.m_description = reason;
  }
  void fill(doctest::detail::TestSuite& state) const {
    if (runs) return;
    state.m_skip = true;
    state.m_description = reason;
  }
};

/// Parts of test cases skipped during this run, "REASON", in order; the listener in
/// doctest_main.cpp pairs each with its test case.
inline std::vector<std::string>& pending_part_skips() {
  static std::vector<std::string> v;
  return v;
}

}  // namespace copysynth::test

/// Says that part of the running test case did not run on this host, and why (a std::string or
/// a string literal): a "skipped: REASON" message at the caller's line, and an entry in the list
/// of skips printed at the end of the run.
#define COPYSYNTH_SKIP_PART(reason)                                          \
  do {                                                                       \
    const std::string copysynth_skip_reason_(reason);                        \
    MESSAGE("skipped: " << copysynth_skip_reason_);                          \
    ::copysynth::test::pending_part_skips().push_back(copysynth_skip_reason_); \
  } while (false)

