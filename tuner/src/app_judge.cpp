// copysynth — the program is the judge (see app_judge.hpp).
#include "copysynth/app_judge.hpp"
#include "copysynth/interrupt.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "copysynth/c_format.hpp"
#include "copysynth/library_writer.hpp"
#include "copysynth/peers.hpp"
#include "copysynth/stats.hpp"

extern char** environ;

namespace copysynth {

std::string app_op_name(Operation op) {
  return op == Operation::kClearPage ? std::string(name_of(op)) : std::string(libc_name(op));
}

std::string app_candidate_name(const std::vector<Operation>& ops, const std::vector<Operation>& all_ops) {
  if (ops.size() > 1 && ops.size() == all_ops.size()) return "all";
  std::string name;
  for (Operation op : ops) {
    if (!name.empty()) name += '+';
    name += app_op_name(op);
  }
  return name;
}

std::vector<Operation> AppJudgement::kept() const {
  std::vector<Operation> ops;
  for (const auto& v : verdicts)
    if (v.kept) ops.push_back(v.op);
  return ops;
}

Result<std::vector<AppConfigSummary>> summarize_app_times(const std::vector<std::string>& names, const AppTimes& t) {
  if (t.ms.empty()) return make_error(ErrorCode::kInvalidArgument, "no rounds were timed");
  for (std::size_t r = 0; r < t.ms.size(); ++r) {
    if (t.ms[r].size() != names.size())
      return make_error(ErrorCode::kInvalidArgument, "round " + std::to_string(r + 1) + " has " +
                                                         std::to_string(t.ms[r].size()) + " times for " +
                                                         std::to_string(names.size()) + " configurations");
    for (double x : t.ms[r])
      if (!std::isfinite(x) || x <= 0)
        return make_error(ErrorCode::kInvalidArgument,
                          "round " + std::to_string(r + 1) + " has a wall time that is not > 0 ms: " + format_c("%g", x));
  }
  std::vector<AppConfigSummary> out;
  for (std::size_t c = 0; c < names.size(); ++c) {
    std::vector<double> times, ratios;
    for (const auto& round : t.ms) {
      times.push_back(round[c]);
      ratios.push_back(round[c] / round[0]);
    }
    AppConfigSummary s;
    s.name = names[c];
    s.median_ms = median(times);
    s.ratio = c == 0 ? 1.0 : median(ratios);
    s.spread = c == 0 ? 0.0 : mad(ratios);
    out.push_back(s);
  }
  return out;
}

AppCall app_call(double ratio, double spread) {
  // "Never slower" with the spread on the program's side: a candidate the rounds cannot tell from
  // glibc's (ratio 0.99 with a spread of 0.02) is as likely to be slower next time as faster
  // (bench-preload's 11 rounds of the same two configurations differ by 1-2 % on a 2-core VM).
  if (ratio + spread <= 1.0) return AppCall::kNotSlower;
  if (ratio <= 1.0) return AppCall::kNotClearlyFaster;
  return ratio <= 1.0 + spread ? AppCall::kWithinSpread : AppCall::kSlower;
}

namespace {

std::string ratio_text(double ratio, double spread) { return format_c("%.3f ± %.3f", ratio, spread); }

/// The verdict of one operation from its candidate's summary.
std::string call_text(Operation op, double ratio, double spread) {
  const std::string r = ratio_text(ratio, spread) + ": ";
  switch (app_call(ratio, spread)) {
    case AppCall::kNotSlower:
      return r + (ratio < 1.0 ? "faster" : "not slower") + ": the tuned " + app_op_name(op) + " is kept";
    case AppCall::kNotClearlyFaster:
      return r + "faster by less than the spread: the " + baseline_name(op) + " is kept";
    case AppCall::kWithinSpread:
      return r + "within the spread but not faster: the " + baseline_name(op) + " is kept";
    case AppCall::kSlower: break;
  }
  return r + "slower: the " + baseline_name(op) + " is kept";
}

}  // namespace

Result<AppJudgement> judge_app(const std::vector<Operation>& ops, const AppMeasure& measure) {
  if (ops.empty()) return make_error(ErrorCode::kInvalidArgument, "no operation to judge (memcpy, memmove or fill)");
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i] == Operation::kClearPage)
      return make_error(ErrorCode::kInvalidArgument,
                        "clear_page has no C library routine a program calls; judge memcpy, memmove and fill");
    if (std::find(ops.begin(), ops.begin() + i, ops[i]) != ops.begin() + i)
      return make_error(ErrorCode::kInvalidArgument, app_op_name(ops[i]) + " is given twice");
  }
  AppJudgement j;
  for (Operation op : ops) j.candidates.push_back({app_op_name(op), {op}});
  if (ops.size() > 1) j.candidates.push_back({app_candidate_name(ops, ops), ops});
  auto times = measure(j.candidates);
  if (!times) return times.error();
  std::vector<std::string> names{"glibc"};
  for (const auto& c : j.candidates) names.push_back(c.name);
  auto table = summarize_app_times(names, *times);
  if (!table) return table.error();
  j.table = std::move(table).value();
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const AppConfigSummary& s = j.table[1 + i];
    AppOpVerdict v;
    v.op = ops[i];
    v.glibc_ms = j.table[0].median_ms;
    v.tuned_ms = s.median_ms;
    v.ratio = s.ratio;
    v.spread = s.spread;
    v.kept = app_call(s.ratio, s.spread) == AppCall::kNotSlower;
    v.why = call_text(ops[i], s.ratio, s.spread);
    j.verdicts.push_back(v);
  }
  // The combination: kept operations together must not be slower either; drop the worst alone
  // until they are not (one operation left: its own verdict stands).
  for (std::vector<Operation> kept = j.kept(); kept.size() > 1; kept = j.kept()) {
    AppCombination c;
    c.candidate = {app_candidate_name(kept, ops), kept};
    if (kept.size() == ops.size()) {
      c.summary = j.table.back();  // the "all" candidate of the first rounds
      c.glibc_ms = j.table[0].median_ms;
    } else {
      auto extra = measure({c.candidate});
      if (!extra) return extra.error();
      auto s = summarize_app_times({"glibc", c.candidate.name}, *extra);
      if (!s) return s.error();
      c.summary = (*s)[1];
      c.glibc_ms = (*s)[0].median_ms;
      c.extra_rounds = true;
    }
    if (app_call(c.summary.ratio, c.summary.spread) == AppCall::kNotSlower) {
      c.note = "not slower together: kept";
      j.combinations.push_back(c);
      break;
    }
    AppOpVerdict* worst = nullptr;
    for (auto& v : j.verdicts)
      if (v.kept && (!worst || v.ratio > worst->ratio)) worst = &v;
    worst->kept = false;
    worst->why = ratio_text(worst->ratio, worst->spread) + ": not slower alone, but " + c.candidate.name +
                 " together " + ratio_text(c.summary.ratio, c.summary.spread) +
                 ", and this the worst alone: the " + baseline_name(worst->op) + " is kept";
    c.note = "slower together: " + app_op_name(worst->op) + " (the worst alone, " + format_c("%.3f", worst->ratio) +
             ") dropped";
    j.combinations.push_back(c);
  }
  return j;
}

Wisdom apply_app_verdicts(Wisdom w, const AppJudgement& j, const AppVerdictInfo& info) {
  for (const auto& v : j.verdicts) {
    if (!v.kept) std::erase_if(w.entries, [&](const WisdomEntry& e) { return e.operation == v.op; });
    AppVerdict a;
    a.operation = v.op;
    a.command = info.command;
    a.runs = info.runs;
    a.with = info.with;
    a.glibc_ms = v.glibc_ms;
    a.tuned_ms = v.tuned_ms;
    a.ratio = v.ratio;
    a.spread = v.spread;
    a.kept = v.kept;
    a.date = info.date;
    std::erase_if(w.app_verdicts, [&](const AppVerdict& x) { return x.operation == v.op; });
    w.app_verdicts.push_back(a);
  }
  return w;
}

std::string format_app_table(const AppJudgement& j, const std::string& command, unsigned runs, const std::string& with) {
  std::string out = "app: " + command + "\n" + std::to_string(runs) + " rounds; candidates: " +
                    (with == "shim" ? "the LD_PRELOAD shim (libcopysynth-preload.so)" : "the library (libcopysynth-tuned.so)") +
                    "; ratio = median over rounds of candidate / glibc in the same round (< 1 faster), spread = its MAD\n";
  out += format_c("%-16s %10s %7s %8s  %s\n", "configuration", "median ms", "ratio", "spread", "verdict");
  for (std::size_t i = 0; i < j.table.size(); ++i) {
    const AppConfigSummary& s = j.table[i];
    std::string verdict;
    if (i == 0) verdict = "the system routines (no preload)";
    else if (i - 1 < j.verdicts.size()) {
      const AppOpVerdict& v = j.verdicts[i - 1];
      const std::string& w = v.why;
      const auto colon = w.find(": ");
      verdict = colon == std::string::npos ? w : w.substr(colon + 2);  // the ratio is in its columns
    } else verdict = "all operations together";
    out += i == 0 ? format_c("%-16s %10.2f %7s %8s  %s\n", s.name.c_str(), s.median_ms, "1.000", "-", verdict.c_str())
                  : format_c("%-16s %10.2f %7.3f %8s  %s\n", s.name.c_str(), s.median_ms, s.ratio,
                             format_c("±%.3f", s.spread).c_str(), verdict.c_str());
  }
  for (const auto& c : j.combinations)
    out += "combination " + c.candidate.name + ": " + ratio_text(c.summary.ratio, c.summary.spread) +
           (c.extra_rounds ? format_c(" (extra rounds: glibc %.2f ms, %s %.2f ms)", c.glibc_ms, c.candidate.name.c_str(),
                                      c.summary.median_ms)
                           : std::string(" (the rounds above)")) +
           ": " + c.note + "\n";
  std::string kept, system;
  for (const auto& v : j.verdicts) (v.kept ? kept : system) += (v.kept ? (kept.empty() ? "" : ", ") : (system.empty() ? "" : ", ")) + app_op_name(v.op);
  out += "tuned: " + (kept.empty() ? std::string("none") : kept) + "; system: " + (system.empty() ? std::string("none") : system) + "\n";
  return out;
}

// ----- running the program -------------------------------------------------------------------------

std::string describe_wait_status(int st) {
  if (WIFEXITED(st)) return "exited with status " + std::to_string(WEXITSTATUS(st));
  if (WIFSIGNALED(st))
    return "was killed by signal " + std::to_string(WTERMSIG(st)) + " (" + strsignal(WTERMSIG(st)) + ")";
  return "ended with wait status " + std::to_string(st);
}

namespace {

/// Writes `n` bytes to fd 2 (--app-output); a failed write loses that output, nothing else. Once
/// a stop signal is noted nothing more is written: a write it interrupted (stderr a pipe nobody
/// reads; a short count when some bytes had gone) is not retried, and no new one starts.
void copy_to_stderr(const char* p, std::size_t n) {
  while (n > 0 && !stop_noted()) {
    const ssize_t k = ::write(2, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return;
    p += k;
    n -= static_cast<std::size_t>(k);
  }
}

}  // namespace

namespace {

/// SIGKILL to the process group of `pid` (the shell, its leader), only while the shell has exited
/// and is not reaped yet: then the group's id cannot have been given to another process. A
/// caller whose SIGCHLD is ignored (SA_NOCLDWAIT) has its children reaped at once: nothing is
/// killed then rather than a group that may be another's.
void kill_group_while_unreaped(pid_t pid) {
  siginfo_t info{};
  if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT | WNOHANG) == 0 && info.si_pid == pid)
    ::kill(-pid, SIGKILL);
}

}  // namespace

Result<AppRun> run_app_once(const std::string& command, const std::vector<std::string>& env, bool show_output) {
  std::vector<std::string> vars;
  for (char** e = environ; e && *e; ++e) {
    const std::string v = *e;
    // Every COPYSYNTH_ variable: the user's COPYSYNTH_PRELOAD_VERIFY or COPYSYNTH_PROFILE would
    // reach the shim's candidates (verifying or recording in every timed run) and not glibc's.
    if (v.rfind("LD_PRELOAD=", 0) == 0 || v.rfind("COPYSYNTH_", 0) == 0) continue;
    vars.push_back(v);
  }
  std::vector<char*> envp;
  for (auto& v : vars) envp.push_back(v.data());
  envp.push_back(nullptr);
  // The configuration's variables are exported by the shell, not given to it: the shell runs
  // without the preload and every program it starts has it (as tools/bench-preload.sh's
  // `sh -c "exec env VAR=... PROGRAM"`), so the shell's own start-up is not in the ratio.
  std::string cmd;
  for (const auto& v : env) {
    const auto eq = v.find('=');
    std::string quoted = "'";
    for (char ch : v.substr(eq + 1)) quoted += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    cmd += (cmd.empty() ? "export " : " ") + v.substr(0, eq) + "=" + quoted + "'";
  }
  if (!cmd.empty()) cmd += "\n";
  cmd += command;
  std::string sh = "/bin/sh", dash_c = "-c";
  char* argv[] = {sh.data(), dash_c.data(), cmd.data(), nullptr};

  AppRun run;
  // The stderr tail's whole room, before the pipes are made and the child is registered:
  // appending one read to it then never allocates, so no bad_alloc leaves the child registered
  // and the pipes open.
  char buf[65536];
  constexpr std::size_t kTail = 2000;
  run.stderr_tail.reserve(kTail + sizeof buf);
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return make_error(ErrorCode::kSystem, std::string("pipe: ") + std::strerror(errno));
  if (::pipe2(err, O_CLOEXEC) != 0) {
    const int e = errno;
    ::close(out[0]);
    ::close(out[1]);
    return make_error(ErrorCode::kSystem, std::string("pipe: ") + std::strerror(e));
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  timespec t0{}, t1{};
  ::clock_gettime(CLOCK_MONOTONIC, &t0);
  // A session (and so a process group) of its own, so that an interrupt passed on
  // (interrupt.hpp) ends whatever the command started too. Its stdin is /dev/null and its output
  // pipes; with no controlling terminal, a command that opens /dev/tty (a password prompt) fails
  // at once instead of stopping as a background job would, with autotune waiting for it for ever.
  // None starts after an interrupt noted between two runs (interrupt.hpp: StopsDeferred).
  pid_t pid = 0;
  const int rc = spawn_waited_child(&pid, "/bin/sh", false, &fa, argv, envp.data(), /*new_session=*/true);
  posix_spawn_file_actions_destroy(&fa);
  if (rc < 0) {
    for (int fd : {out[0], out[1], err[0], err[1]}) ::close(fd);
    throw_if_stopped();
  }
  ::close(out[1]);
  ::close(err[1]);
  if (rc != 0) {
    ::close(out[0]);
    ::close(err[0]);
    return make_error(ErrorCode::kSystem, std::string("cannot run /bin/sh: ") + std::strerror(rc));
  }
  std::uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a 64, as fnv1a64 (wisdom.hpp), over the stream
  // The shell's exit is watched beside the pipes (a pidfd, readable once it has exited): a
  // background job that keeps the command's output open (`sleep 7 &`) held the pipes, and so the
  // run and its time, until it ended. The run ends when the shell does: what the command left in
  // its group is then killed (kill_group_while_unreaped) and the pipes drained, for at most
  // kDrainMs: a process that left the group (`setsid`) and keeps them open is not read further.
  // Without pidfd_open (Linux < 5.3, or a seccomp filter denying it) the pipes' end is waited
  // for, and the time runs until then.
  constexpr int kDrainMs = 2000;
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  bool exited = false;
  pollfd fds[3] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}, {pidfd, POLLIN, 0}};
  for (int open = 2; open > 0;) {
    int wait_ms = -1;
    if (exited) {
      timespec now{};
      ::clock_gettime(CLOCK_MONOTONIC, &now);
      const double since = (now.tv_sec - t1.tv_sec) * 1e3 + (now.tv_nsec - t1.tv_nsec) / 1e6;
      // Whatever poll would say: writers that keep the pipe full would hold the loop otherwise;
      // and a stop signal, passed on to a group that is gone, ends nothing else.
      if (since >= kDrainMs || stop_noted()) {
        run.output_left_open = since >= kDrainMs;
        break;
      }
      wait_ms = static_cast<int>(kDrainMs - since) + 1;
    }
    const int ready = ::poll(fds, 3, wait_ms);
    if (ready < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (ready == 0) {  // kDrainMs after the shell's exit, still open: a process outside the group
      run.output_left_open = true;
      break;
    }
    if (fds[2].fd >= 0 && (fds[2].revents & (POLLIN | POLLHUP | POLLERR))) {
      ::clock_gettime(CLOCK_MONOTONIC, &t1);
      exited = true;
      fds[2].fd = -1;
      kill_group_while_unreaped(pid);
    }
    for (int k = 0; k < 2; ++k) {
      if (fds[k].fd < 0 || !(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = ::read(fds[k].fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        ::close(fds[k].fd);
        fds[k].fd = -1;
        --open;
        continue;
      }
      if (k == 0)
        for (ssize_t i = 0; i < n; ++i) {
          h ^= static_cast<unsigned char>(buf[i]);
          h *= 0x100000001b3ull;
        }
      else {
        run.stderr_tail.append(buf, static_cast<std::size_t>(n));
        if (run.stderr_tail.size() > kTail) run.stderr_tail.erase(0, run.stderr_tail.size() - kTail);
      }
      if (show_output) copy_to_stderr(buf, static_cast<std::size_t>(n));
    }
  }
  for (int k = 0; k < 2; ++k)
    if (fds[k].fd >= 0) ::close(fds[k].fd);
  if (pidfd >= 0) ::close(pidfd);
  // What the command left running in its process group (`sleep 7 >/dev/null &`) would run on
  // into the next timed runs: ended once the shell has exited but before it is reaped, so that
  // its pid (the group's id) cannot have been given to another process (a process that made a
  // session of its own is not reached).
  siginfo_t info{};
  while (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
  }
  if (!exited) ::clock_gettime(CLOCK_MONOTONIC, &t1);
  kill_group_while_unreaped(pid);
  int st = 0;
  pid_t waited = 0;
  while ((waited = ::waitpid(pid, &st, 0)) < 0 && errno == EINTR) {
  }
  const int wait_errno = waited < 0 ? errno : 0;
  set_waited_child(0);
  throw_if_stopped();
  // SIGCHLD ignored (SA_NOCLDWAIT) reaps the shell at once: its status is gone, and 0 would read
  // as success (autotune sets SIGCHLD to its default at start; a library caller may not).
  if (wait_errno != 0)
    return make_error(ErrorCode::kSystem, std::string("cannot get the exit status of /bin/sh: ") +
                                              std::strerror(wait_errno) +
                                              (wait_errno == ECHILD ? " (is SIGCHLD ignored? set it to SIG_DFL)" : ""));
  run.ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
  run.wait_status = st;
  run.stdout_hash = h;
  return run;
}

namespace {

/// The last lines of a command's stderr, indented, for an error message ("" when it wrote none).
std::string stderr_lines(const std::string& tail) {
  std::vector<std::string> lines;
  for (std::size_t p = 0; p < tail.size();) {
    const std::size_t e = std::min(tail.find('\n', p), tail.size());
    if (e > p) lines.push_back(tail.substr(p, e - p));
    p = e + 1;
  }
  if (lines.empty()) return "";
  std::string out = "; its stderr ended with:";
  for (std::size_t i = lines.size() > 5 ? lines.size() - 5 : 0; i < lines.size(); ++i) out += "\n  " + lines[i];
  return out;
}

}  // namespace

namespace {

/// The error for a command that fails with the system routines: the command is to fix.
Error command_fails(const std::string& command, const AppRun& r, const std::string& description) {
  return make_error(ErrorCode::kInvalidArgument,
                    "the command `" + command + "` " + describe_wait_status(r.wait_status) + " with " + description +
                        "; --app needs a command that succeeds (exit status 0): fix it first" +
                        stderr_lines(r.stderr_tail));
}

}  // namespace

bool AppRun::succeeded() const { return WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0; }

Result<std::vector<std::string>> check_command_loads(const std::string& command, const AppConfig& cfg,
                                                     const std::string& dir, AppRun* run) {
  namespace fs = std::filesystem;
  // ld.so names the object as LD_PRELOAD gives it, "file=PATH [0];  needed by PROGRAM [0]" before
  // it opens it (a file it then cannot load shows that line too) and "file=PATH [0];  generating
  // link map" once it has: the second is the one that counts.
  std::string preload_path;
  for (const auto& v : cfg.env)
    if (v.rfind("LD_PRELOAD=", 0) == 0) preload_path = v.substr(11);
  if (preload_path.empty())
    return make_error(ErrorCode::kInvalidArgument,
                      "check_command_loads: the configuration sets no LD_PRELOAD, so no program can load it");
  const std::string preload = "file=" + preload_path + " [";
  std::error_code ec;
  const fs::path out = fs::path(dir) / "ld-debug";
  fs::create_directories(out, ec);
  if (ec) return make_error(ErrorCode::kSystem, "cannot make " + out.string() + ": " + ec.message());

  std::vector<std::string> env = cfg.env;
  env.push_back("LD_DEBUG=files");  // ld.so writes OUT.PID for each program it starts
  env.push_back("LD_DEBUG_OUTPUT=" + (out / "ld").string());
  auto r = run_app_once(command, env, false);
  if (!r) {
    fs::remove_all(out, ec);
    return r.error();
  }
  if (run) *run = *r;
  // Each file holds the programs one process ran, each ending "transferring control: PROGRAM".
  std::vector<std::string> without;
  bool any = false;
  for (const auto& f : fs::directory_iterator(out, ec)) {
    std::ifstream in(f.path());
    std::string line;
    bool loaded = false;
    while (std::getline(in, line)) {
      if (line.find(preload) != std::string::npos &&
          line.find("generating link map") != std::string::npos)
        loaded = true;
      if (const auto at = line.find("transferring control: "); at != std::string::npos) {
        const std::string program = line.substr(at + 22);
        if (loaded) any = true;
        else if (without.size() < 5 && std::find(without.begin(), without.end(), program) == without.end())
          without.push_back(program);
        loaded = false;
      }
    }
  }
  fs::remove_all(out, ec);
  if (!any)
    return make_error(ErrorCode::kInvalidArgument,
                      "the command `" + command + "` started no program that loaded its LD_PRELOAD object " + preload_path + " (" +
                          cfg.name + "): shell builtins (`:`, `true`), static or set-user-ID programs, and "
                          "programs started with LD_PRELOAD cleared run the system routines under every "
                          "configuration, so its time cannot judge the tuned ones; give a command that runs the "
                          "dynamically linked program to judge them with");
  return without;
}

Status check_app_command(const AppRoundsOptions& opt, AppRun* run) {
  auto r = run_app_once(opt.command, {}, opt.show_output);
  if (!r) return r.error();
  if (!r->succeeded()) return command_fails(opt.command, *r, "the system routines (no preload)");
  if (run) *run = *r;
  return {};
}

Result<AppTimes> time_app_rounds(const std::vector<AppConfig>& configs, const AppRoundsOptions& opt) {
  if (configs.empty() || !configs[0].env.empty())
    return make_error(ErrorCode::kInvalidArgument, "the first configuration must be glibc's (no variables)");
  if (opt.runs < 1) return make_error(ErrorCode::kInvalidArgument, "--runs must be at least 1");
  const std::size_t k = configs.size();
  std::uint64_t glibc_hash = 0;
  bool said_left_open = false;
  // One run of configuration c, checked: exit status 0 and glibc's output.
  auto run = [&](std::size_t c) -> Result<double> {
    auto r = run_app_once(opt.command, configs[c].env, opt.show_output);
    if (!r) return r.error();
    if (r->output_left_open && !said_left_open && opt.progress) {
      said_left_open = true;
      opt.progress("app: a process the command started outside its process group (setsid, a daemon) kept its "
                   "output open after the shell exited; it is not killed, and its output 2 s after the exit "
                   "is not read (its time is not counted)");
    }
    const bool ok = r->succeeded();
    if (!ok && c == 0) return command_fails(opt.command, *r, configs[0].description);
    if (!ok)
      return make_error(ErrorCode::kVerifyFailed,
                        "the command `" + opt.command + "` " + describe_wait_status(r->wait_status) + " with " +
                            configs[c].description + " (" + configs[c].name + ") but succeeds with " +
                            configs[0].description +
                            "; a tuned routine that changes what a program does is never kept: nothing is written; "
                            "please report it with the wisdom file" +
                            stderr_lines(r->stderr_tail));
    if (c == 0) glibc_hash = r->stdout_hash;
    else if (r->stdout_hash != glibc_hash)
      return make_error(ErrorCode::kVerifyFailed,
                        "the command `" + opt.command + "` wrote other output with " + configs[c].description + " (" +
                            configs[c].name + ") than with " + configs[0].description + " (stdout FNV-1a " +
                            format_c("%016llx", static_cast<unsigned long long>(r->stdout_hash)) + " vs " +
                            format_c("%016llx", static_cast<unsigned long long>(glibc_hash)) +
                            "); nothing is written. If the command's output is not the same from run to run (times, "
                            "random numbers, addresses), send it to /dev/null in the command; otherwise a tuned "
                            "routine changed what the program does: please report it with the wisdom file");
    return r->ms;
  };
  for (std::size_t c = 0; c < k; ++c) {  // warm-up (page cache, the shell, the libraries), checked too
    auto t = run(c);
    if (!t) return t.error();
  }
  if (opt.progress) opt.progress("app: warm-up done (" + std::to_string(k) + " configurations); timing " + std::to_string(opt.runs) + " rounds");
  AppTimes times;
  for (unsigned i = 0; i < opt.runs; ++i) {
    std::vector<double> round(k, 0);
    for (std::size_t m = 0; m < k; ++m) {  // the order rotates each round against drift
      const std::size_t c = (i + m) % k;
      auto t = run(c);
      if (!t) return t.error();
      round[c] = *t;
    }
    if (opt.progress) {
      std::string line = "app: round " + std::to_string(i + 1) + "/" + std::to_string(opt.runs) + ":";
      for (std::size_t c = 0; c < k; ++c) line += " " + configs[c].name + format_c(" %.1f ms", round[c]) + (c + 1 < k ? "," : "");
      opt.progress(line);
    }
    times.ms.push_back(std::move(round));
  }
  return times;
}

Result<std::string> find_preload_shim(const std::string& explicit_path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!explicit_path.empty()) {
    if (fs::is_regular_file(explicit_path, ec)) return fs::absolute(explicit_path, ec).string();
    return make_error(ErrorCode::kInvalidArgument,
                      "--shim " + explicit_path + ": no such file; name libcopysynth-preload.so (built in "
                      "BUILD/api/, installed in lib/<multiarch>/)");
  }
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  std::vector<fs::path> places;
  if (!ec) {
    const fs::path bin = exe.parent_path();
    places = {bin / ".." / "api", bin / ".." / "lib" / "x86_64-linux-gnu", bin / ".." / "lib64", bin / ".." / "lib"};
  }
  std::string looked;
  for (const auto& p : places) {
    const fs::path f = (p / "libcopysynth-preload.so").lexically_normal();
    if (fs::is_regular_file(f, ec)) return f.string();
    looked += (looked.empty() ? "" : ", ") + f.string();
  }
  return make_error(ErrorCode::kInvalidArgument,
                    "--app-with shim: libcopysynth-preload.so not found (looked at " + (looked.empty() ? "nothing: /proc/self/exe is unreadable" : looked) +
                        "); build it (cmake --build BUILD --target copysynth_preload), name it with --shim PATH, "
                        "or use --app-with lib");
}

Result<AppConfig> prepare_app_candidate(const Wisdom& w, const AppCandidate& c, const AppSetup& setup, const CpuInfo& cpu) {
  namespace fs = std::filesystem;
  Wisdom sub = w;
  sub.app_verdicts.clear();
  std::erase_if(sub.entries, [&](const WisdomEntry& e) {
    return std::find(c.ops.begin(), c.ops.end(), e.operation) == c.ops.end();
  });
  if (sub.entries.size() != c.ops.size())
    return make_error(ErrorCode::kWisdomMismatch, "the wisdom has no entry for every operation of " + c.name);
  std::string what;
  for (Operation op : c.ops) what += (what.empty() ? "" : ", ") + app_op_name(op);
  AppConfig cfg;
  cfg.name = c.name;
  // ld.so splits LD_PRELOAD at spaces and colons: a path holding one would not be loaded, and the
  // program, running glibc's routines, would be judged as the candidate (a hostile-user test:
  // TMPDIR="/tmp/sp ace" kept every operation).
  const std::string preload =
      setup.with == "shim" ? setup.shim_path : (fs::path(setup.dir) / c.name / kTunedLibraryShared).string();
  if (preload.find_first_of(" :\t\n") != std::string::npos)
    return make_error(ErrorCode::kSystem,
                      "--app: the preloaded object's path \"" + preload +
                          "\" holds a space or ':', at which ld.so splits LD_PRELOAD, so it would not be loaded; " +
                          (setup.with == "shim" ? std::string("move the shim (or give --shim another path)")
                                                : std::string("set TMPDIR to a directory whose path has neither")));
  if (setup.with == "shim") {
    const std::string path = (fs::path(setup.dir) / (c.name + ".json")).string();
    COPYSYNTH_TRY(save_wisdom(sub, path));
    cfg.env = {"LD_PRELOAD=" + setup.shim_path, "COPYSYNTH_WISDOM=" + path};
    cfg.description = "the tuned " + what + " (libcopysynth-preload.so)";
    std::vector<std::string> check = cfg.env;
    check.push_back("COPYSYNTH_PRELOAD_STATS=1");
    auto r = run_app_once("/bin/true", check, false);  // a program: the shell's builtin would not load the shim
    if (!r) return r.error();
    if (r->stderr_tail.find("installed from") == std::string::npos)
      return make_error(ErrorCode::kVerifyFailed, "the shim " + setup.shim_path + " did not install " + path +
                                                      " (so the program would run glibc's routines): " +
                                                      (r->stderr_tail.empty() ? std::string("it said nothing") : r->stderr_tail));
  } else {
    LibraryOptions lo;
    lo.dir = (fs::path(setup.dir) / c.name).string();
    lo.wisdom_path = setup.wisdom_path;
    lo.command = "autotune --app (candidate " + c.name + ")";
    lo.progress = {};
    lo.verify = VerifyOptions::startup();  // a library only timed here, never deployed: the shim's start-up check
    auto lib = write_tuned_library(sub, lo, cpu);
    if (!lib) return lib.error();
    cfg.env = {"LD_PRELOAD=" + preload};
    cfg.description = "the tuned " + what + " (libcopysynth-tuned.so)";
    // As the shim's check: a program started the way the command's are maps the library. The
    // kernel names the file by its resolved path (the link's target, through any linked
    // directory), so that is what is looked for; grep by its path, not the user's PATH.
    std::error_code ec;
    const fs::path mapped = fs::canonical(preload, ec);
    std::vector<std::string> check = cfg.env;
    check.push_back("COPYSYNTH_APP_PRELOAD=" + (ec ? preload : mapped.string()));
    auto r = run_app_once("exec /bin/grep -qF -- \"$COPYSYNTH_APP_PRELOAD\" /proc/self/maps", check, false);
    if (!r) return r.error();
    if (!r->succeeded())
      return make_error(ErrorCode::kVerifyFailed, "the library " + preload +
                                                      " was not loaded by a program under LD_PRELOAD (so the program "
                                                      "would run glibc's routines): " +
                                                      (r->stderr_tail.empty() ? std::string("it said nothing") : r->stderr_tail));
  }
  if (setup.progress) setup.progress("app: candidate " + c.name + " ready (" + cfg.description + ")");
  return cfg;
}

}  // namespace copysynth
