// asm_gen — writes the `.S` grid (asm_grid.hpp) as one plain-flavour GNU as file for
// test_asm_linked: every plan a function `copysynth_grid_<i>` with labels prefixed `g<i>_`, plus
// grid.inc, the C++ declarations of those functions. Run by the build (tests/CMakeLists.txt),
// which assembles grid.S with GNU as and links the object into test_asm_linked.
//
// Usage: asm_gen DIR   (writes DIR/grid.S and DIR/grid.inc; exit status 1 on any error)
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "asm_grid.hpp"
#include "copysynth/asm_flavors.hpp"

using namespace copysynth;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: asm_gen DIR\n");
    return 1;
  }
  const std::filesystem::path dir = argv[1];
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  auto flavor = asm_flavor("plain");
  if (!flavor) return std::fprintf(stderr, "asm_gen: %s\n", flavor.error().message.c_str()), 1;
  const auto grid = test::asm_grid();
  std::string S, decl, table;
  for (std::size_t i = 0; i < grid.size(); ++i) {
    AsmOptions o;
    o.symbol = "copysynth_grid_" + std::to_string(i);
    o.label_prefix = "g" + std::to_string(i) + "_";
    o.header = {"Grid plan " + std::to_string(i) + " of tests/asm_grid.hpp, written by asm_gen for test_asm_linked."};
    auto text = write_asm(grid[i].plan, *flavor, o);
    if (!text) {
      std::fprintf(stderr, "asm_gen: plan %zu (%s): %s\n", i, grid[i].label.c_str(), text.error().message.c_str());
      return 1;
    }
    S += text->text + "\n";
    decl += "void " + o.symbol + "(void);\n";
    table += "    reinterpret_cast<const void*>(&" + o.symbol + "),\n";
  }
  const std::string inc = "// Written by asm_gen (tests/asm_gen.cpp): the routines of grid.S, in grid order.\n"
                          "#include <cstddef>\nextern \"C\" {\n" + decl + "}\n"
                          "inline const void* const kGridRoutines[] = {\n" + table + "};\n"
                          "inline constexpr std::size_t kGridRoutineCount = " + std::to_string(grid.size()) + ";\n";
  for (const auto& [name, text] : {std::pair<std::string, const std::string*>{"grid.S", &S}, {"grid.inc", &inc}}) {
    std::ofstream f(dir / name, std::ios::binary);
    f << *text;
    if (!f.good()) return std::fprintf(stderr, "asm_gen: cannot write %s\n", (dir / name).c_str()), 1;
  }
  std::printf("asm_gen: wrote %zu routines to %s\n", grid.size(), (dir / "grid.S").c_str());
  return 0;
}
