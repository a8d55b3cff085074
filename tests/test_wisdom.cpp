// copysynth — tests of wisdom and fleet files (runtime/wisdom.hpp): round trip, the CPU check,
// malformed and hostile files, atomic saving, fleets (selecting a host, merging), what --emit
// keeps of an existing file, and rebuilding a routine from an entry.
#include <algorithm>
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "copysynth/cpu.hpp"
#include "copysynth/emit.hpp"
#include "copysynth/file_io.hpp"
#include "copysynth/ladders.hpp"
#include "copysynth/profile.hpp"
#include "copysynth/routine.hpp"
#include "copysynth/wisdom.hpp"
#include "support/routines.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"
#include "support/text.hpp"
#include "support/wisdom.hpp"

using namespace copysynth;
using nlohmann::json;

namespace {

using test::contains;
using test::read_text;
using test::TempDir;
using test::write_file;

/// The plan of `p` for the widest level (AVX-512), as the tuned entries of these files have it.
CopyPlan plan_for(const CopyParams& p) { return test::plan_for(p, IsaFeatures::for_level(IsaLevel::kAVX512)); }

}  // namespace

// ================================================================================= wisdom ==

namespace {

Wisdom sample_wisdom() {
  Wisdom w;
  set_cpu(w, CpuInfo::host());
  w.created = "2026-01-02T03:04:05Z";
  w.command = "autotune --emit best.json --workload seeds";
  CopyParams p;
  p.vector_width = 16;
  p.unroll = 8;
  p.prefetch_distance = 256;
  p.prefetch_hint = PrefetchHint::kNTA;
  p.nt_threshold = std::uint64_t{1} << 20;
  p.rep_threshold = 2048;
  p.rep_align_dst = false;
  p.loop_align = 32;
  p.nop_form = NopForm::kJumpOver;
  WisdomEntry e = test::entry_for(with_weights(plan_for(p), [](std::uint64_t lo, std::uint64_t) {
    return 0.125 + double(lo % 7) / 3.0;  // not the defaults, not round numbers
  }));
  // Figures of at most 4 significant digits, which the file keeps exactly (the rounding of
  // longer ones: "measured points are written to 4 significant digits").
  e.points = {{4096, 0, 4, 1.7, 60.1},
              {17, 3, 61, 0.3, 1e-3},
              {std::uint64_t{1} << 20, 63, 0, 12.5, 13.0},
              {65536, 2048, 33, 80.5, 112.4}};  // the misaligned matrix's offsets within a page
  w.entries.push_back(e);
  return w;
}

/// Writes `j` (or text) to a file in `dir` and loads it.
Result<Wisdom> load_text(const TempDir& dir, const std::string& text, WisdomPoints points = WisdomPoints::kKeep) {
  static int counter = 0;
  const std::string path = dir.path + "/w" + std::to_string(counter++) + ".json";
  write_file(path, text);
  return load_wisdom(path, points);
}

void expect_load_error(const TempDir& dir, const json& j, ErrorCode code,
                       std::initializer_list<const char*> in_message) {
  auto r = load_text(dir, j.dump(2));
  REQUIRE_FALSE(r.ok());
  CHECK_MESSAGE(r.error().code == code, "code " << error_code_name(r.error().code) << ": "
                                                << r.error().message);
  for (const char* s : in_message)
    CHECK_MESSAGE(contains(r.error().message, s), "\"" << s << "\" not in: " << r.error().message);
  // The in-memory parser gives the same code.
  auto r2 = wisdom_from_json(j);
  REQUIRE_FALSE(r2.ok());
  CHECK(r2.error().code == code);
}

}  // namespace

TEST_CASE("fnv1a64 test vectors") {
  CHECK(fnv1a64({}) == 0xcbf29ce484222325ull);
  CHECK(fnv1a64({'a'}) == 0xaf63dc4c8601ec8cull);
  CHECK(fnv1a64({'f', 'o', 'o', 'b', 'a', 'r'}) == 0x85944171f73967e8ull);
}

TEST_CASE("wisdom: save and load round trip") {
  TempDir dir;
  const Wisdom w = sample_wisdom();
  const std::string path = dir.path + "/best.json";
  const Status st = save_wisdom(w, path);
  REQUIRE_MESSAGE(st.ok(), (st.ok() ? std::string() : st.error().message));
  CHECK_FALSE(std::filesystem::exists(path + ".tmp"));  // written atomically via rename

  // The file is the documented JSON.
  std::ifstream in(path);
  const json j = json::parse(in);
  CHECK(j["schema"] == kWisdomSchema);
  CHECK(j["entries"].size() == 1);
  CHECK(j["entries"][0]["operation"] == "memcpy");
  CHECK(j["entries"][0]["params"]["nop_form"] == "jump");
  const std::string hash = j["entries"][0]["code_fnv1a64"];
  CHECK(hash.size() == 16);
  CHECK(std::strtoull(hash.c_str(), nullptr, 16) == w.entries[0].code_hash);
  CHECK(j["cpu"]["signature"] == CpuInfo::host().signature());

  auto r = load_wisdom(path);
  REQUIRE_MESSAGE(r.ok(), (r.ok() ? std::string() : r.error().message));
  const Wisdom& l = *r;
  CHECK(l.schema == kWisdomSchema);
  CHECK(l.generator_version == w.generator_version);
  CHECK(l.generator_version == COPYSYNTH_VERSION);
  CHECK(l.created == w.created);
  CHECK(l.command == w.command);
  CHECK(l.cpu_signature == w.cpu_signature);
  CHECK(l.cpu_vendor == w.cpu_vendor);
  CHECK(l.cpu_brand == w.cpu_brand);
  CHECK(l.cpu_features == w.cpu_features);
  CHECK(l.cpu_family == w.cpu_family);
  CHECK(l.cpu_model == w.cpu_model);
  CHECK(l.cpu_stepping == w.cpu_stepping);
  REQUIRE(l.entries.size() == 1);
  const WisdomEntry& e = l.entries[0];
  const WisdomEntry& o = w.entries[0];
  CHECK(e.operation == o.operation);
  CHECK(e.workload == o.workload);
  CHECK(e.plan.params == o.plan.params);
  CHECK(e.plan.ladder == o.plan.ladder);
  CHECK(e.plan.vec == o.plan.vec);
  REQUIRE(e.plan.classes.size() == o.plan.classes.size());
  for (std::size_t i = 0; i < e.plan.classes.size(); ++i) {
    CAPTURE(i);
    CHECK(e.plan.classes[i].lo == o.plan.classes[i].lo);
    CHECK(e.plan.classes[i].hi == o.plan.classes[i].hi);
    CHECK(e.plan.classes[i].strategy == o.plan.classes[i].strategy);
    CHECK(e.plan.classes[i].block == o.plan.classes[i].block);
    CHECK(e.plan.classes[i].weight == o.plan.classes[i].weight);  // exact: JSON keeps doubles
  }
  CHECK(e.plan == o.plan);
  CHECK(e.code_hash == o.code_hash);
  CHECK(e.points == o.points);
  // The loaded plan rebuilds the same bytes (the hash matches).
  auto bytes = assemble(e.plan);
  REQUIRE(bytes.ok());
  CHECK(fnv1a64(*bytes) == e.code_hash);
  CHECK(l.find(Operation::kMemcpy) == &l.entries[0]);
  CHECK(Wisdom{}.find(Operation::kMemcpy) == nullptr);

  // Saving again overwrites and round-trips again.
  REQUIRE(save_wisdom(l, path).ok());
  auto r2 = load_wisdom(path);
  REQUIRE(r2.ok());
  CHECK(r2->entries[0].plan == o.plan);
  // In-memory JSON round trip.
  auto r3 = wisdom_from_json(to_json(w));
  REQUIRE(r3.ok());
  CHECK(r3->entries[0].points == o.points);
}

TEST_CASE("wisdom: measured points are written to 4 significant digits") {
  // A median that moves by a percent from run to run has no 17 digits to keep, and every digit
  // written is one `autotune --from`, `--show` and the report parse (the shim only checks them).
  Wisdom w = sample_wisdom();
  MeasuredPoint p;
  p.size = 4096;
  p.baseline_gbps = 6.377450411760036;
  p.tuned_gbps = 71.74181073715361;
  p.baseline_ns = 2.5088395780382635;
  p.tuned_ns = 0.00022302197053013506;
  p.cycles = 1234567.891;
  p.instructions = 99999.5;  // rounds up past a power of ten
  p.cache_misses = 0.5;      // already short: kept as it is
  w.entries[0].points = {p};
  const json j = to_json(w)["entries"][0]["points"][0];
  CHECK(j["baseline_gbps"].dump() == "6.377");
  CHECK(j["tuned_gbps"].dump() == "71.74");
  CHECK(j["baseline_ns"].dump() == "2.509");
  CHECK(j["tuned_ns"].dump() == "0.000223");
  CHECK(j["cycles"].dump() == "1235000.0");
  CHECK(j["instructions"].dump() == "100000.0");
  CHECK(j["cache_misses"].dump() == "0.5");
  CHECK(j["size"] == 4096);
  // Read back, the figures are the rounded ones, and writing them again changes nothing.
  auto r = wisdom_from_json(to_json(w));
  REQUIRE(r.ok());
  const MeasuredPoint& q = r->entries[0].points.at(0);
  CHECK(q.baseline_gbps == 6.377);
  CHECK(q.tuned_ns == 0.000223);
  CHECK(to_json(*r) == to_json(w));

  // A figure whose rounding would overflow (1.798e+308) is kept, never written as null: the
  // loader accepts any finite number, so what it accepted must save and load again.
  p.tuned_gbps = std::numeric_limits<double>::max();
  p.baseline_gbps = 1.7976e308;
  w.entries[0].points = {p};
  auto big = wisdom_from_json(json::parse(to_json(w).dump()));
  REQUIRE_MESSAGE(big.ok(), (big.ok() ? std::string() : big.error().message));
  CHECK(big->entries[0].points.at(0).tuned_gbps == std::numeric_limits<double>::max());
  CHECK(big->entries[0].points.at(0).baseline_gbps == 1.7976e308);

  // The counters go as one: a point with cycles 0 keeps its instructions and cache misses.
  p.tuned_gbps = 1.5;
  p.baseline_gbps = 1.5;
  p.baseline_ns = 2.5;
  p.tuned_ns = 0.25;
  p.cycles = 0;
  p.instructions = 5;
  p.cache_misses = 0;
  w.entries[0].points = {p};
  auto counters = wisdom_from_json(to_json(w));
  REQUIRE(counters.ok());
  CHECK(counters->entries[0].points.at(0) == p);
  p.instructions = 0;
  w.entries[0].points = {p};
  CHECK(to_json(w)["entries"][0]["points"][0].count("cycles") == 0);  // no PMU: no counters
}

TEST_CASE("wisdom: WisdomPoints::kSkip reads everything but the measured points") {
  TempDir dir;
  const Wisdom w = sample_wisdom();
  REQUIRE_FALSE(w.entries[0].points.empty());
  const std::string path = dir.path + "/best.json";
  REQUIRE(save_wisdom(w, path).ok());
  auto keep = load_wisdom(path);
  auto skip = load_wisdom(path, WisdomPoints::kSkip);
  REQUIRE(keep.ok());
  REQUIRE_MESSAGE(skip.ok(), (skip.ok() ? std::string() : skip.error().message));
  CHECK(keep->entries[0].points == w.entries[0].points);
  CHECK(skip->entries[0].points.empty());
  CHECK(skip->cpu_signature == w.cpu_signature);
  REQUIRE(skip->entries.size() == 1);
  CHECK(skip->entries[0].plan == w.entries[0].plan);
  CHECK(skip->entries[0].code_hash == w.entries[0].code_hash);
  CHECK(skip->entries[0].workload == w.entries[0].workload);
  // load_fleet and load_wisdom_for take it too.
  auto fleet = load_fleet(path, WisdomPoints::kSkip);
  REQUIRE(fleet.ok());
  CHECK(fleet->hosts.at(0).entries.at(0).points.empty());
  auto mine = load_wisdom_for(path, CpuInfo::host(), WisdomPoints::kSkip);
  REQUIRE(mine.ok());
  CHECK(mine->entries.at(0).points.empty());
  CHECK(mine->entries.at(0).plan == w.entries[0].plan);

  // Points that are not an array: refused when kept, not looked at when skipped.
  json j = to_json(w);
  j["entries"][0]["points"] = "not an array";
  const std::string odd = dir.path + "/odd-points.json";
  write_file(odd, j.dump(2));
  auto bad = load_wisdom(odd);
  REQUIRE_FALSE(bad.ok());
  CHECK(contains(bad.error().message, "entries[0].points"));
  CHECK(load_wisdom(odd, WisdomPoints::kSkip).ok());
  // Only entries' points are left out: a "points" field in params is refused either way.
  j = to_json(w);
  j["entries"][0]["params"]["points"] = 3;
  const std::string params_points = dir.path + "/params-points.json";
  write_file(params_points, j.dump(2));
  for (WisdomPoints how : {WisdomPoints::kKeep, WisdomPoints::kSkip}) {
    auto pp = load_wisdom(params_points, how);
    REQUIRE_FALSE(pp.ok());
    CHECK(contains(pp.error().message, "entries[0].params"));
  }
  // A fleet's hosts' entries lose theirs too.
  Fleet f;
  f.hosts.push_back(w);
  Wisdom other = w;
  other.cpu_signature = "GenuineIntel-6-143:sse2";
  f.hosts.push_back(other);
  const std::string fleet_path = dir.path + "/fleet.json";
  REQUIRE(save_fleet(f, fleet_path).ok());
  auto fk = load_fleet(fleet_path);
  auto fs = load_fleet(fleet_path, WisdomPoints::kSkip);
  REQUIRE(fk.ok());
  REQUIRE_MESSAGE(fs.ok(), (fs.ok() ? std::string() : fs.error().message));
  REQUIRE(fs->hosts.size() == 2);
  for (std::size_t h = 0; h < 2; ++h) {
    CHECK(fk->hosts[h].entries.at(0).points == w.entries[0].points);
    CHECK(fs->hosts[h].entries.at(0).points.empty());
    CHECK(fs->hosts[h].entries.at(0).plan == w.entries[0].plan);
  }
  // The parse itself: the kSkip document is the kKeep one less entries' points, nothing else.
  // Points that are not arrays (not cut, dropped by the parse) and points that are (cut first).
  for (const bool arrays : {false, true}) {
    const auto v = [&](int k) { return arrays ? json::array({k, json::array({k})}) : json(k); };
    const json doc = {{"entries", json::array({{{"points", v(1)}, {"x", {{"points", v(2)}}}}})},
                      {"app_verdicts", json::array({{{"points", v(3)}}})},
                      {"hosts", json::array({{{"entries", json::array({{{"points", v(4)}, {"y", 5}}})}}})}};
    CHECK(cut_entry_points(doc.dump()).has_value() == arrays);
    const json skipped = parse_wisdom_text(doc.dump(), WisdomPoints::kSkip);
    const json expected = {{"entries", json::array({{{"x", {{"points", v(2)}}}}})},
                           {"app_verdicts", json::array({{{"points", v(3)}}})},
                           {"hosts", json::array({{{"entries", json::array({{{"y", 5}}})}}})}};
    CHECK(skipped == expected);
    CHECK(parse_wisdom_text(doc.dump(), WisdomPoints::kKeep) == doc);
  }
  CHECK(parse_wisdom_text("{\"entries\": [", WisdomPoints::kSkip).is_discarded());

  // The text kSkip parses: only entries' points arrays are emptied, each only when it is one JSON
  // value by the grammar (strings with their escapes, numbers, literals, nesting), and every
  // other byte is kept.
  CHECK(cut_entry_points(R"({"entries": [{"points": [ ]}, {"points": []}]})") == std::nullopt);  // already empty
  CHECK(cut_entry_points(R"({"entries": [{"points": [1, {"a": "]\"}"}], "x": 2}]})") ==
        std::optional<std::string>(R"({"entries": [{"points": [], "x": 2}]})"));
  CHECK(cut_entry_points(R"({"hosts": [{"entries": [{"points" : [[]]}]}], "points": [1]})") ==
        std::optional<std::string>(R"({"hosts": [{"entries": [{"points" : []}]}], "points": [1]})"));
  CHECK(cut_entry_points(R"({"entries": [{"points": [-0, 1.5e-3, 2E+2, true, false, null, "\u00e9\n", {}]}]})") ==
        std::optional<std::string>(R"({"entries": [{"points": []}]})"));
  CHECK(cut_entry_points(R"({"entries": [{"p": {"points": [1]}, "\u0070oints": [2]}]})") == std::nullopt);
  CHECK(cut_entry_points(R"({"entries": [{"points": "[1]"}]})") == std::nullopt);
  // Nothing is cut where a points array is not JSON, or the text around it is not lexically
  // whole: the parser then meets the text as it is and says why, as kKeep does.
  for (const char* bad : {
           R"({"entries": [{"points": [1, {]}]})",          // brackets that do not match
           R"({"entries": [{"points": [1]}], "a": "x)",     // a string not closed
           R"({"entries": [{"points": [1]}}]})",            // an object closed as an array
           R"({"entries": [{"points": [1,, 2]}]})",         // no value
           R"({"entries": [{"points": [01, 2]}]})",         // not a JSON number
           R"({"entries": [{"points": [1.]}]})",
           R"({"entries": [{"points": [tru]}]})",
           R"({"entries": [{"points": [1e999]}]})",         // nlohmann refuses the overflow
           R"({"entries": [{"points": ["\ud800"]}]})",      // a lone surrogate
           R"({"entries": [{"points": ["\x"]}]})",          // no such escape
           R"({"entries": [{"points": [{"a" 1}]}]})",       // no colon
           R"({"entries": [{"points": [{1: 1}]}]})",        // a key that is not a string
           // Two stray quotes in two points arrays: stepping over strings alone would pair
           // them and cut the entries between, so another entry's text would be lost.
           R"({"entries": [{"points": [{"note": "2" x"}]}, {"op": "fill"}, {"points": [{"note": "4" y"}]}]})",
       }) {
    CHECK_MESSAGE(cut_entry_points(bad) == std::nullopt, bad);
    CHECK_MESSAGE(parse_wisdom_text(bad, WisdomPoints::kSkip).is_discarded() ==
                      parse_wisdom_text(bad, WisdomPoints::kKeep).is_discarded(),
                  bad);
  }
  CHECK(cut_entry_points("{\"entries\": [{\"points\": [\"\t\"]}]}") == std::nullopt);  // a raw control character
  // Strings as nlohmann's lexer reads them: well-formed UTF-8 (the Unicode Standard's table 3-7)
  // and \u surrogates in pairs are cut; anything else is left for the parser, which refuses it as
  // kKeep does. (A non-ASCII character made a 60 MB points array parse whole at every start.)
  const auto in_points = [](const std::string& str) { return "{\"entries\": [{\"points\": [\"" + str + "\", 1]}]}"; };
  for (const std::string good : {"\xc3\xa9", "\xe2\x82\xac", "\xe0\xa0\x80", "\xed\x9f\xbf", "\xef\xbf\xbf",
                                 "\xf0\x90\x80\x80", "\xf4\x8f\xbf\xbf", "\xf3\xbf\xbf\xbf", "a\x7f",
                                 "\\ud83d\\ude00", "\\uD800\\uDFFF", "\\ud7ff\\ue000"}) {
    CHECK_MESSAGE(cut_entry_points(in_points(good)) == std::optional<std::string>(R"({"entries": [{"points": []}]})"), good);
    CHECK_FALSE(parse_wisdom_text(in_points(good), WisdomPoints::kKeep).is_discarded());
  }
  for (const std::string bad : {"\x80", "\xc0\xaf", "\xc1\xbf", "\xc3", "\xc3\x28", "\xe0\x9f\x80", "\xed\xa0\x80",
                                "\xe2\x82", "\xf0\x8f\xbf\xbf", "\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\xff",
                                "\\ud83d", "\\ude00", "\\ud83d\\u0041", "\\ud83dx", "\\ud83d\\ud83d", "\\ud83d\\", "\\ud83d\\u12"}) {
    CHECK_MESSAGE(cut_entry_points(in_points(bad)) == std::nullopt, bad);
    CHECK_MESSAGE(parse_wisdom_text(in_points(bad), WisdomPoints::kKeep).is_discarded(), bad);
    CHECK_MESSAGE(parse_wisdom_text(in_points(bad), WisdomPoints::kSkip).is_discarded(), bad);
  }
  // An array in doubt is left to the parser, and the others after it are still cut; one that
  // begins inside it is not tried again (each level of nested doubtful arrays was read again).
  const std::string mixed = "{\"entries\": [{\"points\": [1e999]}, {\"points\": [1, 2]}]}";
  CHECK(cut_entry_points(mixed) == std::optional<std::string>("{\"entries\": [{\"points\": [1e999]}, {\"points\": []}]}"));
  const std::string nested_doubt = R"({"entries": [{"points": [{"entries": [{"points": [1, 2]}]}, 1e999]}]})";
  CHECK(cut_entry_points(nested_doubt) == std::nullopt);
  const std::string mixed_ok = "{\"entries\": [{\"points\": [\"\xc3\xa9\"]}, {\"points\": [1, 2]}]}";
  CHECK(parse_wisdom_text(mixed_ok, WisdomPoints::kSkip) == json::parse(R"({"entries": [{}, {}]})"));
  // An empty array is left as it is, with the white space after it.
  CHECK(cut_entry_points("{\"entries\": [\n {\n  \"points\": []\n }\n]}") == std::nullopt);
  // Many small objects: the same document as the full parse less the points (kSkip erases them
  // after the parse; nlohmann's callback parser took quadratic time over such a file).
  {
    std::string many = R"({"x": [)";
    for (int k = 0; k < 2000; ++k) many += k ? R"(, {"points": [1]})" : R"({"points": [1]})";
    many += R"(], "entries": [)";
    for (int k = 0; k < 2000; ++k) many += k ? R"(, {"points": [1], "k": 1})" : R"({"points": [1], "k": 1})";
    many += "]}";
    const json full = json::parse(many);
    const json skipped = parse_wisdom_text(many, WisdomPoints::kSkip);
    CHECK(skipped["x"] == full["x"]);
    REQUIRE(skipped["entries"].size() == 2000);
    CHECK(skipped["entries"][1999] == json::parse(R"({"k": 1})"));
  }
  // A file garbled inside its points is refused either way, with the same message.
  std::string garbled = to_json(w).dump(2);
  const std::size_t at = garbled.find("\"points\": [");
  REQUIRE(at != std::string::npos);
  garbled.insert(at + 11, "1,, x, ");
  const std::string garbled_path = dir.path + "/garbled-points.json";
  write_file(garbled_path, garbled);
  for (WisdomPoints how : {WisdomPoints::kKeep, WisdomPoints::kSkip}) {
    auto g = load_wisdom(garbled_path, how);
    REQUIRE_FALSE(g.ok());
    CHECK(contains(g.error().message, "not valid JSON"));
  }

  // Everything else is checked as before: a bad parameter, and text that is not JSON.
  j = to_json(w);
  j["entries"][0]["params"]["unroll"] = 3;
  const std::string bad_params = dir.path + "/bad-params.json";
  write_file(bad_params, j.dump(2));
  auto bp = load_wisdom(bad_params, WisdomPoints::kSkip);
  REQUIRE_FALSE(bp.ok());
  CHECK(contains(bp.error().message, "unroll"));
  const std::string cut = dir.path + "/cut.json";
  const std::string text = to_json(w).dump(2);
  write_file(cut, text.substr(0, text.size() / 2));
  auto c = load_wisdom(cut, WisdomPoints::kSkip);
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().code == ErrorCode::kWisdomMalformed);
  CHECK(contains(c.error().message, "not valid JSON"));
}

namespace {
/// The names in directory `dir`, sorted.
std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}
}  // namespace

// Regression: the temporary file was PATH.tmp, a fixed name: a user's q.json.tmp was overwritten
// and removed by `autotune --emit q.json`.
TEST_CASE("wisdom: save_wisdom and save_fleet touch no file but the target; a failure leaves none") {
  TempDir dir;
  const std::string path = dir.path + "/q.json";
  write_file(path + ".tmp", "notes\n");
  REQUIRE(save_wisdom(sample_wisdom(), path).ok());
  CHECK(read_text(path + ".tmp") == "notes\n");
  CHECK(names_in(dir.path) == std::vector<std::string>{"q.json", "q.json.tmp"});
  REQUIRE(load_wisdom(path).ok());
  Fleet f;
  f.hosts = {sample_wisdom()};
  REQUIRE(save_fleet(f, path).ok());
  CHECK(read_text(path + ".tmp") == "notes\n");
  CHECK(names_in(dir.path) == std::vector<std::string>{"q.json", "q.json.tmp"});

  // The permissions of the file replaced are kept (mkstemp alone would give 0600).
  std::filesystem::permissions(path, std::filesystem::perms(0640));
  REQUIRE(save_wisdom(sample_wisdom(), path).ok());
  CHECK(std::filesystem::status(path).permissions() == std::filesystem::perms(0640));

  // A rename that fails (the target is a directory): an error naming both, the temporary removed.
  std::filesystem::create_directory(dir.path + "/d.json");
  const Status st = save_wisdom(sample_wisdom(), dir.path + "/d.json");
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().code == ErrorCode::kWisdomIo);
  CHECK_MESSAGE(contains(st.error().message, "cannot rename " + dir.path + "/d.json."), st.error().message);
  CHECK_MESSAGE(contains(st.error().message, "is unchanged"), st.error().message);
  CHECK(names_in(dir.path) == std::vector<std::string>{"d.json", "q.json", "q.json.tmp"});
  // No directory to create the temporary in.
  const Status nodir = save_wisdom(sample_wisdom(), dir.path + "/no/such/dir/best.json");
  REQUIRE_FALSE(nodir.ok());
  CHECK_MESSAGE(contains(nodir.error().message, "cannot create a temporary file next to " + dir.path + "/no/such/dir/best.json"),
                nodir.error().message);
  CHECK_MESSAGE(contains(nodir.error().message, "No such file or directory"), nodir.error().message);
}

TEST_CASE("wisdom: check_cpu") {
  const Wisdom w = sample_wisdom();
  CHECK(check_cpu(w, CpuInfo::host()).ok());
  const CpuInfo other = CpuInfo::synthetic("TestVendor", 25, 1, 1, IsaFeatures::for_level(IsaLevel::kAVX2));
  REQUIRE(other.signature() != CpuInfo::host().signature());
  const Status st = check_cpu(w, other);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().code == ErrorCode::kWisdomMismatch);
  CHECK_MESSAGE(contains(st.error().message, CpuInfo::host().signature()), st.error().message);
  CHECK_MESSAGE(contains(st.error().message, other.signature()), st.error().message);
  if (CpuInfo::host().features().has(Feature::kAVX2)) {
    const Status capped = check_cpu(w, CpuInfo::host().capped(IsaLevel::kSSE2));
    REQUIRE_FALSE(capped.ok());
    CHECK(capped.error().code == ErrorCode::kWisdomMismatch);
  }
}

TEST_CASE("wisdom: check_cpu accepts this CPU model's capped-ISA wisdom, never another model or a missing feature") {
  const CpuInfo host = CpuInfo::synthetic("GenuineIntel", 6, 143, 8, IsaFeatures::for_level(IsaLevel::kAVX512));
  Wisdom w = sample_wisdom();
  SUBCASE("capped signature of this model: accepted") {
    for (IsaLevel cap : {IsaLevel::kAVX2, IsaLevel::kSSE2, IsaLevel::kAVX512}) {
      set_cpu(w, host.capped(cap));
      const Status st = check_cpu(w, host);
      CHECK_MESSAGE(st.ok(), (st.ok() ? std::string() : st.error().message));
    }
    // And on the real host: wisdom of this CPU capped at each level.
    for (IsaLevel cap : {IsaLevel::kAVX2, IsaLevel::kSSE2}) {
      set_cpu(w, CpuInfo::host().capped(cap));
      CHECK(check_cpu(w, CpuInfo::host()).ok());
    }
  }
  SUBCASE("another model, family or vendor: refused") {
    for (const CpuInfo& other : {CpuInfo::synthetic("GenuineIntel", 6, 144, 8, host.features()),
                                 CpuInfo::synthetic("GenuineIntel", 6, 144, 8, host.capped(IsaLevel::kAVX2).features()),
                                 CpuInfo::synthetic("GenuineIntel", 7, 143, 8, host.capped(IsaLevel::kAVX2).features()),
                                 CpuInfo::synthetic("AuthenticAMD", 6, 143, 8, host.capped(IsaLevel::kAVX2).features())}) {
      CAPTURE(other.signature());
      set_cpu(w, other);
      const Status st = check_cpu(w, host);
      REQUIRE_FALSE(st.ok());
      CHECK(st.error().code == ErrorCode::kWisdomMismatch);
      CHECK_MESSAGE(contains(st.error().message, "(another CPU model)"), st.error().message);
      CHECK_MESSAGE(contains(st.error().message, "tuned on CPU \"" + other.signature() + "\""), st.error().message);
    }
  }
  SUBCASE("a feature the host lacks: refused, named") {
    set_cpu(w, host);  // AVX-512 wisdom on the same model with AVX-512 off (capped, or the OS's XCR0)
    const Status st = check_cpu(w, host.capped(IsaLevel::kAVX2));
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().code == ErrorCode::kWisdomMismatch);
    CHECK_MESSAGE(contains(st.error().message, "this host lacks avx512f, avx512bw, avx512vl"), st.error().message);
    IsaFeatures with_erms = host.features();
    with_erms.add(Feature::kERMS);
    set_cpu(w, CpuInfo::synthetic("GenuineIntel", 6, 143, 8, with_erms));
    const Status erms = check_cpu(w, host);
    REQUIRE_FALSE(erms.ok());
    CHECK_MESSAGE(contains(erms.error().message, "this host lacks erms"), erms.error().message);
    // A name this copysynth does not know is a feature the host lacks.
    w.cpu_signature = "GenuineIntel-6-143:sse2,avx,avx2,amx";
    const Status amx = check_cpu(w, host);
    REQUIRE_FALSE(amx.ok());
    CHECK_MESSAGE(contains(amx.error().message, "this host lacks amx"), amx.error().message);
    // A name with a space in it is quoted ("this host lacks  avx2" hid it).
    w.cpu_signature = "GenuineIntel-6-143:sse2, avx2";
    const Status spaced = check_cpu(w, host);
    REQUIRE_FALSE(spaced.ok());
    CHECK_MESSAGE(contains(spaced.error().message, "this host lacks \" avx2\""), spaced.error().message);
  }
  SUBCASE("an unreadable signature is refused unless identical") {
    w.cpu_signature = "not a signature";
    CHECK_FALSE(check_cpu(w, host).ok());
    CHECK_MESSAGE(contains(check_cpu(w, host).error().message, "is not a CPU signature"), check_cpu(w, host).error().message);
  }
}

TEST_CASE("fleet: select_host prefers the exact signature, else this model's capped-ISA host with the most features") {
  const CpuInfo host = CpuInfo::synthetic("GenuineIntel", 6, 143, 8, IsaFeatures::for_level(IsaLevel::kAVX512));
  auto doc = [](const CpuInfo& cpu, std::uint64_t hash) {
    Wisdom w = sample_wisdom();
    set_cpu(w, cpu);
    w.entries[0].code_hash = hash;  // tells the hosts apart
    return w;
  };
  const Wisdom sse2 = doc(host.capped(IsaLevel::kSSE2), 1), avx2 = doc(host.capped(IsaLevel::kAVX2), 2),
               full = doc(host, 3), other = doc(CpuInfo::synthetic("GenuineIntel", 6, 144, 8, host.features()), 4);
  Fleet f;
  f.hosts = {other, sse2, avx2, full};
  auto i = select_host_index(f, host.signature());
  REQUIRE(i);
  CHECK(*i == 3);  // exact
  f.hosts = {other, sse2, avx2};
  i = select_host_index(f, host.signature());
  REQUIRE(i);
  CHECK(*i == 2);  // compatible, most features
  auto w = select_host(f, host);
  REQUIRE(w);
  CHECK(w->entries[0].code_hash == 2);
  CHECK(select_host_index(f, host.capped(IsaLevel::kSSE2).signature()).value() == 1);  // exact again
  f.hosts = {other, avx2};
  auto miss = select_host_index(f, host.capped(IsaLevel::kSSE2).signature());  // avx2 is more than it has
  REQUIRE_FALSE(miss);
  CHECK(miss.error().code == ErrorCode::kWisdomMismatch);
  CHECK_MESSAGE(contains(miss.error().message, "none of the 2 CPUs"), miss.error().message);
  // A one-host file, capped on this model: load_wisdom_for takes it.
  TempDir dir;
  Wisdom mine = sample_wisdom();
  set_cpu(mine, CpuInfo::host().capped(IsaLevel::kSSE2));
  REQUIRE(save_wisdom(mine, dir.path + "/sse2.json").ok());
  auto l = load_wisdom_for(dir.path + "/sse2.json", CpuInfo::host());
  REQUIRE_MESSAGE(l.ok(), (l.ok() ? std::string() : l.error().message));
  CHECK(l->cpu_signature == CpuInfo::host().capped(IsaLevel::kSSE2).signature());
}

TEST_CASE("wisdom: I/O errors") {
  TempDir dir;
  auto r = load_wisdom(dir.path + "/missing.json");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ErrorCode::kWisdomIo);
  CHECK(contains(r.error().message, dir.path + "/missing.json"));
  const Status st = save_wisdom(sample_wisdom(), dir.path + "/no/such/dir/best.json");
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().code == ErrorCode::kWisdomIo);
}

// Regression: wisdom was read with no size limit and blocking opens: COPYSYNTH_WISDOM=/dev/zero
// grew a program to 3.4 GB, a FIFO hung it, and a directory was "not valid JSON".
TEST_CASE("wisdom: only a regular file of at most kMaxWisdomBytes is read, and what else it is is said") {
  TempDir dir;
  alarm(60);  // a blocking open or an endless read fails the test instead of hanging it
  auto expect_refused = [](const std::string& path, ErrorCode code, std::initializer_list<std::string> texts) {
    CAPTURE(path);
    for (int fleet = 0; fleet < 2; ++fleet) {
      const Error e = fleet ? load_fleet(path).error() : load_wisdom(path).error();
      CHECK_MESSAGE(e.code == code, error_code_name(e.code) << ": " << e.message);
      for (const auto& t : texts) CHECK_MESSAGE(contains(e.message, t), "\"" << t << "\" not in: " << e.message);
      CHECK_FALSE(contains(e.message, "not valid JSON"));
    }
  };
  expect_refused(dir.path, ErrorCode::kWisdomIo, {dir.path + " is a directory, not a wisdom file"});
  const std::string fifo = dir.path + "/fifo.json";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  expect_refused(fifo, ErrorCode::kWisdomIo, {fifo + " is a FIFO (named pipe), not a wisdom file"});
  // /dev/zero and /dev/null are character devices on a normal host; a container may make either a
  // regular file, as a CI root did with /dev/null (which every `>/dev/null` then rewrites while
  // the tests run, so its contents say nothing): checked only where it is a device.
  for (const std::string dev : {"/dev/zero", "/dev/null"}) {
    struct stat st {};
    if (::stat(dev.c_str(), &st) == 0 && S_ISCHR(st.st_mode))
      expect_refused(dev, ErrorCode::kWisdomIo, {dev + " is a character device, not a wisdom file"});
    else
      COPYSYNTH_SKIP_PART(dev + " is not a character device on this host");
  }
  // An empty regular file is named as empty, not as "not valid JSON".
  const std::string empty = dir.path + "/empty.json";
  write_file(empty, "");
  expect_refused(empty, ErrorCode::kWisdomMalformed, {empty + " is empty (0 bytes), not a wisdom file", "autotune --emit"});
  write_file(empty, " \n\t\n");
  expect_refused(empty, ErrorCode::kWisdomMalformed, {empty + " is empty (only white space)"});
  // Larger than the limit: refused by its size, not read (a sparse file: no disk used).
  const std::string big = dir.path + "/big.json";
  write_file(big, "{");
  std::filesystem::resize_file(big, kMaxWisdomBytes + 1);
  expect_refused(big, ErrorCode::kWisdomIo,
                 {big + " is " + std::to_string(kMaxWisdomBytes + 1) + " bytes, more than the 64 MiB", "not read"});
  // At the limit it is read (and is not JSON).
  std::filesystem::resize_file(big, kMaxWisdomBytes);
  CHECK(load_wisdom(big).error().code == ErrorCode::kWisdomMalformed);
  // A link to a regular file is read.
  const std::string good = dir.path + "/best.json";
  REQUIRE(save_wisdom(sample_wisdom(), good).ok());
  std::filesystem::create_symlink(good, dir.path + "/link.json");
  CHECK(load_wisdom(dir.path + "/link.json").ok());
  // An empty path is an error of its own.
  expect_refused("", ErrorCode::kInvalidArgument, {"the wisdom path is empty"});
  alarm(0);
}

TEST_CASE("wisdom: a profile read as wisdom is named as one, with the option that reads it") {
  TempDir dir;
  ProfileRecord rec;
  rec.reason = "exit";
  const std::string line = profile_record_json(rec);
  const std::string path = dir.path + "/prog.prof";
  // Two records (JSON Lines: not one JSON document), one record (a JSON object without "schema"),
  // and a record cut short.
  for (const std::string& text : {line + "\n" + line + "\n", line + "\n", line.substr(0, 50)}) {
    CAPTURE(text);
    write_file(path, text);
    for (int fleet = 0; fleet < 2; ++fleet) {
      const Error e = fleet ? load_fleet(path).error() : load_wisdom(path).error();
      CHECK(e.code == ErrorCode::kWisdomMalformed);
      CHECK_MESSAGE(e.message.rfind(path + " is a profile, not a wisdom file; use --workload profile:" + path, 0) == 0,
                    e.message);
    }
    CHECK(load_wisdom_for(path).error().code == ErrorCode::kWisdomMalformed);
  }
}

TEST_CASE("json_nesting_depth: containers counted, strings stepped over, the scan stops past the limit") {
  CHECK(json_nesting_depth("", 10) == 0);
  CHECK(json_nesting_depth("17", 10) == 0);
  CHECK(json_nesting_depth("[]", 10) == 1);
  CHECK(json_nesting_depth(R"({"a": [{}, [1]], "b": {}})", 10) == 3);
  CHECK(json_nesting_depth(R"(["[[[{{", "\"[[", "\\", []])", 10) == 2);  // brackets in strings, escapes
  CHECK(json_nesting_depth("]]]}[", 10) == 1);                              // never below zero
  CHECK(json_nesting_depth("[\"[[[", 10) == 1);                             // an unclosed string ends it
  CHECK(json_nesting_depth(std::string(1000, '['), 64) == 65);              // stops past the limit
  CHECK(json_nesting_depth(std::string(64, '[') + std::string(64, ']'), 64) == 64);
  // The project's own files are far below the limit.
  CHECK(json_nesting_depth(to_json(sample_wisdom()).dump(2), kMaxWisdomDepth) <= 8);
}

TEST_CASE("scan_entry_points: cut_entry_points and json_nesting_depth in one pass") {
  const std::string deep_points = R"({"entries": [{"points": )" + std::string(70, '[') + std::string(70, ']') + "}]}";
  const std::string wisdom = to_json(sample_wisdom()).dump(2);
  std::string nested;  // entries in points in entries ..., 4 levels each: past the limit at the 17th
  for (int k = 0; k < 20; ++k) nested += R"({"entries": [{"points": [1, "x", )";
  for (const std::string& text :
       {wisdom, deep_points, nested, nested.substr(0, nested.size() / 2), std::string(R"({"entries": [{"points": [1, [2, [3]]]}], "x": [[[[]]]]})"),
        std::string(R"({"entries": [{"points": [[[[[1]]]]]}]})"),                   // deepest inside the array cut
        std::string(R"({"entries": [{"points": [[1e999, [[]]]]}]})"),          // not cut (in doubt): scanned as text
        std::string(R"({"entries": [{"points": [1]}]}]] [[[)"),                      // brackets that do not match
        std::string(R"({"entries": [{"points": [1, "[[[[" ]}], "s": "]]]}}}"})"),  // brackets in strings
        std::string(R"([[{"entries": [{"points": [1]}]}, "unclosed)"), std::string("17"), std::string()}) {
    for (const std::size_t limit : {std::size_t{2}, std::size_t{4}, std::size_t{6}, kMaxWisdomDepth}) {
      const EntryPointsScan scan = scan_entry_points(text, limit);
      const std::size_t depth = json_nesting_depth(text, limit);
      INFO(text, " limit ", limit);
      if (scan.depth_known) CHECK(scan.deepest == depth);
      else CHECK(scan.deepest <= depth);
      if (depth <= limit) CHECK(scan.cut == cut_entry_points(text));
      else CHECK(scan.cut == std::nullopt);
    }
  }
  // The depth inside a cut array counts: a file whose only deep part is its points is refused.
  CHECK(scan_entry_points(deep_points, kMaxWisdomDepth).deepest == kMaxWisdomDepth + 1);
  CHECK(cut_entry_points(deep_points).has_value());  // without a limit, one JSON value: cut
  CHECK_FALSE(scan_entry_points(R"({"entries": [{"points": [1]}]}]])", 64).depth_known);
  const EntryPointsScan ok = scan_entry_points(R"({"entries": [{"points": [[[1]]]}]})", 64);
  CHECK(ok.depth_known);
  CHECK(ok.deepest == 6);
  CHECK(ok.cut == std::optional<std::string>(R"({"entries": [{"points": []}]})"));
  TempDir dir;
  auto r = load_text(dir, deep_points, WisdomPoints::kSkip);
  REQUIRE_FALSE(r.ok());
  CHECK_MESSAGE(contains(r.error().message, "nests its JSON more than 64 levels deep"), r.error().message);
}

TEST_CASE("wisdom: a file nested deeper than kMaxWisdomDepth is refused before it is parsed") {
  TempDir dir;
  // 4 MB of '[': 1.5 s and 300 MB of parsing at each process start under the shim before.
  for (const std::string& text : {std::string(4u << 20, '['), std::string(65, '[') + std::string(65, ']'),
                                  std::string(R"({"schema": 2, "entries": )") + std::string(100, '[')}) {
    for (WisdomPoints points : {WisdomPoints::kKeep, WisdomPoints::kSkip}) {
      auto r = load_text(dir, text, points);
      REQUIRE_FALSE(r.ok());
      CHECK(r.error().code == ErrorCode::kWisdomMalformed);
      CHECK_MESSAGE(contains(r.error().message, "nests its JSON more than 64 levels deep"), r.error().message);
    }
  }
  // 64 levels is parsed, and refused for what it is.
  auto r = load_text(dir, std::string(64, '[') + std::string(64, ']'), WisdomPoints::kSkip);
  REQUIRE_FALSE(r.ok());
  CHECK_FALSE(contains(r.error().message, "levels deep"));
}

TEST_CASE("wisdom: malformed files are rejected with the JSON path") {
  TempDir dir;
  const json good = to_json(sample_wisdom());
  REQUIRE(wisdom_from_json(good).ok());

  SUBCASE("not JSON") {
    auto r = load_text(dir, "this is not json {");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == ErrorCode::kWisdomMalformed);
    CHECK(contains(r.error().message, dir.path));
  }
  SUBCASE("truncated JSON") {
    const std::string text = good.dump(2);
    auto r = load_text(dir, text.substr(0, text.size() / 2));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == ErrorCode::kWisdomMalformed);
  }
  SUBCASE("empty file") {
    auto r = load_text(dir, "");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == ErrorCode::kWisdomMalformed);
  }
  SUBCASE("not an object") {
    expect_load_error(dir, json::array({1, 2, 3}), ErrorCode::kWisdomMalformed, {});
  }
  SUBCASE("wrong schema number") {
    json j = good;
    j["schema"] = 3u;
    expect_load_error(dir, j, ErrorCode::kWisdomMismatch, {"schema 3", "it reads schemas 1 (one host) and 2 (a fleet)"});
  }
  SUBCASE("schema not a number") {
    json j = good;
    j["schema"] = "1";
    expect_load_error(dir, j, ErrorCode::kWisdomMalformed, {"schema"});
  }
  SUBCASE("missing entries") {
    json j = good;
    j.erase("entries");
    expect_load_error(dir, j, ErrorCode::kWisdomMalformed, {"entries"});
  }
  SUBCASE("entries not an array") {
    json j = good;
    j["entries"] = json::object();
    expect_load_error(dir, j, ErrorCode::kWisdomMalformed, {"entries"});
  }
  SUBCASE("missing cpu") {
    json j = good;
    j.erase("cpu");
    expect_load_error(dir, j, ErrorCode::kWisdomMalformed, {"cpu"});
  }
  SUBCASE("missing cpu signature") {
    json j = good;
    j["cpu"].erase("signature");
    expect_load_error(dir, j, ErrorCode::kWisdomMalformed, {"cpu.signature"});
  }
  SUBCASE("cpu.family of the wrong type: malformed, not read as 0") {
    json j = good;
    j["cpu"]["family"] = "26";
    expect_load_error(dir, j, ErrorCode::kWisdomMalformed, {"cpu.family", "unsigned integer", "\"26\""});
  }
  SUBCASE("cpu.model above 2^32 and a negative cpu.stepping: malformed") {
    json j = good;
    j["cpu"]["model"] = std::uint64_t{1} << 32;
    expect_load_error(dir, j, ErrorCode::kWisdomMalformed, {"cpu.model"});
    j = good;
    j["cpu"]["stepping"] = -1;
    expect_load_error(dir, j, ErrorCode::kWisdomMalformed, {"cpu.stepping"});
  }
  SUBCASE("cpu.brand of the wrong type: malformed") {
    json j = good;
    j["cpu"]["brand"] = 7;
    expect_load_error(dir, j, ErrorCode::kWisdomMalformed, {"cpu.brand", "a string"});
  }
  SUBCASE("absent informational cpu fields read as 0 and empty") {
    json j = good;
    for (const char* k : {"family", "model", "stepping", "vendor", "brand", "features"}) j["cpu"].erase(k);
    auto w = wisdom_from_json(j);
    REQUIRE(w.ok());
    CHECK(w->cpu_family == 0);
    CHECK(w->cpu_brand.empty());
  }
  SUBCASE("params with an unknown field") {
    json j = good;
    j["entries"][0]["params"]["unroll_factor"] = 4u;
    expect_load_error(dir, j, ErrorCode::kWisdomMalformed, {"entries[0].params", "unroll_factor"});
  }
  SUBCASE("params.unroll = 3") {
    json j = good;
    j["entries"][0]["params"]["unroll"] = 3u;
    expect_load_error(dir, j, ErrorCode::kInvalidParams, {"entries[0].params.unroll", "3"});
  }
  SUBCASE("params.unroll of the wrong type") {
    json j = good;
    j["entries"][0]["params"]["unroll"] = "8";
    expect_load_error(dir, j, ErrorCode::kWisdomMalformed, {"entries[0].params.unroll"});
  }
  SUBCASE("negative threshold") {
    json j = good;
    j["entries"][0]["params"]["nt_threshold"] = -4096;
    expect_load_error(dir, j, ErrorCode::kInvalidParams, {"entries[0].params.nt_threshold"});
  }
  SUBCASE("params not an object") {
    json j = good;
    j["entries"][0]["params"] = json::array();
    expect_load_error(dir, j, ErrorCode::kWisdomMalformed, {"entries[0].params"});
  }
  SUBCASE("plan classes that do not match the params: moved bound") {
    json j = good;
    const std::string lo = j["entries"][0]["plan"]["classes"][3]["lo"].dump();
    j["entries"][0]["plan"]["classes"][3]["lo"] = 5u;
    expect_load_error(dir, j, ErrorCode::kWisdomMismatch,
                      {("entries[0].plan.classes[3].lo: the file says 5 but these params give " + lo).c_str()});
  }
  // Regression: an edited hi or block gave "starts at n = 129 with "head_tail" but these params
  // give n = 129 with "head_tail"", naming neither the field nor the values that differ.
  SUBCASE("plan classes that do not match the params: hi, block, strategy named with both values") {
    json j = good;
    auto& c1 = j["entries"][0]["plan"]["classes"][1];
    const std::string hi = c1["hi"].dump(), block = c1["block"].dump(), strategy = c1["strategy"].dump();
    json h = j;
    h["entries"][0]["plan"]["classes"][1]["hi"] = 100000u;
    expect_load_error(dir, h, ErrorCode::kWisdomMismatch,
                      {("entries[0].plan.classes[1].hi: the file says 100000 but these params give " + hi).c_str()});
    json b = j;
    b["entries"][0]["plan"]["classes"][1]["block"] = 3u;
    expect_load_error(dir, b, ErrorCode::kWisdomMismatch,
                      {("entries[0].plan.classes[1].block: the file says 3 but these params give " + block).c_str()});
    json m = j;
    m["entries"][0]["plan"]["classes"][1]["hi"] = "max";
    expect_load_error(dir, m, ErrorCode::kWisdomMismatch,
                      {("entries[0].plan.classes[1].hi: the file says \"max\" but these params give " + hi).c_str()});
    json st = j;
    st["entries"][0]["plan"]["classes"][1]["strategy"] = "rep_string";
    expect_load_error(dir, st, ErrorCode::kWisdomMismatch,
                      {("entries[0].plan.classes[1].strategy: the file says \"rep_string\" but these params give " + strategy).c_str()});
    auto& last = j["entries"][0]["plan"]["classes"].back();
    REQUIRE(last["hi"] == "max");
    last["hi"] = 12345u;
    expect_load_error(dir, j, ErrorCode::kWisdomMismatch, {"the file says 12345 but these params give \"max\""});
  }
  SUBCASE("plan classes that do not match the params: other threshold") {
    json j = good;
    j["entries"][0]["params"]["rep_threshold"] = 4096u;  // the file's rep class starts at 2048
    expect_load_error(dir, j, ErrorCode::kWisdomMismatch, {"entries[0].plan.classes"});
  }
  SUBCASE("plan classes that do not match the params: strategy") {
    json j = good;
    auto& classes = j["entries"][0]["plan"]["classes"];
    classes[classes.size() - 1]["strategy"] = "aligned_loop";
    expect_load_error(dir, j, ErrorCode::kWisdomMismatch, {"entries[0].plan.classes"});
  }
  SUBCASE("plan classes that do not match the params: one class missing") {
    json j = good;
    j["entries"][0]["plan"]["classes"].erase(2);
    expect_load_error(dir, j, ErrorCode::kWisdomMismatch, {"entries[0].plan.classes"});
  }
  SUBCASE("plan classes that do not match the params: other width") {
    json j = good;
    j["entries"][0]["params"]["vector_width"] = 32u;
    expect_load_error(dir, j, ErrorCode::kWisdomMismatch, {"entries[0].plan.vector_width"});
  }
  SUBCASE("negative class weight") {
    json j = good;
    j["entries"][0]["plan"]["classes"][1]["weight"] = -0.5;
    expect_load_error(dir, j, ErrorCode::kWisdomMalformed, {"entries[0].plan.classes[1].weight"});
  }
  SUBCASE("class weight not a number") {
    json j = good;
    j["entries"][0]["plan"]["classes"][1]["weight"] = "heavy";
    expect_load_error(dir, j, ErrorCode::kWisdomMalformed, {"entries[0].plan.classes[1].weight"});
  }
  SUBCASE("unknown ladder") {
    json j = good;
    j["entries"][0]["plan"]["ladder"] = "no-such-ladder";
    auto r = load_text(dir, j.dump());
    REQUIRE_FALSE(r.ok());
    CHECK(contains(r.error().message, "entries[0].plan"));
  }
  SUBCASE("bad code_fnv1a64: not hex") {
    json j = good;
    j["entries"][0]["code_fnv1a64"] = "0123456789abcdeg";
    expect_load_error(dir, j, ErrorCode::kWisdomMalformed, {"entries[0].code_fnv1a64"});
  }
  SUBCASE("bad code_fnv1a64: too short") {
    json j = good;
    j["entries"][0]["code_fnv1a64"] = "0123456789abcde";
    expect_load_error(dir, j, ErrorCode::kWisdomMalformed, {"entries[0].code_fnv1a64"});
  }
  SUBCASE("bad code_fnv1a64: too long") {
    json j = good;
    j["entries"][0]["code_fnv1a64"] = "0123456789abcdef0";
    expect_load_error(dir, j, ErrorCode::kWisdomMalformed, {"entries[0].code_fnv1a64"});
  }
  SUBCASE("bad code_fnv1a64: a number") {
    json j = good;
    j["entries"][0]["code_fnv1a64"] = 12345;
    expect_load_error(dir, j, ErrorCode::kWisdomMalformed, {"entries[0].code_fnv1a64"});
  }
  SUBCASE("bad code_fnv1a64: missing") {
    json j = good;
    j["entries"][0].erase("code_fnv1a64");
    expect_load_error(dir, j, ErrorCode::kWisdomMalformed, {"entries[0].code_fnv1a64"});
  }
  SUBCASE("unknown operation") {
    json j = good;
    j["entries"][0]["operation"] = "memfrob";
    expect_load_error(dir, j, ErrorCode::kWisdomMismatch, {"entries[0].operation"});
  }
  SUBCASE("two entries for one operation") {
    json j = good;
    j["entries"].push_back(j["entries"][0]);
    expect_load_error(dir, j, ErrorCode::kWisdomMalformed, {"entries[1]"});
  }
  SUBCASE("point with a bad size") {
    json j = good;
    j["entries"][0]["points"][1]["size"] = "big";
    expect_load_error(dir, j, ErrorCode::kWisdomMalformed, {"entries[0].points[1].size"});
  }
  SUBCASE("point offset beyond a page") {
    json j = good;
    j["entries"][0]["points"][0]["src_align"] = 4096;
    expect_load_error(dir, j, ErrorCode::kWisdomMalformed, {"entries[0].points[0].src_align", "0..4095"});
  }
  SUBCASE("point missing tuned_gbps") {
    json j = good;
    j["entries"][0]["points"][0].erase("tuned_gbps");
    expect_load_error(dir, j, ErrorCode::kWisdomMalformed, {"entries[0].points[0].tuned_gbps"});
  }
}

// Regression: code_fnv1a64 must be exactly 16 hex digits. It was once parsed with strtoull alone,
// which also accepts a "0x" prefix, a sign and leading white space ("-000000000000001" became
// 0xffffffffffffffff).
TEST_CASE("wisdom: code_fnv1a64 must be exactly 16 hex digits") {
  TempDir dir;
  const json good = to_json(sample_wisdom());
  for (const std::string h : {"0x0123456789abcd", "-000000000000001", "+123456789abcdef", " 123456789abcdef"}) {
    CAPTURE(h);
    json j = good;
    j["entries"][0]["code_fnv1a64"] = h;
    auto r = wisdom_from_json(j);
    CHECK_FALSE(r.ok());
    if (!r.ok()) {
      CHECK(r.error().code == ErrorCode::kWisdomMalformed);
      CHECK(contains(r.error().message, "entries[0].code_fnv1a64"));
    }
  }
}

// ================================================================================== fleet ==

namespace {

/// sample_wisdom() as made on another CPU (synthetic signature), with `ops` as its operations.
Wisdom other_host(const std::string& vendor, std::initializer_list<Operation> ops) {
  Wisdom w = sample_wisdom();
  const CpuInfo cpu = CpuInfo::synthetic(vendor, 25, 1, 1, IsaFeatures::for_level(IsaLevel::kAVX2));
  set_cpu(w, cpu);
  const WisdomEntry memcpy_entry = w.entries[0];
  w.entries.clear();
  for (Operation op : ops) {
    WisdomEntry e = memcpy_entry;
    e.operation = op;
    CopyParams p = e.plan.params;
    p.operation = op;
    if (op == Operation::kFill || op == Operation::kClearPage) p.prefetch_distance = 0;  // no loads to prefetch
    e.plan = plan_for(p);
    e.code_hash = 0x1111 * (static_cast<unsigned>(op) + 1);
    w.entries.push_back(e);
  }
  return w;
}

}  // namespace

TEST_CASE("fleet: a schema-1 file reads as a fleet of one host") {
  TempDir dir;
  const Wisdom w = sample_wisdom();
  REQUIRE(save_wisdom(w, dir.path + "/best.json").ok());
  auto f = load_fleet(dir.path + "/best.json");
  REQUIRE_MESSAGE(f.ok(), (f.ok() ? std::string() : f.error().message));
  REQUIRE(f->hosts.size() == 1);
  CHECK(f->hosts[0].cpu_signature == w.cpu_signature);
  CHECK(f->hosts[0].entries[0].plan == w.entries[0].plan);
  CHECK(f->command == w.command);
  // load_wisdom_for picks it for this host and refuses it, as check_cpu does, elsewhere.
  auto mine = load_wisdom_for(dir.path + "/best.json", CpuInfo::host());
  REQUIRE(mine.ok());
  CHECK(mine->entries[0].code_hash == w.entries[0].code_hash);
  const CpuInfo other = CpuInfo::synthetic("TestVendor", 25, 1, 1, IsaFeatures::for_level(IsaLevel::kAVX2));
  auto theirs = load_wisdom_for(dir.path + "/best.json", other);
  REQUIRE_FALSE(theirs.ok());
  CHECK(theirs.error().code == ErrorCode::kWisdomMismatch);
  CHECK_MESSAGE(contains(theirs.error().message, "tuned on CPU"), theirs.error().message);
  CHECK_MESSAGE(contains(theirs.error().message, dir.path + "/best.json"), theirs.error().message);
}

TEST_CASE("fleet: save, load, select the running CPU's host") {
  TempDir dir;
  Fleet f;
  f.created = "2026-02-03T04:05:06Z";
  f.command = "autotune --merge a.json b.json --emit fleet.json";
  f.hosts = {other_host("VendorA", {Operation::kMemcpy, Operation::kFill}), sample_wisdom(),
             other_host("VendorB", {Operation::kMemmove})};
  const std::string path = dir.path + "/fleet.json";
  REQUIRE(save_fleet(f, path).ok());
  {
    std::ifstream in(path);
    const json j = json::parse(in);
    CHECK(j["schema"] == kFleetSchema);
    REQUIRE(j["hosts"].size() == 3);
    CHECK(j["hosts"][1]["schema"] == kWisdomSchema);  // every host a complete single-host document
    CHECK(wisdom_from_json(j["hosts"][1]).ok());
  }
  auto l = load_fleet(path);
  REQUIRE_MESSAGE(l.ok(), (l.ok() ? std::string() : l.error().message));
  REQUIRE(l->hosts.size() == 3);
  CHECK(l->command == f.command);
  CHECK(l->created == f.created);
  for (std::size_t i = 0; i < 3; ++i) {
    CAPTURE(i);
    CHECK(l->hosts[i].cpu_signature == f.hosts[i].cpu_signature);
    REQUIRE(l->hosts[i].entries.size() == f.hosts[i].entries.size());
    for (std::size_t k = 0; k < f.hosts[i].entries.size(); ++k) CHECK(l->hosts[i].entries[k].plan == f.hosts[i].entries[k].plan);
  }
  CHECK(to_json(*l) == to_json(f));

  auto mine = load_wisdom_for(path, CpuInfo::host());
  REQUIRE_MESSAGE(mine.ok(), (mine.ok() ? std::string() : mine.error().message));
  CHECK(mine->cpu_signature == CpuInfo::host().signature());
  CHECK(mine->entries[0].code_hash == sample_wisdom().entries[0].code_hash);
  auto b = select_host(*l, f.hosts[2].cpu_signature);
  REQUIRE(b.ok());
  CHECK(b->find(Operation::kMemmove) != nullptr);

  const CpuInfo none = CpuInfo::synthetic("VendorC", 6, 1, 1, IsaFeatures::for_level(IsaLevel::kSSE2));
  auto miss = load_wisdom_for(path, none);
  REQUIRE_FALSE(miss.ok());
  CHECK(miss.error().code == ErrorCode::kWisdomMismatch);
  for (const auto& h : f.hosts) CHECK_MESSAGE(contains(miss.error().message, h.cpu_signature), miss.error().message);
  CHECK_MESSAGE(contains(miss.error().message, none.signature()), miss.error().message);
  CHECK_MESSAGE(contains(miss.error().message, "autotune --merge"), miss.error().message);

  // The single-host reader refuses a fleet by its schema and says what it is.
  auto single = load_wisdom(path);
  REQUIRE_FALSE(single.ok());
  CHECK(single.error().code == ErrorCode::kWisdomMismatch);
  CHECK_MESSAGE(contains(single.error().message, "fleet file"), single.error().message);
}

TEST_CASE("fleet: malformed fleet files are rejected with the JSON path") {
  Fleet f;
  f.hosts = {sample_wisdom(), other_host("VendorA", {Operation::kMemcpy})};
  const json good = to_json(f);
  REQUIRE(fleet_from_json(good).ok());
  auto expect = [](const json& j, ErrorCode code, const std::string& text) {
    auto r = fleet_from_json(j);
    REQUIRE_FALSE(r.ok());
    CHECK_MESSAGE(r.error().code == code, error_code_name(r.error().code) << ": " << r.error().message);
    CHECK_MESSAGE(contains(r.error().message, text), "\"" << text << "\" not in: " << r.error().message);
  };
  SUBCASE("hosts missing") {
    json j = good;
    j.erase("hosts");
    expect(j, ErrorCode::kWisdomMalformed, "hosts");
  }
  SUBCASE("hosts not an array") {
    json j = good;
    j["hosts"] = json::object();
    expect(j, ErrorCode::kWisdomMalformed, "hosts");
  }
  SUBCASE("no hosts") {
    json j = good;
    j["hosts"] = json::array();
    expect(j, ErrorCode::kWisdomMalformed, "at least one host");
  }
  SUBCASE("a host that is not an object") {
    json j = good;
    j["hosts"][1] = 7;
    expect(j, ErrorCode::kWisdomMalformed, "hosts[1]");
  }
  SUBCASE("a malformed host names its path") {
    json j = good;
    j["hosts"][1]["entries"][0]["params"]["unroll"] = "four";
    expect(j, ErrorCode::kWisdomMalformed, "hosts[1].entries[0].params.unroll");
  }
  SUBCASE("a fleet inside a fleet") {
    json j = good;
    j["hosts"][0] = good;
    expect(j, ErrorCode::kWisdomMismatch, "hosts[0]: this is a fleet file");  // was "hosts[0].this is"
  }
  SUBCASE("two hosts with one signature") {
    json j = good;
    j["hosts"][1] = j["hosts"][0];
    expect(j, ErrorCode::kWisdomMalformed, "hosts[1].cpu.signature");
  }
  SUBCASE("generator_version missing") {
    json j = good;
    j.erase("generator_version");
    expect(j, ErrorCode::kWisdomMalformed, "generator_version");
  }
  SUBCASE("schema 3") {
    json j = good;
    j["schema"] = 3;
    expect(j, ErrorCode::kWisdomMismatch, "schema 3");
  }
}

TEST_CASE("fleet: merge keys hosts by CPU signature; a later entry replaces an earlier one") {
  const Wisdom a = other_host("VendorA", {Operation::kMemcpy, Operation::kFill});
  Wisdom a2 = other_host("VendorA", {Operation::kFill, Operation::kMemmove});
  a2.command = "autotune --op fill,memmove --emit a2.json";
  for (auto& e : a2.entries) e.code_hash += 0x100;  // tell the re-tuned entries apart
  const Wisdom b = other_host("VendorB", {Operation::kMemcpy});
  Fleet fa, fb, fa2;
  fa.hosts = {a};
  fb.hosts = {b};
  fa2.hosts = {a2};
  std::vector<std::string> notes;
  const Fleet m = merge_fleets({fa, fb, fa2}, &notes, {"a.json", "b.json", "a2.json"});
  REQUIRE(m.hosts.size() == 2);
  CHECK(m.hosts[0].cpu_signature == a.cpu_signature);
  CHECK(m.hosts[1].cpu_signature == b.cpu_signature);
  const Wisdom& ma = m.hosts[0];
  CHECK(ma.command == a2.command);  // the later header
  REQUIRE(ma.entries.size() == 3);  // memcpy kept from a.json; fill replaced; memmove added
  CHECK(ma.entries[0].operation == Operation::kMemcpy);
  CHECK(ma.entries[0].code_hash == a.entries[0].code_hash);
  CHECK(ma.entries[1].operation == Operation::kFill);
  CHECK(ma.entries[1].code_hash == a2.entries[0].code_hash);
  CHECK(ma.entries[2].operation == Operation::kMemmove);
  REQUIRE(notes.size() == 1);
  CHECK_MESSAGE(contains(notes[0], "fill replaced by the entry of a2.json"), notes[0]);
  CHECK_MESSAGE(contains(notes[0], a.cpu_signature), notes[0]);
  // The merged fleet is a valid document.
  REQUIRE(fleet_from_json(to_json(m)).ok());
}

// ====================================================================== keeping on --emit ==

namespace {

/// sample_wisdom() (this CPU) with entries for `ops`, each told apart by its code hash.
Wisdom this_host(std::initializer_list<Operation> ops, std::uint64_t tag) {
  Wisdom w = other_host("VendorA", ops);
  set_cpu(w, CpuInfo::host());
  for (auto& e : w.entries) e.code_hash += tag;
  return w;
}

/// save_wisdom_keeping with its progress lines collected.
Status save_keeping(const Wisdom& w, const std::string& path, std::vector<std::string>& said) {
  return save_wisdom_keeping(w, path, CpuInfo::host(), [&](const std::string& s) { said.push_back(s); });
}

std::vector<Operation> ops_of(const Wisdom& w) {
  std::vector<Operation> ops;
  for (const auto& e : w.entries) ops.push_back(e.operation);
  return ops;
}

}  // namespace

TEST_CASE("save_wisdom_keeping: a new file is written as it is") {
  TempDir dir;
  const std::string path = dir.path + "/best.json";
  std::vector<std::string> said;
  const Wisdom w = this_host({Operation::kMemcpy}, 1);
  REQUIRE(save_keeping(w, path, said).ok());
  CHECK(said == std::vector<std::string>{"wrote " + path});
  auto back = load_wisdom(path);
  REQUIRE(back.ok());
  CHECK(ops_of(*back) == std::vector<Operation>{Operation::kMemcpy});
  CHECK(back->entries[0].code_hash == w.entries[0].code_hash);
}

TEST_CASE("save_wisdom_keeping: this CPU's file keeps its entries for other operations") {
  TempDir dir;
  const std::string path = dir.path + "/best.json";
  const Wisdom old = this_host({Operation::kMemcpy, Operation::kFill, Operation::kClearPage}, 1);
  REQUIRE(save_wisdom(old, path).ok());
  Wisdom w = this_host({Operation::kMemcpy, Operation::kMemmove}, 2);
  w.command = "autotune --op memcpy,memmove --emit best.json";
  std::vector<std::string> said;
  REQUIRE(save_keeping(w, path, said).ok());
  auto back = load_wisdom(path);
  REQUIRE(back.ok());
  // The new entries first, then the kept ones; memcpy is the new one; the header is the new one's.
  CHECK(ops_of(*back) == std::vector<Operation>{Operation::kMemcpy, Operation::kMemmove, Operation::kFill,
                                                Operation::kClearPage});
  CHECK(back->entries[0].code_hash == w.entries[0].code_hash);
  CHECK(back->entries[2].code_hash == old.entries[1].code_hash);
  CHECK(back->command == w.command);
  CHECK(said == std::vector<std::string>{"kept the fill entry of " + path, "kept the clear_page entry of " + path,
                                         "wrote " + path});
  CHECK_FALSE(std::filesystem::exists(path + ".bak"));
}

TEST_CASE("save_wisdom_keeping: a file it cannot merge is moved to a free backup name, never overwritten") {
  TempDir dir;
  const std::string path = dir.path + "/best.json";
  const Wisdom w = this_host({Operation::kMemcpy}, 1);
  std::vector<std::string> said;
  SUBCASE("another CPU's wisdom") {
    REQUIRE(save_wisdom(other_host("VendorB", {Operation::kFill}), path).ok());
    const std::string before = read_text(path);
    REQUIRE(save_keeping(w, path, said).ok());
    CHECK(read_text(path + ".bak") == before);
    REQUIRE(said.size() == 2);
    CHECK_MESSAGE(contains(said[0], "moved the existing " + path + " to " + path + ".bak: "), said[0]);
    CHECK_MESSAGE(contains(said[0], "tuned on CPU"), said[0]);  // check_cpu's reason
  }
  SUBCASE("not wisdom at all, twice: each file gets its own backup") {
    write_file(path, "not json");
    REQUIRE(save_keeping(w, path, said).ok());
    CHECK_MESSAGE(contains(said[0], "not valid JSON"), said[0]);
    write_file(path, "second text");
    REQUIRE(save_keeping(w, path, said).ok());
    CHECK(read_text(path + ".bak") == "not json");
    CHECK(read_text(path + ".bak.1") == "second text");
  }
  auto back = load_wisdom(path);
  REQUIRE(back.ok());
  CHECK(ops_of(*back) == std::vector<Operation>{Operation::kMemcpy});
}

TEST_CASE("save_wisdom and save_wisdom_keeping write through a symbolic link and keep it") {
  TempDir dir;
  std::filesystem::create_directory(dir.path + "/shared");
  const std::string target = dir.path + "/shared/host.json", link = dir.path + "/best.json";
  std::filesystem::create_symlink("shared/host.json", link);  // relative, dangling at first
  CHECK(write_target(link).value() == target);
  REQUIRE(save_wisdom(this_host({Operation::kMemcpy}, 1), link).ok());
  CHECK(std::filesystem::is_symlink(link));
  REQUIRE(std::filesystem::is_regular_file(target));
  std::vector<std::string> said;
  SUBCASE("this CPU's file: merged into the file the link names") {
    REQUIRE(save_keeping(this_host({Operation::kFill}, 2), link, said).ok());
    CHECK(std::filesystem::is_symlink(link));
    auto back = load_wisdom(target);
    REQUIRE(back.ok());
    CHECK(ops_of(*back) == std::vector<Operation>{Operation::kFill, Operation::kMemcpy});
    CHECK(said.back() == "wrote " + target);
  }
  SUBCASE("a file it cannot merge: the linked file moves aside, next to itself") {
    write_file(target, "not json");
    REQUIRE(save_keeping(this_host({Operation::kFill}, 2), link, said).ok());
    CHECK(std::filesystem::is_symlink(link));
    CHECK(read_text(target + ".bak") == "not json");
    CHECK_FALSE(std::filesystem::exists(link + ".bak"));
    CHECK(load_wisdom(link).ok());
  }
  SUBCASE("a loop of links: refused, nothing replaced") {
    const std::string a = dir.path + "/a.json", b = dir.path + "/b.json";
    std::filesystem::create_symlink("b.json", a);
    std::filesystem::create_symlink("a.json", b);
    auto t = write_target(a);
    REQUIRE_FALSE(t.ok());
    CHECK(contains(t.error().message, "more than 40 symbolic links"));
    CHECK_FALSE(save_wisdom(this_host({Operation::kMemcpy}, 3), a).ok());
    CHECK(std::filesystem::is_symlink(a));
  }
  SUBCASE("another user's link in a sticky world-writable directory: not followed") {
    if (::geteuid() != 0) {
      MESSAGE("not root: cannot give a link another owner; skipped");
      return;
    }
    const std::string tmpdir = dir.path + "/sticky", victim = dir.path + "/victim";
    std::filesystem::create_directory(tmpdir);
    REQUIRE(::chmod(tmpdir.c_str(), 01777) == 0);
    write_file(victim, "precious");
    const std::string planted = tmpdir + "/best.json";
    std::filesystem::create_symlink(victim, planted);
    REQUIRE(::lchown(planted.c_str(), 12345, 12345) == 0);
    auto t = write_target(planted);
    REQUIRE_FALSE(t.ok());
    CHECK(contains(t.error().message, "not followed"));
    std::vector<std::string> said2;
    CHECK_FALSE(save_keeping(this_host({Operation::kFill}, 4), planted, said2).ok());
    CHECK(read_text(victim) == "precious");
    CHECK_FALSE(std::filesystem::exists(victim + ".bak"));
  }
  SUBCASE("a chain of two links") {
    const std::string link2 = dir.path + "/outer.json";
    std::filesystem::create_symlink(link, link2);
    CHECK(write_target(link2).value() == target);
    REQUIRE(save_wisdom(this_host({Operation::kMemmove}, 3), link2).ok());
    CHECK(std::filesystem::is_symlink(link2));
    CHECK(std::filesystem::is_symlink(link));
    auto back = load_wisdom(target);
    REQUIRE(back.ok());
    CHECK(ops_of(*back) == std::vector<Operation>{Operation::kMemmove});
  }
}

TEST_CASE("save_wisdom_keeping: into a fleet file this CPU's entries join its host; the others stay") {
  TempDir dir;
  const std::string path = dir.path + "/fleet.json";
  Fleet f;
  f.hosts = {other_host("VendorB", {Operation::kMemcpy}), this_host({Operation::kMemcpy, Operation::kFill}, 1)};
  f.created = "2026-01-01T00:00:00Z";
  REQUIRE(save_fleet(f, path).ok());
  Wisdom w = this_host({Operation::kMemcpy}, 2);
  w.created = "2026-05-06T07:08:09Z";
  std::vector<std::string> said;
  REQUIRE(save_keeping(w, path, said).ok());
  CHECK(said == std::vector<std::string>{"wrote this CPU's entries into the fleet file " + path +
                                         " (2 CPUs; the others unchanged)"});
  auto back = load_fleet(path);
  REQUIRE(back.ok());
  CHECK(back->schema == kFleetSchema);
  CHECK(back->created == w.created);
  REQUIRE(back->hosts.size() == 2);
  CHECK(to_json(back->hosts[0]) == to_json(f.hosts[0]));
  const Wisdom& mine = back->hosts[1];
  CHECK(ops_of(mine) == std::vector<Operation>{Operation::kMemcpy, Operation::kFill});
  CHECK(mine.entries[0].code_hash == w.entries[0].code_hash);        // replaced
  CHECK(mine.entries[1].code_hash == f.hosts[1].entries[1].code_hash);  // kept
}

// Regression: a fleet file of one host (`autotune --merge a.json --emit fleet.json`, or a fleet
// playbook run on one machine) was moved to fleet.json.bak, since only fleets of two or more
// hosts were merged into.
TEST_CASE("save_wisdom_keeping: a fleet of one host is merged into too, never moved aside") {
  TempDir dir;
  const std::string path = dir.path + "/fleet.json";
  Fleet f;
  SUBCASE("of another CPU: this CPU becomes its second host") {
    f.hosts = {other_host("VendorB", {Operation::kMemcpy})};
  }
  SUBCASE("of this CPU: its host takes the entries") {
    f.hosts = {this_host({Operation::kFill}, 1)};
  }
  REQUIRE(save_fleet(f, path).ok());
  std::vector<std::string> said;
  REQUIRE(save_keeping(this_host({Operation::kMemcpy}, 2), path, said).ok());
  CHECK_FALSE(std::filesystem::exists(path + ".bak"));
  REQUIRE(said.size() == 1);
  CHECK_MESSAGE(contains(said[0], "into the fleet file"), said[0]);
  auto back = load_fleet(path);
  REQUIRE(back.ok());
  CHECK(back->schema == kFleetSchema);
  const bool other = f.hosts[0].cpu_signature != CpuInfo::host().signature();
  CHECK(back->hosts.size() == (other ? 2u : 1u));
  const Wisdom* mine = back->find(CpuInfo::host().signature());
  REQUIRE(mine != nullptr);
  CHECK(mine->find(Operation::kMemcpy) != nullptr);
  CHECK((mine->find(Operation::kFill) != nullptr) == !other);
}

TEST_CASE("save_wisdom_keeping: a directory is refused and nothing moves") {
  TempDir dir;
  const std::string path = dir.path + "/adir.json";
  std::filesystem::create_directory(path);
  std::vector<std::string> said;
  const Status st = save_keeping(this_host({Operation::kMemcpy}, 1), path, said);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().code == ErrorCode::kWisdomIo);
  CHECK_MESSAGE(contains(st.error().message, "is a directory"), st.error().message);
  CHECK(std::filesystem::is_directory(path));
  CHECK_FALSE(std::filesystem::exists(path + ".bak"));
  CHECK(said.empty());
}

TEST_CASE("free_backup_name: PATH.bak, then PATH.bak.1, .2, ...") {
  TempDir dir;
  const std::string path = dir.path + "/w.json";
  CHECK(free_backup_name(path) == path + ".bak");
  write_file(path + ".bak", "x");
  CHECK(free_backup_name(path) == path + ".bak.1");
  write_file(path + ".bak.1", "x");
  CHECK(free_backup_name(path) == path + ".bak.2");
  // A dangling symbolic link holds its name: written through, it would create the file it names.
  std::filesystem::create_symlink(dir.path + "/elsewhere", path + ".bak.2");
  CHECK(free_backup_name(path) == path + ".bak.3");
  CHECK_FALSE(std::filesystem::exists(dir.path + "/elsewhere"));
}

// Regression: `autotune --emit /dev/null` as root moved /dev/null aside to /dev/null.bak and
// renamed a regular file over it (wisdom is written by replacing the file).
TEST_CASE("wisdom is never written over something that is not a regular file") {
  TempDir dir;
  const std::string fifo = dir.path + "/fifo.json";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // A FIFO of the test's own, not /dev/null: a regression must not replace the host's device.
  for (const std::string& p : {fifo}) {
    CAPTURE(p);
    struct stat st {};
    REQUIRE(::stat(p.c_str(), &st) == 0);
    const Status keep = save_wisdom_keeping(sample_wisdom(), p, CpuInfo::host());
    REQUIRE_FALSE(keep.ok());
    CHECK(keep.error().code == ErrorCode::kWisdomIo);
    CHECK_MESSAGE(contains(keep.error().message, "not a regular file"), keep.error().message);
    CHECK_MESSAGE(contains(keep.error().message, "nothing was written"), keep.error().message);
    CHECK_FALSE(save_wisdom(sample_wisdom(), p).ok());
    struct stat after {};
    REQUIRE(::stat(p.c_str(), &after) == 0);
    CHECK(after.st_mode == st.st_mode);  // still the FIFO: not replaced
    CHECK(after.st_ino == st.st_ino);
    CHECK_FALSE(std::filesystem::exists(p + ".bak"));
  }
  CHECK(check_replaceable(dir.path + "/new.json", "wisdom file", ErrorCode::kWisdomIo).ok());
  write_file(dir.path + "/old.json", "x");
  CHECK(check_replaceable(dir.path + "/old.json", "wisdom file", ErrorCode::kWisdomIo).ok());
}

// An empty file, or one of white space only, holds nothing to keep: --emit writes over it
// without a backup. Anything else that is not wisdom is moved aside first.
TEST_CASE("save_wisdom_keeping writes over an empty file without a backup") {
  for (const std::string& text : {std::string(), std::string(" \n\t\r\n"), std::string("x"), std::string(5000, ' ')}) {
    CAPTURE(text.size());
    TempDir dir;
    const std::string p = dir.path + "/best.json";
    write_file(p, text);
    std::vector<std::string> said;
    REQUIRE(save_wisdom_keeping(sample_wisdom(), p, CpuInfo::host(), [&](const std::string& s) { said.push_back(s); }).ok());
    CHECK(load_wisdom(p).ok());
    const bool blank = text.find_first_not_of(" \t\r\n") == std::string::npos;
    CHECK(std::filesystem::exists(p + ".bak") == !blank);
    REQUIRE(said.size() == (blank ? 1u : 2u));
    CHECK(said.back() == "wrote " + p);
  }
}

TEST_CASE("check_output_path: a file in a directory that exists, never a directory") {
  TempDir dir;
  CHECK(check_output_path("--emit", dir.path + "/new.json").ok());
  const Status is_dir = check_output_path("--emit", dir.path);
  REQUIRE_FALSE(is_dir.ok());
  CHECK(is_dir.error().code == ErrorCode::kInvalidArgument);
  CHECK(is_dir.error().message == "--emit " + dir.path + ": is a directory; give a file name");
  const Status missing = check_output_path("--svg", dir.path + "/no/such/x.svg");
  REQUIRE_FALSE(missing.ok());
  CHECK_MESSAGE(contains(missing.error().message, "--svg " + dir.path + "/no/such/x.svg: the directory " + dir.path +
                                                      "/no/such does not exist"),
                missing.error().message);
}

TEST_CASE("make_scratch_dir: a locked directory of its own; earlier runs' are removed only when nobody holds them") {
  namespace fs = std::filesystem;
  TempDir parent;
  const std::string p = parent.path + "/run.";
  auto make_with_lock = [](const std::string& d) {
    fs::create_directories(d + "/sub");
    std::ofstream(d + "/.lock").put('\n');
    std::ofstream(d + "/sub/f") << "x";
  };
  make_with_lock(p + "unlocked");  // a run that ended without removing it
  make_with_lock(p + "held");      // a live run's
  const int held = ::open((p + "held/.lock").c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(held >= 0);
  REQUIRE(::flock(held, LOCK_EX) == 0);
  fs::create_directories(p + "nolock");  // being made this instant, or an older copysynth's
  make_with_lock(parent.path + "/elsewhere");
  fs::create_directory_symlink(parent.path + "/elsewhere", p + "link");  // never followed
  make_with_lock(parent.path + "/other.unlocked");                       // another prefix
  std::ofstream(p + "file") << "x";

  std::string made;
  {
    ScratchDir dir;
    REQUIRE(make_scratch_dir(dir, parent.path, "run.", ErrorCode::kSystem).ok());
    made = dir.path;
    CHECK(made.rfind(p, 0) == 0);
    CHECK(made.size() == p.size() + 6);
    CHECK(fs::is_directory(made));
    CHECK(fs::exists(made + "/.lock"));
    CHECK_FALSE(fs::exists(made + "/.lock.new"));
    CHECK_FALSE(fs::exists(p + "unlocked"));
    CHECK(fs::exists(p + "held/sub/f"));
    CHECK(fs::is_directory(p + "nolock"));
    CHECK(fs::is_symlink(p + "link"));
    CHECK(fs::exists(parent.path + "/elsewhere/sub/f"));
    CHECK(fs::exists(parent.path + "/other.unlocked/sub/f"));
    CHECK(fs::exists(p + "file"));
    // The lock is held for the object's life: another description cannot take it, so a second
    // run sweeping the parent leaves this directory.
    const int probe = ::open((made + "/.lock").c_str(), O_RDONLY | O_CLOEXEC);
    REQUIRE(probe >= 0);
    CHECK(::flock(probe, LOCK_EX | LOCK_NB) != 0);
    ::close(probe);
    ScratchDir second;
    REQUIRE(make_scratch_dir(second, parent.path, "run.", ErrorCode::kSystem).ok());
    CHECK(second.path != made);
    CHECK(fs::exists(made + "/.lock"));
    // Moved, the directory stays until its last owner goes.
    ScratchDir moved(std::move(second));
    CHECK(second.path.empty());
    CHECK(second.lock == -1);
    CHECK(fs::is_directory(moved.path));
    std::ofstream(made + "/work") << "y";
  }
  CHECK_FALSE(fs::exists(made));
  ::close(held);  // the live run ends without removing its directory: the next run does
  ScratchDir third;
  REQUIRE(make_scratch_dir(third, parent.path, "run.", ErrorCode::kSystem).ok());
  CHECK_FALSE(fs::exists(p + "held"));
  CHECK(fs::is_directory(p + "nolock"));

  ScratchDir none;
  const Status missing = make_scratch_dir(none, parent.path + "/no/such", "run.", ErrorCode::kSystem, "set TMPDIR");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().code == ErrorCode::kSystem);
  CHECK_MESSAGE(missing.error().message == "cannot make a temporary directory " + parent.path +
                                               "/no/such/run.XXXXXX: No such file or directory (set TMPDIR)",
                missing.error().message);
  CHECK(none.path.empty());
}

TEST_CASE("write_all: a non-blocking pipe is waited on, a full device and a closed reader are errors") {
  // 1 MiB through a pipe (64 KiB of room) whose write end is non-blocking, read 50 ms later by a
  // child: every byte arrives, in order (the loop without its poll() returned EAGAIN).
  std::string text(1 << 20, '\0');
  for (std::size_t i = 0; i < text.size(); ++i) text[i] = static_cast<char>((i * 131) >> 7);
  int p[2];
  REQUIRE(::pipe(p) == 0);
  REQUIRE(::fcntl(p[1], F_SETFL, ::fcntl(p[1], F_GETFL) | O_NONBLOCK) == 0);  // the read end stays blocking
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::close(p[1]);
    ::usleep(50000);
    std::size_t got = 0;
    bool same = true;
    char b[4096];
    for (ssize_t k; (k = ::read(p[0], b, sizeof b)) != 0;) {
      if (k < 0) _exit(3);
      for (ssize_t j = 0; j < k; ++j) same = same && got + j < text.size() && b[j] == text[got + j];
      got += static_cast<std::size_t>(k);
    }
    _exit(same && got == text.size() ? 0 : 1);
  }
  ::close(p[0]);
  CHECK(copysynth::write_all(p[1], text) == 0);
  ::close(p[1]);  // the child reads to the end either way
  int status = -1;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));

  if (const int full = ::open("/dev/full", O_WRONLY | O_CLOEXEC); full >= 0) {
    CHECK(copysynth::write_all(full, "x") == ENOSPC);
    ::close(full);
  }
  REQUIRE(::pipe(p) == 0);
  ::close(p[0]);
  struct sigaction ignore {}, old {};
  ignore.sa_handler = SIG_IGN;
  REQUIRE(::sigaction(SIGPIPE, &ignore, &old) == 0);
  CHECK(copysynth::write_all(p[1], "x") == EPIPE);
  ::sigaction(SIGPIPE, &old, nullptr);
  ::close(p[1]);
  CHECK(copysynth::write_all(-1, "x") == EBADF);
  CHECK(copysynth::write_all(p[1], "") == 0);  // nothing to write: no call made
}

TEST_CASE("build_entry rebuilds the tuned code and refuses code that differs" *
          test::skip_unless(CpuInfo::host().features().has(Feature::kSSE2), "needs SSE2 (the entry is an SSE2 routine)")) {
  const Wisdom w = sample_wisdom();
  auto r = build_entry(w, w.entries[0]);
  REQUIRE_MESSAGE(r.ok(), (r.ok() ? std::string() : r.error().message));
  CHECK(fnv1a64(r->bytes()) == w.entries[0].code_hash);
  WisdomEntry e = w.entries[0];
  e.code_hash ^= 1;
  auto bad = build_entry(w, e);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().code == ErrorCode::kWisdomMismatch);
  CHECK_MESSAGE(contains(bad.error().message, "differs from the one tuned"), bad.error().message);
  // Written by this version: the message says the generator changed or the file was edited,
  // rather than "made by X, this is X".
  CHECK_MESSAGE(contains(bad.error().message, "both copysynth " COPYSYNTH_VERSION ": this build's code generator changed since, or the file was edited"),
                bad.error().message);
  CHECK_FALSE(contains(bad.error().message, "made by copysynth"));
  // The version that wrote the file does not decide (README, copysynth.h): the code does.
  Wisdom older = w;
  older.generator_version = "0.0.1";
  CHECK(build_entry(older, older.entries[0]).ok());
  auto older_bad = build_entry(older, e);
  REQUIRE_FALSE(older_bad.ok());
  CHECK_MESSAGE(contains(older_bad.error().message, "made by copysynth 0.0.1, this is " COPYSYNTH_VERSION),
                older_bad.error().message);
}

// ----- app verdicts (autotune --app) -------------------------------------------------------------

namespace {

AppVerdict verdict_of(Operation op, bool kept, double ratio) {
  AppVerdict v;
  v.operation = op;
  v.command = "sqlite3 :memory: < q.sql";
  v.runs = 7;
  v.with = "lib";
  v.glibc_ms = 800.5;
  v.tuned_ms = 800.5 * ratio;
  v.ratio = ratio;
  v.spread = 0.004;
  v.kept = kept;
  v.date = "2026-12-01T21:00:00Z";
  return v;
}

}  // namespace

TEST_CASE("app_verdicts: written, read back equal; absent when there are none") {
  Wisdom w = this_host({Operation::kMemcpy}, 1);
  CHECK_FALSE(to_json(w).contains("app_verdicts"));  // files without verdicts stay as before
  w.app_verdicts = {verdict_of(Operation::kMemcpy, true, 0.991), verdict_of(Operation::kMemmove, false, 1.004)};
  const auto j = to_json(w);
  REQUIRE(j.contains("app_verdicts"));
  CHECK(j["app_verdicts"][1]["operation"] == "memmove");
  CHECK(j["app_verdicts"][1]["kept"] == false);
  auto back = wisdom_from_json(j);
  REQUIRE_MESSAGE(back.ok(), back.error().message);
  CHECK(back->app_verdicts == w.app_verdicts);
  CHECK(back->dropped_by_app(Operation::kMemmove));
  CHECK_FALSE(back->dropped_by_app(Operation::kMemcpy));
  CHECK_FALSE(back->dropped_by_app(Operation::kFill));
}

TEST_CASE("app_verdicts: strictly read; errors name the path") {
  Wisdom w = this_host({Operation::kMemcpy}, 1);
  w.app_verdicts = {verdict_of(Operation::kMemmove, false, 1.004)};
  const auto good = to_json(w);
  auto error_of = [&](auto edit) {
    auto j = good;
    edit(j);
    auto r = wisdom_from_json(j);
    return r.ok() ? std::string("accepted") : r.error().message;
  };
  CHECK(error_of([](auto& j) { j["app_verdicts"] = "x"; }).find("app_verdicts: must be an array") != std::string::npos);
  CHECK(error_of([](auto& j) { j["app_verdicts"][0]["operation"] = "clear_page"; }).find("app_verdicts[0].operation") !=
        std::string::npos);
  CHECK(error_of([](auto& j) { j["app_verdicts"][0].erase("ratio"); }).find("app_verdicts[0].ratio: missing") !=
        std::string::npos);
  CHECK(error_of([](auto& j) { j["app_verdicts"][0]["ratio"] = -1; }).find("app_verdicts[0].ratio") != std::string::npos);
  CHECK(error_of([](auto& j) { j["app_verdicts"][0]["kept"] = 1; }).find("app_verdicts[0].kept: must be true or false") !=
        std::string::npos);
  CHECK(error_of([](auto& j) { j["app_verdicts"][0]["with"] = "jit"; }).find("app_verdicts[0].with") != std::string::npos);
  CHECK(error_of([](auto& j) { j["app_verdicts"][0]["runs"] = 0; }).find("app_verdicts[0].runs") != std::string::npos);
  CHECK(error_of([](auto& j) { j["app_verdicts"].push_back(j["app_verdicts"][0]); }).find("a second verdict") !=
        std::string::npos);
  // A verdict that keeps the system memcpy beside a memcpy entry contradicts itself.
  CHECK(error_of([](auto& j) { j["app_verdicts"][0]["operation"] = "memcpy"; }).find("keeps the system routine") !=
        std::string::npos);
  CHECK(error_of([](auto&) {}) == "accepted");
}

TEST_CASE("save_wisdom_keeping: an operation the program dropped is not carried over from the old file") {
  TempDir dir;
  const std::string path = dir.path + "/best.json";
  Wisdom old = this_host({Operation::kMemcpy, Operation::kMemmove, Operation::kFill}, 1);
  old.app_verdicts = {verdict_of(Operation::kFill, true, 0.99)};
  REQUIRE(save_wisdom(old, path).ok());
  Wisdom w = this_host({Operation::kMemcpy}, 2);  // judged: memcpy kept, memmove dropped
  w.app_verdicts = {verdict_of(Operation::kMemcpy, true, 0.98), verdict_of(Operation::kMemmove, false, 1.01)};
  std::vector<std::string> said;
  REQUIRE(save_keeping(w, path, said).ok());
  auto back = load_wisdom(path);
  REQUIRE_MESSAGE(back.ok(), back.error().message);
  CHECK(ops_of(*back) == std::vector<Operation>{Operation::kMemcpy, Operation::kFill});
  REQUIRE(back->app_verdicts.size() == 3);  // memcpy, memmove (not kept) and the old file's fill verdict
  CHECK(back->dropped_by_app(Operation::kMemmove));
  CHECK(back->find_verdict(Operation::kFill)->kept);
  CHECK(std::find_if(said.begin(), said.end(), [](const std::string& s) {
          return s.find("removed the memmove entry") != std::string::npos;
        }) != said.end());
}

TEST_CASE("merge_fleets: a later kept=false verdict removes the earlier entry; a later entry replaces an old verdict") {
  Wisdom a = this_host({Operation::kMemcpy, Operation::kMemmove}, 1);
  a.app_verdicts = {verdict_of(Operation::kMemcpy, true, 0.97)};
  Wisdom b = this_host({Operation::kMemcpy}, 2);  // memcpy re-tuned (not judged); memmove dropped by its program
  b.app_verdicts = {verdict_of(Operation::kMemmove, false, 1.02)};
  Fleet fa, fb;
  fa.hosts = {a};
  fb.hosts = {b};
  std::vector<std::string> notes;
  const Fleet m = merge_fleets({fa, fb}, &notes, {"a.json", "b.json"});
  REQUIRE(m.hosts.size() == 1);
  CHECK(ops_of(m.hosts[0]) == std::vector<Operation>{Operation::kMemcpy});
  CHECK(m.hosts[0].entries[0].code_hash == b.entries[0].code_hash);
  REQUIRE(m.hosts[0].app_verdicts.size() == 1);  // a's memcpy verdict judged a's routine: gone
  CHECK(m.hosts[0].dropped_by_app(Operation::kMemmove));
  CHECK(std::find_if(notes.begin(), notes.end(), [](const std::string& s) {
          return s.find("memmove removed") != std::string::npos;
        }) != notes.end());
  auto back = fleet_from_json(to_json(m));  // and the result reads back
  REQUIRE_MESSAGE(back.ok(), back.error().message);
}
