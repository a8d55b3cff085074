// copysynth — JIT installation of routines (see routine.hpp).
#include "copysynth/routine.hpp"

#include <unistd.h>

#include <algorithm>
#include <asmjit/x86.h>
#include <atomic>

#include "copysynth/emit.hpp"

namespace copysynth {
namespace {

/// The JIT runtime of one process.
struct ProcessJit {
  asmjit::JitRuntime* rt;
  pid_t pid;
};
std::atomic<ProcessJit*> g_jit{nullptr};

/// The JIT runtime of this process: dual mapping (RX view + RW view), never RWX. Thread-safe.
///
/// The dual mapping is shared memory (asmjit maps one memfd twice, MAP_SHARED), which a child
/// process inherits as shared: if the parent and a child both allocated from it after fork(),
/// each would write new code over the other's. So the runtime belongs to the process that made
/// it: a child gets its own on its first build. The parent's runtime is left to the child as it
/// is (never destroyed, never allocated from), so inherited routines keep running and releasing
/// them only touches the child's copy of its bookkeeping. No lock is taken (a lock held by
/// another thread at fork() would stay held in the child forever); getpid() is a system call on
/// glibc >= 2.25, so it is right after fork() and clone().
asmjit::JitRuntime& jit_runtime() {
  const pid_t self = getpid();
  ProcessJit* cur = g_jit.load(std::memory_order_acquire);
  while (!cur || cur->pid != self) {
    asmjit::JitAllocator::CreateParams params{};
    params.options = asmjit::JitAllocatorOptions::kUseDualMapping;
    params.granularity = 64;  // every routine starts 64-byte aligned: loop_align is absolute
    auto* mine = new ProcessJit{new asmjit::JitRuntime(&params), self};  // never destroyed: code may run at exit
    if (g_jit.compare_exchange_strong(cur, mine, std::memory_order_acq_rel)) return *mine->rt;
    delete mine->rt;  // another thread of this process won the race; `cur` is now its runtime
    delete mine;
  }
  return *cur->rt;
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
  r.rt_ = &rt;
  return r;
}

Routine::Routine(Routine&& o) noexcept
    : fn_(o.fn_), rt_(o.rt_), plan_(std::move(o.plan_)), bytes_(std::move(o.bytes_)) {
  o.fn_ = nullptr;
}

Routine& Routine::operator=(Routine&& o) noexcept {
  if (this != &o) {
    release();
    fn_ = o.fn_;
    rt_ = o.rt_;
    plan_ = std::move(o.plan_);
    bytes_ = std::move(o.bytes_);
    o.fn_ = nullptr;
  }
  return *this;
}

Routine::~Routine() { release(); }

void Routine::release() noexcept {
  if (fn_) static_cast<asmjit::JitRuntime*>(rt_)->release(fn_);  // the runtime it came from (fork)
  fn_ = nullptr;
}

std::string Routine::name() const { return short_name(plan_.params); }

}  // namespace copysynth
