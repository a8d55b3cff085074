/* Example: a C program using the installed copysynth through pkg-config:
 *
 *   cc tuned_copy.c $(pkg-config --cflags --libs copysynth) -o tuned_copy_c
 *   COPYSYNTH_WISDOM=best.json ./tuned_copy_c
 *
 * Loads the wisdom named by COPYSYNTH_WISDOM; on any error it says why and copies with the system
 * routines. */
#include <copysynth/copysynth.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
  if (copysynth_load_wisdom(NULL) != COPYSYNTH_OK)
    printf("using the system routines: %s\n", copysynth_last_error());
  char name[128];
  copysynth_installed_name(COPYSYNTH_OP_MEMCPY, name, sizeof name);
  enum { N = 1 << 20 };
  unsigned char* a = malloc(N);
  unsigned char* b = malloc(N);
  if (!a || !b) return 1;
  for (size_t i = 0; i < N; ++i) a[i] = (unsigned char)(i * 13);
  copysynth_memcpy(b, a, N);
  copysynth_memset(a, 0, 100);
  const int ok = memcmp(a + 100, b + 100, N - 100) == 0 && a[99] == 0 && b[99] == (unsigned char)(99 * 13);
  printf("copysynth %s, memcpy %s: copies %s\n", copysynth_version(), name, ok ? "ok" : "WRONG");
  free(a);
  free(b);
  return ok ? 0 : 1;
}
