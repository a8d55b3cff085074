// copysynth — an interrupted tool ends its child processes (see interrupt.hpp).
#include "copysynth/interrupt.hpp"

#include <signal.h>

#include <atomic>

namespace copysynth {

namespace {
std::atomic<pid_t> g_child{0};
std::atomic<int> g_stop{0};
static_assert(std::atomic<pid_t>::is_always_lock_free && std::atomic<int>::is_always_lock_free,
              "used from a signal handler");
}  // namespace

void set_waited_child(pid_t target) noexcept { g_child.store(target); }

bool pass_on_stop_signal(int sig) noexcept {
  const pid_t child = g_child.load();
  if (child == 0) return false;
  g_stop.store(sig);
  ::kill(child, sig);
  return true;
}

void throw_if_stopped() {
  if (const int sig = g_stop.load()) throw Interrupted{sig};
}

}  // namespace copysynth
