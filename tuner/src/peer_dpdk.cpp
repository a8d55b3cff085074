// copysynth — the "dpdk" peer (peers.hpp): DPDK's rte_memcpy behind a function pointer.
//
// rte_memcpy is header-inline (rte_memcpy.h; no DPDK library is linked). This file alone is
// compiled with -mavx2 -include rte_config.h (tuner/CMakeLists.txt), which selects its AVX2 path;
// peers() hands it out only on AVX2 hosts. Include nothing else here: an inline function of a
// C++ header compiled with -mavx2 could be picked by the linker for the whole program.
//
// rte_memcpy has no vzeroupper of its own: it relies on the compiler's vzeroupper insertion,
// which GCC runs only with -fexpensive-optimizations (-O2 and up), not in the -O1 sanitizer
// build. The explicit _mm256_zeroupper() keeps the ABI (docs/architecture.md, invariant 5) at every level;
// at -O2 GCC merges it with its own.
#include <immintrin.h>
#include <stddef.h>

#include <rte_memcpy.h>

extern "C" void* copysynth_peer_dpdk(void* dst, const void* src, size_t n) {
  void* ret = rte_memcpy(dst, src, n);
  _mm256_zeroupper();
  return ret;
}
