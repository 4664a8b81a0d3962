//===- AsmEvents.h - PM events hidden in inline assembly ------------------===//
//
// Most PM code flushes and fences through inline asm.  parseAsmEvents reads
// one inline-asm call and returns the PM-relevant instructions it holds, in
// order, each with the call argument that gives its address:
//
//   clflush / clflushopt / clwb X          flush of the line at X
//   .byte 0x66; clflush X                  clflushopt
//   .byte 0x66; xsaveopt X                 clwb
//   .byte [0x66,] 0x0f, 0xae, MODRM        clflush / clflushopt / clwb through
//                                          a register, or sfence / mfence
//   sfence, mfence                         fences
//   lock OP ..., xchg with a memory operand a locked fence, then the store
//   movnti / movnt* SRC, DST               a non-temporal store to DST
//
// Operands are the IR spelling of the asm string: $N, ${N}, ${N:mod}, with
// registers as %reg.  $N maps to a call argument through the constraint
// list: direct outputs take no argument, indirect outputs and inputs do.
//
//===----------------------------------------------------------------------===//
#ifndef CRASHCHECK_ASMEVENTS_H
#define CRASHCHECK_ASMEVENTS_H

#include "llvm/IR/InstrTypes.h"

#include <string>
#include <vector>

namespace crashcheck {

struct AsmEvent {
  enum Kind { Flush, Fence, NTStore, LockedStore } K;
  unsigned Sub = 0;      // flush or fence flavour (runtime numbering)
  int Arg = -1;          // call argument holding the address (-1: none)
  bool ArgIsPointee = false; // Arg is the memory operand itself (an "m" constraint)
  int64_t Disp = 0;      // displacement added to the address
  unsigned Size = 0;     // bytes stored (NTStore, LockedStore)
};

/// The PM events of inline-asm call CB; Unknown receives instructions that
/// look PM-relevant but could not be resolved (for the pass's statistics).
std::vector<AsmEvent> parseAsmEvents(const llvm::CallBase &CB,
                                     std::vector<std::string> &Unknown);

} // namespace crashcheck

#endif
