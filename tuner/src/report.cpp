// copysynth — performance report (see report.hpp).
#include "copysynth/report.hpp"
#include "copysynth/workload.hpp"

#include <immintrin.h>
#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <locale>
#include <sstream>
#include <utility>

#include "copysynth/c_format.hpp"
#include "copysynth/perf_counters.hpp"
#include "copysynth/peers.hpp"
#include "copysynth/timing.hpp"
#include "copysynth/tuner.hpp"

namespace copysynth {
namespace {

std::vector<const void*> entries_of(const std::vector<Peer>& ps, const Routine& tuned, const ReportOptions& opt) {
  std::vector<const void*> e;
  for (const auto& p : ps) e.push_back(p.entry);
  for (const auto& o : opt.others) e.push_back(o.routine->entry());
  e.push_back(tuned.entry());
  return e;
}

std::vector<std::string> columns_of(const std::vector<Peer>& ps, const ReportOptions& opt) {
  std::vector<std::string> c;
  for (const auto& p : ps) c.push_back(p.name);
  for (const auto& o : opt.others) c.push_back(o.name);
  c.push_back("tuned");
  return c;
}

/// An empty table whose columns are the peers of `ps`, the other routines of `opt`, then "tuned".
ReportTable table_for(const std::vector<Peer>& ps, const ReportOptions& opt) {
  ReportTable t;
  t.columns = columns_of(ps, opt);
  t.peers = ps.size();
  return t;
}

std::string ratio(double r) {
  char b[32];
  snprintf_c(b, sizeof b, "%.2fx", r);
  return b;
}

}  // namespace

const std::string& ReportTable::best_peer(const ReportRow& r) const {
  std::size_t b = 0;
  for (std::size_t i = 1; i < peers && i + 1 < r.value.size(); ++i)
    if (per_call ? r.value[i] < r.value[b] : r.value[i] > r.value[b]) b = i;
  return columns[b];
}

double ReportTable::vs_best(const ReportRow& r) const {
  const double tuned = r.value.back();
  const auto& name = best_peer(r);
  const std::size_t b = static_cast<std::size_t>(std::find(columns.begin(), columns.end(), name) - columns.begin());
  return per_call ? r.value[b] / tuned : tuned / r.value[b];
}

double ReportTable::vs_aligned(const ReportRow& r) const {
  // The same src offset with dst 0 where the table has it, else 0/0 (the misaligned matrix's
  // 2048/4 and 2048/33 rows have no 2048/0 row).
  const ReportRow* ref = nullptr;
  for (const auto& a : rows)
    if (a.point.size == r.point.size && a.point.dst_align == 0) {
      if (a.point.src_align == r.point.src_align) {
        ref = &a;
        break;
      }
      if (a.point.src_align == 0) ref = &a;
    }
  return ref && ref->value.back() > 0 ? r.value.back() / ref->value.back() : 0;
}

double ReportTable::vs_glibc(const ReportRow& r) const {
  return per_call ? r.value.front() / r.value.back() : r.value.back() / r.value.front();
}

std::string ReportTable::format() const {
  std::ostringstream o;
  o.imbue(std::locale::classic());  // whatever std::locale::global() says
  char b[64];
  // Labelled rows take the longest label's width (a profile's row is named by its path), at
  // least the 26 columns of the header.
  std::size_t width = 26;
  if (per_call || labelled)
    for (const auto& r : rows) width = std::max(width, r.label.size() + 1);
  const auto padded = [&](std::string s) { return s.append(width - std::min(width, s.size()), ' '); };
  o << (per_call ? padded("Workload (ns/call)") : labelled ? padded("Length, use, cache (GB/s)") : "       Len  Src/Dst ");
  // Value columns are 13 wide, or wider for a longer name (a --versus file's): one space at least.
  int cw = 13;
  for (const auto& c : columns) cw = std::max(cw, static_cast<int>(std::min<std::size_t>(c.size(), 48)) + 1);
  for (const auto& c : columns) {
    std::snprintf(b, sizeof b, "%*.48s", cw, c.c_str());
    o << b;
  }
  o << "  vs best peer  vs glibc" << (aligned_ratio ? "  vs aligned" : "") << "\n";
  std::vector<double> vb, vg;
  for (const auto& r : rows) {
    if (per_call || labelled) {
      o << padded(r.label);
    } else {
      std::snprintf(b, sizeof b, "%10s  %7s ", size_label(r.point.size).c_str(),
                    (std::to_string(r.point.src_align) + "/" + std::to_string(r.point.dst_align)).c_str());
      o << b;
    }
    for (double v : r.value) {
      snprintf_c(b, sizeof b, "%*.2f", cw, v);
      o << b;
    }
    snprintf_c(b, sizeof b, "  %11.2fx  %7.2fx", vs_best(r), vs_glibc(r));
    o << b;
    if (aligned_ratio) {
      snprintf_c(b, sizeof b, "  %10.2fx", vs_aligned(r));
      o << b;
    }
    o << "\n";
  }
  // One summary line over the rows; a replay table with cold rows among warm ones (the
  // production distributions) gets one line for each, so the warm line reads as before.
  const auto summary = [&](const std::vector<const ReportRow*>& rs, const char* what) {
    if (rs.empty()) return;
    std::vector<double> vb, vg;
    for (const ReportRow* r : rs) {
      vb.push_back(vs_best(*r));
      vg.push_back(vs_glibc(*r));
    }
    snprintf_c(b, sizeof b, "%.3fx", geomean(vb));
    o << "geometric mean over " << rs.size() << what << ": tuned vs best peer " << b;
    snprintf_c(b, sizeof b, "%.3fx", geomean(vg));
    o << ", tuned vs glibc " << b;
    // Ratios to each peer, for the summary lines of docs/performance.md.
    for (std::size_t c = 1; c + 1 < columns.size(); ++c) {
      std::vector<double> v;
      for (const ReportRow* r : rs) v.push_back(per_call ? r->value[c] / r->value.back() : r->value.back() / r->value[c]);
      snprintf_c(b, sizeof b, "%.3fx", geomean(v));
      o << ", vs " << columns[c] << " " << b;
    }
    o << "\n";
  };
  std::vector<const ReportRow*> warm, cold;
  for (const auto& r : rows) (per_call && r.state == CacheState::kCold ? cold : warm).push_back(&r);
  if (!per_call || warm.empty() || cold.empty()) {
    std::vector<const ReportRow*> all;
    for (const auto& r : rows) all.push_back(&r);
    summary(all, per_call ? " workloads" : " points");
  } else {
    summary(warm, " workloads (warm)");
    summary(cold, " workloads (cold)");
  }
  return o.str();
}

ReportTable report_points(const Routine& tuned, const Workload& w, const ReportOptions& opt) {
  const auto ps = peers(tuned.operation());
  ReportTable t = table_for(ps, opt);
  const auto entries = entries_of(ps, tuned, opt);
  ThreadPin pin;
  TimingOptions topt;
  topt.rounds = opt.rounds;
  std::vector<PassCase> cases;
  for (const Point& p : w.points) cases.push_back({p.size, p.src_align, p.dst_align, topt});
  const auto m = measure_passes(tuned.operation(), entries, cases, opt.passes, [&](unsigned pass) {
    if (opt.progress)
      opt.progress("report: pass " + std::to_string(pass) + "/" + std::to_string(opt.passes) + " over " +
                   std::to_string(w.points.size()) + " points x " + std::to_string(entries.size()) + " routines");
  });
  for (std::size_t i = 0; i < w.points.size(); ++i) {
    ReportRow r;
    r.point = w.points[i];
    r.label = size_label(r.point.size) + " " + std::to_string(r.point.src_align) + "/" + std::to_string(r.point.dst_align);
    for (const Measurement& e : m[i]) r.value.push_back(e.gbps);
    t.rows.push_back(r);
  }
  return t;
}

namespace {

/// Throughput and read back for copies and fill (timing.hpp, replay()); clear_page throughput.
std::vector<Use> replay_uses(Operation op) {
  if (op != Operation::kClearPage) return {Use::kCopy, Use::kThenRead};
  return {Use::kCopy};
}

/// Replays `w` (32768 calls of replay_calls(), the search's length, another seed than its) for
/// every routine of `entries`, interleaved, medians of opt.passes, and appends a row to `t` per
/// use: throughput, and for a warm memcpy, memmove or fill workload read back too (from cold lines
/// every routine waits as long on memory, so a cold workload gets throughput alone). Rows are
/// labelled with the workload's name (" read back" added for Use::kThenRead), CacheState::kCold
/// for a cold workload.
void replay_rows(ReportTable& t, const Routine& tuned, const std::vector<const void*>& entries, const Workload& w,
                 const ReportOptions& opt) {
  const auto calls = replay_calls(w, 32768, 0x5EED);
  ReplayBuffers rb(w.distribution->max_size(), w.cold);
  for (const Use use : w.cold ? std::vector<Use>{Use::kCopy} : replay_uses(tuned.operation())) {
    TimingOptions tu;
    tu.rounds = opt.rounds;
    tu.use = use;
    std::vector<std::vector<double>> s(entries.size());
    for (unsigned pass = 0; pass < opt.passes; ++pass) {
      const auto m = replay(tuned.operation(), entries, calls, rb, tu);
      for (std::size_t k = 0; k < entries.size(); ++k) s[k].push_back(m[k].ns_per_call);
    }
    ReportRow r;
    r.label = w.name + (use == Use::kThenRead ? " read back" : "");
    r.use = use;
    r.state = w.cold ? CacheState::kCold : CacheState::kAsLeft;
    for (auto& v : s) r.value.push_back(median(v));
    t.rows.push_back(r);
  }
  if (opt.progress) opt.progress("report: " + w.name + " done");
}

}  // namespace

ReportTable report_distributions(const Routine& tuned, const std::vector<std::string>& names,
                                 const ReportOptions& opt, bool with_cold) {
  std::vector<Workload> ws, cold;
  for (const auto& name : names) {
    auto d = load_distribution(name);
    if (!d) {
      if (opt.progress) opt.progress("report: skipping " + name + ": " + d.error().message);
      continue;
    }
    Workload w;
    w.name = d->name;
    w.distribution = std::move(d).value();
    if (with_cold) {
      Workload c = w;
      c.name += " (cold)";
      c.cold = true;
      cold.push_back(std::move(c));
    }
    ws.push_back(std::move(w));
  }
  // The cold rows after the warm ones.
  ws.insert(ws.end(), std::make_move_iterator(cold.begin()), std::make_move_iterator(cold.end()));
  return report_replays(tuned, ws, opt);
}

ReportTable report_replays(const Routine& tuned, const std::vector<Workload>& ws, const ReportOptions& opt) {
  const auto ps = peers(tuned.operation());
  ReportTable t = table_for(ps, opt);
  t.per_call = true;
  t.op = tuned.operation();
  const auto entries = entries_of(ps, tuned, opt);
  ThreadPin pin;
  for (const Workload& w : ws)
    if (w.is_distribution()) replay_rows(t, tuned, entries, w, opt);
  return t;
}

const std::vector<std::uint64_t>& use_sizes() {
  // 32 KiB: an L1-sized copy, where the rep stage's threshold is decided (rep movsb won the copy
  // alone there by 1.05-1.69x and lost it read back by 8 % on Zen 5: docs/performance.md,
  // thirty-ninth round), so that the report shows both sides of that decision against the peers.
  static const std::vector<std::uint64_t> sizes{32u << 10, 64u << 10, 256u << 10, 1u << 20, 4u << 20, 16u << 20, 64u << 20};
  return sizes;
}

ReportTable report_uses(const Routine& tuned, const ReportOptions& opt) {
  const auto ps = peers(tuned.operation());
  ReportTable t = table_for(ps, opt);
  t.labelled = true;
  const auto entries = entries_of(ps, tuned, opt);
  const std::vector<Use> uses = uses_of(tuned.operation());
  ThreadPin pin;
  std::vector<PassCase> cases;
  for (std::uint64_t n : use_sizes())
    for (Use u : uses)
      for (CacheState st : {CacheState::kWarm, CacheState::kCold}) {
        // From 64 KiB on one page past the size, as the search times its thresholds (timed_length(): a rep
        // form with a vector head would otherwise run rep 64 bytes short of a count threshold
        // that its peers, timed at the same length, meet).
        PassCase c{timed_length(n), 0, 0, {}};
        c.opt.rounds = opt.rounds;
        c.opt.use = u;
        c.opt.state = st;
        c.opt.min_calls = 4;
        c.opt.batch_seconds = 200e-6;
        c.opt.max_seconds = 1.5;
        cases.push_back(c);
      }
  const auto m = measure_passes(tuned.operation(), entries, cases, opt.passes, [&](unsigned pass) {
    if (opt.progress)
      opt.progress("report: uses pass " + std::to_string(pass) + "/" + std::to_string(opt.passes) + " over " +
                   std::to_string(cases.size()) + " cases x " + std::to_string(entries.size()) + " routines");
  });
  for (std::size_t i = 0; i < cases.size(); ++i) {
    ReportRow r;
    r.point = {cases[i].size, 0, 0};
    r.use = cases[i].opt.use;
    r.state = cases[i].opt.state;
    const std::uint64_t n = band_start(cases[i].size);  // the use size the row was timed for
    r.label = size_label(n);
    if (cases[i].size != n) r.label.append("+").append(std::to_string((cases[i].size - n) / 1024)).append("K");
    r.label.append(" ").append(use_name(r.use)).append(" ").append(cache_state_name(r.state));
    for (const Measurement& e : m[i]) r.value.push_back(e.gbps);
    t.rows.push_back(r);
  }
  return t;
}

namespace {
/// The columns of `t` that are glibc or aocl (the peers the real-use targets name).
std::vector<std::size_t> system_columns(const ReportTable& t) {
  std::vector<std::size_t> c;
  for (std::size_t i = 0; i < t.peers && i < t.columns.size(); ++i)
    if (t.columns[i] == "glibc" || t.columns[i] == "aocl") c.push_back(i);
  return c;
}
/// tuned over the best of `cols` at row r (per_call tables: time; else rate), and that column.
std::pair<double, std::size_t> vs_columns(const ReportTable& t, const ReportRow& r, const std::vector<std::size_t>& cols) {
  std::size_t b = cols.empty() ? 0 : cols.front();
  for (std::size_t c : cols)
    if (t.per_call ? r.value[c] < r.value[b] : r.value[c] > r.value[b]) b = c;
  return {t.per_call ? r.value[b] / r.value.back() : r.value.back() / r.value[b], b};
}
}  // namespace

std::string format_targets(const ReportTable* seeds, const ReportTable* misaligned,
                           const ReportTable* distributions, double read_gbps, const ReportTable* uses) {
  std::ostringstream o;
  o.imbue(std::locale::classic());  // whatever std::locale::global() says
  auto line = [&](bool met, const std::string& target, const std::string& figure) {
    o << (met ? "  met     " : "  MISSED  ") << target << ": " << figure << "\n";
  };
  // The first four of `rows`, worst first by `key`, as "label 0.93x (NAME)", NAME = against(row):
  // what the ratio is measured against (no parentheses where it is empty: the target says).
  auto worst = [](const std::vector<const ReportRow*>& rows, auto key, auto against) {
    std::string s;
    std::vector<const ReportRow*> v = rows;
    std::sort(v.begin(), v.end(), [&](auto a, auto b) { return key(*a) < key(*b); });
    for (std::size_t i = 0; i < v.size() && i < 4; ++i) {
      const std::string name = against(*v[i]);
      s += (i ? ", " : "") + v[i]->label + " " + ratio(key(*v[i])) + (name.empty() ? "" : " (" + name + ")");
    }
    if (v.size() > 4) s += ", ...";
    return s;
  };
  // ... measured against the row's best peer.
  auto best_peer_of = [](const ReportTable& t) {
    return [p = &t](const ReportRow& r) { return "best peer " + p->best_peer(r); };
  };
  o << "performance targets (docs/performance.md; ratios measured in this run):\n";
  if (seeds && !seeds->rows.empty()) {
    std::vector<const ReportRow*> low;
    double mn = 1e300;
    for (const auto& r : seeds->rows) {
      mn = std::min(mn, seeds->vs_best(r));
      if (seeds->vs_best(r) < 0.97) low.push_back(&r);
    }
    auto key = [&](const ReportRow& r) { return seeds->vs_best(r); };
    line(low.empty(), "every seeds' point >= 0.97x the best peer",
         low.empty() ? "lowest " + ratio(mn) + " over " + std::to_string(seeds->rows.size()) + " points"
                     : std::to_string(low.size()) + " of " + std::to_string(seeds->rows.size()) + " points below: " +
                           worst(low, key, best_peer_of(*seeds)));
    for (const auto& r : seeds->rows)
      if (r.point.size >= (std::uint64_t{64} << 20)) {
        const double v = seeds->vs_best(r);
        char b[200];
        if (read_gbps > 0)
          snprintf_c(b, sizeof b, "tuned %.2f GB/s, best peer %s %.2f GB/s; reads stream at %.2f GB/s here (the limit)",
                        r.value.back(), seeds->best_peer(r).c_str(), r.value.back() / v, read_gbps);
        else
          snprintf_c(b, sizeof b, "tuned %.2f GB/s, best peer %s %.2f GB/s", r.value.back(),
                        seeds->best_peer(r).c_str(), r.value.back() / v);
        const bool bw = read_gbps <= 0 || r.value.back() >= 0.9 * read_gbps;
        line(v >= 1.0 && bw, "64 MiB " + std::to_string(r.point.src_align) + "/" + std::to_string(r.point.dst_align) +
                                 " >= 1.0x the best peer (" + ratio(v) + ") and >= 90% of the read bandwidth" +
                                 (read_gbps > 0 ? " (" + std::to_string(int(100 * r.value.back() / read_gbps + 0.5)) + "%)" : ""),
             b);
      }
  }
  if (misaligned && !misaligned->rows.empty()) {
    // For a copy the peer target is judged twice: where (dst - src) mod 4096 is under 64
    // (4K-aliasing: dst 1..63 bytes past src) and where it is not (the matrix's src-2048 rows),
    // since the two favour different code (docs/performance.md, thirteenth and fourteenth
    // rounds). A fill's matrix has no src offsets: one line.
    const bool has_src = std::any_of(misaligned->rows.begin(), misaligned->rows.end(),
                                     [](const ReportRow& r) { return r.point.src_align != 0; });
    std::vector<const ReportRow*> low_peer[2], low_own;
    double mp[2] = {1e300, 1e300}, ma = 1e300;
    std::size_t seen[2] = {0, 0};
    for (const auto& r : misaligned->rows) {
      if (r.point.dst_align == 0) continue;
      const std::uint32_t d = (r.point.dst_align - r.point.src_align) % 4096;
      const int k = has_src && !(d != 0 && d < 64) ? 1 : 0;
      ++seen[k];
      mp[k] = std::min(mp[k], misaligned->vs_best(r));
      ma = std::min(ma, misaligned->vs_aligned(r));
      if (misaligned->vs_best(r) < 1.0) low_peer[k].push_back(&r);
      if (misaligned->vs_aligned(r) < 0.85) low_own.push_back(&r);
    }
    const char* what[2] = {has_src ? "4 KiB-512 KiB, dst misaligned, 4K-aliasing (dst 1-63 bytes past src mod 4096): >= 1.0x "
                                     "the best peer"
                                   : "4 KiB-512 KiB, dst misaligned: >= 1.0x the best peer",
                           "4 KiB-512 KiB, dst misaligned, not aliasing: >= 1.0x the best peer"};
    for (int k = 0; k < 2; ++k)
      if (seen[k])
        line(low_peer[k].empty(), what[k],
             low_peer[k].empty()
                 ? "lowest " + ratio(mp[k]) + " over " + std::to_string(seen[k]) + " points"
                 : std::to_string(low_peer[k].size()) + " of " + std::to_string(seen[k]) + " points below: " +
                       worst(low_peer[k], [&](const ReportRow& r) { return misaligned->vs_best(r); },
                             best_peer_of(*misaligned)));
    line(low_own.empty(), "4 KiB-512 KiB, dst misaligned: >= 0.85x the tuned routine's aligned copy",
         low_own.empty() ? "lowest " + ratio(ma)
                         : std::to_string(low_own.size()) + " points below: " +
                               worst(low_own, [&](const ReportRow& r) { return misaligned->vs_aligned(r); },
                                     [](const ReportRow&) { return std::string(); }));
  }
  if (distributions && !distributions->rows.empty()) {
    const std::vector<std::size_t> sys = system_columns(*distributions);
    const std::size_t dpdk = static_cast<std::size_t>(
        std::find(distributions->columns.begin(), distributions->columns.end(), "dpdk") - distributions->columns.begin());
    std::string names;
    for (std::size_t c : sys) names += (names.empty() ? "" : " and ") + distributions->columns[c];
    // The target is set for the eight production distributions; a workload's own replay (a
    // program's profile, one distribution) is printed as a check.
    const bool production = !distributions->workload_replay;
    for (const Use use : {Use::kCopy, Use::kThenRead}) {
      std::vector<double> vg, vd;
      for (const auto& r : distributions->rows) {
        if (r.use != use || (production && r.state == CacheState::kCold)) continue;
        vg.push_back(vs_columns(*distributions, r, sys).first);
        if (dpdk < distributions->peers) vd.push_back(r.value[dpdk] / r.value.back());
      }
      const std::size_t n = vg.size();
      if (n == 0) continue;
      const double g = geomean(vg);
      const std::string reading = use == Use::kThenRead ? ", each call reading back the last" : "";
      // dpdk is a memcpy peer only: "not built" where this build lacks it, nothing for the others.
      const std::string fig =
          ratio(g) + (dpdk < distributions->peers                                 ? ", " + ratio(geomean(vd)) + " vs dpdk"
                      : have_dpdk_peer() || distributions->op != Operation::kMemcpy ? ""
                                                                                  : ", dpdk not built");
      if (production)
        line(g >= 1.05,
             "production distributions" + reading + ": >= 1.05x the best of " + names +
                 " in ns per call (geometric mean over " + std::to_string(n) + ")",
             fig);
      else  // a program's profile or the user's own distribution: shown, not a target of its own
        o << "  check   the workload's calls" << reading << " (not a target): tuned vs the best of " << names
          << " in ns per call " << (n > 1 ? "(geometric mean over " + std::to_string(n) + "): " : "") << fig << "\n";
    }
    if (production) {
      std::vector<double> vc;
      std::vector<const ReportRow*> low;
      for (const auto& r : distributions->rows)
        if (r.state == CacheState::kCold) {
          vc.push_back(vs_columns(*distributions, r, sys).first);
          if (vc.back() < 1.0) low.push_back(&r);
        }
      if (!vc.empty()) {
        o << "  check   production distributions, cold (not a target): tuned vs the best of " << names
          << " in ns per call (geometric mean over " << vc.size() << "): " << ratio(geomean(vc));
        if (!low.empty())  // each named with the column it is measured against (glibc or aocl)
          o << "; " << low.size() << " below 1.0x: "
            << worst(
                   low, [&](const ReportRow& r) { return vs_columns(*distributions, r, sys).first; },
                   [&](const ReportRow& r) { return distributions->columns[vs_columns(*distributions, r, sys).second]; });
        o << "\n";
      }
    }
  }
  if (uses && !uses->rows.empty()) {
    const std::vector<std::size_t> sys = system_columns(*uses);
    std::string names;
    for (std::size_t c : sys) names += (names.empty() ? "" : " and ") + uses->columns[c];
    for (const CacheState st : {CacheState::kWarm, CacheState::kCold}) {
      std::vector<std::string> low;
      double mn = 1e300;
      std::size_t n = 0;
      for (const auto& r : uses->rows) {
        if (r.state != st || r.point.size < (256u << 10) || r.point.size > timed_length(16u << 20)) continue;
        const auto [v, c] = vs_columns(*uses, r, sys);
        mn = std::min(mn, v);
        ++n;
        if (v < 1.0) low.push_back(r.label + " " + ratio(v) + " (" + uses->columns[c] + ")");
      }
      if (n == 0) continue;
      std::string fig = low.empty() ? "lowest " + ratio(mn) + " over " + std::to_string(n) + " cases"
                                    : std::to_string(low.size()) + " of " + std::to_string(n) + " below: ";
      for (std::size_t i = 0; i < low.size() && i < 6; ++i) fig += (i ? ", " : "") + low[i];
      if (low.size() > 6) fig += ", ...";
      if (st == CacheState::kWarm)
        line(low.empty(), "256 KiB-16 MiB, the copy alone, read and overwritten (warm): >= 1.0x the best of " + names, fig);
      else
        o << "  check   256 KiB-16 MiB, cold (not a target): " << fig << "\n";
    }
  }
  return o.str();
}

double read_bandwidth_gbps(std::size_t bytes) {
  void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return 0;
  madvise(m, bytes, MADV_HUGEPAGE);
  auto* p = static_cast<std::uint64_t*>(m);
  for (std::size_t i = 0; i < bytes / 8; i += 512) p[i] = i;  // touch every page
  ThreadPin pin;
  std::vector<double> rates;
  volatile std::uint64_t sink = 0;
  for (int pass = 0; pass < 6; ++pass) {
    const std::uint64_t t0 = tsc_begin();
    // Four independent SSE2 accumulators over 64 bytes per step: enough loads in flight to
    // stream; the sum is kept so the loop is not removed.
    __m128i a = _mm_setzero_si128(), b = a, c = a, d = a;
    const auto* v = static_cast<const __m128i*>(m);
    for (std::size_t i = 0; i < bytes / 16; i += 4) {
      a = _mm_add_epi64(a, _mm_load_si128(v + i));
      b = _mm_add_epi64(b, _mm_load_si128(v + i + 1));
      c = _mm_add_epi64(c, _mm_load_si128(v + i + 2));
      d = _mm_add_epi64(d, _mm_load_si128(v + i + 3));
    }
    const std::uint64_t t1 = tsc_end();
    sink = sink + static_cast<std::uint64_t>(_mm_cvtsi128_si64(_mm_add_epi64(_mm_add_epi64(a, b), _mm_add_epi64(c, d))));
    if (pass > 0) rates.push_back(double(bytes) / (double(t1 - t0) / tsc_hz()) / 1e9);
  }
  munmap(m, bytes);
  return median(rates);
}

// write_speedup_svg: tuner/src/plot.cpp (log-scale speedup axis, ticks from plot.hpp).

// ----- the search's final table (autotune's stdout) ---------------------------------------

double geomean_speedup(const std::vector<MeasuredPoint>& points) {
  std::vector<double> r;
  // By time where both times are known (distribution points: a workload of 0-byte calls has no
  // GB/s, and its ratio of GB/s was 0/0), else by GB/s, which is the same ratio for one length.
  for (const auto& p : points)
    r.push_back(p.baseline_ns > 0 && p.tuned_ns > 0 ? p.baseline_ns / p.tuned_ns : p.tuned_gbps / p.baseline_gbps);
  return geomean(r);
}

std::string format_table(const std::vector<MeasuredPoint>& points, Operation op) {
  std::ostringstream o;
  o.imbue(std::locale::classic());  // whatever std::locale::global() says
  char line[200];
  if (!points.empty() && !points.front().label.empty()) {
    // Distribution workloads: ns per call of the replayed sequence.
    const std::string base = baseline_name(op) + " ns/call";
    std::snprintf(line, sizeof line, "%-24s  %10s  %*s  %13s  %7s\n", "Workload", "mean bytes",
                  static_cast<int>(base.size()), base.c_str(), "tuned ns/call", "speedup");
    o << line;
    for (const auto& p : points) {
      snprintf_c(line, sizeof line, "%-24s  %10llu  %*.2f  %13.2f  %6.2fx\n", p.label.c_str(),
                    static_cast<unsigned long long>(p.size), static_cast<int>(base.size()), p.baseline_ns,
                    p.tuned_ns, p.baseline_ns / p.tuned_ns);
      o << line;
    }
    return o.str();
  }
  const std::string base = baseline_name(op) + " GB/s";
  const bool counters = std::any_of(points.begin(), points.end(), [](const MeasuredPoint& p) { return p.cycles > 0; });
  std::snprintf(line, sizeof line, "%10s  %13s  %18s  %10s  %7s", "Len", "Src/Dst align", base.c_str(),
                "tuned GB/s", "speedup");
  o << line << (counters ? "  cycles/call    IPC  LLC misses/call\n" : "\n");
  for (const auto& p : points) {
    char al[32];
    std::snprintf(al, sizeof al, "%u/%u", p.src_align, p.dst_align);
    snprintf_c(line, sizeof line, "%10s  %13s  %*.2f  %10.2f  %6.2fx", size_label(p.size).c_str(), al,
                  static_cast<int>(std::max<std::size_t>(18, base.size())), p.baseline_gbps, p.tuned_gbps,
                  p.tuned_gbps / p.baseline_gbps);
    o << line;
    if (counters) {
      snprintf_c(line, sizeof line, "  %11.1f  %5.2f  %15.2f", p.cycles, p.cycles > 0 ? p.instructions / p.cycles : 0.0,
                    p.cache_misses);
      o << line;
    }
    o << "\n";
  }
  snprintf_c(line, sizeof line, "geometric-mean speedup over %zu points: %.2fx\n", points.size(),
                geomean_speedup(points));
  o << line;
  return o.str();
}

std::string format_patch_table(const std::vector<MeasuredPoint>& points, const std::string& caption, bool fill) {
  std::ostringstream o;
  o.imbue(std::locale::classic());  // whatever std::locale::global() says
  if (!caption.empty()) o << caption << (caption.back() == '\n' ? "" : "\n");
  // Three or four significant digits whatever the length: 1.67, 123.4, 5495631.
  const auto ns = [](double v) {
    char b[32];
    snprintf_c(b, sizeof b, v < 100 ? "%.2f" : v < 10000 ? "%.1f" : "%.0f", v);
    return std::string(b);
  };
  struct Row {
    std::string len, align, old_ns, new_ns, speedup;
  };
  std::vector<Row> rows;
  std::size_t w[5] = {3, 13, 3, 3, 7};  // at least the headers' widths
  for (const auto& p : points) {
    char al[32], sp[32];
    if (fill)
      std::snprintf(al, sizeof al, "%u", p.dst_align);
    else
      std::snprintf(al, sizeof al, "%u/%u", p.src_align, p.dst_align);
    snprintf_c(sp, sizeof sp, "%.2fx", p.baseline_ns / p.tuned_ns);
    rows.push_back({p.label.empty() ? size_label(p.size) : p.label, p.label.empty() ? al : "-", ns(p.baseline_ns),
                    ns(p.tuned_ns), sp});
    const Row& r = rows.back();
    w[0] = std::max(w[0], r.len.size());
    w[2] = std::max(w[2], r.old_ns.size());
    w[3] = std::max(w[3], r.new_ns.size());
  }
  w[0] = std::max<std::size_t>(w[0], 6);
  w[2] = std::max<std::size_t>(w[2], 8);
  w[3] = std::max<std::size_t>(w[3], 8);
  const auto line = [&](const Row& r) {
    char b[256];
    std::snprintf(b, sizeof b, "%*s  %*s  %*s  %*s  %*s\n", int(w[0]), r.len.c_str(), int(w[1]), r.align.c_str(),
                  int(w[2]), r.old_ns.c_str(), int(w[3]), r.new_ns.c_str(), int(w[4]), r.speedup.c_str());
    return std::string(b);
  };
  o << line({"Len", fill ? "Dst align" : "Src/Dst align", "old", "new", "speedup"});
  for (const Row& r : rows) o << line(r);
  char b[128];
  snprintf_c(b, sizeof b, "geometric-mean speedup over %zu points: %.2fx\n", points.size(), geomean_speedup(points));
  o << b;
  return o.str();
}

std::vector<MeasuredPoint> measure_table(const Routine& r, const Workload& w, unsigned rounds,
                                         const std::function<void(const std::string&)>& progress) {
  ThreadPin pin;
  TimingOptions t;
  t.rounds = rounds;
  if (w.is_distribution()) {
    // A fresh sequence (another seed than the search's), three passes, medians.
    const auto calls = replay_calls(w, 32768, 0x5EED);  // the search's replay length, another seed
    ReplayBuffers rb(w.distribution->max_size(), w.cold);
    std::vector<double> base_ns, tuned_ns, base_gb, tuned_gb;
    for (int pass = 0; pass < 3; ++pass) {
      const auto m = replay(r.operation(), {system_routine(r.operation()), r.entry()}, calls, rb, t);
      base_ns.push_back(m[0].ns_per_call);
      tuned_ns.push_back(m[1].ns_per_call);
      base_gb.push_back(m[0].gbps);
      tuned_gb.push_back(m[1].gbps);
    }
    if (progress) progress("measured " + w.name + ": 3 passes of " + std::to_string(calls.size()) + " calls");
    MeasuredPoint mp;
    mp.label = w.name;
    mp.size = static_cast<std::uint64_t>(w.distribution->mean_size() + 0.5);
    mp.baseline_gbps = median(base_gb);
    mp.tuned_gbps = median(tuned_gb);
    mp.baseline_ns = median(base_ns);
    mp.tuned_ns = median(tuned_ns);
    return {mp};
  }
  // Three passes over the whole workload, a median per point across passes (measure_passes).
  constexpr unsigned kPasses = 3;
  std::vector<PassCase> cases;
  std::uint64_t max_n = 4096;
  for (const Point& p : w.points) {
    cases.push_back({p.size, p.src_align, p.dst_align, t});
    max_n = std::max(max_n, p.size);
  }
  const auto m = measure_passes(r.operation(), {system_routine(r.operation()), r.entry()}, cases, kPasses,
                                [&](unsigned pass) {
                                  if (progress)
                                    progress("measured pass " + std::to_string(pass) + "/" + std::to_string(kPasses) +
                                             " over " + std::to_string(w.points.size()) + " points");
                                });
  PerfCounters pmu;
  std::unique_ptr<BenchBuffers> bufp;
  if (pmu.available()) bufp = std::make_unique<BenchBuffers>(max_n + 4096);
  std::vector<MeasuredPoint> out;
  for (std::size_t i = 0; i < w.points.size(); ++i) {
    const Point& p = w.points[i];
    MeasuredPoint mp;
    if (pmu.available()) {  // one extra batch of the tuned routine, counted
      const unsigned calls = static_cast<unsigned>(std::clamp(2e5 / (double(p.size) + 64), 1.0, 1e5));
      std::uint8_t* src = bufp->src() + p.src_align;
      std::uint8_t* dst = bufp->dst() + p.dst_align;
      pmu.start();
      for (unsigned c = 0; c < calls; ++c) {
        switch (r.operation()) {
          case Operation::kFill: r.fill_fn()(dst, 0x5A, p.size); break;
          case Operation::kClearPage: r.clear_page_fn()(bufp->dst()); break;
          default: r.fn()(dst, src, p.size); break;
        }
      }
      const CounterValues cv = pmu.stop(calls);
      mp.cycles = cv.cycles;
      mp.instructions = cv.instructions;
      mp.cache_misses = cv.cache_misses;
    }
    mp.size = p.size;
    mp.src_align = p.src_align;
    mp.dst_align = p.dst_align;
    mp.baseline_gbps = m[i][0].gbps;
    mp.tuned_gbps = m[i][1].gbps;
    mp.baseline_ns = m[i][0].ns_per_call;
    mp.tuned_ns = m[i][1].ns_per_call;
    out.push_back(mp);
  }
  return out;
}

ReportSections report_sections(Operation op, const Workload& w) {
  ReportSections s;
  const bool seeds = !w.is_distribution() && w.name == "seeds";
  s.points = !w.is_distribution();
  s.misaligned = seeds && op != Operation::kClearPage;
  s.uses = seeds && op != Operation::kClearPage;
  s.replay = w.is_distribution();
  // Fill too: its search replays the same eight distributions as its production mix (tuner.cpp),
  // and the targets ask memset for the patterns memcpy has.
  if (!s.replay && op != Operation::kClearPage) s.distributions = production_distributions();
  return s;
}

std::string report_svg_path(const std::string& svg_path, Operation op, std::size_t index) {
  if (svg_path.empty() || index == 0) return svg_path;
  const std::string suffix = "-" + std::string(name_of(op));
  const auto dot = svg_path.rfind('.');
  const auto slash = svg_path.rfind('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return svg_path + suffix;
  return svg_path.substr(0, dot) + suffix + svg_path.substr(dot);
}

namespace {

/// "12.0 MiB", "41.7 TiB": a distance in bytes, for the placement line.
std::string distance_label(std::uint64_t d) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(d);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  char buf[32];
  snprintf_c(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

/// One line: how far each timed routine's entry lies from the code that times it (this
/// program's text; `here` is a function of it). The peers built into this program (rep_movsb,
/// the AVX2 loops, DPDK, AOCL-LibMem's static archive) lie beside it; glibc lies in libc.so and
/// the tuned routine in JIT memory, both far, as they are from a program's own code (for
/// clear_page the glibc column is a wrapper in this program that calls memset). On an Intel
/// Xeon (family 6 model 207) the same routine bytes were 0.4-1.2 ns per call slower at 1-256
/// bytes far from the caller than within 64 MiB of it; on AMD family 26 placement changed
/// nothing (docs/performance.md, sixteenth round, and docs/perf/intel-emr/).
std::string placement_line(const std::vector<Peer>& ps, const Routine& tuned, const std::vector<OtherRoutine>& others,
                           const void* here) {
  const auto dist = [&](const void* p) {
    const auto a = reinterpret_cast<std::uintptr_t>(p), b = reinterpret_cast<std::uintptr_t>(here);
    return distance_label(a > b ? a - b : b - a);
  };
  std::string s = "code placement, the entry's distance from the timing code (see docs/performance.md, sixteenth round):";
  for (const Peer& p : ps) s += " " + p.name + " " + dist(p.entry) + ",";
  for (const OtherRoutine& o : others) s += " " + o.name + " " + dist(o.routine->entry()) + ",";
  return s + " tuned " + dist(tuned.entry()) + "\n";
}

}  // namespace

Result<ReportResult> run_report(const Routine& tuned, const Workload& w, const ReportOptions& opt,
                                const std::function<void(const std::string&)>& print) {
  const Operation op = tuned.params().operation;
  const ReportSections sections = report_sections(op, w);
  const auto out = [&](const std::string& text) {
    if (print) print(text);
  };
  ReportResult res;
  {
    // What each column is, so that a report read later says which builds it compared.
    std::string text = "peers (each timed in the same rounds as the tuned routine):\n";
    for (const Peer& p : peers(op)) text += "  " + p.name + ": " + p.description + "\n";
    for (const OtherRoutine& o : opt.others) text += "  " + o.name + ": " + o.routine->name() + "\n";
    text += placement_line(peers(op), tuned, opt.others, reinterpret_cast<const void*>(&distance_label));
    out(text + "\n");
  }
  if (!sections.points && !opt.svg_path.empty() && opt.progress)
    opt.progress("no plot: it draws the point table, which a distribution or profile workload does not have; " +
                 opt.svg_path + " not written");
  if (sections.points) {
    ReportTable& t = res.points.emplace(report_points(tuned, w, opt));
    t.aligned_ratio = w.name == "misaligned";
    out(w.name + " matrix, GB/s (higher is better):\n" + t.format());
    for (const auto& row : t.rows)
      if (row.point.size >= (std::uint64_t{64} << 20) && row.point.src_align == 0 && row.point.dst_align == 0) {
        res.read_gbps = read_bandwidth_gbps();
        char b[160];
        snprintf_c(b, sizeof b, "64 MiB: tuned %.2f GB/s; this machine streams reads at %.2f GB/s (the limit)\n",
                   row.value.back(), res.read_gbps);
        out(b);
      }
    if (!opt.svg_path.empty()) {
      std::string err;
      const std::string title =
          opt.svg_title.empty() ? std::string(name_of(op)) + ": tuned vs glibc" : opt.svg_title;
      if (!write_speedup_svg(t, title, opt.svg_path, &err)) return make_error(ErrorCode::kInvalidArgument, err);
      if (opt.progress) opt.progress("wrote " + opt.svg_path);
    }
  }
  if (sections.misaligned) {
    ReportTable& m = res.misaligned.emplace(report_points(tuned, misaligned_workload(op), opt));
    m.aligned_ratio = true;
    out("\nmisaligned destination, GB/s (vs aligned: tuned / tuned at dst offset 0, same src offset, else 0/0):\n" + m.format());
  }
  if (sections.uses) {
    const ReportTable& u = res.uses.emplace(report_uses(tuned, opt));
    out("\nthe copy being used, 32 KiB-64 MiB, GB/s (higher is better; the use's time included: "
        "copy+read loads every line of dst afterwards, copy+write stores to every line of src; "
        "warm: src just written and dst just read, cold: both flushed before each batch of at least 4 calls "
        "and 200 us, so a copy that fits the caches is cold in a batch's first call only):\n" +
        u.format());
  }
  if (!sections.distributions.empty()) {
    const ReportTable& d =
        res.distributions.emplace(report_distributions(tuned, sections.distributions, opt, /*with_cold=*/true));
    if (d.rows.empty()) {
      // A binary moved out of its tree found none: the section printed its header and no row, and
      // the targets read as if none applied (a hostile-user finding).
      std::string dirs;
      for (const auto& dir : data_dirs()) dirs += (dirs.empty() ? "" : ", ") + dir;
      out("\nproduction size distributions: none of them was found (looked in " + dirs +
          "), so this section and its targets are left out; set COPYSYNTH_DATA_DIR to the size-distributions "
          "folder (data/size-distributions of the source tree)\n");
    } else {
      out("\nproduction size distributions, ns per call (lower is better; cold: each call's lines in none of the "
          "caches, calls spread over 256 MiB):\n" +
          d.format());
    }
  }
  if (sections.replay) {
    ReportTable& d = res.distributions.emplace(report_replays(tuned, {w}, opt));
    d.workload_replay = true;
    out(std::string("\n") +
        (w.recorded.empty() ? "the workload's size distribution, calls drawn from it"
                            : "the workload's recorded calls, replayed window by window in program order") +
        (w.cold ? ", spread over 256 MiB (cold)" : "") + ", ns per call (lower is better):\n" + d.format());
  }
  // The targets of the seeds' matrix need the seeds workload; the misaligned ones take the
  // misaligned matrix, or the point table when the workload was that matrix.
  const ReportTable* seeds = res.points && w.name == "seeds" ? &*res.points : nullptr;
  const ReportTable* misaligned = res.misaligned                            ? &*res.misaligned
                                  : res.points && w.name == "misaligned" ? &*res.points
                                                                         : nullptr;
  std::string targets = format_targets(seeds, misaligned, res.distributions ? &*res.distributions : nullptr,
                                       res.read_gbps, res.uses ? &*res.uses : nullptr);
  if (const std::string c = aocl_peer_caveat(); !c.empty()) targets += "  note: " + c + "\n";
  out("\n" + targets);
  return res;
}

}  // namespace copysynth

