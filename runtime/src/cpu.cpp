// copysynth — CPUID/XCR0 feature detection and sysfs cache sizes (see cpu.hpp).
#include "copysynth/cpu.hpp"

#include <cpuid.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <locale>
#include <sstream>

namespace copysynth {
namespace {

struct Regs {
  unsigned a = 0, b = 0, c = 0, d = 0;
};

Regs cpuid(unsigned leaf, unsigned sub = 0) {
  Regs r;
  __cpuid_count(leaf, sub, r.a, r.b, r.c, r.d);
  return r;
}

std::uint64_t xgetbv0() {
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (std::uint64_t{hi} << 32) | lo;
}

bool bit(unsigned v, unsigned n) { return (v >> n) & 1u; }

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t\n");
  const auto e = s.find_last_not_of(" \t\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

/// Parses sysfs sizes such as "32K", "1024K", "32M".
std::uint64_t parse_size(const std::string& text) {
  std::uint64_t v = 0;
  std::size_t i = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') v = v * 10 + (text[i++] - '0');
  if (i < text.size()) {
    if (text[i] == 'K') v <<= 10;
    else if (text[i] == 'M') v <<= 20;
    else if (text[i] == 'G') v <<= 30;
  }
  return v;
}

std::string read_line(const std::string& path) {
  std::ifstream f(path);
  std::string s;
  std::getline(f, s);
  return trim(s);
}

}  // namespace

CacheSizes read_cache_sizes(const std::string& dir) {
  CacheSizes c;
  for (int i = 0; i < 16; ++i) {
    const std::string idx = dir + "/index" + std::to_string(i);
    const std::string level = read_line(idx + "/level");
    if (level.empty()) break;
    const std::string type = read_line(idx + "/type");
    const std::uint64_t size = parse_size(read_line(idx + "/size"));
    if (level == "1" && (type == "Data" || type == "Unified")) c.l1d = size;
    else if (level == "2") c.l2 = size;
    else if (level == "3") c.l3 = size;
  }
  return c;
}

CpuInfo CpuInfo::detect() {
  CpuInfo info;
  const Regs r0 = cpuid(0);
  char vendor[13] = {};
  std::memcpy(vendor + 0, &r0.b, 4);
  std::memcpy(vendor + 4, &r0.d, 4);
  std::memcpy(vendor + 8, &r0.c, 4);
  info.vendor_ = vendor;
  const unsigned max_leaf = r0.a;

  const Regs r1 = cpuid(1);
  const unsigned base_family = (r1.a >> 8) & 0xF, base_model = (r1.a >> 4) & 0xF;
  info.family_ = base_family == 0xF ? base_family + ((r1.a >> 20) & 0xFF) : base_family;
  info.model_ = (base_family == 0x6 || base_family == 0xF) ? (((r1.a >> 16) & 0xF) << 4) | base_model
                                                            : base_model;
  info.stepping_ = r1.a & 0xF;
  info.hypervisor_ = bit(r1.c, 31);

  IsaFeatures f;  // SSE2 is the x86-64 baseline
  const bool osxsave = bit(r1.c, 27);
  const std::uint64_t xcr0 = osxsave ? xgetbv0() : 0;
  const bool os_avx = (xcr0 & 0x6) == 0x6;
  const bool os_avx512 = os_avx && (xcr0 & 0xE0) == 0xE0;
  if (bit(r1.c, 28) && os_avx) f.add(Feature::kAVX);
  if (max_leaf >= 7) {
    const Regs r7 = cpuid(7, 0);
    if (f.has(Feature::kAVX) && bit(r7.b, 5)) f.add(Feature::kAVX2);
    if (bit(r7.b, 8)) f.add(Feature::kBMI2);
    if (bit(r7.b, 9)) f.add(Feature::kERMS);
    if (os_avx512 && bit(r7.b, 16)) {
      f.add(Feature::kAVX512F);
      if (bit(r7.b, 30)) f.add(Feature::kAVX512BW);
      if (bit(r7.b, 31)) f.add(Feature::kAVX512VL);
    }
    if (bit(r7.d, 4)) f.add(Feature::kFSRM);
  }
  const unsigned max_ext = cpuid(0x80000000).a;
  if (max_ext >= 0x80000001 && bit(cpuid(0x80000001).c, 8)) f.add(Feature::kPREFETCHW);
  if (max_ext >= 0x80000004) {
    char brand[49] = {};
    for (unsigned i = 0; i < 3; ++i) {
      const Regs r = cpuid(0x80000002 + i);
      std::memcpy(brand + 16 * i + 0, &r.a, 4);
      std::memcpy(brand + 16 * i + 4, &r.b, 4);
      std::memcpy(brand + 16 * i + 8, &r.c, 4);
      std::memcpy(brand + 16 * i + 12, &r.d, 4);
    }
    info.brand_ = trim(brand);
  }
  info.features_ = f;
  info.host_caches_ = true;
  return info;
}

const CacheSizes& CpuInfo::caches() const {
  if (!host_caches_) return caches_;
  static const CacheSizes host = read_cache_sizes();
  return host;
}

const CpuInfo& CpuInfo::host() {
  static const CpuInfo info = detect();
  return info;
}

CpuInfo CpuInfo::synthetic(std::string vendor, unsigned family, unsigned model, unsigned stepping,
                           IsaFeatures features) {
  CpuInfo c;
  c.vendor_ = std::move(vendor);
  c.brand_ = "synthetic " + c.vendor_;
  c.family_ = family;
  c.model_ = model;
  c.stepping_ = stepping;
  c.features_ = features;
  return c;
}

CpuInfo CpuInfo::capped(IsaLevel level) const {
  CpuInfo c = *this;
  c.features_ = features_.capped(level);
  return c;
}

std::string CpuInfo::signature() const {
  return vendor_ + "-" + std::to_string(family_) + "-" + std::to_string(model_) + ":" +
         features_.to_string();
}

namespace {

/// A decimal number of at most 9 digits (family and model are 8-bit values in CPUID).
std::optional<unsigned> parse_decimal(std::string_view s) {
  if (s.empty() || s.size() > 9) return std::nullopt;
  unsigned v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<unsigned>(c - '0');
  }
  return v;
}

}  // namespace

std::optional<CpuSignature> parse_cpu_signature(std::string_view s) {
  const auto colon = s.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  const std::string_view head = s.substr(0, colon), tail = s.substr(colon + 1);
  const auto dash2 = head.rfind('-');
  if (dash2 == std::string_view::npos || dash2 == 0) return std::nullopt;
  const auto dash1 = head.rfind('-', dash2 - 1);
  if (dash1 == std::string_view::npos) return std::nullopt;
  CpuSignature sig;
  sig.vendor = std::string(head.substr(0, dash1));
  const auto family = parse_decimal(head.substr(dash1 + 1, dash2 - dash1 - 1));
  const auto model = parse_decimal(head.substr(dash2 + 1));
  if (!family || !model) return std::nullopt;
  sig.family = *family;
  sig.model = *model;
  if (tail == "none") return sig;
  for (std::size_t pos = 0;;) {
    const auto comma = tail.find(',', pos);
    const std::string_view name = tail.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    if (name.empty()) return std::nullopt;
    sig.features.emplace_back(name);
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return sig;
}

bool signature_runs_on(const std::string& tuned, const std::string& host, std::string* why) {
  if (tuned == host) return true;
  auto say = [&](std::string reason) {
    if (why) *why = std::move(reason);
    return false;
  };
  const auto t = parse_cpu_signature(tuned), h = parse_cpu_signature(host);
  if (!t) return say("\"" + tuned + "\" is not a CPU signature (vendor-family-model:features)");
  if (!h) return say("\"" + host + "\" is not a CPU signature (vendor-family-model:features)");
  if (t->vendor != h->vendor || t->family != h->family || t->model != h->model) return say("another CPU model");
  std::string lacks;
  for (const auto& f : t->features)
    if (std::find(h->features.begin(), h->features.end(), f) == h->features.end())  // " sse2" quoted: visible
      lacks += (lacks.empty() ? "" : ", ") +
               (f.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") == std::string::npos ? f : "\"" + f + "\"");
  if (!lacks.empty()) return say("this host lacks " + lacks + ", which the wisdom's routines may use");
  return true;
}

std::string CpuInfo::describe() const {
  std::ostringstream o;
  o.imbue(std::locale::classic());  // whatever std::locale::global() says
  auto kib = [](std::uint64_t b) { return b ? std::to_string(b >> 10) + " KiB" : std::string("?"); };
  o << "cpu: " << (brand_.empty() ? vendor_ : brand_) << " (" << vendor_ << " family " << family_
    << " model " << model_ << " stepping " << stepping_ << (hypervisor_ ? ", under a hypervisor" : "")
    << ")\n"
    << "features: " << features_.to_string() << "\n"
    << "caches (sysfs): L1d " << kib(caches().l1d) << ", L2 " << kib(caches().l2) << ", L3 "
    << kib(caches().l3) << "\n"
    << "signature: " << signature() << "\n";
  return o.str();
}

}  // namespace copysynth
