// copysynth — the search's decision core (see decide.hpp).
#include "copysynth/decide.hpp"

#include "copysynth/c_format.hpp"
#include "copysynth/stats.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

namespace copysynth::decide {

double score(const std::vector<double>& cost, const std::vector<double>& ref, const std::vector<double>& weight) {
  double s = 0, wsum = 0;
  for (std::size_t j = 0; j < cost.size() && j < ref.size(); ++j) {
    if (!(cost[j] > 0) || !(ref[j] > 0)) continue;
    const double w = j < weight.size() ? weight[j] : 1.0;
    const double l = std::log(ref[j] / cost[j]);
    s += w * (l + kLossWeight * std::min(l, 0.0));
    wsum += w;
  }
  return wsum > 0 ? std::exp(s / wsum) : 1.0;
}

std::vector<double> best_of(const CostTable& t, const std::vector<std::size_t>& rows) {
  std::vector<double> out(t.cases(), 0.0);
  for (std::size_t j = 0; j < out.size(); ++j)
    for (std::size_t r : rows) {
      const double c = t.cost.at(r).at(j);
      if (c > 0 && (out[j] == 0 || c < out[j])) out[j] = c;
    }
  return out;
}

namespace {

/// pick_pairwise's ratios: score_i / score_0 on weight[i] against ref (1 for the incumbent and
/// for a challenger with no weighted case).
std::vector<double> pairwise_ratios(const std::vector<std::vector<double>>& cost, const std::vector<double>& ref,
                                    const std::vector<std::vector<double>>& weight) {
  std::vector<double> r(cost.size(), 1.0);
  for (std::size_t i = 1; i < cost.size(); ++i) {
    const std::vector<double>& w = i < weight.size() ? weight[i] : std::vector<double>{};
    const bool any = std::any_of(w.begin(), w.end(), [](double x) { return x > 0; });
    if (any) r[i] = score(cost[i], ref, w) / score(cost[0], ref, w);
  }
  return r;
}

}  // namespace

std::size_t pick_pairwise(const std::vector<std::vector<double>>& cost, const std::vector<double>& ref,
                          const std::vector<std::vector<double>>& weight, double margin, std::vector<double>* ratios) {
  const std::vector<double> r = pairwise_ratios(cost, ref, weight);
  if (ratios) *ratios = r;
  return pick(r, margin);
}

std::size_t pick_pairwise(const std::vector<std::vector<double>>& cost, const std::vector<double>& ref,
                          const std::vector<std::vector<double>>& weight, const std::vector<double>& margins,
                          std::vector<double>* ratios) {
  const std::vector<double> r = pairwise_ratios(cost, ref, weight);
  if (ratios) *ratios = r;
  const auto m = [&](std::size_t i) { return i < margins.size() ? margins[i] : 0.01; };
  double top = -1;
  for (std::size_t i = 1; i < r.size(); ++i)
    if (r[i] >= 1 + m(i)) top = std::max(top, r[i]);
  if (top < 0) return 0;
  for (std::size_t i = 1; i < r.size(); ++i)
    if (r[i] >= 1 + m(i) && r[i] * 1.01 >= top) return i;
  return 0;
}

double pairwise_margin(const CostTable& t, std::size_t a, std::size_t b, const std::vector<double>& weight,
                       double min_noise, double min_margin) {
  std::vector<double> noise;
  for (std::size_t j = 0; j < weight.size() && j < t.cases(); ++j)
    if (weight[j] > 0) noise.push_back(case_noise(t, a, b, j, min_noise));
  if (noise.empty()) return min_margin;
  std::nth_element(noise.begin(), noise.begin() + noise.size() / 2, noise.end());
  return std::max(min_margin, noise[noise.size() / 2] / std::sqrt(double(noise.size())));
}

std::size_t settle_pairwise(const CostTable& t, std::size_t kept, const std::vector<std::size_t>& qualified,
                            const std::function<std::vector<double>(std::size_t, std::size_t)>& differ,
                            std::vector<std::pair<std::size_t, double>>* steps) {
  std::vector<std::size_t> was{kept};
  for (std::size_t round = 0; round <= qualified.size(); ++round) {
    std::vector<std::size_t> rows{kept};
    for (std::size_t i : qualified)
      if (i < t.rows() && std::find(was.begin(), was.end(), i) == was.end()) rows.push_back(i);
    if (rows.size() < 2) break;
    std::vector<std::vector<double>> cost{t.cost[kept]}, weight{{}};
    std::vector<double> margin{0};
    for (std::size_t k = 1; k < rows.size(); ++k) {
      cost.push_back(t.cost[rows[k]]);
      weight.push_back(differ(kept, rows[k]));
      margin.push_back(pairwise_margin(t, kept, rows[k], weight.back()));
    }
    std::vector<double> r;
    const std::size_t k = pick_pairwise(cost, t.cost[kept], weight, margin, &r);
    if (k == 0) break;
    if (steps) steps->emplace_back(rows[k], r[k]);
    kept = rows[k];
    was.push_back(kept);
  }
  return kept;
}

std::size_t pick(const std::vector<double>& scores, double margin) {
  if (scores.empty()) return 0;
  double top = -1;
  for (std::size_t i = 1; i < scores.size(); ++i)
    if (scores[i] >= scores[0] * (1 + margin)) top = std::max(top, scores[i]);
  if (top < 0) return 0;
  for (std::size_t i = 1; i < scores.size(); ++i)
    if (scores[i] >= scores[0] * (1 + margin) && scores[i] * (1 + margin) >= top) return i;
  return 0;
}

std::vector<std::size_t> halving_keep(const std::vector<double>& scores, std::size_t keep,
                                      const std::vector<unsigned>& group) {
  std::vector<std::size_t> out;
  if (scores.empty()) return out;
  std::vector<std::size_t> idx;  // the challengers, best first
  for (std::size_t i = 1; i < scores.size(); ++i) idx.push_back(i);
  std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return scores[a] > scores[b]; });
  out.push_back(0);
  for (std::size_t i = 0; i < idx.size() && out.size() < keep; ++i) out.push_back(idx[i]);
  std::vector<unsigned> have;  // the groups kept so far
  for (std::size_t k : out)
    if (k < group.size()) have.push_back(group[k]);
  for (std::size_t j : idx)  // best first: the first of a group not yet kept is its best
    if (j < group.size() && std::find(have.begin(), have.end(), group[j]) == have.end()) {
      out.push_back(j);
      have.push_back(group[j]);
    }
  return out;
}

std::size_t pick_tiebreak(const std::vector<double>& scores, const std::vector<double>& tiebreak, double margin,
                          double tie, double tiebreak_margin) {
  const std::size_t top = pick(scores, margin);
  if (top == 0) return 0;
  const auto tb = [&](std::size_t i) { return i < tiebreak.size() ? tiebreak[i] : 0.0; };
  const auto wins = [&](std::size_t i) { return scores[i] >= scores[0] * (1 + margin); };
  double best = 0;
  for (std::size_t i = 1; i < scores.size(); ++i)
    if (wins(i)) best = std::max(best, scores[i]);
  std::size_t out = top;
  for (std::size_t i = 0; i < scores.size(); ++i)
    if ((i == 0 || wins(i)) && scores[i] * (1 + tie) >= best && tb(i) > tb(out)) out = i;
  return tb(out) > tb(top) * (1 + tiebreak_margin) ? out : top;
}

namespace {

/// choose_threshold's admissibility rule for the lengths [t, e) of every row: no size loses more
/// than `tolerance`, no objective row loses in total (a tie does not veto). Returns false when
/// vetoed; otherwise *total is the mean over the objective rows of their summed gain.
bool admissible(const std::vector<std::vector<double>>& gain, const std::vector<std::vector<double>>& check,
                std::size_t t, std::size_t e, double tolerance, double* total) {
  bool ok = true;
  *total = 0;
  for (const auto& row : gain) {
    double sum = 0;
    for (std::size_t s = t; s < e && s < row.size(); ++s) {
      sum += row[s];
      if (row[s] < -tolerance) ok = false;
    }
    // A row the variant ties (gain 0 after the noise shrink: e.g. a dst offset that a rep
    // class taken only for aligned dst hands back to the same loop) does not veto it; a row
    // it loses in total does.
    if (sum < 0) ok = false;
    *total += sum / double(gain.size());
  }
  for (const auto& row : check)
    for (std::size_t s = t; s < e && s < row.size(); ++s)
      if (row[s] < -tolerance) ok = false;
  return ok;
}

/// The best range among `ranges` ((start, end) pairs of ladder indices, in order of preference:
/// of equal gains the first wins): admissible, and gaining more than min_gain (or exactly
/// min_gain, for the first such range). out.index is kNoThreshold when none qualifies; *vetoed
/// counts the ranges admissible() refused. choose_threshold and choose_stop differ only in
/// the ranges they offer and the order.
ThresholdChoice best_range(const std::vector<std::vector<double>>& gain, const std::vector<std::vector<double>>& check,
                           const std::vector<std::pair<std::size_t, std::size_t>>& ranges, double tolerance,
                           double min_gain, std::size_t* vetoed) {
  ThresholdChoice out;
  double best = min_gain;
  *vetoed = 0;
  for (const auto& [t, e] : ranges) {
    double total = 0;
    if (!admissible(gain, check, t, e, tolerance, &total)) {
      ++*vetoed;
      continue;
    }
    if (total > best || (total == best && out.index == kNoThreshold)) {
      best = total;
      out.index = t;
      out.end = e;
      out.gain = total;
    }
  }
  return out;
}

}  // namespace

ThresholdChoice choose_threshold(const std::vector<std::vector<double>>& gain,
                                 const std::vector<std::vector<double>>& check, double tolerance,
                                 double min_gain, bool band, const std::vector<bool>& start_ok) {
  const std::size_t n = gain.empty() ? 0 : gain.front().size();
  char b[256];
  if (n == 0) {
    ThresholdChoice out;
    out.why = "no sizes measured";
    return out;
  }
  // Larger starts first and, per start, the open end first: among equal gains the smaller
  // range of lengths (fewer lengths on the variant) and a plain threshold win.
  std::vector<std::pair<std::size_t, std::size_t>> ranges;
  for (std::size_t t = n; t-- > 0;) {
    if (!start_ok.empty() && (t >= start_ok.size() || !start_ok[t])) continue;
    for (std::size_t e = n; e > t; --e) {
      if (!band && e != n) break;
      ranges.emplace_back(t, e);
    }
  }
  std::size_t vetoed = 0;
  const std::size_t tried = ranges.size();
  ThresholdChoice out = best_range(gain, check, ranges, tolerance, min_gain, &vetoed);
  const bool all_starts = start_ok.empty() || std::count(start_ok.begin(), start_ok.end(), true) >= std::ptrdiff_t(n);
  if (out.index == kNoThreshold)
    snprintf_c(b, sizeof b,
                  "never: no %s the variant wins every use pattern without losing more than %.1f%% "
                  "at any size (%zu of %zu vetoed%s) and gains %.1f%% in total",
                  band ? "range of sizes where" : "size from which", 100 * (std::exp(tolerance) - 1), vetoed, tried,
                  all_starts ? "" : "; it starts only where it gains read back", 100 * (std::exp(min_gain) - 1));
  else
    snprintf_c(b, sizeof b, "ladder sizes %zu..%zu of %zu: %.1f%% summed gain, mean over the use patterns",
                  out.index + 1, out.end, n, 100 * (std::exp(out.gain) - 1));
  out.why = b;
  return out;
}

bool nt_start_gains(const CostTable& t, std::size_t nt, const std::vector<std::size_t>& others,
                    const std::vector<std::size_t>& cases, double min_gain) {
  if (cases.empty() || nt >= t.rows()) return false;
  for (const std::size_t j : cases) {
    if (j >= t.cases() || !(t.cost[nt][j] > 0)) return false;
    for (const std::size_t o : others) {
      if (o >= t.rows() || !(t.cost[o][j] > 0)) return false;
      if (!(std::log(t.cost[o][j] / t.cost[nt][j]) > min_gain)) return false;
    }
  }
  return true;
}

std::vector<bool> nt_starts_where_read_gains(const std::vector<std::vector<double>>& gain, std::size_t read,
                                             double min_read_gain) {
  if (read >= gain.size()) return {};
  std::vector<bool> ok(gain[read].size());
  for (std::size_t s = 0; s < ok.size(); ++s) ok[s] = gain[read][s] > min_read_gain;
  return ok;
}

ThresholdChoice choose_gap(const std::vector<std::vector<double>>& gain, const std::vector<std::vector<double>>& check,
                           double tolerance, double min_gain) {
  // The same rule with the roles swapped: the loop is the variant, rep the base.
  return choose_threshold(gain, check, tolerance, min_gain, true);
}

BandsChoice choose_bands(const std::vector<std::vector<double>>& gain, const std::vector<std::vector<double>>& check,
                         double tolerance, double min_gain) {
  BandsChoice out;
  out.band = choose_threshold(gain, check, tolerance, min_gain, true);
  const std::size_t n = gain.empty() ? 0 : gain.front().size();
  double best = out.band.index == kNoThreshold ? min_gain : out.band.gain;
  std::size_t t1 = kNoThreshold, e1 = 0, r1 = kNoThreshold;
  double g1_best = 0, g2_best = 0;
  // The second band first (a suffix), then every first band ending at least one size before it.
  for (std::size_t r = n; r-- > 2;) {
    double g2 = 0;
    if (!admissible(gain, check, r, n, tolerance, &g2) || g2 < min_gain) continue;
    for (std::size_t t = 0; t + 1 < r; ++t)
      for (std::size_t e = t + 1; e < r; ++e) {
        double g1 = 0;
        if (!admissible(gain, check, t, e, tolerance, &g1) || g1 < min_gain) continue;
        if (g1 + g2 > best) {
          best = g1 + g2;
          t1 = t;
          e1 = e;
          r1 = r;
          g1_best = g1;
          g2_best = g2;
        }
      }
  }
  if (r1 == kNoThreshold) return out;
  out.band.index = t1;
  out.band.end = e1;
  out.band.gain = best;
  out.resume = r1;
  char b[256];
  snprintf_c(b, sizeof b,
             "ladder sizes %zu..%zu and %zu..%zu of %zu: %.1f%% and %.1f%% summed gain, mean over the use patterns",
             t1 + 1, e1, r1 + 1, n, n, 100 * (std::exp(g1_best) - 1), 100 * (std::exp(g2_best) - 1));
  out.band.why = b;
  return out;
}

ThresholdChoice choose_stop(const std::vector<std::vector<double>>& gain,
                            const std::vector<std::vector<double>>& check, double tolerance, double min_gain) {
  const std::size_t n = gain.empty() ? 0 : gain.front().size();
  char b[256];
  if (n == 0) {
    ThresholdChoice out;
    out.why = "no sizes measured";
    return out;
  }
  std::vector<std::pair<std::size_t, std::size_t>> ranges;  // from the first size; shorter
  for (std::size_t e = 1; e <= n; ++e) ranges.emplace_back(0, e);  // ranges first: they keep equal gains
  std::size_t vetoed = 0;
  ThresholdChoice out = best_range(gain, check, ranges, tolerance, min_gain, &vetoed);
  if (out.index == kNoThreshold)
    snprintf_c(b, sizeof b,
               "never: no stop below which the variant wins every row without losing more than %.1f%% at any "
               "size (%zu of %zu vetoed) and gains %.1f%% in total",
               100 * (std::exp(tolerance) - 1), vetoed, n, 100 * (std::exp(min_gain) - 1));
  else
    snprintf_c(b, sizeof b, "ladder sizes 1..%zu of %zu: %.1f%% summed gain, mean over the rows", out.end, n,
               100 * (std::exp(out.gain) - 1));
  out.why = b;
  return out;
}

SplitChoice choose_split(const std::vector<std::vector<double>>& a_gain, const std::vector<std::vector<double>>& a_check,
                         const std::vector<std::vector<double>>& b_gain, const std::vector<std::vector<double>>& b_check,
                         double tolerance, double min_gain, const std::vector<bool>& b_rows,
                         const std::vector<bool>& b_check_rows) {
  SplitChoice out;
  const std::size_t n = a_gain.empty() || a_gain.front().empty() ? 0 : a_gain.front().size();
  if (n < 3 || b_gain.size() != a_gain.size() || b_check.size() != a_check.size()) return out;
  // Sizes 0..n-2 only: a band found there ends at n - 1 at the latest, inside the ladder.
  const std::size_t m = n - 1;
  for (std::size_t x = 1; x < m; ++x) {
    auto splice = [x, m](std::vector<std::vector<double>> rows, const std::vector<std::vector<double>>& from,
                         const std::vector<bool>& mask) {
      for (std::size_t r = 0; r < rows.size(); ++r) {
        if (mask.empty() || (r < mask.size() && mask[r]))
          std::copy(from[r].begin() + static_cast<std::ptrdiff_t>(x), from[r].begin() + static_cast<std::ptrdiff_t>(m),
                    rows[r].begin() + static_cast<std::ptrdiff_t>(x));
        rows[r].resize(m);
      }
      return rows;
    };
    const ThresholdChoice c = choose_threshold(splice(a_gain, b_gain, b_rows), splice(a_check, b_check, b_check_rows),
                                               tolerance, min_gain, true);
    if (c.index == kNoThreshold || c.index >= x || c.end <= x) continue;
    if (out.split == kNoThreshold || c.gain > out.band.gain) {
      out.split = x;
      out.band = c;
    }
  }
  return out;
}

TwoThresholds choose_two_thresholds(const std::vector<std::vector<double>>& a_gain,
                                    const std::vector<std::vector<double>>& a_check,
                                    const std::vector<std::vector<double>>& b_gain,
                                    const std::vector<std::vector<double>>& b_check, double tolerance,
                                    double min_gain, const std::vector<bool>& b_start_ok) {
  TwoThresholds out;
  const auto b_may_start = [&](std::size_t tb) {
    return b_start_ok.empty() || (tb < b_start_ok.size() && b_start_ok[tb]);
  };
  const std::size_t na = a_gain.empty() ? 0 : a_gain.front().size();
  const std::size_t nb = b_gain.empty() ? 0 : b_gain.front().size();
  const std::size_t n = std::max(na, nb);
  if (n == 0) {
    out.why = "no sizes measured";
    return out;
  }
  if (na && nb && (na != nb || a_gain.size() != b_gain.size() || a_check.size() != b_check.size())) {
    out.why = "never: the two variants' tables differ in shape";
    return out;
  }
  // The composite's rows against the base: 0 below ta, a's from ta, b's from tb (tb takes over).
  const auto rows_of = [&](const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b,
                           std::size_t ta, std::size_t tb) {
    std::vector<std::vector<double>> c(std::max(a.size(), b.size()), std::vector<double>(n, 0.0));
    for (std::size_t p = 0; p < c.size(); ++p)
      for (std::size_t s = 0; s < n; ++s)
        c[p][s] = s >= tb ? b[p][s] : s >= ta ? a[p][s] : 0.0;
    return c;
  };
  // Where b, taking the sizes from `from` on, loses a row to a by more than the tolerance
  // (b's rows minus a's: b against a, timed in the same rounds; check rows too).
  const auto loses_to_a = [&](std::size_t from) {
    for (const auto* rows : {&a_gain, &a_check})
      for (std::size_t p = 0; p < rows->size(); ++p) {
        const auto& bp = rows == &a_gain ? b_gain[p] : b_check[p];
        for (std::size_t s = from; s < n; ++s)
          if (bp[s] - (*rows)[p][s] < -tolerance) return true;
      }
    return false;
  };
  // Singles first: a by choose_threshold's rule; b by the same rule, and, where a alone is
  // admissible, only from a size where it loses to a nowhere a would run.
  double best_single = -1;
  std::size_t vetoed = 0, tried = 0;
  const ThresholdChoice ca = na ? choose_threshold(a_gain, a_check, tolerance, min_gain) : ThresholdChoice{};
  if (ca.index != kNoThreshold) {
    out.a = ca.index;
    out.gain = best_single = ca.gain;
  }
  if (nb) {
    double best_b = std::max(best_single, min_gain);
    std::size_t tb_best = kNoThreshold;
    for (std::size_t tb = n; tb-- > 0;) {  // larger thresholds first: ties keep the shorter range
      double total = 0;
      if (!b_may_start(tb) || !admissible(b_gain, b_check, tb, n, tolerance, &total)) continue;
      if (ca.index != kNoThreshold && loses_to_a(std::max(tb, ca.index))) continue;
      if (total > best_b || (total == best_b && tb_best == kNoThreshold && best_single < 0)) {
        best_b = total;
        tb_best = tb;
      }
    }
    if (tb_best != kNoThreshold) {
      out.a = kNoThreshold;
      out.b = tb_best;
      out.gain = best_single = best_b;
    }
  }
  // Then both: a from ta, b from tb > ta, b losing to a in no row from tb on; it must add
  // min_gain to the best single one.
  if (na && nb) {
    double best = best_single < 0 ? min_gain : best_single + min_gain;
    bool found = false;
    for (std::size_t ta = n; ta-- > 0;)
      for (std::size_t tb = n; tb > ta + 1;) {
        --tb;
        if (!b_may_start(tb)) continue;
        ++tried;
        double total = 0;
        if (!admissible(rows_of(a_gain, b_gain, ta, tb), rows_of(a_check, b_check, ta, tb), ta, n, tolerance,
                        &total) ||
            loses_to_a(tb)) {
          ++vetoed;
          continue;
        }
        if (total > best || (total == best && !found)) {
          best = total;
          found = true;
          out.a = ta;
          out.b = tb;
          out.gain = total;
        }
      }
  }
  char b[256];
  const bool all_b_starts = b_start_ok.empty() || std::count(b_start_ok.begin(), b_start_ok.end(), true) >= std::ptrdiff_t(n);
  if (out.a == kNoThreshold && out.b == kNoThreshold)
    snprintf_c(b, sizeof b,
               "never: neither variant, nor both, wins every use pattern from some size on without losing more "
               "than %.1f%% at any size and gains %.1f%% in total%s",
               100 * (std::exp(tolerance) - 1), 100 * (std::exp(min_gain) - 1),
               all_b_starts ? "" : " (the second starts only at sizes allowed: where it gains read back)");
  else if (out.b == kNoThreshold)
    snprintf_c(b, sizeof b, "the first variant from ladder size %zu of %zu: %.1f%% summed gain, mean over the use patterns",
               out.a + 1, n, 100 * (std::exp(out.gain) - 1));
  else if (out.a == kNoThreshold)
    snprintf_c(b, sizeof b, "the second variant from ladder size %zu of %zu: %.1f%% summed gain, mean over the use patterns",
               out.b + 1, n, 100 * (std::exp(out.gain) - 1));
  else
    snprintf_c(b, sizeof b,
               "the first variant from ladder size %zu, the second from %zu of %zu: %.1f%% summed gain, mean over "
               "the use patterns (%zu of %zu pairs vetoed; both must add %.1f%% to the better one alone)",
               out.a + 1, out.b + 1, n, 100 * (std::exp(out.gain) - 1), vetoed, tried, 100 * (std::exp(min_gain) - 1));
  out.why = b;
  return out;
}

double case_noise(const CostTable& t, std::size_t a, std::size_t b, std::size_t j, double min_noise) {
  double n = min_noise;
  for (std::size_t r : {a, b})
    if (r < t.spread.size() && j < t.spread[r].size() && t.cost[r][j] > 0)
      n = std::max(n, t.spread[r][j] / t.cost[r][j]);
  return n;
}

std::vector<Loss> losses_to_peers(const CostTable& t, std::size_t routine, const std::vector<std::size_t>& peers,
                                  const std::vector<std::size_t>& group, std::size_t groups, double min_noise) {
  std::vector<Loss> out;
  for (std::size_t g = 0; g < groups; ++g) {
    Loss worst;
    worst.group = g;
    bool any = false;
    for (std::size_t p : peers) {
      double l = 0;
      std::vector<double> noise;
      for (std::size_t j = 0; j < t.cases() && j < group.size(); ++j) {
        if (group[j] != g || !(t.cost[p][j] > 0) || !(t.cost[routine][j] > 0)) continue;
        l += std::log(t.cost[p][j] / t.cost[routine][j]);
        noise.push_back(case_noise(t, p, routine, j, min_noise));
      }
      if (noise.empty()) continue;
      std::nth_element(noise.begin(), noise.begin() + noise.size() / 2, noise.end());
      const double nz = noise[noise.size() / 2];
      const double r = std::exp(l / double(noise.size()));
      if (r < 1 - nz && (!any || r < worst.ratio)) {
        worst.peer = p;
        worst.ratio = r;
        worst.noise = nz;
        any = true;
      }
    }
    if (any) out.push_back(worst);
  }
  return out;
}

std::vector<std::size_t> per_group_pick(const CostTable& t, const std::vector<std::size_t>& rows,
                                        const std::vector<std::size_t>& reference,
                                        const std::vector<std::size_t>& group, std::size_t groups,
                                        double margin) {
  const std::vector<double> ref = best_of(t, reference);
  std::vector<std::size_t> out(groups, rows.empty() ? 0 : rows.front());
  for (std::size_t g = 0; g < groups; ++g) {
    std::vector<double> w(t.cases(), 0.0);
    bool any = false;
    for (std::size_t j = 0; j < t.cases() && j < group.size(); ++j)
      if (group[j] == g) {
        w[j] = t.weight.empty() ? 1.0 : t.weight[j];
        any = true;
      }
    if (!any || rows.empty()) continue;
    std::vector<double> s;
    for (std::size_t r : rows) s.push_back(score(t.cost[r], ref, w));
    out[g] = rows[pick(s, margin)];
  }
  return out;
}

Confirmation confirm(const std::vector<std::vector<double>>& runs, double min_gain, double max_loss) {
  Confirmation c;
  std::vector<double> ratios;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (runs[i].empty()) continue;
    const double r = median(runs[i]);
    ratios.push_back(r);
    if (r < c.worst_ratio) {
      c.worst_ratio = r;
      c.worst = i;
    }
  }
  c.gain = ratios.empty() ? 1.0 : geomean(ratios);
  c.ok = !ratios.empty() && c.gain >= min_gain && c.worst_ratio >= 1.0 / max_loss;
  return c;
}

}  // namespace copysynth::decide
