// copysynth — the C API (see copysynth.h): thin wrappers over the C++ API that turn every error,
// and every exception, into a status code and this thread's message. All but copysynth_tune,
// which is in c_api_tune.cpp (libcopysynth-tune.a) since it needs the tuner.
#include "copysynth/copysynth.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "c_api_status.hpp"
#include "copysynth/copysynth.hpp"

namespace {

using namespace copysynth;
using namespace copysynth::c_api;

static_assert(COPYSYNTH_OK == static_cast<int>(ErrorCode::kOk));
static_assert(COPYSYNTH_INVALID_PARAMS == static_cast<int>(ErrorCode::kInvalidParams));
static_assert(COPYSYNTH_UNSUPPORTED_ISA == static_cast<int>(ErrorCode::kUnsupportedIsa));
static_assert(COPYSYNTH_EMIT_FAILED == static_cast<int>(ErrorCode::kEmitFailed));
static_assert(COPYSYNTH_JIT_FAILED == static_cast<int>(ErrorCode::kJitFailed));
static_assert(COPYSYNTH_VERIFY_FAILED == static_cast<int>(ErrorCode::kVerifyFailed));
static_assert(COPYSYNTH_WISDOM_IO == static_cast<int>(ErrorCode::kWisdomIo));
static_assert(COPYSYNTH_WISDOM_MALFORMED == static_cast<int>(ErrorCode::kWisdomMalformed));
static_assert(COPYSYNTH_WISDOM_MISMATCH == static_cast<int>(ErrorCode::kWisdomMismatch));
static_assert(COPYSYNTH_INVALID_ARGUMENT == static_cast<int>(ErrorCode::kInvalidArgument));
static_assert(COPYSYNTH_SYSTEM == static_cast<int>(ErrorCode::kSystem));
static_assert(COPYSYNTH_JIT_UNAVAILABLE == static_cast<int>(ErrorCode::kJitUnavailable));
static_assert(COPYSYNTH_OP_MEMCPY == static_cast<int>(Operation::kMemcpy));
static_assert(COPYSYNTH_OP_MEMMOVE == static_cast<int>(Operation::kMemmove));
static_assert(COPYSYNTH_OP_FILL == static_cast<int>(Operation::kFill));
static_assert(COPYSYNTH_OP_CLEAR_PAGE == static_cast<int>(Operation::kClearPage));

thread_local std::string t_last_error;

}  // namespace

copysynth_status copysynth::c_api::fail(const Error& e) {
  t_last_error = e.message;
  return static_cast<copysynth_status>(e.code);
}

void copysynth::c_api::clear_error() { t_last_error.clear(); }

extern "C" {

void* copysynth_memcpy(void* dst, const void* src, size_t n) { return copysynth::memcpy(dst, src, n); }
void* copysynth_memmove(void* dst, const void* src, size_t n) { return copysynth::memmove(dst, src, n); }
void* copysynth_memset(void* dst, int c, size_t n) { return copysynth::memset(dst, c, n); }
void copysynth_clear_page(void* page) { copysynth::clear_page(page); }

copysynth_copy_fn copysynth_get_memcpy(void) { return installed_memcpy(); }
copysynth_copy_fn copysynth_get_memmove(void) { return installed_memmove(); }
copysynth_fill_fn copysynth_get_memset(void) { return installed_fill(); }
copysynth_clear_page_fn copysynth_get_clear_page(void) { return installed_clear_page(); }

copysynth_status copysynth_load_wisdom(const char* path) {
  return guarded([&]() -> Status {
    if (path && !*path)
      return make_error(ErrorCode::kInvalidArgument,
                        "the wisdom path is empty; pass a file name, or NULL for $COPYSYNTH_WISDOM");
    // secure_getenv, as the shim: in a set-user-ID or set-group-ID program (AT_SECURE) the
    // variable is not the program's to trust, and reads as not set.
    const char* p = path ? path : secure_getenv("COPYSYNTH_WISDOM");
    if (!p || !*p)
      return make_error(ErrorCode::kInvalidArgument,
                        std::string("copysynth_load_wisdom(NULL) reads the file named by COPYSYNTH_WISDOM, which is ") +
                            (p ? "empty" : getenv("COPYSYNTH_WISDOM") ? "ignored in a program run with privileges "
                                                                                      "(set-user-ID, set-group-ID, file "
                                                                                      "capabilities: secure_getenv)"
                                                                       : "not set") +
                            "; set it (e.g. COPYSYNTH_WISDOM=best.json, written by `autotune --emit best.json`) or "
                            "pass a path");
    auto r = install_wisdom(p);
    if (!r) return r.error();
    return {};
  });
}

// copysynth_tune: c_api_tune.cpp (libcopysynth-tune.a), as it needs the tuner.

copysynth_status copysynth_uninstall(copysynth_operation op) {
  return guarded([&]() -> Status {
    if (!known(op)) return unknown_op(op);
    uninstall(static_cast<Operation>(op));
    return {};
  });
}

size_t copysynth_installed_name(copysynth_operation op, char* buf, size_t size) {
  if (!known(op)) {
    fail(unknown_op(op));
    return static_cast<size_t>(-1);
  }
  std::string name;
  if (guarded([&]() -> Status {
        name = installed_name(static_cast<Operation>(op));
        return {};
      }) != COPYSYNTH_OK)
    return static_cast<size_t>(-1);
  if (buf && size > 0) {
    const size_t k = name.size() < size - 1 ? name.size() : size - 1;
    std::memcpy(buf, name.data(), k);
    buf[k] = '\0';
  }
  return name.size();
}

const char* copysynth_last_error(void) { return t_last_error.c_str(); }

const char* copysynth_status_name(int status) {
  if (status < COPYSYNTH_OK || status > COPYSYNTH_JIT_UNAVAILABLE) return "unknown";
  return error_code_name(static_cast<ErrorCode>(status));
}

const char* copysynth_version(void) { return COPYSYNTH_VERSION; }

}  // extern "C"
