// copysynth — the report's speedup plot (see plot.hpp and report.hpp, write_speedup_svg).
#include "copysynth/plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <map>

#include "copysynth/c_format.hpp"
#include "copysynth/report.hpp"

namespace copysynth {
namespace {

/// m * 10^k, computed so that e.g. 3 * 10^-1 is the double nearest 0.3 (a division by an exact
/// power of ten), which keeps the labels short.
double scaled(double m, int k) {
  double p = 1;
  for (int i = 0; i < std::abs(k); ++i) p *= 10;
  return k >= 0 ? m * p : m / p;
}

/// Ticks of mantissas `ms` in every `step`-th decade (decades k with k % step == 0) in [lo, hi].
std::vector<LogTick> ticks_of(const std::vector<double>& ms, int step, double lo, double hi, double length) {
  std::vector<LogTick> out;
  const double span = std::log(hi) - std::log(lo);
  const int k0 = static_cast<int>(std::floor(std::log10(lo))) - 1;
  const int k1 = static_cast<int>(std::ceil(std::log10(hi))) + 1;
  for (int k = k0; k <= k1; ++k) {
    if (((k % step) + step) % step != 0) continue;
    for (double m : ms) {
      const double v = scaled(m, k);
      if (v < lo * (1 - 1e-12) || v > hi * (1 + 1e-12)) continue;
      out.push_back({v, (std::log(v) - std::log(lo)) / span * length, tick_label(v)});
    }
  }
  std::sort(out.begin(), out.end(), [](const LogTick& a, const LogTick& b) { return a.value < b.value; });
  return out;
}

bool spaced(const std::vector<LogTick>& t, double min_gap) {
  for (std::size_t i = 1; i < t.size(); ++i)
    if (t[i].offset - t[i - 1].offset < min_gap) return false;
  return true;
}

std::string num(double v) { return format_c("%.1f", v); }

/// Text for SVG: the five characters XML gives a meaning escaped.
std::string xml_escape(const std::string& s) {
  std::string o;
  for (char c : s) switch (c) {
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '&': o += "&amp;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&apos;"; break;
      default: o += c;
    }
  return o;
}

}  // namespace

std::string tick_label(double v) { return format_c("%.6g", v); }

std::pair<double, double> speedup_axis_range(double lo, double hi) {
  lo = std::min(lo, 1.0) / 1.1;
  hi = std::max(hi, 1.0) * 1.1;
  if (hi / lo < 1.6) {  // widen around the geometric centre
    const double c = std::sqrt(lo * hi), f = std::sqrt(1.6);
    lo = c / f;
    hi = c * f;
  }
  return {lo, hi};
}

std::vector<LogTick> log_ticks(double lo, double hi, double length, double min_gap) {
  if (!(lo > 0) || !(hi > lo) || !(length > 0) || !std::isfinite(hi)) return {};
  static const std::vector<std::vector<double>> sets = {
      {1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8}, {1, 1.5, 2, 3, 5, 7}, {1, 2, 5}, {1, 3}, {1}};
  for (const auto& ms : sets) {
    auto t = ticks_of(ms, 1, lo, hi, length);
    if (spaced(t, min_gap)) return t;
  }
  for (int step = 2;; ++step) {  // ends: one decade step wider than the range leaves one tick at most
    auto t = ticks_of({1}, step, lo, hi, length);
    if (spaced(t, min_gap)) return t;
  }
}

bool write_speedup_svg(const ReportTable& t, const std::string& title, const std::string& path, std::string* error) {
  // One series per alignment pair (in numeric order: 0/1, 0/4, 0/33), points sorted by length;
  // x = log2 length, y = tuned / glibc.
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::vector<std::pair<double, double>>> series;
  double ymax = 1.0, ymin = 1.0, xmin = 1e300, xmax = 0;
  for (const auto& r : t.rows) {
    if (r.point.size == 0) continue;
    const double y = t.vs_glibc(r);
    if (!(y > 0) || !std::isfinite(y)) continue;  // no figure: nothing to place on a log axis
    const std::pair<std::uint32_t, std::uint32_t> key{r.point.src_align, r.point.dst_align};
    const double x = std::log2(double(r.point.size));
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
  const auto [lo, hi] = speedup_axis_range(ymin, ymax);
  const double W = 900, H = 520, L = 70, R = 170, T = 50, B = 60, plot_h = H - T - B;
  // 12 px labels 40 px apart: about 2 ticks per factor of 10 per 100 px, 1-2-5 on this plot.
  const std::vector<LogTick> yticks = log_ticks(lo, hi, plot_h, 40);
  auto X = [&](double x) { return L + (x - xmin) / (xmax - xmin) * (W - L - R); };
  auto Y = [&](double y) { return T + (std::log(hi) - std::log(y)) / (std::log(hi) - std::log(lo)) * plot_h; };
  static const char* colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b",
                                 "#e377c2", "#17becf", "#7f7f7f", "#bcbd22", "#393b79", "#637939"};
  std::string s;
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(W) + "\" height=\"" + num(H) +
       "\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s += "<text x=\"" + num(W / 2) + "\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">" + xml_escape(title) + "</text>\n";
  for (const LogTick& k : yticks) {
    const double y = Y(k.value);
    const bool one = std::fabs(k.value - 1) < 1e-9;
    s += "<line x1=\"" + num(L) + "\" x2=\"" + num(W - R) + "\" y1=\"" + num(y) + "\" y2=\"" + num(y) + "\" stroke=\"" +
         (one ? "#000" : "#ddd") + "\"/>\n";
    s += "<text x=\"" + num(L - 8) + "\" y=\"" + num(y + 4) + "\" text-anchor=\"end\">" + k.label + "x</text>\n";
  }
  for (int e = static_cast<int>(std::ceil(xmin)); e <= static_cast<int>(std::floor(xmax)); e += 2) {
    const std::uint64_t v = std::uint64_t{1} << e;
    const std::string label = v >= (1u << 20) ? std::to_string(v >> 20) + "M" : v >= 1024 ? std::to_string(v >> 10) + "K" : std::to_string(v);
    s += "<line x1=\"" + num(X(e)) + "\" x2=\"" + num(X(e)) + "\" y1=\"" + num(T) + "\" y2=\"" + num(H - B) +
         "\" stroke=\"#eee\"/>\n";
    s += "<text x=\"" + num(X(e)) + "\" y=\"" + num(H - B + 18) + "\" text-anchor=\"middle\">" + label + "</text>\n";
  }
  s += "<text x=\"" + num((L + W - R) / 2) + "\" y=\"" + num(H - 18) +
       "\" text-anchor=\"middle\">length (bytes, log scale)</text>\n";
  s += "<text x=\"18\" y=\"" + num((T + H - B) / 2) + "\" transform=\"rotate(-90 18 " + num((T + H - B) / 2) +
       ")\" text-anchor=\"middle\">speedup over glibc (tuned / glibc, log scale)</text>\n";
  int k = 0;
  for (auto& [key, pts] : series) {
    std::sort(pts.begin(), pts.end());
    const std::string col = colors[k % 12];
    s += "<polyline fill=\"none\" stroke-width=\"2\" stroke=\"" + col + "\" points=\"";
    for (auto& [x, y] : pts) s += num(X(x)) + "," + num(Y(y)) + " ";
    s += "\"/>\n";
    for (auto& [x, y] : pts)
      s += "<circle cx=\"" + num(X(x)) + "\" cy=\"" + num(Y(y)) + "\" r=\"3\" fill=\"" + col + "\"/>\n";
    s += "<text x=\"" + num(W - R + 14) + "\" y=\"" + num(T + 16 * k + 10) + "\" fill=\"" + col + "\">src/dst " + std::to_string(key.first) +
         "/" + std::to_string(key.second) + "</text>\n";
    ++k;
  }
  s += "</svg>\n";
  std::ofstream out(path);
  if (!out || !(out << s)) {
    if (error) *error = "cannot write " + path;
    return false;
  }
  return true;
}

}  // namespace copysynth
