// The peer routines (tuner/peers.hpp) are the baseline tuned routines are compared with, so they
// pass the same dynamic conformance suite as generated code (the ABI probe included: the AVX2
// peers must leave the upper YMM state clean). The static code checks read generated code only
// and do not apply to compiled peers. No test asserts a speed.
//
// The aocl peer (AMD AOCL-LibMem, when this program was linked with tools/build-aocl-peer.sh's
// archive) is the one exception to the upper-state rule: AMD compiles it with -mno-vzeroupper
// (AOCL-LibMem's src/uarch/CMakeLists.txt) and the peer is timed as AMD ships it. Its ABI case
// checks everything else; the verify_* cases call it through vzeroupper_thunk below, so that
// every other check (bytes, bounds, guard pages, callee-saved registers, return value) applies.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "copysynth/peers.hpp"
#include "copysynth/verify.hpp"
#include "support/skip.hpp"
#include "support/text.hpp"
#include "support/verify_options.hpp"

using namespace copysynth;
using test::contains;

// vzeroupper_thunk(dst, src, n): calls t_thunk_target with the same arguments, then vzeroupper;
// returns its rax. Only handed out on AVX hosts (the aocl peer needs AVX2 or AVX-512).
extern "C" void* copysynth_test_vzeroupper_thunk(void*, const void*, std::size_t);
extern "C" {
const void* copysynth_test_thunk_target = nullptr;
}
asm(R"(
    .pushsection .text
    .p2align 4
    .globl copysynth_test_vzeroupper_thunk
    .type copysynth_test_vzeroupper_thunk, @function
copysynth_test_vzeroupper_thunk:
    subq $8, %rsp
    call *copysynth_test_thunk_target(%rip)
    addq $8, %rsp
    vzeroupper
    ret
    .size copysynth_test_vzeroupper_thunk, .-copysynth_test_vzeroupper_thunk
    .popsection
)");

namespace {

const IsaFeatures& host() { return CpuInfo::host().features(); }

VerifyOptions peer_options() {
  VerifyOptions o = test::light_options(4 << 20);
  o.static_check = false;  // not applicable: peers are compiled, not emitted
  return o;
}

// Where the peers change behaviour: the small moves (2/4/8/16), one vector (32), the 4-vector
// loop (128, 160), and avx2_nt_loop's non-temporal threshold (1 MiB), so lengths on both sides of
// it, up to 1 MiB + 72, are verified.
const std::vector<std::uint64_t> kEdges{2, 4, 8, 16, 32, 64, 128, 160, 256, 4096, kPeerNtThreshold};

// AOCL-LibMem 5.3's zen4/zen5 routines change strategy at 64, 128, 256, 512 bytes (vector
// blocks), 2048 (rep movsb start; with no cache sizes, also the non-temporal start), 26 KiB
// (memmove's temporal loop) and L1D/2 + 2 KiB (26 KiB on a 48 KiB L1D); the non-temporal stores
// start at AOCL's nt threshold (aocl_peer_thresholds(), checked when it is within max_size).
std::vector<std::uint64_t> aocl_edges() {
  std::vector<std::uint64_t> e{2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 26 * 1024, 32 * 1024, 1 << 20};
  if (const auto t = aocl_peer_thresholds())
    for (std::uint64_t x : {t->nt_start, t->repmov_start, t->repmov_stop, t->repstore_start, t->repstore_stop})
      if (x > 0 && x < (4u << 20)) e.push_back(x);
  return e;
}

// The entry to verify: the peer itself, or for aocl the thunk that adds the vzeroupper AMD's
// build leaves out (see the top of this file).
const void* verified_entry(const Peer& p) {
  if (p.name != "aocl") return p.entry;
  copysynth_test_thunk_target = p.entry;
  return reinterpret_cast<const void*>(&copysynth_test_vzeroupper_thunk);
}

const std::vector<std::uint64_t>& edges_of(const Peer& p) {
  static const std::vector<std::uint64_t> aocl = aocl_edges();
  return p.name == "aocl" ? aocl : kEdges;
}

// What this build says about the aocl peer, once per test program.
void say_aocl() {
  static const bool said = [] {
    if (!have_aocl_peer()) {
      MESSAGE("aocl peer in this program: no (build it with tools/build-aocl-peer.sh --from "
              "AOCL_TREE_OR_ARCHIVE, then re-run cmake: COPYSYNTH_AOCL_PEER)");
    } else {
      std::string m = "aocl peer in this program: " + std::string(aocl_peer_build());
      if (const auto t = aocl_peer_thresholds())
        m += "; thresholds here: non-temporal from " + std::to_string(t->nt_start) + " B, rep movsb [" +
             std::to_string(t->repmov_start) + ", " + std::to_string(t->repmov_stop) + "), rep stosb [" +
             std::to_string(t->repstore_start) + ", " + std::to_string(t->repstore_stop) + ")";
      if (!aocl_peer_runs_on(CpuInfo::host().features())) m += "; this host lacks its instructions: not run";
      if (const auto t = aocl_peer_thresholds(); t && t->nt_start >= peer_options().max_size)
        m += "; its non-temporal path (from " + std::to_string(t->nt_start) + " B) is beyond the lengths verified here";
      MESSAGE(m);
    }
    return true;
  }();
  (void)said;
}

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
  say_aocl();
  const bool avx2 = host().has(Feature::kAVX2);
  const bool aocl = have_aocl_peer() && aocl_peer_runs_on(host());
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
        CHECK(has(n, "aocl") == aocl);
        break;
      case Operation::kMemmove:
        CHECK(!has(n, "rep_movsb"));  // forward only: not a memmove
        CHECK(!has(n, "dpdk"));
        CHECK(has(n, "avx2_loop") == avx2);
        CHECK(has(n, "aocl") == aocl);
        break;
      case Operation::kFill:
        CHECK(has(n, "rep_stosb"));
        CHECK(has(n, "avx2_loop") == avx2);
        CHECK(has(n, "aocl") == aocl);
        break;
      case Operation::kClearPage: CHECK(n.size() == 1); break;
    }
  }
  if (have_dpdk_peer())
    MESSAGE("dpdk peer in this build: yes");
  else
    COPYSYNTH_SKIP_PART("no dpdk peer in this build (DPDK headers not found: tools/install-deps.sh --bench, then "
                    "re-run cmake): rte_memcpy is neither listed nor verified here");
}

TEST_CASE("peers(): no AVX2 peer for a host without AVX2") {
  const IsaFeatures sse2 = IsaFeatures::for_level(IsaLevel::kSSE2);
  for (Operation op : {Operation::kMemcpy, Operation::kMemmove, Operation::kFill}) {
    for (const auto& p : peers(op, sse2)) {
      CAPTURE(p.name);
      CHECK(p.name.find("avx2") == std::string::npos);
      CHECK(p.name != "dpdk");
      CHECK(p.name != "aocl");
    }
  }
}

TEST_CASE("aocl peer: never handed out without its instructions, nor at all when it is not built") {
  say_aocl();
  CHECK_FALSE(aocl_peer_runs_on(IsaFeatures::for_level(IsaLevel::kSSE2)));
  if (!have_aocl_peer()) {
    CHECK(aocl_peer_zen() == 0);
    CHECK(aocl_peer_build().empty());
    CHECK_FALSE(aocl_peer_thresholds().has_value());
    CHECK_FALSE(aocl_peer_runs_on(IsaFeatures::for_level(IsaLevel::kAVX512)));
    CHECK(aocl_peer_caveat().empty());
  }
}

TEST_CASE("aocl peer: handed out only to hosts with its variant's instructions" *
          test::skip_unless(have_aocl_peer(), "the aocl peer is not built into this program "
                                              "(tools/build-aocl-peer.sh, then re-run cmake)")) {
  const IsaFeatures avx2 = IsaFeatures::for_level(IsaLevel::kAVX2);
  const IsaFeatures avx512 = IsaFeatures::for_level(IsaLevel::kAVX512);
  const int zen = aocl_peer_zen();
  REQUIRE(zen >= 1);
  REQUIRE(zen <= 5);
  CHECK(aocl_peer_build().find("zen" + std::to_string(zen)) != std::string_view::npos);
  // A zen4/zen5 build is AVX-512 code: an AVX2-capped host (autotune --target avx2) must not get it.
  CHECK(aocl_peer_runs_on(avx2) == (zen <= 3 && avx2.has(Feature::kBMI2)));
  CHECK(aocl_peer_runs_on(avx512) == avx512.has(Feature::kBMI2));
  for (Operation op : {Operation::kMemcpy, Operation::kMemmove, Operation::kFill}) {
    const auto capped = names(peers(op, avx2));
    CHECK(has(capped, "aocl") == aocl_peer_runs_on(avx2));
  }
  const auto t = aocl_peer_thresholds();
  REQUIRE(t.has_value());  // AOCL-LibMem 5.3 has them; its constructor ran when it was linked in
  CHECK(t->nt_start > 0);
  // A peer that read no cache sizes (a VM without CPUID leaf 0x8000001D, built without
  // --cache-sizes) is said to be one wherever its figures are shown, and only then.
  const std::string caveat = aocl_peer_caveat();
  INFO("non-temporal threshold " << t->nt_start << " B; build: " << aocl_peer_build());
  CHECK(caveat.empty() == (t->nt_start > 1));
  if (!caveat.empty()) {
    CHECK(contains(caveat, "--cache-sizes"));
    for (Operation op : {Operation::kMemcpy, Operation::kMemmove, Operation::kFill})
      for (const auto& p : peers(op, avx512))
        if (p.name == "aocl") CHECK(contains(p.description, caveat));
  }
}

TEST_CASE("every peer keeps the ABI and leaves the upper YMM state clean") {
  std::vector<unsigned char> a((2u << 20) + 64, 0x11), b((2u << 20) + 64, 0x22);
  bool checked = true;
  bool aocl_dirty = false;
  for (Operation op : {Operation::kMemcpy, Operation::kMemmove, Operation::kFill}) {
    for (const auto& p : peers(op, host())) {
      // 2 MiB takes avx2_nt_loop's non-temporal path.
      for (std::size_t n : {std::size_t{0}, std::size_t{31}, std::size_t{200}, std::size_t{4096}, std::size_t{2} << 20}) {
        CAPTURE(p.name);
        CAPTURE(n);
        const std::uint64_t src = op == Operation::kFill ? 0x5A : reinterpret_cast<std::uint64_t>(a.data() + 3);
        AbiCall c = abi_call(p.entry, reinterpret_cast<std::uint64_t>(b.data() + 1), src, n);
        if (p.name == "aocl") {
          // Built by AMD with -mno-vzeroupper (top of this file): noted, not a failure.
          if (c.upper_dirty) aocl_dirty = true;
          c.upper_dirty = false;
        }
        CHECK(c.problem() == "");
        CHECK(c.ret == b.data() + 1);
        checked = checked && c.upper_checked;
      }
    }
  }
  if (!checked) COPYSYNTH_SKIP_PART("XINUSE not available here: a missing vzeroupper would go unseen");
  if (aocl_dirty) MESSAGE("aocl returns with the upper YMM/ZMM state dirty (AMD builds it with -mno-vzeroupper)");
}

TEST_CASE("every memcpy peer passes verify_copy") {
  for (const auto& p : peers(Operation::kMemcpy, host())) {
    CAPTURE(p.name);
    const auto rep = verify_copy(reinterpret_cast<CopyFn>(verified_entry(p)), edges_of(p), peer_options());
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
    const auto rep = verify_move(reinterpret_cast<CopyFn>(verified_entry(p)), edges_of(p), 64, peer_options());
    INFO(rep.summary());
    CHECK(rep.ok());
  }
}

TEST_CASE("every fill peer passes verify_fill") {
  for (const auto& p : peers(Operation::kFill, host())) {
    CAPTURE(p.name);
    const auto rep = verify_fill(reinterpret_cast<FillFn>(verified_entry(p)), edges_of(p), peer_options());
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
