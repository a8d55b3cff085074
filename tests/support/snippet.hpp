// copysynth tests — hand-assembled code snippets (asmjit) and the ABI probe over them: machine
// code for checks that must flag it (static_check.hpp) and calls through abi_call (verify.hpp)
// from an executable mapping that is never writable at the same time.
// Include after <doctest/doctest.h> (REQUIRE).
#pragma once

#include <sys/mman.h>

#include <asmjit/x86.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <vector>

#include "copysynth/verify.hpp"

namespace copysynth::test {

/// Machine code of `body` for a generic x86-64 target, as generator/src/emit.cpp's assemble().
inline std::vector<std::uint8_t> assemble_snippet(const std::function<void(asmjit::x86::Assembler&)>& body) {
  asmjit::CodeHolder code;
  code.init(asmjit::Environment(asmjit::Arch::kX64));
  asmjit::x86::Assembler a(&code);
  body(a);
  code.flatten();
  code.resolveUnresolvedLinks();
  const auto& buf = code.textSection()->buffer();
  return std::vector<std::uint8_t>(buf.data(), buf.data() + buf.size());
}

/// Calls `code` (at most a page) as `f(a0, a1, a2)` through the ABI probe: copied into a fresh
/// mapping, made read+execute (mprotect), called, unmapped.
inline AbiCall call_snippet(const std::vector<std::uint8_t>& code, std::uint64_t a0, std::uint64_t a1, std::uint64_t a2) {
  REQUIRE(code.size() <= 4096);
  void* m = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(m != MAP_FAILED);
  std::memcpy(m, code.data(), code.size());
  REQUIRE(mprotect(m, 4096, PROT_READ | PROT_EXEC) == 0);
  const AbiCall c = abi_call(m, a0, a1, a2);
  munmap(m, 4096);
  return c;
}

}  // namespace copysynth::test
