// copysynth — perf_event_open counters (see perf_counters.hpp).
#include "copysynth/perf_counters.hpp"

#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace copysynth {
namespace {

int open_counter(std::uint64_t config, int group) {
  perf_event_attr a;
  std::memset(&a, 0, sizeof a);
  a.type = PERF_TYPE_HARDWARE;
  a.size = sizeof a;
  a.config = config;
  a.disabled = group < 0 ? 1 : 0;
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  a.read_format = PERF_FORMAT_GROUP;
  return static_cast<int>(syscall(SYS_perf_event_open, &a, 0, -1, group, 0));
}

}  // namespace

PerfCounters::PerfCounters() {
  leader_ = open_counter(PERF_COUNT_HW_CPU_CYCLES, -1);
  if (leader_ < 0) {
    const int e = errno;
    why_ = std::string("perf_event_open: ") + std::strerror(e) +
           (e == ENOENT || e == EOPNOTSUPP ? " (no hardware PMU is exposed to this machine)"
            : e == EACCES || e == EPERM    ? " (not permitted: see kernel.perf_event_paranoid)"
                                           : "");
    return;
  }
  instructions_ = open_counter(PERF_COUNT_HW_INSTRUCTIONS, leader_);
  misses_ = open_counter(PERF_COUNT_HW_CACHE_MISSES, leader_);
  if (instructions_ < 0 || misses_ < 0) {
    why_ = std::string("perf_event_open (instructions / cache misses): ") + std::strerror(errno);
    for (int* fd : {&leader_, &instructions_, &misses_})
      if (*fd >= 0) {
        close(*fd);
        *fd = -1;
      }
  }
}

PerfCounters::~PerfCounters() {
  for (int fd : {misses_, instructions_, leader_})
    if (fd >= 0) close(fd);
}

void PerfCounters::start() {
  if (!available()) return;
  ioctl(leader_, PERF_EVENT_IOC_RESET, PERF_IOC_FLAG_GROUP);
  ioctl(leader_, PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP);
}

CounterValues PerfCounters::stop(double calls) {
  CounterValues v;
  if (!available()) return v;
  ioctl(leader_, PERF_EVENT_IOC_DISABLE, PERF_IOC_FLAG_GROUP);
  std::uint64_t buf[1 + 3] = {};
  if (read(leader_, buf, sizeof buf) != static_cast<ssize_t>(sizeof buf) || buf[0] != 3 || calls <= 0) return v;
  v.cycles = double(buf[1]) / calls;
  v.instructions = double(buf[2]) / calls;
  v.cache_misses = double(buf[3]) / calls;
  return v;
}

}  // namespace copysynth
