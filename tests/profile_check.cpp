// profile_check — reads a profile file with load_profile() (runtime/profile.hpp) and prints what
// tests/preload_test.sh checks, one line per record:
//
//   record=1 pid=1234 reason=exit program=/usr/bin/xz sample_period=4096 windows=3 window_calls=192
//     memcpy.calls=... memcpy.bytes=... memmove.calls=... memmove.bytes=... memset.calls=...
//     memset.bytes=... [memcpy@N=... memmove@N=... memset@N=... window.memcpy@N=... ...]
//
// then "records=N". OP@N is the count of the size bucket holding N bytes (size_bucket(N)),
// window.OP@N the calls of that bucket in the record's windows.
//
// Usage: profile_check FILE [--same-text] [--size N]...
//   --same-text  also require every line of FILE to be exactly what profile_record_json() writes
//                for the record parsed from it (the shim formats its lines by hand)
// Exit status: 0, 1 (the file does not load, or --same-text differs: said on stderr), 2 (usage).
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "copysynth/profile.hpp"

using namespace copysynth;

namespace {

constexpr const char* kOpNames[3] = {"memcpy", "memmove", "memset"};

std::uint64_t bucket_count(const OpProfile& o, std::uint64_t n) {
  const SizeBucket want = size_bucket(n);
  for (const SizeBucket& b : o.sizes)
    if (b.lo == want.lo) return b.count;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string path;
  bool same_text = false;
  std::vector<std::uint64_t> sizes;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--same-text") {
      same_text = true;
    } else if (a == "--size" && i + 1 < argc) {
      sizes.push_back(std::stoull(argv[++i]));
    } else if (path.empty() && a[0] != '-') {
      path = a;
    } else {
      std::fprintf(stderr, "usage: profile_check FILE [--same-text] [--size N]...\n");
      return 2;
    }
  }
  if (path.empty()) {
    std::fprintf(stderr, "usage: profile_check FILE [--same-text] [--size N]...\n");
    return 2;
  }
  auto p = load_profile(path);
  if (!p) {
    std::fprintf(stderr, "profile_check: %s\n", p.error().message.c_str());
    return 1;
  }
  if (same_text) {
    std::ifstream in(path, std::ios::binary);
    std::size_t record = 0, line_no = 0;
    for (std::string line; std::getline(in, line);) {
      ++line_no;
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      const std::string ours = profile_record_json(p->records.at(record++));
      if (ours != line) {
        std::size_t at = 0;
        while (at < ours.size() && at < line.size() && ours[at] == line[at]) ++at;
        std::fprintf(stderr, "profile_check: %s:%zu differs from profile_record_json() at byte %zu:\n  file: %.80s\n  ours: %.80s\n",
                     path.c_str(), line_no, at, line.c_str() + at, ours.c_str() + at);
        return 1;
      }
    }
  }
  std::size_t i = 0;
  for (const ProfileRecord& r : p->records) {
    std::uint64_t window_calls = 0;
    for (const ProfileWindow& w : r.windows) window_calls += w.calls.size();
    std::printf("record=%zu pid=%llu reason=%s program=%s sample_period=%llu windows=%zu window_calls=%llu", ++i,
                static_cast<unsigned long long>(r.pid), r.reason.c_str(), r.program.c_str(),
                static_cast<unsigned long long>(r.sample_period), r.windows.size(),
                static_cast<unsigned long long>(window_calls));
    for (int k = 0; k < 3; ++k)
      std::printf(" %s.calls=%llu %s.bytes=%llu", kOpNames[k], static_cast<unsigned long long>(r.ops[k].calls),
                  kOpNames[k], static_cast<unsigned long long>(r.ops[k].bytes));
    for (std::uint64_t n : sizes) {
      for (int k = 0; k < 3; ++k)
        std::printf(" %s@%llu=%llu", kOpNames[k], static_cast<unsigned long long>(n),
                    static_cast<unsigned long long>(bucket_count(r.ops[k], n)));
      for (int k = 0; k < 3; ++k) {
        std::uint64_t in_windows = 0;
        for (const ProfileWindow& w : r.windows)
          for (const ProfiledCall& c : w.calls)
            if (profile_index(c.op) == k && size_bucket(c.size).lo == size_bucket(n).lo) ++in_windows;
        std::printf(" window.%s@%llu=%llu", kOpNames[k], static_cast<unsigned long long>(n),
                    static_cast<unsigned long long>(in_windows));
      }
    }
    std::printf("\n");
  }
  std::printf("records=%zu\n", p->records.size());
  return 0;
}
