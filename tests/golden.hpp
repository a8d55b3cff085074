// copysynth tests — golden code: the plans whose emitted bytes are checked in under tests/golden/,
// and the text of those files. Shared by test_golden.cpp (compares) and golden_gen.cpp (writes them:
// tools/update-golden.sh).
//
// Two files:
//   code_hashes.txt  every plan of the grid in asm_grid.hpp: the FNV-1a 64 hash of its code (the
//                    code_fnv1a64 a wisdom file stores, runtime/wisdom.hpp fnv1a64) and its size
//   code_bytes.txt   a few small plans, one per strategy class, with every byte in hex
//
// Each plan is named by a key that does not depend on anything but what decides its bytes: the
// operation, vector width and unroll factor, then every parameter that differs from its default
// (CopyParams to_string's field=value spelling), then the class weights when they are not the
// ladder's defaults. A new parameter with a default that changes nothing leaves every key alone.
//
// Nothing here executes code, and nothing depends on the host: every plan is made for its own
// target ISA level (IsaFeatures::for_level) and emitted by assemble() into a plain x86-64
// CodeHolder.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "asm_grid.hpp"
#include "copysynth/c_format.hpp"
#include "copysynth/emit.hpp"
#include "copysynth/ladders.hpp"
#include "copysynth/version.h"
#include "copysynth/wisdom.hpp"

namespace copysynth::test {

/// The command that rewrites tests/golden/ from this build (what a failure message tells).
inline constexpr const char* kGoldenUpdateCommand = "tools/update-golden.sh [BUILD_DIR, default build]";

/// The key of `plan`: "memcpy vector_width=32 unroll=4", then every other field that differs from
/// its default as field=value, then "weights=flat" (all classes equal) or "weights=a,b,..." when
/// the class weights are not default_class_weight's (and there are two classes or more: one class
/// has no dispatch tree for its weight to shape).
inline std::string golden_key(const CopyPlan& plan) {
  auto fields = [](const CopyParams& p) {
    std::vector<std::string> out;
    std::istringstream in(to_string(p));
    for (std::string tok; in >> tok;) out.push_back(tok);
    return out;
  };
  const auto have = fields(plan.params), def = fields(CopyParams{});
  std::string key(name_of(plan.params.operation.value));
  key += " vector_width=" + std::to_string(plan.params.vector_width.value);
  key += " unroll=" + std::to_string(plan.params.unroll.value);
  for (std::size_t i = 0; i < have.size(); ++i) {
    const std::string name = have[i].substr(0, have[i].find('='));
    if (name == "operation" || name == "vector_width" || name == "unroll") continue;
    if (i >= def.size() || have[i] != def[i]) key += " " + have[i];
  }
  if (plan.ladder != "vector") key += " ladder=" + plan.ladder;
  bool defaults = true, flat = true;
  for (const auto& c : plan.classes) {
    defaults &= c.weight == default_class_weight(c.lo, c.hi);
    flat &= c.weight == plan.classes.front().weight;
  }
  if (plan.classes.size() < 2) {
    // One class (clear_page): no dispatch tree, so the weight changes nothing.
  } else if (!defaults && flat) {
    key += " weights=flat";
  } else if (!defaults) {
    key += " weights=";
    for (std::size_t i = 0; i < plan.classes.size(); ++i) {
      if (i) key += ',';
      key += format_c("%.6g", plan.classes[i].weight);
    }
  }
  return key;
}

struct GoldenPlan {
  std::string key;
  CopyPlan plan;
  IsaLevel target;
};

/// The plans of code_hashes.txt: the grid of asm_grid.hpp (every operation x width x unroll, with
/// the other knobs rotated through it), in grid order.
inline std::vector<GoldenPlan> golden_hash_plans() {
  std::vector<GoldenPlan> out;
  for (auto& g : asm_grid()) out.push_back({golden_key(g.plan), std::move(g.plan), g.target});
  return out;
}

/// The plans of code_bytes.txt: small ones (unroll 1 or 2, mostly no loop-head padding), each
/// showing one strategy class in full. A plan make_plan refuses is returned with no classes, so
/// the test reports it rather than dropping it.
inline std::vector<GoldenPlan> golden_hex_plans() {
  struct Spec {
    IsaLevel target;
    CopyParams p;
  };
  std::vector<Spec> specs;
  auto add = [&](IsaLevel target, auto&& set) {
    CopyParams p;
    p.unroll = 1;
    p.loop_align = 1;
    set(p);
    specs.push_back({target, p});
  };
  // n = 0, n = 1, head/tail with GPRs, the width-8 loop.
  add(IsaLevel::kSSE2, [](CopyParams& p) { p.vector_width = 8; });
  // The masked class (page guard, bzhi mask, the unmasked ladder behind it), high register bank.
  add(IsaLevel::kAVX512, [](CopyParams& p) {
    p.vector_width = 64;
    p.mask_max = 64;
    p.register_bank = RegisterBank::kHigh;
  });
  // memmove's aligned loop, forward and backward, with a 4K-alias window; padded loop heads.
  add(IsaLevel::kAVX2, [](CopyParams& p) {
    p.operation = Operation::kMemmove;
    p.vector_width = 16;
    p.unroll = 2;
    p.alias_window = 256;
    p.loop_align = 32;
    p.nop_form = NopForm::kJumpOver;
  });
  // The rep class for fill: dst aligned to 64, rep stosq with its overlapping 8-byte tail.
  add(IsaLevel::kAVX2, [](CopyParams& p) {
    p.operation = Operation::kFill;
    p.vector_width = 32;
    p.rep_threshold = 2048;
    p.rep_unit = 8;
  });
  // memmove's rep and non-temporal classes: the overlap tests in front of each, then the loop.
  add(IsaLevel::kSSE2, [](CopyParams& p) {
    p.operation = Operation::kMemmove;
    p.vector_width = 16;
    p.rep_threshold = 4096;
    p.rep_align_dst = false;
    p.nt_threshold = std::uint64_t{1} << 20;
  });
  // The non-temporal loop with two page streams and prefetch.
  add(IsaLevel::kAVX2, [](CopyParams& p) {
    p.vector_width = 32;
    p.unroll = 2;
    p.nt_threshold = std::uint64_t{1} << 20;
    p.nt_pages = 2;
    p.prefetch_distance = 512;
    p.prefetch_hint = PrefetchHint::kNTA;
  });
  // clear_page: rep stosb, the non-temporal loop, the aligned loop.
  add(IsaLevel::kSSE2, [](CopyParams& p) {
    p.operation = Operation::kClearPage;
    p.vector_width = 16;
    p.rep_threshold = 0;
  });
  add(IsaLevel::kAVX2, [](CopyParams& p) {
    p.operation = Operation::kClearPage;
    p.vector_width = 32;
    p.nt_threshold = 0;
  });
  add(IsaLevel::kAVX512, [](CopyParams& p) {
    p.operation = Operation::kClearPage;
    p.vector_width = 64;
    p.unroll = 2;
  });
  std::vector<GoldenPlan> out;
  for (const auto& s : specs) {
    auto plan = make_plan(s.p, IsaFeatures::for_level(s.target));
    CopyPlan pl;
    if (plan) pl = std::move(plan).value();
    else pl.params = s.p;
    out.push_back({golden_key(pl), std::move(pl), s.target});
  }
  return out;
}

inline std::string golden_hex64(std::uint64_t v) { return format_c("%016llx", static_cast<unsigned long long>(v)); }

/// The header of both files: who writes them, and what a change means.
inline std::string golden_header(const char* what) {
  return std::string("# copysynth golden code: ") + what +
         "\n"
         "# Written by copysynth " COPYSYNTH_VERSION
         " (generator version) with tools/update-golden.sh (tests/golden_gen.cpp); do not edit.\n"
         "# Checked by test_golden (tests/test_golden.cpp), which emits each plan again (never running it).\n"
         "#\n"
         "# A changed line here means that every wisdom file (best.json) with these parameters no longer\n"
         "# loads: the code_fnv1a64 it stores differs from the code this copysynth emits, so the file is\n"
         "# refused until autotune --emit is run again. Regenerate only for a change meant to move the\n"
         "# bytes, and say in the commit which change to emit() or the ladder moved them and why.\n"
         "#\n"
         "# A plan's key: operation, vector_width, unroll, then every parameter that differs from its\n"
         "# default, then the class weights when they are not the ladder's defaults (tests/golden.hpp).\n";
}

/// One line of code_hashes.txt: "HASH SIZE KEY".
inline std::string golden_hash_line(const std::string& key, std::uint64_t hash, std::size_t size) {
  return golden_hex64(hash) + format_c(" %6zu ", size) + key;
}

/// code_hashes.txt as golden_gen writes it: key -> (hash, size) in grid order.
inline std::string golden_hashes_text(const std::vector<std::pair<std::string, std::vector<std::uint8_t>>>& codes) {
  std::string s = golden_header("the FNV-1a 64 hash and size of every grid plan's code");
  s += "# Plans: tests/asm_grid.hpp (" + std::to_string(codes.size()) + "), in grid order.\n#\n";
  s += "# fnv1a64         bytes plan\n";
  for (const auto& [key, bytes] : codes) s += golden_hash_line(key, fnv1a64(bytes), bytes.size()) + "\n";
  return s;
}

/// code_bytes.txt: per plan "plan KEY", "bytes N", then 16 bytes a line as "OFFS  xx xx ...".
inline std::string golden_bytes_text(const std::vector<std::pair<std::string, std::vector<std::uint8_t>>>& codes) {
  std::string s = golden_header("every byte of a few small plans, one per strategy class");
  s += "# Plans: golden_hex_plans() in tests/golden.hpp. Each: \"plan KEY\", \"bytes N\", then 16 bytes a\n"
       "# line after their offset (hex).\n";
  for (const auto& [key, bytes] : codes) {
    s += "\nplan " + key + "\nbytes " + std::to_string(bytes.size()) + "\n";
    for (std::size_t at = 0; at < bytes.size(); at += 16) {
      s += format_c("%04zx ", at);
      for (std::size_t i = at; i < bytes.size() && i < at + 16; ++i) s += format_c(" %02x", bytes[i]);
      s += "\n";
    }
  }
  return s;
}

struct GoldenHash {
  std::uint64_t hash = 0;
  std::size_t size = 0;
  int line = 0;
};

/// Parses code_hashes.txt. Malformed lines are returned in `bad` (line numbers).
inline std::map<std::string, GoldenHash> parse_golden_hashes(const std::string& text, std::vector<int>* bad) {
  std::map<std::string, GoldenHash> out;
  std::istringstream in(text);
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream l(line);
    std::string hash, key;
    std::size_t size = 0;
    if (!(l >> hash >> size) || hash.size() != 16) {
      bad->push_back(n);
      continue;
    }
    std::getline(l >> std::ws, key);
    GoldenHash g;
    g.size = size;
    g.line = n;
    try {
      std::size_t used = 0;
      g.hash = std::stoull(hash, &used, 16);
      if (used != 16 || key.empty()) throw std::invalid_argument("hash");
    } catch (const std::exception&) {
      bad->push_back(n);
      continue;
    }
    if (!out.emplace(key, g).second) bad->push_back(n);  // a key twice
  }
  return out;
}

struct GoldenBytes {
  std::vector<std::uint8_t> bytes;
  std::size_t declared = 0;
  int line = 0;
};

/// Parses code_bytes.txt. Malformed lines are returned in `bad` (line numbers).
inline std::map<std::string, GoldenBytes> parse_golden_bytes(const std::string& text, std::vector<int>* bad) {
  std::map<std::string, GoldenBytes> out;
  std::istringstream in(text);
  GoldenBytes* cur = nullptr;
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    if (line.empty() || line[0] == '#') continue;
    if (line.rfind("plan ", 0) == 0) {
      auto [it, fresh] = out.emplace(line.substr(5), GoldenBytes{});
      if (!fresh) bad->push_back(n);
      cur = &it->second;
      cur->line = n;
      continue;
    }
    if (!cur) {
      bad->push_back(n);
      continue;
    }
    try {
      if (line.rfind("bytes ", 0) == 0) {
        cur->declared = std::stoull(line.substr(6));
        continue;
      }
      std::istringstream l(line);
      std::string offset, b;
      l >> offset;
      if (offset.size() != 4 || std::stoull(offset, nullptr, 16) != cur->bytes.size())
        throw std::invalid_argument("offset");
      while (l >> b) {
        if (b.size() != 2) throw std::invalid_argument("byte");
        cur->bytes.push_back(static_cast<std::uint8_t>(std::stoul(b, nullptr, 16)));
      }
    } catch (const std::exception&) {
      bad->push_back(n);
    }
  }
  return out;
}

}  // namespace copysynth::test
