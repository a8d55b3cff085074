// Writes valid wisdom documents, one per parameter variant, and one fleet, into a directory: the fuzz target's
// seed corpus (tests/fuzz_wisdom.cpp). They are made by this build's own make_plan and to_json, so
// the seeds stay valid when the wisdom format or the ladders change; the checked-in files in
// tests/fuzz_corpus/ add malformed variants. No code is generated or executed.
//
// Usage: fuzz_wisdom_seeds DIR    (DIR is created; prints how many documents it wrote)
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "copysynth/ladders.hpp"
#include "copysynth/wisdom.hpp"

using namespace copysynth;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);

  std::vector<CopyParams> variants;
  auto add = [&](auto&& edit) {
    CopyParams p;
    edit(p);
    variants.push_back(p);
  };
  add([](CopyParams&) {});
  for (auto w : domain_values<spec::VectorWidth>()) add([&](CopyParams& p) { p.vector_width = w; p.unroll = 2; });
  add([](CopyParams& p) { p.rep_threshold = 4096; p.rep_align_dst = false; });
  add([](CopyParams& p) { p.rep_threshold = 2048; p.nt_threshold = std::uint64_t{1} << 20; p.vector_width = 16; });
  add([](CopyParams& p) { p.prefetch_distance = 512; p.prefetch_hint = PrefetchHint::kNTA; p.unroll = 8; });
  for (auto f : domain_values<spec::NopForm>()) add([&](CopyParams& p) { p.nop_form = f; p.loop_align = 32; });

  Wisdom w;
  w.created = "2026-01-01T00:00:00Z";
  w.command = "fuzz_wisdom_seeds";
  w.cpu_signature = "GenuineIntel-6-85:sse2,avx,avx2,avx512f";
  w.cpu_vendor = "GenuineIntel";
  w.cpu_brand = "seed";
  w.cpu_features = "sse2,avx,avx2,avx512f";
  w.cpu_family = 6;
  w.cpu_model = 85;
  int written = 0, refused = 0;
  auto write = [&](const Wisdom& doc) {
    const std::string name = "seed_" + std::to_string(written) + ".json";
    std::ofstream(dir / name, std::ios::binary | std::ios::trunc) << to_json(doc).dump(written % 2 ? -1 : 2) << "\n";
    ++written;
  };
  std::vector<WisdomEntry> all;  // the first valid entry of each operation: one multi-entry document
  for (auto op : domain_values<spec::Operation>()) {
    for (CopyParams p : variants) {
      p.operation = op;
      for (const auto& ladder : ladder_names()) {
        auto plan = make_plan(p, IsaFeatures::for_level(IsaLevel::kAVX512), ladder);
        if (!plan) {  // e.g. prefetch on an operation without loads: not a valid document
          ++refused;
          continue;
        }
        WisdomEntry e;
        e.operation = op;
        e.workload = "seeds";
        e.plan = std::move(plan).value();
        e.code_hash = 0x0123456789abcdefull + static_cast<unsigned>(written);
        e.points = {{64, 0, 0, 10.5, 20.25}, {4096, 1, 63, 30.0, 45.5}};
        Wisdom doc = w;
        doc.entries = {e};
        if (auto back = wisdom_from_json(to_json(doc)); !back) {
          std::fprintf(stderr, "fuzz_wisdom_seeds: to_json of a valid document is rejected: %s\n",
                       back.error().message.c_str());
          return 1;
        }
        write(doc);
        bool have = false;
        for (const auto& a : all) have = have || a.operation == op;
        if (!have) all.push_back(e);
      }
    }
  }
  if (all.size() > 1) {
    Wisdom doc = w;
    doc.entries = all;
    write(doc);
    // The same with the verdicts of `autotune --app`: memmove dropped (no entry), memcpy kept.
    Wisdom judged = doc;
    std::erase_if(judged.entries, [](const WisdomEntry& e) { return e.operation == Operation::kMemmove; });
    judged.app_verdicts = {{Operation::kMemcpy, "xz -d -c f.xz", 7, "lib", 120.5, 119.8, 0.994, 0.008, true, w.created},
                           {Operation::kMemmove, "xz -d -c f.xz", 7, "lib", 120.5, 121.0, 1.004, 0.006, false, w.created}};
    write(judged);
    // A fleet (schema 2): this document and one more CPU with the memcpy entry only.
    Fleet fleet;
    fleet.created = w.created;
    fleet.command = "fuzz_wisdom_seeds --merge";
    Wisdom other = doc;
    other.cpu_signature = "AuthenticAMD-25-33:sse2,avx,avx2";
    other.entries = {all.front()};
    fleet.hosts = {doc, other};
    std::ofstream(dir / ("seed_" + std::to_string(written) + ".json"), std::ios::binary | std::ios::trunc)
        << to_json(fleet).dump(2) << "\n";
    ++written;
  }
  std::printf("fuzz_wisdom_seeds: wrote %d documents to %s (%d variants not valid for their operation)\n", written,
              dir.c_str(), refused);
  return written > 0 ? 0 : 1;
}
