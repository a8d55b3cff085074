// libFuzzer target for the wisdom loader: best.json is untrusted input (a user may edit it, copy it
// from another host, or truncate it), so arbitrary bytes must either be rejected with an error or
// give a Wisdom that keeps every property the rest of copysynth relies on.
//
// Per input: parse the bytes as load_wisdom() does (nlohmann, no exceptions), run
// wisdom_from_json, and
//   - on rejection: the error has one of the documented codes and a non-empty message;
//   - on acceptance: every entry's params pass validate_domains; its plan passes check_plan, has
//     the classes make_plan gives for those params (weights aside) and assembles (the file's
//     weights shape the dispatch tree); its points have alignments 0..63; and the document
//     round-trips:
//     to_json(w) dumped as text re-parses, is accepted again, and gives the same JSON and the same
//     entries (to_json(from_json(to_json(w))) == to_json(w)).
// Any violation, or an exception escaping the loader, aborts with a message (libFuzzer saves the
// input as a crash). ASan and UBSan (COPYSYNTH_FUZZ builds everything with them) catch the rest.
//
// Built with clang and -fsanitize=fuzzer by -DCOPYSYNTH_FUZZ=ON (tools/run-tests.sh fuzz). Without
// it, tests/fuzz_replay_main.cpp supplies a main() that replays the seed corpus (ctest
// fuzz_wisdom_corpus), so the properties are also checked by every normal and sanitizer build.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <nlohmann/json.hpp>
#include <string>

#include "copysynth/emit.hpp"
#include "copysynth/ladders.hpp"
#include "copysynth/plan.hpp"
#include "copysynth/wisdom.hpp"

namespace {

using nlohmann::json;
using namespace copysynth;

[[noreturn]] void fail(const std::string& what, const std::string& detail = {}) {
  std::fprintf(stderr, "fuzz_wisdom: property violated: %s\n", what.c_str());
  if (!detail.empty()) std::fprintf(stderr, "  %s\n", detail.c_str());
  std::fflush(stderr);
  std::abort();
}

void check_accepted(const Wisdom& w) {
  for (std::size_t i = 0; i < w.entries.size(); ++i) {
    const WisdomEntry& e = w.entries[i];
    const std::string at = "entries[" + std::to_string(i) + "]";
    if (auto st = validate_domains(e.plan.params); !st) fail(at + ": accepted params fail validate_domains", st.error().message);
    if (auto st = check_plan(e.plan); !st) fail(at + ": accepted plan fails check_plan", st.error().message);
    if (e.plan.params.operation.value != e.operation) fail(at + ": params.operation differs from the entry's operation");
    if (e.plan.vec != e.plan.params.vector_width.value) fail(at + ": plan.vec differs from params.vector_width");
    auto rebuilt = make_plan(e.plan.params, IsaFeatures::for_level(IsaLevel::kAVX512), e.plan.ladder);
    if (!rebuilt) fail(at + ": the params and ladder of an accepted plan do not make a plan", rebuilt.error().message);
    if (rebuilt->classes.size() != e.plan.classes.size()) fail(at + ": accepted plan has another number of classes than its params give");
    for (std::size_t k = 0; k < e.plan.classes.size(); ++k) {
      auto a = e.plan.classes[k], b = rebuilt->classes[k];
      a.weight = b.weight = 0;  // weights are the file's own
      if (!(a == b)) fail(at + ": accepted class " + std::to_string(k) + " differs from what its params give");
    }
    // What loading does next (Routine::build): the plan, with the file's class weights shaping the
    // dispatch tree, must assemble. Nothing is installed or executed.
    if (auto code = assemble(e.plan); !code) fail(at + ": an accepted plan does not assemble", code.error().message);
    for (const auto& p : e.points)
      if (p.src_align > 63 || p.dst_align > 63) fail(at + ": a point's alignment is outside 0..63");
    for (std::size_t k = 0; k < i; ++k)
      if (w.entries[k].operation == e.operation) fail(at + ": a second entry for the same operation was accepted");
  }

  // Round trip: what save_wisdom would write must load again, unchanged.
  const json j1 = to_json(w);
  const std::string text = j1.dump(2);
  const json j2 = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j2.is_discarded()) fail("to_json(w).dump() is not valid JSON", text.substr(0, 2000));
  auto w2 = wisdom_from_json(j2);
  if (!w2) fail("to_json(w) of an accepted document is rejected", w2.error().message);
  const json j3 = to_json(*w2);
  if (j3 != j1) fail("to_json(from_json(to_json(w))) != to_json(w)", j1.dump() + "\n  vs\n  " + j3.dump());
  if (w2->entries.size() != w.entries.size()) fail("round trip changed the number of entries");
  for (std::size_t i = 0; i < w.entries.size(); ++i) {
    const WisdomEntry &a = w.entries[i], &b = w2->entries[i];
    if (!(a.plan == b.plan) || a.operation != b.operation || a.code_hash != b.code_hash || !(a.points == b.points) ||
        a.workload != b.workload)
      fail("round trip changed entries[" + std::to_string(i) + "]");
  }
  if (w2->cpu_signature != w.cpu_signature || w2->schema != w.schema || w2->generator_version != w.generator_version)
    fail("round trip changed the header");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    // As load_wisdom(): the whole file through nlohmann's parser without exceptions.
    const json j = json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return 0;
    auto w = wisdom_from_json(j);
    if (!w) {
      const Error& e = w.error();
      if (e.code != ErrorCode::kWisdomMalformed && e.code != ErrorCode::kInvalidParams &&
          e.code != ErrorCode::kWisdomMismatch)
        fail(std::string("rejected with an undocumented error code ") + error_code_name(e.code), e.message);
      if (e.message.empty()) fail("rejected with an empty message");
      return 0;
    }
    check_accepted(*w);
  } catch (const std::exception& ex) {
    fail("exception escaped the wisdom loader", ex.what());
  }
  return 0;
}
