// copysynth tests — a scratch directory under $TMPDIR (default /tmp), removed with everything in it
// when the object goes out of scope, unless `keep` is set (then its path is printed, so the files
// of a failing case can be looked at). Include after <doctest/doctest.h> (REQUIRE).
#pragma once

#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

namespace copysynth::test {

struct TempDir {
  explicit TempDir(const std::string& prefix = "copysynth-test") {
    const char* tmp = std::getenv("TMPDIR");
    const std::string t = std::string(tmp && *tmp ? tmp : "/tmp") + "/" + prefix + "-XXXXXX";
    std::vector<char> b(t.begin(), t.end());
    b.push_back('\0');
    REQUIRE_MESSAGE(::mkdtemp(b.data()) != nullptr, "cannot create a scratch directory " << t);
    path = b.data();
  }
  ~TempDir() {
    if (keep) {
      std::fprintf(stderr, "files of the failing case kept in %s\n", path.c_str());
      return;
    }
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string path;
  bool keep = false;
};

}  // namespace copysynth::test
