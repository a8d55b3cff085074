// copysynth tests — wisdom documents built in memory: entries whose code hash is what their plan
// assembles to (so build_entry accepts them), and documents of this or a synthetic CPU.
// Include after <doctest/doctest.h> (REQUIRE).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "copysynth/cpu.hpp"
#include "copysynth/emit.hpp"
#include "copysynth/wisdom.hpp"
#include "support/routines.hpp"

namespace copysynth::test {

/// An entry for `plan` with the FNV-1a hash of the code it assembles to, and no measured points.
inline WisdomEntry entry_for(const CopyPlan& plan, const std::string& workload = "seeds") {
  auto code = assemble(plan);
  REQUIRE_MESSAGE(code.ok(), (code.ok() ? std::string() : code.error().message));
  WisdomEntry e;
  e.operation = plan.params.operation;
  e.workload = workload;
  e.plan = plan;
  e.code_hash = fnv1a64(*code);
  return e;
}

/// An entry for `p` planned for `features` (default: this host's).
inline WisdomEntry entry_for(const CopyParams& p, const IsaFeatures& features = CpuInfo::host().features()) {
  return entry_for(plan_for(p, features));
}

/// A wisdom document made on `cpu` holding `entries`, with a fixed creation time and command.
inline Wisdom wisdom_of(const CpuInfo& cpu, std::vector<WisdomEntry> entries,
                        const std::string& command = "autotune --emit best.json") {
  Wisdom w;
  set_cpu(w, cpu);
  w.created = "2026-03-04T05:06:07Z";
  w.command = command;
  w.entries = std::move(entries);
  return w;
}

}  // namespace copysynth::test
