// copysynth — an interrupted tool ends its child processes (see interrupt.hpp).
#include "copysynth/interrupt.hpp"

#include <pthread.h>
#include <signal.h>

#include <cerrno>

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
  const int e = errno;  // a handler must leave errno as it found it
  // The first signal is passed on as it came; a second one while the child still runs (it
  // ignores or traps the first) ends it with SIGKILL, so the tool can always be interrupted.
  ::kill(child, g_stop.exchange(sig) == 0 ? sig : SIGKILL);
  errno = e;
  return true;
}

void block_stop_signals(bool block, sigset_t* old) noexcept {
  if (block) {
    sigset_t set;
    sigemptyset(&set);
    for (int sig : kStopSignals) sigaddset(&set, sig);
    pthread_sigmask(SIG_BLOCK, &set, old);
  } else {
    pthread_sigmask(SIG_SETMASK, old, nullptr);
  }
}

void throw_if_stopped() {
  if (const int sig = g_stop.load()) throw Interrupted{sig};
}

}  // namespace copysynth
