// copysynth — conformance verification (see verify.hpp).
#include "copysynth/verify.hpp"

#include <cpuid.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <fstream>
#include <random>
#include <set>
#include <locale>
#include <sstream>

#include "copysynth/static_check.hpp"

namespace copysynth {

// ----- the ABI probe ---------------------------------------------------------------------------
//
// copysynth_abi_probe(entry, a0, a1, a2, AbiProbe* out): loads sentinels into rbx, rbp,
// r12-r15, executes vzeroupper first when out->flags bit 0 is set (so the upper state starts
// clean), calls entry(a0, a1, a2), then records rax, which sentinels changed, RFLAGS, rsp before
// and after the call and, when out->flags bit 1 is set, XINUSE (XGETBV with ECX = 1).
namespace {
struct AbiProbe {
  std::uint64_t ret;         // 0
  std::uint64_t clobbered;   // 8
  std::uint64_t rflags;      // 16
  std::uint64_t xinuse;      // 24
  std::uint64_t rsp_before;  // 32
  std::uint64_t rsp_after;   // 40
  std::uint64_t flags;       // 48: bit 0 vzeroupper first, bit 1 read XINUSE
};
}  // namespace

extern "C" void copysynth_abi_probe(const void* entry, std::uint64_t a0, std::uint64_t a1, std::uint64_t a2,
                                    AbiProbe* out);
asm(R"(
    .pushsection .text
    .globl copysynth_abi_probe
    .hidden copysynth_abi_probe
    .type copysynth_abi_probe, @function
copysynth_abi_probe:
    pushq %rbx
    pushq %rbp
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    pushq %r8                      # out; the stack is 16-byte aligned again
    movq %rdi, %rax
    movq %rsi, %rdi
    movq %rdx, %rsi
    movq %rcx, %rdx
    movabsq $0x1111111111111111, %rbx
    movabsq $0x2222222222222222, %rbp
    movabsq $0x3333333333333333, %r12
    movabsq $0x4444444444444444, %r13
    movabsq $0x5555555555555555, %r14
    movabsq $0x6666666666666666, %r15
    movq %rsp, 32(%r8)
    testq $1, 48(%r8)
    jz 1f
    vzeroupper
1:  callq *%rax
    movq (%rsp), %r8
    movq %rsp, 40(%r8)
    movq %rax, 0(%r8)
    pushfq
    popq %rcx
    movq %rcx, 16(%r8)
    cld
    xorl %r9d, %r9d
    movabsq $0x1111111111111111, %rcx
    cmpq %rcx, %rbx
    je 2f
    orl $1, %r9d
2:  movabsq $0x2222222222222222, %rcx
    cmpq %rcx, %rbp
    je 3f
    orl $2, %r9d
3:  movabsq $0x3333333333333333, %rcx
    cmpq %rcx, %r12
    je 4f
    orl $4, %r9d
4:  movabsq $0x4444444444444444, %rcx
    cmpq %rcx, %r13
    je 5f
    orl $8, %r9d
5:  movabsq $0x5555555555555555, %rcx
    cmpq %rcx, %r14
    je 6f
    orl $16, %r9d
6:  movabsq $0x6666666666666666, %rcx
    cmpq %rcx, %r15
    je 7f
    orl $32, %r9d
7:  movq %r9, 8(%r8)
    testq $2, 48(%r8)
    jz 8f
    movl $1, %ecx
    xgetbv
    movl %eax, 24(%r8)
8:  popq %r8
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbp
    popq %rbx
    ret
    .size copysynth_abi_probe, .-copysynth_abi_probe
    .popsection
)");

namespace {

/// flags for the probe: vzeroupper first when the CPU has AVX; read XINUSE when XGETBV supports
/// ECX = 1 (CPUID.(EAX=0DH,ECX=1):EAX[2]) and the OS enabled XSAVE.
std::uint64_t probe_flags() {
  static const std::uint64_t flags = [] {
    unsigned a, b, c, d;
    __cpuid(1, a, b, c, d);
    const bool osxsave = (c >> 27) & 1, avx = (c >> 28) & 1;
    std::uint64_t f = 0;
    if (osxsave && avx) f |= 1;
    if (osxsave && __get_cpuid_max(0, nullptr) >= 0xD) {
      __cpuid_count(0xD, 1, a, b, c, d);
      if ((a >> 2) & 1) f |= 2;
    }
    return f;
  }();
  return flags;
}

}  // namespace

std::string AbiCall::problem() const {
  std::string s;
  static const char* names[] = {"rbx", "rbp", "r12", "r13", "r14", "r15"};
  for (int i = 0; i < 6; ++i)
    if (clobbered & (1u << i)) s += std::string(s.empty() ? "" : ", ") + "changed callee-saved " + names[i];
  if (rsp_changed) s += std::string(s.empty() ? "" : ", ") + "returned with a different rsp";
  if (direction_flag) s += std::string(s.empty() ? "" : ", ") + "returned with the direction flag set";
  if (upper_checked && upper_dirty)
    s += std::string(s.empty() ? "" : ", ") + "left YMM/ZMM upper state dirty (missing vzeroupper)";
  return s;
}

AbiCall abi_call(const void* entry, std::uint64_t a0, std::uint64_t a1, std::uint64_t a2) {
  AbiProbe p{};
  p.flags = probe_flags();
  copysynth_abi_probe(entry, a0, a1, a2, &p);
  AbiCall c;
  c.ret = reinterpret_cast<void*>(p.ret);
  c.clobbered = static_cast<unsigned>(p.clobbered);
  c.direction_flag = (p.rflags >> 10) & 1;
  c.rsp_changed = p.rsp_before != p.rsp_after;
  c.upper_checked = (p.flags & 3) == 3;
  // XINUSE bit 2: YMM_Hi128, bit 6: ZMM_Hi256 (upper halves of registers 0-15; vzeroupper puts
  // both in their initial state). Bits 5 and 7 (opmask, zmm16-31) are not vzeroupper's business.
  c.upper_dirty = c.upper_checked && (p.xinuse & ((1u << 2) | (1u << 6)));
  return c;
}

const char* placement_name(Placement p) noexcept {
  switch (p) {
    case Placement::kInterior: return "interior, canaries around dst";
    case Placement::kSrcEndsAtGuard: return "src ends at a PROT_NONE page";
    case Placement::kDstEndsAtGuard: return "dst ends at a PROT_NONE page";
    case Placement::kSrcAfterGuard: return "src starts after a PROT_NONE page";
    case Placement::kDstAfterGuard: return "dst starts after a PROT_NONE page";
    case Placement::kZeroLength: return "n = 0 with invalid pointers";
    case Placement::kOverlap: return "overlapping src and dst";
    case Placement::kHuge: return "length >= 2^32";
    case Placement::kStatic: return "static check of the code";
  }
  return "?";
}

std::string VerifyReport::summary() const {
  std::ostringstream o;
  o.imbue(std::locale::classic());  // whatever std::locale::global() says
  if (ok()) {
    o << "passed: " << cases << " cases over " << sizes << " lengths";
  } else {
    const auto& f = *failure;
    if (f.placement == Placement::kStatic) {
      o << "FAILED the static checks: " << f.what;
    } else {
      o << "FAILED at n = " << f.n << ", src offset " << f.src_offset << ", dst offset " << f.dst_offset;
      if (f.placement == Placement::kOverlap) o << ", dst - src = " << f.distance;
      o << " (" << placement_name(f.placement) << "): " << f.what << " [after " << cases << " passing cases]";
    }
  }
  if (!skipped_edges.empty()) {
    o << "; edges above the size cap not tested:";
    for (auto e : skipped_edges) o << ' ' << e;
  }
  for (const auto& n : notes) o << "; " << n;
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
  signal(sig, SIG_DFL);  // not ours: the default action
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

/// Calls entry(a0, a1, a2) through the ABI probe; returns 0, or the signal number if it faulted
/// (address in t_fault_addr).
///
/// sigsetjmp does not save the signal mask (savemask = 0): saving it is an rt_sigprocmask system
/// call on every case (about 21 000 per start-up verification of three routines, 11 million per
/// tuning run). Nothing needs it restored: FaultTrap's handler runs with SA_NODEFER and an empty
/// sa_mask, so the kernel blocks nothing extra while it runs and the mask after siglongjmp is the
/// one the fault interrupted, the caller's.
int guarded_call(const void* entry, std::uint64_t a0, std::uint64_t a1, std::uint64_t a2, AbiCall* out) {
  sigjmp_buf env;
  t_jump = &env;
  const int sig = sigsetjmp(env, 0);
  if (sig == 0) *out = abi_call(entry, a0, a1, a2);
  t_jump = nullptr;
  return sig;
}

template <class T>
std::uint64_t u64(T* p) {
  return reinterpret_cast<std::uintptr_t>(p);
}

std::string fault_text(int sig, const void* src, const void* dst, std::uint64_t n) {
  std::ostringstream o;
  o.imbue(std::locale::classic());  // whatever std::locale::global() says
  o << "fault (" << (sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS" : "signal") << ") at address "
    << t_fault_addr;
  const auto a = reinterpret_cast<std::uintptr_t>(t_fault_addr);
  if (src) {
    const auto s = reinterpret_cast<std::uintptr_t>(src);
    if (a >= s + n && a < s + n + 4096) o << " = src + " << (a - s) << " (read past the end)";
    else if (a < s && a + 4096 > s) o << " = src - " << (s - a) << " (read before the start)";
  }
  const auto d = reinterpret_cast<std::uintptr_t>(dst);
  if (a >= d + n && a < d + n + 4096) o << " = dst + " << (a - d) << " (write past the end)";
  else if (a < d && a + 4096 > d) o << " = dst - " << (d - a) << " (write before the start)";
  return o.str();
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

/// xorshift64 pattern: a byte copied from the wrong place is caught with probability 255/256.
void fill_random(std::uint8_t* p, std::size_t n, std::uint64_t seed) {
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    std::memcpy(p + i, &x, 8);
  }
  for (; i < n; ++i) p[i] = static_cast<std::uint8_t>(i * 131 + seed);
}

/// The lengths to test: 0..dense_max, every edge ± radius, and seeded random lengths.
std::set<std::uint64_t> test_sizes(const std::vector<std::uint64_t>& edges, const VerifyOptions& opt,
                                   std::mt19937_64& rng, VerifyReport& rep) {
  std::set<std::uint64_t> sizes;
  for (std::uint64_t n = 0; n <= opt.dense_max && n <= opt.max_size; ++n) sizes.insert(n);
  for (std::uint64_t e : edges) {
    if (e > opt.max_size) {
      rep.skipped_edges.push_back(e);
      continue;
    }
    const std::uint64_t lo = e > opt.edge_radius ? e - opt.edge_radius : 0;
    const std::uint64_t step = e > opt.large_edge ? std::max(1u, opt.large_edge_stride) : 1;
    for (std::uint64_t n = lo; n <= e + opt.edge_radius && n <= opt.max_size; n += step) sizes.insert(n);
    for (std::uint64_t n = e > 0 ? e - 1 : 0; n <= e + 1 && n <= opt.max_size; ++n) sizes.insert(n);
  }
  // Random lengths go up to twice the largest tested edge (at least 1 MiB): beyond the last
  // edge every length takes the same path, so larger ones only cost time.
  std::uint64_t top = std::uint64_t{1} << 20;
  for (std::uint64_t e : edges)
    if (e <= opt.max_size) top = std::max(top, 2 * e);
  top = std::min(top, opt.max_size);
  // Spread evenly over the octaves from dense_max + 1 to top (an octave [2^(k-1), 2^k) drawn
  // uniformly, then a length uniformly within it; the last octave ends at top, so a top that is a
  // power of two is not an octave of one length, though the octaves at either end may be short),
  // so short and long lengths get a like share. In
  // integers: with no exp or log the shim, which links this file, needs no libm.so.6 of its own
  // loaded into every program it is preloaded in (ctest preload_needs_no_cxx_runtime).
  if (top > opt.dense_max + 1) {
    const std::uint64_t lo = opt.dense_max + 1;
    const int last = std::bit_width(top - 1);  // top - 1 >= lo >= 1
    std::uniform_int_distribution<int> octave(std::bit_width(lo), last);
    for (unsigned i = 0; i < opt.random_sizes; ++i) {
      const int k = octave(rng);
      const std::uint64_t from = std::max(lo, std::uint64_t{1} << (k - 1));
      const std::uint64_t to = k == last ? top : (std::uint64_t{1} << k) - 1;
      sizes.insert(std::uniform_int_distribution<std::uint64_t>(from, to)(rng));
    }
  }
  rep.sizes = sizes.size();
  return sizes;
}

/// What a routine must do to dst: copy from src, or fill with a byte.
struct Expect {
  bool fill = false;
  int c = 0;  // fill: the int passed; only its low byte counts
};

/// Runs one memcpy/fill case with canaries around dst; records the first failure.
class Checker {
 public:
  Checker(const void* entry, GuardedRegion& d, VerifyReport& rep) : entry_(entry), d_(d), rep_(rep) {}

  bool run(std::uint64_t n, const std::uint8_t* src, std::uint8_t* dst, Placement where, Expect ex) {
    canary_ = static_cast<std::uint8_t>(canary_ * 37 + 11);
    if (ex.fill && canary_ == static_cast<std::uint8_t>(ex.c)) canary_ ^= 0x55;
    std::uint8_t* lo = std::max(d_.begin(), dst - std::min<std::ptrdiff_t>(kCanary, dst - d_.begin()));
    std::uint8_t* hi = std::min(d_.end(), dst + n + kCanary);
    std::memset(lo, canary_, static_cast<std::size_t>(hi - lo));
    AbiCall call;
    const int sig = ex.fill ? guarded_call(entry_, u64(dst), static_cast<std::uint64_t>(static_cast<std::int64_t>(ex.c)), n, &call)
                            : guarded_call(entry_, u64(dst), u64(src), n, &call);
    auto fail = [&](std::string what) {
      rep_.failure = VerifyFailure{n, static_cast<unsigned>(u64(src) % 64), static_cast<unsigned>(u64(dst) % 64),
                                   where, 0, std::move(what)};
      return false;
    };
    if (sig != 0) return fail(fault_text(sig, ex.fill ? nullptr : src, dst, n));
    ++rep_.cases;
    if (call.ret != dst) {
      std::ostringstream o;
      o.imbue(std::locale::classic());  // whatever std::locale::global() says
      o << "returned " << call.ret << " instead of dst " << static_cast<void*>(dst);
      return fail(o.str());
    }
    if (const std::string abi = call.problem(); !abi.empty()) return fail("ABI: " + abi);
    for (std::uint8_t* p = lo; p < dst; ++p)
      if (*p != canary_) return fail("wrote " + std::to_string(dst - p) + " byte(s) before dst (canary)");
    if (ex.fill) {
      const auto c = static_cast<std::uint8_t>(ex.c);
      // Every byte is c iff the first is and each equals the next: one memcmp of dst against
      // itself shifted by a byte (a byte loop costs more than the routine, a buffer of n bytes
      // of c one more pass over memory).
      if (n && (dst[0] != c || std::memcmp(dst, dst + 1, n - 1) != 0)) {
        std::uint64_t i = 0;
        while (dst[i] == c) ++i;
        return fail("byte " + std::to_string(i) + " of dst is " + std::to_string(dst[i]) + ", not the fill byte " +
                    std::to_string(c));
      }
    } else if (n && std::memcmp(dst, src, n) != 0) {
      std::uint64_t i = 0;
      while (i < n && dst[i] == src[i]) ++i;
      return fail("byte " + std::to_string(i) + " of dst differs from src (" + std::to_string(dst[i]) +
                  " != " + std::to_string(src[i]) + ")");
    }
    for (std::uint8_t* p = dst + n; p < hi; ++p)
      if (*p != canary_) return fail("wrote byte dst + " + std::to_string(p - dst) + " past the end (canary)");
    return true;
  }

 private:
  const void* entry_;
  GuardedRegion& d_;
  VerifyReport& rep_;
  std::uint8_t canary_ = 0xA5;
};

/// n = 0 must return dst and touch nothing, whatever the pointers.
bool zero_length_checks(const void* entry, bool fill, const GuardedRegion& s, const GuardedRegion& d,
                        VerifyReport& rep) {
  struct Z {
    void* dst;
    const void* src;
  };
  const Z zs[] = {{nullptr, nullptr},
                  {s.guard_before(), d.guard_before()},
                  {reinterpret_cast<void*>(std::uintptr_t{8}), reinterpret_cast<const void*>(std::uintptr_t{24})},
                  {d.guard_before() + 63, s.guard_before() + 1}};
  for (const Z& z : zs) {
    AbiCall call;
    const int sig = guarded_call(entry, u64(z.dst), fill ? 0x5A : u64(z.src), 0, &call);
    if (sig != 0 || call.ret != z.dst || !call.problem().empty()) {
      std::ostringstream o;
      o.imbue(std::locale::classic());  // whatever std::locale::global() says
      o << "n = 0 with dst " << z.dst;
      if (!fill) o << ", src " << z.src;
      o << ": " << (sig ? "faulted (it touched memory)" : call.ret != z.dst ? "did not return dst" : call.problem());
      rep.failure = VerifyFailure{0, 0, 0, Placement::kZeroLength, 0, o.str()};
      return false;
    }
    ++rep.cases;
  }
  return true;
}

/// memcpy- or fill-style checks over all lengths and placements.
VerifyReport verify_linear(const void* entry, bool fill, const std::vector<std::uint64_t>& edges,
                           const VerifyOptions& opt) {
  VerifyReport rep;
  std::mt19937_64 rng(opt.seed);
  const std::set<std::uint64_t> sizes = test_sizes(edges, opt, rng, rep);
  const std::uint64_t max_n = *sizes.rbegin();
  GuardedRegion s(max_n + 2 * kCanary + 128), d(max_n + 2 * kCanary + 128);
  if (!s.ok() || !d.ok()) {
    rep.failure = VerifyFailure{max_n, 0, 0, Placement::kInterior, 0,
                                "could not map " + std::to_string(2 * max_n) + " bytes of test buffers"};
    rep.out_of_memory = true;
    return rep;
  }
  if (!fill) fill_random(s.begin(), s.size(), opt.seed);  // fill reads no src
  // Above single_case_n one case per length, except at edge - 1, edge, edge + 1 and the longest
  // length tested (where a class's last or first length runs, and max_size cuts an edge's window).
  std::set<std::uint64_t> all_cases{max_n};
  for (std::uint64_t e : edges)
    for (std::uint64_t n = e > 0 ? e - 1 : 0; n <= e + 1; ++n) all_cases.insert(n);
  FaultTrap trap;
  Checker ck(entry, d, rep);
  if (!zero_length_checks(entry, fill, s, d, rep)) return rep;

  static constexpr int kFillBytes[] = {0, 0xFF, 0x5A, 0x80, 0x1234, -1, 256, 0x7F};
  static constexpr unsigned kPairs[][2] = {{0, 0}, {1, 63}, {63, 1}, {4, 33}, {15, 0}, {0, 15}, {32, 32}};
  std::uint64_t index = 0;
  const unsigned stride = 1 + 2 * static_cast<unsigned>(rng() % 32);  // odd: a permutation mod 64
  for (std::uint64_t n : sizes) {
    ++index;
    Expect ex{fill, kFillBytes[index % 8]};
    std::uint8_t* const s_in = s.begin() + kCanary;
    std::uint8_t* const d_in = d.begin() + kCanary;
    if (n <= opt.large_n) {
      for (unsigned so = 0; so < 64; ++so) {
        if (opt.all_pairs) {
          for (unsigned dof = 0; dof < 64; ++dof)
            if (!ck.run(n, s_in + so, d_in + dof, Placement::kInterior, ex)) return rep;
        } else {
          const unsigned dof = (so * stride + index) % 64;
          if (!ck.run(n, s_in + so, d_in + dof, Placement::kInterior, ex)) return rep;
        }
        if (fill && !opt.all_pairs) {
          ex.c = kFillBytes[(index + so) % 8];
          if (so >= 8) break;  // fill has no src: 8 dst offsets per n (rotating) suffice
        }
      }
    } else if (n <= opt.single_case_n || all_cases.count(n)) {
      // Large n: a few offset pairs, rotating through a fixed list, plus one random pair.
      for (unsigned i = 0; i < opt.large_pairs; ++i) {
        const auto& pr = kPairs[(index + i) % 7];
        if (!ck.run(n, s_in + pr[0], d_in + pr[1], Placement::kInterior, ex)) return rep;
      }
      const unsigned so = static_cast<unsigned>(rng() % 64), dof = static_cast<unsigned>(rng() % 64);
      if (!ck.run(n, s_in + so, d_in + dof, Placement::kInterior, ex)) return rep;
    }
    // Guard placements. Small n: all four, the other buffer at offsets 0 and a rotating one.
    // Large n: two of the four, alternating, so a window of consecutive lengths covers each.
    const unsigned o = static_cast<unsigned>((index * 7 + 13) % 64);
    auto guards = [&](unsigned which, unsigned other) {
      switch (which) {
        case 0: return fill || ck.run(n, s.end() - n, d_in + other, Placement::kSrcEndsAtGuard, ex);
        case 1: return ck.run(n, s_in + other, d.end() - n, Placement::kDstEndsAtGuard, ex);
        case 2: return fill || ck.run(n, s.begin(), d_in + other, Placement::kSrcAfterGuard, ex);
        default: return ck.run(n, s_in + other, d.begin(), Placement::kDstAfterGuard, ex);
      }
    };
    if (n <= opt.large_n) {
      for (unsigned which = 0; which < 4; ++which)
        if (!guards(which, 0) || !guards(which, o)) return rep;
    } else if (n > opt.single_case_n && !all_cases.count(n)) {
      // One case per length, rotating through the offset pairs and the guard placements (fill:
      // the two with a dst guard), so that consecutive lengths take each in turn; 11 and 9 are
      // odd, so each placement meets both parities of n.
      const unsigned k = static_cast<unsigned>(index % (fill ? 9 : 11));
      if (k < 7) {
        if (!ck.run(n, s_in + kPairs[k][0], d_in + kPairs[k][1], Placement::kInterior, ex)) return rep;
      } else if (!guards(fill ? 2 * (k - 7) + 1 : k - 7, o)) {
        return rep;
      }
    } else {
      // Which two alternates every second length, not every length: index and n step together
      // near an edge, and alternating with index % 2 gave each guard one parity of n there.
      const bool odd = (index / 2) % 2 != 0;
      if (!guards(odd ? 0 : 2, o) || !guards(odd ? 1 : 3, o)) return rep;
    }
  }
  return rep;
}

/// memmove with src and dst in one buffer, against glibc's memmove on a copy of the buffer.
bool overlap_checks(CopyFn fn, const std::vector<std::uint64_t>& edges, unsigned vec, const VerifyOptions& opt,
                    VerifyReport& rep) {
  std::set<std::uint64_t> sizes;
  for (std::uint64_t n = 0; n <= opt.overlap_dense; ++n) sizes.insert(n);
  for (std::uint64_t e : edges)
    for (std::uint64_t n = e > 8 ? e - 8 : 0; n <= e + 8; ++n)
      if (n <= std::min<std::uint64_t>(opt.max_size, opt.overlap_max)) sizes.insert(n);
  const std::int64_t span = 2 * static_cast<std::int64_t>(vec) + 64;
  const std::uint64_t max_n = *sizes.rbegin();
  // Distances reach ±span and ±(n+1); src sits `reach` bytes into the window.
  const std::size_t reach = std::max<std::size_t>(static_cast<std::size_t>(span), max_n + 1);
  const std::size_t window = max_n + 2 * reach + 2 * kCanary + 128;
  GuardedRegion g(window + 64);
  std::vector<std::uint8_t> ref(g.size()), pool(window + 4096);
  if (!g.ok()) {
    rep.failure = VerifyFailure{max_n, 0, 0, Placement::kOverlap, 0, "could not map the overlap test buffer"};
    rep.out_of_memory = true;
    return false;
  }
  fill_random(pool.data(), pool.size(), opt.seed + 7);
  std::uint64_t index = 0;
  for (std::uint64_t n : sizes) {
    std::vector<std::int64_t> distances;
    const std::int64_t sn = static_cast<std::int64_t>(n);
    const int stride = n <= opt.overlap_dense ? 1 : static_cast<int>(opt.overlap_stride);
    for (std::int64_t dd = -span; dd <= span; dd += stride) distances.push_back(dd);
    for (std::int64_t dd : {sn - 1, sn, sn + 1, 1 - sn, -sn, -sn - 1, std::int64_t{0}, std::int64_t{1}, std::int64_t{-1}})
      if (std::llabs(dd) <= sn + 1) distances.push_back(dd);
    for (std::int64_t dd : distances) {
      ++index;
      // src at an offset that rotates mod 64; dst = src + dd; both inside the window.
      const std::size_t base = kCanary + reach + index % 64;
      std::uint8_t* src = g.begin() + base;
      std::uint8_t* dst = src + dd;
      const std::size_t lo = std::min(src, dst) - g.begin() - kCanary;
      const std::size_t hi = std::max(src, dst) - g.begin() + n + kCanary;
      const std::size_t shift = index % 4096;
      std::memcpy(g.begin() + lo, pool.data() + shift, hi - lo);
      std::memcpy(ref.data() + lo, pool.data() + shift, hi - lo);
      std::memmove(ref.data() + (dst - g.begin()), ref.data() + (src - g.begin()), n);
      AbiCall call;
      const int sig = guarded_call(reinterpret_cast<const void*>(fn), u64(dst), u64(src), n, &call);
      auto fail = [&](std::string what) {
        rep.failure = VerifyFailure{n, static_cast<unsigned>(u64(src) % 64), static_cast<unsigned>(u64(dst) % 64),
                                    Placement::kOverlap, dd, std::move(what)};
        return false;
      };
      if (sig != 0) return fail(fault_text(sig, src, dst, n));
      ++rep.cases;
      if (call.ret != dst) return fail("did not return dst");
      if (const std::string abi = call.problem(); !abi.empty()) return fail("ABI: " + abi);
      if (std::memcmp(g.begin() + lo, ref.data() + lo, hi - lo) != 0) {
        std::size_t i = lo;
        while (g.begin()[i] == ref[i]) ++i;
        const std::int64_t rel = static_cast<std::int64_t>(i) - (dst - g.begin());
        return fail(rel >= 0 && rel < sn ? "byte " + std::to_string(rel) + " of dst differs from what memmove gives"
                                         : "changed a byte outside dst (dst " + std::string(rel < 0 ? "" : "+ ") +
                                               std::to_string(rel) + ")");
      }
    }
  }
  return true;
}

bool available_memory_at_least(std::uint64_t bytes) {
  std::ifstream f("/proc/meminfo");
  std::string key;
  std::uint64_t kb = 0;
  std::string unit;
  while (f >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024 >= bytes;
  return false;
}

}  // namespace

VerifyReport verify_copy(CopyFn fn, const std::vector<std::uint64_t>& edges, const VerifyOptions& opt) {
  return verify_linear(reinterpret_cast<const void*>(fn), false, edges, opt);
}

VerifyReport verify_move(CopyFn fn, const std::vector<std::uint64_t>& edges, unsigned vec, const VerifyOptions& opt) {
  VerifyReport rep = verify_copy(fn, edges, opt);
  if (!rep.ok()) return rep;
  FaultTrap trap;
  overlap_checks(fn, edges, vec, opt, rep);
  return rep;
}

VerifyReport verify_fill(FillFn fn, const std::vector<std::uint64_t>& edges, const VerifyOptions& opt) {
  return verify_linear(reinterpret_cast<const void*>(fn), true, edges, opt);
}

VerifyReport verify_clear_page(ClearPageFn fn, const VerifyOptions& opt) {
  VerifyReport rep;
  rep.sizes = 1;
  constexpr std::size_t kPages = 4;
  GuardedRegion g(kPages * kPageBytes);
  if (!g.ok()) {
    rep.failure = VerifyFailure{kPageBytes, 0, 0, Placement::kInterior, 0, "could not map the test pages"};
    rep.out_of_memory = true;
    return rep;
  }
  FaultTrap trap;
  for (unsigned round = 0; round < 8; ++round) {
    const std::size_t page = round % kPages;  // the first and the last page touch a guard page
    fill_random(g.begin(), g.size(), opt.seed + round);
    std::vector<std::uint8_t> before(g.begin(), g.end());
    std::uint8_t* p = g.begin() + page * kPageBytes;
    AbiCall call;
    // clear_page takes rdi alone: rsi and rdx hold whatever the caller left there, so they are
    // not zero here (a routine that took its zero from rsi would fill the page with 0xA5).
    const int sig = guarded_call(reinterpret_cast<const void*>(fn), u64(p), 0xA5A5A5A5A5A5A5A5ull,
                                 0x5A5A5A5A5A5A5A5Aull, &call);
    auto fail = [&](std::string what) {
      rep.failure = VerifyFailure{kPageBytes, 0, 0, page == 0 ? Placement::kDstAfterGuard
                                                     : page == kPages - 1 ? Placement::kDstEndsAtGuard
                                                                          : Placement::kInterior,
                                  0, std::move(what)};
      return rep;
    };
    if (sig != 0) return fail(fault_text(sig, nullptr, p, kPageBytes));
    ++rep.cases;
    if (const std::string abi = call.problem(); !abi.empty()) return fail("ABI: " + abi);
    for (std::size_t i = 0; i < g.size(); ++i) {
      const bool inside = i >= page * kPageBytes && i < (page + 1) * kPageBytes;
      const std::uint8_t want = inside ? 0 : before[i];
      if (g.begin()[i] != want)
        return fail(inside ? "byte " + std::to_string(i - page * kPageBytes) + " of the page is not zero"
                           : "changed a byte outside the page (page " + std::string(i < page * kPageBytes ? "- " : "+ ") +
                                 std::to_string(i < page * kPageBytes ? page * kPageBytes - i : i - page * kPageBytes) + ")");
    }
  }
  return rep;
}

VerifyReport verify_huge(const Routine& r, const VerifyOptions& opt) {
  VerifyReport rep;
  const Operation op = r.operation();
  if (op == Operation::kClearPage) return rep;
  constexpr std::uint64_t kN = (std::uint64_t{1} << 32) + 4097;
  constexpr std::uint64_t kRegion = kN + 3 * 4096;
  const bool two_buffers = op == Operation::kMemcpy;
  // Every byte of dst gets written, so that much memory must really be available.
  if (!available_memory_at_least(kRegion + (std::uint64_t{1} << 30))) {
    rep.notes.push_back("lengths >= 2^32 not checked: less than 5 GiB of memory available");
    return rep;
  }
  GuardedRegion a(kRegion), b(two_buffers ? kRegion : 4096);
  if (!a.ok() || !b.ok()) {
    rep.notes.push_back("lengths >= 2^32 not checked: cannot map 2 x 4 GiB");
    return rep;
  }
  // Transparent huge pages cut the page faults of touching 4 GiB by 512x (tens of seconds to
  // about one in a VM); harmless where THP is off.
  madvise(a.begin(), a.size(), MADV_HUGEPAGE);
  madvise(b.begin(), b.size(), MADV_HUGEPAGE);
  // Slices of 64 bytes at these offsets of the copy: around 2^31, 2^32 and the end.
  const std::uint64_t at[] = {0, 4093, (1ull << 31) - 5, 1ull << 31, (1ull << 32) - 7, 1ull << 32,
                              (1ull << 32) + 1000, kN - 64};
  FaultTrap trap;
  auto fail = [&](std::uint64_t n, const void* s, const void* d, std::int64_t dist, std::string what) {
    rep.failure = VerifyFailure{n, static_cast<unsigned>(u64(s) % 64), static_cast<unsigned>(u64(d) % 64),
                                Placement::kHuge, dist, std::move(what)};
    return rep;
  };
  // Untouched anonymous pages read as zero; only the slices of src carry a pattern.
  auto plant = [&](std::uint8_t* src, std::uint64_t seed) {
    for (std::uint64_t off : at) fill_random(src + off, 64, seed + off);
  };
  auto expected = [&](std::uint64_t src_pos, std::uint64_t seed) {
    // The byte originally at src + src_pos: a planted slice byte, or zero. Slices may overlap;
    // the one planted last wins, so search from the last.
    for (auto it = std::rbegin(at); it != std::rend(at); ++it)
      if (const std::uint64_t off = *it; src_pos >= off && src_pos < off + 64) {
        std::uint8_t tmp[64];
        fill_random(tmp, 64, seed + off);
        return tmp[src_pos - off];
      }
    return std::uint8_t{0};
  };
  struct Case {
    std::int64_t distance;  // memmove: dst - src; memcpy/fill: ignored
  };
  std::vector<Case> cases{{0}};
  if (op == Operation::kMemmove) cases = {{1}, {-1}};
  for (const Case& c : cases) {
    std::uint8_t *src, *dst;
    if (op == Operation::kMemcpy) {
      src = a.begin() + 3;  // misaligned ends
      dst = b.begin() + 5;
    } else if (op == Operation::kMemmove) {
      src = a.begin() + 4096 + 3;
      dst = src + c.distance;
    } else {
      src = nullptr;
      dst = a.begin() + 5;
    }
    const std::uint64_t seed = opt.seed + 99;
    if (src) plant(src, seed);
    // Guard bytes just outside everything the call may touch (src and dst together).
    std::uint8_t* const below = (src ? std::min(src, dst) : dst) - 1;
    std::uint8_t* const above = (src ? std::max(src, dst) : dst) + kN;
    *below = 0xC3;
    *above = 0xC3;
    AbiCall call;
    const int sig = op == Operation::kFill ? guarded_call(r.entry(), u64(dst), 0x1C7, kN, &call)
                                           : guarded_call(r.entry(), u64(dst), u64(src), kN, &call);
    if (sig != 0) return fail(kN, src, dst, c.distance, fault_text(sig, src, dst, kN));
    ++rep.cases;
    if (call.ret != dst) return fail(kN, src, dst, c.distance, "did not return dst");
    if (*below != 0xC3 || *above != 0xC3) return fail(kN, src, dst, c.distance, "wrote outside [dst, dst + n)");
    for (std::uint64_t off : at)
      for (std::uint64_t i = off; i < off + 64; ++i) {
        const std::uint8_t want = op == Operation::kFill ? std::uint8_t{0xC7} : expected(i, seed);
        if (dst[i] != want)
          return fail(kN, src, dst, c.distance,
                      "byte " + std::to_string(i) + " of dst is " + std::to_string(dst[i]) + ", expected " +
                          std::to_string(want) + " (a length truncated to 32 bits stops at byte 4097)");
      }
    if (op == Operation::kMemmove) {
      // Back to "planted slices, zero elsewhere" for the next direction: clear every slice and
      // its one-byte-shifted copy, and the guard bytes.
      for (std::uint64_t off : at) std::memset(src + off - (off >= 4 ? 4 : 0), 0, 72);
      *below = 0;
      *above = 0;
    }
  }
  rep.sizes = 1;
  return rep;
}

namespace {
VerifyReport verify_routine_unguarded(const Routine& r, const VerifyOptions& opt) {
  VerifyReport rep;
  if (opt.static_check) {
    const StaticReport st = check_routine_code(r, CpuInfo::host().features());
    if (!st.ok()) {
      rep.failure = VerifyFailure{0, 0, 0, Placement::kStatic, 0, st.summary()};
      return rep;
    }
  }
  const auto edges = plan_edges(r.plan());
  switch (r.operation()) {
    case Operation::kMemcpy: rep = verify_copy(r.fn(), edges, opt); break;
    case Operation::kMemmove: rep = verify_move(r.fn(), edges, r.plan().vec, opt); break;
    case Operation::kFill: rep = verify_fill(r.fill_fn(), edges, opt); break;
    case Operation::kClearPage: rep = verify_clear_page(r.clear_page_fn(), opt); break;
  }
  if ((probe_flags() & 2) == 0)
    rep.notes.push_back("the after-call check for dirty YMM/ZMM state was skipped: this CPU has no XINUSE "
                        "(XGETBV with ECX = 1); the static checks still cover vzeroupper");
  if (rep.ok() && opt.huge) {
    VerifyReport h = verify_huge(r, opt);
    rep.cases += h.cases;
    rep.notes.insert(rep.notes.end(), h.notes.begin(), h.notes.end());
    if (!h.ok()) rep.failure = h.failure;
  }
  return rep;
}
}  // namespace

Status check_verify_options(const VerifyOptions& opt) {
  const auto refuse = [](const std::string& what) {
    return make_error(ErrorCode::kInvalidArgument,
                      "invalid verification options: " + what + " (start from VerifyOptions{}, quick() or startup())");
  };
  // 64 KiB each: at 1 MiB one field alone ran for minutes (a hostile user's run).
  constexpr std::uint64_t kDenseMax = 64 * 1024;
  if (opt.dense_max > kDenseMax)
    return refuse("dense_max " + std::to_string(opt.dense_max) + " is above 65536 (every length up to it is checked)");
  if (opt.edge_radius > kDenseMax)
    return refuse("edge_radius " + std::to_string(opt.edge_radius) + " is above 65536 (every length within it of "
                                                                     "every edge is checked)");
  if (opt.random_sizes > 65536) return refuse("random_sizes " + std::to_string(opt.random_sizes) + " is above 65536");
  if (opt.large_pairs > 4096)
    return refuse("large_pairs " + std::to_string(opt.large_pairs) + " is above 4096 (there are 64 x 64 offset pairs)");
  if (opt.overlap_dense > 4096)
    return refuse("overlap_dense " + std::to_string(opt.overlap_dense) +
                  " is above 4096 (every length up to it is checked with every distance)");
  if (opt.overlap_stride == 0 || opt.overlap_stride > 4096)
    return refuse("overlap_stride " + std::to_string(opt.overlap_stride) +
                  " is not from 1 to 4096 (every k-th distance; 0 never ends)");
  return {};
}

VerifyReport verify_routine(const Routine& r, const VerifyOptions& opt) {
  if (auto st = check_verify_options(opt); !st) {
    VerifyReport rep;
    rep.failure = VerifyFailure{0, 0, 0, Placement::kInterior, 0, st.error().message};
    rep.invalid_options = true;
    return rep;
  }
  // The harness's own tables (lengths, cases) are allocated too: where ulimit -v leaves no room
  // for them, the routine was not checked, as where its buffers could not be mapped.
  try {
    return verify_routine_unguarded(r, opt);
  } catch (const std::bad_alloc&) {
    VerifyReport rep;
    rep.failure = VerifyFailure{0, 0, 0, Placement::kInterior, 0, "could not allocate the verification's own tables"};
    rep.out_of_memory = true;
    return rep;
  }
}

Status check_routine(const Routine& r, const VerifyOptions& opt) {
  return verification_error(verify_routine(r, opt), "routine " + r.name(), "\n  params: " + to_string(r.params()));
}

Status verification_error(const VerifyReport& rep, const std::string& subject, const std::string& tail) {
  if (rep.ok()) return {};
  // Not the routine's fault: said as the system's, with what to do (it read as a routine that
  // failed verification, which the API calls a copysynth bug).
  if (rep.invalid_options)
    return make_error(ErrorCode::kInvalidArgument, subject + " could not be verified: " + rep.failure->what + tail);
  if (rep.out_of_memory)
    return make_error(ErrorCode::kSystem,
                      subject + " could not be verified: " + rep.failure->what + " (" + kVerifyNoMemory + ")" + tail);
  return make_error(ErrorCode::kVerifyFailed, subject + " failed verification: " + rep.summary() + tail);
}

}  // namespace copysynth
