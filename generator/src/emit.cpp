// copysynth — instruction selection for every strategy of the size ladder (see emit.hpp, plan.hpp).
//
// Register use (SysV x86-64, caller-saved only):
//   rax  dst, the return value (set once at entry, never changed)
//   rdi  dst, later the loop cursor          rsi  src, later src - dst
//   rdx  n, later dst + n - 4V (tail start)  rcx  scratch / loop counter / rep count
//   r8-r11  GPR data                         vector registers 0-7 data
#include "copysynth/emit.hpp"

#include <algorithm>
#include <bit>
#include <optional>

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
  RoutineEmitter(const CopyPlan& plan, x86::Emitter& e)
      : plan_(plan), p_(plan.params), a_(e), V_(plan.vec) {}

  Status run() {
    a_.mov(x86::rax, x86::rdi);
    const auto tree = dispatch_tree(plan_);
    COPYSYNTH_TRY(node(tree, 0));
    return pad_error_ ? Status(*pad_error_) : Status();
  }

 private:
  // ----- registers and moves ---------------------------------------------------------------

  /// GPR number i (0..4) of the data set {rcx, r8, r9, r10, r11}, as a register of `bytes`.
  static x86::Gp gpr(unsigned i, unsigned bytes) {
    static const x86::Gp q[] = {x86::rcx, x86::r8, x86::r9, x86::r10, x86::r11};
    const unsigned id = q[i].id();
    switch (bytes) {
      case 1: return x86::gpb(id);
      case 2: return x86::gpw(id);
      case 4: return x86::gpd(id);
      default: return x86::gpq(id);
    }
  }
  static x86::Vec vreg(unsigned i, unsigned bytes) {
    return bytes == 16 ? x86::Vec(x86::xmm(i)) : bytes == 32 ? x86::Vec(x86::ymm(i)) : x86::Vec(x86::zmm(i));
  }
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
  unsigned unit_for(unsigned block) const {
    if (block <= 8) return block;
    return std::min<unsigned>(block, V_ == 8 ? 8 : V_);
  }
  static bool is_wide(unsigned unit) { return unit >= 32; }

  enum class StoreKind { kUnaligned, kAligned, kNonTemporal };

  /// Loads `unit` bytes into data register `r` (GPR index r + first_gpr for unit <= 8).
  void load(unsigned r, unsigned unit, const x86::Mem& src) {
    if (unit <= 8) {
      const x86::Gp g = gpr(r, unit);
      if (unit < 4)
        a_.movzx(gpr(r, 4), src);
      else
        a_.mov(g, src);
      return;
    }
    used_wide_ |= is_wide(unit);
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
      if (kind == StoreKind::kNonTemporal && unit == 8)
        a_.movnti(dst, gpr(r, 8));
      else
        a_.mov(dst, gpr(r, unit));
      return;
    }
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

  void ret() {
    if (used_wide_) a_.vzeroupper();
    a_.ret();
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
    // x86::Emitter is a view of the real emitter (BaseEmitter::as<>), here an Assembler.
    const std::size_t offset =
        static_cast<asmjit::BaseAssembler&>(static_cast<asmjit::BaseEmitter&>(a_)).offset();
    const auto bytes = nop_padding(p_.nop_form, padding_for(offset, align));
    if (!bytes.empty()) a_.embed(bytes.data(), bytes.size());
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

  Status node(const std::vector<DispatchNode>& t, int id) {
    const DispatchNode& nd = t[id];
    if (nd.leaf >= 0) return leaf(plan_.classes[nd.leaf]);
    Label right = a_.newLabel();
    cmp_n(nd.pivot);
    a_.jae(right);
    COPYSYNTH_TRY(node(t, nd.left));
    a_.bind(right);
    return node(t, nd.right);
  }

  Status leaf(const SizeClass& c) {
    used_wide_ = false;
    switch (c.strategy) {
      case Strategy::kNone: ret(); break;
      case Strategy::kBlock: block(c.block); break;
      case Strategy::kHeadTail: head_tail(c.block); break;
      case Strategy::kAlignedLoop: aligned_loop(false); break;
      case Strategy::kNonTemporalLoop: aligned_loop(true); break;
      case Strategy::kRepMovsb: rep_movsb(); break;
    }
    return {};
  }

  // ----- strategies ------------------------------------------------------------------------

  void block(unsigned bytes) {
    load(0, bytes, mem(x86::rsi, 0, bytes));
    store(0, bytes, mem(x86::rdi, 0, bytes), StoreKind::kUnaligned);
    ret();
  }

  /// block <= n <= 2*block: head [0, block) and tail [n-block, n), all loads before stores.
  void head_tail(unsigned bytes) {
    const unsigned unit = unit_for(bytes);
    const unsigned k = bytes / unit;  // registers per end
    for (unsigned i = 0; i < k; ++i) load(i, unit, mem(x86::rsi, int32_t(i * unit), unit));
    for (unsigned i = 0; i < k; ++i)
      load(k + i, unit, mem(x86::rsi, x86::rdx, int32_t(i * unit) - int32_t(bytes), unit));
    for (unsigned i = 0; i < k; ++i)
      store(i, unit, mem(x86::rdi, int32_t(i * unit), unit), StoreKind::kUnaligned);
    for (unsigned i = 0; i < k; ++i)
      store(k + i, unit, mem(x86::rdi, x86::rdx, int32_t(i * unit) - int32_t(bytes), unit),
            StoreKind::kUnaligned);
    ret();
  }

  /// Data register for loop slot `i`: GPR r8..r11 (indices 1..4) at width 8, vectors 0..7.
  unsigned loop_reg(unsigned i) const { return V_ == 8 ? 1 + (i % 4) : i % 8; }
  unsigned loop_group() const { return V_ == 8 ? 4 : 8; }

  /// n >= 4V. Head V bytes, dst aligned up to V, unroll*V per iteration, then V per iteration,
  /// then the last 4V bytes (overlapping). See plan.hpp for the invariants.
  void aligned_loop(bool nt) {
    const unsigned U = p_.unroll;
    const unsigned step = U * V_;
    const StoreKind body_store = nt ? StoreKind::kNonTemporal : StoreKind::kAligned;
    Label loop = a_.newLabel(), rest = a_.newLabel(), rest_loop = a_.newLabel(),
          tail = a_.newLabel();

    // Head: the first V bytes, unaligned.
    load(loop_reg(0), V_, mem(x86::rsi, 0, V_));
    store(loop_reg(0), V_, mem(x86::rdi, 0, V_), StoreKind::kUnaligned);
    // At this point: [dst, dst+V) is done.
    a_.sub(x86::rsi, x86::rdi);                                          // rsi = src - dst
    a_.lea(x86::rdx, x86::ptr(x86::rdi, x86::rdx, 0, -int32_t(4 * V_)));  // rdx = tail start
    a_.add(x86::rdi, V_);
    a_.and_(x86::rdi, -int32_t(V_));                                     // cursor, V-aligned
    // At this point: dst < rdi <= dst+V, so [dst, rdi) is done; the tail [rdx, dst+n) is left
    // for the end; the loops copy [rdi, rdx).
    a_.mov(x86::rcx, x86::rdx);
    a_.sub(x86::rcx, x86::rdi);
    a_.jbe(tail);                                                        // nothing between
    a_.shr(x86::rcx, std::countr_zero(step));                            // full iterations
    a_.jz(rest);
    pad_loop_head();
    a_.bind(loop);
    if (p_.prefetch_distance.value != 0) {
      for (unsigned off = 0; off < std::max(step, 64u); off += 64) {
        x86::Mem pf = x86::ptr(x86::rdi, x86::rsi, 0, int32_t(p_.prefetch_distance.value + off));
        if (p_.prefetch_hint.value == PrefetchHint::kNTA) a_.prefetchnta(pf);
        else a_.prefetcht0(pf);
      }
    }
    for (unsigned g = 0; g < U; g += loop_group()) {
      const unsigned n = std::min(loop_group(), U - g);
      for (unsigned i = 0; i < n; ++i)
        load(loop_reg(i), V_, mem(x86::rdi, x86::rsi, int32_t((g + i) * V_), V_));
      for (unsigned i = 0; i < n; ++i)
        store(loop_reg(i), V_, mem(x86::rdi, int32_t((g + i) * V_), V_), body_store);
    }
    a_.add(x86::rdi, step);
    a_.sub(x86::rcx, 1);
    a_.jnz(loop);
    // At this point: rdx - rdi < unroll*V bytes are left before the tail.
    a_.bind(rest);
    if (U > 1) {
      a_.cmp(x86::rdi, x86::rdx);
      a_.jae(tail);
      pad_loop_head();
      a_.bind(rest_loop);
      load(loop_reg(0), V_, mem(x86::rdi, x86::rsi, 0, V_));
      store(loop_reg(0), V_, mem(x86::rdi, 0, V_), body_store);
      a_.add(x86::rdi, V_);
      a_.cmp(x86::rdi, x86::rdx);
      a_.jb(rest_loop);
    } else {
      // unroll 1: fewer than V bytes are left, one more aligned vector covers them.
      a_.cmp(x86::rdi, x86::rdx);
      a_.jae(tail);
      load(loop_reg(0), V_, mem(x86::rdi, x86::rsi, 0, V_));
      store(loop_reg(0), V_, mem(x86::rdi, 0, V_), body_store);
    }
    // At this point: [dst, rdx) is done; the last 4V bytes [rdx, rdx+4V) remain.
    a_.bind(tail);
    if (nt) a_.sfence();
    for (unsigned i = 0; i < 4; ++i)
      load(loop_reg(i), V_, mem(x86::rdx, x86::rsi, int32_t(i * V_), V_));
    for (unsigned i = 0; i < 4; ++i)
      store(loop_reg(i), V_, mem(x86::rdx, int32_t(i * V_), V_), StoreKind::kUnaligned);
    ret();
  }

  /// `rep movsb`, optionally after copying 64 bytes and aligning dst up to 64 (n >= 64).
  void rep_movsb() {
    if (p_.rep_align_dst) {
      const unsigned unit = V_ == 8 ? 8 : V_;
      const unsigned group = V_ == 8 ? 4 : 64 / unit;
      for (unsigned g = 0; g < 64; g += group * unit) {
        for (unsigned i = 0; i < group; ++i)
          load(loop_reg(i), unit, mem(x86::rsi, int32_t(g + i * unit), unit));
        for (unsigned i = 0; i < group; ++i)
          store(loop_reg(i), unit, mem(x86::rdi, int32_t(g + i * unit), unit), StoreKind::kUnaligned);
      }
      // At this point: [dst, dst+64) is done; skip to the next 64-byte boundary (1..64 bytes).
      a_.lea(x86::rcx, x86::ptr(x86::rdi, 64));
      a_.and_(x86::rcx, -64);
      a_.sub(x86::rcx, x86::rdi);
      a_.add(x86::rdi, x86::rcx);
      a_.add(x86::rsi, x86::rcx);
      a_.sub(x86::rdx, x86::rcx);
    }
    a_.mov(x86::rcx, x86::rdx);
    a_.rep().movsb();
    ret();
  }

  const CopyPlan& plan_;
  const CopyParams& p_;
  x86::Emitter& a_;
  const unsigned V_;
  bool used_wide_ = false;
  std::optional<Error> pad_error_;
};

}  // namespace

Status emit(const CopyPlan& plan, x86::Emitter& e) {
  COPYSYNTH_TRY(check_plan(plan));
  FirstError handler;
  asmjit::ErrorHandler* previous = e.errorHandler();
  e.setErrorHandler(&handler);
  Status st = RoutineEmitter(plan, e).run();
  e.setErrorHandler(previous);
  if (handler.error != asmjit::kErrorOk)
    return make_error(ErrorCode::kEmitFailed,
                      std::string("asmjit: ") + asmjit::DebugUtils::errorAsString(handler.error) +
                          (handler.text.empty() ? "" : " (" + handler.text + ")") +
                          " — this is a copysynth bug; please report the params: " +
                          to_string(plan.params));
  return st;
}

Result<std::vector<std::uint8_t>> assemble(const CopyPlan& plan, std::string* listing) {
  asmjit::Environment env(asmjit::Arch::kX64);
  asmjit::CodeHolder code;
  code.init(env);
  asmjit::StringLogger logger;
  if (listing) code.setLogger(&logger);
  x86::Assembler a(&code);
  COPYSYNTH_TRY(emit(plan, *a.as<x86::Emitter>()));
  code.flatten();
  code.resolveUnresolvedLinks();
  const asmjit::Section* text = code.textSection();
  const auto& buf = text->buffer();
  std::vector<std::uint8_t> bytes(buf.data(), buf.data() + buf.size());
  if (listing) *listing = logger.data();
  return bytes;
}

}  // namespace copysynth
