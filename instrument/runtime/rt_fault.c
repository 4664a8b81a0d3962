/*
 * rt_fault.c -- whose fault is a fatal signal: crashcheck's own code, or the structure's
 *
 * crashcheck_fault_guard() installs a handler for SIGSEGV, SIGBUS, SIGILL,
 * SIGFPE and SIGABRT on an alternate stack of its own (a stack overflow must
 * still reach it).  When one arrives it walks the faulting thread's stack
 * (libgcc's unwinder, through the signal frame) and sorts each frame by its
 * address: crashcheck's own code (the section crashcheck_own, see
 * crashcheck_own.h: trees/common, this runtime, the checker runner), the
 * system libraries (C, C++, libgcc, the loader, the vDSO, Valgrind's
 * preloads) and the program's entry, or the structure (the rest of the
 * executable, any other library, an address in no module).  The fault is
 * crashcheck's own when
 *
 *   reentered  one of crashcheck's functions is active twice on the stack:
 *              crashcheck's code does not call itself, so a call it made was
 *              sent back into it (a hook forced into it, a --wrap, a function
 *              of the structure named like one crashcheck calls).  A call
 *              whose callee left by a tail call still counts: the caller's
 *              call instruction names it;
 *   alone      the innermost frame outside the system libraries is
 *              crashcheck's, and no frame of the structure is on a stack
 *              walked to its bottom (crashcheck's code ran on its own: the
 *              set-up, the driver, a check's own work, a runtime thread).
 *
 * Anything else is the structure's, however deep in crashcheck's code it
 * died: the pool allocator handed a bad pointer, a runtime hook logging a
 * wild store, the C library's memcpy called by the structure.  Then
 * nothing is printed.  For crashcheck's own fault one line goes to fd 2,
 *
 *     crashcheck-fault: signal=11 cause=reentered fn=0x4a10 frame=0x4a3b module=/path/driver
 *
 * (fn: the function blamed, frame: an address in it, both as the module's
 * own addresses for a symbolizer; harness/own_fault.py reads it), then the
 * signal goes on to the handler this one replaced, or kills the process.
 * Everything the handler calls at the fault is async-signal-safe but the
 * unwinder, which is loaded and warmed when the guard is installed.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>
#include <unwind.h>

#include "crashcheck_own.h"

/* the section of crashcheck's own code (the linker defines both) */
extern const char __start_crashcheck_own[] __attribute__((weak));
extern const char __stop_crashcheck_own[] __attribute__((weak));

static const int guarded[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT };
#define NGUARDED (sizeof(guarded) / sizeof(guarded[0]))
static struct sigaction replaced[NGUARDED];
static int installed;
static volatile sig_atomic_t busy;

/* The handlers that run on it include the trace's (rt_trace.c's on_fatal, whose header writer
 * alone takes some 330 KiB of stack). */
#define ALTSTACK_BYTES ((size_t)1 << 20)

/* The modules loaded when the guard was installed, and what kind each is. */
enum { MOD_MAIN, MOD_SYS, MOD_OTHER };
#define MAX_MODS 64
#define MAX_SEGS 4
static struct mod {
	uintptr_t bias;
	int kind, nseg;
	uintptr_t lo[MAX_SEGS], hi[MAX_SEGS];
} mods[MAX_MODS];
static int nmods;
static char exe_path[512];
static uintptr_t exe_bias, entry;

/* Frame classes. */
enum { F_OWN, F_SYS, F_STRUCT };

/* sys_name -- a system library (or Valgrind's preload): neither crashcheck nor the structure (internal) */
static int sys_name(const char *path)
{
	static const char *const prefixes[] = { "libc.so", "ld-linux", "ld64.so", "libgcc_s", "libstdc++",
		"libm.so", "libpthread", "libdl.so", "librt.so", "linux-vdso", "linux-gate", "libc++",
		"libunwind", "vgpreload", NULL };
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	for (int i = 0; prefixes[i]; i++)
		if (!strncmp(base, prefixes[i], strlen(prefixes[i])))
			return 1;
	return 0;
}

/* add_module -- note one loaded module's executable segments (internal) */
static int add_module(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	int *first = arg;
	if (nmods == MAX_MODS)
		return 1;
	struct mod *m = &mods[nmods];
	m->bias = info->dlpi_addr;
	m->nseg = 0;
	if (*first) {
		m->kind = MOD_MAIN;
		exe_bias = info->dlpi_addr;
		*first = 0;
	} else {
		m->kind = sys_name(info->dlpi_name ? info->dlpi_name : "") ? MOD_SYS : MOD_OTHER;
	}
	for (int i = 0; i < info->dlpi_phnum && m->nseg < MAX_SEGS; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			m->lo[m->nseg] = info->dlpi_addr + ph->p_vaddr;
			m->hi[m->nseg] = m->lo[m->nseg] + ph->p_memsz;
			m->nseg++;
		}
	}
	nmods++;
	return 0;
}

/* module_of -- the module whose code holds PC, or NULL (internal) */
static const struct mod *module_of(uintptr_t pc)
{
	for (int i = 0; i < nmods; i++)
		for (int s = 0; s < mods[i].nseg; s++)
			if (pc >= mods[i].lo[s] && pc < mods[i].hi[s])
				return &mods[i];
	return NULL;
}

static int own(uintptr_t pc)
{
	return __start_crashcheck_own && pc >= (uintptr_t)__start_crashcheck_own &&
	       pc < (uintptr_t)__stop_crashcheck_own;
}

/* frame_class -- whose code PC (in the function starting at START) is (internal) */
static int frame_class(uintptr_t pc, uintptr_t start)
{
	if (own(pc))
		return F_OWN;
	const struct mod *m = module_of(pc);
	if (m == NULL)
		return F_STRUCT;     /* no code at all: a wild call, nobody's to excuse */
	if (m->kind == MOD_SYS || (m->kind == MOD_MAIN && start == entry))
		return F_SYS;
	return F_STRUCT;
}

/* call_target -- the function the call instruction ending at return address RA called, or 0:
 * `call rel32` and `call *disp32(%rip)` (x86-64) (internal) */
static uintptr_t call_target(uintptr_t ra)
{
	const struct mod *m = module_of(ra);
	if (m == NULL)
		return 0;
	for (int s = 0; s < m->nseg; s++) {
		if (ra < m->lo[s] + 6 || ra > m->hi[s])
			continue;
		const unsigned char *p = (const unsigned char *)ra;
		int32_t rel;
		/* an indirect call through a register (ff /2, with or without REX.B, or with a
		 * one-byte displacement) whose bytes happen to hold an e8 further back is no direct call */
		int indirect = (p[-2] == 0xff && (p[-1] & 0xf8) == 0xd0) ||
			       (p[-3] == 0xff && (p[-2] & 0xf8) == 0x50);
		if (p[-5] == 0xe8 && !indirect) {
			memcpy(&rel, p - 4, 4);
			return ra + (intptr_t)rel;
		}
		if (p[-6] == 0xff && p[-5] == 0x15) {
			uintptr_t slot, t;
			memcpy(&rel, p - 4, 4);
			slot = ra + (intptr_t)rel;
			memcpy(&t, (const void *)slot, sizeof(t));
			return t;
		}
	}
	return 0;
}

/* What the walk found. */
#define SEEN_SLOTS 512
struct walk {
	uintptr_t fault_pc;      /* the interrupted instruction (from the ucontext) */
	int started;             /* past the handler's own frames */
	size_t frames;
	uintptr_t prev_start;    /* the function of the frame walked before (inner) */
	int prev_class;
	uintptr_t seen[SEEN_SLOTS];
	uintptr_t reentered;     /* the function found active twice, or 0 */
	uintptr_t reentered_at;  /* an address in it */
	int innermost;           /* class of the innermost frame outside the system libraries, -1 */
	uintptr_t inner_start, inner_pc;
	int structure;           /* a frame of the structure is on the stack */
	int last_class;          /* the outermost frame's class */
	int complete;            /* the unwinder reached the stack's end */
};

/* activate -- note crashcheck's function FN (an address AT in it) active; a second time is re-entry */
static void activate(struct walk *w, uintptr_t fn, uintptr_t at)
{
	size_t h = (fn >> 4) % SEEN_SLOTS;
	for (size_t i = 0; i < SEEN_SLOTS; i++, h = (h + 1) % SEEN_SLOTS) {
		if (w->seen[h] == fn) {
			if (!w->reentered) {
				w->reentered = fn;
				w->reentered_at = at;
			}
			return;
		}
		if (w->seen[h] == 0) {
			w->seen[h] = fn;
			return;
		}
	}
}

#define MAX_FRAMES ((size_t)1 << 21)

static _Unwind_Reason_Code step(struct _Unwind_Context *ctx, void *arg)
{
	struct walk *w = arg;
	int before = 0;
	uintptr_t ip = _Unwind_GetIPInfo(ctx, &before);
	if (!w->started) {
		/* the handler's frames and the signal trampoline come first */
		if (ip != w->fault_pc)
			return _URC_NO_REASON;
		w->started = 1;
		before = 1;
	}
	if (ip == 0)
		return _URC_END_OF_STACK;
	/* a return address is past its call: look up the call itself */
	uintptr_t pc = before ? ip : ip - 1;
	uintptr_t start = _Unwind_GetRegionStart(ctx);
	int cls = frame_class(pc, start);
	if (cls == F_OWN)
		activate(w, start, pc);
	if (w->frames > 0 && !before) {
		/* this frame called the one walked before it: if the callee it named is crashcheck's
		 * and is not that frame's function, the callee left by a tail call and is still active */
		uintptr_t t = call_target(ip);
		if (t && own(t) && t != w->prev_start)
			activate(w, t, t);
	}
	if (cls == F_STRUCT)
		w->structure = 1;
	if (w->innermost < 0 && cls != F_SYS) {
		w->innermost = cls;
		w->inner_start = start;
		w->inner_pc = pc;
	}
	w->prev_start = start;
	w->prev_class = cls;
	w->last_class = cls;
	w->frames++;
	if (w->reentered || w->frames >= MAX_FRAMES)
		return _URC_NORMAL_STOP;
	return _URC_NO_REASON;
}

/* put_hex -- append "0x<hex>" of V at P (internal) */
static char *put_hex(char *p, uintptr_t v)
{
	char tmp[2 * sizeof(v)];
	int n = 0;
	do {
		tmp[n++] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
	*p++ = '0';
	*p++ = 'x';
	while (n)
		*p++ = tmp[--n];
	return p;
}

static char *put_str(char *p, const char *s)
{
	size_t n = strlen(s);
	memcpy(p, s, n);
	return p + n;
}

/* report -- the one line for crashcheck's own fault (internal) */
static void report(int sig, const char *cause, uintptr_t fn, uintptr_t at)
{
	char line[sizeof(exe_path) + 160], *p = line;
	p = put_str(p, "crashcheck-fault: signal=");
	char num[8];
	int n = 0;
	do {
		num[n++] = (char)('0' + sig % 10);
		sig /= 10;
	} while (sig && n < 7);
	while (n)
		*p++ = num[--n];
	p = put_str(p, " cause=");
	p = put_str(p, cause);
	p = put_str(p, " fn=");
	p = put_hex(p, fn - exe_bias);
	p = put_str(p, " frame=");
	p = put_hex(p, at - exe_bias);
	p = put_str(p, " module=");
	p = put_str(p, exe_path);
	*p++ = '\n';
	ssize_t left = p - line;
	const char *q = line;
	while (left > 0) {
		ssize_t w = write(2, q, (size_t)left);
		if (w <= 0)
			break;
		q += w;
		left -= w;
	}
}

/* pass_on -- the signal to the handler this one replaced, or its default action (internal) */
static void pass_on(int sig, siginfo_t *si, void *uc)
{
	for (size_t i = 0; i < NGUARDED; i++) {
		if (guarded[i] != sig)
			continue;
		struct sigaction *old = &replaced[i];
		if (old->sa_flags & SA_SIGINFO) {
			old->sa_sigaction(sig, si, uc);
			return;
		}
		if (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN) {
			old->sa_handler(sig);
			return;
		}
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

static void on_fault(int sig, siginfo_t *si, void *ucv)
{
	if (!busy) {
		busy = 1;
		ucontext_t *uc = ucv;
		struct walk w;
		memset(&w, 0, sizeof(w));
		w.innermost = -1;
		w.fault_pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
		_Unwind_Reason_Code rc = _Unwind_Backtrace(step, &w);
		w.complete = rc == _URC_END_OF_STACK;
		if (!w.started) {
			/* the unwinder could not cross the signal frame: the fault's own frame alone */
			int cls = frame_class(w.fault_pc, 0);
			w.innermost = cls == F_SYS ? -1 : cls;
			w.inner_start = w.inner_pc = w.fault_pc;
		}
		if (w.reentered)
			report(sig, "reentered", w.reentered, w.reentered_at);
		else if (w.started && w.complete && w.innermost == F_OWN && !w.structure && w.last_class == F_SYS)
			report(sig, "alone", w.inner_start, w.inner_pc);
	}
	pass_on(sig, si, ucv);
}

static _Unwind_Reason_Code warm_step(struct _Unwind_Context *ctx, void *arg)
{
	(void)ctx;
	return ++*(int *)arg < 4 ? _URC_NO_REASON : _URC_NORMAL_STOP;
}

void crashcheck_fault_guard(void)
{
	if (installed)
		return;
	installed = 1;
	ssize_t n = readlink("/proc/self/exe", exe_path, sizeof(exe_path) - 1);
	exe_path[n > 0 ? n : 0] = '\0';
	entry = (uintptr_t)getauxval(AT_ENTRY);
	int first = 1;
	dl_iterate_phdr(add_module, &first);
	/* load libgcc's unwinder and its tables now, not in a handler */
	int k = 0;
	_Unwind_Backtrace(warm_step, &k);
	void *altstack = mmap(NULL, ALTSTACK_BYTES, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
	if (altstack != MAP_FAILED) {
		stack_t ss = { .ss_sp = altstack, .ss_size = ALTSTACK_BYTES, .ss_flags = 0 };
		sigaltstack(&ss, NULL);
	}
	for (size_t i = 0; i < NGUARDED; i++) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_fault;
		sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
		sigemptyset(&sa.sa_mask);
		sigaction(guarded[i], &sa, &replaced[i]);
	}
}
