// copysynth — the `.S` writer's output as a linked object: the build writes every plan of the grid
// (asm_grid.hpp) as a plain-flavour file (asm_gen), assembles it with GNU as and links the object
// into this program. Each linked function must be an endbr64 entry followed by exactly the bytes of the JIT routine for its
// plan (assemble() and, where the host can run it, Routine::build()), pass the static code
// checks for its target, and — where the host can run it — pass the same conformance suite as a
// JIT routine (verify/verify.hpp), called at its linked address; and a fault inside each must
// unwind to its caller (the flavour's CFI).
#include <doctest/doctest.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>
#include <unwind.h>

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

// ----- unwinding through a linked routine ------------------------------------------------------

namespace {

sigjmp_buf g_fault_jump;
void* g_caller_start = nullptr;  // the function the unwinder must reach from inside the routine
bool g_caller_reached = false;
int g_frames = 0;

_Unwind_Reason_Code unwind_step(struct _Unwind_Context* ctx, void*) {
  ++g_frames;
  const auto pc = _Unwind_GetIP(ctx);
  if (pc && _Unwind_FindEnclosingFunction(reinterpret_cast<void*>(pc)) == g_caller_start) g_caller_reached = true;
  return g_frames > 64 ? _URC_END_OF_STACK : _URC_NO_REASON;
}

void on_fault(int) {
  _Unwind_Backtrace(unwind_step, nullptr);
  siglongjmp(g_fault_jump, 1);
}

void* volatile g_sink = nullptr;

/// Calls `fn` as a program would (not a tail call: the result is stored after it).
/// noipa: no clone (.constprop, .isra) whose address would differ from the function's.
[[gnu::noipa]] void call_copy(CopyFn fn, void* dst, const void* src, std::size_t n) { g_sink = fn(dst, src, n); }
[[gnu::noipa]] void call_fill(FillFn fn, void* dst, std::size_t n) { g_sink = fn(dst, 0x5a, n); }

/// The fault handler installed, and the buffer mapped, for a scope: put back however it ends
/// (a failed REQUIRE included), so that no later fault jumps into a frame that is gone.
struct FaultScope {
  std::uint8_t* mem = nullptr;
  std::size_t bytes = 0;
  struct sigaction old_segv {}, old_bus {};
  explicit FaultScope(std::size_t n) : bytes(n) {
    void* p = ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) mem = static_cast<std::uint8_t*>(p);
    struct sigaction sa {};
    sa.sa_handler = on_fault;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_NODEFER;
    sigaction(SIGSEGV, &sa, &old_segv);
    sigaction(SIGBUS, &sa, &old_bus);
  }
  ~FaultScope() {
    sigaction(SIGSEGV, &old_segv, nullptr);
    sigaction(SIGBUS, &old_bus, nullptr);
    if (mem) ::munmap(mem, bytes);
  }
  FaultScope(const FaultScope&) = delete;
  FaultScope& operator=(const FaultScope&) = delete;
};

/// Calls the routine at `entry` (a fill when `fill`) through call_copy or call_fill so that it
/// faults, and returns whether it did; g_caller_reached says whether the unwinder got there.
bool fault_in(const void* entry, bool fill, void* dst, const void* src, std::size_t n) {
  g_caller_reached = false;
  g_frames = 0;
  if (sigsetjmp(g_fault_jump, 1) != 0) return true;
  if (fill) {
    g_caller_start = reinterpret_cast<void*>(&call_fill);
    call_fill(reinterpret_cast<FillFn>(entry), dst, n);
  } else {
    g_caller_start = reinterpret_cast<void*>(&call_copy);
    call_copy(reinterpret_cast<CopyFn>(entry), dst, src, n);
  }
  return false;
}

}  // namespace

TEST_CASE("a fault inside a linked routine unwinds to its caller (the plain flavour's CFI)") {
  // A backtrace from a fault inside the routine (a debugger's, backtrace()'s, a crash reporter's)
  // must pass through it to the caller: the plain flavour's .cfi_startproc/.cfi_endproc give it
  // the .eh_frame entry that says so (without them the unwinder stopped at the routine).
  const auto grid = test::asm_grid();
  const IsaFeatures& host = CpuInfo::host().features();
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  FaultScope scope(3 * page);
  std::uint8_t* const mem = scope.mem;
  REQUIRE(mem != nullptr);
  REQUIRE(::mprotect(mem + 2 * page, page, PROT_NONE) == 0);  // dst = mem + page: faults past one page
  std::size_t tried = 0, reached = 0;
  for (std::size_t i = 0; i < grid.size(); ++i) {
    const auto& g = grid[i];
    const Operation op = g.plan.params.operation.value;
    if (op == Operation::kClearPage || !validate(g.plan.params, host).ok()) continue;
    INFO("grid plan " << i << ": " << g.label);
    REQUIRE(fault_in(kGridRoutines[i], op == Operation::kFill, mem + page, mem, 2 * page));
    ++tried;
    CHECK_MESSAGE(g_caller_reached, "the unwinder stopped after " << g_frames << " frames");
    reached += g_caller_reached;
  }
  MESSAGE("a fault in " << tried << " linked routines: the caller reached from " << reached);
  CHECK(tried >= grid.size() / 4);
}
