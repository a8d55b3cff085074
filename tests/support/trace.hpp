// copysynth tests — which instructions a routine executes in one call, by single-stepping it.
//
// The x86 trap flag (EFLAGS.TF, bit 8) makes the CPU raise a debug exception after every
// instruction; Linux delivers it as SIGTRAP with the next instruction's address in the signal
// context (Intel SDM Vol. 3, "Single-Step Exception Condition"; a rep string instruction traps
// after each iteration, with the address of the rep instruction itself). The handler decodes
// the instruction at that address in the routine's bytes (Zydis, Debian libzydis-dev) and notes
// whether it is a rep string move or store, a non-temporal store or a prefetch. It clears TF
// (in the saved context, so sigreturn restores it cleared) at the first rep or non-temporal store,
// after `max_instructions` inside the routine, or when control is back outside the routine after
// having been inside: the rest of the call then runs at full speed.
//
// A caller that never reaches the routine stops being traced after 100000 traps. Not
// thread-safe (one SIGTRAP handler per process, installed for the call and restored after);
// meant for single-threaded test code.
#pragma once

#include <Zydis/Zydis.h>
#include <signal.h>
#include <ucontext.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "copysynth/routine.hpp"

namespace copysynth::test {

/// What one call of a routine executed (only the part traced: see ExecutedCode::complete).
struct ExecutedCode {
  bool rep = false;           ///< a rep movs/stos (any unit) ran
  bool non_temporal = false;  ///< a non-temporal store (movnti, (v)movntdq, (v)movntps/pd) ran
  bool prefetch = false;      ///< a prefetch instruction ran
  std::size_t instructions = 0;  ///< instructions traced inside the routine
  /// Instructions traced with an explicit memory operand: loads and stores, masked or not (a
  /// zero mask still counts: the access is issued); not lea, nor the implicit operands of ret,
  /// push, movs and stos.
  std::size_t memory_accesses = 0;
  std::size_t undecoded = 0;  ///< traced instructions Zydis could not decode (nothing counted for them)
  std::size_t first_marker = 0;  ///< 1-based number of the first rep, non-temporal store or prefetch (0: none)
  /// rcx as the first rep string instruction began: its count of elements (bytes, or qwords for
  /// movsq/stosq); 0 when none ran. One piece's count where the rep class runs in pieces.
  std::uint64_t first_rep_count = 0;
  /// The widest store traced (bytes of its memory operand, masked or not): 32 in a loop of
  /// 32-byte vectors, 64 in one of zmm moves; 0 when none ran.
  unsigned widest_store = 0;
  bool complete = false;      ///< traced up to the return (no early stop)
};

namespace trace_detail {

struct State {
  std::uintptr_t base = 0;
  const std::uint8_t* code = nullptr;
  std::size_t size = 0;
  std::size_t max_instructions = 0;
  std::size_t outside = 0;  // traps before the routine was entered (the caller's few instructions)
  bool entered = false;
  bool stopped = false;
  ExecutedCode seen;
  ZydisDecoder decoder;
};

inline State* g_state = nullptr;

inline bool is_rep_string(const ZydisDecodedInstruction& in) {
  if (!(in.attributes & ZYDIS_ATTRIB_HAS_REP)) return false;
  switch (in.mnemonic) {
    case ZYDIS_MNEMONIC_MOVSB: case ZYDIS_MNEMONIC_MOVSW: case ZYDIS_MNEMONIC_MOVSD: case ZYDIS_MNEMONIC_MOVSQ:
    case ZYDIS_MNEMONIC_STOSB: case ZYDIS_MNEMONIC_STOSW: case ZYDIS_MNEMONIC_STOSD: case ZYDIS_MNEMONIC_STOSQ:
      return true;
    default: return false;
  }
}

inline bool is_non_temporal_store(ZydisMnemonic m) {
  switch (m) {
    case ZYDIS_MNEMONIC_MOVNTI: case ZYDIS_MNEMONIC_MOVNTDQ: case ZYDIS_MNEMONIC_VMOVNTDQ:
    case ZYDIS_MNEMONIC_MOVNTPS: case ZYDIS_MNEMONIC_VMOVNTPS: case ZYDIS_MNEMONIC_MOVNTPD:
    case ZYDIS_MNEMONIC_VMOVNTPD:
      return true;
    default: return false;
  }
}

inline bool is_prefetch(ZydisMnemonic m) {
  switch (m) {
    case ZYDIS_MNEMONIC_PREFETCHT0: case ZYDIS_MNEMONIC_PREFETCHT1: case ZYDIS_MNEMONIC_PREFETCHT2:
    case ZYDIS_MNEMONIC_PREFETCHNTA: case ZYDIS_MNEMONIC_PREFETCHW:
      return true;
    default: return false;
  }
}

inline void on_trap(int, siginfo_t*, void* context) {
  State& s = *g_state;
  auto* uc = static_cast<ucontext_t*>(context);
  const auto rip = static_cast<std::uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]);
  bool stop = false;
  if (rip - s.base < s.size) {
    s.entered = true;
    ++s.seen.instructions;
    const std::size_t off = rip - s.base;
    ZydisDecoderContext ctx;
    ZydisDecodedInstruction in;
    if (ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&s.decoder, &ctx, s.code + off, s.size - off, &in))) {
      if (!s.seen.rep && is_rep_string(in))
        s.seen.first_rep_count = static_cast<std::uint64_t>(uc->uc_mcontext.gregs[REG_RCX]);
      s.seen.rep = s.seen.rep || is_rep_string(in);
      s.seen.non_temporal = s.seen.non_temporal || is_non_temporal_store(in.mnemonic);
      s.seen.prefetch = s.seen.prefetch || is_prefetch(in.mnemonic);
      if (!s.seen.first_marker && (s.seen.rep || s.seen.non_temporal || s.seen.prefetch))
        s.seen.first_marker = s.seen.instructions;
      ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
      if (ZYAN_SUCCESS(ZydisDecoderDecodeOperands(&s.decoder, &ctx, &in, ops, in.operand_count_visible)))
        for (std::size_t i = 0; i < in.operand_count_visible; ++i)
          if (ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY && ops[i].mem.type == ZYDIS_MEMOP_TYPE_MEM) {
            ++s.seen.memory_accesses;
            if (ops[i].actions & ZYDIS_OPERAND_ACTION_MASK_WRITE)
              s.seen.widest_store = std::max(s.seen.widest_store, static_cast<unsigned>(ops[i].size / 8));
            break;
          }
    } else {
      ++s.seen.undecoded;
    }
    stop = s.seen.rep || s.seen.non_temporal || s.seen.instructions >= s.max_instructions;
    s.stopped = s.stopped || stop;
  } else {
    // Back in the caller (the call returned), or a caller that never reaches the routine.
    stop = s.entered || ++s.outside > 100000;
  }
  if (stop) uc->uc_mcontext.gregs[REG_EFL] &= ~static_cast<greg_t>(0x100);
}

// Sets TF, makes the call, clears TF. The 128 bytes below rsp are the System V red zone, which
// pushfq would otherwise overwrite.
#define COPYSYNTH_TF_ON() asm volatile("lea -128(%%rsp), %%rsp\n\tpushfq\n\torq $0x100, (%%rsp)\n\tpopfq\n\tlea 128(%%rsp), %%rsp" ::: "memory")
#define COPYSYNTH_TF_OFF() asm volatile("lea -128(%%rsp), %%rsp\n\tpushfq\n\tandq $-257, (%%rsp)\n\tpopfq\n\tlea 128(%%rsp), %%rsp" ::: "memory")

[[gnu::noinline]] inline void* call_traced(const void* entry, void* dst, const void* src_or_c, std::size_t n) {
  using Fn = void* (*)(void*, const void*, std::size_t);
  const Fn f = reinterpret_cast<Fn>(const_cast<void*>(entry));
  COPYSYNTH_TF_ON();
  void* r = f(dst, src_or_c, n);
  COPYSYNTH_TF_OFF();
  return r;
}

#undef COPYSYNTH_TF_ON
#undef COPYSYNTH_TF_OFF

}  // namespace trace_detail

/// Calls `r` once (memcpy/memmove: (dst, src, n); fill: (dst, fill byte, n)) with the trap flag
/// set and returns what it executed, tracing at most `max_instructions` instructions inside the
/// routine. Returns with ExecutedCode::instructions == 0 where the system delivers no single-step
/// traps (a debugger holding them); the caller should then skip, not fail.
inline ExecutedCode trace_call(const Routine& r, void* dst, const void* src, int c, std::size_t n,
                               std::size_t max_instructions = 2000) {
  trace_detail::State s;
  s.base = reinterpret_cast<std::uintptr_t>(r.entry());
  s.code = r.bytes().data();
  s.size = r.bytes().size();
  s.max_instructions = max_instructions;
  ZydisDecoderInit(&s.decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
  struct sigaction sa {}, old {};
  sa.sa_sigaction = trace_detail::on_trap;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  trace_detail::g_state = &s;
  sigaction(SIGTRAP, &sa, &old);
  if (r.operation() == Operation::kFill)
    trace_detail::call_traced(r.entry(), dst, reinterpret_cast<const void*>(static_cast<std::intptr_t>(c)), n);
  else
    trace_detail::call_traced(r.entry(), dst, src, n);
  std::atomic_signal_fence(std::memory_order_seq_cst);  // the handler's writes to `s`, seen here
  sigaction(SIGTRAP, &old, nullptr);
  trace_detail::g_state = nullptr;
  s.seen.complete = s.entered && !s.stopped;
  return s.seen;
}

}  // namespace copysynth::test
