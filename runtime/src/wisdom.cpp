// copysynth — wisdom files (see wisdom.hpp).
#include "copysynth/wisdom.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

#include "copysynth/c_format.hpp"
#include "copysynth/file_io.hpp"
#include "copysynth/ladders.hpp"
#include "copysynth/profile.hpp"

namespace copysynth {
using nlohmann::json;

namespace {

Error malformed(const std::string& path, const std::string& what) {
  return make_error(ErrorCode::kWisdomMalformed, path + ": " + what);
}

/// Member `key` of object `j` with the given type check; `path` names it in errors.
template <class Check>
Result<const json*> member(const json& j, const std::string& path, const char* key, Check is_type,
                           const char* type_text) {
  auto it = j.find(key);
  const std::string p = path.empty() ? key : path + "." + key;
  if (it == j.end()) return malformed(p, std::string("missing (expected ") + type_text + ")");
  if (!is_type(*it)) return malformed(p, std::string("must be ") + type_text + ", got " + it->dump());
  return &*it;
}

const auto is_string = [](const json& v) { return v.is_string(); };
const auto is_uint = [](const json& v) { return v.is_number_unsigned() || (v.is_number_integer() && v.get<std::int64_t>() >= 0); };
const auto is_number = [](const json& v) { return v.is_number(); };
const auto is_object = [](const json& v) { return v.is_object(); };
const auto is_array = [](const json& v) { return v.is_array(); };

/// The refusal of wisdom tuned on `tuned` on a host `here`, with signature_runs_on's reason.
Error cpu_mismatch(const std::string& tuned, const std::string& here) {
  std::string why;
  signature_runs_on(tuned, here, &why);
  return make_error(ErrorCode::kWisdomMismatch, "wisdom was tuned on CPU \"" + tuned + "\" but this host is \"" + here +
                                                    "\"" + (why.empty() ? "" : " (" + why + ")") +
                                                    "; run `autotune --emit FILE` on this host to tune for it");
}

/// A measured figure as the file keeps it: rounded to 4 significant digits. Medians that move by
/// a percent or more from run to run were written with 17 digits (the shortest text that reads
/// back as the same double), and the points were nine tenths of a three-entry file, which the
/// shim lexed digit by digit at each process's start before cut_entry_points emptied them
/// (docs/perf/startup-check/README.md); `autotune --from`, `--show` and the report still parse
/// them. Written and read in the "C" locale (snprintf_c, strtod_c), not with
/// to_chars/from_chars: libstdc++'s floating-point forms of those would make the shim, which
/// links this file, load libm.so.6 into every program (ctest preload_needs_no_cxx_runtime). A
/// value whose 4-digit rounding overflows (|v| >= 1.7975e308, which would be 1.798e308) is kept
/// as it is.
double measured(double v) {
  if (!std::isfinite(v) || v == 0) return v;
  char b[32];
  const int n = snprintf_c(b, sizeof b, "%.3e", v);
  if (n <= 0 || n >= static_cast<int>(sizeof b)) return v;
  char* end = nullptr;
  const double r = strtod_c(b, &end);
  return end == b + n && std::isfinite(r) ? r : v;
}

std::string hex64(std::uint64_t v) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
  return b;
}

Result<CopyPlan> plan_from_json(const json& j, const CopyParams& params, const std::string& path) {
  auto ladder = member(j, path, "ladder", is_string, "a string");
  if (!ladder) return ladder.error();
  auto classes = member(j, path, "classes", is_array, "an array");
  if (!classes) return classes.error();
  // The ISA is checked when the routine is built for a host (Routine::build), not here.
  auto plan = make_plan(params, IsaFeatures::for_level(IsaLevel::kAVX512), (*ladder)->get<std::string>());
  if (!plan)
    return make_error(plan.error().code == ErrorCode::kInvalidArgument ? ErrorCode::kWisdomMismatch
                                                                       : plan.error().code,
                      path + ": " + plan.error().message);
  if (auto vw = j.find("vector_width"); vw != j.end() && !(is_uint(*vw) && vw->get<std::uint64_t>() == plan->vec))
    return make_error(ErrorCode::kWisdomMismatch,
                      path + ".vector_width: " + vw->dump() + " differs from params.vector_width " +
                          std::to_string(plan->vec));
  const json& cs = **classes;
  if (cs.size() != plan->classes.size())
    return make_error(ErrorCode::kWisdomMismatch,
                      path + ".classes: has " + std::to_string(cs.size()) + " size classes but these " +
                          "params give " + std::to_string(plan->classes.size()) +
                          " with this copysynth version; re-run autotune");
  for (std::size_t i = 0; i < cs.size(); ++i) {
    const std::string cp = path + ".classes[" + std::to_string(i) + "]";
    if (!cs[i].is_object()) return malformed(cp, "must be an object");
    auto lo = member(cs[i], cp, "lo", is_uint, "a non-negative integer");
    if (!lo) return lo.error();
    auto strategy = member(cs[i], cp, "strategy", is_string, "a string");
    if (!strategy) return strategy.error();
    auto weight = member(cs[i], cp, "weight", is_number, "a number");
    if (!weight) return weight.error();
    auto& c = plan->classes[i];
    // Each bound the file states must be what these params give; the first that is not is named
    // with both values.
    auto differs = [&](const char* field, const json& file_value, const std::string& ours) {
      return make_error(ErrorCode::kWisdomMismatch,
                        cp + "." + field + ": the file says " + file_value.dump() + " but these params give " + ours +
                            " (file edited, or made by a copysynth version whose ladder differs); re-run autotune");
    };
    const std::string hi_ours = c.hi == kNever ? std::string("\"max\"") : std::to_string(c.hi);
    const std::string strategy_ours = "\"" + std::string(strategy_name(c.strategy)) + "\"";
    if ((*lo)->get<std::uint64_t>() != c.lo) return differs("lo", **lo, std::to_string(c.lo));
    if (auto hi = cs[i].find("hi"); hi != cs[i].end() &&
                                     !(c.hi == kNever ? (hi->is_string() && hi->get<std::string>() == "max")
                                                      : (is_uint(*hi) && hi->get<std::uint64_t>() == c.hi)))
      return differs("hi", *hi, hi_ours);
    if ((*strategy)->get<std::string>() != strategy_name(c.strategy)) return differs("strategy", **strategy, strategy_ours);
    if (auto bl = cs[i].find("block"); bl != cs[i].end() && !(is_uint(*bl) && bl->get<std::uint64_t>() == c.block))
      return differs("block", *bl, std::to_string(c.block));
    const double w = (*weight)->get<double>();
    if (!(w >= 0) || w > 1e12) return malformed(cp + ".weight", "must be between 0 and 1e12");
    c.weight = w;
  }
  return std::move(plan).value();
}

}  // namespace

const WisdomEntry* Wisdom::find(Operation op) const {
  for (const auto& e : entries)
    if (e.operation == op) return &e;
  return nullptr;
}

const AppVerdict* Wisdom::find_verdict(Operation op) const {
  for (const auto& v : app_verdicts)
    if (v.operation == op) return &v;
  return nullptr;
}

bool Wisdom::dropped_by_app(Operation op) const {
  const AppVerdict* v = find_verdict(op);
  return v && !v->kept;
}

void set_cpu(Wisdom& w, const CpuInfo& cpu) {
  w.cpu_signature = cpu.signature();
  w.cpu_vendor = cpu.vendor();
  w.cpu_brand = cpu.brand();
  w.cpu_features = cpu.features().to_string();
  w.cpu_family = cpu.family();
  w.cpu_model = cpu.model();
  w.cpu_stepping = cpu.stepping();
}

std::uint64_t fnv1a64(const std::vector<std::uint8_t>& bytes) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (auto b : bytes) {
    h ^= b;
    h *= 0x100000001b3ull;
  }
  return h;
}

json to_json(const Wisdom& w) {
  json entries = json::array();
  for (const auto& e : w.entries) {
    json points = json::array();
    for (const auto& p : e.points) {
      json pj = {{"size", p.size},
                 {"src_align", p.src_align},
                 {"dst_align", p.dst_align},
                 {"baseline_gbps", measured(p.baseline_gbps)},
                 {"tuned_gbps", measured(p.tuned_gbps)},
                 {"baseline_ns", measured(p.baseline_ns)},
                 {"tuned_ns", measured(p.tuned_ns)}};
      if (!p.label.empty()) pj["label"] = p.label;
      // The counters as one: all three when any was read (a file's point with cycles 0 and
      // instructions 5 lost the instructions when written back), none without a PMU.
      if (p.cycles != 0 || p.instructions != 0 || p.cache_misses != 0) {
        pj["cycles"] = measured(p.cycles);
        pj["instructions"] = measured(p.instructions);
        pj["cache_misses"] = measured(p.cache_misses);
      }
      points.push_back(pj);
    }
    entries.push_back({{"operation", name_of(e.operation)},
                       {"workload", e.workload},
                       {"params", to_json(e.plan.params)},
                       {"plan", to_json(e.plan)},
                       {"code_fnv1a64", hex64(e.code_hash)},
                       {"points", points}});
  }
  json doc = {{"schema", w.schema},
              {"generator_version", w.generator_version},
              {"created", w.created},
              {"command", w.command},
              {"cpu",
               {{"signature", w.cpu_signature},
                {"vendor", w.cpu_vendor},
                {"brand", w.cpu_brand},
                {"family", w.cpu_family},
                {"model", w.cpu_model},
                {"stepping", w.cpu_stepping},
                {"features", w.cpu_features}}},
              {"entries", entries}};
  if (!w.app_verdicts.empty()) {  // absent when there are none: the files of before stay as they were
    json verdicts = json::array();
    for (const auto& v : w.app_verdicts)
      verdicts.push_back({{"operation", name_of(v.operation)},
                          {"command", v.command},
                          {"runs", v.runs},
                          {"with", v.with},
                          {"glibc_ms", v.glibc_ms},
                          {"tuned_ms", v.tuned_ms},
                          {"ratio", v.ratio},
                          {"spread", v.spread},
                          {"kept", v.kept},
                          {"date", v.date}});
    doc["app_verdicts"] = verdicts;
  }
  return doc;
}

namespace {

/// "app_verdicts" of a document (optional): each field present and of its type, the operation
/// memcpy, memmove or fill, "with" lib or shim, runs 1..1000, times and ratios finite and >= 0, at
/// most one verdict per operation. Errors name the JSON path ("app_verdicts[0].ratio").
Status app_verdicts_from_json(const json& j, Wisdom& w) {
  auto it = j.find("app_verdicts");
  if (it == j.end()) return {};
  if (!it->is_array()) return malformed("app_verdicts", "must be an array");
  for (std::size_t i = 0; i < it->size(); ++i) {
    const json& vj = (*it)[i];
    const std::string path = "app_verdicts[" + std::to_string(i) + "]";
    if (!vj.is_object()) return malformed(path, "must be an object");
    AppVerdict v;
    auto op = member(vj, path, "operation", is_string, "a string");
    if (!op) return op.error();
    const std::string opname = (*op)->get<std::string>();
    if (opname == "memcpy") v.operation = Operation::kMemcpy;
    else if (opname == "memmove") v.operation = Operation::kMemmove;
    else if (opname == "fill") v.operation = Operation::kFill;
    else return malformed(path + ".operation", "must be \"memcpy\", \"memmove\" or \"fill\", got " + (*op)->dump());
    auto command = member(vj, path, "command", is_string, "a string");
    if (!command) return command.error();
    v.command = (*command)->get<std::string>();
    auto runs = member(vj, path, "runs", is_uint, "a non-negative integer");
    if (!runs) return runs.error();
    if ((*runs)->get<std::uint64_t>() < 1 || (*runs)->get<std::uint64_t>() > 1000)
      return malformed(path + ".runs", "must be 1..1000, got " + (*runs)->dump());
    v.runs = static_cast<unsigned>((*runs)->get<std::uint64_t>());
    auto with = member(vj, path, "with", is_string, "a string");
    if (!with) return with.error();
    v.with = (*with)->get<std::string>();
    if (v.with != "lib" && v.with != "shim") return malformed(path + ".with", "must be \"lib\" or \"shim\", got " + (*with)->dump());
    for (auto [key, field] : {std::pair{"glibc_ms", &v.glibc_ms}, {"tuned_ms", &v.tuned_ms}, {"ratio", &v.ratio},
                              {"spread", &v.spread}}) {
      auto f = member(vj, path, key, is_number, "a number");
      if (!f) return f.error();
      const double x = (*f)->get<double>();
      if (!(x >= 0) || x > 1e12) return malformed(path + "." + key, "must be a number between 0 and 1e12, got " + (*f)->dump());
      *field = x;
    }
    auto kept = member(vj, path, "kept", [](const json& x) { return x.is_boolean(); }, "true or false");
    if (!kept) return kept.error();
    v.kept = (*kept)->get<bool>();
    auto date = member(vj, path, "date", is_string, "a string");
    if (!date) return date.error();
    v.date = (*date)->get<std::string>();
    if (w.find_verdict(v.operation))
      return malformed(path + ".operation", "a second verdict for " + (*op)->dump() + "; keep one");
    w.app_verdicts.push_back(std::move(v));
  }
  for (const auto& v : w.app_verdicts)
    if (!v.kept && w.find(v.operation))
      return malformed("app_verdicts", "the verdict for " + std::string(name_of(v.operation)) +
                                           " keeps the system routine (kept: false) but the file has a " +
                                           std::string(name_of(v.operation)) +
                                           " entry; remove one of them (autotune --app removes the entry)");
  return {};
}

}  // namespace

Result<Wisdom> wisdom_from_json(const json& j) {
  if (!j.is_object()) return malformed("(top level)", "must be a JSON object, got " + std::string(j.type_name()));
  Wisdom w;
  auto schema = member(j, "", "schema", is_uint, "an integer");
  if (!schema) return schema.error();
  if ((*schema)->get<std::uint64_t>() == static_cast<std::uint64_t>(kFleetSchema))
    return make_error(ErrorCode::kWisdomMismatch,
                      "this is a fleet file (schema 2: the wisdom of several CPUs), not one host's; read it "
                      "with load_fleet() or load_wisdom_for(), which pick the host of this CPU");
  if ((*schema)->get<std::uint64_t>() != static_cast<std::uint64_t>(kWisdomSchema))
    return make_error(ErrorCode::kWisdomMismatch,
                      "schema " + (*schema)->dump() + " is not supported by this copysynth (it reads schemas " +
                          std::to_string(kWisdomSchema) + " (one host) and " + std::to_string(kFleetSchema) +
                          " (a fleet)); re-run autotune to write a new file");
  w.schema = kWisdomSchema;
  auto version = member(j, "", "generator_version", is_string, "a string");
  if (!version) return version.error();
  w.generator_version = (*version)->get<std::string>();
  if (auto it = j.find("created"); it != j.end() && it->is_string()) w.created = it->get<std::string>();
  if (auto it = j.find("command"); it != j.end() && it->is_string()) w.command = it->get<std::string>();
  auto cpu = member(j, "", "cpu", is_object, "an object");
  if (!cpu) return cpu.error();
  auto sig = member(**cpu, "cpu", "signature", is_string, "a string");
  if (!sig) return sig.error();
  w.cpu_signature = (*sig)->get<std::string>();
  const json& c = **cpu;
  auto str = [&](const char* k) { auto it = c.find(k); return it != c.end() && it->is_string() ? it->get<std::string>() : std::string(); };
  // Informational fields (the signature decides which CPU the file is for): an absent one reads
  // as 0 or "", one of the wrong type is malformed rather than read as 0 ("family": "25" would
  // otherwise show as family 0 in --show).
  auto num = [&](const char* k, unsigned& out) -> Status {
    auto it = c.find(k);
    if (it == c.end()) return {};
    if (!is_uint(*it) || it->get<std::uint64_t>() > 0xFFFFFFFFu)
      return malformed(std::string("cpu.") + k, "must be an unsigned integer below 2^32, got " + it->dump());
    out = it->get<unsigned>();
    return {};
  };
  for (const char* k : {"vendor", "brand", "features"})
    if (auto it = c.find(k); it != c.end() && !it->is_string())
      return malformed(std::string("cpu.") + k, "must be a string, got " + it->dump());
  w.cpu_vendor = str("vendor");
  w.cpu_brand = str("brand");
  w.cpu_features = str("features");
  COPYSYNTH_TRY(num("family", w.cpu_family));
  COPYSYNTH_TRY(num("model", w.cpu_model));
  COPYSYNTH_TRY(num("stepping", w.cpu_stepping));

  auto entries = member(j, "", "entries", is_array, "an array");
  if (!entries) return entries.error();
  for (std::size_t i = 0; i < (*entries)->size(); ++i) {
    const json& e = (**entries)[i];
    const std::string path = "entries[" + std::to_string(i) + "]";
    if (!e.is_object()) return malformed(path, "must be an object");
    WisdomEntry we;
    auto op = member(e, path, "operation", is_string, "a string");
    if (!op) return op.error();
    {
      bool known = false;
      for (std::size_t k = 0; k < spec::Operation::choices.size(); ++k)
        if (spec::Operation::names[k] == (*op)->get<std::string>()) {
          we.operation = spec::Operation::choices[k];
          known = true;
        }
      if (!known)
        return make_error(ErrorCode::kWisdomMismatch,
                          path + ".operation: " + (*op)->dump() +
                              " is not an operation this copysynth knows (memcpy, memmove, fill, clear_page)");
    }
    if (auto it = e.find("workload"); it != e.end() && it->is_string()) we.workload = it->get<std::string>();
    auto params_j = member(e, path, "params", is_object, "an object");
    if (!params_j) return params_j.error();
    auto params = params_from_json(**params_j);
    if (!params) return make_error(params.error().code, path + ".params." + params.error().message);
    if (params->operation.value != we.operation)
      return malformed(path + ".params.operation", "differs from the entry's operation");
    auto plan_j = member(e, path, "plan", is_object, "an object");
    if (!plan_j) return plan_j.error();
    auto plan = plan_from_json(**plan_j, *params, path + ".plan");
    if (!plan) return plan.error();
    we.plan = std::move(plan).value();
    auto hash = member(e, path, "code_fnv1a64", is_string, "a 16-digit hex string");
    if (!hash) return hash.error();
    {
      const std::string h = (*hash)->get<std::string>();
      const bool hex = h.size() == 16 && h.find_first_not_of("0123456789abcdefABCDEF") == std::string::npos;
      if (!hex) return malformed(path + ".code_fnv1a64", "must be 16 hex digits, got \"" + h + "\"");
      we.code_hash = std::strtoull(h.c_str(), nullptr, 16);
    }
    if (auto it = e.find("points"); it != e.end()) {
      if (!it->is_array()) return malformed(path + ".points", "must be an array");
      for (std::size_t k = 0; k < it->size(); ++k) {
        const json& pj = (*it)[k];
        const std::string pp = path + ".points[" + std::to_string(k) + "]";
        if (!pj.is_object()) return malformed(pp, "must be an object");
        MeasuredPoint mp;
        auto size = member(pj, pp, "size", is_uint, "a non-negative integer");
        if (!size) return size.error();
        auto sa = member(pj, pp, "src_align", is_uint, "a non-negative integer");
        if (!sa) return sa.error();
        auto da = member(pj, pp, "dst_align", is_uint, "a non-negative integer");
        if (!da) return da.error();
        auto bg = member(pj, pp, "baseline_gbps", is_number, "a number");
        if (!bg) return bg.error();
        auto tg = member(pj, pp, "tuned_gbps", is_number, "a number");
        if (!tg) return tg.error();
        mp.size = (*size)->get<std::uint64_t>();
        // Offsets within a page: the misaligned matrix times src 2048 bytes past its page.
        if ((*sa)->get<std::uint64_t>() > 4095) return malformed(pp + ".src_align", "must be 0..4095");
        if ((*da)->get<std::uint64_t>() > 4095) return malformed(pp + ".dst_align", "must be 0..4095");
        mp.src_align = static_cast<std::uint32_t>((*sa)->get<std::uint64_t>());
        mp.dst_align = static_cast<std::uint32_t>((*da)->get<std::uint64_t>());
        mp.baseline_gbps = (*bg)->get<double>();
        mp.tuned_gbps = (*tg)->get<double>();
        for (auto [key, field] : {std::pair{"baseline_ns", &mp.baseline_ns}, {"tuned_ns", &mp.tuned_ns},
                                  {"cycles", &mp.cycles}, {"instructions", &mp.instructions},
                                  {"cache_misses", &mp.cache_misses}})
          if (auto f = pj.find(key); f != pj.end()) {
            if (!f->is_number()) return malformed(pp + "." + key, "must be a number");
            *field = f->get<double>();
          }
        if (auto f = pj.find("label"); f != pj.end()) {
          if (!f->is_string() || f->get<std::string>().size() > 256)
            return malformed(pp + ".label", "must be a string of at most 256 characters");
          mp.label = f->get<std::string>();
        }
        we.points.push_back(mp);
      }
    }
    for (const auto& prev : w.entries)
      if (prev.operation == we.operation)
        return malformed(path + ".operation", "a second entry for " + (*op)->dump() + "; keep one");
    w.entries.push_back(std::move(we));
  }
  if (auto st = app_verdicts_from_json(j, w); !st) return st.error();
  return w;
}

EntryPointsScan scan_entry_points(std::string_view text, std::size_t stop_above) {
  // One pass over the bytes, lexical outside the points arrays (value_end checks those against
  // the grammar): strings (with their escapes) are stepped over whole, so a bracket or quote
  // inside one is not structure. Each container opened pushes a byte: an
  // object, an array, or an array that the key "entries" named (the callback in
  // parse_wisdom_text keeps the same facts per depth); a byte a level keeps deep nesting cheap.
  // The depth is json_nesting_depth's: open.size() outside the arrays cut, and inside one the
  // deepest of its `nest`, which value_end keeps within the limit (deeper, the scan stops).
  constexpr unsigned char kObject = 0, kArray = 1, kEntries = 3;
  EntryPointsScan scan;
  std::string open;
  std::vector<std::pair<std::size_t, std::size_t>> cuts;  // [first, last) of each array emptied
  std::string_view key;                                   // the key just read, until its value starts
  const std::size_t n = text.size();
  const auto skip_space = [&](std::size_t i) {
    while (i < n && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r')) ++i;
    return i;
  };
  constexpr std::size_t kNone = std::string_view::npos;
  // The index past the string whose opening quote is at i, or kNone when it is not closed.
  const auto string_end = [&](std::size_t i) {
    for (++i; i < n; ++i) {
      if (text[i] == '\\') ++i;
      else if (text[i] == '"') return i + 1;
    }
    return kNone;
  };
  // The index past the JSON value that starts at i, or kNone. Checked against JSON's grammar
  // (RFC 8259) as nlohmann's parser reads it, without converting a number or building a value:
  // where it returns an index, nlohmann accepts those bytes as one value. Where in doubt it
  // returns kNone and nothing is cut, so the parser meets the text as it is and decides: a number
  // that may overflow a double (more than 300 integer digits plus exponent, or an exponent of
  // more than 4 digits; nlohmann refuses 1e999). Strings are checked as nlohmann's lexer checks
  // them: UTF-8 well-formed by the Unicode Standard's table 3-7 (no overlong forms, no encoded
  // surrogates, nothing past U+10FFFF), and a \u escape of a high surrogate followed by one of a
  // low surrogate (a lone one refused). Iterative: `nest` holds the closing bracket of each open
  // container, a byte a level.
  const auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  const auto is_hex = [&](char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); };
  const auto byte_at = [&](std::size_t i) { return i < n ? static_cast<unsigned char>(text[i]) : 0u; };
  // The UTF-8 sequence whose lead byte (0x80 or more) is at i: the index of its last byte, or kNone.
  const auto utf8_last = [&](std::size_t i) {
    const unsigned lead = byte_at(i);
    unsigned lo = 0x80, hi = 0xBF, more = 0;  // the second byte's range, and the bytes after the lead
    if (lead >= 0xC2 && lead <= 0xDF) more = 1;
    else if (lead == 0xE0) more = 2, lo = 0xA0;
    else if ((lead >= 0xE1 && lead <= 0xEC) || lead == 0xEE || lead == 0xEF) more = 2;
    else if (lead == 0xED) more = 2, hi = 0x9F;
    else if (lead == 0xF0) more = 3, lo = 0x90;
    else if (lead >= 0xF1 && lead <= 0xF3) more = 3;
    else if (lead == 0xF4) more = 3, hi = 0x8F;
    else return kNone;  // 0x80-0xC1, 0xF5-0xFF: never a lead byte
    for (unsigned k = 1; k <= more; ++k) {
      const unsigned b = byte_at(i + k);
      if (b < (k == 1 ? lo : 0x80u) || b > (k == 1 ? hi : 0xBFu)) return kNone;
    }
    return i + more;
  };
  // The code unit of the \u escape whose 'u' is at i (four hex digits after it), or -1.
  const auto escape_unit = [&](std::size_t i) -> long {
    if (n - i < 5) return -1;
    long v = 0;
    for (std::size_t k = 1; k <= 4; ++k) {
      const char h = text[i + k];
      if (!is_hex(h)) return -1;
      v = v * 16 + (is_digit(h) ? h - '0' : (h | 0x20) - 'a' + 10);
    }
    return v;
  };
  const auto json_string_end = [&](std::size_t i) {  // i at the opening quote
    for (++i; i < n; ++i) {
      const auto c = static_cast<unsigned char>(text[i]);
      if (c == '"') return i + 1;
      if (c < 0x20) return kNone;
      if (c >= 0x80) {
        if ((i = utf8_last(i)) == kNone) return kNone;
        continue;
      }
      if (c != '\\') continue;
      if (++i == n) return kNone;
      const char e = text[i];
      if (e == 'u') {
        const long unit = escape_unit(i);
        if (unit < 0 || (unit >= 0xDC00 && unit <= 0xDFFF)) return kNone;  // a lone low surrogate
        i += 4;
        if (unit >= 0xD800 && unit <= 0xDBFF) {  // a high one: a low one must follow
          if (byte_at(i + 1) != '\\' || byte_at(i + 2) != 'u') return kNone;
          const long low = escape_unit(i + 2);
          if (low < 0xDC00 || low > 0xDFFF) return kNone;
          i += 6;
        }
      } else if (!(e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' || e == 't')) {
        return kNone;
      }
    }
    return kNone;
  };
  const auto number_end = [&](std::size_t i) {
    if (i < n && text[i] == '-') ++i;
    if (i == n || !is_digit(text[i])) return kNone;
    std::size_t int_digits = 1;
    if (text[i++] != '0')
      for (; i < n && is_digit(text[i]); ++i) ++int_digits;
    if (i < n && text[i] == '.') {
      if (++i == n || !is_digit(text[i])) return kNone;
      while (i < n && is_digit(text[i])) ++i;
    }
    std::size_t exponent = 0;
    if (i < n && (text[i] == 'e' || text[i] == 'E')) {
      if (++i < n && (text[i] == '+' || text[i] == '-')) ++i;
      const std::size_t first = i;
      for (; i < n && is_digit(text[i]); ++i) exponent = exponent * 10 + static_cast<std::size_t>(text[i] - '0');
      if (i == first || i - first > 4) return kNone;
    }
    return int_digits + exponent > 300 ? kNone : i;
  };
  std::size_t value_deepest = 0;  // value_end's deepest `nest`, of its last value returned whole
  bool value_too_deep = false;    // value_end stopped at max_nest
  std::size_t value_token = 0;    // where the token value_end read last begins
  const auto value_end = [&](std::size_t i, std::size_t max_nest) {
    std::string nest;
    value_deepest = 0;
    value_too_deep = false;
    enum class Want { kValue, kValueOrClose, kKeyOrClose, kKey, kAfter } want = Want::kValue;
    for (;;) {
      i = skip_space(i);
      value_token = i;
      if (i == n) return kNone;
      const char c = text[i];
      switch (want) {
        case Want::kKeyOrClose:
        case Want::kKey:
          if (c == '}' && want == Want::kKeyOrClose) {
            nest.pop_back();
            ++i;
            if (nest.empty()) return i;
            want = Want::kAfter;
            break;
          }
          if (c != '"' || (i = json_string_end(i)) == kNone) return kNone;
          i = skip_space(i);
          if (i == n || text[i] != ':') return kNone;
          ++i;
          want = Want::kValue;
          break;
        case Want::kValueOrClose:
          if (c == ']') {
            nest.pop_back();
            ++i;
            if (nest.empty()) return i;
            want = Want::kAfter;
            break;
          }
          [[fallthrough]];
        case Want::kValue:
          if (c == '{' || c == '[') {
            nest.push_back(c == '{' ? '}' : ']');
            if (nest.size() > max_nest) {
              value_too_deep = true;
              return kNone;
            }
            value_deepest = std::max(value_deepest, nest.size());
            ++i;
            want = c == '{' ? Want::kKeyOrClose : Want::kValueOrClose;
            break;
          }
          if (c == '"') {
            i = json_string_end(i);
          } else if (c == '-' || is_digit(c)) {
            i = number_end(i);
          } else {
            std::string_view word = c == 't' ? "true" : c == 'f' ? "false" : c == 'n' ? "null" : "";
            if (word.empty() || text.substr(i, word.size()) != word) return kNone;
            i += word.size();
          }
          if (i == kNone) return kNone;
          want = Want::kAfter;
          break;
        case Want::kAfter:
          if (nest.empty()) return i;
          if (c == nest.back()) {
            nest.pop_back();
            ++i;
            if (nest.empty()) return i;
          } else if (c == ',') {
            ++i;
            want = nest.back() == '}' ? Want::kKey : Want::kValue;
          } else {
            return kNone;
          }
          break;
      }
    }
  };
  std::size_t in_doubt_until = 0;  // no array is cut that begins before this
  for (std::size_t i = 0; i < n; ++i) {
    const char c = text[i];
    if (c == '"') {
      const std::size_t end = string_end(i);
      if (end == kNone) return scan;  // json_nesting_depth too ends at a string not closed
      const std::size_t after = skip_space(end);
      if (after < n && text[after] == ':') {
        const std::string_view k = text.substr(i + 1, end - i - 2);
        const std::size_t value = skip_space(after + 1);
        if (k == "points" && open.size() >= 2 && static_cast<unsigned char>(open.back()) == kObject &&
            static_cast<unsigned char>(open[open.size() - 2]) == kEntries && value < n && text[value] == '[' &&
            value >= in_doubt_until) {
          const std::size_t last = value_end(value, stop_above - open.size());
          if (last != kNone) {
            scan.deepest = std::max(scan.deepest, open.size() + value_deepest);
            if (skip_space(value + 1) != last - 1) cuts.emplace_back(value, last);  // not already empty
            i = last - 1;
            key = {};
            continue;
          }
          // Past the limit: the brackets value_end opened are the text's own (it read them as
          // JSON), so json_nesting_depth finds the same; stopped here, not scanned again (a file
          // of nested entries and points, each array long, would be read once per level).
          if (value_too_deep) {
            scan.deepest = stop_above + 1;
            return scan;
          }
          // Not JSON, or in doubt: left as it is for the parser, and scanned on as text (its
          // brackets and strings are the text's own); the other arrays may still be cut, but
          // not one that begins before the token value_end stopped at (it was read once: an
          // array inside this one would be read again, once per level, for no cut or a small one).
          in_doubt_until = value_token;
        }
        key = k;
        i = after;
        continue;
      }
      i = end - 1;
    } else if (c == '{' || c == '[') {
      open.push_back(static_cast<char>(c == '{' ? kObject : key == "entries" ? kEntries : kArray));
      if (open.size() > scan.deepest && (scan.deepest = open.size()) > stop_above) return scan;
      key = {};
    } else if (c == '}' || c == ']') {
      if (open.empty() || (static_cast<unsigned char>(open.back()) == kObject) != (c == '}')) {
        scan.depth_known = false;  // json_nesting_depth reads on; the caller asks it
        return scan;
      }
      open.pop_back();
      key = {};
    } else if (c == ',') {
      key = {};
    }
  }
  if (cuts.empty()) return scan;
  std::string out;
  out.reserve(n);
  std::size_t from = 0;
  for (const auto& [first, last] : cuts) {
    out.append(text.substr(from, first - from));
    out.append("[]");
    from = last;
  }
  out.append(text.substr(from));
  scan.cut = std::move(out);
  return scan;
}

std::optional<std::string> cut_entry_points(std::string_view text) {
  return scan_entry_points(text, std::numeric_limits<std::size_t>::max()).cut;
}

std::size_t json_nesting_depth(std::string_view text, std::size_t stop_above) {
  std::size_t depth = 0, deepest = 0;
  const std::size_t n = text.size();
  for (std::size_t i = 0; i < n; ++i) {
    const char c = text[i];
    if (c == '"') {
      for (++i; i < n && text[i] != '"'; ++i)
        if (text[i] == '\\') ++i;
    } else if (c == '[' || c == '{') {
      if (++depth > deepest) {
        deepest = depth;
        if (deepest > stop_above) return deepest;
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

namespace {

/// parse_wisdom_text(text, kSkip), given the text's cut_entry_points(text).
json parse_points_cut(std::string_view text, const std::optional<std::string>& cut) {
  // kSkip: the entries' points arrays are first checked against JSON's grammar and emptied in
  // the text (cut_entry_points), so the parser never lexes their numbers: lexing the text of a
  // 51 KB three-entry file, nine tenths of it points, took 0.28-0.32 ms of a 0.34-0.38 ms parse
  // (docs/perf/startup-check/README.md). Text that is not JSON is refused as before, inside the
  // points arrays (nothing is cut there) or outside them. The document is then parsed whole and
  // the "points" member of every object that is an element of an array named "entries" (a
  // single-host document's entries, a fleet's hosts' entries) erased; a "points" anywhere else
  // is kept, and refused where the schema has no such field, as kKeep does. Not a parser
  // callback: nlohmann's callback parser looks through a container's earlier members each time
  // an object in it closes, so a hostile file of many small objects took quadratic time at
  // every process start. The walk is iterative, for documents nested millions deep.
  json j = json::parse(cut ? std::string_view(*cut) : text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return j;
  std::vector<std::pair<json*, bool>> todo{{&j, false}};  // a value, and whether it is an entries element
  while (!todo.empty()) {
    auto [v, in_entries] = todo.back();
    todo.pop_back();
    if (v->is_array()) {
      for (auto& e : *v) todo.emplace_back(&e, false);
    } else if (v->is_object()) {
      if (in_entries) v->erase("points");
      for (auto it = v->begin(); it != v->end(); ++it) {
        if (it.key() == "entries" && it->is_array())
          for (auto& e : *it) todo.emplace_back(&e, true);
        else
          todo.emplace_back(&*it, false);
      }
    }
  }
  return j;
}

}  // namespace

nlohmann::json parse_wisdom_text(std::string_view text, WisdomPoints points) {
  if (points == WisdomPoints::kKeep) return json::parse(text, nullptr, /*allow_exceptions=*/false);
  // kSkip: parse_points_cut says how.
  return parse_points_cut(text, cut_entry_points(text));
}

namespace {

/// The JSON document in `path`; kWisdomIo (cannot be read, not a regular file, larger than
/// kMaxWisdomBytes: nothing is read then), kInvalidArgument (an empty path) or kWisdomMalformed
/// (empty: "FILE is empty"; not JSON; or a profile: "FILE is a profile, not a wisdom file"),
/// naming the path.
Result<json> read_json(const std::string& path, WisdomPoints points) {
  if (path.empty())
    return make_error(ErrorCode::kInvalidArgument,
                      "the wisdom path is empty; pass the name of a wisdom file (written by `autotune --emit FILE`)");
  auto text = read_regular_file(path, "wisdom file", kMaxWisdomBytes, ErrorCode::kWisdomIo,
                                "run `autotune --emit " + path + "` to create it");
  if (!text) return text.error();
  // An empty file (a copy that failed, `: > best.json`, or a /dev/null that is a regular file in
  // a container) is named as empty, not as "not valid JSON (truncated or edited?)".
  if (text->find_first_not_of(" \t\r\n") == std::string::npos)
    return make_error(ErrorCode::kWisdomMalformed,
                      path + " is empty" + (text->empty() ? " (0 bytes)" : " (only white space)") +
                          ", not a wisdom file; run `autotune --emit " + path + "` to write one");
  // Refused before the parse, whose cost grows with the depth (kMaxWisdomDepth). With kSkip the
  // scan that cuts the points measures the depth too: one pass over the text less at every start
  // of a process under the shim (0.61M of its 2.64M instructions on /bin/true with a 51 KB file,
  // callgrind, docs/perf/startup-check/scan-pass.txt).
  std::size_t deepest = 0;
  std::optional<std::string> cut;
  if (points == WisdomPoints::kSkip) {
    EntryPointsScan scan = scan_entry_points(*text, kMaxWisdomDepth);
    deepest = scan.depth_known ? scan.deepest : json_nesting_depth(*text, kMaxWisdomDepth);
    cut = std::move(scan.cut);
  } else {
    deepest = json_nesting_depth(*text, kMaxWisdomDepth);
  }
  if (deepest > kMaxWisdomDepth)
    return make_error(ErrorCode::kWisdomMalformed,
                      path + " nests its JSON more than " + std::to_string(kMaxWisdomDepth) +
                          " levels deep, and a wisdom file nests at most 8: it is not a wisdom file (or was "
                          "edited); if it held wisdom, make it again with autotune --emit " + path);
  json j = points == WisdomPoints::kSkip ? parse_points_cut(*text, cut)
                                         : json::parse(*text, nullptr, /*allow_exceptions=*/false);
  // The other file autotune reads (COPYSYNTH_PROFILE writes it): JSON Lines, so "not valid JSON"
  // for two records or more, and "schema: missing" for one.
  if (j.is_discarded() ? starts_with_profile_record(*text) : j.is_object() && j.contains("copysynth_profile"))
    return make_error(ErrorCode::kWisdomMalformed, path + " is a profile, not a wisdom file; use --workload profile:" +
                                                       path + " to tune for it (autotune --emit writes wisdom)");
  if (j.is_discarded())
    return make_error(ErrorCode::kWisdomMalformed,
                      path + " is not valid JSON (truncated or edited?); if it held wisdom, make it again with "
                             "autotune --emit " + path);
  return j;
}

/// Writes `j` to `path` atomically, pretty-printed (write_file_replacing: a temporary file renamed
/// over `path`, which keeps its permission bits; on any failure `path` is left as it was).
Status write_json(const json& j, const std::string& path) {
  // Strings that came from the command line (the `command` field, an --app command) may hold
  // bytes that are not UTF-8 (a file name in Latin-1): written as U+FFFD, never thrown on after
  // the tuning is done.
  return write_file_replacing(path, j.dump(2, ' ', false, json::error_handler_t::replace) + "\n", "wisdom file",
                              ErrorCode::kWisdomIo);
}

}  // namespace

Result<Wisdom> load_wisdom(const std::string& path, WisdomPoints points) {
  auto j = read_json(path, points);
  if (!j) return j.error();
  auto w = wisdom_from_json(*j);
  if (!w) return make_error(w.error().code, path + ": " + w.error().message);
  return w;
}

Status save_wisdom(const Wisdom& w, const std::string& path) { return write_json(to_json(w), path); }

// ----- fleets ------------------------------------------------------------------------------

const Wisdom* Fleet::find(const std::string& signature) const {
  for (const auto& h : hosts)
    if (h.cpu_signature == signature) return &h;
  return nullptr;
}

json to_json(const Fleet& f) {
  json hosts = json::array();
  for (const auto& h : f.hosts) hosts.push_back(to_json(h));
  return {{"schema", kFleetSchema},
          {"generator_version", f.generator_version},
          {"created", f.created},
          {"command", f.command},
          {"hosts", hosts}};
}

Result<Fleet> fleet_from_json(const json& j) {
  if (!j.is_object()) return malformed("(top level)", "must be a JSON object, got " + std::string(j.type_name()));
  auto schema = member(j, "", "schema", is_uint, "an integer");
  if (!schema) return schema.error();
  Fleet f;
  if ((*schema)->get<std::uint64_t>() != static_cast<std::uint64_t>(kFleetSchema)) {
    auto w = wisdom_from_json(j);  // schema 1, or an unsupported number (its error)
    if (!w) return w.error();
    f.schema = kWisdomSchema;
    f.generator_version = w->generator_version;
    f.created = w->created;
    f.command = w->command;
    f.hosts.push_back(std::move(w).value());
    return f;
  }
  auto version = member(j, "", "generator_version", is_string, "a string");
  if (!version) return version.error();
  f.generator_version = (*version)->get<std::string>();
  if (auto it = j.find("created"); it != j.end() && it->is_string()) f.created = it->get<std::string>();
  if (auto it = j.find("command"); it != j.end() && it->is_string()) f.command = it->get<std::string>();
  auto hosts = member(j, "", "hosts", is_array, "an array of single-host wisdom documents");
  if (!hosts) return hosts.error();
  if ((*hosts)->empty()) return malformed("hosts", "is empty (a fleet holds at least one host)");
  for (std::size_t i = 0; i < (*hosts)->size(); ++i) {
    const std::string path = "hosts[" + std::to_string(i) + "]";
    const json& h = (**hosts)[i];
    if (!h.is_object()) return malformed(path, "must be an object (a single-host wisdom document)");
    auto w = wisdom_from_json(h);
    if (!w) {
      // "hosts[0].entries[1].params: ..." for a field's error; "hosts[0]: this is a fleet file ..."
      // for a message about the whole document (it read "hosts[0].this is a fleet file").
      const std::string& m = w.error().message;
      const std::size_t at = m.find_first_of(" :.[");
      return make_error(w.error().code, path + (at == std::string::npos || m[at] == ' ' ? ": " : ".") + m);
    }
    if (f.find(w->cpu_signature))
      return malformed(path + ".cpu.signature", "a second host with signature \"" + w->cpu_signature +
                                                    "\"; keep one (autotune --merge combines them)");
    f.hosts.push_back(std::move(w).value());
  }
  return f;
}

Result<Fleet> load_fleet(const std::string& path, WisdomPoints points) {
  auto j = read_json(path, points);
  if (!j) return j.error();
  auto f = fleet_from_json(*j);
  if (!f) return make_error(f.error().code, path + ": " + f.error().message);
  return f;
}

Status save_fleet(const Fleet& f, const std::string& path) { return write_json(to_json(f), path); }

Result<std::size_t> select_host_index(const Fleet& f, const std::string& signature) {
  for (std::size_t i = 0; i < f.hosts.size(); ++i)
    if (f.hosts[i].cpu_signature == signature) return i;
  // No exact match: the compatible host (this CPU model, tuned with a capped ISA) with the most
  // features, the first of those in the file.
  std::optional<std::size_t> best;
  std::size_t best_features = 0;
  for (std::size_t i = 0; i < f.hosts.size(); ++i) {
    if (!signature_runs_on(f.hosts[i].cpu_signature, signature)) continue;
    const auto parsed = parse_cpu_signature(f.hosts[i].cpu_signature);
    const std::size_t n = parsed ? parsed->features.size() : 0;
    if (!best || n > best_features) {
      best = i;
      best_features = n;
    }
  }
  if (best) return *best;
  if (f.hosts.size() == 1) return cpu_mismatch(f.hosts[0].cpu_signature, signature);
  std::string have;
  for (const auto& h : f.hosts) have += (have.empty() ? "\"" : ", \"") + h.cpu_signature + "\"";
  return make_error(ErrorCode::kWisdomMismatch,
                    "none of the " + std::to_string(f.hosts.size()) + " CPUs in this fleet file is this host's \"" +
                        signature + "\" (it holds " + have + "); run `autotune --emit host.json` on this host and " +
                        "add it with `autotune --merge FLEET host.json --emit FLEET`");
}

Result<Wisdom> select_host(const Fleet& f, const std::string& signature) {
  auto i = select_host_index(f, signature);
  if (!i) return i.error();
  return f.hosts[*i];
}

Result<Wisdom> select_host(const Fleet& f, const CpuInfo& cpu) { return select_host(f, cpu.signature()); }

Result<Wisdom> load_wisdom_for(const std::string& path, const CpuInfo& cpu, WisdomPoints points) {
  auto f = load_fleet(path, points);
  if (!f) return f.error();
  auto w = select_host(*f, cpu);
  if (!w) return make_error(w.error().code, path + ": " + w.error().message);
  return w;
}

Fleet merge_fleets(const std::vector<Fleet>& inputs, std::vector<std::string>* notes,
                   const std::vector<std::string>& names) {
  Fleet out;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const std::string input = i < names.size() ? names[i] : "input " + std::to_string(i + 1);
    for (const Wisdom& h : inputs[i].hosts) {
      Wisdom* have = nullptr;
      for (auto& o : out.hosts)
        if (o.cpu_signature == h.cpu_signature) have = &o;
      if (!have) {
        out.hosts.push_back(h);
        continue;
      }
      // The later header; the earlier order of operations, each from the later file if it has one;
      // an earlier entry the later file's app verdict drops goes.
      Wisdom merged = h;
      merged.entries.clear();
      merged.app_verdicts.clear();
      for (const auto& e : have->entries) {
        const WisdomEntry* later = h.find(e.operation);
        if (!later && h.dropped_by_app(e.operation)) {
          if (notes)
            notes->push_back(h.cpu_signature + ": " + std::string(name_of(e.operation)) + " removed: the app verdict of " +
                             input + " keeps the system routine");
          continue;
        }
        merged.entries.push_back(later ? *later : e);
        if (later && notes)
          notes->push_back(h.cpu_signature + ": " + std::string(name_of(e.operation)) + " replaced by the entry of " + input);
      }
      for (const auto& e : h.entries)
        if (!have->find(e.operation)) merged.entries.push_back(e);
      for (const auto& v : have->app_verdicts)  // an earlier verdict on a routine the later file replaced goes
        if (!h.find_verdict(v.operation) && !h.find(v.operation)) merged.app_verdicts.push_back(v);
      for (const auto& v : h.app_verdicts) merged.app_verdicts.push_back(v);
      *have = std::move(merged);
    }
  }
  return out;
}

std::string free_backup_name(const std::string& path) {
  std::error_code ec;
  std::string bak = path + ".bak";
  // symlink_status: a name held by a symbolic link is taken even when the link dangles (written
  // through, it would create the file the link names: a hostile-user finding).
  const auto taken = [&](const std::string& p) {
    return std::filesystem::symlink_status(p, ec).type() != std::filesystem::file_type::not_found;
  };
  for (int i = 1; taken(bak); ++i) bak = path + ".bak." + std::to_string(i);
  return bak;
}

bool blank_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec || size > kMaxWisdomBytes) return false;
  if (size == 0) return true;
  // Read until the first byte that is not white space: a wisdom file is non-blank in its first
  // bytes, so this reads 64 KiB at most for any file but a blank one.
  // A file that cannot be opened or read is not blank: it is kept (a backup, or its own error).
  std::ifstream in(path, std::ios::binary);
  if (!in.is_open()) return false;
  std::string chunk(std::size_t{64} << 10, '\0');
  std::uintmax_t seen = 0;
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    const auto got = static_cast<std::size_t>(in.gcount());
    if (got == 0) break;
    seen += got;
    if (std::string_view(chunk.data(), got).find_first_not_of(" \t\r\n") != std::string_view::npos) return false;
  }
  return !in.bad() && seen == size;
}

Status save_wisdom_keeping(Wisdom w, const std::string& path_in, const CpuInfo& cpu,
                           const std::function<void(const std::string&)>& progress) {
  // A link is written through (write_target): the file it points to is kept, merged into or moved
  // aside, and the link stays.
  auto target = write_target(path_in);
  if (!target) return target.error();
  const std::string path = *target;
  const auto say = [&](const std::string& line) {
    if (progress) progress(line);
  };
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    if (std::filesystem::is_directory(path, ec))
      return make_error(ErrorCode::kWisdomIo, path + " is a directory; give --emit a file name");
    COPYSYNTH_TRY(check_replaceable(path, "wisdom file", ErrorCode::kWisdomIo));  // not moved aside either
    if (auto fleet = load_fleet(path); fleet && fleet->schema == kFleetSchema) {
      Fleet mine;
      mine.hosts = {w};
      Fleet out = *fleet;
      out.hosts = merge_fleets({*fleet, mine}).hosts;
      out.created = w.created;
      COPYSYNTH_TRY(save_fleet(out, path));
      say("wrote this CPU's entries into the fleet file " + path + " (" + std::to_string(out.hosts.size()) +
          " CPUs; the others unchanged)");
      return {};
    }
    auto old = load_wisdom(path);
    Status same_cpu = old ? check_cpu(*old, cpu) : Status(old.error());
    if (blank_file(path)) {
      // An empty file (`: > best.json`, a copy that failed) or one of white space only holds
      // nothing to keep (read_json names it "empty"): written over.
    } else if (same_cpu.ok()) {
      // Old verdicts first, against `w`'s own entries: an old verdict judged a routine `w` replaces.
      for (const auto& v : old->app_verdicts)
        if (!w.find_verdict(v.operation) && !w.find(v.operation)) w.app_verdicts.push_back(v);
        else if (!w.find_verdict(v.operation))  // a new tuning of an operation a program judged
          say("the " + std::string(name_of(v.operation)) + " verdict of " + path + " (`" + v.command + "` was " +
              (v.kept ? "faster" : "not faster") + " with the routine then tuned) goes with it: this " +
              std::string(name_of(v.operation)) + " is a new routine that no program has judged; judge it with "
              "autotune --from " + path + " --app COMMAND");
      for (const auto& e : old->entries)
        if (w.find(e.operation)) {
        } else if (w.dropped_by_app(e.operation)) {
          say("removed the " + std::string(name_of(e.operation)) + " entry of " + path +
              ": the program was not faster with it (app verdict), the system routine is kept");
        } else {
          w.entries.push_back(e);
          say("kept the " + std::string(name_of(e.operation)) + " entry of " + path);
        }
    } else {
      const std::string bak = free_backup_name(path);
      if (std::rename(path.c_str(), bak.c_str()) != 0)
        return make_error(ErrorCode::kWisdomIo, "cannot move the existing " + path + " aside to " + bak + " (" +
                                                    std::strerror(errno) + "); nothing was written");
      say("moved the existing " + path + " to " + bak + ": " + same_cpu.error().message);
    }
  }
  COPYSYNTH_TRY(save_wisdom(w, path));
  say("wrote " + path);
  return {};
}

Result<Routine> build_entry(const Wisdom& w, const WisdomEntry& e, const CpuInfo& cpu) {
  auto r = Routine::build(e.plan, cpu);
  if (!r) return r.error();
  if (fnv1a64(r->bytes()) != e.code_hash)
    return make_error(ErrorCode::kWisdomMismatch,
                      "the rebuilt " + std::string(name_of(e.operation)) +
                          " routine's code differs from the one tuned (" +
                          (w.generator_version == COPYSYNTH_VERSION
                               ? "both copysynth " + w.generator_version +
                                     ": this build's code generator changed since, or the file was edited"
                               : "the wisdom was made by copysynth " + w.generator_version + ", this is " +
                                     COPYSYNTH_VERSION) +
                          "); re-run autotune --emit on this host");
  return r;
}

Status check_cpu(const Wisdom& w, const CpuInfo& cpu) {
  if (signature_runs_on(w.cpu_signature, cpu.signature())) return {};
  return cpu_mismatch(w.cpu_signature, cpu.signature());
}

}  // namespace copysynth
