// copysynth — the `.S` writer: a routine as a GNU assembler file (AT&T syntax) for an upstream patch.
//
// The text is not produced by a second generator: write_asm() runs emit() through an
// x86::Assembler (assemble_annotated(), the same bytes as the JIT routine) and disassembles those
// bytes with Zydis's AT&T formatter. emit()'s notes (EmitNote) say where
// loop-head padding lies, what each label is called and what each part does, so the file reads
// like a hand-written one: labels at every branch target, a comment per size class, "At this
// point:" invariants, the padding as `.byte` runs (or the flavour's NOP macros) with a comment.
//
// Byte identity. Assembled with GNU as, the file gives exactly the routine's bytes. For the same
// AT&T text GNU as sometimes picks another encoding than asmjit did; each such choice is pinned
// with a GNU as pseudo-prefix (binutils >= 2.31 for all of them):
//   {disp32}  a rel32 branch whose target is in rel8 range (as relaxes branches to the short form
//             when it can; asmjit emits forward branches to unbound labels as rel32), and a
//             32-bit memory displacement that would fit in 8 bits;
//   {disp8}   a zero 8-bit displacement (as drops it: `0x0(%rsi)` assembles as `(%rsi)`);
//   {vex3}    a 3-byte VEX prefix where the 2-byte form would do;
//   {load} / {store}  a register-to-register instruction that has both a load (reg <- r/m) and a
//             store (r/m <- reg) form, e.g. `mov`, `sub`, `vmovdqu`: the form the bytes use.
// tests/test_asm.cpp assembles a grid of plans with `as` and compares `.text` byte for byte.
//
// Flavours (Linux, glibc, plain GAS) are skeletons supplied by templates/ (asm_flavors.hpp): how
// the function is opened and closed, how local labels and `ret` are spelled, which NOP macros
// exist. The generator never executes code; writing a file for a CPU other than the host needs
// nothing but the plan.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "copysynth/emit.hpp"
#include "copysynth/plan.hpp"
#include "copysynth/result.hpp"

namespace copysynth {

/// The frame of a `.S` file for one toolchain. Placeholders in the strings: `{name}` the symbol,
/// `{p2align}` log2 of the function's alignment in bytes (>= 4, and >= log2(loop_align) so that
/// the loop heads the padding aligns are aligned in the object too), `{align}` that alignment in
/// bytes, `{entry_skip}` that alignment less `entry_bytes`, `{label}` a local label's name.
struct AsmFlavor {
  std::string name;       ///< "linux", "glibc", "plain"
  std::string prologue;   ///< text from the first line after the header comment to the function's
                          ///< entry (includes, section, alignment, the symbol)
  std::string epilogue;   ///< text after the last byte (symbol size, end macro)
  std::string label;      ///< how a local label is written, e.g. ".L{label}" or "L({label})"
  std::string ret;        ///< how `ret` is written, e.g. "ret" or "RET" (the kernel's macro)
  /// When non-empty, each long NOP of 1..8 bytes (NopForm::kLongNop: the Intel SDM / Linux P6
  /// forms of nops.hpp) is written as this macro with `{n}` = its length, e.g. "ASM_NOP{n}";
  /// other padding is written as `.byte` runs.
  std::string nop_macro;
  std::vector<std::string> notes;  ///< lines for the header comment: what the flavour assumes
  /// Bytes the prologue puts between the symbol and the routine's first byte: 4 for the plain
  /// flavour's `endbr64` (Intel CET), which it places at `{align}` - 4 (placeholder
  /// `{entry_skip}`: the int3 padding before it) so that the routine itself starts on the
  /// alignment boundary; 0 where the symbol is the routine's first byte. The `.text` of an
  /// assembled file is then `{entry_skip}` int3, the entry bytes, and exactly the JIT routine.
  unsigned entry_bytes = 0;
};

/// What goes into a file besides the code.
struct AsmOptions {
  std::string symbol;                ///< the function's name; check_asm_symbol() says which
  std::string label_prefix;          ///< prepended to every local label's name, e.g. "memcpy."
                                     ///< when several routines share one file; empty: none
  std::vector<std::string> header;   ///< extra header-comment lines (CPU tuned on, target,
                                     ///< verification, the command line), in order
};

/// A written file and what it holds.
struct AsmText {
  std::string text;             ///< the whole `.S` file
  std::size_t code_bytes = 0;   ///< bytes of machine code it assembles to (== assemble(plan) size)
  std::size_t instructions = 0; ///< instructions written (padding excluded)
  std::size_t padding_runs = 0; ///< loop-head padding runs written
  std::size_t pinned = 0;       ///< instructions that needed a pseudo-prefix to keep their encoding
};

/// Writes `plan` as a GNU as file in `flavor`: a header comment (the algorithm — the size
/// ladder in words —, the parameters, the ISA extensions the code uses, then `opt.header`), the
/// flavour's prologue, every instruction of assemble(plan) in AT&T syntax with labels at branch
/// targets, padding as `.byte` runs or NOP macros, and the epilogue.
/// Errors: check_plan()'s; check_asm_symbol()'s for `opt.symbol`;
/// kEmitFailed when the bytes do not decode or a branch lands inside an instruction (a copysynth
/// bug: report the params).
Result<AsmText> write_asm(const CopyPlan& plan, const AsmFlavor& flavor, const AsmOptions& opt);

/// `s` made safe as one line inside a C comment: control characters but tab written in caret
/// notation (newline as ^J, CR as ^M: the preprocessor takes a lone CR for a newline, and a
/// backslash before a line break joins the lines, so `*\` CR `/` would end the comment; a
/// newline would start a header line of its own), the C1 controls and the bidirectional
/// overrides and isolates in UTF-8 as <U+XXXX>, every `*/` (which would end it) written `* /`
/// and every `/*` (clang's -Wcomment) `/ *`. write_asm()
/// passes its header lines and notes through it; other writers of comments in .S files do too.
std::string comment_safe(std::string s);

/// The one rule for the routine's symbol name (write_asm() applies it, and `autotune --name`
/// before any work): a name GNU as takes as a symbol in a `.S` file of `flavor` —
///   - ASCII letters, digits, '_', '.' and '$', not empty;
///   - not starting with a digit (as reads a number) or with '$' (AT&T syntax reads an
///     immediate, so no instruction could name the symbol), not "." (the location counter), not
///     starting with ".L" (as's local labels; the file's own labels use them);
///   - not a name gcc's or clang's preprocessor predefines on x86-64 Linux without a -march
///     (Debian 12's gcc 12 and clang 14: `linux`, `unix`, `__linux`, `__unix`, `__x86_64`,
///     `__amd64`, `__k8`, `_LP64`, `__SEG_FS`, `__SEG_GS`, `__seg_fs`, `__seg_gs`,
///     `_STDC_PREDEF_H`, `__GXX_ABI_VERSION`, `__HAVE_SPECULATION_SAFE_VALUE`,
///     `__PRAGMA_REDEFINE_EXTNAME`, `__NO_MATH_INLINES`, `__OBJC_BOOL_IS_BOOL`, `__ATOMIC_*`,
///     `__GCC_*`, `__GNUC_*`, `__CLANG_*`, `__OPENCL_*`, any `__NAME__`): the linux and glibc
///     files go through it first, and a plain one under `gcc -c`. Names a -march or a newer
///     compiler adds (`__znver4`, `__tune_...`) are not checked. In a flavour whose frame
///     includes headers, not its own `ret` macro (`RET`).
/// Errors: kInvalidArgument with a message that quotes the name, says why it is refused and what
/// a valid name looks like, starting `"NAME" is not a symbol GNU as takes`.
Status check_asm_symbol(const std::string& symbol, const AsmFlavor& flavor);

/// The body alone — instructions, labels, padding and comments, no header or frame — for any
/// x86-64 code (entry at offset 0, `code.notes` may be empty): what write_asm() puts between the
/// flavour's prologue and epilogue. Branch targets without a note are labelled `x<hex offset>`.
/// Errors: kInvalidArgument when the bytes do not decode or a branch leaves the code or lands
/// inside an instruction.
Result<AsmText> asm_body(const AnnotatedCode& code, const AsmFlavor& flavor, const std::string& label_prefix = {});

}  // namespace copysynth
