// copysynth tests — a temporary directory under /tmp, removed with everything in it when the
// object goes out of scope. Include after <doctest/doctest.h> (REQUIRE).
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace copysynth_test {

struct TempDir {
  TempDir() {
    char t[] = "/tmp/copysynth-test-XXXXXX";
    const char* p = ::mkdtemp(t);
    REQUIRE(p != nullptr);
    path = p;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string path;
};

}  // namespace copysynth_test
