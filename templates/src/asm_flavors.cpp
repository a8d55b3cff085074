// copysynth — the `.S` flavour skeletons (see asm_flavors.hpp).
#include "copysynth/asm_flavors.hpp"

namespace copysynth {

std::vector<std::string> asm_flavor_names() { return {"linux", "glibc", "plain"}; }

Result<AsmFlavor> asm_flavor(const std::string& name) {
  AsmFlavor f;
  f.name = name;
  if (name == "linux") {
    f.prologue =
        "#include <linux/linkage.h>\n"
        "#include <asm/nops.h>\n"
        "\n"
        "\t.section .text, \"ax\"\n"
        "\t.p2align {p2align}\n"
        "SYM_FUNC_START({name})\n";
    f.epilogue = "SYM_FUNC_END({name})\n";
    f.label = ".L{label}";
    f.ret = "RET";
    f.nop_macro = "ASM_NOP{n}";
    f.notes = {
        "Linux flavour: SYM_FUNC_START/SYM_FUNC_END (linux/linkage.h), RET (return thunks),",
        "ASM_NOPn (asm/nops.h). Add EXPORT_SYMBOL({name}) if modules call it. The kernel uses",
        "vector registers only between kernel_fpu_begin() and kernel_fpu_end(): a drop-in",
        "arch/x86/lib routine needs a vector_width = 8 plan (GPRs and rep movs/stos).",
        "Byte identity holds with SYM_FUNC_START adding no endbr64 and no padding and RET being",
        "ret; with CONFIG_X86_KERNEL_IBT (endbr64), CONFIG_CALL_PADDING (16 bytes before the",
        "entry), CONFIG_RETHUNK (RET a jump) or the straight-line-speculation mitigation (RET is",
        "ret; int3) the code stays correct but the loop heads move off the alignment the padding",
        "gives (check with objdump -d). Assemble without as -O, which shortens some instructions.",
    };
  } else if (name == "glibc") {
    f.prologue =
        "#include <sysdep.h>\n"
        "\n"
        "\t.section .text, \"ax\", @progbits\n"
        "ENTRY_P2ALIGN ({name}, {p2align})\n";
    f.epilogue = "END ({name})\n";
    f.label = "L({label})";
    f.ret = "ret";
    f.notes = {
        "glibc flavour: ENTRY_P2ALIGN/END and L() from sysdep.h (ENTRY_P2ALIGN: glibc 2.35 and",
        "later; older trees: ENTRY with a .p2align {p2align} before it). Byte identity holds with",
        "ENTRY adding no endbr64; with CET (_CET_ENDBR: Debian's glibc is built with it) the code",
        "stays correct but the loop heads move 4 bytes off the alignment the padding gives (check",
        "with objdump -d). Assemble without as -O, which shortens some instructions.",
    };
  } else if (name == "plain") {
    // Intel CET: the entry is an `endbr64` (IBT: the one instruction an indirect call or jump may
    // land on; a NOP on CPUs without CET), placed in the 4 bytes before the alignment boundary so
    // that the routine's own bytes start on it, as the JIT routine does; the padding before it is
    // int3. The property note marks the object IBT- and shadow-stack-compatible (the routine
    // makes no indirect branch and no call), so linking it into a library built with
    // -fcf-protection keeps CET on (GNU ld ANDs the notes of all inputs; without this one it
    // would turn CET off silently, or fail under -z cet-report=error). The note is written out
    // rather than taken from gcc's <cet.h>, so that `as FILE` alone gives the same object.
    // Unwind information (.cfi_startproc/.cfi_endproc, an .eh_frame entry): the routine never
    // changes rsp (the static checks refuse code that does), so the entry's rule, the return
    // address at the CFA - 8, holds at every instruction, and a debugger or backtrace() passes
    // through the routine to its caller (without it, backtrace() from a fault inside stopped there).
    f.prologue =
        "\t.text\n"
        "\t.p2align {p2align}, 0xcc\n"
        "\t.skip {entry_skip}, 0xcc\n"
        "\t.globl {name}\n"
        "\t.type {name}, @function\n"
        "{name}:\n"
        "\t.cfi_startproc\n"
        "\tendbr64\n";
    f.epilogue = "\t.cfi_endproc\n\t.size {name}, .-{name}\n" + std::string(cet_property_note());
    f.label = ".L{label}";
    f.ret = "ret";
    f.entry_bytes = 4;
    f.notes = {"Plain GNU as: `as FILE` or `gcc -c FILE` makes an object; link it with any program.",
               "Intel CET: {name} is an endbr64 in the 4 bytes before a {align}-byte boundary; the routine",
               "(exactly the JIT routine's bytes) starts on the boundary; the .note.gnu.property marks",
               "the object IBT and SHSTK compatible (readelf -n), so -fcf-protection links keep CET.",
               "CFI: the routine never moves rsp, so .cfi_startproc/.cfi_endproc are its whole unwind table.",
               "Assemble without as -O, which shortens some instructions (the same code, other bytes)."};
  } else {
    return make_error(ErrorCode::kInvalidArgument,
                      "unknown .S flavour \"" + name + "\": use linux, glibc or plain");
  }
  return f;
}

std::string default_asm_symbol(Operation op) {
  switch (op) {
    case Operation::kMemcpy: return "memcpy_copysynth";
    case Operation::kMemmove: return "memmove_copysynth";
    case Operation::kFill: return "memset_copysynth";
    case Operation::kClearPage: return "clear_page_copysynth";
  }
  return "copysynth_routine";
}

std::string_view cet_property_note() {
  return "\t.section .note.GNU-stack, \"\", @progbits\n"
         "\t.section .note.gnu.property, \"a\"\n"
         "\t.p2align 3\n"
         "\t.long 4, 16, 5\t/* n_namesz, n_descsz, NT_GNU_PROPERTY_TYPE_0 */\n"
         "\t.asciz \"GNU\"\n"
         "\t.long 0xc0000002, 4, 3\t/* GNU_PROPERTY_X86_FEATURE_1_AND, 4 bytes: IBT | SHSTK */\n"
         "\t.p2align 3\n";
}

}  // namespace copysynth
