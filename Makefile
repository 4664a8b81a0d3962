# Makefile -- builds every native part of crashcheck into build/:
#   the Clang pass and runtime (instrument/build.mk), the checker runner
#   (crashsim/build.mk, archived into the runtime library), the trees and their
#   drivers (trees/build.mk).  Python needs no build; scripts/setup installs it.
# Each folder owns its own fragment; this file only ties them together.

# Which LLVM (14 to 19): make LLVM=19, make LLVM_CONFIG=/path/to/llvm-config, or CRASHCHECK_LLVM=19 in
# the environment; default llvm-config-16 if present, else llvm-config on PATH (14..19), else the newest found.  instrument/select-llvm
# decides, and picks the clang of the same LLVM (CLANG=/CLANGXX= on the command line override it).
# BUILD: where everything goes (make BUILD=build-llvm19 LLVM=19 keeps a second LLVM's build apart).
LLVM        ?= $(CRASHCHECK_LLVM)
LLVM_SELECTED := $(shell instrument/select-llvm '$(LLVM)' '$(LLVM_CONFIG)')
ifeq ($(LLVM_SELECTED),)
ifneq ($(MAKECMDGOALS),clean)
$(error no usable LLVM (see the line above))
endif
endif
LLVM_CONFIG := $(word 1,$(LLVM_SELECTED))
CLANG       ?= $(word 2,$(LLVM_SELECTED))
CLANGXX     ?= $(word 3,$(LLVM_SELECTED))
LLVM_MAJOR  := $(word 4,$(LLVM_SELECTED))
BUILD       ?= build
CFLAGS_COMMON := -O2 -g -Wall -Wextra -fno-omit-frame-pointer

.PHONY: all clean
all:

include instrument/build.mk
include crashsim/build.mk
-include trees/build.mk

clean:
	rm -rf $(BUILD)
