// copysynth — reading the small input files copysynth takes from users (wisdom, size
// distributions) without trusting what the path names.
//
// A path may name something that is not a file at all: a directory, a FIFO (whose open() blocks
// until a writer comes), a device such as /dev/zero (endless), or a file of gigabytes. Such input
// is refused, said for what it is, before a byte is read: stat() first, then open() with
// O_NONBLOCK (a FIFO or device that appears in between does not block the open), then fstat()
// again on what was opened.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "copysynth/result.hpp"

namespace copysynth {

/// `path` made absolute against the current directory (getcwd), its "." segments and repeated
/// slashes dropped and its ".." kept (the kernel resolves ".." after a symbolic link, so the
/// lexical parent may be another directory): "./p.prof" and "p.prof" give one name. Nothing is
/// opened. Where the current directory cannot be read the path stays relative, cleaned the
/// same way. Used for names that must mean the same file from any directory: a profile the shim
/// writes, a profile or size distribution a wisdom file names.
std::string absolute_path(const std::string& path);

/// The whole of `path`, which must be a regular file (or a link to one) of at most `max_bytes`
/// bytes. `what` names the kind of file in messages ("wisdom file", "size distribution"). Errors,
/// all with `code` and the path:
///   "cannot read <what> PATH: <strerror>" (+ "; " + `missing_hint` when not empty and the file
///   does not exist: ENOENT), e.g. a missing file or no permission;
///   "PATH is a directory, not a <what>" (a FIFO, a character device, a block device, a socket:
///   the same, named);
///   "PATH is N bytes, more than the M MiB a <what> may have; ..." (nothing is read).
Result<std::string> read_regular_file(const std::string& path, const std::string& what, std::uint64_t max_bytes,
                                      ErrorCode code, const std::string& missing_hint = {});

/// The file a write to `path` must replace: `path` itself, or, when it is a symbolic link, the
/// file the chain of links ends at (relative links taken from the link's own directory; the end
/// may not exist yet: a dangling link's target is created). A writer that renames a new file over
/// `path` would otherwise replace the link with a regular file and leave the file it pointed to
/// unchanged; writing to the end of the chain keeps the link, as `cat > path` does. Nothing is
/// opened or created. Errors (kWisdomIo, nothing written): a chain of more than 40 links (a
/// loop); a link the kernel itself would not follow under fs.protected_symlinks — one in a
/// sticky, world-writable directory (/tmp) owned by neither this user (euid) nor the directory's
/// owner — since following it by hand would let another user point `autotune --emit` run as
/// root at any file.
Result<std::string> write_target(const std::string& path);

/// Checks, before any work is done, that a file may be written at `path` (the temporary file
/// renamed over it that write_file_replacing makes): it is not a directory; its directory (of
/// write_target(path), when `path` is a link) exists, is neither append-only nor immutable
/// (chattr +a/+i, read with statx(2), else FS_IOC_GETFLAGS) and is writable (access W_OK); an
/// existing file there is neither append-only nor immutable, and, in a sticky directory, is the
/// caller's (or the directory is, or the caller has CAP_FOWNER); the file name leaves 8 bytes
/// of the directory's NAME_MAX for the temporary and backup names ("NAME.XXXXXX", "NAME.bak.N"); the file system has a block
/// free; and a file can be made there (access() grants root /sys and /proc): an O_TMPFILE file
/// where the directory's attributes are known and the file system has O_TMPFILE, else a
/// temporary "NAME.XXXXXX" removed at once. `option` names where the path came from in messages
/// ("--emit", "--svg"). Errors (kInvalidArgument), each "OPTION PATH: <why>", why being: "is a
/// directory; give a file name", "the directory DIR does not exist; ...", "the directory DIR is
/// append-only (chattr +a)" or "immutable (chattr +i), so a file there cannot be replaced; ...",
/// "cannot write in DIR (<strerror>)", "the file is append-only (chattr +a)" or "immutable ...,
/// so it cannot be replaced; clear that (chattr -a or -i) or pick another name", "another user's
/// file in the sticky directory DIR, ..." (without CAP_FOWNER), "the file name is N bytes; at
/// most M here ...", "the file system of DIR reports no block free (statvfs); ..." (the reserved
/// blocks count only with CAP_SYS_RESOURCE), "cannot create a file in DIR (<strerror>)",
/// "cannot remove files in DIR (<strerror>), so PROBE is left there".
Status check_output_path(const std::string& option, const std::string& path);

/// Checks that a file written by replacing it (a temporary file renamed over `path`, as wisdom
/// is) may be written at `path`: nothing is there, a regular file (a link to one counts), or a
/// directory (which the rename cannot replace: it fails, and the caller says so).
/// Otherwise `code` with "PATH is a character device (a FIFO, ...), not a regular file; a <what>
/// is written by replacing the file, which would replace the device: give a regular file name
/// (nothing was written)" — `autotune --emit /dev/null` run as root would otherwise have moved
/// /dev/null aside and left a regular file in its place.
Status check_replaceable(const std::string& path, const std::string& what, ErrorCode code);

/// Writes all of `text` (bytes) to the open descriptor `fd` from its current offset: again after
/// EINTR, waiting in poll() while a non-blocking descriptor (a pipe or terminal another program
/// set O_NONBLOCK on) has no room (EAGAIN), a write that returns 0 taken as EIO. Returns 0 when
/// every byte was written, else the errno of the write that failed (ENOSPC, EIO, EBADF; EPIPE
/// where SIGPIPE is ignored, which otherwise ends the process as it would `cat`); the bytes
/// before it are written. Used by write_file_replacing() and `autotune --emit-asm -`.
int write_all(int fd, std::string_view text);

/// Writes `text` to `path` whole or not at all: into a new temporary file of a unique name next
/// to it (mkstemp, "PATH.XXXXXX": the same directory, so the rename cannot cross file systems,
/// and no file of the user's is overwritten or removed but `path` itself), flushed to disk
/// (fsync), then renamed over `path`. Readers see the old file or the new one, never a part, and
/// a full disk leaves the old file as it was. Through a symbolic link, never over it
/// (write_target). The new file keeps the permission bits of the file it replaces (0666 minus
/// the umask for a new one). Errors (`code`, the temporary file removed, `path` unchanged):
/// write_target's, check_replaceable's (`what` names the file: "wisdom file", ".S file"), "cannot
/// create a temporary file next to PATH ...", "error writing PATH.XXXXXX: <strerror> (PATH is
/// unchanged)" (ENOSPC, EIO), "cannot rename ...".
Status write_file_replacing(const std::string& path, std::string_view text, const std::string& what, ErrorCode code);

/// A directory of one run's own, for files that live as long as the run: unlocked, then removed
/// with everything in it when the object goes, and otherwise (the process killed, or ended by a second signal
/// before its unwinding was done) by the next run that makes one with the same prefix in the
/// same parent (make_scratch_dir). It holds `.lock`, locked (flock, LOCK_EX) through the
/// descriptor `lock` for the object's whole life; the descriptor is close-on-exec, so children
/// do not hold it. Not copyable; movable.
struct ScratchDir {
  std::string path;  ///< "PARENT/PREFIXxxxxxx"; empty before make_scratch_dir succeeds
  int lock = -1;     ///< the descriptor holding `.lock`'s lock; -1 when none
  ScratchDir() = default;
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ScratchDir(ScratchDir&& o) noexcept;
  ScratchDir& operator=(ScratchDir&& o) noexcept;
  ~ScratchDir();
};

/// Removes the stale directories of earlier runs (ScratchDir): every entry of PARENT whose name
/// starts with PREFIX, that is a directory (not a link) owned by this user (euid), and whose
/// `.lock` it can lock at once (LOCK_NB). A directory without `.lock` (one being made this
/// instant, a run killed in that instant, or one of an older copysynth) is left. A flock outlives
/// no process, whatever PID namespace shares PARENT; across hosts only where the file system
/// shares the lock (local file systems, NFS without `local_lock`). Errors are ignored: what
/// cannot be read or removed stays.
void remove_stale_scratch_dirs(const std::string& parent, const std::string& prefix);

/// Makes `dir` a new directory PARENT/PREFIXxxxxxx (mkdtemp) holding a locked `.lock` (see
/// ScratchDir), after remove_stale_scratch_dirs(PARENT, PREFIX). The lock file is created as
/// `.lock.new`, locked, and only then renamed to `.lock`, so a `.lock` that another process can
/// lock belongs to no live run. Errors (`code`, nothing left behind): "cannot make a temporary directory
/// PARENT/PREFIXXXXXXX: <strerror>" (+ " (HINT)" when `hint` is not empty), or "cannot lock the
/// temporary directory ...".
Status make_scratch_dir(ScratchDir& dir, const std::string& parent, const std::string& prefix, ErrorCode code,
                        const std::string& hint = {});

}  // namespace copysynth
