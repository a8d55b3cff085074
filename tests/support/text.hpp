// copysynth tests — strings and small files. Include after <doctest/doctest.h> (REQUIRE).
#pragma once

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace copysynth::test {

/// Whether `needle` occurs in `hay`.
inline bool contains(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

/// How many times `needle` (not empty) occurs in `hay`, overlapping occurrences included.
inline std::size_t count(const std::string& hay, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t at = hay.find(needle); !needle.empty() && at != std::string::npos; at = hay.find(needle, at + 1)) ++n;
  return n;
}

/// Writes `text` to `path` (replacing it; missing parent directories are created).
inline void write_file(const std::string& path, const std::string& text) {
  const auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  REQUIRE_MESSAGE(out.good(), "cannot write " << path);
  out << text;
  out.close();
  REQUIRE_MESSAGE(out.good(), "cannot write " << path);
}

/// The whole of `path` ("" when it cannot be read).
inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace copysynth::test
