// Tests of the search's decision core (decide.hpp) on synthetic cost tables: no clock, no code,
// every rule deterministic.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "copysynth/decide.hpp"
#include "copysynth/stats.hpp"

using namespace copysynth::decide;

namespace {
/// gain row: log(base/variant) from a list of speed ratios base_time / variant_time.
std::vector<double> gains(std::initializer_list<double> ratios) {
  std::vector<double> g;
  for (double r : ratios) g.push_back(std::log(r));
  return g;
}
}  // namespace

TEST_CASE("score: geometric mean of reference/cost, losses counted four times") {
  // Twice as fast at one case, the same at the other: sqrt(2).
  CHECK(score({1, 2}, {2, 2}) == doctest::Approx(std::sqrt(2.0)));
  // 2x faster at one case and 2x slower at another does not average out to 1: the loss weighs 4.
  const double s = score({1, 4}, {2, 2});
  CHECK(s == doctest::Approx(std::exp((std::log(2.0) + 4 * std::log(0.5)) / 2)));
  CHECK(s < 1.0);
  // Weights: a zero-weight case does not count.
  CHECK(score({1, 4}, {2, 2}, {1, 0}) == doctest::Approx(2.0));
  // Cases that could not be timed (cost 0) are skipped; no cases at all scores 1.
  CHECK(score({0, 1}, {2, 2}) == doctest::Approx(2.0));
  CHECK(score({}, {}) == 1.0);
}

TEST_CASE("pick: the incumbent stays unless beaten by the margin; ties go to the simpler") {
  CHECK(pick({1.00, 1.005, 0.9}) == 0);           // within 1%: keep the incumbent
  CHECK(pick({1.00, 1.02, 1.05}) == 2);           // the clear winner
  CHECK(pick({1.00, 1.05, 1.055}) == 1);          // two winners within 1% of each other: the first listed
  CHECK(pick({1.00, 0.5, 0.99}) == 0);
  CHECK(pick({}) == 0);
  CHECK(pick({1.0, 1.04}, 0.05) == 0);            // a larger margin
}

TEST_CASE("pick_tiebreak: near ties among winners go to the better tiebreak, the incumbent rule stays") {
  // The tuner's arguments: margin 1 %, tie 5 %, tiebreak margin 2 % (tuner.cpp, kMixTie).
  const auto tb = [](std::vector<double> s, std::vector<double> t) { return pick_tiebreak(s, t, 0.01, 0.05, 0.02); };
  // mask_max 64 and 128 as a small stage saw them: 1.45 and 1.40 in the blend (3.6 % apart), the
  // mix 1.60 and 1.75: a tie, so the mix decides.
  CHECK(tb({1.0, 1.45, 1.40}, {0, 1.60, 1.75}) == 2);
  CHECK(pick({1.0, 1.45, 1.40}) == 1);                              // what pick() alone keeps
  CHECK(tb({1.0, 1.45, 1.37}, {0, 1.60, 1.75}) == 1);               // 5.8 % apart: not a tie
  CHECK(pick_tiebreak({1.0, 1.45, 1.37}, {0, 1.60, 1.75}, 0.01, 0.08, 0.02) == 2);  // a wider band
  CHECK(pick_tiebreak({1.0, 1.45, 1.40}, {0, 1.60, 1.75}) == 2);    // the defaults are the tuner's
  // A challenger must still beat the incumbent by the margin, however good its tiebreak: the
  // incumbent keeps its place when nothing beats it by 1 %.
  CHECK(tb({1.0, 1.005, 1.004}, {1, 3, 4}) == 0);
  CHECK(tb({1.0, 1.02, 1.005}, {0, 1, 9}) == 1);
  // The incumbent is tied too when within the band of the best winner: a better tiebreak keeps it.
  CHECK(tb({1.0, 1.04}, {2, 1}) == 0);
  CHECK(tb({1.0, 1.06}, {2, 1}) == 1);                              // 6 % ahead: not a tie
  CHECK(tb({1.0, 1.02, 1.025}, {1.5, 1, 2}) == 2);
  // Equal, missing or short tiebreaks: pick()'s choice unless a tied one is clearly better.
  CHECK(tb({1.0, 1.20, 1.19}, {}) == pick({1.0, 1.20, 1.19}));
  CHECK(tb({1.0, 1.19, 1.20, 1.18}, {0, 2, 2, 2}) == pick({1.0, 1.19, 1.20, 1.18}));
  CHECK(tb({1.0, 1.19, 1.20, 1.18}, {0, 2, 2, 3}) == 3);
  CHECK(tb({1.0, 1.19, 1.20, 1.18}, {0, 2, 2}) == pick({1.0, 1.19, 1.20, 1.18}));  // 3's counts as 0
  CHECK(tb({1.0, 1.19, 1.20, 1.18}, {0, 1, 3}) == 2);
  CHECK(tb({}, {}) == 0);
  // A tiebreak difference inside its margin decides nothing.
  CHECK(tb({1.0, 1.20, 1.19}, {0, 1.00, 1.01}) == 1);
  CHECK(pick_tiebreak({1.0, 1.20, 1.19}, {0, 1.00, 1.01}, 0.01, 0.05, 0.005) == 2);
  CHECK(tb({1.0, 1.01}, {1.01, 1.0}) == 1);
}

TEST_CASE("halving_keep: the incumbent and the best by score, and with groups the best of each group") {
  using V = std::vector<std::size_t>;
  // Scores: the incumbent 1.0; challengers 1.50, 1.40, 1.45, 1.20, 1.30, 0.9.
  const std::vector<double> s{1.0, 1.50, 1.40, 1.45, 1.20, 1.30, 0.9};
  CHECK(halving_keep(s, 3) == V{0, 1, 3});
  CHECK(halving_keep(s, 1) == V{0});
  CHECK(halving_keep(s, 99) == V{0, 1, 3, 2, 5, 4, 6});  // all, best first
  // Groups (the small stage's masked classes): 64 for 1-3, 128 for 4-5, 0 for the incumbent and 6.
  // The best third is all 64s; 128's best (5: 1.30 beats 4: 1.20) joins; 0's is the incumbent.
  const std::vector<unsigned> g{0, 64, 64, 64, 128, 128, 0};
  CHECK(halving_keep(s, 3, g) == V{0, 1, 3, 5});
  // A group already kept by score adds nothing; each missing group adds its best, best first.
  CHECK(halving_keep(s, 4, g) == V{0, 1, 3, 2, 5});
  const std::vector<unsigned> g3{0, 64, 64, 64, 128, 16, 32};
  CHECK(halving_keep(s, 3, g3) == V{0, 1, 3, 5, 4, 6});
  // A group shorter than the scores: the rest are in no group (kept by score only).
  CHECK(halving_keep(s, 3, {0, 64, 64, 64, 128}) == V{0, 1, 3, 4});
  CHECK(halving_keep({}, 3, g).empty());
}

TEST_CASE("pick_pairwise: each challenger is judged against the incumbent where the two differ") {
  // Cases: 1, 64 and 4096 bytes (the same code in every row), 32 KiB, 16 MiB.
  const std::vector<double> ref{10, 10, 10, 10, 10};
  const std::vector<std::vector<double>> cost{
      {10.0, 10.0, 10.0, 20.0, 10.0},  // the incumbent: no rep band at 32 KiB
      {10.5, 10.5, 10.5, 20.0, 9.6},   // no non-temporal stores at 16 MiB: 1.04x there; noisy small cases
      {10.0, 10.0, 10.0, 30.0, 10.0},  // another rep form: loses at 32 KiB
      {9.0, 9.0, 9.0, 20.0, 10.0},     // faster where it runs the incumbent's code: noise
  };
  const std::vector<std::vector<double>> weight{
      {}, {0, 0, 0, 0, 1}, {0, 0, 0, 1, 1}, {0, 0, 0, 0, 0}};
  std::vector<double> r;
  CHECK(pick_pairwise(cost, ref, weight, 0.01, &r) == 1);
  REQUIRE(r.size() == 4);
  CHECK(r[0] == 1.0);
  CHECK(r[1] == doctest::Approx(10.0 / 9.6));  // judged at 16 MiB only: the small cases' 5% do not count
  CHECK(r[2] < 1.0);
  CHECK(r[3] == 1.0);  // differs nowhere: never picked, whatever its noise
  // Judged on every case instead, the noise of the cases it shares with the incumbent (5% slower,
  // counted four times) sinks the 16 MiB gain.
  CHECK(pick({score(cost[0], ref), score(cost[1], ref)}) == 0);
  // A loss where the challenger differs keeps the incumbent.
  CHECK(pick_pairwise({cost[0], cost[2]}, ref, {{}, weight[2]}) == 0);
  CHECK(pick_pairwise({cost[0]}, ref, {}) == 0);
}

TEST_CASE("pairwise_margin: a difference judged on few cases must clear their noise") {
  CostTable t;
  // Rows: the incumbent, a challenger; cases 0-3. Spreads: 8% at case 0, 4% elsewhere.
  t.cost = {{100, 100, 100, 100}, {90, 90, 90, 90}};
  t.spread = {{8, 4, 4, 4}, {1, 1, 1, 1}};
  CHECK(pairwise_margin(t, 0, 1, {1, 0, 0, 0}) == doctest::Approx(0.08));  // one case: its noise
  CHECK(pairwise_margin(t, 0, 1, {0, 1, 1, 1, 1}) == doctest::Approx(0.04 / std::sqrt(3.0)));
  CHECK(pairwise_margin(t, 0, 1, {1, 1, 1, 1}) == doctest::Approx(0.02));  // median 4%, over 2
  CHECK(pairwise_margin(t, 0, 1, {}) == 0.01);                              // no case: the minimum
  CHECK(pairwise_margin(t, 0, 1, {1, 1, 0, 0}) == doctest::Approx(0.08 / std::sqrt(2.0)));  // upper median
  // Quiet cases: the noise floor (2%) over the root of their number, and at least 1%.
  t.spread = {{0, 0, 0, 0}, {0, 0, 0, 0}};
  CHECK(pairwise_margin(t, 0, 1, {1, 0, 0, 0}) == doctest::Approx(0.02));
  CHECK(pairwise_margin(t, 0, 1, {1, 1, 1, 1}) == doctest::Approx(0.01));
}

TEST_CASE("pick_pairwise with a margin per challenger") {
  const std::vector<double> ref{10, 10, 10, 10};
  const std::vector<std::vector<double>> cost{
      {10.0, 10.0, 10.0, 10.0},  // the incumbent
      {10.0, 10.0, 10.0, 9.5},   // 1.053x at its one differing case
      {9.7, 9.7, 9.7, 9.7},      // 1.031x at four
  };
  const std::vector<std::vector<double>> weight{{}, {0, 0, 0, 1}, {1, 1, 1, 1}};
  std::vector<double> r;
  // Each clears its margin: the higher ratio wins.
  CHECK(pick_pairwise(cost, ref, weight, std::vector<double>{0, 0.02, 0.01}, &r) == 1);
  CHECK(r[1] == doctest::Approx(10.0 / 9.5));
  CHECK(r[2] == doctest::Approx(10.0 / 9.7));
  // The one-case challenger's noise is 8%: it does not qualify, the other does.
  CHECK(pick_pairwise(cost, ref, weight, std::vector<double>{0, 0.08, 0.01}) == 2);
  // Neither clears its margin: the incumbent stays.
  CHECK(pick_pairwise(cost, ref, weight, std::vector<double>{0, 0.08, 0.05}) == 0);
  // The higher ratio wins even when listed second (1.031 is not within 1 % of 1.053) ...
  const std::vector<std::vector<double>> swapped{cost[0], cost[2], cost[1]}, swapped_w{{}, weight[2], weight[1]};
  CHECK(pick_pairwise(swapped, ref, swapped_w, std::vector<double>{0, 0.01, 0.02}) == 2);
  // ... and a challenger within 1 % of the top, listed first, wins (the simpler one).
  const std::vector<double> close{10.0, 10.0, 10.0, 9.55};  // 1.047x
  CHECK(pick_pairwise({cost[0], close, cost[1]}, ref, {{}, weight[1], weight[1]}, std::vector<double>{0, 0.02, 0.02}) ==
        1);
  // The top does not clear its own margin: the next one that does wins.
  CHECK(pick_pairwise(swapped, ref, swapped_w, std::vector<double>{0, 0.01, 0.06}) == 1);
  // A scalar margin: pick() over the same ratios (its margin for every challenger).
  CHECK(pick_pairwise(cost, ref, weight, 0.04) == 1);
  CHECK(pick_pairwise(cost, ref, weight, 0.06) == 0);
}

TEST_CASE("settle_pairwise: challengers that each beat the incumbent are judged against each other where they differ") {
  // Six cases. Row 1 (a composite) gains 2x at cases 0-1 and runs the incumbent's code at 2-5;
  // row 2 is row 1 plus rep for 4K-aliasing copies at 2-5 (1.11x there); row 3 the same with a
  // change that loses at 2-5; row 4 gains 1.005x at 2-5 only, inside the margin.
  CostTable t;
  t.cost = {{10, 10, 10, 10, 10, 10},
            {5, 5, 10, 10, 10, 10},
            {5, 5, 9, 9, 9, 9},
            {5, 5, 11, 11, 11, 11},
            {5, 5, 9.95, 9.95, 9.95, 9.95}};
  t.spread.assign(t.cost.size(), std::vector<double>(6, 0.0));
  const std::vector<std::vector<int>> code{{0, 0, 0, 0, 0, 0},
                                           {1, 1, 0, 0, 0, 0},
                                           {1, 1, 2, 2, 2, 2},
                                           {1, 1, 3, 3, 3, 3},
                                           {1, 1, 4, 4, 4, 4}};
  const auto differ = [&](std::size_t a, std::size_t b) {
    std::vector<double> w(6);
    for (std::size_t j = 0; j < 6; ++j) w[j] = code[a][j] != code[b][j];
    return w;
  };
  // pick_pairwise over the incumbent alone ranks row 1 first (2x on its 2 cases against row 2's
  // about 1.35x over 6): the ratios are over different cases.
  {
    std::vector<double> r;
    const std::size_t k = pick_pairwise({t.cost[0], t.cost[1], t.cost[2]}, t.cost[0], {{}, differ(0, 1), differ(0, 2)},
                                        std::vector<double>{0, 0.01, 0.01}, &r);
    CHECK(k == 1);
    CHECK(r[1] > r[2]);
  }
  std::vector<std::pair<std::size_t, double>> steps;
  CHECK(settle_pairwise(t, 1, {1, 2}, differ, &steps) == 2);
  REQUIRE(steps.size() == 1);
  CHECK(steps[0].first == 2);
  CHECK(steps[0].second == doctest::Approx(10.0 / 9.0));
  // One that loses where it differs from the kept row is not taken; nor one inside the margin
  // (0.02 noise over the square root of 4 cases: 1 %).
  CHECK(settle_pairwise(t, 1, {1, 3}, differ) == 1);
  CHECK(settle_pairwise(t, 1, {1, 4}, differ) == 1);
  // Among several, the best against the kept row; none qualified, or rows out of range: kept.
  CHECK(settle_pairwise(t, 1, {1, 3, 4, 2}, differ) == 2);
  CHECK(settle_pairwise(t, 1, {}, differ) == 1);
  CHECK(settle_pairwise(t, 1, {7, 9}, differ) == 1);
  // Started from a better row, a worse one never replaces it.
  steps.clear();
  CHECK(settle_pairwise(t, 2, {1, 2, 3}, differ, &steps) == 2);
  CHECK(steps.empty());
}

TEST_CASE("settle_pairwise: a second round when the first pick's ratio hid a better row") {
  // Two cases. Row 1 gains 1.25x at case 0 and runs row 0's code at case 1; row 2 is row 1 plus
  // 1.053x at case 1. Against row 0, row 1 (1.25x on one case) outranks row 2 (about 1.147x
  // over two), so round one keeps row 1; round two judges row 2 against row 1 at case 1 alone.
  CostTable t;
  t.cost = {{10, 10}, {8, 10}, {8, 9.5}};
  t.spread.assign(3, std::vector<double>(2, 0.0));
  const std::vector<std::vector<int>> code{{0, 0}, {1, 0}, {1, 2}};
  const auto differ = [&](std::size_t a, std::size_t b) {
    return std::vector<double>{double(code[a][0] != code[b][0]), double(code[a][1] != code[b][1])};
  };
  std::vector<std::pair<std::size_t, double>> steps;
  CHECK(settle_pairwise(t, 0, {1, 2}, differ, &steps) == 2);
  REQUIRE(steps.size() == 2);
  CHECK(steps[0].first == 1);
  CHECK(steps[0].second == doctest::Approx(1.25));
  CHECK(steps[1].first == 2);
  CHECK(steps[1].second == doctest::Approx(10.0 / 9.5));
  // A row kept once is not judged again: with row 0 listed as qualified too, the result is the
  // same and row 0 never comes back.
  steps.clear();
  CHECK(settle_pairwise(t, 0, {0, 1, 2}, differ, &steps) == 2);
  CHECK(steps.size() == 2);
}

TEST_CASE("best_of: per case, the lowest cost over the chosen rows") {
  CostTable t;
  t.cost = {{3, 1, 5}, {2, 4, 0}, {9, 9, 4}};
  const auto b = best_of(t, {0, 1});
  CHECK(b == std::vector<double>{2, 1, 5});
  CHECK(best_of(t, {0, 1, 2}) == std::vector<double>{2, 1, 4});
}

TEST_CASE("choose_threshold: a variant that wins the copy alone but loses once the copy is read is never chosen") {
  // Ladder 256K, 512K, 1M, ... 64M. Non-temporal stores: faster for the copy alone from 256K,
  // but 2-3x slower when the destination is read afterwards below 8M (the 0.2.0 mistake).
  const auto copy = gains({1.4, 1.3, 1.2, 1.2, 1.3, 1.4, 1.5, 1.6, 1.6});
  const auto read = gains({0.4, 0.45, 0.5, 0.6, 0.8, 1.05, 1.1, 1.1, 1.1});
  const auto write = gains({0.9, 0.95, 1.0, 1.0, 1.02, 1.05, 1.1, 1.1, 1.1});
  const double tol = std::log(1.03), min_gain = std::log(1.03);
  const auto only_copy = choose_threshold({copy}, {}, tol, min_gain);
  CHECK(only_copy.index == 0);  // the copy alone says "from 256K", as 0.2.0 did
  const auto used = choose_threshold({copy, read, write}, {}, tol, min_gain);
  CHECK(used.index == 5);       // with the data used: from the size where every pattern wins
  // A cold-cache check that vetoes 8M too moves the threshold up.
  const auto cold = gains({1, 1, 1, 1, 1, 0.9, 1.02, 1.05, 1.1});
  const auto checked = choose_threshold({copy, read, write}, {cold}, tol, min_gain);
  CHECK(checked.index == 6);
  CHECK(!checked.why.empty());
}

TEST_CASE("choose_threshold: never when the total gain is below the minimum or every start loses somewhere") {
  const double tol = std::log(1.03);
  const auto flat = gains({1.0, 1.01, 1.005, 1.01});
  const auto r = choose_threshold({flat}, {}, tol, std::log(1.03));
  CHECK(r.index == kNoThreshold);
  CHECK(r.why.find("never") != std::string::npos);
  // Wins big at small sizes but loses 10% at the largest: no suffix is loss-free.
  const auto tail_loss = gains({1.5, 1.5, 1.5, 0.9});
  CHECK(choose_threshold({tail_loss}, {}, tol, std::log(1.03)).index == kNoThreshold);
  // A loss within the tolerance is allowed when the suffix still gains.
  const auto small_loss = gains({1.2, 0.99, 1.2, 1.2});
  CHECK(choose_threshold({small_loss}, {}, tol, std::log(1.03)).index == 0);
  CHECK(choose_threshold({}, {}, tol, 0).index == kNoThreshold);
}

TEST_CASE("losses_to_peers: a class where a peer wins by more than the noise, and only those") {
  // Row 0 the routine, rows 1-2 peers; cases 0-1 class 0, cases 2-3 class 1, case 4 class 2.
  CostTable t;
  t.cost = {{10, 10, 10, 10, 10}, {9, 9, 10.1, 10.1, 9.9}, {11, 11, 7, 7, 10}};
  const std::vector<std::size_t> group{0, 0, 1, 1, 2};
  auto l = losses_to_peers(t, 0, {1, 2}, group, 3, 0.02);
  REQUIRE(l.size() == 2);
  CHECK(l[0].group == 0);
  CHECK(l[0].peer == 1);
  CHECK(l[0].ratio == doctest::Approx(0.9));
  CHECK(l[1].group == 1);
  CHECK(l[1].peer == 2);  // class 2: peer 1 is 1% faster, inside the 2% noise floor
  // Measured spread widens the noise: with a 15% MAD on the routine, class 0's 10% is noise.
  t.spread = {{1.5, 1.5, 0, 0, 0}, {0, 0, 0, 0, 0}, {0, 0, 0, 0, 0}};
  l = losses_to_peers(t, 0, {1, 2}, group, 3, 0.02);
  REQUIRE(l.size() == 1);
  CHECK(l[0].group == 1);
}

TEST_CASE("per_group_pick: each size class gets the configuration that wins its cases") {
  // Rows: 0 incumbent, 1 a wide loop (wins large), 2 rep (wins mid); row 3 is the peer reference.
  CostTable t;
  t.cost = {{10, 10, 10, 10}, {10, 10.02, 12, 7}, {12, 8, 10, 10}, {10, 10, 10, 10}};
  const std::vector<std::size_t> group{0, 1, 2, 2};
  const auto p = per_group_pick(t, {0, 1, 2}, {3}, group, 3);
  CHECK(p[0] == 0);  // nothing beats the incumbent at class 0
  CHECK(p[1] == 2);
  CHECK(p[2] == 0);  // row 1 wins one case of class 2 by 1.43x and loses the other by 1.2x: the loss weighs more
}

TEST_CASE("choose_threshold with bands: rep wins a middle range only, the loop above it") {
  // Ladder 16K, 32K, ... 4M: rep wins 128K..512K in every pattern, loses 10-20% from 1M on.
  const auto copy = gains({0.9, 0.95, 1.0, 1.1, 1.15, 1.1, 0.85, 0.8, 0.85});
  const auto read = gains({0.95, 0.97, 1.0, 1.15, 1.2, 1.4, 0.9, 0.9, 0.95});
  const double tol = std::log(1.03), min_gain = std::log(1.03);
  CHECK(choose_threshold({copy, read}, {}, tol, min_gain).index == kNoThreshold);  // no suffix is loss-free
  const auto b = choose_threshold({copy, read}, {}, tol, min_gain, true);
  CHECK(b.index == 3);  // 64K is even (1.0): an equal gain keeps the shorter band
  CHECK(b.end == 6);    // 1M and up go back to the loop
  // An open-ended win is still reported with end == the ladder's length.
  const auto tail = gains({0.8, 1.1, 1.2});
  const auto t = choose_threshold({tail}, {}, tol, min_gain, true);
  CHECK(t.index == 1);
  CHECK(t.end == 3);
}

TEST_CASE("choose_bands: one size lost read back splits the rep band in two instead of dropping the sizes below it") {
  // Rows adapted from docs/perf/debian12/tune.log at commit 3e43156 (Zen 5 memcpy; the copy row is
  // that log's rep "only when dst is 64-aligned, 2M pieces", the others its shape): ladder 16K, 32K, 64K,
  // 128K, 256K, 512K, 1M, 2M, 4M, 8M; rep loses 16K everywhere, the copy read back 4 % at 32K and 5 % at
  // 256K, and wins every pattern elsewhere.
  const auto copy = gains({0.61, 1.60, 1.34, 1.34, 1.30, 1.60, 1.18, 1.10, 1.23, 1.27});
  const auto read = gains({0.67, 0.96, 1.17, 1.18, 0.95, 1.00, 1.12, 1.00, 1.01, 1.29});
  const auto write = gains({0.83, 1.20, 1.19, 1.20, 1.00, 1.32, 1.09, 1.03, 1.02, 1.14});
  const double tol = std::log(1.03), min_gain = std::log(1.03);
  // One band: only from 512K (the 256K loss vetoes every band that holds it).
  const auto one = choose_threshold({copy, read, write}, {}, tol, min_gain, true);
  CHECK(one.index == 5);
  CHECK(one.end == 10);
  // Two: 64K..128K, the loop at 256K, rep again from 512K; their sum beats the single band.
  const auto two = choose_bands({copy, read, write}, {}, tol, min_gain);
  CHECK(two.band.index == 2);
  CHECK(two.band.end == 4);
  CHECK(two.resume == 5);
  CHECK(two.band.gain > one.gain);
  CHECK(two.band.why.find("and") != std::string::npos);
  // A cold check that loses 10 % at 128K moves the first band's end down to 128K (64K alone).
  const auto cold = gains({0.6, 1.6, 1.3, 0.9, 1.1, 1.2, 1.1, 1.1, 1.1, 1.1});
  const auto checked = choose_bands({copy, read, write}, {cold}, tol, min_gain);
  CHECK(checked.band.index == 2);
  CHECK(checked.band.end == 3);
  CHECK(checked.resume == 5);
  // Without a loss in the middle the single band stands (a second band needs a size between).
  const auto flat = gains({0.6, 1.2, 1.2, 1.2, 1.2});
  const auto single = choose_bands({flat}, {}, tol, min_gain);
  CHECK(single.resume == kNoThreshold);
  CHECK(single.band.index == 1);
  CHECK(single.band.end == 5);
  // A first band below the minimum gain on its own is not taken: the single band stands.
  const auto tiny = gains({1.02, 0.9, 1.3, 1.3});
  const auto t = choose_bands({tiny}, {}, tol, min_gain);
  CHECK(t.resume == kNoThreshold);
  CHECK(t.band.index == 2);
  // Nothing admissible: never.
  CHECK(choose_bands({gains({0.9, 0.9, 0.9})}, {}, tol, min_gain).band.index == kNoThreshold);
  CHECK(choose_bands({}, {}, tol, min_gain).band.index == kNoThreshold);
}

TEST_CASE("choose_threshold: rows the variant ties do not veto it; a row it loses does") {
  // rep only for a 64-aligned dst: the misaligned-dst rows run the loop's own code (gain exactly
  // 0 after the noise shrink); the aligned rows win 1.3x from 64K (ladder 16K, 32K, ... 1M).
  const double tol = std::log(1.03), min_gain = std::log(1.03);
  const auto aligned = gains({0.6, 0.9, 1.3, 1.3, 1.25, 1.2, 1.2});
  const auto read = gains({0.6, 0.92, 1.15, 1.2, 1.1, 1.15, 1.1});
  const auto tie = gains({1, 1, 1, 1, 1, 1, 1});
  const auto r = choose_threshold({aligned, tie, tie, read}, {}, tol, min_gain, true);
  CHECK(r.index == 2);
  CHECK(r.end == 7);
  // A misaligned row that loses 2% everywhere (inside the per-size tolerance) loses in total:
  // vetoed, whatever the aligned rows gain.
  const auto small_loss = gains({0.98, 0.98, 0.98, 0.98, 0.98, 0.98, 0.98});
  CHECK(choose_threshold({aligned, small_loss, read}, {}, tol, min_gain, true).index == kNoThreshold);
  // Ties alone are no win.
  CHECK(choose_threshold({tie, tie}, {}, tol, min_gain, true).index == kNoThreshold);
}

TEST_CASE("choose_gap: between two rep bands the loop must earn the gap by the threshold rule") {
  // Rows: loop time over rep time inverted, i.e. cost_rep / cost_loop (> 1: the loop faster).
  const double tol = std::log(1.03), min_gain = std::log(1.03);
  // One ladder size (a Zen 5 memcpy at 256 KiB): the loop loses the copy alone by 5-21 % and
  // cold by 16 %, wins the copy read back by 5 %: no size range it wins without a loss, so the
  // gap closes (rep throughout).
  const auto copy0 = gains({1 / 1.05}), copy4 = gains({1 / 1.21}), read = gains({1.05}), write = gains({1.0});
  const auto cold = gains({1 / 1.16});
  CHECK(choose_gap({copy0, copy4, read, write}, {cold}, tol, min_gain).index == kNoThreshold);
  // Without the copy rows' losses it would still not be a 3 % win in total over the patterns.
  CHECK(choose_gap({read, write, write}, {}, tol, min_gain).index == kNoThreshold);
  // The loop wins every pattern by 4-8 %: it keeps the gap whole.
  const auto win = choose_gap({gains({1.06, 1.08}), gains({1.04, 1.05})}, {gains({1.0, 1.02})}, tol, min_gain);
  CHECK(win.index == 0);
  CHECK(win.end == 2);
  // 2 MiB, 4 MiB, 8 MiB: the loop loses 2 MiB and 8 MiB, wins 4 MiB: it keeps 4 MiB only, so
  // rep_stop moves up to 4 MiB and rep_resume down to 8 MiB.
  const auto mid = choose_gap({gains({0.9, 1.1, 0.92}), gains({0.95, 1.08, 0.9})}, {}, tol, min_gain);
  CHECK(mid.index == 1);
  CHECK(mid.end == 2);
  // A cold check the loop loses by more than the tolerance vetoes it even where it wins warm.
  CHECK(choose_gap({gains({1.1}), gains({1.1})}, {gains({0.9})}, tol, min_gain).index == kNoThreshold);
}

TEST_CASE("choose_stop: the alias loop keeps the ladder's first sizes up to a stop, judged with the copy used") {
  // Rows: cost_rep / cost_loop at 32, 64, 128, 256 KiB (> 1: the 32-byte loop faster).
  const double tol = std::log(1.03), min_gain = std::log(1.02);
  // The report's matrix (copy alone, 32 KiB aliasing rows: the loop 1.09-1.12x rep, level from
  // 64 KiB, 14 % behind at 256 KiB): alone, a stop at 64 KiB.
  const auto copy1 = gains({1.12, 1.0, 1.0, 0.86}), copy15 = gains({1.09, 1.0, 1.0, 0.87});
  const auto alone = choose_stop({copy1, copy15}, {}, tol, min_gain);
  CHECK(alone.index == 0);
  CHECK(alone.end == 1);
  // With the copy used, as compare() measured it on one buffer pair (used.txt: the loop 0.96-1.01x
  // rep read back, 0.97-1.00x with the source overwritten): read back loses 4 % at 32 KiB, more
  // than the tolerance, so no stop is taken.
  const auto read = gains({0.96, 1.0, 1.0, 0.9}), write = gains({0.99, 1.0, 1.0, 0.9});
  const auto used = choose_stop({copy1, copy15, read, write}, {}, tol, min_gain);
  CHECK(used.index == kNoThreshold);
  CHECK(used.why.find("never") == 0);
  // Every row wins 3-6 % up to 128 KiB and loses from 256 KiB: the stop is after 128 KiB (end 3).
  const auto mid = choose_stop({gains({1.06, 1.05, 1.03, 0.9}), gains({1.04, 1.03, 1.03, 0.95})}, {}, tol, min_gain);
  CHECK(mid.index == 0);
  CHECK(mid.end == 3);
  // Ties beyond a win keep the shorter range; a gain under the minimum is never taken.
  CHECK(choose_stop({gains({1.05, 1.0, 1.0})}, {}, tol, min_gain).end == 1);
  CHECK(choose_stop({gains({1.01, 1.0})}, {}, tol, min_gain).index == kNoThreshold);
  // A wide win later does not buy back a loss at the first size: the start is fixed.
  CHECK(choose_stop({gains({0.95, 1.2, 1.2})}, {}, tol, min_gain).index == kNoThreshold);
  // A cold check that loses more than the tolerance vetoes the sizes it covers.
  CHECK(choose_stop({gains({1.1, 1.1})}, {gains({1.0, 0.9})}, tol, min_gain).end == 1);
  CHECK(choose_stop({}, {}, tol, min_gain).index == kNoThreshold);
}

TEST_CASE("choose_split: rep with dst aligned first up to a length, rep for an aligned dst only from there") {
  // Ladder 16K, 32K, ... 4M (the eighth round's Zen 5 shape): rep with dst aligned first (a)
  // wins 64K-512K for every dst and loses 5 % from 1M on with dst misaligned; rep only for an
  // aligned dst (b) gains nothing on a misaligned dst (the loop's own code) and the same on an
  // aligned one. a alone stops before 1M; b alone gives up 64K-512K misaligned; the split at 1M
  // (index 6) keeps both, up to the ladder's last size: the split covers the first rep band
  // only, so the composite's band ends inside the ladder (the loop, or the stage beyond the
  // caches, from 4M on).
  const double tol = std::log(1.03), min_gain = std::log(1.03);
  const auto aligned = gains({0.6, 0.9, 1.3, 1.3, 1.3, 1.4, 1.2, 1.2, 1.1});
  const auto a_mis = gains({0.5, 0.8, 1.04, 1.04, 1.08, 1.07, 0.95, 0.95, 0.95});
  const auto tie = gains({1, 1, 1, 1, 1, 1, 1, 1, 1});
  const auto read = gains({0.6, 0.9, 1.15, 1.2, 1.1, 1.15, 1.15, 1.1, 1.05});
  const std::vector<std::vector<double>> a{aligned, a_mis, read}, b{aligned, tie, read};
  const auto alone_a = choose_threshold(a, {}, tol, min_gain, true);
  const auto alone_b = choose_threshold(b, {}, tol, min_gain, true);
  CHECK(alone_a.end == 6);
  CHECK(alone_b.end == 9);
  const SplitChoice s = choose_split(a, {}, b, {}, tol, min_gain);
  CHECK(s.split == 6);
  CHECK(s.band.index == 2);
  CHECK(s.band.end == 8);
  CHECK(s.band.gain > alone_a.gain);
  CHECK(s.band.gain > alone_b.gain);
  // A check row (the cold copy) that b loses from 2M on ends the band there.
  const auto cold_a = gains({0.8, 1, 1.1, 1.1, 1.1, 1.1, 1.1, 1.1, 1.1});
  const auto cold_b = gains({0.8, 1, 1.1, 1.1, 1.1, 1.1, 1.1, 0.9, 0.9});
  const SplitChoice c = choose_split(a, {cold_a}, b, {cold_b}, tol, min_gain);
  CHECK(c.split == 6);
  CHECK(c.band.end == 7);
  // Where a never loses, every split gives up some of a's gain: the caller keeps a alone (the
  // composite is reported, and scores below it).
  const std::vector<std::vector<double>> a_wins{aligned, gains({0.5, 0.8, 1.04, 1.04, 1.08, 1.07, 1.05, 1.05, 1.05}), read};
  const SplitChoice w = choose_split(a_wins, {}, b, {}, tol, min_gain);
  CHECK(w.split != kNoThreshold);
  CHECK(w.band.gain < choose_threshold(a_wins, {}, tol, min_gain, true).gain);
  // From the split on, the composite runs b's code only on the rows the mask names (a
  // misaligned dst); the others keep a's rows: a b whose aligned row loses from 2M on (not the
  // composite's code there) does not end the band when the mask leaves that row to a.
  const auto b_aligned = gains({0.6, 0.9, 1.3, 1.3, 1.3, 1.4, 1.2, 0.8, 0.8});
  const std::vector<std::vector<double>> b2{b_aligned, tie, read};
  CHECK(choose_split(a, {}, b2, {}, tol, min_gain).band.end == 7);
  const SplitChoice m = choose_split(a, {}, b2, {}, tol, min_gain, {false, true, false});
  CHECK(m.split == 6);
  CHECK(m.band.end == 8);
  // A band wholly on one side of every split is no composite (nor one at the last size alone,
  // which the composite never takes); no table, no choice.
  const auto late = gains({0.6, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 1.3});
  CHECK(choose_split({late}, {}, {late}, {}, tol, min_gain).split == kNoThreshold);
  CHECK(choose_split({}, {}, {}, {}, tol, min_gain).split == kNoThreshold);
}

TEST_CASE("choose_two_thresholds: rep again and non-temporal stores in one comparison, the faster takes the sizes") {
  // Ladder 256K, 512K, ... 64M (9 sizes); a = rep again (it runs the base's own loop below 8M:
  // gain exactly 0), b = non-temporal stores (2-3x slower once read below 8M). Rows: copy, read.
  const double tol = std::log(1.03), min_gain = std::log(1.03);
  const auto a_copy = gains({1, 1, 1, 1, 1, 1, 1.2, 1.15, 1.2});
  const auto a_read = gains({1, 1, 1, 1, 1, 1, 1.1, 1.15, 1.1});
  const auto b_copy = gains({0.4, 0.5, 0.7, 0.8, 1.0, 1.1, 1.12, 1.05, 1.1});
  const auto b_read = gains({0.3, 0.4, 0.6, 0.8, 0.8, 0.85, 1.0, 1.02, 1.08});
  // Both win from 16M over the loop; rep again by more: rep again alone, from 16M (the Zen 5 run
  // whose separate stages took non-temporal stores from 16M once rep again missed confirmation).
  auto r = choose_two_thresholds({a_copy, a_read}, {}, {b_copy, b_read}, {}, tol, min_gain);
  CHECK(r.a == 6);
  CHECK(r.b == kNoThreshold);
  CHECK(r.gain == doctest::Approx(choose_threshold({a_copy, a_read}, {}, tol, min_gain).gain));
  CHECK(r.why.find("first variant") != std::string::npos);

  // Non-temporal stores 1.4x at 64M, where rep again gains 1.05x only: rep again 16-32M, then
  // non-temporal stores (b against a at 64M: 1.4 / 1.05, more than the extra 3% the pair needs).
  const auto a2_copy = gains({1, 1, 1, 1, 1, 1, 1.2, 1.15, 1.05});
  const auto a2_read = gains({1, 1, 1, 1, 1, 1, 1.1, 1.15, 1.05});
  const auto b2_copy = gains({0.4, 0.5, 0.7, 0.8, 1.0, 1.1, 0.95, 1.0, 1.4});
  const auto b2_read = gains({0.3, 0.4, 0.6, 0.8, 0.8, 0.85, 0.9, 1.0, 1.4});
  r = choose_two_thresholds({a2_copy, a2_read}, {}, {b2_copy, b2_read}, {}, tol, min_gain);
  CHECK(r.a == 6);
  CHECK(r.b == 8);
  // A cold check where non-temporal stores lose 10% at 64M vetoes the pair and b alone.
  const auto a_cold = gains({1, 1, 1, 1, 1, 1, 1.1, 1.1, 1.0});
  const auto b_cold = gains({1, 1, 1, 1, 1, 1, 1.0, 1.0, 0.9});
  r = choose_two_thresholds({a2_copy, a2_read}, {a_cold}, {b2_copy, b2_read}, {b_cold}, tol, min_gain);
  CHECK(r.a == 6);
  CHECK(r.b == kNoThreshold);

  // The second threshold must add min_gain: non-temporal stores at 64M, 2.5% behind rep again
  // on the copy and 6% ahead read back (1.8% on the mean), do not earn it.
  const auto b3 = gains({0.4, 0.5, 0.7, 0.8, 1.0, 1.0, 1.0, 1.0, 1.17});
  r = choose_two_thresholds({a_copy, a_read}, {}, {b3, b3}, {}, tol, min_gain);
  CHECK(r.a == 6);
  CHECK(r.b == kNoThreshold);
}

TEST_CASE("choose_two_thresholds: the second variant does not take sizes where it loses a row to the first") {
  // The ladder of a Zen 5 tuning run (docs/perf/debian12/tune.log of the fourth round, memcpy,
  // 256K..64M): rep again from 4M (a) and the 32-byte non-temporal loop (b), each against the
  // loop. Without the row-by-row rule the pair "rep again from 4M, non-temporal from 16M" won on
  // the summed gain (98.5%), though b reads back 0.92x as fast as a at 16M (1.06 vs 1.15) and
  // 0.96x at 32M; the report then found that routine 0.87x `rep movsb` at 16M copy+read.
  const double tol = std::log(1.03), min_gain = std::log(1.03);
  const std::vector<std::vector<double>> a{gains({1, 1, 1, 1, 1.23, 1.21, 1.00, 1.12, 1.18}),
                                           gains({1, 1, 1, 1, 1, 1.20, 1.15, 1.20, 1.00}),
                                           gains({1, 1, 1, 1, 1.02, 1.04, 1.15, 1.17, 1.02}),
                                           gains({1, 1, 1, 1, 1.02, 1.14, 1.04, 1.05, 1.10})};
  const std::vector<std::vector<double>> a_cold{gains({1, 1, 1, 1, 1.07, 1.18, 1.00, 1.22, 1.04})};
  const std::vector<std::vector<double>> b{gains({0.36, 0.44, 0.68, 0.96, 0.93, 1.06, 1.20, 1.50, 1.25}),
                                           gains({0.47, 0.68, 0.86, 0.93, 0.95, 1.24, 1.41, 1.33, 1.02}),
                                           gains({0.26, 0.46, 0.52, 0.72, 0.68, 0.85, 1.06, 1.12, 1.03}),
                                           gains({0.46, 0.62, 0.76, 0.94, 1.00, 1.00, 1.21, 1.00, 1.13})};
  const std::vector<std::vector<double>> b_cold{gains({0.59, 1, 1, 1, 1.12, 1.17, 1.37, 1.18, 1.05})};
  const auto r = choose_two_thresholds(a, a_cold, b, b_cold, tol, min_gain);
  CHECK(r.a == 4);                // rep again from 4M
  CHECK(r.b == kNoThreshold);  // 64M alone: b ahead by 2.9% on the mean, short of the 3% a pair needs
  // Alone, b would still be chosen from 16M against the loop (a absent): the rule is about b
  // against a, not against the base.
  CHECK(choose_two_thresholds({}, {}, b, b_cold, tol, min_gain).b == 6);
}

TEST_CASE("choose_two_thresholds: non-temporal stores that win against the loop but read back slower than rep again are not taken") {
  // The stage beyond the caches of a Zen 5 memcpy tuning whose rep band stopped at 8 MiB
  // (docs/perf/debian12/tune.log at commit 97e67ea; ladder 256K..64M; rows copy dst+0, copy
  // src+2048 dst+4, copy+read, copy+write; cold as the check): rep again from 16M (a) and the
  // 32-byte non-temporal loop (b), each against the loop. Against the loop alone b wins from 16M
  // with the larger summed gain, and the stage took it; the report then found that routine 0.79x
  // the other tuning's rep at 16 MiB. Against rep again, b reads back 0.92x as fast at 16M (1.09
  // vs 1.18) and at 32M (1.18 vs 1.28): rep again alone. (This pins the rule in decide; that the
  // stage offers non-temporal stores only through it where rep again was timed is in tuner.cpp,
  // beyond_caches_stage, and shows in its log.)
  const double tol = std::log(1.03), min_gain = std::log(1.03);
  const std::vector<std::vector<double>> a{gains({1, 1, 1, 1, 1, 1, 1.42, 1.11, 1.31}),
                                           gains({1, 1, 1, 1, 1, 1, 1.24, 1.10, 1.07}),
                                           gains({1, 1, 1, 1, 1, 1, 1.18, 1.28, 1.28}),
                                           gains({1, 1, 1, 1, 1, 1, 1.24, 1.00, 1.00})};
  const std::vector<std::vector<double>> a_cold{gains({1, 1, 1, 1, 1, 1, 1.16, 1.00, 1.09})};
  const std::vector<std::vector<double>> b{gains({0.38, 0.53, 0.74, 0.88, 0.86, 1.00, 1.35, 1.20, 1.27}),
                                           gains({0.38, 0.51, 0.87, 0.93, 1.00, 1.04, 1.47, 1.23, 1.23}),
                                           gains({0.29, 0.43, 0.57, 0.61, 0.75, 0.76, 1.09, 1.18, 1.20}),
                                           gains({0.50, 0.61, 0.89, 0.79, 0.66, 1.00, 1.31, 1.17, 1.09})};
  const std::vector<std::vector<double>> b_cold{gains({0.58, 0.89, 0.93, 0.99, 1.00, 1.08, 1.27, 1.32, 1.21})};
  const ThresholdChoice alone_a = choose_threshold(a, a_cold, tol, min_gain);
  const ThresholdChoice alone_b = choose_threshold(b, b_cold, tol, min_gain);
  REQUIRE(alone_a.index == 6);
  REQUIRE(alone_b.index == 6);
  CHECK(alone_b.gain > alone_a.gain);  // why the single option against the loop won
  const auto r = choose_two_thresholds(a, a_cold, b, b_cold, tol, min_gain);
  CHECK(r.a == 6);  // rep again from 16M
  CHECK(r.b == kNoThreshold);
  CHECK(r.gain == doctest::Approx(alone_a.gain));
}

TEST_CASE("nt_starts_where_read_gains: a non-temporal threshold starts only where the copy read back gains") {
  // A Debian 12 memcpy tuning's stage beyond the caches (Zen 5, the twenty-seventh round's second
  // tuning at commit b770f60, rows in docs/perf/nt-read-start/README.md; ladder 256K..64M): the 32-byte non-temporal loop against the rep
  // class in 2M pieces. Read back it ties at 16M (1.00) and the other rows add a little there, so
  // without the rule it started at 16M; the report read that copy back at 0.85x rep's speed.
  const double tol = std::log(1.03), min_gain = std::log(1.03);
  const std::vector<std::vector<double>> nt{gains({0.34, 0.46, 0.71, 0.74, 0.87, 0.89, 1.00, 1.12, 1.00}),
                                            gains({0.35, 0.44, 0.69, 0.78, 0.75, 1.00, 1.08, 1.28, 1.10}),
                                            gains({0.28, 0.39, 0.54, 0.61, 0.68, 0.75, 1.00, 1.02, 1.00}),
                                            gains({0.47, 0.53, 0.83, 0.95, 0.82, 0.91, 1.03, 1.18, 1.00})};
  const std::vector<std::vector<double>> cold{gains({0.48, 0.71, 1.00, 0.92, 1.00, 1.00, 1.00, 1.11, 1.02})};
  CHECK(choose_threshold(nt, cold, tol, min_gain).index == 6);  // 16M, the tie read back included
  const std::vector<bool> starts = nt_starts_where_read_gains(nt, 2);
  REQUIRE(starts.size() == 9);
  CHECK(starts == std::vector<bool>{false, false, false, false, false, false, false, true, false});
  const ThresholdChoice c = choose_threshold(nt, cold, tol, min_gain, false, starts);
  CHECK(c.index == 7);  // 32M: read back 1.02 there; 64M's tie does not veto a start below it
  CHECK(c.end == 9);
  // The same rule through choose_two_thresholds (b alone: no rep again here).
  CHECK(choose_two_thresholds({}, {}, nt, cold, tol, min_gain, starts).b == 7);
  CHECK(choose_two_thresholds({}, {}, nt, cold, tol, min_gain).b == 6);
  // No size gains read back: never, and said why.
  const std::vector<bool> none(9, false);
  const ThresholdChoice never = choose_threshold(nt, cold, tol, min_gain, false, none);
  CHECK(never.index == kNoThreshold);
  CHECK(never.why.find("only where it gains read back") != std::string::npos);
  // A row index past the table: no start refused.
  CHECK(nt_starts_where_read_gains(nt, 4).empty());
}

TEST_CASE("nt_start_gains: the floor's composite takes non-temporal stores only where they read back faster than every other row") {
  // Rows: 0 the winner (rep), 1 a seed with non-temporal stores, 2 the winner without rep (the
  // loop). Columns: 64M at two placements, then 16M (ticks per call, the copy read back).
  CostTable t;
  t.cost = {{1000, 1010, 400}, {950, 960, 420}, {1200, 1190, 500}};
  CHECK(nt_start_gains(t, 1, {0, 2}, {0, 1}));  // 64M: 1.05x rep at both placements
  CHECK_FALSE(nt_start_gains(t, 1, {0, 2}, {2}));  // 16M: slower than rep
  t.cost[0][1] = 965;  // one placement within 1 % of rep: a tie is no start
  CHECK_FALSE(nt_start_gains(t, 1, {0, 2}, {0, 1}));
  CHECK(nt_start_gains(t, 1, {0, 2}, {0, 1}, std::log(1.001)));  // a smaller margin lets it through
  CHECK(nt_start_gains(t, 1, {2}, {0, 1}));  // against the loop alone it gains
  t.cost[0][1] = 975;  // 1.6 % at that placement: over the default margin of 1 %
  CHECK(nt_start_gains(t, 1, {0, 2}, {0, 1}));
  CHECK_FALSE(nt_start_gains(t, 1, {0, 2}, {0, 1}, std::log(1.02)));
  t.cost[0][1] = 965;
  CHECK(nt_start_gains(t, 1, {}, {0}));   // nothing measured runs other code there
  // No columns, a row or column out of range, a case not timed: no start.
  CHECK_FALSE(nt_start_gains(t, 1, {0}, {}));
  CHECK_FALSE(nt_start_gains(t, 3, {0}, {0}));
  CHECK_FALSE(nt_start_gains(t, 1, {5}, {0}));
  CHECK_FALSE(nt_start_gains(t, 1, {0}, {3}));
  t.cost[1][0] = 0;
  CHECK_FALSE(nt_start_gains(t, 1, {0}, {0}));
}

TEST_CASE("choose_two_thresholds: the second variant of a pair starts only where b_start_ok allows") {
  const double tol = std::log(1.03), min_gain = std::log(1.03);
  const auto a_row = gains({1, 1, 1.2, 1.2, 1.2, 1.2});
  const auto b_row = gains({1, 1, 1, 1, 1.5, 1.5});
  const std::vector<std::vector<double>> a{a_row, a_row}, b{b_row, b_row};
  auto r = choose_two_thresholds(a, {}, b, {}, tol, min_gain);
  CHECK(r.a == 2);
  CHECK(r.b == 4);
  r = choose_two_thresholds(a, {}, b, {}, tol, min_gain, {false, false, false, false, false, true});
  CHECK(r.a == 2);  // rep again keeps 4M..
  CHECK(r.b == 5);  // .. and the second takes over one size later
  r = choose_two_thresholds(a, {}, b, {}, tol, min_gain, std::vector<bool>(6, false));
  CHECK(r.a == 2);
  CHECK(r.b == kNoThreshold);
}

TEST_CASE("choose_two_thresholds: one variant absent or losing, and never") {
  const double tol = std::log(1.03), min_gain = std::log(1.03);
  const auto b_copy = gains({0.4, 0.5, 0.7, 0.8, 1.0, 1.1, 1.12, 1.05, 1.1});
  const auto b_read = gains({0.3, 0.4, 0.6, 0.8, 0.8, 0.85, 1.0, 1.02, 1.08});
  // No rep band to resume (a absent): choose_threshold's answer for b.
  auto r = choose_two_thresholds({}, {}, {b_copy, b_read}, {}, tol, min_gain);
  CHECK(r.a == kNoThreshold);
  CHECK(r.b == choose_threshold({b_copy, b_read}, {}, tol, min_gain).index);
  CHECK(r.b == 6);
  CHECK(r.why.find("second variant") != std::string::npos);
  // rep again loses 10% at 32M and wins 1.3x at 64M, where non-temporal stores win 1.08-1.1x:
  // rep again from 64M alone. Non-temporal stores from 16M (alone, or after rep again at 16M)
  // would take 64M from the faster rep.
  const auto a_dip = gains({1, 1, 1, 1, 1, 1, 1.3, 0.9, 1.3});
  r = choose_two_thresholds({a_dip, a_dip}, {}, {b_copy, b_read}, {}, tol, min_gain);
  CHECK(r.a == 8);
  CHECK(r.b == kNoThreshold);
  // rep again slower wherever it runs: b alone.
  const auto a_bad = gains({1, 1, 1, 1, 1, 1, 0.9, 0.95, 0.96});
  r = choose_two_thresholds({a_bad, a_bad}, {}, {b_copy, b_read}, {}, tol, min_gain);
  CHECK(r.a == kNoThreshold);
  CHECK(r.b == 6);
  // Neither wins anything: never, said.
  const auto flat = gains({1, 1, 1, 1, 1, 1, 1, 1, 1.01});
  r = choose_two_thresholds({flat}, {}, {flat}, {}, tol, min_gain);
  CHECK(r.a == kNoThreshold);
  CHECK(r.b == kNoThreshold);
  CHECK(r.why.find("never") != std::string::npos);
  CHECK(choose_two_thresholds({}, {}, {}, {}, tol, min_gain).why == "no sizes measured");
  // Tables of different shapes are refused, not read past their end.
  r = choose_two_thresholds({gains({1.2, 1.2})}, {}, {b_copy}, {}, tol, min_gain);
  CHECK(r.a == kNoThreshold);
  CHECK(r.b == kNoThreshold);
}

TEST_CASE("confirm: a large average gain does not confirm a threshold that loses one case by more than 6%") {
  // rep movsb from 32 KiB on a Zen 5 host: 1.25x on average, 0.93x at 32 KiB copy then read.
  const Confirmation c = confirm({{1.40, 1.41, 1.39}, {0.93, 0.92, 0.94}, {1.50, 1.52, 1.49}, {1.30, 1.29, 1.31}});
  CHECK_FALSE(c.ok);
  CHECK(c.gain > 1.2);
  CHECK(c.worst == 1);  // the case the tuner retries one ladder size up
  CHECK(c.worst_ratio == doctest::Approx(0.93));
  // A loss within 6% confirms when the average gains 1%.
  const Confirmation d = confirm({{1.10, 1.10, 1.10}, {0.95, 0.95, 0.95}});
  CHECK(d.ok);
  CHECK(d.worst == 1);
}

TEST_CASE("confirm: no case below 1 names no worst case; too small a gain does not confirm") {
  Confirmation c = confirm({{1.03, 1.04, 1.03}, {1.0, 1.0, 1.0}});
  CHECK(c.ok);
  CHECK(c.worst == kNoCase);
  CHECK(c.worst_ratio == 1.0);
  c = confirm({{1.004, 1.005, 1.006}, {1.0, 1.0, 1.0}});
  CHECK_FALSE(c.ok);         // 0.5% on average: below the 1% a threshold must earn
  CHECK(c.worst == kNoCase); // and nothing lost, so nothing to retry one size up
  CHECK_FALSE(confirm({}).ok);
  CHECK_FALSE(confirm({{}, {}}).ok);
}

TEST_CASE("confirm: each case's ratio is the median of its runs, so one disturbed run does not decide") {
  // The second run of case 0 was hit by interference (0.70): the median, 1.20, stands.
  const Confirmation c = confirm({{1.20, 0.70, 1.22}, {1.10, 1.12, 1.11}});
  CHECK(c.ok);
  CHECK(c.worst == kNoCase);
  CHECK(c.gain == doctest::Approx(std::sqrt(1.20 * 1.11)));
  // Two disturbed runs of three do decide it.
  CHECK_FALSE(confirm({{1.20, 0.70, 0.80}, {1.10, 1.12, 1.11}}).ok);
  // The thresholds are parameters: a 10% loss allowed, a 5% gain required.
  CHECK(confirm({{0.92}, {1.20}}, 1.05, 1.10).ok);
  CHECK_FALSE(confirm({{0.92}, {1.10}}, 1.05, 1.10).ok);
}

TEST_CASE("stats: median, median absolute deviation and geometric mean") {
  CHECK(copysynth::median({}) == 0);
  CHECK(copysynth::median({3, 1, 2}) == 2);
  CHECK(copysynth::median({4, 1, 3, 2}) == doctest::Approx(2.5));
  // Deviations from the median 3: 2, 1, 0, 1, 97 -> median 1 (the outlier does not move it).
  CHECK(copysynth::mad({1, 2, 3, 4, 100}) == 1);
  CHECK(copysynth::mad({}) == 0);
  CHECK(copysynth::geomean({}) == 1);
  CHECK(copysynth::geomean({2, 8}) == doctest::Approx(4));
  CHECK(copysynth::geomean({0.5, 2}) == doctest::Approx(1));
}
