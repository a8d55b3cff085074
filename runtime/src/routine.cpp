// copysynth — JIT installation of routines (see routine.hpp).
#include "copysynth/routine.hpp"

#include <fcntl.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <algorithm>
#include <asmjit/x86.h>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <strings.h>

#include "copysynth/emit.hpp"
#include "jit_memory.hpp"

namespace copysynth {

bool env_word_on(const char* value) {
  for (const char* w : {"1", "yes", "true", "on"})
    if (strcasecmp(value, w) == 0) return true;
  return false;
}

bool env_word_off(const char* value) {
  for (const char* w : {"0", "no", "false", "off"})
    if (strcasecmp(value, w) == 0) return true;
  return false;
}

namespace {

/// COPYSYNTH_PERF_MAP=1 (or yes, true, on: env_word_on): appends "START SIZE name" (hex, no 0x) to /tmp/perf-PID.map for each
/// routine put in executable memory, the format perf(1) reads for JIT code (perf report and
/// perf top look the file up by the process's pid; see tools/perf/Documentation/jit-interface.txt
/// in the Linux tree). Ignored in set-user-ID / set-group-ID programs (AT_SECURE), like
/// COPYSYNTH_WISDOM. One write(2) per line with O_APPEND, so threads and processes do not
/// interleave lines; the file is opened per line (a fork()ed child writes its own file).
void perf_map_add(const void* start, std::size_t size, const std::string& name) {
  const char* v = std::getenv("COPYSYNTH_PERF_MAP");
  if (!v || getauxval(AT_SECURE)) return;
  if (!env_word_on(v)) return;
  char path[64];
  char* p = path;
  const char prefix[] = "/tmp/perf-";
  std::memcpy(p, prefix, sizeof prefix - 1);
  p += sizeof prefix - 1;
  p = std::to_chars(p, path + sizeof path - 5, static_cast<long>(getpid())).ptr;
  std::memcpy(p, ".map", 5);
  const int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return;  // best effort: a profiler aid never stops a routine from being built
  char num[2][17];
  const auto a = std::to_chars(num[0], num[0] + 16, reinterpret_cast<std::uintptr_t>(start), 16);
  const auto b = std::to_chars(num[1], num[1] + 16, size, 16);
  std::string line = std::string(num[0], a.ptr) + ' ' + std::string(num[1], b.ptr) + " copysynth:" + name + '\n';
  [[maybe_unused]] const ssize_t n = write(fd, line.data(), line.size());
  close(fd);
}

}  // namespace

std::string short_name(const CopyParams& p) {
  std::string s = std::string(name_of(p.operation.value)) + "/v" + std::to_string(p.vector_width.value) +
                  "u" + std::to_string(p.unroll.value);
  s += "/pf" + std::to_string(p.prefetch_distance.value);
  if (p.prefetch_distance.value) s += std::string(name_of(p.prefetch_hint.value));
  if (p.prefetch_distance.value && p.prefetch_min.value)  // pf1024t0+32768: from 32 KiB on
    s += '+', s += std::to_string(p.prefetch_min.value);  // not "+" + string: GCC 12 -Wrestrict false positive
  s += "/nt-" + bytes_or_never(p.nt_threshold);
  if (p.nt_threshold.value != kNever && p.nt_width.value) {  // nt-16777216v32
    s += 'v';
    s += std::to_string(p.nt_width.value);
  }
  s += "/rep-" + bytes_or_never(p.rep_threshold);
  if (p.rep_threshold.value != kNever) {
    if (p.rep_unit.value == 8) s += "q";
    if (p.rep_align_dst) s += "a";
    // The band's end and a second band: rep-32768-2097152+16777216.
    if (p.rep_stop.value != kNever) {
      s += '-', s += bytes_or_never(p.rep_stop);
      if (p.rep_resume.value != kNever && p.rep_resume.value > p.rep_stop.value) s += '+', s += bytes_or_never(p.rep_resume);
    }
  }
  s += "/al" + std::to_string(p.loop_align.value) + std::string(name_of(p.nop_form.value));
  if (p.loop_pipeline) s += "/pipe";
  if (p.alias_window.value && !p.loop_pipeline) s += "/alias" + std::to_string(p.alias_window.value);
  if (p.rep_alias_window.value && p.rep_threshold.value != kNever) s += "/repalias" + std::to_string(p.rep_alias_window.value);
  // rep_alias_loop: 4K-aliasing copies below it take the 32-byte loop (aliasloop65536).
  if (p.rep_alias_loop.value != kNever && p.rep_threshold.value != kNever)
    s += "/aliasloop" + std::to_string(p.rep_alias_loop.value);
  if (p.rep_threshold.value != kNever && !p.rep_aligned_only && p.rep_aligned_from.value != kNever &&
      p.operation.value != Operation::kClearPage)
    s += "/repaligned", s += std::to_string(p.rep_aligned_from.value);
  if (p.rep_threshold.value != kNever && p.rep_aligned_mutual &&
      (p.rep_aligned_only || p.rep_aligned_from.value != kNever))  // the test is (dst - src) mod 64
    s += "/repmutual";
  if (p.rep_threshold.value != kNever && p.rep_chunk.value != kNever) {  // rep in pieces: /repchunk2097152
    s += "/repchunk";
    s += std::to_string(p.rep_chunk.value);
    if (p.rep_chunk_stop.value != kNever) {  // one instruction again from 64 MiB: /repchunk2097152-67108864
      s += '-';
      s += std::to_string(p.rep_chunk_stop.value);
    }
  }
  return s;
}

Status jit_available() { return jit::available(); }

Result<Routine> Routine::build(const CopyPlan& plan, const CpuInfo& cpu) {
  return build_with_faults(plan, EmitFaults{}, cpu);
}

Result<Routine> Routine::build_with_faults(const CopyPlan& plan, const EmitFaults& faults, const CpuInfo& cpu) {
  COPYSYNTH_TRY(validate(plan.params, cpu.features()));
  asmjit::CodeHolder code;
  code.init(asmjit::Environment::host());
  asmjit::x86::Assembler a(&code);
  COPYSYNTH_TRY(emit(plan, *a.as<asmjit::x86::Emitter>(), faults));
  Routine r;
  r.plan_ = plan;
  {
    const auto& buf = code.textSection()->buffer();
    r.bytes_.assign(buf.data(), buf.data() + buf.size());
  }
  // What asmjit's JitRuntime::add() does, into copysynth's own code memory (jit_memory.hpp says
  // why): lay the sections out, bind the links, relocate to the final address, copy through the
  // writable view. x86 needs no instruction-cache flush.
  auto asm_error = [](const char* step, asmjit::Error err) {
    return make_error(ErrorCode::kEmitFailed, std::string("asmjit could not ") + step + " the routine: " +
                                                  asmjit::DebugUtils::errorAsString(err) +
                                                  " (a copysynth bug: please report it with the parameters)");
  };
  if (const asmjit::Error err = code.flatten()) return asm_error("lay out", err);
  if (const asmjit::Error err = code.resolveUnresolvedLinks()) return asm_error("link", err);
  auto block = jit::allocate(code.codeSize());
  if (!block) return std::move(block).error();
  if (const asmjit::Error err = code.relocateToBase(reinterpret_cast<std::uintptr_t>(block->rx))) {
    jit::release(*block);
    return asm_error("relocate", err);
  }
  if (const asmjit::Error err = code.copyFlattenedData(block->rw, block->size, asmjit::CopySectionFlags::kPadTargetBuffer)) {
    jit::release(*block);
    return asm_error("copy", err);
  }
  r.fn_ = block->rx;
  r.code_bytes_ = block->size;
  r.chunk_ = block->chunk;
  perf_map_add(r.fn_, r.bytes_.size(), r.name());
  return r;
}

Routine::Routine(Routine&& o) noexcept
    : fn_(o.fn_), code_bytes_(o.code_bytes_), chunk_(o.chunk_), plan_(std::move(o.plan_)), bytes_(std::move(o.bytes_)) {
  o.fn_ = nullptr;
}

Routine& Routine::operator=(Routine&& o) noexcept {
  if (this != &o) {
    release();
    fn_ = o.fn_;
    code_bytes_ = o.code_bytes_;
    chunk_ = o.chunk_;
    plan_ = std::move(o.plan_);
    bytes_ = std::move(o.bytes_);
    o.fn_ = nullptr;
  }
  return *this;
}

Routine::~Routine() { release(); }

void Routine::release() noexcept {
  if (fn_) jit::release(jit::Block{static_cast<std::uint8_t*>(fn_), nullptr, code_bytes_, chunk_});
  fn_ = nullptr;
}

std::string Routine::name() const { return short_name(plan_.params); }

}  // namespace copysynth
