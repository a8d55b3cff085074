// copysynth — CopyParams: one point of the search space.
//
// Every tunable knob is one field of `CopyParams`, declared once with BOOST_HANA_DEFINE_STRUCT.
// Each field's type is a `Param<Spec>` whose Spec carries the field's unit, docstring, default and
// domain (a finite list of choices, or a byte range, optionally with "never"). Generic code walks
// the fields with Boost.Hana, so JSON (to_json/params_from_json), printing (to_string), validation
// (validate) and the tuner's search space (domain_values) all come from this one definition:
// adding a field here adds it everywhere.
#pragma once

#include <array>
#include <boost/hana/define_struct.hpp>
#include <cstdint>
#include <limits>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "copysynth/isa.hpp"
#include "copysynth/result.hpp"

namespace copysynth {

/// Which routine is generated.
enum class Operation : std::uint8_t {
  kMemcpy,     ///< `void* memcpy(void* dst, const void* src, size_t n)`: returns dst; no overlap
  kMemmove,    ///< `void* memmove(void* dst, const void* src, size_t n)`: any overlap
  kFill,       ///< `void* memset(void* dst, int c, size_t n)`: n bytes of (unsigned char)c
  kClearPage,  ///< `void clear_page(void* page)`: zero 4096 bytes at a 4096-aligned address
};

/// Software-prefetch hint for the main loop's load stream (Intel SDM vol. 2, PREFETCHh).
enum class PrefetchHint : std::uint8_t {
  kT0,   ///< prefetcht0: into all cache levels
  kNTA,  ///< prefetchnta: non-temporal, minimises cache pollution
};

/// How padding before a loop head is filled. Every form is emitted byte by byte by copysynth
/// (generator/nops.hpp), not by asmjit's align().
enum class NopForm : std::uint8_t {
  kSingleByte,       ///< a run of 0x90
  kLongNop,          ///< P6 long NOPs `0F 1F /0`, 1..8 bytes each (Linux x86 nops.h, Intel SDM NOP)
  kPrefixedLongNop,  ///< long NOPs with up to three 0x66 prefixes, up to 11 bytes each (AMD SOG)
  kJumpOver,         ///< `jmp rel8` over int3 (0xCC) fill; a single 0x90 when the gap is 1 byte
};

/// Which vector registers the routine uses (AVX-512 hosts can avoid vzeroupper).
enum class RegisterBank : std::uint8_t {
  kLow,   ///< xmm/ymm/zmm 0-15 with SSE/VEX encodings; vzeroupper before ret after YMM/ZMM use
  kHigh,  ///< xmm/ymm/zmm 16-31, EVEX encodings (AVX-512VL): no upper-state transition, no
          ///< vzeroupper (glibc's *-evex variants do the same)
};

/// A byte count that means "never" when equal to `kNever`.
inline constexpr std::uint64_t kNever = std::numeric_limits<std::uint64_t>::max();

/// A field of CopyParams: a value plus, in `Spec`, its documentation and domain.
/// Spec provides: `type`, `unit`, `doc`, `def`; and either `choices` (+ `names` for enums) or
/// `lo`/`hi`/`step` (+ `allows_never`).
template <class Spec>
struct Param {
  using spec = Spec;
  using value_type = typename Spec::type;
  value_type value = Spec::def;

  constexpr Param() = default;
  constexpr Param(value_type v) : value(v) {}  // NOLINT: implicit on purpose
  constexpr operator value_type() const { return value; }
};

namespace spec {
struct Operation {
  using type = copysynth::Operation;
  static constexpr std::string_view unit = "";
  static constexpr std::string_view doc =
      "routine generated: memcpy, memmove, fill (memset semantics) or clear_page (4096 zero bytes)";
  static constexpr type def = type::kMemcpy;
  static constexpr std::array choices{type::kMemcpy, type::kMemmove, type::kFill, type::kClearPage};
  static constexpr std::array<std::string_view, 4> names{"memcpy", "memmove", "fill", "clear_page"};
};
struct VectorWidth {
  using type = std::uint32_t;
  static constexpr std::string_view unit = "bytes";
  static constexpr std::string_view doc =
      "register width of the main loop and of the wider size classes: 8 = GPR, 16 = SSE2, "
      "32 = AVX2, 64 = AVX-512F";
  static constexpr type def = 32;
  static constexpr std::array<type, 4> choices{8, 16, 32, 64};
};
struct Unroll {
  using type = std::uint32_t;
  static constexpr std::string_view unit = "vectors per loop iteration";
  static constexpr std::string_view doc = "unroll factor of the main loop";
  static constexpr type def = 4;
  static constexpr std::array<type, 5> choices{1, 2, 4, 8, 16};
};
struct PrefetchDistance {
  using type = std::uint32_t;
  static constexpr std::string_view unit = "bytes";
  static constexpr std::string_view doc =
      "software prefetch this many bytes ahead of the main loop's loads; 0 = no prefetch";
  static constexpr type def = 0;
  static constexpr type lo = 0, hi = 8192, step = 64;
  static constexpr bool allows_never = false;
};
struct PrefetchHint {
  using type = copysynth::PrefetchHint;
  static constexpr std::string_view unit = "";
  static constexpr std::string_view doc = "prefetch instruction: t0 = prefetcht0, nta = prefetchnta";
  static constexpr type def = type::kT0;
  static constexpr std::array choices{type::kT0, type::kNTA};
  static constexpr std::array<std::string_view, 2> names{"t0", "nta"};
};
struct PrefetchMin {
  using type = std::uint32_t;
  static constexpr std::string_view unit = "bytes";
  static constexpr std::string_view doc =
      "the loop prefetches only for lengths of at least this: loop classes below it take a copy "
      "of the loop without prefetch instructions (the ladder splits the loop class there; the "
      "rep and non-temporal classes' fallback to the loop keeps them). 0 = every length of the "
      "loop. On an AMD family 26 host a 1-16 KiB memcpy whose source is in L1 ran "
      "0.93x as fast with prefetch at any distance as without, while 256 KiB gained "
      "(docs/performance.md, fifth round). Needs prefetch_distance";
  static constexpr type def = 0;
  static constexpr std::array<type, 4> choices{0, 8192, 32768, 131072};
  /// Left out of to_json() at its default (as nt_width): builds before this field refuse an
  /// unknown key and build the same code when it is absent.
  static constexpr bool written_at_default = false;
};
struct NtThreshold {
  using type = std::uint64_t;
  static constexpr std::string_view unit = "bytes";
  static constexpr std::string_view doc =
      "lengths of at least this many bytes use non-temporal (movnt*) stores of the register "
      "width, then sfence; \"never\" disables them. Never applies below the main loop's size "
      "class, nor to memmove calls whose buffers overlap";
  static constexpr type def = kNever;
  static constexpr type lo = 0, hi = std::uint64_t{1} << 48, step = 1;
  static constexpr bool allows_never = true;
};
struct RepThreshold {
  using type = std::uint64_t;
  static constexpr std::string_view unit = "bytes";
  static constexpr std::string_view doc =
      "lengths of at least this many bytes (and below nt_threshold) use `rep movs` / `rep stos`; "
      "\"never\" disables it. Never applies below the main loop's size class. memmove uses it only "
      "when a forward copy is safe (dst <= src or dst >= src + n)";
  static constexpr type def = kNever;
  static constexpr type lo = 0, hi = std::uint64_t{1} << 48, step = 1;
  static constexpr bool allows_never = true;
};
struct RepStop {
  using type = std::uint64_t;
  static constexpr std::string_view unit = "bytes";
  static constexpr std::string_view doc =
      "lengths of at least this many bytes leave the rep class for the loop again (and the "
      "non-temporal class above it): rep string instructions for a band of lengths only, as "
      "glibc's rep_movsb_stop_threshold. \"never\" = the rep class runs up to nt_threshold. No "
      "effect without a rep class";
  static constexpr type def = kNever;
  static constexpr type lo = 0, hi = std::uint64_t{1} << 48, step = 1;
  static constexpr bool allows_never = true;
};
struct RepResume {
  using type = std::uint64_t;
  static constexpr std::string_view unit = "bytes";
  static constexpr std::string_view doc =
      "lengths of at least this many bytes take the rep class again after the loop band that "
      "rep_stop began, up to nt_threshold: a second rep band, for hosts where `rep movsb` loses "
      "to the loop in the L2/L3-sized lengths and wins again beyond the last-level cache (AMD "
      "family 26: 27 GB/s against the loop's 21 at 64 MiB). \"never\" = no second band. No "
      "effect without a rep class ended by rep_stop";
  static constexpr type def = kNever;
  static constexpr type lo = 0, hi = std::uint64_t{1} << 48, step = 1;
  static constexpr bool allows_never = true;
  /// Left out of to_json() at its default: copysynth builds before this field refuse a params
  /// object with a key they do not know, and they build the same code when it is absent.
  static constexpr bool written_at_default = false;
};
struct RepChunk {
  using type = std::uint64_t;
  static constexpr std::string_view unit = "bytes";
  static constexpr std::string_view doc =
      "the rep class moves lengths above this many bytes with one rep string instruction per piece "
      "of at most this many bytes (the last piece takes the rest), so no one instruction's count "
      "reaches a count at which the CPU switches rep to a streaming protocol that leaves the data "
      "outside the caches (AMD family 26 guest, from a count of exactly 4 MiB, part of the time: "
      "rep stosb 117 -> 38 GB/s, rep movsb 56 -> 34; in 2 MiB pieces 108-119 and, at 4-8 MiB, "
      "54-59 while the switch was on; docs/performance.md, eleventh round). Multiples of 4096 keep a 64-byte "
      "aligned dst aligned. \"never\" = one instruction. No effect without a rep class; not for "
      "clear_page";
  static constexpr type def = kNever;
  static constexpr type lo = 4096, hi = std::uint64_t{1} << 30, step = 4096;
  static constexpr bool allows_never = true;
  /// Left out of to_json() at its default (as rep_resume): builds before this field refuse an
  /// unknown key and build the same code when it is absent.
  static constexpr bool written_at_default = false;
};
struct RepChunkStop {
  using type = std::uint64_t;
  static constexpr std::string_view unit = "bytes";
  static constexpr std::string_view doc =
      "with rep_chunk: lengths of at least this many bytes go as one rep string instruction again, "
      "so that beyond the caches the CPU's own streaming protocol moves them (AMD family 26 guest, "
      "fill of 64 MiB: one rep stosb 42.5 GB/s, in 2 MiB pieces 36.7; a fill of 32 MiB in one "
      "instruction already streams and loses 26 %; docs/performance.md, twentieth round). A multiple "
      "of 4096 up to 2^30. \"never\" = pieces at every length above rep_chunk. No effect without "
      "rep_chunk and a rep class reaching this length, nor at or below rep_chunk (every length "
      "with pieces is above it); not for clear_page";
  static constexpr type def = kNever;
  static constexpr type lo = 4096, hi = std::uint64_t{1} << 30, step = 4096;
  static constexpr bool allows_never = true;
  /// Left out of to_json() at its default (as rep_chunk): builds before this field refuse an
  /// unknown key and build the same code when it is absent.
  static constexpr bool written_at_default = false;
};
struct RegisterBank {
  using type = copysynth::RegisterBank;
  static constexpr std::string_view unit = "";
  static constexpr std::string_view doc =
      "vector registers: low = 0-15 (SSE/VEX, vzeroupper before ret), high = 16-31 (EVEX, needs "
      "AVX-512F and VL; no vzeroupper needed)";
  static constexpr type def = type::kLow;
  static constexpr std::array choices{type::kLow, type::kHigh};
  static constexpr std::array<std::string_view, 2> names{"low", "high"};
};
struct HeadTailWidth {
  using type = std::uint32_t;
  static constexpr std::string_view unit = "bytes";
  static constexpr std::string_view doc =
      "register width of the head/tail classes above 16 bytes up to 4 x this width: 0 = vector_width, "
      "else 16, 32 or 64 (at least vector_width / 2). Narrower moves split fewer cache lines on "
      "misaligned data; the longer classes keep full-width moves";
  static constexpr type def = 0;
  static constexpr std::array<type, 4> choices{0, 16, 32, 64};
};
struct HeadTailMax {
  using type = std::uint32_t;
  static constexpr std::string_view unit = "bytes";
  static constexpr std::string_view doc =
      "largest head/tail block: lengths up to 2 x this take overlapping head/tail moves, longer ones "
      "the loop. 0 = 4 x vector_width (16 at width 8); else 2 x to 4 x vector_width (the loop "
      "needs n >= 4 x vector_width)";
  static constexpr type def = 0;
  static constexpr std::array<type, 6> choices{0, 16, 32, 64, 128, 256};
};
struct MaskMax {
  using type = std::uint32_t;
  static constexpr std::string_view unit = "bytes";
  static constexpr std::string_view doc =
      "lengths 1..mask_max take one masked load and store (AVX-512BW vmovdqu8 with a bzhi mask; "
      "128: two of 64 bytes) instead of the small head/tail classes, unless the block would cross "
      "a 4 KiB page (n = 0 returns before any access: a zero mask still fetches the window's lines, "
      "and in a page never touched takes a microcode assist); 0 = off. A masked load fetches every cache line its window spans, also one "
      "whose bytes are all masked off: from cold lines the wider masks lose (AMD family 26, "
      "MemcpyGoogleQ's calls up to 64 bytes cold: 0 / 16 / 64 / 128 at 25.5 / 29.8 / 37.9 / "
      "39.4 ns per call, glibc 26.5; warm 11.0 / 4.7 / 3.0 / 3.2; docs/perf/cold-masked/). "
      "Needs AVX-512BW and BMI2 (and VL below 64)";
  static constexpr type def = 0;
  static constexpr std::array<type, 5> choices{0, 16, 32, 64, 128};
};
struct MaskShift {
  using type = bool;
  static constexpr std::string_view unit = "";
  static constexpr std::string_view doc =
      "the masked class's page guard tests only the bytes its mask leaves off (with 128: two "
      "moves of 64 at p and p + max(n - 64, 0), both masked by n, so 65..128 mask nothing), and a "
      "call whose masked-off bytes would cross a 4 KiB page moves the block back to end at the "
      "copy's last byte; only a call where that would cross a page too takes the unmasked ladder. "
      "Production distributions replay random offsets: with mask_max 128 the guard sent 6 % of "
      "calls to the ladder, each a mispredicted branch and then the ladder's own (AMD family 26, "
      "memcpy, one process against AOCL-LibMem: 0.86-0.91x -> 1.00-1.07x by throughput; "
      "docs/performance.md, fifth round). Needs mask_max";
  static constexpr type def = false;
  static constexpr std::array choices{false, true};
  /// Left out of to_json() at its default (as nt_width): builds before this field refuse an
  /// unknown key and build the same code when it is absent.
  static constexpr bool written_at_default = false;
};
struct RepUnit {
  using type = std::uint32_t;
  static constexpr std::string_view unit = "bytes";
  static constexpr std::string_view doc =
      "element size of the rep class: 1 = rep movsb / rep stosb, 8 = rep movsq / rep stosq with an "
      "overlapping 8-byte tail";
  static constexpr type def = 1;
  static constexpr std::array<type, 2> choices{1, 8};
};
struct RepAlignDst {
  using type = bool;
  static constexpr std::string_view unit = "";
  static constexpr std::string_view doc =
      "before the rep string instruction, copy the first 64 bytes with vector moves and align dst "
      "to 64";
  static constexpr type def = true;
  static constexpr std::array choices{false, true};
};
struct RepAlignedOnly {
  using type = bool;
  static constexpr std::string_view unit = "";
  static constexpr std::string_view doc =
      "take the rep class only when dst is already 64-byte aligned; other lengths of the class "
      "take the loop (some CPUs run rep movs far slower on a misaligned dst)";
  static constexpr type def = false;
  static constexpr std::array choices{false, true};
};
struct RepAlignedFrom {
  using type = std::uint64_t;
  static constexpr std::string_view unit = "bytes";
  static constexpr std::string_view doc =
      "lengths of at least this many bytes in a rep class take rep only when dst is 64-byte "
      "aligned, the prefetching loop otherwise (rep_aligned_only from this length on); shorter "
      "ones take rep with any dst (rep_align_dst aligns it first). For hosts where rep movsb with "
      "dst aligned first wins in the L2-sized lengths but loses to the loop on a misaligned dst "
      "beyond them, while an aligned dst still gains (AMD family 26, 1 MiB: rep 1.12-1.35x the "
      "loop with dst aligned, 0.95x with dst 1, 4, 15 or 33 bytes off; docs/performance.md, "
      "eighth round). Only in the first rep band (below rep_stop): a second band beyond the "
      "caches (rep_resume) takes any dst, where rep beats the loop on a misaligned one too. "
      "\"never\" = no split. No effect with rep_aligned_only or without a rep class; not for "
      "clear_page";
  static constexpr type def = kNever;
  static constexpr type lo = 0, hi = std::uint64_t{1} << 48, step = 1;
  static constexpr bool allows_never = true;
  /// Left out of to_json() at its default (as rep_resume): builds before this field refuse an
  /// unknown key and build the same code when it is absent.
  static constexpr bool written_at_default = false;
};
struct RepAlignedMutual {
  using type = bool;
  static constexpr std::string_view unit = "";
  static constexpr std::string_view doc =
      "the rep class's alignment test (rep_aligned_only, rep_aligned_from) asks whether dst and src "
      "are mutually 64-byte aligned ((dst - src) mod 64 == 0) instead of whether dst is 64-byte "
      "aligned: rep movs is slow when the two are misaligned against each other, not when both "
      "sit at the same offset, as two malloc'd buffers do (AMD family 26, memcpy with src and dst "
      "both 16 bytes off 64: rep movsb 1M+4K 61.6-62.2 GB/s, the loop 39.0; docs/performance.md, "
      "eleventh and twelfth rounds). memcpy and memmove only; no effect without "
      "rep_aligned_only or rep_aligned_from";
  static constexpr type def = false;
  static constexpr std::array choices{false, true};
  /// Left out of to_json() at its default (as rep_resume): builds before this field refuse an
  /// unknown key and build the same code when it is absent.
  static constexpr bool written_at_default = false;
};
struct AliasWindow {
  using type = std::uint32_t;
  static constexpr std::string_view unit = "bytes";
  static constexpr std::string_view doc =
      "4K aliasing guard of the loop: when 0 < (dst - src) mod 4096 < alias_window (dst just ahead "
      "of src within a page), where a forward loop's loads follow stores to addresses with the same "
      "low 12 bits and wait on them, the loop copies backward. No effect with loop_pipeline (the "
      "pipelined loop does not wait on them). 0 = off. Not for fill";
  static constexpr type def = 0;
  static constexpr std::array<type, 4> choices{0, 64, 256, 1024};
};
struct RepAliasWindow {
  using type = std::uint32_t;
  static constexpr std::string_view unit = "bytes";
  static constexpr std::string_view doc =
      "4K aliasing guard of the rep class: when 0 < (dst - src) mod 4096 < rep_alias_window, the "
      "copy takes the loop class instead of rep movs (which collapses on such copies on some CPUs). "
      "0 = off; no effect without a rep class. Not for fill";
  static constexpr type def = 0;
  static constexpr std::array<type, 4> choices{0, 64, 256, 1024};
};
struct RepAliasLoop {
  using type = std::uint64_t;
  static constexpr std::string_view unit = "bytes";
  static constexpr std::string_view doc =
      "copies in a rep class shorter than this many bytes that would 4K-alias (0 < (dst - src) mod "
      "4096 < 64) take a forward loop of 32-byte vectors (software-pipelined with loop_pipeline, "
      "prefetching as the main loop) instead of rep movs; longer ones take what they take without "
      "it. On AMD family 26 "
      "(Zen 5) a 32 KiB such memcpy ran 89-93 GB/s in that loop, 79.8-81.4 with rep movsb and 83 "
      "in the routine's own 64-byte loop over the report's fresh buffers, copy alone; timed on one "
      "buffer pair rep led alone and the loop was level to 4 % slower with the copy read back or "
      "its source overwritten, so autotune takes a stop only where the loop gains and loses no "
      "use pattern (docs/performance.md, twenty-fifth and twenty-sixth rounds). A multiple of 4096. "
      "\"never\" = off. Copies "
      "only, vector_width 32 or 64; from this length on rep_alias_window decides as without it (the "
      "routine's own loop, or rep); no effect without a rep class starting below it";
  static constexpr type def = kNever;
  static constexpr type lo = 4096, hi = std::uint64_t{1} << 30, step = 4096;
  static constexpr bool allows_never = true;
  /// Left out of to_json() at its default (as rep_chunk): builds before this field refuse an
  /// unknown key and build the same code when it is absent.
  static constexpr bool written_at_default = false;
};
struct NtPages {
  using type = std::uint32_t;
  static constexpr std::string_view unit = "pages";
  static constexpr std::string_view doc =
      "the non-temporal loop copies this many 4 KiB pages side by side, one cache line of each per "
      "step (glibc's large_memcpy_2x/4x); 1 = one stream. More than 1 needs vector_width >= 16";
  static constexpr type def = 1;
  static constexpr std::array<type, 3> choices{1, 2, 4};
};
struct NtWidth {
  using type = std::uint32_t;
  static constexpr std::string_view unit = "bytes";
  static constexpr std::string_view doc =
      "register width of the non-temporal loop: 0 = vector_width; 32 = 32-byte (AVX2) registers "
      "in a routine whose vector_width is 64 (AMD family 26, 16 MiB memcpy, one process: the "
      "32-byte non-temporal loop 29-30 GB/s, the 64-byte one 26.6; docs/performance.md, fourth "
      "round)";
  static constexpr type def = 0;
  static constexpr std::array<type, 2> choices{0, 32};
  /// Left out of to_json() at its default (as rep_resume): builds before this field refuse an
  /// unknown key and build the same code when it is absent.
  static constexpr bool written_at_default = false;
};
struct LoopPipeline {
  using type = bool;
  static constexpr std::string_view unit = "";
  static constexpr std::string_view doc =
      "software-pipelined forward loop: the next unroll x vector_width block is loaded before the "
      "current one is stored, so no load follows a store within one block of it. A copy whose dst "
      "is just ahead of src in a page (0 < (dst - src) mod 4096 < block) then has no load waiting "
      "on a store to an address with the same low 12 bits (4K aliasing). Copies only; needs "
      "vector_width >= 16 and unroll <= 4 (two register groups)";
  static constexpr type def = false;
  static constexpr std::array<type, 2> choices{false, true};
};
struct ShiftRealign {
  using type = bool;
  static constexpr std::string_view unit = "";
  static constexpr std::string_view doc =
      "width 8 memcpy: when src and dst are misaligned to each other, the loop reads aligned "
      "8-byte words of src and joins neighbours with shrd, so every load and store is aligned (the "
      "2010 unaligned-memcpy patch for x86-64 Linux)";
  static constexpr type def = false;
  static constexpr std::array choices{false, true};
};
struct LoopAlign {
  using type = std::uint32_t;
  static constexpr std::string_view unit = "bytes";
  static constexpr std::string_view doc = "alignment of every loop head (1 = no padding)";
  static constexpr type def = 64;
  static constexpr std::array<type, 4> choices{1, 16, 32, 64};
};
struct NopForm {
  using type = copysynth::NopForm;
  static constexpr std::string_view unit = "";
  static constexpr std::string_view doc =
      "padding before loop heads: single (0x90 run), long (0F 1F /0), prefixed (66-prefixed long "
      "NOPs), jump (jmp over int3)";
  static constexpr type def = type::kLongNop;
  static constexpr std::array choices{type::kSingleByte, type::kLongNop, type::kPrefixedLongNop,
                                      type::kJumpOver};
  static constexpr std::array<std::string_view, 4> names{"single", "long", "prefixed", "jump"};
};
}  // namespace spec

/// One point of copysynth's search space. Default-constructed = a sane AVX2 routine without
/// prefetch, rep movsb or non-temporal stores. Field semantics and ranges: the Specs above.
struct CopyParams {
  BOOST_HANA_DEFINE_STRUCT(CopyParams,
                           (Param<spec::Operation>, operation),
                           (Param<spec::VectorWidth>, vector_width),
                           (Param<spec::Unroll>, unroll),
                           (Param<spec::PrefetchDistance>, prefetch_distance),
                           (Param<spec::PrefetchHint>, prefetch_hint),
                           (Param<spec::PrefetchMin>, prefetch_min),
                           (Param<spec::NtThreshold>, nt_threshold),
                           (Param<spec::RepThreshold>, rep_threshold),
                           (Param<spec::RepStop>, rep_stop),
                           (Param<spec::RepResume>, rep_resume),
                           (Param<spec::RepChunk>, rep_chunk),
                           (Param<spec::RepChunkStop>, rep_chunk_stop),
                           (Param<spec::RepUnit>, rep_unit),
                           (Param<spec::RepAlignDst>, rep_align_dst),
                           (Param<spec::RepAlignedOnly>, rep_aligned_only),
                           (Param<spec::RepAlignedFrom>, rep_aligned_from),
                           (Param<spec::RepAlignedMutual>, rep_aligned_mutual),
                           (Param<spec::AliasWindow>, alias_window),
                           (Param<spec::RepAliasWindow>, rep_alias_window),
                           (Param<spec::RepAliasLoop>, rep_alias_loop),
                           (Param<spec::NtPages>, nt_pages),
                           (Param<spec::NtWidth>, nt_width),
                           (Param<spec::LoopPipeline>, loop_pipeline),
                           (Param<spec::ShiftRealign>, shift_realign),
                           (Param<spec::LoopAlign>, loop_align),
                           (Param<spec::NopForm>, nop_form),
                           (Param<spec::RegisterBank>, register_bank),
                           (Param<spec::HeadTailWidth>, head_tail_width),
                           (Param<spec::HeadTailMax>, head_tail_max),
                           (Param<spec::MaskMax>, mask_max),
                           (Param<spec::MaskShift>, mask_shift));
  bool operator==(const CopyParams&) const = default;
};

/// Checks every field against its domain, the fields against the operation (fill and
/// clear_page have no loads, so prefetch_distance must be 0), and the vector width against
/// `target`. Error kInvalidParams names the field, the value and the allowed range; error
/// kUnsupportedIsa names the missing feature and the widths the target allows.
Status validate(const CopyParams& p, const IsaFeatures& target);

/// The lowest ISA level (sse2, avx2, avx512) whose features validate() accepts `p` on: what a
/// routine of these params needs at least (the .S writer's default --target, the patch table's
/// comparison with glibc's variant). kAVX512 for params no level accepts (validate() says why).
IsaLevel lowest_isa_level(const CopyParams& p);

/// Checks only the domains (no ISA check). Same errors as validate().
Status validate_domains(const CopyParams& p);

/// One line, `field=value` pairs in declaration order, e.g.
/// "operation=memcpy vector_width=32 unroll=4 prefetch_distance=0 ...".
std::string to_string(const CopyParams& p);

/// JSON object with one member per field; thresholds equal to kNever are written as "never". A
/// field whose Spec has `written_at_default = false` (rep_resume) is left out at its default, so
/// that readers older than the field keep reading what does not use it; params_from_json takes
/// a missing field as its default.
nlohmann::json to_json(const CopyParams& p);

/// Parses what to_json writes. Unknown members are an error (a typo must not be silently ignored);
/// missing members take the field's default. Errors (kWisdomMalformed for wrong types or unknown
/// fields, kInvalidParams for out-of-domain values) name the field. Does not check the ISA: call
/// validate() with the target's features.
Result<CopyParams> params_from_json(const nlohmann::json& j);

/// Names of all fields in declaration order.
std::vector<std::string> param_field_names();

/// Human-readable description of every field: name, unit, default, domain, doc (for --help and
/// docs/parameters.md).
std::string describe_params();

/// Name of an enum value as used in JSON ("memcpy", "t0", "long", ...).
std::string_view name_of(Operation v) noexcept;
std::string_view name_of(PrefetchHint v) noexcept;
std::string_view name_of(NopForm v) noexcept;
std::string_view name_of(RegisterBank v) noexcept;

/// The C library function an operation's routine stands in for, as the shim, the tuned library
/// and the profiles name it: "memcpy", "memmove", "memset" (fill); "" for clear_page, which has
/// none.
const char* libc_name(Operation v) noexcept;

/// Formats a byte count: "never" for kNever, else a plain integer.
std::string bytes_or_never(std::uint64_t v);

/// The candidate values of a field for a search: every choice of a finite domain; for a byte
/// range, 0 (if allowed) then powers of two from `step` (at least 64) up to min(hi, `cap`), then
/// kNever if allowed. The tuner narrows these with measurements.
template <class Spec>
std::vector<typename Spec::type> domain_values(std::uint64_t cap = std::uint64_t{1} << 30) {
  std::vector<typename Spec::type> out;
  if constexpr (requires { Spec::choices; }) {
    out.assign(Spec::choices.begin(), Spec::choices.end());
  } else {
    if (Spec::lo == 0) out.push_back(0);
    const std::uint64_t top = Spec::hi < cap ? Spec::hi : cap;
    for (std::uint64_t v = Spec::step < 64 ? 64 : Spec::step; v <= top; v *= 2)
      out.push_back(static_cast<typename Spec::type>(v));
    if (Spec::allows_never) out.push_back(static_cast<typename Spec::type>(kNever));
  }
  return out;
}

}  // namespace copysynth
