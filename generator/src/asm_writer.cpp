// copysynth — the `.S` writer (see asm_writer.hpp for what it writes and why the bytes match).
//
// Sources for the encoding rules: the GNU as manual, "i386-Mnemonics" (pseudo-prefixes {disp8},
// {disp32}, {vex3}, {load}, {store}) and "i386-Jumps" (branch relaxation); Intel SDM vol. 2,
// 2.1.5 (ModRM/SIB and displacements), 2.3.5 (VEX 2- and 3-byte forms), 2.7.5 (EVEX compressed
// disp8*N). Zydis 4.x (Debian libzydis-dev) decodes and formats: the decoder API is the one
// verify/src/static_check.cpp uses, the formatter runs in ZYDIS_FORMATTER_STYLE_ATT.
#include "copysynth/asm_writer.hpp"
#include "copysynth/c_format.hpp"

#include <Zydis/Zydis.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <sstream>

#include "copysynth/emit.hpp"
#include "copysynth/version.h"

static_assert(ZYDIS_VERSION_MAJOR(ZYDIS_VERSION) == 4,
              "copysynth's .S writer is written for Zydis 4.x (Debian libzydis-dev 4.0 or 4.1)");

namespace copysynth {
namespace {

std::string hex(std::uint64_t v) {
  char b[32];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

std::string hex_byte(std::uint8_t v) {
  char b[8];
  std::snprintf(b, sizeof b, "0x%02x", v);
  return b;
}

/// Replaces every `{key}` in `text`.
std::string fill_in(std::string text, const std::map<std::string, std::string>& values) {
  for (const auto& [key, value] : values) {
    const std::string k = "{" + key + "}";
    for (std::size_t at = text.find(k); at != std::string::npos; at = text.find(k, at + value.size()))
      text.replace(at, k.size(), value);
  }
  return text;
}

/// Whether `c` may appear in a GNU as symbol name (ASCII letters, digits, '_', '.', '$').
bool symbol_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '$';
}

/// `c` as a reader should see it in an error message.
std::string describe_char(char c) {
  if (c == ' ') return "a space";
  if (c == '\t') return "a tab";
  const auto u = static_cast<unsigned char>(c);
  if (u > 0x20 && u < 0x7f) return std::string("'") + c + "'";
  char b[16];
  std::snprintf(b, sizeof b, "the byte \\%03o", u);
  return b;
}

/// Names the C preprocessor replaces in a linux or glibc flavour file (gcc -E -x
/// assembler-with-cpp on x86-64 GNU/Linux predefines them as 1, or as its own values).
bool preprocessor_name(const std::string& s) {
  // What `gcc -dM -E - </dev/null` and `clang -dM -E - </dev/null` define on x86-64 Linux
  // without a -march (Debian 12's gcc 12 and clang 14), beside the __NAME__ ones.
  for (const char* name : {"linux", "unix", "__linux", "__unix", "__x86_64", "__amd64", "__k8", "_LP64", "__SEG_FS",
                           "__SEG_GS", "__seg_fs", "__seg_gs", "_STDC_PREDEF_H", "__GXX_ABI_VERSION",
                           "__HAVE_SPECULATION_SAFE_VALUE", "__PRAGMA_REDEFINE_EXTNAME", "__NO_MATH_INLINES",
                           "__OBJC_BOOL_IS_BOOL"})
    if (s == name) return true;
  for (const char* prefix : {"__ATOMIC_", "__GCC_", "__GNUC_", "__CLANG_", "__OPENCL_"})
    if (s.rfind(prefix, 0) == 0) return true;
  return s.size() > 4 && s.compare(0, 2, "__") == 0 && s.compare(s.size() - 2, 2, "__") == 0;
}

/// Lines of at most `width` characters from space-separated words.
std::vector<std::string> wrap(const std::string& text, std::size_t width) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string word, line;
  while (in >> word) {
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      lines.push_back(line);
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  if (!line.empty()) lines.push_back(line);
  return lines;
}

/// One decoded instruction or padding run, in code order.
struct Item {
  std::size_t offset = 0, length = 0;
  bool padding = false;
  NopForm form = NopForm::kSingleByte;  // padding
  ZydisDecodedInstruction in{};
  ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT]{};
  bool branch = false;        // a relative jmp/jcc
  std::size_t target = 0;     // branch target offset
};

/// Is `r` rbp or r13, whose ModRM form without displacement means something else?
bool needs_disp_base(ZydisRegister r) { return r == ZYDIS_REGISTER_RBP || r == ZYDIS_REGISTER_R13; }

/// The opcode has a load (reg <- r/m) and a store (r/m <- reg) form: returns +1 for the load form,
/// -1 for the store form, 0 when there is no alternative. Legacy ALU and mov opcodes carry a
/// direction bit (Intel SDM vol. 2, B.1.4.3); the SSE/AVX moves come in pairs.
int direction(const ZydisDecodedInstruction& in) {
  const std::uint8_t op = in.opcode;
  if (in.opcode_map == ZYDIS_OPCODE_MAP_DEFAULT) {
    if ((op < 0x40 && (op & 7) < 4) || (op >= 0x88 && op <= 0x8B)) return (op & 2) ? 1 : -1;
    return 0;
  }
  if (in.opcode_map == ZYDIS_OPCODE_MAP_0F) {
    switch (op) {
      case 0x10: case 0x28: case 0x6F: return 1;
      case 0x11: case 0x29: case 0x7F: return -1;
      default: return 0;
    }
  }
  return 0;
}

class Writer {
 public:
  /// `plan` is null when only the body of `code` is wanted (asm_body()).
  Writer(const CopyPlan* plan, AnnotatedCode code, const AsmFlavor& flavor, const AsmOptions& opt)
      : plan_(plan), fl_(flavor), opt_(opt), code_(std::move(code)) {
    ZydisDecoderInit(&decoder_, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
    // Lengths and offsets read as a person writes them: signed decimal (`cmp $257, %rdx`,
    // `-32(%rsi,%rdx,1)`, `and $-32, %rdi`); an instruction with a larger immediate (the fill
    // byte's 0x0101010101010101) uses the hex formatter.
    for (ZydisFormatter* f : {&dec_, &hex_}) {
      ZydisFormatterInit(f, ZYDIS_FORMATTER_STYLE_ATT);
      ZydisFormatterSetProperty(f, ZYDIS_FORMATTER_PROP_IMM_SIGNEDNESS, ZYDIS_SIGNEDNESS_SIGNED);
      ZydisFormatterSetProperty(f, ZYDIS_FORMATTER_PROP_DISP_SIGNEDNESS, ZYDIS_SIGNEDNESS_SIGNED);
      ZydisFormatterSetProperty(f, ZYDIS_FORMATTER_PROP_IMM_PADDING, ZYDIS_PADDING_DISABLED);
      ZydisFormatterSetProperty(f, ZYDIS_FORMATTER_PROP_DISP_PADDING, ZYDIS_PADDING_DISABLED);
      ZydisFormatterSetProperty(f, ZYDIS_FORMATTER_PROP_DISP_BASE, ZYDIS_NUMERIC_BASE_DEC);
    }
    ZydisFormatterSetProperty(&dec_, ZYDIS_FORMATTER_PROP_IMM_BASE, ZYDIS_NUMERIC_BASE_DEC);
  }

  /// The whole file (plan_ set) or the body alone.
  Result<AsmText> run() {
    if (!opt_.label_prefix.empty() && !std::all_of(opt_.label_prefix.begin(), opt_.label_prefix.end(), symbol_char))
      return make_error(ErrorCode::kInvalidArgument,
                        "label prefix \"" + opt_.label_prefix + "\" must be letters, digits, '_', '.' or '$'");
    if (plan_) COPYSYNTH_TRY(check_asm_symbol(opt_.symbol, fl_));
    COPYSYNTH_TRY(decode());
    name_labels();
    AsmText out;
    out.code_bytes = code_.bytes.size();
    std::ostringstream o;
    if (plan_) {
      header(o);
      o << fill_in(fl_.prologue, placeholders());
    }
    body(o, out);
    if (plan_) o << fill_in(fl_.epilogue, placeholders());
    out.text = o.str();
    return out;
  }

 private:
  Error bug(const std::string& what) const {
    if (!plan_) return make_error(ErrorCode::kInvalidArgument, what);
    return make_error(ErrorCode::kEmitFailed, ".S writer: " + what +
                                                  " — this is a copysynth bug; please report the params: " +
                                                  to_string(plan_->params));
  }

  std::map<std::string, std::string> placeholders() const {
    unsigned align = std::max<unsigned>(16, plan_ ? plan_->params.loop_align.value : 16);
    unsigned log2 = 0;
    while ((1u << log2) < align) ++log2;
    return {{"name", opt_.symbol},
            {"p2align", std::to_string(log2)},
            {"align", std::to_string(align)},
            {"entry_skip", std::to_string(align - fl_.entry_bytes)}};
  }

  // ----- decoding ---------------------------------------------------------------------------

  Status decode() {
    std::map<std::size_t, const EmitNote*> padding;
    for (const auto& n : code_.notes)
      if (n.kind == EmitNote::Kind::kPadding) padding[n.offset] = &n;
    const auto& b = code_.bytes;
    for (std::size_t off = 0; off < b.size();) {
      Item it;
      it.offset = off;
      if (auto p = padding.find(off); p != padding.end()) {
        it.padding = true;
        it.length = p->second->length;
        it.form = p->second->form;
        if (off + it.length > b.size()) return bug("padding runs past the end of the code");
      } else {
        if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&decoder_, b.data() + off, b.size() - off, &it.in, it.ops)))
          return bug("the bytes at +" + hex(off) + " do not decode");
        it.length = it.in.length;
        if ((it.in.meta.category == ZYDIS_CATEGORY_COND_BR || it.in.meta.category == ZYDIS_CATEGORY_UNCOND_BR) &&
            it.in.operand_count_visible == 1 && it.ops[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE &&
            it.ops[0].imm.is_relative) {
          ZyanU64 abs = 0;
          if (!ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&it.in, &it.ops[0], off, &abs)) || abs > b.size())
            return bug("the branch at +" + hex(off) + " leaves the code");
          it.branch = true;
          it.target = static_cast<std::size_t>(abs);
          targets_.insert(it.target);
        }
      }
      starts_.insert(off);
      off += it.length;
      items_.push_back(std::move(it));
    }
    for (std::size_t t : targets_)
      if (t != b.size() && !starts_.count(t)) return bug("a branch lands inside an instruction at +" + hex(t));
    return {};
  }

  /// One name per labelled offset: emit()'s first name there, made unique with _2, _3, ...
  /// Names hold letters, digits and '_' only (anything else becomes '_'), so a label prefix
  /// ending in '.' keeps two files' labels apart: the part after the last '.' is the name.
  void name_labels() {
    std::map<std::string, int> used;
    auto unique = [&](std::string base) {
      for (char& c : base)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
      const int n = ++used[base];
      return n == 1 ? base : base + "_" + std::to_string(n);
    };
    for (const auto& n : code_.notes)
      if (n.kind == EmitNote::Kind::kLabel && !label_.count(n.offset)) label_[n.offset] = unique(n.text);
    for (std::size_t t : targets_)
      if (!label_.count(t)) {
        char name[32];
        std::snprintf(name, sizeof name, "x%zx", t);
        label_[t] = unique(name);
      }
  }

  std::string label_ref(std::size_t offset) const {
    return fill_in(fl_.label, {{"label", opt_.label_prefix + label_.at(offset)}});
  }

  // ----- encoding choices -------------------------------------------------------------------

  /// Pseudo-prefixes that make GNU as pick the encoding these bytes use (asm_writer.hpp).
  std::string pins(const Item& it) const {
    const ZydisDecodedInstruction& in = it.in;
    std::string p;
    if (it.branch) {
      if (in.raw.imm[0].size == 32) {
        // as relaxes a branch to rel8 when the target is in range. Would it be? The short form
        // is 3 (jmp) or 4 (jcc) bytes shorter; every other rel32 branch inside the span might
        // shrink as well, so allow for that (a stray {disp32} costs nothing).
        const long delta = static_cast<long>(in.length) - 2;
        const long rel = static_cast<long>(in.raw.imm[0].value.s);
        const long short_rel = rel >= 0 ? rel : rel + delta;
        const std::size_t lo = std::min(it.offset, it.target), hi = std::max(it.offset + it.length, it.target);
        long slack = 0;
        for (const Item& o : items_)
          if (&o != &it && o.branch && o.in.raw.imm[0].size == 32 && o.offset >= lo && o.offset < hi) slack += 4;
        if (short_rel >= -128 - slack && short_rel <= 127 + slack) p += "{disp32} ";
      }
      return p;
    }
    // Memory displacements: as takes the shortest (no displacement for 0, then disp8, disp8*N for
    // EVEX), which asmjit takes too, except where the bytes say otherwise.
    for (unsigned i = 0; i < in.operand_count_visible; ++i) {
      const ZydisDecodedOperand& op = it.ops[i];
      if (op.type != ZYDIS_OPERAND_TYPE_MEMORY) continue;
      const long d = static_cast<long>(op.mem.disp.value);
      if (in.raw.disp.size == 32) {
        const bool evex = in.encoding == ZYDIS_INSTRUCTION_ENCODING_EVEX;
        if (evex ? (d >= -128L * 64 && d <= 127L * 64) : (d >= -128 && d <= 127)) p += "{disp32} ";
      } else if (in.raw.disp.size == 8 && d == 0 && !needs_disp_base(op.mem.base)) {
        p += "{disp8} ";
      }
      break;
    }
    if (in.encoding == ZYDIS_INSTRUCTION_ENCODING_VEX && in.raw.vex.size == 3 && in.raw.vex.X == 1 &&
        in.raw.vex.B == 1 && in.raw.vex.W == 0 && in.raw.vex.m_mmmm == 1)
      p += "{vex3} ";
    // Register-to-register forms: as takes the store form of the legacy ALU and mov opcodes
    // unless told otherwise; for the SSE/AVX moves the form is always said.
    if ((in.attributes & ZYDIS_ATTRIB_HAS_MODRM) && in.raw.modrm.mod == 3) {
      const int dir = direction(in);
      const bool legacy_alu = in.opcode_map == ZYDIS_OPCODE_MAP_DEFAULT;
      if (dir > 0) p += "{load} ";
      else if (dir < 0 && !legacy_alu) p += "{store} ";
    }
    return p;
  }

  /// GNU as spelling of a Zydis branch mnemonic (readable synonyms where as has them).
  static std::string branch_mnemonic(ZydisMnemonic m) {
    switch (m) {
      case ZYDIS_MNEMONIC_JNB: return "jae";
      case ZYDIS_MNEMONIC_JNBE: return "ja";
      case ZYDIS_MNEMONIC_JNL: return "jge";
      case ZYDIS_MNEMONIC_JNLE: return "jg";
      default: return ZydisMnemonicGetString(m);
    }
  }

  std::string instruction_text(const Item& it) const {
    if (it.branch) return branch_mnemonic(it.in.mnemonic) + "\t" + label_ref(it.target);
    if (it.in.mnemonic == ZYDIS_MNEMONIC_RET && it.in.operand_count_visible == 0) return fl_.ret;
    bool large = false;
    for (unsigned i = 0; i < it.in.operand_count_visible; ++i)
      if (it.ops[i].type == ZYDIS_OPERAND_TYPE_IMMEDIATE) {
        const std::int64_t v = it.ops[i].imm.is_signed ? it.ops[i].imm.value.s : static_cast<std::int64_t>(it.ops[i].imm.value.u);
        large |= v > 65535 || v < -65536;
      }
    char buf[256];
    if (!ZYAN_SUCCESS(ZydisFormatterFormatInstruction(large ? &hex_ : &dec_, &it.in, it.ops, it.in.operand_count_visible,
                                                      buf, sizeof buf, ZYDIS_RUNTIME_ADDRESS_NONE, nullptr)))
      return {};
    std::string s = buf;
    // Zydis's AT&T style appends an operand-size suffix to some vector mnemonics with a memory
    // operand (`vmovdqu64z`), which GNU as does not know; the register operand gives the size.
    if (it.in.encoding == ZYDIS_INSTRUCTION_ENCODING_VEX || it.in.encoding == ZYDIS_INSTRUCTION_ENCODING_EVEX) {
      const std::string plain = ZydisMnemonicGetString(it.in.mnemonic);
      const std::size_t end = std::min(s.find(' '), s.size());
      if (end > plain.size() && s.compare(0, plain.size(), plain) == 0) s.erase(plain.size(), end - plain.size());
    }
    // movzx/movsx with a memory source: the conventional AT&T names with both sizes
    // (`movzbl (%rsi), %ecx`) rather than Zydis's `movzxb`.
    if ((it.in.mnemonic == ZYDIS_MNEMONIC_MOVZX || it.in.mnemonic == ZYDIS_MNEMONIC_MOVSX) &&
        it.ops[1].type == ZYDIS_OPERAND_TYPE_MEMORY) {
      const auto suffix = [](unsigned bits) { return bits == 8 ? 'b' : bits == 16 ? 'w' : bits == 32 ? 'l' : 'q'; };
      const std::string name = std::string(it.in.mnemonic == ZYDIS_MNEMONIC_MOVZX ? "movz" : "movs") +
                               suffix(it.ops[1].size) + suffix(it.ops[0].size);
      s = name + s.substr(std::min(s.find(' '), s.size()));
    }
    // Mnemonic and operands separated by a tab, as hand-written GNU as files are (after the
    // prefixes: `rep movsb`, `rep stosq`).
    std::size_t at = 0;
    for (const char* prefix : {"rep ", "repe ", "repne ", "lock "})
      if (s.compare(0, std::strlen(prefix), prefix) == 0) at = std::strlen(prefix);
    if (const auto sp = s.find(' ', at); sp != std::string::npos) s[sp] = '\t';
    return s;
  }

  // ----- padding ----------------------------------------------------------------------------

  std::string padding_text(const Item& it) const {
    const std::uint8_t* b = code_.bytes.data() + it.offset;
    std::string what;
    switch (it.form) {
      case NopForm::kSingleByte: what = std::to_string(it.length) + " x nop (0x90)"; break;
      case NopForm::kLongNop: what = "long NOPs (0f 1f /0)"; break;
      case NopForm::kPrefixedLongNop: what = "0x66-prefixed long NOPs"; break;
      case NopForm::kJumpOver: what = it.length == 1 ? "nop" : "jmp over int3"; break;
    }
    std::string o = "\t/* " + std::to_string(it.length) + " bytes of padding: the loop head below at a multiple of " +
                    std::to_string(plan_ ? plan_->params.loop_align.value : (it.offset + it.length) & -(it.offset + it.length)) +
                    "; " + what + " */\n";
    if (it.form == NopForm::kLongNop && !fl_.nop_macro.empty()) {
      // The same pieces nop_padding() lays down: as many 8-byte NOPs as fit, then one shorter.
      for (std::size_t left = it.length; left > 0;) {
        const std::size_t n = std::min<std::size_t>(left, 8);
        o += "\t" + fill_in(fl_.nop_macro, {{"n", std::to_string(n)}}) + "\n";
        left -= n;
      }
      return o;
    }
    for (std::size_t i = 0; i < it.length; i += 16) {
      o += "\t.byte\t";
      for (std::size_t j = i; j < std::min(it.length, i + 16); ++j) {
        if (j > i) o += ',';
        o += hex_byte(b[j]);
      }
      o += "\n";
    }
    return o;
  }

  // ----- the file ---------------------------------------------------------------------------

  std::string signature() const {
    const std::string& s = opt_.symbol;
    switch (plan_->params.operation.value) {
      case Operation::kMemcpy:
        return "void *" + s + "(void *dst, const void *src, size_t n): copies n bytes, the buffers do not overlap";
      case Operation::kMemmove:
        return "void *" + s + "(void *dst, const void *src, size_t n): copies n bytes, the buffers may overlap";
      case Operation::kFill:
        return "void *" + s + "(void *dst, int c, size_t n): sets n bytes to (unsigned char)c";
      case Operation::kClearPage:
        return "void " + s + "(void *page): zeroes the 4096 bytes at page (4096-aligned)";
    }
    return s;
  }

  /// ISA extensions the instructions use, as Zydis names them (AVX-512 by isa_set: family and
  /// vector length or form, e.g. AVX512BW_256, AVX512BW_KOP for kmovq).
  std::string extensions() const {
    std::set<std::string> used;
    for (const Item& it : items_) {
      if (it.padding) continue;
      const std::string ext = ZydisISAExtGetString(it.in.meta.isa_ext);
      if (ext == "BASE" || ext == "LONGMODE") continue;
      const bool avx512 = it.in.encoding == ZYDIS_INSTRUCTION_ENCODING_EVEX || ext.rfind("AVX512", 0) == 0;
      used.insert(avx512 ? ZydisISASetGetString(it.in.meta.isa_set) : ext);
    }
    std::string s;
    for (const auto& e : used) s += (s.empty() ? "" : ", ") + e;
    return s.empty() ? "none beyond the x86-64 baseline" : s;
  }

  void header(std::ostringstream& o) const {
    const auto& p = plan_->params;
    std::vector<std::string> lines;
    lines.push_back(opt_.symbol + ": " + std::string(name_of(p.operation.value)) +
                    " for x86-64, AT&T syntax for GNU as; written by copysynth " + COPYSYNTH_VERSION + ".");
    lines.push_back("");
    for (const auto& l : wrap("This is the code copysynth's JIT emits for the plan below, disassembled: assembled, the "
                              "file gives exactly those " + std::to_string(code_.bytes.size()) +
                              " bytes. Regenerate it with the command at the end rather than edit it by hand.",
                              92))
      lines.push_back(l);
    lines.push_back("");
    lines.push_back(signature() + ".");
    for (const auto& l : wrap("SysV x86-64: rdi = dst, rsi = src (or the byte), rdx = n (all 64 bits); returns dst in "
                              "rax. Writes only rax, rcx, rdx, rsi, rdi, r8-r11, mask registers k1-k2 and vector "
                              "registers (all caller-saved); leaves "
                              "the direction flag alone; vzeroupper before every ret after the use of a YMM/ZMM register "
                              "0-15 (registers 16-31 leave no upper state to clear), sfence after non-temporal stores.",
                              92))
      lines.push_back(l);
    lines.push_back("ISA extensions used: " + extensions() + ".");
    lines.push_back("");
    lines.push_back("Algorithm, the size ladder (n in bytes; a search tree over the class bounds, weighted by");
    lines.push_back("how often each class is called, picks the class; the likelier side falls through):");
    std::istringstream ladder(to_string(*plan_));
    for (std::string l; std::getline(ladder, l);) lines.push_back(l);
    lines.push_back("");
    lines.push_back("Parameters (copysynth CopyParams):");
    for (const auto& l : wrap(to_string(p), 90)) lines.push_back("  " + l);
    if (!fl_.notes.empty()) {
      lines.push_back("");
      for (const auto& l : fl_.notes) lines.push_back(fill_in(l, placeholders()));
    }
    if (!opt_.header.empty()) {
      lines.push_back("");
      for (const auto& l : opt_.header) lines.push_back(l);
    }
    o << "/*";
    for (std::size_t i = 0; i < lines.size(); ++i) {
      const std::string l = comment_safe(lines[i]);
      o << (i == 0 ? " " : " *") << (i == 0 || l.empty() ? "" : " ") << l << "\n";
    }
    o << " */\n\n";
  }

  void body(std::ostringstream& o, AsmText& out) const {
    std::size_t note = 0;
    const auto& notes = code_.notes;
    std::set<std::size_t> labelled;
    for (const Item& it : items_) {
      // Comments and labels recorded at this offset, in emission order (padding notes are the
      // items themselves). A label recorded before the padding run would still sit at the
      // padding's end: emit() binds after padding, so offsets and order agree.
      for (; note < notes.size() && notes[note].offset <= it.offset; ++note) {
        const EmitNote& n = notes[note];
        if (n.kind == EmitNote::Kind::kComment) {
          o << "\t/* " << comment_safe(n.text) << " */\n";
        } else if (n.kind == EmitNote::Kind::kLabel && !labelled.count(n.offset)) {
          labelled.insert(n.offset);
          o << label_ref(n.offset) << ":\n";
        }
      }
      if (targets_.count(it.offset) && !labelled.count(it.offset)) {
        labelled.insert(it.offset);
        o << label_ref(it.offset) << ":\n";
      }
      if (it.padding) {
        o << padding_text(it);
        ++out.padding_runs;
        continue;
      }
      const std::string pin = pins(it);
      o << "\t" << pin << instruction_text(it) << "\n";
      ++out.instructions;
      out.pinned += !pin.empty();
    }
    // Labels at the very end of the code (a note's, or a branch target's).
    for (; note < notes.size(); ++note)
      if (notes[note].kind == EmitNote::Kind::kLabel && !labelled.count(notes[note].offset)) {
        labelled.insert(notes[note].offset);
        o << label_ref(notes[note].offset) << ":\n";
      }
    if (targets_.count(code_.bytes.size()) && !labelled.count(code_.bytes.size()))
      o << label_ref(code_.bytes.size()) << ":\n";
  }

  const CopyPlan* plan_;
  const AsmFlavor& fl_;
  const AsmOptions& opt_;
  AnnotatedCode code_;
  ZydisDecoder decoder_;
  ZydisFormatter dec_, hex_;
  std::vector<Item> items_;
  std::set<std::size_t> targets_, starts_;
  std::map<std::size_t, std::string> label_;
};

}  // namespace

Result<AsmText> write_asm(const CopyPlan& plan, const AsmFlavor& flavor, const AsmOptions& opt) {
  auto code = assemble_annotated(plan);
  if (!code) return std::move(code).error();
  return Writer(&plan, std::move(*code), flavor, opt).run();
}

Status check_asm_symbol(const std::string& symbol, const AsmFlavor& flavor) {
  const auto refuse = [&](const std::string& why) -> Status {
    return make_error(ErrorCode::kInvalidArgument,
                      "\"" + symbol + "\" is not a symbol GNU as takes" +
                          (flavor.name.empty() ? std::string() : " in a " + flavor.name + " flavour file") + ": " + why +
                          "; use letters, digits, '_', '.' and '$', starting with a letter, '_' or '.' "
                          "(e.g. --name memcpy_avx2)");
  };
  if (symbol.empty()) return refuse("it is empty");
  for (char c : symbol)
    if (!symbol_char(c)) return refuse("it contains " + describe_char(c));
  if (std::isdigit(static_cast<unsigned char>(symbol[0]))) return refuse("it starts with a digit, which as reads as a number");
  if (symbol[0] == '$') return refuse("it starts with '$', which AT&T syntax reads as an immediate");
  if (symbol == ".") return refuse("\".\" is as's location counter");
  if (symbol.compare(0, 2, ".L") == 0)
    return refuse("names starting with .L are as's local labels (this file's own labels among them)");
  // The linux and glibc frames include headers: the file goes through the C preprocessor first,
  // which would replace a predefined name or the flavour's own object-like macro (RET). A plain
  // file may go through it too: `gcc -c FILE.S` runs it (`as FILE.S` does not).
  // The preprocessor reads '.' and '$' as tokens of their own (in assembler-with-cpp, '$' is no
  // identifier character): each name between them is checked ("a.unix" became "a. 1").
  // The headers the linux and glibc flavours include also define object-like macros in capitals
  // (the kernel's RET, ASM_NOP1, BYTES_NOP8, SYM_L_GLOBAL; glibc's LP_SIZE, R8_LP), more than a
  // list could keep up with: a name of capitals, digits and '_' alone is refused for them.
  const bool includes = flavor.prologue.find("#include") != std::string::npos;
  auto capitals = [](const std::string& n) {
    return std::any_of(n.begin(), n.end(), [](char c) { return std::isupper(static_cast<unsigned char>(c)); }) &&
           std::all_of(n.begin(), n.end(), [](char c) {
             return std::isupper(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '_';
           });
  };
  for (std::size_t at = 0; at < symbol.size();) {
    const std::size_t end = std::min(symbol.find_first_of(".$", at), symbol.size());
    const std::string part = symbol.substr(at, end - at);
    const std::string in_it = part == symbol ? "" : " in it";
    at = end + 1;
    if (part.empty() || std::isdigit(static_cast<unsigned char>(part[0]))) continue;  // a number: never a macro
    if (preprocessor_name(part))
      return refuse((includes ? "the C preprocessor this flavour runs first replaces the name " + part
                              : "`gcc -c` runs a .S file through the C preprocessor first, which replaces the name " +
                                    part) +
                    in_it);
    if (includes && flavor.ret != "ret" && part == flavor.ret)
      return refuse(part + " is this flavour's macro for ret" + in_it);
    if (includes && capitals(part))
      return refuse("a name in capitals may be a macro of the headers this flavour includes (such as the kernel's "
                    "ASM_NOP1 or glibc's LP_SIZE): " + part + in_it);
  }
  return {};
}

Result<AsmText> asm_body(const AnnotatedCode& code, const AsmFlavor& flavor, const std::string& label_prefix) {
  AsmOptions opt;
  opt.label_prefix = label_prefix;
  return Writer(nullptr, code, flavor, opt).run();
}

std::string comment_safe(std::string s) {
  // Control characters (newline and CR included; tab is kept) in caret notation: GCC's
  // preprocessor takes a lone CR for a newline, so `*\` CR `/` ended the comment and let a crafted
  // wisdom file's CPU brand put its own instructions into the file, and a newline in a brand wrote
  // header lines of its own (a second "Command:"): hostile-user and review findings. With no
  // line break left in the text, a backslash (or ??/) can join only the writer's own next line,
  // which starts " *", so no `*/` forms.
  // The C1 controls (U+0080..U+009F) and the bidirectional overrides and isolates (U+202A..U+202E,
  // U+2066..U+2069: GCC's -Wbidi-chars, "Trojan source") in UTF-8 are written <U+XXXX>.
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto u = static_cast<unsigned char>(s[i]);
    const auto at = [&](std::size_t k) { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u; };
    if ((u < 0x20 && s[i] != '\t') || u == 0x7f) {
      out += '^';
      out += static_cast<char>(u ^ 0x40);
    } else if (u == 0xc2 && at(1) >= 0x80 && at(1) <= 0x9f) {
      out += format_c("<U+%04X>", at(1));
      i += 1;
    } else if (u == 0xe2 && ((at(1) == 0x80 && at(2) >= 0xaa && at(2) <= 0xae) ||
                             (at(1) == 0x81 && at(2) >= 0xa6 && at(2) <= 0xa9))) {
      out += format_c("<U+%04X>", 0x2000u | ((at(1) & 0x3fu) << 6) | (at(2) & 0x3fu));
      i += 2;
    } else {
      out += s[i];
    }
  }
  s = std::move(out);
  // `*/` would end the comment, `/*` makes clang's -Wcomment warn (an error under -Werror).
  for (std::size_t at = s.find("*/"); at != std::string::npos; at = s.find("*/", at)) s.replace(at, 2, "* /");
  for (std::size_t at = s.find("/*"); at != std::string::npos; at = s.find("/*", at)) s.replace(at, 2, "/ *");
  return s;
}

}  // namespace copysynth
