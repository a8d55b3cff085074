// copysynth — an interrupted tool ends its child processes (see interrupt.hpp).
#include "copysynth/interrupt.hpp"

#include <pthread.h>
#include <signal.h>

#include <cerrno>

#include <atomic>
#include <exception>

namespace copysynth {

namespace {
std::atomic<pid_t> g_child{0};
std::atomic<int> g_stop{0};
std::atomic<int> g_deferred{0};  // StopsDeferred scopes alive
static_assert(std::atomic<pid_t>::is_always_lock_free && std::atomic<int>::is_always_lock_free,
              "used from a signal handler");
}  // namespace

void set_waited_child(pid_t target) noexcept { g_child.store(target); }

bool pass_on_stop_signal(int sig) noexcept {
  const pid_t child = g_child.load();
  // No child: noted for throw_if_stopped() inside a StopsDeferred scope when it is the first.
  if (child == 0) return g_deferred.load() > 0 && g_stop.exchange(sig) == 0;
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

bool stop_noted() noexcept { return g_stop.load() != 0; }

void throw_if_stopped() {
  if (const int sig = g_stop.load()) throw Interrupted{sig};
}

bool block_stop_signals_to_start(sigset_t* old) noexcept {
  block_stop_signals(true, old);
  // Checked with the signals blocked: one noted before is seen here, and one sent after is
  // delivered once the child is registered, and passed on to it.
  if (g_stop.load() == 0) return true;
  block_stop_signals(false, old);
  return false;
}

int spawn_waited_child(pid_t* pid, const char* path, bool search_path, const posix_spawn_file_actions_t* fa,
                       char* const argv[], char* const envp[], bool new_session) noexcept {
  sigset_t old_mask;
  if (!block_stop_signals_to_start(&old_mask)) return -1;
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, static_cast<short>(POSIX_SPAWN_SETSIGMASK | (new_session ? POSIX_SPAWN_SETSID : 0)));
  posix_spawnattr_setsigmask(&attr, &old_mask);
  const int rc = search_path ? ::posix_spawnp(pid, path, fa, &attr, argv, envp) : ::posix_spawn(pid, path, fa, &attr, argv, envp);
  posix_spawnattr_destroy(&attr);
  if (rc == 0) set_waited_child(new_session ? -*pid : *pid);
  block_stop_signals(false, &old_mask);
  return rc;
}

StopsDeferred::StopsDeferred() noexcept : exceptions_(std::uncaught_exceptions()) { g_deferred.fetch_add(1); }

StopsDeferred::~StopsDeferred() {
  if (g_deferred.fetch_sub(1) != 1) return;
  const int sig = g_stop.load();
  if (sig == 0 || std::uncaught_exceptions() > exceptions_) return;
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

}  // namespace copysynth
