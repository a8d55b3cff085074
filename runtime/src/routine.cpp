// copysynth — JIT installation of routines (see routine.hpp).
#include "copysynth/routine.hpp"

#include <algorithm>
#include <asmjit/x86.h>

#include "copysynth/emit.hpp"

namespace copysynth {
namespace {

/// The process-wide JIT runtime: dual mapping (RX view + RW view), never RWX. Thread-safe.
asmjit::JitRuntime& jit_runtime() {
  static asmjit::JitRuntime* rt = [] {
    asmjit::JitAllocator::CreateParams params{};
    params.options = asmjit::JitAllocatorOptions::kUseDualMapping;
    params.granularity = 64;  // every routine starts 64-byte aligned: loop_align is absolute
    return new asmjit::JitRuntime(&params);
  }();
  return *rt;
}

}  // namespace

std::string short_name(const CopyParams& p) {
  std::string s = std::string(name_of(p.operation.value)) + "/v" + std::to_string(p.vector_width.value) +
                  "u" + std::to_string(p.unroll.value);
  s += "/pf" + std::to_string(p.prefetch_distance.value);
  if (p.prefetch_distance.value) s += std::string(name_of(p.prefetch_hint.value));
  s += "/nt-" + bytes_or_never(p.nt_threshold) + "/rep-" + bytes_or_never(p.rep_threshold);
  if (p.rep_threshold.value != kNever) {
    if (p.rep_unit.value == 8) s += "q";
    if (p.rep_align_dst) s += "a";
  }
  s += "/al" + std::to_string(p.loop_align.value) + std::string(name_of(p.nop_form.value));
  if (p.loop_pipeline) s += "/pipe";
  if (p.alias_window.value && !p.loop_pipeline) s += "/alias" + std::to_string(p.alias_window.value);
  if (p.rep_alias_window.value && p.rep_threshold.value != kNever) s += "/repalias" + std::to_string(p.rep_alias_window.value);
  return s;
}

Result<Routine> Routine::build(const CopyPlan& plan, const CpuInfo& cpu) {
  return build_with_faults(plan, EmitFaults{}, cpu);
}

Result<Routine> Routine::build_with_faults(const CopyPlan& plan, const EmitFaults& faults, const CpuInfo& cpu) {
  COPYSYNTH_TRY(validate(plan.params, cpu.features()));
  asmjit::JitRuntime& rt = jit_runtime();
  asmjit::CodeHolder code;
  code.init(rt.environment());
  asmjit::x86::Assembler a(&code);
  COPYSYNTH_TRY(emit(plan, *a.as<asmjit::x86::Emitter>(), faults));
  Routine r;
  r.plan_ = plan;
  {
    const auto& buf = code.textSection()->buffer();
    r.bytes_.assign(buf.data(), buf.data() + buf.size());
  }
  void* fn = nullptr;
  const asmjit::Error err = rt.add(&fn, &code);
  if (err != asmjit::kErrorOk)
    return make_error(ErrorCode::kJitFailed,
                      std::string("could not install the routine in executable memory: ") +
                          asmjit::DebugUtils::errorAsString(err) +
                          " (is memfd_create or /dev/shm available, and is the address space or "
                          "RLIMIT_AS not exhausted?)");
  r.fn_ = fn;
  return r;
}

Routine::Routine(Routine&& o) noexcept
    : fn_(o.fn_), plan_(std::move(o.plan_)), bytes_(std::move(o.bytes_)) {
  o.fn_ = nullptr;
}

Routine& Routine::operator=(Routine&& o) noexcept {
  if (this != &o) {
    release();
    fn_ = o.fn_;
    plan_ = std::move(o.plan_);
    bytes_ = std::move(o.bytes_);
    o.fn_ = nullptr;
  }
  return *this;
}

Routine::~Routine() { release(); }

void Routine::release() noexcept {
  if (fn_) jit_runtime().release(fn_);
  fn_ = nullptr;
}

std::string Routine::name() const { return short_name(plan_.params); }

}  // namespace copysynth
