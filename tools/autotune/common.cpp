// autotune — errors, the clock and the command line as text (see autotune.hpp).
#include <ctime>
#include <iostream>

#include "autotune.hpp"

namespace autotune {

int fail(const copysynth::Error& e) {
  std::cerr << "autotune: error (" << copysynth::error_code_name(e.code) << "): " << e.message << "\n";
  return 2;
}

int usage_error(const std::string& message) {
  std::cerr << "autotune: " << message << "\n";
  return 1;
}

int fail_or_usage(const copysynth::Error& e) {
  return e.code == copysynth::ErrorCode::kInvalidArgument ? usage_error(e.message) : fail(e);
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  char b[32];
  std::strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return b;
}

std::string shell_line(int argc, char** argv) {
  std::string line;
  for (int i = 0; i < argc; ++i) {
    std::string a = i ? argv[i] : "autotune";
    if (a.find_first_of(" \t'\"$\\") != std::string::npos) {
      std::string q = "'";
      for (char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
      a = q + "'";
    }
    line += (i ? " " : "") + a;
  }
  return line;
}

}  // namespace autotune
