// Tests of the static machine-code checker (verify/static_check.hpp): it flags each kind of bad
// snippet (hand-assembled with asmjit), passes every real plan the generator makes for every ISA
// level, and catches faults injected into a real routine's bytes. Nothing here executes
// generated code, so AVX-512 plans are checked on any host.
#include <doctest/doctest.h>

#include <asmjit/x86.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "copysynth/emit.hpp"
#include "copysynth/ladders.hpp"
#include "copysynth/static_check.hpp"
#include "support/skip.hpp"
#include "support/snippet.hpp"

using namespace copysynth;
namespace x86 = asmjit::x86;
using Bytes = std::vector<std::uint8_t>;

namespace {

const IsaFeatures kSse2 = IsaFeatures::for_level(IsaLevel::kSSE2);
const IsaFeatures kAvx2 = IsaFeatures::for_level(IsaLevel::kAVX2);
const IsaFeatures kAvx512 = IsaFeatures::for_level(IsaLevel::kAVX512);

using test::assemble_snippet;

x86::Mem at(const x86::Gp& base, unsigned bytes) {
  x86::Mem m = x86::ptr(base);
  m.setSize(bytes);
  return m;
}

/// Checks `code` and prints the report when it is not what the test expects.
StaticReport check(const Bytes& code, const IsaFeatures& allowed) {
  StaticReport r = check_code(code, allowed);
  INFO(r.summary());
  return r;
}

/// Replaces the first occurrence of `from` in `code` by `to` (same length). False if absent.
bool patch_first(Bytes& code, const Bytes& from, const Bytes& to) {
  auto it = std::search(code.begin(), code.end(), from.begin(), from.end());
  if (it == code.end()) return false;
  std::copy(to.begin(), to.end(), it);
  return true;
}

}  // namespace

TEST_CASE("static: missing vzeroupper after YMM use is flagged, vzeroupper fixes it") {
  const Bytes bad = assemble_snippet([](x86::Assembler& a) {
    a.vmovdqu(x86::ymm0, at(x86::rsi, 32));
    a.vmovdqu(at(x86::rdi, 32), x86::ymm0);
    a.ret();
  });
  const StaticReport r = check(bad, kAvx2);
  CHECK(r.count(StaticRule::kMissingVzeroupper) == 1);
  CHECK(r.findings.size() == 1);
  CHECK(r.findings[0].instruction == "ret");
  CHECK(r.findings[0].offset == bad.size() - 1);

  const Bytes good = assemble_snippet([](x86::Assembler& a) {
    a.vmovdqu(x86::ymm0, at(x86::rsi, 32));
    a.vmovdqu(at(x86::rdi, 32), x86::ymm0);
    a.vzeroupper();
    a.ret();
  });
  CHECK(check(good, kAvx2).ok());
  // XMM-only VEX code leaves the upper state clean: no vzeroupper needed.
  CHECK(check(assemble_snippet([](x86::Assembler& a) {
          a.vmovdqu(x86::xmm0, at(x86::rsi, 16));
          a.vmovdqu(at(x86::rdi, 16), x86::xmm0);
          a.ret();
        }), kAvx2).ok());
}

TEST_CASE("static: non-temporal stores need sfence before ret") {
  const Bytes bad = assemble_snippet([](x86::Assembler& a) {
    a.movdqu(x86::xmm0, at(x86::rsi, 16));
    a.movntdq(at(x86::rdi, 16), x86::xmm0);
    a.ret();
  });
  const StaticReport r = check(bad, kSse2);
  CHECK(r.count(StaticRule::kMissingSfence) == 1);
  CHECK(r.findings.size() == 1);

  CHECK(check(assemble_snippet([](x86::Assembler& a) {
          a.movnti(at(x86::rdi, 8), x86::rcx);
          a.ret();
        }), kSse2).count(StaticRule::kMissingSfence) == 1);
  CHECK(check(assemble_snippet([](x86::Assembler& a) {
          a.movntdq(at(x86::rdi, 16), x86::xmm0);
          a.sfence();
          a.ret();
        }), kSse2).ok());
  CHECK(check(assemble_snippet([](x86::Assembler& a) {
          a.movnti(at(x86::rdi, 8), x86::rcx);
          a.mfence();
          a.ret();
        }), kSse2).ok());
}

TEST_CASE("static: the sfence rule is path-sensitive") {
  // Only the fall-through side fences: the ret reached by the branch is flagged, the other not.
  Bytes one_side;
  std::size_t bad_ret = 0;
  one_side = assemble_snippet([&](x86::Assembler& a) {
    asmjit::Label other = a.newLabel();
    a.movntdq(at(x86::rdi, 16), x86::xmm0);
    a.cmp(x86::rdx, 100);
    a.jae(other);
    a.sfence();
    a.ret();
    a.bind(other);
    bad_ret = a.offset();
    a.ret();
  });
  StaticReport r = check(one_side, kSse2);
  REQUIRE(r.findings.size() == 1);
  CHECK(r.findings[0].rule == StaticRule::kMissingSfence);
  CHECK(r.findings[0].offset == bad_ret);

  // Both sides fence: clean.
  CHECK(check(assemble_snippet([](x86::Assembler& a) {
          asmjit::Label other = a.newLabel();
          a.movntdq(at(x86::rdi, 16), x86::xmm0);
          a.cmp(x86::rdx, 100);
          a.jae(other);
          a.sfence();
          a.ret();
          a.bind(other);
          a.sfence();
          a.ret();
        }), kSse2).ok());

  // The paths join before one ret: the unfenced path still reaches it (states don't merge away).
  CHECK(check(assemble_snippet([](x86::Assembler& a) {
          asmjit::Label join = a.newLabel();
          a.movntdq(at(x86::rdi, 16), x86::xmm0);
          a.cmp(x86::rdx, 100);
          a.jae(join);
          a.sfence();
          a.bind(join);
          a.ret();
        }), kSse2).count(StaticRule::kMissingSfence) == 1);

  // Same for vzeroupper: YMM on one side only, no vzeroupper at the join.
  CHECK(check(assemble_snippet([](x86::Assembler& a) {
          asmjit::Label join = a.newLabel();
          a.cmp(x86::rdx, 100);
          a.jae(join);
          a.vmovdqu(x86::ymm0, at(x86::rsi, 32));
          a.bind(join);
          a.ret();
        }), kAvx2).count(StaticRule::kMissingVzeroupper) == 1);
}

TEST_CASE("static: ISA gating") {
  const Bytes avx2 = assemble_snippet([](x86::Assembler& a) {
    a.vpbroadcastd(x86::ymm0, x86::xmm0);
    a.vzeroupper();
    a.ret();
  });
  const StaticReport under_sse2 = check(avx2, kSse2);
  CHECK(under_sse2.count(StaticRule::kIsa) == 2);  // vpbroadcastd (avx2) and vzeroupper (avx)
  CHECK(under_sse2.findings[0].what.find("avx2") != std::string::npos);
  CHECK(check(avx2, kAvx2).ok());

  const Bytes zmm = assemble_snippet([](x86::Assembler& a) {
    a.vmovdqu64(x86::zmm0, at(x86::rsi, 64));
    a.vmovdqu64(at(x86::rdi, 64), x86::zmm0);
    a.vzeroupper();
    a.ret();
  });
  const StaticReport under_avx2 = check(zmm, kAvx2);
  CHECK(under_avx2.count(StaticRule::kIsa) == 2);
  CHECK(under_avx2.findings[0].what.find("avx512f") != std::string::npos);
  CHECK(check(zmm, kAvx512).ok());

  // EVEX forms on ymm need AVX512VL; byte/word forms need AVX512BW.
  IsaFeatures f_only = kAvx512;
  f_only.remove(Feature::kAVX512VL).remove(Feature::kAVX512BW);
  const Bytes evex_ymm = assemble_snippet([](x86::Assembler& a) {
    a.vmovdqu64(x86::ymm0, at(x86::rsi, 32));
    a.vzeroupper();
    a.ret();
  });
  CHECK(check(evex_ymm, kAvx512).ok());
  const StaticReport vl = check(evex_ymm, f_only);
  REQUIRE(vl.count(StaticRule::kIsa) == 1);
  CHECK(vl.findings[0].what.find("avx512vl") != std::string::npos);
  const Bytes bytes_form = assemble_snippet([](x86::Assembler& a) {
    a.vmovdqu8(x86::zmm0, at(x86::rsi, 64));
    a.vzeroupper();
    a.ret();
  });
  CHECK(check(bytes_form, kAvx512).ok());
  const StaticReport bw = check(bytes_form, f_only);
  REQUIRE(bw.count(StaticRule::kIsa) == 1);
  CHECK(bw.findings[0].what.find("avx512bw") != std::string::npos);

  // PREFETCHW and BMI2 are features of their own; rep movsb is base ISA (ERMS is speed only).
  const Bytes pfw = assemble_snippet([](x86::Assembler& a) {
    a.prefetchw(at(x86::rsi, 1));
    a.ret();
  });
  CHECK(check(pfw, kAvx2).count(StaticRule::kIsa) == 1);
  CHECK(check(pfw, IsaFeatures(kAvx2).add(Feature::kPREFETCHW)).ok());
  const Bytes bmi2 = assemble_snippet([](x86::Assembler& a) {
    a.shlx(x86::rcx, x86::rdx, x86::rcx);
    a.ret();
  });
  CHECK(check(bmi2, kSse2).count(StaticRule::kIsa) == 1);
  CHECK(check(bmi2, kAvx2).ok());
  CHECK(check(assemble_snippet([](x86::Assembler& a) {
          a.mov(x86::rcx, x86::rdx);
          a.rep().movsb();
          a.ret();
        }), kSse2).ok());
  // Extensions outside copysynth's model (here SSSE3 and MMX) are rejected conservatively.
  const StaticReport ssse3 = check(assemble_snippet([](x86::Assembler& a) {
    a.pshufb(x86::xmm0, x86::xmm1);
    a.movntq(at(x86::rdi, 8), x86::mm0);
    a.sfence();
    a.ret();
  }), kAvx512);
  CHECK(ssse3.count(StaticRule::kIsa) == 2);
}

TEST_CASE("static: SysV ABI violations") {
  const StaticReport rbx = check(assemble_snippet([](x86::Assembler& a) {
    a.mov(x86::rbx, x86::rax);
    a.ret();
  }), kSse2);
  REQUIRE(rbx.count(StaticRule::kAbi) == 1);
  CHECK(rbx.findings[0].offset == 0);
  CHECK(rbx.findings[0].instruction == "mov rbx, rax");

  // Sub-registers, hidden writes (cpuid writes ebx) and every callee-saved register.
  for (const x86::Gp& r : std::initializer_list<x86::Gp>{x86::bl, x86::bp, x86::r12d, x86::r13w,
                                                           x86::r14b, x86::r15}) {
    CHECK(check(assemble_snippet([&](x86::Assembler& a) {
            a.xor_(r, r);
            a.ret();
          }), kSse2).count(StaticRule::kAbi) == 1);
  }
  CHECK(check(assemble_snippet([](x86::Assembler& a) {
          a.cpuid();
          a.ret();
        }), kSse2).count(StaticRule::kAbi) == 1);
  // Caller-saved registers are fine.
  CHECK(check(assemble_snippet([](x86::Assembler& a) {
          for (const x86::Gp& r : std::initializer_list<x86::Gp>{
                   x86::rax, x86::rcx, x86::rdx, x86::rsi, x86::rdi, x86::r8, x86::r9, x86::r10,
                   x86::r11})
            a.xor_(r, r);
          a.ret();
        }), kSse2).ok());
  // rsp: explicit writes and push/pop (the stack pointer must stay as found).
  CHECK(check(assemble_snippet([](x86::Assembler& a) {
          a.sub(x86::rsp, 8);
          a.add(x86::rsp, 8);
          a.ret();
        }), kSse2).count(StaticRule::kAbi) == 2);
  CHECK(check(assemble_snippet([](x86::Assembler& a) {
          a.push(x86::rcx);
          a.pop(x86::rcx);
          a.ret();
        }), kSse2).count(StaticRule::kAbi) == 2);
  // The direction flag.
  const StaticReport df = check(assemble_snippet([](x86::Assembler& a) {
    a.std();
    a.ret();
  }), kSse2);
  REQUIRE(df.count(StaticRule::kAbi) == 1);
  CHECK(df.findings[0].instruction == "std");
  CHECK(check(assemble_snippet([](x86::Assembler& a) {
          a.pushfq();
          a.popfq();
          a.ret();
        }), kSse2).count(StaticRule::kAbi) >= 2);
  CHECK(check(assemble_snippet([](x86::Assembler& a) {
          a.cld();
          a.ret();
        }), kSse2).ok());
}

TEST_CASE("static: unreachable bytes are not decoded; control flow it cannot follow is flagged") {
  // jmp over int3 fill and an undecodable byte (0x06, push es, is invalid in 64-bit mode).
  const Bytes jump_over = assemble_snippet([](x86::Assembler& a) {
    asmjit::Label head = a.newLabel();
    a.jmp(head);
    const std::uint8_t fill[] = {0xCC, 0xCC, 0xCC, 0x06, 0xCC};
    a.embed(fill, sizeof fill);
    a.bind(head);
    a.ret();
  });
  const StaticReport r = check(jump_over, kSse2);
  CHECK(r.ok());
  CHECK(r.instructions == 2);

  // The same bytes on a reachable path are findings.
  const Bytes trap = {0xCC, 0xC3};
  CHECK(check(trap, kSse2).count(StaticRule::kControlFlow) == 1);
  const StaticReport bad = check(Bytes{0x90, 0x06, 0xC3}, kSse2);
  REQUIRE(bad.count(StaticRule::kUndecodable) == 1);
  CHECK(bad.findings[0].offset == 1);
  // Truncated instruction at the end of the code.
  CHECK(check(Bytes{0x48, 0x89}, kSse2).count(StaticRule::kUndecodable) == 1);

  // Indirect jump, call, jump outside the code, falling off the end, empty code.
  CHECK(check(assemble_snippet([](x86::Assembler& a) { a.jmp(x86::rax); }), kSse2)
            .count(StaticRule::kControlFlow) == 1);
  CHECK(check(assemble_snippet([](x86::Assembler& a) {
          asmjit::Label f = a.newLabel();
          a.call(f);
          a.bind(f);
          a.ret();
        }), kSse2).count(StaticRule::kControlFlow) == 1);
  CHECK(check(Bytes{0xEB, 0x10, 0xC3}, kSse2).count(StaticRule::kControlFlow) == 1);  // jmp +16
  CHECK(check(Bytes{0x90, 0x90}, kSse2).count(StaticRule::kControlFlow) == 1);
  CHECK(check(Bytes{}, kSse2).count(StaticRule::kControlFlow) == 1);
}

TEST_CASE("static: loops reach a fixpoint") {
  // A counted loop with NT stores and YMM inside; sfence and vzeroupper after the exit.
  const Bytes loop = assemble_snippet([](x86::Assembler& a) {
    asmjit::Label head = a.newLabel();
    a.mov(x86::ecx, 10);
    a.bind(head);
    a.vmovdqu(x86::ymm0, at(x86::rsi, 32));
    a.vmovntdq(at(x86::rdi, 32), x86::ymm0);
    a.add(x86::rdi, 32);
    a.sub(x86::rcx, 1);
    a.jnz(head);
    a.sfence();
    a.vzeroupper();
    a.ret();
  });
  const StaticReport r = check(loop, kAvx2);
  CHECK(r.ok());
  CHECK(r.instructions == 9);
  CHECK(r.states <= 4 * r.instructions);

  // The fence inside the loop body before the store does not cover the last iteration's store.
  const Bytes early_fence = assemble_snippet([](x86::Assembler& a) {
    asmjit::Label head = a.newLabel();
    a.mov(x86::ecx, 10);
    a.bind(head);
    a.sfence();
    a.movnti(at(x86::rdi, 8), x86::rax);
    a.sub(x86::rcx, 1);
    a.jnz(head);
    a.ret();
  });
  CHECK(check(early_fence, kSse2).count(StaticRule::kMissingSfence) == 1);

  // An infinite loop terminates the analysis too.
  CHECK(check(Bytes{0xEB, 0xFE}, kSse2).ok());
}

TEST_CASE("static: every real plan is clean for its ISA level") {
  struct Level {
    IsaLevel level;
    std::vector<std::uint32_t> widths;
  };
  const Level levels[] = {{IsaLevel::kSSE2, {8, 16}},
                          {IsaLevel::kAVX2, {8, 16, 32}},
                          {IsaLevel::kAVX512, {8, 16, 32, 64}}};
  std::size_t routines = 0;
  std::vector<std::string> skipped;
  for (const Operation op : spec::Operation::choices) {
    std::size_t op_routines = 0, instructions = 0, states = 0, bytes = 0;
    for (const Level& L : levels) {
      const IsaFeatures target = IsaFeatures::for_level(L.level);
      for (const std::uint32_t width : L.widths)
        for (const std::uint32_t unroll : spec::Unroll::choices)
          for (const NopForm form : spec::NopForm::choices)
            for (const bool thresholds : {false, true}) {
              CopyParams p;
              p.operation = op;
              p.vector_width = width;
              p.unroll = unroll;
              p.nop_form = form;
              if (thresholds) {
                p.rep_threshold = 2048;
                p.nt_threshold = 1u << 20;
                if (op == Operation::kMemcpy || op == Operation::kMemmove) {  // have loads
                  p.prefetch_distance = 256;
                  p.prefetch_hint = PrefetchHint::kNTA;
                }
              }
              if (op == Operation::kMemcpy && width == 8 && unroll % 2 == 1) p.shift_realign = true;
              if ((op == Operation::kMemcpy || op == Operation::kMemmove) && thresholds && unroll % 4 == 1)
                p.rep_alias_window = 64;
              if ((op == Operation::kMemcpy || op == Operation::kMemmove) && thresholds && width >= 32 &&
                  (unroll + static_cast<unsigned>(form)) % 3 == 0)
                p.rep_alias_loop = 8192;  // 4K-aliasing rep copies below 8 KiB to the 32-byte loop
              if ((op == Operation::kMemcpy || op == Operation::kMemmove) && width >= 16 && unroll <= 4 &&
                  (unroll + static_cast<unsigned>(form)) % 2 == 0)
                p.loop_pipeline = true;
              // AVX-512 targets also get the masked class, the high register bank and the
              // half-width head/tail moves (rotating, so every width sees each).
              if (L.level == IsaLevel::kAVX512 && width >= 16 && op != Operation::kClearPage) {
                const unsigned k = unroll + static_cast<unsigned>(form) + (thresholds ? 1 : 0);
                if (k % 2) p.register_bank = RegisterBank::kHigh;
                if (k % 5) p.mask_max = 8u << (k % 5);  // 16, 32, 64, 128
                if (width >= 32 && k % 4 == 1) p.head_tail_width = width / 2;
              }
              auto plan = make_plan(p, target);
              if (!plan.ok() && op != Operation::kMemcpy) {  // an operation not (yet) generated
                skipped.push_back(to_string(p) + ": " + plan.error().message);
                continue;
              }
              REQUIRE_MESSAGE(plan.ok(), to_string(p) << ": " << (plan.ok() ? "" : plan.error().message));
              auto code = assemble(*plan);
              REQUIRE_MESSAGE(code.ok(), to_string(p) << ": " << (code.ok() ? "" : code.error().message));
              const StaticReport r = check_code(*code, target);
              CHECK_MESSAGE(r.ok(), isa_level_name(L.level) << " " << to_string(p) << "\n"
                                                            << r.summary());
              ++op_routines;
              instructions += r.instructions;
              states += r.states;
              bytes += code->size();
            }
    }
    routines += op_routines;
    const auto name = spec::Operation::names[static_cast<std::size_t>(op)];
    MESSAGE("static checker, " << name << ": " << op_routines << " routines, " << bytes
                               << " bytes, " << instructions << " reachable instructions, "
                               << states << " (offset, state) pairs explored");
  }
  MESSAGE("static checker: " << routines << " routines clean; " << skipped.size()
                             << " param sets skipped (make_plan refused them)");
  if (!skipped.empty()) MESSAGE("first skipped: " << skipped.front());
  CHECK(routines >= 360);

  // ISA gating really works on generated code: an AVX2 plan checked against SSE2 is flagged.
  CopyParams p;
  p.vector_width = 32;
  auto plan = make_plan(p, kAvx2);
  REQUIRE(plan.ok());
  auto code = assemble(*plan);
  REQUIRE(code.ok());
  const StaticReport r = check_code(*code, kSse2);
  CHECK(r.count(StaticRule::kIsa) > 0);
  CHECK(r.count(StaticRule::kIsa) == r.findings.size());
  // And an AVX-512 plan against AVX2.
  p.vector_width = 64;
  auto plan512 = make_plan(p, kAvx512);
  REQUIRE(plan512.ok());
  auto code512 = assemble(*plan512);
  REQUIRE(code512.ok());
  CHECK(check_code(*code512, kAvx2).count(StaticRule::kIsa) > 0);
}

TEST_CASE("static: faults injected into a real routine are caught") {
  CopyParams p;
  p.vector_width = 32;
  p.nt_threshold = 1u << 20;
  auto plan = make_plan(p, kAvx2);
  REQUIRE(plan.ok());
  auto code = assemble(*plan);
  REQUIRE(code.ok());
  REQUIRE(check_code(*code, kAvx2).ok());

  const Bytes sfence = {0x0F, 0xAE, 0xF8}, vzeroupper = {0xC5, 0xF8, 0x77},
              nop3 = {0x0F, 0x1F, 0x00};
  Bytes no_sfence = *code;
  REQUIRE(patch_first(no_sfence, sfence, nop3));
  const StaticReport r1 = check(no_sfence, kAvx2);
  CHECK(r1.count(StaticRule::kMissingSfence) >= 1);
  CHECK(r1.count(StaticRule::kMissingSfence) == r1.findings.size());

  Bytes no_vzeroupper = *code;
  REQUIRE(patch_first(no_vzeroupper, vzeroupper, nop3));
  const StaticReport r2 = check(no_vzeroupper, kAvx2);
  CHECK(r2.count(StaticRule::kMissingVzeroupper) >= 1);
  CHECK(r2.count(StaticRule::kMissingVzeroupper) == r2.findings.size());

  // A routine installed on this host checks clean against the host's features.
  auto routine = Routine::build(*plan, CpuInfo::host());
  if (routine.ok()) {
    CHECK(check_routine_code(*routine, CpuInfo::host().features()).ok());
    CHECK(check_routine_code(*routine, CpuInfo::host().features()).instructions > 0);
  } else {
    COPYSYNTH_SKIP_PART("this host cannot run the AVX2 plan (" + routine.error().message + "): its installed routine is not checked");
  }
}
