// copysynth — the `.S` writer's output as a linked object: the build writes every plan of the grid
// (asm_grid.hpp) as a plain-flavour file (asm_gen), assembles it with GNU as and links the object
// into this program. Each linked function must be an endbr64 entry followed by exactly the bytes of the JIT routine for its
// plan (assemble() and, where the host can run it, Routine::build()), pass the static code
// checks for its target, and — where the host can run it — pass the same conformance suite as a
// JIT routine (verify/verify.hpp), called at its linked address.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "asm_grid.hpp"
#include "copysynth/static_check.hpp"
#include "copysynth/verify.hpp"
#include "grid.inc"
#include "support/verify_options.hpp"

using namespace copysynth;

TEST_CASE("the linked .S routines are the JIT routines and pass the conformance suite") {
  const auto grid = test::asm_grid();
  REQUIRE(kGridRoutineCount == grid.size());
  const IsaFeatures& host = CpuInfo::host().features();
  std::size_t identical = 0, verified = 0, static_clean = 0;
  std::uint64_t cases = 0;
  for (std::size_t i = 0; i < grid.size(); ++i) {
    const auto& g = grid[i];
    INFO("grid plan " << i << ": " << g.label);
    auto jit = assemble(g.plan);
    REQUIRE(jit.ok());
    // The entry (the symbol) is an endbr64 (Intel CET); the routine's bytes follow it, starting
    // on the alignment boundary its loop-head padding assumes.
    const auto* entry = static_cast<const std::uint8_t*>(kGridRoutines[i]);
    CHECK(std::vector<std::uint8_t>(entry, entry + 4) == std::vector<std::uint8_t>{0xF3, 0x0F, 0x1E, 0xFA});
    const auto* linked = entry + 4;
    CHECK(reinterpret_cast<std::uintptr_t>(linked) % std::max(16u, g.plan.params.loop_align.value) == 0);
    const std::vector<std::uint8_t> bytes(linked, linked + jit->size());
    CHECK(bytes == *jit);
    identical += bytes == *jit;

    const StaticReport sr = check_code(std::span<const std::uint8_t>(bytes), IsaFeatures::for_level(g.target));
    CHECK_MESSAGE(sr.ok(), sr.summary());
    static_clean += sr.ok();

    if (!validate(g.plan.params, host).ok()) continue;  // e.g. an AVX-512 plan on an AVX2 host
    auto r = Routine::build(g.plan);
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().message));
    CHECK(r->bytes() == bytes);

    const auto edges = plan_edges(g.plan);
    VerifyReport rep;
    switch (g.plan.params.operation.value) {
      case Operation::kMemcpy: rep = verify_copy(reinterpret_cast<CopyFn>(kGridRoutines[i]), edges, test::grid_options()); break;
      case Operation::kMemmove:
        rep = verify_move(reinterpret_cast<CopyFn>(kGridRoutines[i]), edges, g.plan.vec, test::grid_options());
        break;
      case Operation::kFill: rep = verify_fill(reinterpret_cast<FillFn>(kGridRoutines[i]), edges, test::grid_options()); break;
      case Operation::kClearPage:
        rep = verify_clear_page(reinterpret_cast<ClearPageFn>(kGridRoutines[i]), test::grid_options());
        break;
    }
    CHECK_MESSAGE(rep.ok(), rep.summary());
    verified += rep.ok();
    cases += rep.cases;
  }
  MESSAGE("linked .S routines: " << identical << " of " << grid.size() << " byte-identical, " << static_clean
                                 << " statically clean, " << verified << " run through the conformance suite ("
                                 << cases << " calls) on this host");
  CHECK(identical == grid.size());
  // Every host runs the SSE2 and GPR plans at least.
  CHECK(verified >= grid.size() / 4);
}
