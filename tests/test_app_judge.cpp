// Tests of the program-is-the-judge rules (app_judge.hpp) on synthetic tables of wall times: the
// statistics, the verdict per operation, the combination rule and what the wisdom keeps; and one
// real run of /bin/sh for the runner's exit status and output checks; and how autotune's stop
// signals are passed on, noted or acted on (interrupt.hpp), each in a child process.
#include <dlfcn.h>
#include <doctest/doctest.h>
#include <gnu/libc-version.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "copysynth/app_judge.hpp"
#include "copysynth/cpu.hpp"
#include "copysynth/interrupt.hpp"

using namespace copysynth;

namespace {

constexpr Operation kCpy = Operation::kMemcpy, kMove = Operation::kMemmove, kSet = Operation::kFill;

/// A table of `rounds` rounds: glibc 100 ms and candidate i at 100 * ratios[i] ms, with a +-1 ms
/// wobble alternating by round on glibc so that the spread is not zero.
AppTimes table_of(const std::vector<double>& ratios, int rounds = 5) {
  AppTimes t;
  for (int r = 0; r < rounds; ++r) {
    const double g = 100.0 + (r % 2 ? 0.5 : -0.5);
    std::vector<double> row{g};
    for (double x : ratios) row.push_back(g * x);
    t.ms.push_back(row);
  }
  return t;
}

/// A measurer that answers from a map of candidate name -> ratio, recording what it was asked.
struct FakeProgram {
  std::vector<std::pair<std::string, double>> ratio_of;
  std::vector<std::vector<std::string>> asked;
  AppMeasure measure() {
    return [this](const std::vector<AppCandidate>& cs) -> Result<AppTimes> {
      std::vector<double> ratios;
      std::vector<std::string> names;
      for (const auto& c : cs) {
        names.push_back(c.name);
        double r = 0;
        for (const auto& [n, x] : ratio_of)
          if (n == c.name) r = x;
        REQUIRE_MESSAGE(r > 0, (std::string("no ratio for candidate ") + c.name));
        ratios.push_back(r);
      }
      asked.push_back(names);
      return table_of(ratios);
    };
  }
};

const AppOpVerdict& verdict(const AppJudgement& j, Operation op) {
  for (const auto& v : j.verdicts)
    if (v.op == op) return v;
  FAIL("no verdict");
  return j.verdicts.front();
}

}  // namespace

TEST_CASE("app: summarize_app_times: medians, ratios of the same round, their MAD") {
  AppTimes t;
  t.ms = {{100, 90, 120}, {200, 190, 210}, {110, 99, 132}};  // ratios 0.9, 0.95, 0.9 and 1.2, 1.05, 1.2
  auto s = summarize_app_times({"glibc", "memcpy", "memset"}, t);
  REQUIRE(s.ok());
  CHECK((*s)[0].median_ms == doctest::Approx(110));
  CHECK((*s)[0].ratio == 1.0);
  CHECK((*s)[1].median_ms == doctest::Approx(99));
  CHECK((*s)[1].ratio == doctest::Approx(0.9));
  CHECK((*s)[1].spread == doctest::Approx(0.0));
  CHECK((*s)[2].ratio == doctest::Approx(1.2));
  CHECK((*s)[2].spread == doctest::Approx(0.0));
  t.ms.push_back({100, 100, 100});  // ratios 0.9, 0.9, 0.95, 1: median 0.925, MAD 0.025
  s = summarize_app_times({"glibc", "memcpy", "memset"}, t);
  REQUIRE(s.ok());
  CHECK((*s)[1].ratio == doctest::Approx(0.925));
  CHECK((*s)[1].spread == doctest::Approx(0.025));
  // Bad tables are refused, saying why.
  CHECK_FALSE(summarize_app_times({"glibc"}, AppTimes{}).ok());
  AppTimes ragged;
  ragged.ms = {{100, 90}, {100}};
  CHECK(summarize_app_times({"glibc", "memcpy"}, ragged).error().message.find("round 2 has 1 times") != std::string::npos);
  AppTimes zero;
  zero.ms = {{0, 90}};
  CHECK_FALSE(summarize_app_times({"glibc", "memcpy"}, zero).ok());
}

TEST_CASE("app: the rule is never slower: kept only when faster beyond the spread") {
  CHECK(app_call(0.97, 0.01) == AppCall::kNotSlower);
  CHECK(app_call(1.00, 0.00) == AppCall::kNotSlower);
  CHECK(app_call(0.99, 0.02) == AppCall::kNotClearlyFaster);
  CHECK(app_call(0.984, 0.017) == AppCall::kNotClearlyFaster);  // sqlite3's memset, 11 rounds: 1.017 the next run
  CHECK(app_call(1.004, 0.006) == AppCall::kWithinSpread);
  CHECK(app_call(1.02, 0.006) == AppCall::kSlower);
}

TEST_CASE("app: judge_app: each operation alone; all kept and not slower together") {
  FakeProgram p{{{"memcpy", 0.97}, {"memmove", 0.99}, {"memset", 0.995}, {"all", 0.96}}};
  auto j = judge_app({kCpy, kMove, kSet}, p.measure());
  REQUIRE(j.ok());
  CHECK(p.asked == std::vector<std::vector<std::string>>{{"memcpy", "memmove", "memset", "all"}});  // one set of rounds
  CHECK(j->kept() == std::vector<Operation>{kCpy, kMove, kSet});
  REQUIRE(j->combinations.size() == 1);
  CHECK_FALSE(j->combinations[0].extra_rounds);
  CHECK(j->combinations[0].summary.ratio == doctest::Approx(0.96));
  CHECK(verdict(*j, kCpy).why.find("faster: the tuned memcpy is kept") != std::string::npos);
  CHECK(verdict(*j, kCpy).tuned_ms == doctest::Approx(97.0).epsilon(0.01));
  CHECK(verdict(*j, kCpy).glibc_ms == doctest::Approx(100.0).epsilon(0.01));
}

TEST_CASE("app: judge_app: within the spread but not faster is dropped and said so") {
  // memmove's ratios over 5 rounds: 1.012, 0.996, 1.004, 1.000, 1.010: median 1.004, MAD 0.006.
  AppMeasure m = [](const std::vector<AppCandidate>& cs) -> Result<AppTimes> {
    const double memmove[] = {1.012, 0.996, 1.004, 1.000, 1.010};
    AppTimes t;
    for (int r = 0; r < 5; ++r) {
      std::vector<double> row{100.0};
      for (const auto& c : cs) row.push_back(100.0 * (c.name == "memmove" ? memmove[r] : 0.98));
      t.ms.push_back(row);
    }
    return t;
  };
  auto j = judge_app({kCpy, kMove}, m);
  REQUIRE(j.ok());
  const AppOpVerdict& v = verdict(*j, kMove);
  CHECK_FALSE(v.kept);
  CHECK(v.ratio == doctest::Approx(1.004));
  CHECK(v.spread == doctest::Approx(0.006));
  CHECK_MESSAGE(v.why == "1.004 ± 0.006: within the spread but not faster: the system memmove is kept", v.why);
  CHECK(j->kept() == std::vector<Operation>{kCpy});
  CHECK(j->combinations.empty());  // one kept: nothing to combine
  const std::string table = format_app_table(*j, "true", 5, "lib");
  CHECK(table.find("within the spread but not faster") != std::string::npos);
  CHECK(table.find("tuned: memcpy; system: memmove") != std::string::npos);
}

TEST_CASE("app: judge_app: a slower combination drops the worst alone, then checks the rest") {
  FakeProgram p{{{"memcpy", 0.99}, {"memmove", 0.995}, {"memset", 0.98}, {"all", 1.01}, {"memcpy+memset", 1.003}}};
  auto j = judge_app({kCpy, kMove, kSet}, p.measure());
  REQUIRE(j.ok());
  // all 1.01: memmove (0.995, the worst alone) goes; memcpy+memset 1.003 in extra rounds: memcpy
  // (0.99) goes; memset alone stands.
  CHECK(p.asked == std::vector<std::vector<std::string>>{{"memcpy", "memmove", "memset", "all"}, {"memcpy+memset"}});
  CHECK(j->kept() == std::vector<Operation>{kSet});
  REQUIRE(j->combinations.size() == 2);
  CHECK(j->combinations[1].extra_rounds);
  CHECK(j->combinations[1].glibc_ms == doctest::Approx(100.0).epsilon(0.01));
  CHECK(format_app_table(*j, "true", 5, "lib").find("combination memcpy+memset: 1.003 ± 0.000 (extra rounds: glibc ") !=
        std::string::npos);
  CHECK(verdict(*j, kMove).why.find("all together") != std::string::npos);
  CHECK(verdict(*j, kCpy).why.find("memcpy+memset together") != std::string::npos);
  CHECK_FALSE(verdict(*j, kCpy).kept);
}

TEST_CASE("app: judge_app: errors") {
  FakeProgram p{{{"memcpy", 1.0}}};
  CHECK_FALSE(judge_app({}, p.measure()).ok());
  CHECK(judge_app({Operation::kClearPage}, p.measure()).error().code == ErrorCode::kInvalidArgument);
  CHECK_FALSE(judge_app({kCpy, kCpy}, p.measure()).ok());
  AppMeasure failing = [](const std::vector<AppCandidate>&) -> Result<AppTimes> {
    return make_error(ErrorCode::kVerifyFailed, "the command exited with status 1 with the tuned memcpy");
  };
  auto j = judge_app({kCpy}, failing);
  REQUIRE_FALSE(j.ok());
  CHECK(j.error().code == ErrorCode::kVerifyFailed);
}

TEST_CASE("app: apply_app_verdicts removes the entries not kept and records every verdict") {
  Wisdom w;
  for (Operation op : {kCpy, kMove, kSet, Operation::kClearPage}) {
    WisdomEntry e;
    e.operation = op;
    w.entries.push_back(e);
  }
  AppVerdict old;
  old.operation = kMove;
  old.kept = true;
  w.app_verdicts = {old};
  FakeProgram p{{{"memcpy", 0.97}, {"memmove", 1.02}, {"memset", 0.99}, {"all", 0.98}, {"memcpy+memset", 0.97}}};
  auto j = judge_app({kCpy, kMove, kSet}, p.measure());
  REQUIRE(j.ok());
  const Wisdom out = apply_app_verdicts(w, *j, {"xz -d -c f.xz", 5, "shim", "2026-12-01T21:00:00Z"});
  std::vector<Operation> ops;
  for (const auto& e : out.entries) ops.push_back(e.operation);
  CHECK(ops == std::vector<Operation>{kCpy, kSet, Operation::kClearPage});  // clear_page is not judged: left alone
  REQUIRE(out.app_verdicts.size() == 3);
  CHECK(out.dropped_by_app(kMove));  // the new verdict replaced the old one
  CHECK(out.find_verdict(kCpy)->kept);
  CHECK(out.find_verdict(kCpy)->command == "xz -d -c f.xz");
  CHECK(out.find_verdict(kCpy)->with == "shim");
  CHECK(out.find_verdict(kCpy)->runs == 5);
  CHECK(out.find_verdict(kCpy)->ratio == doctest::Approx(0.97));
}

TEST_CASE("app: run_app_once and time_app_rounds on /bin/sh: status, output, errors naming the configuration") {
  auto r = run_app_once("echo hello; echo oops >&2; exit 3", {}, false);
  REQUIRE(r.ok());
  CHECK(describe_wait_status(r->wait_status) == "exited with status 3");
  CHECK(r->stderr_tail == "oops\n");
  CHECK(r->ms > 0);
  auto a = run_app_once("echo hello", {}, false), b = run_app_once("echo hello", {"X=1"}, false),
       c = run_app_once("echo world", {}, false);
  REQUIRE((a.ok() && b.ok() && c.ok()));
  CHECK(a->stdout_hash == b->stdout_hash);
  CHECK(a->stdout_hash != c->stdout_hash);
  // The variables reach the command whatever they hold (the shell exports them, quoted).
  auto quoted = run_app_once("test \"$X\" = \"a 'b' \\$c\"", {"X=a 'b' $c"}, false);
  REQUIRE(quoted.ok());
  CHECK(describe_wait_status(quoted->wait_status) == "exited with status 0");

  const AppConfig glibc{"glibc", "the system routines (no preload)", {}};
  AppRoundsOptions o;
  o.runs = 2;
  o.command = "test \"$APP_CASE\" != fail && echo \"${APP_OUT:-same}\"";
  auto t = time_app_rounds({glibc, {"memcpy", "the tuned memcpy", {"APP_CASE=ok"}}}, o);
  REQUIRE_MESSAGE(t.ok(), t.error().message);
  CHECK(t->ms.size() == 2);
  CHECK(t->ms[0].size() == 2);
  auto failed = time_app_rounds({glibc, {"memmove", "the tuned memmove", {"APP_CASE=fail"}}}, o);
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.error().code == ErrorCode::kVerifyFailed);
  CHECK(failed.error().message.find("exited with status 1 with the tuned memmove (memmove)") != std::string::npos);
  auto changed = time_app_rounds({glibc, {"memset", "the tuned memset", {"APP_OUT=other"}}}, o);
  REQUIRE_FALSE(changed.ok());
  CHECK(changed.error().message.find("wrote other output with the tuned memset (memset)") != std::string::npos);
  o.command = "false";
  auto bad = time_app_rounds({glibc}, o);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().code == ErrorCode::kInvalidArgument);
  CHECK(bad.error().message.find("`false` exited with status 1 with the system routines") != std::string::npos);
}

namespace {
/// The pid a command wrote into `file`, or -1.
pid_t pid_in(const std::filesystem::path& file) {
  std::FILE* f = std::fopen(file.c_str(), "r");
  if (!f) return -1;
  long pid = -1;
  if (std::fscanf(f, "%ld", &pid) != 1) pid = -1;
  std::fclose(f);
  return static_cast<pid_t>(pid);
}
/// The process is gone or a zombie (killed, and not reaped yet), within about 2 s: a killed
/// process closes its files before it becomes a zombie, so the run's end can come first.
bool gone(pid_t pid) {
  for (int i = 0; i < 200; ++i) {
    std::FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
    if (!f) return true;
    char state = '?';
    const int n = std::fscanf(f, "%*d (%*[^)]) %c", &state);
    std::fclose(f);
    if (n == 1 && (state == 'Z' || state == 'X')) return true;
    ::usleep(10000);
  }
  return false;
}
}  // namespace

TEST_CASE("app: run_app_once: the run ends at the shell's exit; its group is killed, a process of another session "
          "holding stdout is left after the drain") {
  if (::syscall(SYS_pidfd_open, ::getpid(), 0) < 0) {
    MESSAGE("pidfd_open is not available here (" << std::strerror(errno) << "): run_app_once waits for the pipes");
    return;
  }
  char tmpl[] = "/tmp/copysynth-test-app-XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  const std::filesystem::path dir = tmpl;
  // A background job in the command's process group keeps stdout open: it is killed when the
  // shell exits, and nothing is said of the output.
  auto job = run_app_once("sleep 30 & echo $! > '" + (dir / "job").string() + "'; echo done", {}, false);
  REQUIRE(job.ok());
  CHECK(job->succeeded());
  CHECK_FALSE(job->output_left_open);
  const pid_t job_pid = pid_in(dir / "job");
  REQUIRE(job_pid > 0);
  CHECK(gone(job_pid));
  // A process that left the group (setsid) keeps stdout open: it is not killed (its id is not the
  // group's), the pipes are read for a bounded time, and the run says so.
  const std::string pidfile = (dir / "session").string();
  auto left = run_app_once("setsid sh -c 'echo $$ > " + pidfile + ".tmp; mv " + pidfile + ".tmp " + pidfile +
                               "; exec sleep 30' & while ! test -s " + pidfile + "; do sleep 0.01; done; echo done",
                           {}, false);
  const pid_t left_pid = pid_in(pidfile);
  if (left_pid > 0) ::kill(left_pid, SIGKILL);
  REQUIRE(left.ok());
  CHECK(left->succeeded());
  CHECK(left->output_left_open);
  CHECK(left_pid > 0);
  CHECK(left->stdout_hash == job->stdout_hash);  // "done\n" both times: what the shell wrote was read
  std::filesystem::remove_all(dir);
}

TEST_CASE("app: check_command_loads: which programs loaded the candidate's LD_PRELOAD object") {
  // Any shared object ld.so can preload stands in for a candidate: the C library itself.
  Dl_info info{};
  REQUIRE(::dladdr(reinterpret_cast<void*>(&::gnu_get_libc_version), &info) != 0);
  REQUIRE(info.dli_fname != nullptr);
  const std::string libc = info.dli_fname;
  REQUIRE(libc.find('/') != std::string::npos);
  char tmpl[] = "/tmp/copysynth-loads-XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  const std::string dir = tmpl;
  const AppConfig cand{"memcpy", "the tuned memcpy", {"LD_PRELOAD=" + libc}};

  auto all = check_command_loads("/bin/true", cand, dir);
  REQUIRE_MESSAGE(all.ok(), all.error().message);
  CHECK(all->empty());
  // env loads it and names /bin/true, which it starts with LD_PRELOAD cleared.
  auto some = check_command_loads("env -u LD_PRELOAD /bin/true", cand, dir);
  REQUIRE_MESSAGE(some.ok(), some.error().message);
  CHECK(*some == std::vector<std::string>{"/bin/true"});
  // A shell builtin starts nothing: nothing loads it, refused, naming the object.
  auto none = check_command_loads(":", cand, dir);
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().code == ErrorCode::kInvalidArgument);
  CHECK(none.error().message.find("loaded its LD_PRELOAD object " + libc + " (memcpy)") != std::string::npos);
  // A configuration without LD_PRELOAD (the system routines) cannot be checked: refused, not thrown.
  auto unset = check_command_loads("/bin/true", {"glibc", "the system routines", {}}, dir);
  REQUIRE_FALSE(unset.ok());
  CHECK(unset.error().code == ErrorCode::kInvalidArgument);
  // Its ld.so output went with it, on errors too.
  std::error_code ec;
  CHECK(std::filesystem::is_empty(dir, ec));
  std::filesystem::remove_all(dir, ec);
}

// ----- interrupts (interrupt.hpp) --------------------------------------------------------------

namespace {

/// autotune's handler (tools/autotune/main.cpp): passed on or noted, else the default action.
extern "C" void test_stop_handler(int sig) {
  if (pass_on_stop_signal(sig)) return;
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

/// Runs `scenario` in a child process with test_stop_handler installed for the stop signals;
/// returns its wait status and what it wrote to `out` (one character per step reached).
std::pair<int, std::string> in_child(void (*scenario)(int out)) {
  int p[2];
  REQUIRE(::pipe(p) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(p[0]);
    for (int sig : kStopSignals) {
      struct sigaction sa {};
      sa.sa_handler = test_stop_handler;
      sigemptyset(&sa.sa_mask);
      sigaction(sig, &sa, nullptr);
    }
    scenario(p[1]);
    ::_exit(0);
  }
  ::close(p[1]);
  std::string got;
  char c;
  while (::read(p[0], &c, 1) == 1) got += c;
  ::close(p[0]);
  int st = 0;
  ::waitpid(pid, &st, 0);
  return {st, got};
}

void step(int out, char c) { [[maybe_unused]] const ssize_t n = ::write(out, &c, 1); }

bool ended_by(int st, int sig) { return WIFSIGNALED(st) && WTERMSIG(st) == sig; }

}  // namespace

TEST_CASE("interrupt: with no child and nothing deferred, a stop signal ends the process at once") {
  auto [st, got] = in_child([](int out) {
    step(out, 'a');
    ::raise(SIGTERM);
    step(out, 'b');
  });
  CHECK(ended_by(st, SIGTERM));
  CHECK(got == "a");
}

TEST_CASE("interrupt: StopsDeferred notes the signal, refuses a child's start, and ends the process at its end") {
  auto [st, got] = in_child([](int out) {
    {
      StopsDeferred stops;
      ::raise(SIGTERM);
      step(out, 'a');  // noted: the process runs on
      sigset_t old;
      step(out, block_stop_signals_to_start(&old) ? 'S' : 'r');  // no child starts
      sigset_t now;
      pthread_sigmask(SIG_SETMASK, nullptr, &now);
      step(out, sigismember(&now, SIGTERM) ? 'B' : 'u');  // the mask as it was
      pid_t pid = 0;
      char true_path[] = "/bin/true";
      char* argv[] = {true_path, nullptr};
      step(out, spawn_waited_child(&pid, true_path, false, nullptr, argv, environ, false) == -1 ? 'n' : 'N');
    }
    step(out, 'z');  // not reached: the scope's end ends the process
  });
  CHECK(ended_by(st, SIGTERM));
  CHECK(got == "arun");
}

TEST_CASE("interrupt: a second stop signal in a StopsDeferred scope ends the process at once") {
  auto [st, got] = in_child([](int out) {
    StopsDeferred stops;
    ::raise(SIGTERM);
    step(out, 'a');
    ::raise(SIGINT);
    step(out, 'z');
  });
  CHECK(ended_by(st, SIGINT));
  CHECK(got == "a");
}

TEST_CASE("interrupt: Interrupted thrown in a StopsDeferred scope unwinds it, and the catcher ends the process") {
  auto [st, got] = in_child([](int out) {
    try {
      StopsDeferred outer;
      {
        StopsDeferred inner;  // an inner scope's end leaves the ending to the outermost
        ::raise(SIGHUP);
      }
      step(out, 'a');
      throw_if_stopped();
      step(out, 'z');
    } catch (const Interrupted& i) {
      step(out, i.signal == SIGHUP ? 'I' : '?');  // the scope's end did not end the process
      ::_exit(7);
    }
  });
  CHECK(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 7);
  CHECK(got == "aI");
}

TEST_CASE("interrupt: with nothing noted, a StopsDeferred scope lets children start and ends quietly") {
  auto [st, got] = in_child([](int out) {
    {
      StopsDeferred stops;
      sigset_t old;
      const bool started = block_stop_signals_to_start(&old);
      step(out, started ? 'S' : 'r');
      if (started) block_stop_signals(false, &old);
      pid_t pid = 0;
      char true_path[] = "/bin/true";
      char* argv[] = {true_path, nullptr};
      if (spawn_waited_child(&pid, true_path, false, nullptr, argv, environ, false) == 0) {
        int status = 0;
        step(out, ::waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 'c' : '?');
        set_waited_child(0);
      }
      throw_if_stopped();
    }
    step(out, 'e');
  });
  CHECK(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 0);
  CHECK(got == "Sce");
}

TEST_CASE("interrupt: spawn_waited_child registers the child, so that a stop signal is passed on to it") {
  auto [st, got] = in_child([](int out) {
    pid_t pid = 0;
    char sleep_path[] = "/bin/sleep", ten[] = "10";
    char* argv[] = {sleep_path, ten, nullptr};
    if (spawn_waited_child(&pid, sleep_path, false, nullptr, argv, environ, false) != 0) return;
    ::raise(SIGTERM);  // registered: passed on to sleep, and this process runs on
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    set_waited_child(0);
    step(out, WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM ? 'k' : '?');
    try {
      throw_if_stopped();
    } catch (const Interrupted& i) {
      step(out, i.signal == SIGTERM ? 'I' : '?');
      ::_exit(3);
    }
  });
  CHECK(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 3);
  CHECK(got == "kI");
}
