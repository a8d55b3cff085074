// copysynth — conformance verification (see verify.hpp).
#include "copysynth/verify.hpp"

#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <set>
#include <sstream>

namespace copysynth {

const char* placement_name(Placement p) noexcept {
  switch (p) {
    case Placement::kInterior: return "interior, canaries around dst";
    case Placement::kSrcEndsAtGuard: return "src ends at a PROT_NONE page";
    case Placement::kDstEndsAtGuard: return "dst ends at a PROT_NONE page";
    case Placement::kSrcAfterGuard: return "src starts after a PROT_NONE page";
    case Placement::kDstAfterGuard: return "dst starts after a PROT_NONE page";
    case Placement::kZeroLength: return "n = 0 with invalid pointers";
  }
  return "?";
}

std::string VerifyReport::summary() const {
  std::ostringstream o;
  if (ok()) {
    o << "passed: " << cases << " cases over " << sizes << " lengths";
  } else {
    const auto& f = *failure;
    o << "FAILED at n = " << f.n << ", src offset " << f.src_offset << ", dst offset " << f.dst_offset
      << " (" << placement_name(f.placement) << "): " << f.what << " [after " << cases << " passing cases]";
  }
  if (!skipped_edges.empty()) {
    o << "; edges above the size cap not tested:";
    for (auto e : skipped_edges) o << ' ' << e;
  }
  return o.str();
}

namespace {

// ----- fault capture -----------------------------------------------------------------------

thread_local sigjmp_buf* t_jump = nullptr;
thread_local void* t_fault_addr = nullptr;

void on_fault(int sig, siginfo_t* info, void*) {
  if (t_jump) {
    t_fault_addr = info->si_addr;
    siglongjmp(*t_jump, sig);
  }
  // Not ours: fall back to the default action.
  signal(sig, SIG_DFL);
  raise(sig);
}

/// Installs the fault handler for SIGSEGV and SIGBUS for its lifetime.
class FaultTrap {
 public:
  FaultTrap() {
    struct sigaction sa {};
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &old_segv_);
    sigaction(SIGBUS, &sa, &old_bus_);
  }
  ~FaultTrap() {
    sigaction(SIGSEGV, &old_segv_, nullptr);
    sigaction(SIGBUS, &old_bus_, nullptr);
  }

 private:
  struct sigaction old_segv_ {}, old_bus_ {};
};

/// Calls fn; returns 0, or the signal number if it faulted (address in t_fault_addr).
int guarded_call(CopyFn fn, void* dst, const void* src, std::size_t n, void** ret) {
  sigjmp_buf env;
  t_jump = &env;
  const int sig = sigsetjmp(env, 1);
  if (sig == 0) *ret = fn(dst, src, n);
  t_jump = nullptr;
  return sig;
}

// ----- guarded regions ---------------------------------------------------------------------

/// [PROT_NONE page][data, `size` bytes][PROT_NONE page].
class GuardedRegion {
 public:
  explicit GuardedRegion(std::size_t size) {
    page_ = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    size_ = (size + page_ - 1) / page_ * page_;
    total_ = size_ + 2 * page_;
    void* p = mmap(nullptr, total_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return;
    base_ = static_cast<std::uint8_t*>(p);
    if (mprotect(base_ + page_, size_, PROT_READ | PROT_WRITE) != 0) {
      munmap(base_, total_);
      base_ = nullptr;
    }
  }
  ~GuardedRegion() {
    if (base_) munmap(base_, total_);
  }
  GuardedRegion(const GuardedRegion&) = delete;
  GuardedRegion& operator=(const GuardedRegion&) = delete;
  bool ok() const { return base_ != nullptr; }
  std::uint8_t* begin() const { return base_ + page_; }
  std::uint8_t* end() const { return base_ + page_ + size_; }
  std::uint8_t* guard_before() const { return base_; }
  std::size_t size() const { return size_; }

 private:
  std::uint8_t* base_ = nullptr;
  std::size_t page_ = 4096, size_ = 0, total_ = 0;
};

constexpr std::size_t kCanary = 64;

struct Checker {
  CopyFn fn;
  GuardedRegion& s;
  GuardedRegion& d;
  VerifyReport& rep;
  std::uint8_t canary = 0xA5;

  /// Runs one case; returns false (and records the failure) on the first problem.
  bool run(std::uint64_t n, std::uint8_t* src, std::uint8_t* dst, Placement where) {
    canary = static_cast<std::uint8_t>(canary * 37 + 11);
    if (canary == 0) canary = 0x5A;
    std::uint8_t* lo = std::max(d.begin(), dst - std::min<std::ptrdiff_t>(kCanary, dst - d.begin()));
    std::uint8_t* hi = std::min(d.end(), dst + n + kCanary);
    std::memset(lo, canary, static_cast<std::size_t>(hi - lo));
    void* ret = nullptr;
    const int sig = guarded_call(fn, dst, src, n, &ret);
    auto fail = [&](std::string what) {
      rep.failure = VerifyFailure{n, static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(src) % 64),
                                  static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(dst) % 64),
                                  where, std::move(what)};
      return false;
    };
    if (sig != 0) {
      std::ostringstream o;
      o << "fault (" << (sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS" : "signal") << ") at address "
        << t_fault_addr;
      const auto a = reinterpret_cast<std::uintptr_t>(t_fault_addr);
      if (a >= reinterpret_cast<std::uintptr_t>(src) + n && a < reinterpret_cast<std::uintptr_t>(src) + n + 4096)
        o << " = src + " << (a - reinterpret_cast<std::uintptr_t>(src)) << " (read past the end)";
      else if (a < reinterpret_cast<std::uintptr_t>(src) && a + 4096 > reinterpret_cast<std::uintptr_t>(src))
        o << " = src - " << (reinterpret_cast<std::uintptr_t>(src) - a) << " (read before the start)";
      else if (a >= reinterpret_cast<std::uintptr_t>(dst) + n && a < reinterpret_cast<std::uintptr_t>(dst) + n + 4096)
        o << " = dst + " << (a - reinterpret_cast<std::uintptr_t>(dst)) << " (write past the end)";
      else if (a < reinterpret_cast<std::uintptr_t>(dst) && a + 4096 > reinterpret_cast<std::uintptr_t>(dst))
        o << " = dst - " << (reinterpret_cast<std::uintptr_t>(dst) - a) << " (write before the start)";
      return fail(o.str());
    }
    ++rep.cases;
    if (ret != dst) {
      std::ostringstream o;
      o << "returned " << ret << " instead of dst " << static_cast<void*>(dst);
      return fail(o.str());
    }
    for (std::uint8_t* p = lo; p < dst; ++p)
      if (*p != canary) return fail("wrote " + std::to_string(dst - p) + " byte(s) before dst (canary)");
    if (n && std::memcmp(dst, src, n) != 0) {
      std::uint64_t i = 0;
      while (i < n && dst[i] == src[i]) ++i;
      return fail("byte " + std::to_string(i) + " of dst differs from src (" + std::to_string(dst[i]) +
                  " != " + std::to_string(src[i]) + ")");
    }
    for (std::uint8_t* p = dst + n; p < hi; ++p)
      if (*p != canary) return fail("wrote byte dst + " + std::to_string(p - dst) + " past the end (canary)");
    return true;
  }
};

}  // namespace

VerifyReport verify_copy(CopyFn fn, const std::vector<std::uint64_t>& edges, const VerifyOptions& opt) {
  VerifyReport rep;
  std::mt19937_64 rng(opt.seed);

  // ----- the lengths ------------------------------------------------------------------------
  std::set<std::uint64_t> sizes;
  for (std::uint64_t n = 0; n <= opt.dense_max; ++n) sizes.insert(n);
  for (std::uint64_t e : edges) {
    if (e > opt.max_size) {
      rep.skipped_edges.push_back(e);
      continue;
    }
    const std::uint64_t lo = e > opt.edge_radius ? e - opt.edge_radius : 0;
    for (std::uint64_t n = lo; n <= e + opt.edge_radius && n <= opt.max_size; ++n) sizes.insert(n);
  }
  // Random lengths go up to twice the largest tested edge (at least 1 MiB): beyond the last
  // edge every length takes the same path, so larger ones only cost time.
  std::uint64_t top = std::uint64_t{1} << 20;
  for (std::uint64_t e : edges)
    if (e <= opt.max_size) top = std::max(top, 2 * e);
  top = std::min(top, opt.max_size);
  if (top > opt.dense_max + 1) {
    const double a = std::log(double(opt.dense_max + 1)), b = std::log(double(top));
    std::uniform_real_distribution<double> u(a, b);
    for (unsigned i = 0; i < opt.random_sizes; ++i)
      sizes.insert(std::min<std::uint64_t>(top, static_cast<std::uint64_t>(std::exp(u(rng)))));
  }
  rep.sizes = sizes.size();
  const std::uint64_t max_n = *sizes.rbegin();

  // ----- the buffers ------------------------------------------------------------------------
  GuardedRegion s(max_n + 2 * kCanary + 128), d(max_n + 2 * kCanary + 128);
  if (!s.ok() || !d.ok()) {
    rep.failure = VerifyFailure{max_n, 0, 0, Placement::kInterior,
                                "could not map " + std::to_string(2 * max_n) + " bytes of test buffers"};
    return rep;
  }
  {
    // xorshift64 pattern: a byte copied from the wrong place is caught with probability 255/256.
    std::uint64_t x = opt.seed * 0x9E3779B97F4A7C15ull + 1;
    for (std::uint8_t* p = s.begin(); p < s.end(); p += 8) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      std::memcpy(p, &x, 8);
    }
  }
  FaultTrap trap;
  Checker ck{fn, s, d, rep};

  // ----- n = 0 with pointers that must not be touched -------------------------------------
  {
    struct Z {
      void* dst;
      const void* src;
    };
    const Z zs[] = {{nullptr, nullptr},
                    {s.guard_before(), d.guard_before()},
                    {reinterpret_cast<void*>(std::uintptr_t{8}), reinterpret_cast<const void*>(std::uintptr_t{24})},
                    {d.guard_before() + 63, s.guard_before() + 1}};
    for (const Z& z : zs) {
      void* ret = nullptr;
      const int sig = guarded_call(fn, z.dst, z.src, 0, &ret);
      if (sig != 0 || ret != z.dst) {
        std::ostringstream o;
        o << "n = 0 with dst " << z.dst << ", src " << z.src << ": "
          << (sig ? "faulted (it touched memory)" : "did not return dst");
        rep.failure = VerifyFailure{0, 0, 0, Placement::kZeroLength, o.str()};
        return rep;
      }
      ++rep.cases;
    }
  }

  // ----- every length ------------------------------------------------------------------------
  std::uint64_t index = 0;
  const unsigned stride = 1 + 2 * static_cast<unsigned>(rng() % 32);  // odd: a permutation mod 64
  for (std::uint64_t n : sizes) {
    ++index;
    std::uint8_t* const s_in = s.begin() + kCanary;
    std::uint8_t* const d_in = d.begin() + kCanary;
    if (n <= opt.large_n) {
      if (opt.all_pairs) {
        for (unsigned so = 0; so < 64; ++so)
          for (unsigned dof = 0; dof < 64; ++dof)
            if (!ck.run(n, s_in + so, d_in + dof, Placement::kInterior)) return rep;
      } else {
        for (unsigned so = 0; so < 64; ++so) {
          const unsigned dof = (so * stride + index) % 64;
          if (!ck.run(n, s_in + so, d_in + dof, Placement::kInterior)) return rep;
        }
      }
    } else {
      // Large n: a few offset pairs, rotating through a fixed list, plus one random pair.
      static constexpr unsigned kPairs[][2] = {{0, 0}, {1, 63}, {63, 1}, {4, 33}, {15, 0}, {0, 15}, {32, 32}};
      for (unsigned i = 0; i < opt.large_pairs; ++i) {
        const auto& pr = kPairs[(index + i) % 7];
        if (!ck.run(n, s_in + pr[0], d_in + pr[1], Placement::kInterior)) return rep;
      }
      const unsigned so = static_cast<unsigned>(rng() % 64), dof = static_cast<unsigned>(rng() % 64);
      if (!ck.run(n, s_in + so, d_in + dof, Placement::kInterior)) return rep;
    }
    // Guard placements. Small n: all four, the other buffer at offsets 0 and a rotating one.
    // Large n: two of the four, alternating, so a window of consecutive lengths covers each.
    const unsigned o = static_cast<unsigned>((index * 7 + 13) % 64);
    auto guards = [&](unsigned which, unsigned other) {
      switch (which) {
        case 0: return ck.run(n, s.end() - n, d_in + other, Placement::kSrcEndsAtGuard);
        case 1: return ck.run(n, s_in + other, d.end() - n, Placement::kDstEndsAtGuard);
        case 2: return ck.run(n, s.begin(), d_in + other, Placement::kSrcAfterGuard);
        default: return ck.run(n, s_in + other, d.begin(), Placement::kDstAfterGuard);
      }
    };
    if (n <= opt.large_n) {
      for (unsigned which = 0; which < 4; ++which)
        if (!guards(which, 0) || !guards(which, o)) return rep;
    } else {
      if (!guards(index % 2 ? 0 : 2, o) || !guards(index % 2 ? 1 : 3, o)) return rep;
    }
  }
  return rep;
}

VerifyReport verify_routine(const Routine& r, const VerifyOptions& opt) {
  return verify_copy(r.fn(), plan_edges(r.plan()), opt);
}

Status check_routine(const Routine& r, const VerifyOptions& opt) {
  const VerifyReport rep = verify_routine(r, opt);
  if (rep.ok()) return {};
  return make_error(ErrorCode::kVerifyFailed,
                    "routine " + r.name() + " failed verification: " + rep.summary() +
                        "\n  params: " + to_string(r.params()));
}

}  // namespace copysynth
