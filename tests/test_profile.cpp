// copysynth — tests of profile files (runtime/profile.hpp): the size buckets and distance classes
// the shim records by, a record written and read back, the parser's refusals (each naming the
// field), load_profile on files, and Profile::total. The shim's own records are read back by
// tests/preload_test.sh (profile_check.cpp).
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "copysynth/profile.hpp"
#include "support/temp_dir.hpp"
#include "support/text.hpp"

using namespace copysynth;
using nlohmann::json;

namespace {

using test::contains;
using test::TempDir;
using test::write_file;

constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();

void check_bucket(std::uint64_t n, std::uint64_t lo, std::uint64_t hi) {
  const SizeBucket b = size_bucket(n);
  CHECK_MESSAGE(b.lo == lo, "size_bucket(" << n << ").lo");
  CHECK_MESSAGE(b.hi == hi, "size_bucket(" << n << ").hi");
  CHECK(b.count == 0);
}

/// A record with every field set to something other than its default.
ProfileRecord full_record() {
  ProfileRecord r;
  r.program = "/opt/my \"odd\" dir\\prog\tnew\nline \xc3\xa9";  // quote, backslash, controls, UTF-8
  r.pid = 4242;
  r.reason = "signal";
  r.cpu = "GenuineIntel-6-85:sse2,avx,avx2";
  r.window_calls = 64;
  r.sample_period = 8192;
  for (std::size_t k = 0; k < 3; ++k) {
    OpProfile& o = r.ops[k];
    o.calls = 1000 + k;
    o.bytes = (std::uint64_t{1} << 40) + k;
    o.sizes = {{0, 0, 3}, {24, 24, 500 + k}, {4095, 4095, 1}, {4096, 5119, 7}, {size_bucket(kMax).lo, kMax, 2}};
    for (std::size_t i = 0; i < 64; ++i) {
      o.src_mod64[i] = k == 2 ? 0 : i * 3 + k;
      o.dst_mod64[i] = i * 5 + k + 1;
    }
    o.distance = k == 2 ? std::array<std::uint64_t, 3>{1000 + k, 0, 0} : std::array<std::uint64_t, 3>{900, 60 + k, 40};
  }
  ProfileWindow w1;
  w1.thread = 1;
  w1.first_call = 0;
  w1.calls = {{Operation::kMemcpy, 24, 1032, 3080, Distance::kFar},
              {Operation::kMemmove, 100, 4095, 0, Distance::kOverlap},
              {Operation::kFill, 0, 0, 17, Distance::kFar},
              {Operation::kMemcpy, kMax, 1, 2, Distance::kAlias4k}};
  ProfileWindow w2;
  w2.thread = 7;
  w2.first_call = 8192;
  w2.calls = {{Operation::kFill, 4096, 0, 4095, Distance::kFar}};
  r.windows = {w1, w2};
  return r;
}

void check_same(const OpProfile& a, const OpProfile& b) {
  CHECK(a.calls == b.calls);
  CHECK(a.bytes == b.bytes);
  REQUIRE(a.sizes.size() == b.sizes.size());
  for (std::size_t i = 0; i < a.sizes.size(); ++i) {
    CHECK(a.sizes[i].lo == b.sizes[i].lo);
    CHECK(a.sizes[i].hi == b.sizes[i].hi);
    CHECK(a.sizes[i].count == b.sizes[i].count);
  }
  CHECK(a.src_mod64 == b.src_mod64);
  CHECK(a.dst_mod64 == b.dst_mod64);
  CHECK(a.distance == b.distance);
}

void check_same(const ProfileRecord& a, const ProfileRecord& b) {
  CHECK(a.program == b.program);
  CHECK(a.pid == b.pid);
  CHECK(a.reason == b.reason);
  CHECK(a.cpu == b.cpu);
  CHECK(a.window_calls == b.window_calls);
  CHECK(a.sample_period == b.sample_period);
  for (std::size_t k = 0; k < 3; ++k) check_same(a.ops[k], b.ops[k]);
  REQUIRE(a.windows.size() == b.windows.size());
  for (std::size_t i = 0; i < a.windows.size(); ++i) {
    const ProfileWindow &x = a.windows[i], &y = b.windows[i];
    CHECK(x.thread == y.thread);
    CHECK(x.first_call == y.first_call);
    REQUIRE(x.calls.size() == y.calls.size());
    for (std::size_t c = 0; c < x.calls.size(); ++c) {
      CHECK(x.calls[c].op == y.calls[c].op);
      CHECK(x.calls[c].size == y.calls[c].size);
      CHECK(x.calls[c].src_page_offset == y.calls[c].src_page_offset);
      CHECK(x.calls[c].dst_page_offset == y.calls[c].dst_page_offset);
      CHECK(x.calls[c].distance == y.calls[c].distance);
    }
  }
}

/// parse_profile_record of full_record() with `edit` applied to its JSON must fail with
/// kInvalidArgument and a message containing each of `expected`.
template <class Edit>
void check_refused(Edit edit, std::initializer_list<const char*> expected) {
  json j = json::parse(profile_record_json(full_record()));
  edit(j);
  auto r = parse_profile_record(j.dump());
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ErrorCode::kInvalidArgument);
  for (const char* e : expected) CHECK_MESSAGE(contains(r.error().message, e), r.error().message << " lacks " << e);
}

}  // namespace

TEST_CASE("profile: size_bucket, exact below 4096 bytes, quarters of a power of two above") {
  check_bucket(0, 0, 0);
  check_bucket(1, 1, 1);
  check_bucket(4095, 4095, 4095);
  check_bucket(4096, 4096, 5119);
  check_bucket(5119, 4096, 5119);
  check_bucket(5120, 5120, 6143);
  check_bucket(8191, 7168, 8191);
  check_bucket(8192, 8192, 10239);
  check_bucket(100003, 98304, 114687);
  check_bucket(std::uint64_t{1} << 63, std::uint64_t{1} << 63, (std::uint64_t{1} << 63) + (std::uint64_t{1} << 61) - 1);
  check_bucket(kMax, std::uint64_t{7} << 61, kMax);
}

TEST_CASE("profile: distance_class") {
  const std::uintptr_t src = 0x100000;
  // Overlap, both ways, and the first byte after the end.
  CHECK(distance_class(src + 10, src, 20) == Distance::kOverlap);  // dst ahead of src (memmove backward)
  CHECK(distance_class(src - 10, src, 20) == Distance::kOverlap);  // dst behind src
  CHECK(distance_class(src, src, 1) == Distance::kOverlap);
  CHECK(distance_class(src + 20, src, 20) == Distance::kAlias4k);  // adjacent: no overlap, 20 bytes ahead
  CHECK(distance_class(src - 20, src, 20) == Distance::kFar);     // adjacent below: 4076 mod 4096
  // n = 0 never overlaps.
  CHECK(distance_class(src, src, 0) == Distance::kFar);
  CHECK(distance_class(src + 5, src, 0) == Distance::kAlias4k);
  // The 4K aliasing window: 0 < (dst - src) mod 4096 < 1024, without overlap.
  const std::uintptr_t far = src + 65536;
  CHECK(distance_class(far + 0, src, 64) == Distance::kFar);
  CHECK(distance_class(far + 1, src, 64) == Distance::kAlias4k);
  CHECK(distance_class(far + 1023, src, 64) == Distance::kAlias4k);
  CHECK(distance_class(far + 1024, src, 64) == Distance::kFar);
  CHECK(distance_class(far + 4096, src, 64) == Distance::kFar);
  CHECK(distance_class(src + 4096, src, 64) == Distance::kFar);
  CHECK(distance_class(src - 4095, src, 64) == Distance::kAlias4k);  // dst below src, 1 mod 4096
  // A length that reaches into the window's distance is an overlap first.
  CHECK(distance_class(src + 1, src, 2) == Distance::kOverlap);
  CHECK(name_of(Distance::kFar) == "far");
  CHECK(name_of(Distance::kAlias4k) == "alias4k");
  CHECK(name_of(Distance::kOverlap) == "overlap");
}

TEST_CASE("profile: a record with every field, written as one line and read back equal") {
  const ProfileRecord r = full_record();
  const std::string line = profile_record_json(r);
  CHECK(line.find('\n') == std::string::npos);
  CHECK(line.rfind("{\"copysynth_profile\":1,\"program\":", 0) == 0);
  auto back = parse_profile_record(line);
  REQUIRE_MESSAGE(back.ok(), back.error().message);
  check_same(r, *back);
  CHECK(profile_record_json(*back) == line);
  CHECK(profile_index(back->windows[0].calls[2].op) == 2);
}

TEST_CASE("profile: a malformed record is refused, naming the field") {
  check_refused([](json& j) { j["copysynth_profile"] = 2; }, {"copysynth_profile", "schema 2", "reads schema 1"});
  check_refused([](json& j) { j.erase("copysynth_profile"); }, {"not a profile record"});
  check_refused([](json& j) { j.erase("pid"); }, {"pid: missing"});
  check_refused([](json& j) { j["pid"] = -1; }, {"pid: must be a non-negative integer"});
  check_refused([](json& j) { j["reason"] = "crash"; }, {"reason: must be \"exit\" or \"signal\""});
  check_refused([](json& j) { j["window_calls"] = 0; }, {"window_calls"});
  check_refused([](json& j) { j["ops"]["memcopy"] = j["ops"]["memcpy"]; }, {"ops.memcopy: unknown operation"});
  check_refused([](json& j) { j["ops"].erase("memmove"); }, {"ops.memmove: missing"});
  check_refused([](json& j) { j["windows"][0]["calls"][1][0] = "bcopy"; },
                {"windows[0].calls[1][0]", "unknown operation \"bcopy\""});
  check_refused([](json& j) { j["windows"][0]["calls"][0][2] = 4096; }, {"windows[0].calls[0][2]", "below 4096"});
  check_refused([](json& j) { j["windows"][1]["calls"][0][3] = 4096; }, {"windows[1].calls[0][3]", "below 4096"});
  check_refused([](json& j) { j["windows"][0]["calls"][0][4] = "near"; }, {"windows[0].calls[0][4]", "unknown distance"});
  check_refused([](json& j) { j["windows"][0]["calls"][2][2] = 8; }, {"windows[0].calls[2]", "memset has no source"});
  check_refused([](json& j) { j["windows"][0]["calls"][0] = json::array({"memcpy", 24}); }, {"windows[0].calls[0]: must be"});
  check_refused([](json& j) { j["windows"][1]["calls"] = json::array(); }, {"windows[1].calls", "1 to window_calls"});
  // Sizes: a bucket that is not one of size_bucket()'s, a count of 0, not ascending, not a triple.
  check_refused([](json& j) { j["ops"]["memcpy"]["sizes"][3] = json::array({4096, 5000, 1}); },
                {"ops.memcpy.sizes[3]", "is not a size bucket", "[4096, 5119]"});
  check_refused([](json& j) { j["ops"]["memcpy"]["sizes"][1] = json::array({24, 25, 1}); },
                {"ops.memcpy.sizes[1]", "is not a size bucket"});
  check_refused([](json& j) { j["ops"]["memset"]["sizes"][0][2] = 0; }, {"ops.memset.sizes[0]", "count 0"});
  check_refused([](json& j) { std::swap(j["ops"]["memmove"]["sizes"][0], j["ops"]["memmove"]["sizes"][1]); },
                {"ops.memmove.sizes[1]", "ascending"});
  check_refused([](json& j) { j["ops"]["memmove"]["sizes"][1] = j["ops"]["memmove"]["sizes"][0]; },
                {"ops.memmove.sizes[1]", "ascending"});
  check_refused([](json& j) { j["ops"]["memcpy"]["sizes"][0] = json::array({0, 0}); }, {"ops.memcpy.sizes[0]: must be [lo, hi, count]"});
  check_refused([](json& j) { j["ops"]["memcpy"]["src_mod64"].erase(0); }, {"ops.memcpy.src_mod64", "64 counts", "has 63"});
  check_refused([](json& j) { j["ops"]["memcpy"]["dst_mod64"][5] = "x"; }, {"ops.memcpy.dst_mod64[5]"});
  check_refused([](json& j) { j["ops"]["memcpy"]["distance"]["near"] = 1; }, {"ops.memcpy.distance.near", "unknown distance"});
  check_refused([](json& j) { j["ops"]["memcpy"]["distance"].erase("alias4k"); }, {"ops.memcpy.distance.alias4k: missing"});
  check_refused([](json& j) { j["ops"]["memset"]["src_mod64"][3] = 1; }, {"ops.memset.src_mod64[3]", "memset has no source"});
  check_refused([](json& j) { j["ops"]["memset"]["distance"]["overlap"] = 1; }, {"ops.memset.distance", "memset has no source"});
  check_refused([](json& j) { j = json::array(); }, {"must be a JSON object"});

  auto not_json = parse_profile_record("{\"copysynth_profile\":1,");
  REQUIRE_FALSE(not_json.ok());
  CHECK(contains(not_json.error().message, "not valid JSON"));
}

TEST_CASE("profile: load_profile reads JSON Lines, skips blank lines, and names FILE:LINE") {
  TempDir dir;
  ProfileRecord a = full_record(), b = full_record(), c = full_record();
  a.pid = 1;
  b.pid = 2;
  b.reason = "exit";
  b.windows.clear();
  c.pid = 3;
  const std::string ok = dir.path + "/ok.jsonl";
  write_file(ok, profile_record_json(a) + "\n\n" + profile_record_json(b) + "\n  \n" + profile_record_json(c));
  auto p = load_profile(ok);
  REQUIRE_MESSAGE(p.ok(), p.error().message);
  CHECK(p->path == ok);
  REQUIRE(p->records.size() == 3);
  CHECK(p->records[0].pid == 1);
  CHECK(p->records[1].pid == 2);
  CHECK(p->records[1].windows.empty());
  CHECK(p->records[2].pid == 3);
  check_same(c, p->records[2]);

  // A bad fourth line (after a blank one): FILE:4, and nothing of the file is used.
  const std::string bad = dir.path + "/bad.jsonl";
  std::string broken = profile_record_json(b);
  broken.replace(broken.find("\"reason\":\"exit\""), 15, "\"reason\":\"oops\"");
  write_file(bad, profile_record_json(a) + "\n" + profile_record_json(b) + "\n\n" + broken + "\n");
  auto e = load_profile(bad);
  REQUIRE_FALSE(e.ok());
  CHECK(e.error().code == ErrorCode::kInvalidArgument);
  CHECK_MESSAGE(e.error().message.rfind(bad + ":4: reason: ", 0) == 0, e.error().message);
  CHECK(p->cut_short.empty());

  // The last line cut short (no newline after it): left out and said; the records before it
  // stand (a truncated record made the whole file unreadable). With a newline after it, or as
  // the only line, it is refused as before.
  const std::string a_line = profile_record_json(a), b_line = profile_record_json(b);
  const std::string cut = dir.path + "/cut.jsonl";
  write_file(cut, a_line + "\n" + b_line.substr(0, b_line.size() / 2));
  auto c2 = load_profile(cut);
  REQUIRE_MESSAGE(c2.ok(), c2.error().message);
  CHECK(c2->records.size() == 1);
  CHECK_MESSAGE(c2->cut_short.rfind(cut + ":2: ", 0) == 0, c2->cut_short);
  write_file(cut, a_line + "\n" + b_line.substr(0, b_line.size() / 2) + "\n");
  CHECK_FALSE(load_profile(cut).ok());
  write_file(cut, b_line.substr(0, b_line.size() / 2));
  CHECK_FALSE(load_profile(cut).ok());

  // No records: say how to record one.
  for (const char* text : {"", "\n\n   \n"}) {
    const std::string empty = dir.path + "/empty.jsonl";
    write_file(empty, text);
    auto r = load_profile(empty);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == ErrorCode::kInvalidArgument);
    CHECK_MESSAGE(contains(r.error().message, "holds no profile records"), r.error().message);
    CHECK_MESSAGE(contains(r.error().message, "COPYSYNTH_PROFILE=FILE LD_PRELOAD=.../libcopysynth-preload.so PROGRAM"),
                  r.error().message);
  }

  // Not a regular file, missing, or no path at all.
  auto d = load_profile(dir.path);
  REQUIRE_FALSE(d.ok());
  CHECK(d.error().code == ErrorCode::kWisdomIo);
  CHECK_MESSAGE(contains(d.error().message, dir.path + " is a directory, not a profile"), d.error().message);
  auto m = load_profile(dir.path + "/missing.jsonl");
  REQUIRE_FALSE(m.ok());
  CHECK(m.error().code == ErrorCode::kWisdomIo);
  CHECK_MESSAGE(contains(m.error().message, "COPYSYNTH_PROFILE=FILE"), m.error().message);
  auto none = load_profile("");
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().code == ErrorCode::kInvalidArgument);
}

TEST_CASE("profile: a wisdom or fleet file read as a profile is named as one, with the option that reads it") {
  TempDir dir;
  const json wisdom = {{"schema", 1},
                       {"generator_version", "0.0"},
                       {"cpu", {{"signature", "GenuineIntel-6-85:sse2"}}},
                       {"entries", json::array()}};
  const json fleet = {{"schema", 2}, {"generator_version", "0.0"}, {"hosts", json::array({wisdom})}};
  // Pretty-printed (autotune --emit: its first line "{" is not JSON) and on one line (a record
  // without "copysynth_profile").
  for (const std::string& text : {wisdom.dump(2), wisdom.dump(), fleet.dump(2), "\n" + fleet.dump()}) {
    CAPTURE(text);
    const std::string path = dir.path + "/best.json";
    write_file(path, text);
    CHECK(is_wisdom_text(text));
    CHECK_FALSE(starts_with_profile_record(text));
    CHECK_FALSE(is_profile_file(path));
    auto r = load_profile(path);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == ErrorCode::kInvalidArgument);
    CHECK_MESSAGE(r.error().message == path + " is a wisdom file (autotune --emit), not a profile; use --from " + path,
                  r.error().message);
  }
  // JSON that is neither keeps the parser's error.
  const std::string other = dir.path + "/other.json";
  write_file(other, json{{"schema", 1}}.dump(2));
  CHECK_FALSE(is_wisdom_text(json{{"schema", 1}}.dump()));
  auto o = load_profile(other);
  REQUIRE_FALSE(o.ok());
  CHECK_MESSAGE(contains(o.error().message, other + ":1: not valid JSON"), o.error().message);
  // A profile, and one cut short in its first record, start with a record.
  const std::string line = profile_record_json(full_record());
  CHECK(starts_with_profile_record("\n  \n" + line + "\n"));
  CHECK(starts_with_profile_record(line.substr(0, 40)));
  CHECK_FALSE(starts_with_profile_record("{\n\"copysynth_profile\": 1}"));  // not on its first line
  CHECK_FALSE(starts_with_profile_record(""));
  const std::string prof = dir.path + "/p.prof";
  write_file(prof, line + "\n");
  CHECK(is_profile_file(prof));
  CHECK_FALSE(is_profile_file(dir.path + "/missing.prof"));
}

TEST_CASE("profile: Profile::total sums the records, merging equal buckets") {
  Profile p;
  ProfileRecord a, b;
  a.ops[0].calls = 10;
  a.ops[0].bytes = 100;
  a.ops[0].sizes = {{8, 8, 4}, {4096, 5119, 6}};
  a.ops[0].src_mod64[1] = 10;
  a.ops[0].dst_mod64[2] = 10;
  a.ops[0].distance = {7, 2, 1};
  b.ops[0].calls = 5;
  b.ops[0].bytes = 50;
  b.ops[0].sizes = {{0, 0, 1}, {8, 8, 2}, {8192, 10239, 2}};
  b.ops[0].src_mod64[1] = 5;
  b.ops[0].dst_mod64[3] = 5;
  b.ops[0].distance = {5, 0, 0};
  b.ops[2].calls = 3;
  p.records = {a, b};
  const OpProfile t = p.total(Operation::kMemcpy);
  CHECK(t.calls == 15);
  CHECK(t.bytes == 150);
  REQUIRE(t.sizes.size() == 4);
  CHECK((t.sizes[0].lo == 0 && t.sizes[0].count == 1));
  CHECK((t.sizes[1].lo == 8 && t.sizes[1].hi == 8 && t.sizes[1].count == 6));
  CHECK((t.sizes[2].lo == 4096 && t.sizes[2].hi == 5119 && t.sizes[2].count == 6));
  CHECK((t.sizes[3].lo == 8192 && t.sizes[3].count == 2));
  CHECK(t.src_mod64[1] == 15);
  CHECK(t.dst_mod64[2] == 10);
  CHECK(t.dst_mod64[3] == 5);
  CHECK(t.distance == std::array<std::uint64_t, 3>{12, 2, 1});
  CHECK(p.total(Operation::kFill).calls == 3);
  CHECK(p.total(Operation::kMemmove).calls == 0);
  CHECK(p.total(Operation::kClearPage).calls == 0);
}
