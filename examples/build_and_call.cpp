// Example: generate a memcpy routine from parameters, verify it, and call it.
//
//   build/examples/build_and_call
//
// A routine must pass verification before it is used (docs/architecture.md, invariant 9): build() only
// emits and installs code, check_routine() runs the conformance suite.
#include <cstdio>
#include <cstring>
#include <vector>

#include "copysynth/ladders.hpp"
#include "copysynth/routine.hpp"
#include "copysynth/verify.hpp"

int main() {
  using namespace copysynth;
  const CpuInfo& cpu = CpuInfo::host();

  CopyParams params;                       // defaults: AVX2 width, unroll 4, no rep/NT
  params.vector_width = cpu.features().max_vector_bytes() >= 32 ? 32 : 16;
  params.unroll = 8;
  params.rep_threshold = 64 * 1024;        // rep movsb from 64 KiB (bytes)

  auto plan = make_plan(params, cpu.features());
  if (!plan) {
    std::fprintf(stderr, "bad params: %s\n", plan.error().message.c_str());
    return 1;
  }
  std::printf("%s", to_string(*plan).c_str());

  auto routine = Routine::build(*plan);
  if (!routine) {
    std::fprintf(stderr, "cannot build: %s\n", routine.error().message.c_str());
    return 1;
  }
  if (auto st = check_routine(*routine); !st) {
    std::fprintf(stderr, "%s\n", st.error().message.c_str());
    return 1;
  }

  std::vector<char> src(100000, 'x'), dst(100000);
  src[99999] = '!';
  void* ret = routine->fn()(dst.data(), src.data(), src.size());
  const bool ok = ret == dst.data() && std::memcmp(dst.data(), src.data(), src.size()) == 0;
  std::printf("%s: %zu bytes of code, copy %s\n", routine->name().c_str(), routine->size(), ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
