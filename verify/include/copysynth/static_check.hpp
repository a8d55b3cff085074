// copysynth — static checks of emitted machine code (docs/architecture.md, invariants 1, 4, 5, 6).
//
// The conformance checker (verify.hpp) runs a routine; this checker never does. It decodes the
// bytes with Zydis (Debian libzydis-dev) from offset 0, follows the control flow, and proves for
// *every* path, not only the lengths a test happened to try, that:
//   - no `ret` is reachable with a non-temporal store not followed by sfence/mfence on that path;
//   - no `ret` is reachable with dirty upper YMM/ZMM state (no vzeroupper/vzeroall since the last
//     instruction with a YMM or ZMM operand);
//   - every reachable instruction belongs to an ISA extension `allowed` has;
//   - no reachable instruction writes a callee-saved register (rbx, rbp, r12-r15 or a part of
//     one, MXCSR), changes rsp (other than call/ret), or sets the direction flag (std, popf);
//   - every reachable byte decodes, and control never leaves the code or goes where the checker
//     cannot follow (indirect jumps, calls, traps).
// Bytes that no path reaches (int3 fill jumped over, data) are never decoded.
//
// The analysis is a fixpoint over (offset, abstract state) pairs, state = {upper vector state
// dirty, non-temporal store pending}: each instruction is visited at most once per state (at most
// 4 times), so loops terminate and joins cost nothing extra — no path enumeration.
//
// Rules' sources: see the comment at the top of verify/src/static_check.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "copysynth/isa.hpp"
#include "copysynth/routine.hpp"

namespace copysynth {

/// Which rule a finding breaks.
enum class StaticRule : std::uint8_t {
  kMissingSfence,      ///< `ret` reachable with a non-temporal store not fenced on that path
  kMissingVzeroupper,  ///< `ret` reachable with dirty upper YMM/ZMM state
  kIsa,                ///< instruction outside `allowed`, or an extension copysynth cannot map
  kAbi,                ///< SysV violation: callee-saved register, rsp, direction flag, MXCSR
  kUndecodable,        ///< reachable bytes that are not a valid x86-64 instruction
  kControlFlow,        ///< indirect jump/call, call, trap, jump or fall-through out of the code
};

/// Short name of a rule: "missing-sfence", "missing-vzeroupper", "isa", "abi", "undecodable",
/// "control-flow".
std::string_view static_rule_name(StaticRule r) noexcept;

struct StaticFinding {
  std::size_t offset = 0;   ///< byte offset of the offending instruction from the code's start
  std::string instruction;  ///< Intel syntax (branch targets as code offsets), or "(bad) <hex>"
  StaticRule rule = StaticRule::kUndecodable;
  std::string what;         ///< one sentence: the rule's name, what is wrong and why it matters
};

struct StaticReport {
  std::size_t instructions = 0;  ///< distinct reachable instructions decoded
  std::size_t states = 0;        ///< (offset, abstract state) pairs explored (>= instructions)
  std::vector<StaticFinding> findings;  ///< sorted by offset; each (offset, what) once
  bool ok() const { return findings.empty(); }
  /// Findings that break `r`.
  std::size_t count(StaticRule r) const;
  /// "clean: 412 instructions, 530 states" or "3 findings in 412 instructions (530 states):"
  /// followed by one line per finding, "  +0x1a2  ret  missing-vzeroupper: ...".
  std::string summary() const;
};

/// Checks `code` (x86-64 machine code, entry at offset 0, position independent) against the
/// rules above, with `allowed` the ISA features the code may use. Never fails: problems with the
/// code, including undecodable bytes and code the checker cannot follow, are findings.
StaticReport check_code(std::span<const std::uint8_t> code, const IsaFeatures& allowed);

/// check_code over an installed routine's bytes (Routine::bytes()).
StaticReport check_routine_code(const Routine& r, const IsaFeatures& allowed);

}  // namespace copysynth
