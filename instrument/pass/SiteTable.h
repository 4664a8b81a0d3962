//===- SiteTable.h - per-module table of source sites ---------------------===//
//
// Every instrumented event carries a pointer to a 64-byte site record
// (file, function, inlined-at file and function, line, column, inlined-at
// line and column).  The records of one module form one array in section
// "cc_sites"; the linker concatenates the modules' arrays, and the runtime
// turns a record pointer into a trace-wide id by subtracting
// __start_cc_sites.  The layout must match struct crashcheck_site in
// instrument/runtime/rt_internal.h.
//
//===----------------------------------------------------------------------===//
#ifndef CRASHCHECK_SITETABLE_H
#define CRASHCHECK_SITETABLE_H

#include "llvm/IR/Constants.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/Instruction.h"
#include "llvm/IR/Module.h"

#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace crashcheck {

class SiteTable {
public:
  explicit SiteTable(llvm::Module &M) : M(M) {}

  /// Index of the site of instruction I (its debug location, or its
  /// function's name when there is none), creating it on first use.
  unsigned siteOf(const llvm::Instruction &I);

  /// Emit the array; call once, after every siteOf and before ref.
  void finalize();

  /// A constant pointer to site Index (valid after finalize).
  llvm::Constant *ref(unsigned Index) const;

  size_t size() const { return Sites.size(); }

private:
  using Key = std::tuple<std::string, std::string, std::string, std::string,
                         unsigned, unsigned, unsigned, unsigned>;
  llvm::Constant *stringConstant(const std::string &S);

  llvm::Module &M;
  std::map<Key, unsigned> Index;
  std::vector<Key> Sites;
  std::map<std::string, llvm::Constant *> Strings;
  llvm::GlobalVariable *Array = nullptr;
};

} // namespace crashcheck

#endif
