//===- AsmEvents.cpp - PM events hidden in inline assembly ----------------===//
//
// See AsmEvents.h.  The recogniser works on text: split the asm string into
// instructions on ';' and newlines, glue prefixes (".byte 0x66", "lock") to
// the instruction they prefix, then match mnemonics.  Anything it cannot
// resolve is reported, never guessed.
//
//===----------------------------------------------------------------------===//
#include "AsmEvents.h"
#include "Compat.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/IR/DataLayout.h"
#include "llvm/IR/InlineAsm.h"
#include "llvm/IR/Module.h"

#include <cctype>

using namespace llvm;

namespace crashcheck {

namespace {

// Runtime numbering (instrument/runtime/rt_internal.h).
enum { CLFLUSH = 1, CLFLUSHOPT = 2, CLWB = 3 };
enum { SFENCE = 1, MFENCE = 2 };

struct Operand {
  int Arg;         // call argument, or -1
  bool Indirect;   // memory constraint: the argument is the operand's address
  std::string Code; // first constraint code, e.g. "m", "r", "{ax}"
};

std::string trim(StringRef S) { return S.trim(" \t\r").str(); }

// Splits "a, b(c, d), e" at top-level commas.
std::vector<std::string> splitOperands(StringRef S) {
  std::vector<std::string> Out;
  int Depth = 0;
  std::string Cur;
  for (char C : S) {
    if (C == '(')
      Depth++;
    if (C == ')')
      Depth--;
    if (C == ',' && Depth == 0) {
      Out.push_back(trim(Cur));
      Cur.clear();
      continue;
    }
    Cur += C;
  }
  if (!trim(Cur).empty())
    Out.push_back(trim(Cur));
  return Out;
}

// Parses "$N", "${N}", "${N:mod}" at the start of S; returns N or -1.
int operandNumber(StringRef S) {
  if (!S.consume_front("$"))
    return -1;
  bool Braced = S.consume_front("{");
  unsigned N = 0;
  size_t Digits = 0;
  while (Digits < S.size() && isdigit((unsigned char)S[Digits]))
    N = N * 10 + (S[Digits++] - '0');
  if (Digits == 0)
    return -1;
  if (Braced && S.find('}') == StringRef::npos)
    return -1;
  return (int)N;
}

// Maps a register spelled in the asm text to the constraint code LLVM uses.
std::string registerConstraint(StringRef Reg) {
  Reg.consume_front("%");
  static const char *const Names[][2] = {
      {"rax", "{ax}"}, {"eax", "{ax}"}, {"rbx", "{bx}"}, {"ebx", "{bx}"},
      {"rcx", "{cx}"}, {"ecx", "{cx}"}, {"rdx", "{dx}"}, {"edx", "{dx}"},
      {"rsi", "{si}"}, {"esi", "{si}"}, {"rdi", "{di}"}, {"edi", "{di}"}};
  for (auto &P : Names)
    if (Reg == P[0])
      return P[1];
  return "";
}

class Parser {
public:
  Parser(const CallBase &CB, std::vector<std::string> &Unknown)
      : CB(CB), Unknown(Unknown) {
    const InlineAsm *IA = cast<InlineAsm>(CB.getCalledOperand());
    int ArgNo = 0;
    for (const InlineAsm::ConstraintInfo &C : IA->ParseConstraints()) {
      if (C.Type == InlineAsm::isClobber || isLabelConstraint(C))
        continue;
      Operand Op{-1, C.isIndirect, C.Codes.empty() ? "" : C.Codes[0]};
      if (C.Type == InlineAsm::isInput || C.isIndirect)
        Op.Arg = ArgNo++;
      Ops.push_back(Op);
    }
  }

  std::vector<AsmEvent> run() {
    const InlineAsm *IA = cast<InlineAsm>(CB.getCalledOperand());
    std::string Text = StringRef(IA->getAsmString()).lower();
    std::vector<std::string> Insns;
    std::string Cur;
    for (char C : Text) {
      if (C == ';' || C == '\n') {
        if (!trim(Cur).empty())
          Insns.push_back(trim(Cur));
        Cur.clear();
      } else {
        Cur += C;
      }
    }
    if (!trim(Cur).empty())
      Insns.push_back(trim(Cur));

    std::vector<AsmEvent> Events;
    std::string Prefix; // "66" for a pending .byte 0x66, "lock" for lock
    for (const std::string &I : Insns) {
      StringRef S(I);
      if (startsWith(S, ".byte")) {
        std::vector<unsigned> Bytes;
        if (!parseBytes(S.drop_front(5), Bytes)) {
          Unknown.push_back(I);
          Prefix.clear();
          continue;
        }
        if (Bytes.size() == 1 && Bytes[0] == 0x66) {
          Prefix = "66";
          continue;
        }
        encoded(Bytes, Prefix == "66", I, Events);
        Prefix.clear();
        continue;
      }
      if (S == "lock" || S == "lock;") {
        Prefix = "lock";
        continue;
      }
      std::string Pre = Prefix;
      Prefix.clear();
      if (S.consume_front("lock ") || S.consume_front("lock\t"))
        Pre = "lock";
      mnemonic(trim(S), Pre, I, Events);
    }
    return Events;
  }

private:
  bool parseBytes(StringRef S, std::vector<unsigned> &Out) {
    for (const std::string &Tok : splitOperands(S)) {
      unsigned V;
      if (StringRef(Tok).getAsInteger(0, V) || V > 255)
        return false;
      Out.push_back(V);
    }
    return !Out.empty();
  }

  // Hand-encoded 0F AE group: clflush/clflushopt/clwb through a register,
  // or sfence/mfence.
  void encoded(const std::vector<unsigned> &B, bool P66, const std::string &I,
               std::vector<AsmEvent> &Events) {
    size_t At = 0;
    if (At < B.size() && B[At] == 0x66) {
      P66 = true;
      At++;
    }
    if (B.size() - At != 3 || B[At] != 0x0f || B[At + 1] != 0xae) {
      Unknown.push_back(I);
      return;
    }
    unsigned ModRM = B[At + 2];
    if (ModRM == 0xf8 && !P66) {
      Events.push_back({AsmEvent::Fence, SFENCE});
      return;
    }
    if (ModRM == 0xf0 && !P66) {
      Events.push_back({AsmEvent::Fence, MFENCE});
      return;
    }
    if (ModRM == 0xe8)
      return; // lfence: orders loads, no persistency effect
    unsigned Mod = ModRM >> 6, Reg = (ModRM >> 3) & 7, Rm = ModRM & 7;
    static const char *const Regs[8] = {"rax", "rcx", "rdx", "rbx", "", "", "rsi", "rdi"};
    unsigned Sub = Reg == 7 ? (P66 ? CLFLUSHOPT : CLFLUSH) : (Reg == 6 && P66 ? CLWB : 0);
    if (Mod != 0 || Sub == 0 || !*Regs[Rm]) {
      Unknown.push_back(I);
      return;
    }
    AsmEvent E{AsmEvent::Flush, Sub};
    E.Arg = argForRegister(Regs[Rm]);
    if (E.Arg < 0) {
      Unknown.push_back(I);
      return;
    }
    Events.push_back(E);
  }

  int argForRegister(StringRef Reg) {
    std::string Code = registerConstraint(Reg);
    for (const Operand &Op : Ops)
      if (Op.Arg >= 0 && Op.Code == Code && !Op.Indirect)
        return Op.Arg;
    return -1;
  }

  // Resolves a memory operand: $N (memory constraint), disp($N), (%reg).
  bool address(StringRef S, AsmEvent &E) {
    S = S.trim();
    int N = operandNumber(S);
    if (N >= 0 && S.find('(') == StringRef::npos) {
      if (N >= (int)Ops.size() || !Ops[N].Indirect || Ops[N].Arg < 0)
        return false;
      E.Arg = Ops[N].Arg;
      E.ArgIsPointee = true;
      return true;
    }
    size_t Open = S.find('('), Close = S.rfind(')');
    if (Open == StringRef::npos || Close == StringRef::npos || Close < Open)
      return false;
    StringRef Disp = S.take_front(Open).trim();
    StringRef Inside = S.slice(Open + 1, Close).trim();
    if (Inside.contains(','))
      return false; // base + index*scale: not seen in PM code, not guessed
    int64_t D = 0;
    if (!Disp.empty() && Disp.getAsInteger(0, D))
      return false;
    E.Disp = D;
    int M = operandNumber(Inside);
    if (M >= 0) {
      if (M >= (int)Ops.size() || Ops[M].Arg < 0 || Ops[M].Indirect)
        return false;
      E.Arg = Ops[M].Arg;
      return true;
    }
    E.Arg = argForRegister(Inside);
    return E.Arg >= 0;
  }

  // Bytes a memory operand spans: from an "m" operand's element type, else
  // from the mnemonic's size suffix.
  unsigned sizeOf(const AsmEvent &E, StringRef Mnemonic, unsigned Default) {
    if (E.ArgIsPointee) {
      if (Type *T = paramElementType(CB, E.Arg)) {
        const DataLayout &DL = CB.getModule()->getDataLayout();
        return (unsigned)DL.getTypeStoreSize(T).getFixedValue();
      }
    }
    switch (Mnemonic.empty() ? 0 : Mnemonic.back()) {
    case 'b': return 1;
    case 'w': return 2;
    case 'l': return 4;
    case 'q': return 8;
    }
    return Default;
  }

  // Width of a source operand of movnti: a register name or $N's type.
  unsigned sourceWidth(StringRef S) {
    S = S.trim();
    if (startsWith(S, "%xmm")) return 16;
    if (startsWith(S, "%ymm")) return 32;
    if (startsWith(S, "%zmm")) return 64;
    if (startsWith(S, "%r")) return 8;
    if (startsWith(S, "%e")) return 4;
    int N = operandNumber(S);
    if (N >= 0 && N < (int)Ops.size() && Ops[N].Arg >= 0) {
      Type *T = CB.getArgOperand(Ops[N].Arg)->getType();
      const DataLayout &DL = CB.getModule()->getDataLayout();
      if (T->isSized())
        return (unsigned)DL.getTypeStoreSize(T).getFixedValue();
    }
    return 0;
  }

  void mnemonic(const std::string &Insn, const std::string &Prefix,
                const std::string &Whole, std::vector<AsmEvent> &Events) {
    StringRef S(Insn);
    size_t Sp = S.find_first_of(" \t");
    StringRef Mn = S.take_front(Sp);
    StringRef Rest = Sp == StringRef::npos ? StringRef() : S.drop_front(Sp).trim();
    std::vector<std::string> Opnds = splitOperands(Rest);

    if (Mn == "sfence") {
      Events.push_back({AsmEvent::Fence, SFENCE});
      return;
    }
    if (Mn == "mfence") {
      Events.push_back({AsmEvent::Fence, MFENCE});
      return;
    }
    unsigned FlushSub = 0;
    if (Mn == "clflush")
      FlushSub = Prefix == "66" ? CLFLUSHOPT : CLFLUSH;
    else if (Mn == "clflushopt")
      FlushSub = CLFLUSHOPT;
    else if (Mn == "clwb" || (Mn == "xsaveopt" && Prefix == "66"))
      FlushSub = CLWB;
    if (FlushSub) {
      AsmEvent E{AsmEvent::Flush, FlushSub};
      if (Opnds.size() != 1 || !address(Opnds[0], E))
        Unknown.push_back(Whole);
      else
        Events.push_back(E);
      return;
    }
    if (startsWith(Mn, "movnt") || startsWith(Mn, "vmovnt")) {
      AsmEvent E{AsmEvent::NTStore};
      if (Opnds.size() != 2 || !address(Opnds[1], E)) {
        Unknown.push_back(Whole);
        return;
      }
      unsigned W = sourceWidth(Opnds[0]);
      E.Size = W ? W : sizeOf(E, Mn, 0);
      if (!E.Size)
        Unknown.push_back(Whole);
      else
        Events.push_back(E);
      return;
    }
    if (Prefix == "lock" || startsWith(Mn, "xchg")) {
      // The memory operand of a locked instruction is the one with a
      // memory constraint or parentheses; a register-only xchg is no store.
      for (const std::string &O : Opnds) {
        AsmEvent E{AsmEvent::LockedStore};
        StringRef OS(O);
        int N = operandNumber(OS);
        bool Mem = OS.contains('(') ||
                   (N >= 0 && N < (int)Ops.size() && Ops[N].Indirect);
        if (!Mem)
          continue;
        if (!address(O, E)) {
          Unknown.push_back(Whole);
          return;
        }
        E.Size = sizeOf(E, Mn, 8);
        Events.push_back(E);
        return;
      }
      if (Prefix == "lock")
        Unknown.push_back(Whole);
    }
  }

  const CallBase &CB;
  std::vector<std::string> &Unknown;
  std::vector<Operand> Ops;
};

} // namespace

std::vector<AsmEvent> parseAsmEvents(const CallBase &CB,
                                     std::vector<std::string> &Unknown) {
  return Parser(CB, Unknown).run();
}

} // namespace crashcheck
