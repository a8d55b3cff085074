// copysynth — hardware performance counters, where the kernel exposes them.
//
// The seeds' tables quote `perf stat` figures (cycles, instructions, IPC, cache misses). Inside
// most VMs, this project's included, perf_event_open has no hardware PMU (ENOENT) or is not
// permitted (EACCES, kernel.perf_event_paranoid): then copysynth times with the TSC only and
// says so once. When counters are available they are read as one group, user space only, for
// the calling thread (perf_event_open(2)).
#pragma once

#include <cstdint>
#include <string>

namespace copysynth {

struct CounterValues {
  double cycles = 0;        ///< core cycles (PERF_COUNT_HW_CPU_CYCLES)
  double instructions = 0;  ///< retired instructions (PERF_COUNT_HW_INSTRUCTIONS)
  double cache_misses = 0;  ///< last-level cache misses (PERF_COUNT_HW_CACHE_MISSES)
  double ipc() const { return cycles > 0 ? instructions / cycles : 0; }
};

class PerfCounters {
 public:
  /// Opens the group for the calling thread. Check available(); unavailable() says why.
  PerfCounters();
  ~PerfCounters();
  PerfCounters(const PerfCounters&) = delete;
  PerfCounters& operator=(const PerfCounters&) = delete;

  bool available() const { return leader_ >= 0; }
  /// Why the counters cannot be used, e.g. "perf_event_open: No such file or directory (no
  /// hardware PMU is exposed to this machine)"; empty when available.
  const std::string& unavailable() const { return why_; }

  void start();
  /// Counts since start(), divided by `calls` (per call). All zero when unavailable.
  CounterValues stop(double calls);

 private:
  int leader_ = -1, instructions_ = -1, misses_ = -1;
  std::string why_;
};

}  // namespace copysynth
