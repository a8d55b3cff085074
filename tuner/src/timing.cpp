// copysynth — TSC timing (see timing.hpp).
#include "copysynth/timing.hpp"

#include <sched.h>
#include <sys/mman.h>
#include <time.h>
#include <emmintrin.h>
#include <x86intrin.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <mutex>
#include <new>
#include <stdexcept>
#include <set>
#include <tuple>

namespace copysynth {

std::uint64_t tsc_begin() noexcept {
  _mm_lfence();
  const std::uint64_t t = __rdtsc();
  _mm_lfence();
  return t;
}

std::uint64_t tsc_end() noexcept {
  unsigned aux;
  const std::uint64_t t = __rdtscp(&aux);
  _mm_lfence();
  return t;
}

namespace {
/// The order routines run in, round by round: a fresh pseudo-random permutation each round
/// (fixed seed, so runs repeat), so that no routine always follows the same one. A rotation
/// keeps the cyclic order, and a routine that leaves the caches or prefetchers in a bad state
/// (a peer at 256 KiB measured 87 GB/s where the others ran at 130) would then always slow the
/// same successor.
class RoundOrder {
 public:
  explicit RoundOrder(std::size_t k) : order_(k) {
    for (std::size_t i = 0; i < k; ++i) order_[i] = i;
  }
  const std::vector<std::size_t>& next() {
    for (std::size_t i = order_.size(); i > 1; --i) {
      state_ = state_ * 6364136223846793005ull + 1442695040888963407ull;  // PCG/Knuth LCG step
      std::swap(order_[i - 1], order_[(state_ >> 33) % i]);
    }
    return order_;
  }

 private:
  std::vector<std::size_t> order_;
  std::uint64_t state_ = 0x9E3779B97F4A7C15ull;
};

double now_seconds() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}
}  // namespace

double tsc_hz() {
  static const double hz = [] {
    // Three 20 ms windows; take the median rate.
    std::vector<double> rates;
    for (int i = 0; i < 3; ++i) {
      const double t0 = now_seconds();
      const std::uint64_t c0 = tsc_begin();
      double t1;
      do t1 = now_seconds();
      while (t1 - t0 < 0.02);
      const std::uint64_t c1 = tsc_end();
      rates.push_back(double(c1 - c0) / (t1 - t0));
    }
    return median(rates);
  }();
  return hz;
}

ThreadPin::ThreadPin() {
  static_assert(sizeof(saved_) >= sizeof(cpu_set_t));
  cpu_set_t* saved = reinterpret_cast<cpu_set_t*>(saved_);
  if (sched_getaffinity(0, sizeof(cpu_set_t), saved) != 0) return;
  cpu_ = sched_getcpu();
  if (cpu_ < 0) return;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu_, &one);
  ok_ = sched_setaffinity(0, sizeof(one), &one) == 0;
}

ThreadPin::~ThreadPin() {
  if (ok_) sched_setaffinity(0, sizeof(cpu_set_t), reinterpret_cast<cpu_set_t*>(saved_));
}

BenchBuffers::BenchBuffers(std::size_t bytes) : bytes_(bytes) {
  const std::size_t each = (bytes + 8192 + 4095) & ~std::size_t{4095};
  mapped_ = 2 * each;
  void* p = mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  // Try to get transparent huge pages for the big buffers (fewer TLB misses, as glibc's
  // benchmarks see); harmless when THP is off.
  madvise(p, mapped_, MADV_HUGEPAGE);
  src_ = static_cast<std::uint8_t*>(p);
  dst_ = src_ + each;
  for (std::size_t i = 0; i < each; ++i) src_[i] = static_cast<std::uint8_t>(i * 131 + 7);
  std::memset(dst_, 0, each);
}

BenchBuffers::~BenchBuffers() {
  if (src_) munmap(src_, mapped_);
}

std::vector<Measurement> compare(const std::vector<CopyFn>& fns, BenchBuffers& buf, std::uint64_t size,
                                 std::uint32_t src_align, std::uint32_t dst_align, const TimingOptions& opt) {
  std::vector<const void*> entries;
  for (CopyFn f : fns) entries.push_back(reinterpret_cast<const void*>(f));
  return compare(Operation::kMemcpy, entries, buf, size, src_align, dst_align, opt);
}

std::string_view use_name(Use u) noexcept {
  switch (u) {
    case Use::kCopy: return "copy";
    case Use::kThenRead: return "copy+read";
    case Use::kThenWrite: return "copy+write";
  }
  return "?";
}

std::vector<Use> uses_of(Operation op) {
  if (op == Operation::kMemcpy || op == Operation::kMemmove) return {Use::kCopy, Use::kThenRead, Use::kThenWrite};
  return {Use::kCopy, Use::kThenRead};
}

std::string_view cache_state_name(CacheState s) noexcept {
  switch (s) {
    case CacheState::kAsLeft: return "as left";
    case CacheState::kWarm: return "warm";
    case CacheState::kCold: return "cold";
  }
  return "?";
}

namespace {
/// One 8-byte load from every 64-byte line of [p, p+n): what a consumer of the copy costs at
/// least (every line has to come to the core). The sum goes to an asm sink so no load is dropped.
inline void read_lines(const std::uint8_t* p, std::uint64_t n) {
  std::uint64_t acc = 0;
  for (std::uint64_t i = 0; i + 8 <= n; i += 64) {
    std::uint64_t v;
    std::memcpy(&v, p + i, 8);
    acc += v;
  }
  asm volatile("" : : "r"(acc));
}
/// One 8-byte store to every 64-byte line of [p, p+n) (the line is fetched for ownership).
inline void write_lines(std::uint8_t* p, std::uint64_t n, std::uint64_t v) {
  for (std::uint64_t i = 0; i + 8 <= n; i += 64) std::memcpy(p + i, &v, 8);
  asm volatile("" : : "r"(p) : "memory");
}
/// Every line of [p, p+n) out of every cache level (clflush is SSE2: every x86-64 CPU has it).
inline void flush_lines(const std::uint8_t* p, std::uint64_t n) {
  const auto a = reinterpret_cast<std::uintptr_t>(p) & ~std::uintptr_t{63};
  for (std::uintptr_t q = a; q < reinterpret_cast<std::uintptr_t>(p) + n; q += 64)
    _mm_clflush(reinterpret_cast<const void*>(q));
  _mm_mfence();
}
}  // namespace

void prime_branches(Operation op, const void* entry, BenchBuffers& buf) {
  if (op == Operation::kClearPage || entry == nullptr) return;
  static constexpr std::uint64_t kLengths[] = {0,   1,   2,   3,   4,   5,   7,   8,   9,   15,  16,   17,   31,
                                               32,  33,  47,  48,  63,  64,  65,  95,  96,  127,  128,  129, 191,
                                               192, 255, 256, 257, 384, 511, 512, 513, 1024, 2048, 4096};
  const std::uint64_t room = buf.bytes();
  std::uint8_t* const s = buf.src();
  std::uint8_t* const d = buf.dst();
  const auto copy = reinterpret_cast<CopyFn>(const_cast<void*>(entry));
  const auto fill = reinterpret_cast<FillFn>(const_cast<void*>(entry));
  // (src offset, dst offset) of one call of n bytes, left out when it does not fit.
  const auto call = [&](std::uint64_t so, std::uint64_t dof, std::uint64_t n) {
    if (so + n > room || dof + n > room) return;
    if (op == Operation::kFill) fill(d + dof, 0x5A, n);
    else copy(d + dof, s + so, n);
  };
  for (int pass = 0; pass < 2; ++pass)
    for (const std::uint64_t n : kLengths) {
      call(kPageBytes, kPageBytes, n);               // both pointers at a page start
      call(kPageBytes + 4, kPageBytes + 1, n);       // misaligned
      call(kPageBytes + 2048, kPageBytes + 33, n);   // src half a page away (4K aliasing off)
      const std::uint64_t edge = 2 * kPageBytes - (std::min<std::uint64_t>(n, 2 * kPageBytes) + 1) / 2;  // n >= 2 crosses
      call(edge, kPageBytes + 8, n);                 // src across a page end
      call(kPageBytes + 8, edge, n);                 // dst across a page end
      call(2 * kPageBytes - 8, 2 * kPageBytes - 8, n);  // both ending just past a page end, or short of it
      if (op == Operation::kMemmove && kPageBytes + n + 1 <= room) {
        copy(d + kPageBytes + 1, d + kPageBytes, n);  // dst above src: backward
        copy(d + kPageBytes, d + kPageBytes + 1, n);  // dst below src: forward
      }
    }
}

std::vector<Measurement> compare(Operation op, const std::vector<const void*>& entries, BenchBuffers& buf,
                                 std::uint64_t size, std::uint32_t src_align, std::uint32_t dst_align,
                                 const TimingOptions& opt) {
  const std::size_t k = entries.size();
  std::vector<Measurement> out(k);
  if (k == 0) return out;
  {
    // Once per operation, entry point and CPU (branch predictors are a core's; one address may
    // be two operations, as glibc's memcpy and memmove are): the routines verified before timing
    // have taken their rare branches in the conformance check, the peers only here
    // (prime_branches()), in buffers of its own so that every placement fits whatever the
    // caller's buffers are and theirs are not touched.
    // The CPU means something under a ThreadPin, as the tuner's and the report's timing runs.
    static std::mutex mutex;
    static std::set<std::tuple<int, const void*, int>> primed;
    std::lock_guard<std::mutex> lock(mutex);
    const int cpu = sched_getcpu();
    for (const void* e : entries) {
      const auto key = std::make_tuple(static_cast<int>(op), e, cpu);
      if (primed.count(key)) continue;
      static BenchBuffers own(4 * kPageBytes);
      prime_branches(op, e, own);
      primed.insert(key);  // after: a priming that threw is not taken as done
    }
  }
  if (op == Operation::kClearPage) {
    size = kPageBytes;
    src_align = dst_align = 0;
  }
  if (size + src_align + 64 > buf.bytes() || size + dst_align + 64 > buf.bytes())
    throw std::invalid_argument("compare(): size does not fit the bench buffers");
  std::uint8_t* src = buf.src() + src_align;
  std::uint8_t* dst = buf.dst() + dst_align;
  const double hz = tsc_hz();
  const bool copy = op == Operation::kMemcpy || op == Operation::kMemmove;
  // Fill has no source to refill: its producer pattern is the consumer one.
  const Use use = !copy && opt.use == Use::kThenWrite ? Use::kThenRead : opt.use;

  // Calls per batch from a first guess of the cost (5 ns + 20 GB/s), refined after warm-up.
  auto calls_for = [&](double seconds_per_call) {
    const double c = opt.batch_seconds / std::max(seconds_per_call, 1e-9);
    return static_cast<unsigned>(std::clamp(c, double(std::max(1u, opt.min_calls)), 100000.0));
  };
  unsigned calls = calls_for(5e-9 + double(size) / 20e9);

  auto prepare = [&] {
    switch (opt.state) {
      case CacheState::kAsLeft: break;
      case CacheState::kWarm:
        if (copy) write_lines(src, size, 0x0123456789ABCDEFull);
        read_lines(dst, size);
        break;
      case CacheState::kCold:
        if (copy) flush_lines(src, size);
        flush_lines(dst, size);
        break;
    }
  };

  std::uint64_t stamp = 0;
  auto run_batch = [&](const void* entry) -> double {
    prepare();
    std::uint64_t t0 = 0, t1 = 0;
    // The loops work on copies whose addresses never escape, so that every build keeps the
    // routine's arguments in registers (GCC 12 still reads the loop's bound from the stack).
    // Read through the lambda's captures, GCC 12 loaded the three arguments and the bound from
    // memory at every call (eight loads), GCC 14 the length alone; the form of the loop moves
    // short copies' ratios (docs/perf/alias-short/).
    std::uint8_t* const d = dst;
    std::uint8_t* const s = src;
    const std::uint64_t n = size;
    const unsigned k_calls = calls;
    switch (op) {
      case Operation::kMemcpy:
      case Operation::kMemmove: {
        const auto fn = reinterpret_cast<CopyFn>(const_cast<void*>(entry));
        t0 = tsc_begin();
        switch (use) {
          case Use::kCopy:
            for (unsigned c = 0; c < k_calls; ++c) fn(d, s, n);
            break;
          case Use::kThenRead:
            for (unsigned c = 0; c < k_calls; ++c) {
              fn(d, s, n);
              read_lines(d, n);
            }
            break;
          case Use::kThenWrite:
            for (unsigned c = 0; c < k_calls; ++c) {
              fn(d, s, n);
              write_lines(s, n, ++stamp);
            }
            break;
        }
        t1 = tsc_end();
        break;
      }
      case Operation::kFill: {
        const auto fn = reinterpret_cast<FillFn>(const_cast<void*>(entry));
        t0 = tsc_begin();
        if (use == Use::kCopy)
          for (unsigned c = 0; c < k_calls; ++c) fn(d, 0x5A, n);
        else
          for (unsigned c = 0; c < k_calls; ++c) {
            fn(d, 0x5A, n);
            read_lines(d, n);
          }
        t1 = tsc_end();
        break;
      }
      case Operation::kClearPage: {
        const auto fn = reinterpret_cast<ClearPageFn>(const_cast<void*>(entry));
        t0 = tsc_begin();
        for (unsigned c = 0; c < k_calls; ++c) fn(d);
        t1 = tsc_end();
        break;
      }
    }
    return double(t1 - t0) / k_calls;
  };

  // Warm-up, and measure the real cost to size the batches.
  double slowest = 0;
  for (unsigned r = 0; r < std::max(1u, opt.warmup_rounds); ++r)
    for (std::size_t i = 0; i < k; ++i) slowest = std::max(slowest, run_batch(entries[i]));
  calls = calls_for(slowest / hz);

  std::vector<std::vector<double>> samples(k);
  const double t_start = now_seconds();
  if (opt.solo) {
    // Each routine's rounds back to back (after one untimed batch of its own), in turn; the
    // time cap is shared out so that every routine gets its share.
    for (std::size_t i = 0; i < k; ++i) {
      run_batch(entries[i]);
      const double t_i = now_seconds();
      for (unsigned r = 0; r < opt.rounds; ++r) {
        samples[i].push_back(run_batch(entries[i]));
        if (r >= 2 && now_seconds() - t_i > opt.max_seconds / double(k)) break;
      }
    }
  } else {
    RoundOrder order(k);
    for (unsigned r = 0; r < opt.rounds; ++r) {
      for (std::size_t i : order.next()) samples[i].push_back(run_batch(entries[i]));
      if (r >= 2 && now_seconds() - t_start > opt.max_seconds) break;
    }
  }
  for (std::size_t i = 0; i < k; ++i) {
    Measurement& m = out[i];
    m.ticks_per_call = median(samples[i]);
    m.mad_ticks = mad(samples[i]);
    m.ns_per_call = m.ticks_per_call / hz * 1e9;
    m.gbps = m.ns_per_call > 0 ? double(size) / m.ns_per_call : 0;
    m.samples = samples[i].size();
  }
  return out;
}

}  // namespace copysynth

namespace copysynth {

ReplayBuffers::ReplayBuffers(std::uint64_t max_size, bool cold) : cold_(cold) {
  // A slot holds a call at any page offset (< 4096), plus 64 bytes of the read-back's overrun,
  // plus a source up to 4095 bytes after its destination (Call::src_delta < 0); a source before
  // its destination (at most max_size + 4095 bytes) lands in the memory before the slot: the
  // source buffer, or the slot before, each at least that large.
  slot_ = (max_size + 2 * 4096 + 64 + 4095) & ~std::size_t{4095};
  std::size_t each = slot_;
  if (cold) {
    // A call starts at one of the 65536 pages of the first 256 MiB and its slot fits behind any
    // of them: the calls spread over 256 MiB whatever the longest length (slots side by side
    // left a workload with a 4 MiB length 64 places, which stayed in the caches).
    each = (std::size_t{256} << 20) + slot_;
    slots_ = (std::size_t{256} << 20) / 4096;
  }
  mapped_ = 2 * each;
  void* p = mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  src_ = static_cast<std::uint8_t*>(p);
  dst_ = src_ + each;
  for (std::size_t i = 0; i < each; i += 64) src_[i] = static_cast<std::uint8_t>(i / 64);
  std::memset(dst_, 0, each);
}

ReplayBuffers::~ReplayBuffers() {
  if (src_) munmap(src_, mapped_);
}

namespace {
/// The read-back replays' load: the last 8 bytes of [d, d + len) (its last byte below 8 bytes;
/// `none` for len = 0, where nothing was written).
inline std::uint64_t last_bytes(const std::uint8_t* d, std::uint32_t len, std::uint64_t none) {
  std::uint64_t v = none;
  if (len >= 8) std::memcpy(&v, d + len - 8, 8);
  else if (len) v = d[len - 1];
  return v;
}
}  // namespace

std::vector<Measurement> replay(Operation op, const std::vector<const void*>& entries, const std::vector<Call>& calls,
                                ReplayBuffers& buf, const TimingOptions& opt) {
  const std::size_t k = entries.size();
  std::vector<Measurement> out(k);
  if (k == 0 || calls.empty()) return out;
  double bytes = 0;
  for (const auto& c : calls) bytes += c.size;
  const double mean_bytes = bytes / double(calls.size());
  const double hz = tsc_hz();
  auto run = [&](const void* entry) -> double {
    std::uint64_t t0 = 0, t1 = 0;
    const std::size_t n = calls.size();
    switch (op) {
      case Operation::kMemcpy:
      case Operation::kMemmove: {
        const auto fn = reinterpret_cast<CopyFn>(const_cast<void*>(entry));
        if (opt.use == Use::kThenRead) {
          // Each call's source address waits on a load of the previous copy's last bytes (ANDed
          // with an opaque zero): the replay runs at the speed of copy + store-to-load forwarding.
          std::uint64_t zero = 0, x = 0;
          asm volatile("" : "+r"(zero));
          t0 = tsc_begin();
          for (std::size_t i = 0; i < n; ++i) {
            std::uint8_t* d = buf.dst(i, calls[i]);
            const std::uint32_t len = calls[i].size;
            fn(d, buf.src(i, calls[i]) + x, len);
            x = last_bytes(d, len, x) & zero;
          }
          t1 = tsc_end();
          asm volatile("" : : "r"(x));
          break;
        }
        t0 = tsc_begin();
        for (std::size_t i = 0; i < n; ++i)
          fn(buf.dst(i, calls[i]), buf.src(i, calls[i]), calls[i].size);
        t1 = tsc_end();
        break;
      }
      case Operation::kFill: {
        const auto fn = reinterpret_cast<FillFn>(const_cast<void*>(entry));
        if (opt.use == Use::kThenRead) {
          // As for copies: each call's destination waits on a load of the previous fill's last
          // bytes (a program that sets a small struct and then reads a field of it). A masked
          // store does not forward to that load; plain head/tail stores do.
          std::uint64_t zero = 0, x = 0;
          asm volatile("" : "+r"(zero));
          t0 = tsc_begin();
          for (std::size_t i = 0; i < n; ++i) {
            std::uint8_t* d = buf.dst(i) + calls[i].dst_offset + x;
            const std::uint32_t len = calls[i].size;
            fn(d, 0x5A, len);
            x = last_bytes(d, len, x) & zero;
          }
          t1 = tsc_end();
          asm volatile("" : : "r"(x));
          break;
        }
        t0 = tsc_begin();
        for (std::size_t i = 0; i < n; ++i) fn(buf.dst(i) + calls[i].dst_offset, 0x5A, calls[i].size);
        t1 = tsc_end();
        break;
      }
      case Operation::kClearPage: {
        const auto fn = reinterpret_cast<ClearPageFn>(const_cast<void*>(entry));
        t0 = tsc_begin();
        for (std::size_t i = 0; i < n; ++i) fn(reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(buf.dst(i)) & ~std::uintptr_t{4095}));
        t1 = tsc_end();
        break;
      }
    }
    return double(t1 - t0) / double(n);
  };
  for (unsigned r = 0; r < std::max(1u, opt.warmup_rounds); ++r)
    for (std::size_t i = 0; i < k; ++i) run(entries[i]);
  std::vector<std::vector<double>> samples(k);
  const double t_start = now_seconds();
  RoundOrder order(k);
  for (unsigned r = 0; r < opt.rounds; ++r) {
    for (std::size_t i : order.next()) samples[i].push_back(run(entries[i]));
    if (r >= 2 && now_seconds() - t_start > opt.max_seconds) break;
  }
  for (std::size_t i = 0; i < k; ++i) {
    Measurement& m = out[i];
    m.ticks_per_call = median(samples[i]);
    m.mad_ticks = mad(samples[i]);
    m.ns_per_call = m.ticks_per_call / hz * 1e9;
    m.gbps = m.ns_per_call > 0 ? mean_bytes / m.ns_per_call : 0;
    m.samples = samples[i].size();
  }
  return out;
}

std::vector<std::vector<Measurement>> measure_passes(Operation op, const std::vector<const void*>& entries,
                                                     const std::vector<PassCase>& cases, unsigned passes,
                                                     const std::function<void(unsigned)>& after_pass) {
  std::uint64_t max_n = 4096;
  for (const auto& c : cases) max_n = std::max(max_n, c.size);
  // samples[case][entry][field]: ticks, ns, GB/s of each pass.
  std::vector<std::vector<std::array<std::vector<double>, 3>>> samples(
      cases.size(), std::vector<std::array<std::vector<double>, 3>>(entries.size()));
  for (unsigned pass = 0; pass < passes; ++pass) {
    BenchBuffers buf(max_n + 4096);  // fresh pages each pass
    for (std::size_t i = 0; i < cases.size(); ++i) {
      const PassCase& c = cases[i];
      const auto m = compare(op, entries, buf, c.size, c.src_align, c.dst_align, c.opt);
      for (std::size_t k = 0; k < entries.size(); ++k) {
        samples[i][k][0].push_back(m[k].ticks_per_call);
        samples[i][k][1].push_back(m[k].ns_per_call);
        samples[i][k][2].push_back(m[k].gbps);
      }
    }
    if (after_pass) after_pass(pass + 1);
  }
  std::vector<std::vector<Measurement>> out(cases.size(), std::vector<Measurement>(entries.size()));
  for (std::size_t i = 0; i < cases.size(); ++i)
    for (std::size_t k = 0; k < entries.size(); ++k) {
      Measurement& m = out[i][k];
      m.ticks_per_call = median(samples[i][k][0]);
      m.mad_ticks = mad(samples[i][k][0]);
      m.ns_per_call = median(samples[i][k][1]);
      m.gbps = median(samples[i][k][2]);
      m.samples = passes;
    }
  return out;
}

}  // namespace copysynth
