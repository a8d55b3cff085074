// copysynth — numbers written and read the same whatever locale the program set.
//
// copysynth is a library: the program around it may call setlocale(LC_ALL, "de_DE.UTF-8"), after
// which printf's %f writes "1,25" and strtod stops at "0.5". Every number copysynth writes with a
// printf format goes through snprintf_c / format_c (the "C" locale for this thread, for the
// duration of the call: uselocale(3)); numbers it reads go through std::from_chars, which no
// locale affects, or, for a floating-point number in code the LD_PRELOAD shim links, strtod_c
// (libstdc++'s floating-point from_chars would make the shim load libm.so.6 into every program).
// Wisdom files (nlohmann::json) were locale-independent already.
#pragma once

#include <cstddef>
#include <string>

namespace copysynth {

/// std::snprintf in the "C" locale (decimal point '.', no grouping), whatever setlocale() or
/// uselocale() the calling program made; the thread's locale is restored before returning.
/// Same arguments and return value as std::snprintf.
int snprintf_c(char* buf, std::size_t size, const char* format, ...) __attribute__((format(printf, 3, 4)));

/// snprintf_c into a std::string (any length).
std::string format_c(const char* format, ...) __attribute__((format(printf, 1, 2)));

/// std::strtod in the "C" locale (strtod_l(3)): '.' is the decimal point whatever locale the
/// program or another thread set. Same arguments, return value and errno (ERANGE) as std::strtod.
/// If no "C" locale object could be made (newlocale(3) failed; glibc's never does for "C"), it
/// is std::strtod in the thread's locale, as snprintf_c then writes in it.
double strtod_c(const char* text, char** end);

}  // namespace copysynth
