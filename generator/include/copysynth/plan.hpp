// copysynth — CopyPlan: the size ladder of one routine.
//
// A plan is an ordered list of size classes that together cover every length n in [0, 2^64):
// each class names the strategy that handles n bytes for n in [lo, hi]. (A clear_page plan has
// one class, n = 4096.) The plan is what emission, verification (its edges are tested ±72),
// reports and the `.S` writer's header comment read. Templates (templates/) build plans from
// CopyParams; emit() turns a plan into machine code for the plan's operation.
//
// Strategies (n = length in bytes, V = vector width in bytes):
//   kNone            n == 0: return dst, touch no memory.
//   kBlock           n == block: one move (or store, for fill) of `block` bytes.
//   kHeadTail        block <= n <= 2*block: all loads, then all stores, of `block` bytes at the
//                    head [0, block) and at the tail [n-block, n); the two overlap (LLVM libc
//                    op_generic.h `head_tail`). Never reads or writes outside [0, n). Loads
//                    before stores make it correct for memmove at any overlap.
//   kAlignedLoop     n >= 4V: load the first V and the last 4V bytes, align dst up to V, loop
//                    over unroll*V bytes per iteration (aligned stores, optional prefetch), then
//                    V at a time, then store the saved tail and head (glibc's more_8x_vec).
//                    memmove runs it backward (mirrored) when dst - src < n.
//   kRepString       `rep movsb`/`movsq` (`stosb`/`stosq` for fill), optionally after aligning dst
//                    to 64; memmove takes it only when a forward copy is safe, else the loop.
//   kNonTemporalLoop kAlignedLoop with movnt* stores and `sfence` before the tail; memmove
//                    takes it only when the buffers do not overlap, else the loop.
//   kMasked          0 <= n <= block (16, 32 or 64): one AVX-512BW masked load and store of
//                    `block` bytes with the mask (1 << n) - 1 (bzhi); block 128: two masked
//                    64-byte moves, at +0 and +64. Masked-off bytes are never accessed (AVX-512
//                    fault suppression), so no branch per small class; one for n = 0, which
//                    returns first (a zero mask still issues the accesses: emit.cpp
//                    zero_length_exit()). When [src, src+block) or
//                    [dst, dst+block) crosses a 4 KiB page, the call takes the unmasked classes
//                    of `page_cross` instead (n = 0, n = 1, head/tail (b, 2b], built by the
//                    template): fault suppression into an unmapped page costs a microcode assist
//                    (~70x slower, emit.cpp masked()). With mask_shift the masked moves are first
//                    moved back to end at byte n - 1 (emit.cpp masked_shifted()), and only a call
//                    where that would reach into the page below takes `page_cross`.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "copysynth/params.hpp"

namespace copysynth {

enum class Strategy : std::uint8_t {
  kNone,
  kBlock,
  kHeadTail,
  kAlignedLoop,
  kRepString,
  kNonTemporalLoop,
  kMasked,
};

/// Length of the region clear_page zeroes (bytes).
inline constexpr std::uint64_t kPageBytes = 4096;

std::string_view strategy_name(Strategy s) noexcept;

/// Lengths n with lo <= n <= hi (bytes, inclusive) use `strategy`.
struct SizeClass {
  std::uint64_t lo = 0;
  std::uint64_t hi = 0;          ///< kNever (2^64-1) for the last class
  Strategy strategy = Strategy::kNone;
  std::uint32_t block = 0;       ///< kBlock/kHeadTail: bytes per move group; 0 otherwise
  double weight = 1.0;           ///< relative call frequency; shapes the dispatch tree only
  bool operator==(const SizeClass&) const = default;
};

struct CopyPlan {
  CopyParams params;             ///< what the plan was built from (loop shape, hints, padding)
  std::string ladder;            ///< name of the template that built it ("vector", ...)
  std::uint32_t vec = 32;        ///< register width in bytes (== params.vector_width)
  std::vector<SizeClass> classes;
  /// With a kMasked class: the unmasked classes covering 0..block that its calls take when the
  /// masked block would cross a 4 KiB page (templates' small_ladder()); emit() lays them out
  /// behind the page guard. Empty without a masked class. Not written to JSON: like the class
  /// bounds, the template rebuilds it from the params when wisdom is read.
  std::vector<SizeClass> page_cross;
  bool operator==(const CopyPlan&) const = default;
};

/// Checks the structural invariants emit() relies on: classes sorted, contiguous, starting at 0,
/// ending at kNever; kNone only for {0}; head/tail blocks a power of two with block <= lo and
/// hi <= 2*block; loop classes start at >= 4V; rep classes with dst alignment start at >= 64.
/// A clear_page plan instead has exactly one class, n = 4096, with a loop or rep strategy.
/// `page_cross` is empty, or with a masked class covers exactly its lengths 0..block with
/// none/block/head-tail classes (each under the same rules). Error kInvalidParams names the
/// offending class.
Status check_plan(const CopyPlan& plan);

/// Width in bytes of one register that moves a group of `block` bytes (a head/tail end, or a
/// block): the block itself up to 8 (a GPR); else `vec` (8 at width 8), or head_tail_width when it
/// is set and block <= 2 x head_tail_width (half-width moves for the classes up to 4 x that; the
/// wider classes keep full-width moves: eight ymm per end at 512 bytes ran 0.81x the speed of
/// four zmm on AMD family 26). emit() and the printed ladder both use it.
std::uint32_t head_tail_unit(const CopyParams& p, std::uint32_t vec, std::uint32_t block);

/// The length from which the rep class `c` of a plan with params `p` takes rep only for a
/// 64-byte-aligned dst (a misaligned one takes the loop; with rep_aligned_mutual, for a copy,
/// (dst - src) mod 64 == 0 instead): 0 with rep_aligned_only;
/// rep_aligned_from in the first rep band (below rep_stop) — the second band beyond the caches
/// (rep_resume) takes any dst; kNever otherwise and for clear_page. emit(), plan_edges(),
/// describe_class() and templates' large_lengths_differ() all ask this.
std::uint64_t rep_aligned_from_in(const CopyParams& p, const SizeClass& c);

/// Whether the rep class's alignment test (where rep_aligned_from_in() says it applies) passes
/// for a copy from src to dst (addresses, or offsets from page-aligned addresses: only their
/// values mod 64 matter): (dst - src) mod 64 == 0 with rep_aligned_mutual on memcpy or memmove,
/// dst mod 64 == 0 otherwise (fill, clear_page: dst alone). A copy that fails it takes the loop.
/// emit() (rep_string) emits this test; describe_class(), templates' large_lengths_differ()
/// and the tuner's rep stage ask it.
bool rep_alignment_passes(const CopyParams& p, std::uint64_t src, std::uint64_t dst);

/// Whether rep_alignment_passes() compares dst with src (rep_aligned_mutual on a copy).
bool rep_test_mutual(const CopyParams& p);

/// Where the rep class `c` of a plan with params `p` stops handing 4K-aliasing copies to the
/// 32-byte loop (rep_alias_loop, params.hpp): rep_alias_loop when some length of `c` is below it,
/// kNever otherwise, for fill and clear_page, and for a class that is not rep. emit()
/// (rep_string), plan_edges(), describe_class(), code_path() and templates'
/// without_idle_rep_fields() all ask this.
std::uint64_t rep_alias_loop_in(const CopyParams& p, const SizeClass& c);

/// The piece (bytes) in which the rep class `c` of a plan with params `p` runs its longer
/// lengths: rep_chunk when some length of `c` exceeds one piece (c.hi > rep_chunk), kNever
/// otherwise (one rep instruction for every length) and for a class that is not rep. emit()
/// (rep_pieces), plan_edges(), describe_class() and templates' without_idle_rep_fields() all
/// ask this.
std::uint64_t rep_chunk_in(const CopyParams& p, const SizeClass& c);

/// The length (bytes) from which rep class `c` goes as one instruction again although it has
/// pieces (rep_chunk_stop, params.hpp): rep_chunk_stop when rep_chunk_in(p, c) is a piece, the
/// stop lies above it and some length of `c` reaches it (c.hi >= stop); kNever otherwise.
std::uint64_t rep_chunk_stop_in(const CopyParams& p, const SizeClass& c);

/// The piece (bytes) in which a rep class with params `p` moves a length of `n` bytes: rep_chunk
/// when n exceeds one piece and lies below rep_chunk_stop (or the stop is never, or at or below
/// one piece), kNever (one instruction) otherwise: the per-length form of rep_chunk_in() and
/// rep_chunk_stop_in(), as emit() (rep_pieces) runs it, except that emit() compares the piece
/// with the count left after rep_align_dst's head (1-64 bytes), so a length at most 64 bytes
/// above one piece may still go as one instruction there. templates' large-length model
/// (differ_at) asks this.
std::uint64_t rep_piece_at(const CopyParams& p, std::uint64_t n);

/// Every length where behaviour changes: each class's lo and hi+1 (below 2^64-1), and
/// rep_aligned_from where it splits a rep class, and in a rep class with rep_chunk the first two
/// multiples of rep_chunk above its start that lie inside it (rep_chunk and 2 x rep_chunk in a
/// class starting below one piece), and rep_chunk_stop_in() where it lies inside the class.
/// Verification tests each edge ±72.
std::vector<std::uint64_t> plan_edges(const CopyPlan& plan);

/// The ladder on one page: a title line, then one line per class, e.g.
///   "  n =         33 .. 64          head/tail: 1 x ymm at each end, overlapping; ...",
/// then the loop-head padding and register bank.
std::string to_string(const CopyPlan& plan);

/// What class `c` of `plan` does, in one line without its range, e.g. "head/tail: 1 x ymm at
/// each end, overlapping; all loads before stores" (to_string's text; the `.S` writer's comments).
std::string describe_class(const CopyPlan& plan, const SizeClass& c);

/// JSON: {"ladder", "vector_width", "classes": [{"lo","hi","strategy","block","weight"}...]}.
nlohmann::json to_json(const CopyPlan& plan);

/// A node of the dispatch tree: either a leaf (class index) or a comparison `n >= pivot`.
struct DispatchNode {
  int leaf = -1;            ///< class index for a leaf, -1 for an inner node
  std::uint64_t pivot = 0;  ///< inner node: go right when n >= pivot
  int left = -1, right = -1;
  double weight = 0;        ///< sum of the class weights below this node
};

/// The binary search tree over `plan.classes` that minimises the expected number of compares
/// under the class weights (optimal alphabetic tree, O(k^3) dynamic programming; k <= ~16).
/// Deterministic: ties pick the leftmost split. nodes[0] is the root. emit() lays out the
/// heavier side of every node as the fall-through, so the likeliest lengths take no branch.
std::vector<DispatchNode> dispatch_tree(const CopyPlan& plan);
/// The same over any ladder of contiguous classes (the plan's `page_cross` classes).
std::vector<DispatchNode> dispatch_tree(const std::vector<SizeClass>& classes);

}  // namespace copysynth
