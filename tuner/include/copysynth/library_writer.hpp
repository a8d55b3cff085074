// copysynth — files written from wisdom, each only after its code passed verification
// (invariant 9 of docs/architecture.md): one tuned routine as a GNU as `.S` file
// (write_asm_file(): autotune --from best.json --emit-asm FILE), and the tuned routines as an
// ahead-of-time library, `libcopysynth-tuned.so.1` (with the link `libcopysynth-tuned.so`) and
// `libcopysynth-tuned.a`
// (write_tuned_library(): autotune --from best.json --emit-lib DIR).
//
// A production user deploys an ordinary library, not a JIT: no JSON, no code generation and no
// verification at process start. write_tuned_library() takes this CPU's wisdom, rebuilds each
// routine (the code hash must match the one tuned), runs the full conformance suite on it here,
// writes it as a GNU as file (write_asm(), plain flavour: an endbr64 entry before exactly the JIT
// routine's bytes), adds a CPU guard, assembles with `as`, links with `ld` and archives with `ar`
// (binutils), then reads the code back out of the linked library and the objects and compares it
// with the verified routines' bytes; only then are the files put in DIR.
//
// What the library holds (one library per CPU model: a fleet file gives one library per host,
// written on that host; see README, "An ahead-of-time library"):
//   - exported, unversioned (so that they bind programs' memcpy@GLIBC_2.14 and the like, as the
//     LD_PRELOAD shim's do): memcpy, memmove, memset and __memcpy_chk, __memmove_chk, __memset_chk
//     for the operations the wisdom holds (fill serves memset), and copysynth_tuned_active() (1
//     when the tuned routines serve the calls, 0 when the built-in ones do);
//   - each export checks at its first call whether this CPU is the one the wisdom was tuned on —
//     CPUID vendor, family and model, and every feature of the wisdom's signature, AVX and
//     AVX-512 only where XCR0 says the OS saves their state — keeps the answer in a .bss word,
//     and jumps to the tuned routine, or on any other CPU to a safe built-in: copysynth's SSE2
//     routine of the same operation (the baseline x86-64 level), verified here like the tuned
//     one. Every later call is a load, a compare and a direct jump. The check calls nothing (inline
//     cpuid/xgetbv), touches no TLS and needs no relocation, so it is correct whatever the program
//     does first. (Not GNU IFUNC: glibc's loader prints a "Relink ... for IFUNC symbol" warning on
//     stderr for every BIND_NOW library that binds an IFUNC of a preloaded library; the .cpp says
//     more.)
//   - __*_chk(dst, src|c, n, dstlen) call __chk_fail (glibc: "*** buffer overflow detected ***")
//     when dstlen < n, as glibc's do;
//   - Intel CET: endbr64 at every entry, the IBT/SHSTK property note (linked with
//     -z cet-report=error), .note.GNU-stack, -z now and RELRO, no text relocations;
//   - unwind information (.eh_frame) for every function, the entries and the guard included;
//   - in the archive, one object per export (memcpy.o, memcpy_chk.o, memmove.o, ...), the guard
//     in guard.o and each routine in its own: a program that defines memcpy itself links memmove
//     or __memcpy_chk from the archive without a duplicate definition.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "copysynth/cpu.hpp"
#include "copysynth/isa.hpp"
#include "copysynth/result.hpp"
#include "copysynth/verify.hpp"
#include "copysynth/wisdom.hpp"

namespace copysynth {

/// File names written into the output directory. The shared library is the file
/// kTunedLibrarySoname, whose DT_SONAME is that name (ABI version 1: memcpy, memmove, memset, their
/// __*_chk forms and copysynth_tuned_active(), with C semantics), and kTunedLibraryShared is a
/// symbolic link to it, the name LD_PRELOAD and `cc -lcopysynth-tuned` use: a program linked
/// against the link records the versioned name in DT_NEEDED, as a distribution's libraries do.
inline constexpr const char* kTunedLibraryShared = "libcopysynth-tuned.so";
inline constexpr const char* kTunedLibrarySoname = "libcopysynth-tuned.so.1";
inline constexpr const char* kTunedLibraryStatic = "libcopysynth-tuned.a";
/// The C/C++ header declaring copysynth_tuned_active() (extern "C" in C++).
inline constexpr const char* kTunedLibraryHeader = "copysynth-tuned.h";

struct LibraryOptions {
  std::string dir;           ///< output directory (created when missing; its parent must exist)
  std::string wisdom_path;   ///< for the README and the .S headers
  std::string command;       ///< the command line, for the README and the .S headers
  /// The CPU the guard accepts, as a CpuInfo::signature() ("AuthenticAMD-26-2:sse2,avx,...");
  /// empty: the wisdom's own cpu_signature. Another value makes a library whose guard never
  /// matches this host: how the tests check the fallback on any machine.
  std::string guard_signature;
  VerifyOptions verify;      ///< the conformance suite run on every routine (default: the full one)
  std::function<void(const std::string&)> progress;  ///< progress lines (may be empty)
};

struct LibraryResult {
  /// Paths written, in this order: libcopysynth-tuned.so.1, the link libcopysynth-tuned.so,
  /// libcopysynth-tuned.a, README, copysynth-tuned.h, src/.
  std::vector<std::string> files;
  std::vector<std::string> exported;  ///< the dynamic symbols the .so exports
  std::vector<std::string> routines;  ///< "memcpy=<routine name>" per tuned operation
  std::string guard_signature;        ///< the CPU signature the guard accepts
  /// The operations whose C library function (memcpy, memmove, memset) an earlier library in
  /// the directory exported (its symbol table, read before it is replaced) and this one does
  /// not: programs using it call the system's again. Empty where there was none.
  std::vector<Operation> no_longer_replaced;
};

/// Whether `signature` is a CPU signature a guard can check (LibraryOptions::guard_signature:
/// "VENDOR-FAMILY-MODEL:features", as `autotune --show` prints this_cpu.signature, with features
/// copysynth knows and a family and model CPUID can encode). Error kInvalidArgument says what is
/// wrong; write_tuned_library() gives the same error, after loading the wisdom.
Status check_guard_signature(const std::string& signature);

/// Writes libcopysynth-tuned.so.1 (and the link libcopysynth-tuned.so to it),
/// libcopysynth-tuned.a, copysynth-tuned.h, README and the sources (src/: the .S files
/// and the version script) into opt.dir. `w` is this CPU's wisdom (load_wisdom_for); its memcpy,
/// memmove and fill entries are used (clear_page has no C library symbol and is left out).
/// Errors: kWisdomMismatch (w is for another CPU than `host`, or holds none of the three
/// operations — for wisdom judged by a program (app_verdicts) that dropped them all, the message
/// says the judge kept nothing rather than to tune — or a routine's rebuilt code differs from
/// the one tuned); kVerifyFailed (a routine
/// failed the conformance suite; nothing is written); kSystem (its test buffers could not be
/// mapped: ulimit -v); kInvalidArgument (bad guard_signature, or
/// the directory cannot be made or written); kSystem when `as`, `ld` or `ar` (binutils) is
/// missing or fails (with its message and what to install); kEmitFailed when the code read back
/// from the linked library or its objects differs from the verified bytes (a copysynth or
/// toolchain bug: nothing is written).
Result<LibraryResult> write_tuned_library(const Wisdom& w, const LibraryOptions& opt,
                                          const CpuInfo& host = CpuInfo::host());

// ----- one routine as a .S file (autotune --emit-asm) ------------------------------------------

/// AsmFileOptions::path naming standard output ("-", as `gcc -o -`): the text is written there
/// as it is, not through a temporary file.
inline constexpr const char* kAsmToStdout = "-";

struct AsmFileOptions {
  std::string path;                ///< the `.S` file to write; kAsmToStdout: standard output
  std::string flavor = "plain";    ///< asm_flavor() name: "linux", "glibc" or "plain"
  std::string symbol;              ///< the function's name (check_asm_symbol); empty:
                                   ///< default_asm_symbol() of the entry's operation
  std::optional<IsaLevel> target;  ///< the level the file is for; nullopt: the lowest the plan runs on
  std::string wisdom_path;         ///< where the wisdom was read from (messages)
  std::string command;             ///< the command line, for the header comment
  VerifyOptions verify;            ///< the conformance suite run where the host can run the code
  std::function<void(const std::string&)> progress;  ///< progress lines (may be empty)
};

struct AsmFileResult {
  std::string path;                   ///< the file written
  std::string symbol;                 ///< the symbol it defines
  IsaLevel target = IsaLevel::kSSE2;  ///< the level it is for
  bool executed = false;              ///< the conformance suite ran here (else static checks alone)
  std::size_t instructions = 0;       ///< instructions written (padding excluded)
  std::size_t code_bytes = 0;         ///< bytes of code it assembles to: exactly the JIT routine's
  std::string backup;                 ///< where the earlier file at `path` was kept (PATH.bak, or
                                      ///< PATH.bak.N when that is taken), when it held other text
                                      ///< than the Command and Verified lines; empty otherwise
  std::vector<std::string> warnings;  ///< what a user of the file should know (e.g. the linux
                                      ///< flavour with vector registers), one sentence each
};

/// Checks, before any work, that write_asm_file() may write `path` (kAsmToStdout always may):
/// never the wisdom file it reads (`wisdom_path`), an existing file only when it is a `.S` file
/// copysynth wrote (its first line says "written by copysynth"), and otherwise
/// check_output_path("--emit-asm", path).
/// Errors: kInvalidArgument, saying what to do.
Status check_asm_destination(const std::string& path, const std::string& wisdom_path);

/// The entry of `w` a `.S` file is written for: the one of `op` when given, else memcpy, else the
/// only entry. `wisdom_path` names the file in messages. Errors: kWisdomMismatch when there is no
/// such entry (naming the operations `w` holds and how to tune the one asked for).
Result<const WisdomEntry*> asm_entry(const Wisdom& w, std::optional<Operation> op, const std::string& wisdom_path);

/// Writes `entry` (of the host document `w`) as a GNU as file: the plan's code generated, its hash
/// compared with the one tuned, then verified before anything is written — the static checks for
/// the target level always, and the conformance suite (opt.verify) when `host` (this CPU, perhaps
/// capped: autotune --isa) can run the code; the header comment says which ran, the CPU tuned on,
/// the speed measured then, the target and the command line. The routine needs no matching host:
/// a file for another CPU is written after the static checks alone. Nothing is written on error.
/// Errors: kUnsupportedIsa (opt.target is below what the plan needs); kWisdomMismatch (this
/// generator emits other code for the plan than the one tuned); kVerifyFailed (static checks or
/// conformance suite; kSystem where its test buffers could not be mapped: ulimit -v); kInvalidArgument (flavour, symbol); kSystem (the file cannot be written:
/// write_file_replacing, file_io.hpp, so that a full disk leaves an earlier file whole); Routine::build's.
Result<AsmFileResult> write_asm_file(const Wisdom& w, const WisdomEntry& entry, const AsmFileOptions& opt,
                                     const CpuInfo& host = CpuInfo::host());

}  // namespace copysynth

