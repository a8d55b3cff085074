#include <chrono>
#include <cstdio>
#include "copysynth/wisdom.hpp"
#include "copysynth/routine.hpp"
#include "copysynth/verify.hpp"
#include "copysynth/cpu.hpp"
using namespace copysynth;
using C = std::chrono::steady_clock;
static double ms(C::time_point a, C::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }
int main(int argc, char** argv) {
  auto t0 = C::now();
  const CpuInfo& cpu = CpuInfo::host();
  auto t1 = C::now();
  auto w = load_wisdom_for(argv[1], cpu, WisdomPoints::kSkip);
  auto t2 = C::now();
  if (!w) { std::printf("%s\n", w.error().message.c_str()); return 1; }
  std::printf("cpu %.3f  load %.3f", ms(t0, t1), ms(t1, t2));
  for (auto& e : w->entries) {
    auto a = C::now();
    auto r = build_entry(*w, e, cpu);
    auto b = C::now();
    auto rep = verify_routine(*r, VerifyOptions::quick());
    auto c = C::now();
    std::printf("  | %s build %.3f verify %.3f (%llu cases, %llu lengths)", std::string(name_of(e.operation)).c_str(), ms(a, b), ms(b, c),
                (unsigned long long)rep.cases, (unsigned long long)rep.sizes);
  }
  std::printf("\n");
}
