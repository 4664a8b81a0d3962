# Makefile -- builds every native part of crashcheck into build/:
#   the Clang pass and runtime (instrument/build.mk), the checker runner
#   (crashsim/build.mk, archived into the runtime library), the trees and their
#   drivers (trees/build.mk).  Python needs no build; scripts/setup installs it.
# Each folder owns its own fragment; this file only ties them together.

LLVM_CONFIG ?= llvm-config-16
CLANG       ?= clang-16
CLANGXX     ?= clang++-16
BUILD       := build
CFLAGS_COMMON := -O2 -g -Wall -Wextra -fno-omit-frame-pointer

.PHONY: all clean
all:

include instrument/build.mk
include crashsim/build.mk
-include trees/build.mk

clean:
	rm -rf $(BUILD)
