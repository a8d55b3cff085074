// copysynth — tests of the JIT's code memory as a hostile host meets it (runtime/src/jit_memory.cpp):
// fork() while the parent keeps building, programs spawned while code memory is being mapped,
// executable memory denied by a seccomp filter, and the perf map (COPYSYNTH_PERF_MAP).
//
// Its own program: it interposes mmap() and mprotect() (a definition here wins over glibc's for
// this program and the shared libraries it loads) to spawn a program at the very moment the JIT
// makes its executable view, when a memory file's descriptor, if the JIT used one, is open.
#include <doctest/doctest.h>

#include <errno.h>
#include <fcntl.h>
#include <seccomp.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "copysynth/copysynth.h"
#include "copysynth/copysynth.hpp"
#include "copysynth/tuner.hpp"
#include "support/routines.hpp"

extern char** environ;

using namespace copysynth;

namespace {

std::atomic<bool> g_watch{false};   // spawn a program at each executable shared mapping
std::atomic<int> g_exec_views{0};   // executable mappings / mprotects seen while watching
std::string g_spawned_fds;          // what the spawned programs listed (their /proc/self/fd)
int g_not_cloexec = 0;              // descriptors mapped executable without FD_CLOEXEC

/// Runs `ls -l /proc/self/fd/` as a new program (posix_spawn: fork + exec) and returns its output.
std::string spawn_and_list_fds() {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return "pipe2 failed";
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, p[1], 1);
  char ls[] = "/bin/ls", l[] = "-l", dir[] = "/proc/self/fd/";
  char* argv[] = {ls, l, dir, nullptr};
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, "/bin/ls", &fa, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(p[1]);
  std::string out;
  if (rc == 0) {
    char buf[4096];
    for (ssize_t n; (n = read(p[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
    int st = 0;
    waitpid(pid, &st, 0);
  } else {
    out = std::string("posix_spawn failed: ") + std::strerror(rc);
  }
  close(p[0]);
  return out;
}

}  // namespace

namespace {

/// At the moment executable memory appears (while watching): count it, note whether a file
/// descriptor mapped executable lacks close-on-exec, and spawn a program that lists its fds.
void on_exec_memory(int fd) {
  g_watch = false;  // posix_spawn maps memory too
  ++g_exec_views;
  if (fd >= 0) {
    const int fdflags = fcntl(fd, F_GETFD);
    if (fdflags >= 0 && !(fdflags & FD_CLOEXEC)) ++g_not_cloexec;
  }
  g_spawned_fds += spawn_and_list_fds();
  g_watch = true;
}

}  // namespace

// The interposed mmap and mprotect: the real ones (system calls), plus, while watching, a program
// spawned right when memory becomes executable: a file mapped shared and executable (a memfd's
// execute view: the descriptor is open then, between memfd_create and close) or memory made
// executable with mprotect (copysynth's execute view).
extern "C" void* mmap(void* addr, std::size_t len, int prot, int flags, int fd, off_t off) {
  const long r = syscall(SYS_mmap, addr, len, prot, flags, fd, off);
  if (r == -1) return MAP_FAILED;
  if (g_watch.load() && (prot & PROT_EXEC) && (flags & MAP_SHARED)) on_exec_memory(fd);
  return reinterpret_cast<void*>(r);
}

extern "C" int mprotect(void* addr, std::size_t len, int prot) {
  const long r = syscall(SYS_mprotect, addr, len, prot);
  if (r == 0 && g_watch.load() && (prot & PROT_EXEC)) on_exec_memory(-1);
  return static_cast<int>(r);
}

namespace {

CopyParams small_params(unsigned unroll) {
  CopyParams p;
  p.vector_width = 16;
  p.unroll = unroll;
  return p;
}

using test::build;

bool copies(CopyFn f, std::size_t n) {
  std::vector<unsigned char> src(n + 1), dst(n + 1, 0);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 13 + 5);
  return f(dst.data(), src.data() + 1, n) == dst.data() && std::memcmp(dst.data(), src.data() + 1, n) == 0;
}

/// Runs `body` in a forked child; returns its exit status (or -1 if it did not exit normally) and
/// what it wrote to the pipe.
template <class F>
std::pair<int, std::string> in_child(F body) {
  int p[2];
  REQUIRE(pipe(p) == 0);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(p[0]);
    std::string said;
    const int rc = body(said);
    [[maybe_unused]] ssize_t n = write(p[1], said.data(), said.size());
    _exit(rc);
  }
  close(p[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(p[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
  close(p[0]);
  int st = 0;
  REQUIRE(waitpid(pid, &st, 0) == pid);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

}  // namespace

TEST_CASE("fork: a routine built before fork() keeps its code in the child while the parent frees and rebuilds") {
  // Parent and child share the code memory that existed at the fork (MAP_SHARED). The parent
  // destroys the routine and builds others of the same size, which an allocator would place
  // where it was; the child, still holding the routine, must find its bytes unchanged and copy
  // correctly through it. (The parent may get the same virtual address again, in new memory
  // after it unmapped the old: what matters is the child's bytes.)
  std::optional<Routine> a = build(small_params(1));
  const std::vector<std::uint8_t> a_bytes = a->bytes();
  int go[2], ready[2];
  REQUIRE(pipe(go) == 0);
  REQUIRE(pipe(ready) == 0);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    char c = 0;
    if (write(ready[1], "r", 1) != 1 || read(go[0], &c, 1) != 1) _exit(12);
    if (std::memcmp(a->entry(), a_bytes.data(), a_bytes.size()) != 0) _exit(13);  // code changed under us
    if (!copies(a->fn(), 100) || !copies(a->fn(), 3000)) _exit(14);
    _exit(0);
  }
  char c = 0;
  REQUIRE(read(ready[0], &c, 1) == 1);
  a.reset();  // the parent frees a ...
  std::vector<Routine> others;
  for (unsigned u : {2u, 4u, 1u, 8u}) {  // ... and builds others (unroll 1 again: a's very size)
    CopyParams q = small_params(u);
    q.loop_align = 16;
    others.push_back(build(q));
  }
  REQUIRE(write(go[1], "g", 1) == 1);
  int st = 0;
  REQUIRE(waitpid(pid, &st, 0) == pid);
  REQUIRE(WIFEXITED(st));
  CHECK_MESSAGE(WEXITSTATUS(st) == 0, "child exit status " << WEXITSTATUS(st)
                                                             << " (13: the parent's new code replaced the child's routine; 14: it copied wrong bytes)");
  for (int fd : {go[0], go[1], ready[0], ready[1]}) close(fd);
  for (const Routine& r : others) CHECK(copies(r.fn(), 777));
}

TEST_CASE("fork: the child frees inherited routines and builds its own; the parent's code is untouched") {
  std::optional<Routine> a = build(small_params(2));
  const std::vector<std::uint8_t> a_bytes = a->bytes();
  auto [rc, said] = in_child([&](std::string& s) {
    a.reset();  // frees the inherited routine in the child
    std::vector<Routine> mine;
    for (unsigned u : {2u, 2u, 4u}) {
      auto plan = make_plan(small_params(u), CpuInfo::host().features());
      auto r = Routine::build(*plan);
      if (!r) {
        s = r.error().message;
        return 11;
      }
      if (!copies(r->fn(), 500)) return 12;
      mine.push_back(std::move(r).value());
    }
    return 0;
  });
  CHECK_MESSAGE(rc == 0, said);
  CHECK(std::memcmp(a->entry(), a_bytes.data(), a_bytes.size()) == 0);
  CHECK(copies(a->fn(), 2049));
}

TEST_CASE("fd: a program spawned while the JIT maps code memory inherits no descriptor to it") {
  // In a forked child the first build maps new code memory (memory that existed at the fork is
  // never allocated from again), so the interposed mmap sees it whatever ran before.
  auto [rc, said] = in_child([](std::string& s) {
    g_watch = true;
    auto plan = make_plan(small_params(4), CpuInfo::host().features());
    auto r = Routine::build(*plan);
    g_watch = false;
    if (!r) {
      s = r.error().message;
      return 11;
    }
    s = "views=" + std::to_string(g_exec_views.load()) + " not_cloexec=" + std::to_string(g_not_cloexec) +
        "\n" + g_spawned_fds;
    return 0;
  });
  REQUIRE_MESSAGE(rc == 0, said);
  INFO(said);
  CHECK(said.rfind("views=", 0) == 0);
  CHECK(said.find("views=0 ") == std::string::npos);  // the executable view was made while watching
  CHECK(said.find("not_cloexec=0\n") != std::string::npos);
  CHECK(said.find("memfd:") == std::string::npos);  // the spawned ls saw no JIT memory file
  CHECK(said.find("total") != std::string::npos);  // ls ran
}

TEST_CASE("fd: a thread spawns programs while another builds routines; none inherits JIT memory") {
  // The situation as a program meets it (no interposition involved): a builder thread makes and
  // frees routines; each spawned ls lists its descriptors.
  auto [rc, said] = in_child([](std::string& s) {
    std::atomic<bool> stop{false};
    std::atomic<int> built{0};
    std::thread builder([&] {
      const unsigned unrolls[] = {1, 2, 4, 8};
      for (unsigned i = 0; !stop; ++i) {
        std::vector<Routine> batch;
        for (unsigned k = 0; k < 8; ++k) {
          auto plan = make_plan(small_params(unrolls[(i + k) % 4]), CpuInfo::host().features());
          if (!plan) continue;
          if (auto r = Routine::build(*plan)) batch.push_back(std::move(r).value());
          ++built;
        }
      }
    });
    for (int i = 0; i < 60; ++i) s += spawn_and_list_fds();
    stop = true;
    builder.join();
    s = "built=" + std::to_string(built.load()) + "\n" + s;
    return 0;
  });
  REQUIRE(rc == 0);
  CHECK(said.find("memfd:") == std::string::npos);
  CHECK(said.rfind("built=", 0) == 0);
}

namespace {
/// Appends "fallback=copies" when the process-wide memcpy (still glibc's where no routine could be
/// built) copies 300 bytes right, "fallback=WRONG" otherwise.
void say_fallback_copies(std::string& s) {
  char src[300], dst[300] = {};
  for (int i = 0; i < 300; ++i) src[i] = static_cast<char>(i);
  copysynth::memcpy(dst, src, sizeof src);
  s += std::string("fallback=") + (std::memcmp(dst, src, sizeof src) == 0 ? "copies" : "WRONG") + "\n";
}
}  // namespace

TEST_CASE("denied executable memory (seccomp): kJitUnavailable, not a verification failure; glibc's routines stay") {
  auto [rc, said] = in_child([](std::string& s) {
    // Refuse mmap, mprotect and pkey_mprotect with PROT_EXEC as SELinux deny_execmem does (EACCES).
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (!ctx) return 20;
    for (int nr : {SCMP_SYS(mmap), SCMP_SYS(mprotect), SCMP_SYS(pkey_mprotect)})
      if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), nr, 1, SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, PROT_EXEC)) != 0)
        return 21;
    if (seccomp_load(ctx) != 0) return 22;
    seccomp_release(ctx);

    auto r = make_routine(small_params(4));
    s += "make_routine=" + std::string(r ? "ok" : error_code_name(r.error().code)) + "\n";
    if (!r) s += "message=" + r.error().message + "\n";
    TuneOptions opt;
    opt.operation = Operation::kMemcpy;
    opt.quick = true;
    opt.budget_seconds = 1;
    auto t = tune_and_install(opt);
    s += "tune_and_install=" + std::string(t ? "ok" : error_code_name(t.error().code)) + "\n";
    const copysynth_status st = copysynth_tune(COPYSYNTH_OP_MEMCPY, 1.0);
    s += "copysynth_tune=" + std::string(copysynth_status_name(st)) + "\n";
    s += "c_message=" + std::string(copysynth_last_error()) + "\n";
    say_fallback_copies(s);
    return 0;
  });
  REQUIRE_MESSAGE(rc == 0, "child status " << rc << ": " << said);
  INFO(said);
  CHECK(said.find("make_routine=jit-unavailable\n") != std::string::npos);
  CHECK(said.find("executable memory") != std::string::npos);
  CHECK(said.find("Permission denied") != std::string::npos);  // the cause, EACCES
  CHECK(said.find("tune_and_install=jit-unavailable\n") != std::string::npos);
  CHECK(said.find("copysynth_tune=jit-unavailable\n") != std::string::npos);
  CHECK(said.find("c_message=the system denies executable memory") != std::string::npos);
  CHECK(said.find("bug") == std::string::npos);
  CHECK(said.find("fallback=copies\n") != std::string::npos);
}

// A filter that denies the mapping calls themselves with EPERM (a container's seccomp profile, or
// one denying shared anonymous memory) read as "is the address space exhausted?" (round 41
// mapped EPERM and EACCES from mmap and mremap to kJitUnavailable; untested until now).
TEST_CASE("denied mremap or shared mmap (seccomp, EPERM): kJitUnavailable naming the call") {
  struct Case {
    const char* call;
    bool mremap;
  };
  for (const Case c : {Case{"mremap", true}, Case{"mmap", false}}) {
    CAPTURE(c.call);
    static bool deny_mremap;
    deny_mremap = c.mremap;
    auto [rc, said] = in_child([](std::string& s) {
      scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
      if (!ctx) return 20;
      // mremap altogether (glibc's realloc falls back to copying); mmap only with MAP_SHARED,
      // which malloc never asks for.
      const int added = deny_mremap ? seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(mremap), 0)
                                    : seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(mmap), 1,
                                                       SCMP_A3(SCMP_CMP_MASKED_EQ, MAP_SHARED, MAP_SHARED));
      if (added != 0) return 21;
      if (seccomp_load(ctx) != 0) return 22;
      seccomp_release(ctx);
      auto r = make_routine(small_params(4));
      s += "make_routine=" + std::string(r ? "ok" : error_code_name(r.error().code)) + "\n";
      if (!r) s += "message=" + r.error().message + "\n";
      say_fallback_copies(s);
      return 0;
    });
    REQUIRE_MESSAGE(rc == 0, "child status " << rc << ": " << said);
    INFO(said);
    CHECK(said.find("make_routine=jit-unavailable\n") != std::string::npos);
    CHECK(said.find(c.mremap ? "mremap duplicating it" : "mmap of the writable view") != std::string::npos);
    CHECK(said.find("Operation not permitted") != std::string::npos);  // the cause, EPERM
    CHECK(said.find("exhausted") == std::string::npos);
    CHECK(said.find("fallback=copies\n") != std::string::npos);
  }
}

TEST_CASE("env_word_on / env_word_off: the words COPYSYNTH_PERF_MAP and COPYSYNTH_PRELOAD_STATS share") {
  for (const char* w : {"1", "yes", "true", "on", "YES", "True", "oN"}) {
    CHECK_MESSAGE(env_word_on(w), w);
    CHECK_MESSAGE(!env_word_off(w), w);
  }
  for (const char* w : {"0", "no", "false", "off", "NO", "False", "OFF"}) {
    CHECK_MESSAGE(env_word_off(w), w);
    CHECK_MESSAGE(!env_word_on(w), w);
  }
  for (const char* w : {"", "2", "y", "enable", "on ", "stderr", "/tmp/x"}) {
    CHECK_MESSAGE(!env_word_on(w), w);
    CHECK_MESSAGE(!env_word_off(w), w);
  }
}

TEST_CASE("perf map: COPYSYNTH_PERF_MAP=1 appends START SIZE name for each routine to /tmp/perf-PID.map") {
  auto [rc, said] = in_child([](std::string& s) {
    const std::string path = "/tmp/perf-" + std::to_string(getpid()) + ".map";
    unlink(path.c_str());
    auto plan = make_plan(small_params(2), CpuInfo::host().features());
    auto before = Routine::build(*plan);  // variable unset: nothing written
    if (!before) return 11;
    if (access(path.c_str(), F_OK) == 0) return 12;
    setenv("COPYSYNTH_PERF_MAP", "1", 1);
    auto r = make_routine(small_params(8));
    if (!r) return 13;
    char want[128];
    std::snprintf(want, sizeof want, "%lx %zx copysynth:%s", reinterpret_cast<unsigned long>(r->entry()), r->size(),
                  r->name().c_str());
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    unlink(path.c_str());
    // perf uses the map only for executable memory it takes for anonymous ("//anon",
    // "/dev/zero..."): the mapping that holds the routine, as /proc/self/maps names it.
    std::string where = "(not found)";
    std::ifstream maps("/proc/self/maps");
    const auto at = reinterpret_cast<std::uintptr_t>(r->entry());
    for (std::string line; std::getline(maps, line);) {
      unsigned long lo = 0, hi = 0;
      if (std::sscanf(line.c_str(), "%lx-%lx", &lo, &hi) == 2 && at >= lo && at < hi) {
        const auto slash = line.find('/');
        where = slash == std::string::npos ? "" : line.substr(slash);
      }
    }
    s = std::string(want) + "\nmapping=" + where + "\n--- map:\n" + text.str();
    return 0;
  });
  REQUIRE(rc == 0);
  const std::string want = said.substr(0, said.find('\n'));
  const std::string map = said.substr(said.find("--- map:\n") + 9);
  INFO(said);
  // Anonymous to perf: a memfd ("/memfd:NAME (deleted)") would be taken for a file.
  CHECK((said.find("\nmapping=/dev/zero (deleted)\n") != std::string::npos ||
         said.find("\nmapping=\n") != std::string::npos));
  CHECK(map.find(want + "\n") != std::string::npos);  // the routine returned, exactly
  // Every line is "HEX HEX copysynth:NAME".
  std::istringstream lines(map);
  int n = 0;
  for (std::string line; std::getline(lines, line); ++n) {
    unsigned long start = 0, size = 0;
    char name[256] = {};
    CHECK_MESSAGE(std::sscanf(line.c_str(), "%lx %lx %255s", &start, &size, name) == 3, line);
    CHECK(start != 0);
    CHECK(size > 0);
    CHECK(std::strncmp(name, "copysynth:", 10) == 0);
  }
  CHECK(n >= 1);
}
