// copysynth — the peer routines (peers.hpp): plain, obviously correct comparison baselines.
//
// This file is compiled for baseline x86-64; only the functions marked target("avx2") use AVX2,
// and peers() hands them out only when the host has AVX2. Every AVX2 path ends with vzeroupper
// (_mm256_zeroupper(); the conformance suite's ABI probe checks it).
#include "copysynth/peers.hpp"

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "copysynth/c_format.hpp"

// `rep movsb` / `rep stosb` as functions of the memcpy / memset call form (SysV: rdi = dst,
// rsi = src or the byte, rdx = n; returns dst). The direction flag is clear on entry (ABI).
extern "C" void* copysynth_peer_rep_movsb(void* dst, const void* src, std::size_t n);
extern "C" void* copysynth_peer_rep_stosb(void* dst, int c, std::size_t n);
asm(R"(
    .pushsection .text
    .p2align 5
    .globl copysynth_peer_rep_movsb
    .hidden copysynth_peer_rep_movsb
    .type copysynth_peer_rep_movsb, @function
copysynth_peer_rep_movsb:
    movq %rdi, %rax
    movq %rdx, %rcx
    rep movsb
    ret
    .size copysynth_peer_rep_movsb, .-copysynth_peer_rep_movsb

    .p2align 5
    .globl copysynth_peer_rep_stosb
    .hidden copysynth_peer_rep_stosb
    .type copysynth_peer_rep_stosb, @function
copysynth_peer_rep_stosb:
    movq %rdi, %r8
    movl %esi, %eax
    movq %rdx, %rcx
    rep stosb
    movq %r8, %rax
    ret
    .size copysynth_peer_rep_stosb, .-copysynth_peer_rep_stosb
    .popsection
)");

#if COPYSYNTH_HAVE_DPDK
// tuner/src/peer_dpdk.cpp: rte_memcpy (AVX2 build of DPDK's header-inline routine).
extern "C" void* copysynth_peer_dpdk(void* dst, const void* src, std::size_t n);
#endif

// AOCL-LibMem (peers.hpp, "aocl"): defined by libaocl-peer.a (tools/build-aocl-peer.sh) when the
// program links it, else null. Weak, so that copysynth_tuner links and installs without it.
extern "C" {
__attribute__((weak)) void* aocl_memcpy(void* dst, const void* src, std::size_t n);
__attribute__((weak)) void* aocl_memmove(void* dst, const void* src, std::size_t n);
__attribute__((weak)) void* aocl_memset(void* dst, int c, std::size_t n);
__attribute__((weak)) extern const int copysynth_aocl_peer_zen;
__attribute__((weak)) extern const char copysynth_aocl_peer_build[];
__attribute__((weak)) int copysynth_aocl_peer_thresholds(std::uint64_t t[5]);
}

namespace copysynth {
namespace {

using u8 = unsigned char;

// n < 32: two overlapping moves of the widest power of two <= n (16, 8, 4, 2 bytes), or one byte.
// Both loads come before both stores, so this is also correct for overlapping buffers.
inline void copy_below_32(u8* d, const u8* s, std::size_t n) {
  if (n >= 16) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + n - 16));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d), a);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + n - 16), b);
  } else if (n >= 8) {
    std::uint64_t a, b;
    std::memcpy(&a, s, 8);
    std::memcpy(&b, s + n - 8, 8);
    std::memcpy(d, &a, 8);
    std::memcpy(d + n - 8, &b, 8);
  } else if (n >= 4) {
    std::uint32_t a, b;
    std::memcpy(&a, s, 4);
    std::memcpy(&b, s + n - 4, 4);
    std::memcpy(d, &a, 4);
    std::memcpy(d + n - 4, &b, 4);
  } else if (n >= 2) {
    std::uint16_t a, b;
    std::memcpy(&a, s, 2);
    std::memcpy(&b, s + n - 2, 2);
    std::memcpy(d, &a, 2);
    std::memcpy(d + n - 2, &b, 2);
  } else if (n == 1) {
    *d = *s;
  }
}

inline void fill_below_32(u8* d, u8 c, std::size_t n) {
  if (n >= 16) {
    const __m128i v = _mm_set1_epi8(static_cast<char>(c));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d), v);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + n - 16), v);
  } else if (n >= 8) {
    const std::uint64_t v = c * 0x0101010101010101ull;
    std::memcpy(d, &v, 8);
    std::memcpy(d + n - 8, &v, 8);
  } else if (n >= 4) {
    const std::uint32_t v = c * 0x01010101u;
    std::memcpy(d, &v, 4);
    std::memcpy(d + n - 4, &v, 4);
  } else if (n >= 2) {
    const std::uint16_t v = static_cast<std::uint16_t>(c * 0x0101u);
    std::memcpy(d, &v, 2);
    std::memcpy(d + n - 2, &v, 2);
  } else if (n == 1) {
    *d = c;
  }
}

#define COPYSYNTH_AVX2 __attribute__((target("avx2")))
#define COPYSYNTH_AVX2_INLINE inline __attribute__((target("avx2"), always_inline))

COPYSYNTH_AVX2_INLINE __m256i load32(const u8* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
COPYSYNTH_AVX2_INLINE void store32(u8* p, __m256i v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }

// Forward copy, n >= 32. The last 32 bytes are loaded before anything is stored and stored last;
// every block's loads come before its stores. So it is also correct when dst < src (memmove):
// a store never reaches a source byte that is still to be loaded.
COPYSYNTH_AVX2_INLINE void copy_forward(u8* d, const u8* s, std::size_t n) {
  const __m256i last = load32(s + n - 32);
  std::size_t i = 0;
  for (; n - i > 128; i += 128) {  // leaves 1..128 bytes
    const __m256i a = load32(s + i), b = load32(s + i + 32), c = load32(s + i + 64), e = load32(s + i + 96);
    store32(d + i, a);
    store32(d + i + 32, b);
    store32(d + i + 64, c);
    store32(d + i + 96, e);
  }
  for (; n - i > 32; i += 32) store32(d + i, load32(s + i));  // leaves 1..32 bytes
  store32(d + n - 32, last);
}

// Backward copy, n >= 32: the mirror of copy_forward (first 32 bytes loaded first, stored last),
// correct when src < dst < src + n.
COPYSYNTH_AVX2_INLINE void copy_backward(u8* d, const u8* s, std::size_t n) {
  const __m256i first = load32(s);
  std::size_t e = n;  // bytes [e, n) are done
  for (; e > 128; e -= 128) {  // leaves 1..128 bytes
    const __m256i a = load32(s + e - 32), b = load32(s + e - 64), c = load32(s + e - 96), f = load32(s + e - 128);
    store32(d + e - 32, a);
    store32(d + e - 64, b);
    store32(d + e - 96, c);
    store32(d + e - 128, f);
  }
  for (; e > 32; e -= 32) store32(d + e - 32, load32(s + e - 32));  // leaves 1..32 bytes
  store32(d, first);
}

COPYSYNTH_AVX2 void* avx2_memcpy(void* dst, const void* src, std::size_t n) {
  u8* d = static_cast<u8*>(dst);
  const u8* s = static_cast<const u8*>(src);
  if (n < 32) {
    copy_below_32(d, s, n);
    return dst;
  }
  copy_forward(d, s, n);
  _mm256_zeroupper();
  return dst;
}

COPYSYNTH_AVX2 void* avx2_memmove(void* dst, const void* src, std::size_t n) {
  u8* d = static_cast<u8*>(dst);
  const u8* s = static_cast<const u8*>(src);
  if (n < 32) {
    copy_below_32(d, s, n);
    return dst;
  }
  // Backward only when src < dst < src + n (unsigned: dst < src wraps to a huge distance).
  if (reinterpret_cast<std::uintptr_t>(d) - reinterpret_cast<std::uintptr_t>(s) < n)
    copy_backward(d, s, n);
  else
    copy_forward(d, s, n);
  _mm256_zeroupper();
  return dst;
}

COPYSYNTH_AVX2 void* avx2_nt_memcpy(void* dst, const void* src, std::size_t n) {
  if (n < kPeerNtThreshold) return avx2_memcpy(dst, src, n);
  u8* d = static_cast<u8*>(dst);
  const u8* s = static_cast<const u8*>(src);
  const __m256i last = load32(s + n - 32);
  store32(d, load32(s));
  // From the first 32-byte boundary after dst (1..32 bytes on; the head store covered the gap),
  // aligned non-temporal stores of 4 vectors, then ordinary stores for the rest.
  std::size_t i = 32 - (reinterpret_cast<std::uintptr_t>(d) & 31);
  for (; n - i > 128; i += 128) {  // leaves 1..128 bytes
    const __m256i a = load32(s + i), b = load32(s + i + 32), c = load32(s + i + 64), e = load32(s + i + 96);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d + i), a);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d + i + 32), b);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d + i + 64), c);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d + i + 96), e);
  }
  for (; n - i > 32; i += 32) store32(d + i, load32(s + i));
  store32(d + n - 32, last);
  _mm_sfence();
  _mm256_zeroupper();
  return dst;
}

COPYSYNTH_AVX2 void* avx2_memset(void* dst, int c, std::size_t n) {
  u8* d = static_cast<u8*>(dst);
  const u8 b = static_cast<u8>(c);
  if (n < 32) {
    fill_below_32(d, b, n);
    return dst;
  }
  const __m256i v = _mm256_set1_epi8(static_cast<char>(b));
  std::size_t i = 0;
  for (; n - i > 128; i += 128) {
    store32(d + i, v);
    store32(d + i + 32, v);
    store32(d + i + 64, v);
    store32(d + i + 96, v);
  }
  for (; n - i > 32; i += 32) store32(d + i, v);
  store32(d + n - 32, v);
  _mm256_zeroupper();
  return dst;
}

#undef COPYSYNTH_AVX2
#undef COPYSYNTH_AVX2_INLINE

const void* ep(void* (*f)(void*, const void*, std::size_t)) { return reinterpret_cast<const void*>(f); }
const void* ep(void* (*f)(void*, int, std::size_t)) { return reinterpret_cast<const void*>(f); }

}  // namespace

bool have_dpdk_peer() noexcept {
#if COPYSYNTH_HAVE_DPDK
  return true;
#else
  return false;
#endif
}

bool have_aocl_peer() noexcept {
  return &aocl_memcpy != nullptr && &aocl_memmove != nullptr && &aocl_memset != nullptr &&
         &copysynth_aocl_peer_zen != nullptr;
}

int aocl_peer_zen() noexcept { return have_aocl_peer() ? copysynth_aocl_peer_zen : 0; }

std::string_view aocl_peer_build() noexcept {
  return have_aocl_peer() && &copysynth_aocl_peer_build != nullptr ? std::string_view(copysynth_aocl_peer_build)
                                                                   : std::string_view();
}

bool aocl_peer_runs_on(const IsaFeatures& host) noexcept {
  const int zen = aocl_peer_zen();
  if (zen == 0 || !host.has(Feature::kAVX2) || !host.has(Feature::kBMI2)) return false;
  if (zen >= 4)
    return host.has(Feature::kAVX512F) && host.has(Feature::kAVX512BW) && host.has(Feature::kAVX512VL);
  return true;
}

std::optional<AoclThresholds> aocl_peer_thresholds() noexcept {
  std::uint64_t t[5] = {};
  if (!have_aocl_peer() || &copysynth_aocl_peer_thresholds == nullptr || !copysynth_aocl_peer_thresholds(t))
    return std::nullopt;
  return AoclThresholds{t[0], t[1], t[2], t[3], t[4]};
}

namespace {

// "AMD AOCL-LibMem 5.3.0 zen5 variant (...); non-temporal stores from 33554432 B in this process"
std::string aocl_description() {
  std::string d = "AMD " + std::string(aocl_peer_build());
  if (const auto t = aocl_peer_thresholds()) {
    d += "; non-temporal stores from " + std::to_string(t->nt_start) + " B in this process";
  }
  if (const std::string c = aocl_peer_caveat(); !c.empty()) d += " (" + c + ")";
  return d;
}

}  // namespace

std::string aocl_peer_caveat() {
  const auto t = aocl_peer_thresholds();
  if (!t || t->nt_start > 1) return {};
  return "AOCL-LibMem read no cache sizes in this process (CPUID leaf 0x8000001D is empty here: TOPOEXT "
         "clear, as in some VMs), so it uses non-temporal stores from 2 KiB on, a weaker peer than the "
         "library a user of this CPU runs; rebuild it with tools/build-aocl-peer.sh --cache-sizes L1D,L2,L3 "
         "(tools/perf-report.sh and tools/run-tests.sh pass COPYSYNTH_AOCL_CACHE_SIZES)";
}

std::vector<Peer> peers(Operation op, const IsaFeatures& host) {
  const bool avx2 = host.has(Feature::kAVX2);
  const bool aocl = aocl_peer_runs_on(host);
  std::vector<Peer> out;
  switch (op) {
    case Operation::kMemcpy:
      out.push_back({"glibc", op, system_routine(op), "the system memcpy (glibc), through a function pointer"});
      out.push_back({"rep_movsb", op, ep(&copysynth_peer_rep_movsb), "mov rax, rdi; mov rcx, rdx; rep movsb; ret"});
      if (avx2) {
        out.push_back({"avx2_loop", op, ep(&avx2_memcpy),
                       "4 x 32-byte unaligned AVX2 loads/stores per iteration, last vector overlapping"});
        out.push_back({"avx2_nt_loop", op, ep(&avx2_nt_memcpy),
                       "avx2_loop; from 1 MiB on dst aligned to 32, non-temporal stores, sfence"});
      }
#if COPYSYNTH_HAVE_DPDK
      if (avx2) out.push_back({"dpdk", op, ep(&copysynth_peer_dpdk), "DPDK rte_memcpy (AVX2 build)"});
#endif
      if (aocl) out.push_back({"aocl", op, ep(aocl_memcpy), aocl_description()});
      break;
    case Operation::kMemmove:
      out.push_back({"glibc", op, system_routine(op), "the system memmove (glibc), through a function pointer"});
      if (avx2)
        out.push_back({"avx2_loop", op, ep(&avx2_memmove),
                       "4 x 32-byte unaligned AVX2 loop, backward when src < dst < src + n"});
      if (aocl) out.push_back({"aocl", op, ep(aocl_memmove), aocl_description()});
      break;
    case Operation::kFill:
      out.push_back({"glibc", op, system_routine(op), "the system memset (glibc), through a function pointer"});
      out.push_back({"rep_stosb", op, ep(&copysynth_peer_rep_stosb), "mov r8, rdi; mov eax, esi; mov rcx, rdx; rep stosb"});
      if (avx2)
        out.push_back({"avx2_loop", op, ep(&avx2_memset), "4 x 32-byte unaligned AVX2 stores per iteration"});
      if (aocl) out.push_back({"aocl", op, ep(aocl_memset), aocl_description()});
      break;
    case Operation::kClearPage:
      out.push_back({"glibc", op, system_routine(op), "memset(page, 0, 4096) (glibc)"});
      break;
  }
  return out;
}

// ----- the system routines (the baseline of every speedup) -------------------------------

namespace {
void* (*volatile g_system_memcpy)(void*, const void*, std::size_t) = &std::memcpy;
void* (*volatile g_system_memmove)(void*, const void*, std::size_t) = &std::memmove;
void* (*volatile g_system_memset)(void*, int, std::size_t) = &std::memset;
void system_clear_page(void* page) { g_system_memset(page, 0, kPageBytes); }
}  // namespace

CopyFn system_memcpy() { return g_system_memcpy; }

const void* system_routine(Operation op) {
  switch (op) {
    case Operation::kMemcpy: return reinterpret_cast<const void*>(g_system_memcpy);
    case Operation::kMemmove: return reinterpret_cast<const void*>(g_system_memmove);
    case Operation::kFill: return reinterpret_cast<const void*>(g_system_memset);
    case Operation::kClearPage: return reinterpret_cast<const void*>(&system_clear_page);
  }
  return nullptr;
}

std::string baseline_name(Operation op) {
  switch (op) {
    case Operation::kMemcpy: return "system memcpy";
    case Operation::kMemmove: return "system memmove";
    case Operation::kFill: return "system memset";
    case Operation::kClearPage: return "memset(0) page";
  }
  return "system";
}

}  // namespace copysynth
