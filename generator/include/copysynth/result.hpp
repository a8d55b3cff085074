// copysynth — error type shared by every module.
//
// A `Result<T>` holds either a value or an `Error` whose message says what went wrong and what the
// user can do about it. Nothing in copysynth throws across a module boundary for an expected
// failure (bad parameters, unsupported ISA, malformed wisdom, a routine that fails verification);
// exceptions are reserved for programming errors and out-of-memory.
//
// Shape follows asmjit's `Error` + `ASMJIT_PROPAGATE` (asmjit core/globals.h), with a message.
#pragma once

#include <optional>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace copysynth {

/// What kind of failure an `Error` reports. Stable numeric values: the C API exposes them.
enum class ErrorCode : int {
  kOk = 0,
  kInvalidParams = 1,     ///< a CopyParams field is out of range (message names field, value, range)
  kUnsupportedIsa = 2,    ///< the parameters need an ISA extension the target CPU lacks
  kEmitFailed = 3,        ///< asmjit reported an encoding error (message carries asmjit's text)
  kJitFailed = 4,         ///< executable memory could not be allocated or mapped
  kVerifyFailed = 5,      ///< a routine failed conformance verification (message has the first case)
  kWisdomIo = 6,          ///< a wisdom file (or a profile, a size distribution) could not be read or written
  kWisdomMalformed = 7,   ///< a wisdom file (a profile, a size distribution) is not valid JSON (CSV) or has
                          ///< wrong types / missing fields
  kWisdomMismatch = 8,    ///< a wisdom file belongs to another CPU, schema or operation
  kInvalidArgument = 9,   ///< any other bad input (CLI value, workload file, ...)
  kSystem = 10,           ///< an OS call failed (mmap, sched_setaffinity, ...); message has errno text
  kJitUnavailable = 11,   ///< the system denies executable memory (EACCES/EPERM: SELinux deny_execmem,
                          ///< a seccomp filter): no JIT in this process; the system routines stay
};

/// Human-readable name of an error code ("invalid-params", ...).
const char* error_code_name(ErrorCode c) noexcept;

struct Error {
  ErrorCode code = ErrorCode::kOk;
  std::string message;  ///< full sentence(s): what failed, with which value, and what to do
};

/// A value or an error. Minimal stand-in for C++23 std::expected (g++ 12 has none).
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}                       // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}                   // NOLINT
  bool ok() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  const Error& error() const& { return std::get<1>(v_); }
  Error&& error() && { return std::get<1>(std::move(v_)); }

 private:
  std::variant<T, Error> v_;
};

/// Result of an operation with no value: empty on success.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error e) : e_(std::move(e)) {}  // NOLINT
  bool ok() const noexcept { return !e_.has_value(); }
  explicit operator bool() const noexcept { return ok(); }
  const Error& error() const { return *e_; }

 private:
  std::optional<Error> e_;
};

inline Error make_error(ErrorCode code, std::string message) { return Error{code, std::move(message)}; }

/// `text` (input from a file or a user) in double quotes, safe inside a one-line message: bytes
/// outside printable ASCII, '"' and '\\' as \ooo (octal, as `autotune --show` writes them), so
/// that a newline or raw bytes cannot break or garble the line; at most `max_bytes` bytes of it,
/// then "..." and how many more.
std::string quoted_bytes(std::string_view text, std::size_t max_bytes = 64);

}  // namespace copysynth

/// Return early from the enclosing function if `expr` (a Status or Result) failed.
#define COPYSYNTH_TRY(expr)                                   \
  do {                                                        \
    auto&& copysynth_try_r_ = (expr);                         \
    if (!copysynth_try_r_.ok()) return copysynth_try_r_.error(); \
  } while (0)
