// copysynth — wisdom: the tuned routines of one host, stored as JSON (best.json).
//
// As FFTW's wisdom (kernel/planner.c), a file carries the signature of the configuration it was
// made on, and import refuses a mismatch; a malformed file is rejected as a whole and changes
// nothing. Layout (schema 1):
//
//   { "schema": 1, "generator_version": "0.1.0", "created": "2026-11-29T23:59:59Z",
//     "command": "autotune --emit best.json",
//     "cpu": { "signature": "...", "vendor": "...", "brand": "...", "family": 26, "model": 2,
//              "stepping": 1, "features": "sse2,avx,..." },
//     "entries": [ { "operation": "memcpy", "workload": "seeds",
//                    "params": { ...CopyParams... },
//                    "plan": { "ladder": "vector", "vector_width": 32, "classes": [...] },
//                    "code_fnv1a64": "0123456789abcdef",
//                    "points": [ { "size": 4096, "src_align": 0, "dst_align": 4,
//                                  "baseline_gbps": 1.7, "tuned_gbps": 60.1,
//                                  "baseline_ns": 2409.4, "tuned_ns": 68.2 } ] } ] }
// A distribution workload's point also has "label" (the distribution's name); "size" is then
// the mean bytes per call.
//
// Throughput is in GB/s = 1e9 bytes per second; sizes and alignments in bytes.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "copysynth/cpu.hpp"
#include "copysynth/plan.hpp"

namespace copysynth {

inline constexpr int kWisdomSchema = 1;

/// One measured point of the workload (GB/s = 1e9 bytes/s, medians).
struct MeasuredPoint {
  std::uint64_t size = 0;        ///< bytes copied per call (a distribution: the mean, rounded)
  std::uint32_t src_align = 0;   ///< src offset from a 64-byte boundary, 0..63 (bytes)
  std::uint32_t dst_align = 0;   ///< dst offset from a 64-byte boundary, 0..63 (bytes)
  double baseline_gbps = 0;      ///< the system routine, same run
  double tuned_gbps = 0;         ///< the tuned routine
  double baseline_ns = 0;        ///< ns per call of the system routine (0 if not recorded)
  double tuned_ns = 0;           ///< ns per call of the tuned routine (0 if not recorded)
  std::string label;             ///< a distribution workload's name; empty for a point
  double cycles = 0;             ///< tuned routine, core cycles per call (0: no PMU)
  double instructions = 0;       ///< tuned routine, instructions per call (0: no PMU)
  double cache_misses = 0;       ///< tuned routine, LLC misses per call (0: no PMU)
  bool operator==(const MeasuredPoint&) const = default;
};

struct WisdomEntry {
  Operation operation = Operation::kMemcpy;
  std::string workload;          ///< what it was tuned for ("seeds", ...)
  CopyPlan plan;                 ///< params + ladder + class weights: rebuilds the same bytes
  std::uint64_t code_hash = 0;   ///< FNV-1a 64 of the routine's bytes when it was tuned
  std::vector<MeasuredPoint> points;
};

struct Wisdom {
  int schema = kWisdomSchema;
  std::string generator_version = COPYSYNTH_VERSION;
  std::string created;           ///< UTC, ISO 8601
  std::string command;           ///< command line that produced it
  std::string cpu_signature;     ///< CpuInfo::signature() of the tuning host
  std::string cpu_vendor, cpu_brand, cpu_features;
  unsigned cpu_family = 0, cpu_model = 0, cpu_stepping = 0;
  std::vector<WisdomEntry> entries;

  /// The entry for `op`, or nullptr.
  const WisdomEntry* find(Operation op) const;
};

/// Fills the cpu_* fields from `cpu`.
void set_cpu(Wisdom& w, const CpuInfo& cpu);

nlohmann::json to_json(const Wisdom& w);

/// Parses and checks a whole document. Every entry's params must pass their domain checks and
/// its plan must be what the named ladder builds from those params (vector width, class bounds,
/// strategies and blocks; the weights are taken from the file). Errors: kWisdomMalformed (names
/// the JSON path, e.g. "entries[0].params.unroll"), kInvalidParams (a value out of its domain),
/// kWisdomMismatch (schema version, unknown ladder or operation, a plan these params do not give).
Result<Wisdom> wisdom_from_json(const nlohmann::json& j);

/// Reads and parses `path`. kWisdomIo when it cannot be read; otherwise wisdom_from_json's errors
/// prefixed with the path.
Result<Wisdom> load_wisdom(const std::string& path);

/// Writes `w` to `path` atomically (temporary file + rename), pretty-printed. kWisdomIo on failure.
Status save_wisdom(const Wisdom& w, const std::string& path);

/// kWisdomMismatch unless `w` was made on a CPU with `cpu`'s signature; the message names both
/// signatures and says to re-run autotune on this host.
Status check_cpu(const Wisdom& w, const CpuInfo& cpu);

/// FNV-1a 64-bit hash of a byte string (identifies a routine's code in wisdom).
std::uint64_t fnv1a64(const std::vector<std::uint8_t>& bytes) noexcept;

}  // namespace copysynth
