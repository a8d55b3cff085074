/* Example: a C program that tunes memcpy at start-up with copysynth_tune, which is in
 * libcopysynth-tune.a (the tuner), not in libcopysynth.a:
 *
 *   CMake:      target_link_libraries(tune_copy PRIVATE copysynth::tune)
 *   pkg-config: cc tune_copy.c $(pkg-config --cflags --libs copysynth-tune) -o tune_copy
 *
 *   ./tune_copy 10     (tunes for 10 s, plus the floor and the final measurement)
 *
 * On any error (a budget outside 1..86400 s, no executable memory) it says why, copies with the
 * system memcpy and exits 1. Writing wisdom once with `autotune --emit best.json` and loading it
 * (tuned_copy.c) costs a few ms per start instead. */
#include <copysynth/copysynth.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s SECONDS\n", argv[0]);
    return 2;
  }
  const int tuned = copysynth_tune(COPYSYNTH_OP_MEMCPY, atof(argv[1])) == COPYSYNTH_OK;
  if (!tuned) printf("not tuned, using the system memcpy: %s\n", copysynth_last_error());
  char name[128];
  copysynth_installed_name(COPYSYNTH_OP_MEMCPY, name, sizeof name);
  enum { N = 1 << 20 };
  unsigned char* a = malloc(N);
  unsigned char* b = malloc(N);
  if (!a || !b) return 1;
  for (size_t i = 0; i < N; ++i) a[i] = (unsigned char)(i * 13);
  copysynth_memcpy(b, a, N);
  const int ok = memcmp(a, b, N) == 0;
  printf("memcpy %s: copies %s\n", name, ok ? "ok" : "WRONG");
  free(a);
  free(b);
  return ok && tuned ? 0 : 1;
}
