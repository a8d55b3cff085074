// copysynth — turning a CopyPlan into x86-64 machine code.
//
// `emit()` is the single place where instructions are chosen. It is written against
// `asmjit::x86::Emitter`, so the same code feeds the JIT (an `x86::Assembler` on a JitRuntime's
// CodeHolder) and the tests and `.S` writer (an `x86::Assembler` on a plain x86-64 CodeHolder) —
// the pattern of asmjit's test/asmjit_test_emitters.cpp (`makeRawFunc(x86::Emitter*)`).
//
// The emitted function follows the SysV x86-64 ABI for its operation (params.hpp, Operation):
// rdi = dst, rsi = src (or the fill byte), rdx = n (all 64 bits used); returns dst in rax. It
// only writes caller-saved registers (rax, rcx, rdx, rsi, rdi, r8-r11, vector registers 0-15),
// never changes the direction flag, and executes `vzeroupper` before every `ret` reached after
// a YMM/ZMM instruction and `sfence` after non-temporal stores.
#pragma once

#include <asmjit/x86.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "copysynth/plan.hpp"

namespace copysynth {

/// Faults emit() can inject on purpose, so that tests can show that the verification suite
/// catches each kind of bug real memcpy implementations have shipped. Never set outside tests.
struct EmitFaults {
  bool over_read = false;            ///< head/tail: the tail load starts 1 byte late (reads src[n])
  bool skip_sfence = false;          ///< no sfence after non-temporal stores
  bool skip_vzeroupper = false;      ///< no vzeroupper before ret after YMM/ZMM use
  bool wrong_overlap_order = false;  ///< memmove: head/tail stores before all loads; loop never backward
  bool truncate_length = false;      ///< `mov edx, edx` at entry: n loses bits 32..63
  bool any() const { return over_read || skip_sfence || skip_vzeroupper || wrong_overlap_order || truncate_length; }
};

/// What emit() knows about the code besides its bytes, for readers of the code (the `.S` writer,
/// generator/asm_writer.hpp): which byte ranges are loop-head padding rather than instructions,
/// a name for every label it binds, and comments saying what each part does. Recording notes
/// never changes a byte. Offsets are bytes from the first byte emit() wrote; notes are in
/// emission order, so offsets never decrease.
struct EmitNote {
  enum class Kind : std::uint8_t {
    kPadding,  ///< [offset, offset + length) is nop_padding(form, length); never executed as code
               ///< except as the NOPs themselves (or the jump over int3)
    kLabel,    ///< a label named `text` (e.g. "loop", "len_33_64") is bound at `offset`
    kComment,  ///< `text` describes the code from `offset` on (one line, no comment markers)
  };
  Kind kind = Kind::kComment;
  std::size_t offset = 0;
  std::size_t length = 0;        ///< kPadding: bytes
  NopForm form = NopForm::kSingleByte;  ///< kPadding: the form of the bytes
  std::string text;              ///< kLabel: the name (not unique: one per binding site); kComment
};

/// Emits the routine for `plan` at the emitter's current position. The plan must pass
/// check_plan() (emit checks it and returns its error). Loop-head padding is computed from the
/// current offset, so `e` must be an `x86::Assembler` when loop_align > 1 (kInvalidArgument
/// otherwise). Encoding failures are returned as kEmitFailed with asmjit's message. With
/// `notes`, appends what EmitNote describes; notes need byte offsets, so they are recorded only
/// when `e` is an `x86::Assembler` (nothing is appended otherwise).
Status emit(const CopyPlan& plan, asmjit::x86::Emitter& e, const EmitFaults& faults = {},
            std::vector<EmitNote>* notes = nullptr);

/// The machine code of `plan` for a generic x86-64 target, starting at offset 0 (all branches
/// are relative, so the bytes are position independent). With `listing`, also fills in asmjit's
/// Intel-syntax listing of the same bytes. The target ISA is not checked here: validate the
/// params against the target first (make_plan does).
Result<std::vector<std::uint8_t>> assemble(const CopyPlan& plan, std::string* listing = nullptr,
                                           const EmitFaults& faults = {});

/// The bytes of assemble(plan) together with emit()'s notes about them.
struct AnnotatedCode {
  std::vector<std::uint8_t> bytes;  ///< exactly assemble(plan)'s bytes
  std::vector<EmitNote> notes;      ///< offsets into `bytes`
};

/// assemble() that also keeps emit()'s notes (padding ranges, label names, comments). Same errors.
Result<AnnotatedCode> assemble_annotated(const CopyPlan& plan);

}  // namespace copysynth
