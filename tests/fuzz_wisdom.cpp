// libFuzzer target for the wisdom loader: best.json is untrusted input (a user may edit it, copy it
// from another host, or truncate it), so arbitrary bytes must either be rejected with an error or
// give a Wisdom that keeps every property the rest of copysynth relies on.
//
// Per input: parse the bytes as load_wisdom() does (parse_wisdom_text; and as install_wisdom()
// does, without the entries' points: the same verdict on whether it is JSON, the same document
// less those members, a fleet accepted with points accepted without with the same plans, and one
// accepted only without them refused for its points), run
// wisdom_from_json (single-host documents, schema 1) and fleet_from_json (schema 1 or a schema-2
// fleet of several hosts), and
//   - on rejection: the error has one of the documented codes and a non-empty message;
//   - on acceptance: every entry's params pass validate_domains; its plan passes check_plan, has
//     the classes make_plan gives for those params (weights aside) and assembles (the file's
//     weights shape the dispatch tree); its points have offsets 0..4095; and the document
//     round-trips (the points' measured figures rounded to 4 significant digits, to_json):
//     to_json(w) dumped as text re-parses, is accepted again, and gives the same JSON and the same
//     entries and app verdicts (to_json(from_json(to_json(w))) == to_json(w)); app verdicts are one
//     per operation (memcpy, memmove, fill) and one with kept = false has no entry beside it.
//   - fleets: a document wisdom_from_json accepts is a fleet of exactly that one host; a fleet
//     wisdom_from_json refuses is schema 2 (kWisdomMismatch); every host of an accepted fleet keeps
//     the properties above, signatures are unique and select_host (select_host_index) finds each,
//     signature_runs_on between any two of them gives a reason when it refuses and accepts only the
//     same vendor, family and model; the fleet round-trips
//     (to_json, re-parse, same JSON); merging a fleet with itself gives the same hosts, every entry
//     replaced once.
// Any violation, or an exception escaping the loader, aborts with a message (libFuzzer saves the
// input as a crash). ASan and UBSan (COPYSYNTH_FUZZ builds everything with them) catch the rest.
//
// Built with clang and -fsanitize=fuzzer by -DCOPYSYNTH_FUZZ=ON (tools/run-tests.sh fuzz). Without
// it, tests/fuzz_replay_main.cpp supplies a main() that replays the seed corpus (ctest
// fuzz_wisdom_corpus), so the properties are also checked by every normal and sanitizer build.
#include <cmath>
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

/// The points as written and read back: sizes, offsets and labels the same, each measured figure
/// within 0.05 % of its value (to_json rounds them to 4 significant digits; see wisdom.cpp). The
/// exact check is the JSON's: to_json(from_json(to_json(w))) == to_json(w).
bool same_points(const std::vector<MeasuredPoint>& a, const std::vector<MeasuredPoint>& b) {
  if (a.size() != b.size()) return false;
  const auto near = [](double x, double y) { return std::fabs(x - y) <= 5e-4 * std::fabs(x) + 1e-300; };
  for (std::size_t i = 0; i < a.size(); ++i) {
    const MeasuredPoint &p = a[i], &q = b[i];
    if (p.size != q.size || p.src_align != q.src_align || p.dst_align != q.dst_align || p.label != q.label) return false;
    if (!near(p.baseline_gbps, q.baseline_gbps) || !near(p.tuned_gbps, q.tuned_gbps) || !near(p.baseline_ns, q.baseline_ns) ||
        !near(p.tuned_ns, q.tuned_ns) || !near(p.cycles, q.cycles) || !near(p.instructions, q.instructions) ||
        !near(p.cache_misses, q.cache_misses))
      return false;
  }
  return true;
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
      if (p.src_align > 4095 || p.dst_align > 4095) fail(at + ": a point's offset is outside 0..4095");
    for (std::size_t k = 0; k < i; ++k)
      if (w.entries[k].operation == e.operation) fail(at + ": a second entry for the same operation was accepted");
  }

  // App verdicts (autotune --app): one per operation, never clear_page, and a verdict that keeps
  // the system routine has no entry beside it (readers would otherwise use the dropped routine).
  for (std::size_t i = 0; i < w.app_verdicts.size(); ++i) {
    const AppVerdict& v = w.app_verdicts[i];
    const std::string at = "app_verdicts[" + std::to_string(i) + "]";
    if (v.operation == Operation::kClearPage) fail(at + ": a clear_page verdict was accepted");
    if (!v.kept && w.find(v.operation)) fail(at + ": kept=false accepted beside an entry of its operation");
    if (v.runs < 1 || v.runs > 1000 || (v.with != "lib" && v.with != "shim")) fail(at + ": runs or with out of range accepted");
    for (std::size_t k = 0; k < i; ++k)
      if (w.app_verdicts[k].operation == v.operation) fail(at + ": a second verdict for the same operation was accepted");
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
    if (!(a.plan == b.plan) || a.operation != b.operation || a.code_hash != b.code_hash || !same_points(a.points, b.points) ||
        a.workload != b.workload)
      fail("round trip changed entries[" + std::to_string(i) + "]");
  }
  if (w2->app_verdicts != w.app_verdicts) fail("round trip changed the app verdicts");
  if (w2->cpu_signature != w.cpu_signature || w2->schema != w.schema || w2->generator_version != w.generator_version)
    fail("round trip changed the header");
}

void check_rejection(const Error& e) {
  if (e.code != ErrorCode::kWisdomMalformed && e.code != ErrorCode::kInvalidParams &&
      e.code != ErrorCode::kWisdomMismatch)
    fail(std::string("rejected with an undocumented error code ") + error_code_name(e.code), e.message);
  if (e.message.empty()) fail("rejected with an empty message");
}

void check_fleet(const json& input, const Result<Wisdom>& single, const Fleet& f) {
  if (f.hosts.empty()) fail("an accepted fleet has no host");
  if (single && (f.hosts.size() != 1 || to_json(f.hosts[0]) != to_json(*single)))
    fail("a single-host document does not read as a fleet of that host");
  if (!single && input.value("schema", json()) != json(kFleetSchema))
    fail("a fleet that is not schema 2 was accepted although wisdom_from_json refuses it", single.error().message);
  if (!single && single.error().code != ErrorCode::kWisdomMismatch)
    fail("wisdom_from_json refuses an accepted fleet with another code than kWisdomMismatch", single.error().message);
  std::size_t entries = 0;
  for (std::size_t i = 0; i < f.hosts.size(); ++i) {
    const Wisdom& h = f.hosts[i];
    if (!single) check_accepted(h);  // a single document was checked already
    entries += h.entries.size();
    if (f.find(h.cpu_signature) != &h) fail("hosts[" + std::to_string(i) + "]: signature not unique or not found");
    auto picked = select_host(f, h.cpu_signature);
    if (!picked || to_json(*picked) != to_json(h)) fail("select_host does not pick hosts[" + std::to_string(i) + "]");
    auto index = select_host_index(f, h.cpu_signature);
    if (!index || *index != i) fail("select_host_index does not give " + std::to_string(i) + " for its own signature");
    // The compatibility rule on the file's signatures, as text from the file: no crash, and a
    // signature accepted on another is of the same vendor, family and model.
    for (const Wisdom& other : f.hosts) {
      std::string why;
      if (!signature_runs_on(h.cpu_signature, other.cpu_signature, &why)) {
        if (why.empty()) fail("signature_runs_on refuses without a reason", h.cpu_signature + " on " + other.cpu_signature);
        continue;
      }
      if (h.cpu_signature == other.cpu_signature) continue;
      const auto a = parse_cpu_signature(h.cpu_signature), b = parse_cpu_signature(other.cpu_signature);
      if (!a || !b || a->vendor != b->vendor || a->family != b->family || a->model != b->model)
        fail("signature_runs_on accepts another CPU model", h.cpu_signature + " on " + other.cpu_signature);
    }
  }
  const json j1 = to_json(f);
  const json j2 = json::parse(j1.dump(), nullptr, /*allow_exceptions=*/false);
  auto f2 = fleet_from_json(j2);
  if (!f2) fail("to_json(fleet) of an accepted fleet is rejected", f2.error().message);
  if (to_json(*f2) != j1) fail("to_json(fleet_from_json(to_json(f))) != to_json(f)");
  std::vector<std::string> notes;
  const Fleet twice = merge_fleets({f, f}, &notes);
  if (twice.hosts.size() != f.hosts.size() || notes.size() != entries)
    fail("merging a fleet with itself changed the hosts or did not replace every entry once");
  for (std::size_t i = 0; i < f.hosts.size(); ++i)
    if (to_json(twice.hosts[i]) != to_json(f.hosts[i])) fail("merging a fleet with itself changed hosts[" + std::to_string(i) + "]");
}

/// `j` without the "points" member of each object that is an element of an array named "entries"
/// (`in_entries`: j is such an array's element), at any depth: what parse_wisdom_text(kSkip) leaves
/// out, written out recursively here.
json without_points(const json& j, bool in_entries = false) {
  if (j.is_array()) {
    json out = json::array();
    for (const auto& v : j) out.push_back(without_points(v));
    return out;
  }
  if (!j.is_object()) return j;
  json out = json::object();
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (in_entries && it.key() == "points") continue;
    const json& v = it.value();
    if (it.key() == "entries" && v.is_array()) {
      json arr = json::array();
      for (const auto& e : v) arr.push_back(without_points(e, true));
      out[it.key()] = arr;
    } else {
      out[it.key()] = without_points(v);
    }
  }
  return out;
}

/// What the shim loads (`js`, read with kSkip) against the full read `j`: a fleet the full read
/// accepts is accepted without its points too, with the same hosts and entries, none with points.
void check_skipped(const json& j, const json& js) {
  auto full = fleet_from_json(j);
  auto skipped = fleet_from_json(js);
  if (!skipped) check_rejection(skipped.error());
  // Refused with its points and accepted without: only for what the points themselves hold.
  if (!full && skipped && full.error().message.find("points") == std::string::npos)
    fail("kSkip accepts a fleet kKeep refuses for another reason than its points", full.error().message);
  if (!full) return;
  if (!skipped) fail("a fleet accepted with its points is refused without them", skipped.error().message);
  if (skipped->hosts.size() != full->hosts.size()) fail("kSkip read another number of hosts");
  for (std::size_t h = 0; h < full->hosts.size(); ++h) {
    const Wisdom& a = full->hosts[h];
    const Wisdom& b = skipped->hosts[h];
    if (a.cpu_signature != b.cpu_signature || a.entries.size() != b.entries.size())
      fail("kSkip read another host or number of entries");
    for (std::size_t i = 0; i < a.entries.size(); ++i) {
      if (!b.entries[i].points.empty()) fail("an entry read with kSkip has points");
      if (!(a.entries[i].plan == b.entries[i].plan) || a.entries[i].code_hash != b.entries[i].code_hash)
        fail("an entry read with kSkip has another plan or code hash");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    // As load_wisdom(): the whole file through nlohmann's parser without exceptions.
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const json j = parse_wisdom_text(text, WisdomPoints::kKeep);
    // As install_wisdom() and the shim read it (WisdomPoints::kSkip, whose points arrays
    // cut_entry_points checks against JSON's grammar and empties before the parse): refused
    // exactly when the full parse is, else that document without its "points" members.
    const json js = parse_wisdom_text(text, WisdomPoints::kSkip);
    if (j.is_discarded() != js.is_discarded()) fail("kSkip and kKeep disagree on whether the text is JSON");
    // The loaders' one pass (scan_entry_points) against the two it stands for, at the loaders'
    // limit and at a small one that fuzzed inputs reach.
    for (const std::size_t limit : {kMaxWisdomDepth, std::size_t{3}}) {
      const EntryPointsScan scan = scan_entry_points(text, limit);
      const std::size_t depth = json_nesting_depth(text, limit);
      if (scan.depth_known ? scan.deepest != depth : scan.deepest > depth)
        fail("scan_entry_points' depth is not json_nesting_depth's", std::to_string(scan.deepest) + " against " +
                                                                          std::to_string(depth));
      if (depth <= limit && scan.cut != cut_entry_points(text))
        fail("scan_entry_points cut another text than cut_entry_points");
    }
    if (j.is_discarded()) return 0;
    if (js != without_points(j)) fail("the kSkip document is not the kKeep document without its points", js.dump());
    check_skipped(j, js);
    auto w = wisdom_from_json(j);
    if (w) check_accepted(*w);
    else check_rejection(w.error());
    auto f = fleet_from_json(j);
    if (f) check_fleet(j, w, *f);
    else check_rejection(f.error());
    if (w && !f) fail("fleet_from_json refuses a single-host document wisdom_from_json accepts", f.error().message);
  } catch (const std::exception& ex) {
    fail("exception escaped the wisdom loader", ex.what());
  }
  return 0;
}
