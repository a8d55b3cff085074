/* copysynth — test of the C API (copysynth.h), compiled as C so the header is checked as C.
 *
 * Usage: test_c_api HOST_WISDOM.json SCRATCH_DIR
 *   HOST_WISDOM.json: wisdom of this host with memcpy, memmove and fill entries (the ctest
 *   fixture host_wisdom writes it with `autotune --quick --op memcpy,memmove,fill --emit`).
 * Prints one line per check ("ok - ..." / "FAIL - ...") and "N passed, N failed"; exit 1 on any
 * failure. */
#include <copysynth/copysynth.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int passed, failed;

static void check(int cond, const char* what) {
  if (cond) {
    ++passed;
    printf("ok   - %s\n", what);
  } else {
    ++failed;
    printf("FAIL - %s (last error: %s)\n", what, copysynth_last_error());
  }
}

static char name_buf[256];
static const char* name_of(copysynth_operation op) {
  copysynth_installed_name(op, name_buf, sizeof name_buf);
  return name_buf;
}

/* memcpy, memmove both ways and memset through the API, against byte loops. */
static int copies_ok(void) {
  enum { N = 70000 };
  static unsigned char a[N], b[N], ref[N];
  int ok = 1;
  for (size_t i = 0; i < N; ++i) a[i] = (unsigned char)(i * 29 + 3);
  for (size_t n = 0; n < 3000 && ok; n += 7) {
    memset(b, 0, n + 64);
    ok = copysynth_memcpy(b + 1, a + 2, n) == b + 1 && memcmp(b + 1, a + 2, n) == 0 && b[n + 1] == 0;
  }
  ok = ok && copysynth_memcpy(b, a, N) == b && memcmp(a, b, N) == 0;
  for (size_t i = 0; i < N; ++i) ref[i] = a[i];
  for (size_t i = 60000; i-- > 0;) ref[i + 33] = ref[i];  /* memmove forward by 33, done backward */
  ok = ok && copysynth_memmove(a + 33, a, 60000) == a + 33 && memcmp(a, ref, N) == 0;
  for (size_t i = 0; i < 50000; ++i) ref[i] = ref[i + 1000]; /* backward by 1000 */
  ok = ok && copysynth_memmove(a, a + 1000, 50000) == a && memcmp(a, ref, N) == 0;
  b[40005] = 0;
  ok = ok && copysynth_memset(b + 5, 0x1C7, 40000) == b + 5 && b[5] == 0xC7 && b[40004] == 0xC7 && b[40005] != 0xC7;
  ok = ok && copysynth_get_memcpy()(b, a, 100) == b && memcmp(a, b, 100) == 0;
  return ok;
}

static int write_text(const char* path, const char* text) {
  FILE* f = fopen(path, "w");
  if (!f) return 0;
  fputs(text, f);
  return fclose(f) == 0;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s HOST_WISDOM.json SCRATCH_DIR\n", argv[0]);
    return 2;
  }
  const char* wisdom = argv[1];
  char bad[4096], missing[4096];
  snprintf(bad, sizeof bad, "%s/c-api-malformed.json", argv[2]);
  snprintf(missing, sizeof missing, "%s/c-api-no-such-file.json", argv[2]);

  check(strcmp(copysynth_version(), COPYSYNTH_VERSION) == 0, "copysynth_version() is the headers' COPYSYNTH_VERSION");
  check(strcmp(name_of(COPYSYNTH_OP_MEMCPY), "system") == 0, "before loading, memcpy is the system routine");
  check(copysynth_get_memcpy() != NULL && copysynth_get_memmove() != NULL && copysynth_get_memset() != NULL,
        "the get_ functions never return NULL");
  check(copies_ok(), "copies are correct through the system routines");

  unsetenv("COPYSYNTH_WISDOM");
  check(copysynth_load_wisdom(NULL) == COPYSYNTH_INVALID_ARGUMENT, "load_wisdom(NULL) without COPYSYNTH_WISDOM: invalid-argument");
  check(strstr(copysynth_last_error(), "COPYSYNTH_WISDOM") != NULL, "... and the message names the variable");
  /* Regression: "" was taken for NULL. */
  check(copysynth_load_wisdom("") == COPYSYNTH_INVALID_ARGUMENT, "load_wisdom(\"\"): invalid-argument");
  check(strstr(copysynth_last_error(), "the wisdom path is empty; pass a file name, or NULL for $COPYSYNTH_WISDOM") != NULL,
        "... and the message says the path is empty, not that COPYSYNTH_WISDOM is unset");
  setenv("COPYSYNTH_WISDOM", "", 1);
  check(copysynth_load_wisdom(NULL) == COPYSYNTH_INVALID_ARGUMENT, "load_wisdom(NULL) with COPYSYNTH_WISDOM empty: invalid-argument");
  check(strstr(copysynth_last_error(), "COPYSYNTH_WISDOM, which is empty") != NULL, "... and the message says it is empty");
  unsetenv("COPYSYNTH_WISDOM");
  check(copysynth_load_wisdom(argv[2]) == COPYSYNTH_WISDOM_IO, "a directory: wisdom-io");
  check(strstr(copysynth_last_error(), "is a directory, not a wisdom file") != NULL, "... and the message says it is a directory");
  check(copysynth_load_wisdom(missing) == COPYSYNTH_WISDOM_IO, "a missing file: wisdom-io");
  check(strstr(copysynth_last_error(), "c-api-no-such-file.json") != NULL, "... and the message names the file");
  check(strcmp(copysynth_status_name(COPYSYNTH_WISDOM_IO), "wisdom-io") == 0, "status_name(WISDOM_IO) is wisdom-io");
  check(strcmp(copysynth_status_name(COPYSYNTH_JIT_UNAVAILABLE), "jit-unavailable") == 0,
        "status_name(JIT_UNAVAILABLE) is jit-unavailable");
  check(strcmp(copysynth_status_name(42), "unknown") == 0, "status_name of an unknown value is unknown");
  check(write_text(bad, "{\"schema\": 1, \"generator_version\": \"0.1.0\""), "wrote a truncated file");
  check(copysynth_load_wisdom(bad) == COPYSYNTH_WISDOM_MALFORMED, "a truncated file: wisdom-malformed");
  check(strcmp(name_of(COPYSYNTH_OP_MEMCPY), "system") == 0, "... and memcpy is still the system routine");

  setenv("COPYSYNTH_WISDOM", wisdom, 1);
  check(copysynth_load_wisdom(NULL) == COPYSYNTH_OK, "load_wisdom(NULL) with COPYSYNTH_WISDOM set to the host's wisdom");
  check(copysynth_last_error()[0] == '\0', "... and the last error is empty after success");
  check(strncmp(name_of(COPYSYNTH_OP_MEMCPY), "memcpy/", 7) == 0, "memcpy is the tuned routine");
  check(strncmp(name_of(COPYSYNTH_OP_MEMMOVE), "memmove/", 8) == 0, "memmove is the tuned routine");
  check(strncmp(name_of(COPYSYNTH_OP_FILL), "fill/", 5) == 0, "memset is the tuned fill routine");
  check(copies_ok(), "copies are correct through the tuned routines");
  char tuned[256];
  snprintf(tuned, sizeof tuned, "%s", name_of(COPYSYNTH_OP_MEMCPY));

  check(copysynth_load_wisdom(bad) == COPYSYNTH_WISDOM_MALFORMED, "a malformed file after a good one: wisdom-malformed");
  check(strcmp(name_of(COPYSYNTH_OP_MEMCPY), tuned) == 0, "... and the tuned memcpy keeps serving");
  check(copies_ok(), "... and copies are still correct");

  char small[4];
  const size_t len = copysynth_installed_name(COPYSYNTH_OP_MEMCPY, small, sizeof small);
  check(len == strlen(tuned) && strcmp(small, "mem") == 0, "installed_name truncates like snprintf and returns the full length");
  check(copysynth_installed_name(COPYSYNTH_OP_MEMCPY, NULL, 0) == strlen(tuned), "installed_name(op, NULL, 0) returns the length");
  check(copysynth_installed_name((copysynth_operation)9, small, sizeof small) == (size_t)-1, "installed_name of an unknown op: (size_t)-1");
  check(copysynth_tune((copysynth_operation)9, 5) == COPYSYNTH_INVALID_ARGUMENT, "tune of an unknown op: invalid-argument");
  check(copysynth_tune(COPYSYNTH_OP_MEMCPY, 0.5) == COPYSYNTH_INVALID_ARGUMENT, "tune with a budget below 1 s: invalid-argument");
  check(strstr(copysynth_last_error(), "budget_seconds must be between 1 and 86400, got 0.5") != NULL,
        "... and the message names the budget and the range (tune()'s message)");
  check(copysynth_tune(COPYSYNTH_OP_MEMCPY, NAN) == COPYSYNTH_INVALID_ARGUMENT, "tune with a NaN budget: invalid-argument");
  check(strstr(copysynth_last_error(), "got nan") != NULL, "... and the message says nan");

  check(copysynth_uninstall(COPYSYNTH_OP_MEMCPY) == COPYSYNTH_OK, "uninstall memcpy");
  check(strcmp(name_of(COPYSYNTH_OP_MEMCPY), "system") == 0, "... puts the system memcpy back");
  check(strncmp(name_of(COPYSYNTH_OP_MEMMOVE), "memmove/", 8) == 0, "... and leaves memmove tuned");
  check(copies_ok(), "copies are correct after uninstall");

  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
