// copysynth — profiles: a program's own memcpy, memmove and memset calls, recorded by the
// LD_PRELOAD shim (COPYSYNTH_PROFILE=FILE) and read by `autotune --workload profile:FILE` and
// `autotune --show FILE`.
//
// A profile file is JSON Lines: one JSON object (a "record") per line, appended by each process
// that recorded (at exit, and each time the signal named by COPYSYNTH_PROFILE_SIGNAL arrives), so
// a command that forks or runs other programs under the shim leaves one record per process, as a
// gcov .gcda file accumulates runs. Remove the file to start afresh. Record layout (schema 1):
//
//   { "copysynth_profile": 1, "program": "/usr/bin/sqlite3", "pid": 1234,
//     "reason": "exit" | "signal", "cpu": "<CpuInfo::signature()>",
//     "window_calls": 256, "sample_period": 4096,
//     "ops": { "memcpy": { "calls": 6012345, "bytes": 123456789,
//                          "sizes": [[0, 0, 12], [1, 1, 40], ..., [4096, 5119, 7]],
//                          "src_mod64": [64 counts], "dst_mod64": [64 counts],
//                          "distance": { "far": n, "alias4k": n, "overlap": n } },
//              "memmove": {...}, "memset": {...} },
//     "windows": [ { "thread": 1, "first_call": 0,
//                    "calls": [["memcpy", 24, 1032, 3080, "far"], ...] }, ... ] }
//
// "sizes" holds [lo, hi, count] triples (bytes, inclusive): one per length below
// kProfileExactSizes (lo == hi), then buckets of a quarter of a power of two ([4096, 5119],
// [5120, 6143], ...: size_bucket()), only those with a count. A memset "call" records the
// destination only: its src fields are 0 and its distance "far". A window is `window_calls`
// consecutive calls of one thread in program order, every operation interleaved as the program
// made them: [operation, length (bytes), source address mod 4096, destination address mod 4096,
// distance class]. Which windows are kept: one starts every `sample_period` calls of a thread (the
// first at its call 0); when a thread's window store (64 windows) is full, every other window is
// dropped and the period doubles, so a long run keeps a bounded, evenly spread sample. Each thread
// has its own period: the one in the record is the largest final period among its threads (a
// thread that made fewer calls kept windows at a shorter period; its windows' first_call numbers
// show which). A window still filling when the record was written holds fewer calls.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "copysynth/params.hpp"
#include "copysynth/result.hpp"

namespace copysynth {

/// Schema of a profile record ("copysynth_profile" field).
inline constexpr int kProfileSchema = 1;
/// Lengths below this are counted one by one; longer ones in size_bucket()s (bytes).
inline constexpr std::uint64_t kProfileExactSizes = 4096;
/// The largest profile file read.
inline constexpr std::uint64_t kMaxProfileBytes = std::uint64_t{256} << 20;

/// Where dst lies relative to src (addresses in bytes, n = length):
///   kOverlap  the ranges [src, src+n) and [dst, dst+n) share a byte (memmove's case);
///   kAlias4k  no overlap, and 0 < (dst - src) mod 4096 < 1024: dst just ahead of src within a
///             page, where a forward loop's loads have the low 12 address bits of earlier stores
///             (4K aliasing; the largest `alias_window` of params.hpp);
///   kFar      anything else (and every memset).
enum class Distance : std::uint8_t { kFar, kAlias4k, kOverlap };
std::string_view name_of(Distance d) noexcept;

/// The distance class of a copy of n bytes from src to dst.
constexpr Distance distance_class(std::uintptr_t dst, std::uintptr_t src, std::uint64_t n) noexcept {
  if (n != 0 && (dst - src < n || src - dst < n)) return Distance::kOverlap;
  const std::uintptr_t d = (dst - src) & 4095;
  return d != 0 && d < 1024 ? Distance::kAlias4k : Distance::kFar;
}

/// The histogram bucket of a length (bytes): [n, n] below kProfileExactSizes, else the quarter
/// of the power of two n lies in: for 2^k <= n < 2^(k+1), width 2^(k-2).
struct SizeBucket {
  std::uint64_t lo = 0, hi = 0;  ///< bytes, inclusive
  std::uint64_t count = 0;       ///< calls
};
constexpr SizeBucket size_bucket(std::uint64_t n) noexcept {
  if (n < kProfileExactSizes) return {n, n, 0};
  unsigned k = 63;
  while (!(n >> k & 1)) --k;
  const std::uint64_t w = std::uint64_t{1} << (k - 2);
  const std::uint64_t lo = n & ~(w - 1);
  return {lo, lo + (w - 1), 0};
}

/// One operation's totals in a record (or summed over records).
struct OpProfile {
  std::uint64_t calls = 0;
  std::uint64_t bytes = 0;
  std::vector<SizeBucket> sizes;             ///< ascending by lo, counts > 0
  std::array<std::uint64_t, 64> src_mod64{};  ///< calls by source address mod 64 (memset: all 0)
  std::array<std::uint64_t, 64> dst_mod64{};  ///< calls by destination address mod 64
  std::array<std::uint64_t, 3> distance{};    ///< calls by Distance (index = enum value)
};

/// One recorded call of a window.
struct ProfiledCall {
  Operation op = Operation::kMemcpy;  ///< kMemcpy, kMemmove or kFill
  std::uint64_t size = 0;             ///< bytes
  std::uint16_t src_page_offset = 0;  ///< source address mod 4096 (0 for memset)
  std::uint16_t dst_page_offset = 0;  ///< destination address mod 4096
  Distance distance = Distance::kFar;
};

/// Consecutive calls of one thread, in program order.
struct ProfileWindow {
  std::uint64_t thread = 0;      ///< a number per thread within the record (not the TID)
  std::uint64_t first_call = 0;  ///< the thread's call number of the first call in the window
  std::vector<ProfiledCall> calls;
};

/// One line of a profile file: one process, from its start (or its last signal dump) to its exit
/// (or this signal dump).
struct ProfileRecord {
  std::string program;  ///< /proc/self/exe of the process
  std::uint64_t pid = 0;
  std::string reason;  ///< "exit" or "signal"
  std::string cpu;     ///< CpuInfo::signature() of the host that recorded it
  std::uint64_t window_calls = 0;
  std::uint64_t sample_period = 0;
  std::array<OpProfile, 3> ops;  ///< memcpy, memmove, memset (index: profile_index())
  std::vector<ProfileWindow> windows;
};

/// Index of an operation in ProfileRecord::ops: memcpy 0, memmove 1, fill (memset) 2; -1 else.
constexpr int profile_index(Operation op) noexcept {
  return op == Operation::kMemcpy ? 0 : op == Operation::kMemmove ? 1 : op == Operation::kFill ? 2 : -1;
}

/// A profile file: its records in file order.
struct Profile {
  std::string path;
  std::vector<ProfileRecord> records;
  /// Why a last line cut short (no newline after it: a write interrupted, a copy truncated) was
  /// left out, "FILE:LINE: ..."; empty when every line is a record.
  std::string cut_short;
  /// The operation's totals summed over every record (sizes merged by bucket).
  OpProfile total(Operation op) const;
};

/// One record as the single line the shim writes (no trailing newline); load_profile reads it
/// back equal.
std::string profile_record_json(const ProfileRecord& r);

/// Parses one record line. kInvalidArgument naming the field ("ops.memcpy.sizes[3]: ...") for a
/// line that is not a schema-1 record: not JSON, a missing or mistyped field, another schema, an
/// unknown operation or distance, a size bucket that is not one of size_bucket()'s, an offset
/// >= 4096.
Result<ProfileRecord> parse_profile_record(const std::string& line);

/// Reads a profile file (JSON Lines of records). kInvalidArgument for an empty path; kWisdomIo
/// when it cannot be read, is not a regular file or is above kMaxProfileBytes (read_regular_file);
/// kInvalidArgument "FILE:LINE: ..." for a malformed line (nothing of the file is used then; but
/// a malformed last line without a newline after it, a record cut short, after at least one
/// record, is left out and said in Profile::cut_short, so the records before it are kept) or a
/// file without records, saying how a profile is recorded; kInvalidArgument "FILE is a wisdom
/// file, not a profile; use --from FILE" for a wisdom or fleet file (is_wisdom_text), the other
/// file autotune reads.
Result<Profile> load_profile(const std::string& path);

/// Whether `text` starts with a profile record: its first line that is not blank names
/// "copysynth_profile" (looked for, not parsed, so a record cut short counts too). The wisdom
/// reader calls it to say that a file is a profile instead of "not valid JSON".
bool starts_with_profile_record(std::string_view text) noexcept;

/// Whether the file `path` starts with a profile record (starts_with_profile_record of its first
/// 4 KiB: a record names "copysynth_profile" first); false when it cannot be read.
bool is_profile_file(const std::string& path);

/// Whether `text` is a wisdom or fleet file (autotune --emit, --merge): one JSON object with
/// "schema" and "entries", "cpu" or "hosts". The profile reader calls it to say that a file is
/// wisdom instead of "not valid JSON".
bool is_wisdom_text(const std::string& text);

}  // namespace copysynth
