// copysynth — peers: the routines a tuned routine is compared with.
//
// Each peer is a plain, obviously correct routine of an operation's call form (routine.hpp),
// called through a function pointer exactly as a tuned routine is:
//   glibc         the system memcpy / memmove / memset (system_routine(), through a volatile
//                 pointer the compiler cannot see through);
//   rep_movsb     memcpy as `mov rax, rdi; mov rcx, rdx; rep movsb; ret` (fill: rep_stosb);
//   avx2_loop     4 x 32-byte unaligned AVX2 loads/stores per iteration, the last vector
//                 overlapping, a scalar/SSE path below 32 bytes; memmove picks the direction
//                 (forward when dst <= src or the buffers are apart, else backward) and loads the
//                 vector at the far end before the loop; fill stores a broadcast byte;
//   avx2_nt_loop  memcpy: avx2_loop below 1 MiB; from 1 MiB on, dst aligned to 32 and
//                 _mm256_stream_si256 stores, then sfence;
//   dpdk          DPDK's rte_memcpy (AVX2 build, header-inline) when this build found the DPDK
//                 headers (libdpdk-dev); memcpy only.
//   aocl          AMD AOCL-LibMem's memcpy / memmove / memset (one variant per Zen generation,
//                 thresholds from the cache sizes its constructor reads with CPUID) when the
//                 program was linked with the archive tools/build-aocl-peer.sh builds (cmake:
//                 COPYSYNTH_AOCL_PEER; autotune, copysynth_bench and test_peers link it). Called
//                 as AMD ships it: its CMake compiles it with -mno-vzeroupper, so it returns
//                 with the upper YMM/ZMM state dirty (an ABI probe sees it; the AVX2 peers and
//                 every generated routine clear it).
// clear_page has only "glibc" (memset(page, 0, 4096)). They are the comparison baseline of
// `autotune --report` and of bench/ (copysynth_bench); tests/test_peers.cpp runs the conformance
// suite on every one of them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "copysynth/cpu.hpp"
#include "copysynth/params.hpp"
#include "copysynth/routine.hpp"

namespace copysynth {

struct Peer {
  std::string name;         ///< short, for table columns: "glibc", "rep_movsb", "avx2_loop", ...
  Operation op = Operation::kMemcpy;
  const void* entry = nullptr;  ///< a function of op's call form (CopyFn, FillFn, ClearPageFn)
  std::string description;  ///< one line: what the routine does
};

/// The peers of `op` available in this build and runnable on `host`, in a fixed order (glibc
/// first). The AVX2 peers (avx2_loop, avx2_nt_loop, dpdk) need AVX2 in `host`; aocl needs what
/// aocl_peer_runs_on() says.
std::vector<Peer> peers(Operation op, const IsaFeatures& host = CpuInfo::host().features());

/// True when this build has the dpdk peer (DPDK headers found at configure time).
bool have_dpdk_peer() noexcept;

/// True when this program was linked with the AOCL-LibMem peer archive (libaocl-peer.a from
/// tools/build-aocl-peer.sh, linked with -Wl,-u,aocl_memcpy: cmake's copysynth::aocl_peer
/// target). copysynth_tuner refers to it weakly, so a program without it links and has no aocl
/// peer.
bool have_aocl_peer() noexcept;

/// The Zen generation (1..5) the linked AOCL-LibMem peer was built for; 0 without one.
int aocl_peer_zen() noexcept;

/// One line on the linked AOCL-LibMem peer: version, variant, how it was picked, compiler and
/// flags (written by tools/build-aocl-peer.sh); empty without one.
std::string_view aocl_peer_build() noexcept;

/// Whether `host` has the instructions of the linked AOCL-LibMem variant: AVX-512 F, BW and VL
/// (and AVX2, BMI2) for zen4 and zen5, AVX2 and BMI2 for zen1..zen3. False without a peer.
/// (AMD's fallback flags for a compiler without -march=znver5 add AVX-512 VBMI, which IsaFeatures
/// does not track; every AVX-512 Zen has it.)
bool aocl_peer_runs_on(const IsaFeatures& host) noexcept;

/// The length thresholds AOCL-LibMem's constructor set in this process, in bytes, from the cache
/// sizes it read with CPUID leaf 0x8000001D (AOCL-LibMem 5.3 src/threshold.c). They decide where
/// its memcpy switches to `rep movsb` and to non-temporal stores. A CPU or hypervisor that does
/// not provide that leaf (CPUID 0x80000001 ECX bit 22, TOPOEXT, clear) makes every cache size
/// read as 1 byte, and the non-temporal threshold with it.
struct AoclThresholds {
  std::uint64_t nt_start = 0;        ///< non-temporal stores from here (Zen 5: the L3 size per CCX)
  std::uint64_t repmov_start = 0;    ///< rep movsb window [start, stop) (ERMS CPUs)
  std::uint64_t repmov_stop = 0;
  std::uint64_t repstore_start = 0;  ///< rep stosb window [start, stop) (memset)
  std::uint64_t repstore_stop = 0;
};

/// AOCL-LibMem's thresholds in this process; empty without a peer or when the build script found
/// no such globals in the AOCL-LibMem version it built.
std::optional<AoclThresholds> aocl_peer_thresholds() noexcept;

/// Empty unless the aocl peer is linked and read no cache sizes in this process (its
/// non-temporal threshold, aocl_peer_thresholds(), is 1 byte or less): then one sentence saying
/// so, that it streams with non-temporal stores from 2 KiB on and so is a weaker peer than the
/// library a user of this CPU runs, and how to rebuild it with the sizes
/// (tools/build-aocl-peer.sh --cache-sizes). AOCL-LibMem 5.3 reads the sizes from CPUID leaf
/// 0x8000001D (its src/cache_info.c), which a hypervisor that clears TOPOEXT leaves empty.
/// autotune --report prints it under its targets and in the aocl peer's description.
std::string aocl_peer_caveat();

/// Length from which avx2_nt_loop uses non-temporal stores (bytes).
inline constexpr std::size_t kPeerNtThreshold = std::size_t{1} << 20;

/// The system memcpy, called through a pointer the compiler cannot see through.
CopyFn system_memcpy();

/// The system routine an operation is compared with: glibc's memcpy, memmove, memset, and
/// memset(page, 0, 4096) for clear_page. An entry point of the operation's call form.
const void* system_routine(Operation op);

/// What the baseline column is called: "system memcpy", "system memmove", "system memset",
/// "memset(0) page".
std::string baseline_name(Operation op);

}  // namespace copysynth
