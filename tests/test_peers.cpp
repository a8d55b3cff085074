// The peer routines (tuner/peers.hpp) are the baseline tuned routines are compared with, so they
// pass the same dynamic conformance suite as generated code (the ABI probe included: the AVX2
// peers must leave the upper YMM state clean). The static code checks read generated code only
// and do not apply to compiled peers. No test asserts a speed.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "copysynth/peers.hpp"
#include "copysynth/verify.hpp"

using namespace copysynth;

namespace {

const IsaFeatures& host() { return CpuInfo::host().features(); }

VerifyOptions peer_options() {
  VerifyOptions o;
  o.dense_max = 300;
  o.random_sizes = 4;
  o.max_size = 4 << 20;
  o.static_check = false;  // not applicable: peers are compiled, not emitted
  return o;
}

// Where the peers change behaviour: the small moves (2/4/8/16), one vector (32), the 4-vector
// loop (128, 160), and avx2_nt_loop's non-temporal threshold (1 MiB), so lengths on both sides of
// it, up to 1 MiB + 72, are verified.
const std::vector<std::uint64_t> kEdges{2, 4, 8, 16, 32, 64, 128, 160, 256, 4096, kPeerNtThreshold};

std::vector<std::string> names(const std::vector<Peer>& ps) {
  std::vector<std::string> n;
  for (const auto& p : ps) n.push_back(p.name);
  return n;
}

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace

TEST_CASE("peers(): the expected set for each operation, unique names, glibc first") {
  const bool avx2 = host().has(Feature::kAVX2);
  for (Operation op : {Operation::kMemcpy, Operation::kMemmove, Operation::kFill, Operation::kClearPage}) {
    CAPTURE(std::string(name_of(op)));
    const auto ps = peers(op, host());
    REQUIRE(!ps.empty());
    CHECK(ps.front().name == "glibc");
    const auto n = names(ps);
    CHECK(std::set<std::string>(n.begin(), n.end()).size() == n.size());
    for (const auto& p : ps) {
      CHECK(p.op == op);
      CHECK(p.entry != nullptr);
      CHECK(!p.description.empty());
    }
    switch (op) {
      case Operation::kMemcpy:
        CHECK(has(n, "rep_movsb"));
        CHECK(has(n, "avx2_loop") == avx2);
        CHECK(has(n, "avx2_nt_loop") == avx2);
        CHECK(has(n, "dpdk") == (avx2 && have_dpdk_peer()));
        break;
      case Operation::kMemmove:
        CHECK(!has(n, "rep_movsb"));  // forward only: not a memmove
        CHECK(!has(n, "dpdk"));
        CHECK(has(n, "avx2_loop") == avx2);
        break;
      case Operation::kFill:
        CHECK(has(n, "rep_stosb"));
        CHECK(has(n, "avx2_loop") == avx2);
        break;
      case Operation::kClearPage: CHECK(n.size() == 1); break;
    }
  }
  MESSAGE((std::string("dpdk peer in this build: ") + (have_dpdk_peer() ? "yes" : "no (DPDK headers not found)")));
}

TEST_CASE("peers(): no AVX2 peer for a host without AVX2") {
  const IsaFeatures sse2 = IsaFeatures::for_level(IsaLevel::kSSE2);
  for (Operation op : {Operation::kMemcpy, Operation::kMemmove, Operation::kFill}) {
    for (const auto& p : peers(op, sse2)) {
      CAPTURE(p.name);
      CHECK(p.name.find("avx2") == std::string::npos);
      CHECK(p.name != "dpdk");
    }
  }
}

TEST_CASE("every peer keeps the ABI and leaves the upper YMM state clean") {
  std::vector<unsigned char> a((2u << 20) + 64, 0x11), b((2u << 20) + 64, 0x22);
  bool checked = true;
  for (Operation op : {Operation::kMemcpy, Operation::kMemmove, Operation::kFill}) {
    for (const auto& p : peers(op, host())) {
      // 2 MiB takes avx2_nt_loop's non-temporal path.
      for (std::size_t n : {std::size_t{0}, std::size_t{31}, std::size_t{200}, std::size_t{4096}, std::size_t{2} << 20}) {
        CAPTURE(p.name);
        CAPTURE(n);
        const std::uint64_t src = op == Operation::kFill ? 0x5A : reinterpret_cast<std::uint64_t>(a.data() + 3);
        const AbiCall c = abi_call(p.entry, reinterpret_cast<std::uint64_t>(b.data() + 1), src, n);
        CHECK(c.problem() == "");
        CHECK(c.ret == b.data() + 1);
        checked = checked && c.upper_checked;
      }
    }
  }
  if (!checked) MESSAGE("XINUSE not available here: a missing vzeroupper would go unseen");
}

TEST_CASE("every memcpy peer passes verify_copy") {
  for (const auto& p : peers(Operation::kMemcpy, host())) {
    CAPTURE(p.name);
    const auto rep = verify_copy(reinterpret_cast<CopyFn>(p.entry), kEdges, peer_options());
    INFO(rep.summary());
    CHECK(rep.ok());
    CHECK(rep.skipped_edges.empty());
    for (const auto& note : rep.notes) MESSAGE(note);
  }
}

TEST_CASE("every memmove peer passes verify_move") {
  for (const auto& p : peers(Operation::kMemmove, host())) {
    CAPTURE(p.name);
    // Distances up to +-(2*64+64): wider than the 32-byte vectors of avx2_loop, as for a
    // generated routine of width 64.
    const auto rep = verify_move(reinterpret_cast<CopyFn>(p.entry), kEdges, 64, peer_options());
    INFO(rep.summary());
    CHECK(rep.ok());
  }
}

TEST_CASE("every fill peer passes verify_fill") {
  for (const auto& p : peers(Operation::kFill, host())) {
    CAPTURE(p.name);
    const auto rep = verify_fill(reinterpret_cast<FillFn>(p.entry), kEdges, peer_options());
    INFO(rep.summary());
    CHECK(rep.ok());
  }
}

TEST_CASE("the clear_page peer passes verify_clear_page") {
  for (const auto& p : peers(Operation::kClearPage, host())) {
    CAPTURE(p.name);
    const auto rep = verify_clear_page(reinterpret_cast<ClearPageFn>(p.entry), peer_options());
    INFO(rep.summary());
    CHECK(rep.ok());
  }
}
