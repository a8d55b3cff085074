// Example: an application that loads wisdom at start-up with the C++ API and copies with the
// tuned routines, against the installed copysynth package (examples/installed/CMakeLists.txt).
//
//   tuned_copy best.json
//
// Wisdom that is missing, malformed or made on another CPU is reported and changes nothing: the
// program then copies with the system memcpy, and still exits 0.
#include <copysynth/copysynth.hpp>

#include <cstdio>
#include <cstring>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s best.json\n", argv[0]);
    return 2;
  }
  if (auto r = copysynth::install_wisdom(argv[1]); r) {
    for (std::size_t i = 0; i < r->operations.size(); ++i)
      std::printf("installed %s = %s\n", copysynth::name_of(r->operations[i]).data(), r->routines[i].c_str());
    std::printf("(read, built and verified in %.1f ms)\n", r->seconds * 1e3);
  } else {
    std::printf("using the system routines: %s\n", r.error().message.c_str());
  }
  std::vector<unsigned char> a(3 << 20), b(3 << 20);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<unsigned char>(i * 7 + (i >> 12));
  auto copy = copysynth::installed<copysynth::Operation::kMemcpy>();  // typed: a CopyFn
  copy(b.data(), a.data(), a.size());
  bool ok = std::memcmp(a.data(), b.data(), a.size()) == 0;
  copysynth::memmove(a.data() + 1, a.data(), 4096);  // through the process-wide slot
  ok = ok && std::memcmp(a.data() + 1, b.data(), 4096) == 0;
  std::printf("memcpy %s: copies %s\n", copysynth::installed_name(copysynth::Operation::kMemcpy).c_str(),
              ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
