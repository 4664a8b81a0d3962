# instrument/build.mk -- the Clang pass plugin, the runtime library and the wrappers' targets.
# Included by the top-level Makefile; paths are relative to the repository root.

PASS_SO   := $(BUILD)/libcrashcheck_pass.so
RUNTIME_A := $(BUILD)/libcrashcheck_rt.a

PASS_SRCS := $(wildcard instrument/pass/*.cpp)
PASS_OBJS := $(patsubst instrument/pass/%.cpp,$(BUILD)/pass/%.o,$(PASS_SRCS))
RT_SRCS   := $(wildcard instrument/runtime/*.c)
RT_OBJS   := $(patsubst instrument/runtime/%.c,$(BUILD)/runtime/%.o,$(RT_SRCS))

# The plugin links no LLVM libraries: the clang that loads it already holds them (see
# shared/TOOLCHAIN.md), so it loads only into the clang of the LLVM it was built with.
# -std=c++17 after llvm-config's: LLVM 14 says c++14, the pass is C++17 (its headers allow it).
PASS_CXXFLAGS := $(if $(LLVM_CONFIG),$(shell $(LLVM_CONFIG) --cxxflags)) -std=c++17 -fPIC -O2 -g -Wall -Wno-unused-parameter

# The toolchain record: which clang the pass was built for.  crashcheck-cc/-c++, the harness
# (harness/target/toolchain.py) and `crashcheck doctor` compile with that clang.  Rewritten only
# when the choice changes, so a change of LLVM rebuilds the pass and the runtime.
TOOLCHAIN := $(BUILD)/toolchain.env
TOOLCHAIN_TEXT := LLVM_MAJOR=$(LLVM_MAJOR)\nLLVM_CONFIG=$(LLVM_CONFIG)\nCLANG=$(CLANG)\nCLANGXX=$(CLANGXX)
ifneq ($(LLVM_MAJOR),)
$(shell mkdir -p $(BUILD) && printf '$(TOOLCHAIN_TEXT)\n' > $(TOOLCHAIN).new && \
        (cmp -s $(TOOLCHAIN).new $(TOOLCHAIN) && rm -f $(TOOLCHAIN).new || mv $(TOOLCHAIN).new $(TOOLCHAIN)))
endif
# crashcheck_own.h: the runtime (and the checker runner, crashsim/build.mk) is crashcheck's own code
RT_CFLAGS     := -O2 -g -Wall -Wextra -fPIC -Iinstrument/include -Iinstrument/runtime -mclflushopt -mclwb \
                 -include instrument/include/crashcheck_own.h

.PHONY: instrument
all: instrument
instrument: $(PASS_SO) $(RUNTIME_A)

$(BUILD)/pass/%.o: instrument/pass/%.cpp $(wildcard instrument/pass/*.h) $(TOOLCHAIN)
	@mkdir -p $(dir $@)
	$(CLANGXX) $(PASS_CXXFLAGS) -c $< -o $@

$(PASS_SO): $(PASS_OBJS)
	$(CLANGXX) -shared -o $@ $^

$(BUILD)/runtime/%.o: instrument/runtime/%.c $(wildcard instrument/runtime/*.h) instrument/include/crashcheck.h \
                      instrument/include/crashcheck_own.h $(TOOLCHAIN)
	@mkdir -p $(dir $@)
	$(CLANG) $(RT_CFLAGS) -c $< -o $@

# $^, not $(RT_OBJS): crashsim/build.mk adds the checker runner's objects to the archive.
$(RUNTIME_A): $(RT_OBJS)
	@rm -f $@
	ar rcs $@ $^
