// copysynth — generic handling of CopyParams fields (JSON, printing, validation) via Boost.Hana.
#include "copysynth/params.hpp"

#include <boost/hana.hpp>
#include <nlohmann/json.hpp>
#include <locale>
#include <sstream>
#include <type_traits>

namespace copysynth {
namespace hana = boost::hana;
using nlohmann::json;

namespace {

template <class Spec>
constexpr bool kIsEnum = std::is_enum_v<typename Spec::type>;
template <class Spec>
constexpr bool kHasChoices = requires { Spec::choices; };

/// Text of one value of a field.
template <class Spec>
std::string value_string(typename Spec::type v) {
  using T = typename Spec::type;
  if constexpr (kIsEnum<Spec>) {
    for (std::size_t i = 0; i < Spec::choices.size(); ++i)
      if (Spec::choices[i] == v) return std::string(Spec::names[i]);
    return "<invalid " + std::to_string(static_cast<int>(v)) + ">";
  } else if constexpr (std::is_same_v<T, bool>) {
    return v ? "true" : "false";
  } else if constexpr (!kHasChoices<Spec>) {
    if constexpr (Spec::allows_never) return bytes_or_never(v);
    return std::to_string(v);
  } else {
    return std::to_string(v);
  }
}

/// The domain as text, e.g. "one of 1, 2, 4, 8, 16" or "0..8192 in steps of 64".
template <class Spec>
std::string domain_string() {
  std::ostringstream o;
  o.imbue(std::locale::classic());  // whatever std::locale::global() says
  if constexpr (kHasChoices<Spec>) {
    o << "one of ";
    for (std::size_t i = 0; i < Spec::choices.size(); ++i)
      o << (i ? ", " : "") << value_string<Spec>(Spec::choices[i]);
  } else {
    o << Spec::lo << ".." << Spec::hi;
    if (Spec::step > 1) o << " in steps of " << Spec::step;
    if (Spec::allows_never) o << ", or \"never\"";
  }
  return o.str();
}

template <class Spec>
bool in_domain(typename Spec::type v) {
  if constexpr (kHasChoices<Spec>) {
    for (auto c : Spec::choices)
      if (c == v) return true;
    return false;
  } else {
    if (Spec::allows_never && v == static_cast<typename Spec::type>(kNever)) return true;
    return v >= Spec::lo && v <= Spec::hi && (v - Spec::lo) % Spec::step == 0;
  }
}

template <class Spec>
Status check_domain(std::string_view field, typename Spec::type v) {
  if (in_domain<Spec>(v)) return {};
  return make_error(ErrorCode::kInvalidParams,
                    std::string(field) + " = " + value_string<Spec>(v) + " is out of range: allowed " +
                        domain_string<Spec>() +
                        (Spec::unit.empty() ? "" : " (" + std::string(Spec::unit) + ")"));
}

template <class Spec>
json value_json(typename Spec::type v) {
  if constexpr (kIsEnum<Spec>) {
    return value_string<Spec>(v);
  } else if constexpr (!kHasChoices<Spec>) {
    if (Spec::allows_never && v == static_cast<typename Spec::type>(kNever)) return "never";
    return v;
  } else {
    return v;
  }
}

template <class Spec>
Result<typename Spec::type> value_from_json(std::string_view field, const json& j) {
  using T = typename Spec::type;
  auto wrong = [&](std::string expected) -> Error {
    return make_error(ErrorCode::kWisdomMalformed,
                      std::string(field) + " must be " + expected + ", got " + j.dump() +
                          " (allowed " + domain_string<Spec>() + ")");
  };
  if constexpr (kIsEnum<Spec>) {
    if (!j.is_string()) return wrong("a string");
    const auto s = j.get<std::string>();
    for (std::size_t i = 0; i < Spec::choices.size(); ++i)
      if (Spec::names[i] == s) return Spec::choices[i];
    return make_error(ErrorCode::kInvalidParams, std::string(field) + " = \"" + s +
                                                     "\" is not allowed: use " + domain_string<Spec>());
  } else if constexpr (std::is_same_v<T, bool>) {
    if (!j.is_boolean()) return wrong("true or false");
    return j.get<bool>();
  } else {
    if constexpr (!kHasChoices<Spec>) {
      if (Spec::allows_never && j.is_string() && j.get<std::string>() == "never")
        return static_cast<T>(kNever);
    }
    if (!j.is_number_integer()) return wrong("a non-negative integer");
    // nlohmann stores integers built in C++ as signed and parsed non-negative ones as unsigned.
    if (j.is_number_unsigned() || j.get<std::int64_t>() >= 0) {
      const auto u = j.get<std::uint64_t>();
      if (u > std::numeric_limits<T>::max())
        return make_error(ErrorCode::kInvalidParams, std::string(field) + " = " + std::to_string(u) +
                                                         " is out of range: allowed " +
                                                         domain_string<Spec>());
      T v = static_cast<T>(u);
      if (auto st = check_domain<Spec>(field, v); !st) return st.error();
      return v;
    }
    return make_error(ErrorCode::kInvalidParams, std::string(field) + " = " + j.dump() +
                                                     " is negative: allowed " + domain_string<Spec>());
  }
}

/// Calls f(name, member) for every field.
template <class P, class F>
void for_each_field(P& p, F&& f) {
  hana::for_each(hana::accessors<std::remove_const_t<P>>(), [&](auto pair) {
    f(std::string_view(hana::to<const char*>(hana::first(pair))), hana::second(pair)(p));
  });
}

}  // namespace

std::string bytes_or_never(std::uint64_t v) { return v == kNever ? "never" : std::to_string(v); }

std::string_view name_of(Operation v) noexcept {
  for (std::size_t i = 0; i < spec::Operation::choices.size(); ++i)
    if (spec::Operation::choices[i] == v) return spec::Operation::names[i];
  return "?";
}
const char* libc_name(Operation v) noexcept {
  switch (v) {
    case Operation::kMemcpy: return "memcpy";
    case Operation::kMemmove: return "memmove";
    case Operation::kFill: return "memset";
    case Operation::kClearPage: break;
  }
  return "";
}
std::string_view name_of(PrefetchHint v) noexcept {
  for (std::size_t i = 0; i < spec::PrefetchHint::choices.size(); ++i)
    if (spec::PrefetchHint::choices[i] == v) return spec::PrefetchHint::names[i];
  return "?";
}
std::string_view name_of(NopForm v) noexcept {
  for (std::size_t i = 0; i < spec::NopForm::choices.size(); ++i)
    if (spec::NopForm::choices[i] == v) return spec::NopForm::names[i];
  return "?";
}

std::string_view name_of(RegisterBank v) noexcept {
  for (std::size_t i = 0; i < spec::RegisterBank::choices.size(); ++i)
    if (spec::RegisterBank::choices[i] == v) return spec::RegisterBank::names[i];
  return "?";
}

Status validate_domains(const CopyParams& p) {
  Status result;
  for_each_field(p, [&](std::string_view name, const auto& member) {
    using Spec = typename std::decay_t<decltype(member)>::spec;
    if (!result.ok()) return;
    if (auto st = check_domain<Spec>(name, member.value); !st) result = st;
  });
  return result;
}

IsaLevel lowest_isa_level(const CopyParams& p) {
  for (IsaLevel l : {IsaLevel::kSSE2, IsaLevel::kAVX2})
    if (validate(p, IsaFeatures::for_level(l)).ok()) return l;
  return IsaLevel::kAVX512;
}

Status validate(const CopyParams& p, const IsaFeatures& target) {
  COPYSYNTH_TRY(validate_domains(p));
  const bool stores_only = p.operation.value == Operation::kFill || p.operation.value == Operation::kClearPage;
  if (stores_only && p.alias_window.value != 0)
    return make_error(ErrorCode::kInvalidParams,
                      "alias_window = " + std::to_string(p.alias_window.value) + " does not apply to " +
                          std::string(name_of(p.operation.value)) + " (it has no loads): use 0");
  if (stores_only && p.rep_alias_window.value != 0)
    return make_error(ErrorCode::kInvalidParams,
                      "rep_alias_window = " + std::to_string(p.rep_alias_window.value) + " does not apply to " +
                          std::string(name_of(p.operation.value)) + " (it has no loads): use 0");
  if (p.rep_alias_loop.value != kNever) {
    if (stores_only)
      return make_error(ErrorCode::kInvalidParams,
                        "rep_alias_loop = " + std::to_string(p.rep_alias_loop.value) + " does not apply to " +
                            std::string(name_of(p.operation.value)) + " (it has no loads): use \"never\"");
    if (p.vector_width.value != 32 && p.vector_width.value != 64)
      return make_error(ErrorCode::kInvalidParams,
                        "rep_alias_loop = " + std::to_string(p.rep_alias_loop.value) +
                            " needs vector_width = 32 or 64 (its loop moves 32-byte vectors); got vector_width = " +
                            std::to_string(p.vector_width.value) + ": use \"never\"");
  }
  if (p.operation.value == Operation::kClearPage && p.rep_aligned_from.value != kNever)
    return make_error(ErrorCode::kInvalidParams,
                      "rep_aligned_from = " + std::to_string(p.rep_aligned_from.value) +
                          " does not apply to clear_page (one page-aligned length): use \"never\"");
  if (stores_only && p.rep_aligned_mutual)
    return make_error(ErrorCode::kInvalidParams,
                      "rep_aligned_mutual = true does not apply to " + std::string(name_of(p.operation.value)) +
                          " (it has no src; rep_aligned_only tests dst): use false");
  if (p.rep_chunk.value != kNever && p.operation.value == Operation::kClearPage)
    return make_error(ErrorCode::kInvalidParams,
                      "rep_chunk = " + std::to_string(p.rep_chunk.value) +
                          " does not apply to clear_page (one 4096-byte length): use \"never\"");
  if (p.rep_chunk_stop.value != kNever && p.operation.value == Operation::kClearPage)
    return make_error(ErrorCode::kInvalidParams,
                      "rep_chunk_stop = " + std::to_string(p.rep_chunk_stop.value) +
                          " does not apply to clear_page (one 4096-byte length): use \"never\"");
  if (p.nt_pages.value > 1 && p.vector_width.value < 16)
    return make_error(ErrorCode::kInvalidParams,
                      "nt_pages = " + std::to_string(p.nt_pages.value) +
                          " needs vector_width >= 16 (the page streams use vector registers): use 1");
  if (p.nt_width.value != 0 && p.vector_width.value != 64)
    return make_error(ErrorCode::kInvalidParams,
                      "nt_width = " + std::to_string(p.nt_width.value) +
                          " needs vector_width = 64 (a narrower non-temporal loop in an AVX-512 routine); got "
                          "vector_width = " + std::to_string(p.vector_width.value) + ": use 0");
  if (p.loop_pipeline && (stores_only || p.vector_width.value < 16 || p.unroll.value > 4))
    return make_error(ErrorCode::kInvalidParams,
                      "loop_pipeline = true needs a copy (memcpy or memmove), vector_width >= 16 and unroll <= 4 "
                      "(two groups of unroll vector registers); got " + std::string(name_of(p.operation.value)) +
                          ", vector_width = " + std::to_string(p.vector_width.value) + ", unroll = " +
                          std::to_string(p.unroll.value) + "; use false");
  if (p.shift_realign && (p.operation.value != Operation::kMemcpy || p.vector_width.value != 8))
    return make_error(ErrorCode::kInvalidParams,
                      "shift_realign = true needs operation = memcpy and vector_width = 8 (a GPR loop); use false");
  if (stores_only && p.prefetch_distance.value != 0)
    return make_error(ErrorCode::kInvalidParams,
                      "prefetch_distance = " + std::to_string(p.prefetch_distance.value) + " does not apply to " +
                          std::string(name_of(p.operation.value)) + " (it has no loads): use 0");
  const unsigned w = p.vector_width;
  auto lacks = [&](Feature f, std::string_view what) -> Status {
    std::string allowed = "8, 16";
    if (target.has(Feature::kAVX2)) allowed += ", 32";
    if (target.has(Feature::kAVX512F) && target.has(Feature::kAVX2)) allowed += ", 64";
    return make_error(ErrorCode::kUnsupportedIsa,
                      "vector_width = " + std::to_string(w) + " needs " + std::string(what) + " (" +
                          std::string(feature_name(f)) +
                          "), which the target CPU lacks (it has " + target.to_string() +
                          "); vector widths allowed on this target: " + allowed);
  };
  if (!target.has(Feature::kSSE2)) {
    return make_error(ErrorCode::kUnsupportedIsa, "the target CPU lacks SSE2, the x86-64 baseline");
  }
  if (w == 32 && !(target.has(Feature::kAVX) && target.has(Feature::kAVX2)))
    return lacks(Feature::kAVX2, "AVX2");
  // Width 64 also uses VEX xmm/ymm moves in the small classes, so it needs AVX2 as well.
  if (w == 64 && !(target.has(Feature::kAVX512F) && target.has(Feature::kAVX2)))
    return lacks(Feature::kAVX512F, "AVX-512F");
  auto needs = [&](std::string_view field, std::string value, std::initializer_list<Feature> fs) -> Status {
    std::string missing;
    for (Feature f : fs)
      if (!target.has(f)) missing += (missing.empty() ? "" : ", ") + std::string(feature_name(f));
    if (missing.empty()) return {};
    return make_error(ErrorCode::kUnsupportedIsa,
                      std::string(field) + " = " + value + " needs " + missing +
                          ", which the target CPU lacks (it has " + target.to_string() + ")");
  };
  if (const unsigned h = p.head_tail_width.value; h != 0 && (h > w || 2 * h < w))
    return make_error(ErrorCode::kInvalidParams,
                      "head_tail_width = " + std::to_string(h) + " does not fit vector_width = " + std::to_string(w) +
                          ": allowed 0 (same), or " + (w <= 16 ? std::string("16") : std::to_string(w / 2) + " or " + std::to_string(w)) +
                          " (at most the vector width, at least half of it)");
  // The loop needs n >= 4V, so the head/tail classes must reach 4V - 1: a block of at least 2V.
  if (const unsigned m = p.head_tail_max.value; m != 0) {
    const unsigned lo = w == 8 ? 16u : 2 * w, hi = w == 8 ? 16u : 4 * w;
    if (m < lo || m > hi)
      return make_error(ErrorCode::kInvalidParams,
                        "head_tail_max = " + std::to_string(m) + " does not fit vector_width = " + std::to_string(w) +
                            ": allowed 0 (= " + std::to_string(hi) + ")" +
                            (lo == hi ? " or " + std::to_string(lo) : ", or " + std::to_string(lo) + ".." + std::to_string(hi)) +
                            " (the loop starts at 2 x head_tail_max and needs at least 4 x vector_width)");
  }
  if (p.register_bank.value == RegisterBank::kHigh)
    COPYSYNTH_TRY(needs("register_bank", "high", {Feature::kAVX512F, Feature::kAVX512VL, Feature::kAVX2}));
  if (p.mask_max.value != 0) {
    COPYSYNTH_TRY(needs("mask_max", std::to_string(p.mask_max.value),
                        {Feature::kAVX512F, Feature::kAVX512BW, Feature::kAVX512VL, Feature::kBMI2, Feature::kAVX2}));
    if (p.operation.value == Operation::kClearPage)
      return make_error(ErrorCode::kInvalidParams, "mask_max applies to variable lengths; clear_page needs 0");
  }
  if (p.prefetch_min.value != 0 && p.prefetch_distance.value == 0)
    return make_error(ErrorCode::kInvalidParams,
                      "prefetch_min = " + std::to_string(p.prefetch_min.value) +
                          " says from which length the loop prefetches; with prefetch_distance = 0 it "
                          "never does: set prefetch_distance or prefetch_min = 0");
  if (p.mask_shift.value && p.mask_max.value == 0)
    return make_error(ErrorCode::kInvalidParams,
                      "mask_shift = true changes the masked class's page-crossing path; there is none with "
                      "mask_max = 0: set mask_max (16, 32, 64 or 128) or mask_shift = false");
  return {};
}

std::string to_string(const CopyParams& p) {
  std::string out;
  for_each_field(p, [&](std::string_view name, const auto& member) {
    using Spec = typename std::decay_t<decltype(member)>::spec;
    if (!out.empty()) out += ' ';
    out += name;
    out += '=';
    out += value_string<Spec>(member.value);
  });
  return out;
}

json to_json(const CopyParams& p) {
  json j = json::object();
  for_each_field(p, [&](std::string_view name, const auto& member) {
    using Spec = typename std::decay_t<decltype(member)>::spec;
    if constexpr (requires { Spec::written_at_default; })
      if (!Spec::written_at_default && member.value == Spec::def) return;  // a field newer than some readers
    j[std::string(name)] = value_json<Spec>(member.value);
  });
  return j;
}

Result<CopyParams> params_from_json(const json& j) {
  if (!j.is_object())
    return make_error(ErrorCode::kWisdomMalformed,
                      "params must be a JSON object with fields " + [] {
                        std::string s;
                        for (auto& n : param_field_names()) s += (s.empty() ? "" : ", ") + n;
                        return s;
                      }() + "; got " + std::string(j.type_name()));
  const auto names = param_field_names();
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool known = false;
    for (auto& n : names) known |= n == it.key();
    if (!known) {
      std::string list;
      for (auto& n : names) list += (list.empty() ? "" : ", ") + n;
      return make_error(ErrorCode::kWisdomMalformed,
                        "unknown params field \"" + it.key() + "\" (known fields: " + list + ")");
    }
  }
  CopyParams p;
  std::optional<Error> err;
  for_each_field(p, [&](std::string_view name, auto& member) {
    using Spec = typename std::decay_t<decltype(member)>::spec;
    if (err) return;
    auto it = j.find(std::string(name));
    if (it == j.end()) return;  // default
    auto v = value_from_json<Spec>(name, *it);
    if (!v) {
      err = v.error();
      return;
    }
    member.value = *v;
  });
  if (err) return *err;
  return p;
}

std::vector<std::string> param_field_names() {
  std::vector<std::string> out;
  CopyParams p;
  for_each_field(p, [&](std::string_view name, const auto&) { out.emplace_back(name); });
  return out;
}

std::string describe_params() {
  std::ostringstream o;
  o.imbue(std::locale::classic());  // whatever std::locale::global() says
  CopyParams p;
  for_each_field(p, [&](std::string_view name, const auto& member) {
    using Spec = typename std::decay_t<decltype(member)>::spec;
    o << "  " << name << (Spec::unit.empty() ? "" : " [" + std::string(Spec::unit) + "]")
      << "  default " << value_string<Spec>(Spec::def) << "; " << domain_string<Spec>() << "\n"
      << "      " << Spec::doc << "\n";
  });
  return o.str();
}

}  // namespace copysynth
