// copysynth — performance report (see report.hpp).
#include "copysynth/report.hpp"

#include <immintrin.h>
#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "copysynth/peers.hpp"
#include "copysynth/timing.hpp"
#include "copysynth/tuner.hpp"

namespace copysynth {
namespace {

std::vector<const void*> entries_of(const std::vector<Peer>& ps, const Routine& tuned) {
  std::vector<const void*> e;
  for (const auto& p : ps) e.push_back(p.entry);
  e.push_back(tuned.entry());
  return e;
}

std::vector<std::string> columns_of(const std::vector<Peer>& ps) {
  std::vector<std::string> c;
  for (const auto& p : ps) c.push_back(p.name);
  c.push_back("tuned");
  return c;
}

}  // namespace

double ReportTable::vs_best(const ReportRow& r) const {
  const double tuned = r.value.back();
  double best = per_call ? 1e300 : 0;
  for (std::size_t i = 0; i + 1 < r.value.size(); ++i)
    best = per_call ? std::min(best, r.value[i]) : std::max(best, r.value[i]);
  return per_call ? best / tuned : tuned / best;
}

double ReportTable::vs_glibc(const ReportRow& r) const {
  return per_call ? r.value.front() / r.value.back() : r.value.back() / r.value.front();
}

std::string ReportTable::format() const {
  std::ostringstream o;
  char b[64];
  o << (per_call ? "Workload (ns/call)        " : "       Len  Src/Dst ");
  for (const auto& c : columns) {
    std::snprintf(b, sizeof b, "%13s", c.c_str());
    o << b;
  }
  o << "  vs best peer  vs glibc\n";
  double lb = 0, lg = 0;
  for (const auto& r : rows) {
    if (per_call) {
      std::snprintf(b, sizeof b, "%-26s", r.label.c_str());
      o << b;
    } else {
      std::snprintf(b, sizeof b, "%10s  %7s ", size_label(r.point.size).c_str(),
                    (std::to_string(r.point.src_align) + "/" + std::to_string(r.point.dst_align)).c_str());
      o << b;
    }
    for (double v : r.value) {
      std::snprintf(b, sizeof b, "%13.2f", v);
      o << b;
    }
    std::snprintf(b, sizeof b, "  %11.2fx  %7.2fx\n", vs_best(r), vs_glibc(r));
    o << b;
    lb += std::log(vs_best(r));
    lg += std::log(vs_glibc(r));
  }
  if (!rows.empty()) {
    std::snprintf(b, sizeof b, "%.3fx", std::exp(lb / double(rows.size())));
    o << "geometric mean over " << rows.size() << (per_call ? " workloads" : " points") << ": tuned vs best peer "
      << b;
    std::snprintf(b, sizeof b, "%.3fx", std::exp(lg / double(rows.size())));
    o << ", tuned vs glibc " << b;
    // Ratios to each peer, for the summary lines of docs/performance.md.
    for (std::size_t c = 1; c + 1 < columns.size(); ++c) {
      double l = 0;
      for (const auto& r : rows) l += std::log(per_call ? r.value[c] / r.value.back() : r.value.back() / r.value[c]);
      std::snprintf(b, sizeof b, "%.3fx", std::exp(l / double(rows.size())));
      o << ", vs " << columns[c] << " " << b;
    }
    o << "\n";
  }
  return o.str();
}

ReportTable report_points(const Routine& tuned, const Workload& w, const ReportOptions& opt) {
  const auto ps = peers(tuned.operation());
  ReportTable t;
  t.columns = columns_of(ps);
  const auto entries = entries_of(ps, tuned);
  std::uint64_t max_n = 4096;
  for (const auto& p : w.points) max_n = std::max(max_n, p.size);
  BenchBuffers buf(max_n + 4096);
  ThreadPin pin;
  TimingOptions topt;
  topt.rounds = opt.rounds;
  std::vector<std::vector<std::vector<double>>> samples(w.points.size(), std::vector<std::vector<double>>(entries.size()));
  for (unsigned pass = 0; pass < opt.passes; ++pass) {
    for (std::size_t i = 0; i < w.points.size(); ++i) {
      const Point& p = w.points[i];
      const auto m = compare(tuned.operation(), entries, buf, p.size, p.src_align, p.dst_align, topt);
      for (std::size_t k = 0; k < entries.size(); ++k) samples[i][k].push_back(m[k].gbps);
    }
    if (opt.progress)
      opt.progress("report: pass " + std::to_string(pass + 1) + "/" + std::to_string(opt.passes) + " over " +
                   std::to_string(w.points.size()) + " points x " + std::to_string(entries.size()) + " routines");
  }
  for (std::size_t i = 0; i < w.points.size(); ++i) {
    ReportRow r;
    r.point = w.points[i];
    r.label = size_label(r.point.size) + " " + std::to_string(r.point.src_align) + "/" + std::to_string(r.point.dst_align);
    for (auto& s : samples[i]) r.value.push_back(median(s));
    t.rows.push_back(r);
  }
  return t;
}

ReportTable report_distributions(const Routine& tuned, const std::vector<std::string>& names,
                                 const ReportOptions& opt) {
  const auto ps = peers(tuned.operation());
  ReportTable t;
  t.per_call = true;
  t.columns = columns_of(ps);
  const auto entries = entries_of(ps, tuned);
  ThreadPin pin;
  TimingOptions topt;
  topt.rounds = opt.rounds;
  for (const auto& name : names) {
    auto d = load_distribution(name);
    if (!d) {
      if (opt.progress) opt.progress("report: skipping " + name + ": " + d.error().message);
      continue;
    }
    const auto calls = make_calls(*d, 32768, 0x5EED);
    ReplayBuffers rb(d->max_size(), false);
    std::vector<std::vector<double>> s(entries.size());
    for (unsigned pass = 0; pass < opt.passes; ++pass) {
      const auto m = replay(tuned.operation(), entries, calls, rb, topt);
      for (std::size_t k = 0; k < entries.size(); ++k) s[k].push_back(m[k].ns_per_call);
    }
    ReportRow r;
    r.label = d->name;
    for (auto& v : s) r.value.push_back(median(v));
    t.rows.push_back(r);
    if (opt.progress) opt.progress("report: " + d->name + " done");
  }
  return t;
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

bool write_speedup_svg(const ReportTable& t, const std::string& title, const std::string& path, std::string* error) {
  // One series per alignment pair, points sorted by length.
  std::map<std::string, std::vector<std::pair<double, double>>> series;
  double ymax = 1.0, ymin = 1.0, xmin = 1e300, xmax = 0;
  for (const auto& r : t.rows) {
    if (r.point.size == 0) continue;
    const std::string key = std::to_string(r.point.src_align) + "/" + std::to_string(r.point.dst_align);
    const double x = std::log2(double(r.point.size)), y = t.vs_glibc(r);
    series[key].push_back({x, y});
    ymax = std::max(ymax, y);
    ymin = std::min(ymin, y);
    xmin = std::min(xmin, x);
    xmax = std::max(xmax, x);
  }
  if (series.empty()) {
    if (error) *error = "no points to plot";
    return false;
  }
  if (xmax <= xmin) xmax = xmin + 1;
  ymax = std::ceil(ymax * 4) / 4;
  ymin = std::floor(std::min(ymin, 0.75) * 4) / 4;
  const double W = 900, H = 520, L = 70, R = 170, T = 50, B = 60;
  auto X = [&](double x) { return L + (x - xmin) / (xmax - xmin) * (W - L - R); };
  auto Y = [&](double y) { return T + (ymax - y) / (ymax - ymin) * (H - T - B); };
  static const char* colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b",
                                 "#e377c2", "#17becf", "#7f7f7f", "#bcbd22", "#393b79", "#637939"};
  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
    << "\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s << "<text x=\"" << W / 2 << "\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">" << title << "</text>\n";
  for (double y = ymin; y <= ymax + 1e-9; y += 0.25) {
    s << "<line x1=\"" << L << "\" x2=\"" << W - R << "\" y1=\"" << Y(y) << "\" y2=\"" << Y(y) << "\" stroke=\""
      << (std::fabs(y - 1) < 1e-9 ? "#000" : "#ddd") << "\"/>\n";
    s << "<text x=\"" << L - 8 << "\" y=\"" << Y(y) + 4 << "\" text-anchor=\"end\">" << y << "x</text>\n";
  }
  for (int e = static_cast<int>(std::ceil(xmin)); e <= static_cast<int>(std::floor(xmax)); e += 2) {
    const std::uint64_t v = std::uint64_t{1} << e;
    const std::string label = v >= (1u << 20) ? std::to_string(v >> 20) + "M" : v >= 1024 ? std::to_string(v >> 10) + "K" : std::to_string(v);
    s << "<line x1=\"" << X(e) << "\" x2=\"" << X(e) << "\" y1=\"" << T << "\" y2=\"" << H - B << "\" stroke=\"#eee\"/>\n";
    s << "<text x=\"" << X(e) << "\" y=\"" << H - B + 18 << "\" text-anchor=\"middle\">" << label << "</text>\n";
  }
  s << "<text x=\"" << (L + W - R) / 2 << "\" y=\"" << H - 18 << "\" text-anchor=\"middle\">length (bytes, log scale)</text>\n";
  s << "<text x=\"18\" y=\"" << (T + H - B) / 2 << "\" transform=\"rotate(-90 18 " << (T + H - B) / 2
    << ")\" text-anchor=\"middle\">speedup over glibc (tuned / glibc)</text>\n";
  int k = 0;
  for (auto& [key, pts] : series) {
    std::sort(pts.begin(), pts.end());
    const char* col = colors[k % 12];
    s << "<polyline fill=\"none\" stroke-width=\"2\" stroke=\"" << col << "\" points=\"";
    for (auto& [x, y] : pts) s << X(x) << "," << Y(y) << " ";
    s << "\"/>\n";
    for (auto& [x, y] : pts) s << "<circle cx=\"" << X(x) << "\" cy=\"" << Y(y) << "\" r=\"3\" fill=\"" << col << "\"/>\n";
    s << "<text x=\"" << W - R + 14 << "\" y=\"" << T + 16 * k + 10 << "\" fill=\"" << col << "\">src/dst " << key
      << "</text>\n";
    ++k;
  }
  s << "</svg>\n";
  std::ofstream out(path);
  if (!out || !(out << s.str())) {
    if (error) *error = "cannot write " + path;
    return false;
  }
  return true;
}

}  // namespace copysynth
