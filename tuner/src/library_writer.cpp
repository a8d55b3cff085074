// copysynth — the .S file and ahead-of-time library writers (see library_writer.hpp for what the
// library holds).
//
// Why not GNU IFUNC (as glibc's multiarch string functions and AMD AOCL-LibMem's
// src/libmem_ifunc_dispatcher.c dispatch): a preloaded library is relocated after the libraries
// loaded behind it, and glibc's dynamic loader prints "Relink `liblzma.so.5' with
// `libcopysynth-tuned.so' for IFUNC symbol `memcpy'" on stderr for every BIND_NOW library that
// binds an IFUNC of a library not yet relocated (sysdeps/x86_64/dl-machine.h), which changes the
// output of programs such as xz and zstd on Debian. So each export is an ordinary function: one
// load of a .bss word, a compare and a direct jump to the routine chosen at the first call, which
// needs no relocation and is valid from the first instruction of the process.
// CPUID and XCR0 rules: Intel SDM vol. 1, 13.3 and 15.2 (the OS must enable the AVX / AVX-512
// state in XCR0 before those instructions may run), vol. 2, CPUID (leaf 1 family/model
// encoding). The GNU property note: the x86-64 psABI, "Program Property"
// (GNU_PROPERTY_X86_FEATURE_1_AND, IBT = bit 0, SHSTK = bit 1). ELF layout: <elf.h>.
#include "copysynth/library_writer.hpp"

#include <elf.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <sstream>
#include <tuple>

#include "copysynth/asm_flavors.hpp"
#include "copysynth/asm_writer.hpp"
#include "copysynth/c_format.hpp"
#include "copysynth/file_io.hpp"
#include "copysynth/interrupt.hpp"
#include "copysynth/peers.hpp"
#include "copysynth/report.hpp"
#include "copysynth/static_check.hpp"
#include "copysynth/ladders.hpp"
#include "copysynth/routine.hpp"
#include "copysynth/version.h"

extern char** environ;

namespace copysynth {

namespace {

namespace fs = std::filesystem;

/// One routine of the library: the tuned one or the built-in of an operation.
struct LibRoutine {
  Operation op;
  bool tuned = false;
  std::string symbol;               // __copysynth_tuned_memcpy, __copysynth_baseline_memcpy, ...
  CopyPlan plan;
  std::vector<std::uint8_t> bytes;  // the verified code
};


std::string hex32(std::uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%08x", v);
  return b;
}

// ----- the CPU guard ----------------------------------------------------------------------------

/// What the guard compares: CPUID leaf 0 vendor, leaf 1 EAX family/model fields, and for each
/// register of leaves 1, 7.0 and 0x80000001 the bits that must be set; XCR0 bits that must be set.
struct GuardSpec {
  std::uint32_t vendor[3] = {0, 0, 0};  // EBX, EDX, ECX of leaf 0
  std::uint32_t fm_mask = 0, fm = 0;    // leaf 1 EAX & fm_mask == fm
  std::uint32_t l1_ecx = 0, l1_edx = 0, l7_ebx = 0, l7_edx = 0, e1_ecx = 0;
  std::uint32_t xcr0 = 0;
};

Result<GuardSpec> guard_spec(const std::string& signature) {
  auto sig = parse_cpu_signature(signature);
  if (!sig)
    return make_error(ErrorCode::kInvalidArgument, quoted_bytes(signature) +
                                                       " is not a CPU signature (VENDOR-FAMILY-MODEL:features, as "
                                                       "autotune --show prints this_cpu.signature)");
  GuardSpec g;
  if (sig->vendor.size() != 12)
    return make_error(ErrorCode::kInvalidArgument, "the CPU vendor " + quoted_bytes(sig->vendor) +
                                                       " is not a 12-character CPUID vendor string "
                                                       "(AuthenticAMD, GenuineIntel, ...)");
  std::memcpy(&g.vendor[0], sig->vendor.data() + 0, 4);
  std::memcpy(&g.vendor[1], sig->vendor.data() + 4, 4);
  std::memcpy(&g.vendor[2], sig->vendor.data() + 8, 4);
  // Leaf 1 EAX: stepping [3:0], model [7:4], family [11:8], extended model [19:16], extended
  // family [27:20]. Family = base + extended when base is 0xF; model = extended << 4 | base when
  // the base family is 6 or 0xF (as CpuInfo::detect decodes them).
  const unsigned family = sig->family, model = sig->model;
  if (family > 0xF + 0xFF || model > 0xFF)
    return make_error(ErrorCode::kInvalidArgument, "CPU family " + std::to_string(family) + " model " +
                                                       std::to_string(model) + " cannot be encoded in CPUID");
  const unsigned base_family = family >= 0xF ? 0xF : family;
  const unsigned ext_family = family >= 0xF ? family - 0xF : 0;
  const bool ext_model = base_family == 0x6 || base_family == 0xF;
  if (!ext_model && model > 0xF)
    return make_error(ErrorCode::kInvalidArgument, "CPU family " + std::to_string(family) + " has no model " +
                                                       std::to_string(model) + " (4-bit models)");
  g.fm_mask = 0x0FF00FF0u | (ext_model ? 0x000F0000u : 0u);
  g.fm = (ext_family << 20) | (base_family << 8) | ((model & 0xF) << 4) | (ext_model ? (model >> 4) << 16 : 0);
  for (const std::string& f : sig->features) {
    if (f == "sse2") g.l1_edx |= 1u << 26;
    else if (f == "avx") g.l1_ecx |= (1u << 28) | (1u << 27), g.xcr0 |= 0x6;  // AVX, OSXSAVE; XMM|YMM
    else if (f == "avx2") g.l7_ebx |= 1u << 5;
    else if (f == "avx512f") g.l7_ebx |= 1u << 16, g.l1_ecx |= 1u << 27, g.xcr0 |= 0xE6;  // opmask, ZMM
    else if (f == "avx512bw") g.l7_ebx |= 1u << 30;
    else if (f == "avx512vl") g.l7_ebx |= 1u << 31;
    else if (f == "bmi2") g.l7_ebx |= 1u << 8;
    else if (f == "erms") g.l7_ebx |= 1u << 9;
    else if (f == "fsrm") g.l7_edx |= 1u << 4;
    else if (f == "prefetchw") g.e1_ecx |= 1u << 8;
    else
      return make_error(ErrorCode::kInvalidArgument, "the CPU signature " + quoted_bytes(signature) +
                                                         " names a feature this copysynth does not know: " +
                                                         quoted_bytes(f));
  }
  return g;
}

/// `and $mask, %reg; cmp $mask, %reg; jne <no>` for a non-zero mask.
void require_bits(std::ostringstream& o, std::uint32_t mask, const char* reg, const char* what) {
  if (!mask) return;
  o << "\tandl $" << hex32(mask) << ", %" << reg << "\t/* " << what << " */\n"
    << "\tcmpl $" << hex32(mask) << ", %" << reg << "\n"
    << "\tjne .Lforeign\n";
}

/// The guard, as one GNU as file (guard.S): copysynth_tuned_active, the first call's CPU check
/// the exported routines call (__copysynth_decide, hidden) and the word that keeps its answer
/// (__copysynth_cpu_state, hidden). Each exported function is in a file of its own (entry_asm):
/// a program that defines memcpy itself can still take memmove, or __memcpy_chk, from the
/// archive.
/// Every function has unwind information (.cfi_*: an .eh_frame entry), so that a debugger, a
/// profiler's unwinder or backtrace() can walk through it, as through glibc's string functions.
/// `header`: lines already safe inside a C comment (each field through comment_safe).
std::string guard_asm(const GuardSpec& g, const std::string& signature, const std::string& header) {
  std::ostringstream o;
  o << "/* copysynth-tuned: the CPU guard of the exported routines.\n"
    << "   The guard accepts " << comment_safe(signature) << ".\n"
    << header << "*/\n\n";
  o << "\t.text\n"
       "\t.p2align 4\n"
       "/* int copysynth_tuned_active(void): 1 when this CPU is the one the routines were tuned for\n"
       "   (the tuned routines serve the calls), 0 otherwise (the built-in SSE2 routines do). The\n"
       "   first call checks and keeps the answer in its own .bss word (0 unknown, 1 another CPU,\n"
       "   2 the CPU tuned for); it calls nothing and needs no relocation, so any code may reach it\n"
       "   at any time, even while the dynamic loader is still relocating. */\n"
       "\t.globl copysynth_tuned_active\n"
       "\t.type copysynth_tuned_active, @function\n"
       "copysynth_tuned_active:\n"
       "\t.cfi_startproc\n"
       "\tendbr64\n"
       ".Lactive:\n"
       "\tmovl __copysynth_cpu_state(%rip), %eax\n"
       "\ttestl %eax, %eax\n"
       "\tjz .Lcheck\n"
       "\tdecl %eax\n"
       "\tret\n"
       ".Lcheck:\n"
       "\tpushq %rbx\n"
       "\t.cfi_adjust_cfa_offset 8\n"
       "\t.cfi_rel_offset %rbx, 0\n"
       "\txorl %r8d, %r8d\t/* the answer: 0 until every check passed */\n"
       "\txorl %eax, %eax\n"
       "\txorl %ecx, %ecx\n"
       "\tcpuid\t/* leaf 0: the highest basic leaf, the vendor in EBX, EDX, ECX */\n";
  o << "\tcmpl $" << hex32(g.vendor[0]) << ", %ebx\n\tjne .Lforeign\n"
    << "\tcmpl $" << hex32(g.vendor[1]) << ", %edx\n\tjne .Lforeign\n"
    << "\tcmpl $" << hex32(g.vendor[2]) << ", %ecx\n\tjne .Lforeign\n"
    << "\tmovl %eax, %r9d\n"
    << "\tmovl $1, %eax\n\txorl %ecx, %ecx\n\tcpuid\t/* leaf 1: family and model, features */\n"
    << "\tandl $" << hex32(g.fm_mask) << ", %eax\t/* family and model fields, not the stepping */\n"
    << "\tcmpl $" << hex32(g.fm) << ", %eax\n\tjne .Lforeign\n";
  require_bits(o, g.l1_ecx, "ecx", "leaf 1 ECX: AVX, OSXSAVE");
  require_bits(o, g.l1_edx, "edx", "leaf 1 EDX: SSE2");
  if (g.l7_ebx || g.l7_edx) {
    o << "\tcmpl $7, %r9d\n\tjb .Lforeign\n"
      << "\tmovl $7, %eax\n\txorl %ecx, %ecx\n\tcpuid\t/* leaf 7.0 */\n";
    require_bits(o, g.l7_ebx, "ebx", "leaf 7 EBX: AVX2, BMI2, ERMS, AVX-512F/BW/VL");
    require_bits(o, g.l7_edx, "edx", "leaf 7 EDX: FSRM");
  }
  if (g.e1_ecx) {
    o << "\tmovl $0x80000000, %eax\n\txorl %ecx, %ecx\n\tcpuid\n"
      << "\tcmpl $0x80000001, %eax\n\tjb .Lforeign\n"
      << "\tmovl $0x80000001, %eax\n\txorl %ecx, %ecx\n\tcpuid\n";
    require_bits(o, g.e1_ecx, "ecx", "leaf 0x80000001 ECX: PREFETCHW");
  }
  if (g.xcr0) {
    o << "\txorl %ecx, %ecx\n\txgetbv\t/* XCR0 (OSXSAVE was checked): the state the OS saves */\n";
    require_bits(o, g.xcr0, "eax", "XCR0: XMM, YMM (and opmask, ZMM) state");
  }
  o << "\tmovl $1, %r8d\n"
       ".Lforeign:\n"
       "\tpopq %rbx\n"
       "\t.cfi_adjust_cfa_offset -8\n"
       "\t.cfi_restore %rbx\n"
       "\tleal 1(%r8), %eax\n"
       "\tmovl %eax, __copysynth_cpu_state(%rip)\n"
       "\tmovl %r8d, %eax\n"
       "\tret\n"
       "\t.cfi_endproc\n"
       "\t.size copysynth_tuned_active, .-copysynth_tuned_active\n\n";
  // Keeps the arguments (rdi, rsi, rdx, rcx: dst, src or byte, n, dstlen) across the first
  // CPU check; r8, r9 and rax are scratch at a function's entry (SysV ABI).
  o << "/* The first call in the process: check the CPU, keep the arguments (called by the exported\n"
       "   routines, which then read __copysynth_cpu_state again). */\n"
       "\t.p2align 4\n"
       "\t.globl __copysynth_decide\n"
       "\t.hidden __copysynth_decide\n"
       "\t.type __copysynth_decide, @function\n"
       "__copysynth_decide:\n"
       "\t.cfi_startproc\n";
  for (const char* r : {"rdi", "rsi", "rdx", "rcx"}) o << "\tpushq %" << r << "\n\t.cfi_adjust_cfa_offset 8\n";
  o << "\tcall .Lactive\n";
  for (const char* r : {"rcx", "rdx", "rsi", "rdi"}) o << "\tpopq %" << r << "\n\t.cfi_adjust_cfa_offset -8\n";
  o << "\tret\n"
       "\t.cfi_endproc\n"
       "\t.size __copysynth_decide, .-__copysynth_decide\n\n";
  o << "\t.bss\n"
       "\t.p2align 2\n"
       "\t.type __copysynth_cpu_state, @object\n"
       "\t.hidden __copysynth_cpu_state\n"
       "\t.globl __copysynth_cpu_state\n"
       "__copysynth_cpu_state:\n"
       "\t.zero 4\n"
       "\t.size __copysynth_cpu_state, 4\n"
    << cet_property_note();
  return o.str();
}

/// One exported function of `op` as one GNU as file: the routine itself (memcpy.S, memmove.S,
/// memset.S), or with `chk` its _FORTIFY_SOURCE form (memcpy_chk.S: __memcpy_chk, ...). Each is
/// a load of the guard's answer, a compare and a direct jump to the routine it chose; the _chk
/// form checks dstlen first and has the same dispatch of its own, so that each object defines
/// one symbol and a program that defines memcpy itself can still call __memcpy_chk from the
/// archive (_FORTIFY_SOURCE).
std::string entry_asm(Operation op, bool chk, const std::string& header) {
  const std::string c = libc_name(op);
  const std::string tuned = "__copysynth_tuned_" + c, base = "__copysynth_baseline_" + c;
  const std::string sym = chk ? "__" + c + "_chk" : c;
  std::ostringstream o;
  o << "/* copysynth-tuned: the exported " << sym << " (the guard is in guard.S).\n"
    << header << "*/\n\n"
    << "\t.text\n"
    << "\t.hidden " << tuned << ", " << base << ", __copysynth_decide, __copysynth_cpu_state\n"
    << "\t.p2align 4\n"
    << "\t.globl " << sym << "\n"
    << "\t.type " << sym << ", @function\n"
    << sym << ":\n"
    << "\t.cfi_startproc\n"
    << "\tendbr64\n";
  // __*_chk(dst, src|c, n, dstlen): dstlen < n is an overflow (glibc's debug/memcpy_chk.c).
  if (chk) o << "\tcmpq %rdx, %rcx\t/* dstlen < n: *** buffer overflow detected *** */\n\tjb .Lfail\n";
  o << ".Ldispatch:\n"
    << "\tmovl __copysynth_cpu_state(%rip), %eax\n"
    << "\tcmpl $2, %eax\n"
    << "\tje " << tuned << "\t/* the CPU tuned for */\n"
    << "\tcmpl $1, %eax\n"
    << "\tje " << base << "\t/* another CPU: the built-in routine */\n"
    << "\tcall __copysynth_decide\t/* the first call: check the CPU */\n"
    << "\tjmp .Ldispatch\n";
  if (chk) o << ".Lfail:\n\tjmp __chk_fail@PLT\n";
  o << "\t.cfi_endproc\n"
    << "\t.size " << sym << ", .-" << sym << "\n"
    << cet_property_note();
  return o.str();
}

// ----- running binutils -----------------------------------------------------------------------

/// Runs `argv` (found in PATH) with stdout and stderr into `log`; its exit status, or -1 when it
/// could not be started (errno in *err). A stop signal while it runs is passed on to it, and
/// none starts after one was noted (interrupt.hpp): Interrupted is thrown after the wait, and the
/// unwinding removes the scratch directory.
int run_tool(const std::vector<std::string>& argv, const std::string& log, int* err) {
  std::vector<char*> args;  // before the file actions, which nothing would destroy if this threw
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid = 0;
  const int rc = spawn_waited_child(&pid, args[0], true, &fa, args.data(), environ, false);
  posix_spawn_file_actions_destroy(&fa);
  if (rc < 0) throw_if_stopped();
  if (rc != 0) {
    *err = rc;
    return -1;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) {
      set_waited_child(0);
      *err = errno;
      return -1;
    }
  set_waited_child(0);
  throw_if_stopped();
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string read_text(const std::string& path, std::size_t max = 4000) {
  std::ifstream f(path, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (s.size() > max) s = s.substr(0, max) + "...";
  return s;
}

Status tool(const std::vector<std::string>& argv, const std::string& log) {
  int err = 0;
  const int rc = run_tool(argv, log, &err);
  std::string line;
  for (const auto& a : argv) line += (line.empty() ? "" : " ") + a;
  if (rc < 0)
    return make_error(ErrorCode::kSystem, "cannot run " + argv[0] + " (" + std::strerror(err) +
                                              "): the library is built with GNU binutils (as, ld, ar); install "
                                              "them (apt-get install binutils) and try again");
  if (rc != 0)
    return make_error(ErrorCode::kSystem, argv[0] + " failed (exit status " + std::to_string(rc) + "): " + line +
                                              "\n" + read_text(log));
  return {};
}

// ----- reading code back out of ELF files ---------------------------------------------------------

/// The bytes of every defined symbol named in `names` of an ELF64 x86-64 file (relocatable or
/// shared object), from its .symtab: symbol value, section and size. Missing ones are absent.
Result<std::map<std::string, std::vector<std::uint8_t>>> read_symbols(const std::string& path,
                                                                      const std::vector<std::string>& names) {
  std::ifstream f(path, std::ios::binary);
  const std::string data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto bad = [&](const std::string& why) {
    return make_error(ErrorCode::kEmitFailed, path + ": " + why + " (reading the linked code back)");
  };
  if (data.size() < sizeof(Elf64_Ehdr) || std::memcmp(data.data(), ELFMAG, SELFMAG) != 0) return bad("not an ELF file");
  Elf64_Ehdr eh;
  std::memcpy(&eh, data.data(), sizeof eh);
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_X86_64) return bad("not an ELF64 x86-64 file");
  if (eh.e_shoff == 0 || eh.e_shentsize != sizeof(Elf64_Shdr) ||
      eh.e_shoff + std::uint64_t{eh.e_shnum} * sizeof(Elf64_Shdr) > data.size())
    return bad("bad section header table");
  std::vector<Elf64_Shdr> sh(eh.e_shnum);
  std::memcpy(sh.data(), data.data() + eh.e_shoff, eh.e_shnum * sizeof(Elf64_Shdr));
  auto in_file = [&](std::uint64_t off, std::uint64_t len) { return off <= data.size() && len <= data.size() - off; };
  std::map<std::string, std::vector<std::uint8_t>> out;
  for (const Elf64_Shdr& s : sh) {
    if (s.sh_type != SHT_SYMTAB) continue;
    if (s.sh_link >= sh.size() || !in_file(s.sh_offset, s.sh_size)) return bad("bad .symtab");
    const Elf64_Shdr& strtab = sh[s.sh_link];
    if (!in_file(strtab.sh_offset, strtab.sh_size)) return bad("bad .strtab");
    for (std::uint64_t off = 0; off + sizeof(Elf64_Sym) <= s.sh_size; off += sizeof(Elf64_Sym)) {
      Elf64_Sym sym;
      std::memcpy(&sym, data.data() + s.sh_offset + off, sizeof sym);
      if (sym.st_name >= strtab.sh_size || sym.st_shndx == SHN_UNDEF || sym.st_shndx >= sh.size()) continue;
      const char* nm = data.data() + strtab.sh_offset + sym.st_name;
      const std::string name(nm, strnlen(nm, strtab.sh_size - sym.st_name));
      if (std::find(names.begin(), names.end(), name) == names.end()) continue;
      const Elf64_Shdr& sec = sh[sym.st_shndx];
      // Relocatable files: the value is an offset in the section (sh_addr 0); shared objects: an
      // address, which the section maps from sh_offset at sh_addr.
      if (sym.st_value < sec.sh_addr || sym.st_value - sec.sh_addr + sym.st_size > sec.sh_size)
        return bad("symbol " + name + " lies outside its section");
      const std::uint64_t at = sec.sh_offset + (sym.st_value - sec.sh_addr);
      if (!in_file(at, sym.st_size)) return bad("symbol " + name + " lies outside the file");
      out[name] = std::vector<std::uint8_t>(data.begin() + static_cast<std::ptrdiff_t>(at),
                                            data.begin() + static_cast<std::ptrdiff_t>(at + sym.st_size));
    }
  }
  return out;
}

constexpr std::uint8_t kEndbr64[4] = {0xF3, 0x0F, 0x1E, 0xFA};

/// Checks that `sym` in `file` is endbr64 followed by exactly `r.bytes`.
Status check_readback(const std::map<std::string, std::vector<std::uint8_t>>& syms, const std::string& file,
                      const LibRoutine& r) {
  const auto it = syms.find(r.symbol);
  if (it == syms.end())
    return make_error(ErrorCode::kEmitFailed, file + " has no symbol " + r.symbol + " (reading the linked code back)");
  const auto& got = it->second;
  std::vector<std::uint8_t> want(kEndbr64, kEndbr64 + 4);
  want.insert(want.end(), r.bytes.begin(), r.bytes.end());
  if (got != want) {
    std::size_t i = 0;
    while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
    return make_error(ErrorCode::kEmitFailed,
                      "the code of " + r.symbol + " in " + file + " differs from the verified routine (" +
                          std::to_string(got.size()) + " vs " + std::to_string(want.size()) +
                          " bytes, first difference at +" + std::to_string(i) +
                          "); nothing was written: a copysynth or binutils bug, please report it with the wisdom file");
  }
  return {};
}

// ----- the README ---------------------------------------------------------------------------------

std::string readme(const Wisdom& w, const LibraryOptions& opt, const std::string& guard,
                   const std::vector<LibRoutine>& routines, const std::vector<std::string>& exported) {
  std::ostringstream o;
  o << "libcopysynth-tuned: memcpy routines tuned by copysynth " << COPYSYNTH_VERSION << "\n\n"
    // The wisdom's and the command line's text as one line each (comment_safe's caret notation):
    // a newline in a brand wrote a "Command:" line of its own here.
    << "Tuned on:  " << comment_safe(w.cpu_brand.empty() ? w.cpu_vendor : w.cpu_brand) << "\n"
    << "CPU:       " << comment_safe(w.cpu_signature) << " (vendor-family-model:features)\n"
    << "Runs them: " << comment_safe(guard) << "\n"
    << "Wisdom:    " << comment_safe(opt.wisdom_path) << " (" << comment_safe(w.created) << ")\n"
    << "Command:   " << comment_safe(opt.command) << "\n\n"
    << "Routines (each passed copysynth's full conformance suite on the tuning host; the code in\n"
    << "these files was read back after linking and is byte for byte the verified code):\n";
  for (const auto& r : routines)
    o << "  " << r.symbol << "  " << short_name(r.plan.params) << "  (" << r.bytes.size() << " bytes)\n";
  o << "\nExported (unversioned, so that they bind programs' memcpy@GLIBC_2.14 and the like):\n ";
  for (const auto& e : exported) o << " " << e;
  o << "\n\n"
    << "On a CPU other than the one above (vendor, family, model, or a missing feature, AVX and\n"
    << "AVX-512 counted only when the OS enables their state), each function calls copysynth's\n"
    << "built-in SSE2 routine instead: correct everywhere, never the tuned code.\n"
    << "copysynth_tuned_active() returns 1 on the CPU tuned for (the tuned routines serve the calls\n"
    << "that reach this library), 0 otherwise (declared in copysynth-tuned.h, for C and C++:\n"
    << "#include \"copysynth-tuned.h\"). Which calls reach it is the dynamic linker's choice: those\n"
    << "of a program linked with it, or of any program while it is preloaded; not those of a shared\n"
    << "library linked with it or of a dlopen()ed copy (libc's memcpy is found first there).\n"
    << "Nothing runs at process start: the first call checks the CPU once (CPUID, XGETBV), every\n"
    << "call after it is a compare and a direct jump (no JIT, no JSON, no verification).\n\n"
    << "Deploy (any of):\n"
    << "  LD_PRELOAD=$PWD/libcopysynth-tuned.so program ...        one program\n"
    << "  echo /usr/local/lib/libcopysynth-tuned.so.1 >> /etc/ld.so.preload   every dynamically\n"
    << "      linked program (first: install -m 755 libcopysynth-tuned.so.1 /usr/local/lib/, which\n"
    << "      replaces an earlier copy instead of writing into the file running programs map; test\n"
    << "      with one program before)\n"
    << "  cc app.c -L. -lcopysynth-tuned -Wl,-rpath,$PWD             link against it (the program\n"
    << "      then needs libcopysynth-tuned.so.1, the soname; libcopysynth-tuned.so is a symbolic\n"
    << "      link to it)\n"
    << "  cc -static app.c libcopysynth-tuned.a                      a static program\n"
    << "Remove: unset LD_PRELOAD / delete the line from /etc/ld.so.preload / relink without it.\n"
    << "Check: LD_DEBUG=bindings program 2>&1 | grep libcopysynth-tuned shows the bindings.\n\n"
    << "Not replaced: copies glibc makes internally (they bind to its hidden aliases), mempcpy,\n"
    << "bcopy, wmemcpy, compiler-inlined copies. Programs linked against glibc before 2.14 bind\n"
    << "memcpy@GLIBC_2.2.5, which glibc makes overlap-safe; this memcpy is not.\n\n"
    << "src/ holds the GNU as files and the version script the libraries were built from\n"
    << "(as --64 FILE.S; ld -shared -soname libcopysynth-tuned.so.1 -z now -z relro -z noexecstack\n"
    << "-z cet-report=error --hash-style=gnu --build-id --version-script=src/libcopysynth-tuned.map\n"
    << "--no-undefined-version -o libcopysynth-tuned.so.1 FILE.o ... -lc; ln -s libcopysynth-tuned.so.1 libcopysynth-tuned.so;\n"
    << "ar rcsD libcopysynth-tuned.a FILE.o ...).\n";
  return o.str();
}

}  // namespace

namespace {

/// The output directory of write_tuned_library may be new, empty, or one an earlier run wrote:
/// the two libraries, README (a regular file whose first line is "libcopysynth-tuned:") and src/
/// holding only the sources it writes (copysynth_{tuned,baseline}_{memcpy,memmove,memset}.S,
/// guard.S, {memcpy,memmove,memset}{,_chk}.S, libcopysynth-tuned.map); the wisdom file read (`wisdom_path`) may be there too.
/// Anything else is the user's: since src/ and README are replaced, such a directory
/// (`--emit-lib .` in a project's root) is refused before any work, naming the first entry that
/// is not ours. Nothing is opened but regular files (a FIFO named README would block the open).
Status check_library_dir(const std::string& dir, const std::string& wisdom_path) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    // Made after the verification: what would stop that is said now, before any work.
    if (fs::exists(dir, ec))
      return make_error(ErrorCode::kInvalidArgument, "--emit-lib " + dir + ": a file of that name exists; give a directory name");
    fs::path d = fs::path(dir);
    if (!d.has_filename()) d = d.parent_path();  // "newlib/": the directory is newlib
    const fs::path parent = d.has_parent_path() ? d.parent_path() : fs::path(".");
    if (!fs::is_directory(parent, ec))
      return make_error(ErrorCode::kInvalidArgument, "--emit-lib " + dir + ": its parent " + parent.string() +
                                                         " does not exist; create it or give another directory");
    if (::access(parent.c_str(), W_OK) != 0)
      return make_error(ErrorCode::kInvalidArgument, "--emit-lib " + dir + ": cannot create it in " + parent.string() +
                                                         " (" + std::strerror(errno) + ")");
    return {};
  }
  if (::access(dir.c_str(), W_OK) != 0)
    return make_error(ErrorCode::kInvalidArgument,
                      "--emit-lib " + dir + ": cannot write in it (" + std::strerror(errno) + ")");
  const auto refuse = [&](const std::string& what) {
    return make_error(ErrorCode::kInvalidArgument,
                      "--emit-lib " + dir + ": " + what +
                          ", which this would replace or leave mixed with the library; give a new or empty "
                          "directory, or one an earlier --emit-lib wrote (nothing was written)");
  };
  const auto unlistable = [&](const fs::path& p, const std::error_code& e) {
    return make_error(ErrorCode::kInvalidArgument, "--emit-lib " + dir + ": cannot list " + p.string() + " (" +
                                                       e.message() + ")");
  };
  const auto source_of_ours = [](const std::string& f) {
    if (f == "guard.S" || f == "libcopysynth-tuned.map") return true;
    for (const char* op : {"memcpy", "memmove", "memset"})
      if (f == std::string(op) + ".S" || f == std::string(op) + "_chk.S") return true;
    for (const char* kind : {"tuned", "baseline"})
      for (const char* op : {"memcpy", "memmove", "memset"})
        if (f == std::string("copysynth_") + kind + "_" + op + ".S") return true;
    return false;
  };
  fs::directory_iterator it(dir, ec);
  if (ec) return unlistable(dir, ec);
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) return unlistable(dir, ec);
    const fs::path path = it->path();
    const std::string name = path.filename().string();
    std::error_code e2;
    if (name.rfind(".copysynth-lib.", 0) == 0 || name.rfind(".copysynth-lib-", 0) == 0) continue;  // scratch, older too
    if (name == kTunedLibraryShared || name == kTunedLibrarySoname || name == kTunedLibraryStatic) {
      // Replaced by a rename: a directory there would fail it after the sources were swapped.
      // The link's name may hold the link an earlier run made, or an older copysynth's file.
      const auto type = fs::symlink_status(path, e2).type();
      if (type != fs::file_type::regular && !(name == kTunedLibraryShared && type == fs::file_type::symlink))
        return refuse("its " + name + " is not a regular file" +
                      (name == kTunedLibraryShared ? " or a symbolic link" : ""));
      continue;
    }
    if (!wisdom_path.empty() && fs::equivalent(path, wisdom_path, e2)) continue;
    // The text files it writes start with a marker: one that does not is the user's.
    if (const char* marker = name == "README"              ? "libcopysynth-tuned:"
                             : name == kTunedLibraryHeader ? "/* libcopysynth-tuned:"
                                                           : nullptr) {
      if (!fs::is_regular_file(path, e2)) return refuse("its " + name + " is not a regular file");
      const std::string want = marker;
      std::ifstream in(path, std::ios::binary);
      std::string first(want.size(), '\0');
      in.read(first.data(), static_cast<std::streamsize>(first.size()));
      if (first != want) return refuse("it holds a " + name + " that an earlier --emit-lib did not write");
      continue;
    }
    if (name == "src" && fs::is_directory(path, e2)) {
      std::error_code e3;
      fs::directory_iterator src(path, e3);
      if (e3) return unlistable(path, e3);
      for (; src != fs::directory_iterator(); src.increment(e3)) {
        if (e3) return unlistable(path, e3);
        const std::string fname = src->path().filename().string();
        std::error_code e4;
        if (!fs::is_regular_file(src->path(), e4) || !source_of_ours(fname))
          return refuse("its src/ holds " + fname + ", not a source an earlier --emit-lib wrote");
      }
      if (e3) return unlistable(path, e3);
      continue;
    }
    return refuse("it holds " + name + ", not a file --emit-lib writes");
  }
  if (ec) return unlistable(dir, ec);
  return {};
}

/// Writes `text` to `path` (in the scratch directory), checking every step: a full disk (ENOSPC)
/// or an I/O error is said as such, not later as an assembler's failure on a truncated file.
Status write_whole(const fs::path& path, const std::string& text, const std::string& dir) {
  errno = 0;
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  f.flush();
  const int e = errno;
  f.close();
  if (!f)
    return make_error(ErrorCode::kInvalidArgument, "cannot write " + path.string() + " (" +
                                                       (e ? std::strerror(e) : "an I/O error") + "); nothing was written into " +
                                                       dir);
  return {};
}

/// copysynth-tuned.h: the library's one function of its own, for C and C++.
std::string header_text() {
  return "/* libcopysynth-tuned: the declaration of its one function of its own (written by copysynth " +
         std::string(COPYSYNTH_VERSION) +
         ").\n"
         "   memcpy, memmove and memset keep their <string.h> declarations. */\n"
         "#ifndef COPYSYNTH_TUNED_H\n"
         "#define COPYSYNTH_TUNED_H\n\n"
         "#ifdef __cplusplus\n"
         "extern \"C\" {\n"
         "#endif\n\n"
         "/* 1 on the CPU tuned for, where this library's memcpy, memmove and memset run the tuned\n"
         "   routines; 0 where they run the built-in SSE2 routines (another CPU: see README). It says\n"
         "   nothing of whether a call reaches this library: a program linked with it or a preload\n"
         "   (LD_PRELOAD, /etc/ld.so.preload) binds its calls here, a shared library linked with it\n"
         "   or a dlopen()ed copy does not (libc's memcpy is found first there). */\n"
         "int copysynth_tuned_active(void);\n\n"
         "#ifdef __cplusplus\n"
         "}\n"
         "#endif\n\n"
         "#endif /* COPYSYNTH_TUNED_H */\n";
}

}  // namespace

Status check_guard_signature(const std::string& signature) {
  auto spec = guard_spec(signature);
  if (!spec) return spec.error();
  return {};
}

Result<LibraryResult> write_tuned_library(const Wisdom& w, const LibraryOptions& opt, const CpuInfo& host) {
  auto say = [&](const std::string& s) {
    if (opt.progress) opt.progress(s);
  };
  COPYSYNTH_TRY(check_cpu(w, host));
  const std::string guard = opt.guard_signature.empty() ? w.cpu_signature : opt.guard_signature;
  auto spec = guard_spec(guard);
  if (!spec) return spec.error();
  if (!opt.guard_signature.empty()) {
    // The guard is all that stands between the tuned code and a CPU: it must require every
    // feature that code uses (an AVX-512 routine behind a guard of "sse2" alone would run, and
    // fault, on a CPU of that model whose OS or hypervisor disables AVX-512).
    IsaFeatures guarded;
    if (auto sig = parse_cpu_signature(guard))
      for (const std::string& f : sig->features)
        for (std::uint32_t k = 0; k < static_cast<std::uint32_t>(Feature::kCount); ++k)
          if (feature_name(static_cast<Feature>(k)) == f) guarded.add(static_cast<Feature>(k));
    for (const WisdomEntry& e : w.entries) {
      if (e.operation == Operation::kClearPage) continue;
      if (auto st = validate(e.plan.params, guarded); !st)
        return make_error(ErrorCode::kInvalidArgument,
                          "--lib-guard " + quoted_bytes(guard) + " does not require what the tuned " +
                              std::string(libc_name(e.operation)) + " uses (" + st.error().message +
                              "); give a signature whose features include the tuning host's (" + w.cpu_signature + ")");
    }
  }
  if (opt.dir.empty()) return make_error(ErrorCode::kInvalidArgument, "--emit-lib needs a directory name");
  COPYSYNTH_TRY(check_library_dir(opt.dir, opt.wisdom_path));

  // 1. The routines: each tuned one rebuilt (code hash checked) and the SSE2 built-in of its
  //    operation, all through the conformance suite here before anything is written.
  std::vector<LibRoutine> routines;
  std::vector<Operation> ops;
  std::optional<std::vector<std::string>> earlier_exports;  // of an earlier library in opt.dir, read once
  LibraryResult result;
  result.guard_signature = guard;
  for (Operation op : {Operation::kMemcpy, Operation::kMemmove, Operation::kFill}) {
    const WisdomEntry* e = w.find(op);
    if (!e) {
      // An earlier library in the directory that replaced this function: its programs call the
      // system's again after this one, which the caller says (a re-emit with --op memcpy over
      // a library of three was silent). Read from the library itself (its symbol table), not
      // from src/, which a run that failed part way may have replaced alone.
      if (!earlier_exports) {
        earlier_exports.emplace();
        std::error_code ec;
        for (const char* f : {kTunedLibrarySoname, kTunedLibraryShared})  // .so alone: an older copysynth's
          if (const fs::path so = fs::path(opt.dir) / f; fs::is_regular_file(so, ec)) {
            if (auto syms = read_symbols(so.string(), {"memcpy", "memmove", "memset"}); syms)
              for (const auto& s : *syms) earlier_exports->push_back(s.first);
            break;
          }
      }
      if (std::find(earlier_exports->begin(), earlier_exports->end(), libc_name(op)) != earlier_exports->end())
        result.no_longer_replaced.push_back(op);
      continue;
    }
    ops.push_back(op);
    auto tuned = build_entry(w, *e, host);
    if (!tuned) return tuned.error();
    CopyParams bp;
    bp.operation = op;
    bp.vector_width = 16;
    auto bplan = make_plan(bp, IsaFeatures::for_level(IsaLevel::kSSE2));
    if (!bplan) return bplan.error();
    auto base = Routine::build(*bplan, host);
    if (!base) return base.error();
    for (const Routine* r : {&*tuned, &*base}) {
      const bool is_tuned = r == &*tuned;
      say("verifying the " + std::string(is_tuned ? "tuned " : "built-in ") + libc_name(op) + " routine (" +
          r->name() + ") with the full conformance suite");
      const VerifyReport rep = verify_routine(*r, opt.verify);
      if (!rep.ok())
        return verification_error(rep,
                                  "the " + std::string(is_tuned ? "tuned " : "built-in ") + libc_name(op) +
                                      " routine " + r->name(),
                                  "; nothing was written")
            .error();
      routines.push_back({op, is_tuned,
                          std::string(is_tuned ? "__copysynth_tuned_" : "__copysynth_baseline_") + libc_name(op),
                          is_tuned ? e->plan : *bplan, r->bytes()});
    }
    result.routines.push_back(std::string(libc_name(op)) + "=" + tuned->name());
  }
  if (ops.empty()) {
    // Judged wisdom (autotune --app) whose entries the program dropped, every one: tuning again is
    // not the advice; the program is best served by the routines it has.
    std::vector<std::string> dropped;
    const AppVerdict* judged = nullptr;
    for (const AppVerdict& v : w.app_verdicts)
      if (!v.kept && v.operation != Operation::kClearPage) {
        dropped.push_back(libc_name(v.operation));
        judged = judged ? judged : &v;
      }
    if (judged) {
      std::string names;
      for (std::size_t i = 0; i < dropped.size(); ++i)
        names += (i == 0 ? "" : i + 1 == dropped.size() ? " and " : ", ") + dropped[i];
      return make_error(ErrorCode::kWisdomMismatch,
                        opt.wisdom_path + ": the judge (autotune --app) kept nothing: glibc's " + names +
                            (dropped.size() == 1 ? " was" : " were") + " as fast or faster on `" + judged->command +
                            "` (autotune --show " + opt.wisdom_path +
                            " lists the verdicts), so there is no library to write; the program is best left with glibc's routines");
    }
    return make_error(ErrorCode::kWisdomMismatch, opt.wisdom_path + " holds no memcpy, memmove or fill entry for this "
                                                                    "CPU; tune one with autotune --op memcpy,memmove,fill --emit " +
                                                                    opt.wisdom_path);
  }

  // 2. The sources, in a scratch directory beside the output one.
  std::error_code ec, made;
  fs::create_directory(opt.dir, made);
  if (!fs::is_directory(opt.dir, ec))
    return make_error(ErrorCode::kInvalidArgument,
                      "--emit-lib " + opt.dir + ": cannot create the directory (" +
                          (made ? made.message() : std::string("a file of that name exists")) + ")" +
                          (made == std::errc::no_such_file_or_directory ? "; give a directory whose parent exists"
                                                                        : ""));
  const fs::path out = fs::path(opt.dir);
  // A scratch directory an interrupted run left (SIGKILL, or a second signal before its unwinding
  // was done) is removed when no process holds the lock in it (make_scratch_dir). Those of older
  // copysynth are named ".copysynth-lib-" and something: with a `.lock`, removed on the same rule;
  // without one, named by the PID alone, removed when that PID is gone. Today's names differ in
  // the '.', so a new run's directory, whose random name may be all digits, never meets the PID
  // rule.
  remove_stale_scratch_dirs(out.string(), ".copysynth-lib-");
  for (fs::directory_iterator it(out, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string pid = it->path().filename().string();
    if (pid.rfind(".copysynth-lib-", 0) != 0 || pid.size() < 16 || pid.size() > 24 ||
        pid.find_first_not_of("0123456789", 15) != std::string::npos || fs::exists(it->path() / ".lock", ec))
      continue;
    struct stat st {};  // this user's directory, not a link to one
    if (::lstat(it->path().c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) continue;
    if (::kill(static_cast<pid_t>(std::stol(pid.substr(15))), 0) != 0 && errno == ESRCH) fs::remove_all(it->path(), ec);
  }
  ec.clear();
  ScratchDir cleanup;
  COPYSYNTH_TRY(make_scratch_dir(cleanup, out.string(), ".copysynth-lib.", ErrorCode::kInvalidArgument,
                                 "check that " + opt.dir + " is writable"));
  // Absolute, so that no path handed to as, ld or ar starts with '-' (--emit-lib -lib would be
  // read as an option).
  std::error_code abs_ec;
  const fs::path scratch = fs::absolute(cleanup.path, abs_ec);
  if (abs_ec)
    return make_error(ErrorCode::kInvalidArgument, "--emit-lib " + opt.dir + ": cannot name the directory (" +
                                                       abs_ec.message() + ")");
  if (!fs::create_directories(scratch / "src", ec))
    return make_error(ErrorCode::kInvalidArgument, "cannot write in " + opt.dir + " (" + ec.message() + ")");
  auto flavor = asm_flavor("plain");
  if (!flavor) return flavor.error();
  // Each field made comment-safe as one line (comment_safe): the lines are the writer's own.
  const std::string header_lines = "   Wisdom: " + comment_safe(opt.wisdom_path) + ", tuned on " +
                                   comment_safe(w.cpu_signature) + ".\n   Command: " + comment_safe(opt.command) + "\n";
  std::vector<std::string> sources;
  for (const auto& r : routines) {
    AsmOptions ao;
    ao.symbol = r.symbol;
    ao.label_prefix = r.symbol.substr(2) + "_";
    ao.header = {std::string(r.tuned ? "The tuned routine" : "The built-in (SSE2) routine, for CPUs other than the one tuned for") +
                     " of libcopysynth-tuned; its entry is hidden, reached through the exported " +
                     libc_name(r.op) + ".",
                 "Wisdom: " + opt.wisdom_path + ", tuned on " + w.cpu_signature + ".", "Command: " + opt.command};
    auto text = write_asm(r.plan, *flavor, ao);
    if (!text) return text.error();
    const std::string name = r.symbol.substr(2) + ".S";
    COPYSYNTH_TRY(write_whole(scratch / "src" / name, text->text + "\t.hidden " + r.symbol + "\n", opt.dir));
    sources.push_back(name);
  }
  COPYSYNTH_TRY(write_whole(scratch / "src" / "guard.S", guard_asm(*spec, guard, header_lines), opt.dir));
  sources.push_back("guard.S");
  for (Operation op : ops)
    for (bool chk : {false, true}) {
      const std::string name = std::string(libc_name(op)) + (chk ? "_chk.S" : ".S");
      COPYSYNTH_TRY(write_whole(scratch / "src" / name, entry_asm(op, chk, header_lines), opt.dir));
      sources.push_back(name);
    }
  std::vector<std::string> exported;
  for (Operation op : ops) {
    exported.push_back(libc_name(op));
    exported.push_back(std::string("__") + libc_name(op) + "_chk");
  }
  exported.push_back("copysynth_tuned_active");
  {
    std::string map =
        "/* libcopysynth-tuned.so exports these and nothing else, unversioned: a versioned definition\n"
        "   would not bind a program's memcpy@GLIBC_2.14 (and the like), an unversioned one does. */\n{\n  global:\n";
    for (const auto& e : exported) map += "    " + e + ";\n";
    map += "  local:\n    *;\n};\n";
    COPYSYNTH_TRY(write_whole(scratch / "src" / "libcopysynth-tuned.map", map, opt.dir));
  }

  // 3. Assemble, link, archive.
  const std::string log = (scratch / "tool.log").string();
  std::vector<std::string> objects;
  for (const auto& name : sources) {
    const std::string obj = (scratch / (name.substr(0, name.size() - 2) + ".o")).string();
    COPYSYNTH_TRY(tool({"as", "--64", "-o", obj, (scratch / "src" / name).string()}, log));
    objects.push_back(obj);
  }
  const std::string so = (scratch / kTunedLibrarySoname).string(), ar = (scratch / kTunedLibraryStatic).string();
  std::vector<std::string> ld = {"ld", "-shared", "-soname", kTunedLibrarySoname, "-z", "now", "-z", "relro",
                                 "-z", "noexecstack", "-z", "cet-report=error", "--hash-style=gnu", "--build-id",
                                 "--eh-frame-hdr",  // PT_GNU_EH_FRAME: backtrace() finds the routines' CFI
                                 "--no-undefined-version",
                                 "--version-script=" + (scratch / "src" / "libcopysynth-tuned.map").string(),
                                 "-o", so};
  ld.insert(ld.end(), objects.begin(), objects.end());
  ld.push_back("-lc");  // __chk_fail; DT_NEEDED libc.so.6
  COPYSYNTH_TRY(tool(ld, log));
  std::vector<std::string> arv = {"ar", "rcsD", ar};
  arv.insert(arv.end(), objects.begin(), objects.end());
  COPYSYNTH_TRY(tool(arv, log));

  // 4. Read the code back: the linked library and every object (what the archive holds).
  std::vector<std::string> names;
  for (const auto& r : routines) names.push_back(r.symbol);
  auto syms = read_symbols(so, names);
  if (!syms) return syms.error();
  for (const auto& r : routines) COPYSYNTH_TRY(check_readback(*syms, kTunedLibrarySoname, r));
  for (std::size_t i = 0; i < routines.size(); ++i) {
    auto os = read_symbols(objects[i], {routines[i].symbol});
    if (!os) return os.error();
    COPYSYNTH_TRY(check_readback(*os, fs::path(objects[i]).filename().string() + " (in " + kTunedLibraryStatic + ")",
                                 routines[i]));
  }
  say("read back " + std::to_string(routines.size()) + " routines from " + kTunedLibrarySoname + " and " +
      kTunedLibraryStatic + ": byte for byte the verified code");

  // 5. Into place: README, header, sources, then the libraries (renamed over any earlier ones).
  // The versioned file goes first, then the link to it, so that the link's name always names a
  // library: an earlier one, or the new one (an earlier --emit-lib may have written a file there).
  COPYSYNTH_TRY(write_whole(scratch / "README", readme(w, opt, guard, routines, exported), opt.dir));
  COPYSYNTH_TRY(write_whole(scratch / kTunedLibraryHeader, header_text(), opt.dir));
  fs::create_symlink(kTunedLibrarySoname, scratch / kTunedLibraryShared, ec);
  if (ec)
    return make_error(ErrorCode::kInvalidArgument, std::string("cannot make the link ") + kTunedLibraryShared + " -> " +
                                                       kTunedLibrarySoname + " for " + opt.dir + ": " + ec.message() +
                                                       " (does its file system take symbolic links?); nothing was "
                                                       "written into " + opt.dir);
  fs::remove_all(out / "src", ec);
  fs::rename(scratch / "src", out / "src", ec);
  if (ec) return make_error(ErrorCode::kInvalidArgument, "cannot move the sources into " + opt.dir + ": " + ec.message());
  for (const char* f : {kTunedLibrarySoname, kTunedLibraryShared, kTunedLibraryStatic, "README", kTunedLibraryHeader}) {
    fs::rename(scratch / f, out / f, ec);
    if (ec) return make_error(ErrorCode::kInvalidArgument, "cannot write " + (out / f).string() + ": " + ec.message());
  }
  result.files = {(out / kTunedLibrarySoname).string(), (out / kTunedLibraryShared).string(),
                  (out / kTunedLibraryStatic).string(),  (out / "README").string(),
                  (out / kTunedLibraryHeader).string(),  (out / "src").string()};
  result.exported = exported;
  return result;
}

// ----- one routine as a .S file -----------------------------------------------------------------

Status check_asm_destination(const std::string& path, const std::string& wisdom_path) {
  if (path == kAsmToStdout) return {};
  std::error_code ec;
  if (fs::exists(path, ec)) {
    if (!wisdom_path.empty() && fs::equivalent(path, wisdom_path, ec))
      return make_error(ErrorCode::kInvalidArgument, "--emit-asm " + path + " is the wisdom file --from reads; "
                                                     "give the .S file another name");
    if (fs::is_directory(path, ec)) return check_output_path("--emit-asm", path);  // "is a directory; give a file name"
    std::string first;
    if (fs::is_regular_file(path, ec)) {  // a FIFO's open() would block: only regular files are read
      std::ifstream in(path);
      if (!in)
        return make_error(ErrorCode::kInvalidArgument, "--emit-asm " + path + " exists and cannot be read (" +
                                                           std::strerror(errno) +
                                                           "), so whether copysynth wrote it is not known; not "
                                                           "overwriting it: remove it or pick another name");
      std::getline(in, first);
    }
    if (first.find("written by copysynth") == std::string::npos)
      return make_error(ErrorCode::kInvalidArgument, "--emit-asm " + path + " exists and is not a .S file copysynth "
                                                     "wrote; not overwriting it: remove it or pick another name");
  }
  return check_output_path("--emit-asm", path);
}

Result<const WisdomEntry*> asm_entry(const Wisdom& w, std::optional<Operation> op, const std::string& wisdom_path) {
  std::string held;
  for (const auto& e : w.entries) held += (held.empty() ? "" : ", ") + std::string(name_of(e.operation));
  const Operation want = op.value_or(Operation::kMemcpy);
  if (const WisdomEntry* e = w.find(want)) return e;
  if (!op && w.entries.size() == 1) return &w.entries.front();
  return make_error(ErrorCode::kWisdomMismatch,
                    wisdom_path + " has no " + std::string(name_of(want)) + " entry (it holds " +
                        (held.empty() ? "none" : held) + "): pick one of those with --op, or tune it with autotune --op " +
                        std::string(name_of(want)) + " --emit " + wisdom_path);
}

Result<AsmFileResult> write_asm_file(const Wisdom& w, const WisdomEntry& entry, const AsmFileOptions& opt,
                                     const CpuInfo& host) {
  const auto say = [&](const std::string& s) {
    if (opt.progress) opt.progress(s);
  };
  const CopyPlan& plan = entry.plan;
  const std::string op = std::string(name_of(entry.operation));
  auto flavor = asm_flavor(opt.flavor);
  if (!flavor) return flavor.error();
  AsmOptions o;
  o.symbol = opt.symbol.empty() ? default_asm_symbol(entry.operation) : opt.symbol;
  COPYSYNTH_TRY(check_asm_symbol(o.symbol, *flavor));
  // Local labels named after the function (".Lmemcpy_copysynth.len_1"): two files, for two
  // operations or two names, still assemble when joined into one, as a patch may join them.
  // The '.' keeps every pair apart (label names hold none): with "_", f's rest_loop and
  // f_rest's loop were both .Lf_rest_loop.
  o.label_prefix = o.symbol + ".";
  // The target: opt.target, or the lowest ISA level the plan runs on.
  IsaLevel level = IsaLevel::kSSE2;
  if (opt.target) {
    level = *opt.target;
    if (auto st = validate(plan.params, IsaFeatures::for_level(level)); !st) {
      const std::string name(isa_level_name(level));
      return make_error(ErrorCode::kUnsupportedIsa, "the " + op + " routine in " + opt.wisdom_path +
                                                        " cannot run on --target " + name + ": " + st.error().message +
                                                        "; pick a higher --target, or tune for it with autotune --isa " +
                                                        name + " --emit FILE");
    }
  } else {
    level = lowest_isa_level(plan.params);
  }
  const IsaFeatures target = IsaFeatures::for_level(level);
  auto bytes = assemble(plan);
  if (!bytes) return bytes.error();
  if (fnv1a64(*bytes) != entry.code_hash)
    return make_error(ErrorCode::kWisdomMismatch,
                      "this copysynth (" + std::string(COPYSYNTH_VERSION) + ") emits other code for the " + op +
                          " plan in " + opt.wisdom_path + " (made by copysynth " + w.generator_version +
                          "), so the file would not be the routine that was tuned; re-run autotune --emit " +
                          opt.wisdom_path + " with this version");
  // Verification before writing: the static checks for the target always, the conformance suite
  // when this host can run the code.
  AsmFileResult res;
  res.path = opt.path;
  res.symbol = o.symbol;
  res.target = level;
  const StaticReport sr = check_code(*bytes, target);
  if (!sr.ok())
    return make_error(ErrorCode::kVerifyFailed, "the " + op + " routine fails the static checks for " +
                                                    std::string(isa_level_name(level)) + ": " + sr.summary());
  std::string verified = "Verified: the static checks for " + std::string(isa_level_name(level)) + " passed";
  if (validate(plan.params, host.features()).ok()) {
    auto r = Routine::build(plan, host);
    if (!r) return r.error();
    say("verifying the " + op + " routine on this host before writing it");
    const VerifyReport rep = verify_routine(*r, opt.verify);
    if (!rep.ok()) return verification_error(rep, "the " + op + " routine").error();
    verified += "; the conformance suite " + rep.summary() + " on " + host.brand();
    res.executed = true;
  } else {
    // `host` may be this CPU capped by --isa: the header says which, so that it does not read as
    // a CPU without the features.
    const bool capped = host.features().to_string() != CpuInfo::host().features().to_string();
    verified += "; not executed (the generating host, " + host.brand() + (capped ? ", capped by --isa to " : " with ") +
                host.features().to_string() + ", lacks features it needs)";
    say("not executing the routine: this host (with --isa: " + host.features().to_string() +
        ") lacks features it needs; static checks only");
  }
  o.header.push_back("Tuned on: " + (w.cpu_brand.empty() ? w.cpu_vendor : w.cpu_brand) + " (" + w.cpu_signature +
                     "), workload " + entry.workload + ", " + w.created + ", copysynth " + w.generator_version + ".");
  if (!entry.points.empty()) {
    char b[160];
    snprintf_c(b, sizeof b, "Measured then: %.2fx the speed of the %s (geometric mean over %zu points).",
               geomean_speedup(entry.points), baseline_name(entry.operation).c_str(), entry.points.size());
    o.header.push_back(b);
  }
  o.header.push_back("Target: " + std::string(isa_level_name(level)) + " (" + target.to_string() + ").");
  o.header.push_back(verified + ".");
  o.header.push_back("Command: " + opt.command);
  auto text = write_asm(plan, *flavor, o);
  if (!text) return text.error();
  if (opt.flavor == "linux" && plan.vec > 8)
    res.warnings.push_back("this " + op + " routine uses " + std::to_string(plan.vec) +
                           "-byte vector registers; the kernel allows them only between kernel_fpu_begin() and "
                           "kernel_fpu_end(), so this file cannot replace an arch/x86/lib routine as it is (that needs "
                           "a GPR plan, CopyParams vector_width = 8, which autotune's search does not force)");
  if (opt.path == kAsmToStdout) {
    // A pipe or terminal: written whole where it can be; a full disk or a closed descriptor is an
    // error (a pipe whose reader is gone ends the process by SIGPIPE, as it would `cat`).
    std::fflush(stdout);
    if (const int e = write_all(STDOUT_FILENO, text->text); e != 0)
      return make_error(ErrorCode::kSystem, std::string("error writing the .S file to standard output: ") +
                                                std::strerror(e));
  } else {
    // An earlier .S copysynth wrote (check_asm_destination lets only such a file be replaced) that
    // holds other text, perhaps edits of the user's (the linux flavour's header asks for an
    // EXPORT_SYMBOL line): kept as PATH.bak, as --emit keeps a wisdom file it cannot merge.
    // Lines that change from run to run without anyone editing the file (the command line, the
    // host it was verified on) do not count: a rerun with -q, or on another host, is no edit.
    const auto edited_text = [](const std::string& t) {
      std::string out;
      std::istringstream in(t);
      for (std::string l; std::getline(in, l);)
        if (l.rfind(" * Command: ", 0) != 0 && l.rfind(" * Verified: ", 0) != 0) out += l + "\n";
      return out;
    };
    std::error_code ec;
    if (std::filesystem::is_regular_file(opt.path, ec)) {
      std::ifstream in(opt.path, std::ios::binary);
      const std::string old((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (in && edited_text(old) != edited_text(text->text)) {
        // Written from memory, whole or not at all (a copy cut short by a full disk was left).
        const std::string bak = free_backup_name(opt.path);
        if (auto st = write_file_replacing(bak, old, ".S file's backup", ErrorCode::kSystem); !st)
          return make_error(ErrorCode::kSystem, "--emit-asm " + opt.path + " holds other text than this run writes, " +
                                                    "and it could not be kept: " + st.error().message +
                                                    "; nothing was written: move it away first");
        res.backup = bak;
      }
    }
    // Whole or not at all: a full disk left a cut-off file, over a good earlier one (a new-user test).
    COPYSYNTH_TRY(write_file_replacing(opt.path, text->text, ".S file", ErrorCode::kSystem));
  }
  res.instructions = text->instructions;
  res.code_bytes = text->code_bytes;
  return res;
}

}  // namespace copysynth

