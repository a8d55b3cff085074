// copysynth — executable memory for JIT routines (see jit_memory.hpp).
#include "jit_memory.hpp"

#include <errno.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace copysynth::jit {
namespace {

constexpr std::size_t kUnit = 64;                 // allocation granularity: every routine is 64-byte aligned
constexpr std::size_t kChunkBytes = 256 * 1024;   // one mapping pair per chunk; larger requests get their own

struct Arena;

/// One piece of shared memory mapped twice. `used` marks allocated 64-byte units (guarded by the arena's mutex);
/// `live` counts blocks not yet released.
struct Chunk {
  std::uint8_t* rx = nullptr;
  std::uint8_t* rw = nullptr;
  std::size_t bytes = 0;
  std::vector<bool> used;
  std::atomic<std::size_t> live{0};
  Arena* arena = nullptr;
};

/// The chunks one process allocates from between two forks. An arena is never destroyed: after a
/// fork (in the parent and in the child) a new one takes over and the old one only takes back
/// blocks, unmapping a chunk when its last block is gone.
struct Arena {
  pid_t pid = 0;
  unsigned generation = 0;
  std::mutex mutex;  // locked only by threads of `pid` (a child never locks an inherited arena)
  std::vector<Chunk*> chunks;
  Arena* previous = nullptr;  // the arena before the last fork: kept reachable, never freed
};

std::atomic<Arena*> g_arena{nullptr};
std::atomic<unsigned> g_fork_generation{0};
std::atomic<bool> g_atfork_registered{false};

void on_fork() noexcept { g_fork_generation.fetch_add(1, std::memory_order_acq_rel); }

bool is_current(const Arena* a) {
  return a->pid == getpid() && a->generation == g_fork_generation.load(std::memory_order_acquire);
}

/// The arena this process allocates from now. Lock-free: a lock held by another thread at fork()
/// would stay held in the child forever. getpid() is a system call on glibc >= 2.25, so it is
/// right after fork() and clone(); fork() also bumps the generation in both processes
/// (pthread_atfork), which is how the parent learns that its memory is now shared.
Arena* current_arena() {
  if (!g_atfork_registered.exchange(true, std::memory_order_acq_rel))
    pthread_atfork(nullptr, &on_fork, &on_fork);
  Arena* cur = g_arena.load(std::memory_order_acquire);
  while (!cur || !is_current(cur)) {
    auto* mine = new Arena;  // never destroyed: inherited and pre-fork routines refer to it
    mine->pid = getpid();
    mine->generation = g_fork_generation.load(std::memory_order_acquire);
    mine->previous = cur;
    if (g_arena.compare_exchange_strong(cur, mine, std::memory_order_acq_rel)) return mine;
    delete mine;  // another thread won the race; `cur` is now its arena (checked again)
  }
  return cur;
}

std::string errno_text(int e) { return std::string(std::strerror(e)) + " (errno " + std::to_string(e) + ")"; }

Error denied(const char* what, int e) {
  return make_error(ErrorCode::kJitUnavailable,
                    std::string("the system denies executable memory (") + what + ": " + errno_text(e) +
                        "), so copysynth cannot install JIT routines in this process: an SELinux policy "
                        "(deny_execmem), a seccomp filter or another security policy forbids it. The system "
                        "routines stay in place; to use tuned routines here, allow executable memory "
                        "for this program or link an ahead-of-time routine (autotune --emit-asm)");
}

Error failed(const char* what, int e) {
  return make_error(ErrorCode::kJitFailed, std::string("could not map executable memory (") + what + ": " +
                                               errno_text(e) +
                                               "): is the address space, RLIMIT_AS or memory exhausted?");
}

/// Maps a new chunk of at least `bytes` (a multiple of the page size): shared anonymous memory
/// mapped read-write, then the same pages mapped a second time (mremap with old_size 0 duplicates
/// a shared mapping) and made read-execute. No file descriptor exists at any moment.
Result<Chunk*> map_chunk(std::size_t bytes, Arena* arena) {
  // EPERM or EACCES from any of the three calls is a policy (a seccomp filter that denies
  // mremap was said to be memory exhaustion); ENOMEM and the rest are the address space.
  const auto denied_or_failed = [](const char* what, int e) {
    return e == EACCES || e == EPERM ? denied(what, e) : failed(what, e);
  };
  void* rw = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (rw == MAP_FAILED) return denied_or_failed("mmap of the writable view", errno);
  void* rx = mremap(rw, 0, bytes, MREMAP_MAYMOVE);
  if (rx == MAP_FAILED) {
    const int e = errno;
    munmap(rw, bytes);
    return denied_or_failed("mremap duplicating it as the executable view", e);
  }
  if (mprotect(rx, bytes, PROT_READ | PROT_EXEC) != 0) {
    const int e = errno;
    munmap(rx, bytes);
    munmap(rw, bytes);
    if (e == EACCES || e == EPERM) return denied("mprotect with PROT_EXEC", e);
    return failed("mprotect of the executable view", e);
  }
  auto* c = new Chunk;
  c->rx = static_cast<std::uint8_t*>(rx);
  c->rw = static_cast<std::uint8_t*>(rw);
  c->bytes = bytes;
  c->used.assign(bytes / kUnit, false);
  c->arena = arena;
  return c;
}

/// First fit of `units` free units in `c`; the first unit's index or SIZE_MAX.
std::size_t find_free(const Chunk& c, std::size_t units) {
  std::size_t run = 0;
  for (std::size_t i = 0; i < c.used.size(); ++i) {
    run = c.used[i] ? 0 : run + 1;
    if (run == units) return i + 1 - units;
  }
  return SIZE_MAX;
}

}  // namespace

Result<Block> allocate(std::size_t size) {
  const std::size_t units = (std::max<std::size_t>(size, 1) + kUnit - 1) / kUnit;
  Arena* arena = current_arena();
  std::lock_guard<std::mutex> lock(arena->mutex);
  Chunk* chunk = nullptr;
  std::size_t first = SIZE_MAX;
  for (Chunk* c : arena->chunks)
    if ((first = find_free(*c, units)) != SIZE_MAX) {
      chunk = c;
      break;
    }
  if (!chunk) {
    const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    const std::size_t bytes = std::max(kChunkBytes, (units * kUnit + page - 1) / page * page);
    auto c = map_chunk(bytes, arena);
    if (!c) return std::move(c).error();
    chunk = *c;
    arena->chunks.push_back(chunk);
    first = 0;
  }
  for (std::size_t i = first; i < first + units; ++i) chunk->used[i] = true;
  chunk->live.fetch_add(1, std::memory_order_relaxed);
  return Block{chunk->rx + first * kUnit, chunk->rw + first * kUnit, units * kUnit, chunk};
}

void release(const Block& b) noexcept {
  if (!b.chunk) return;
  auto* c = static_cast<Chunk*>(b.chunk);
  Arena* a = c->arena;
  if (a->pid != getpid()) {
    // Inherited from the parent: its bookkeeping may be mid-update (a thread that does not exist
    // here may hold the mutex), and the pages are shared with the parent, so nothing is written:
    // the chunk is unmapped (in this process only) once no inherited routine uses it.
    if (c->live.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      munmap(c->rx, c->bytes);
      munmap(c->rw, c->bytes);
    }
    return;
  }
  std::lock_guard<std::mutex> lock(a->mutex);
  const std::size_t live = c->live.fetch_sub(1, std::memory_order_acq_rel) - 1;
  if (is_current(a)) {
    // Not shared with any other process: the units may be reused.
    const std::size_t first = static_cast<std::size_t>(b.rx - c->rx) / kUnit;
    for (std::size_t i = first; i < first + b.size / kUnit; ++i) c->used[i] = false;
    return;
  }
  // Memory that existed at a fork is shared with the child: never reused (the child may still run
  // the code there), unmapped in this process when its last block is gone.
  if (live == 0) {
    munmap(c->rx, c->bytes);
    munmap(c->rw, c->bytes);
    c->rx = c->rw = nullptr;
  }
}

Status available() {
  auto b = allocate(1);
  if (!b) return std::move(b).error();
  release(*b);
  return {};
}

}  // namespace copysynth::jit
