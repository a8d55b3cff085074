// copysynth — internal to the C API (c_api.cpp, c_api_tune.cpp): how a C function turns an error,
// or an exception, into a copysynth_status and this thread's copysynth_last_error() message. One
// message per thread for both libraries: the slot lives in c_api.cpp (libcopysynth.a), and the
// tuning entry point in libcopysynth-tune.a records its errors there too.
#pragma once

#include <exception>
#include <new>
#include <string>

#include "copysynth/copysynth.h"
#include "copysynth/result.hpp"

namespace copysynth::c_api {

/// Records `e` as this thread's last error and returns its status.
copysynth_status fail(const Error& e);
/// Clears this thread's last error (a call that succeeded).
void clear_error();

/// Runs `body` (returning a Status); records its error, or an exception's, for this thread.
template <class Body>
copysynth_status guarded(Body&& body) noexcept {
  try {
    const Status st = body();
    if (!st) return fail(st.error());
    clear_error();
    return COPYSYNTH_OK;
  } catch (const std::bad_alloc&) {
    return fail(make_error(ErrorCode::kSystem, "out of memory"));
  } catch (const std::exception& ex) {
    return fail(make_error(ErrorCode::kSystem, std::string("internal error: ") + ex.what() +
                                                   " (a copysynth bug: please report it)"));
  } catch (...) {
    return fail(make_error(ErrorCode::kSystem, "internal error: unknown exception (a copysynth bug: please report it)"));
  }
}

inline bool known(int op) { return op >= COPYSYNTH_OP_MEMCPY && op <= COPYSYNTH_OP_CLEAR_PAGE; }

inline Error unknown_op(int op) {
  return make_error(ErrorCode::kInvalidArgument,
                    "unknown operation " + std::to_string(op) +
                        " (use COPYSYNTH_OP_MEMCPY, COPYSYNTH_OP_MEMMOVE, COPYSYNTH_OP_FILL or COPYSYNTH_OP_CLEAR_PAGE)");
}

}  // namespace copysynth::c_api
