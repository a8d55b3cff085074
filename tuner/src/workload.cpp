// copysynth — workloads (see workload.hpp).
#include "copysynth/workload.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

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

Workload misaligned_workload(Operation) {
  Workload w;
  w.name = "misaligned";
  for (std::uint64_t n = 4096; n <= 512 * 1024; n *= 2)
    for (std::uint32_t d : {0u, 1u, 4u, 15u, 33u}) w.points.push_back({n, 0, d});
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
  // --install --prefix P` puts them for P/bin/autotune, whatever P is.
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec && exe.is_absolute())
    add((exe.parent_path() / COPYSYNTH_EXE_RELATIVE_DATA_DIR).lexically_normal().string());
#endif
#ifdef COPYSYNTH_SOURCE_DATA_DIR
  add(COPYSYNTH_SOURCE_DATA_DIR);
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

Result<SizeDistribution> load_distribution(const std::string& name_or_path) {
  std::string path;
  std::string name = name_or_path;
  const bool is_path = name_or_path.find('/') != std::string::npos ||
                       (name_or_path.size() > 4 && name_or_path.substr(name_or_path.size() - 4) == ".csv");
  if (is_path) {
    path = name_or_path;
    name = std::filesystem::path(name_or_path).stem().string();
  } else {
    for (const auto& dir : data_dirs()) {
      const std::string candidate = dir + "/" + name_or_path + ".csv";
      if (std::ifstream(candidate).good()) {
        path = candidate;
        break;
      }
    }
    if (path.empty()) {
      std::string dirs, names;
      for (const auto& d : data_dirs()) dirs += (dirs.empty() ? "" : ", ") + d;
      for (const auto& n : distribution_names()) names += (names.empty() ? "" : ", ") + n;
      return make_error(ErrorCode::kInvalidArgument,
                        "no size distribution named \"" + name_or_path + "\" (looked in " +
                            (dirs.empty() ? std::string("no directory") : dirs) + "; available: " +
                            (names.empty() ? std::string("none") : names) +
                            "); give a .csv path, or set COPYSYNTH_DATA_DIR");
    }
  }
  auto text = read_regular_file(path, "size distribution", kMaxDistributionBytes, ErrorCode::kInvalidArgument);
  if (!text) return text.error();
  return parse_distribution(name, *text);
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

Result<Workload> make_workload(const std::string& name, Operation op, bool cold) {
  if (name == "seeds" || name == "misaligned") {
    if (cold)
      return make_error(ErrorCode::kInvalidArgument,
                        "--cold applies to size-distribution workloads; the " + name + " points are timed hot");
    if (name == "misaligned" && op == Operation::kClearPage)
      return make_error(ErrorCode::kInvalidArgument, "clear_page has one length; use --workload seeds");
    return name == "seeds" ? seeds_workload(op) : misaligned_workload(op);
  }
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
