// copysynth — timing copy routines with the TSC.
//
// These VMs expose no hardware performance counters, so every time is read from the time-stamp
// counter: `lfence; rdtsc` before and `rdtscp; lfence` after a batch of calls (Intel white paper
// "How to Benchmark Code Execution Times on Intel IA-32 and IA-64", 2010). The TSC is invariant
// (constant rate, not the core clock), so ticks convert to seconds with a frequency calibrated
// once against CLOCK_MONOTONIC_RAW. Candidates are compared as ratios measured in the same run,
// interleaved round by round (a fresh seeded permutation of the routines every round, so none
// always follows the same one), with medians and MAD —
// the shape of Highway's hwy/auto_tune.h and FFTW's kernel/timer.c.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "copysynth/result.hpp"
#include "copysynth/routine.hpp"
#include "copysynth/stats.hpp"
#include "copysynth/workload.hpp"

namespace copysynth {

/// Current TSC value (ticks), serialised: `lfence; rdtsc; lfence`.
std::uint64_t tsc_begin() noexcept;
/// Current TSC value (ticks) after all earlier instructions retired: `rdtscp; lfence`.
std::uint64_t tsc_end() noexcept;

/// TSC ticks per second, calibrated over ~50 ms on first use (thread-safe).
double tsc_hz();

/// Pins the calling thread to the CPU it is running on for the object's lifetime, then restores
/// the previous affinity mask. `ok()` is false (and nothing changes) when the kernel refuses.
class ThreadPin {
 public:
  ThreadPin();
  ~ThreadPin();
  ThreadPin(const ThreadPin&) = delete;
  ThreadPin& operator=(const ThreadPin&) = delete;
  bool ok() const { return ok_; }
  int cpu() const { return cpu_; }

 private:
  bool ok_ = false;
  int cpu_ = -1;
  unsigned char saved_[128] = {};  // cpu_set_t storage
};

/// Median and spread of repeated measurements of one routine at one point.
struct Measurement {
  double ticks_per_call = 0;   ///< median TSC ticks per call
  double mad_ticks = 0;        ///< median absolute deviation of ticks per call
  double ns_per_call = 0;      ///< ticks_per_call converted with tsc_hz()
  double gbps = 0;             ///< bytes / ns_per_call (1e9 bytes per second); 0 when size 0
  std::size_t samples = 0;     ///< number of batches behind the median
};

/// Two page-aligned buffers (src, dst) with `bytes` usable bytes each plus 4 KiB of slack for
/// offsets, touched once so that no page fault lands in a timed batch.
class BenchBuffers {
 public:
  explicit BenchBuffers(std::size_t bytes);
  ~BenchBuffers();
  BenchBuffers(const BenchBuffers&) = delete;
  BenchBuffers& operator=(const BenchBuffers&) = delete;
  std::uint8_t* src() const { return src_; }
  std::uint8_t* dst() const { return dst_; }
  std::size_t bytes() const { return bytes_; }

 private:
  std::uint8_t* src_ = nullptr;
  std::uint8_t* dst_ = nullptr;
  std::size_t bytes_ = 0, mapped_ = 0;
};

/// What the caller does with the data right after each call (copies; fill: kThenRead only).
/// A non-temporal store or a `rep movsb` that leaves the destination outside the caches looks
/// fast in a loop that never touches the result and slow in a program that reads it next
/// (LLVM libc benchmarks/RATIONALE.md; ClickHouse's memcpy notes: touch the data after copying).
/// The use is timed with the call: a figure is the cost of copy + use.
enum class Use : std::uint8_t {
  kCopy,       ///< nothing: the copy alone (the seeds' tables)
  kThenRead,   ///< a consumer: one 8-byte load from every 64-byte line of [dst, dst+n)
  kThenWrite,  ///< a producer refilling its buffer: one 8-byte store to every line of [src, src+n)
};
std::string_view use_name(Use u) noexcept;  ///< "copy", "copy+read", "copy+write"
/// The uses that mean something for `op`: copies all three; fill and clear_page the copy alone
/// and read back (they have no source to overwrite). The threshold stages and the report's use
/// table both time these.
std::vector<Use> uses_of(Operation op);

/// The cache state each timed batch starts from (compare() sets it before the batch, untimed).
/// Interleaving routines round by round guards against drift, but without a reset one routine's
/// batch starts in the state the previous routine left: after a non-temporal variant has pushed
/// the destination out of the caches, a plain loop pays to fetch it back (the 0.2.0 tuner chose
/// non-temporal stores from 256 KiB on an AMD Zen 3 for that reason alone).
enum class CacheState : std::uint8_t {
  kAsLeft,  ///< no reset: whatever the previous batch left (tight loops over small lengths)
  kWarm,    ///< the caller just wrote the source and has read the destination: one store to
            ///< every line of the source, one load from every line of the destination
  kCold,    ///< neither buffer touched for a while: every line of both flushed (clflush)
};
std::string_view cache_state_name(CacheState s) noexcept;  ///< "as left", "warm", "cold"

struct TimingOptions {
  unsigned rounds = 9;          ///< timed rounds; each round times one batch of every routine
  unsigned warmup_rounds = 2;   ///< untimed rounds first
  double batch_seconds = 20e-6; ///< target duration of one batch (sets the calls per batch)
  double max_seconds = 2.0;     ///< cap for one compare() call; rounds stop early past it
  unsigned min_calls = 1;       ///< at least this many calls per batch, whatever batch_seconds says:
                                ///< with a cache reset before each batch, its first call alone
                                ///< must not decide the figure
  Use use = Use::kCopy;         ///< what follows each call (timed with it)
  CacheState state = CacheState::kAsLeft;  ///< set before every batch (untimed)
  bool solo = false;            ///< time each routine in a run of its own (all its rounds back to
                                ///< back, the routines in turn) instead of interleaving round by
                                ///< round: the check that an interleaved result was not made by
                                ///< the neighbours' cache footprint
};

/// Calls `entry` (a function of `op`'s call form) the way a program's calls would have before it
/// is timed: every length of 0-257 bytes near a size-class edge and 384 B-4 KiB, each in the
/// middle of the buffers, misaligned, and across a 4 KiB page end (for both pointers), and for
/// memmove overlapping both ways; twice. A routine's rarely taken branches (n = 0, a page guard,
/// the next size class) are then ones it has taken, as in a program and as the conformance check
/// leaves the routines it verified; a routine that never took them runs short calls up to two
/// cycles faster per call than it will in a program, drawn per process, on AMD family 26
/// (docs/perf/short-call-modes/, "Trained branches"). Writes only inside `buf`, never to its
/// source; a call that would not fit in buf.bytes() is left out (every placement fits from
/// 12288 bytes on). Nothing for clear_page. About 450 calls (memmove 600), tens of microseconds.
void prime_branches(Operation op, const void* entry, BenchBuffers& buf);

/// Times each entry point in `entries` — functions of `op`'s call form (routine.hpp) — on
/// `size` bytes at src+src_align / dst+dst_align of `buf`, interleaved round by round (or solo,
/// opt.solo), each batch starting from opt.state and each call followed by opt.use. Fill
/// stores the byte 0x5A; clear_page ignores size and the alignments and clears the page-aligned
/// dst. Each entry point is first primed once per process, operation and CPU (prime_branches(),
/// in 16 KiB buffers of compare()'s own), so every routine compared starts from the same branch
/// history, the one a program gives it. Returns one
/// Measurement per entry, in order (ticks per call include the use). Throws
/// std::invalid_argument when `size` + 64 does not fit the buffers.
std::vector<Measurement> compare(Operation op, const std::vector<const void*>& entries, BenchBuffers& buf,
                                 std::uint64_t size, std::uint32_t src_align, std::uint32_t dst_align,
                                 const TimingOptions& opt = {});

/// compare() for memcpy-form functions.
std::vector<Measurement> compare(const std::vector<CopyFn>& fns, BenchBuffers& buf, std::uint64_t size,
                                 std::uint32_t src_align, std::uint32_t dst_align,
                                 const TimingOptions& opt = {});

/// Buffers for replaying a sequence of calls (workload.hpp, Call). Hot: src and dst windows of
/// max_size + 8 KiB + 64, reused by every call (L1/L2-resident, as LLVM libc's benchmarks).
/// Cold: call i starts at a page of the first 256 MiB of each of two arenas (256 MiB plus one
/// window: about 530 MB together for the production lengths), picked by a multiplicative hash
/// of i, so its lines are not cached (on a CPU whose last-level cache is below 256 MiB).
class ReplayBuffers {
 public:
  ReplayBuffers(std::uint64_t max_size, bool cold);
  ~ReplayBuffers();
  ReplayBuffers(const ReplayBuffers&) = delete;
  ReplayBuffers& operator=(const ReplayBuffers&) = delete;
  /// Start of the window of call number i (bytes); offsets of the Call are added to it.
  std::uint8_t* src(std::size_t i) const { return src_ + base(i); }
  std::uint8_t* dst(std::size_t i) const { return dst_ + base(i); }
  /// The source and destination of call number i (Call::src_delta: the source in the
  /// destination's buffer, that many bytes behind the destination).
  std::uint8_t* dst(std::size_t i, const Call& c) const { return dst(i) + c.dst_offset; }
  std::uint8_t* src(std::size_t i, const Call& c) const {
    return c.src_delta ? dst(i, c) - c.src_delta : src(i) + c.src_offset;
  }
  bool cold() const { return cold_; }

 private:
  std::size_t base(std::size_t i) const { return cold_ ? (i * 2654435761u) % slots_ * 4096 : 0; }
  std::uint8_t* src_ = nullptr;
  std::uint8_t* dst_ = nullptr;
  std::size_t mapped_ = 0, slot_ = 0, slots_ = 1;
  bool cold_ = false;
};

/// Times each entry point replaying `calls` (one timed pass of the whole sequence per round,
/// interleaved round by round). Measurement::ns_per_call is per call of the sequence; gbps is
/// the mean bytes per call over ns_per_call. Fill stores the byte 0x5A. With opt.use ==
/// Use::kThenRead, each call's source address (fill: destination address) depends on a load of
/// the previous call's last copied or set bytes (up to 8): the copy-then-read latency of the
/// sequence, not its throughput (a routine whose stores cannot forward to a following load, as a
/// masked store on AMD family 26, shows it here). clear_page ignores opt.use. opt.state is not used.
std::vector<Measurement> replay(Operation op, const std::vector<const void*>& entries,
                                const std::vector<Call>& calls, ReplayBuffers& buf,
                                const TimingOptions& opt = {});

/// One case of measure_passes(): `size` bytes at src + src_align / dst + dst_align (bytes),
/// timed with `opt` (compare()).
struct PassCase {
  std::uint64_t size = 0;
  std::uint32_t src_align = 0, dst_align = 0;
  TimingOptions opt;
};

/// Times `entries` (compare(): interleaved round by round) on every case, `passes` times over
/// the whole list, each pass on freshly mapped BenchBuffers of the largest case + 4 KiB: a burst
/// of interference from another process hits one pass of a case, not all, and one physical
/// placement of the buffers (which can move a figure by 10-30 %) does not decide it. Returns
/// out[case][entry]: the medians across passes of ticks_per_call, ns_per_call and gbps, with
/// mad_ticks the spread of ticks_per_call across passes and samples = passes. `after_pass`
/// (optional) is called with the 1-based pass number after each pass (progress lines).
/// Throws what compare() throws.
std::vector<std::vector<Measurement>> measure_passes(Operation op, const std::vector<const void*>& entries,
                                                     const std::vector<PassCase>& cases, unsigned passes,
                                                     const std::function<void(unsigned)>& after_pass = {});

}  // namespace copysynth
