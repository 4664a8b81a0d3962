//===- Compat.h - the few LLVM API differences between LLVM 14 and 19 -----===//
//
// The pass builds against LLVM 14 to 19 (new pass manager plugin API in all).
// What differs, and is wrapped here so the pass's code reads the same:
//   - LLVM 14 has typed pointers: a runtime hook's `ptr` parameter is i8*,
//     and an address the pass passes (an i32*, a %struct.node*) needs a
//     bitcast.  From LLVM 15 every pointer is the opaque `ptr` and the cast
//     folds away, so callHook changes nothing there.
//   - LLVM 14 has no asm goto label constraint (its callbr labels are plain
//     operands) and no CallBase::getParamElementType (a typed pointer says
//     what it points to).
//   - StringRef::startswith is gone in LLVM 19 (starts_with is not in 14).
//
//===----------------------------------------------------------------------===//
#ifndef CRASHCHECK_COMPAT_H
#define CRASHCHECK_COMPAT_H

#include "llvm/Config/llvm-config.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InlineAsm.h"
#include "llvm/IR/Type.h"

#if LLVM_VERSION_MAJOR < 14 || LLVM_VERSION_MAJOR > 19
#error "crashcheck's pass supports LLVM 14 to 19"
#endif

namespace crashcheck {

// The runtime's `void *`: i8* in LLVM 14, the opaque ptr from 15 on.
inline llvm::Type *voidPtrType(llvm::LLVMContext &Ctx) {
#if LLVM_VERSION_MAJOR < 15
  return llvm::Type::getInt8PtrTy(Ctx);
#else
  return llvm::PointerType::getUnqual(Ctx);
#endif
}

inline bool startsWith(llvm::StringRef S, llvm::StringRef Prefix) {
  return S.substr(0, Prefix.size()) == Prefix;
}

inline bool isLabelConstraint(const llvm::InlineAsm::ConstraintInfo &C) {
#if LLVM_VERSION_MAJOR >= 15
  return C.Type == llvm::InlineAsm::isLabel;
#else
  return false;
#endif
}

// What an indirect ("m") asm operand points to: its elementtype attribute,
// or (LLVM 14) the pointer's element type.
inline llvm::Type *paramElementType(const llvm::CallBase &CB, unsigned Arg) {
#if LLVM_VERSION_MAJOR >= 15
  return CB.getParamElementType(Arg);
#else
  if (llvm::Type *T = CB.getAttributes().getParamElementType(Arg))
    return T;
  llvm::Type *P = CB.getArgOperand(Arg)->getType();
  return P->isPointerTy() && !P->isOpaquePointerTy() ? P->getPointerElementType() : nullptr;
#endif
}

// A call to F with each pointer argument cast to its parameter's type (a
// no-op with opaque pointers; LLVM 14's i32* to i8*).
inline llvm::CallInst *callHook(llvm::IRBuilder<> &B, llvm::FunctionCallee F,
                                llvm::ArrayRef<llvm::Value *> Args) {
  llvm::SmallVector<llvm::Value *, 8> Cast(Args.begin(), Args.end());
  llvm::FunctionType *FT = F.getFunctionType();
  for (unsigned I = 0; I < Cast.size() && I < FT->getNumParams(); I++) {
    llvm::Type *Want = FT->getParamType(I);
    if (Cast[I]->getType() != Want && Cast[I]->getType()->isPointerTy() && Want->isPointerTy())
      Cast[I] = B.CreatePointerCast(Cast[I], Want);
  }
  return B.CreateCall(F, Cast);
}

} // namespace crashcheck

#endif
