// copysynth — profile files: the records the LD_PRELOAD shim writes (COPYSYNTH_PROFILE), read back
// (see profile.hpp). The shim formats its records by hand (api/src/preload_profile.cpp: it may
// not allocate); profile_record_json() writes the very same line with nlohmann::json, and
// tests/preload_test.sh checks that the two agree.
#include "copysynth/profile.hpp"

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string_view>

#include "copysynth/file_io.hpp"

namespace copysynth {
using nlohmann::json;
using nlohmann::ordered_json;

namespace {

/// The names of the operations in a record, by profile_index().
constexpr std::string_view kOpNames[3] = {"memcpy", "memmove", "memset"};
constexpr Operation kOps[3] = {Operation::kMemcpy, Operation::kMemmove, Operation::kFill};
/// The names of the distance classes, by enum value.
constexpr std::string_view kDistanceNames[3] = {"far", "alias4k", "overlap"};

const char* const kHowToRecord =
    "record one with `COPYSYNTH_PROFILE=FILE LD_PRELOAD=.../libcopysynth-preload.so PROGRAM`";

Error bad(const std::string& where, const std::string& what) {
  return make_error(ErrorCode::kInvalidArgument, where + ": " + what);
}

std::string at(const std::string& path, const char* key) { return path.empty() ? key : path + "." + key; }
std::string at(const std::string& path, std::size_t i) { return path + "[" + std::to_string(i) + "]"; }

bool is_uint(const json& v) { return v.is_number_unsigned() || (v.is_number_integer() && v.get<std::int64_t>() >= 0); }

/// Member `key` of object `j`, which must exist; `path` names `j` in errors.
Result<const json*> field(const json& j, const std::string& path, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) return bad(at(path, key), "missing");
  return &*it;
}

Result<std::uint64_t> uint_field(const json& j, const std::string& path, const char* key) {
  auto f = field(j, path, key);
  if (!f) return f.error();
  if (!is_uint(**f)) return bad(at(path, key), "must be a non-negative integer, got " + (*f)->dump());
  return (*f)->get<std::uint64_t>();
}

Result<std::string> string_field(const json& j, const std::string& path, const char* key) {
  auto f = field(j, path, key);
  if (!f) return f.error();
  if (!(*f)->is_string()) return bad(at(path, key), "must be a string, got " + (*f)->dump());
  return (*f)->get<std::string>();
}

Result<const json*> array_field(const json& j, const std::string& path, const char* key) {
  auto f = field(j, path, key);
  if (!f) return f.error();
  if (!(*f)->is_array()) return bad(at(path, key), "must be an array, got " + std::string((*f)->type_name()));
  return *f;
}

Result<const json*> object_field(const json& j, const std::string& path, const char* key) {
  auto f = field(j, path, key);
  if (!f) return f.error();
  if (!(*f)->is_object()) return bad(at(path, key), "must be an object, got " + std::string((*f)->type_name()));
  return *f;
}

/// A JSON array of exactly 64 non-negative integers.
Result<std::array<std::uint64_t, 64>> mod64_field(const json& j, const std::string& path, const char* key) {
  auto a = array_field(j, path, key);
  if (!a) return a.error();
  const json& v = **a;
  if (v.size() != 64) return bad(at(path, key), "must hold 64 counts (one per address mod 64), has " + std::to_string(v.size()));
  std::array<std::uint64_t, 64> out{};
  for (std::size_t i = 0; i < 64; ++i) {
    if (!is_uint(v[i])) return bad(at(at(path, key), i), "must be a non-negative integer, got " + v[i].dump());
    out[i] = v[i].get<std::uint64_t>();
  }
  return out;
}

int distance_index(std::string_view name) {
  for (int i = 0; i < 3; ++i)
    if (kDistanceNames[i] == name) return i;
  return -1;
}

Result<OpProfile> op_from_json(const json& j, const std::string& path, Operation op) {
  if (!j.is_object()) return bad(path, "must be an object, got " + std::string(j.type_name()));
  OpProfile o;
  auto calls = uint_field(j, path, "calls");
  if (!calls) return calls.error();
  auto bytes = uint_field(j, path, "bytes");
  if (!bytes) return bytes.error();
  o.calls = *calls;
  o.bytes = *bytes;

  auto sizes = array_field(j, path, "sizes");
  if (!sizes) return sizes.error();
  const std::string sp = at(path, "sizes");
  for (std::size_t i = 0; i < (*sizes)->size(); ++i) {
    const json& t = (**sizes)[i];
    const std::string p = at(sp, i);
    if (!t.is_array() || t.size() != 3 || !is_uint(t[0]) || !is_uint(t[1]) || !is_uint(t[2]))
      return bad(p, "must be [lo, hi, count] (three non-negative integers), got " + t.dump());
    const SizeBucket b{t[0].get<std::uint64_t>(), t[1].get<std::uint64_t>(), t[2].get<std::uint64_t>()};
    const SizeBucket want = size_bucket(b.lo);
    if (want.lo != b.lo || want.hi != b.hi)
      return bad(p, t.dump() + " is not a size bucket: " + std::to_string(b.lo) + " lies in [" + std::to_string(want.lo) +
                        ", " + std::to_string(want.hi) + "] (one length below " + std::to_string(kProfileExactSizes) +
                        ", a quarter of a power of two above)");
    if (b.count == 0) return bad(p, "a bucket without calls (count 0); such buckets are left out");
    if (!o.sizes.empty() && b.lo <= o.sizes.back().lo)
      return bad(p, "buckets must be in ascending order of length, each once: " + std::to_string(b.lo) + " follows " +
                        std::to_string(o.sizes.back().lo));
    o.sizes.push_back(b);
  }

  auto src = mod64_field(j, path, "src_mod64");
  if (!src) return src.error();
  auto dst = mod64_field(j, path, "dst_mod64");
  if (!dst) return dst.error();
  o.src_mod64 = *src;
  o.dst_mod64 = *dst;

  auto dist = object_field(j, path, "distance");
  if (!dist) return dist.error();
  const std::string dp = at(path, "distance");
  for (auto it = (*dist)->begin(); it != (*dist)->end(); ++it)
    if (distance_index(it.key()) < 0)
      return bad(at(dp, it.key().c_str()), "unknown distance class (they are far, alias4k and overlap)");
  for (int i = 0; i < 3; ++i) {
    auto n = uint_field(**dist, dp, std::string(kDistanceNames[i]).c_str());
    if (!n) return n.error();
    o.distance[i] = *n;
  }

  if (op == Operation::kFill) {
    for (std::size_t i = 0; i < 64; ++i)
      if (o.src_mod64[i] != 0)
        return bad(at(at(path, "src_mod64"), i), "memset has no source: its src_mod64 counts are all 0");
    if (o.distance[1] != 0 || o.distance[2] != 0)
      return bad(dp, "memset has no source: its calls are all \"far\"");
  }
  return o;
}

Result<ProfiledCall> call_from_json(const json& c, const std::string& p) {
  if (!c.is_array() || c.size() != 5 || !c[0].is_string() || !is_uint(c[1]) || !is_uint(c[2]) || !is_uint(c[3]) ||
      !c[4].is_string())
    return bad(p, "must be [operation, length, source mod 4096, destination mod 4096, distance], got " + c.dump());
  ProfiledCall out;
  const std::string op = c[0].get<std::string>();
  int k = -1;
  for (int i = 0; i < 3; ++i)
    if (kOpNames[i] == op) k = i;
  if (k < 0) return bad(at(p, std::size_t{0}), "unknown operation " + c[0].dump() + " (memcpy, memmove or memset)");
  out.op = kOps[k];
  out.size = c[1].get<std::uint64_t>();
  for (int i : {2, 3})
    if (c[i].get<std::uint64_t>() >= 4096)
      return bad(at(p, static_cast<std::size_t>(i)), "an address mod 4096 must be below 4096, got " + c[i].dump());
  out.src_page_offset = static_cast<std::uint16_t>(c[2].get<std::uint64_t>());
  out.dst_page_offset = static_cast<std::uint16_t>(c[3].get<std::uint64_t>());
  const int d = distance_index(c[4].get<std::string>());
  if (d < 0) return bad(at(p, std::size_t{4}), "unknown distance class " + c[4].dump() + " (far, alias4k or overlap)");
  out.distance = static_cast<Distance>(d);
  if (out.op == Operation::kFill && (out.src_page_offset != 0 || out.distance != Distance::kFar))
    return bad(p, "memset has no source: its source offset is 0 and its distance \"far\", got " + c.dump());
  return out;
}

ordered_json op_to_json(const OpProfile& o) {
  ordered_json sizes = ordered_json::array();
  for (const SizeBucket& b : o.sizes) sizes.push_back({b.lo, b.hi, b.count});
  return {{"calls", o.calls},
          {"bytes", o.bytes},
          {"sizes", std::move(sizes)},
          {"src_mod64", o.src_mod64},
          {"dst_mod64", o.dst_mod64},
          {"distance", {{"far", o.distance[0]}, {"alias4k", o.distance[1]}, {"overlap", o.distance[2]}}}};
}

}  // namespace

std::string_view name_of(Distance d) noexcept {
  const auto i = static_cast<std::size_t>(d);
  return i < 3 ? kDistanceNames[i] : std::string_view("?");
}

OpProfile Profile::total(Operation op) const {
  OpProfile t;
  const int k = profile_index(op);
  if (k < 0) return t;
  std::map<std::uint64_t, SizeBucket> sizes;
  for (const ProfileRecord& r : records) {
    const OpProfile& o = r.ops[static_cast<std::size_t>(k)];
    t.calls += o.calls;
    t.bytes += o.bytes;
    for (const SizeBucket& b : o.sizes) {
      auto [it, fresh] = sizes.try_emplace(b.lo, b);
      if (!fresh) it->second.count += b.count;
    }
    for (std::size_t i = 0; i < 64; ++i) {
      t.src_mod64[i] += o.src_mod64[i];
      t.dst_mod64[i] += o.dst_mod64[i];
    }
    for (std::size_t i = 0; i < 3; ++i) t.distance[i] += o.distance[i];
  }
  for (const auto& [lo, b] : sizes) t.sizes.push_back(b);
  return t;
}

std::string profile_record_json(const ProfileRecord& r) {
  ordered_json ops = ordered_json::object();
  for (std::size_t k = 0; k < 3; ++k) ops[std::string(kOpNames[k])] = op_to_json(r.ops[k]);
  ordered_json windows = ordered_json::array();
  for (const ProfileWindow& w : r.windows) {
    ordered_json calls = ordered_json::array();
    for (const ProfiledCall& c : w.calls) {
      const int k = profile_index(c.op);
      calls.push_back({k < 0 ? std::string_view("?") : kOpNames[k], c.size, c.src_page_offset, c.dst_page_offset,
                       name_of(c.distance)});
    }
    windows.push_back({{"thread", w.thread}, {"first_call", w.first_call}, {"calls", std::move(calls)}});
  }
  const ordered_json j = {{"copysynth_profile", kProfileSchema},
                          {"program", r.program},
                          {"pid", r.pid},
                          {"reason", r.reason},
                          {"cpu", r.cpu},
                          {"window_calls", r.window_calls},
                          {"sample_period", r.sample_period},
                          {"ops", std::move(ops)},
                          {"windows", std::move(windows)}};
  // A program path that is not UTF-8 is written with U+FFFD in place of the bytes that are not
  // (as the shim writes it): JSON text is UTF-8.
  return j.dump(-1, ' ', false, ordered_json::error_handler_t::replace);
}

Result<ProfileRecord> parse_profile_record(const std::string& line) {
  const json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded())
    return make_error(ErrorCode::kInvalidArgument,
                      "not valid JSON (a profile record is one JSON object per line, written by the shim)");
  if (!j.is_object()) return bad("(top level)", "must be a JSON object, got " + std::string(j.type_name()));
  auto schema = field(j, "", "copysynth_profile");
  if (!schema)
    return make_error(ErrorCode::kInvalidArgument,
                      "copysynth_profile: missing; this is not a profile record (the shim writes them: " +
                          std::string(kHowToRecord) + ")");
  if (!is_uint(**schema) || (*schema)->get<std::uint64_t>() != static_cast<std::uint64_t>(kProfileSchema))
    return bad("copysynth_profile", "schema " + (*schema)->dump() + " is not supported by this copysynth (it reads schema " +
                                        std::to_string(kProfileSchema) + "); record the profile again with this version's shim");
  ProfileRecord r;
  auto program = string_field(j, "", "program");
  if (!program) return program.error();
  auto pid = uint_field(j, "", "pid");
  if (!pid) return pid.error();
  auto reason = string_field(j, "", "reason");
  if (!reason) return reason.error();
  if (*reason != "exit" && *reason != "signal")
    return bad("reason", "must be \"exit\" or \"signal\", got " + j["reason"].dump());
  auto cpu = string_field(j, "", "cpu");
  if (!cpu) return cpu.error();
  auto window_calls = uint_field(j, "", "window_calls");
  if (!window_calls) return window_calls.error();
  if (*window_calls == 0 || *window_calls > 65536)
    return bad("window_calls", "must be between 1 and 65536, got " + std::to_string(*window_calls));
  auto period = uint_field(j, "", "sample_period");
  if (!period) return period.error();
  if (*period == 0) return bad("sample_period", "must be at least 1 (calls)");
  r.program = std::move(*program);
  r.pid = *pid;
  r.reason = std::move(*reason);
  r.cpu = std::move(*cpu);
  r.window_calls = *window_calls;
  r.sample_period = *period;

  auto ops = object_field(j, "", "ops");
  if (!ops) return ops.error();
  for (auto it = (*ops)->begin(); it != (*ops)->end(); ++it) {
    bool known = false;
    for (auto n : kOpNames) known = known || n == it.key();
    if (!known) return bad("ops." + it.key(), "unknown operation (a record holds memcpy, memmove and memset)");
  }
  for (std::size_t k = 0; k < 3; ++k) {
    const std::string name(kOpNames[k]);
    auto o = field(**ops, "ops", name.c_str());
    if (!o) return o.error();
    auto op = op_from_json(**o, "ops." + name, kOps[k]);
    if (!op) return op.error();
    r.ops[k] = std::move(*op);
  }

  auto windows = array_field(j, "", "windows");
  if (!windows) return windows.error();
  for (std::size_t i = 0; i < (*windows)->size(); ++i) {
    const json& w = (**windows)[i];
    const std::string wp = at(std::string("windows"), i);
    if (!w.is_object()) return bad(wp, "must be an object, got " + std::string(w.type_name()));
    ProfileWindow pw;
    auto thread = uint_field(w, wp, "thread");
    if (!thread) return thread.error();
    auto first = uint_field(w, wp, "first_call");
    if (!first) return first.error();
    auto calls = array_field(w, wp, "calls");
    if (!calls) return calls.error();
    if ((*calls)->empty() || (*calls)->size() > r.window_calls)
      return bad(at(wp, "calls"), "must hold 1 to window_calls (" + std::to_string(r.window_calls) + ") calls, holds " +
                                      std::to_string((*calls)->size()));
    pw.thread = *thread;
    pw.first_call = *first;
    for (std::size_t c = 0; c < (*calls)->size(); ++c) {
      auto call = call_from_json((**calls)[c], at(at(wp, "calls"), c));
      if (!call) return call.error();
      pw.calls.push_back(*call);
    }
    r.windows.push_back(std::move(pw));
  }
  return r;
}

bool starts_with_profile_record(std::string_view text) noexcept {
  const std::size_t begin = text.find_first_not_of(" \t\r\n");  // load_profile skips blank lines too
  if (begin == std::string_view::npos) return false;
  const std::string_view line = text.substr(begin, text.find('\n', begin) - begin);
  return line.find("\"copysynth_profile\"") != std::string_view::npos;
}

bool is_profile_file(const std::string& path) {
  // Only a regular file is opened: a FIFO's open() would wait for a writer for ever, and a
  // device or a directory is no profile (the caller's own reading says what it is instead).
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  std::ifstream in(path, std::ios::binary);
  std::string head(4096, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  return starts_with_profile_record(head);
}

bool is_wisdom_text(const std::string& text) {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  return j.is_object() && j.contains("schema") && (j.contains("entries") || j.contains("cpu") || j.contains("hosts"));
}

Result<Profile> load_profile(const std::string& path) {
  if (path.empty())
    return make_error(ErrorCode::kInvalidArgument,
                      std::string("the profile path is empty; name a profile file (") + kHowToRecord + ")");
  auto text = read_regular_file(path, "profile", kMaxProfileBytes, ErrorCode::kWisdomIo, kHowToRecord);
  if (!text) return text.error();
  // The other file autotune reads: its first line ("{" when pretty-printed) would be "not valid
  // JSON", or a record without "copysynth_profile" when written on one line.
  if (!starts_with_profile_record(*text) && is_wisdom_text(*text))
    return make_error(ErrorCode::kInvalidArgument,
                      path + " is a wisdom file (autotune --emit), not a profile; use --from " + path);
  Profile p;
  p.path = path;
  std::size_t line_no = 0;
  for (std::size_t pos = 0; pos < text->size();) {
    std::size_t end = text->find('\n', pos);
    if (end == std::string::npos) end = text->size();
    ++line_no;
    const std::string line = text->substr(pos, end - pos);
    pos = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;  // a blank line
    auto r = parse_profile_record(line);
    // The last line, with no newline after it and not a record: one cut short (a write
    // interrupted, a file copied or sent in part). The records before it stand.
    if (!r && end == text->size() && !p.records.empty()) {
      p.cut_short = path + ":" + std::to_string(line_no) + ": " + r.error().message;
      break;
    }
    if (!r)
      return make_error(ErrorCode::kInvalidArgument, path + ":" + std::to_string(line_no) + ": " + r.error().message);
    p.records.push_back(std::move(*r));
  }
  if (p.records.empty())
    return make_error(ErrorCode::kInvalidArgument,
                      path + " holds no profile records (it is empty or has blank lines only); " + kHowToRecord);
  return p;
}

}  // namespace copysynth
