// copysynth_bench — the tuned routines against their peers (tuner/peers.hpp), with Google
// Benchmark.
//
//   COPYSYNTH_WISDOM=best.json build/bench/copysynth_bench --benchmark_min_time=0.1
//       --benchmark_out_format=json --benchmark_out=bench.json
//
// Benchmarks, for memcpy, memmove and fill (<op> below), each routine called through a function
// pointer:
//   <op>/<routine>/<size>/<src>/<dst>   one point of the seeds' matrix (seeds_workload()) or of
//                                       the misaligned-destination matrix (misaligned_workload()): <size>
//                                       bytes (size_label(): "64M" for 64 MiB) from page-aligned
//                                       buffers + <src> to + <dst> bytes, in a loop;
//                                       bytes_per_second
//   <op>/<routine>/readback/<size>      memcpy and memmove: <size> bytes (8..512), then the last 8
//                                       bytes of dst are loaded and feed the next call's src
//                                       address (plus zero), so every call waits for the previous
//                                       copy's stores to forward to a load: the latency a program
//                                       that reads what it copied sees, where the points above
//                                       measure throughput; counter ns_per_call
//   <op>/<routine>/dist/<Name>          a production size distribution (MemcpyGoogleA..U), 32768
//                                       calls replayed per iteration on L1/L2-resident buffers
//                                       (as autotune measures it); counters ns_per_call, and
//                                       bytes_per_second
//   <op>/<routine>/dist-readback/<Name> memcpy and memmove: the same replay, each call's src
//                                       address depending on a load of the previous dst (as
//                                       readback/<size>); counter ns_per_call
// Google Benchmark prints wall-clock ("Time") and CPU time per iteration and derives
// bytes_per_second from the CPU time; ns_per_call is wall-clock ("Time" / 32768). On a noisy
// machine compare medians of repetitions (--benchmark_repetitions=5
// --benchmark_report_aggregates_only=true).
// <routine> is "tuned" (the wisdom entry of <op>) or a peer's name. The tuned routines come from
// $COPYSYNTH_WISDOM (default ./best.json); each is rebuilt, checked to be byte-identical to the
// tuned code and re-verified before it is timed. When the file is missing or unusable, the reason
// is printed once and only the peers are benchmarked.
//
// Google Benchmark runs one benchmark after another: figures of different routines come from
// different moments of a noisy machine. The interleaved, same-rounds comparison is
// `autotune --report`'s; this program gives the standard, filterable, JSON-exporting view.
#include <benchmark/benchmark.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "copysynth/peers.hpp"
#include "copysynth/routine.hpp"
#include "copysynth/timing.hpp"
#include "copysynth/verify.hpp"
#include "copysynth/wisdom.hpp"
#include "copysynth/workload.hpp"

namespace {

using namespace copysynth;

struct Contender {
  std::string name;
  const void* entry = nullptr;
};

constexpr std::size_t kReplayCalls = 32768;  // as autotune's final measurement
constexpr std::uint64_t kReplaySeed = 0x5EED;
constexpr int kFillByte = 0x5A;

/// The tuned routine of every operation found in the wisdom file; prints why not, once.
struct Tuned {
  std::vector<Routine> routines;
  const Routine* find(Operation op) const {
    for (const auto& r : routines)
      if (r.operation() == op) return &r;
    return nullptr;
  }
};

Tuned load_tuned(const std::string& path, const std::vector<Operation>& ops) {
  Tuned t;
  auto w = load_wisdom_for(path, CpuInfo::host());  // a single-host file or this CPU's part of a fleet
  if (!w) {
    std::fprintf(stderr, "copysynth_bench: no tuned routine (%s); benchmarking the peers only\n",
                 w.error().message.c_str());
    return t;
  }
  for (Operation op : ops) {
    const WisdomEntry* e = w->find(op);
    const std::string opname(name_of(op));
    if (!e) {
      std::fprintf(stderr, "copysynth_bench: %s has no %s entry; %s: peers only\n", path.c_str(), opname.c_str(),
                   opname.c_str());
      continue;
    }
    auto r = build_entry(*w, *e, CpuInfo::host());
    std::string why;
    if (!r)
      why = r.error().message;
    else if (auto st = check_routine(*r); !st)
      why = st.error().message;
    if (!why.empty()) {
      std::fprintf(stderr, "copysynth_bench: %s entry of %s not used (%s); %s: peers only\n", opname.c_str(),
                   path.c_str(), why.c_str(), opname.c_str());
      continue;
    }
    std::fprintf(stderr, "copysynth_bench: tuned %s = %s (from %s, verified)\n", opname.c_str(), r->name().c_str(),
                 path.c_str());
    benchmark::AddCustomContext("copysynth_tuned_" + opname, r->name());
    t.routines.push_back(std::move(r).value());
  }
  return t;
}

/// One call of `op`'s form.
inline void call(Operation op, const void* entry, std::uint8_t* dst, const std::uint8_t* src, std::size_t n) {
  if (op == Operation::kFill)
    benchmark::DoNotOptimize(reinterpret_cast<FillFn>(const_cast<void*>(entry))(dst, kFillByte, n));
  else
    benchmark::DoNotOptimize(reinterpret_cast<CopyFn>(const_cast<void*>(entry))(dst, src, n));
}

void register_points(Operation op, const std::vector<Contender>& who, const std::shared_ptr<BenchBuffers>& buf) {
  const std::string opname(name_of(op));
  // The seeds' matrix, then the misaligned-destination matrix (4 KiB..512 KiB at src/dst 0/0,
  // 0/1, 0/4, 0/15, 0/33, 2048/4, 2048/33; workload.hpp) where it adds points.
  std::vector<Point> points = seeds_workload(op).points;
  for (const Point& p : misaligned_workload(op).points)
    if (std::find(points.begin(), points.end(), p) == points.end()) points.push_back(p);
  for (const Point& p : points) {
    for (const Contender& c : who) {
      const std::string name = opname + "/" + c.name + "/" + size_label(p.size) + "/" +
                               std::to_string(p.src_align) + "/" + std::to_string(p.dst_align);
      benchmark::RegisterBenchmark(name.c_str(), [op, p, entry = c.entry, buf](benchmark::State& st) {
        std::uint8_t* dst = buf->dst() + p.dst_align;
        const std::uint8_t* src = buf->src() + p.src_align;
        const std::size_t n = p.size;
        for (auto _ : st) {
          call(op, entry, dst, src, n);
          benchmark::ClobberMemory();
        }
        st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations()) * static_cast<std::int64_t>(n));
      });
    }
  }
}

/// One link of the read-back chain: copies n bytes to d from s + x and returns the next x, a
/// load of the copy's last bytes (8, or 1 below 8 bytes; x itself for n = 0) ANDed with `zero`,
/// an opaque 0, so the next call's src address waits until this copy's stores can be read.
inline std::uint64_t copy_then_read(CopyFn fn, std::uint8_t* d, const std::uint8_t* s, std::size_t n,
                                    std::uint64_t x, std::uint64_t zero) {
  fn(d, s + x, n);
  std::uint64_t v = x;
  if (n >= 8)
    std::memcpy(&v, d + n - 8, 8);
  else if (n)
    v = d[n - 1];
  return v & zero;
}

/// Copy latency as a reader of the copy sees it: each call's src address depends on a load of
/// the previous call's dst (its last 8 bytes, ANDed with an opaque zero), so the loop runs at
/// the speed of copy + store-to-load forwarding. A routine whose stores cannot forward to a later
/// load (AVX-512 masked stores on the AMD Zen 4/5 cores this project measured; a load spanning
/// two overlapping stores) shows it here and not in the throughput points.
void register_readback(Operation op, const std::vector<Contender>& who, const std::shared_ptr<BenchBuffers>& buf) {
  if (op == Operation::kFill || op == Operation::kClearPage) return;
  const std::string opname(name_of(op));
  for (std::size_t n : {8, 16, 24, 32, 48, 64, 100, 128, 256, 512}) {
    for (const Contender& c : who) {
      const std::string name = opname + "/" + c.name + "/readback/" + std::to_string(n);
      benchmark::RegisterBenchmark(name.c_str(), [entry = c.entry, buf, n](benchmark::State& st) {
        auto fn = reinterpret_cast<CopyFn>(const_cast<void*>(entry));
        std::uint8_t* dst = buf->dst();
        const std::uint8_t* src = buf->src();
        std::uint64_t zero = 0, x = 0;
        asm volatile("" : "+r"(zero));  // the compiler cannot know it is zero
        const auto t0 = std::chrono::steady_clock::now();
        for (auto _ : st) x = copy_then_read(fn, dst, src, n, x, zero);
        const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
        benchmark::DoNotOptimize(x);
        st.counters["ns_per_call"] = benchmark::Counter(ns, benchmark::Counter::kAvgIterations);
      });
    }
  }
}

struct Replay {
  std::vector<Call> calls;
  std::unique_ptr<ReplayBuffers> buf;
  std::int64_t bytes = 0;  // per pass over the calls
};

void register_distributions(Operation op, const std::vector<Contender>& who) {
  const std::string opname(name_of(op));
  static bool warned = false;
  for (const std::string& dname : production_distributions()) {
    auto d = load_distribution(dname);
    if (!d) {
      if (!warned)
        std::fprintf(stderr, "copysynth_bench: distribution benchmarks left out (%s; COPYSYNTH_DATA_DIR sets the "
                             "folder)\n", d.error().message.c_str());
      warned = true;
      return;
    }
    auto rp = std::make_shared<Replay>();
    rp->calls = make_calls(*d, kReplayCalls, kReplaySeed);
    rp->buf = std::make_unique<ReplayBuffers>(d->max_size(), false);
    for (const Call& c : rp->calls) rp->bytes += c.size;
    const bool copy = op == Operation::kMemcpy || op == Operation::kMemmove;
    for (const Contender& c : who) {
      for (const bool readback : {false, true}) {
        if (readback && !copy) continue;
        const std::string name = opname + "/" + c.name + (readback ? "/dist-readback/" : "/dist/") + dname;
        benchmark::RegisterBenchmark(name.c_str(), [op, entry = c.entry, rp, readback](benchmark::State& st) {
          const std::vector<Call>& calls = rp->calls;
          const ReplayBuffers& b = *rp->buf;
          // Wall-clock ns of the loop (as the "Time" column): a plain number in ns, where an inverted
          // rate counter would be printed in seconds.
          const auto t0 = std::chrono::steady_clock::now();
          if (readback) {
            // Each call's src address depends on a load of the previous dst (copy_then_read).
            auto fn = reinterpret_cast<CopyFn>(const_cast<void*>(entry));
            std::uint64_t zero = 0, x = 0;
            asm volatile("" : "+r"(zero));
            for (auto _ : st) {
              for (std::size_t i = 0; i < calls.size(); ++i)
                x = copy_then_read(fn, b.dst(i) + calls[i].dst_offset, b.src(i) + calls[i].src_offset,
                                   calls[i].size, x, zero);
            }
            benchmark::DoNotOptimize(x);
          } else {
            for (auto _ : st) {
              for (std::size_t i = 0; i < calls.size(); ++i)
                call(op, entry, b.dst(i) + calls[i].dst_offset, b.src(i) + calls[i].src_offset, calls[i].size);
              benchmark::ClobberMemory();
            }
          }
          const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
          st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations()) * rp->bytes);
          // kAvgIterations divides by the iterations: ns per call of the sequence.
          st.counters["ns_per_call"] = benchmark::Counter(ns / double(calls.size()), benchmark::Counter::kAvgIterations);
        });
      }
    }
  }
}

}  // namespace

namespace {

/// Runs `f` once pinned to each CPU of this thread's affinity mask (sched_getaffinity), then puts
/// the mask back; once, unpinned, where the mask cannot be read or set.
void on_every_allowed_cpu(const std::function<void()>& f) {
  cpu_set_t allowed;
  if (::sched_getaffinity(0, sizeof allowed, &allowed) != 0) {
    f();
    return;
  }
  bool ran = false;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (::sched_setaffinity(0, sizeof one, &one) != 0) continue;
    f();
    ran = true;
  }
  ::sched_setaffinity(0, sizeof allowed, &allowed);
  if (!ran) f();
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;

  const std::vector<Operation> ops{Operation::kMemcpy, Operation::kMemmove, Operation::kFill};
  const char* env = std::getenv("COPYSYNTH_WISDOM");
  const std::string wisdom_path = env && *env ? env : "best.json";
  benchmark::AddCustomContext("copysynth_wisdom", wisdom_path);
  benchmark::AddCustomContext("copysynth_cpu", CpuInfo::host().signature());
  const Tuned tuned = load_tuned(wisdom_path, ops);

  // Page-aligned src and dst for the largest point (64 MiB) plus the offsets, shared by all.
  std::uint64_t largest = 0;
  for (Operation op : ops)
    for (const Point& p : seeds_workload(op).points) largest = std::max(largest, p.size + 64);
  const auto buf = std::make_shared<BenchBuffers>(largest);

  for (Operation op : ops) {
    std::vector<Contender> who;
    if (const Routine* r = tuned.find(op)) who.push_back({"tuned", r->entry()});
    for (const Peer& p : peers(op, CpuInfo::host().features())) {
      who.push_back({p.name, p.entry});
      benchmark::AddCustomContext("copysynth_peer_" + std::string(name_of(op)) + "_" + p.name, p.description);
    }
    // Every contender starts from the branch history a program gives it, as autotune's
    // compare() does: the tuned routine has taken its rare branches in its verification. On
    // every CPU the benchmarks may run on: they run later, wherever the scheduler puts them,
    // and branch history is kept per core.
    on_every_allowed_cpu([&] {
      for (const Contender& c : who) prime_branches(op, c.entry, *buf);
    });
    register_points(op, who, buf);
    register_readback(op, who, buf);
    register_distributions(op, who);
  }
  if (!have_dpdk_peer())
    std::fprintf(stderr, "copysynth_bench: no dpdk peer in this build (install libdpdk-dev and re-run cmake)\n");

  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
