/* profile_probe — a plain C program whose memcpy, memmove and memset calls are known exactly, for
 * the COPYSYNTH_PROFILE checks of tests/preload_test.sh. Lengths no C library or start-up code
 * uses, so a record's bucket counts of them are exactly the program's:
 *
 *   four threads, each: 1000 memcpy of 777 bytes, then 100 memmove of 999 bytes (overlapping:
 *   dst = src + 8);
 *   then, with --signal SIG, raise(SIG) (the shim's dump, in the main thread);
 *   the main thread: 300 memset of 555 bytes;
 *   unless --no-fork, a fork()ed child: 500 memcpy of 100003 bytes, then exit(0); the parent waits.
 *
 * Usage: profile_probe [--signal N] [--no-fork] [--status N] [--stderr-to FILE]
 *   --status N  exit with status N (default 0) when everything else went well
 *   --stderr-to FILE  at the end, close stderr and open FILE (created, truncated) as descriptor 2:
 *               a program that reused the number for a file of its own
 * Prints nothing on success; a failure is said on stderr with exit status 1. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Called through volatile pointers: the compiler can neither inline nor drop the calls. */
typedef void* (*copy_fn)(void*, const void*, size_t);
typedef void* (*fill_fn)(void*, int, size_t);
static copy_fn volatile p_memcpy = memcpy;
static copy_fn volatile p_memmove = memmove;
static fill_fn volatile p_memset = memset;

enum { kThreads = 4, kCopies = 1000, kMoves = 100, kFills = 300, kChildCopies = 500 };

static void* worker(void* arg) {
  (void)arg;
  char* buf = malloc(2 * 4096);
  if (!buf) return (void*)1;
  for (int i = 0; i < kCopies; ++i) p_memcpy(buf + 4096, buf, 777);
  for (int i = 0; i < kMoves; ++i) p_memmove(buf + 8, buf, 999);
  free(buf);
  return NULL;
}

int main(int argc, char** argv) {
  int sig = 0, fork_child = 1, status = 0;
  const char* stderr_to = NULL;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--signal") && i + 1 < argc) {
      sig = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--no-fork")) {
      fork_child = 0;
    } else if (!strcmp(argv[i], "--status") && i + 1 < argc) {
      status = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--stderr-to") && i + 1 < argc) {
      stderr_to = argv[++i];
    } else {
      fprintf(stderr, "usage: profile_probe [--signal N] [--no-fork] [--status N] [--stderr-to FILE]\n");
      return 2;
    }
  }
  pthread_t t[kThreads];
  for (int i = 0; i < kThreads; ++i)
    if (pthread_create(&t[i], NULL, worker, NULL) != 0) {
      fprintf(stderr, "profile_probe: pthread_create failed\n");
      return 1;
    }
  for (int i = 0; i < kThreads; ++i) {
    void* r = NULL;
    pthread_join(t[i], &r);
    if (r) {
      fprintf(stderr, "profile_probe: a thread failed\n");
      return 1;
    }
  }
  if (sig > 0 && raise(sig) != 0) {
    fprintf(stderr, "profile_probe: raise(%d) failed\n", sig);
    return 1;
  }
  static char fill[555];
  for (int i = 0; i < kFills; ++i) p_memset(fill, i, sizeof fill);
  if (fork_child) {
    const pid_t pid = fork();
    if (pid < 0) {
      fprintf(stderr, "profile_probe: fork failed\n");
      return 1;
    }
    if (pid == 0) {
      char* a = malloc(2 * 100003);
      if (!a) exit(1);
      for (int i = 0; i < kChildCopies; ++i) p_memcpy(a + 100003, a, 100003);
      free(a);
      exit(0);
    }
    int st = 0;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      fprintf(stderr, "profile_probe: the child failed (status %d)\n", st);
      return 1;
    }
  }
  if (stderr_to) {
    close(2);
    if (open(stderr_to, O_WRONLY | O_CREAT | O_TRUNC, 0644) != 2) return 1;  /* the lowest free: 2 */
  }
  return status;
}
