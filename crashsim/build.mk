# crashsim/build.mk -- the C part of crashsim: the checker runner (crashsim/runner/*.c), the fork
# server a tree driver's `serve` mode hands over to (docs/runner-protocol.md).
# Included by the top-level Makefile after instrument/build.mk; paths are relative to the root.
#
# The runner is never instrumented: it is compiled with the runtime's flags (its own header folder
# instead of the runtime's) and archived into the runtime library, because every driver already
# links that one: crashcheck-cc adds it to traced and bug-variant drivers, trees/build.mk to the
# native ones, `crashcheck build` to a user's, and the tests and benches that build drivers or
# runner fixtures link it by name.  Code that never calls cc_runner_serve pulls none of it in.

RUNNER_SRCS   := $(wildcard crashsim/runner/*.c)
RUNNER_HDRS   := $(wildcard crashsim/runner/*.h)
RUNNER_OBJS   := $(patsubst crashsim/runner/%.c,$(BUILD)/crashsim/runner/%.o,$(RUNNER_SRCS))
RUNNER_CFLAGS := $(patsubst -Iinstrument/runtime,-Icrashsim/runner,$(RT_CFLAGS))

$(BUILD)/crashsim/runner/%.o: crashsim/runner/%.c $(RUNNER_HDRS) instrument/include/crashcheck_own.h
	@mkdir -p $(dir $@)
	$(CLANG) $(RUNNER_CFLAGS) -c $< -o $@

# instrument/build.mk archives all of $(RUNTIME_A)'s prerequisites ($^), these included.
$(RUNTIME_A): $(RUNNER_OBJS)

# crashcheck-shield (crashsim/shield/shield.c): the parent of every supervised run's driver
# (harness/core/supervise.py): sets its limits, waits, passes on how it ended.  A program of its
# own (not in the runtime library), plain C without the runtime's flags; installed with build/.
# Linked statically where the C library allows it: no dynamic loader to run, 0.2 ms less CPU per
# supervised run (a judged image in program mode); dynamically where there is no static libc.
SHIELD := $(BUILD)/bin/crashcheck-shield
all: $(SHIELD)
$(SHIELD): crashsim/shield/shield.c
	@mkdir -p $(dir $@)
	$(CLANG) $(CFLAGS_COMMON) -static -o $@ $< 2>/dev/null || $(CLANG) $(CFLAGS_COMMON) -o $@ $<
