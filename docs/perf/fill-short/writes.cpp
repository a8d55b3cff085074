#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include "copysynth/asm_writer.hpp"
#include "copysynth/asm_flavors.hpp"
#include "copysynth/ladders.hpp"
#include "copysynth/routine.hpp"
#include "copysynth/wisdom.hpp"
using namespace copysynth;
int main(int argc, char** argv) {
  std::ifstream f(argv[1]); auto j = nlohmann::json::parse(f);
  auto w = wisdom_from_json(j); if (!w) return 1; const CopyPlan* plan = nullptr; for (auto& e : w->entries) if (e.operation == Operation::kFill) plan = &e.plan;
  AsmOptions o; o.symbol = argv[2];
  auto fl = asm_flavor("plain"); auto t = write_asm(*plan, *fl, o); if (!t) { fprintf(stderr, "%s\n", t.error().message.c_str()); return 1; }
  fputs(t->text.c_str(), stdout);
}
