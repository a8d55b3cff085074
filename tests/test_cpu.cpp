// copysynth — tests of CpuInfo (runtime/cpu.hpp): host detection, capping, synthetic CPUs, the
// signature and its parsing, sysfs cache sizes.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "copysynth/cpu.hpp"
#include "support/temp_dir.hpp"
#include "support/text.hpp"

using namespace copysynth;

namespace {
using test::contains;
using test::TempDir;
using test::write_file;
}  // namespace

// ================================================================================ CpuInfo ==

TEST_CASE("CpuInfo::host describes a usable x86-64 CPU") {
  const CpuInfo& h = CpuInfo::host();
  CHECK(&h == &CpuInfo::host());  // read once and cached
  CHECK_FALSE(h.vendor().empty());
  const IsaFeatures& f = h.features();
  CHECK(f.has(Feature::kSSE2));
  if (f.has(Feature::kAVX2)) CHECK(f.has(Feature::kAVX));
  if (f.has(Feature::kAVX512F)) CHECK(f.has(Feature::kAVX));
  if (f.has(Feature::kAVX512BW)) CHECK(f.has(Feature::kAVX512F));
  if (f.has(Feature::kAVX512VL)) CHECK(f.has(Feature::kAVX512F));
  CHECK(h.family() > 0);
  const std::string sig = h.signature();
  CHECK(contains(sig, h.vendor()));
  CHECK(contains(sig, f.to_string()));
  CHECK(sig == h.vendor() + "-" + std::to_string(h.family()) + "-" + std::to_string(h.model()) + ":" +
                   f.to_string());
  const std::string desc = h.describe();
  CHECK(contains(desc, sig));
  CHECK(contains(desc, f.to_string()));
  MESSAGE("host: " << sig);
  // Cache sizes: read from sysfs at the first caches() call (not by host()), the same every call.
  const CacheSizes& caches = h.caches();
  CHECK(&caches == &h.caches());
  const CacheSizes sysfs = read_cache_sizes();
  CHECK(caches.l1d == sysfs.l1d);
  CHECK(caches.l2 == sysfs.l2);
  CHECK(caches.l3 == sysfs.l3);
}

TEST_CASE("CpuInfo::capped removes vector features and changes the signature") {
  const CpuInfo& h = CpuInfo::host();
  const CpuInfo c = h.capped(IsaLevel::kSSE2);
  for (auto v : {Feature::kAVX, Feature::kAVX2, Feature::kAVX512F, Feature::kAVX512BW,
                 Feature::kAVX512VL})
    CHECK_FALSE(c.features().has(v));
  CHECK(c.features().has(Feature::kSSE2));
  CHECK(c.features() == h.features().capped(IsaLevel::kSSE2));
  CHECK(c.vendor() == h.vendor());
  CHECK(c.family() == h.family());
  CHECK(c.model() == h.model());
  CHECK(c.stepping() == h.stepping());
  CHECK(c.brand() == h.brand());
  CHECK(c.caches().l2 == h.caches().l2);  // the same host's caches
  CHECK(c.caches().l3 == h.caches().l3);
  CHECK(c.features().max_vector_bytes() == 16);
  if (h.features().has(Feature::kAVX2)) {
    CHECK(c.signature() != h.signature());
  } else {
    CHECK(c.signature() == h.signature());
  }
  const CpuInfo c2 = h.capped(IsaLevel::kAVX2);
  for (auto v : {Feature::kAVX512F, Feature::kAVX512BW, Feature::kAVX512VL}) CHECK_FALSE(c2.features().has(v));
  CHECK(c2.features().has(Feature::kAVX2) == h.features().has(Feature::kAVX2));
  CHECK(h.capped(IsaLevel::kAVX512).signature() == h.signature());
  // Capping never adds: an SSE2-only CPU stays SSE2-only.
  const CpuInfo s = CpuInfo::synthetic("X", 1, 2, 3, IsaFeatures::for_level(IsaLevel::kSSE2));
  CHECK(s.capped(IsaLevel::kAVX512).features() == s.features());
}

TEST_CASE("CpuInfo::synthetic") {
  const CpuInfo c =
      CpuInfo::synthetic("GenuineIntel", 6, 143, 8, IsaFeatures::for_level(IsaLevel::kAVX512));
  CHECK(c.vendor() == "GenuineIntel");
  CHECK(c.family() == 6);
  CHECK(c.model() == 143);
  CHECK(c.stepping() == 8);
  CHECK(c.features() == IsaFeatures::for_level(IsaLevel::kAVX512));
  CHECK(c.signature() == "GenuineIntel-6-143:sse2,avx,avx2,avx512f,avx512bw,avx512vl,bmi2");
  CHECK(c.caches().l1d == 0);
  CHECK(c.caches().l2 == 0);
  CHECK(c.caches().l3 == 0);
  const CpuInfo d = c.capped(IsaLevel::kAVX2);
  CHECK(d.signature() == "GenuineIntel-6-143:sse2,avx,avx2,bmi2");
  CHECK(c.capped(IsaLevel::kSSE2).signature() == "GenuineIntel-6-143:sse2,bmi2");
  // Stepping is not part of the signature.
  CHECK(CpuInfo::synthetic("GenuineIntel", 6, 143, 1, c.features()).signature() == c.signature());
  CHECK(CpuInfo::synthetic("GenuineIntel", 6, 144, 8, c.features()).signature() != c.signature());
}

TEST_CASE("read_cache_sizes reads a sysfs cache directory") {
  TempDir tmp;
  const std::string dir = tmp.path + "/cache";
  // Instruction cache first, with a different size, so only the data cache counts as L1d.
  write_file(dir + "/index0/level", "1\n");
  write_file(dir + "/index0/type", "Instruction\n");
  write_file(dir + "/index0/size", "64K\n");
  write_file(dir + "/index1/level", "1\n");
  write_file(dir + "/index1/type", "Data\n");
  write_file(dir + "/index1/size", "32K\n");
  write_file(dir + "/index2/level", "2\n");
  write_file(dir + "/index2/type", "Unified\n");
  write_file(dir + "/index2/size", "1024K\n");
  write_file(dir + "/index3/level", "3\n");
  write_file(dir + "/index3/type", "Unified\n");
  write_file(dir + "/index3/size", "32M\n");
  const CacheSizes c = read_cache_sizes(dir);
  CHECK(c.l1d == 32 * 1024);
  CHECK(c.l2 == 1024 * 1024);
  CHECK(c.l3 == 32ull * 1024 * 1024);

  // Only L1d and L2 present.
  const std::string dir2 = tmp.path + "/cache2";
  write_file(dir2 + "/index0/level", "1\n");
  write_file(dir2 + "/index0/type", "Data\n");
  write_file(dir2 + "/index0/size", "48K\n");
  write_file(dir2 + "/index1/level", "2\n");
  write_file(dir2 + "/index1/type", "Unified\n");
  write_file(dir2 + "/index1/size", "2048K\n");
  const CacheSizes c2 = read_cache_sizes(dir2);
  CHECK(c2.l1d == 48 * 1024);
  CHECK(c2.l2 == 2048 * 1024);
  CHECK(c2.l3 == 0);

  const CacheSizes none = read_cache_sizes(tmp.path + "/does-not-exist");
  CHECK(none.l1d == 0);
  CHECK(none.l2 == 0);
  CHECK(none.l3 == 0);
}

TEST_CASE("parse_cpu_signature takes CpuInfo::signature() apart") {
  const CpuInfo c = CpuInfo::synthetic("GenuineIntel", 6, 143, 8, IsaFeatures::for_level(IsaLevel::kAVX2));
  auto s = parse_cpu_signature(c.signature());
  REQUIRE(s);
  CHECK(s->vendor == "GenuineIntel");
  CHECK(s->family == 6);
  CHECK(s->model == 143);
  CHECK(s->features == std::vector<std::string>{"sse2", "avx", "avx2", "bmi2"});
  CHECK(parse_cpu_signature(CpuInfo::host().signature()));
  // A vendor string may hold '-' and ':' (CPUID's 12 bytes); the split is at the end.
  auto odd = parse_cpu_signature("Odd-Vendor:x-26-2:sse2,erms");
  REQUIRE(odd);
  CHECK(odd->vendor == "Odd-Vendor:x");
  CHECK(odd->family == 26);
  CHECK(odd->model == 2);
  CHECK(odd->features == std::vector<std::string>{"sse2", "erms"});
  auto none = parse_cpu_signature("V-1-2:none");
  REQUIRE(none);
  CHECK(none->features.empty());
  for (const char* bad : {"", "GenuineIntel", "GenuineIntel-6-143", "GenuineIntel-6:sse2", "GenuineIntel-x-143:sse2",
                          "GenuineIntel-6-14a:sse2", "GenuineIntel-6--1:sse2", "GenuineIntel-6-143:", "GenuineIntel-6-143:sse2,,avx",
                          "GenuineIntel-6-1234567890:sse2", "-6:sse2"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_cpu_signature(bad));
  }
}

// Regression: wisdom tuned with `autotune --isa avx2` records the capped signature and was refused
// on the very host that made it ("tuned on CPU ...:sse2,avx,avx2,... but this host is ...avx512f...").
