//===- SiteTable.h - per-module table of source sites ---------------------===//
//
// Every instrumented event carries a pointer to a 64-byte site record
// (file, function, inlined-at file and function, line, column, inlined-at
// line and column, the helper frames the site was named past and its inline chain, flags).  The records of one module form one array in section
// "cc_sites"; the linker concatenates the modules' arrays, and the runtime
// turns a record pointer into a trace-wide id by subtracting
// __start_cc_sites.  The layout must match struct crashcheck_site in
// instrument/runtime/rt_internal.h.
//
//===----------------------------------------------------------------------===//
#ifndef CRASHCHECK_SITETABLE_H
#define CRASHCHECK_SITETABLE_H

#include "llvm/IR/Constants.h"
#include "llvm/IR/DebugInfoMetadata.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/InstrTypes.h"
#include "llvm/IR/Instruction.h"
#include "llvm/IR/Module.h"

#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace crashcheck {

// In a record's chain string, what follows this character is the site's inline chain (each
// call it was inlined at, nearest first, up to the function it ended up in): the runtime
// writes the two parts as the trace's `chain` and `inlined` fields (docs/trace-format.md).
#define CHAIN_CALLERS "\x1e"

// Site flags (struct crashcheck_site.flags, docs/trace-format.md).
enum : unsigned {
  SITE_OWN = 1,          // named in one of the structure's own files
  SITE_CODE_POINTER = 2, // a store of a code address (a vtable or function pointer)
};

/// FILE is someone else's code (the standard library, glibc; with
/// CRASHCHECK_PASS_SOURCE_ROOTS, anything outside the user's folders).
bool isHelperFile(const std::string &File);
/// FILE is one the build named as the structure's (CRASHCHECK_PASS_STRUCTURE_FILES).
bool isStructureFile(const std::string &File);
/// The absolute, normalised file name of a debug scope.
std::string fileOf(const llvm::DIScope *Scope);
/// The first frame of LOC's inline chain in the user's code (LOC itself if
/// it is in the user's code or no frame is).
const llvm::DILocation *userFrame(const llvm::DILocation *Loc);

class SiteTable {
public:
  explicit SiteTable(llvm::Module &M) : M(M) {}

  /// Index of the site of instruction I (its debug location, or its
  /// function's name when there is none) with EXTRA flags, creating it on first use.
  unsigned siteOf(const llvm::Instruction &I, unsigned Extra = 0);

  /// Index of the site of call CB that may enter a persist helper: the call's line in
  /// the user's code, no inlined-at caller, VIA (the callee) as its chain.
  unsigned callSiteOf(const llvm::CallBase &CB, const std::string &Via);

  /// Emit the array; call once, after every siteOf and before ref.
  void finalize();

  /// A constant pointer to site Index (valid after finalize).
  llvm::Constant *ref(unsigned Index) const;

  size_t size() const { return Sites.size(); }

private:
  using Key = std::tuple<std::string, std::string, std::string, std::string,
                         unsigned, unsigned, unsigned, unsigned, std::string, unsigned>;
  llvm::Constant *stringConstant(const std::string &S);
  /// The index of site K, added on first use.
  unsigned intern(const Key &K);

  llvm::Module &M;
  std::map<Key, unsigned> Index;
  std::vector<Key> Sites;
  std::map<std::string, llvm::Constant *> Strings;
  llvm::GlobalVariable *Array = nullptr;
};

} // namespace crashcheck

#endif
