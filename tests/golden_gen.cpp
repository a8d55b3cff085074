// golden_gen — writes tests/golden/code_hashes.txt and code_bytes.txt (golden.hpp says what they
// hold) from this build's emit(). Run it through tools/update-golden.sh, and only when a change
// is meant to move the emitted bytes: every wisdom file with a changed plan's params stops
// loading. test_golden compares the checked-in files with what emit() writes now.
//
// Usage: golden_gen DIR   (writes DIR/code_hashes.txt and DIR/code_bytes.txt; exit status 1 on
// any error: a plan make_plan refuses or emit() cannot encode, or two plans with one key)
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "golden.hpp"

using namespace copysynth;

namespace {

using Codes = std::vector<std::pair<std::string, std::vector<std::uint8_t>>>;

bool emit_all(const std::vector<test::GoldenPlan>& plans, Codes* out) {
  std::set<std::string> keys;
  for (const auto& g : plans) {
    if (!keys.insert(g.key).second) {
      std::fprintf(stderr, "golden_gen: two plans have the key \"%s\"\n", g.key.c_str());
      return false;
    }
    if (g.plan.classes.empty()) {
      std::fprintf(stderr, "golden_gen: make_plan refused \"%s\" for %s\n", g.key.c_str(),
                   std::string(isa_level_name(g.target)).c_str());
      return false;
    }
    auto bytes = assemble(g.plan);
    if (!bytes) {
      std::fprintf(stderr, "golden_gen: \"%s\": %s\n", g.key.c_str(), bytes.error().message.c_str());
      return false;
    }
    out->emplace_back(g.key, std::move(*bytes));
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: golden_gen DIR\n");
    return 1;
  }
  const std::filesystem::path dir = argv[1];
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  Codes hashes, hex;
  if (!emit_all(test::golden_hash_plans(), &hashes) || !emit_all(test::golden_hex_plans(), &hex)) return 1;
  for (const auto& [name, text] : {std::pair<std::string, std::string>{"code_hashes.txt", test::golden_hashes_text(hashes)},
                                   {"code_bytes.txt", test::golden_bytes_text(hex)}}) {
    std::ofstream f(dir / name, std::ios::binary);
    f << text;
    if (!f.good()) return std::fprintf(stderr, "golden_gen: cannot write %s\n", (dir / name).c_str()), 1;
  }
  std::printf("golden_gen: wrote %zu hashes and %zu full plans to %s\n", hashes.size(), hex.size(), dir.c_str());
  return 0;
}
