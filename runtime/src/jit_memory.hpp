// copysynth — executable memory for JIT routines (private to the runtime; used by routine.cpp).
//
// Code memory is shared anonymous memory mapped twice: a read-write view the code is written
// through and a read-execute view it runs from (the second view is made with mremap(2), old_size
// 0, which duplicates a shared mapping), so no page is ever writable and executable at once. It is
// copysynth's own rather than asmjit's JitAllocator (Debian 12's asmjit 1.9 maps a memfd twice)
// because of what that allocator does not let a caller change:
//   - its memfd is created without close-on-exec, so a program spawned while code memory was
//     being mapped could inherit a writable descriptor to this process's code, and without
//     MFD_EXEC, which kernels >= 6.3 ask for (`vm.memfd_noexec` may refuse it). Here there is no
//     descriptor at all, so nothing can be inherited and no memfd policy applies;
//   - after fork() the views are shared between parent and child: here neither process ever
//     again allocates from memory that existed at the fork (each starts new chunks), and memory
//     freed there is not reused but unmapped once its last routine is gone, so the code of a
//     routine built before the fork stays what it was in both processes;
//   - an executable mapping the system refuses (EACCES / EPERM: SELinux deny_execmem, a seccomp
//     filter) is reported as ErrorCode::kJitUnavailable, not as a failure of copysynth.
// The executable view reads as "/dev/zero (deleted)" in /proc/PID/maps, which perf treats as
// anonymous memory and names from /tmp/perf-PID.map (COPYSYNTH_PERF_MAP); a memfd view would be
// taken for a file perf cannot open.
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
/// kJitFailed (mmap, mremap or mprotect failed otherwise: out of memory, RLIMIT_AS, ...).
Result<Block> allocate(std::size_t size);

/// Returns a block from allocate(). No thread may still run its code. Never fails.
void release(const Block& b) noexcept;

/// Whether this process may map executable memory at all (one small chunk is mapped on the first
/// call and kept for later allocations). Errors as allocate().
Status available();

}  // namespace copysynth::jit
