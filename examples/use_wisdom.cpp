// Example: load the wisdom written by `autotune --emit best.json` and copy with the tuned routine.
//
//   build/examples/use_wisdom best.json
//
// Wisdom made on another CPU is refused (check_cpu); a malformed file is reported and nothing is
// installed: the program falls back to the system memcpy and says so.
#include <cstdio>
#include <cstring>
#include <optional>
#include <vector>

#include "copysynth/routine.hpp"
#include "copysynth/verify.hpp"
#include "copysynth/wisdom.hpp"

int main(int argc, char** argv) {
  using namespace copysynth;
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s best.json\n", argv[0]);
    return 1;
  }
  CopyFn copy = &std::memcpy;
  std::optional<Routine> tuned;
  auto wisdom = load_wisdom(argv[1]);
  Status st = wisdom ? check_cpu(*wisdom, CpuInfo::host()) : Status(wisdom.error());
  if (st && wisdom->find(Operation::kMemcpy)) {
    auto r = Routine::build(wisdom->find(Operation::kMemcpy)->plan);
    st = r ? check_routine(*r) : Status(r.error());
    if (st) tuned.emplace(std::move(r).value());
  }
  if (tuned) {
    copy = tuned->fn();
    std::printf("using %s from %s\n", tuned->name().c_str(), argv[1]);
  } else {
    std::printf("using the system memcpy (%s)\n", st ? "no memcpy entry" : st.error().message.c_str());
  }
  std::vector<unsigned char> a(1 << 20), b(1 << 20);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<unsigned char>(i * 7);
  copy(b.data(), a.data(), a.size());
  return std::memcmp(a.data(), b.data(), a.size()) == 0 ? 0 : 1;
}
