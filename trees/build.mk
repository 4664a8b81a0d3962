# trees/build.mk -- builds every structure under test: each folder trees/<t>/ (other than
# common/) that has an adapter.c, generically, into build/trees/<t>/:
#   driver-native       clang -O2 -g, no pass, linked with the runtime (speed baseline, tests)
#   driver              built with instrument/bin/crashcheck-cc (the pass) at -O2: traced runs
#   driver-bug-<name>   one per entry of trees/<t>/bugs.json, like driver plus -D<define> (a
#                       many-bug variant: plus the -D<define> of every seeded bug it names)
# Every binary links the tree's .c files, the .c files of the shared folders the tree names in
# trees/<t>/shared.txt (if any; e.g. art_engine/ for WOART and ART+CoW, with each folder also on
# the include path) and trees/common/*.c, each compiled on its own into build/trees-obj/ (the
# same compiles one clang command over them all would make).  A shared folder has no adapter.c,
# so it is no tree itself; its code is compiled for each tree that names it, with that tree's
# flags.  Compiled once and linked into many binaries (a build of every tree was ~65 full compiles
# of the same files, most of scripts/setup's time): trees/common once per flavour (native,
# traced), a tree's own and shared sources once per flavour, and for a seeded bug only the files
# its -D<define> can change -- those whose text names the define, all of the tree's when one of
# its headers does, all of them with trees/common's when a header or source there does (a define
# acts only where its name is written; none is pasted together with ##).  When the wrapper is
# missing, the traced variants are built natively so work on the trees can go on.
# Included by the top-level Makefile (which defines BUILD, CLANG and instrument's variables).

TREES_RT      := $(or $(RUNTIME_A),$(BUILD)/libcrashcheck_rt.a)
TREES_PASS    := $(or $(PASS_SO),$(BUILD)/libcrashcheck_pass.so)
TREES_WRAPPER := instrument/bin/crashcheck-cc
TREES         := $(filter-out common,$(patsubst trees/%/adapter.c,%,$(wildcard trees/*/adapter.c)))

TREES_COMMON_SRCS := $(wildcard trees/common/*.c)
TREES_COMMON_HDRS := $(wildcard trees/common/*.h) instrument/include/crashcheck.h \
                     $(wildcard crashsim/runner/runner.h)
# -Icrashsim/runner for runner.h (the checker runner's fork server, used by `serve`); its code is
# in the runtime library (crashsim/build.mk), so a change to it relinks every driver through TREES_RT
# TREES_EXTRA_CFLAGS: e.g. -DCC_FLUSH=CC_FLUSH_CLWB (see trees/common/persist.h); `make -B trees ...`
TREES_EXTRA_CFLAGS ?=
TREES_CFLAGS := -O2 -g -std=gnu11 -Wall -Wextra -fno-omit-frame-pointer \
                -Itrees/common -Iinstrument/include -Icrashsim/runner $(TREES_EXTRA_CFLAGS)

ifneq ($(wildcard $(TREES_WRAPPER)),)
# the wrapper takes the pass and runtime this build links with (the folder of PASS_SO: make
# BUILD=..., a pip install's own folder, or build/ when a bench puts only its drivers elsewhere
# with PASS_SO and RUNTIME_A), not the checkout's build/ it would use by default
TREES_TRACE_CC   := CRASHCHECK_BUILD=$(abspath $(dir $(TREES_PASS))) $(TREES_WRAPPER)
TREES_TRACE_DEPS := $(TREES_WRAPPER) $(TREES_PASS) $(TREES_RT)
TREES_TRACE_OBJ_DEPS := $(TREES_WRAPPER) $(TREES_PASS)
TREES_TRACE_LIBS :=
else
TREES_TRACE_CC   := $(CLANG)
TREES_TRACE_DEPS := $(TREES_RT)
TREES_TRACE_OBJ_DEPS :=
TREES_TRACE_LIBS := $(TREES_RT) -lpthread -ldl
endif
# a change of LLVM (the clang in toolchain.env) recompiles the native objects too
TREES_NATIVE_OBJ_DEPS := $(wildcard $(or $(TOOLCHAIN),$(BUILD)/toolchain.env))

# trees_obj -- the object of source $(3) for folder $(1) of build/trees-obj/ (common, a tree, or
# a tree's bug-<name>) in flavour $(2) (native, traced, traced-loads)
TREES_OBJ := $(BUILD)/trees-obj
trees_obj = $(patsubst %.c,$(TREES_OBJ)/$(1)/$(2)/%.o,$(3))

# trees_mention -- those of the files $(2) whose text names the define $(1) (a whole word)
trees_mention = $(if $(strip $(2)),$(shell grep -lw -e '$(1)' $(2)))

# trees/common, once per flavour, with no tree's flags (no shared folder on its include path: its
# own folder comes first, so its includes find the same files)
TREES_COMMON_NATIVE := $(call trees_obj,common,native,$(TREES_COMMON_SRCS))
TREES_COMMON_TRACED := $(call trees_obj,common,traced,$(TREES_COMMON_SRCS))
$(TREES_COMMON_NATIVE): $(TREES_OBJ)/common/native/%.o: %.c $(TREES_COMMON_HDRS) $(TREES_NATIVE_OBJ_DEPS)
	@mkdir -p $(@D)
	$(CLANG) $(TREES_CFLAGS) -c $< -o $@
$(TREES_COMMON_TRACED): $(TREES_OBJ)/common/traced/%.o: %.c $(TREES_COMMON_HDRS) $(TREES_TRACE_OBJ_DEPS)
	@mkdir -p $(@D)
	$(TREES_TRACE_CC) $(TREES_CFLAGS) -c $< -o $@
# (and once more logging loads, for the thread-safe trees' traced drivers: TREE_RULES)
TREES_COMMON_TRACED_LOADS := $(call trees_obj,common,traced-loads,$(TREES_COMMON_SRCS))
$(TREES_COMMON_TRACED_LOADS): $(TREES_OBJ)/common/traced-loads/%.o: %.c $(TREES_COMMON_HDRS) $(TREES_TRACE_OBJ_DEPS)
	@mkdir -p $(@D)
	$(TREES_TRACE_CC) $(TREES_CFLAGS) --crashcheck-loads -c $< -o $@

# trees_bugs -- "tree:name:DEFINE" for each entry of trees/$(1)/bugs.json, read with $(PYTHON)
# (make PYTHON=...: pip's build passes its own interpreter); for a many-bug variant (an entry naming
# "bugs" instead of a define) DEFINE is the defines of those entries joined by commas. A catalog it
# cannot read stops the build: without it the seeded-bug variants would silently not be built.
PYTHON ?= python3
TREES_COMMA := ,
trees_bugs = $(shell $(PYTHON) -c 'import json,sys; c = json.load(open(sys.argv[1])); d = {b["name"]: b.get("define") for b in c}; print(" ".join("%s:%s:%s" % (sys.argv[2], b["name"], ",".join(d[n] for n in b["bugs"]) if "bugs" in b else b["define"]) for b in c))' trees/$(1)/bugs.json $(1))$(if $(filter 0,$(.SHELLSTATUS)),,$(error trees/$(1)/bugs.json: $(PYTHON) could not read it (make PYTHON=/path/to/python3)))

# trees_shared -- the shared folders tree $(1) names in trees/$(1)/shared.txt (one a line, `#`
# starts a comment); each must hold sources and be neither a tree (no adapter.c) nor common/
TREES_HASH := \#
trees_shared = $(strip $(foreach d,$(if $(wildcard trees/$(1)/shared.txt),$(shell sed -e 's/$(TREES_HASH).*//' trees/$(1)/shared.txt)),\
  $(if $(wildcard trees/$(d)/*.c trees/$(d)/*.h),,$(error trees/$(1)/shared.txt: no sources in trees/$(d)/))\
  $(if $(wildcard trees/$(d)/adapter.c),$(error trees/$(1)/shared.txt: trees/$(d)/ is a tree, not a shared folder))\
  $(if $(filter common,$(d)),$(error trees/$(1)/shared.txt: trees/common/ is in every tree already))\
  $(d)))

TREES_TARGETS :=

# TREE_RULES -- the objects and the native and traced drivers of tree $(1)
define TREE_RULES
TREES_$(1)_SHARED := $$(call trees_shared,$(1))
# its own and its shared folders' sources (compiled with its flags), in link order
TREES_$(1)_OWN := $$(wildcard trees/$(1)/*.c) $$(foreach d,$$(TREES_$(1)_SHARED),$$(wildcard trees/$$(d)/*.c))
TREES_$(1)_CFLAGS := $$(TREES_CFLAGS) $$(addprefix -Itrees/,$$(TREES_$(1)_SHARED))
# its own and its shared folders' headers: a change in one recompiles each of the tree's sources
# (and so rebuilds every driver of every tree that names the folder)
TREES_$(1)_HDRS := $$(wildcard trees/$(1)/*.h trees/$(1)/shared.txt) \
                   $$(foreach d,$$(TREES_$(1)_SHARED),$$(wildcard trees/$$(d)/*.h))
# A thread-safe tree (its adapter sets .threads) has its traced drivers log loads: a threaded run
# looks for persistency races in them (harness/check/persistency_race.py); single-threaded runs
# turn them off (CRASHCHECK_TRACE_LOADS=0). Its drivers link trees/common's traced-loads objects.
TREES_$(1)_LOADS := $$(if $$(and $$(filter $$(TREES_WRAPPER),$$(TREES_TRACE_CC)),$$(shell grep -l '^[[:space:]]*\.threads[[:space:]]*=[[:space:]]*[1-9]' trees/$(1)/adapter.c)),--crashcheck-loads)
TREES_$(1)_COMMON_FLAVOUR := $$(if $$(TREES_$(1)_LOADS),traced-loads,traced)
TREES_$(1)_NATIVE := $$(call trees_obj,$(1),native,$$(TREES_$(1)_OWN))
TREES_$(1)_TRACED := $$(call trees_obj,$(1),traced,$$(TREES_$(1)_OWN))
TREES_$(1)_COMMON_TRACED := $$(call trees_obj,common,$$(TREES_$(1)_COMMON_FLAVOUR),$$(TREES_COMMON_SRCS))

$$(TREES_$(1)_NATIVE): $(TREES_OBJ)/$(1)/native/%.o: %.c $$(TREES_$(1)_HDRS) $$(TREES_COMMON_HDRS) $$(TREES_NATIVE_OBJ_DEPS)
	@mkdir -p $$(@D)
	$$(CLANG) $$(TREES_$(1)_CFLAGS) -c $$< -o $$@

$$(TREES_$(1)_TRACED): $(TREES_OBJ)/$(1)/traced/%.o: %.c $$(TREES_$(1)_HDRS) $$(TREES_COMMON_HDRS) $$(TREES_TRACE_OBJ_DEPS)
	@mkdir -p $$(@D)
	$$(TREES_TRACE_CC) $$(TREES_$(1)_CFLAGS) $$(TREES_$(1)_LOADS) -c $$< -o $$@

$(BUILD)/trees/$(1)/driver-native: $$(TREES_$(1)_NATIVE) $$(TREES_COMMON_NATIVE) $$(TREES_RT)
	@mkdir -p $$(@D)
	$$(CLANG) -o $$@ $$(TREES_$(1)_NATIVE) $$(TREES_COMMON_NATIVE) $$(TREES_RT) -lpthread -ldl

$(BUILD)/trees/$(1)/driver: $$(TREES_$(1)_TRACED) $$(TREES_$(1)_COMMON_TRACED) $$(TREES_TRACE_DEPS)
	@mkdir -p $$(@D)
	$$(TREES_TRACE_CC) -o $$@ $$(TREES_$(1)_TRACED) $$(TREES_$(1)_COMMON_TRACED) $$(TREES_TRACE_LIBS)

TREES_TARGETS += $(BUILD)/trees/$(1)/driver-native $(BUILD)/trees/$(1)/driver
endef

# trees_touched -- the sources of tree $(1) that the define $(2) can change (see the top)
trees_touched = $(strip \
  $(if $(call trees_mention,$(2),$(TREES_COMMON_SRCS) $(TREES_COMMON_HDRS)),$(TREES_$(1)_OWN) $(TREES_COMMON_SRCS),\
  $(if $(call trees_mention,$(2),$(filter %.h,$(TREES_$(1)_HDRS))),$(TREES_$(1)_OWN),\
  $(call trees_mention,$(2),$(TREES_$(1)_OWN)))))

# BUG_RULE -- driver-bug-$(2) of tree $(1), built with -D$(3) (each of them, for the commas of a
# many-bug variant): the sources any of them changes compiled again with all of them, the others'
# traced objects reused
define BUG_RULE
TREES_$(1)_BUG_$(2)_DEFS := $$(subst $$(TREES_COMMA), ,$(3))
TREES_$(1)_BUG_$(2)_TOUCHED := $$(sort $$(foreach d,$$(TREES_$(1)_BUG_$(2)_DEFS),$$(call trees_touched,$(1),$$(firstword $$(subst =, ,$$(d))))))
TREES_$(1)_BUG_$(2)_OBJS := $$(call trees_obj,$(1)/bug-$(2),traced,$$(TREES_$(1)_BUG_$(2)_TOUCHED))
TREES_$(1)_BUG_$(2)_LINK := $$(foreach s,$$(TREES_$(1)_OWN) $$(TREES_COMMON_SRCS),$$(if \
    $$(filter $$(s),$$(TREES_$(1)_BUG_$(2)_TOUCHED)),$$(call trees_obj,$(1)/bug-$(2),traced,$$(s)),$$(if \
    $$(filter $$(s),$$(TREES_COMMON_SRCS)),$$(call trees_obj,common,$$(TREES_$(1)_COMMON_FLAVOUR),$$(s)),$$(call trees_obj,$(1),traced,$$(s)))))

$$(TREES_$(1)_BUG_$(2)_OBJS): $(TREES_OBJ)/$(1)/bug-$(2)/traced/%.o: %.c $$(TREES_$(1)_HDRS) $$(TREES_COMMON_HDRS) \
                               trees/$(1)/bugs.json $$(TREES_TRACE_OBJ_DEPS)
	@mkdir -p $$(@D)
	$$(TREES_TRACE_CC) $$(TREES_$(1)_CFLAGS) $$(TREES_$(1)_LOADS) $$(addprefix -D,$$(TREES_$(1)_BUG_$(2)_DEFS)) -c $$< -o $$@

$(BUILD)/trees/$(1)/driver-bug-$(2): $$(TREES_$(1)_BUG_$(2)_LINK) $$(TREES_TRACE_DEPS)
	@mkdir -p $$(@D)
	$$(TREES_TRACE_CC) -o $$@ $$(TREES_$(1)_BUG_$(2)_LINK) $$(TREES_TRACE_LIBS)

TREES_TARGETS += $(BUILD)/trees/$(1)/driver-bug-$(2)
endef

$(foreach t,$(TREES),$(eval $(call TREE_RULES,$(t))))
$(foreach t,$(TREES),$(if $(wildcard trees/$(t)/bugs.json),\
  $(foreach b,$(call trees_bugs,$(t)),\
    $(eval $(call BUG_RULE,$(word 1,$(subst :, ,$(b))),$(word 2,$(subst :, ,$(b))),$(word 3,$(subst :, ,$(b))))))))

.PHONY: trees
all: trees
trees: $(TREES_TARGETS)
