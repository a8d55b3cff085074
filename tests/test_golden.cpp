// copysynth — golden code: the bytes emit() writes for a fixed set of plans, against the hashes and
// hex checked in under tests/golden/ (golden.hpp says what each file holds). A wisdom file loads
// only when the code rebuilt from its params is byte-identical to the code that was tuned
// (code_fnv1a64), so a change to emit() or to the ladder that moves a byte invalidates every
// user's best.json with those params; this suite makes such a change visible, with the plan and
// the first differing byte, and tells how to accept it (tools/update-golden.sh).
//
// Nothing here executes generated code and nothing depends on the host CPU: each plan is made for
// its own target ISA level and emitted into a plain x86-64 CodeHolder (assemble()).
#include <doctest/doctest.h>

#include <asmjit/x86.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "golden.hpp"

using namespace copysynth;
using Bytes = std::vector<std::uint8_t>;

namespace {

std::string read_golden(const char* name) {
  const std::string path = std::string(COPYSYNTH_GOLDEN_DIR) + "/" + name;
  std::ifstream f(path, std::ios::binary);
  REQUIRE_MESSAGE(f.good(), "cannot read " << path << "; write it with " << std::string(test::kGoldenUpdateCommand));
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string hex_run(const Bytes& b, std::size_t from, std::size_t to, std::size_t mark) {
  std::string s = format_c("%04zx:", from);
  for (std::size_t i = from; i < to && i < b.size(); ++i) s += format_c(i == mark ? " [%02x]" : " %02x", b[i]);
  if (to > b.size()) s += " (end)";
  return s;
}

/// The instruction of `plan`'s code that covers byte `offset`, from asmjit's listing with machine
/// code (each line "instruction ; HEX"); empty when the offset is padding or past the end.
std::string instruction_at(const CopyPlan& plan, std::size_t offset) {
  asmjit::CodeHolder code;
  code.init(asmjit::Environment(asmjit::Arch::kX64));
  asmjit::StringLogger logger;
  logger.addFlags(asmjit::FormatFlags::kMachineCode);
  code.setLogger(&logger);
  asmjit::x86::Assembler a(&code);
  if (!emit(plan, *a.as<asmjit::x86::Emitter>())) return {};
  std::istringstream in(logger.data());
  std::size_t at = 0;
  for (std::string line; std::getline(in, line);) {
    const auto semi = line.rfind("; ");
    if (semi == std::string::npos) continue;
    const std::size_t len = (line.size() - semi - 2) / 2;
    if (offset < at + len) {
      std::string insn = line.substr(0, semi);
      while (!insn.empty() && insn.back() == ' ') insn.pop_back();
      return format_c("%04zx: ", at) + insn;
    }
    at += len;
  }
  return {};
}

}  // namespace

TEST_CASE("golden: every grid plan's code has the checked-in FNV-1a 64 hash and size") {
  std::vector<int> bad;
  const auto golden = test::parse_golden_hashes(read_golden("code_hashes.txt"), &bad);
  for (int line : bad) FAIL_CHECK("code_hashes.txt line " << line << " is malformed (or repeats a key)");
  const auto plans = test::golden_hash_plans();
  CHECK(plans.size() == 4 * 4 * 5 * 2);  // asm_grid: make_plan accepted every combination
  std::set<std::string> seen;
  std::map<IsaLevel, int> targets;
  int changed = 0, missing = 0;
  constexpr int kShown = 8;  // plans described in full; the rest are counted
  for (const auto& g : plans) {
    CHECK_MESSAGE(seen.insert(g.key).second, "two grid plans have the key " << g.key);
    auto bytes = assemble(g.plan);
    REQUIRE_MESSAGE(bytes.ok(), g.key << ": " << (bytes.ok() ? std::string() : bytes.error().message));
    ++targets[g.target];
    const auto it = golden.find(g.key);
    if (it == golden.end()) {
      ++missing;
      FAIL_CHECK("plan not in code_hashes.txt: " << g.key);
      continue;
    }
    const std::uint64_t hash = fnv1a64(*bytes);
    if (hash != it->second.hash || bytes->size() != it->second.size) {
      if (++changed > kShown) continue;
      FAIL_CHECK("emitted code changed (code_hashes.txt line "
                 << it->second.line << ", target " << isa_level_name(g.target) << ")\n  plan:    " << g.key
                 << "\n  fnv1a64: golden " << test::golden_hex64(it->second.hash) << ", now "
                 << test::golden_hex64(hash) << "\n  size:    golden " << it->second.size << " bytes, now "
                 << bytes->size());
    }
  }
  for (const auto& [key, g] : golden)
    if (!seen.count(key)) {
      ++missing;
      FAIL_CHECK("code_hashes.txt line " << g.line << " names a plan the grid no longer has: " << key);
    }
  // Every plan was emitted (a failure above stops the test): none skipped on this host.
  MESSAGE("golden hashes: " << plans.size() << " plans emitted for their own targets (sse2 " << targets[IsaLevel::kSSE2]
                            << ", avx2 " << targets[IsaLevel::kAVX2] << ", avx512 " << targets[IsaLevel::kAVX512]
                            << "), none executed, none skipped: the host's CPU does not matter");
  if (changed || missing)
    FAIL_CHECK(changed << " of " << plans.size() << " plans emit other code than code_hashes.txt says"
                       << (changed > kShown ? " (the first " + std::to_string(kShown) + " shown above)" : std::string())
                       << ", " << missing << " plans differ between the grid and the file. Every wisdom file with a changed plan's "
                          "params no longer loads (its code_fnv1a64 differs). If the change is meant to move "
                          "the bytes, regenerate with "
                       << std::string(test::kGoldenUpdateCommand) << " and say in the commit which change moved them and why.");
}

TEST_CASE("golden: one small plan per strategy class, byte for byte") {
  std::vector<int> bad;
  const auto golden = test::parse_golden_bytes(read_golden("code_bytes.txt"), &bad);
  for (int line : bad) FAIL_CHECK("code_bytes.txt line " << line << " is malformed (or repeats a plan)");
  const auto plans = test::golden_hex_plans();
  CHECK(golden.size() == plans.size());
  int changed = 0;
  for (const auto& g : plans) {
    REQUIRE_MESSAGE(!g.plan.classes.empty(), "make_plan refused " << g.key << " for " << isa_level_name(g.target));
    auto bytes = assemble(g.plan);
    REQUIRE_MESSAGE(bytes.ok(), g.key << ": " << (bytes.ok() ? std::string() : bytes.error().message));
    const auto it = golden.find(g.key);
    if (it == golden.end()) {
      FAIL_CHECK("plan not in code_bytes.txt: " << g.key);
      ++changed;
      continue;
    }
    const Bytes& want = it->second.bytes;
    CHECK_MESSAGE(want.size() == it->second.declared, "code_bytes.txt line " << it->second.line
                                                                             << ": the byte count does not match");
    if (*bytes == want) continue;
    ++changed;
    // The differing region: after the common prefix and before the common suffix. Its first byte
    // is often a branch whose target moved; its last is nearer an inserted or removed instruction.
    std::size_t at = 0, tail = 0;
    while (at < want.size() && at < bytes->size() && want[at] == (*bytes)[at]) ++at;
    while (tail < want.size() - at && tail < bytes->size() - at &&
           want[want.size() - 1 - tail] == (*bytes)[bytes->size() - 1 - tail])
      ++tail;
    const std::size_t from = at < 8 ? 0 : at - 8;
    const std::size_t last = bytes->size() - tail;  // end of the differing bytes now (exclusive)
    const std::string first_insn = instruction_at(g.plan, at);
    const std::string last_insn = last > at ? instruction_at(g.plan, last - 1) : std::string();
    FAIL_CHECK("emitted code differs from code_bytes.txt (line "
               << it->second.line << ") at offset 0x" << format_c("%04zx", at) << "\n  plan:   " << g.key
               << "\n  golden: " << hex_run(want, from, at + 8, at) << "  (" << want.size() << " bytes)"
               << "\n  now:    " << hex_run(*bytes, from, at + 8, at) << "  (" << bytes->size() << " bytes)"
               << format_c("\n  differing bytes: golden [0x%04zx, 0x%04zx), now [0x%04zx, 0x%04zx)", at,
                           want.size() - tail, at, last)
               << (first_insn.empty() ? "" : "\n  now at the first: " + first_insn)
               << (last_insn.empty() || last_insn == first_insn ? "" : "\n  now at the last:  " + last_insn));
  }
  if (changed)
    FAIL_CHECK(changed << " of " << plans.size()
                       << " full-byte plans changed; if the change is meant to move the bytes, regenerate with "
                       << std::string(test::kGoldenUpdateCommand) << " and say in the commit why.");
}

TEST_CASE("golden: the plans cover every strategy of every operation") {
  std::set<std::pair<Operation, Strategy>> hashed, full;
  for (const auto& g : test::golden_hash_plans())
    for (const auto& c : g.plan.classes) hashed.insert({g.plan.params.operation.value, c.strategy});
  for (const auto& g : test::golden_hex_plans())
    for (const auto& c : g.plan.classes) full.insert({g.plan.params.operation.value, c.strategy});
  const Strategy all[] = {Strategy::kNone,      Strategy::kBlock,           Strategy::kHeadTail, Strategy::kAlignedLoop,
                          Strategy::kRepString, Strategy::kNonTemporalLoop, Strategy::kMasked};
  for (Operation op : {Operation::kMemcpy, Operation::kMemmove, Operation::kFill})
    for (Strategy s : all) {
      CAPTURE(name_of(op));
      CAPTURE(strategy_name(s));
      CHECK(hashed.count({op, s}));
    }
  for (Strategy s : {Strategy::kAlignedLoop, Strategy::kRepString, Strategy::kNonTemporalLoop}) {
    CAPTURE(strategy_name(s));
    CHECK(hashed.count({Operation::kClearPage, s}));
    CHECK(full.count({Operation::kClearPage, s}));
  }
  // The full-byte plans: each strategy class at least once.
  std::set<Strategy> full_strategies;
  for (const auto& [op, s] : full) full_strategies.insert(s);
  CHECK(full_strategies.size() == 7);
  CHECK(full.count({Operation::kMemmove, Strategy::kRepString}));
  CHECK(full.count({Operation::kMemmove, Strategy::kNonTemporalLoop}));
}

TEST_CASE("golden: a plan's key names exactly what decides its bytes") {
  CopyParams p;
  const auto plan = [](const CopyParams& q) { return vector_ladder(q); };
  CHECK(test::golden_key(plan(p)) == "memcpy vector_width=32 unroll=4");
  p.rep_threshold = 4096;
  p.nop_form = NopForm::kJumpOver;
  CHECK(test::golden_key(plan(p)) == "memcpy vector_width=32 unroll=4 rep_threshold=4096 nop_form=jump");
  const auto flat = with_weights(plan(p), [](std::uint64_t, std::uint64_t) { return 1.0; });
  CHECK(test::golden_key(flat) == "memcpy vector_width=32 unroll=4 rep_threshold=4096 nop_form=jump weights=flat");
  auto odd = plan(p);
  odd.classes[0].weight = 0.5;
  CHECK(test::golden_key(odd).find(" weights=0.5,") != std::string::npos);
}
