# instrument/build.mk -- the Clang pass plugin, the runtime library and the wrappers' targets.
# Included by the top-level Makefile; paths are relative to the repository root.

PASS_SO   := $(BUILD)/libcrashcheck_pass.so
RUNTIME_A := $(BUILD)/libcrashcheck_rt.a

PASS_SRCS := $(wildcard instrument/pass/*.cpp)
PASS_OBJS := $(patsubst instrument/pass/%.cpp,$(BUILD)/pass/%.o,$(PASS_SRCS))
RT_SRCS   := $(wildcard instrument/runtime/*.c)
RT_OBJS   := $(patsubst instrument/runtime/%.c,$(BUILD)/runtime/%.o,$(RT_SRCS))

# The plugin links no LLVM libraries: clang-16 already holds them (see shared/TOOLCHAIN.md).
PASS_CXXFLAGS := $(shell $(LLVM_CONFIG) --cxxflags) -fPIC -O2 -g -Wall -Wno-unused-parameter
# crashcheck_own.h: the runtime (and the checker runner, crashsim/build.mk) is crashcheck's own code
RT_CFLAGS     := -O2 -g -Wall -Wextra -fPIC -Iinstrument/include -Iinstrument/runtime -mclflushopt -mclwb \
                 -include instrument/include/crashcheck_own.h

.PHONY: instrument
all: instrument
instrument: $(PASS_SO) $(RUNTIME_A)

$(BUILD)/pass/%.o: instrument/pass/%.cpp $(wildcard instrument/pass/*.h)
	@mkdir -p $(dir $@)
	$(CLANGXX) $(PASS_CXXFLAGS) -c $< -o $@

$(PASS_SO): $(PASS_OBJS)
	$(CLANGXX) -shared -o $@ $^

$(BUILD)/runtime/%.o: instrument/runtime/%.c $(wildcard instrument/runtime/*.h) instrument/include/crashcheck.h \
                      instrument/include/crashcheck_own.h
	@mkdir -p $(dir $@)
	$(CLANG) $(RT_CFLAGS) -c $< -o $@

# $^, not $(RT_OBJS): crashsim/build.mk adds the checker runner's objects to the archive.
$(RUNTIME_A): $(RT_OBJS)
	@rm -f $@
	ar rcs $@ $^
