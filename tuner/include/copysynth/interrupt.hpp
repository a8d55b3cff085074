// copysynth — an interrupted tool ends its child processes and removes its temporary files.
//
// autotune starts programs of its own: the command `--app` judges with (`/bin/sh -c`, in a
// session and process group of its own, which may start more processes), a second autotune that
// measures a refused winner again, and binutils' as, ld and ar for a library (--emit-lib, and
// --app-with lib's candidates). SIGINT, SIGQUIT, SIGTERM or SIGHUP while it waits for one
// used to end autotune alone: the child ran on as an orphan, and the temporary directory it
// worked in stayed. Now autotune's handler passes the signal on to the child it waits for; when
// the wait returns, the code that waited throws Interrupted, the stack unwinds (removing the
// temporary directories: TempDir's destructor), and main() ends the process by the signal.
// Between two children (a candidate's library being written, the next round about to start)
// no child is waited for, and the signal used to end autotune at once, leaving the temporary
// directory: code that holds one now defers the stop signals there (StopsDeferred), so the
// signal is noted, no further child starts, and the process still ends by it, after the unwinding.
#pragma once

#include <signal.h>
#include <spawn.h>
#include <sys/types.h>

namespace copysynth {

/// The signals a tool passes on to its child: SIGINT (Ctrl-C), SIGQUIT (Ctrl-\), SIGTERM, SIGHUP.
inline constexpr int kStopSignals[] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP};

/// Blocks kStopSignals (`block`, the mask before saved in *old) or restores *old: around starting
/// a child and registering it, so that no signal falls between the two (the child is started
/// with `*old` as its mask, posix_spawnattr_setsigmask).
void block_stop_signals(bool block, sigset_t* old) noexcept;

/// The child a tool now waits for, as kill(2) takes it: a pid, or a process group as -pgid; 0
/// when none. Set after the child is started, cleared after the wait.
void set_waited_child(pid_t target) noexcept;

/// For the tool's handler of kStopSignals (async-signal-safe: atomics, kill(2); errno kept):
/// passes `sig` on to the waited child (a second signal: SIGKILL, for a child that ignores the
/// first), notes it for throw_if_stopped(), and returns true. With no child waited for: notes the
/// first one and returns true inside a StopsDeferred scope; otherwise returns false (the handler
/// then ends the process by the signal itself). The handler is installed without SA_RESTART, so
/// that a system call it interrupts (a write to a pipe nobody reads) returns instead of blocking
/// on with the signal noted.
bool pass_on_stop_signal(int sig) noexcept;

/// What throw_if_stopped() throws: `signal` is the signal passed on or noted.
struct Interrupted {
  int signal = 0;
};

/// Whether pass_on_stop_signal() passed a signal on or noted one: for a loop that retries a
/// system call on EINTR (a write to a pipe), which gives up instead.
bool stop_noted() noexcept;

/// Throws Interrupted when pass_on_stop_signal() passed a signal on or noted one. Called after
/// each wait, and between the short steps of a StopsDeferred scope.
void throw_if_stopped();

/// Starts a child the way the waits here expect (posix_spawnp when `search_path`, else
/// posix_spawn, with `fa` and `envp`): the stop signals blocked from before the start to its
/// registration with set_waited_child(), so that none falls between, and the child starting with
/// the signal mask as it was. `new_session`: POSIX_SPAWN_SETSID, and the registration names the
/// process group (-pid), so that a signal passed on ends whatever the child started too. Returns
/// posix_spawn's result: 0 with *pid set and the child registered, or an errno value; or -1
/// when a stop signal was noted (StopsDeferred), with nothing started: the caller releases what
/// it holds and calls throw_if_stopped(). The caller clears the registration after its wait.
int spawn_waited_child(pid_t* pid, const char* path, bool search_path, const posix_spawn_file_actions_t* fa,
                       char* const argv[], char* const envp[], bool new_session) noexcept;

/// Before starting a child: blocks kStopSignals as block_stop_signals(true, old) does and returns
/// true, unless a stop signal was noted (StopsDeferred): then returns false with the mask as it
/// was, and the caller releases what it holds and calls throw_if_stopped(). No child starts after
/// an interrupt.
[[nodiscard]] bool block_stop_signals_to_start(sigset_t* old) noexcept;

/// While one is alive (in any thread), a stop signal that comes while no child is waited for is
/// noted, and pass_on_stop_signal() returns true, instead of ending the process at once: for code
/// that holds temporary files and between its waits runs only short steps, each followed by
/// throw_if_stopped() or a child's start (block_stop_signals_to_start). A second stop signal is
/// not deferred: it ends the process by the default action, so the tool can always be stopped.
/// When the outermost scope ends with a signal noted and no exception on its way (a path that
/// returned, an error return included), the destructor ends the process by that signal, after
/// the objects declared after the scope (the temporary directory) were destroyed; with
/// Interrupted on its way, main() ends it.
class StopsDeferred {
 public:
  StopsDeferred() noexcept;
  ~StopsDeferred();
  StopsDeferred(const StopsDeferred&) = delete;
  StopsDeferred& operator=(const StopsDeferred&) = delete;

 private:
  int exceptions_;  // std::uncaught_exceptions() at construction
};

}  // namespace copysynth
