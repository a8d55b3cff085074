// copysynth — what the host CPU is and what it can run.
//
// Features come from CPUID masked by what the OS enabled in XCR0 (Intel SDM vol. 1, 13.3 "Enabling
// the XSAVE feature set"): AVX needs XCR0 bits 1-2 (SSE, AVX state), AVX-512 additionally bits 5-7
// (opmask, ZMM_Hi256, Hi16_ZMM). FSRM is CPUID.(EAX=7,ECX=0):EDX[4], which asmjit's 2022 snapshot
// does not report, so copysynth reads CPUID itself. Cache sizes come from sysfs
// (/sys/devices/system/cpu/cpu0/cache), not CPUID leaf 4 / 0x8000001D, which hypervisors fake
// (glibc 2.36 reads a 256 MiB L3 on the project's VM host).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "copysynth/isa.hpp"

namespace copysynth {

struct CacheSizes {
  std::uint64_t l1d = 0;  ///< bytes per core, 0 if unknown
  std::uint64_t l2 = 0;   ///< bytes per core, 0 if unknown
  std::uint64_t l3 = 0;   ///< bytes shared by the cores of cpu0's L3, 0 if unknown
};

class CpuInfo {
 public:
  /// The host, read once (thread-safe) and cached.
  static const CpuInfo& host();

  /// A CPU described without asking the hardware (tests, cross-target `.S` output).
  static CpuInfo synthetic(std::string vendor, unsigned family, unsigned model, unsigned stepping,
                           IsaFeatures features);

  /// A copy with every vector feature above `level` removed (Highway SetSupportedTargetsForTest).
  /// The signature changes with the features.
  CpuInfo capped(IsaLevel level) const;

  const std::string& vendor() const { return vendor_; }  ///< "GenuineIntel", "AuthenticAMD", ...
  const std::string& brand() const { return brand_; }    ///< CPUID brand string, trimmed
  unsigned family() const { return family_; }            ///< display family (base + extended)
  unsigned model() const { return model_; }              ///< display model (with extended model)
  unsigned stepping() const { return stepping_; }
  const IsaFeatures& features() const { return features_; }
  /// Cache sizes from sysfs (read_cache_sizes). For the host (and copies of it: capped()) they
  /// are read at the first call of any CpuInfo's caches(), once per process, not by host(): a
  /// program that only installs wisdom never needs them, and reading the sysfs files costs
  /// about 0.3 ms of its start-up on a 2-core VM (docs/performance.md, "Real programs under the
  /// shim and the library"). synthetic() CPUs: all 0.
  const CacheSizes& caches() const;
  bool hypervisor() const { return hypervisor_; }        ///< CPUID.1:ECX[31]

  /// Identifies the configuration a wisdom entry was tuned for:
  /// "<vendor>-<family>-<model>:<features>", e.g. "AuthenticAMD-26-2:sse2,avx,avx2,...,fsrm".
  /// Stepping and cache sizes are left out: they do not change which routine is valid, and a
  /// fleet tunes once per CPU model. Wisdom of one signature is used on a CPU of another when
  /// signature_runs_on() says so (the same model, the wisdom's features a subset of the CPU's).
  std::string signature() const;

  /// Multi-line description for reports (`autotune` header, `--show`).
  std::string describe() const;

 private:
  std::string vendor_, brand_;
  unsigned family_ = 0, model_ = 0, stepping_ = 0;
  IsaFeatures features_;
  CacheSizes caches_;          // synthetic CPUs' (all 0)
  bool host_caches_ = false;   // caches() reads the host's
  bool hypervisor_ = false;

  static CpuInfo detect();
};

/// A CPU signature taken apart (CpuInfo::signature(): "<vendor>-<family>-<model>:<features>").
struct CpuSignature {
  std::string vendor;                 ///< CPUID's vendor string, e.g. "AuthenticAMD"
  unsigned family = 0, model = 0;     ///< display family and model, decimal in the text
  std::vector<std::string> features;  ///< the feature names as written ("none": empty)
};

/// Parses a signature as CpuInfo::signature() writes it. The vendor is CPUID's 12 bytes and may
/// itself hold '-' or ':'; feature names and the decimal family and model never do, so the text
/// is split at its last ':' and at the last two '-' before that. std::nullopt when it is not of
/// that form (a family or model that is not a decimal number, an empty feature name, ...).
std::optional<CpuSignature> parse_cpu_signature(std::string_view signature);

/// Whether routines tuned on a CPU of signature `tuned` may run on a CPU of signature `host`:
/// the same signature, or the same vendor, family and model with every feature of `tuned` among
/// `host`'s. The second case is wisdom tuned with a capped ISA (`autotune --isa avx2`) on this
/// very CPU model: its routines use only the features it records. A different vendor, family or
/// model is never accepted (the tuning is for that model), nor a feature `host` lacks. When not,
/// and `why` is given, it is set to the reason in words ("another CPU model", "this host lacks
/// avx512f, which the wisdom's routines may use").
bool signature_runs_on(const std::string& tuned, const std::string& host, std::string* why = nullptr);

/// Reads the cache sizes of cpu0 from `sysfs_cpu_dir` (default /sys/devices/system/cpu/cpu0/cache);
/// unknown sizes are 0.
CacheSizes read_cache_sizes(const std::string& sysfs_cache_dir = "/sys/devices/system/cpu/cpu0/cache");

}  // namespace copysynth
