//===- SiteTable.cpp - per-module table of source sites -------------------===//
//
// See SiteTable.h.  File names are made absolute with the compile
// directory when the debug info holds a relative name, so a report can open
// the source wherever the trace is read, and lose their `.` and `..` parts.
// An instruction whose location has line 0 (merged by the optimiser) takes
// the nearest located instruction's site, so no site says `file.c:0`.
//
//===----------------------------------------------------------------------===//
#include "SiteTable.h"
#include "Compat.h"

#include "llvm/IR/DebugInfoMetadata.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/InstrTypes.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Path.h"
#include "llvm/Transforms/Utils/ModuleUtils.h"

#include <cstdlib>
#include <set>

using namespace llvm;

namespace crashcheck {

// A colon-separated list from the environment (read once: -mllvm cannot reach a late plugin).
static std::vector<std::string> envList(const char *Name) {
  std::vector<std::string> Out;
  const char *V = std::getenv(Name);
  if (!V)
    return Out;
  SmallVector<StringRef, 8> Parts;
  StringRef(V).split(Parts, ':', -1, /*KeepEmpty=*/false);
  for (StringRef P : Parts)
    Out.push_back(P.str());
  return Out;
}

static bool under(const std::string &File, const std::string &Root) {
  if (Root.empty() || File.compare(0, Root.size(), Root) != 0)
    return false;
  return File.size() == Root.size() || Root.back() == '/' || File[Root.size()] == '/';
}

bool isHelperFile(const std::string &File) {
  if (File.empty())
    return false;
  // crashcheck build names the user's folders: everything outside them (the
  // standard library, glibc, a vendored header elsewhere) is someone else's.
  static const std::vector<std::string> Roots = envList("CRASHCHECK_PASS_SOURCE_ROOTS");
  if (!Roots.empty()) {
    for (const std::string &R : Roots)
      if (under(File, R))
        return false;
    return true;
  }
  // Without them: the system's include and library folders, and any C++
  // standard library (libstdc++'s <atomic> and bits/atomic_base.h, libc++).
  static const char *System[] = {"/usr/include/", "/usr/lib/", "/usr/local/include/",
                                 "/usr/local/lib/", "/lib/", "/opt/"};
  for (const char *P : System)
    if (startsWith(File, P))
      return true;
  return File.find("/include/c++/") != std::string::npos;
}

bool isStructureFile(const std::string &File) {
  static const std::vector<std::string> L = envList("CRASHCHECK_PASS_STRUCTURE_FILES");
  static const std::set<std::string> Files(L.begin(), L.end());
  return Files.count(File) != 0;
}

std::string fileOf(const DIScope *Scope) {
  if (!Scope)
    return "";
  std::string File = Scope->getFilename().str();
  std::string Dir = Scope->getDirectory().str();
  SmallString<256> Path(!File.empty() && File[0] != '/' && !Dir.empty() ? Dir + "/" + File : File);
  // trees/artcow/../woart/x.c and trees/woart/x.c are one file, named one way
  sys::path::remove_dots(Path, /*remove_dot_dot=*/true, sys::path::Style::posix);
  return std::string(Path.str());
}

static std::string functionOf(const DILocation *Loc, const Instruction &I) {
  if (Loc) {
    if (const DISubprogram *SP = Loc->getScope()->getSubprogram())
      return SP->getName().str();
  }
  return I.getFunction()->getName().str();
}

// located -- I's debug location, or when it has line 0 (a location the optimiser merged from
// several lines, such as a store of a small helper inlined at two call sites and sunk into one
// block) the nearest located instruction's: before I in its block, then after it; failing both,
// the inlined-at call's (internal)
static const DILocation *located(const Instruction &I) {
  const DILocation *Loc = I.getDebugLoc().get();
  if (!Loc || Loc->getLine() != 0)
    return Loc;
  for (const Instruction *P = I.getPrevNode(); P; P = P->getPrevNode())
    if (const DILocation *L = P->getDebugLoc().get(); L && L->getLine() != 0)
      return L;
  for (const Instruction *N = I.getNextNode(); N; N = N->getNextNode())
    if (const DILocation *L = N->getDebugLoc().get(); L && L->getLine() != 0)
      return L;
  for (const DILocation *At = Loc->getInlinedAt(); At; At = At->getInlinedAt())
    if (At->getLine() != 0)
      return At;
  return Loc;
}

const DILocation *userFrame(const DILocation *Loc) {
  if (!Loc || !isHelperFile(fileOf(Loc->getScope())))
    return Loc;
  for (const DILocation *F = Loc->getInlinedAt(); F; F = F->getInlinedAt())
    if (F->getLine() != 0 && !isHelperFile(fileOf(F->getScope())))
      return F;
  return Loc;
}

static std::string frameText(const DILocation *F) {
  std::string Text = fileOf(F->getScope()) + ":" + std::to_string(F->getLine()) + " in ";
  const DISubprogram *SP = F->getScope()->getSubprogram();
  return Text + (SP ? SP->getName().str() : "?");
}

// callers -- the inline chain above LOC: each call it was inlined at, nearest first, up to the
// call in the function the code ended up in, one `file:line in function` a line; a line a frame
// the optimiser left without a line (0) is skipped (internal)
static std::string callers(const DILocation *Loc) {
  std::string Out;
  for (const DILocation *F = Loc ? Loc->getInlinedAt() : nullptr; F; F = F->getInlinedAt())
    if (F->getLine() != 0)
      Out += (Out.empty() ? "" : "\n") + frameText(F);
  return Out;
}

// withCallers -- CHAIN and the inline chain CALLERS as the record's one `chain` string: the
// runtime writes the part after CHAIN_CALLERS as the trace's `inlined` field (internal)
static std::string withCallers(const std::string &Chain, const std::string &Callers) {
  return Callers.empty() ? Chain : Chain + CHAIN_CALLERS + Callers;
}

// place -- LOC's file, line and column, and SITE_OWN in FLAGS for a structure's file (internal)
static void place(const DILocation *Loc, std::string &File, unsigned &Line, unsigned &Col, unsigned &Flags) {
  if (!Loc)
    return;
  File = fileOf(Loc->getScope());
  Line = Loc->getLine();
  Col = Loc->getColumn();
  if (isStructureFile(File))
    Flags |= SITE_OWN;
}

unsigned SiteTable::siteOf(const Instruction &I, unsigned Extra) {
  const DILocation *Inner = located(I);
  // A store inside a helper (std::atomic's store in bits/atomic_base.h,
  // inlined into <atomic>'s, inlined into the structure) is named by the
  // first frame in the user's code; the helper frames go in its chain.
  const DILocation *Loc = userFrame(Inner);
  std::string Chain;
  for (const DILocation *F = Inner; F && F != Loc; F = F->getInlinedAt())
    Chain += (Chain.empty() ? "" : "\n") + frameText(F);
  std::string File, Func = functionOf(Loc, I), InlFile, InlFunc;
  unsigned Line = 0, Col = 0, InlLine = 0, InlCol = 0, Flags = Extra;
  place(Loc, File, Line, Col, Flags);
  if (Loc) {
    // The inlined-at site is the nearest caller in another file, else the
    // outermost caller: a fence inside cc_mfence inside persistent() (both in
    // persist.h) inside link() inside wort_insert is reported at link()'s
    // line `persistent(slot, 8)`, the line a person can act on; a store of a
    // static function inlined into another of its file names the function it
    // ended up in.  (With one level of inlining it is the immediate caller.)
    const DILocation *At = Loc->getInlinedAt();
    while (At && At->getInlinedAt() && fileOf(At->getScope()) == File)
      At = At->getInlinedAt();
    if (At) {
      InlFile = fileOf(At->getScope());
      InlLine = At->getLine();
      InlCol = At->getColumn();
      if (const DISubprogram *SP = At->getScope()->getSubprogram())
        InlFunc = SP->getName().str();
    }
  }
  return intern(Key{File, Func, InlFile, InlFunc, Line, Col, InlLine, InlCol,
                    withCallers(Chain, callers(Loc)), Flags});
}

unsigned SiteTable::intern(const Key &K) {
  auto It = Index.find(K);
  if (It != Index.end())
    return It->second;
  unsigned Id = Sites.size();
  Index.emplace(K, Id);
  Sites.push_back(K);
  return Id;
}

unsigned SiteTable::callSiteOf(const CallBase &CB, const std::string &Via) {
  // A flush in a helper that is not inlined is named here, as an inlined helper's is named
  // at its inlined-at caller: the line of the call itself (not the function the call was
  // inlined into, which site_key's caller view would pick from an inlined-at field).
  const DILocation *Loc = userFrame(located(CB));
  std::string File, Func = functionOf(Loc, CB);
  unsigned Line = 0, Col = 0, Flags = 0;
  place(Loc, File, Line, Col, Flags);
  return intern(Key{File, Func, "", "", Line, Col, 0, 0, withCallers(Via, callers(Loc)), Flags});
}

Constant *SiteTable::stringConstant(const std::string &S) {
  auto It = Strings.find(S);
  if (It != Strings.end())
    return It->second;
  LLVMContext &Ctx = M.getContext();
  Constant *Data = ConstantDataArray::getString(Ctx, S, /*AddNull=*/true);
  auto *GV = new GlobalVariable(M, Data->getType(), /*isConstant=*/true,
                                GlobalValue::PrivateLinkage, Data, "__cc_str");
  GV->setUnnamedAddr(GlobalValue::UnnamedAddr::Global);
  GV->setAlignment(Align(1));
  // the record's field is a void * (LLVM 14: an i8*, not the array's [N x i8]*)
  Constant *P = ConstantExpr::getPointerCast(GV, voidPtrType(Ctx));
  Strings.emplace(S, P);
  return P;
}

void SiteTable::finalize() {
  if (Sites.empty())
    return;
  LLVMContext &Ctx = M.getContext();
  Type *Ptr = voidPtrType(Ctx);
  Type *I32 = Type::getInt32Ty(Ctx);
  Type *I64 = Type::getInt64Ty(Ctx);
  // struct crashcheck_site: 4 pointers, 4 x u32, the chain, u64 flags = 64 bytes.
  StructType *SiteTy = StructType::get(
      Ctx, {Ptr, Ptr, Ptr, Ptr, I32, I32, I32, I32, Ptr, I64});
  std::vector<Constant *> Records;
  for (const Key &K : Sites) {
    Records.push_back(ConstantStruct::get(
        SiteTy,
        {stringConstant(std::get<0>(K)), stringConstant(std::get<1>(K)),
         stringConstant(std::get<2>(K)), stringConstant(std::get<3>(K)),
         ConstantInt::get(I32, std::get<4>(K)), ConstantInt::get(I32, std::get<5>(K)),
         ConstantInt::get(I32, std::get<6>(K)), ConstantInt::get(I32, std::get<7>(K)),
         stringConstant(std::get<8>(K)), ConstantInt::get(I64, std::get<9>(K))}));
  }
  ArrayType *ArrTy = ArrayType::get(SiteTy, Records.size());
  // Writable, so that pointer relocations in a PIE never land in a
  // read-only section; 64-byte aligned and sized, so the arrays of several
  // modules concatenate without gaps.
  Array = new GlobalVariable(M, ArrTy, /*isConstant=*/false,
                             GlobalValue::PrivateLinkage,
                             ConstantArray::get(ArrTy, Records), "__cc_sites");
  Array->setSection("cc_sites");
  Array->setAlignment(Align(64));
  appendToCompilerUsed(M, {Array});
}

Constant *SiteTable::ref(unsigned I) const {
  LLVMContext &Ctx = M.getContext();
  Type *I32 = Type::getInt32Ty(Ctx);
  Constant *Idx[] = {ConstantInt::get(I32, 0), ConstantInt::get(I32, I)};
  // as a void * (a no-op from LLVM 15; LLVM 14's hooks take an i8*)
  return ConstantExpr::getPointerCast(
      ConstantExpr::getInBoundsGetElementPtr(Array->getValueType(), Array, Idx), voidPtrType(Ctx));
}

} // namespace crashcheck
