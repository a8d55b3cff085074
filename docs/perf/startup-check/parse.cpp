#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <nlohmann/json.hpp>
#include "copysynth/wisdom.hpp"
using namespace copysynth;
using C = std::chrono::steady_clock;
static double ms(C::time_point a, C::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }
int main(int argc, char** argv) {
  std::ifstream f(argv[1]); std::stringstream ss; ss << f.rdbuf(); std::string text = ss.str();
  for (int i = 0; i < 3; ++i) {
    auto a = C::now();
    auto j1 = nlohmann::json::parse(text);
    auto b = C::now();
    auto j2 = parse_wisdom_text(text, WisdomPoints::kSkip);
    auto c = C::now();
    auto w = wisdom_from_json(j2);
    auto d = C::now();
    std::printf("parse plain %.3f  parse skip %.3f  from_json %.3f (%zu bytes, skip dump %zu)\n", ms(a, b), ms(b, c), ms(c, d), text.size(), j2.dump().size());
  }
}
