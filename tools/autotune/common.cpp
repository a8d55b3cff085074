// autotune — errors, the clock and the command line as text (see autotune.hpp).
#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "autotune.hpp"
#include "copysynth/c_format.hpp"

namespace autotune {

copysynth::Status make_temp_dir(TempDir& dir, const std::string& stem) {
  const char* tmpdir = std::getenv("TMPDIR");
  // Absolute, and resolved (links, "." and ".."): the paths are given to programs that may change
  // directory (--app's command), and --app finds its library in /proc/PID/maps by that path.
  std::error_code ec;
  std::filesystem::path parent = tmpdir && *tmpdir ? tmpdir : "/tmp";
  if (const auto real = std::filesystem::canonical(parent, ec); !ec) parent = real;
  return copysynth::make_scratch_dir(dir, parent.string(), "copysynth-" + stem + ".", copysynth::ErrorCode::kSystem,
                                     "set TMPDIR to a writable one");
}

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

int make_workloads(const std::string& given, const std::vector<copysynth::Operation>& ops, bool cold,
                   std::vector<copysynth::Workload>& out) {
  out.clear();
  if (given.rfind("profile:", 0) == 0 && given.size() > 8) {
    auto spec = copysynth::parse_profile_spec(given.substr(8));
    if (!spec) return fail_or_usage(spec.error());
    // The workload's name goes into the wisdom ("workload"): with the file's absolute path, so
    // that `--from` in another directory finds the profile again.
    const std::string name = copysynth::absolute_workload_name(given);
    auto p = copysynth::load_profile(spec->path);
    if (!p) return fail(p.error());  // the input file is bad, not the command line
    if (spec->program) {  // a program the file has no record of: the command line names it
      p = copysynth::select_program(*p, *spec->program);
      if (!p) return fail_or_usage(p.error());
    }
    auto ws = copysynth::profile_workloads(*p, ops, name, cold);
    if (!ws) return fail_or_usage(ws.error());
    out = std::move(ws).value();
    return 0;
  }
  // A distribution file that cannot be read or is not one fails the run (kWisdomIo,
  // kWisdomMalformed: exit 2), as a profile does; a name that names nothing is a bad command line.
  for (copysynth::Operation op : ops) {
    auto w = copysynth::make_workload(given, op, cold);
    if (!w) return fail_or_usage(w.error());
    out.push_back(std::move(w).value());
  }
  return 0;
}

void note_other_hosts_left(const Options& o) {
  std::error_code ec;
  if (o.from_path.empty() || o.emit_path.empty() || std::filesystem::equivalent(o.from_path, o.emit_path, ec)) return;
  auto from = copysynth::load_fleet(o.from_path, copysynth::WisdomPoints::kSkip);
  if (!from || from->hosts.size() < 2) return;
  if (std::filesystem::exists(o.emit_path, ec))
    if (auto out = copysynth::load_fleet(o.emit_path, copysynth::WisdomPoints::kSkip);
        out && out->schema == copysynth::kFleetSchema)
      return;  // written into that fleet, its other CPUs kept
  std::cerr << "autotune: note: " << o.from_path << " holds the entries of " << from->hosts.size() - 1
            << " other CPU" << (from->hosts.size() == 2 ? "" : "s") << "; " << o.emit_path
            << " gets this CPU's alone (--emit " << o.from_path << " writes into the fleet and keeps them; "
            << "autotune --merge joins files)\n";
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
    const bool plain = !a.empty() && std::all_of(a.begin(), a.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
             std::string_view("_@%+=:,./-").find(c) != std::string_view::npos;
    });
    const bool control = std::any_of(a.begin(), a.end(), [](char c) {
      return static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) == 0x7f;
    });
    if (control) {
      // bash's $'...': a CR or a newline written as \r, \n keeps the line one line of text in a
      // C comment (comment_safe writes control characters in caret notation) and pastes back.
      std::string q = "$'";
      for (std::size_t k = 0; k < a.size(); ++k) {
        const auto u = static_cast<unsigned char>(a[k]);
        if (a[k] == '\\' || a[k] == '\'') {
          q += '\\';
          q += a[k];
        } else if (a[k] == '\n') {
          q += "\\n";
        } else if (a[k] == '\r') {
          q += "\\r";
        } else if (a[k] == '\t') {
          q += "\\t";
        } else if (u < 0x20 || u == 0x7f || (a[k] == '/' && k > 0 && a[k - 1] == '*')) {
          q += copysynth::format_c("\\%03o", u);  // '/' after '*' too: never "*/" in a C comment
        } else {
          q += a[k];
        }
      }
      a = q + "'";
    } else if (!plain) {
      std::string q = "'";
      for (std::size_t k = 0; k < a.size(); ++k) {
        if (a[k] == '\'') q += "'\\''";
        else if (a[k] == '*' && k + 1 < a.size() && a[k + 1] == '/') q += "*''";  // never "*/" in a C comment
        else q += a[k];
      }
      a = q + "'";
    }
    line += (i ? " " : "") + a;
  }
  return line;
}

copysynth::Status check_svg_destination(const std::string& path, const std::vector<std::string>& inputs) {
  using copysynth::ErrorCode;
  using copysynth::make_error;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return {};
  for (const auto& in : inputs)
    if (!in.empty() && std::filesystem::equivalent(path, in, ec))
      return make_error(ErrorCode::kInvalidArgument,
                        "--svg " + path + " is the wisdom file " + in + " that this run reads; give the plot another name");
  if (std::filesystem::is_directory(path, ec)) return {};  // check_output_path says it is one
  if (!std::filesystem::is_regular_file(path, ec))  // a FIFO would block the plot's write, a device be written
    return make_error(ErrorCode::kInvalidArgument, "--svg " + path + " exists and is not a regular file; give a "
                                                       "file name (nothing was run)");
  std::string head(512, '\0');
  std::ifstream f(path, std::ios::binary);
  f.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(f.gcount()));
  const bool blank = head.find_first_not_of(" \t\r\n") == std::string::npos && f.gcount() < 512;
  if (!blank && head.find("<svg") == std::string::npos)
    return make_error(ErrorCode::kInvalidArgument, "--svg " + path +
                                                       " exists and is not an SVG image; not overwriting it: remove "
                                                       "it or pick another name (nothing was run)");
  return {};
}

}  // namespace autotune
