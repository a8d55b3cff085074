// libcopysynth-preload.so — the tuned routines in an unmodified program:
//
//   COPYSYNTH_WISDOM=best.json LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libcopysynth-preload.so prog
//
// Exports memcpy, memmove, memset and their _FORTIFY_SOURCE forms __memcpy_chk, __memmove_chk,
// __memset_chk (what Debian's programs and libraries import: `nm -D --undefined-only`). Each is a
// trampoline, `endbr64; jmp *slot(%rip)`, through a hidden pointer of this library. At
// start-up the library loads the wisdom named by COPYSYNTH_WISDOM, takes the entries of the
// running CPU (its host in a fleet file), rebuilds them, checks their code is byte-identical to the
// code tuned, verifies them (VerifyOptions::quick() when the wisdom was tuned on this very CPU
// signature — that code passed the full suite here at tuning time —, VerifyOptions::startup()
// otherwise; COPYSYNTH_PRELOAD_VERIFY=startup or =full for more) and only then points the slots at
// them. When the variable is unset, the file is missing,
// malformed or for another CPU, a routine's rebuilt code differs from the code tuned (that check,
// not the copysynth version that wrote the file, decides) or fails verification, it prints one
// line on stderr and the slots keep the C library's routines. COPYSYNTH_PRELOAD_STATS=1 (or yes,
// true, on, stderr: stderr; 0, no, false, off: none) or =FILE (appended) reports what was installed and, at exit, how many calls and bytes each
// installed routine served (a FILE that cannot be opened: one line on stderr, and no report); a
// COPYSYNTH_PRELOAD_VERIFY other than "full" or "startup" is said in one line and means the default.
//
// COPYSYNTH_PROFILE=FILE records the program's own calls (preload_profile.cpp; the record format:
// runtime/include/copysynth/profile.hpp): the slots point at recording wrappers that count each
// call in the calling thread's record (length, alignments, distance class, a sample of windows of
// consecutive calls) and forward it to the routine that would serve it otherwise — the tuned one,
// or glibc's without COPYSYNTH_WISDOM (recording without wisdom is the normal first step, so the
// "not set" line is not printed then), through the COPYSYNTH_PRELOAD_STATS counting wrapper when
// both are set. Each process appends one JSON line to FILE at exit (this library's destructor:
// after the program's destructors and atexit handlers; a program that ends in _exit(), exec() or
// a fatal signal leaves no record) and, with COPYSYNTH_PROFILE_SIGNAL=USR2 (a name or a number),
// one each time that signal arrives, after which its counts start again from zero (counts racing
// with the dump may be lost or counted twice, a few calls). A fork()ed child records its own calls
// only. FILE is opened at start-up and kept (KeptFile); one that cannot be opened is said in one
// line on stderr and the program runs unrecorded. Costs: an initial-exec thread_local pointer (8
// bytes per thread, recording or not); while recording, about 180 KB of address space per thread
// that copies (mmap'd at its first call, never freed; pages touched as counts land), and per call
// a dozen counter increments, no lock, no atomic read-modify-write (docs/performance.md:
// "Recording a profile (COPYSYNTH_PROFILE): overhead").
//
// Never calling itself while it initialises (memcpy is called before main by other libraries'
// constructors, and by asmjit, the JSON parser and the verifier while this library loads wisdom):
//   1. Until the constructor runs, each slot holds a bootstrap routine of this file (`rep movsb`,
//      `std; rep movsb` backwards for overlapping memmove, `rep stosb`): correct for any arguments,
//      calling nothing, constant-initialised, so valid from the first instruction of the process
//      (the dynamic loader relocates this library before any code runs; ld.so and libc's own
//      internal calls never reach it — they bind to glibc's hidden aliases).
//   2. The constructor first asks the dynamic loader for the C library's routines
//      (dlopen("libc.so.6", RTLD_NOLOAD) + dlsym, which runs glibc's IFUNC resolvers) and stores
//      them in the slots. From then on every memcpy the process makes — including those of
//      asmjit, nlohmann::json, libstdc++ and the verifier below — goes to glibc's.
//   3. It then builds and verifies the routines (install_all: all or nothing). The verifier calls
//      the candidates directly through its ABI probe and uses memcpy/memmove/memset/memcmp as
//      references: those are glibc's via the slots, never the routine under test. Only after every
//      routine passed are the slots switched, one release store each.
// Thread safety of the first call: every value a slot ever holds is a complete routine; a call
// loads the slot once. Fork: slots and code are inherited (the code pages stay mapped in both
// processes; the child builds no code). Exit: routines are never unmapped, so destructors and
// atexit handlers that copy after this library's destructor still run correct code.
// Start-up cost: reading and checking the JSON (the entries' measured points checked to be JSON
// but not parsed, WisdomPoints::kSkip), building and quick-checking memcpy, memmove and fill tuned
// on this CPU: 1.6-2.1 ms at best on a 2-core VM, plus 0.55-1.31 ms (the thirty-third round's
// figure, on a slower day) to load this library, whose libstdc++ is linked in and which needs no
// libm (api/CMakeLists.txt); 3-4 ms per process in all (docs/perf/startup-check/README.md); with the start-up check 8-13 ms, more for rep classes in
// pieces (README.md).
//
// The copysynth libraries linked in here have no namespace-scope dynamic initialisers (process-wide
// state is constant-initialised or a function-local static), so it does not matter that this
// constructor runs before the other .init_array entries of the library. Those include the
// initialisers of the libstdc++ linked in (api/CMakeLists.txt; GCC 12: the exception emergency
// pool of eh_alloc.cc, locale facet guards, atexit registrations), which therefore run after it:
// nothing here needs them first. An exception allocates with malloc and falls back to the
// emergency pool only when malloc fails, so until that pool is set up an exception thrown under
// exhausted memory ends the program instead (this code reports errors by value, not by throwing,
// and the pool is set up before main). No file of the shim includes <iostream>.
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <strings.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

#include "copysynth/c_format.hpp"
#include "copysynth/copysynth.hpp"
#include "copysynth/routine.hpp"
#include "preload_internal.hpp"

using copysynth::CopyFn;
using copysynth::FillFn;
using copysynth::Operation;

namespace {

// ----- bootstrap routines: correct for any arguments, call nothing ----------------------------

void* boot_memcpy(void* dst, const void* src, std::size_t n) {
  void* d = dst;
  asm volatile("rep movsb" : "+D"(d), "+S"(src), "+c"(n) : : "memory");
  return dst;
}

void* boot_memmove(void* dst, const void* src, std::size_t n) {
  // Forward unless dst lies inside (src, src + n), where a forward copy would overwrite src
  // bytes before reading them; then backward, with the direction flag cleared again (SysV ABI).
  if (reinterpret_cast<std::uintptr_t>(dst) - reinterpret_cast<std::uintptr_t>(src) >= n) return boot_memcpy(dst, src, n);
  void* d = static_cast<char*>(dst) + n - 1;
  const void* s = static_cast<const char*>(src) + n - 1;
  asm volatile("std\n\trep movsb\n\tcld" : "+D"(d), "+S"(s), "+c"(n) : : "memory");
  return dst;
}

void* boot_memset(void* dst, int c, std::size_t n) {
  void* d = dst;
  asm volatile("rep stosb" : "+D"(d), "+c"(n) : "a"(c) : "memory");
  return dst;
}

static_assert(std::atomic<CopyFn>::is_always_lock_free && std::atomic<FillFn>::is_always_lock_free);
static_assert(sizeof(std::atomic<CopyFn>) == sizeof(CopyFn), "the trampolines read the slot as a plain pointer");

}  // namespace

// The slots the exported trampolines jump through (an aligned 8-byte load: atomic on x86-64).
extern "C" {
[[gnu::visibility("hidden")]] std::atomic<CopyFn> copysynth_preload_memcpy_slot{&boot_memcpy};
[[gnu::visibility("hidden")]] std::atomic<CopyFn> copysynth_preload_memmove_slot{&boot_memmove};
[[gnu::visibility("hidden")]] std::atomic<FillFn> copysynth_preload_memset_slot{&boot_memset};
// This library's own entry points (hidden aliases of the exported ones), to tell them apart from
// the C library's.
void copysynth_preload_memcpy_entry();
void copysynth_preload_memmove_entry();
void copysynth_preload_memset_entry();
}

// The exported routines. __*_chk(dst, src|c, n, dstlen) is what _FORTIFY_SOURCE calls when the
// compiler knows the destination's size: dstlen < n means an overflow, reported by glibc's
// __chk_fail ("*** buffer overflow detected ***: terminated"), which does not return. Each starts
// with endbr64 (Intel CET/IBT: programs reach them by an indirect jump through their PLT/GOT; a
// NOP on CPUs without CET).
asm(R"(
    .pushsection .text
    .macro copysynth_trampoline name, slot
    .globl \name
    .type \name, @function
    .p2align 4
\name:
copysynth_preload_\name\()_entry:
    .cfi_startproc
    endbr64
    jmp *\slot(%rip)
    .cfi_endproc
    .size \name, .-\name
    .endm
    .macro copysynth_chk name, slot
    .globl \name
    .type \name, @function
    .p2align 4
\name:
    .cfi_startproc
    endbr64
    cmpq %rdx, %rcx
    jb 1f
    jmp *\slot(%rip)
1:  jmp __chk_fail@PLT
    .cfi_endproc
    .size \name, .-\name
    .endm

    .hidden copysynth_preload_memcpy_entry
    .hidden copysynth_preload_memmove_entry
    .hidden copysynth_preload_memset_entry
    .globl copysynth_preload_memcpy_entry
    .globl copysynth_preload_memmove_entry
    .globl copysynth_preload_memset_entry
    copysynth_trampoline memcpy, copysynth_preload_memcpy_slot
    copysynth_trampoline memmove, copysynth_preload_memmove_slot
    copysynth_trampoline memset, copysynth_preload_memset_slot
    copysynth_chk __memcpy_chk, copysynth_preload_memcpy_slot
    copysynth_chk __memmove_chk, copysynth_preload_memmove_slot
    copysynth_chk __memset_chk, copysynth_preload_memset_slot
    .popsection
)");

// Debian's libasmjit.a (the only form Debian ships) is compiled as position-dependent code (PIE
// objects, not PIC), which a shared library can hold only when every reference it makes is to a
// symbol defined inside that library: its code addresses its own data PC-relative, which the
// version script makes local. Its one reference to the C library's data, `stderr` (the stream
// DebugUtils::debugOutput writes asmjit's assertion messages to), is a PC-relative load that
// cannot reach libc.so's variable. This hidden definition takes its place inside this library:
// every reference here binds to it, and it points at the C library's standard-error FILE
// (_IO_2_1_stderr_, exported by glibc since 2.2.5), set by the dynamic loader before any code runs.
asm(R"(
    .pushsection .data
    .globl stderr
    .hidden stderr
    .type stderr, @object
    .p2align 3
stderr:
    .quad _IO_2_1_stderr_
    .size stderr, 8
    .popsection
)");

// ----- shared with preload_profile.cpp (preload_internal.hpp) ----------------------------------

namespace copysynth::preload {

const char* env(const char* name) { return secure_getenv(name); }

std::size_t write_all(int fd, const char* p, std::size_t n, int* error) noexcept {
  const int saved = errno;
  // SIGPIPE (a pipe whose reader left: EPIPE) and SIGXFSZ (the file size limit, RLIMIT_FSIZE or
  // `ulimit -f`: EFBIG) would end the program; blocked, the write fails with the errno instead.
  sigset_t set, old;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  sigaddset(&set, SIGXFSZ);
  pthread_sigmask(SIG_BLOCK, &set, &old);
  sigset_t pending;
  sigpending(&pending);
  const bool pipe_was_pending = sigismember(&pending, SIGPIPE) == 1;
  const bool fsize_was_pending = sigismember(&pending, SIGXFSZ) == 1;
  std::size_t off = 0;
  while (off < n) {
    const ssize_t k = ::write(fd, p + off, n - off);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      if (error) *error = k < 0 ? errno : 0;
      // The failed write raised its signal for this thread, now pending: taken here, unless one
      // was pending before (the program's own, delivered when the mask is restored).
      const int sig = k < 0 && errno == EPIPE && !pipe_was_pending    ? SIGPIPE
                      : k < 0 && errno == EFBIG && !fsize_was_pending ? SIGXFSZ
                                                                      : 0;
      if (sig) {
        sigset_t one;
        sigemptyset(&one);
        sigaddset(&one, sig);
        const timespec zero{};
        sigtimedwait(&one, nullptr, &zero);
      }
      break;
    }
    off += static_cast<std::size_t>(k);
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  errno = saved;
  return off;
}

void write_line(int fd, std::string line) {
  line += '\n';
  write_all(fd, line.data(), line.size());
}

int kept_file_fd(KeptFile& f, const char* path) noexcept {
  struct stat st {};
  if (f.fd >= 0 && ::fstat(f.fd, &st) == 0 && st.st_dev == f.dev && st.st_ino == f.ino) return f.fd;
  // Not opened yet, or closed by the program: (re)open (F_DUPFD_CLOEXEC to a high number, out of
  // the way of the program's own descriptors).
  // O_NONBLOCK: a FIFO nobody reads fails (ENXIO) instead of blocking the program for ever.
  const int fd = ::open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0644);
  if (fd < 0) return -1;
  if (const int fl = ::fcntl(fd, F_GETFL); fl >= 0) ::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  int high = ::fcntl(fd, F_DUPFD_CLOEXEC, 512);
  if (high >= 0) {
    ::close(fd);
  } else {
    high = fd;
  }
  if (::fstat(high, &st) != 0) {
    const int e = errno;
    ::close(high);
    errno = e;
    return -1;
  }
  f = {high, st.st_dev, st.st_ino};
  return high;
}

}  // namespace copysynth::preload

namespace {

using copysynth::preload::env;
using copysynth::preload::write_line;

constexpr const char* kUsingSystem = "using the system memcpy, memmove and memset";

// ----- diagnostics -------------------------------------------------------------------------------

/// A COPYSYNTH_PRELOAD_STATS value that means stderr (an on word of env_word_on, routine.hpp, or
/// "stderr") or off (an off word, or empty), in any case; any other value names a file (a file
/// called `yes` is named `./yes`).
bool stats_to_stderr(const std::string& v) {
  return copysynth::env_word_on(v.c_str()) || strcasecmp(v.c_str(), "stderr") == 0;
}
bool stats_off(const std::string& v) { return v.empty() || copysynth::env_word_off(v.c_str()); }

/// Where COPYSYNTH_PRELOAD_STATS sends reports: "" off, a stats_to_stderr() word fd 2, else a file.
std::string& stats_target() {
  static std::string* t = new std::string;  // never destroyed: used by the destructor below
  return *t;
}

/// The stats file, opened at start-up and kept (KeptFile, preload_internal.hpp).
copysynth::preload::KeptFile g_stats_file;

/// The descriptor to write the stats file through, or -1.
int stats_fd(const std::string& path) { return copysynth::preload::kept_file_fd(g_stats_file, path.c_str()); }

/// What descriptor 2 was when the stats were set up (stderr as the target): the at-exit report
/// goes to descriptor 2 only while it is still that file. A program started with stderr closed,
/// or that closed it and opened a file of its own that got the number 2, must not find the
/// report in that file.
copysynth::preload::KeptFile g_stderr_id;

/// One line of diagnostics (no newline inside) to the stats target.
void report(const std::string& line) {
  const std::string& t = stats_target();
  if (t.empty()) return;
  const std::string text = "copysynth-preload[" + std::to_string(getpid()) + "]: " + line;
  if (stats_to_stderr(t)) {
    struct stat st {};
    if (g_stderr_id.fd == 2 && ::fstat(2, &st) == 0 && st.st_dev == g_stderr_id.dev && st.st_ino == g_stderr_id.ino)
      write_line(2, text);
    return;
  }
  if (const int fd = stats_fd(t); fd >= 0) write_line(fd, text);
}

/// The one line on stderr when the shim falls back (also in the stats file, if one is named).
void fall_back(std::string raw) {
  // The reason quotes paths and values from the environment: control bytes (a CR, an ESC that
  // would drive the terminal) are written as \ooo, a newline as a space, and the line is capped.
  std::string why;
  for (const char c : raw) {
    if (why.size() >= 2048) {
      why += "... (" + std::to_string(raw.size()) + " bytes in all)";
      break;
    }
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') {
      why += ' ';
    } else if (u < 0x20 || u == 0x7f) {
      const char oct[5] = {'\\', static_cast<char>('0' + (u >> 6)), static_cast<char>('0' + ((u >> 3) & 7)),
                           static_cast<char>('0' + (u & 7)), 0};
      why += oct;
    } else {
      why += c;
    }
  }
  write_line(2, "copysynth-preload: " + why + "; " + kUsingSystem);
  if (const std::string& t = stats_target(); !t.empty() && !stats_to_stderr(t))
    report("fell back: " + why);
}

// ----- call counting (COPYSYNTH_PRELOAD_STATS only) -----------------------------------------------

struct Counter {
  std::atomic<std::uint64_t> calls{0}, bytes{0};
};
Counter g_count[3];  // memcpy, memmove, memset
CopyFn g_counted_memcpy = nullptr, g_counted_memmove = nullptr;
FillFn g_counted_memset = nullptr;
std::string* g_names[3] = {nullptr, nullptr, nullptr};  // names of the counted routines

void* counting_memcpy(void* d, const void* s, std::size_t n) {
  g_count[0].calls.fetch_add(1, std::memory_order_relaxed);
  g_count[0].bytes.fetch_add(n, std::memory_order_relaxed);
  return g_counted_memcpy(d, s, n);
}
void* counting_memmove(void* d, const void* s, std::size_t n) {
  g_count[1].calls.fetch_add(1, std::memory_order_relaxed);
  g_count[1].bytes.fetch_add(n, std::memory_order_relaxed);
  return g_counted_memmove(d, s, n);
}
void* counting_memset(void* d, int c, std::size_t n) {
  g_count[2].calls.fetch_add(1, std::memory_order_relaxed);
  g_count[2].bytes.fetch_add(n, std::memory_order_relaxed);
  return g_counted_memset(d, c, n);
}

void reset_counts_in_child() {
  for (Counter& c : g_count) {
    c.calls.store(0, std::memory_order_relaxed);
    c.bytes.store(0, std::memory_order_relaxed);
  }
}

// ----- initialisation ----------------------------------------------------------------------------

/// Step 2: the C library's routines into the slots (see the top of this file).
void use_c_library_routines() {
  void* libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  if (!libc) {
    fall_back(std::string("cannot find the C library (dlopen libc.so.6: ") + dlerror() +
              "); copying with rep movsb meanwhile");
    return;
  }
  void* m = dlsym(libc, "memcpy");
  void* mm = dlsym(libc, "memmove");
  void* ms = dlsym(libc, "memset");
  dlclose(libc);  // RTLD_NOLOAD took a reference; libc stays loaded
  if (m && m != reinterpret_cast<void*>(&copysynth_preload_memcpy_entry))
    copysynth_preload_memcpy_slot.store(reinterpret_cast<CopyFn>(m), std::memory_order_release);
  if (mm && mm != reinterpret_cast<void*>(&copysynth_preload_memmove_entry))
    copysynth_preload_memmove_slot.store(reinterpret_cast<CopyFn>(mm), std::memory_order_release);
  if (ms && ms != reinterpret_cast<void*>(&copysynth_preload_memset_entry))
    copysynth_preload_memset_slot.store(reinterpret_cast<FillFn>(ms), std::memory_order_release);
}

/// COPYSYNTH_PRELOAD_VERIFY: "full" (the whole suite), "startup" (VerifyOptions::startup() even
/// for wisdom tuned on this very CPU); unset or empty: the default (WisdomOptions: the quick check
/// for wisdom tuned on this CPU, the start-up check otherwise); any other value is reported in one
/// line on stderr and means the default.
enum class Check { kDefault, kStartup, kFull };
Check verification() {
  const char* v = env("COPYSYNTH_PRELOAD_VERIFY");
  if (!v || !*v) return Check::kDefault;
  if (strcasecmp(v, "full") == 0) return Check::kFull;
  if (strcasecmp(v, "startup") == 0) return Check::kStartup;
  write_line(2, "copysynth-preload: unknown value " + copysynth::quoted_bytes(v) +
                    " of COPYSYNTH_PRELOAD_VERIFY (it takes \"full\" or \"startup\"; unset, the quick check "
                    "for wisdom tuned on this CPU, the start-up check otherwise); using the default check");
  return Check::kDefault;
}

/// COPYSYNTH_PERF_MAP is read by the runtime library each time a routine is put in executable
/// memory (routine.cpp), which says nothing: a value that is neither an on nor an off word
/// (env_word_on/env_word_off, routine.hpp), such as "2", wrote no map without a word. Said here in
/// one line; it still means off.
void check_perf_map() {
  const char* v = env("COPYSYNTH_PERF_MAP");
  if (!v || !*v || copysynth::env_word_on(v) || copysynth::env_word_off(v)) return;
  write_line(2, "copysynth-preload: unknown value " + copysynth::quoted_bytes(v) +
                    " of COPYSYNTH_PERF_MAP (it takes 1, yes, true or on to write /tmp/perf-PID.map; 0, no, false, "
                    "off or unset for none); no perf map is written");
}

/// COPYSYNTH_PRELOAD_STATS: the stats target, and for a file, the file opened now (see KeptFile).
/// A file that cannot be opened is reported in one line on stderr, and no report is made.
void set_up_stats() {
  const char* s = env("COPYSYNTH_PRELOAD_STATS");
  if (!s || stats_off(s)) return;
  std::string target = s;
  if (stats_to_stderr(target)) {
    struct stat st {};
    if (::fstat(2, &st) == 0) g_stderr_id = {2, st.st_dev, st.st_ino};  // else: stderr closed, no report
  } else {
    // The report appended to the wisdom or the profile would spoil it for every later reader.
    for (const char* other : {"COPYSYNTH_WISDOM", "COPYSYNTH_PROFILE"})
      if (const char* o = env(other); o && *o && copysynth::preload::same_file(s, o)) {
        write_line(2, "copysynth-preload: COPYSYNTH_PRELOAD_STATS and " + std::string(other) +
                          " name the same file " + copysynth::quoted_bytes(s, 256) +
                          ": the report appended to it would spoil it; continuing without the report (give the "
                          "report a file of its own)");
        return;
      }
    // Absolute: a program that changes directory and closes the descriptor reopens the same file.
    target = copysynth::preload::absolute(s);
    if (stats_fd(target) < 0) {
      const int e = errno;
      write_line(2, "copysynth-preload: cannot open the stats file " + copysynth::quoted_bytes(s, 256) +
                        " (COPYSYNTH_PRELOAD_STATS): " + std::strerror(e) + "; continuing without the report");
      return;
    }
  }
  stats_target() = target;
  pthread_atfork(nullptr, nullptr, &reset_counts_in_child);
}

/// Step 3: wisdom, verification, the switch. `recording`: COPYSYNTH_PROFILE is recording this
/// process; then an unset COPYSYNTH_WISDOM is not said on stderr (recording with the system
/// routines is the first step of tuning for a program's own calls), only in the stats file.
/// `profile_failed`: COPYSYNTH_PROFILE was set but could not record (said on stderr already):
/// an unset COPYSYNTH_WISDOM is then not a second line either.
void install_from_wisdom(bool recording, bool profile_failed) {
  const Check check = verification();  // said even when there is no wisdom to verify
  const char* path = env("COPYSYNTH_WISDOM");
  if (!path || !*path) {
    if (getauxval(AT_SECURE))
      fall_back("COPYSYNTH_WISDOM is ignored in a set-user-ID or set-group-ID program");
    else if (recording)
      report(std::string("COPYSYNTH_WISDOM is ") + (path ? "empty" : "not set") +
             ": recording (COPYSYNTH_PROFILE) the calls served by the system routines");
    else if (profile_failed)
      report(std::string("COPYSYNTH_WISDOM is ") + (path ? "empty" : "not set") + ": the system routines serve the calls");
    else
      fall_back(std::string("COPYSYNTH_WISDOM is ") + (path ? "set but empty" : "not set") +
                " (name a wisdom file written by `autotune --emit`)");
    return;
  }
  copysynth::WisdomOptions opt;
  opt.operations = {Operation::kMemcpy, Operation::kMemmove, Operation::kFill};
  if (check == Check::kFull) opt.verify = opt.verify_same_cpu = copysynth::VerifyOptions{};
  if (check == Check::kStartup) opt.verify_same_cpu = opt.verify;
  auto r = copysynth::install_wisdom(path, opt);
  if (!r) {
    fall_back(r.error().message);
    return;
  }
  std::string what;
  const bool stats = !stats_target().empty();
  for (std::size_t i = 0; i < r->operations.size(); ++i) {
    const Operation op = r->operations[i];
    const int k = op == Operation::kMemcpy ? 0 : op == Operation::kMemmove ? 1 : 2;
    what += std::string(" ") + (k == 0 ? "memcpy" : k == 1 ? "memmove" : "memset") + "=" + r->routines[i];
    if (stats) g_names[k] = new std::string(r->routines[i]);
    switch (op) {
      case Operation::kMemcpy:
        g_counted_memcpy = copysynth::installed_memcpy();
        copysynth_preload_memcpy_slot.store(stats ? &counting_memcpy : g_counted_memcpy, std::memory_order_release);
        break;
      case Operation::kMemmove:
        g_counted_memmove = copysynth::installed_memmove();
        copysynth_preload_memmove_slot.store(stats ? &counting_memmove : g_counted_memmove, std::memory_order_release);
        break;
      default:
        g_counted_memset = copysynth::installed_fill();
        copysynth_preload_memset_slot.store(stats ? &counting_memset : g_counted_memset, std::memory_order_release);
        break;
    }
  }
  char ms[32];
  copysynth::snprintf_c(ms, sizeof ms, "%.1f", r->seconds * 1e3);
  report("installed from " + r->path + " for CPU " + r->signature + " (read, built and verified" +
         (check == Check::kFull      ? " with the full suite"
          : check == Check::kStartup ? " with the start-up check"
          : r->same_cpu              ? " with the quick check: tuned on this CPU"
                                     : " with the start-up check") +
         " in " + ms + " ms):" + what);
}

[[gnu::constructor]] void copysynth_preload_init() {
  bool recording = false;
  try {
    set_up_stats();
    check_perf_map();
    use_c_library_routines();
    recording = copysynth::preload::profile_set_up();
    const char* asked = env("COPYSYNTH_PROFILE");
    install_from_wisdom(recording, !recording && asked && *asked);
  } catch (const std::exception& ex) {
    fall_back(std::string("internal error: ") + ex.what());
  } catch (...) {
    fall_back("internal error");
  }
  // Last: the recording wrappers forward to whatever the slots hold now.
  if (recording) copysynth::preload::profile_start();
}

// Runs after the program's own destructors and atexit handlers, and those of the libraries loaded
// after this one (the dynamic loader finalises in the reverse order of initialisation), before
// those of the C library. The profile's at-exit record comes first, so that the stats report's own
// copies are not in it.
[[gnu::destructor]] void copysynth_preload_fini() {
  copysynth::preload::profile_finish();
  if (stats_target().empty()) return;
  static const char* const kNames[3] = {"memcpy", "memmove", "memset"};
  for (int k = 0; k < 3; ++k) {
    if (!g_names[k]) {
      report(std::string(kNames[k]) + ": the system routine (not counted)");
      continue;
    }
    report(std::string(kNames[k]) + ": " + std::to_string(g_count[k].calls.load(std::memory_order_relaxed)) + " calls, " +
           std::to_string(g_count[k].bytes.load(std::memory_order_relaxed)) + " bytes by " + *g_names[k]);
  }
}

}  // namespace
