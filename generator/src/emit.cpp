// copysynth — instruction selection for every strategy of the size ladder (see emit.hpp, plan.hpp).
//
// Register use (SysV x86-64, caller-saved only):
//   rax      dst, the return value (set once at entry; rep stos saves and restores it)
//   rdi      dst, later the loop cursor         rsi  src (fill: the byte), later src - dst
//   rdx      n, later a loop bound              rcx  scratch / loop counter / rep count
//   r8-r11   GPR data; fill keeps the byte broadcast to 8 bytes in r8
//   vectors  0-7 loop and head/tail data; 8-12 the loop's saved head and tail; 15 fill pattern
//            (16-31 for the same roles with register_bank = high); k1 (and k2) the masks of kMasked
#include "copysynth/emit.hpp"

#include <algorithm>
#include <bit>
#include <optional>
#include <string>
#include <utility>

#include "copysynth/nops.hpp"

namespace copysynth {
namespace x86 = asmjit::x86;
using asmjit::Label;

namespace {

/// Records the first asmjit error raised while emitting.
class FirstError final : public asmjit::ErrorHandler {
 public:
  void handleError(asmjit::Error err, const char* message, asmjit::BaseEmitter*) override {
    if (error == asmjit::kErrorOk) {
      error = err;
      text = message;
    }
  }
  asmjit::Error error = asmjit::kErrorOk;
  std::string text;
};

class RoutineEmitter {
 public:
  RoutineEmitter(const CopyPlan& plan, x86::Emitter& e, const EmitFaults& faults, std::vector<EmitNote>* notes)
      : plan_(plan), p_(plan.params), a_(e), V_(plan.vec), f_(faults), op_(plan.params.operation.value),
        notes_(e.isAssembler() ? notes : nullptr) {
    if (notes_) base_ = assembler_offset();
  }

  Status run() {
    if (op_ == Operation::kClearPage) {
      comment("clear_page(rdi = page): rax = page, r8 = 0 (the pattern), n = 4096");
      a_.mov(x86::rax, x86::rdi);
      a_.xor_(x86::r8d, x86::r8d);  // the pattern: zero
      a_.mov(x86::edx, static_cast<int32_t>(kPageBytes));
    } else {
      comment(fill() ? "rdi = dst, sil = the fill byte, rdx = n; rax = dst, the return value"
                     : "rdi = dst, rsi = src, rdx = n; rax = dst, the return value");
      a_.mov(x86::rax, x86::rdi);
      if (f_.truncate_length) a_.mov(x86::edx, x86::edx);
      if (fill()) {
        comment("r8 = the fill byte in all 8 bytes");
        // r8 = the fill byte broadcast to 8 bytes.
        a_.movzx(x86::r8d, x86::sil);
        a_.mov(x86::r9, 0x0101010101010101ll);
        a_.imul(x86::r8, x86::r9);
      }
    }
    loop_entry_ = a_.newLabel();
    backward_ = a_.newLabel();
    alias_loop_ = a_.newLabel();
    short_entry_ = a_.newLabel();
    const auto tree = dispatch_tree(plan_);
    COPYSYNTH_TRY(node(plan_.classes, tree, 0));
    // memmove's rep and non-temporal classes fall back to the direction-aware loop for
    // overlapping buffers; emit it here when no loop class emitted it inline.
    if (need_loop_entry_ && !loop_entry_bound_) loop_class();
    if (need_alias_loop_) alias_loop();
    return pad_error_ ? Status(*pad_error_) : Status();
  }

 private:
  bool fill() const { return op_ == Operation::kFill || op_ == Operation::kClearPage; }
  /// The forward loop is software-pipelined (validate() allows it for copies at V >= 16, U <= 4).
  bool pipelined() const { return p_.loop_pipeline && !fill() && V_ >= 16 && p_.unroll.value <= 4; }
  bool memmove() const { return op_ == Operation::kMemmove; }

  // ----- registers and moves ---------------------------------------------------------------

  /// GPR number i of {rcx, r8, r9, r10, r11}, as a register of `bytes`.
  static x86::Gp gpr(unsigned i, unsigned bytes) {
    static const x86::Gp q[] = {x86::rcx, x86::r8, x86::r9, x86::r10, x86::r11};
    // Callers pass 0..4 (head/tail and loop register maps above); the mask keeps a bad index
    // from reading outside the table and makes the bound visible to the compiler.
    const unsigned id = q[i < 5 ? i : 0].id();
    switch (bytes) {
      case 1: return x86::gpb(id);
      case 2: return x86::gpw(id);
      case 4: return x86::gpd(id);
      default: return x86::gpq(id);
    }
  }
  static constexpr unsigned kR8 = 1, kR9 = 2, kR10 = 3, kR11 = 4;  // indices into gpr()
  static constexpr unsigned kPattern = 15;                         // fill's vector register

  static x86::Mem mem(const x86::Gp& base, int32_t disp, unsigned bytes) {
    x86::Mem m = x86::ptr(base, disp);
    m.setSize(bytes);
    return m;
  }
  static x86::Mem mem(const x86::Gp& base, const x86::Gp& index, int32_t disp, unsigned bytes) {
    x86::Mem m = x86::ptr(base, index, 0, disp);
    m.setSize(bytes);
    return m;
  }

  /// Width in bytes of one register used to move a group of `block` bytes.
  unsigned unit_for(unsigned block) const { return head_tail_unit(p_, V_, block); }

  enum class StoreKind { kUnaligned, kAligned, kNonTemporal };

  bool high() const { return p_.register_bank.value == RegisterBank::kHigh; }
  /// Vector register number for logical register r: r, or r + 16 with the high bank.
  unsigned vr(unsigned r) const { return high() ? r + 16 : r; }
  static x86::Vec vec(unsigned id, unsigned unit) {
    return unit == 16 ? x86::Vec(x86::xmm(id)) : unit == 32 ? x86::Vec(x86::ymm(id)) : x86::Vec(x86::zmm(id));
  }

  /// Loads `unit` bytes into register `r` (a gpr() index for unit <= 8, else a vector number).
  void load(unsigned r, unsigned unit, const x86::Mem& src) {
    if (unit <= 8) {
      if (unit < 4) a_.movzx(gpr(r, 4), src);
      else a_.mov(gpr(r, unit), src);
      return;
    }
    if (high()) {  // EVEX forms: registers 16-31 leave the VEX upper state alone
      a_.vmovdqu64(vec(vr(r), unit), src);
      return;
    }
    used_wide_ |= unit >= 32;
    if (unit == 16) {
      if (V_ == 16) a_.movdqu(x86::xmm(r), src);
      else a_.vmovdqu(x86::xmm(r), src);
    } else if (unit == 32) {
      a_.vmovdqu(x86::ymm(r), src);
    } else {
      a_.vmovdqu64(x86::zmm(r), src);
    }
  }

  void store(unsigned r, unsigned unit, const x86::Mem& dst, StoreKind kind) {
    if (unit <= 8) {
      if (kind == StoreKind::kNonTemporal && unit == 8) a_.movnti(dst, gpr(r, 8));
      else a_.mov(dst, gpr(r, unit));
      return;
    }
    if (high()) {
      const x86::Vec v = vec(vr(r), unit);
      if (kind == StoreKind::kNonTemporal) a_.vmovntdq(dst, v);
      else if (kind == StoreKind::kAligned) a_.vmovdqa64(dst, v);
      else a_.vmovdqu64(dst, v);
      return;
    }
    used_wide_ |= unit >= 32;
    if (unit == 16) {
      const x86::Xmm x = x86::xmm(r);
      if (V_ == 16) {
        if (kind == StoreKind::kNonTemporal) a_.movntdq(dst, x);
        else if (kind == StoreKind::kAligned) a_.movdqa(dst, x);
        else a_.movdqu(dst, x);
      } else {
        if (kind == StoreKind::kNonTemporal) a_.vmovntdq(dst, x);
        else if (kind == StoreKind::kAligned) a_.vmovdqa(dst, x);
        else a_.vmovdqu(dst, x);
      }
    } else if (unit == 32) {
      const x86::Ymm y = x86::ymm(r);
      if (kind == StoreKind::kNonTemporal) a_.vmovntdq(dst, y);
      else if (kind == StoreKind::kAligned) a_.vmovdqa(dst, y);
      else a_.vmovdqu(dst, y);
    } else {
      const x86::Zmm z = x86::zmm(r);
      if (kind == StoreKind::kNonTemporal) a_.vmovntdq(dst, z);
      else if (kind == StoreKind::kAligned) a_.vmovdqa64(dst, z);
      else a_.vmovdqu64(dst, z);
    }
  }

  /// Fill: the register holding the pattern at `unit` bytes (r8 for GPR units; else vector 15,
  /// broadcast on first use in the current body).
  unsigned pattern(unsigned unit) {
    if (unit <= 8) return kR8;
    if (pattern_width_ >= unit) return kPattern;
    if (high()) {  // EVEX: broadcast straight from r8 (or zero) at the full width needed
      const x86::Vec v = vec(vr(kPattern), op_ == Operation::kClearPage ? 16 : unit);
      if (op_ == Operation::kClearPage) {
        a_.vpxorq(v, v, v);  // zeroes the register up to its full width
        pattern_width_ = 64;
      } else {
        a_.vpbroadcastq(v, x86::r8);
        pattern_width_ = unit;
      }
      return kPattern;
    }
    const x86::Xmm x = x86::xmm(kPattern);
    if (op_ == Operation::kClearPage) {
      if (V_ == 16) a_.pxor(x, x);
      else a_.vpxor(x, x, x);  // VEX: zeroes the register up to its full width
      pattern_width_ = 64;
      return kPattern;
    }
    if (V_ == 16 && unit == 16) {  // an SSE2 routine (its masked class may need wider ones)
      a_.movq(x, x86::r8);
      a_.punpcklqdq(x, x);
    } else if (unit == 16) {
      a_.vmovq(x, x86::r8);
      a_.vpunpcklqdq(x, x, x);
    } else if (unit == 32) {
      a_.vmovq(x, x86::r8);
      a_.vpbroadcastq(x86::ymm(kPattern), x);
      used_wide_ = true;
    } else {
      a_.vpbroadcastq(x86::zmm(kPattern), x86::r8);
      used_wide_ = true;
    }
    pattern_width_ = unit;
    return kPattern;
  }

  void ret() {
    if (used_wide_ && !f_.skip_vzeroupper) a_.vzeroupper();
    a_.ret();
  }

  void sfence() {
    if (!f_.skip_sfence) a_.sfence();
  }

  /// Starts the code of one size class or shared body: resets what "this path" has used.
  void begin_body() {
    used_wide_ = false;
    pattern_width_ = 0;
  }

  // ----- notes for readers of the code (EmitNote; never change a byte) --------------------

  /// The Assembler's byte offset; only for an Assembler (padding and notes check isAssembler()).
  std::size_t assembler_offset() const {
    // x86::Emitter is a view of the real emitter (BaseEmitter::as<>), here an Assembler.
    return static_cast<asmjit::BaseAssembler&>(static_cast<asmjit::BaseEmitter&>(a_)).offset();
  }
  /// Offset from the routine's first byte, for notes.
  std::size_t offset() const { return assembler_offset() - base_; }
  void comment(std::string text) {
    if (notes_) notes_->push_back({EmitNote::Kind::kComment, offset(), 0, NopForm::kSingleByte, std::move(text)});
  }
  /// Binds `l` here and names it for readers.
  void bind(const Label& l, std::string name) {
    a_.bind(l);
    if (notes_) notes_->push_back({EmitNote::Kind::kLabel, offset(), 0, NopForm::kSingleByte, std::move(name)});
  }

  // ----- padding ------------------------------------------------------------------------------

  void pad_loop_head() {
    const unsigned align = p_.loop_align;
    if (align <= 1) return;
    if (!a_.isAssembler()) {
      if (!pad_error_)
        pad_error_ = make_error(ErrorCode::kInvalidArgument,
                                "loop-head padding needs an x86::Assembler (the byte offset must "
                                "be known); use loop_align = 1 with other emitters");
      return;
    }
    const std::size_t at = assembler_offset();
    const auto bytes = nop_padding(p_.nop_form, padding_for(at, align));
    if (bytes.empty()) return;
    if (notes_) notes_->push_back({EmitNote::Kind::kPadding, at - base_, bytes.size(), p_.nop_form, {}});
    a_.embed(bytes.data(), bytes.size());
  }

  // ----- dispatch --------------------------------------------------------------------------

  /// cmp n, pivot (64-bit unsigned); pivots above INT32_MAX go through rcx.
  void cmp_n(std::uint64_t pivot) {
    if (pivot <= 0x7FFFFFFFu) {
      a_.cmp(x86::rdx, static_cast<int64_t>(pivot));
    } else {
      a_.mov(x86::rcx, static_cast<int64_t>(pivot));
      a_.cmp(x86::rdx, x86::rcx);
    }
  }

  /// The lengths a subtree of a dispatch tree over `classes` handles: [first lo, last hi].
  static std::pair<std::uint64_t, std::uint64_t> lengths(const std::vector<SizeClass>& classes,
                                                         const std::vector<DispatchNode>& t, int id) {
    int lo = id, hi = id;
    while (t[lo].leaf < 0) lo = t[lo].left;
    while (t[hi].leaf < 0) hi = t[hi].right;
    return {classes[t[lo].leaf].lo, classes[t[hi].leaf].hi};
  }
  static std::string lengths_text(std::pair<std::uint64_t, std::uint64_t> r, const char* sep) {
    if (r.first == r.second) return std::to_string(r.first);
    return std::to_string(r.first) + sep + (r.second == kNever ? std::string("max") : std::to_string(r.second));
  }

  /// Emits the dispatch subtree `id` of `t`, a tree over `classes` (dispatch_tree()).
  Status node(const std::vector<SizeClass>& classes, const std::vector<DispatchNode>& t, int id) {
    const DispatchNode& nd = t[id];
    if (nd.leaf >= 0) return leaf(classes[nd.leaf]);
    // The heavier side falls through: the likeliest lengths take no branch.
    Label other = a_.newLabel();
    const bool right_first = t[nd.right].weight > t[nd.left].weight;
    const int jumped = right_first ? nd.left : nd.right;
    comment("n = " + lengths_text(lengths(classes, t, id), " .. ") + ": n " + (right_first ? "<" : ">=") + " " +
            std::to_string(nd.pivot) + " jumps, the likelier side falls through");
    cmp_n(nd.pivot);
    if (right_first) a_.jb(other);
    else a_.jae(other);
    COPYSYNTH_TRY(node(classes, t, right_first ? nd.right : nd.left));
    bind(other, notes_ ? "len_" + lengths_text(lengths(classes, t, jumped), "_") : std::string());
    return node(classes, t, jumped);
  }

  Status leaf(const SizeClass& c) {
    begin_body();
    // The class's description takes an ostringstream (and on the first call the C++ locale's
    // set-up): half the instructions of a whole build. Only a listing or the .S writer reads it.
    if (notes_) comment("n = " + lengths_text({c.lo, c.hi}, " .. ") + ": " + describe_class(plan_, c));
    switch (c.strategy) {
      case Strategy::kNone: ret(); break;
      case Strategy::kBlock: block(c.block); break;
      case Strategy::kHeadTail: head_tail(c.block); break;
      case Strategy::kAlignedLoop:
        if (pf_ && c.hi < p_.prefetch_min.value) {
          // prefetch_min: loop classes below it take a copy of the loop without prefetch (the
          // ladder split the class there), emitted once at short_entry_; every other loop class
          // and the rep and non-temporal classes' fallback take the prefetching loop at
          // loop_entry_.
          if (short_bound_) {
            comment("the loop without prefetch again");
            a_.jmp(short_entry_);
            break;
          }
          const Label entry = loop_entry_, back = backward_;
          const bool bound = loop_entry_bound_;
          loop_entry_ = short_entry_;
          backward_ = a_.newLabel();
          loop_entry_bound_ = false;
          pf_ = 0;
          comment("below prefetch_min: the loop without prefetch");
          loop_class();
          short_bound_ = true;
          pf_ = p_.prefetch_distance.value;
          loop_entry_ = entry;
          backward_ = back;
          loop_entry_bound_ = bound;
        } else if (loop_entry_bound_) {  // a second loop class (after a rep band): the same loop
          comment("the loop again, after the rep band");
          a_.jmp(loop_entry_);
        } else {
          loop_class();
        }
        break;
      case Strategy::kNonTemporalLoop:
        if (memmove()) {
          // Non-temporal stores only when the buffers do not overlap at all.
          need_loop_entry_ = true;
          comment("non-temporal stores only when the buffers do not overlap; else the loop");
          jump_if_overlap(loop_entry_, loop_entry_);
        }
        {
          // nt_width: the non-temporal loop in narrower registers than the rest of the routine
          // (every helper below takes its width from V_; the loop's minimum length, 4 x V, only
          // shrinks).
          const unsigned routine_v = V_;
          if (p_.nt_width.value) V_ = p_.nt_width.value;
          forward_loop(true);
          V_ = routine_v;
        }
        break;
      case Strategy::kRepString: rep_string(c); break;
      case Strategy::kMasked: masked(c.block); break;
    }
    return {};
  }

  /// 0 <= n <= bytes: one masked load and store of `bytes` (16, 32 or 64) with the mask
  /// (1 << n) - 1, or for bytes = 128 two of 64 bytes, at +0 masked by bzhi(n) and at +64 by
  /// bzhi(max(n - 64, 0)). Masked-off bytes are never accessed; n = 0 leaves before any access
  /// (zero_length_exit()).
  ///
  /// Page guard: a masked access whose masked-off bytes fall in an unmapped page is correct
  /// (AVX-512 fault suppression) but takes a microcode assist — measured on AMD family 26 at
  /// about 360 TSC ticks for a 3-byte copy next to a PROT_NONE page, against 5.5 in the middle
  /// of a page; a masked store into the next, mapped page costs 14. glibc's evex memset checks
  /// the same ("mask stores suffer serious performance degradation when it has to fault
  /// suppress"). So when [src, src+bytes) or [dst, dst+bytes) crosses a 4 KiB boundary the
  /// call takes the plan's unmasked page_cross classes (small_fallback) instead.
  void masked(unsigned bytes) {
    if (p_.mask_shift.value) return masked_tight(bytes);
    const Label zero = zero_length_exit();
    Label cross = a_.newLabel();
    const int32_t reach = static_cast<int32_t>(bytes - 1);
    comment("page guard: a " + std::to_string(bytes) + "-byte block crossing a 4 KiB page takes the unmasked ladder");
    // Bit 12 of p and of p + bytes - 1 differ exactly when the block crosses a page boundary.
    a_.lea(x86::ecx, x86::ptr(x86::rdi, reach));
    a_.xor_(x86::ecx, x86::edi);
    if (!fill()) {
      a_.lea(x86::r8d, x86::ptr(x86::rsi, reach));
      a_.xor_(x86::r8d, x86::esi);
      a_.or_(x86::ecx, x86::r8d);
    }
    a_.test(x86::ecx, 4096);
    a_.jnz(cross);
    const unsigned unit = std::min(bytes, 64u);  // bytes per masked move
    const unsigned moves = bytes / unit;         // 1, or 2 for 128
    a_.mov(x86::rcx, -1);
    if (moves == 1) {
      a_.bzhi(x86::rcx, x86::rcx, x86::rdx);  // n <= unit: bits [0, n) set
      if (unit == 64) a_.kmovq(x86::k1, x86::rcx);
      else if (unit == 32) a_.kmovd(x86::k1, x86::ecx);
      else a_.kmovw(x86::k1, x86::ecx);
    } else {
      // n <= 128, so bzhi's index (bits 7:0 of its operand) is n itself: n >= 64 sets all 64.
      // r8 is left alone: fill keeps its byte pattern there.
      a_.bzhi(x86::r9, x86::rcx, x86::rdx);
      a_.lea(x86::r10, x86::ptr(x86::rdx, -64));
      a_.xor_(x86::r11d, x86::r11d);
      a_.cmp(x86::rdx, 64);
      a_.cmovb(x86::r10, x86::r11);  // max(n - 64, 0)
      a_.bzhi(x86::r10, x86::rcx, x86::r10);
      a_.kmovq(x86::k1, x86::r9);
      a_.kmovq(x86::k2, x86::r10);
    }
    const x86::KReg k[2] = {x86::k1, x86::k2};
    if (!high()) used_wide_ |= unit >= 32;
    if (fill()) {
      const unsigned r = pattern(unit);
      for (unsigned i = 0; i < moves; ++i)
        a_.k(k[i]).vmovdqu8(mem(x86::rdi, int32_t(i * unit), unit), vec(vr(r), unit));
    } else {
      // All loads before any store (memmove).
      for (unsigned i = 0; i < moves; ++i)
        a_.k(k[i]).z().vmovdqu8(vec(vr(i), unit), mem(x86::rsi, int32_t(i * unit), unit));
      for (unsigned i = 0; i < moves; ++i)
        a_.k(k[i]).vmovdqu8(mem(x86::rdi, int32_t(i * unit), unit), vec(vr(i), unit));
    }
    ret();
    bind_zero_length_exit(zero);
    bind(cross, "page_cross");
    small_fallback();
  }

  /// n = 0 leaves the masked class before any access (test, jz: one fused uop for every other
  /// call). A zero mask makes a masked load or store touch no byte, but not no memory: the load
  /// still fetches the lines its window spans, and a window in a page that has no page-table
  /// entry yet (mapped, never touched) takes a microcode assist on every call, since the copy
  /// itself never touches that page. Measured on AMD family 26 (docs/performance.md, eighteenth
  /// round; docs/perf/zero-length/): n = 0 in a page never touched about 1300 TSC ticks per call
  /// before (two masked moves), 4.9 with the exit; sqlite3's own memmove calls, 71 % of them
  /// n = 0, 6.2 -> 3.1 ns per call warm (glibc 3.8), 68 -> 14 cold. What it costs: the production
  /// mixes (0.7-7.6 % of their calls n = 0, drawn independently) about 6 % by throughput, read
  /// back level. The other forms measured, against this one: both pointers moved to the stack by
  /// cmov for n = 0 (no branch, 4 uops, the accesses still issued) 0-4 % more throughput and 4 %
  /// less read back; n - 1 ORed into the page guard's test (2 uops, the guard's branch) the same
  /// throughput and 6-7 % less read back.
  /// Bound after the class's first ret by bind_zero_length_exit().
  Label zero_length_exit() {
    const Label zero = a_.newLabel();
    comment("n = 0: nothing to do, and a zero-mask access would still fetch its lines");
    a_.test(x86::rdx, x86::rdx);
    a_.short_().jz(zero);  // the class's code up to its first ret lies between: under 128 bytes
    return zero;
  }

  /// The target of zero_length_exit()'s branch: a plain ret (no vector register used yet).
  void bind_zero_length_exit(const Label& zero) {
    bind(zero, "zero_length");
    a_.ret();
  }

  /// mask_shift: the masked class with a page guard that tests only the bytes a mask leaves
  /// off, and a page-crossing path that moves the block back before it falls to the ladder.
  ///
  /// Block 16, 32 or 64: one masked move at p. Block 128: two moves of 64, at p and at
  /// p + max(n - 64, 0), both with the mask bzhi(n): for n >= 64 two full moves (overlapping
  /// below 128; no byte masked off), for n < 64 the same move twice. The only masked-off bytes are then
  /// [p + n, p + min(block, 64)), so the guard asks whether p + n - 1 and the move's last byte
  /// lie in different pages: a page the copy itself does not touch (n >= 1 here:
  /// zero_length_exit() comes first). That is (min(block, 64) - n) / 4096 of the placements of each
  /// pointer where masked() tests block / 4096. A call that fails it takes masked_shifted().
  void masked_tight(unsigned bytes) {
    const Label zero = zero_length_exit();
    Label cross = a_.newLabel();
    const unsigned unit = std::min(bytes, 64u);
    const bool two = bytes == 128;
    comment("page guard: the bytes the " + std::to_string(unit) +
            "-byte mask leaves off crossing a 4 KiB page take the block moved back");
    if (two) {
      a_.lea(x86::r10, x86::ptr(x86::rdx, -64));
      a_.xor_(x86::r11d, x86::r11d);
      a_.cmp(x86::rdx, 64);
      a_.cmovb(x86::r10, x86::r11);  // max(n - 64, 0): the second move's offset
    }
    // The move's last byte: p + unit - 1, or for two moves p + max(n - 64, 0) + 63.
    const auto last = [&](const x86::Gp& p) {
      return two ? x86::ptr(p, x86::r10, 0, 63) : x86::ptr(p, static_cast<int32_t>(unit - 1));
    };
    a_.lea(x86::ecx, x86::ptr(x86::rdi, x86::rdx, 0, -1));
    a_.lea(x86::r9d, last(x86::rdi));
    a_.xor_(x86::ecx, x86::r9d);
    if (!fill()) {
      a_.lea(x86::r9d, x86::ptr(x86::rsi, x86::rdx, 0, -1));
      a_.lea(x86::r11d, last(x86::rsi));
      a_.xor_(x86::r9d, x86::r11d);
      a_.or_(x86::ecx, x86::r9d);
    }
    a_.test(x86::ecx, 4096);
    a_.jnz(cross);
    a_.mov(x86::rcx, -1);
    a_.bzhi(x86::rcx, x86::rcx, x86::rdx);  // n >= unit (bzhi reads bits 7:0, n <= 128): all set
    if (unit == 64) a_.kmovq(x86::k1, x86::rcx);
    else if (unit == 32) a_.kmovd(x86::k1, x86::ecx);
    else a_.kmovw(x86::k1, x86::ecx);
    if (!high()) used_wide_ |= unit >= 32;
    const auto at = [&](const x86::Gp& p, unsigned i) {
      return i == 0 ? mem(p, 0, unit) : mem(p, x86::r10, 0, unit);
    };
    const unsigned moves = two ? 2 : 1;
    if (fill()) {
      const unsigned r = pattern(unit);
      for (unsigned i = 0; i < moves; ++i) a_.k(x86::k1).vmovdqu8(at(x86::rdi, i), vec(vr(r), unit));
    } else {
      // All loads before any store (memmove).
      for (unsigned i = 0; i < moves; ++i) a_.k(x86::k1).z().vmovdqu8(vec(vr(i), unit), at(x86::rsi, i));
      for (unsigned i = 0; i < moves; ++i) a_.k(x86::k1).vmovdqu8(at(x86::rdi, i), vec(vr(i), unit));
    }
    ret();
    bind_zero_length_exit(zero);
    bind(cross, "page_cross");
    masked_shifted(unit);
    small_fallback();
  }

  /// The page-crossing path of masked_tight(): one masked move of `unit` (16, 32 or 64) bytes
  /// at p + n - unit instead of p, the mask's n set bits at its top, so the move ends at the
  /// copy's last byte and its masked-off bytes lie below p (the call has n < unit: for a block
  /// of 128 the guard only fails below 64). Where the moved block's part below p would cross
  /// into another page too (both pointers near a page edge) the call
  /// falls through to the unmasked ladder after this code.
  void masked_shifted(unsigned unit) {
    begin_body();
    comment("the " + std::to_string(unit) + "-byte move moved back to end at the last byte");
    Label ladder = a_.newLabel();
    a_.lea(x86::r9, x86::ptr(x86::rdx, -static_cast<int32_t>(unit)));  // n - unit (< 0): the move's offset
    // Bit 12 of p + n - unit and of p differ exactly when the part below p crosses a page.
    a_.lea(x86::ecx, x86::ptr(x86::rdi, x86::r9));
    a_.xor_(x86::ecx, x86::edi);
    if (!fill()) {
      a_.lea(x86::r10d, x86::ptr(x86::rsi, x86::r9));
      a_.xor_(x86::r10d, x86::esi);
      a_.or_(x86::ecx, x86::r10d);
    }
    a_.test(x86::ecx, 4096);
    a_.jnz(ladder);
    // Bits [unit - n, unit): the n low bits shifted up by unit - n.
    a_.mov(x86::rcx, -1);
    a_.bzhi(x86::r11, x86::rcx, x86::rdx);
    a_.mov(x86::r10d, static_cast<int32_t>(unit));
    a_.sub(x86::r10d, x86::edx);
    a_.shlx(x86::r11, x86::r11, x86::r10);
    if (unit == 64) a_.kmovq(x86::k1, x86::r11);
    else if (unit == 32) a_.kmovd(x86::k1, x86::r11d);
    else a_.kmovw(x86::k1, x86::r11d);
    if (!high()) used_wide_ |= unit >= 32;
    if (fill()) {
      const unsigned r = pattern(unit);  // before a_.k(): the broadcast would take the mask
      a_.k(x86::k1).vmovdqu8(mem(x86::rdi, x86::r9, 0, unit), vec(vr(r), unit));
    } else {
      a_.k(x86::k1).z().vmovdqu8(vec(vr(0), unit), mem(x86::rsi, x86::r9, 0, unit));
      a_.k(x86::k1).vmovdqu8(mem(x86::rdi, x86::r9, 0, unit), vec(vr(0), unit));
    }
    ret();
    bind(ladder, "page_cross_ladder");
    begin_body();
  }

  /// The page-crossing path of a masked class: the plan's unmasked `page_cross` classes for
  /// 0 <= n <= block (the template's small_ladder; check_plan has checked they cover exactly
  /// that), behind their own dispatch tree.
  void small_fallback() {
    const auto tree = dispatch_tree(plan_.page_cross);
    (void)node(plan_.page_cross, tree, 0);  // leaves of these kinds cannot fail
  }

  // ----- small classes ---------------------------------------------------------------------

  void block(unsigned bytes) {
    if (fill()) {
      store(pattern(bytes), bytes, mem(x86::rdi, 0, bytes), StoreKind::kUnaligned);
    } else {
      load(0, bytes, mem(x86::rsi, 0, bytes));
      store(0, bytes, mem(x86::rdi, 0, bytes), StoreKind::kUnaligned);
    }
    ret();
  }

  /// block <= n <= 2*block: head [0, block) and tail [n-block, n), all loads before stores.
  void head_tail(unsigned bytes) {
    const unsigned unit = unit_for(bytes);
    const unsigned k = bytes / unit;  // registers per end
    const int32_t back = -int32_t(bytes);
    if (fill()) {
      const unsigned r = pattern(unit);
      for (unsigned i = 0; i < k; ++i) store(r, unit, mem(x86::rdi, int32_t(i * unit), unit), StoreKind::kUnaligned);
      for (unsigned i = 0; i < k; ++i)
        store(r, unit, mem(x86::rdi, x86::rdx, int32_t(i * unit) + back, unit), StoreKind::kUnaligned);
      ret();
      return;
    }
    const int32_t skew = f_.over_read ? 1 : 0;
    for (unsigned i = 0; i < k; ++i) load(i, unit, mem(x86::rsi, int32_t(i * unit), unit));
    if (f_.wrong_overlap_order)
      for (unsigned i = 0; i < k; ++i) store(i, unit, mem(x86::rdi, int32_t(i * unit), unit), StoreKind::kUnaligned);
    for (unsigned i = 0; i < k; ++i)
      load(k + i, unit, mem(x86::rsi, x86::rdx, int32_t(i * unit) + back + skew, unit));
    if (!f_.wrong_overlap_order)
      for (unsigned i = 0; i < k; ++i) store(i, unit, mem(x86::rdi, int32_t(i * unit), unit), StoreKind::kUnaligned);
    for (unsigned i = 0; i < k; ++i)
      store(k + i, unit, mem(x86::rdi, x86::rdx, int32_t(i * unit) + back, unit), StoreKind::kUnaligned);
    ret();
  }

  // ----- loops -----------------------------------------------------------------------------

  /// Vectors saved at the tail by the forward loop / at the head by the backward loop:
  /// 4 for vector widths, 1 at width 8 (the GPRs run out).
  unsigned saved_k() const { return V_ == 8 ? 1 : 4; }
  /// Registers of the loop body: vectors 0-7, or r8 (and r9 in the forward loop) at width 8.
  unsigned body_reg(unsigned i, bool backward) const {
    if (V_ != 8) return i % 8;
    return backward ? kR8 : (i % 2 ? kR9 : kR8);
  }
  unsigned body_group(bool backward) const { return V_ != 8 ? 8 : (backward ? 1 : 2); }
  /// Saved head / tail registers.
  unsigned head_reg(unsigned i) const { return V_ == 8 ? kR10 : 8 + i; }
  unsigned tail_reg(unsigned i, bool backward) const {
    if (V_ == 8) return kR11;
    return backward ? 12 : 9 + i;
  }

  void prefetch(const x86::Mem& m) {
    if (p_.prefetch_hint.value == PrefetchHint::kNTA) a_.prefetchnta(m);
    else a_.prefetcht0(m);
  }

  /// n >= 4V (n >= 32 at width 8). Copy ops: save the first V and the last saved_k()*V bytes of
  /// src, align dst up to V, copy unroll*V per iteration then V per iteration up to the tail,
  /// then store the saved tail and head. Fill: the same with pattern stores (no saving needed).
  void forward_loop(bool nt) {
    const unsigned U = p_.unroll;
    const unsigned step = U * V_;
    const unsigned tk = fill() ? (V_ == 8 ? 1 : 4) : saved_k();
    const StoreKind body_store = nt ? StoreKind::kNonTemporal : StoreKind::kAligned;
    Label loop = a_.newLabel(), rest = a_.newLabel(), rest_loop = a_.newLabel(), tail = a_.newLabel();

    // The shift-realigning loop needs every GPR: its memcpy reads the head and tail at the end
    // instead of saving them first (memcpy's source does not change).
    const bool shift = p_.shift_realign && V_ == 8 && op_ == Operation::kMemcpy;
    const std::string pre = nt ? "nt_" : "";
    if (fill()) {
      comment("store the head; rdx = start of the last " + std::to_string(tk * V_) + " B; align the cursor rdi up to " +
              std::to_string(V_));
      store(pattern(V_), V_, mem(x86::rdi, 0, V_), StoreKind::kUnaligned);  // head
    } else if (shift) {
      comment("rsi = src - dst; rdx = start of the last " + std::to_string(tk * V_) +
              " B; align the cursor rdi up to 8");
      a_.sub(x86::rsi, x86::rdi);  // rsi = src - dst
    } else {
      comment("save the first " + std::to_string(V_) + " B and the last " + std::to_string(tk * V_) +
              " B of src; rsi = src - dst; align the cursor rdi up to " + std::to_string(V_));
      load(head_reg(0), V_, mem(x86::rsi, 0, V_));
      for (unsigned i = 0; i < tk; ++i)
        load(tail_reg(i, false), V_, mem(x86::rsi, x86::rdx, int32_t(i * V_) - int32_t(tk * V_), V_));
      a_.sub(x86::rsi, x86::rdi);  // rsi = src - dst
    }
    a_.lea(x86::rdx, x86::ptr(x86::rdi, x86::rdx, 0, -int32_t(tk * V_)));  // rdx = tail start
    a_.add(x86::rdi, V_);
    a_.and_(x86::rdi, -int32_t(V_));  // cursor, V-aligned
    if (nt && p_.nt_pages.value > 1 && V_ >= 16) page_streams();
    if (shift) shift_realign(rest, nt, pre);
    comment("At this point: dst < rdi <= dst + " + std::to_string(V_) +
            ", [dst, rdi) is covered by the head, [rdx, dst + n) by the tail; the loops cover [rdi, rdx)");
    a_.mov(x86::rcx, x86::rdx);
    a_.sub(x86::rcx, x86::rdi);
    a_.jbe(tail);
    a_.shr(x86::rcx, std::countr_zero(step));  // full iterations
    a_.jz(rest);
    if (pipelined()) {
      pipelined_loop(rest, body_store, pre);
    } else {
      pad_loop_head();
      bind(loop, pre + "loop");
      comment(std::to_string(U) + " x " + std::to_string(V_) + " B per iteration, " +
              (nt ? "non-temporal" : "aligned") + " stores");
      if (!fill() && pf_ != 0)
        for (unsigned off = 0; off < std::max(step, 64u); off += 64)
          prefetch(x86::ptr(x86::rdi, x86::rsi, 0, int32_t(pf_ + off)));
      body(U, false, body_store);
      a_.add(x86::rdi, step);
      a_.sub(x86::rcx, 1);
      a_.jnz(loop);
    }
    bind(rest, pre + "rest");
    comment("At this point: rdx - rdi < " + std::to_string(step) + " B are left before the tail; " +
            std::to_string(V_) + " B per iteration");
    a_.cmp(x86::rdi, x86::rdx);
    a_.jae(tail);
    pad_loop_head();  // every backward-branch target is a loop head
    bind(rest_loop, pre + "rest_loop");
    body(1, false, body_store);
    a_.add(x86::rdi, V_);
    a_.cmp(x86::rdi, x86::rdx);
    a_.jb(rest_loop);
    bind(tail, pre + "tail");
    comment("At this point: [dst, rdx) is done except the head; store the tail, then the head" +
            std::string(nt ? " (after sfence)" : ""));
    if (nt) sfence();
    if (fill()) {
      const unsigned r = pattern(V_);
      for (unsigned i = 0; i < tk; ++i) store(r, V_, mem(x86::rdx, int32_t(i * V_), V_), StoreKind::kUnaligned);
    } else {
      if (shift) {  // memcpy: read the tail and head now, from the unchanged source
        for (unsigned i = 0; i < tk; ++i) load(tail_reg(i, false), V_, mem(x86::rdx, x86::rsi, int32_t(i * V_), V_));
        load(head_reg(0), V_, mem(x86::rax, x86::rsi, 0, V_));
      }
      for (unsigned i = 0; i < tk; ++i)
        store(tail_reg(i, false), V_, mem(x86::rdx, int32_t(i * V_), V_), StoreKind::kUnaligned);
      store(head_reg(0), V_, mem(x86::rax, 0, V_), StoreKind::kUnaligned);
    }
    ret();
  }

  /// The main loop of forward_loop, software-pipelined: rcx >= 1 blocks of U*V bytes at the
  /// cursor rdi (src at rdi + rsi). Register groups A (vectors 0..U-1) and B (4..4+U-1) take turns:
  /// block k+1 is loaded before block k is stored, so every load is older than the stores of
  /// the block before it and never waits on them through a false (4K-alias) dependence. Leaves
  /// rdi after the last block and continues at `rest` (bound right after this code).
  void pipelined_loop(const Label& rest, StoreKind kind, const std::string& pre) {
    const unsigned U = p_.unroll;
    const int32_t block = static_cast<int32_t>(U * V_);
    Label loop = a_.newLabel(), drain_a = a_.newLabel(), drain_b = a_.newLabel();
    auto load_group = [&](unsigned base, int32_t disp) {
      if (pf_ != 0)
        for (int32_t off = 0; off < std::max(block, 64); off += 64)
          prefetch(x86::ptr(x86::rdi, x86::rsi, 0, disp + int32_t(pf_) + off));
      for (unsigned i = 0; i < U; ++i) load(base + i, V_, mem(x86::rdi, x86::rsi, disp + int32_t(i * V_), V_));
    };
    auto store_group = [&](unsigned base) {
      for (unsigned i = 0; i < U; ++i) store(base + i, V_, mem(x86::rdi, int32_t(i * V_), V_), kind);
    };
    comment("software-pipelined: block k+1 is loaded before block k is stored (registers A: 0.." +
            std::to_string(U - 1) + ", B: 4.." + std::to_string(3 + U) + ")");
    load_group(0, 0);  // A = block 0
    a_.sub(x86::rcx, 1);
    a_.jz(drain_a);
    pad_loop_head();
    bind(loop, pre + "loop");
    for (unsigned half = 0; half < 2; ++half) {  // unrolled twice: the groups swap roles
      const unsigned held = half ? 4 : 0, next = half ? 0 : 4;
      comment(std::string("At this point: ") + (half ? "B" : "A") + " holds the block at rdi; rcx >= 1 blocks follow it");
      load_group(next, block);
      store_group(held);
      a_.add(x86::rdi, block);
      a_.sub(x86::rcx, 1);
      if (half == 0) a_.jz(drain_b);
      else a_.jnz(loop);
    }
    bind(drain_a, pre + "drain_a");
    store_group(0);
    a_.add(x86::rdi, block);
    a_.jmp(rest);
    bind(drain_b, pre + "drain_b");
    store_group(4);
    a_.add(x86::rdi, block);
    // Falls through to `rest`, which the caller binds next.
  }

  /// Width 8 memcpy whose src and dst are misaligned to each other: one unaligned word, then
  /// aligned source words A, A+8, ... joined pairwise by shrd into aligned dst words, so no load
  /// or store crosses an 8-byte boundary. The aligned words stay inside [src, src + n): the first
  /// starts after the unaligned word, and the loop stops one word early. Leaves rdi for the
  /// caller's loops, which copy what is left. Uses rcx (cl: the shift), r8-r11.
  void shift_realign(const Label& rest, bool nt, const std::string& pre) {
    Label same = a_.newLabel(), loop = a_.newLabel(), done = a_.newLabel();
    comment("(src - dst) mod 8 != 0: copy aligned 8-byte source words joined pairwise by shrd");
    a_.test(x86::sil, 7);
    a_.jz(same);  // (src - dst) mod 8 == 0: the plain loop is already aligned on both sides
    a_.mov(x86::r11, x86::rdx);
    a_.sub(x86::r11, x86::rdi);
    a_.jbe(same);
    a_.shr(x86::r11, 3);
    a_.sub(x86::r11, 2);  // words to join: all but the unaligned first and the last
    a_.jbe(same);
    a_.mov(x86::r8, x86::ptr(x86::rdi, x86::rsi));  // the first word, unaligned
    a_.mov(x86::ptr(x86::rdi), x86::r8);
    a_.add(x86::rdi, 8);
    a_.mov(x86::rcx, x86::rsi);
    a_.and_(x86::ecx, 7);        // m = (src - dst) mod 8
    a_.sub(x86::rsi, x86::rcx);  // rsi = A - rdi: A, the aligned source word below rdi + delta
    a_.shl(x86::ecx, 3);         // cl = 8m bits
    a_.mov(x86::r8, x86::ptr(x86::rdi, x86::rsi));
    pad_loop_head();
    bind(loop, pre + "shift_loop");
    comment("dst word = (A >> 8m) | (A+8 << (64 - 8m)), cl = 8m");
    a_.mov(x86::r9, x86::ptr(x86::rdi, x86::rsi, 0, 8));
    a_.mov(x86::r10, x86::r8);
    a_.shrd(x86::r10, x86::r9, x86::cl);  // (A >> 8m) | (A+8 << (64 - 8m))
    if (nt) a_.movnti(x86::ptr(x86::rdi), x86::r10);
    else a_.mov(x86::ptr(x86::rdi), x86::r10);
    a_.mov(x86::r8, x86::r9);
    a_.add(x86::rdi, 8);
    a_.sub(x86::r11, 1);
    a_.jnz(loop);
    a_.shr(x86::ecx, 3);
    a_.add(x86::rsi, x86::rcx);  // back to src - dst
    bind(done, pre + "shift_done");
    a_.jmp(rest);
    bind(same, pre + "shift_skip");
  }

  /// Non-temporal copy of whole groups of P = nt_pages pages from the cursor rdi, one cache line
  /// (32 bytes at width 16) of each page per step, so P DRAM pages stream side by side (glibc
  /// large_memcpy_2x / _4x). Leaves rdi after the last whole group; the caller's loops copy the
  /// rest. rcx counts groups, r9 steps within a page.
  void page_streams() {
    const unsigned P = p_.nt_pages;
    const unsigned L = V_ == 16 ? 32 : 64;  // bytes of each page per step
    const unsigned per = L / V_;            // registers per page; P * per <= 8
    Label outer = a_.newLabel(), inner = a_.newLabel(), skip = a_.newLabel();
    comment("groups of " + std::to_string(P) + " pages side by side, " + std::to_string(L) +
            " B of each page per step, non-temporal stores");
    a_.mov(x86::rcx, x86::rdx);
    a_.sub(x86::rcx, x86::rdi);
    a_.jbe(skip);
    a_.shr(x86::rcx, std::countr_zero(P * 4096u));
    a_.jz(skip);
    pad_loop_head();
    bind(outer, "pages_loop");
    a_.mov(x86::r9d, static_cast<int32_t>(4096 / L));
    pad_loop_head();
    bind(inner, "pages_step");
    for (unsigned pg = 0; pg < P; ++pg) {
      const int32_t at = static_cast<int32_t>(pg * 4096);
      if (!fill() && pf_ != 0)
        prefetch(x86::ptr(x86::rdi, x86::rsi, 0, at + static_cast<int32_t>(pf_)));
      if (!fill())
        for (unsigned j = 0; j < per; ++j)
          load(pg * per + j, V_, mem(x86::rdi, x86::rsi, at + static_cast<int32_t>(j * V_), V_));
    }
    for (unsigned pg = 0; pg < P; ++pg)
      for (unsigned j = 0; j < per; ++j)
        store(fill() ? pattern(V_) : pg * per + j, V_,
              mem(x86::rdi, static_cast<int32_t>(pg * 4096 + j * V_), V_), StoreKind::kNonTemporal);
    a_.add(x86::rdi, L);
    a_.sub(x86::r9d, 1);
    a_.jnz(inner);
    a_.add(x86::rdi, static_cast<int32_t>((P - 1) * 4096));  // the other pages of the group are done
    a_.sub(x86::rcx, 1);
    a_.jnz(outer);
    bind(skip, "pages_done");
  }

  /// `count` vectors at the cursor rdi (copy: from rdi + rsi), in register groups; the backward
  /// loop handles the highest group first.
  void body(unsigned count, bool backward, StoreKind kind) {
    const unsigned g = body_group(backward);
    for (unsigned done = 0; done < count; done += g) {
      const unsigned n = std::min(g, count - done);
      const unsigned first = backward ? count - done - n : done;  // vector index of the group
      if (fill()) {
        const unsigned r = pattern(V_);
        for (unsigned i = 0; i < n; ++i) store(r, V_, mem(x86::rdi, int32_t((first + i) * V_), V_), kind);
        continue;
      }
      for (unsigned i = 0; i < n; ++i)
        load(body_reg(i, backward), V_, mem(x86::rdi, x86::rsi, int32_t((first + i) * V_), V_));
      for (unsigned i = 0; i < n; ++i)
        store(body_reg(i, backward), V_, mem(x86::rdi, int32_t((first + i) * V_), V_), kind);
    }
  }

  /// memmove's overlap test, the one place it is emitted (the loop class picks a direction with
  /// it; the rep and non-temporal classes leave overlapping buffers to the loop). Jumps to
  /// `dst_ahead` when 0 <= dst - src < n: dst lies in [src, src + n), so a forward copy would
  /// overwrite source bytes not yet read. Then, when `src_ahead` is a valid label, jumps to it
  /// when 0 <= src - dst < n: src lies in [dst, dst + n). One unsigned compare tests each side
  /// (a negative difference is a huge unsigned one). Falls through when the buffers do not
  /// overlap (without `src_ahead`: when dst is not in [src, src + n)). Writes rcx.
  void jump_if_overlap(const Label& dst_ahead, const Label& src_ahead) {
    a_.mov(x86::rcx, x86::rdi);
    a_.sub(x86::rcx, x86::rsi);
    a_.cmp(x86::rcx, x86::rdx);
    a_.jb(dst_ahead);  // 0 <= dst - src < n
    if (!src_ahead.isValid()) return;
    a_.mov(x86::rcx, x86::rsi);
    a_.sub(x86::rcx, x86::rdi);
    a_.cmp(x86::rcx, x86::rdx);
    a_.jb(src_ahead);  // 0 <= src - dst < n
  }

  /// Jumps to `target` when a forward copy would 4K-alias: 0 < (dst - src) mod 4096 < window,
  /// i.e. (dst - src - 1) mod 4096 < window - 1. At 0 (page-multiple distance, as page-aligned
  /// buffers have) a forward loop's loads run ahead of its stores' offsets and do not wait, so
  /// it stays forward.
  void alias_check(const Label& target, std::uint32_t window) {
    a_.lea(x86::ecx, x86::ptr(x86::rdi, -1));
    a_.sub(x86::ecx, x86::esi);
    a_.and_(x86::ecx, 4095);
    a_.cmp(x86::ecx, static_cast<int32_t>(window - 1));
    a_.jb(target);
  }

  /// The loop class (and the rep / non-temporal classes' fallback, entered at loop_entry_).
  /// Copies pick a direction: memmove goes backward when 0 <= dst - src < n (forward would
  /// overwrite source bytes not yet read) and forward when 0 <= src - dst < n; with an alias
  /// window and a loop that is not software-pipelined, copies that would 4K-alias (and do not
  /// overlap) go backward too (the pipelined forward loop does not wait on them). Fill: forward.
  void loop_class() {
    begin_body();
    bind(loop_entry_, "loop_entry");
    loop_entry_bound_ = true;
    const bool alias = !fill() && p_.alias_window.value != 0 && !pipelined();
    const bool backward = memmove() || alias;
    if (memmove() && !f_.wrong_overlap_order) {
      Label forward = a_.newLabel();
      comment("0 <= dst - src < n: a forward copy would overwrite source bytes not yet read");
      // Overlapping with src ahead must go forward, whatever the alias window says.
      jump_if_overlap(backward_, alias ? forward : Label());
      if (alias) alias_check(backward_, p_.alias_window.value);
      bind(forward, "forward");
    } else if (alias) {
      alias_check(backward_, p_.alias_window.value);
    }
    forward_loop(false);
    if (backward) {
      begin_body();
      bind(backward_, "backward");
      comment(memmove() ? "copy downward: 0 <= dst - src < n (or the copy would 4K-alias)"
                        : "copy downward: the copy would 4K-alias forward");
      backward_loop();
    }
  }

  /// The rep class's 4K-aliasing copies (rep_alias_loop, params.hpp): the forward loop in 32-byte
  /// vectors, with the main loop's prefetch (every helper takes its width from V_, as the
  /// narrower non-temporal loop's do). memmove reaches it only when the buffers do not overlap
  /// (rep_string tests that first), so forward is right.
  void alias_loop() {
    begin_body();
    bind(alias_loop_, "alias_loop");
    comment("4K-aliasing copy of the rep class: a forward loop of 32-byte vectors");
    const unsigned routine_v = V_;
    const unsigned routine_pf = pf_;
    V_ = 32;
    pf_ = p_.prefetch_distance.value;
    forward_loop(false);
    V_ = routine_v;
    pf_ = routine_pf;
  }

  /// The mirror of forward_loop for memmove with src < dst < src + n: save the first
  /// saved_k()*V and the last V bytes, align the end down to V, copy downward, store the saved
  /// bytes last. Every store lands above the source bytes still to be read.
  void backward_loop() {
    const unsigned U = p_.unroll;
    const unsigned step = U * V_;
    const unsigned hk = saved_k();
    Label loop = a_.newLabel(), rest = a_.newLabel(), rest_loop = a_.newLabel(), tail = a_.newLabel();
    comment("save the first " + std::to_string(hk * V_) + " B and the last " + std::to_string(V_) +
            " B of src; rdi = the end of dst aligned down to " + std::to_string(V_));
    for (unsigned i = 0; i < hk; ++i) load(head_reg(i), V_, mem(x86::rsi, int32_t(i * V_), V_));
    load(tail_reg(0, true), V_, mem(x86::rsi, x86::rdx, -int32_t(V_), V_));
    a_.sub(x86::rsi, x86::rdi);  // rsi = src - dst
    a_.add(x86::rdi, x86::rdx);  // end of dst
    a_.mov(x86::rdx, x86::rdi);  // keep the end for the tail store
    a_.and_(x86::rdi, -int32_t(V_));  // cursor: end aligned down, in (end-V, end]
    a_.lea(x86::r9, x86::ptr(x86::rax, int32_t(hk * V_)));  // lower bound: the saved head's end
    comment("At this point: [rdi, end) is covered by the saved tail, [dst, r9) by the saved head; the "
            "loops cover [r9, rdi) from the top down");
    a_.mov(x86::rcx, x86::rdi);
    a_.sub(x86::rcx, x86::r9);
    a_.jbe(tail);
    a_.mov(x86::r9, x86::rcx);
    a_.and_(x86::r9, int32_t(step - 1));  // bytes left for the one-vector loop
    a_.shr(x86::rcx, std::countr_zero(step));
    a_.jz(rest);
    pad_loop_head();
    bind(loop, "back_loop");
    a_.sub(x86::rdi, step);
    if (pf_ != 0)
      for (unsigned off = 0; off < std::max(step, 64u); off += 64)
        prefetch(x86::ptr(x86::rdi, x86::rsi, 0, -int32_t(pf_ + off)));
    body(U, true, StoreKind::kAligned);
    a_.sub(x86::rcx, 1);
    a_.jnz(loop);
    bind(rest, "back_rest");
    a_.test(x86::r9, x86::r9);
    a_.jz(tail);
    pad_loop_head();  // every backward-branch target is a loop head
    bind(rest_loop, "back_rest_loop");
    a_.sub(x86::rdi, V_);
    body(1, true, StoreKind::kAligned);
    a_.sub(x86::r9, V_);
    a_.ja(rest_loop);  // more than V bytes were left
    bind(tail, "back_tail");
    comment("At this point: [dst + " + std::to_string(hk * V_) + " - " + std::to_string(V_ - 1) +
            " at worst, end) is done; store the saved head and tail");
    for (unsigned i = 0; i < hk; ++i) store(head_reg(i), V_, mem(x86::rax, int32_t(i * V_), V_), StoreKind::kUnaligned);
    store(tail_reg(0, true), V_, mem(x86::rdx, -int32_t(V_), V_), StoreKind::kUnaligned);
    ret();
  }

  // ----- rep string ------------------------------------------------------------------------

  /// rep movs / rep stos (element rep_unit bytes), optionally after writing the first 64 bytes
  /// and aligning dst up to 64. memmove takes the loop instead when the buffers overlap; with
  /// rep_aligned_only a misaligned dst takes the loop; with rep_aligned_from the same for the
  /// first band's lengths from there on (rep_aligned_from_in(); class `c`: a split inside it
  /// costs one compare); with rep_aligned_mutual "misaligned" is (dst - src) mod 64 != 0; with
  /// rep_alias_window a copy that would 4K-alias takes the loop class.
  void rep_string(const SizeClass& c) {
    const bool clear = op_ == Operation::kClearPage;
    const std::uint64_t from = rep_aligned_from_in(p_, c);
    if (from != kNever && from <= c.hi) {
      Label any = a_.newLabel();
      const bool split = from > c.lo;
      const bool mutual = rep_test_mutual(p_);  // rep_alignment_passes() (plan.hpp), as code
      const std::string when = mutual ? "(dst - src) mod 64 == 0" : "dst is 64-byte aligned";
      if (split) {
        comment("n >= " + std::to_string(from) + ": rep only when " + when + "; else the loop");
        cmp_n(from);
        a_.jb(any);
      } else {
        comment("rep only when " + when + "; else the loop");
      }
      need_loop_entry_ = true;
      if (mutual) {
        a_.mov(x86::ecx, x86::edi);
        a_.sub(x86::ecx, x86::esi);
        a_.test(x86::cl, 63);
      } else {
        a_.test(x86::dil, 63);
      }
      a_.jnz(loop_entry_);
      if (split) bind(any, "rep_any_dst");
    }
    if (memmove()) {
      need_loop_entry_ = true;
      comment("forward rep only when the buffers do not overlap; else the loop");
      // dst ahead must go backward; src ahead overlaps too: the loop saves head and tail first.
      jump_if_overlap(loop_entry_, loop_entry_);
    }
    if (const std::uint64_t stop = rep_alias_loop_in(p_, c); stop != kNever) {
      // rep_alias_loop: a copy that would 4K-alias takes the 32-byte loop (alias_loop()), below
      // `stop` only where the class reaches it.
      Label keep = a_.newLabel();
      const bool split = stop <= c.hi;
      comment(std::string(split ? "n < " + std::to_string(stop) + " and " : "") +
              "0 < (dst - src) mod 4096 < 64: 4K aliasing, take the 32-byte loop");
      if (split) {
        cmp_n(stop);
        a_.jae(keep);
      }
      need_alias_loop_ = true;
      alias_check(alias_loop_, 64);
      if (split) bind(keep, "rep_no_alias_loop");
    }
    if (!fill() && p_.rep_alias_window.value != 0) {
      need_loop_entry_ = true;  // a copy that would 4K-alias takes the loop class instead
      comment("0 < (dst - src) mod 4096 < " + std::to_string(p_.rep_alias_window.value) + ": 4K aliasing, take the loop");
      alias_check(loop_entry_, p_.rep_alias_window.value);
    }
    if (p_.rep_align_dst && !clear) {
      // n >= 64 here (the ladder guarantees it).
      comment("write [dst, dst + 64), then advance dst by 1..64 bytes to a multiple of 64");
      const unsigned unit = V_ == 8 ? 8 : V_;
      const unsigned group = V_ == 8 ? 4 : 64 / unit;
      for (unsigned g = 0; g < 64; g += group * unit) {
        if (fill()) {
          const unsigned r = pattern(unit);
          for (unsigned i = 0; i < group; ++i)
            store(r, unit, mem(x86::rdi, int32_t(g + i * unit), unit), StoreKind::kUnaligned);
          continue;
        }
        const auto reg = [&](unsigned i) { return V_ == 8 ? kR8 + i : i; };
        for (unsigned i = 0; i < group; ++i) load(reg(i), unit, mem(x86::rsi, int32_t(g + i * unit), unit));
        for (unsigned i = 0; i < group; ++i)
          store(reg(i), unit, mem(x86::rdi, int32_t(g + i * unit), unit), StoreKind::kUnaligned);
      }
      a_.lea(x86::rcx, x86::ptr(x86::rdi, 64));
      a_.and_(x86::rcx, -64);
      a_.sub(x86::rcx, x86::rdi);
      a_.add(x86::rdi, x86::rcx);
      if (!fill()) a_.add(x86::rsi, x86::rcx);
      a_.sub(x86::rdx, x86::rcx);
    }
    const bool q = p_.rep_unit.value == 8;
    if (fill()) {
      a_.mov(x86::r10, x86::rax);  // stos uses rax; keep dst
      if (q) {
        a_.mov(x86::ptr(x86::rdi, x86::rdx, 0, -8), x86::r8);  // the last 8 bytes
        a_.mov(x86::rax, x86::r8);
      } else {
        a_.mov(x86::eax, x86::r8d);
      }
      rep_pieces(c, q);
      a_.mov(x86::rax, x86::r10);
    } else if (q) {
      a_.mov(x86::r9, x86::ptr(x86::rsi, x86::rdx, 0, -8));  // the last 8 bytes of src
      a_.lea(x86::r10, x86::ptr(x86::rdi, x86::rdx, 0, -8));
      rep_pieces(c, q);
      a_.mov(x86::ptr(x86::r10), x86::r9);
    } else {
      rep_pieces(c, q);
    }
    ret();
  }

  /// The rep string instruction over rdx bytes at rdi (and rsi): one instruction, or with
  /// rep_chunk (when class `c` reaches past it) one per piece of rep_chunk bytes while more than
  /// that is left, then one for the rest (1..rep_chunk bytes); with rep_chunk_stop (when `c`
  /// reaches it: rep_chunk_stop_in) a length of at least that many bytes skips the pieces and
  /// goes as one instruction. Each instruction advances rdi and
  /// rsi past its piece, so the pieces follow one another in ascending order as one rep would.
  /// With rep_align_dst, rcx holds the head's advance (rep_string) and is read for the stop.
  /// `q`: rep_unit 8 (movsq / stosq; the caller writes the last 8 bytes, so the rest's count is
  /// rdx / 8 rounded down). Writes rcx and rdx (and r11 for the stop).
  void rep_pieces(const SizeClass& c, bool q) {
    const auto rep = [&] {
      if (fill()) q ? a_.rep().stosq() : a_.rep().stosb();
      else q ? a_.rep().movsq() : a_.rep().movsb();
    };
    if (const std::uint64_t chunk = rep_chunk_in(p_, c); chunk != kNever) {
      // check_plan(): a multiple of 4096 up to 2^30, so an imm32 and a whole number of qwords.
      const int32_t bytes = static_cast<int32_t>(chunk);
      Label piece = a_.newLabel(), rest = a_.newLabel();
      comment("rep_chunk: more than " + std::to_string(chunk) + " B left: one rep per " +
              std::to_string(chunk) + "-byte piece");
      a_.cmp(x86::rdx, bytes);
      a_.jbe(rest);
      if (const std::uint64_t stop = rep_chunk_stop_in(p_, c); stop != kNever) {
        // The stop applies to the length n, not to the count left after rep_align_dst's head
        // (1..64 bytes, still in rcx: rep_string): n = rdx + rcx there. check_plan(): a multiple
        // of 4096 up to 2^30, an imm32.
        comment("rep_chunk_stop: n >= " + std::to_string(stop) + ": one rep for the whole length");
        if (p_.rep_align_dst && op_ != Operation::kClearPage) {
          a_.lea(x86::r11, x86::ptr(x86::rdx, x86::rcx));
          a_.cmp(x86::r11, static_cast<int32_t>(stop));
        } else {
          a_.cmp(x86::rdx, static_cast<int32_t>(stop));
        }
        a_.jae(rest);
      }
      pad_loop_head();  // every backward-branch target is a loop head
      bind(piece, "rep_piece");
      a_.mov(x86::ecx, q ? bytes / 8 : bytes);
      a_.sub(x86::rdx, bytes);
      rep();
      a_.cmp(x86::rdx, bytes);
      a_.ja(piece);
      bind(rest, "rep_rest");
    }
    a_.mov(x86::rcx, x86::rdx);
    if (q) a_.shr(x86::rcx, 3);
    rep();
  }

  const CopyPlan& plan_;
  const CopyParams& p_;
  x86::Emitter& a_;
  unsigned V_;  // the vector width; the non-temporal class may narrow it (nt_width) while it is emitted
  const EmitFaults& f_;
  const Operation op_;
  bool used_wide_ = false;
  unsigned pattern_width_ = 0;
  Label loop_entry_, backward_;
  unsigned pf_ = p_.prefetch_distance.value;  // the loop being emitted prefetches this far ahead (0: not)
  Label short_entry_;         // prefetch_min: the loop without prefetch
  bool short_bound_ = false;  // ... already emitted
  bool need_loop_entry_ = false, loop_entry_bound_ = false;
  Label alias_loop_;              // rep_alias_loop: the 32-byte loop for 4K-aliasing copies
  bool need_alias_loop_ = false;
  std::optional<Error> pad_error_;
  std::vector<EmitNote>* notes_ = nullptr;
  std::size_t base_ = 0;  // assembler offset of the routine's first byte (with notes_)
};

}  // namespace

Status emit(const CopyPlan& plan, x86::Emitter& e, const EmitFaults& faults, std::vector<EmitNote>* notes) {
  COPYSYNTH_TRY(check_plan(plan));
  FirstError handler;
  asmjit::ErrorHandler* previous = e.errorHandler();
  e.setErrorHandler(&handler);
  Status st = RoutineEmitter(plan, e, faults, notes).run();
  e.setErrorHandler(previous);
  if (handler.error != asmjit::kErrorOk)
    return make_error(ErrorCode::kEmitFailed,
                      std::string("asmjit: ") + asmjit::DebugUtils::errorAsString(handler.error) +
                          (handler.text.empty() ? "" : " (" + handler.text + ")") +
                          " — this is a copysynth bug; please report the params: " +
                          to_string(plan.params));
  return st;
}

namespace {
Result<std::vector<std::uint8_t>> assemble_impl(const CopyPlan& plan, std::string* listing, const EmitFaults& faults,
                                                std::vector<EmitNote>* notes) {
  asmjit::Environment env(asmjit::Arch::kX64);
  asmjit::CodeHolder code;
  code.init(env);
  asmjit::StringLogger logger;
  if (listing) code.setLogger(&logger);
  x86::Assembler a(&code);
  COPYSYNTH_TRY(emit(plan, *a.as<x86::Emitter>(), faults, notes));
  code.flatten();
  code.resolveUnresolvedLinks();
  const asmjit::Section* text = code.textSection();
  const auto& buf = text->buffer();
  std::vector<std::uint8_t> bytes(buf.data(), buf.data() + buf.size());
  if (listing) *listing = logger.data();
  return bytes;
}
}  // namespace

Result<std::vector<std::uint8_t>> assemble(const CopyPlan& plan, std::string* listing, const EmitFaults& faults) {
  return assemble_impl(plan, listing, faults, nullptr);
}

Result<AnnotatedCode> assemble_annotated(const CopyPlan& plan) {
  AnnotatedCode out;
  auto bytes = assemble_impl(plan, nullptr, {}, &out.notes);
  if (!bytes) return std::move(bytes).error();
  out.bytes = std::move(*bytes);
  return out;
}

}  // namespace copysynth
