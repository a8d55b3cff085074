// copysynth — executable memory for JIT routines (private to the runtime; used by routine.cpp).
//
// Code memory is a memfd mapped twice, MAP_SHARED: a read-write view the code is written through
// and a read-execute view it runs from, so no page is ever writable and executable at once. It is
// copysynth's own rather than asmjit's JitAllocator for three reasons asmjit 1.9 (Debian 12)
// does not let a caller change:
//   - the memfd is created with MFD_CLOEXEC (a program spawned meanwhile must not inherit a
//     writable descriptor to this process's code) and with MFD_EXEC, which kernels >= 6.3 ask
//     for (and `vm.memfd_noexec` may require); the descriptor is closed once both views exist;
//   - after fork() the views are shared between parent and child: neither process ever again
//     allocates from memory that existed at the fork (each starts new chunks), and memory freed
//     there is not reused but unmapped once its last routine is gone, so the code of a routine
//     built before the fork stays what it was in both processes whatever either builds later;
//   - an executable mapping the system refuses (EACCES / EPERM: SELinux deny_execmem, a seccomp
//     filter, `vm.memfd_noexec = 2`) is reported as ErrorCode::kJitUnavailable, not as a failure
//     of copysynth.
#pragma once

#include <cstddef>
#include <cstdint>

#include "copysynth/result.hpp"

namespace copysynth::jit {

/// One allocation: `size` bytes (a multiple of 64) at `rx` (execute view, 64-byte aligned) and
/// the same bytes writable at `rw`. `chunk` is the allocator's own handle.
struct Block {
  std::uint8_t* rx = nullptr;
  std::uint8_t* rw = nullptr;
  std::size_t size = 0;
  void* chunk = nullptr;
};

/// Allocates `size` bytes (rounded up to 64) of code memory. Thread-safe, fork-safe (above).
/// Errors: kJitUnavailable (the system denies executable memory: errno EACCES or EPERM),
/// kJitFailed (memfd_create, ftruncate or mmap failed otherwise: out of memory, RLIMIT_AS, ...).
Result<Block> allocate(std::size_t size);

/// Returns a block from allocate(). No thread may still run its code. Never fails.
void release(const Block& b) noexcept;

/// Whether this process may map executable memory at all (one small chunk is mapped on the first
/// call and kept for later allocations). Errors as allocate().
Status available();

}  // namespace copysynth::jit
