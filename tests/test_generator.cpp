// copysynth — tests of the generator and templates modules: CopyParams (JSON, printing,
// validation), exact NOP padding, emitted bytes and loop-head alignment, the "vector" ladder,
// check_plan, the dispatch tree and IsaFeatures. Nothing here executes generated code (that is
// test_routine's job): the generator never runs code, so neither do its tests.
#include <doctest/doctest.h>

#include <asmjit/x86.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "copysynth/emit.hpp"
#include "copysynth/isa.hpp"
#include "copysynth/ladders.hpp"
#include "copysynth/nops.hpp"
#include "copysynth/params.hpp"
#include "copysynth/plan.hpp"
#include "support/text.hpp"

using namespace copysynth;
using nlohmann::json;
using Bytes = std::vector<std::uint8_t>;

namespace {

constexpr std::uint32_t kWidths[] = {8, 16, 32, 64};
constexpr std::uint32_t kUnrolls[] = {1, 2, 4, 8, 16};
constexpr NopForm kForms[] = {NopForm::kSingleByte, NopForm::kLongNop, NopForm::kPrefixedLongNop,
                              NopForm::kJumpOver};

std::string hex(const Bytes& b) {
  std::string s;
  char t[4];
  for (auto x : b) {
    std::snprintf(t, sizeof t, "%02X ", x);
    s += t;
  }
  return s;
}

using test::contains;

Bytes cat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}
Bytes repeat(const Bytes& b, int times) {
  Bytes out;
  for (int i = 0; i < times; ++i) out.insert(out.end(), b.begin(), b.end());
  return out;
}

/// The first loop class starts here in the "vector" ladder (ladders.hpp: L = 8V, or 32 at V = 8).
std::uint64_t loop_start(std::uint32_t V) { return V == 8 ? 33 : 8ull * V + 1; }

CopyParams params_w(std::uint32_t width, std::uint32_t unroll = 4) {
  CopyParams p;
  p.vector_width = width;
  p.unroll = unroll;
  return p;
}

CopyPlan plan_for(const CopyParams& p) {
  auto r = make_plan(p, IsaFeatures::for_level(IsaLevel::kAVX512));
  REQUIRE_MESSAGE(r.ok(), (r.ok() ? std::string() : r.error().message));
  return r.value();
}

const SizeClass* class_of(const CopyPlan& plan, std::uint64_t n) {
  for (const auto& c : plan.classes)
    if (c.lo <= n && n <= c.hi) return &c;
  return nullptr;
}

}  // namespace

// ===================================================================================== params ==

TEST_CASE("param_field_names lists every CopyParams field in declaration order") {
  const std::vector<std::string> expected{"operation",     "vector_width",  "unroll",
                                          "prefetch_distance", "prefetch_hint", "prefetch_min", "nt_threshold",
                                          "rep_threshold", "rep_stop", "rep_resume", "rep_chunk", "rep_chunk_stop", "rep_unit", "rep_align_dst", "rep_aligned_only", "rep_aligned_from", "rep_aligned_mutual", "alias_window", "rep_alias_window", "rep_alias_loop", "nt_pages", "nt_width", "loop_pipeline", "shift_realign", "loop_align",
                                          "nop_form", "register_bank", "head_tail_width", "head_tail_max", "mask_max", "mask_shift"};
  CHECK(param_field_names() == expected);
}

TEST_CASE("CopyParams defaults are the documented ones") {
  const CopyParams p;
  CHECK(p.operation.value == Operation::kMemcpy);
  CHECK(p.vector_width.value == 32);
  CHECK(p.unroll.value == 4);
  CHECK(p.prefetch_distance.value == 0);
  CHECK(p.prefetch_hint.value == PrefetchHint::kT0);
  CHECK(p.nt_threshold.value == kNever);
  CHECK(p.rep_threshold.value == kNever);
  CHECK(p.rep_align_dst.value == true);
  CHECK(p.loop_align.value == 64);
  CHECK(p.nop_form.value == NopForm::kLongNop);
  CHECK(validate_domains(p).ok());
}

TEST_CASE("CopyParams JSON round trip") {
  SUBCASE("default params") {
    const CopyParams p;
    const json j = to_json(p);
    REQUIRE(j.is_object());
    // prefetch_min, rep_resume, rep_aligned_from, nt_width, mask_shift, rep_chunk,
    // rep_chunk_stop, rep_aligned_mutual and rep_alias_loop are left out at their defaults:
    // readers older than the fields refuse unknown keys.
    CHECK(j.size() == param_field_names().size() - 9);
    CHECK_FALSE(j.contains("rep_alias_loop"));
    CHECK_FALSE(j.contains("rep_chunk"));
    CHECK_FALSE(j.contains("rep_chunk_stop"));
    CHECK_FALSE(j.contains("rep_aligned_mutual"));
    CHECK_FALSE(j.contains("rep_aligned_from"));
    CHECK_FALSE(j.contains("prefetch_min"));
    CHECK_FALSE(j.contains("rep_resume"));
    CHECK_FALSE(j.contains("nt_width"));
    CHECK_FALSE(j.contains("mask_shift"));
    CopyParams r;
    r.rep_resume = 16 << 20;
    CHECK(to_json(r)["rep_resume"] == 16 << 20);
    CHECK(*params_from_json(to_json(r)) == r);
    r.vector_width = 64;
    r.nt_width = 32;
    CHECK(to_json(r)["nt_width"] == 32);
    CHECK(*params_from_json(to_json(r)) == r);
    r.rep_threshold = 32768;
    r.rep_alias_loop = 65536;
    CHECK(to_json(r)["rep_alias_loop"] == 65536);
    CHECK(*params_from_json(to_json(r)) == r);
    r.prefetch_distance = 512;
    r.prefetch_min = 32768;
    CHECK(to_json(r)["prefetch_min"] == 32768);
    CHECK(*params_from_json(to_json(r)) == r);
    r.mask_max = 64;
    r.mask_shift = true;
    CHECK(to_json(r)["mask_shift"] == true);
    CHECK(*params_from_json(to_json(r)) == r);
    r.rep_chunk = 2 << 20;
    CHECK(to_json(r)["rep_chunk"] == 2 << 20);
    CHECK(*params_from_json(to_json(r)) == r);
    r.rep_aligned_mutual = true;
    CHECK(to_json(r)["rep_aligned_mutual"] == true);
    CHECK(*params_from_json(to_json(r)) == r);
    CHECK(*params_from_json(j) == p);
    CHECK(j["operation"] == "memcpy");
    CHECK(j["vector_width"] == 32);
    CHECK(j["unroll"] == 4);
    CHECK(j["prefetch_distance"] == 0);
    CHECK(j["prefetch_hint"] == "t0");
    CHECK(j["nt_threshold"] == "never");  // kNever is written as the string "never"
    CHECK(j["rep_threshold"] == "never");
    CHECK(j["rep_align_dst"] == true);
    CHECK(j["loop_align"] == 64);
    CHECK(j["nop_form"] == "long");
    auto back = params_from_json(j);
    REQUIRE(back.ok());
    CHECK(*back == p);
    // Through text as well.
    auto back2 = params_from_json(json::parse(j.dump()));
    REQUIRE(back2.ok());
    CHECK(*back2 == p);
  }

  SUBCASE("non-default params") {
    std::vector<CopyParams> cases;
    {
      CopyParams p;
      p.vector_width = 64;
      p.unroll = 16;
      p.prefetch_distance = 512;
      p.prefetch_hint = PrefetchHint::kNTA;
      p.nt_threshold = std::uint64_t{1} << 20;
      p.rep_threshold = 2048;
      p.rep_align_dst = false;
      p.loop_align = 16;
      p.nop_form = NopForm::kPrefixedLongNop;
      cases.push_back(p);
    }
    {
      CopyParams p;
      p.vector_width = 8;
      p.unroll = 1;
      p.prefetch_distance = 8192;
      p.nt_threshold = 0;
      p.rep_threshold = std::uint64_t{1} << 48;
      p.loop_align = 1;
      p.nop_form = NopForm::kJumpOver;
      cases.push_back(p);
    }
    {
      CopyParams p;
      p.vector_width = 16;
      p.unroll = 2;
      p.prefetch_distance = 64;
      p.nt_threshold = kNever;
      p.rep_threshold = 1;
      p.loop_align = 32;
      p.nop_form = NopForm::kSingleByte;
      cases.push_back(p);
    }
    for (const auto& p : cases) {
      CAPTURE(to_string(p));
      const json j = to_json(p);
      auto back = params_from_json(json::parse(j.dump()));
      REQUIRE(back.ok());
      CHECK(*back == p);
    }
    const json j0 = to_json(cases[0]);
    CHECK(j0["vector_width"] == 64);
    CHECK(j0["unroll"] == 16);
    CHECK(j0["prefetch_distance"] == 512);
    CHECK(j0["prefetch_hint"] == "nta");
    CHECK(j0["nt_threshold"] == (std::uint64_t{1} << 20));
    CHECK(j0["rep_threshold"] == 2048);
    CHECK(j0["rep_align_dst"] == false);
    CHECK(j0["loop_align"] == 16);
    CHECK(j0["nop_form"] == "prefixed");
    const json j1 = to_json(cases[1]);
    CHECK(j1["nt_threshold"] == 0);  // 0 is a number, not "never"
    CHECK(j1["rep_threshold"] == (std::uint64_t{1} << 48));
    CHECK(j1["nop_form"] == "jump");
    CHECK(to_json(cases[2])["nop_form"] == "single");
  }

  SUBCASE("missing members take the field's default") {
    auto p = params_from_json(json::object());
    REQUIRE(p.ok());
    CHECK(*p == CopyParams{});
    auto q = params_from_json(json{{"unroll", 8u}, {"nt_threshold", "never"}, {"rep_threshold", 4096u}});
    REQUIRE_MESSAGE(q.ok(), (q.ok() ? std::string() : q.error().message));
    CopyParams expect;
    expect.unroll = 8;
    expect.rep_threshold = 4096;
    CHECK(*q == expect);
  }
}

TEST_CASE("to_string lists every field as field=value") {
  CopyParams p;
  p.vector_width = 16;
  p.unroll = 8;
  p.prefetch_distance = 256;
  p.nt_threshold = 123456;
  p.nop_form = NopForm::kJumpOver;
  const std::string s = to_string(p);
  std::size_t last = 0;
  for (const auto& name : param_field_names()) {
    const auto pos = s.find(name + "=");
    CHECK_MESSAGE(pos != std::string::npos, name << " missing from \"" << s << "\"");
    if (pos != std::string::npos) {
      CHECK_MESSAGE(pos >= last, name << " out of declaration order in \"" << s << "\"");
      last = pos;
    }
  }
  CHECK(contains(s, "vector_width=16"));
  CHECK(contains(s, "unroll=8"));
  CHECK(contains(s, "prefetch_distance=256"));
  CHECK(contains(s, "nt_threshold=123456"));
  CHECK(contains(s, "rep_threshold=never"));
  CHECK(contains(s, "nop_form=jump"));
  CHECK(contains(s, "operation=memcpy"));
  CHECK(s.rfind("operation=memcpy", 0) == 0);  // declaration order: operation first
  const std::string d = to_string(CopyParams{});
  CHECK(contains(d, "nt_threshold=never"));
  CHECK(contains(d, "loop_align=64"));
  CHECK(contains(d, "nop_form=long"));
  CHECK(bytes_or_never(kNever) == "never");
  CHECK(bytes_or_never(0) == "0");
  CHECK(bytes_or_never(4096) == "4096");
  CHECK(name_of(NopForm::kSingleByte) == "single");
  CHECK(name_of(NopForm::kLongNop) == "long");
  CHECK(name_of(NopForm::kPrefixedLongNop) == "prefixed");
  CHECK(name_of(NopForm::kJumpOver) == "jump");
  CHECK(name_of(PrefetchHint::kT0) == "t0");
  CHECK(name_of(PrefetchHint::kNTA) == "nta");
  CHECK(name_of(Operation::kMemcpy) == "memcpy");
  const std::string desc = describe_params();
  for (const auto& name : param_field_names()) CHECK_MESSAGE(contains(desc, name), name);
}

TEST_CASE("domain_values enumerates each field's candidates") {
  CHECK(domain_values<spec::Unroll>() == std::vector<std::uint32_t>{1, 2, 4, 8, 16});
  CHECK(domain_values<spec::VectorWidth>() == std::vector<std::uint32_t>{8, 16, 32, 64});
  CHECK(domain_values<spec::PrefetchDistance>() ==
        std::vector<std::uint32_t>{0, 64, 128, 256, 512, 1024, 2048, 4096, 8192});
  const auto nt = domain_values<spec::NtThreshold>(1024);
  CHECK(nt == std::vector<std::uint64_t>{0, 64, 128, 256, 512, 1024, kNever});
}

// ======================================================================== invalid params ==

namespace {
void expect_invalid(const CopyParams& p, const std::string& field, const std::string& value) {
  const Status st = validate_domains(p);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().code == ErrorCode::kInvalidParams);
  CHECK_MESSAGE(contains(st.error().message, field), st.error().message);
  CHECK_MESSAGE(contains(st.error().message, value), st.error().message);
  // validate() checks the domains first, whatever the target.
  const Status st2 = validate(p, IsaFeatures::for_level(IsaLevel::kAVX512));
  REQUIRE_FALSE(st2.ok());
  CHECK(st2.error().code == ErrorCode::kInvalidParams);
  CHECK(contains(st2.error().message, field));
  // And make_plan refuses it with the same error.
  auto plan = make_plan(p, IsaFeatures::for_level(IsaLevel::kAVX512));
  REQUIRE_FALSE(plan.ok());
  CHECK(plan.error().code == ErrorCode::kInvalidParams);
}
}  // namespace

TEST_CASE("out-of-domain params give kInvalidParams naming field and value") {
  {
    CopyParams p;
    p.unroll = 3;
    expect_invalid(p, "unroll", "3");
  }
  {
    CopyParams p;
    p.vector_width = 24;
    expect_invalid(p, "vector_width", "24");
  }
  {
    CopyParams p;
    p.prefetch_distance = 100;  // not a multiple of 64
    expect_invalid(p, "prefetch_distance", "100");
  }
  {
    CopyParams p;
    p.prefetch_distance = 9000;  // above 8192
    expect_invalid(p, "prefetch_distance", "9000");
  }
  {
    CopyParams p;
    p.loop_align = 8;
    expect_invalid(p, "loop_align", "8");
  }
  {
    CopyParams p;
    p.nt_threshold = (std::uint64_t{1} << 48) + 1;
    expect_invalid(p, "nt_threshold", "281474976710657");
  }
  {
    CopyParams p;
    p.rep_threshold = (std::uint64_t{1} << 50);
    expect_invalid(p, "rep_threshold", "1125899906842624");
  }
  {
    CopyParams p;
    p.nop_form = static_cast<NopForm>(9);
    const Status st = validate_domains(p);
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().code == ErrorCode::kInvalidParams);
    CHECK(contains(st.error().message, "nop_form"));
  }
  // Edges of the ranges are valid.
  {
    CopyParams p;
    p.prefetch_distance = 8192;
    p.nt_threshold = std::uint64_t{1} << 48;
    p.rep_threshold = 0;
    CHECK(validate_domains(p).ok());
  }
}

TEST_CASE("params_from_json errors name the field") {
  struct Case {
    json j;
    ErrorCode code;
    std::string field;
  };
  const std::vector<Case> cases{
      {json{{"unroll", "4"}}, ErrorCode::kWisdomMalformed, "unroll"},           // wrong type
      {json{{"unroll", 4.0}}, ErrorCode::kWisdomMalformed, "unroll"},           // float
      {json{{"unroll", 4.5}}, ErrorCode::kWisdomMalformed, "unroll"},           // float
      {json{{"unroll", true}}, ErrorCode::kWisdomMalformed, "unroll"},          // bool
      {json{{"unroll", -1}}, ErrorCode::kInvalidParams, "unroll"},              // negative value
      {json{{"unroll", 3u}}, ErrorCode::kInvalidParams, "unroll"},              // out of domain
      {json{{"vector_width", 4294967328ull}}, ErrorCode::kInvalidParams, "vector_width"},  // > u32
      {json{{"nt_threshold", -5}}, ErrorCode::kInvalidParams, "nt_threshold"},
      {json{{"nt_threshold", "always"}}, ErrorCode::kWisdomMalformed, "nt_threshold"},
      {json{{"prefetch_distance", "never"}}, ErrorCode::kWisdomMalformed, "prefetch_distance"},
      {json{{"rep_align_dst", 1}}, ErrorCode::kWisdomMalformed, "rep_align_dst"},
      {json{{"nop_form", 1}}, ErrorCode::kWisdomMalformed, "nop_form"},
      {json{{"nop_form", "wide"}}, ErrorCode::kInvalidParams, "nop_form"},
      {json{{"prefetch_hint", "w"}}, ErrorCode::kInvalidParams, "prefetch_hint"},
      {json{{"operation", "memset"}}, ErrorCode::kInvalidParams, "operation"},  // it is called fill
      {json{{"unrol", 4u}}, ErrorCode::kWisdomMalformed, "unrol"},  // unknown field (typo)
      {json{{"unroll", 4u}, {"extra", 1u}}, ErrorCode::kWisdomMalformed, "extra"},
      {json::array({1, 2}), ErrorCode::kWisdomMalformed, "params"},  // not an object
      {json("unroll=4"), ErrorCode::kWisdomMalformed, "params"},
      {json(nullptr), ErrorCode::kWisdomMalformed, "params"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.j.dump());
    auto r = params_from_json(c.j);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == c.code);
    CHECK_MESSAGE(contains(r.error().message, c.field), r.error().message);
  }
  // The value appears in the message of a domain error.
  auto r = params_from_json(json{{"loop_align", 48u}});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ErrorCode::kInvalidParams);
  CHECK(contains(r.error().message, "loop_align"));
  CHECK(contains(r.error().message, "48"));
  CHECK_FALSE(contains(r.error().message, "negative"));
  // The same, parsed from text (non-negative integers parse as unsigned).
  auto t = params_from_json(json::parse(R"({"unroll": 3})"));
  REQUIRE_FALSE(t.ok());
  CHECK(t.error().code == ErrorCode::kInvalidParams);
  CHECK(contains(t.error().message, "unroll = 3"));
  auto neg = params_from_json(json::parse(R"({"prefetch_distance": -64})"));
  REQUIRE_FALSE(neg.ok());
  CHECK(neg.error().code == ErrorCode::kInvalidParams);
  CHECK(contains(neg.error().message, "prefetch_distance"));
  CHECK(contains(neg.error().message, "-64"));
}

// Regression: nlohmann::json stores a C++ `int` (json{{"unroll", 8}}) as a *signed* integer and
// parsed non-negative numbers as unsigned; both must be accepted (once only unsigned ones were,
// and a valid value built in code was reported as "unroll = 8 is negative").
TEST_CASE("params_from_json accepts non-negative integers stored as signed JSON numbers") {
  json j;
  j["unroll"] = 8;                   // int -> number_integer
  j["nt_threshold"] = 1 << 20;       // int
  j["prefetch_distance"] = 128;      // int
  REQUIRE(j["unroll"].is_number_integer());
  REQUIRE_FALSE(j["unroll"].is_number_unsigned());
  auto r = params_from_json(j);
  CHECK_MESSAGE(r.ok(), (r.ok() ? std::string() : r.error().message));
  if (r.ok()) {
    CHECK(r->unroll.value == 8);
    CHECK(r->nt_threshold.value == (1u << 20));
    CHECK(r->prefetch_distance.value == 128);
  }
  // An out-of-domain value stored as signed must be reported as out of range, not as negative.
  auto bad = params_from_json(json{{"unroll", 3}});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().code == ErrorCode::kInvalidParams);
  CHECK_MESSAGE(!contains(bad.error().message, "negative"), bad.error().message);
}

TEST_CASE("validate: loop_pipeline needs a copy, vector registers and unroll <= 4") {
  const IsaFeatures all = IsaFeatures::for_level(IsaLevel::kAVX512);
  CopyParams p;
  p.loop_pipeline = true;
  CHECK(validate(p, all).ok());  // memcpy, 32 bytes, unroll 4
  using Change = std::function<void(CopyParams&)>;
  const std::vector<Change> changes{[](CopyParams& q) { q.unroll = 8; }, [](CopyParams& q) { q.vector_width = 8; },
                                    [](CopyParams& q) { q.operation = Operation::kFill; }};
  for (const Change& bad : changes) {
    CopyParams q = p;
    bad(q);
    const Status st = validate(q, all);
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().code == ErrorCode::kInvalidParams);
    CHECK(contains(st.error().message, "loop_pipeline = true needs"));
    CHECK(contains(st.error().message, "use false"));
  }
  // The plan says so, and the code differs from the plain loop's.
  p.vector_width = 64;
  const CopyPlan piped = plan_for(p);
  CHECK(contains(to_string(piped), "software-pipelined"));
  p.loop_pipeline = false;
  CHECK(*assemble(piped) != *assemble(plan_for(p)));
}

TEST_CASE("rep_chunk: a multiple of 4096 up to 2^30, not for clear_page; the plan and its edges say where pieces begin") {
  const IsaFeatures all = IsaFeatures::for_level(IsaLevel::kAVX512);
  CopyParams p;
  p.rep_threshold = 4096;
  p.rep_stop = 1 << 20;
  p.rep_chunk = 65536;
  CHECK(validate(p, all).ok());
  for (std::uint64_t bad : {std::uint64_t{0}, std::uint64_t{4095}, std::uint64_t{65536 + 64},
                            (std::uint64_t{1} << 30) + 4096}) {
    CopyParams q = p;
    q.rep_chunk = bad;
    const Status st = validate(q, all);
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().code == ErrorCode::kInvalidParams);
    CHECK(contains(st.error().message, "rep_chunk"));
  }
  CopyParams page = p;
  page.operation = Operation::kClearPage;
  page.prefetch_distance = 0;
  page.rep_stop = kNever;
  const Status st = validate(page, all);
  REQUIRE_FALSE(st.ok());
  CHECK(contains(st.error().message, "rep_chunk = 65536 does not apply to clear_page"));
  // The rep class [4096, 1 MiB) holds one and two pieces: both are edges; the text says so.
  const CopyPlan plan = plan_for(p);
  const auto edges = plan_edges(plan);
  CHECK(std::count(edges.begin(), edges.end(), 65536u) == 1);
  CHECK(std::count(edges.begin(), edges.end(), 131072u) == 1);
  CHECK(contains(to_string(plan), "in pieces of at most 65536 bytes"));
  // A chunk above the class's lengths changes nothing: same bytes as without it.
  CopyParams wide = p;
  wide.rep_chunk = 1 << 20;
  CopyParams none = p;
  none.rep_chunk = kNever;
  CHECK(*assemble(plan_for(wide)) == *assemble(plan_for(none)));
  CHECK_FALSE(contains(to_string(plan_for(wide)), "in pieces"));
  CHECK(*assemble(plan) != *assemble(plan_for(none)));
  // A class starting above two pieces: its first two piece boundaries are edges.
  CopyParams high = p;
  high.rep_threshold = 3 * 65536 + 4096;
  const auto high_edges = plan_edges(plan_for(high));
  CHECK(std::count(high_edges.begin(), high_edges.end(), 4u * 65536) == 1);
  CHECK(std::count(high_edges.begin(), high_edges.end(), 5u * 65536) == 1);
  CHECK(std::count(high_edges.begin(), high_edges.end(), 65536u) == 0);
  // A hand-built plan with a piece outside the domain never reaches the emitter.
  for (std::uint64_t bad : {std::uint64_t{0}, std::uint64_t{100}, std::uint64_t{1} << 31}) {
    CopyPlan broken = plan;
    broken.params.rep_chunk = bad;
    const Status st = check_plan(broken);
    REQUIRE_FALSE(st.ok());
    CHECK(contains(st.error().message, "rep_chunk must be a multiple of 4096"));
    CHECK_FALSE(assemble(broken).ok());
  }
  // rep_chunk_in: the piece where the rep class reaches past one, never elsewhere.
  for (const SizeClass& c : plan.classes)
    CHECK(rep_chunk_in(p, c) == (c.strategy == Strategy::kRepString ? 65536u : kNever));
  for (const SizeClass& c : plan_for(wide).classes) CHECK(rep_chunk_in(wide, c) == kNever);
  // Idle pieces (no rep class reaches past one) are dropped; used ones kept.
  CHECK(without_idle_rep_fields(wide).rep_chunk.value == kNever);
  CHECK(without_idle_rep_fields(p).rep_chunk.value == 65536u);
  CHECK(without_idle_rep_fields(none) == none);
  // The lengths where pieces run other code than one instruction: above one piece only.
  CHECK_FALSE(large_lengths_differ(p, none, 65536, 0, 0));
  CHECK(large_lengths_differ(p, none, 65537, 0, 0));
  CHECK(large_lengths_differ(p, wide, 65537, 0, 0));  // 64 KiB pieces against 1 MiB ones
  CHECK(first_large_difference(p, none) == 65537u);
  CHECK(first_large_difference(wide, none) == kNever);  // the class ends below 1 MiB + 1
}

TEST_CASE("rep_chunk_stop: one rep instruction again from a length on; edges, text, bytes and the large-length model agree") {
  const IsaFeatures all = IsaFeatures::for_level(IsaLevel::kAVX512);
  CopyParams p;
  p.rep_threshold = 4096;
  p.rep_chunk = 65536;
  CopyParams s = p;
  s.rep_chunk_stop = 4 * 65536;
  REQUIRE(validate(s, all).ok());
  for (std::uint64_t bad : {std::uint64_t{0}, std::uint64_t{4095}, std::uint64_t{65536 + 64},
                            (std::uint64_t{1} << 30) + 4096}) {
    CopyParams q = s;
    q.rep_chunk_stop = bad;
    const Status st = validate(q, all);
    REQUIRE_FALSE(st.ok());
    CHECK(contains(st.error().message, "rep_chunk_stop"));
  }
  CopyParams page;
  page.operation = Operation::kClearPage;
  page.rep_threshold = 4096;
  page.rep_chunk_stop = 65536;
  const Status st = validate(page, all);
  REQUIRE_FALSE(st.ok());
  CHECK(contains(st.error().message, "rep_chunk_stop = 65536 does not apply to clear_page"));
  // The stop is an edge, the text names it, the bytes differ from pieces throughout, and from
  // one instruction throughout.
  const CopyPlan plan = plan_for(s);
  const auto edges = plan_edges(plan);
  CHECK(std::count(edges.begin(), edges.end(), 4u * 65536) == 1);
  CHECK(contains(to_string(plan), "in pieces of at most 65536 bytes below 262144 bytes (one instruction from there)"));
  CopyParams none = p;
  none.rep_chunk = kNever;
  CHECK(*assemble(plan) != *assemble(plan_for(p)));
  CHECK(*assemble(plan) != *assemble(plan_for(none)));
  for (const SizeClass& c : plan.classes)
    CHECK(rep_chunk_stop_in(s, c) == (c.strategy == Strategy::kRepString ? 4u * 65536 : kNever));
  // Without pieces, at or below one piece, or beyond the rep class: no effect, no bytes, dropped.
  CopyParams idle = none;
  idle.rep_chunk_stop = 4 * 65536;
  CHECK(*assemble(plan_for(idle)) == *assemble(plan_for(none)));
  CHECK(without_idle_rep_fields(idle).rep_chunk_stop.value == kNever);
  CopyParams low = p;
  low.rep_chunk_stop = 65536;
  CHECK(*assemble(plan_for(low)) == *assemble(plan_for(p)));
  CHECK(without_idle_rep_fields(low).rep_chunk_stop.value == kNever);
  CopyParams beyond = p;
  beyond.rep_stop = 1 << 20;
  beyond.rep_chunk_stop = 2 << 20;
  CopyParams band = p;
  band.rep_stop = 1 << 20;
  CHECK(*assemble(plan_for(beyond)) == *assemble(plan_for(band)));
  CHECK(without_idle_rep_fields(beyond).rep_chunk_stop.value == kNever);
  CHECK(without_idle_rep_fields(s).rep_chunk_stop.value == 4u * 65536);
  // A stop at or below the class's start: every length of it goes as one instruction, and the
  // ladder's text does not speak of pieces.
  CopyParams under = p;
  under.rep_threshold = 8 * 65536;
  under.rep_chunk_stop = 4 * 65536;
  CHECK_FALSE(contains(to_string(plan_for(under)), "in pieces"));
  CHECK(contains(to_string(plan_for(p)), "in pieces"));
  // The large-length model: pieces from one piece on, one instruction again from the stop.
  CHECK_FALSE(large_lengths_differ(s, p, 4 * 65536 - 1, 0, 0));
  CHECK(large_lengths_differ(s, p, 4 * 65536, 0, 0));
  CHECK(large_lengths_differ(s, none, 65537, 0, 0));
  CHECK_FALSE(large_lengths_differ(s, none, 4 * 65536, 0, 0));
  CHECK(first_large_difference(s, p) == 4u * 65536);
}

TEST_CASE("validate: rep_alias_loop needs a copy and vector_width 32 or 64") {
  CopyParams p;
  p.vector_width = 64;
  p.rep_threshold = 32768;
  p.rep_alias_loop = 65536;
  CHECK(validate_domains(p).ok());
  CHECK(validate(p, IsaFeatures::for_level(IsaLevel::kAVX512)).ok());
  p.vector_width = 32;
  CHECK(validate(p, IsaFeatures::for_level(IsaLevel::kAVX512)).ok());
  p.vector_width = 16;
  Status st = validate(p, IsaFeatures::for_level(IsaLevel::kAVX512));
  REQUIRE_FALSE(st.ok());
  CHECK(contains(st.error().message, "rep_alias_loop = 65536 needs vector_width = 32 or 64"));
  p.vector_width = 64;
  p.rep_alias_window = 256;  // from the stop on (and for 64 <= (dst - src) mod 4096 < 256) the window decides
  CHECK(validate(p, IsaFeatures::for_level(IsaLevel::kAVX512)).ok());
  p.rep_alias_window = 0;
  p.operation = Operation::kFill;
  st = validate(p, IsaFeatures::for_level(IsaLevel::kAVX512));
  REQUIRE_FALSE(st.ok());
  CHECK(contains(st.error().message, "does not apply to fill"));
  p.operation = Operation::kMemmove;
  CHECK(validate(p, IsaFeatures::for_level(IsaLevel::kAVX512)).ok());
  p.rep_alias_loop = 65537;  // a multiple of 4096
  CHECK_FALSE(validate_domains(p).ok());
}

TEST_CASE("validate: nt_width 32 needs vector_width 64; other widths are out of its domain") {
  const IsaFeatures all = IsaFeatures::for_level(IsaLevel::kAVX512);
  CopyParams p;
  p.vector_width = 64;
  p.nt_width = 32;
  CHECK(validate(p, all).ok());
  for (unsigned w : {8u, 16u, 32u}) {
    p.vector_width = w;
    const Status st = validate(p, all);
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().code == ErrorCode::kInvalidParams);
    CHECK(contains(st.error().message, "nt_width = 32 needs vector_width = 64"));
    CHECK(contains(st.error().message, "use 0"));
  }
  p.vector_width = 64;
  p.nt_width = 16;
  REQUIRE_FALSE(validate_domains(p).ok());
  CHECK(contains(validate_domains(p).error().message, "nt_width"));
}

TEST_CASE("validate: prefetch_min needs prefetch_distance") {
  CopyParams p;
  p.prefetch_min = 32768;
  const Status st = validate(p, IsaFeatures::for_level(IsaLevel::kAVX2));
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().code == ErrorCode::kInvalidParams);
  CHECK(contains(st.error().message, "prefetch_distance = 0"));
  p.prefetch_distance = 1024;
  CHECK(validate(p, IsaFeatures::for_level(IsaLevel::kAVX2)).ok());
  p.prefetch_min = 4096;  // not one of its choices
  REQUIRE_FALSE(validate_domains(p).ok());
  CHECK(contains(validate_domains(p).error().message, "prefetch_min"));
}

TEST_CASE("vector_ladder: prefetch_min splits the loop class; below it a loop without prefetch") {
  for (Operation op : {Operation::kMemcpy, Operation::kMemmove}) {
    CAPTURE(name_of(op));
    CopyParams p = params_w(32);
    p.operation = op;
    p.prefetch_distance = 512;
    p.rep_threshold = 65536;
    p.rep_stop = 1 << 20;
    p.prefetch_min = 32768;
    const CopyPlan plan = plan_for(p);
    REQUIRE(check_plan(plan).ok());
    std::vector<std::tuple<std::uint64_t, std::uint64_t, Strategy>> big;
    for (const auto& c : plan.classes)
      if (c.lo >= loop_start(32)) big.emplace_back(c.lo, c.hi, c.strategy);
    using Row = std::tuple<std::uint64_t, std::uint64_t, Strategy>;
    CHECK(big == std::vector<Row>{{loop_start(32), 32767, Strategy::kAlignedLoop},
                                  {32768, 65535, Strategy::kAlignedLoop},
                                  {65536, (1 << 20) - 1, Strategy::kRepString},
                                  {1 << 20, kNever, Strategy::kAlignedLoop}});
    CHECK(contains(describe_class(plan, plan.classes[plan.classes.size() - 4]), "no prefetch"));
    CHECK(contains(describe_class(plan, plan.classes[plan.classes.size() - 3]), "prefetcht0 +512"));
    // Two loops in the code, one of them with prefetches: as many prefetch instructions as
    // with prefetch_min = 0, and twice the loops' aligned stores.
    std::string with, without;
    REQUIRE(assemble(plan, &with).ok());
    CopyParams q = p;
    q.prefetch_min = 0;
    REQUIRE(assemble(plan_for(q), &without).ok());
    auto count = [](const std::string& text, const std::string& what) {
      std::size_t n = 0;
      for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
      return n;
    };
    CHECK(count(with, "prefetcht0") == count(without, "prefetcht0"));
    CHECK(count(without, "prefetcht0") > 0);
    CHECK(count(with, "vmovdqa ") == 2 * count(without, "vmovdqa "));
    // A prefetch_min at or below the loop's start, or above the loop class, splits nothing.
    q.prefetch_min = 131072;  // inside the rep band: the first loop class is all below it
    const CopyPlan r = plan_for(q);
    CHECK(r.classes.size() == plan.classes.size() - 1);
    CHECK(contains(describe_class(r, r.classes[r.classes.size() - 3]), "no prefetch"));
    CHECK(contains(describe_class(r, r.classes.back()), "prefetcht0 +512"));
  }
}

TEST_CASE("validate: mask_shift needs a masked class") {
  const IsaFeatures all = IsaFeatures::for_level(IsaLevel::kAVX512);
  CopyParams p;
  p.vector_width = 64;
  p.mask_shift = true;
  const Status st = validate(p, all);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().code == ErrorCode::kInvalidParams);
  CHECK(contains(st.error().message, "mask_max = 0"));
  p.mask_max = 128;
  CHECK(validate(p, all).ok());
  // Without AVX-512BW the masked class itself is refused, with what it needs.
  p.vector_width = 32;
  const Status avx2 = validate(p, IsaFeatures::for_level(IsaLevel::kAVX2));
  REQUIRE_FALSE(avx2.ok());
  CHECK(contains(avx2.error().message, "mask_max"));
}

TEST_CASE("validate checks the vector width against the target ISA") {
  const auto sse2 = IsaFeatures::for_level(IsaLevel::kSSE2);
  const auto avx2 = IsaFeatures::for_level(IsaLevel::kAVX2);
  const auto avx512 = IsaFeatures::for_level(IsaLevel::kAVX512);

  for (std::uint32_t w : {8u, 16u}) {
    CHECK(validate(params_w(w), sse2).ok());
    CHECK(validate(params_w(w), avx2).ok());
    CHECK(validate(params_w(w), avx512).ok());
  }
  {
    const Status st = validate(params_w(32), sse2);
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().code == ErrorCode::kUnsupportedIsa);
    CHECK_MESSAGE(contains(st.error().message, "avx2"), st.error().message);
  }
  {
    const Status st = validate(params_w(64), sse2);
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().code == ErrorCode::kUnsupportedIsa);
    CHECK_MESSAGE(contains(st.error().message, "avx512f"), st.error().message);
  }
  CHECK(validate(params_w(32), avx2).ok());
  {
    const Status st = validate(params_w(64), avx2);
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().code == ErrorCode::kUnsupportedIsa);
    CHECK_MESSAGE(contains(st.error().message, "avx512f"), st.error().message);
  }
  CHECK(validate(params_w(32), avx512).ok());
  CHECK(validate(params_w(64), avx512).ok());
  // AVX2 without AVX is not enough for width 32 (XCR0 must enable YMM state).
  {
    IsaFeatures f = avx2;
    f.remove(Feature::kAVX);
    const Status st = validate(params_w(32), f);
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().code == ErrorCode::kUnsupportedIsa);
  }
  // make_plan reports the same ISA error.
  auto plan = make_plan(params_w(32), sse2);
  REQUIRE_FALSE(plan.ok());
  CHECK(plan.error().code == ErrorCode::kUnsupportedIsa);
}

// ================================================================================== NOPs ==

namespace {
// The documented encodings (nops.hpp; Intel SDM "Recommended Multi-Byte Sequence of NOP").
const Bytes N1{0x90};
const Bytes N2{0x66, 0x90};
const Bytes N3{0x0F, 0x1F, 0x00};
const Bytes N4{0x0F, 0x1F, 0x40, 0x00};
const Bytes N5{0x0F, 0x1F, 0x44, 0x00, 0x00};
const Bytes N6{0x66, 0x0F, 0x1F, 0x44, 0x00, 0x00};
const Bytes N7{0x0F, 0x1F, 0x80, 0x00, 0x00, 0x00, 0x00};
const Bytes N8{0x0F, 0x1F, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00};
const Bytes P9{0x66, 0x0F, 0x1F, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00};
const Bytes P10{0x66, 0x66, 0x0F, 0x1F, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00};
const Bytes P11{0x66, 0x66, 0x66, 0x0F, 0x1F, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00};

void check_nops(NopForm form, std::size_t len, const Bytes& expected) {
  const Bytes got = nop_padding(form, len);
  CHECK_MESSAGE(got == expected, "form " << name_of(form) << " length " << len << ": got "
                                         << hex(got) << " expected " << hex(expected));
}
}  // namespace

TEST_CASE("nop_padding: single-byte form is a 0x90 run") {
  check_nops(NopForm::kSingleByte, 0, {});
  check_nops(NopForm::kSingleByte, 1, {0x90});
  check_nops(NopForm::kSingleByte, 2, {0x90, 0x90});
  check_nops(NopForm::kSingleByte, 3, {0x90, 0x90, 0x90});
  check_nops(NopForm::kSingleByte, 5, {0x90, 0x90, 0x90, 0x90, 0x90});
  check_nops(NopForm::kSingleByte, 8, {0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90});
  check_nops(NopForm::kSingleByte, 9, Bytes(9, 0x90));
  check_nops(NopForm::kSingleByte, 11, Bytes(11, 0x90));
  check_nops(NopForm::kSingleByte, 12, Bytes(12, 0x90));
  check_nops(NopForm::kSingleByte, 15, Bytes(15, 0x90));
  check_nops(NopForm::kSingleByte, 17, Bytes(17, 0x90));
  check_nops(NopForm::kSingleByte, 63, Bytes(63, 0x90));
}

TEST_CASE("nop_padding: long form uses P6 NOPs of at most 8 bytes") {
  const auto F = NopForm::kLongNop;
  check_nops(F, 0, {});
  check_nops(F, 1, {0x90});
  check_nops(F, 2, {0x66, 0x90});
  check_nops(F, 3, {0x0F, 0x1F, 0x00});
  check_nops(F, 4, {0x0F, 0x1F, 0x40, 0x00});
  check_nops(F, 5, {0x0F, 0x1F, 0x44, 0x00, 0x00});
  check_nops(F, 6, {0x66, 0x0F, 0x1F, 0x44, 0x00, 0x00});
  check_nops(F, 7, {0x0F, 0x1F, 0x80, 0x00, 0x00, 0x00, 0x00});
  check_nops(F, 8, {0x0F, 0x1F, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00});
  check_nops(F, 9, {0x0F, 0x1F, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00, 0x90});
  check_nops(F, 11, {0x0F, 0x1F, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0F, 0x1F, 0x00});
  check_nops(F, 12, {0x0F, 0x1F, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0F, 0x1F, 0x40, 0x00});
  check_nops(F, 15, {0x0F, 0x1F, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00,  //
                     0x0F, 0x1F, 0x80, 0x00, 0x00, 0x00, 0x00});
  check_nops(F, 16, cat({N8, N8}));
  check_nops(F, 17, {0x0F, 0x1F, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00,  //
                     0x0F, 0x1F, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00,  //
                     0x90});
  check_nops(F, 63, cat({repeat(N8, 7), N7}));
}

TEST_CASE("nop_padding: prefixed form uses up to three 0x66 prefixes (11-byte NOPs)") {
  const auto F = NopForm::kPrefixedLongNop;
  check_nops(F, 0, {});
  check_nops(F, 1, {0x90});
  check_nops(F, 2, {0x66, 0x90});
  check_nops(F, 3, {0x0F, 0x1F, 0x00});
  check_nops(F, 5, {0x0F, 0x1F, 0x44, 0x00, 0x00});
  check_nops(F, 8, {0x0F, 0x1F, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00});
  check_nops(F, 9, {0x66, 0x0F, 0x1F, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00});
  check_nops(F, 10, {0x66, 0x66, 0x0F, 0x1F, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00});
  check_nops(F, 11, {0x66, 0x66, 0x66, 0x0F, 0x1F, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00});
  check_nops(F, 12, {0x66, 0x66, 0x66, 0x0F, 0x1F, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00,  //
                     0x90});
  check_nops(F, 15, {0x66, 0x66, 0x66, 0x0F, 0x1F, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00,  //
                     0x0F, 0x1F, 0x40, 0x00});
  check_nops(F, 17, {0x66, 0x66, 0x66, 0x0F, 0x1F, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00,  //
                     0x66, 0x0F, 0x1F, 0x44, 0x00, 0x00});
  check_nops(F, 22, cat({P11, P11}));
  check_nops(F, 63, cat({P11, P11, P11, P11, P11, N8}));
}

TEST_CASE("nop_padding: jump form is jmp rel8 over int3, or one 0x90") {
  const auto F = NopForm::kJumpOver;
  check_nops(F, 0, {});
  check_nops(F, 1, {0x90});
  check_nops(F, 2, {0xEB, 0x00});
  check_nops(F, 3, {0xEB, 0x01, 0xCC});
  check_nops(F, 5, {0xEB, 0x03, 0xCC, 0xCC, 0xCC});
  check_nops(F, 8, {0xEB, 0x06, 0xCC, 0xCC, 0xCC, 0xCC, 0xCC, 0xCC});
  check_nops(F, 9, {0xEB, 0x07, 0xCC, 0xCC, 0xCC, 0xCC, 0xCC, 0xCC, 0xCC});
  check_nops(F, 11, {0xEB, 0x09, 0xCC, 0xCC, 0xCC, 0xCC, 0xCC, 0xCC, 0xCC, 0xCC, 0xCC});
  check_nops(F, 12, {0xEB, 0x0A, 0xCC, 0xCC, 0xCC, 0xCC, 0xCC, 0xCC, 0xCC, 0xCC, 0xCC, 0xCC});
  check_nops(F, 15, cat({{0xEB, 0x0D}, Bytes(13, 0xCC)}));
  check_nops(F, 17, cat({{0xEB, 0x0F}, Bytes(15, 0xCC)}));
  check_nops(F, 63, cat({{0xEB, 0x3D}, Bytes(61, 0xCC)}));
}

TEST_CASE("nop_padding: every form gives exactly the requested length") {
  for (auto form : kForms)
    for (std::size_t len = 0; len <= 255; ++len) {
      const Bytes b = nop_padding(form, len);
      CHECK_MESSAGE(b.size() == len, name_of(form) << " " << len);
    }
}

TEST_CASE("padding_for") {
  CHECK(padding_for(0, 64) == 0);
  CHECK(padding_for(1, 64) == 63);
  CHECK(padding_for(63, 64) == 1);
  CHECK(padding_for(64, 64) == 0);
  CHECK(padding_for(65, 64) == 63);
  CHECK(padding_for(100, 32) == 28);
  CHECK(padding_for(17, 16) == 15);
  CHECK(padding_for(48, 16) == 0);
  CHECK(padding_for(12345, 1) == 0);
  CHECK(padding_for(12345, 0) == 0);
  static_assert(padding_for(3, 16) == 13);
  for (std::size_t a : {1u, 16u, 32u, 64u})
    for (std::size_t off = 0; off < 200; ++off) {
      const auto pad = padding_for(off, a);
      CHECK(pad < std::max<std::size_t>(a, 1));
      CHECK((off + pad) % a == 0);
    }
}

// ===================================================================== emitted code bytes ==

namespace {

/// The plan's code with asmjit's listing and every label's offset, emitted through a CodeHolder
/// the test owns (so label offsets can be read back).
struct Emitted {
  Bytes bytes;
  std::string listing;
  std::map<std::uint32_t, std::uint64_t> label_offset;  // bound labels
  std::vector<std::uint32_t> loop_heads;                // targets of backward jumps, in code order
};

Emitted emit_with_labels(const CopyPlan& plan) {
  Emitted out;
  asmjit::Environment env(asmjit::Arch::kX64);
  asmjit::CodeHolder code;
  code.init(env);
  asmjit::StringLogger logger;
  code.setLogger(&logger);
  asmjit::x86::Assembler a(&code);
  const Status st = emit(plan, *a.as<asmjit::x86::Emitter>());
  REQUIRE_MESSAGE(st.ok(), (st.ok() ? std::string() : st.error().message));
  const auto& buf = code.textSection()->buffer();
  out.bytes.assign(buf.data(), buf.data() + buf.size());
  out.listing = logger.data();

  // Labels print as "L<id>:"; a jump "j.. L<id>" after the label's binding is a loop's back edge.
  static const std::regex bind_re(R"(^L(\d+):\s*$)");
  static const std::regex jump_re(R"(^(?:short )?j[a-z]+ L(\d+)\b)");
  std::set<std::uint32_t> bound, heads;
  std::istringstream lines(out.listing);
  std::string line;
  std::smatch m;
  while (std::getline(lines, line)) {
    if (std::regex_search(line, m, bind_re)) {
      bound.insert(static_cast<std::uint32_t>(std::stoul(m[1])));
    } else if (std::regex_search(line, m, jump_re)) {
      const auto id = static_cast<std::uint32_t>(std::stoul(m[1]));
      if (bound.count(id)) heads.insert(id);
    }
  }
  for (auto id : bound) out.label_offset[id] = code.labelOffset(id);
  out.loop_heads.assign(heads.begin(), heads.end());
  std::sort(out.loop_heads.begin(), out.loop_heads.end(),
            [&](auto x, auto y) { return out.label_offset[x] < out.label_offset[y]; });
  return out;
}

std::size_t loop_class_count(const CopyPlan& plan) {
  std::size_t n = 0;
  for (const auto& c : plan.classes)
    n += c.strategy == Strategy::kAlignedLoop || c.strategy == Strategy::kNonTemporalLoop;
  return n;
}

}  // namespace

TEST_CASE("assemble: a fixed simple plan starts with mov rax, rdi") {
  CopyParams p = params_w(8, 1);
  p.loop_align = 1;
  const CopyPlan plan = plan_for(p);
  std::string listing;
  auto bytes = assemble(plan, &listing);
  REQUIRE(bytes.ok());
  REQUIRE(bytes->size() >= 3);
  CHECK((*bytes)[0] == 0x48);
  CHECK((*bytes)[1] == 0x89);
  CHECK((*bytes)[2] == 0xF8);
  CHECK(bytes->back() == 0xC3);  // the last leaf ends with ret (no vzeroupper at width 8)
  CHECK(listing.rfind("mov rax, rdi", 0) == 0);
  // Deterministic: the same plan gives the same bytes.
  auto again = assemble(plan);
  REQUIRE(again.ok());
  CHECK(*again == *bytes);
  // Every width's routine begins the same way.
  for (auto w : kWidths) {
    auto b = assemble(plan_for(params_w(w)));
    REQUIRE(b.ok());
    CHECK(Bytes(b->begin(), b->begin() + 3) == Bytes{0x48, 0x89, 0xF8});
  }
}

TEST_CASE("masked class: n = 0 exit and page guard before the masked moves, unmasked ladder behind it") {
  // mask_max = M: lengths 1..M take masked moves unless [src, src+M) or [dst, dst+M) crosses a
  // 4 KiB page (fault suppression into an unmapped page is a microcode assist); the crossing
  // path is the unmasked ladder n = 0, 1, (1, 2], ..., (M/2, M]. n = 0 returns first: a zero mask
  // still issues the accesses (test_paths traces it on AVX-512BW hosts; this checks the code of
  // every form on any host, the longest jump included: mask_shift, 128, low bank).
  for (Operation op : {Operation::kMemcpy, Operation::kMemmove, Operation::kFill})
    for (std::uint32_t m : {16u, 32u, 64u, 128u})
      for (bool shift : {false, true})
        for (RegisterBank bank : {RegisterBank::kLow, RegisterBank::kHigh}) {
      CAPTURE(name_of(op));
      CAPTURE(m);
      CAPTURE(shift);
      CopyParams p = params_w(64);
      p.operation = op;
      p.mask_max = m;
      p.mask_shift = shift;
      p.register_bank = bank;
      const CopyPlan plan = plan_for(p);
      REQUIRE(plan.classes.front().strategy == Strategy::kMasked);
      CHECK(plan.classes.front().hi == m);
      CHECK(plan.classes[1].lo == m + 1);
      std::string listing;
      REQUIRE(assemble(plan, &listing).ok());
      const auto zero = listing.find("test rdx, rdx\nshort jz ");  // a rel8 jump: in range
      const auto guard = listing.find("test ecx, 4096\njnz ");
      const auto first_mask = listing.find("{k1}");
      REQUIRE(zero != std::string::npos);
      REQUIRE(guard != std::string::npos);
      REQUIRE(first_mask != std::string::npos);
      CHECK(zero < guard);
      CHECK(guard < first_mask);
      if (shift) continue;  // the rest is the guard of the whole block (mask_shift: test_verify)
      // The block's last byte is what the guard looks at: dst always, src for copies.
      CHECK(contains(listing, "lea ecx, [rdi+" + std::to_string(m - 1) + "]"));
      CHECK(contains(listing, "lea r8d, [rsi+" + std::to_string(m - 1) + "]") == (op != Operation::kFill));
      // Two masks (k1 at +0, k2 at +64) only for 128.
      CHECK(contains(listing, "{k2}") == (m == 128));
      // The crossing path has the unmasked head/tail moves up to M: (M/2, M] with M/2-byte ends.
      const std::string widest = m == 128 ? "zmmword ptr [rdi+rdx-64]" : m == 64 ? "ymmword ptr [rdi+rdx-32]"
                                 : m == 32                                 ? "xmmword ptr [rdi+rdx-16]"
                                                                           : "qword ptr [rdi+rdx-8]";
      CHECK(contains(listing, widest));
    }
}

TEST_CASE("assemble: rejects a broken plan with check_plan's error") {
  CopyPlan plan = plan_for(params_w(32));
  plan.classes.pop_back();
  auto b = assemble(plan);
  REQUIRE_FALSE(b.ok());
  CHECK(b.error().code == ErrorCode::kInvalidParams);
}

TEST_CASE("emit: loop_align > 1 needs an Assembler") {
  CopyParams p = params_w(32);
  p.loop_align = 64;
  const CopyPlan plan = plan_for(p);
  asmjit::Environment env(asmjit::Arch::kX64);
  asmjit::CodeHolder code;
  code.init(env);
  asmjit::x86::Builder b(&code);
  const Status st = emit(plan, *b.as<asmjit::x86::Emitter>());
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().code == ErrorCode::kInvalidArgument);
  // With loop_align 1 any emitter works.
  p.loop_align = 1;
  asmjit::CodeHolder code2;
  code2.init(env);
  asmjit::x86::Builder b2(&code2);
  CHECK(emit(plan_for(p), *b2.as<asmjit::x86::Emitter>()).ok());
}

TEST_CASE("emit: loop heads are aligned and preceded by exactly nop_padding(form, gap)") {
  std::map<NopForm, int> nontrivial_gaps;  // per form, how many gaps of >= 2 bytes were checked
  int heads_checked = 0;
  for (auto w : kWidths) {
    for (std::uint32_t u : {1u, 4u, 16u}) {
      for (int variant = 0; variant < 2; ++variant) {
        CopyParams base_p = params_w(w, u);
        if (variant == 1) {  // rep and non-temporal classes: two loops
          base_p.rep_threshold = 4096;
          base_p.nt_threshold = std::uint64_t{1} << 20;
          base_p.prefetch_distance = 256;
        }
        base_p.loop_align = 1;
        const CopyPlan base_plan = plan_for(base_p);
        const Emitted base = emit_with_labels(base_plan);
        const std::size_t loops = loop_class_count(base_plan);
        REQUIRE(loops == (variant == 1 ? 2u : 1u));
        // One head per main loop, plus its one-vector rest loop.
        REQUIRE(base.loop_heads.size() == loops * 2);

        for (std::uint32_t A : {16u, 32u, 64u}) {
          for (auto form : kForms) {
            CopyParams p = base_p;
            p.loop_align = A;
            p.nop_form = form;
            const CopyPlan plan = plan_for(p);
            const Emitted e = emit_with_labels(plan);
            INFO("V=" << w << " U=" << u << " variant=" << variant << " align=" << A
                      << " form=" << name_of(form));
            REQUIRE(e.loop_heads == base.loop_heads);  // same labels, same order

            // assemble() gives the same bytes as this CodeHolder.
            auto asm_bytes = assemble(plan);
            REQUIRE(asm_bytes.ok());
            CHECK(*asm_bytes == e.bytes);

            std::uint64_t padded_so_far = 0;
            for (auto id : e.loop_heads) {
              const std::uint64_t off = e.label_offset.at(id);
              const std::uint64_t off1 = base.label_offset.at(id);
              REQUIRE(off >= off1 + padded_so_far);
              const std::uint64_t gap = off - off1 - padded_so_far;  // padding before this head
              CAPTURE(off);
              CAPTURE(gap);
              CHECK(off % A == 0);
              CHECK(gap < A);
              CHECK(gap == padding_for(off - gap, A));
              const Bytes pad(e.bytes.begin() + static_cast<std::ptrdiff_t>(off - gap),
                              e.bytes.begin() + static_cast<std::ptrdiff_t>(off));
              CHECK_MESSAGE(pad == nop_padding(form, gap),
                            "padding " << hex(pad) << " expected " << hex(nop_padding(form, gap)));
              // The loop body itself is unchanged by the padding.
              const std::size_t body = std::min<std::size_t>(12, e.bytes.size() - off);
              CHECK(Bytes(e.bytes.begin() + off, e.bytes.begin() + off + body) ==
                    Bytes(base.bytes.begin() + off1, base.bytes.begin() + off1 + body));
              padded_so_far += gap;
              if (gap >= 2) ++nontrivial_gaps[form];
              ++heads_checked;
            }
            // Nothing but the loop-head padding changed the code size.
            CHECK(e.bytes.size() == base.bytes.size() + padded_so_far);
          }
        }
      }
    }
  }
  CHECK(heads_checked > 100);
  for (auto form : kForms) CHECK_MESSAGE(nontrivial_gaps[form] > 10, name_of(form));
}

TEST_CASE("assemble: listing respects the ISA, vzeroupper and sfence invariants") {
  for (auto w : kWidths) {
    for (std::uint32_t u : {1u, 8u}) {
      CopyParams p = params_w(w, u);
      p.rep_threshold = 2048;
      p.nt_threshold = 1 << 16;
      p.prefetch_distance = 128;
      p.prefetch_hint = PrefetchHint::kNTA;
      const CopyPlan plan = plan_for(p);
      std::string listing;
      auto bytes = assemble(plan, &listing);
      REQUIRE(bytes.ok());
      INFO("V=" << w << " U=" << u);
      REQUIRE_FALSE(listing.empty());
      // Instruction-set limits (docs/architecture.md, invariant 6).
      if (w <= 16) CHECK_FALSE(contains(listing, "ymm"));
      if (w <= 32) CHECK_FALSE(contains(listing, "zmm"));
      if (w == 8) CHECK_FALSE(contains(listing, "xmm"));
      if (w == 16) CHECK_FALSE(contains(listing, "\nv"));  // no VEX/EVEX at the SSE2 width
      if (w == 64) CHECK(contains(listing, "zmm"));
      if (w == 32) CHECK(contains(listing, "ymm"));
      CHECK(contains(listing, "rep movs"));
      CHECK(contains(listing, "movnt"));
      CHECK(contains(listing, "prefetchnta"));
      // Per exit: a ret reached after YMM/ZMM use is preceded by vzeroupper (invariant 5); a
      // path with non-temporal stores has sfence after its last movnt (invariant 4).
      std::istringstream lines(listing);
      std::string line, prev;
      bool wide = false;
      bool nt_pending = false;
      int rets = 0;
      while (std::getline(lines, line)) {
        if (contains(line, "ymm") || contains(line, "zmm")) wide = true;
        if (contains(line, "movnt")) nt_pending = true;
        if (line.rfind("sfence", 0) == 0) nt_pending = false;
        if (line.rfind("ret", 0) == 0) {
          ++rets;
          if (wide) CHECK_MESSAGE(prev.rfind("vzeroupper", 0) == 0, "ret #" << rets);
          CHECK_MESSAGE(!nt_pending, "ret #" << rets << " without sfence after movnt");
          wide = false;
          nt_pending = false;
        }
        prev = line;
      }
      CHECK(rets == static_cast<int>(plan.classes.size()));  // one exit per size class
    }
  }
}

// ========================================================================= plan structure ==

namespace {
struct Expect {
  std::uint64_t lo, hi;
  Strategy s;
  std::uint32_t block;
};

void check_classes(const CopyPlan& plan, const std::vector<Expect>& expect) {
  REQUIRE(plan.classes.size() == expect.size());
  for (std::size_t i = 0; i < expect.size(); ++i) {
    CAPTURE(i);
    CHECK(plan.classes[i].lo == expect[i].lo);
    CHECK(plan.classes[i].hi == expect[i].hi);
    CHECK(plan.classes[i].strategy == expect[i].s);
    CHECK(plan.classes[i].block == expect[i].block);
  }
}

void check_contiguous(const CopyPlan& plan) {
  REQUIRE_FALSE(plan.classes.empty());
  CHECK(plan.classes.front().lo == 0);
  CHECK(plan.classes.back().hi == kNever);
  for (std::size_t i = 1; i < plan.classes.size(); ++i)
    CHECK(plan.classes[i].lo == plan.classes[i - 1].hi + 1);
}

constexpr auto kN = Strategy::kNone;
constexpr auto kB = Strategy::kBlock;
constexpr auto kHT = Strategy::kHeadTail;
constexpr auto kL = Strategy::kAlignedLoop;
constexpr auto kR = Strategy::kRepString;
constexpr auto kNT = Strategy::kNonTemporalLoop;
}  // namespace

TEST_CASE("vector_ladder: the documented ladder for each width") {
  // Classes (b, 2b]: a power-of-two length takes the smaller block.
  const std::vector<Expect> small{{0, 0, kN, 0},  {1, 1, kB, 1},  {2, 2, kHT, 1},  {3, 4, kHT, 2},
                                  {5, 8, kHT, 4}, {9, 16, kHT, 8}, {17, 32, kHT, 16}};
  auto with = [&](std::vector<Expect> tail) {
    auto v = small;
    v.insert(v.end(), tail.begin(), tail.end());
    return v;
  };
  const std::map<std::uint32_t, std::vector<Expect>> expected{
      {8, with({{33, kNever, kL, 0}})},
      {16, with({{33, 64, kHT, 32}, {65, 128, kHT, 64}, {129, kNever, kL, 0}})},
      {32, with({{33, 64, kHT, 32}, {65, 128, kHT, 64}, {129, 256, kHT, 128}, {257, kNever, kL, 0}})},
      {64, with({{33, 64, kHT, 32},
                 {65, 128, kHT, 64},
                 {129, 256, kHT, 128},
                 {257, 512, kHT, 256},
                 {513, kNever, kL, 0}})},
  };
  for (auto w : kWidths) {
    CAPTURE(w);
    const CopyPlan plan = vector_ladder(params_w(w));
    CHECK(plan.ladder == "vector");
    CHECK(plan.vec == w);
    CHECK(plan.params == params_w(w));
    CHECK(check_plan(plan).ok());
    check_contiguous(plan);
    check_classes(plan, expected.at(w));
    for (const auto& c : plan.classes) CHECK(c.weight >= 0.002);
    // make_plan builds the same plan.
    CHECK(plan_for(params_w(w)) == plan);
    // The printed ladder has one line per class.
    const std::string text = to_string(plan);
    CHECK(contains(text, "VEC = " + std::to_string(w)));
    // JSON form of the plan.
    const json j = to_json(plan);
    CHECK(j["ladder"] == "vector");
    CHECK(j["vector_width"] == w);
    REQUIRE(j["classes"].size() == plan.classes.size());
    CHECK(j["classes"].back()["hi"] == "max");
    CHECK(j["classes"][0]["strategy"] == "none");
  }
}

TEST_CASE("ladder_strategy: the class of vector_ladder that holds n, at every class edge") {
  for (auto w : kWidths) {
    CopyParams p = params_w(w);
    p.rep_threshold = 32768;
    p.rep_stop = 262144;
    p.rep_resume = 1u << 20;
    p.nt_threshold = 32u << 20;
    CAPTURE(to_string(p));
    const CopyPlan plan = vector_ladder(p);
    for (const SizeClass& c : plan.classes)
      for (std::uint64_t n : {c.lo, c.hi, c.lo + (c.hi - c.lo) / 2}) {
        CAPTURE(n);
        CHECK(ladder_strategy(p, n) == c.strategy);
      }
    // The rep band, the loop between the bands, rep again, then non-temporal stores.
    CHECK(ladder_strategy(p, 262143) == kR);
    CHECK(ladder_strategy(p, 262144) == kL);
    CHECK(ladder_strategy(p, (1u << 20) - 1) == kL);
    CHECK(ladder_strategy(p, 1u << 20) == kR);
    CHECK(ladder_strategy(p, 32u << 20) == kNT);
    CHECK(ladder_strategy(p, kNever) == kNT);  // the last class ends at max
  }
}

TEST_CASE("vector_ladder: thresholds below the loop start are raised to it") {
  for (auto w : kWidths) {
    const std::uint64_t L = loop_start(w);
    CAPTURE(w);
    struct T {
      std::uint64_t rep, nt;
      bool align;
    };
    for (const T t : {T{0, kNever, true}, T{0, kNever, false}, T{kNever, 0, true}, T{0, 0, true},
                      T{1, 1, false}, T{5, 17, true}, T{17, 5, false}, T{0, 40, false}}) {
      CopyParams p = params_w(w);
      p.rep_threshold = t.rep;
      p.nt_threshold = t.nt;
      p.rep_align_dst = t.align;
      CAPTURE(to_string(p));
      const CopyPlan plan = plan_for(p);
      CHECK(check_plan(plan).ok());
      check_contiguous(plan);
      for (const auto& c : plan.classes) {
        if (c.strategy == kR || c.strategy == kNT || c.strategy == kL) CHECK(c.lo >= L);
        if (c.strategy == kR && t.align) CHECK(c.lo >= 64);
        if (c.lo < L) CHECK((c.strategy == kN || c.strategy == kB || c.strategy == kHT));
      }
      // The small classes are those of the default ladder.
      const CopyPlan def = vector_ladder(params_w(w));
      for (std::size_t i = 0; i + 1 < def.classes.size(); ++i) {
        CHECK(plan.classes[i].lo == def.classes[i].lo);
        CHECK(plan.classes[i].hi == def.classes[i].hi);
        CHECK(plan.classes[i].strategy == def.classes[i].strategy);
      }
    }
  }
  // Exact ladders for a few cases.
  {
    CopyParams p = params_w(8);
    p.rep_threshold = 0;  // raised to max(33, 64) because of the dst alignment
    const CopyPlan plan = plan_for(p);
    REQUIRE(plan.classes.size() == 9);
    CHECK(plan.classes[7].lo == 33);
    CHECK(plan.classes[7].hi == 63);
    CHECK(plan.classes[7].strategy == kL);
    CHECK(plan.classes[8].lo == 64);
    CHECK(plan.classes[8].hi == kNever);
    CHECK(plan.classes[8].strategy == kR);
  }
  {
    CopyParams p = params_w(8);
    p.rep_threshold = 0;
    p.rep_align_dst = false;  // raised to 33 only
    const CopyPlan plan = plan_for(p);
    REQUIRE(plan.classes.size() == 8);
    CHECK(plan.classes[7].lo == 33);
    CHECK(plan.classes[7].strategy == kR);
  }
  {
    CopyParams p = params_w(32);
    p.nt_threshold = 0;
    const CopyPlan plan = plan_for(p);
    REQUIRE(plan.classes.size() == 11);
    CHECK(plan.classes[10].lo == 257);
    CHECK(plan.classes[10].hi == kNever);
    CHECK(plan.classes[10].strategy == kNT);
  }
  {
    CopyParams p = params_w(32);
    p.rep_threshold = 1024;
    p.nt_threshold = 1 << 18;
    const CopyPlan plan = plan_for(p);
    REQUIRE(plan.classes.size() == 13);
    CHECK(plan.classes[10].lo == 257);
    CHECK(plan.classes[10].hi == 1023);
    CHECK(plan.classes[10].strategy == kL);
    CHECK(plan.classes[11].lo == 1024);
    CHECK(plan.classes[11].hi == (1 << 18) - 1);
    CHECK(plan.classes[11].strategy == kR);
    CHECK(plan.classes[12].lo == (1 << 18));
    CHECK(plan.classes[12].hi == kNever);
    CHECK(plan.classes[12].strategy == kNT);
  }
  {
    CopyParams p = params_w(16);
    p.nt_threshold = std::uint64_t{1} << 48;
    const CopyPlan plan = plan_for(p);
    CHECK(plan.classes.back().lo == (std::uint64_t{1} << 48));
    CHECK(plan.classes.back().strategy == kNT);
  }
}

TEST_CASE("vector_ladder: rep_threshold >= nt_threshold means no rep class") {
  for (auto w : kWidths) {
    for (auto [rep, nt] : std::vector<std::pair<std::uint64_t, std::uint64_t>>{
             {5000, 4096}, {4096, 4096}, {0, 0}, {1 << 20, 1 << 12}}) {
      CopyParams p = params_w(w);
      p.rep_threshold = rep;
      p.nt_threshold = nt;
      CAPTURE(w);
      CAPTURE(rep);
      CAPTURE(nt);
      const CopyPlan plan = plan_for(p);
      CHECK(check_plan(plan).ok());
      for (const auto& c : plan.classes) CHECK(c.strategy != kR);
      CHECK(plan.classes.back().strategy == kNT);
      CHECK(plan.classes.back().lo == std::max(nt, loop_start(w)));
    }
  }
}

TEST_CASE("vector_ladder: rep_stop ends the rep band and hands the lengths above back to the loop") {
  for (auto w : kWidths) {
    CAPTURE(w);
    CopyParams p = params_w(w);
    p.rep_threshold = 8192;
    p.rep_stop = 1 << 20;
    p.nt_threshold = 16 << 20;
    const CopyPlan plan = plan_for(p);
    REQUIRE(check_plan(plan).ok());
    std::vector<std::tuple<std::uint64_t, std::uint64_t, Strategy>> big;
    for (const auto& c : plan.classes)
      if (c.lo >= loop_start(w)) big.emplace_back(c.lo, c.hi, c.strategy);
    const std::vector<std::tuple<std::uint64_t, std::uint64_t, Strategy>> expect{
        {loop_start(w), 8191, Strategy::kAlignedLoop}, {8192, (1 << 20) - 1, kR},
        {1 << 20, (16 << 20) - 1, Strategy::kAlignedLoop}, {16 << 20, kNever, kNT}};
    CHECK(big == expect);
    // A stop at or below the band's start removes the band; one above nt_threshold changes nothing.
    p.rep_stop = 8192;
    for (const auto& c : plan_for(p).classes) CHECK(c.strategy != kR);
    p.rep_stop = 64 << 20;
    const CopyPlan wide = plan_for(p);
    CHECK(std::count_if(wide.classes.begin(), wide.classes.end(),
                        [](const SizeClass& c) { return c.strategy == Strategy::kAlignedLoop; }) == 1);
  }
}

TEST_CASE("vector_ladder: rep_resume opens a second rep band above the loop band rep_stop began") {
  for (auto w : kWidths) {
    CAPTURE(w);
    CopyParams p = params_w(w);
    p.rep_threshold = 8192;
    p.rep_stop = 1 << 20;
    p.rep_resume = 4 << 20;
    p.nt_threshold = 16 << 20;
    const CopyPlan plan = plan_for(p);
    REQUIRE(check_plan(plan).ok());
    auto big = [&](const CopyPlan& pl) {
      std::vector<std::tuple<std::uint64_t, std::uint64_t, Strategy>> out;
      for (const auto& c : pl.classes)
        if (c.lo >= loop_start(w)) out.emplace_back(c.lo, c.hi, c.strategy);
      return out;
    };
    using Row = std::tuple<std::uint64_t, std::uint64_t, Strategy>;
    CHECK(big(plan) == std::vector<Row>{{loop_start(w), 8191, Strategy::kAlignedLoop},
                                        {8192, (1 << 20) - 1, kR},
                                        {1 << 20, (4 << 20) - 1, Strategy::kAlignedLoop},
                                        {4 << 20, (16 << 20) - 1, kR},
                                        {16 << 20, kNever, kNT}});
    // Without non-temporal stores the second band runs to the end.
    p.nt_threshold = kNever;
    CHECK(big(plan_for(p)).back() == Row{4 << 20, kNever, kR});
    p.nt_threshold = 16 << 20;
    // A resume at or below the stop, at or above nt_threshold, or without a stop changes nothing.
    CopyParams q = p;
    q.rep_resume = kNever;
    const auto one_band = big(plan_for(q));
    for (std::uint64_t r : {std::uint64_t{1} << 20, std::uint64_t{8192}, std::uint64_t{16} << 20, std::uint64_t{32} << 20}) {
      CAPTURE(r);
      p.rep_resume = r;
      CHECK(big(plan_for(p)) == one_band);
    }
    p.rep_stop = kNever;
    p.rep_resume = 4 << 20;
    q.rep_stop = kNever;
    CHECK(big(plan_for(p)) == big(plan_for(q)));
    // No rep class, no band.
    p.rep_threshold = kNever;
    for (const auto& c : plan_for(p).classes) CHECK(c.strategy != kR);
  }
}

TEST_CASE("large_lengths_differ: the lengths where two thresholds' choices run different code") {
  for (auto w : kWidths) {
    CAPTURE(w);
    CopyParams a = params_w(w);
    a.rep_threshold = 32768;
    a.rep_stop = 1 << 20;
    a.nt_threshold = 16 << 20;
    CopyParams b = a;
    CHECK(first_large_difference(a, b) == kNever);
    for (std::uint64_t n : {std::uint64_t{1}, std::uint64_t{32768}, std::uint64_t{64} << 20})
      CHECK_FALSE(large_lengths_differ(a, b, n, 0, 0));
    // The rep band runs to 4 MiB instead of 1 MiB: different code at 1 MiB .. 4 MiB - 1 only.
    b.rep_stop = 4 << 20;
    CHECK(first_large_difference(a, b) == (1u << 20));
    CHECK_FALSE(large_lengths_differ(a, b, (1 << 20) - 1, 0, 0));
    CHECK(large_lengths_differ(a, b, 1 << 20, 0, 0));
    CHECK(large_lengths_differ(a, b, (4 << 20) - 1, 2048, 1));
    CHECK_FALSE(large_lengths_differ(a, b, 4 << 20, 0, 0));
    CHECK_FALSE(large_lengths_differ(a, b, 16 << 20, 0, 0));
    // Another rep form differs in the band only; a rep band for an aligned dst only, at an
    // aligned dst only.
    b = a;
    b.rep_unit = 8;
    CHECK(first_large_difference(a, b) == 32768);
    CHECK_FALSE(large_lengths_differ(a, b, 32767, 0, 0));
    CHECK(large_lengths_differ(a, b, 65536, 2048, 1));
    CHECK_FALSE(large_lengths_differ(a, b, 1 << 20, 0, 0));
    b = a;
    b.rep_aligned_only = true;
    CHECK(large_lengths_differ(a, b, 65536, 2048, 1));  // a runs rep, b the loop
    a.rep_threshold = kNever;
    b.rep_stop = kNever;
    CHECK(large_lengths_differ(a, b, 65536, 0, 0));
    CHECK_FALSE(large_lengths_differ(a, b, 65536, 2048, 1));  // both the loop
    CHECK(first_large_difference(a, b) == 32768);
    // The non-temporal loop's form differs from its threshold on; a rep threshold below the
    // loop's start (and 64, with rep_align_dst) is raised to it, so it is the same code as one
    // there.
    b = a;
    if (w >= 16) {
      b.nt_pages = 2;
      CHECK(first_large_difference(a, b) == (16u << 20));
      CHECK_FALSE(large_lengths_differ(a, b, (16 << 20) - 1, 0, 0));
      CHECK(large_lengths_differ(a, b, 64 << 20, 2048, 1));
    }
    a.rep_threshold = 0;
    b = a;
    const std::uint64_t rep_start = std::max<std::uint64_t>(loop_start(w), 64);
    b.rep_threshold = rep_start;
    CHECK(first_large_difference(a, b) == kNever);
    b.rep_threshold = rep_start + 64;
    CHECK(first_large_difference(a, b) == rep_start);
  }
}

TEST_CASE("large_lengths_differ: a rep class's fallback, the loop below prefetch_min, 4K aliasing") {
  CopyParams a = params_w(32);
  a.prefetch_distance = 1024;
  a.prefetch_min = 131072;
  a.rep_threshold = 32768;
  a.rep_aligned_only = true;
  CopyParams b = a;
  b.rep_threshold = kNever;
  // At 64 KiB with dst misaligned a hands the copy to the prefetching loop; b runs the loop
  // class below prefetch_min, without prefetch: different code, though neither runs rep.
  CHECK(large_lengths_differ(a, b, 65536, 2048, 1));
  CHECK(large_lengths_differ(a, b, 65536, 0, 0));  // a: rep
  // From prefetch_min on both run the prefetching loop at a misaligned dst.
  CHECK_FALSE(large_lengths_differ(a, b, 131072, 2048, 1));
  CHECK(large_lengths_differ(a, b, 131072, 0, 0));
  // rep_alias_window: a copy that would 4K-alias ((dst - src) mod 4096 = 1) takes the loop.
  a.rep_aligned_only = false;
  a.rep_alias_window = 64;
  CHECK_FALSE(large_lengths_differ(a, b, 131072, 0, 1));
  CHECK(large_lengths_differ(a, b, 131072, 2048, 1));
  CHECK(large_lengths_differ(a, b, 131072, 0, 0));  // (dst - src) mod 4096 = 0: no aliasing
  CHECK_FALSE(large_lengths_differ(a, b, 131072, 4095, 0));  // = 1: aliasing
  // rep_alias_loop: such a copy takes the 32-byte loop below the stop, a loop b runs in its own
  // width, and rep from the stop on.
  a.rep_alias_window = 0;
  a.rep_alias_loop = 262144;
  CHECK(large_lengths_differ(a, b, 131072, 0, 1));
  CHECK(large_lengths_differ(a, b, 262144, 0, 1));  // a: rep
  CopyParams c = a;  // the same copies to the routine's own loop
  c.rep_alias_loop = kNever;
  c.rep_alias_window = 64;
  CHECK(large_lengths_differ(a, c, 131072, 0, 1));
  CHECK_FALSE(large_lengths_differ(a, c, 131072, 2048, 1));  // no aliasing: rep in both
  CHECK(first_large_difference(a, c) == 32768);
  c.rep_alias_window = 0;
  c.rep_alias_loop = 131072;
  CHECK(first_large_difference(a, c) == 131072);
  // Both: the 32-byte loop below the stop, the routine's loop (the window) from it on.
  c.rep_alias_window = 64;
  c.rep_alias_loop = 131072;
  CHECK_FALSE(large_lengths_differ(a, c, 65536, 0, 1));      // the 32-byte loop in both
  CHECK(large_lengths_differ(a, c, 131072, 0, 1));           // c: the routine's loop; a: still 32
  CHECK(large_lengths_differ(a, c, 262144, 0, 1));           // c: the routine's loop; a: rep
  CHECK_FALSE(large_lengths_differ(a, c, 262144, 2048, 1));  // no aliasing: rep in both
  a.operation = Operation::kFill;  // fill has no source: no aliasing guard
  b.operation = Operation::kFill;
  a.rep_alias_loop = kNever;
  CHECK(large_lengths_differ(a, b, 131072, 0, 1));
}

TEST_CASE("rep_aligned_from: rep for any dst below it, for a 64-aligned dst only from it on") {
  for (auto w : kWidths) {
    CAPTURE(w);
    CopyParams a = params_w(w);
    a.rep_threshold = 32768;
    a.nt_threshold = 16 << 20;
    CopyParams b = a;
    b.rep_aligned_from = 1 << 20;
    // The same rep class (no new size class); a misaligned dst takes the loop from 1 MiB on.
    CHECK(plan_for(a).classes.size() == plan_for(b).classes.size());
    CHECK(first_large_difference(a, b) == (1u << 20));
    CHECK_FALSE(large_lengths_differ(a, b, (1 << 20) - 1, 2048, 1));
    CHECK(large_lengths_differ(a, b, 1 << 20, 2048, 1));
    CHECK(large_lengths_differ(a, b, (16 << 20) - 1, 0, 33));
    CHECK_FALSE(large_lengths_differ(a, b, 1 << 20, 0, 0));  // aligned dst: rep in both
    CHECK_FALSE(large_lengths_differ(a, b, 1 << 20, 100, 64));
    CHECK_FALSE(large_lengths_differ(a, b, 16 << 20, 0, 1));  // the non-temporal class in both
    // At or below the rep class's start it is rep_aligned_only; rep_aligned_only overrides it.
    CopyParams c = a;
    c.rep_aligned_only = true;
    b.rep_aligned_from = 0;
    CHECK(first_large_difference(b, c) == kNever);
    b.rep_aligned_from = 1 << 20;
    c.rep_aligned_from = 1 << 20;
    CHECK(first_large_difference(a, c) == 32768);
    CHECK(large_lengths_differ(b, c, 32768, 0, 1));
    // Only in the first rep band: a second band beyond the caches (rep_resume) takes any dst.
    CopyParams two = b;
    two.rep_stop = 2 << 20;
    two.rep_resume = 8 << 20;
    CHECK(large_lengths_differ(two, a, 1 << 20, 0, 1));            // first band, misaligned: the loop
    CHECK_FALSE(large_lengths_differ(two, a, 8 << 20, 0, 1));      // second band: rep, as a
    CHECK_FALSE(large_lengths_differ(two, a, 8 << 20, 2048, 33));
    // Without a rep class it changes nothing.
    a.rep_threshold = kNever;
    b.rep_threshold = kNever;
    CHECK(first_large_difference(a, b) == kNever);
    // The split is an edge verification tests; its description names it.
    b.rep_threshold = 32768;
    const CopyPlan plan = plan_for(b);
    const auto edges = plan_edges(plan);
    CHECK(std::count(edges.begin(), edges.end(), std::uint64_t{1} << 20) == 1);
    bool described = false;
    for (const auto& k : plan.classes)
      if (k.strategy == Strategy::kRepString)
        described = describe_class(plan, k).find("from 1048576 bytes the loop when dst is not 64-byte aligned") !=
                    std::string::npos;
    CHECK(described);
  }
}

TEST_CASE("rep_aligned_mutual: the rep class's alignment test is (dst - src) mod 64, for copies only") {
  const IsaFeatures all = IsaFeatures::for_level(IsaLevel::kAVX512);
  for (Operation op : {Operation::kMemcpy, Operation::kMemmove}) {
    CAPTURE(name_of(op));
    CopyParams a = params_w(32);
    a.operation = op;
    a.rep_threshold = 32768;
    a.nt_threshold = 16 << 20;
    a.rep_aligned_only = true;
    CopyParams m = a;
    m.rep_aligned_mutual = true;
    REQUIRE(validate(m, all).ok());
    // The test itself: dst alone, or dst against src.
    CHECK(rep_alignment_passes(a, 4, 64));
    CHECK_FALSE(rep_alignment_passes(a, 16, 16));
    CHECK(rep_alignment_passes(m, 16, 16));
    CHECK(rep_alignment_passes(m, 4095, 4095 + 128));
    CHECK_FALSE(rep_alignment_passes(m, 4, 64));
    CHECK_FALSE(rep_alignment_passes(m, 64, 0 + 4));
    // Both 16 bytes off 64 (malloc's buffers): rep under m, the loop under a.
    CHECK(large_lengths_differ(a, m, 1 << 20, 16, 16));
    CHECK(large_lengths_differ(a, m, 1 << 20, 4095, 0));     // dst aligned, src not: a rep, m the loop
    CHECK_FALSE(large_lengths_differ(a, m, 1 << 20, 0, 0));   // both aligned: rep in both
    CHECK_FALSE(large_lengths_differ(a, m, 1 << 20, 0, 1));   // dst 1 off a page-aligned src: the loop
    CHECK_FALSE(large_lengths_differ(a, m, 1 << 20, 2048, 33));
    CHECK(first_large_difference(a, m) == 32768);
    // Other code, and the plan says which test.
    CHECK(*assemble(plan_for(a)) != *assemble(plan_for(m)));
    CHECK(contains(to_string(plan_for(m)), "the loop when dst and src are not mutually 64-byte aligned"));
    CHECK_FALSE(contains(to_string(plan_for(a)), "mutually"));
    // With a split (rep_aligned_from) the test applies from the split on.
    CopyParams split = m;
    split.rep_aligned_only = false;
    split.rep_aligned_from = 1 << 20;
    CHECK_FALSE(large_lengths_differ(split, m, (1 << 20) - 1, 0, 0));
    CHECK(large_lengths_differ(split, m, (1 << 20) - 1, 0, 1));  // below the split: rep for any dst
    CHECK_FALSE(large_lengths_differ(split, m, 1 << 20, 0, 1));
    CHECK_FALSE(large_lengths_differ(split, m, 1 << 20, 16, 16));
    CHECK(contains(to_string(plan_for(split)), "from 1048576 bytes the loop when dst and src are not mutually"));
    // Without a test (neither rep_aligned_only nor rep_aligned_from) it changes no byte, and is
    // dropped from a winner (without_idle_rep_fields); with one it stays.
    CopyParams idle = m;
    idle.rep_aligned_only = false;
    CopyParams plain = a;
    plain.rep_aligned_only = false;
    CHECK(*assemble(plan_for(idle)) == *assemble(plan_for(plain)));
    CHECK(without_idle_rep_fields(idle) == plain);
    CHECK(without_idle_rep_fields(m) == m);
    CHECK(without_idle_rep_fields(split) == split);
  }
  // Fill and clear_page have no src: refused, with what to do; the test is dst's alone.
  for (Operation op : {Operation::kFill, Operation::kClearPage}) {
    CopyParams f;
    f.operation = op;
    f.rep_aligned_mutual = true;
    CHECK_FALSE(rep_test_mutual(f));
    CHECK(rep_alignment_passes(f, 16, 64));
    CHECK_FALSE(rep_alignment_passes(f, 16, 16));
    const Status st = validate(f, all);
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().code == ErrorCode::kInvalidParams);
    CHECK(contains(st.error().message, "rep_aligned_mutual = true does not apply to"));
    CHECK(contains(st.error().message, "use false"));
  }
}

TEST_CASE("first_large_difference is the shortest length where large_lengths_differ holds") {
  // Pairs of threshold choices on one kernel; every class edge of either ladder, every placement.
  std::vector<CopyParams> ps;
  for (auto w : kWidths) {
    CopyParams p = params_w(w);
    p.prefetch_distance = 512;
    p.prefetch_min = 32768;
    ps.push_back(p);
    p.rep_threshold = 8192;
    ps.push_back(p);
    p.rep_stop = 1 << 20;
    p.rep_resume = 8 << 20;
    p.nt_threshold = 32 << 20;
    ps.push_back(p);
    p.rep_aligned_only = true;
    ps.push_back(p);
    p.rep_aligned_only = false;
    p.rep_aligned_from = 262144;
    ps.push_back(p);
    p.rep_aligned_from = kNever;
    p.rep_alias_window = 256;
    ps.push_back(p);
    p.rep_alias_window = 64;
    ps.push_back(p);
    p.rep_alias_window = 256;
    p.rep_unit = 8;
    ps.push_back(p);
    // The test against src (rep_aligned_mutual), with and without a 4K-aliasing window.
    p.rep_unit = 1;
    p.rep_aligned_only = true;
    p.rep_aligned_mutual = true;
    ps.push_back(p);
    p.rep_alias_window = 0;
    ps.push_back(p);
    // 4K-aliasing copies to the 32-byte loop below 256 KiB (in the first band).
    if (w >= 32) {
      p.rep_aligned_only = false;
      p.rep_aligned_mutual = false;
      p.rep_alias_loop = 262144;
      ps.push_back(p);
      p.rep_alias_loop = kNever;
    }
  }
  const std::uint32_t placements[][2] = {{0, 0}, {0, 1}, {2048, 1}, {4095, 0}, {0, 64}, {100, 33}, {16, 16}, {4, 0}};
  for (const auto& a : ps)
    for (const auto& b : ps) {
      if (a.vector_width.value != b.vector_width.value) continue;
      std::vector<std::uint64_t> lengths;
      for (const CopyParams* p : {&a, &b})
        for (const auto& e : plan_edges(plan_for(*p))) lengths.push_back(e);
      std::sort(lengths.begin(), lengths.end());
      std::uint64_t first = kNever;
      for (std::uint64_t n : lengths)
        for (const auto& o : placements)
          if (first == kNever && large_lengths_differ(a, b, n, o[0], o[1])) first = n;
      CAPTURE(to_string(a));
      CAPTURE(to_string(b));
      CHECK(first_large_difference(a, b) == first);
    }
}

TEST_CASE("plan_edges contains every class lo and hi+1") {
  for (auto w : kWidths) {
    CopyParams p = params_w(w);
    p.rep_threshold = 3000;
    p.nt_threshold = 70000;
    const CopyPlan plan = plan_for(p);
    const auto edges = plan_edges(plan);
    const std::set<std::uint64_t> e(edges.begin(), edges.end());
    for (const auto& c : plan.classes) {
      CHECK(e.count(c.lo) == 1);
      if (c.hi != kNever) CHECK(e.count(c.hi + 1) == 1);
    }
    CHECK(e.count(3000) == 1);
    CHECK(e.count(70000) == 1);
    CHECK(e.count(loop_start(w)) == 1);
    // Nothing else: every edge is a class boundary (no rep_aligned_from here).
    for (auto x : e) {
      bool boundary = false;
      for (const auto& c : plan.classes) boundary |= c.lo == x || (c.hi != kNever && c.hi + 1 == x);
      CHECK(boundary);
    }
  }
}

TEST_CASE("check_plan rejects hand-broken plans") {
  const CopyPlan good = plan_for(params_w(32));
  REQUIRE(check_plan(good).ok());
  auto rejects = [](const CopyPlan& plan, const char* what) {
    const Status st = check_plan(plan);
    CHECK_MESSAGE(!st.ok(), what);
    if (!st.ok()) CHECK(st.error().code == ErrorCode::kInvalidParams);
  };
  {
    CopyPlan p = good;  // gap between classes
    p.classes[4].lo += 1;
    rejects(p, "gap");
  }
  {
    CopyPlan p = good;  // overlap between classes
    p.classes[5].lo -= 1;
    rejects(p, "overlap");
  }
  {
    CopyPlan p = good;  // missing last class
    p.classes.pop_back();
    rejects(p, "missing last class");
  }
  {
    CopyPlan p = good;  // no classes at all
    p.classes.clear();
    rejects(p, "empty");
  }
  {
    CopyPlan p = good;  // does not start at 0
    p.classes.erase(p.classes.begin());
    rejects(p, "starts at 1");
  }
  {
    CopyPlan p = good;  // unbounded class not last
    p.classes[9].hi = kNever;
    p.classes.push_back({0, kNever, Strategy::kAlignedLoop, 0});
    rejects(p, "unbounded class not last");
  }
  {
    // Width 16: head/tail up to 4V = 64 per end; a 128-byte block is too large.
    CopyPlan p = plan_for(params_w(16));
    REQUIRE_EQ(p.classes.back().lo, 129u);
    p.classes.back() = {129, 256, Strategy::kHeadTail, 128};
    p.classes.push_back({257, kNever, Strategy::kAlignedLoop, 0});
    rejects(p, "head/tail block too large (V=16)");
  }
  {
    // Width 8: head/tail up to two GPRs (16 bytes) per end.
    CopyPlan p = plan_for(params_w(8));
    p.classes.back() = {33, 64, Strategy::kHeadTail, 32};
    p.classes.push_back({65, kNever, Strategy::kAlignedLoop, 0});
    rejects(p, "head/tail block too large (V=8)");
  }
  {
    CopyPlan p = good;  // head/tail class wider than 2*block
    p.classes[7] = {33, 128, Strategy::kHeadTail, 32};
    p.classes.erase(p.classes.begin() + 8);
    rejects(p, "head/tail hi > 2*block");
  }
  {
    CopyPlan p = good;  // head/tail block above lo
    p.classes[6].block = 64;
    rejects(p, "head/tail block > lo");
  }
  {
    CopyPlan p = good;  // non-power-of-two block
    p.classes[6].block = 24;
    rejects(p, "head/tail block 24");
  }
  {
    // Loop class starting below 4V = 128 at width 32.
    CopyPlan p = good;
    p.classes.resize(8);  // ..., [33, 64] head/tail
    p.classes.back() = {33, kNever, Strategy::kAlignedLoop, 0};
    rejects(p, "loop below 4V");
  }
  {
    CopyPlan p = good;  // non-temporal loop below 4V
    p.classes.resize(8);
    p.classes.back() = {33, kNever, Strategy::kNonTemporalLoop, 0};
    rejects(p, "nt loop below 4V");
  }
  {
    CopyPlan p = good;  // rep below 4V
    p.classes.resize(8);
    p.classes.back() = {33, kNever, Strategy::kRepString, 0};
    rejects(p, "rep below 4V");
  }
  {
    CopyPlan p = good;  // kNone for n != 0
    p.classes[1].strategy = Strategy::kNone;
    rejects(p, "none for n = 1");
  }
  {
    CopyPlan p = good;  // block move of 3 bytes
    p.classes[1] = {1, 1, Strategy::kBlock, 3};
    rejects(p, "block != n");
  }
  {
    CopyPlan p = good;  // negative weight
    p.classes[3].weight = -1;
    rejects(p, "negative weight");
  }
  {
    CopyPlan p = good;  // NaN weight
    p.classes[3].weight = std::nan("");
    rejects(p, "NaN weight");
  }
  {
    CopyPlan p = good;  // vec differs from params
    p.vec = 16;
    rejects(p, "vec != params.vector_width");
  }
  {
    // rep with dst alignment below 64 (width 8, loop start 33).
    CopyParams q = params_w(8);
    q.rep_threshold = 33;
    q.rep_align_dst = false;
    CopyPlan p = plan_for(q);
    REQUIRE_EQ(p.classes.back().strategy, kR);
    REQUIRE_EQ(p.classes.back().lo, 33u);
    CHECK(check_plan(p).ok());
    p.params.rep_align_dst = true;
    rejects(p, "aligned rep below 64");
  }
}

TEST_CASE("small_ladder: the page-crossing classes of a masked class, checked by check_plan") {
  // n = 0, n = 1, then (b, 2b] up to the block, equal weights.
  const std::vector<SizeClass> want = {{0, 0, Strategy::kNone, 0, 1.0},     {1, 1, Strategy::kBlock, 1, 1.0},
                                       {2, 2, Strategy::kHeadTail, 1, 1.0}, {3, 4, Strategy::kHeadTail, 2, 1.0},
                                       {5, 8, Strategy::kHeadTail, 4, 1.0}, {9, 16, Strategy::kHeadTail, 8, 1.0}};
  CHECK(small_ladder(16) == want);
  CHECK(small_ladder(128).back() == SizeClass{65, 128, Strategy::kHeadTail, 64, 1.0});
  for (std::uint32_t m : {0u, 16u, 32u, 64u, 128u}) {
    CAPTURE(m);
    CopyParams p = params_w(64);
    p.mask_max = m;
    const CopyPlan plan = plan_for(p);
    CHECK(plan.page_cross == (m ? small_ladder(m) : std::vector<SizeClass>{}));
  }
  CopyParams p = params_w(64);
  p.mask_max = 64;
  const CopyPlan good = plan_for(p);
  auto rejects = [](const CopyPlan& plan, const char* what, const char* text) {
    const Status st = check_plan(plan);
    CHECK_MESSAGE(!st.ok(), what);
    if (!st.ok()) CHECK_MESSAGE(contains(st.error().message, text), st.error().message);
  };
  {
    CopyPlan q = good;
    q.page_cross.clear();
    rejects(q, "masked class without page-crossing classes", "page_cross");
  }
  {
    CopyPlan q = good;
    q.page_cross.pop_back();
    rejects(q, "page-crossing classes short of the block", "not at the masked block's 64");
  }
  {
    CopyPlan q = good;
    q.page_cross.push_back({65, 128, Strategy::kHeadTail, 64, 1.0});
    rejects(q, "page-crossing classes past the block", "not at the masked block's 64");
  }
  {
    CopyPlan q = good;
    q.page_cross[3].lo += 1;
    rejects(q, "a gap", "page-crossing class 3");
  }
  {
    CopyPlan q = good;
    q.page_cross.back() = {33, 64, Strategy::kAlignedLoop, 0, 1.0};
    rejects(q, "a loop behind the page guard", "must be n = 0, a block move or head/tail");
  }
  {
    CopyPlan q = plan_for(params_w(64));
    q.page_cross = small_ladder(64);
    rejects(q, "page-crossing classes without a masked class", "no masked class");
  }
}

// ========================================================================= dispatch tree ==

namespace {

int walk(const std::vector<DispatchNode>& t, std::uint64_t n, int* depth = nullptr) {
  int id = 0, d = 0;
  while (t.at(id).leaf < 0) {
    id = n >= t[id].pivot ? t[id].right : t[id].left;
    ++d;
    if (d > 100) return -1;
  }
  if (depth) *depth = d;
  return t[id].leaf;
}

/// Depth of each leaf (class index -> depth), root at depth 0.
std::map<int, int> leaf_depths(const std::vector<DispatchNode>& t) {
  std::map<int, int> out;
  std::function<void(int, int)> rec = [&](int id, int d) {
    if (t.at(id).leaf >= 0) {
      out[t[id].leaf] = d;
      return;
    }
    rec(t[id].left, d + 1);
    rec(t[id].right, d + 1);
  };
  rec(0, 0);
  return out;
}

/// Minimal expected number of compares over all binary search trees of classes i..j (brute force).
double best_cost(const std::vector<double>& w, int i, int j) {
  if (i == j) return 0;
  double best = 1e300, sum = 0;
  for (int k = i; k <= j; ++k) sum += w[k];
  for (int s = i + 1; s <= j; ++s) best = std::min(best, best_cost(w, i, s - 1) + best_cost(w, s, j));
  return best + sum;
}

std::vector<CopyPlan> sample_plans() {
  std::vector<CopyPlan> out;
  for (auto w : kWidths) {
    out.push_back(plan_for(params_w(w)));
    CopyParams p = params_w(w);
    p.rep_threshold = 1024;
    p.nt_threshold = std::uint64_t{1} << 40;  // pivot above INT32_MAX
    out.push_back(plan_for(p));
  }
  return out;
}

}  // namespace

TEST_CASE("dispatch_tree: every class is one leaf and every n reaches its class") {
  std::vector<std::uint64_t> ns;
  for (std::uint64_t n = 0; n <= 1100; ++n) ns.push_back(n);
  for (int b = 0; b < 64; ++b) {
    const std::uint64_t x = std::uint64_t{1} << b;
    ns.push_back(x - 1);
    ns.push_back(x);
    ns.push_back(x + 1);
  }
  ns.push_back(std::uint64_t{1} << 40);
  ns.push_back((std::uint64_t{1} << 40) - 1);
  ns.push_back(0x7FFFFFFFull);
  ns.push_back(0x80000000ull);
  ns.push_back(kNever - 1);
  ns.push_back(kNever);
  for (const auto& plan : sample_plans()) {
    CAPTURE(to_string(plan.params));
    const auto t = dispatch_tree(plan);
    const int k = static_cast<int>(plan.classes.size());
    REQUIRE(t.size() == static_cast<std::size_t>(2 * k - 1));
    std::map<int, int> leaf_count;
    for (const auto& nd : t) {
      if (nd.leaf >= 0) {
        ++leaf_count[nd.leaf];
        CHECK(nd.left == -1);
        CHECK(nd.right == -1);
      } else {
        CHECK(nd.left > 0);
        CHECK(nd.right > 0);
        CHECK(nd.left < static_cast<int>(t.size()));
        CHECK(nd.right < static_cast<int>(t.size()));
      }
    }
    CHECK(static_cast<int>(leaf_count.size()) == k);
    for (int i = 0; i < k; ++i) CHECK_MESSAGE(leaf_count[i] == 1, "class " << i);
    int wrong = 0;
    for (auto n : ns) {
      const int leaf = walk(t, n);
      const SizeClass* c = class_of(plan, n);
      REQUIRE(c != nullptr);
      if (leaf < 0 || leaf >= k || &plan.classes[leaf] != c) {
        ++wrong;
        if (wrong < 5) FAIL_CHECK("n = " << n << " reaches leaf " << leaf);
      }
    }
    CHECK(wrong == 0);
    // Deterministic.
    const auto t2 = dispatch_tree(plan);
    REQUIRE(t2.size() == t.size());
    for (std::size_t i = 0; i < t.size(); ++i) {
      CHECK(t2[i].leaf == t[i].leaf);
      CHECK(t2[i].pivot == t[i].pivot);
    }
  }
}

TEST_CASE("dispatch_tree: all weight on one class puts it at minimal depth") {
  for (const auto& base : sample_plans()) {
    const int k = static_cast<int>(base.classes.size());
    for (int j = 0; j < k; ++j) {
      CopyPlan plan = base;
      for (int i = 0; i < k; ++i) plan.classes[i].weight = i == j ? 1.0 : 0.0;
      const auto depths = leaf_depths(dispatch_tree(plan));
      // The first and last class can be split off by the root; any other needs two compares.
      const int minimal = (j == 0 || j == k - 1) ? 1 : 2;
      CHECK_MESSAGE(depths.at(j) == minimal, "class " << j << " of " << k);
    }
  }
}

TEST_CASE("dispatch_tree: minimises the expected number of compares") {
  std::uint64_t seed = 12345;
  auto rnd = [&] {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return double((seed >> 33) % 1000) / 1000.0;
  };
  for (const auto& base : sample_plans()) {
    const int k = static_cast<int>(base.classes.size());
    if (k > 11) continue;  // brute force is exponential
    for (int trial = 0; trial < 4; ++trial) {
      CopyPlan plan = base;
      std::vector<double> w(k);
      for (int i = 0; i < k; ++i) plan.classes[i].weight = w[i] = trial == 0 ? 1.0 : rnd();
      const auto depths = leaf_depths(dispatch_tree(plan));
      double cost = 0;
      for (int i = 0; i < k; ++i) cost += w[i] * depths.at(i);
      CHECK(cost == doctest::Approx(best_cost(w, 0, k - 1)).epsilon(1e-6));
      if (trial == 0) {  // equal weights: a balanced tree
        const int max_depth = static_cast<int>(std::ceil(std::log2(double(k))));
        for (auto [cls, d] : depths) CHECK(d <= max_depth);
      }
    }
  }
  // The default weights favour small sizes: n = 0 or a small size needs fewer compares than the
  // loop class on the default AVX2 plan.
  const CopyPlan plan = plan_for(params_w(32));
  const auto t = dispatch_tree(plan);
  int d_small = 0, d_loop = 0;
  walk(t, 24, &d_small);
  walk(t, 1 << 20, &d_loop);
  CHECK(d_small <= d_loop);
}

// ============================================================================ IsaFeatures ==

TEST_CASE("IsaFeatures: for_level contents, to_string and max_vector_bytes") {
  const auto sse2 = IsaFeatures::for_level(IsaLevel::kSSE2);
  const auto avx2 = IsaFeatures::for_level(IsaLevel::kAVX2);
  const auto avx512 = IsaFeatures::for_level(IsaLevel::kAVX512);
  CHECK(sse2 == IsaFeatures{});
  CHECK(sse2.to_string() == "sse2");
  CHECK(avx2.to_string() == "sse2,avx,avx2,bmi2");
  CHECK(avx512.to_string() == "sse2,avx,avx2,avx512f,avx512bw,avx512vl,bmi2");
  for (auto f : {Feature::kERMS, Feature::kFSRM, Feature::kPREFETCHW}) {
    CHECK_FALSE(sse2.has(f));
    CHECK_FALSE(avx2.has(f));
    CHECK_FALSE(avx512.has(f));
  }
  CHECK(sse2.max_vector_bytes() == 16);
  CHECK(avx2.max_vector_bytes() == 32);
  CHECK(avx512.max_vector_bytes() == 64);
  IsaFeatures all;
  for (unsigned i = 0; i < static_cast<unsigned>(Feature::kCount); ++i) all.add(static_cast<Feature>(i));
  CHECK(all.to_string() == "sse2,avx,avx2,avx512f,avx512bw,avx512vl,bmi2,erms,fsrm,prefetchw");
  CHECK(feature_name(Feature::kFSRM) == "fsrm");
  CHECK(feature_name(Feature::kAVX512F) == "avx512f");
  IsaFeatures f;
  f.add(Feature::kERMS);
  CHECK(f.has(Feature::kERMS));
  f.remove(Feature::kERMS);
  CHECK_FALSE(f.has(Feature::kERMS));
  CHECK(f == IsaFeatures{});
}

TEST_CASE("IsaFeatures::capped removes features above the level and never adds") {
  const unsigned count = static_cast<unsigned>(Feature::kCount);
  const IsaLevel levels[] = {IsaLevel::kSSE2, IsaLevel::kAVX2, IsaLevel::kAVX512};
  for (std::uint32_t mask = 0; mask < (1u << count); ++mask) {
    IsaFeatures f;
    f.remove(Feature::kSSE2);
    for (unsigned i = 0; i < count; ++i)
      if (mask & (1u << i)) f.add(static_cast<Feature>(i));
    REQUIRE(f.bits() == mask);
    for (auto level : levels) {
      const IsaFeatures c = f.capped(level);
      if ((c.bits() & ~f.bits()) != 0) FAIL_CHECK("capped added a feature: mask " << mask);
      // Non-vector features are kept.
      for (auto keep : {Feature::kSSE2, Feature::kBMI2, Feature::kERMS, Feature::kFSRM,
                        Feature::kPREFETCHW})
        if (c.has(keep) != f.has(keep)) FAIL_CHECK("capped changed " << feature_name(keep));
      const bool avx512_ok = level == IsaLevel::kAVX512;
      const bool avx2_ok = level != IsaLevel::kSSE2;
      for (auto v : {Feature::kAVX512F, Feature::kAVX512BW, Feature::kAVX512VL})
        if (c.has(v) != (f.has(v) && avx512_ok)) FAIL_CHECK("mask " << mask << " " << feature_name(v));
      for (auto v : {Feature::kAVX, Feature::kAVX2})
        if (c.has(v) != (f.has(v) && avx2_ok)) FAIL_CHECK("mask " << mask << " " << feature_name(v));
    }
  }
  // Spot checks with CHECK so the counts show.
  IsaFeatures host_like = IsaFeatures::for_level(IsaLevel::kAVX512);
  host_like.add(Feature::kERMS).add(Feature::kFSRM);
  CHECK(host_like.capped(IsaLevel::kSSE2).to_string() == "sse2,bmi2,erms,fsrm");
  CHECK(host_like.capped(IsaLevel::kAVX2).to_string() == "sse2,avx,avx2,bmi2,erms,fsrm");
  CHECK(host_like.capped(IsaLevel::kAVX512) == host_like);
  CHECK(IsaFeatures::for_level(IsaLevel::kSSE2).capped(IsaLevel::kAVX512) ==
        IsaFeatures::for_level(IsaLevel::kSSE2));
  CHECK(host_like.capped(IsaLevel::kSSE2).max_vector_bytes() == 16);
}

TEST_CASE("parse_isa_level and isa_level_name") {
  CHECK(parse_isa_level("sse2") == IsaLevel::kSSE2);
  CHECK(parse_isa_level("avx2") == IsaLevel::kAVX2);
  CHECK(parse_isa_level("avx512") == IsaLevel::kAVX512);
  CHECK_FALSE(parse_isa_level("").has_value());
  CHECK_FALSE(parse_isa_level("avx").has_value());
  CHECK_FALSE(parse_isa_level("avx512f").has_value());
  CHECK_FALSE(parse_isa_level("sse4").has_value());
  for (auto l : {IsaLevel::kSSE2, IsaLevel::kAVX2, IsaLevel::kAVX512})
    CHECK(parse_isa_level(isa_level_name(l)) == l);
  CHECK(error_code_name(ErrorCode::kInvalidParams) == std::string("invalid-params"));
  CHECK(error_code_name(ErrorCode::kWisdomMismatch) == std::string("wisdom-mismatch"));
}
