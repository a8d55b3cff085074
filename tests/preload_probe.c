/* preload_probe — an ordinary C program, linked against nothing of copysynth, that checks what
 * memcpy, memmove, memset and their _FORTIFY_SOURCE forms do in its process. tests/preload_test.sh
 * runs it with and without LD_PRELOAD=libcopysynth-preload.so.
 *
 * Usage: preload_probe [--expect-shim | --expect-libc | --expect-lib NAME] [--expect-active 0|1]
 *   --expect-shim      the memcpy, memmove and memset this program binds must be the shim's
 *   --expect-libc      ... must not be
 *   --expect-lib NAME  ... must come from a file whose name contains NAME (dladdr), e.g.
 *                      libcopysynth-tuned (the ahead-of-time library)
 *   --expect-active N  copysynth_tuned_active(), which the ahead-of-time library exports, must
 *                      be defined and return N (1: its tuned routines serve the calls, 0: its
 *                      built-in ones); works linked statically with libcopysynth-tuned.a too
 * Checks every length 0..1100 and lengths around 4 KiB, 32 KiB, 1 MiB and 4 MiB at several
 * misalignments with canaries around dst; memmove at every overlap distance up to 200 bytes and
 * a few large ones; memset with several byte values; __memcpy_chk / __memmove_chk / __memset_chk
 * with a large enough destination, and with a too small one in a child process (it must die of
 * SIGABRT: glibc's "buffer overflow detected"); four threads copying at once; a fork()ed child
 * copying. Prints "preload_probe: N checks passed" or the first failure; exit status 0 or 1. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Called through volatile pointers, so the compiler can neither inline nor constant-fold them. */
typedef void* (*copy_fn)(void*, const void*, size_t);
typedef void* (*fill_fn)(void*, int, size_t);
static copy_fn volatile p_memcpy = memcpy;
static copy_fn volatile p_memmove = memmove;
static fill_fn volatile p_memset = memset;
void* __memcpy_chk(void* dst, const void* src, size_t n, size_t dstlen);
void* __memmove_chk(void* dst, const void* src, size_t n, size_t dstlen);
void* __memset_chk(void* dst, int c, size_t n, size_t dstlen);
typedef void* (*copy_chk_fn)(void*, const void*, size_t, size_t);
typedef void* (*fill_chk_fn)(void*, int, size_t, size_t);
static copy_chk_fn volatile p_memcpy_chk = __memcpy_chk;
static copy_chk_fn volatile p_memmove_chk = __memmove_chk;
static fill_chk_fn volatile p_memset_chk = __memset_chk;

static long checks;

#define EXPECT(cond, ...)                                 \
  do {                                                    \
    ++checks;                                             \
    if (!(cond)) {                                        \
      fprintf(stderr, "preload_probe: FAILED: " __VA_ARGS__); \
      fputc('\n', stderr);                                \
      exit(1);                                            \
    }                                                     \
  } while (0)

static unsigned char* src_buf;
static unsigned char* dst_buf;
static unsigned char* ref_buf;
enum { kMax = (4 << 20) + 4096, kPad = 128 };

static void pattern(unsigned char* p, size_t n, unsigned seed) {
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; ++i) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    p[i] = (unsigned char)x;
  }
}

/* memcpy of n bytes from src + so to dst + dof, canaries on both sides, checked byte by byte. */
static void check_copy(copy_fn f, size_t n, unsigned so, unsigned dof) {
  unsigned char* s = src_buf + kPad + so;
  unsigned char* d = dst_buf + kPad + dof;
  memset(dst_buf, 0xA5, n + 2 * kPad + 64);  /* the shim's memset, checked separately below */
  for (size_t i = 0; i < n + 2 * kPad + 64; ++i) EXPECT(dst_buf[i] == 0xA5, "memset of canaries, byte %zu", i);
  EXPECT(f(d, s, n) == d, "n = %zu: did not return dst", n);
  for (size_t i = 0; i < n; ++i) EXPECT(d[i] == s[i], "n = %zu (src +%u, dst +%u): byte %zu differs", n, so, dof, i);
  for (unsigned char* p = dst_buf; p < d; ++p) EXPECT(*p == 0xA5, "n = %zu: wrote before dst", n);
  for (size_t i = n; i < n + kPad; ++i) EXPECT(d[i] == 0xA5, "n = %zu: wrote past the end (dst + %zu)", n, i);
}

static void check_move(size_t n, long dist) {
  const size_t margin = dist > -256 && dist < 256 ? 256 : 8192;  /* room on both sides */
  const size_t span = 2 * margin + n + 512;
  unsigned char* base = src_buf + margin;
  pattern(src_buf, span, (unsigned)(n + 3 * dist));
  memcpy(ref_buf, src_buf, span);
  unsigned char* s = base;
  unsigned char* d = base + dist;
  EXPECT(p_memmove(d, s, n) == d, "memmove n = %zu, dst - src = %ld: did not return dst", n, dist);
  /* Reference: a byte loop in the right direction, on the copy. */
  unsigned char* rs = ref_buf + (s - src_buf);
  unsigned char* rd = ref_buf + (d - src_buf);
  if (rd < rs)
    for (size_t i = 0; i < n; ++i) rd[i] = rs[i];
  else
    for (size_t i = n; i-- > 0;) rd[i] = rs[i];
  for (size_t i = 0; i < span; ++i)
    EXPECT(src_buf[i] == ref_buf[i], "memmove n = %zu, dst - src = %ld: byte %zu of the buffer differs", n, dist, i);
}

static void check_fill(size_t n, int c, unsigned dof) {
  unsigned char* d = dst_buf + kPad + dof;
  for (size_t i = 0; i < n + 2 * kPad + 64; ++i) dst_buf[i] = 0x3C;
  EXPECT(p_memset(d, c, n) == d, "memset n = %zu: did not return dst", n);
  for (size_t i = 0; i < n; ++i) EXPECT(d[i] == (unsigned char)c, "memset n = %zu, c = %d: byte %zu", n, c, i);
  for (unsigned char* p = dst_buf; p < d; ++p) EXPECT(*p == 0x3C, "memset n = %zu: wrote before dst", n);
  for (size_t i = n; i < n + kPad; ++i) EXPECT(d[i] == 0x3C, "memset n = %zu: wrote past the end", n);
}

static void* thread_body(void* arg) {
  const unsigned id = (unsigned)(uintptr_t)arg;
  enum { N = 300000 };
  unsigned char* a = malloc(N);
  unsigned char* b = malloc(N);
  if (!a || !b) return (void*)1;
  pattern(a, N, id);
  for (unsigned round = 0; round < 200; ++round) {
    const size_t n = (round * 7919u + id * 131u) % (N - 64);
    if (p_memcpy(b + (round & 31), a + (id & 31), n) != b + (round & 31)) return (void*)1;
    if (memcmp(b + (round & 31), a + (id & 31), n) != 0) return (void*)1;
  }
  free(a);
  free(b);
  return NULL;
}

/* The ahead-of-time library's export (weak: absent elsewhere; in a static link, defined by the
 * archive member that memcpy pulls in). */
extern int copysynth_tuned_active(void) __attribute__((weak));

static const char* where(const void* f) {
  Dl_info info;
  if (!dladdr(f, &info) || !info.dli_fname) return "?";
  return info.dli_fname;
}

int main(int argc, char** argv) {
  const int expect_shim = argc > 1 && strcmp(argv[1], "--expect-shim") == 0;
  const int expect_libc = argc > 1 && strcmp(argv[1], "--expect-libc") == 0;
  const int shim = strstr(where((const void*)p_memcpy), "copysynth-preload") != NULL;
  for (int i = 1; i + 1 < argc; ++i) {
    if (strcmp(argv[i], "--expect-lib") == 0) {
      const char* lib = argv[i + 1];
      EXPECT(strstr(where((const void*)p_memcpy), lib) != NULL, "memcpy comes from %s, not %s", where((const void*)p_memcpy), lib);
      EXPECT(strstr(where((const void*)p_memmove), lib) != NULL, "memmove comes from %s, not %s", where((const void*)p_memmove), lib);
      EXPECT(strstr(where((const void*)p_memset), lib) != NULL, "memset comes from %s, not %s", where((const void*)p_memset), lib);
      EXPECT(strstr(where((const void*)p_memcpy_chk), lib) != NULL, "__memcpy_chk comes from %s, not %s",
             where((const void*)p_memcpy_chk), lib);
    }
    if (strcmp(argv[i], "--expect-active") == 0) {
      EXPECT(copysynth_tuned_active != NULL, "copysynth_tuned_active is not defined (the ahead-of-time library is not loaded)");
      if (copysynth_tuned_active)
        EXPECT(copysynth_tuned_active() == atoi(argv[i + 1]), "copysynth_tuned_active() returns %d, not %s",
               copysynth_tuned_active(), argv[i + 1]);
    }
  }
  if (expect_shim || expect_libc) {
    EXPECT(shim == expect_shim, "memcpy comes from %s", where((const void*)p_memcpy));
    EXPECT((strstr(where((const void*)p_memmove), "copysynth-preload") != NULL) == expect_shim, "memmove comes from %s",
           where((const void*)p_memmove));
    EXPECT((strstr(where((const void*)p_memset), "copysynth-preload") != NULL) == expect_shim, "memset comes from %s",
           where((const void*)p_memset));
    EXPECT((strstr(where((const void*)p_memcpy_chk), "copysynth-preload") != NULL) == expect_shim,
           "__memcpy_chk comes from %s", where((const void*)p_memcpy_chk));
  }
  src_buf = malloc(kMax + 4 * kPad + 65536);
  dst_buf = malloc(kMax + 4 * kPad + 65536);
  ref_buf = malloc(kMax + 4 * kPad + 65536);
  EXPECT(src_buf && dst_buf && ref_buf, "out of memory");
  pattern(src_buf, kMax + 2 * kPad, 7);

  for (size_t n = 0; n <= 1100; ++n) check_copy(p_memcpy, n, (unsigned)(n % 64), (unsigned)((n * 7) % 64));
  const size_t big[] = {4095, 4096, 4097, 32767, 32768, 32769, 65536 + 3, (1u << 20) - 1, 1u << 20, (1u << 20) + 65,
                        (4u << 20) - 7, 4u << 20};
  for (size_t i = 0; i < sizeof big / sizeof big[0]; ++i) {
    check_copy(p_memcpy, big[i], 0, 0);
    check_copy(p_memcpy, big[i], 1, 63);
    check_copy(p_memmove, big[i], 33, 4);  /* memmove without overlap is memcpy */
  }
  for (size_t n = 0; n <= 300; n += 1)
    for (long dist = -200; dist <= 200; dist += (n < 70 ? 1 : 13)) check_move(n, dist);
  const size_t moves[] = {4096, 40000, 1u << 20};
  for (size_t i = 0; i < 3; ++i)
    for (long dist = -4097; dist <= 4097; dist += 1365) check_move(moves[i], dist);
  const int fills[] = {0, 0xFF, 0x5A, 0x1234, -1};
  for (size_t n = 0; n <= 700; ++n) check_fill(n, fills[n % 5], (unsigned)(n % 64));
  for (size_t i = 0; i < sizeof big / sizeof big[0]; ++i) check_fill(big[i], fills[i % 5], (unsigned)(i * 9 % 64));

  /* _FORTIFY_SOURCE forms: copy when the destination is large enough ... */
  unsigned char small[64];
  EXPECT(p_memcpy_chk(small, src_buf, 64, sizeof small) == small && memcmp(small, src_buf, 64) == 0, "__memcpy_chk");
  EXPECT(p_memmove_chk(small + 1, small, 40, sizeof small - 1) == small + 1 && memcmp(small + 1, src_buf, 40) == 0,
         "__memmove_chk");
  EXPECT(p_memset_chk(small, 7, 64, sizeof small) == small && small[0] == 7 && small[63] == 7, "__memset_chk");
  /* ... and abort, in a child, when it is not. */
  for (int which = 0; which < 3; ++which) {
    fflush(NULL);
    const pid_t pid = fork();
    EXPECT(pid >= 0, "fork");
    if (pid == 0) {
      /* glibc reports "*** buffer overflow detected ***: terminated" on stderr: quiet it. */
      const int null = open("/dev/null", O_WRONLY);
      if (null < 0 || dup2(null, 2) != 2) _exit(3);
      if (which == 0) p_memcpy_chk(small, src_buf, 65, sizeof small);
      if (which == 1) p_memmove_chk(small, src_buf, 65, sizeof small);
      if (which == 2) p_memset_chk(small, 0, 65, sizeof small);
      _exit(0);
    }
    int status = 0;
    EXPECT(waitpid(pid, &status, 0) == pid, "waitpid");
    EXPECT(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT, "a too small destination for %s did not abort (status %d)",
           which == 0 ? "__memcpy_chk" : which == 1 ? "__memmove_chk" : "__memset_chk", status);
  }

  pthread_t t[4];
  for (unsigned i = 0; i < 4; ++i) EXPECT(pthread_create(&t[i], NULL, thread_body, (void*)(uintptr_t)(i + 1)) == 0, "pthread_create");
  for (unsigned i = 0; i < 4; ++i) {
    void* r = NULL;
    EXPECT(pthread_join(t[i], &r) == 0 && r == NULL, "thread %u copied wrong bytes", i);
  }

  fflush(NULL);
  const pid_t child = fork();
  EXPECT(child >= 0, "fork");
  if (child == 0) {
    check_copy(p_memcpy, 100000, 3, 5);
    check_move(5000, 17);
    check_fill(9999, 0x42, 1);
    _exit(0);
  }
  int status = 0;
  EXPECT(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0,
         "a fork()ed child's copies failed (status %d)", status);

  printf("preload_probe: %ld checks passed (memcpy from %s)\n", checks, where((const void*)p_memcpy));
  free(src_buf);
  free(dst_buf);
  free(ref_buf);
  return 0;
}
