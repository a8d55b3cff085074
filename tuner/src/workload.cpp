// copysynth — workloads (see workload.hpp).
#include "copysynth/workload.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <locale>
#include <map>
#include <random>
#include <sstream>

#include "copysynth/c_format.hpp"
#include "copysynth/file_io.hpp"

namespace copysynth {

Workload seeds_workload(Operation op) {
  Workload w;
  w.name = "seeds";
  if (op == Operation::kClearPage) {
    w.points.push_back({4096, 0, 0});
    return w;
  }
  for (std::uint64_t n : {1, 7, 8, 16, 32, 48, 64, 80, 128, 256, 512, 1024, 2048, 4096})
    for (auto [s, d] : {std::pair{0u, 0u}, {0u, 4u}, {4u, 0u}, {4u, 4u}}) w.points.push_back({n, s, d});
  for (std::uint64_t n = 1024; n <= 15360; n += 1024)
    if (n != 1024 && n != 2048 && n != 4096) w.points.push_back({n, 0, 0});  // those are above
  for (std::uint32_t d : {0u, 1u, 2u, 4u, 8u, 16u, 32u}) w.points.push_back({262144, 0, d});
  w.points.push_back({64ull << 20, 0, 0});
  w.points.push_back({64ull << 20, 4, 4});
  if (op == Operation::kFill) {
    std::vector<Point> merged;
    for (Point p : w.points) {
      p.src_align = 0;
      if (std::find(merged.begin(), merged.end(), p) == merged.end()) merged.push_back(p);
    }
    w.points = merged;
  }
  return w;
}

Workload misaligned_workload(Operation op) {
  Workload w;
  w.name = "misaligned";
  for (std::uint64_t n = 4096; n <= 512 * 1024; n *= 2) {
    for (std::uint32_t d : {0u, 1u, 4u, 15u, 33u}) w.points.push_back({n, 0, d});  // 0/0, then aliasing
    if (op != Operation::kFill)  // a fill has no src: these would time 0/4 and 0/33 again
      for (std::uint32_t d : {4u, 33u}) w.points.push_back({n, 2048, d});         // not aliasing
  }
  return w;
}

std::string size_label(std::uint64_t size) {
  if (size >= (1ull << 20) && size % (1ull << 20) == 0) return std::to_string(size >> 20) + "M";
  return std::to_string(size);
}

double SizeDistribution::mean_size() const {
  double m = 0;
  for (std::size_t n = 0; n < p.size(); ++n) m += double(n) * p[n];
  return m;
}

Result<SizeDistribution> parse_distribution(const std::string& name, const std::string& text) {
  SizeDistribution d;
  d.name = name;
  std::size_t pos = 0, field = 0;
  double sum = 0;
  while (pos <= text.size()) {
    std::size_t end = text.find(',', pos);
    if (end == std::string::npos) end = text.size();
    std::string tok = text.substr(pos, end - pos);
    tok.erase(0, tok.find_first_not_of(" \t\r\n"));
    tok.erase(tok.find_last_not_of(" \t\r\n") + 1);
    if (!(tok.empty() && end == text.size())) {
      // from_chars: '.' is the decimal point whatever setlocale() the program made (strtod would
      // read "0.5" as 0 followed by garbage under a decimal-comma locale such as de_DE).
      double v = 0;
      const auto [stop, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), v);
      if (tok.empty() || ec != std::errc() || stop != tok.data() + tok.size() || !(v >= 0) || v > 1e30)
        return make_error(ErrorCode::kInvalidArgument,
                          name + ": field " + std::to_string(field) + " (the probability of length " +
                              std::to_string(field) + ") is " + quoted_bytes(tok) +
                              ", not a non-negative number; the format is one line of comma-separated "
                              "probabilities, field i for length i");
      d.p.push_back(v);
      sum += v;
      if (d.p.size() > (1u << 24))
        return make_error(ErrorCode::kInvalidArgument, name + ": more than 16 Mi fields (lengths above 16 MiB)");
    }
    ++field;
    pos = end + 1;
  }
  if (d.p.empty() || !(sum > 0))
    return make_error(ErrorCode::kInvalidArgument, name + ": no probabilities (or all zero)");
  for (double& v : d.p) v /= sum;
  while (d.p.size() > 1 && d.p.back() == 0) d.p.pop_back();
  return d;
}

std::vector<std::string> data_dirs() {
  std::vector<std::string> dirs;
  auto add = [&](const std::string& d) {
    if (!d.empty() && std::find(dirs.begin(), dirs.end(), d) == dirs.end()) dirs.push_back(d);
  };
  if (const char* e = std::getenv("COPYSYNTH_DATA_DIR"); e && *e) add(e);
#ifdef COPYSYNTH_EXE_RELATIVE_DATA_DIR
  // <the running program's directory>/../share/copysynth/size-distributions: where `cmake
  // --install --prefix P` puts them for P/bin/autotune, whatever P is, and where the build tree
  // has a copy for its programs (tuner/CMakeLists.txt).
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec && exe.is_absolute())
    add((exe.parent_path() / COPYSYNTH_EXE_RELATIVE_DATA_DIR).lexically_normal().string());
#endif
#ifdef COPYSYNTH_INSTALL_DATA_DIR
  add(COPYSYNTH_INSTALL_DATA_DIR);
#endif
  return dirs;
}

std::vector<std::string> distribution_names() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& dir : data_dirs())
    for (const auto& e : std::filesystem::directory_iterator(dir, ec))
      if (e.path().extension() == ".csv") {
        const std::string n = e.path().stem().string();
        if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
      }
  std::sort(names.begin(), names.end());
  return names;
}

const std::vector<std::string>& production_distributions() {
  static const std::vector<std::string> names{"MemcpyGoogleA", "MemcpyGoogleB", "MemcpyGoogleD",
                                              "MemcpyGoogleL", "MemcpyGoogleM", "MemcpyGoogleQ",
                                              "MemcpyGoogleS", "MemcpyGoogleU"};
  return names;
}

std::optional<SizeDistribution> production_mix() {
  SizeDistribution mix;
  mix.name = "production mix";
  const auto& names = production_distributions();
  for (const auto& name : names) {
    auto d = load_distribution(name);
    if (!d) return std::nullopt;
    if (d->p.size() > mix.p.size()) mix.p.resize(d->p.size(), 0.0);
    for (std::size_t n = 0; n < d->p.size(); ++n) mix.p[n] += d->p[n] / double(names.size());
  }
  return mix;
}

Status check_tuning_workload_name(const std::string& name) {
  constexpr std::string_view mark = " (cold)";
  if (name.size() >= mark.size() && std::string_view(name).substr(name.size() - mark.size()) == mark)
    return make_error(ErrorCode::kInvalidArgument,
                      "--workload " + quoted_bytes(name) + " ends in \" (cold)\", the mark the wisdom gives a cold "
                      "replay, so --from would read the entry back as another workload, cold; for a cold replay "
                      "give --cold, and rename a file (or select a program) whose own name ends so");
  return {};
}

bool names_distribution_file(const std::string& name_or_path) {
  return name_or_path.find('/') != std::string::npos ||
         (name_or_path.size() > 4 && name_or_path.substr(name_or_path.size() - 4) == ".csv");
}

Result<SizeDistribution> load_distribution(const std::string& name_or_path) {
  std::string path;
  std::string name = name_or_path;
  if (names_distribution_file(name_or_path)) {
    path = name_or_path;
    // Shown by its file name, ".csv" kept: a local MemcpyGoogleA.csv is not the shipped
    // MemcpyGoogleA, and the report's rows must not read alike.
    name = std::filesystem::path(name_or_path).filename().string();
  } else {
    for (const auto& dir : data_dirs()) {
      const std::string candidate = dir + "/" + name_or_path + ".csv";
      std::error_code ec;
      if (std::filesystem::is_regular_file(candidate, ec)) {
        path = candidate;
        break;
      }
    }
    if (path.empty()) {
      std::string dirs, names;
      for (const auto& d : data_dirs()) dirs += (dirs.empty() ? "" : ", ") + d;
      for (const auto& n : distribution_names()) names += (names.empty() ? "" : ", ") + n;
      std::error_code ec;
      const std::string here = std::filesystem::is_regular_file(name_or_path, ec)
                                   ? "; " + name_or_path + " is a file here: give a profile (COPYSYNTH_PROFILE) as " +
                                         "--workload profile:" + name_or_path + ", a size distribution as ./" + name_or_path
                                   : std::string("; give a .csv path, or set COPYSYNTH_DATA_DIR");
      return make_error(ErrorCode::kInvalidArgument,
                        "no size distribution named \"" + name_or_path + "\" (looked in " +
                            (dirs.empty() ? std::string("no directory") : dirs) + "; available: " +
                            (names.empty() ? std::string("none") : names) + ")" + here);
    }
  }
  // The file is the user's input, as a wisdom file or a profile is: kWisdomIo when it cannot be
  // read, kWisdomMalformed when it is not a distribution (autotune exits 2 for both, and 1 for a
  // name that names nothing).
  auto text = read_regular_file(path, "size distribution", kMaxDistributionBytes, ErrorCode::kWisdomIo);
  if (!text) return text.error();
  auto d = parse_distribution(name, *text);
  if (!d) {  // parse_distribution's message starts with the name; the path says which file
    const std::string& m = d.error().message;
    return make_error(ErrorCode::kWisdomMalformed,
                      path + (m.rfind(name + ": ", 0) == 0 ? m.substr(name.size()) : ": " + m));
  }
  return d;
}

std::vector<Call> make_calls(const SizeDistribution& d, std::size_t count, std::uint64_t seed, std::uint32_t window) {
  std::mt19937_64 rng(seed);
  std::discrete_distribution<std::uint32_t> size(d.p.begin(), d.p.end());
  std::uniform_int_distribution<std::uint32_t> off(0, window - 1);
  std::vector<Call> calls(count);
  for (auto& c : calls) {
    c.size = size(rng);
    c.src_offset = off(rng);
    c.dst_offset = off(rng);
  }
  return calls;
}

std::vector<Call> replay_calls(const Workload& w, std::size_t count, std::uint64_t seed) {
  if (w.recorded.empty()) return w.is_distribution() ? make_calls(*w.distribution, count, seed) : std::vector<Call>{};
  std::mt19937_64 rng(seed);
  std::vector<std::size_t> order(w.recorded.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  std::uniform_int_distribution<std::size_t> pick(0, w.recorded.size() - 1);
  std::vector<Call> calls;
  calls.reserve(count + 4096);
  for (std::size_t i = 0; calls.size() < count; ++i) {
    const auto& win = w.recorded[i < order.size() ? order[i] : pick(rng)];
    calls.insert(calls.end(), win.begin(), win.end());
  }
  return calls;
}

std::vector<ProfileProgram> profile_programs(const Profile& p) {
  std::vector<ProfileProgram> out;  // in the order the file first names them
  for (const ProfileRecord& r : p.records) {
    auto it = std::find_if(out.begin(), out.end(), [&](const ProfileProgram& x) { return x.path == r.program; });
    if (it == out.end()) it = out.insert(out.end(), ProfileProgram{r.program, 0, 0});
    ++it->records;
    for (const OpProfile& o : r.ops) it->calls += o.calls;
  }
  std::stable_sort(out.begin(), out.end(), [](const ProfileProgram& a, const ProfileProgram& b) { return a.calls > b.calls; });
  return out;
}

namespace {

/// What separates a profile's file from the program selected in a workload name.
constexpr std::string_view kProgramSelector = ",program=";

/// "PATH (N records, M calls), ...": the programs of a profile as messages list them.
std::string list_programs(const Profile& p) {
  std::string s;
  for (const ProfileProgram& x : profile_programs(p))
    s += (s.empty() ? "" : ", ") + x.path + " (" + std::to_string(x.records) +
         (x.records == 1 ? " record, " : " records, ") + std::to_string(x.calls) + (x.calls == 1 ? " call)" : " calls)");
  return s;
}

/// The last component of a program path: the text after its last '/' (all of it without one).
std::string_view last_component(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace

Result<Profile> select_program(const Profile& p, std::string_view name) {
  if (name.empty())
    return make_error(ErrorCode::kInvalidArgument,
                      "profile " + p.path + ": the program to select is empty; it has " + list_programs(p) +
                          "; select one with profile:" + p.path + ",program=NAME");
  Profile out;
  out.path = p.path;
  out.cut_short = p.cut_short;  // its last line, left out: still said
  for (const ProfileRecord& r : p.records)
    if (r.program == name || last_component(r.program) == name) out.records.push_back(r);
  if (out.records.empty())
    return make_error(ErrorCode::kInvalidArgument,
                      "profile " + p.path + ": no record of program " + quoted_bytes(name) + "; it has " +
                          list_programs(p) + "; select one with profile:" + p.path + ",program=NAME");
  return out;
}

std::string absolute_workload_name(const std::string& name) {
  static const std::string cold = " (cold)";
  if (name.size() > cold.size() && name.compare(name.size() - cold.size(), cold.size(), cold) == 0)
    return absolute_workload_name(name.substr(0, name.size() - cold.size())) + cold;
  if (name.rfind("profile:", 0) == 0) {
    auto spec = parse_profile_spec(name.substr(8));
    if (!spec) return name;
    return "profile:" + absolute_path(spec->path) + (spec->program ? std::string(kProgramSelector) + *spec->program : "");
  }
  return names_distribution_file(name) ? absolute_path(name) : name;
}

std::string wisdom_workload_name(const std::string& given, const Workload& w) {
  if (given.rfind("profile:", 0) != 0 && !names_distribution_file(given)) return w.name;
  return absolute_workload_name(given) + (w.cold ? " (cold)" : "");
}

Result<ProfileSpec> parse_profile_spec(const std::string& spec) {
  ProfileSpec out;
  std::error_code ec;
  const std::size_t at = spec.rfind(kProgramSelector);
  // A file of that very name is read whole: the selector is only looked for in text that names
  // no file, so no existing profile stops loading because of its name.
  if (at == std::string::npos || std::filesystem::exists(spec, ec)) {
    out.path = spec;
  } else {
    out.path = spec.substr(0, at);
    out.program = spec.substr(at + kProgramSelector.size());
    if (out.program->empty())
      return make_error(ErrorCode::kInvalidArgument,
                        "--workload profile:" + spec + ": the program to select is empty; give its path or the "
                        "last component of it (autotune --show " + out.path + " lists the programs the file has)");
  }
  if (out.path.empty())
    return make_error(ErrorCode::kInvalidArgument,
                      "--workload profile:FILE needs a file (recorded with COPYSYNTH_PROFILE=FILE and the shim)");
  // A misspelt or repeated selector ("profile:run.prof,prog=xz", "...,program=a,program=b") names
  // no file; said as such where the text before its first comma is a regular file and the text
  // after it looks like a selector (",prog..." or a KEY=VALUE without a '/'), not as a missing file.
  if (const std::size_t comma = out.path.find(','); comma != std::string::npos && !std::filesystem::exists(out.path, ec)) {
    // Trailing commas ("profile:run.prof,", "profile:a,b.prof,,") are a selector left out, not
    // part of a file's name: the file is what comes before them.
    const std::size_t last = out.path.find_last_not_of(',');
    const bool trailing = last != std::string::npos && last + 1 < out.path.size() &&
                          std::filesystem::is_regular_file(out.path.substr(0, last + 1), ec);
    const std::string file = out.path.substr(0, trailing ? last + 1 : comma);
    const std::string tail = spec.substr(file.size());
    const bool selector_like = trailing || tail.rfind(",prog", 0) == 0 ||
                               (tail.find('=') != std::string::npos && tail.find('/') == std::string::npos);
    if (!file.empty() && selector_like && std::filesystem::is_regular_file(file, ec))
      return make_error(ErrorCode::kInvalidArgument,
                        "--workload profile:" + spec + ": " + file + " is a file, and what follows it (" +
                            quoted_bytes(tail) + ") is not the one selector a profile takes, once: " +
                            "profile:" + file + ",program=NAME");
  }
  return out;
}

Result<Workload> profile_workload(const Profile& profile, Operation op, const std::string& name) {
  const int k = profile_index(op);
  if (k < 0)
    return make_error(ErrorCode::kInvalidArgument,
                      std::string(name_of(op)) + " is not recorded in profiles (memcpy, memmove and memset are)");
  const OpProfile total = profile.total(op);
  if (total.calls == 0) {
    std::string has;
    for (Operation o : {Operation::kMemcpy, Operation::kMemmove, Operation::kFill})
      if (profile.total(o).calls > 0) has += (has.empty() ? "" : ",") + std::string(name_of(o));
    return make_error(ErrorCode::kInvalidArgument,
                      profile.path + ": the program made no " + std::string(libc_name(op)) +
                          " call" + (has.empty() ? std::string(" (and no call at all)") : "; tune what it has: --op " + has));
  }
  // The distribution: every bucket's calls spread evenly over its lengths, up to kMaxReplaySize.
  std::uint64_t top = 0, left_out = 0;
  for (const SizeBucket& b : total.sizes) {
    if (b.lo > kMaxReplaySize) {
      left_out += b.count;
      continue;
    }
    top = std::max(top, std::min(b.hi, kMaxReplaySize));
  }
  SizeDistribution d;
  d.name = name;
  d.p.assign(top + 1, 0.0);
  double sum = 0;
  for (const SizeBucket& b : total.sizes) {
    if (b.lo > kMaxReplaySize) continue;
    const std::uint64_t hi = std::min(b.hi, kMaxReplaySize);
    const double each = double(b.count) / double(hi - b.lo + 1);
    for (std::uint64_t n = b.lo; n <= hi; ++n) d.p[n] += each;
    sum += double(b.count);
  }
  if (sum <= 0)
    return make_error(ErrorCode::kInvalidArgument, profile.path + ": every recorded " + std::string(name_of(op)) +
                                                       " call is longer than 16 MiB; tune with --workload seeds");
  for (double& v : d.p) v /= sum;

  // The replay's material: windows of this operation's calls, each in program order.
  Workload w;
  auto& windows = w.recorded;
  for (const ProfileRecord& r : profile.records)
    for (const ProfileWindow& win : r.windows) {
      std::vector<Call> cs;
      for (const ProfiledCall& c : win.calls)
        if (c.op == op && c.size <= kMaxReplaySize) {
          Call k{static_cast<std::uint32_t>(c.size), c.src_page_offset, c.dst_page_offset, 0};
          const int d = (int(c.dst_page_offset) - int(c.src_page_offset)) & 4095;  // (dst - src) mod 4096
          // alias4k: no overlap in the program, so the source lay d + a multiple of 4096 bytes
          // behind: the nearest such distance that does not overlap either (d < 1024 here).
          if (op != Operation::kFill && c.distance == Distance::kAlias4k)
            k.src_delta = static_cast<std::int32_t>(d + (c.size > std::uint64_t(d) ? (c.size - d + 4095) / 4096 * 4096 : 0));
          if (op == Operation::kMemmove && c.distance == Distance::kOverlap) k.src_delta = d < 2048 ? d : d - 4096;
          cs.push_back(k);
        }
      if (!cs.empty()) windows.push_back(std::move(cs));
    }
  if (windows.empty())
    return make_error(ErrorCode::kInvalidArgument,
                      profile.path + ": " + std::to_string(total.calls) + " " + std::string(name_of(op)) +
                          " call" + (total.calls == 1 ? "" : "s") + " counted but none in a recorded window: the shim "
                          "keeps a thread's first 256 calls (of any operation) and then samples one window of 256 "
                          "every 4096 calls or more, so an operation that starts late and calls little has none; "
                          "record a longer run of the program, or tune the operations it has windows of");
  // The distribution sizes the replay's buffers (ReplayBuffers): it must reach the longest call
  // replayed. The shim counts every call it samples into a window in the histogram too, but a
  // call made by another thread while a record is written (the counts are summed before the
  // windows are read), or an edited record, can hold a window's length in no bucket (a length
  // past the last bucket overran the buffers). Those lengths weigh nothing.
  std::uint64_t longest = 0, in_windows = 0;
  for (const auto& win : windows) {
    in_windows += win.size();
    for (const Call& c : win) longest = std::max<std::uint64_t>(longest, c.size);
  }
  if (longest + 1 > d.p.size()) d.p.resize(longest + 1, 0.0);
  w.name = name;
  w.note = std::to_string(profile.records.size()) + " record" + (profile.records.size() == 1 ? "" : "s") + ", " +
           std::to_string(total.calls) + " " + std::string(libc_name(op)) +
           (total.calls == 1 ? " call, " : " calls, ") +
           std::to_string(in_windows) + " of them in " + std::to_string(windows.size()) +
           (windows.size() == 1 ? " window" : " windows") +
           (left_out ? "; " + std::to_string(left_out) + " calls above 16 MiB left out of the replay" : "");
  // A search tunes for these calls alone: a handful of them is a poor guide to the program (the
  // profile-guided loop's script, docs/profile-guided.md, tunes an operation from 1000 calls on).
  if (total.calls < kFewProfileCalls)
    w.warning = "only " + std::to_string(total.calls) + (total.calls == 1 ? " call" : " calls") +
              ": a tuning for so few says little about the program (record a longer run, or leave this "
              "operation to glibc)";
  if (!profile.cut_short.empty())
    w.warning += (w.warning.empty() ? "" : "; ") + std::string("its last line, a record cut short, is left out (") +
                 profile.cut_short + ")";  // A command that ran other programs (a shell script, a pyenv shim) leaves their records too:
  // they are tuned for together, as asked, but said, with how to keep one.
  if (const auto programs = profile_programs(profile); programs.size() > 1)
    w.note += "; records of " + std::to_string(programs.size()) + " programs, tuned for together: " +
              list_programs(profile) + "; select one with profile:" + profile.path + ",program=NAME";
  w.distribution = std::move(d);
  return w;
}

namespace {

/// "a", "a or b", "a, b or c".
std::string either(const std::vector<std::string>& names) {
  std::string s;
  for (std::size_t i = 0; i < names.size(); ++i)
    s += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return s;
}

}  // namespace

Result<std::vector<Workload>> profile_workloads(const Profile& profile, const std::vector<Operation>& ops,
                                                const std::string& name, bool cold) {
  // Every operation the profile cannot serve, named at once and before any work: a search of
  // the first operations would otherwise run for minutes and then stop at the one it lacks.
  std::string has;
  for (Operation o : {Operation::kMemcpy, Operation::kMemmove, Operation::kFill})
    if (profile.total(o).calls > 0) has += (has.empty() ? "" : ",") + std::string(name_of(o));
  std::vector<std::string> not_recorded, not_called;
  for (Operation op : ops) {
    if (profile_index(op) < 0)
      not_recorded.push_back(std::string(name_of(op)));
    else if (profile.total(op).calls == 0)
      not_called.push_back(std::string(libc_name(op)));
  }
  if (!not_recorded.empty() || !not_called.empty()) {
    std::string why;
    if (!not_recorded.empty())
      why = either(not_recorded) + " is not recorded in profiles (memcpy, memmove and memset are)";
    if (!not_called.empty())
      why += (why.empty() ? "" : ", and ") + std::string("the program made no ") + either(not_called) + " call";
    return make_error(ErrorCode::kInvalidArgument,
                      profile.path + ": " + why +
                          (has.empty() ? std::string(" (and no call at all); record it again")
                                       : "; tune what it has: --op " + has));
  }
  std::vector<Workload> out;
  for (Operation op : ops) {
    auto w = profile_workload(profile, op, name + (cold ? " (cold)" : ""));
    if (!w) return w.error();
    w->cold = cold;
    out.push_back(std::move(w).value());
  }
  return out;
}

namespace {

/// The --show size class of a length: 0 for 0, else k + 1 for 2^k <= n < 2^(k+1) (bytes 1, 2-3,
/// 4-7, ..., 4096-8191, ...): a histogram bucket of profile.hpp never straddles two.
unsigned show_class(std::uint64_t n) {
  if (n == 0) return 0;
  unsigned k = 63;
  while (!(n >> k & 1)) --k;
  return k + 1;
}

std::string class_label(unsigned c) {
  if (c <= 1) return std::to_string(c);
  return std::to_string(std::uint64_t{1} << (c - 1)) + "-" + std::to_string((std::uint64_t{1} << c) - 1);
}

std::string pct(double part, double whole) { return whole > 0 ? format_c("%.1f", 100.0 * part / whole) : "0.0"; }

}  // namespace

std::string format_profile_summary(const Profile& p) {
  std::ostringstream o;
  o.imbue(std::locale::classic());
  auto q = [](const std::string& s) { return quoted_bytes(s, std::string::npos); };
  o << "profile.path=" << q(p.path) << "\n";
  o << "profile.records=" << p.records.size() << "\n";
  if (!p.cut_short.empty()) o << "profile.cut_short=" << q(p.cut_short) << "\n";  // its last line, left out
  // Which programs wrote the records (a command that runs others leaves theirs too), and what
  // each counts: the NAME of profile:FILE,program=NAME.
  const auto programs = profile_programs(p);
  o << "profile.programs=" << programs.size() << "\n";
  for (std::size_t i = 0; i < programs.size(); ++i) {
    const std::string pp = "program[" + std::to_string(i) + "].";
    o << pp << "path=" << q(programs[i].path) << "\n" << pp << "records=" << programs[i].records << "\n"
      << pp << "calls=" << programs[i].calls << "\n";
  }
  for (std::size_t i = 0; i < p.records.size(); ++i) {
    const ProfileRecord& r = p.records[i];
    const std::string rp = "record[" + std::to_string(i) + "].";
    std::uint64_t calls = 0;
    for (const auto& w : r.windows) calls += w.calls.size();
    o << rp << "program=" << q(r.program) << "\n" << rp << "pid=" << r.pid << "\n"
      << rp << "reason=" << q(r.reason) << "\n" << rp << "cpu=" << q(r.cpu) << "\n"
      << rp << "windows=" << r.windows.size() << "\n" << rp << "window_calls=" << r.window_calls << "\n"
      << rp << "sample_period=" << r.sample_period << "\n" << rp << "calls_in_windows=" << calls << "\n";
  }
  std::ostringstream tables;
  tables.imbue(std::locale::classic());
  for (Operation op : {Operation::kMemcpy, Operation::kMemmove, Operation::kFill}) {
    const std::string name(libc_name(op));
    const OpProfile t = p.total(op);
    const std::string pre = name + ".";
    o << pre << "calls=" << t.calls << "\n" << pre << "bytes=" << t.bytes << "\n";
    if (t.calls == 0) continue;
    o << pre << "mean_bytes=" << format_c("%.1f", double(t.bytes) / double(t.calls)) << "\n";
    std::uint64_t s16 = 0, s64 = t.src_mod64[0], d16 = 0, d64 = t.dst_mod64[0];
    for (unsigned a = 0; a < 64; a += 16) {
      s16 += t.src_mod64[a];
      d16 += t.dst_mod64[a];
    }
    if (op != Operation::kFill)
      o << pre << "src_aligned_16_percent=" << pct(double(s16), double(t.calls)) << "\n"
        << pre << "src_aligned_64_percent=" << pct(double(s64), double(t.calls)) << "\n";
    o << pre << "dst_aligned_16_percent=" << pct(double(d16), double(t.calls)) << "\n"
      << pre << "dst_aligned_64_percent=" << pct(double(d64), double(t.calls)) << "\n";
    if (op != Operation::kFill)
      for (Distance d : {Distance::kFar, Distance::kAlias4k, Distance::kOverlap})
        o << pre << "distance." << name_of(d) << "_percent="
          << pct(double(t.distance[static_cast<int>(d)]), double(t.calls)) << "\n";
    // The table: calls and bytes per size class (a bucket's bytes estimated at its middle).
    std::map<unsigned, std::pair<double, double>> cls;
    double bytes = 0;
    for (const SizeBucket& b : t.sizes) {
      const double mid = (double(b.lo) + double(b.hi)) / 2;
      auto& c = cls[show_class(b.lo)];
      c.first += double(b.count);
      c.second += double(b.count) * mid;
      bytes += double(b.count) * mid;
    }
    // Shares of the histogram's own calls (a signal dump can leave `calls` a few apart from it).
    double counted = 0;
    for (const auto& [c, v] : cls) counted += v.first;
    tables << "\n" << name << ": " << t.calls << " calls, " << t.bytes << " bytes\n";
    tables << format_c("  %-20s %8s %8s %8s\n", "size (bytes)", "calls %", "bytes %", "cum. %");
    double cum = 0;
    for (const auto& [c, v] : cls) {
      cum += v.first;
      tables << format_c("  %-20s %8s %8s %8s\n", class_label(c).c_str(), pct(v.first, counted).c_str(),
                         pct(v.second, bytes).c_str(), pct(cum, counted).c_str());
    }
  }
  return o.str() + tables.str();
}

Result<Workload> make_workload(const std::string& name, Operation op, bool cold) {
  if (name.rfind("profile:", 0) == 0) {
    auto spec = parse_profile_spec(name.substr(8));
    if (!spec) return spec.error();
    auto p = load_profile(spec->path);
    if (!p) return p.error();
    if (spec->program) {
      p = select_program(*p, *spec->program);
      if (!p) return p.error();
    }
    auto w = profile_workloads(*p, {op}, name, cold);
    if (!w) return w.error();
    return std::move(w->front());
  }
  if (name == "seeds" || name == "misaligned") {
    if (cold)
      return make_error(ErrorCode::kInvalidArgument,
                        "--cold applies to size-distribution workloads; the " + name + " points are timed hot");
    if (name == "misaligned" && op == Operation::kClearPage)
      return make_error(ErrorCode::kInvalidArgument, "clear_page has one length; use --workload seeds");
    return name == "seeds" ? seeds_workload(op) : misaligned_workload(op);
  }
  // A profile's path without "profile:" would be read as a size distribution (a .csv), failing on
  // its first field, or looked up as a distribution's name.
  if (is_profile_file(name))
    return make_error(ErrorCode::kInvalidArgument, "--workload " + name + ": " + name +
                                                       " is a profile (COPYSYNTH_PROFILE); use --workload profile:" + name);
  if (op == Operation::kClearPage)
    return make_error(ErrorCode::kInvalidArgument, "clear_page has one length; use --workload seeds");
  auto d = load_distribution(name);
  if (!d) return d.error();
  Workload w;
  w.name = d->name + (cold ? " (cold)" : "");
  w.distribution = std::move(d).value();
  w.cold = cold;
  return w;
}

}  // namespace copysynth
