// copysynth — the process-wide routines: one slot per operation, callable from any thread.
//
// Each slot starts out holding the system routine (glibc's memcpy, memmove, memset; memset(0)
// for clear_page). install() verifies a routine (check_routine: conformance + static checks), and
// only then publishes it with one atomic store (release); every call loads the slot (acquire), so
// a thread sees either the old or the new routine, never a torn one.
//
// A replaced routine is never freed: another thread may still be executing it, and copysynth has
// no way to know when every such call has returned (that would need quiescent-state tracking in
// every caller). Replaced routines stay mapped for the life of the process — a few KiB each — so
// install at start-up or after tuning, not in a loop.
//
// fork(): the registry's lock (install, install_all, uninstall, installed_name) is taken around
// every fork() (pthread_atfork) and released on both sides, so a child forked while another
// thread held it can install and ask. So a fork() from a signal handler that interrupted one of
// those calls in the same thread waits for ever, and so does a pthread_atfork handler (prepare,
// parent or child) registered before copysynth's that calls one of them: it runs while
// copysynth's handler holds the lock. The copies themselves (the slots) take no lock.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "copysynth/routine.hpp"
#include "copysynth/verify.hpp"

namespace copysynth {

/// Verifies `r` and makes it the process-wide routine of its operation. On any error
/// (kVerifyFailed, with the first failing case) nothing changes: the routine installed before
/// keeps serving calls.
Status install(Routine r, const VerifyOptions& opt = {});

/// install() for several routines, all or nothing: every routine is verified first, then all are
/// published (one atomic store per slot, so another thread may see the new memcpy an instant
/// before the new memmove; each slot always holds a complete, verified routine). At most one
/// routine per operation (else kInvalidArgument); on any error nothing changes.
Status install_all(std::vector<Routine> rs, const VerifyOptions& opt = {});

/// Puts the system routine of `op` back. The replaced routine stays mapped (see above).
void uninstall(Operation op);

/// Name of what serves `op` now: a routine name (Routine::name()) or "system".
std::string installed_name(Operation op);

/// The routines currently installed (the system ones until install() succeeds).
CopyFn installed_memcpy() noexcept;
CopyFn installed_memmove() noexcept;
FillFn installed_fill() noexcept;
ClearPageFn installed_clear_page() noexcept;

/// Calls through the slots: copysynth's memcpy, memmove, memset and clear_page.
void* memcpy(void* dst, const void* src, std::size_t n) noexcept;
void* memmove(void* dst, const void* src, std::size_t n) noexcept;
void* memset(void* dst, int c, std::size_t n) noexcept;
void clear_page(void* page) noexcept;

}  // namespace copysynth
