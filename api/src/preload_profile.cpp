// libcopysynth-preload.so — COPYSYNTH_PROFILE=FILE: recording the program's own memcpy, memmove
// and memset calls into a profile (the format: runtime/include/copysynth/profile.hpp).
//
// The slots (preload.cpp) point at recording wrappers that count each call in the calling
// thread's record and then call the routine the slot held before (the tuned one, glibc's without
// wisdom, or the COPYSYNTH_PRELOAD_STATS counting wrapper, which then counts what is forwarded).
//
// Thread records. Each thread that copies gets a ThreadRecord, mapped with mmap at its first call
// (never malloc: realloc calls memcpy, and an allocator may hold a lock the copy was called
// under), reached through an initial-exec thread_local pointer (static TLS: the shim is
// LD_PRELOADed; 8 bytes per thread whether or not the process records), and pushed onto a global
// lock-free list, so that the writer sums every thread, those that exited too (records are never
// freed). The owning thread is the only one that updates its record; the writer reads records
// while their threads run, through relaxed atomics (plain moves on x86-64). Recording a call calls
// no function but on a thread's first call (mmap) or its first call after a dump or fork (madvise,
// to zero its record): no memcpy, no reentrancy guard needed (tests/preload_test.sh checks the
// wrappers' code with objdump). This file is compiled with -fno-tree-loop-distribute-patterns
// (api/CMakeLists.txt) so that the compiler does not turn its loops into memcpy/memset calls.
//
// Epochs. g_epoch counts the dumps (and forks). A record whose epoch is not the current one is
// counted as empty by the writer and is zeroed by its thread at its next call. A signal dump
// writes the sums and then advances the epoch, so that the records of a run add up to the run;
// calls made while the dump reads the records may be lost or counted twice (a few calls). After
// fork() the child advances its epoch (pthread_atfork), so its record holds only its own calls.
//
// Windows: one starts every `period` calls of a thread (period 4096 at first) and holds its next
// kWindowCalls calls; a thread keeps at most kMaxWindows. When they are all taken, every other
// window is dropped (those not starting at a multiple of twice the period) and the period doubles:
// windows start at call 0 and the store holds 64, so the window that wanted to start then starts
// at a multiple of the new period too. Windows are addressed through `order` (slot numbers), so
// dropping them copies no window.
//
// Writing a record (at exit from the shim's destructor, or in the COPYSYNTH_PROFILE_SIGNAL
// handler): async-signal-safe — one mmap'd buffer (sized for the worst case; untouched pages cost
// nothing), the JSON formatted by hand into it, one write() under flock() to the descriptor
// opened at start-up (KeptFile: the program may close it or sandbox itself), munmap. Strings that
// need allocating (the program's path and the CPU signature, JSON-escaped) are made at start-up.
// The line is the one profile_record_json() (runtime/src/profile.cpp) writes for the same record:
// tests/preload_test.sh compares them.
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>

#include "copysynth/copysynth.hpp"
#include "copysynth/cpu.hpp"
#include "copysynth/file_io.hpp"
#include "copysynth/profile.hpp"
#include "preload_internal.hpp"

using copysynth::CopyFn;
using copysynth::Distance;
using copysynth::FillFn;
using copysynth::kProfileExactSizes;

// The slots the exported routines jump through (preload.cpp).
extern "C" {
extern std::atomic<CopyFn> copysynth_preload_memcpy_slot;
extern std::atomic<CopyFn> copysynth_preload_memmove_slot;
extern std::atomic<FillFn> copysynth_preload_memset_slot;
}

namespace copysynth::preload {
namespace {

constexpr unsigned kWindowCalls = 256;
constexpr unsigned kMaxWindows = 64;
constexpr std::uint64_t kFirstPeriod = 4096;  // calls
/// Lengths of 4096 bytes and more by size_bucket(): four buckets per power of two 2^12..2^63.
constexpr unsigned kBuckets = (64 - 12) * 4;
static_assert(kProfileExactSizes == 4096, "bucket_index assumes exact counts below 2^12");

constexpr unsigned bucket_index(std::uint64_t n) {
  const unsigned k = 63 - static_cast<unsigned>(__builtin_clzll(n));
  return (k - 12) * 4 + static_cast<unsigned>(n >> (k - 2) & 3);
}
static_assert(bucket_index(4096) == 0 && bucket_index(5119) == 0 && bucket_index(5120) == 1 &&
              bucket_index(8191) == 3 && bucket_index(8192) == 4 && bucket_index(~std::uint64_t{0}) == kBuckets - 1);

/// The lowest length of bucket `i` (bytes).
constexpr std::uint64_t bucket_lo(unsigned i) { return std::uint64_t{4 + i % 4} << (i / 4 + 10); }
static_assert(bucket_lo(0) == 4096 && bucket_lo(1) == 5120 && bucket_lo(4) == 8192 &&
              copysynth::size_bucket(bucket_lo(kBuckets - 1)).lo == bucket_lo(kBuckets - 1));

/// distance_class() (profile.hpp) without branches: a copy's distance class depends on the
/// program's addresses, which a branch predictor cannot learn (a mispredicted branch here was a
/// tenth of the recorder's time in xz -d).
constexpr unsigned distance_index(std::uintptr_t dst, std::uintptr_t src, std::uint64_t n) {
  const unsigned overlap = (n != 0) & ((dst - src < n) | (src - dst < n));
  const unsigned alias = ((dst - src) & 4095) - 1 < 1023;  // 0 < (dst - src) mod 4096 < 1024
  return overlap ? 2 : alias;
}
constexpr bool same_as_distance_class(std::uintptr_t dst, std::uintptr_t src, std::uint64_t n) {
  return distance_index(dst, src, n) == static_cast<unsigned>(copysynth::distance_class(dst, src, n));
}
static_assert(same_as_distance_class(0x1000, 0x1000, 0) && same_as_distance_class(0x1000, 0x1000, 1) &&
              same_as_distance_class(0x100a, 0x1000, 20) && same_as_distance_class(0x1000, 0x100a, 20) &&
              same_as_distance_class(0x1014, 0x1000, 20) && same_as_distance_class(0x1005, 0x1000, 0) &&
              same_as_distance_class(0x11001, 0x1000, 64) && same_as_distance_class(0x113ff, 0x1000, 64) &&
              same_as_distance_class(0x11400, 0x1000, 64) && same_as_distance_class(0x12000, 0x1000, 64) &&
              same_as_distance_class(0x1000, 0x11001, 64) && same_as_distance_class(0, ~std::uintptr_t{0}, 2) &&
              same_as_distance_class(0x1000, 0x2000, ~std::uint64_t{0}));

struct OpCounts {
  std::uint64_t calls, bytes;
  std::uint64_t exact[kProfileExactSizes];  // calls by length, below 4096 bytes
  std::uint64_t bucket[kBuckets];           // calls by size_bucket(), 4096 bytes and more
  std::uint64_t src_mod64[64], dst_mod64[64];
  std::uint64_t distance[3];  // by Distance
};

struct WindowCall {
  std::uint64_t size;
  std::uint16_t src, dst;  // address mod 4096
  std::uint8_t op;         // profile_index()
  std::uint8_t distance;   // Distance
};
static_assert(sizeof(WindowCall) == 16);

struct Window {
  std::uint64_t first_call;
  std::uint64_t n;  // calls recorded so far (<= kWindowCalls)
  WindowCall calls[kWindowCalls];
};

/// A thread's counts and windows since its epoch began; zero bytes are a valid empty state but
/// for the fields attach() sets.
struct ThreadState {
  std::uint64_t call_no;     // calls of the thread since the epoch began
  std::uint64_t period;      // calls between window starts
  std::uint64_t next_start;  // the call number of the next window
  std::uint64_t cur_first;   // first_call of the window being filled (far away when none)
  std::uint64_t cur_slot;    // its slot
  std::uint64_t windows;     // windows kept
  std::uint64_t used;        // bit i: slot i holds a kept window
  std::uint8_t order[kMaxWindows];  // the slots of the kept windows, oldest first
  OpCounts op[3];                   // memcpy, memmove, memset
  Window window[kMaxWindows];
};

constexpr std::size_t kPage = 4096;
/// One mapping per thread: the header in the first page, the state from the second on (so that
/// the state can be zeroed with madvise without touching the header).
struct alignas(kPage) ThreadRecord {
  ThreadRecord* next;     // g_threads list, set once before the push
  std::uint64_t thread;   // 1, 2, ...: the order in which threads first copied
  std::uint64_t epoch;    // the epoch `state` belongs to
  alignas(kPage) ThreadState state;
};
constexpr std::size_t kRecordBytes = (sizeof(ThreadRecord) + kPage - 1) / kPage * kPage;

std::atomic<ThreadRecord*> g_threads{nullptr};
std::atomic<std::uint64_t> g_thread_count{0};
std::atomic<std::uint64_t> g_epoch{1};
/// Set while a record is written (and for good after the at-exit record): a signal arriving
/// meanwhile, in this thread or another, writes nothing.
std::atomic<bool> g_writing{false};
[[gnu::tls_model("initial-exec")]] thread_local ThreadRecord* t_record = nullptr;
/// Set while attach() runs: a copy made inside it (by an interposer of mmap or madvise, such as
/// GCC 14's ASan runtime, whose interceptors forward their own memset/memcpy to the shim) is not
/// recorded, instead of attaching again without end. Also set, with t_record cleared, while this
/// thread writes a record (write_record_unrecorded).
[[gnu::tls_model("initial-exec")]] thread_local bool t_attaching = false;

/// The routines the wrappers forward to (set before the slots point at the wrappers).
CopyFn g_next_memcpy = nullptr, g_next_memmove = nullptr;
FillFn g_next_memset = nullptr;

/// Made at start-up: the file and what every record names.
KeptFile g_file;
std::string* g_path = nullptr;          // absolute
std::string* g_program_json = nullptr;  // "\"/usr/bin/xz\"" (JSON string, quotes included)
std::string* g_cpu_json = nullptr;
int g_signal = 0;

// ----- relaxed atomic access to plain fields (the owning thread writes, the writer reads) --------

template <class T>
inline T ld(const T& x) {
  return std::atomic_ref<T>(const_cast<T&>(x)).load(std::memory_order_relaxed);
}
template <class T>
inline void st(T& x, T v) {
  std::atomic_ref<T>(x).store(v, std::memory_order_relaxed);
}
inline void bump(std::uint64_t& x, std::uint64_t by = 1) { st(x, ld(x) + by); }

/// Zeroes the thread's state (for a new epoch): madvise gives zero pages back without touching
/// them; a `rep stosb` where madvise is refused (a seccomp filter).
[[gnu::noinline]] void zero_state(ThreadState* s) {
  if (::madvise(s, kRecordBytes - kPage, MADV_DONTNEED) == 0) return;
  void* d = s;
  std::size_t n = sizeof(ThreadState);
  asm volatile("rep stosb" : "+D"(d), "+c"(n) : "a"(0) : "memory");
}

/// The calling thread's record, ready for the current epoch; nullptr when none can be mapped
/// (the call is then not recorded). Cold: a thread's first call, or its first after a dump.
[[gnu::noinline]] ThreadRecord* attach(ThreadRecord* r, std::uint64_t epoch) {
  if (t_attaching) return nullptr;  // a copy made by mmap's or madvise's interposer: not recorded
  t_attaching = true;
  if (!r) {
    void* p = ::mmap(nullptr, kRecordBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      t_attaching = false;
      return nullptr;
    }
    r = static_cast<ThreadRecord*>(p);
    r->thread = g_thread_count.fetch_add(1, std::memory_order_relaxed) + 1;
  } else {
    zero_state(&r->state);
  }
  t_attaching = false;
  ThreadState& s = r->state;
  st(s.period, kFirstPeriod);
  st(s.next_start, std::uint64_t{0});
  st(s.cur_first, std::uint64_t{1} << 63);
  std::atomic_ref<std::uint64_t>(r->epoch).store(epoch, std::memory_order_release);
  if (!t_record) {
    t_record = r;
    ThreadRecord* head = g_threads.load(std::memory_order_relaxed);
    do {
      r->next = head;
    } while (!g_threads.compare_exchange_weak(head, r, std::memory_order_release, std::memory_order_relaxed));
  }
  return r;
}

/// Starts a window at call `c` (== s.next_start). Returns false when none starts (the store was
/// thinned and `c` is no longer on the period).
[[gnu::noinline]] bool start_window(ThreadState& s, std::uint64_t c) {
  std::uint64_t period = ld(s.period);
  std::uint64_t kept = ld(s.windows);
  if (kept >= kMaxWindows) {
    // Keep the windows starting at a multiple of twice the period, oldest first.
    std::uint64_t used = 0, k = 0;
    for (std::uint64_t i = 0; i < kept; ++i) {
      const std::uint8_t slot = ld(s.order[i]) & (kMaxWindows - 1);
      if (ld(s.window[slot].first_call) % (2 * period) != 0) continue;
      st(s.order[k++], slot);
      used |= std::uint64_t{1} << slot;
    }
    st(s.windows, kept = k);
    st(s.used, used);
    st(s.period, period *= 2);
    if (c % period != 0) {
      st(s.next_start, (c / period + 1) * period);
      return false;
    }
  }
  st(s.next_start, c + period);
  const unsigned slot = static_cast<unsigned>(__builtin_ctzll(~ld(s.used)));  // kept < 64: a slot is free
  Window& w = s.window[slot];
  st(w.n, std::uint64_t{0});
  st(w.first_call, c);
  st(s.order[kept], static_cast<std::uint8_t>(slot));
  st(s.used, ld(s.used) | std::uint64_t{1} << slot);
  st(s.cur_slot, std::uint64_t{slot});
  st(s.cur_first, c);
  st(s.windows, kept + 1);
  return true;
}

/// Counts one call of operation `k` (0 memcpy, 1 memmove, 2 memset) in the calling thread's record.
[[gnu::always_inline]] inline void record(unsigned k, std::uintptr_t dst, std::uintptr_t src, std::uint64_t n) {
  ThreadRecord* r = t_record;
  const std::uint64_t epoch = g_epoch.load(std::memory_order_relaxed);
  if (__builtin_expect(r == nullptr || ld(r->epoch) != epoch, 0)) {
    r = attach(r, epoch);
    if (!r) return;
  }
  ThreadState& s = r->state;
  OpCounts& o = s.op[k];
  bump(o.calls);
  bump(o.bytes, n);
  bump(n < kProfileExactSizes ? o.exact[n] : o.bucket[bucket_index(n)]);
  unsigned d = 0;  // Distance::kFar
  if (k != 2) {
    d = distance_index(dst, src, n);
    bump(o.src_mod64[src & 63]);
  }
  bump(o.dst_mod64[dst & 63]);
  bump(o.distance[d]);

  const std::uint64_t c = ld(s.call_no);
  st(s.call_no, c + 1);
  std::uint64_t i = c - ld(s.cur_first);
  if (i >= kWindowCalls) {
    if (__builtin_expect(c != ld(s.next_start), 1) || !start_window(s, c)) return;
    i = 0;
  }
  Window& w = s.window[ld(s.cur_slot) & (kMaxWindows - 1)];
  WindowCall& e = w.calls[i];
  st(e.size, std::uint64_t{n});
  st(e.src, static_cast<std::uint16_t>(k == 2 ? 0 : src & 4095));
  st(e.dst, static_cast<std::uint16_t>(dst & 4095));
  st(e.op, static_cast<std::uint8_t>(k));
  st(e.distance, static_cast<std::uint8_t>(d));
  std::atomic_ref<std::uint64_t>(w.n).store(i + 1, std::memory_order_release);
}

}  // namespace
}  // namespace copysynth::preload

// The recording wrappers the slots point at while recording (named, so that tests/preload_test.sh
// finds them in the shim's symbol table and checks with objdump that they call nothing but
// attach and start_window).
extern "C" {
[[gnu::visibility("hidden")]] void* copysynth_profile_memcpy(void* d, const void* s, std::size_t n) {
  copysynth::preload::record(0, reinterpret_cast<std::uintptr_t>(d), reinterpret_cast<std::uintptr_t>(s), n);
  return copysynth::preload::g_next_memcpy(d, s, n);
}
[[gnu::visibility("hidden")]] void* copysynth_profile_memmove(void* d, const void* s, std::size_t n) {
  copysynth::preload::record(1, reinterpret_cast<std::uintptr_t>(d), reinterpret_cast<std::uintptr_t>(s), n);
  return copysynth::preload::g_next_memmove(d, s, n);
}
[[gnu::visibility("hidden")]] void* copysynth_profile_memset(void* d, int c, std::size_t n) {
  copysynth::preload::record(2, reinterpret_cast<std::uintptr_t>(d), 0, n);
  return copysynth::preload::g_next_memset(d, c, n);
}
}

namespace copysynth::preload {
namespace {

// ----- the writer: async-signal-safe ------------------------------------------------------------

/// Text into a fixed buffer; once it would overflow, nothing more is written and `ok` is false.
struct Out {
  char* p;
  char* end;
  bool ok = true;
  void put(const char* s, std::size_t n) {
    if (static_cast<std::size_t>(end - p) < n) {
      ok = false;
      return;
    }
    for (std::size_t i = 0; i < n; ++i) p[i] = s[i];
    p += n;
  }
  void str(const char* s) {
    std::size_t n = 0;
    while (s[n]) ++n;
    put(s, n);
  }
  void u64(std::uint64_t v) {
    char b[20];
    std::size_t i = sizeof b;
    do {
      b[--i] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v);
    put(b + i, sizeof b - i);
  }
  void counts(const std::uint64_t* v, std::size_t n) {
    str("[");
    for (std::size_t i = 0; i < n; ++i) {
      if (i) str(",");
      u64(v[i]);
    }
    str("]");
  }
};

constexpr const char* kOpNames[3] = {"memcpy", "memmove", "memset"};
constexpr const char* kDistanceNames[3] = {"far", "alias4k", "overlap"};

void write_op(Out& out, const OpCounts& o) {
  out.str("{\"calls\":");
  out.u64(o.calls);
  out.str(",\"bytes\":");
  out.u64(o.bytes);
  out.str(",\"sizes\":[");
  bool first = true;
  auto bucket = [&](std::uint64_t lo, std::uint64_t hi, std::uint64_t count) {
    if (count == 0) return;
    out.str(first ? "[" : ",[");
    first = false;
    out.u64(lo);
    out.str(",");
    out.u64(hi);
    out.str(",");
    out.u64(count);
    out.str("]");
  };
  for (std::uint64_t n = 0; n < kProfileExactSizes; ++n) bucket(n, n, o.exact[n]);
  for (unsigned i = 0; i < kBuckets; ++i) {
    const std::uint64_t lo = bucket_lo(i);
    bucket(lo, lo + ((std::uint64_t{1} << (i / 4 + 10)) - 1), o.bucket[i]);
  }
  out.str("],\"src_mod64\":");
  out.counts(o.src_mod64, 64);
  out.str(",\"dst_mod64\":");
  out.counts(o.dst_mod64, 64);
  out.str(",\"distance\":{\"far\":");
  out.u64(o.distance[0]);
  out.str(",\"alias4k\":");
  out.u64(o.distance[1]);
  out.str(",\"overlap\":");
  out.u64(o.distance[2]);
  out.str("}}");
}

/// Bytes of text a window takes at most: its header, and per call
/// ["memmove",<20 digits>,4095,4095,"overlap"], with its comma.
constexpr std::size_t kWindowText = 64 + 2 * 20 + kWindowCalls * (12 + 20 + 10 + 12);
/// Per operation at most: its fixed text, each length and bucket ([lo,hi,count] with a comma),
/// and the two mod-64 arrays.
constexpr std::size_t kOpText = 256 + (kProfileExactSizes + kBuckets) * (3 * 20 + 4) + 2 * 64 * 21;

/// What descriptor 2 was when recording was set up: a lost record is said there only while it is
/// still that file. A program that closed stderr and got descriptor 2 for a file of its own (a
/// database, an output file) found the line in that file.
KeptFile g_stderr_id;

/// What a failed open or write of the profile file met, in words (a constant string; strerror
/// may translate, which is not async-signal-safe). nullptr for an errno not named here.
const char* errno_words(int e) {
  switch (e) {
    case 0: return "the write stopped short";
    case ENOSPC: return "no space left on the file system";
    case EDQUOT: return "the disk quota is used up";
    case EFBIG: return "the file size limit (ulimit -f) was reached";
    case EPIPE: return "the FIFO's reader has gone";
    case ENXIO: return "the FIFO has no reader";
    case EACCES: return "permission denied";
    case EPERM: return "operation not permitted";
    case EROFS: return "the file system is read-only";
    case ENOENT: return "its directory no longer exists";
    case EIO: return "an I/O error";
    case EMFILE: return "the process has no descriptor left";
    case ENFILE: return "the system has no descriptor left";
    default: return nullptr;
  }
}

/// Says on stderr, in one line, that the record is lost: where it was to go, and why (`why`, or
/// the words for `error` when `why` is nullptr). Only while descriptor 2 is still the stderr of
/// the start. Async-signal-safe (a stack buffer, fstat, write).
void say_lost(const char* why, int error = 0) {
  struct stat st {};
  if (g_stderr_id.fd != 2 || ::fstat(2, &st) != 0 || st.st_dev != g_stderr_id.dev || st.st_ino != g_stderr_id.ino)
    return;
  char buf[1024];
  Out out{buf, buf + sizeof buf};
  out.str("copysynth-preload: the profile record could not be written to ");
  const std::size_t n = g_path ? g_path->size() : 0;
  if (n > 600) {
    out.str("...");
    out.put(g_path->data() + n - 600, 600);
  } else if (n) {
    out.put(g_path->data(), n);
  }
  out.str(" (COPYSYNTH_PROFILE): ");
  if (why) {
    out.str(why);
  } else if (const char* words = errno_words(error)) {
    out.str(words);
  } else {
    out.str("errno ");
    out.u64(static_cast<unsigned>(error));
  }
  out.str("; it is lost\n");
  write_all(2, buf, static_cast<std::size_t>(out.p - buf));
}

/// Appends one record (reason "exit" or "signal") to the profile file. Async-signal-safe: no
/// allocation but one mmap, no lock but flock. A record that cannot be written (no memory for
/// its text, a full disk, a file that cannot be opened again) is said lost in one line on stderr
/// (say_lost: while descriptor 2 is still the stderr of the start).
void write_record(const char* reason) {
  const std::uint64_t epoch = g_epoch.load(std::memory_order_acquire);
  // Pass 1: the threads of this epoch, and their windows.
  std::size_t threads = 0, windows = 0;
  for (ThreadRecord* r = g_threads.load(std::memory_order_acquire); r; r = r->next) {
    if (std::atomic_ref<std::uint64_t>(r->epoch).load(std::memory_order_acquire) != epoch) continue;
    ++threads;
    const std::uint64_t w = ld(r->state.windows);
    windows += w < kMaxWindows ? w : kMaxWindows;
  }
  const std::size_t sums_bytes = 3 * sizeof(OpCounts);
  const std::size_t list_bytes = threads * sizeof(ThreadRecord*);
  const std::size_t text_bytes = 1024 + g_program_json->size() + g_cpu_json->size() + 3 * kOpText + windows * kWindowText;
  const std::size_t total = (sums_bytes + list_bytes + text_bytes + kPage - 1) / kPage * kPage;
  void* mem = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    // `ulimit -v` reached (each thread that ever copied keeps its record's address space): the
    // record was lost without a word before.
    say_lost("no memory to format it (the address-space limit, ulimit -v?)");
    return;
  }
  auto* sums = static_cast<OpCounts*>(mem);
  auto** list = reinterpret_cast<ThreadRecord**>(static_cast<char*>(mem) + sums_bytes);
  char* text = static_cast<char*>(mem) + sums_bytes + list_bytes;

  // Pass 2: sum the counts; list the threads (at most as many as pass 1 found) by number.
  std::size_t listed = 0;
  std::uint64_t period = kFirstPeriod;
  for (ThreadRecord* r = g_threads.load(std::memory_order_acquire); r && listed < threads; r = r->next) {
    if (std::atomic_ref<std::uint64_t>(r->epoch).load(std::memory_order_acquire) != epoch) continue;
    const ThreadState& s = r->state;
    if (ld(s.period) > period) period = ld(s.period);
    for (unsigned k = 0; k < 3; ++k) {
      const OpCounts& o = s.op[k];
      OpCounts& t = sums[k];
      t.calls += ld(o.calls);
      t.bytes += ld(o.bytes);
      for (std::size_t n = 0; n < kProfileExactSizes; ++n) t.exact[n] += ld(o.exact[n]);
      for (unsigned i = 0; i < kBuckets; ++i) t.bucket[i] += ld(o.bucket[i]);
      for (unsigned i = 0; i < 64; ++i) {
        t.src_mod64[i] += ld(o.src_mod64[i]);
        t.dst_mod64[i] += ld(o.dst_mod64[i]);
      }
      for (unsigned i = 0; i < 3; ++i) t.distance[i] += ld(o.distance[i]);
    }
    // Insertion by thread number (the list runs newest first).
    std::size_t at = listed++;
    while (at > 0 && list[at - 1]->thread > r->thread) {
      list[at] = list[at - 1];
      --at;
    }
    list[at] = r;
  }

  Out out{text, text + text_bytes};
  out.str("{\"copysynth_profile\":");
  out.u64(copysynth::kProfileSchema);
  out.str(",\"program\":");
  out.put(g_program_json->data(), g_program_json->size());
  out.str(",\"pid\":");
  out.u64(static_cast<std::uint64_t>(::getpid()));
  out.str(",\"reason\":\"");
  out.str(reason);
  out.str("\",\"cpu\":");
  out.put(g_cpu_json->data(), g_cpu_json->size());
  out.str(",\"window_calls\":");
  out.u64(kWindowCalls);
  out.str(",\"sample_period\":");
  out.u64(period);
  out.str(",\"ops\":{");
  for (unsigned k = 0; k < 3; ++k) {
    out.str(k ? ",\"" : "\"");
    out.str(kOpNames[k]);
    out.str("\":");
    write_op(out, sums[k]);
  }
  out.str("},\"windows\":[");
  std::size_t written = 0;
  for (std::size_t t = 0; t < listed; ++t) {
    const ThreadState& s = list[t]->state;
    std::uint64_t kept = ld(s.windows);
    if (kept > kMaxWindows) kept = kMaxWindows;
    for (std::uint64_t i = 0; i < kept && written < windows; ++i) {
      const Window& w = s.window[ld(s.order[i]) & (kMaxWindows - 1)];
      std::uint64_t n = std::atomic_ref<std::uint64_t>(const_cast<std::uint64_t&>(w.n)).load(std::memory_order_acquire);
      if (n > kWindowCalls) n = kWindowCalls;
      if (n == 0) continue;
      out.str(written++ ? ",{\"thread\":" : "{\"thread\":");
      out.u64(list[t]->thread);
      out.str(",\"first_call\":");
      out.u64(ld(w.first_call));
      out.str(",\"calls\":[");
      for (std::uint64_t c = 0; c < n; ++c) {
        const WindowCall& e = w.calls[c];
        const unsigned op = ld(e.op), d = ld(e.distance);
        out.str(c ? ",[\"" : "[\"");
        out.str(kOpNames[op < 3 ? op : 0]);
        out.str("\",");
        out.u64(ld(e.size));
        out.str(",");
        out.u64(ld(e.src) & 4095u);
        out.str(",");
        out.u64(ld(e.dst) & 4095u);
        out.str(",\"");
        out.str(kDistanceNames[d < 3 ? d : 0]);
        out.str("\"]");
      }
      out.str("]}");
    }
  }
  out.str("]}\n");

  const int fd = out.ok ? kept_file_fd(g_file, g_path->c_str()) : -1;
  int error = fd < 0 ? errno : 0;
  bool stored = false;
  if (fd >= 0) {
    ::flock(fd, LOCK_EX);
    const auto n = static_cast<std::size_t>(out.p - text);
    // A record cut short (a full disk) is cut off again: left, the next process's record would
    // be appended to it on the same line and the reader refuse the whole file. Only where the
    // file grew by exactly what this write wrote: the lock keeps other shim processes out, but
    // not a forked child that shares this descriptor (and so this lock) nor an appender that
    // takes no lock (a shell's >>), whose bytes after it are left alone. A FIFO or a device has
    // no size to go back to, and nothing is cut.
    struct stat before, after;
    const bool sized = ::fstat(fd, &before) == 0 && S_ISREG(before.st_mode);
    const std::size_t wrote = write_all(fd, text, n, &error);  // SIGPIPE, SIGXFSZ blocked: a FIFO whose reader left, ulimit -f
    stored = wrote == n;
    if (!stored && sized && ::fstat(fd, &after) == 0 &&
        after.st_size == before.st_size + static_cast<off_t>(wrote)) {
      [[maybe_unused]] const int cut = ::ftruncate(fd, before.st_size);  // failing, nothing more to do
    }
    ::flock(fd, LOCK_UN);
  }
  if (!stored)  // a full disk, /dev/full, a file the program closed and that cannot be opened again
    say_lost(out.ok ? nullptr : "its text overflowed the writer's buffer (a copysynth bug)", error);
  ::munmap(mem, total);
}

/// write_record() with the calling thread's own copies left out of the counts: the copies that
/// interposers of the writer's calls make are the writer's, not the program's (GCC 14's ASan
/// runtime: its interceptors of the writer's calls forward their own memset to the shim). Counted, they
/// made sqlite3's records, dumped 18-53 times, add up to 30-70 memset calls more than the run in
/// one piece in a Debian 13 root (276 more over 47 dumps in one CI run); left out, they agree within one
/// call over 30-82 dumps. With no record, record() goes to attach(), which returns
/// nullptr while t_attaching is set; both are put back as they were (the signal may have come in
/// the middle of attach()). In on_signal every signal is blocked, so nothing else runs in this
/// thread meanwhile; at exit, the copies of a handler of the program's that runs during the write
/// are left out too.
void write_record_unrecorded(const char* reason) {
  ThreadRecord* const record = t_record;
  const bool attaching = t_attaching;
  t_record = nullptr;
  t_attaching = true;
  write_record(reason);
  t_attaching = attaching;
  t_record = record;
}

void on_signal(int) {
  const int saved = errno;
  if (!g_writing.exchange(true, std::memory_order_acquire)) {
    write_record_unrecorded("signal");
    g_epoch.fetch_add(1, std::memory_order_release);  // the next record starts from zero
    g_writing.store(false, std::memory_order_release);
  }
  errno = saved;
}

/// fork(): the child counts its own calls only, and appends through its own open file
/// description (flock() locks one description: parent and child sharing one would not exclude
/// each other); where the file cannot be opened again (a sandbox), the inherited one is used.
void in_child() {
  g_writing.store(false, std::memory_order_relaxed);
  g_epoch.fetch_add(1, std::memory_order_relaxed);
  const int old = g_file.fd;
  g_file.fd = -1;
  if (kept_file_fd(g_file, g_path->c_str()) >= 0) {
    if (old >= 0) ::close(old);
  } else {
    g_file.fd = old;
  }
}

/// COPYSYNTH_PROFILE_SIGNAL: a number, or a name with or without "SIG" in either case (as kill -l
/// and kill -s take them: usr2, sigusr2, SIGUSR2, RTMIN, RTMIN+n, RTMAX-n, RTMAX); 0 when unset, -1 when not one the shim takes
/// (the synchronous fault signals, SIGKILL and SIGSTOP are refused). A number is taken for the
/// same signals as the names: those of the list below and SIGRTMIN..SIGRTMAX; not SIGPIPE,
/// SIGCHLD, SIGTSTP, SIGCONT and the like, whose default actions programs rely on, nor the C
/// library's own signals below SIGRTMIN (glibc's thread cancellation and set*id).
int parse_signal(const char* v) {
  if (!v || !*v) return 0;
  std::string s = v;
  for (char& c : s)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  if (s.rfind("SIG", 0) == 0) s = s.substr(3);
  static const struct {
    const char* name;
    int sig;
  } kNames[] = {{"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"HUP", SIGHUP},   {"INT", SIGINT},
                {"QUIT", SIGQUIT}, {"TERM", SIGTERM}, {"ALRM", SIGALRM}, {"WINCH", SIGWINCH},
                {"URG", SIGURG},   {"PROF", SIGPROF}, {"VTALRM", SIGVTALRM}, {"PWR", SIGPWR}};
  int sig = -1;
  if (!s.empty() && s.find_first_not_of("0123456789") == std::string::npos && s.size() <= 3) {
    const int n = std::stoi(s);
    for (const auto& k : kNames)
      if (n == k.sig) sig = n;
    if (n >= SIGRTMIN && n <= SIGRTMAX) sig = n;
  } else {
    for (const auto& n : kNames)
      if (s == n.name) sig = n.sig;
    // RTMIN, RTMIN+n, RTMAX-n, RTMAX, as kill -l names them (README said RTMIN-RTMAX are
    // taken, but RTMIN alone was refused).
    const auto offset = [&](const char* base) {
      return s.size() > 6 && s.size() <= 8 && s.compare(0, 6, base) == 0 &&
             s.find_first_not_of("0123456789", 6) == std::string::npos;
    };
    if (s == "RTMIN") sig = SIGRTMIN;
    if (s == "RTMAX") sig = SIGRTMAX;
    if (offset("RTMIN+")) sig = SIGRTMIN + std::stoi(s.substr(6));
    if (offset("RTMAX-")) sig = SIGRTMAX - std::stoi(s.substr(6));
    if (s.rfind("RTM", 0) == 0 && (sig < SIGRTMIN || sig > SIGRTMAX)) sig = -1;  // RTMAX-40: not a real-time signal
  }
  if (sig <= 0 || sig > SIGRTMAX || sig == SIGKILL || sig == SIGSTOP || sig == SIGSEGV || sig == SIGBUS ||
      sig == SIGFPE || sig == SIGILL || sig == SIGTRAP || sig == SIGABRT || sig == SIGSYS)
    return -1;
  return sig;
}

/// A JSON string (quotes included) as nlohmann::json writes it (U+FFFD for bytes that are not
/// UTF-8), so that the shim's line is the one profile_record_json() writes.
std::string json_string(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

/// `path` resolved against the current directory.
std::string absolute(const char* path) { return copysynth::absolute_path(path); }

/// Whether two paths name one file: the same device and inode where both exist (links, "./" and
/// relative names alike), else the same name once resolved (a file neither names yet).
bool same_file(const char* a, const char* b) {
  struct stat sa {}, sb {};
  const bool ea = ::stat(a, &sa) == 0, eb = ::stat(b, &sb) == 0;
  if (ea && eb) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  return ea == eb && absolute(a) == absolute(b);
}

bool profile_set_up() {
  const char* path = env("COPYSYNTH_PROFILE");
  const char* sig = env("COPYSYNTH_PROFILE_SIGNAL");
  if (!path || !*path) {
    if (sig && *sig)  // set for a dump on demand, but there is nothing to dump into
      write_line(2, "copysynth-preload: COPYSYNTH_PROFILE_SIGNAL=" + copysynth::quoted_bytes(sig, 64) +
                        " has no effect without COPYSYNTH_PROFILE=FILE (the profile its records are appended "
                        "to); nothing is recorded");
    return false;
  }
  // Each record appended to the wisdom file would leave it unreadable from the next start on
  // (JSON Lines after the wisdom's JSON): refused before the file is opened.
  if (const char* wisdom = env("COPYSYNTH_WISDOM"); wisdom && *wisdom && same_file(path, wisdom)) {
    write_line(2, "copysynth-preload: COPYSYNTH_PROFILE and COPYSYNTH_WISDOM name the same file " +
                      copysynth::quoted_bytes(path, 256) +
                      ": a profile record appended to it would spoil the wisdom; the program runs without recording "
                      "(give the profile a file of its own, e.g. COPYSYNTH_PROFILE=prog.prof)");
    return false;
  }
  // Absolute: a program that changes directory and closes the descriptor reopens the same file.
  const std::string abs = absolute(path);
  if (kept_file_fd(g_file, abs.c_str()) < 0) {
    const int e = errno;
    write_line(2, "copysynth-preload: cannot open the profile file " + copysynth::quoted_bytes(path, 256) +
                      " (COPYSYNTH_PROFILE): " + std::strerror(e) + "; the program runs without recording");
    return false;
  }
  if (struct stat st {}; ::fstat(2, &st) == 0) g_stderr_id = {2, st.st_dev, st.st_ino};  // else: closed, unsaid
  g_path = new std::string(abs);  // never destroyed: the writer runs from the destructor and signals
  char exe[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe);
  g_program_json = new std::string(json_string(n > 0 ? std::string(exe, static_cast<std::size_t>(n)) : std::string("?")));
  g_cpu_json = new std::string(json_string(copysynth::CpuInfo::host().signature()));
  if (sig && *sig) {
    g_signal = parse_signal(sig);
    if (g_signal < 0) {
      g_signal = 0;
      write_line(2, "copysynth-preload: COPYSYNTH_PROFILE_SIGNAL=" + copysynth::quoted_bytes(sig, 64) +
                        " is not a signal the shim can take (a name such as USR2, RTMIN+1, or the number of "
                        "one; not KILL, STOP, a fault signal, PIPE, CHLD and others whose default action "
                        "programs rely on); recording to the end of the program only");
    } else if (g_signal == SIGTERM || g_signal == SIGINT) {
      // Taken as asked, but said: the handler replaces the default action, so `kill PID` or
      // Ctrl-C no longer ends a program that does not handle them itself.
      write_line(2, std::string("copysynth-preload: warning: COPYSYNTH_PROFILE_SIGNAL=") + copysynth::quoted_bytes(sig, 64) +
                        ": SIG" + (g_signal == SIGTERM ? "TERM" : "INT") +
                        " ends most programs, but with the shim's handler it writes a record and the program runs "
                        "on (a handler the program installs replaces the shim's); the record at exit is written "
                        "anyway: for a record on demand name a signal the program leaves alone, such as USR2");
    }
  }
  return true;
}

void profile_start() {
  g_next_memcpy = copysynth_preload_memcpy_slot.load(std::memory_order_acquire);
  g_next_memmove = copysynth_preload_memmove_slot.load(std::memory_order_acquire);
  g_next_memset = copysynth_preload_memset_slot.load(std::memory_order_acquire);
  pthread_atfork(nullptr, nullptr, &in_child);
  if (g_signal > 0) {
    struct sigaction sa {};
    sa.sa_handler = &on_signal;
    sigfillset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(g_signal, &sa, nullptr);
  }
  copysynth_preload_memcpy_slot.store(&copysynth_profile_memcpy, std::memory_order_release);
  copysynth_preload_memmove_slot.store(&copysynth_profile_memmove, std::memory_order_release);
  copysynth_preload_memset_slot.store(&copysynth_profile_memset, std::memory_order_release);
}

void profile_finish() {
  static std::atomic<bool> finished{false};
  if (!g_path || finished.exchange(true)) return;
  // A signal dump in another thread finishes first (one in this thread would have returned before
  // this runs on). g_writing stays set: a signal arriving after the at-exit record writes nothing.
  while (g_writing.exchange(true, std::memory_order_acquire)) sched_yield();
  write_record_unrecorded("exit");
}

}  // namespace copysynth::preload
