// copysynth — static checks of emitted machine code (see static_check.hpp).
//
// Where the rules come from:
//   - vzeroupper before `ret` after YMM/ZMM use: Intel SDM vol. 1 ch. 14.3 (AVX state and the
//     VZEROUPPER / VZEROALL instructions) and the Intel 64 and IA-32 Architectures Optimization
//     Reference Manual on AVX-SSE transitions: code returning to callers that may run legacy SSE
//     must clear the upper halves, or every later SSE instruction pays a transition penalty (or a
//     false dependency on the upper state). glibc's memmove-vec-unaligned-erms.S and the Linux
//     kernel's AVX routines end every exit with vzeroupper for this reason.
//   - sfence after non-temporal stores: Intel SDM vol. 1 ("Caching of Temporal vs. Non-Temporal
//     Data") and vol. 2 (MOVNTI, MOVNTDQ, MOVNTPS, SFENCE): non-temporal stores are weakly
//     ordered with respect to other stores; a routine that returns without SFENCE (or MFENCE) lets
//     the caller's later stores, e.g. a flag publishing the copied buffer, become visible first.
//   - callee-saved registers and the direction flag: System V AMD64 psABI §3.2.1 "Registers and
//     the Stack Frame" (Figure 3.4): rbx, rbp, rsp and r12-r15 belong to the caller, the control
//     bits of MXCSR (and the x87 control word) are callee-saved, and DF must be clear on entry
//     and on return.
//
// The ISA of an instruction comes from Zydis's decoded meta information: `meta.isa_ext` (the XED
// "extension": BASE, SSE2, AVX, AVX2, BMI2, AVX512EVEX, ...) for most instructions, and for the
// AVX-512 ones `meta.isa_set` read by name ("AVX512F_512", "AVX512BW_256", "AVX512F_128N", ...):
// the family gives F or BW, and a "_128"/"_256" form needs AVX512VL ("_128N" does not: those are
// the scalar-like forms without a vector length). Names are used instead of enumerators so the
// code reads the same on Zydis 4.0 (Debian 12) and 4.1 (Debian 13), which number the enums
// differently. PREFETCHW is matched by mnemonic (Zydis files it under AMD3DNOW_PREFETCH).
// Anything unmapped is a finding: the checker is conservative.
#include "copysynth/static_check.hpp"

#include <Zydis/Zydis.h>

#include <cstdio>
#include <map>
#include <unordered_map>
#include <utility>

// ZYDIS_VERSION holds a cast, so it cannot be tested with #if. The 4.x decoder API
// (ZydisDecoderDecodeFull with an operand array, ZYDIS_STACK_WIDTH_64) is the same in 4.0 and 4.1.
static_assert(ZYDIS_VERSION_MAJOR(ZYDIS_VERSION) == 4,
              "copysynth's static checker is written for Zydis 4.x (Debian libzydis-dev 4.0 or 4.1)");

namespace copysynth {

std::string_view static_rule_name(StaticRule r) noexcept {
  switch (r) {
    case StaticRule::kMissingSfence: return "missing-sfence";
    case StaticRule::kMissingVzeroupper: return "missing-vzeroupper";
    case StaticRule::kIsa: return "isa";
    case StaticRule::kAbi: return "abi";
    case StaticRule::kUndecodable: return "undecodable";
    case StaticRule::kControlFlow: return "control-flow";
  }
  return "?";
}

namespace {

std::string hex_offset(std::uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "+0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

/// The abstract state at an instruction boundary (one bit each).
enum : std::uint8_t { kUpperDirty = 1, kNtPending = 2 };

/// How control leaves an instruction.
enum class Flow : std::uint8_t {
  kNext,  ///< falls through
  kRet,   ///< near return: the path ends, state-dependent rules apply
  kJcc,   ///< conditional: target and fall-through
  kJmp,   ///< direct unconditional jump to target
  kStop,  ///< the path ends here with a control-flow finding already made
};

/// What the analysis needs of one decoded instruction (decoded once per offset).
struct Insn {
  bool valid = false;
  std::uint8_t length = 0;
  Flow flow = Flow::kNext;
  std::uint64_t target = 0;  ///< kJcc/kJmp: target offset (may lie outside the code)
  bool wide = false;         ///< has a YMM or ZMM operand: upper state becomes dirty
  bool zero_upper = false;   ///< vzeroupper / vzeroall
  bool nt_store = false;     ///< a non-temporal store
  bool fence = false;        ///< sfence / mfence: pending non-temporal stores are ordered
  std::string text;
};

bool is_nt_store(ZydisMnemonic m) {
  switch (m) {
    case ZYDIS_MNEMONIC_MOVNTI: case ZYDIS_MNEMONIC_MOVNTDQ: case ZYDIS_MNEMONIC_MOVNTPS:
    case ZYDIS_MNEMONIC_MOVNTPD: case ZYDIS_MNEMONIC_MOVNTQ: case ZYDIS_MNEMONIC_MOVNTSD:
    case ZYDIS_MNEMONIC_MOVNTSS: case ZYDIS_MNEMONIC_VMOVNTDQ: case ZYDIS_MNEMONIC_VMOVNTPS:
    case ZYDIS_MNEMONIC_VMOVNTPD: case ZYDIS_MNEMONIC_MASKMOVQ: case ZYDIS_MNEMONIC_MASKMOVDQU:
    case ZYDIS_MNEMONIC_VMASKMOVDQU:
      return true;
    default:
      return false;
  }
}

/// The copysynth features an instruction needs; `mapped` is false when Zydis files it under an
/// extension copysynth's feature model does not know (then `need` is meaningless).
struct IsaNeed {
  IsaFeatures need;
  bool mapped = true;
};

IsaNeed isa_need(const ZydisDecodedInstruction& in) {
  IsaNeed r;
  r.need.remove(Feature::kSSE2);  // start from the empty set
  if (in.mnemonic == ZYDIS_MNEMONIC_PREFETCHW) {
    r.need.add(Feature::kPREFETCHW);
    return r;
  }
  const std::string_view set = ZydisISASetGetString(in.meta.isa_set);
  if (set.starts_with("AVX512") || in.encoding == ZYDIS_INSTRUCTION_ENCODING_EVEX) {
    // "<family>_<form>": family AVX512F or AVX512BW (others, e.g. AVX512DQ or AVX512_VBMI, are
    // not in the feature model); form 512, 256, 128, 128N, KOP or SCALAR.
    const auto us = set.find('_');
    const std::string_view family = set.substr(0, us);
    const std::string_view form = us == std::string_view::npos ? "" : set.substr(us + 1);
    r.need.add(Feature::kAVX512F);
    if (family == "AVX512BW") r.need.add(Feature::kAVX512BW);
    else if (family != "AVX512F") r.mapped = false;
    if (form == "128" || form == "256") r.need.add(Feature::kAVX512VL);
    return r;
  }
  switch (in.meta.isa_ext) {
    case ZYDIS_ISA_EXT_BASE:      // integer base ISA, long NOPs, rep movsb/stosb (ERMS: speed only)
    case ZYDIS_ISA_EXT_LONGMODE:  // movsxd, cdqe, ...: every x86-64 CPU
      break;
    case ZYDIS_ISA_EXT_SSE:       // SSE and SSE2 are the x86-64 baseline (sfence, prefetcht0/nta)
    case ZYDIS_ISA_EXT_SSE2:
      r.need.add(Feature::kSSE2);
      break;
    case ZYDIS_ISA_EXT_AVX:
      r.need.add(Feature::kAVX);
      break;
    case ZYDIS_ISA_EXT_AVX2:
    case ZYDIS_ISA_EXT_AVX2GATHER:
      r.need.add(Feature::kAVX).add(Feature::kAVX2);
      break;
    case ZYDIS_ISA_EXT_BMI2:
      r.need.add(Feature::kBMI2);
      break;
    default:  // x87, MMX, SSE3+, FMA, BMI1, ...: not in copysynth's model, rejected
      r.mapped = false;
      break;
  }
  return r;
}

bool callee_saved(ZydisRegister full) {
  switch (full) {
    case ZYDIS_REGISTER_RBX: case ZYDIS_REGISTER_RBP: case ZYDIS_REGISTER_R12:
    case ZYDIS_REGISTER_R13: case ZYDIS_REGISTER_R14: case ZYDIS_REGISTER_R15:
      return true;
    default:
      return false;
  }
}

class Checker {
 public:
  Checker(std::span<const std::uint8_t> code, const IsaFeatures& allowed)
      : code_(code), allowed_(allowed) {
    ZydisDecoderInit(&decoder_, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
    ZydisFormatterInit(&formatter_, ZYDIS_FORMATTER_STYLE_INTEL);
  }

  StaticReport run() {
    StaticReport report;
    std::vector<std::uint8_t> seen(code_.size(), 0);  // bit s set: (offset, s) explored
    std::vector<std::pair<std::size_t, std::uint8_t>> work;
    auto visit = [&](std::size_t off, std::uint8_t st) {
      if (seen[off] & (1u << st)) return;
      seen[off] |= static_cast<std::uint8_t>(1u << st);
      work.emplace_back(off, st);
    };
    if (code_.empty()) {
      add(0, "", StaticRule::kControlFlow, "control-flow: the code is empty (no entry point)");
    } else {
      visit(0, 0);
    }
    while (!work.empty()) {
      const std::size_t off = work.back().first;
      std::uint8_t st = work.back().second;
      work.pop_back();
      ++report.states;
      const Insn& I = decode_at(off);
      if (!I.valid) continue;  // the undecodable finding was made by decode_at

      if (I.zero_upper) st &= ~kUpperDirty;
      else if (I.wide) st |= kUpperDirty;
      if (I.nt_store) st |= kNtPending;
      if (I.fence) st &= ~kNtPending;

      auto successor = [&](std::uint64_t to, const char* how) {
        if (to < code_.size()) return visit(static_cast<std::size_t>(to), st);
        add(off, I.text, StaticRule::kControlFlow,
            std::string("control-flow: ") + how + " " + hex_offset(to) +
                ", outside the code (size " + std::to_string(code_.size()) + " bytes)");
      };
      switch (I.flow) {
        case Flow::kRet:
          if (st & kNtPending)
            add(off, I.text, StaticRule::kMissingSfence,
                "missing-sfence: ret reachable after a non-temporal store with no sfence/mfence "
                "on that path (weakly-ordered stores may become visible after the caller's)");
          if (st & kUpperDirty)
            add(off, I.text, StaticRule::kMissingVzeroupper,
                "missing-vzeroupper: ret reachable with dirty upper YMM/ZMM state (no "
                "vzeroupper since the last YMM/ZMM instruction: AVX-SSE transition penalty)");
          break;
        case Flow::kJcc:
          successor(I.target, "branches to");
          successor(off + I.length, "falls through to");
          break;
        case Flow::kJmp: successor(I.target, "jumps to"); break;
        case Flow::kNext: successor(off + I.length, "falls through to"); break;
        case Flow::kStop: break;
      }
    }
    for (const auto& [off, insn] : insns_) report.instructions += insn.valid ? 1 : 0;
    for (auto& [key, f] : findings_) report.findings.push_back(std::move(f));
    return report;
  }

 private:
  void add(std::size_t off, const std::string& text, StaticRule rule, std::string what) {
    auto key = std::make_pair(off, what);
    findings_.try_emplace(std::move(key), StaticFinding{off, text, rule, std::move(what)});
  }

  /// Decodes the instruction at `off` once, makes its state-independent findings (ISA, ABI,
  /// undecodable, unfollowable control flow) and returns its summary.
  const Insn& decode_at(std::size_t off) {
    if (auto it = insns_.find(off); it != insns_.end()) return it->second;
    Insn& I = insns_[off];
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&decoder_, code_.data() + off, code_.size() - off,
                                             &in, ops))) {
      I.text = "(bad)";
      for (std::size_t i = off; i < code_.size() && i < off + 8; ++i) {
        char b[4];
        std::snprintf(b, sizeof b, " %02X", code_[i]);
        I.text += b;
      }
      add(off, I.text, StaticRule::kUndecodable,
          "undecodable: reachable bytes are not a valid x86-64 instruction");
      return I;
    }
    I.valid = true;
    I.length = in.length;
    char buf[256];
    if (ZYAN_SUCCESS(ZydisFormatterFormatInstruction(&formatter_, &in, ops, in.operand_count_visible,
                                                     buf, sizeof buf, off, nullptr)))
      I.text = buf;
    else
      I.text = ZydisMnemonicGetString(in.mnemonic);

    check_isa(off, I.text, in);
    check_abi(off, I.text, in, ops);
    classify(off, I, in, ops);
    return I;
  }

  void check_isa(std::size_t off, const std::string& text, const ZydisDecodedInstruction& in) {
    const IsaNeed n = isa_need(in);
    const std::string zydis = std::string("Zydis isa_ext ") + ZydisISAExtGetString(in.meta.isa_ext) +
                              ", isa_set " + ZydisISASetGetString(in.meta.isa_set);
    if (!n.mapped) {
      add(off, text, StaticRule::kIsa,
          "isa: extension outside copysynth's feature model (" + zydis + "), rejected");
      return;
    }
    IsaFeatures missing;
    missing.remove(Feature::kSSE2);
    for (unsigned f = 0; f < static_cast<unsigned>(Feature::kCount); ++f)
      if (n.need.has(Feature(f)) && !allowed_.has(Feature(f))) missing.add(Feature(f));
    if (missing.bits() != 0)
      add(off, text, StaticRule::kIsa,
          "isa: needs " + missing.to_string() + " (" + zydis + "), allowed: " + allowed_.to_string());
  }

  void check_abi(std::size_t off, const std::string& text, const ZydisDecodedInstruction& in,
                 const ZydisDecodedOperand* ops) {
    const ZydisMnemonic m = in.mnemonic;
    for (unsigned i = 0; i < in.operand_count; ++i) {  // visible and hidden operands
      const ZydisDecodedOperand& op = ops[i];
      if (op.type != ZYDIS_OPERAND_TYPE_REGISTER || !(op.actions & ZYDIS_OPERAND_ACTION_MASK_WRITE))
        continue;
      const ZydisRegister full = ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, op.reg.value);
      if (callee_saved(full))
        add(off, text, StaticRule::kAbi,
            std::string("abi: writes ") + ZydisRegisterGetString(op.reg.value) +
                (full == op.reg.value ? std::string()
                                      : std::string(", part of ") + ZydisRegisterGetString(full)) +
                ", a callee-saved register (SysV psABI: rbx, rbp, r12-r15 belong to the caller)");
      if (full == ZYDIS_REGISTER_RSP && m != ZYDIS_MNEMONIC_RET && m != ZYDIS_MNEMONIC_CALL)
        add(off, text, StaticRule::kAbi,
            "abi: changes rsp (a copy routine is a leaf that keeps the stack pointer as it found it)");
    }
    if (m == ZYDIS_MNEMONIC_STD || m == ZYDIS_MNEMONIC_POPF || m == ZYDIS_MNEMONIC_POPFD ||
        m == ZYDIS_MNEMONIC_POPFQ)
      add(off, text, StaticRule::kAbi,
          "abi: may set the direction flag (SysV psABI: DF is clear on entry and must be on return)");
    if (m == ZYDIS_MNEMONIC_LDMXCSR || m == ZYDIS_MNEMONIC_VLDMXCSR || m == ZYDIS_MNEMONIC_FLDCW)
      add(off, text, StaticRule::kAbi,
          "abi: writes MXCSR / the x87 control word, whose control bits are callee-saved");
  }

  void classify(std::size_t off, Insn& I, const ZydisDecodedInstruction& in,
                const ZydisDecodedOperand* ops) {
    const ZydisMnemonic m = in.mnemonic;
    bool writes_rip = false;
    for (unsigned i = 0; i < in.operand_count; ++i) {
      const ZydisDecodedOperand& op = ops[i];
      if (op.type != ZYDIS_OPERAND_TYPE_REGISTER) continue;
      const ZydisRegisterClass c = ZydisRegisterGetClass(op.reg.value);
      // Only registers 0-15 have the VEX upper state that needs vzeroupper; 16-31 (EVEX-only)
      // are outside the SSE/AVX transition tracking (glibc's *-evex routines rely on this).
      I.wide |= (c == ZYDIS_REGCLASS_YMM || c == ZYDIS_REGCLASS_ZMM) && ZydisRegisterGetId(op.reg.value) < 16;
      writes_rip |= (op.reg.value == ZYDIS_REGISTER_RIP || op.reg.value == ZYDIS_REGISTER_EIP) &&
                    (op.actions & ZYDIS_OPERAND_ACTION_MASK_WRITE);
    }
    I.zero_upper = m == ZYDIS_MNEMONIC_VZEROUPPER || m == ZYDIS_MNEMONIC_VZEROALL;
    I.nt_store = is_nt_store(m);
    I.fence = m == ZYDIS_MNEMONIC_SFENCE || m == ZYDIS_MNEMONIC_MFENCE;

    auto stop = [&](const std::string& why) {
      I.flow = Flow::kStop;
      add(off, I.text, StaticRule::kControlFlow, "control-flow: " + why);
    };
    // A relative branch target as a code offset (the code is analysed as if loaded at 0).
    auto direct_target = [&]() -> bool {
      ZyanU64 abs = 0;
      if (ops[0].type != ZYDIS_OPERAND_TYPE_IMMEDIATE || !ops[0].imm.is_relative ||
          !ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&in, &ops[0], off, &abs)))
        return false;
      I.target = abs;
      return true;
    };
    switch (in.meta.category) {
      case ZYDIS_CATEGORY_RET:
        if (m == ZYDIS_MNEMONIC_RET && in.opcode != 0xCA && in.opcode != 0xCB) I.flow = Flow::kRet;
        else stop("far or interrupt return: not a SysV function return");
        return;
      case ZYDIS_CATEGORY_COND_BR:
        if (direct_target()) I.flow = Flow::kJcc;
        else stop("conditional branch without a relative target");
        return;
      case ZYDIS_CATEGORY_UNCOND_BR:
        if (direct_target()) I.flow = Flow::kJmp;
        else stop("indirect or far jump: its target cannot be checked statically");
        return;
      case ZYDIS_CATEGORY_CALL:
        stop("call: a copy routine is a leaf; the checker does not follow calls");
        return;
      default:
        break;
    }
    if (m == ZYDIS_MNEMONIC_UD0 || m == ZYDIS_MNEMONIC_UD1 || m == ZYDIS_MNEMONIC_UD2 ||
        m == ZYDIS_MNEMONIC_HLT || m == ZYDIS_MNEMONIC_INT3 || m == ZYDIS_MNEMONIC_INT ||
        m == ZYDIS_MNEMONIC_INT1 || m == ZYDIS_MNEMONIC_INTO)
      stop("trap instruction on a reachable path");
    else if (writes_rip || in.meta.category == ZYDIS_CATEGORY_SYSCALL ||
             in.meta.category == ZYDIS_CATEGORY_SYSRET || in.meta.category == ZYDIS_CATEGORY_INTERRUPT)
      stop("transfers control where the checker cannot follow");
  }

  std::span<const std::uint8_t> code_;
  IsaFeatures allowed_;
  ZydisDecoder decoder_;
  ZydisFormatter formatter_;
  std::unordered_map<std::size_t, Insn> insns_;
  std::map<std::pair<std::size_t, std::string>, StaticFinding> findings_;
};

}  // namespace

std::size_t StaticReport::count(StaticRule r) const {
  std::size_t n = 0;
  for (const auto& f : findings) n += f.rule == r ? 1 : 0;
  return n;
}

std::string StaticReport::summary() const {
  const std::string counts = std::to_string(instructions) +
                             (instructions == 1 ? " instruction, " : " instructions, ") +
                             std::to_string(states) + (states == 1 ? " state" : " states");
  if (ok()) return "clean: " + counts;
  std::string s = std::to_string(findings.size()) + (findings.size() == 1 ? " finding" : " findings") +
                  " in " + counts + ":";
  for (const auto& f : findings)
    s += "\n  " + hex_offset(f.offset) + "  " + f.instruction + "  " + f.what;
  return s;
}

StaticReport check_code(std::span<const std::uint8_t> code, const IsaFeatures& allowed) {
  return Checker(code, allowed).run();
}

StaticReport check_routine_code(const Routine& r, const IsaFeatures& allowed) {
  return check_code(r.bytes(), allowed);
}

}  // namespace copysynth
