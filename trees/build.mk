# trees/build.mk -- builds every structure under test: each folder trees/<t>/ (other than
# common/) that has an adapter.c, generically, into build/trees/<t>/:
#   driver-native       clang -O2 -g, no pass, linked with the runtime (speed baseline, tests)
#   driver              built with instrument/bin/crashcheck-cc (the pass) at -O2: traced runs
#   driver-bug-<name>   one per entry of trees/<t>/bugs.json, like driver plus -D<define>
# Every binary is one clang command over the tree's .c files, the .c files of the shared folders
# the tree names in trees/<t>/shared.txt (if any; e.g. art_engine/ for WOART and ART+CoW, with
# each folder also on the include path) and trees/common/*.c.  A shared folder has no adapter.c,
# so it is no tree itself; its code is compiled into each tree that names it, with that tree's
# flags, so a seeded bug's -D reaches the shared code too.  When the wrapper is missing, the
# traced variants are built natively so work on the trees can go on.
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
TREES_TRACE_LIBS :=
else
TREES_TRACE_CC   := $(CLANG)
TREES_TRACE_DEPS := $(TREES_RT)
TREES_TRACE_LIBS := $(TREES_RT) -lpthread -ldl
endif

# trees_bugs -- "tree:name:DEFINE" for each entry of trees/$(1)/bugs.json, read with $(PYTHON)
# (make PYTHON=...: pip's build passes its own interpreter). A catalog it cannot read stops the
# build: without it the seeded-bug variants would silently not be built.
PYTHON ?= python3
trees_bugs = $(shell $(PYTHON) -c 'import json,sys; print(" ".join("%s:%s:%s" % (sys.argv[2], b["name"], b["define"]) for b in json.load(open(sys.argv[1]))))' trees/$(1)/bugs.json $(1))$(if $(filter 0,$(.SHELLSTATUS)),,$(error trees/$(1)/bugs.json: $(PYTHON) could not read it (make PYTHON=/path/to/python3)))

# trees_shared -- the shared folders tree $(1) names in trees/$(1)/shared.txt (one a line, `#`
# starts a comment); each must hold sources and be neither a tree (no adapter.c) nor common/
TREES_HASH := \#
trees_shared = $(strip $(foreach d,$(if $(wildcard trees/$(1)/shared.txt),$(shell sed -e 's/$(TREES_HASH).*//' trees/$(1)/shared.txt)),\
  $(if $(wildcard trees/$(d)/*.c trees/$(d)/*.h),,$(error trees/$(1)/shared.txt: no sources in trees/$(d)/))\
  $(if $(wildcard trees/$(d)/adapter.c),$(error trees/$(1)/shared.txt: trees/$(d)/ is a tree, not a shared folder))\
  $(if $(filter common,$(d)),$(error trees/$(1)/shared.txt: trees/common/ is in every tree already))\
  $(d)))

TREES_TARGETS :=

# TREE_RULES -- the native and traced drivers of tree $(1)
define TREE_RULES
TREES_$(1)_SHARED := $$(call trees_shared,$(1))
TREES_$(1)_SRCS := $$(wildcard trees/$(1)/*.c) $$(foreach d,$$(TREES_$(1)_SHARED),$$(wildcard trees/$$(d)/*.c)) \
                   $$(TREES_COMMON_SRCS)
TREES_$(1)_CFLAGS := $$(TREES_CFLAGS) $$(addprefix -Itrees/,$$(TREES_$(1)_SHARED))
# A thread-safe tree (its adapter sets .threads) has its traced drivers log loads: a threaded run
# looks for persistency races in them (harness/check/persistency_race.py); single-threaded runs
# turn them off (CRASHCHECK_TRACE_LOADS=0)
TREES_$(1)_LOADS := $$(if $$(and $$(filter $$(TREES_WRAPPER),$$(TREES_TRACE_CC)),$$(shell grep -l '^[[:space:]]*\.threads[[:space:]]*=[[:space:]]*[1-9]' trees/$(1)/adapter.c)),--crashcheck-loads)
# The tree's own and its shared folders' sources and headers: a change in a shared folder
# rebuilds every tree that names it.
TREES_$(1)_DEPS := $$(TREES_$(1)_SRCS) $$(wildcard trees/$(1)/*.h trees/$(1)/shared.txt) \
                   $$(foreach d,$$(TREES_$(1)_SHARED),$$(wildcard trees/$$(d)/*.h)) $$(TREES_COMMON_HDRS)

$(BUILD)/trees/$(1)/driver-native: $$(TREES_$(1)_DEPS) $$(TREES_RT)
	@mkdir -p $$(@D)
	$$(CLANG) $$(TREES_$(1)_CFLAGS) -o $$@ $$(TREES_$(1)_SRCS) $$(TREES_RT) -lpthread -ldl

$(BUILD)/trees/$(1)/driver: $$(TREES_$(1)_DEPS) $$(TREES_TRACE_DEPS)
	@mkdir -p $$(@D)
	$$(TREES_TRACE_CC) $$(TREES_$(1)_CFLAGS) $$(TREES_$(1)_LOADS) -o $$@ $$(TREES_$(1)_SRCS) $$(TREES_TRACE_LIBS)

TREES_TARGETS += $(BUILD)/trees/$(1)/driver-native $(BUILD)/trees/$(1)/driver
endef

# BUG_RULE -- driver-bug-$(2) of tree $(1), built with -D$(3)
define BUG_RULE
$(BUILD)/trees/$(1)/driver-bug-$(2): $$(TREES_$(1)_DEPS) trees/$(1)/bugs.json $$(TREES_TRACE_DEPS)
	@mkdir -p $$(@D)
	$$(TREES_TRACE_CC) $$(TREES_$(1)_CFLAGS) $$(TREES_$(1)_LOADS) -D$(3) -o $$@ $$(TREES_$(1)_SRCS) $$(TREES_TRACE_LIBS)

TREES_TARGETS += $(BUILD)/trees/$(1)/driver-bug-$(2)
endef

$(foreach t,$(TREES),$(eval $(call TREE_RULES,$(t))))
$(foreach t,$(TREES),$(if $(wildcard trees/$(t)/bugs.json),\
  $(foreach b,$(call trees_bugs,$(t)),\
    $(eval $(call BUG_RULE,$(word 1,$(subst :, ,$(b))),$(word 2,$(subst :, ,$(b))),$(word 3,$(subst :, ,$(b))))))))

.PHONY: trees
all: trees
trees: $(TREES_TARGETS)
