/* copysynth — the C API: tuned memcpy, memmove and memset for C programs.
 *
 *   #include <copysynth/copysynth.h>
 *   cc app.c $(pkg-config --cflags --libs copysynth)     (or CMake: copysynth::copysynth)
 *   copysynth_tune() also needs libcopysynth-tune.a: pkg-config copysynth-tune, copysynth::tune
 *
 *   if (copysynth_load_wisdom("best.json") != COPYSYNTH_OK)      // or NULL: $COPYSYNTH_WISDOM
 *     fprintf(stderr, "copysynth: %s\n", copysynth_last_error());  // the system routines stay
 *   copysynth_memcpy(dst, src, n);                               // the tuned routine, or glibc's
 *
 * Until wisdom is loaded, and whenever loading fails, copysynth_memcpy, copysynth_memmove and
 * copysynth_memset call the system (glibc) routines: a program using them is always correct.
 * Loading is all or nothing: every routine of the file is rebuilt, checked byte-identical to the
 * code that was tuned and verified before any is installed; a malformed file, a file made on
 * another CPU, or one whose code this copysynth rebuilds differently (the code-hash check: a file
 * of another copysynth version is used when its code rebuilds byte-identical, refused when not)
 * changes nothing. The entries' measured points are checked only to be JSON, not against the
 * schema (autotune --show does that). Installing swaps a process-wide
 * pointer atomically; routines once installed stay mapped until the process exits.
 *
 * Every function is thread-safe and none lets a C++ exception escape. Functions that can fail
 * return a copysynth_status; copysynth_last_error() then gives this thread's message, which says
 * what failed and what to do. Sizes are in bytes; budgets in seconds.
 */
#ifndef COPYSYNTH_H
#define COPYSYNTH_H

#include <stddef.h>

#include "copysynth/version.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Result of a call; the values of copysynth::ErrorCode (result.hpp). */
typedef enum copysynth_status {
  COPYSYNTH_OK = 0,
  COPYSYNTH_INVALID_PARAMS = 1,    /* a routine parameter out of range */
  COPYSYNTH_UNSUPPORTED_ISA = 2,   /* the routine needs an ISA extension this CPU lacks */
  COPYSYNTH_EMIT_FAILED = 3,       /* asmjit could not encode the routine */
  COPYSYNTH_JIT_FAILED = 4,        /* no memory for code (address space, RLIMIT_AS?) */
  COPYSYNTH_VERIFY_FAILED = 5,     /* a routine failed conformance verification */
  COPYSYNTH_WISDOM_IO = 6,         /* the wisdom file cannot be read */
  COPYSYNTH_WISDOM_MALFORMED = 7,  /* empty, not valid JSON, or a field of the wrong type (named) */
  COPYSYNTH_WISDOM_MISMATCH = 8,   /* another CPU or schema, or code that does not rebuild identical */
  COPYSYNTH_INVALID_ARGUMENT = 9,  /* a bad argument to this API */
  COPYSYNTH_SYSTEM = 10,           /* an OS call failed, or out of memory */
  COPYSYNTH_JIT_UNAVAILABLE = 11,  /* the system denies executable memory (SELinux deny_execmem, a
                                    * seccomp filter): no JIT here; glibc's routines stay */
  COPYSYNTH_STATUS_MAX_ENUM = 0x7FFFFFFF  /* not a status: makes the type as wide as int */
} copysynth_status;

/* The routines copysynth can install. */
typedef enum copysynth_operation {
  COPYSYNTH_OP_MEMCPY = 0,
  COPYSYNTH_OP_MEMMOVE = 1,
  COPYSYNTH_OP_FILL = 2,       /* memset */
  COPYSYNTH_OP_CLEAR_PAGE = 3, /* zero one 4096-byte, 4096-aligned page */
  /* Not an operation: makes the type as wide as int, so that any value a caller passes is
   * well-defined and answered with COPYSYNTH_INVALID_ARGUMENT (as Vulkan's *_MAX_ENUM). */
  COPYSYNTH_OP_MAX_ENUM = 0x7FFFFFFF
} copysynth_operation;

typedef void* (*copysynth_copy_fn)(void* dst, const void* src, size_t n);
typedef void* (*copysynth_fill_fn)(void* dst, int c, size_t n);
typedef void (*copysynth_clear_page_fn)(void* page);

/* memcpy, memmove, memset and clear_page through the process-wide routines: the tuned ones once
 * installed, glibc's before. Same contracts as the C library's: memcpy's buffers must not overlap,
 * each returns dst. */
void* copysynth_memcpy(void* dst, const void* src, size_t n);
void* copysynth_memmove(void* dst, const void* src, size_t n);
void* copysynth_memset(void* dst, int c, size_t n);
void copysynth_clear_page(void* page);

/* The routines serving calls now, to call without the indirection of the functions above (load
 * again after an install). Never NULL. */
copysynth_copy_fn copysynth_get_memcpy(void);
copysynth_copy_fn copysynth_get_memmove(void);
copysynth_fill_fn copysynth_get_memset(void);
copysynth_clear_page_fn copysynth_get_clear_page(void);

/* Loads wisdom written by `autotune --emit` (or a fleet file of `autotune --merge`) and installs
 * the routines tuned for this CPU: memcpy, memmove, fill and clear_page, those the file has. path
 * NULL: the file named by the environment variable COPYSYNTH_WISDOM (COPYSYNTH_INVALID_ARGUMENT
 * when it is not set or empty, and in a program run with privileges, set-user-ID, set-group-ID
 * or with file capabilities, where it is read with secure_getenv as the LD_PRELOAD shim reads it). An empty path ("") is COPYSYNTH_INVALID_ARGUMENT, not NULL. Only
 * a regular file of at most 64 MiB is read (a directory, FIFO or device is COPYSYNTH_WISDOM_IO,
 * unread). Start-up verification costs a few ms (VerifyOptions::startup()). On error nothing
 * changes. */
copysynth_status copysynth_load_wisdom(const char* path);

/* Tunes `op` on this host within budget_seconds (1 .. 86400; the floor against the peers and
 * the final measurement add about 5 s to 20 s) on the seeds' workload and installs the verified winner. For programs that tune at
 * start-up; `autotune --emit` once plus copysynth_load_wisdom is cheaper. Provided by
 * libcopysynth-tune.a, not libcopysynth.a, since it runs the tuner: link it as well (CMake:
 * copysynth::tune; pkg-config: copysynth-tune). Every other function here is in libcopysynth.a. */
copysynth_status copysynth_tune(copysynth_operation op, double budget_seconds);

/* Puts the system routine of `op` back (the replaced routine stays mapped). */
copysynth_status copysynth_uninstall(copysynth_operation op);

/* Writes the name of the routine serving `op` ("system", or e.g. "memcpy/v32u4/pf0/nt-never/
 * rep-32768a/al64long") into buf as snprintf does (NUL-terminated, truncated to size - 1; buf may
 * be NULL when size is 0) and returns its full length, or (size_t)-1 for an unknown op. */
size_t copysynth_installed_name(copysynth_operation op, char* buf, size_t size);

/* The message of this thread's last failing call ("" if it succeeded). Valid until this thread's
 * next copysynth call. */
const char* copysynth_last_error(void);

/* "ok", "invalid-params", ..., "system"; "unknown" for other values. */
const char* copysynth_status_name(int status);

/* The library's version, e.g. "0.2.0" (the headers': COPYSYNTH_VERSION). */
const char* copysynth_version(void);

#ifdef __cplusplus
}
#endif

#endif /* COPYSYNTH_H */
