// copysynth — reading small input files, checking where output files go (see file_io.hpp).
#include "copysynth/file_io.hpp"

#include <fcntl.h>
#include <linux/capability.h>  // capget: __user_cap_*, CAP_FOWNER, CAP_SYS_RESOURCE
#include <linux/fs.h>          // FS_IOC_GETFLAGS, FS_APPEND_FL, FS_IMMUTABLE_FL
#include <poll.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <utility>
#include <vector>

namespace copysynth {
namespace {

/// What a file of this mode is, with its article, when it is not a regular file.
const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

/// The permission bits a new file gets from open(..., 0666): 0666 minus the process's umask, read
/// from /proc/self/status (umask() itself would have to change it to read it, racing other
/// threads); 0644 where the kernel does not report it.
mode_t new_file_mode() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("Umask:", 0) == 0) return 0666 & ~static_cast<mode_t>(std::strtoul(line.c_str() + 6, nullptr, 8));
  return 0644;
}

std::string mib(std::uint64_t bytes) {
  return bytes % (1u << 20) == 0 ? std::to_string(bytes >> 20) + " MiB" : std::to_string(bytes) + " bytes";
}

}  // namespace

std::string absolute_path(const std::string& path) {
  if (path.empty()) return path;
  std::string abs = path;
  if (abs[0] != '/') {
    char cwd[PATH_MAX];
    if (::getcwd(cwd, sizeof cwd)) abs = std::string(cwd) + "/" + abs;
  }
  std::string out;
  for (std::size_t i = 0; i < abs.size();) {
    const std::size_t j = std::min(abs.find('/', i), abs.size());
    const std::string part = abs.substr(i, j - i);
    if (!part.empty() && part != ".") out += "/" + part;
    i = j + 1;
  }
  if (out.empty()) return abs[0] == '/' ? "/" : ".";  // "/", or "." when getcwd failed
  return abs[0] == '/' ? out : out.substr(1);         // relative only when getcwd failed
}

Result<std::string> read_regular_file(const std::string& path, const std::string& what, std::uint64_t max_bytes,
                                      ErrorCode code, const std::string& missing_hint) {
  auto cannot_read = [&](int e) {
    return make_error(code, "cannot read " + what + " " + path + ": " + std::strerror(e) +
                                (missing_hint.empty() || e != ENOENT ? "" : "; " + missing_hint));
  };
  auto check = [&](const struct stat& st) -> Status {
    if (!S_ISREG(st.st_mode))
      return make_error(code, path + " is " + kind_of(st.st_mode) + ", not a " + what + "; name a regular file" +
                                  (S_ISDIR(st.st_mode) ? ""
                                                       : " (one is never read from a FIFO or a device, which may "
                                                         "block or never end)"));
    if (static_cast<std::uint64_t>(st.st_size) > max_bytes)
      return make_error(code, path + " is " + std::to_string(st.st_size) + " bytes, more than the " + mib(max_bytes) +
                                  " a " + what + " may have; it was not read (is it the right file?)");
    return {};
  };
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return cannot_read(errno);
  COPYSYNTH_TRY(check(st));
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return cannot_read(errno);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  if (::fstat(fd, &st) != 0) return cannot_read(errno);
  COPYSYNTH_TRY(check(st));  // replaced between stat() and open()
  std::string text;
  text.resize(static_cast<std::size_t>(st.st_size) + 1);
  std::size_t have = 0;
  for (;;) {
    if (have == text.size()) {
      if (have > max_bytes) break;  // grew past the limit while being read
      text.resize(std::min<std::uint64_t>(max_bytes + 1, 2 * have + 4096));
    }
    const ssize_t k = ::read(fd, text.data() + have, text.size() - have);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) return cannot_read(errno);
    if (k == 0) break;
    have += static_cast<std::size_t>(k);
  }
  if (have > max_bytes)
    return make_error(code, path + " grew past the " + mib(max_bytes) + " a " + what + " may have while it was read");
  text.resize(have);
  return text;
}

Status check_replaceable(const std::string& path, const std::string& what, ErrorCode code) {
  struct stat st {};
  // A directory cannot be replaced by a file: the rename fails and says so, leaving it as it was.
  if (::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) return {};
  return make_error(code, path + " is " + kind_of(st.st_mode) + ", not a regular file; a " + what +
                              " is written by replacing the file, which would replace it: give a regular file "
                              "name (nothing was written)");
}

Result<std::string> write_target(const std::string& path) {
  namespace fs = std::filesystem;
  fs::path p = path;
  std::error_code ec;
  for (int hops = 0; fs::is_symlink(p, ec); ++hops) {
    if (hops == 40)
      return make_error(ErrorCode::kWisdomIo, path + ": more than 40 symbolic links (a loop?); give the file's own path "
                                                     "(nothing was written)");
    // fs.protected_symlinks: in a sticky world-writable directory, a link is followed only when
    // its owner is the follower or the directory's owner.
    struct stat link {}, dir {};
    const fs::path parent = p.has_parent_path() ? p.parent_path() : fs::path(".");
    if (::lstat(p.c_str(), &link) == 0 && ::stat(parent.c_str(), &dir) == 0 && (dir.st_mode & S_ISVTX) &&
        (dir.st_mode & S_IWOTH) && link.st_uid != ::geteuid() && link.st_uid != dir.st_uid)
      return make_error(ErrorCode::kWisdomIo,
                        path + ": " + (hops ? "it leads to " + p.string() + ", " : std::string()) +
                            "a symbolic link another user owns in the sticky, world-writable directory " +
                            parent.string() + "; not followed (the kernel's protected_symlinks would not either): "
                            "give the file's own path (nothing was written)");
    const fs::path t = fs::read_symlink(p, ec);
    if (ec) break;
    p = t.is_absolute() ? t : parent / t;
  }
  return p.string();
}

namespace {

/// The attributes chattr(1) sets on `path` (following links): statx(2), which needs no open (so
/// a directory this user cannot read is known too); where statx does not report them (an older
/// kernel, a seccomp filter, a file system without the attribute mask), FS_IOC_GETFLAGS on the
/// opened file (ioctl_iflags(2); a zeroed `long`: FUSE before Linux 5.13 copies 8 bytes back).
/// `known`: one of the two answered.
struct ChattrFlags {
  bool known = false;
  bool append = false;     // +a: new files, but nothing renamed over or removed
  bool immutable = false;  // +i: nothing changes
};
ChattrFlags chattr_flags(const std::string& path) {
  ChattrFlags f;
  struct statx sx {};
  if (::statx(AT_FDCWD, path.c_str(), 0, STATX_BASIC_STATS, &sx) == 0 && (sx.stx_attributes_mask & STATX_ATTR_APPEND)) {
    f.known = true;
    f.append = (sx.stx_attributes & STATX_ATTR_APPEND) != 0;
    f.immutable = (sx.stx_attributes_mask & sx.stx_attributes & STATX_ATTR_IMMUTABLE) != 0;
    return f;
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return f;
  long flags = 0;
  if (::ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0) {
    f.known = true;
    f.append = (flags & FS_APPEND_FL) != 0;
    f.immutable = (flags & FS_IMMUTABLE_FL) != 0;
  }
  ::close(fd);
  return f;
}

/// Whether the calling thread's effective capability set holds `cap` (capget(2)); root without
/// it (a container that drops capabilities) is treated as anyone else.
bool has_capability(int cap) {
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (::syscall(SYS_capget, &hdr, data) != 0) return ::geteuid() == 0;
  return (data[cap / 32].effective >> (cap % 32)) & 1u;
}

}  // namespace

Status check_output_path(const std::string& option, const std::string& path_in) {
  namespace fs = std::filesystem;
  std::error_code ec;
  auto target = write_target(path_in);
  if (!target) return make_error(ErrorCode::kInvalidArgument, option + " " + target.error().message);
  const std::string path = *target;
  const std::string named = path == path_in ? path : path_in + " (a link to " + path + ")";
  const auto refuse = [&](const std::string& why) {
    return make_error(ErrorCode::kInvalidArgument, option + " " + named + ": " + why);
  };
  if (fs::is_directory(path, ec)) return refuse("is a directory; give a file name");
  const fs::path dir = fs::path(path).has_parent_path() ? fs::path(path).parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec))
    return refuse("the directory " + dir.string() + " does not exist; create it or pick another path");
  // The file is written as a temporary file renamed over NAME (an old wisdom file may be renamed
  // to NAME.bak.N first): an append-only or immutable directory (chattr +a, +i) takes no rename,
  // and neither does such a file; said by name, before the work.
  const ChattrFlags dir_flags = chattr_flags(dir.string());
  if (dir_flags.immutable || dir_flags.append)
    return refuse("the directory " + dir.string() + " is " +
                  (dir_flags.immutable ? "immutable (chattr +i)" : "append-only (chattr +a)") +
                  ", so a file there cannot be replaced; pick another directory");
  if (::access(dir.c_str(), W_OK) != 0) {
    const int err = errno;
    return refuse("cannot write in " + dir.string() + " (" + std::strerror(err) + ")");
  }
  struct stat old {}, dir_st {};
  if (::stat(path.c_str(), &old) == 0) {
    const ChattrFlags f = chattr_flags(path);
    if (f.immutable || f.append)
      return refuse(std::string("the file is ") + (f.immutable ? "immutable (chattr +i)" : "append-only (chattr +a)") +
                    ", so it cannot be replaced; clear that (chattr -" + (f.immutable ? "i" : "a") +
                    ") or pick another name");
    // A sticky directory (/tmp) lets only the file's owner, the directory's, or a process with
    // CAP_FOWNER rename over it.
    const uid_t me = ::geteuid();
    if (::stat(dir.c_str(), &dir_st) == 0 && (dir_st.st_mode & S_ISVTX) && old.st_uid != me && dir_st.st_uid != me &&
        !has_capability(CAP_FOWNER))
      return refuse("another user's file in the sticky directory " + dir.string() +
                    ", which only its owner may replace; pick another name");
  }
  // A name within 8 bytes of the directory's limit would fail only after the work.
  const long name_max = ::pathconf(dir.c_str(), _PC_NAME_MAX);
  const std::string name = fs::path(path).filename().string();
  if (name_max > 0 && name.size() + 8 > static_cast<std::size_t>(name_max))
    return refuse("the file name is " + std::to_string(name.size()) + " bytes; at most " +
                  std::to_string(name_max - 8) + " here (the directory's limit is " + std::to_string(name_max) +
                  ", and the temporary and backup names add up to 8)");
  // A file system with no block free (a full disk; the reserved blocks counted only for a
  // process with CAP_SYS_RESOURCE, as ext4 does) takes the empty probe below but not the text.
  // Not where it counts no blocks at all (/proc, /sys, tmpfs without a size).
  if (struct statvfs vfs {}; ::statvfs(dir.c_str(), &vfs) == 0 && vfs.f_blocks > 0 &&
                             (vfs.f_bfree == 0 || (vfs.f_bavail == 0 && !has_capability(CAP_SYS_RESOURCE))))
    return refuse("the file system of " + dir.string() + " reports no block free (statvfs); free some space or "
                  "pick another directory");
  // access() grants root every directory, also where no file can be made (/sys, /proc): a file is
  // made there and dropped, so that such a path is refused before the work, not after it. Where
  // the directory's attributes are known (so it is not append-only), a file without a name
  // (O_TMPFILE), which leaves nothing behind whatever happens, when the file system has them;
  // otherwise (attributes unknown, or no O_TMPFILE: EOPNOTSUPP, or EISDIR/EINVAL from layers that
  // do not know it) the temporary "NAME.XXXXXX" the write itself will make, removed at once,
  // which finds a directory where files cannot be removed too.
  if (dir_flags.known) {
    if (const int fd = ::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600); fd >= 0) {
      ::close(fd);
      return {};
    } else if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) {
      const int err = errno;
      return refuse("cannot create a file in " + dir.string() + " (" + std::strerror(err) + ")");
    }
  }
  std::string probe = (dir / (name + ".XXXXXX")).string();
  const int fd = ::mkostemp(probe.data(), O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    return refuse("cannot create a file in " + dir.string() + " (" + std::strerror(err) + ")");
  }
  ::close(fd);
  if (::unlink(probe.c_str()) != 0 && errno != ENOENT) {
    const int err = errno;
    return refuse("cannot remove files in " + dir.string() + " (" + std::strerror(err) + "), so " + probe +
                  " is left there");
  }
  return {};
}

int write_all(int fd, std::string_view text) {
  for (std::size_t off = 0; off < text.size();) {
    const ssize_t k = ::write(fd, text.data() + off, text.size() - off);
    if (k > 0) {
      off += static_cast<std::size_t>(k);
      continue;
    }
    if (k == 0) return EIO;
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return errno;
    pollfd p{fd, POLLOUT, 0};  // a non-blocking descriptor: wait for room
    if (::poll(&p, 1, -1) < 0 && errno != EINTR) return errno;
  }
  return 0;
}

Status write_file_replacing(const std::string& path_in, std::string_view text, const std::string& what,
                            ErrorCode code) {
  auto target = write_target(path_in);  // through a link, never over it
  if (!target) return make_error(code, target.error().message);
  const std::string path = *target;
  if (auto st = check_replaceable(path, what, code); !st) return st;
  std::string tmp = path + ".XXXXXX";
  int fd = ::mkstemp(tmp.data());
  if (fd < 0)
    return make_error(code, "cannot create a temporary file next to " + path + " (" + tmp + "): " +
                                std::strerror(errno) + "; check that the directory exists and is writable");
  auto fail = [&](const std::string& msg) {
    const int e = errno;
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    return make_error(code, msg + ": " + std::strerror(e) + " (" + path + " is unchanged)");
  };
  struct stat old {};
  const mode_t mode = ::stat(path.c_str(), &old) == 0 ? (old.st_mode & 07777) : new_file_mode();
  if (::fchmod(fd, mode) != 0) return fail("cannot set the permissions of " + tmp);
  if (const int e = write_all(fd, text); e != 0) {
    errno = e;
    return fail("error writing " + tmp);
  }
  if (::fsync(fd) != 0) return fail("error writing " + tmp + " to disk (fsync)");
  const int closed = ::close(fd);
  fd = -1;
  if (closed != 0) return fail("error writing " + tmp);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return fail("cannot rename " + tmp + " to " + path);
  return {};
}

ScratchDir::ScratchDir(ScratchDir&& o) noexcept : path(std::move(o.path)), lock(std::exchange(o.lock, -1)) {
  o.path.clear();
}

ScratchDir& ScratchDir::operator=(ScratchDir&& o) noexcept {
  if (this != &o) {
    ScratchDir old(std::move(*this));
    path = std::move(o.path);
    o.path.clear();
    lock = std::exchange(o.lock, -1);
  }
  return *this;
}

ScratchDir::~ScratchDir() {
  // Unlocked first, then removed: on NFS a file still open is renamed .nfsXXXX when unlinked,
  // which would leave the directory behind, empty once the descriptor closed, without a `.lock`
  // for a sweep to find. A sweep that locks it in between removes the same tree (both ignore
  // what is gone).
  if (lock >= 0) ::close(lock);
  if (path.empty()) return;
  // Everything but `.lock` first: a run killed on the way (a second signal) leaves its directory
  // with the `.lock` a sweep looks for, not without it for good (a hostile-user test left 2 of 30).
  namespace fs = std::filesystem;
  try {  // a destructor: no bad_alloc may leave it
    std::error_code ec;
    std::vector<fs::path> inside;
    for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec))
      if (it->path().filename() != ".lock") inside.push_back(it->path());
    for (const fs::path& p : inside) fs::remove_all(p, ec);
    fs::remove_all(path, ec);
  } catch (...) {
  }
}

void remove_stale_scratch_dirs(const std::string& parent, const std::string& prefix) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<fs::path> stale;
  for (fs::directory_iterator it(parent, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().filename().string().rfind(prefix, 0) != 0) continue;
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) continue;
    // Opened for writing: NFS emulates flock with fcntl locks, whose exclusive lock needs it.
    const int fd = ::open((it->path() / ".lock").c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) continue;
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) stale.push_back(it->path());
    ::close(fd);
  }
  for (const fs::path& p : stale) fs::remove_all(p, ec);
}

Status make_scratch_dir(ScratchDir& dir, const std::string& parent, const std::string& prefix, ErrorCode code,
                        const std::string& hint) {
  namespace fs = std::filesystem;
  remove_stale_scratch_dirs(parent, prefix);
  std::string templ = (fs::path(parent) / (prefix + "XXXXXX")).string();
  const std::string shown = templ;  // mkdtemp may leave its argument undefined on failure
  auto failed = [&](const std::string& what, const std::string& name, int err) {
    return make_error(code, what + " " + name + ": " + std::strerror(err) + (hint.empty() ? "" : " (" + hint + ")"));
  };
  if (!::mkdtemp(templ.data())) return failed("cannot make a temporary directory", shown, errno);
  ScratchDir made;
  made.path = templ;
  const std::string fresh = templ + "/.lock.new";
  made.lock = ::open(fresh.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (made.lock < 0 || ::flock(made.lock, LOCK_EX) != 0 || ::rename(fresh.c_str(), (templ + "/.lock").c_str()) != 0)
    return failed("cannot lock the temporary directory", templ, errno);
  dir = std::move(made);
  return {};
}

}  // namespace copysynth
