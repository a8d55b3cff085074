// The doctest main() shared by every suite, and the listener that makes skips visible
// (support/skip.hpp): each test case skipped on this host is printed with its reason, and the end
// of the run lists every skip, whole cases and parts of cases, with a count.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <ostream>
#include <string>
#include <vector>

#include "support/skip.hpp"

namespace {

struct SkipListener : doctest::IReporter {
  explicit SkipListener(const doctest::ContextOptions& in) : opt(in) {}

  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {
    if (lines.empty()) return;
    std::ostream& o = *opt.cout;
    o << "[doctest] skipped on this host: " << whole << " test case(s), " << (lines.size() - whole)
      << " part(s) of test cases:\n";
    for (const auto& l : lines) o << "[doctest]   " << l << "\n";
  }
  void test_case_start(const doctest::TestCaseData& in) override {
    current = in.m_name;
    copysynth::test::pending_part_skips().clear();
  }
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override { take_parts(); }
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData& in) override {
    // Only the skips a decorator chose (not the cases a filter such as -tc= left out).
    if (!in.m_skip || opt.no_skip) return;
    const std::string line = std::string(in.m_name) + ": " + (in.m_description ? in.m_description : "no reason given");
    *opt.cout << "skipped: " << line << "\n";
    lines.push_back(line + " (whole case)");
    ++whole;
  }

 private:
  void take_parts() {
    for (const auto& r : copysynth::test::pending_part_skips()) lines.push_back(current + ": " + r + " (part)");
    copysynth::test::pending_part_skips().clear();
  }
  const doctest::ContextOptions& opt;
  std::string current;
  std::vector<std::string> lines;
  std::size_t whole = 0;
};

REGISTER_LISTENER("copysynth_skips", 1, SkipListener);

}  // namespace
