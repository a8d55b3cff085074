// copysynth — `.S` flavour skeletons: how a routine is framed for the Linux kernel, for glibc and
// for a plain GNU as / gcc build (the generator's writer, asm_writer.hpp, fills in the code).
//
//   linux  `#include <linux/linkage.h>` and `<asm/nops.h>`, `SYM_FUNC_START(name)` /
//          `SYM_FUNC_END(name)`, `.L` local labels, `RET` for ret (the kernel's return-thunk
//          macro), long-NOP padding as `ASM_NOPn` (arch/x86/include/asm/nops.h: BYTES_NOP1..8
//          are the same P6 NOPs as nops.hpp's long form) — the shape of arch/x86/lib/memcpy_64.S.
//   glibc  `#include <sysdep.h>`, `ENTRY_P2ALIGN (name, p2align)` / `END (name)`, `L(label)` local
//          labels — the shape of sysdeps/x86_64/multiarch/memmove-vec-unaligned-erms.S.
//   plain  `.globl`, `.type name, @function`, `.p2align`, `.cfi_startproc`/`.cfi_endproc`, `.size`,
//          `.note.GNU-stack`: assembles with `as` alone and links with plain `gcc`.
// Each opens the function aligned to max(16, loop_align) bytes, so the loop heads the padding
// aligns relative to the function's first byte are aligned in the object too.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "copysynth/asm_writer.hpp"
#include "copysynth/params.hpp"

namespace copysynth {

/// The flavour named `name` ("linux", "glibc" or "plain"). kInvalidArgument names the three.
Result<AsmFlavor> asm_flavor(const std::string& name);

/// "linux", "glibc", "plain".
std::vector<std::string> asm_flavor_names();

/// The symbol a file gets without --name: the C name of the operation with a "_copysynth" suffix
/// ("memcpy_copysynth", "memmove_copysynth", "memset_copysynth", "clear_page_copysynth"), so a
/// file linked into a program never replaces the C library's routine by accident.
std::string default_asm_symbol(Operation op);

/// GNU as text that marks an object as CET-ready and its stack not executable: an empty
/// `.note.GNU-stack` section and a `.note.gnu.property` note with
/// GNU_PROPERTY_X86_FEATURE_1_AND = IBT | SHSTK (x86-64 psABI, "Program Property"), written out
/// so that `as` alone produces it. The plain flavour's epilogue ends with it; the ahead-of-time
/// library's objects too.
std::string_view cet_property_note();

}  // namespace copysynth
