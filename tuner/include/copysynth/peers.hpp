// copysynth — peers: the routines a tuned routine is compared with (issue 8).
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
// clear_page has only "glibc" (memset(page, 0, 4096)). They are the comparison baseline of
// `autotune --report` and of bench/ (copysynth_bench); tests/test_peers.cpp runs the conformance
// suite on every one of them.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "copysynth/cpu.hpp"
#include "copysynth/params.hpp"

namespace copysynth {

struct Peer {
  std::string name;         ///< short, for table columns: "glibc", "rep_movsb", "avx2_loop", ...
  Operation op = Operation::kMemcpy;
  const void* entry = nullptr;  ///< a function of op's call form (CopyFn, FillFn, ClearPageFn)
  std::string description;  ///< one line: what the routine does
};

/// The peers of `op` available in this build and runnable on `host`, in a fixed order (glibc
/// first). The AVX2 peers (avx2_loop, avx2_nt_loop, dpdk) need AVX2 in `host`.
std::vector<Peer> peers(Operation op, const IsaFeatures& host = CpuInfo::host().features());

/// True when this build has the dpdk peer (DPDK headers found at configure time).
bool have_dpdk_peer() noexcept;

/// Length from which avx2_nt_loop uses non-temporal stores (bytes).
inline constexpr std::size_t kPeerNtThreshold = std::size_t{1} << 20;

}  // namespace copysynth
