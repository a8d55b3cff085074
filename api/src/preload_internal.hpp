// libcopysynth-preload.so — what its two files share: preload.cpp (the trampolines, the slots,
// start-up, COPYSYNTH_PRELOAD_STATS) and preload_profile.cpp (COPYSYNTH_PROFILE: recording the
// program's own calls). Nothing here is exported (preload.map keeps the six routines only).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>

namespace copysynth::preload {

/// A variable of the environment, or nullptr; in a set-user-ID or set-group-ID program always
/// nullptr (secure_getenv), so such a program never reads or writes a file the invoking user names.
const char* env(const char* name);

/// Writes `n` bytes at `p` to `fd`, retrying partial writes and EINTR; returns how many were
/// written. SIGPIPE and SIGXFSZ are blocked meanwhile and the one the write raised is consumed
/// (not one the program had pending): a report to a pipe or FIFO whose reader has gone, or a
/// profile record past the file size limit (`ulimit -f`), must not kill the program (at exit,
/// before the C library flushes its stdout). errno is left as it was; where fewer than `n` bytes
/// were written and `error` is given, *error is the failed write's errno (0 where write returned
/// 0). Async-signal-safe.
std::size_t write_all(int fd, const char* p, std::size_t n, int* error = nullptr) noexcept;

/// write_all of `line` and a newline (errors are ignored).
void write_line(int fd, std::string line);

/// `path` resolved against the current directory, "." segments and repeated slashes dropped
/// (copysynth::absolute_path, file_io.hpp).
std::string absolute(const char* path);

/// Whether two paths name one file: the same device and inode where both exist (links, "./" and
/// relative names alike), else the same name once resolved (a file neither names yet).
bool same_file(const char* a, const char* b);

/// A file opened at start-up and kept: a program may forbid opening files later (xz 5.6 and later
/// sandbox themselves with Landlock after start-up, so a report at exit could not open the file
/// then). The file's identity is kept too, so that if the program closed the descriptor and the
/// number now names another file, nothing is written into that one.
struct KeptFile {
  int fd = -1;
  dev_t dev = 0;
  ino_t ino = 0;
};

/// The descriptor to append to `path` through: `f`'s when it still names the file it opened,
/// else `path` opened again (O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NONBLOCK, so that a
/// FIFO without a reader fails with ENXIO instead of blocking the program's start for ever, then
/// O_NONBLOCK cleared; mode 0644, moved to a
/// descriptor >= 512, out of the way of the program's own) and kept in `f`; -1 (errno set) when
/// it cannot be opened. Async-signal-safe: fstat, open, fcntl and close only.
int kept_file_fd(KeptFile& f, const char* path) noexcept;

/// COPYSYNTH_PROFILE (preload_profile.cpp). Reads COPYSYNTH_PROFILE and COPYSYNTH_PROFILE_SIGNAL,
/// opens the profile file and notes what each record names (program, CPU). Returns whether the
/// process records: false when the variable is unset or empty (after one line on stderr when
/// COPYSYNTH_PROFILE_SIGNAL is set: it has no effect then), or, after one line on stderr, when
/// the file is the one COPYSYNTH_WISDOM names (a record would spoil the wisdom) or cannot be
/// opened. A signal the shim cannot take, or SIGTERM or SIGINT (which end most programs; the
/// shim's handler would keep them running), is said in one line too. Called by the constructor
/// after the slots hold the C library's routines, before the wisdom is installed: every line on
/// stderr is said at start-up, none by the recorder.
bool profile_set_up();

/// Points the three slots at the recording wrappers, which forward each call to the routine the
/// slot holds now (the tuned one, its COPYSYNTH_PRELOAD_STATS counting wrapper, or glibc's), and
/// installs the COPYSYNTH_PROFILE_SIGNAL handler and the fork handler. Called last by the
/// constructor, and only after profile_set_up() returned true.
void profile_start();

/// Appends the at-exit record (reason "exit"); called by the shim's destructor. Nothing happens
/// when the process does not record; a second call writes nothing.
void profile_finish();

}  // namespace copysynth::preload
