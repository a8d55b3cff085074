// copysynth — workloads: what a routine is tuned and reported on.
//
// Two kinds:
//   - points: (size, src alignment, dst alignment), each timed in a tight loop — the seeds'
//     matrix, the tables of the Linux memcpy threads this project started from;
//   - a size distribution: a seeded sequence of calls whose sizes are drawn by probability, with
//     random src/dst offsets inside a 4 KiB window (buffers L1/L2-resident, as LLVM libc's
//     benchmarks do), replayed as a whole, so that branch predictors see the real mix instead of
//     learning one size. A cold-cache variant spreads the calls over a 256 MiB arena;
//   - a profile (`profile:FILE`, recorded by the shim: copysynth/profile.hpp): a distribution
//     whose replayed calls are the program's own, window by window in program order, with the
//     program's page offsets (profile_workload()); `profile:FILE,program=NAME` keeps the records
//     of one program of a file that several wrote (select_program()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "copysynth/params.hpp"
#include "copysynth/profile.hpp"
#include "copysynth/result.hpp"

namespace copysynth {

/// One measured case: copy `size` bytes from an address src_align bytes past a page boundary to
/// one dst_align bytes past one (0..4095; the seeds' matrix uses 0..63, the misaligned matrix
/// also 2048), repeated in a loop.
struct Point {
  std::uint64_t size = 0;
  std::uint32_t src_align = 0;
  std::uint32_t dst_align = 0;
  bool operator==(const Point&) const = default;
};

/// Probability of each length: p[n] is the share of calls that copy n bytes (n = 0..p.size()-1).
/// Format on disk (data/size-distributions): one line of comma-separated probabilities.
struct SizeDistribution {
  std::string name;       ///< "MemcpyGoogleA", or the file name for a user's file ("mine.csv")
  std::vector<double> p;  ///< normalised to sum to 1
  double mean_size() const;
  std::uint64_t max_size() const { return p.empty() ? 0 : p.size() - 1; }
};

/// One call of a replayed sequence (bytes).
struct Call {
  std::uint32_t size = 0;
  std::uint32_t src_offset = 0;
  std::uint32_t dst_offset = 0;
  /// 0: the source is in the source buffer at src_offset. Otherwise the source lies `src_delta`
  /// bytes before the destination (after it, when negative), in the destination's buffer: a
  /// recorded copy from just behind its own destination (an LZ77 match, a memmove inside one
  /// array), which reads bytes the calls before it wrote; -4096 < src_delta < size + 4096.
  std::int32_t src_delta = 0;
};

struct Workload {
  std::string name;
  std::vector<Point> points;                     ///< point workloads
  std::optional<SizeDistribution> distribution;  ///< distribution workloads
  bool cold = false;                             ///< distribution calls spread over 256 MiB
  /// A profile's windows of calls, each in program order (profile_workload()): replayed instead
  /// of calls drawn from `distribution`, which then only weighs the dispatch tree and sizes the
  /// buffers.
  std::vector<std::vector<Call>> recorded;
  std::string note;  ///< a profile's summary: records, calls, windows, calls left out (said by the search)
  /// What makes a tuning on this workload doubtful (a profile with few calls, or whose last record
  /// was cut short: Profile::cut_short), or empty. tune() does not say it: tune_and_install says
  /// it to opt.progress ("warning: ..."), autotune on stderr, --quiet or not.
  std::string warning;
  bool is_distribution() const { return distribution.has_value(); }
};

/// The `count` calls a distribution workload replays (seeded): for a profile, its recorded windows,
/// each kept whole and in program order (so branch predictors see the program's own sequences),
/// every window once in a random order, then random windows until `count` calls (a recording of
/// a few windows is not replayed as one fixed loop that predictors learn by heart); else
/// make_calls(*distribution, count, seed). Empty for a point workload.
std::vector<Call> replay_calls(const Workload& w, std::size_t count, std::uint64_t seed);

/// The seeds' matrix (the Linux memcpy threads this project started from):
///   lengths 1, 7, 8, 16, 32, 48, 64, 80, 128, 256, 512, 1024, 2048, 4096 at src/dst alignment
///   0/0, 0/4, 4/0, 4/4; lengths 1024..15360 step 1024 at 0/0; 262144 with dst misaligned by
///   0, 1, 2, 4, 8, 16, 32; plus 64 MiB at 0/0 and 4/4.
/// For fill the source alignment means nothing, so points differing only in it are merged; for
/// clear_page the workload is the one page (4096 bytes, page-aligned).
Workload seeds_workload(Operation op = Operation::kMemcpy);

/// The misaligned-destination matrix of the performance targets (docs/performance.md): lengths 4 KiB,
/// 8 KiB, ..., 512 KiB (powers of two), seven placements each (src/dst offsets in their pages):
/// 0/0, the length's aligned reference; 0/1, 0/4, 0/15, 0/33, dst just past a page-aligned src,
/// so 0 < (dst - src) mod 4096 < 64: 4K-aliasing, where a forward loop's loads wait on its own
/// stores and rep movsb slows on some CPUs; 2048/4 and 2048/33, dst as misaligned but 2052 and
/// 2081 bytes from src mod 4096: not aliasing, as most misaligned pairs a program makes (until
/// the fourteenth round of docs/performance.md the matrix had only the aliasing ones).
/// For fill, which has no src, the five src-0 placements only. Not defined for clear_page (one
/// page-aligned length).
Workload misaligned_workload(Operation op = Operation::kMemcpy);

/// Size in bytes as the seeds' tables print it: plain bytes, or "64M" for multiples of 1 MiB.
std::string size_label(std::uint64_t size);

/// Parses a distribution file's text (comma-separated probabilities, optional whitespace and
/// trailing newline). Errors (kInvalidArgument): no numbers, a negative or non-numeric field (shown
/// with quoted_bytes: non-printable bytes as \ooo), a sum of 0, more than 1 << 24 fields. The
/// probabilities are normalised to sum to 1.
Result<SizeDistribution> parse_distribution(const std::string& name, const std::string& text);

/// The largest distribution file read (the shipped ones are under 50 KB; 1 << 24 fields of a few
/// digits each fit).
inline constexpr std::uint64_t kMaxDistributionBytes = std::uint64_t{256} << 20;

/// True when load_distribution takes `name_or_path` as a file path: it contains '/' or ends in
/// ".csv" (otherwise it is the name of a shipped distribution).
bool names_distribution_file(const std::string& name_or_path);

/// Loads a distribution by file path (names_distribution_file) or by the name
/// of a shipped one ("MemcpyGoogleA"), looked up in data_dirs(). kInvalidArgument for a name that
/// names nothing, naming the directories searched and the names available; kWisdomIo for a file
/// that cannot be read, named with the reason ("cannot read size distribution X: No such file or
/// directory"; one that is not a regular file, or is above kMaxDistributionBytes, is refused
/// unread: read_regular_file); kWisdomMalformed for a file that is not a distribution
/// (parse_distribution's message, the path in place of the name).
Result<SizeDistribution> load_distribution(const std::string& name_or_path);

/// Where shipped distributions are looked for, in order: $COPYSYNTH_DATA_DIR (when set and not
/// empty); ../share/copysynth/size-distributions next to the running program (/proc/self/exe: an
/// autotune installed under any prefix finds its own, and a program of the build tree the copy
/// of data/size-distributions the build made there); share/copysynth/size-distributions of the
/// prefix configured at build time (CMAKE_INSTALL_PREFIX). Each directory once.
std::vector<std::string> data_dirs();

/// Names of the shipped distributions found in data_dirs() (without .csv), sorted.
std::vector<std::string> distribution_names();

/// The eight production distributions of the automemcpy paper: MemcpyGoogle{A,B,D,L,M,Q,S,U}.
const std::vector<std::string>& production_distributions();

/// Their mean, each weighted equally ("production mix"): p[n] = mean over the eight of p_k[n].
/// std::nullopt when any of them cannot be loaded (data_dirs() holds none).
std::optional<SizeDistribution> production_mix();

/// `count` calls with sizes drawn from `d` and offsets uniform in [0, window) (bytes), seeded.
std::vector<Call> make_calls(const SizeDistribution& d, std::size_t count, std::uint64_t seed,
                             std::uint32_t window = 4096);

/// The longest recorded call a profile workload replays (bytes): longer calls (rare: a program
/// copying more than 16 MiB at once) are left out of the replay and the distribution, and counted
/// in the workload's note.
inline constexpr std::uint64_t kMaxReplaySize = std::uint64_t{16} << 20;

/// One program of a profile: the records whose "program" is `path`, and their calls.
struct ProfileProgram {
  std::string path;         ///< ProfileRecord::program (the process's /proc/self/exe)
  std::size_t records = 0;  ///< records of it in the file
  std::uint64_t calls = 0;  ///< memcpy, memmove and memset calls of those records, summed
};

/// The programs of `p`'s records, each once: most calls first, ties in the order the file first
/// names them.
std::vector<ProfileProgram> profile_programs(const Profile& p);

/// The records of `p` whose program is `name`, for a profile of a command that ran several
/// programs (a shell script, a pyenv shim, make: one record per process). A record matches when
/// `name` equals its program path ("/usr/bin/sqlite3") or that path's last component, the text
/// after its last '/' ("sqlite3"); so a last component keeps every path that ends in it
/// (/usr/bin/python3 and /usr/local/bin/python3 both: give the full path to keep one). The result
/// has `p`'s path and the matching records in file order. Errors (kInvalidArgument): an empty
/// `name`; no record matches: "profile FILE: no record of program "NAME"; it has PATH (N records,
/// M calls), ...; select one with profile:FILE,program=NAME" (profile_programs' order).
Result<Profile> select_program(const Profile& p, std::string_view name);

/// The text after "profile:" of a workload name, taken apart.
struct ProfileSpec {
  std::string path;                    ///< the profile file
  std::optional<std::string> program;  ///< NAME of ",program=NAME" (select_program); never empty
};

/// Parses the text after "profile:" of a workload name: "FILE" or "FILE,program=NAME". Text that
/// names an existing file is that file, whole (a file name with a comma, even one with
/// ",program=", keeps working); otherwise it is split at the last ",program=". The selection is
/// part of the workload's name so that the wisdom's "workload" field keeps it and `--from`
/// rebuilds the same workload. Errors (kInvalidArgument): no FILE, an empty NAME, and text that
/// names no file but starts with a regular file followed by something like a misspelt or repeated
/// selector (",prog=xz", ",program=a,program=b", trailing commas).
Result<ProfileSpec> parse_profile_spec(const std::string& spec);

/// The workload of one operation of a recorded profile (copysynth/profile.hpp), named `name`:
///   - distribution: the operation's length histogram summed over the records (a bucket's calls
///     spread evenly over its lengths), up to kMaxReplaySize (calls above it are left out and
///     counted in `note`), and reaching with zero weight the longest call of a window (its
///     max_size() sizes the replay's buffers);
///   - recorded: the recorded windows' calls of this operation (replay_calls() strings them
///     together), each at the program's source and destination address mod 4096 (so page
///     crossings and 4K aliasing are the program's). A call whose destination lay just ahead of
///     its source (distance class alias4k: 0 < (dst - src) mod 4096 < 1024, no overlap) is
///     replayed with its source behind its destination in the same buffer, at the nearest
///     distance of those low 12 bits that does not overlap (Call::src_delta), as an LZ77
///     match or a memmove inside one array copies bytes written shortly before; so is a memmove
///     whose ranges overlapped (its delta taken as the signed distance of the two page offsets).
///     Every other call copies between separate buffers.
/// The note (Workload::note, said by the search) counts records, calls and windows; for records
/// of more than one program it names them (profile_programs: path, records, calls), says they are
/// tuned for together and how to select one (profile:FILE,program=NAME). For fewer than
/// kFewProfileCalls calls of the operation, Workload::warning says that so few say little about
/// the program; for a last record cut short (Profile::cut_short), that it was left out.
/// Errors (kInvalidArgument): clear_page (never recorded); no call of the operation in the
/// profile, naming the operations it has; calls but no window of them (a record cut short).
Result<Workload> profile_workload(const Profile& profile, Operation op, const std::string& name);

/// Fewer calls than this of an operation in a profile (calls, all records): profile_workload's
/// warning says that the tuning rests on little (the profile-guided loop's script in
/// docs/profile-guided.md tunes an operation from 1000 calls on).
inline constexpr std::uint64_t kFewProfileCalls = 1000;

/// The workloads of `ops` of one profile, in the order of `ops`, each named `name` (" (cold)"
/// added and Workload::cold set with `cold`): profile_workload of each, but every operation the
/// profile cannot serve is named in one error before any workload is made (kInvalidArgument):
/// clear_page, which profiles do not record, and each operation the program never called, with
/// the operations it did call (`--op all` asks for all four: the error says which to tune).
Result<std::vector<Workload>> profile_workloads(const Profile& profile, const std::vector<Operation>& ops,
                                                const std::string& name, bool cold = false);

/// `autotune --show FILE` for a profile: what was recorded, as text. Key=value lines (strings
/// quoted as --show quotes wisdom: quoted_bytes) for the file, each program (profile_programs:
/// program[i].path, .records, .calls), each record (program, pid, reason, CPU, windows) and each
/// operation's totals (calls, bytes, mean length, the share of calls whose
/// source/destination address is a multiple of 16 and 64, the distance classes); then per
/// operation a table of size classes (0, 1, 2-3, 4-7, ..., 2^k to 2^(k+1)-1 bytes: the histogram's
/// buckets above kProfileExactSizes never straddle two) with
/// the share of calls and of bytes and the cumulative share of calls (percent, one decimal).
/// Operations without calls are listed with calls=0 and no table.
std::string format_profile_summary(const Profile& p);

/// A workload name with the file it names made absolute (absolute_path, file_io.hpp):
/// "profile:FILE[,program=NAME]" (parse_profile_spec) and a .csv path (names_distribution_file);
/// a trailing " (cold)" kept; any other name, or a profile text parse_profile_spec refuses, as it is.
std::string absolute_workload_name(const std::string& name);

/// The name under which wisdom keeps workload `w`, made by make_workload() (or autotune's
/// profile_workloads) from `given`: what makes it again from any directory (`autotune --from`).
/// A .csv path or profile:FILE by the file's absolute path, " (cold)" appended for a cold one
/// (Workload::name shows a .csv by its file name, which names no shipped distribution); any other
/// workload by w.name.
std::string wisdom_workload_name(const std::string& given, const Workload& w);

/// Whether `name` (--workload as given) may be tuned for and kept in wisdom: a name ending in
/// " (cold)" may not, as wisdom_workload_name marks a cold workload so and `autotune --from`
/// reads the mark back as --cold (a profile "run (cold)" or a distribution "Foo (cold)" in the
/// data directory would come back as another workload, cold). kInvalidArgument saying so (and
/// to give --cold for a cold replay); checked by the search's callers (autotune, the C++ API's
/// tune_and_install) before any work. Measuring such a name (--from --report --workload) is
/// not refused: there the mark means --cold.
Status check_tuning_workload_name(const std::string& name);

/// A workload by name: "seeds", "misaligned", a shipped distribution name, a .csv path, or
/// "profile:FILE" or "profile:FILE,program=NAME" (parse_profile_spec, load_profile, select_program
/// with a NAME, then profile_workloads); `cold` selects the cold-cache variant of
/// a distribution or profile (an error for the point workloads). A profile's path given without
/// "profile:" is an error that says to add it (kInvalidArgument), as is a name that is neither a
/// distribution nor a .csv but names a file here.
Result<Workload> make_workload(const std::string& name, Operation op, bool cold = false);

}  // namespace copysynth
