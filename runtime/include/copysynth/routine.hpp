// copysynth — a generated routine living in executable memory.
//
// Code is installed through asmjit's JitRuntime with a dual-mapped JitAllocator: the code is written
// through a read-write view and executed through a separate read-execute view, so no page is ever
// writable and executable at the same time (DESIGN.md invariant 8).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "copysynth/cpu.hpp"
#include "copysynth/plan.hpp"

namespace copysynth {

/// The memcpy call form: `void* memcpy(void* dst, const void* src, size_t n)`, returns dst.
using CopyFn = void* (*)(void* dst, const void* src, std::size_t n);

class Routine {
 public:
  /// Emits `plan` and installs it in executable memory. Refuses (kUnsupportedIsa) a plan whose
  /// params need features `cpu` lacks, so a routine that would fault with #UD is never created.
  /// Other errors: check_plan()'s, kEmitFailed, kJitFailed. Building does not verify: the tuner's
  /// verify_routine() must pass before the routine is timed, installed or written out.
  static Result<Routine> build(const CopyPlan& plan, const CpuInfo& cpu = CpuInfo::host());

  Routine(Routine&& o) noexcept;
  Routine& operator=(Routine&& o) noexcept;
  Routine(const Routine&) = delete;
  Routine& operator=(const Routine&) = delete;
  ~Routine();  ///< releases the code; no thread may still be inside fn()

  CopyFn fn() const { return fn_; }
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
  CopyFn fn_ = nullptr;
  CopyPlan plan_;
  std::vector<std::uint8_t> bytes_;
};

/// Short name of a params set (same format as Routine::name()).
std::string short_name(const CopyParams& p);

}  // namespace copysynth
