//===- CrashcheckPass.cpp - log every PM store, flush and fence -----------===//
//
// What it does
//   After optimisation (OptimizerLastEP, which also runs at -O0) it inserts
//   a call into the crashcheck runtime after every event that can touch
//   persistent memory, passing the address, the size and a pointer to the
//   event's source site (SiteTable.h).  The runtime keeps the events that
//   fall inside registered PM regions.
//
// The IR it injects (runtime in instrument/runtime/rt_hooks.c)
//   store (8 bytes)            __cc_store8(ptr, site)
//   store / vector / atomic    __cc_store(ptr, size, origin, site)
//   !nontemporal store         __cc_ntstore(ptr, size, origin, site)
//   seq_cst store, atomicrmw   __cc_locked_store(ptr, size, origin, 1, site)
//   cmpxchg                    __cc_locked_store(ptr, size, origin, success, site)
//   memset/memcpy/memmove      __cc_store(dst, len, origin, site)   (intrinsics and libc calls)
//   clflush/clflushopt/clwb    __cc_flush(ptr, kind, site)          (intrinsics and inline asm)
//   sfence/mfence/seq_cst fence  __cc_fence(kind, site)             (release/acquire: nothing)
//   pmem_* (libpmem), pmemobj_persist/flush/drain/memcpy/... (libpmemobj)
//                              __cc_pmem(addr, len, stored, mode, flags, site)
//   pmemobj_create/open/close, pmemobj_tx_add_range*, pmemobj_tx_*alloc/*dup,
//   pmemobj_tx_commit/process/end, pmem_map_file
//                                   -> __cc_wrap_NAME(same arguments..., site)
//   any other pmemobj_* call that may write the pool   call; __cc_lib_return(site)
//     (instrument/runtime/rt_pmemobj.c: libpmemobj is precompiled, so the
//     runtime maps its pool as a region and logs what the library wrote,
//     from a shadow of the pool, at the call's site)
//   with CRASHCHECK_PASS_PMDK (libpmem/libpmemobj built with the pass): a shadow call stack,
//   so a store inside the library is named with the calls that led there
//   (instrument/runtime/rt_callstack.c):
//     library mode, every call that may enter code built with the pass (as for persist
//     helpers below, but pmem* callees too):
//                              d = __cc_cs_push(callsite); call; __cc_cs_pop(d)
//     program mode, a call of pmemobj_* / pmem_*:
//                              __cc_cs_enter(callsite); call; __cc_cs_pop(0)
//   load (CRASHCHECK_PASS_LOADS=1 at compile time)  __cc_load(ptr, size, site)
//   a store of a code address (a vtable pointer, a function pointer: storesCodeAddress) is
//   logged as any store, at a site of its own flagged SITE_CODE_POINTER (the harness reports
//   one that reaches PM as code-pointer-in-pm)
//   crashcheck_op_begin/op_end/mark/alloc/free/here get the caller's site.
//   a persist helper that is not inlined (a function whose only PM events are flushes and
//   fences, such as a user's pflush(addr, len) in its own file): its flushes and fences take
//   the site of the call that entered it, so they are named at the structure's line that
//   called the helper (as an inlined helper's are, through its inlined-at caller):
//     site' = __cc_caller_site ? __cc_caller_site : site
//   and every call that may enter one (a direct call of a function declared here but defined
//   elsewhere, not a C library function; a call of a helper defined here; an indirect call),
//   outside helpers themselves, sets that thread-local variable to a site of its own (the
//   call's line, `via` the callee) for the call's duration:
//     old = __cc_caller_site; __cc_caller_site = callsite; call; __cc_caller_site = old
//   with CRASHCHECK_PASS_PM_MALLOC=1 at compile time (crashcheck build --pm-malloc), an
//   allocation call whose first frame in the user's code is one of the structure's files
//   (CRASHCHECK_PASS_STRUCTURE_FILES): malloc, calloc, realloc, free, posix_memalign,
//   aligned_alloc, memalign, valloc, pvalloc, operator new/new[] (plain, nothrow, aligned)
//                              -> cc_pm_*_at(args..., site) (trees/common/pm_malloc.c)
//   (CRASHCHECK_PASS_ALLOC_ONLY=1: only these, for the untraced driver)
//   after every atomic load/store/RMW/cmpxchg on ANY memory (stack and
//   globals too), for the deterministic scheduler (docs/scheduler.md):
//     if (__cc_sched_on) __cc_sched_atomic(ptr, op | size << 8, value, site)
//   an inline load and a never-taken branch while the scheduler is off;
//   CRASHCHECK_PASS_SCHED=0 at compile time leaves these out.
//   before every read that may touch PM, for lazy crash-state exploration
//   (crashsim/runner/lazy.c): plain and atomic loads, the read half of
//   atomicrmw and cmpxchg, memcpy/memmove sources (intrinsics, libc, libpmem),
//   memcmp/bcmp/strncmp/memchr (size argument) and strcmp/strlen (a string):
//     if (__cc_lazy_on) __cc_check_load(ptr, size)
//   an inline load and a never-taken branch outside a lazy checker child;
//   CRASHCHECK_PASS_CHECK_LOADS=0 at compile time leaves these out.
//
// How to run it
//   clang-16 -g -fpass-plugin=build/libcrashcheck_pass.so ...  (or crashcheck-cc)
//   CRASHCHECK_PASS_STATS=1 prints per-module counts of what was
//   instrumented and what was skipped, and why.
//
// Phases (as in ThreadSanitizer): classify every instruction, choose (skip
// accesses that provably cannot reach PM: stack and global variables),
// then rewrite.
//
//===----------------------------------------------------------------------===//
#include "AsmEvents.h"
#include "Compat.h"
#include "SiteTable.h"

#include "llvm/Analysis/TargetLibraryInfo.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InlineAsm.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/IntrinsicsX86.h"
#include "llvm/IR/MDBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Passes/PassPlugin.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Transforms/Utils/BasicBlockUtils.h"
#include "llvm/Transforms/Utils/Local.h"

#include "llvm/Support/Path.h"

#include <cstdlib>
#include <dlfcn.h>
#include <map>
#include <set>

using namespace llvm;
using namespace crashcheck;

namespace {

// Runtime numbering (instrument/runtime/rt_internal.h, docs/trace-format.md).
enum Origin { PLAIN = 0, ATOMIC = 1, RMW = 2, CMPXCHG = 3, MEMSET = 4, MEMCPY = 5,
              MEMMOVE = 6, ASM = 7 };
enum FlushKind { CLFLUSH = 1, CLFLUSHOPT = 2, CLWB = 3 };
enum FenceKind { SFENCE = 1, MFENCE = 2, SEQ_CST = 4 };
enum PmemMode { FLUSH_DRAIN = 0, FLUSH_ONLY = 1, DRAIN_ONLY = 2, BY_FLAGS = 3 };
// __cc_sched_atomic's op (rt_internal.h): kind | NOVAL | size << 8.
enum SchedOp { SCHED_LOAD = 0, SCHED_STORE = 1, SCHED_RMW = 2, SCHED_CAS_OK = 3, SCHED_CAS_FAIL = 4,
               SCHED_NOVAL = 0x10 };
constexpr unsigned NO_STORE = 0xff;

// Options, read once when the plugin loads (-mllvm cannot reach a late-loaded plugin).
bool envFlag(const char *Name) {
  const char *V = std::getenv(Name);
  return V && *V && std::string(V) != "0";
}

// CRASHCHECK_PASS_PMDK: libpmem and libpmemobj are built with the pass (instrument/build-pmdk).
// "lib" while compiling them (a file mapping becomes a region at its mmap), any other value for
// a program linking them (crashcheck-cc --pmdk): their calls are not modelled either way.
enum class PmdkMode { Off, Program, Library };
PmdkMode pmdkMode() {
  const char *V = std::getenv("CRASHCHECK_PASS_PMDK");
  if (!V || !*V || std::string(V) == "0")
    return PmdkMode::Off;
  return std::string(V) == "lib" ? PmdkMode::Library : PmdkMode::Program;
}

// One libpmem / libpmemobj persistence call: where its address, length and
// flags are, and what it does.  libpmemobj's take the pool first and behave
// as libpmem's (their PMEMOBJ_F_MEM_* flags have libpmem's values).
struct PmemCall {
  int AddrArg, LenArg, FlagsArg;
  unsigned Stored; // origin of the copy/fill it performs, or NO_STORE
  PmemMode Mode;
};

const std::map<std::string, PmemCall> &pmemCalls() {
  static const std::map<std::string, PmemCall> Calls = {
      {"pmem_persist", {0, 1, -1, NO_STORE, FLUSH_DRAIN}},
      {"pmem_msync", {0, 1, -1, NO_STORE, FLUSH_DRAIN}},
      {"pmem_deep_persist", {0, 1, -1, NO_STORE, FLUSH_DRAIN}},
      {"pmem_flush", {0, 1, -1, NO_STORE, FLUSH_ONLY}},
      {"pmem_deep_flush", {0, 1, -1, NO_STORE, FLUSH_ONLY}},
      {"pmem_drain", {-1, -1, -1, NO_STORE, DRAIN_ONLY}},
      {"pmem_deep_drain", {-1, -1, -1, NO_STORE, DRAIN_ONLY}},
      {"pmem_memcpy_persist", {0, 2, -1, MEMCPY, FLUSH_DRAIN}},
      {"pmem_memmove_persist", {0, 2, -1, MEMMOVE, FLUSH_DRAIN}},
      {"pmem_memset_persist", {0, 2, -1, MEMSET, FLUSH_DRAIN}},
      {"pmem_memcpy_nodrain", {0, 2, -1, MEMCPY, FLUSH_ONLY}},
      {"pmem_memmove_nodrain", {0, 2, -1, MEMMOVE, FLUSH_ONLY}},
      {"pmem_memset_nodrain", {0, 2, -1, MEMSET, FLUSH_ONLY}},
      {"pmem_memcpy", {0, 2, 3, MEMCPY, BY_FLAGS}},
      {"pmem_memmove", {0, 2, 3, MEMMOVE, BY_FLAGS}},
      {"pmem_memset", {0, 2, 3, MEMSET, BY_FLAGS}},
      {"pmemobj_persist", {1, 2, -1, NO_STORE, FLUSH_DRAIN}},
      {"pmemobj_xpersist", {1, 2, -1, NO_STORE, FLUSH_DRAIN}},   // flags: only RELAXED
      {"pmemobj_flush", {1, 2, -1, NO_STORE, FLUSH_ONLY}},
      {"pmemobj_xflush", {1, 2, -1, NO_STORE, FLUSH_ONLY}},
      {"pmemobj_drain", {-1, -1, -1, NO_STORE, DRAIN_ONLY}},
      {"pmemobj_memcpy_persist", {1, 3, -1, MEMCPY, FLUSH_DRAIN}},
      {"pmemobj_memset_persist", {1, 3, -1, MEMSET, FLUSH_DRAIN}},
      {"pmemobj_memcpy", {1, 3, 4, MEMCPY, BY_FLAGS}},
      {"pmemobj_memmove", {1, 3, 4, MEMMOVE, BY_FLAGS}},
      {"pmemobj_memset", {1, 3, 4, MEMSET, BY_FLAGS}},
  };
  return Calls;
}

// libpmemobj calls the runtime wraps (rt_pmemobj.c): the call goes to
// __cc_wrap_NAME with the same arguments plus the site.  Redirecting the
// call, rather than interposing on the symbol, gives each call its source
// site and never sees libpmemobj's calls to itself (see TOOLCHAIN.md on
// dlsym interposition counting libpmem's internal calls twice).
const std::set<std::string> &pmemobjWrapped() {
  static const std::set<std::string> Names = {
      "pmemobj_create", "pmemobj_open", "pmemobj_close",
      "pmemobj_tx_add_range", "pmemobj_tx_add_range_direct", "pmemobj_tx_xadd_range",
      "pmemobj_tx_xadd_range_direct", "pmemobj_tx_alloc", "pmemobj_tx_zalloc",
      "pmemobj_tx_xalloc", "pmemobj_tx_realloc", "pmemobj_tx_zrealloc", "pmemobj_tx_strdup",
      "pmemobj_tx_xstrdup", "pmemobj_tx_wcsdup", "pmemobj_tx_xwcsdup", "pmemobj_tx_commit",
      "pmemobj_tx_process", "pmemobj_tx_end"};
  return Names;
}

// libpmemobj calls that never write a pool: no shadow comparison after them
// (pmemobj_direct runs on every object access; comparing the pool after it
// would cost a pass over the pool each time).
const std::set<std::string> &pmemobjPure() {
  static const std::set<std::string> Names = {
      "pmemobj_direct", "pmemobj_oid", "pmemobj_pool_by_oid", "pmemobj_pool_by_ptr",
      "pmemobj_errormsg", "pmemobj_tx_stage", "pmemobj_tx_errno", "pmemobj_type_num",
      "pmemobj_alloc_usable_size", "pmemobj_root_size", "pmemobj_first", "pmemobj_next",
      "pmemobj_check_version", "pmemobj_check", "pmemobj_get_user_data",
      "pmemobj_set_user_data", "pmemobj_tx_get_user_data", "pmemobj_tx_set_user_data",
      "pmemobj_tx_log_snapshots_max_size", "pmemobj_tx_log_intents_max_size",
      "pmemobj_tx_get_failure_behavior", "pmemobj_tx_set_failure_behavior",
      "pmemobj_set_funcs", "pmemobj_ctl_get"};
  return Names;
}

// libc copies and fills left as calls (e.g. -fno-builtin, or _chk forms).
const std::map<std::string, unsigned> &libcWrites() {
  static const std::map<std::string, unsigned> Calls = {
      {"memcpy", MEMCPY}, {"memmove", MEMMOVE}, {"memset", MEMSET},
      {"__memcpy_chk", MEMCPY}, {"__memmove_chk", MEMMOVE}, {"__memset_chk", MEMSET}};
  return Calls;
}

// Allocation calls --pm-malloc sends to the pool allocator (trees/common/pm_malloc.c): the
// runtime function and which of the call's arguments it takes (the site is added last, except
// for free).  The nothrow tag of new is dropped.
struct PmAllocCall {
  const char *Runtime;
  std::vector<unsigned> Args;
  bool Site;
};

const std::map<std::string, PmAllocCall> &pmAllocCalls() {
  static const std::map<std::string, PmAllocCall> Calls = [] {
    std::map<std::string, PmAllocCall> C = {
        {"malloc", {"cc_pm_malloc_at", {0}, true}},
        {"calloc", {"cc_pm_calloc_at", {0, 1}, true}},
        {"realloc", {"cc_pm_realloc_at", {0, 1}, true}},
        {"free", {"cc_pm_free", {0}, false}},
        {"posix_memalign", {"cc_pm_posix_memalign_at", {0, 1, 2}, true}},
        {"aligned_alloc", {"cc_pm_aligned_at", {0, 1}, true}},
        {"memalign", {"cc_pm_aligned_at", {0, 1}, true}},
        {"valloc", {"cc_pm_valloc_at", {0}, true}},
        {"pvalloc", {"cc_pm_pvalloc_at", {0}, true}},
    };
    for (const char *N : {"_Znwm", "_Znam"}) {
      std::string S(N);
      C[S] = {"cc_pm_new_at", {0}, true};
      C[S + "RKSt9nothrow_t"] = {"cc_pm_new_nothrow_at", {0}, true};
      C[S + "St11align_val_t"] = {"cc_pm_new_aligned_at", {0, 1}, true};
      C[S + "St11align_val_tRKSt9nothrow_t"] = {"cc_pm_new_aligned_nothrow_at", {0, 1}, true};
    }
    // (operator delete is not here: trees/common/pm_malloc.c replaces the program's, so an
    // object of the pool is given back wherever it is deleted, in the adapter or in the
    // standard library's compiled code too)
    return C;
  }();
  return Calls;
}

struct Stats {
  unsigned PmAllocs = 0;
  unsigned Stores = 0, NTStores = 0, Atomics = 0, MemOps = 0, Flushes = 0, Fences = 0,
           AsmEvents = 0, Pmem = 0, PmemObj = 0, Loads = 0, Api = 0, SchedAtomics = 0,
           CheckLoads = 0;
  unsigned SkippedStack = 0, SkippedGlobal = 0, SkippedWeakFence = 0, AsmUnknown = 0;
};

class Instrumenter {
public:
  Instrumenter(Module &M, bool Loads, bool Sched, bool CheckLoads, bool PmMalloc, bool AllocOnly)
      : M(M), Sites(M), Loads(Loads), Sched(Sched), CheckLoads(CheckLoads), PmMalloc(PmMalloc),
        AllocOnly(AllocOnly), Ctx(M.getContext()) {
    Ptr = voidPtrType(Ctx);
    I32 = Type::getInt32Ty(Ctx);
    I64 = Type::getInt64Ty(Ctx);
    VoidTy = Type::getVoidTy(Ctx);
  }

  bool run() {
    // Phase 1 + 2: classify and choose; remember each point with its site.
    for (Function &F : M) {
      if (F.isDeclaration() || startsWith(F.getName(), "__cc_"))
        continue;
      for (Instruction &I : instructions(F))
        classify(I);
    }
    findHelpers();
    findFrames();
    // Check loads first: they go before their instruction, which the
    // rewrites below may replace (invoke -> call).
    for (CheckLoad &C : Reads)
      rewriteCheckLoad(C);
    if (Points.empty() && Calls.empty() && Frames.empty())
      return !Reads.empty();
    // Phase 3: the site table, then the rewrites.
    Sites.finalize();
    for (Point &P : Points)
      rewrite(P);
    for (auto &[CI, Site] : Calls)
      rewriteCall(*CI, Site);
    for (auto &[CI, Site] : Frames)
      rewriteFrame(*CI, Site);
    for (Instruction *I : ToErase)
      I->eraseFromParent();
    if (envFlag("CRASHCHECK_PASS_STATS"))
      printStats();
    return true;
  }

private:
  enum class Kind { Store, NTStore, SeqCstStore, AtomicStore, RMW, CmpXchg, MemOp, Flush,
                    Fence, Asm, Pmem, PmemObjWrap, PmemObjCall, Load, ApiOpBegin, ApiOpEnd,
                    ApiMark, ApiAlloc, ApiFree, ApiHere, SchedOnly, PmAlloc, ClientRequest,
                    PmdkCall };
  struct Point {
    Instruction *I;
    Kind K;
    unsigned Site;
    unsigned Sub = 0;      // origin, flush or fence kind
    std::vector<AsmEvent> Asm;
    bool Sched = false;    // an atomic: a scheduling point follows its hook
  };

  // A read lazy exploration must see: LEN bytes (or Size if LEN is null;
  // ~0 is a NUL-terminated string) at PTR, read by I.
  struct CheckLoad {
    Instruction *I;
    Value *Ptr;
    Value *Len;
    uint64_t Size;
  };

  void addRead(Instruction &I, Value *P, Value *Len, uint64_t Size = 0) {
    if (!CheckLoads || isa<InvokeInst>(&I))
      return;
    const Value *Obj = getUnderlyingObject(P);   // as cannotBePM, without counting
    if (isa<AllocaInst>(Obj) || isa<GlobalVariable>(Obj))
      return;
    S.CheckLoads++;
    Reads.push_back({&I, P, Len, Size});
  }

  // The reads of a library call that lazy exploration must see.
  void addLibcReads(CallBase &CB, StringRef Name) {
    unsigned N = CB.arg_size();
    if ((Name == "memcmp" || Name == "bcmp" || Name == "strncmp") && N >= 3) {
      addRead(CB, CB.getArgOperand(0), CB.getArgOperand(2));
      addRead(CB, CB.getArgOperand(1), CB.getArgOperand(2));
    } else if ((Name == "memchr" || Name == "memrchr") && N >= 3) {
      addRead(CB, CB.getArgOperand(0), CB.getArgOperand(2));
    } else if ((Name == "strcmp" || Name == "strcoll") && N >= 2) {
      addRead(CB, CB.getArgOperand(0), nullptr, ~0ull);
      addRead(CB, CB.getArgOperand(1), nullptr, ~0ull);
    } else if ((Name == "strlen" || Name == "strdup" || Name == "strchr" || Name == "strrchr") &&
               N >= 1) {
      addRead(CB, CB.getArgOperand(0), nullptr, ~0ull);
    } else if ((Name == "strcpy" || Name == "stpcpy") && N >= 2) {
      addRead(CB, CB.getArgOperand(1), nullptr, ~0ull);
    } else if ((Name == "memcpy" || Name == "memmove" || Name == "__memcpy_chk" ||
                Name == "__memmove_chk" || startsWith(Name, "pmem_memcpy") ||
                startsWith(Name, "pmem_memmove")) && N >= 3) {
      addRead(CB, CB.getArgOperand(1), CB.getArgOperand(2));
    } else if ((startsWith(Name, "pmemobj_memcpy") || Name == "pmemobj_memmove") && N >= 4) {
      addRead(CB, CB.getArgOperand(2), CB.getArgOperand(3));
    }
  }

  // if (__cc_lazy_on) __cc_check_load(ptr, size), right before the read.
  void rewriteCheckLoad(CheckLoad &C) {
    IRBuilder<> B0(C.I);
    B0.SetCurrentDebugLocation(C.I->getDebugLoc());
    LoadInst *On = B0.CreateLoad(I32, M.getOrInsertGlobal("__cc_lazy_on", I32));
    On->setAlignment(Align(4));
    Value *Cond = B0.CreateICmpNE(On, ConstantInt::get(I32, 0));
    Instruction *Then = SplitBlockAndInsertIfThen(Cond, C.I, false,
                                                  MDBuilder(Ctx).createBranchWeights(1, 1 << 20));
    IRBuilder<> B(Then);
    B.SetCurrentDebugLocation(C.I->getDebugLoc());
    Value *Len = C.Len ? i64(B, C.Len) : ConstantInt::get(I64, C.Size);
    callHook(B, hook("__cc_check_load", {Ptr, I64}), {C.Ptr, Len});
  }

  // Stack and global variables are never PM: skip accesses that provably
  // stay in them (counted, so the numbers explain what was left out).
  bool cannotBePM(Value *Ptr) {
    const Value *Obj = getUnderlyingObject(Ptr);
    if (isa<AllocaInst>(Obj)) {
      S.SkippedStack++;
      return true;
    }
    if (isa<GlobalVariable>(Obj)) {
      S.SkippedGlobal++;
      return true;
    }
    return false;
  }

  // A callee no call site is wanted for: crashcheck's runtime, pthreads, the C++ runtime, an
  // assertion's or a stack protector's failure; with PMEM, libpmem and libpmemobj too.
  static bool runtimeCallee(StringRef N, bool Pmem) {
    for (const char *Pre : {"__cc_", "crashcheck_", "cc_pm_", "pthread_", "_ZNSt", "_ZSt", "__cxa_",
                            "_Unwind", "__assert", "__stack_chk"})
      if (startsWith(N, Pre))
        return true;
    return Pmem && startsWith(N, "pmem");
  }

  // The persist helpers among the module's functions (a function whose PM events are only
  // flushes and fences: see the banner), then the calls that may enter one, each with a site.
  void findHelpers() {
    if (AllocOnly)
      return;
    std::map<Function *, std::pair<unsigned, unsigned>> Events;   // flushes and fences, other PM events
    std::set<Instruction *> Pointed;
    for (const Point &P : Points) {
      Pointed.insert(P.I);
      auto &C = Events[P.I->getFunction()];
      bool Persist = P.K == Kind::Flush || P.K == Kind::Fence;
      if (P.K == Kind::Asm) {
        Persist = true;
        for (const AsmEvent &E : P.Asm)
          Persist &= E.K == AsmEvent::Flush || E.K == AsmEvent::Fence;
      }
      if (Persist)
        C.first++;
      else if (P.K != Kind::SchedOnly && P.K != Kind::Load)
        C.second++;
    }
    for (auto &[F, C] : Events)
      if (C.first && !C.second && F->getName() != "main")
        Helpers.insert(F);
    collectCalls(Calls, Pointed, [&](Function &F, CallInst &, Function *Callee) {
      return !Helpers.count(&F) &&
             (!Callee || ((Callee->isDeclaration() || Helpers.count(Callee)) &&
                          !runtimeCallee(Callee->getName(), /*Pmem=*/true)));
    });
  }

  // Each call in the module's functions that KEEP(function, call, callee) accepts (callee null:
  // an indirect call), with a call site of its own (the call's line, `via` the callee or `an
  // indirect call`), into OUT.  Never inline asm, must-tail calls, calls in SKIP, intrinsics or
  // C library functions.
  template <class KeepFn>
  void collectCalls(std::vector<std::pair<CallInst *, unsigned>> &Out, const std::set<Instruction *> &Skip,
                    KeepFn Keep) {
    TargetLibraryInfoImpl TLII{Triple(M.getTargetTriple())};
    TargetLibraryInfo TLI(TLII);
    for (Function &F : M) {
      if (F.isDeclaration() || startsWith(F.getName(), "__cc_"))
        continue;
      for (Instruction &I : instructions(F)) {
        auto *CI = dyn_cast<CallInst>(&I);
        if (!CI || Skip.count(CI) || CI->isInlineAsm() || CI->isMustTailCall())
          continue;
        Function *Callee = CI->getCalledFunction();
        LibFunc LF;
        if (Callee && (Callee->isIntrinsic() || TLI.getLibFunc(*Callee, LF)))
          continue;
        if (Keep(F, *CI, Callee))
          Out.push_back({CI, Sites.callSiteOf(*CI, Callee ? Callee->getName().str() + "()" : "an indirect call")});
      }
    }
  }

  // The calls that make frames of the shadow call stack (see the banner), each with a site of
  // its own (the call's line, `via` the callee).  Only with CRASHCHECK_PASS_PMDK: inside the
  // libraries every call that may enter code built with the pass (not intrinsics, the C library
  // or the runtime), in a program its calls of pmemobj_* / pmem_*.  Invokes and calls that
  // return twice are left alone (no single place after them to pop).
  void findFrames() {
    if (Pmdk == PmdkMode::Off || AllocOnly)
      return;
    std::set<Instruction *> Replaced;   // calls a rewrite replaces (mmap, allocations, requests)
    for (const Point &P : Points)
      if (P.K != Kind::PmdkCall)
        Replaced.insert(P.I);
    collectCalls(Frames, Replaced, [&](Function &, CallInst &CI, Function *Callee) {
      if (CI.hasFnAttr(Attribute::ReturnsTwice))
        return false;
      if (!Callee)
        return Pmdk == PmdkMode::Library;
      StringRef N = Callee->getName();
      if (Pmdk == PmdkMode::Program)
        return Callee->isDeclaration() && (startsWith(N, "pmemobj_") || startsWith(N, "pmem_")) &&
               !pmemobjPure().count(N.str());
      return !Callee->hasFnAttribute(Attribute::ReturnsTwice) && !runtimeCallee(N, /*Pmem=*/false);
    });
  }

  // d = __cc_cs_push(site); call; __cc_cs_pop(d)   (a program's call: __cc_cs_enter, pop to 0:
  // the program's call is the stack's bottom frame, whatever a longjmp out of the library left)
  void rewriteFrame(CallInst &CI, unsigned Site) {
    IRBuilder<> B(&CI);
    B.SetCurrentDebugLocation(CI.getDebugLoc());
    bool Enter = Pmdk == PmdkMode::Program;
    Value *Depth = callHook(B, hook(Enter ? "__cc_cs_enter" : "__cc_cs_push", {Ptr}, I32), {Sites.ref(Site)});
    IRBuilder<> A(CI.getNextNode());
    A.SetCurrentDebugLocation(CI.getDebugLoc());
    callHook(A, hook("__cc_cs_pop", {I32}), {Enter ? ConstantInt::get(I32, 0) : Depth});
  }

  // The thread-local site of the call in progress that may have entered a persist helper.
  GlobalVariable *callerSiteVar() {
    auto *GV = cast<GlobalVariable>(M.getOrInsertGlobal("__cc_caller_site", Ptr));
    GV->setThreadLocalMode(GlobalValue::InitialExecTLSModel);
    return GV;
  }

  // old = __cc_caller_site; __cc_caller_site = site; call; __cc_caller_site = old
  void rewriteCall(CallInst &CI, unsigned Site) {
    GlobalVariable *GV = callerSiteVar();
    IRBuilder<> B(&CI);
    B.SetCurrentDebugLocation(CI.getDebugLoc());
    LoadInst *Old = B.CreateLoad(Ptr, GV);
    B.CreateStore(Sites.ref(Site), GV);
    IRBuilder<> A(CI.getNextNode());
    A.SetCurrentDebugLocation(CI.getDebugLoc());
    A.CreateStore(Old, GV);
  }

  // The site a flush or fence of a persist helper logs: its caller's, when a call set one.
  Value *helperSite(IRBuilder<> &B, Constant *Site) {
    LoadInst *Caller = B.CreateLoad(Ptr, callerSiteVar());
    return B.CreateSelect(B.CreateIsNull(Caller), Site, Caller);
  }

  void add(Instruction &I, Kind K, unsigned Sub = 0) {
    // libpmemobj built with the pass keeps its run-time function pointers (the pool's pmem ops,
    // set by every pmemobj_open/create) in the mapped pool header's run-time part, which no
    // recovery reads before rewriting it: not flagged, or every pool would be a code-pointer-in-pm
    static const bool Library = pmdkMode() == PmdkMode::Library;
    unsigned Flags = !Library && storesCodeAddress(I) ? SITE_CODE_POINTER : 0;
    Points.push_back({&I, K, Sites.siteOf(I, Flags), Sub, {}});
  }

  // A value that is the address of code: a function, a vtable (_ZTV, the address a
  // constructor writes as the object's vtable pointer), a function pointer loaded from a
  // constant table of functions, or a choice between such.  Such an address is valid in one
  // process only (the next one maps the program elsewhere), so it must never be in PM.
  static bool isCodeAddress(const Value *V, unsigned Depth = 0) {
    if (Depth > 3)
      return false;
    V = V->stripPointerCasts();
    if (const auto *CE = dyn_cast<ConstantExpr>(V); CE && CE->getOpcode() == Instruction::PtrToInt)
      V = CE->getOperand(0)->stripPointerCasts();
    if (const auto *PI = dyn_cast<PtrToIntInst>(V))
      V = PI->getOperand(0)->stripPointerCasts();
    if (isa<Constant>(V)) {
      const Value *Obj = getUnderlyingObject(V);
      if (const auto *GA = dyn_cast<GlobalAlias>(Obj))
        Obj = GA->getAliasee()->stripPointerCasts();
      if (isa<Function>(Obj))
        return true;
      const auto *GV = dyn_cast<GlobalVariable>(Obj);
      return GV && startsWith(GV->getName(), "_ZTV");
    }
    if (const auto *LI = dyn_cast<LoadInst>(V)) {
      // a function pointer read from a constant table of functions
      const auto *GV = dyn_cast<GlobalVariable>(getUnderlyingObject(LI->getPointerOperand()));
      if (!GV || !GV->isConstant() || !GV->hasDefinitiveInitializer() || !LI->getType()->isPointerTy())
        return false;
      bool Any = false;
      std::vector<const Constant *> Work{GV->getInitializer()};
      while (!Work.empty()) {
        const Constant *C = Work.back();
        Work.pop_back();
        if (C->getType()->isPointerTy()) {
          if (C->isNullValue())
            continue;
          if (!isa<Function>(getUnderlyingObject(C->stripPointerCasts())))
            return false;
          Any = true;
        } else if (isa<ConstantAggregate>(C)) {
          for (const Use &U : C->operands())
            Work.push_back(cast<Constant>(U.get()));
        }
      }
      return Any;
    }
    if (const auto *SI = dyn_cast<SelectInst>(V))
      return isCodeAddress(SI->getTrueValue(), Depth + 1) && isCodeAddress(SI->getFalseValue(), Depth + 1);
    if (const auto *PN = dyn_cast<PHINode>(V)) {
      for (const Value *In : PN->incoming_values())
        if (!isCodeAddress(In, Depth + 1))
          return false;
      return PN->getNumIncomingValues() > 0;
    }
    return false;
  }

  // I stores a code address (isCodeAddress), or is a store clang tags as a vtable pointer's
  // (TBAA "vtable pointer": a constructor's, or a vtable pointer copied from another object).
  static bool storesCodeAddress(const Instruction &I) {
    const Value *V = nullptr;
    if (const auto *SI = dyn_cast<StoreInst>(&I)) {
      if (const MDNode *T = SI->getMetadata(LLVMContext::MD_tbaa); T && T->getNumOperands() >= 2)
        if (const auto *Ty = dyn_cast<MDNode>(T->getOperand(1)); Ty && Ty->getNumOperands() >= 1)
          if (const auto *Name = dyn_cast<MDString>(Ty->getOperand(0)); Name && Name->getString() == "vtable pointer")
            return true;
      V = SI->getValueOperand();
    } else if (const auto *RI = dyn_cast<AtomicRMWInst>(&I)) {
      if (RI->getOperation() == AtomicRMWInst::Xchg)
        V = RI->getValOperand();
    } else if (const auto *CI = dyn_cast<AtomicCmpXchgInst>(&I)) {
      V = CI->getNewValOperand();
    }
    return V && isCodeAddress(V);
  }

  // An atomic: its PM hook (if any) is followed by a scheduling point.
  void addAtomic(Instruction &I, Kind K, bool NoPM) {
    if (!NoPM) {
      S.Atomics++;
      add(I, K);
      Points.back().Sched = Sched;
    } else if (Sched) {
      add(I, Kind::SchedOnly);
    }
    if (Sched)
      S.SchedAtomics++;
  }

  // An allocation call of the structure's code (--pm-malloc): named by the user's line that
  // made it (a `new` inside std::vector's allocator, inlined into the structure, counts as the
  // structure's; the adapter's own calls and the library's internals do not).
  bool pmAlloc(Instruction &I) {
    auto *CB = dyn_cast<CallBase>(&I);
    Function *Callee = CB ? CB->getCalledFunction() : nullptr;
    if (!Callee || !Callee->isDeclaration() || !pmAllocCalls().count(Callee->getName().str()))
      return false;
    const PmAllocCall &C = pmAllocCalls().at(Callee->getName().str());
    for (unsigned A : C.Args)
      if (A >= CB->arg_size())
        return false;
    const DILocation *Loc = userFrame(I.getDebugLoc().get());
    if (!Loc || !isStructureFile(fileOf(Loc->getScope()))) {
      missed(Loc, Callee->getName());
      return false;
    }
    S.PmAllocs++;
    add(I, Kind::PmAlloc);
    return true;
  }

  // missed -- an allocation of the structure's own translation unit, at a line of the user's
  // code outside the structure's files (a header not given to crashcheck build): its objects stay
  // in DRAM, so say where, once per line, on stderr; crashcheck build prints it as a warning
  // (harness/target/build_compile.py).  The adapter's translation unit is not the structure's.
  void missed(const DILocation *Loc, StringRef Callee) {
    if (!Loc || Loc->getLine() == 0 || !isStructureFile(M.getSourceFileName()))
      return;
    std::string File = fileOf(Loc->getScope());
    if (File.empty() || isHelperFile(File))
      return;
    if (!Missed.insert(File + ":" + std::to_string(Loc->getLine())).second)
      return;
    errs() << "crashcheck-pass: pm-malloc missed: " << File << "\t" << Loc->getLine() << "\t"
           << Callee << "\n";
  }

  void classify(Instruction &I) {
    if (PmMalloc && pmAlloc(I))
      return;
    if (AllocOnly)
      return;
    if (auto *SI = dyn_cast<StoreInst>(&I)) {
      bool NoPM = cannotBePM(SI->getPointerOperand());
      if (SI->isAtomic())
        // A seq_cst store is an xchg on x86: a locked instruction, a fence.
        return addAtomic(I, SI->getOrdering() == AtomicOrdering::SequentiallyConsistent
                                ? Kind::SeqCstStore : Kind::AtomicStore, NoPM);
      if (NoPM)
        return;
      if (SI->getMetadata(LLVMContext::MD_nontemporal))
        return add(I, Kind::NTStore), void(S.NTStores++);
      S.Stores++;
      return add(I, Kind::Store);
    }
    if (auto *RI = dyn_cast<AtomicRMWInst>(&I)) {
      addRead(I, RI->getPointerOperand(), nullptr, storeSize(RI->getType()));
      return addAtomic(I, Kind::RMW, cannotBePM(RI->getPointerOperand()));
    }
    if (auto *CI = dyn_cast<AtomicCmpXchgInst>(&I)) {
      addRead(I, CI->getPointerOperand(), nullptr, storeSize(CI->getNewValOperand()->getType()));
      return addAtomic(I, Kind::CmpXchg, cannotBePM(CI->getPointerOperand()));
    }
    if (auto *FI = dyn_cast<FenceInst>(&I)) {
      // Only seq_cst emits mfence on x86; acquire/release fences and
      // single-thread fences are compiler barriers with no persistency effect.
      if (FI->getOrdering() == AtomicOrdering::SequentiallyConsistent &&
          FI->getSyncScopeID() == SyncScope::System) {
        S.Fences++;
        return add(I, Kind::Fence, SEQ_CST);
      }
      S.SkippedWeakFence++;
      return;
    }
    if (auto *LI = dyn_cast<LoadInst>(&I)) {
      addRead(I, LI->getPointerOperand(), nullptr, storeSize(LI->getType()));
      if (Loads && !cannotBePM(LI->getPointerOperand())) {
        S.Loads++;
        add(I, Kind::Load);
      }
      if (LI->isAtomic() && Sched) {
        S.SchedAtomics++;
        add(I, Kind::SchedOnly);
      }
      return;
    }
    if (auto *MI = dyn_cast<AnyMemIntrinsic>(&I)) {
      if (auto *MT = dyn_cast<AnyMemTransferInst>(MI))
        addRead(I, MT->getRawSource(), MT->getLength());
      if (cannotBePM(MI->getRawDest()))
        return;
      S.MemOps++;
      unsigned O = isa<AnyMemSetInst>(MI) ? MEMSET : isa<AnyMemMoveInst>(MI) ? MEMMOVE : MEMCPY;
      return add(I, Kind::MemOp, O);
    }
    if (auto *II = dyn_cast<IntrinsicInst>(&I)) {
      switch (II->getIntrinsicID()) {
      case Intrinsic::x86_sse2_clflush: S.Flushes++; return add(I, Kind::Flush, CLFLUSH);
      case Intrinsic::x86_clflushopt: S.Flushes++; return add(I, Kind::Flush, CLFLUSHOPT);
      case Intrinsic::x86_clwb: S.Flushes++; return add(I, Kind::Flush, CLWB);
      case Intrinsic::x86_sse_sfence: S.Fences++; return add(I, Kind::Fence, SFENCE);
      case Intrinsic::x86_sse2_mfence: S.Fences++; return add(I, Kind::Fence, MFENCE);
      default: return;
      }
    }
    auto *CB = dyn_cast<CallBase>(&I);
    if (!CB)
      return;
    if (CB->isInlineAsm()) {
      if (CB->isTerminator()) { // asm goto (callbr): no single point after it
        S.AsmUnknown++;
        return;
      }
      if (isClientRequest(*CB)) {
        // A Valgrind client request (valgrind.h's magic sequence): the runtime
        // answers it (RUNNING_ON_VALGRIND and pmemcheck's mapping check say
        // yes in a traced run, so PMDK emits its markers) and reads the request
        // block, so pmemcheck's EMIT_LOG markers (pmreorder's NAME.BEGIN /
        // NAME.END) reach the trace as marks.
        S.Api++;
        return add(I, Kind::ClientRequest);
      }
      std::vector<std::string> Unknown;
      std::vector<AsmEvent> Events = parseAsmEvents(*CB, Unknown);
      S.AsmUnknown += Unknown.size();
      for (const std::string &U : Unknown)
        if (envFlag("CRASHCHECK_PASS_STATS"))
          errs() << "crashcheck-pass: unrecognised PM instruction in inline asm: " << U << "\n";
      if (!Events.empty()) {
        S.AsmEvents += Events.size();
        add(I, Kind::Asm);
        Points.back().Asm = std::move(Events);
      }
      return;
    }
    Function *Callee = CB->getCalledFunction();
    if (!Callee)
      return;
    StringRef Name = Callee->getName();
    addLibcReads(*CB, Name);
    if (Pmdk != PmdkMode::Off) {
      // libpmem and libpmemobj are compiled with the pass themselves (instrument/build-pmdk):
      // their stores, flushes and fences are traced where they happen, so their calls are
      // ordinary calls; inside the libraries, a file mapping becomes a region at the mmap.
      if (Pmdk == PmdkMode::Library && (Name == "mmap" || Name == "mmap64") &&
          Callee->isDeclaration() && !Callee->isVarArg()) {
        S.PmemObj++;
        return add(I, Kind::PmemObjWrap);   // -> __cc_wrap_mmap (rt_pmdk.c)
      }
      // The program's call into them: a `cc-call NAME` mark at the call's line, so a store the
      // library makes is named with the user's call that led there (harness/triage/pmdk_calls.py).
      if (Pmdk == PmdkMode::Program && Callee->isDeclaration() &&
          (startsWith(Name, "pmemobj_") || startsWith(Name, "pmem_")) &&
          !pmemobjPure().count(Name.str())) {
        S.PmemObj++;
        return add(I, Kind::PmdkCall);
      }
    } else if (pmemCalls().count(Name.str())) {
      S.Pmem++;
      return add(I, Kind::Pmem);
    }
    if (Pmdk == PmdkMode::Off && Name == "pmem_map_file" && Callee->isDeclaration() && !Callee->isVarArg()) {
      S.PmemObj++;
      return add(I, Kind::PmemObjWrap);      // libpmem's pool: a traced region, no shadow
    }
    if (Pmdk == PmdkMode::Off && startsWith(Name, "pmemobj_") && Callee->isDeclaration() &&
        !pmemobjPure().count(Name.str())) {
      S.PmemObj++;
      if (pmemobjWrapped().count(Name.str()) && !Callee->isVarArg())
        return add(I, Kind::PmemObjWrap);
      return add(I, Kind::PmemObjCall);
    }
    auto W = libcWrites().find(Name.str());
    if (W != libcWrites().end() && CB->arg_size() >= 3) {
      if (cannotBePM(CB->getArgOperand(0)))
        return;
      S.MemOps++;
      return add(I, Kind::MemOp, W->second);
    }
    static const std::map<std::string, Kind> Api = {
        {"crashcheck_op_begin", Kind::ApiOpBegin}, {"crashcheck_op_end", Kind::ApiOpEnd},
        {"crashcheck_mark", Kind::ApiMark},        {"crashcheck_alloc", Kind::ApiAlloc},
        {"crashcheck_free", Kind::ApiFree},        {"crashcheck_here", Kind::ApiHere}};
    auto A = Api.find(Name.str());
    if (A != Api.end()) {
      S.Api++;
      add(I, A->second);
    }
  }

  FunctionCallee hook(StringRef Name, std::vector<Type *> Args, Type *Ret = nullptr) {
    return M.getOrInsertFunction(Name, FunctionType::get(Ret ? Ret : VoidTy, Args, false));
  }

  Value *i64(IRBuilder<> &B, Value *V) { return B.CreateZExtOrTrunc(V, I64); }

  unsigned storeSize(Type *T) {
    return (unsigned)M.getDataLayout().getTypeStoreSize(T).getFixedValue();
  }

  // Address in an asm event: the argument (pointer, or integer register
  // value) plus the displacement.
  Value *asmAddress(IRBuilder<> &B, CallBase &CB, const AsmEvent &E) {
    Value *A = CB.getArgOperand(E.Arg);
    if (A->getType()->isIntegerTy())
      A = B.CreateIntToPtr(A, Ptr);
    else if (!A->getType()->isPointerTy())
      return nullptr;
    A = B.CreatePointerCast(A, Ptr);   // LLVM 14: an i8* for the byte GEP below
    if (E.Disp)
      A = B.CreateGEP(Type::getInt8Ty(Ctx), A, ConstantInt::get(I64, E.Disp));
    return A;
  }

  void rewrite(Point &P) {
    Instruction *After = P.Sched || P.K == Kind::SchedOnly ? P.I->getNextNode() : nullptr;
    if (P.K != Kind::SchedOnly)
      rewriteHook(P);
    if (After)
      rewriteSched(P, After);
  }

  // A value as i64 for __cc_sched_atomic, or null if it has no such form.
  Value *asI64(IRBuilder<> &B, Value *V) {
    Type *T = V->getType();
    if (T->isPointerTy())
      return B.CreatePtrToInt(V, I64);
    if (T->isFloatingPointTy() && T->getPrimitiveSizeInBits() <= 64)
      V = B.CreateBitCast(V, IntegerType::get(Ctx, (unsigned)T->getPrimitiveSizeInBits()));
    if (V->getType()->isIntegerTy() && V->getType()->getIntegerBitWidth() <= 64)
      return B.CreateZExtOrTrunc(V, I64);
    return nullptr;
  }

  // if (__cc_sched_on) __cc_sched_atomic(ptr, op, value, site), before AFTER.
  void rewriteSched(Point &P, Instruction *After) {
    IRBuilder<> B0(After);
    B0.SetCurrentDebugLocation(P.I->getDebugLoc());
    LoadInst *On = B0.CreateLoad(I32, M.getOrInsertGlobal("__cc_sched_on", I32));
    On->setAtomic(AtomicOrdering::Monotonic);
    On->setAlignment(Align(4));
    Value *C = B0.CreateICmpNE(On, ConstantInt::get(I32, 0));
    Instruction *Then = SplitBlockAndInsertIfThen(C, After, false,
                                                  MDBuilder(Ctx).createBranchWeights(1, 1 << 20));
    IRBuilder<> B(Then);
    B.SetCurrentDebugLocation(P.I->getDebugLoc());
    Value *Addr = nullptr, *Val = nullptr, *Op = nullptr;
    auto OpOf = [&](unsigned Kind, Type *T) {
      return ConstantInt::get(I32, Kind | (storeSize(T) & 0xff) << 8);
    };
    if (auto *LI = dyn_cast<LoadInst>(P.I)) {
      Addr = LI->getPointerOperand();
      Val = asI64(B, LI);
      Op = OpOf(Val ? SCHED_LOAD : SCHED_LOAD | SCHED_NOVAL, LI->getType());
    } else if (auto *SI = dyn_cast<StoreInst>(P.I)) {
      Addr = SI->getPointerOperand();
      Op = OpOf(SCHED_STORE, SI->getValueOperand()->getType());
    } else if (auto *RI = dyn_cast<AtomicRMWInst>(P.I)) {
      Addr = RI->getPointerOperand();
      Val = asI64(B, RI);
      Op = OpOf(Val ? SCHED_RMW : SCHED_RMW | SCHED_NOVAL, RI->getType());
    } else if (auto *CI = dyn_cast<AtomicCmpXchgInst>(P.I)) {
      Addr = CI->getPointerOperand();
      Value *Ok = B.CreateExtractValue(CI, 1);
      Type *T = CI->getNewValOperand()->getType();
      Op = B.CreateSelect(Ok, OpOf(SCHED_CAS_OK, T), OpOf(SCHED_CAS_FAIL, T));
    }
    if (!Val)
      Val = ConstantInt::get(I64, 0);
    callHook(B, hook("__cc_sched_atomic", {Ptr, I32, I64, Ptr}), {Addr, Op, Val, Sites.ref(P.Site)});
  }

  void rewriteHook(Point &P) {
    // C++ calls libpmem, libc and the crashcheck API through `invoke` when
    // a destructor must run on unwind.  None of them throws (all are C), so
    // the invoke becomes a plain call: the hook can then go right after it,
    // and API calls can be replaced, without touching the block's terminator.
    if (auto *II = dyn_cast<InvokeInst>(P.I))
      P.I = changeToCall(II);
    Instruction *I = P.I;
    Constant *Site = Sites.ref(P.Site);
    // Loads are logged before they happen; everything else right after, so
    // the runtime can read the bytes a store wrote.
    IRBuilder<> B(P.K == Kind::Load ? I : I->getNextNode());
    B.SetCurrentDebugLocation(I->getDebugLoc());
    switch (P.K) {
    case Kind::Store: {
      auto *SI = cast<StoreInst>(I);
      unsigned N = storeSize(SI->getValueOperand()->getType());
      // (a code address goes the general way: the runtime keeps such stores of a load phase
      // whose trace it drops, rt_from.c, and __cc_store8's inline path looks at no site)
      if (N == 8 && !storesCodeAddress(*SI))
        callHook(B, hook("__cc_store8", {Ptr, Ptr}), {SI->getPointerOperand(), Site});
      else
        callHook(B, hook("__cc_store", {Ptr, I64, I32, Ptr}),
                     {SI->getPointerOperand(), ConstantInt::get(I64, N),
                      ConstantInt::get(I32, PLAIN), Site});
      return;
    }
    case Kind::NTStore:
    case Kind::AtomicStore: {
      auto *SI = cast<StoreInst>(I);
      bool NT = P.K == Kind::NTStore;
      callHook(B, hook(NT ? "__cc_ntstore" : "__cc_store", {Ptr, I64, I32, Ptr}),
                   {SI->getPointerOperand(),
                    ConstantInt::get(I64, storeSize(SI->getValueOperand()->getType())),
                    ConstantInt::get(I32, SI->isAtomic() ? ATOMIC : PLAIN), Site});
      return;
    }
    case Kind::SeqCstStore: {
      auto *SI = cast<StoreInst>(I);
      callHook(B, hook("__cc_locked_store", {Ptr, I64, I32, I32, Ptr}),
                   {SI->getPointerOperand(),
                    ConstantInt::get(I64, storeSize(SI->getValueOperand()->getType())),
                    ConstantInt::get(I32, ATOMIC), ConstantInt::get(I32, 1), Site});
      return;
    }
    case Kind::RMW: {
      auto *RI = cast<AtomicRMWInst>(I);
      callHook(B, hook("__cc_locked_store", {Ptr, I64, I32, I32, Ptr}),
                   {RI->getPointerOperand(), ConstantInt::get(I64, storeSize(RI->getType())),
                    ConstantInt::get(I32, RMW), ConstantInt::get(I32, 1), Site});
      return;
    }
    case Kind::CmpXchg: {
      auto *CI = cast<AtomicCmpXchgInst>(I);
      Value *Ok = B.CreateZExt(B.CreateExtractValue(CI, 1), I32);
      callHook(B, hook("__cc_locked_store", {Ptr, I64, I32, I32, Ptr}),
                   {CI->getPointerOperand(),
                    ConstantInt::get(I64, storeSize(CI->getNewValOperand()->getType())),
                    ConstantInt::get(I32, CMPXCHG), Ok, Site});
      return;
    }
    case Kind::MemOp: {
      auto *CB = cast<CallBase>(I);
      Value *Dst = CB->getArgOperand(0), *Len = CB->getArgOperand(2);
      callHook(B, hook("__cc_store", {Ptr, I64, I32, Ptr}),
                   {Dst, i64(B, Len), ConstantInt::get(I32, P.Sub), Site});
      return;
    }
    case Kind::Flush:
      callHook(B, hook("__cc_flush", {Ptr, I32, Ptr}),
                   {cast<CallBase>(I)->getArgOperand(0), ConstantInt::get(I32, P.Sub),
                    Helpers.count(I->getFunction()) ? helperSite(B, Site) : Site});
      return;
    case Kind::Fence:
      callHook(B, hook("__cc_fence", {I32, Ptr}),
               {ConstantInt::get(I32, P.Sub), Helpers.count(I->getFunction()) ? helperSite(B, Site) : Site});
      return;
    case Kind::Load: {
      auto *LI = cast<LoadInst>(I);
      callHook(B, hook("__cc_load", {Ptr, I64, Ptr}),
                   {LI->getPointerOperand(), ConstantInt::get(I64, storeSize(LI->getType())),
                    Site});
      return;
    }
    case Kind::Asm:
      return rewriteAsm(B, *cast<CallBase>(I), P, Helpers.count(I->getFunction()) ? helperSite(B, Site) : Site);
    case Kind::Pmem:
      return rewritePmem(B, *cast<CallBase>(I), Site);
    case Kind::PmemObjCall:
      callHook(B, hook("__cc_lib_return", {Ptr}), {Site});
      return;
    case Kind::PmemObjWrap:
      return rewritePmemObjWrap(*cast<CallBase>(I), Site);
    case Kind::ApiOpBegin:
    case Kind::ApiOpEnd:
    case Kind::ApiMark:
    case Kind::ApiAlloc:
    case Kind::ApiFree:
      return rewriteApi(*cast<CallBase>(I), P.K, Site);
    case Kind::PmdkCall: {
      auto *CB = cast<CallBase>(I);
      Constant *Label = B.CreateGlobalStringPtr(("cc-call " + CB->getCalledFunction()->getName()).str());
      callHook(B, hook("__cc_mark", {Ptr, Ptr}), {Label, Site});
      return;
    }
    case Kind::ApiHere:
      I->replaceAllUsesWith(ConstantExpr::getPointerCast(Site, I->getType()));
      ToErase.push_back(I);
      return;
    case Kind::SchedOnly:
      return;
    case Kind::PmAlloc:
      return rewritePmAlloc(*cast<CallBase>(I), Site);
    case Kind::ClientRequest: {
      // The request is answered by the runtime instead of the magic sequence:
      // operand 0 is the request block's address (valgrind.h: "a" (&_zzq_args[0])),
      // operand 1 the default (tied to the "={dx}" result), which is what the
      // sequence gives outside Valgrind. The runtime passes the request on to a
      // real Valgrind when there is one, so the asm goes.
      auto *CB = cast<CallBase>(I);
      Type *Ret = CB->getType();
      Value *Default = CB->arg_size() >= 2 && CB->getArgOperand(1)->getType()->isIntegerTy()
                           ? i64(B, CB->getArgOperand(1))
                           : ConstantInt::get(I64, 0);
      CallInst *Answer = callHook(B, hook("__cc_client_request", {Ptr, I64, Ptr}, I64),
                                  {CB->getArgOperand(0), Default, Site});
      if (!Ret->isVoidTy())
        CB->replaceAllUsesWith(Ret->isIntegerTy() ? B.CreateZExtOrTrunc(Answer, Ret) : (Value *)UndefValue::get(Ret));
      ToErase.push_back(CB);
      return;
    }
    }
  }

  // malloc(n) -> cc_pm_malloc_at(n, site), operator new(n) -> cc_pm_new_at(n, site), ...: the
  // pool's functions never throw (an exhausted pool ends the driver with one line), so an
  // invoke of operator new has already become a call (rewriteHook).
  void rewritePmAlloc(CallBase &CB, Constant *Site) {
    const PmAllocCall &C = pmAllocCalls().at(CB.getCalledFunction()->getName().str());
    std::vector<Value *> Args;
    std::vector<Type *> Types;
    for (unsigned A : C.Args) {
      Args.push_back(CB.getArgOperand(A));
      Types.push_back(Args.back()->getType());
    }
    if (C.Site) {
      Args.push_back(Site);
      Types.push_back(Ptr);
    }
    IRBuilder<> B(&CB);
    B.SetCurrentDebugLocation(CB.getDebugLoc());
    CallInst *New = callHook(B, hook(C.Runtime, Types, CB.getType()), Args);
    if (!CB.getType()->isVoidTy())
      CB.replaceAllUsesWith(New);
    ToErase.push_back(&CB);
  }

  // valgrind.h's amd64 client request: the rotate preamble, then xchg %rbx,%rbx,
  // with the request block's address as its first operand (a pointer).
  static bool isClientRequest(CallBase &CB) {
    const InlineAsm *IA = cast<InlineAsm>(CB.getCalledOperand());
    StringRef Text = IA->getAsmString();
    return Text.contains("rolq $$3,") && Text.contains("rolq $$13,") && Text.contains("xchgq %rbx,%rbx") && CB.arg_size() >= 1 &&
           CB.getArgOperand(0)->getType()->isPointerTy() && (CB.getType()->isVoidTy() || CB.getType()->isIntegerTy());
  }

  void rewriteAsm(IRBuilder<> &B, CallBase &CB, const Point &P, Value *Site) {
    for (const AsmEvent &E : P.Asm) {
      switch (E.K) {
      case AsmEvent::Fence:
        callHook(B, hook("__cc_fence", {I32, Ptr}), {ConstantInt::get(I32, E.Sub), Site});
        break;
      case AsmEvent::Flush:
        if (Value *A = asmAddress(B, CB, E))
          callHook(B, hook("__cc_flush", {Ptr, I32, Ptr}), {A, ConstantInt::get(I32, E.Sub), Site});
        break;
      case AsmEvent::NTStore:
        if (Value *A = asmAddress(B, CB, E))
          callHook(B, hook("__cc_ntstore", {Ptr, I64, I32, Ptr}),
                       {A, ConstantInt::get(I64, E.Size), ConstantInt::get(I32, ASM), Site});
        break;
      case AsmEvent::LockedStore:
        if (Value *A = asmAddress(B, CB, E))
          callHook(B, hook("__cc_locked_store", {Ptr, I64, I32, I32, Ptr}),
                       {A, ConstantInt::get(I64, E.Size), ConstantInt::get(I32, ASM),
                        ConstantInt::get(I32, 1), Site});
        break;
      }
    }
  }

  void rewritePmem(IRBuilder<> &B, CallBase &CB, Constant *Site) {
    std::string Name = CB.getCalledFunction()->getName().str();
    const PmemCall &C = pmemCalls().at(Name);
    auto Arg = [&](int N, Type *T) -> Value * {
      if (N < 0 || (unsigned)N >= CB.arg_size())
        return Constant::getNullValue(T);
      Value *V = CB.getArgOperand(N);
      return T->isPointerTy() ? V : B.CreateZExtOrTrunc(V, T);
    };
    // The functions PMDK's libpmem marks for pmreorder (PMREORDER_EMIT_LOG) when it runs under
    // pmemcheck: a prebuilt libpmem is never compiled by the pass, so its markers are logged
    // here, around what the call did (the runtime logs them only when PMREORDER_EMIT_LOG asks).
    static const std::set<std::string> Marked = {
        "pmem_memmove", "pmem_memcpy", "pmem_memset", "pmem_memmove_nodrain", "pmem_memcpy_nodrain",
        "pmem_memmove_persist", "pmem_memcpy_persist", "pmem_memset_nodrain", "pmem_memset_persist"};
    Value *Label = Marked.count(Name) ? B.CreateGlobalStringPtr(Name, "cc.libpmem.name") : nullptr;
    if (Label)
      callHook(B, hook("__cc_libpmem_mark", {Ptr, I32, Ptr}), {Label, ConstantInt::get(I32, 0), Site});
    callHook(B, hook("__cc_pmem", {Ptr, I64, I32, I32, I32, Ptr}),
                 {Arg(C.AddrArg, Ptr), Arg(C.LenArg, I64), ConstantInt::get(I32, C.Stored),
                  ConstantInt::get(I32, C.Mode), Arg(C.FlagsArg, I32), Site});
    if (Label)
      callHook(B, hook("__cc_libpmem_mark", {Ptr, I32, Ptr}), {Label, ConstantInt::get(I32, 1), Site});
  }

  // pmemobj_X(args) -> __cc_wrap_pmemobj_X(args, site): same type plus the
  // site (a PMEMoid argument or result keeps its lowered form, so the C
  // wrapper's prototype lowers to exactly this type).
  void rewritePmemObjWrap(CallBase &CB, Constant *Site) {
    FunctionType *FT = CB.getFunctionType();
    std::vector<Type *> Types(FT->param_begin(), FT->param_end());
    Types.push_back(Ptr);
    std::vector<Value *> Args(CB.arg_begin(), CB.arg_end());
    Args.push_back(Site);
    std::string Name = ("__cc_wrap_" + CB.getCalledFunction()->getName()).str();
    FunctionCallee W = M.getOrInsertFunction(Name, FunctionType::get(FT->getReturnType(), Types, false));
    IRBuilder<> B(&CB);
    B.SetCurrentDebugLocation(CB.getDebugLoc());
    CallInst *New = callHook(B, W, Args);
    // Keep the argument attributes (zeroext, noundef, ...) the ABI lowering put
    // there; the site, last, has none.
    New->setAttributes(CB.getAttributes());
    if (!CB.getType()->isVoidTy())
      CB.replaceAllUsesWith(New);
    ToErase.push_back(&CB);
  }

  // crashcheck_X(args) -> the site-carrying form, same arguments plus the site.
  void rewriteApi(CallBase &CB, Kind K, Constant *Site) {
    IRBuilder<> B(&CB);
    B.SetCurrentDebugLocation(CB.getDebugLoc());
    std::vector<Value *> Args(CB.arg_begin(), CB.arg_end());
    std::vector<Type *> Types;
    for (Value *V : Args)
      Types.push_back(V->getType());
    Args.push_back(Site);
    Types.push_back(Ptr);
    const char *Name = K == Kind::ApiOpBegin ? "__cc_op_begin"
                       : K == Kind::ApiOpEnd ? "__cc_op_end"
                       : K == Kind::ApiMark  ? "__cc_mark"
                       : K == Kind::ApiAlloc ? "crashcheck_alloc_at"
                                             : "crashcheck_free_at";
    callHook(B, hook(Name, Types), Args);
    ToErase.push_back(&CB);
  }

  void printStats() {
    errs() << "crashcheck-pass: " << M.getSourceFileName() << ": sites " << Sites.size()
           << ", stores " << S.Stores << ", nt-stores " << S.NTStores << ", atomics "
           << S.Atomics << ", mem-ops " << S.MemOps << ", flushes " << S.Flushes
           << ", fences " << S.Fences << ", asm-events " << S.AsmEvents << ", libpmem "
           << S.Pmem << ", libpmemobj " << S.PmemObj << ", loads " << S.Loads << ", api " << S.Api
           << ", pm-allocs " << S.PmAllocs
           << ", sched-atomics " << S.SchedAtomics << ", check-loads " << S.CheckLoads
           << "; skipped: stack " << S.SkippedStack << ", global " << S.SkippedGlobal
           << ", weak-fences " << S.SkippedWeakFence << ", asm-unknown " << S.AsmUnknown
           << "\n";
  }

  Module &M;
  SiteTable Sites;
  bool Loads, Sched, CheckLoads, PmMalloc, AllocOnly;
  PmdkMode Pmdk = pmdkMode();
  std::set<std::string> Missed;   // FILE:LINE already reported by missed()
  LLVMContext &Ctx;
  Type *Ptr, *I32, *I64, *VoidTy;
  std::vector<Point> Points;
  std::set<Function *> Helpers;                          // persist helpers (findHelpers)
  std::vector<std::pair<CallInst *, unsigned>> Calls;    // calls that may enter one, with their sites
  std::vector<std::pair<CallInst *, unsigned>> Frames;   // calls that push a shadow stack frame
  std::vector<CheckLoad> Reads;
  std::vector<Instruction *> ToErase;
  Stats S;
};

struct CrashcheckPass : PassInfoMixin<CrashcheckPass> {
  PreservedAnalyses run(Module &M, ModuleAnalysisManager &) {
    bool Loads = envFlag("CRASHCHECK_PASS_LOADS");
    // Scheduling points after atomics: on unless CRASHCHECK_PASS_SCHED=0.
    const char *SchedEnv = std::getenv("CRASHCHECK_PASS_SCHED");
    bool Sched = !SchedEnv || std::string(SchedEnv) != "0";
    // Check loads for lazy exploration: on unless CRASHCHECK_PASS_CHECK_LOADS=0.
    const char *CheckEnv = std::getenv("CRASHCHECK_PASS_CHECK_LOADS");
    bool CheckLoads = !CheckEnv || std::string(CheckEnv) != "0";
    // --pm-malloc: the structure's allocations to the pool; ALLOC_ONLY: nothing else (the
    // untraced driver of crashcheck build allocates where the traced one does).
    bool PmMalloc = envFlag("CRASHCHECK_PASS_PM_MALLOC");
    bool AllocOnly = envFlag("CRASHCHECK_PASS_ALLOC_ONLY");
    if (AllocOnly)
      Loads = Sched = CheckLoads = false;
    bool Changed = Instrumenter(M, Loads, Sched, CheckLoads, PmMalloc, AllocOnly).run();
    if (CheckLoads) {
      // Tells the runner that this module's reads are seen by lazy exploration.
      new GlobalVariable(M, Type::getInt32Ty(M.getContext()), true, GlobalValue::WeakAnyLinkage,
                         ConstantInt::get(Type::getInt32Ty(M.getContext()), 1),
                         "__cc_module_check_loads");
      Changed = true;
    }
    if (Loads) {
      // Tells the runtime (and so the trace header) that loads were instrumented.
      auto *GV = new GlobalVariable(M, Type::getInt32Ty(M.getContext()), true,
                                    GlobalValue::WeakAnyLinkage,
                                    ConstantInt::get(Type::getInt32Ty(M.getContext()), 1),
                                    "__cc_module_loads");
      (void)GV;
      Changed = true;
    }
    return Changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
  }
  static bool isRequired() { return true; } // run on optnone (-O0) functions too
};

} // namespace

// The LLVM of the clang that loaded the plugin: LLVMGetVersion (LLVM 16 on), else the version in
// the name of the library that holds llvm::errs (libLLVM-15.so, libLLVM.so.19.1); 0 if unknown
// (a statically linked clang).
static unsigned hostLLVMMajor() {
  using GetVersion = void (*)(unsigned *, unsigned *, unsigned *);
  if (void *F = dlsym(RTLD_DEFAULT, "LLVMGetVersion")) {
    unsigned Major = 0, Minor = 0, Patch = 0;
    reinterpret_cast<GetVersion>(F)(&Major, &Minor, &Patch);
    return Major;
  }
  Dl_info Info;
  raw_fd_ostream &(*Errs)() = &errs;
  if (!dladdr(reinterpret_cast<void *>(Errs), &Info) || !Info.dli_fname)
    return 0;
  StringRef Lib = sys::path::filename(Info.dli_fname);
  for (StringRef Prefix : {"libLLVM-", "libLLVM.so."})
    if (startsWith(Lib, Prefix)) {
      unsigned Major = 0;
      Lib.drop_front(Prefix.size()).take_while([](char C) { return C >= '0' && C <= '9'; })
          .getAsInteger(10, Major);
      return Major;
    }
  return 0;
}

extern "C" LLVM_ATTRIBUTE_WEAK PassPluginLibraryInfo llvmGetPassPluginInfo() {
  // The plugin uses the LLVM inside the clang that loads it; another LLVM's clang would crash
  // in the registration below.  Say so in one line and stop (exit 2), before touching it.
  unsigned Host = hostLLVMMajor();
  if (Host && Host != LLVM_VERSION_MAJOR) {
    errs() << "crashcheck-pass: built for LLVM " << LLVM_VERSION_MAJOR << " but loaded by clang "
           << Host << "; compile with clang-" << LLVM_VERSION_MAJOR
           << " (crashcheck-cc picks it), or rebuild the pass: make LLVM=" << Host << "\n";
    errs().flush();
    std::_Exit(2);
  }
  return {LLVM_PLUGIN_API_VERSION, "crashcheck", "0.1", [](PassBuilder &PB) {
            PB.registerOptimizerLastEPCallback(
                [](ModulePassManager &MPM, OptimizationLevel) { MPM.addPass(CrashcheckPass()); });
          }};
}
