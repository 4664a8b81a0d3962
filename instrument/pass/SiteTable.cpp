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

#include "llvm/IR/DebugInfoMetadata.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/Function.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Path.h"
#include "llvm/Transforms/Utils/ModuleUtils.h"

using namespace llvm;

namespace crashcheck {

static std::string fileOf(const DIScope *Scope) {
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

unsigned SiteTable::siteOf(const Instruction &I) {
  const DILocation *Loc = located(I);
  std::string File, Func = functionOf(Loc, I), InlFile, InlFunc;
  unsigned Line = 0, Col = 0, InlLine = 0, InlCol = 0;
  if (Loc) {
    File = fileOf(Loc->getScope());
    Line = Loc->getLine();
    Col = Loc->getColumn();
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
  Key K{File, Func, InlFile, InlFunc, Line, Col, InlLine, InlCol};
  auto It = Index.find(K);
  if (It != Index.end())
    return It->second;
  unsigned Id = Sites.size();
  Index.emplace(K, Id);
  Sites.push_back(K);
  return Id;
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
  Strings.emplace(S, GV);
  return GV;
}

void SiteTable::finalize() {
  if (Sites.empty())
    return;
  LLVMContext &Ctx = M.getContext();
  Type *Ptr = PointerType::getUnqual(Ctx);
  Type *I32 = Type::getInt32Ty(Ctx);
  Type *I64 = Type::getInt64Ty(Ctx);
  // struct crashcheck_site: 4 pointers, 4 x u32, 2 x u64 reserved = 64 bytes.
  StructType *SiteTy = StructType::get(
      Ctx, {Ptr, Ptr, Ptr, Ptr, I32, I32, I32, I32, ArrayType::get(I64, 2)});
  std::vector<Constant *> Records;
  for (const Key &K : Sites) {
    Records.push_back(ConstantStruct::get(
        SiteTy,
        {stringConstant(std::get<0>(K)), stringConstant(std::get<1>(K)),
         stringConstant(std::get<2>(K)), stringConstant(std::get<3>(K)),
         ConstantInt::get(I32, std::get<4>(K)), ConstantInt::get(I32, std::get<5>(K)),
         ConstantInt::get(I32, std::get<6>(K)), ConstantInt::get(I32, std::get<7>(K)),
         ConstantAggregateZero::get(ArrayType::get(I64, 2))}));
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
  return ConstantExpr::getInBoundsGetElementPtr(Array->getValueType(), Array, Idx);
}

} // namespace crashcheck
