// copysynth — a generated routine living in executable memory.
//
// Code memory is shared anonymous memory mapped twice (runtime/src/jit_memory.hpp): the code is
// written through a read-write view and executed through a separate read-execute view, so no page
// is ever writable and executable at the same time. No file descriptor refers to it, so programs
// the process starts inherit nothing of it.
// fork(): routines built before the fork keep their code in both processes, whatever either
// process builds or destroys afterwards (memory that existed at the fork is never reused; each
// process builds into new memory). Only fork() through glibc counts (pthread_atfork); a raw
// clone(2) without CLONE_VM followed by building in both processes is not supported.
//
// COPYSYNTH_PERF_MAP=1 in the environment: every routine built is appended to /tmp/perf-PID.map
// ("START SIZE copysynth:NAME", hex), where perf report / perf top find names for JIT code.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "copysynth/cpu.hpp"
#include "copysynth/emit.hpp"
#include "copysynth/plan.hpp"

namespace copysynth {

/// The memcpy / memmove call form: `void* f(void* dst, const void* src, size_t n)`, returns dst.
using CopyFn = void* (*)(void* dst, const void* src, std::size_t n);
/// The fill (memset) call form: `void* f(void* dst, int c, size_t n)`, returns dst.
using FillFn = void* (*)(void* dst, int c, std::size_t n);
/// The clear_page call form: `void f(void* page)`, page 4096-aligned, 4096 bytes zeroed.
using ClearPageFn = void (*)(void* page);

class Routine {
 public:
  /// Emits `plan` and installs it in executable memory. Refuses (kUnsupportedIsa) a plan whose
  /// params need features `cpu` lacks, so a routine that would fault with #UD is never created.
  /// Other errors: check_plan()'s, kEmitFailed, kJitUnavailable (the system denies executable
  /// memory: EACCES/EPERM), kJitFailed (no memory for it). Building does not verify: the tuner's
  /// verify_routine() must pass before the routine is timed, installed or written out.
  static Result<Routine> build(const CopyPlan& plan, const CpuInfo& cpu = CpuInfo::host());

  /// build() with faults injected on purpose (EmitFaults), for tests that show the verification
  /// suite catches each kind of bug. Never use the result outside such a test.
  static Result<Routine> build_with_faults(const CopyPlan& plan, const EmitFaults& faults,
                                           const CpuInfo& cpu = CpuInfo::host());

  Routine(Routine&& o) noexcept;
  Routine& operator=(Routine&& o) noexcept;
  Routine(const Routine&) = delete;
  Routine& operator=(const Routine&) = delete;
  ~Routine();  ///< releases the code; no thread may still be inside fn()

  /// The entry point as a memcpy/memmove function; nullptr for fill and clear_page routines.
  CopyFn fn() const { return is_copy() ? reinterpret_cast<CopyFn>(fn_) : nullptr; }
  /// The entry point as a fill function; nullptr unless the operation is fill.
  FillFn fill_fn() const {
    return plan_.params.operation.value == Operation::kFill ? reinterpret_cast<FillFn>(fn_) : nullptr;
  }
  /// The entry point as a clear_page function; nullptr unless the operation is clear_page.
  ClearPageFn clear_page_fn() const {
    return plan_.params.operation.value == Operation::kClearPage ? reinterpret_cast<ClearPageFn>(fn_) : nullptr;
  }
  /// The entry point, whatever the operation.
  const void* entry() const { return fn_; }
  Operation operation() const { return plan_.params.operation.value; }
  const CopyPlan& plan() const { return plan_; }
  const CopyParams& params() const { return plan_.params; }
  std::size_t size() const { return bytes_.size(); }           ///< code size in bytes
  const std::vector<std::uint8_t>& bytes() const { return bytes_; }  ///< the installed code
  /// Short name for reports: operation, width, unroll, prefetch, thresholds, loop alignment and
  /// NOP form, e.g. "memcpy/v32u4/pf0/nt-never/rep-never/al64long".
  std::string name() const;

 private:
  Routine() = default;
  void release() noexcept;
  bool is_copy() const {
    return plan_.params.operation.value == Operation::kMemcpy || plan_.params.operation.value == Operation::kMemmove;
  }
  void* fn_ = nullptr;           // the entry point in executable memory (64-byte aligned)
  std::size_t code_bytes_ = 0;   // bytes allocated for it (a multiple of 64)
  void* chunk_ = nullptr;        // the code memory chunk that holds it (runtime/src/jit_memory.cpp)
  CopyPlan plan_;
  std::vector<std::uint8_t> bytes_;
};

/// Whether this process may map executable memory: empty, or kJitUnavailable when the system
/// denies it (SELinux deny_execmem, a seccomp filter), kJitFailed when
/// memory is short. Cheap after the first call (it maps the first chunk of code memory).
Status jit_available();

/// Short name of a params set (same format as Routine::name()).
std::string short_name(const CopyParams& p);

/// Whether an environment variable's value is a word that switches a copysynth option on
/// ("1", "yes", "true", "on") or off ("0", "no", "false", "off"), in any case (strcasecmp).
/// COPYSYNTH_PERF_MAP is on only for the first set; COPYSYNTH_PRELOAD_STATS takes both sets
/// (api/src/preload.cpp), so the two read the same words. `value` must not be null. Neither
/// allocates.
bool env_word_on(const char* value);
bool env_word_off(const char* value);

}  // namespace copysynth
