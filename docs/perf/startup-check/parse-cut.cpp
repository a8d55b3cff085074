// The JSON parse the shim does, with and without cut_entry_points (thirty-fourth round): per
// iteration, in one process, microseconds of parse_wisdom_text(kSkip) on the file with points
// (which now checks and empties them first), cut_entry_points alone, nlohmann's SAX parse of the whole text
// with a handler that keeps nothing (what lexing the file costs), a plain parse of the same file
// without its points, and a plain parse of the file with them. The build command is in
// README.md ("Stepping over the points").
//   usage: parse-cut WISDOM-WITH-POINTS WISDOM-WITHOUT-POINTS
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "copysynth/wisdom.hpp"
using namespace copysynth;
using json = nlohmann::json;
using C = std::chrono::steady_clock;
static double us(C::time_point a, C::time_point b) { return std::chrono::duration<double, std::micro>(b - a).count(); }
struct Nothing : nlohmann::json_sax<json> {
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }
};
static std::string read(const char* p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}
int main(int argc, char** argv) {
  if (argc != 3) return 2;
  const std::string with = read(argv[1]), without = read(argv[2]);
  for (int i = 0; i < 5; ++i) {
    auto a = C::now();
    auto skip = parse_wisdom_text(with, WisdomPoints::kSkip);
    auto b = C::now();
    auto cut = cut_entry_points(with);
    auto c = C::now();
    Nothing n;
    const bool ok = json::sax_parse(with, &n);
    auto d = C::now();
    auto small = json::parse(without);
    auto e = C::now();
    auto full = json::parse(with);
    auto f = C::now();
    std::printf("kSkip %4.0f  cut alone %3.0f  lex whole %4.0f%s  no points %3.0f  plain %4.0f us  (%zu bytes, cut to %zu)\n",
                us(a, b), us(b, c), us(c, d), ok ? "" : " (error)", us(d, e), us(e, f), with.size(),
                cut ? cut->size() : with.size());
  }
}
