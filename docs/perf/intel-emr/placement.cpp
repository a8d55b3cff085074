// placement: the same copysynth routine bytes run from the JIT page, from the program's own text,
// copied near the text and copied far from it, against AOCL-LibMem and glibc, interleaved in one
// process (docs/perf/intel-emr/README.md says what each run shows). A measurement, not part of
// the build. With a Release build in build/ and the AOCL-LibMem archive in build-aocl/:
//
//   build/tools/autotune --from W --emit-asm r.S --name memcpy_cs_static
//   sed -i 's/^\t\.size memcpy_cs_static.*/&\n\t.text\n\t.globl memcpy_cs_static_end\nmemcpy_cs_static_end:/' r.S
//   g++ -O2 -Iapi/include -Ibuild/include placement.cpp r.S -o placement build/api/libcopysynth.a \
//     build/verify/libcopysynth_verify.a build/runtime/libcopysynth_runtime.a \
//     build/templates/libcopysynth_templates.a build/generator/libcopysynth_generator.a \
//     /usr/lib/x86_64-linux-gnu/libasmjit.a build-aocl/libaocl-peer.a -Wl,-u,aocl_memcpy \
//     -lpthread -lrt -lZydis -lZycore
//   taskset -c 1 ./placement W
#include <copysynth/copysynth.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>
extern "C" void* memcpy_cs_static(void*, const void*, size_t);
extern "C" void* aocl_memcpy(void*, const void*, size_t);
extern "C" char memcpy_cs_static_end[];
#include <sys/mman.h>
#include <cstdint>
static void* copy_code(void* hint, const void* code, size_t len) {
  void* p = mmap(hint, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  std::memcpy(p, code, len);
  mprotect(p, 1 << 16, PROT_READ | PROT_EXEC);
  return p;
}
typedef void* (*fn_t)(void*, const void*, size_t);
static double now() { timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e9 + t.tv_nsec; }
int main(int argc, char** argv) {
  if (copysynth_load_wisdom(argv[1]) != 0) { std::printf("load failed: %s\n", copysynth_last_error()); return 1; }
  fn_t jit = copysynth_get_memcpy();
  fn_t volatile sys = &std::memcpy;
  struct R { const char* name; fn_t f; };
  size_t len = size_t(memcpy_cs_static_end - (char*)memcpy_cs_static);
  uintptr_t text = (uintptr_t)&main;
  fn_t near_copy = (fn_t)copy_code((void*)((text + (64u << 20)) & ~uintptr_t(0xffff)), (void*)memcpy_cs_static, len);
  fn_t far_copy = (fn_t)copy_code(nullptr, (void*)memcpy_cs_static, len);
  std::printf("text %p static %p near %p far %p jit %p aocl %p glibc %p (%zu bytes)\n", (void*)text, (void*)memcpy_cs_static, (void*)near_copy, (void*)far_copy, (void*)jit, (void*)aocl_memcpy, (void*)sys, len);
  std::vector<R> rs = {{"jit", jit}, {"static", memcpy_cs_static}, {"near", near_copy}, {"far", far_copy}, {"aocl", aocl_memcpy}, {"glibc", sys}};
  char* buf = static_cast<char*>(aligned_alloc(4096, 1 << 16));
  std::memset(buf, 1, 1 << 16);
  char* src = buf; char* dst = buf + 8192;
  const size_t sizes[] = {1, 8, 32, 48, 64, 80, 128, 256};
  std::printf("%6s", "n");
  for (auto& r : rs) std::printf(" %9s", r.name);
  std::printf("   (ns/call, median of 9 interleaved rounds of 200000 calls)\n");
  for (size_t n : sizes) {
    std::vector<std::vector<double>> t(rs.size());
    for (int round = 0; round < 9; ++round)
      for (size_t i = 0; i < rs.size(); ++i) {
        fn_t volatile f = rs[i].f;
        fn_t g = f;
        double a = now();
        for (int k = 0; k < 200000; ++k) { g(dst, src, n); asm volatile("" ::: "memory"); }
        t[i].push_back((now() - a) / 200000);
      }
    std::printf("%6zu", n);
    for (auto& v : t) { std::sort(v.begin(), v.end()); std::printf(" %9.2f", v[4]); }
    std::printf("\n");
  }
}
