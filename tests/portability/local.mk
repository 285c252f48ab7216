# tests/portability/: the build does not depend on one compiler's quirks.
#   emu_stdlib.sh  the CUDA emulation's fake headers (tests/emu/include/,
#                  tests/emu/cuda_emu.h) define no name the C or C++
#                  standard library uses: every standard header compiles
#                  after them with the emulation's compiler and flags, and
#                  none of their macros is a word of a system header
#                  (issue 19, item 1: `#define __noinline__` broke libstdc++ 13).
# tools/portability-check.sh (run by .ci/run) builds every C and C++ file
# and this test again with the newest Clang Debian ships.
TESTS += tests/portability/emu_stdlib.sh
EXTRA_DIST += tests/portability/local.mk tests/portability/emu_stdlib.sh
AM_TESTS_ENVIRONMENT += EMU_CXX='$(EMU_CXX)'; EMU_CPPFLAGS='$(EMU_CPPFLAGS)'; EMU_CXXFLAGS='$(EMU_CXXFLAGS)'; \
	export EMU_CXX EMU_CPPFLAGS EMU_CXXFLAGS;

# The C compile flags of this configuration, for tools/portability-check.sh
# (relative to the build folder).
.PHONY: portability-flags
portability-flags:
	@echo '$(DEFS) $(DEFAULT_INCLUDES) $(INCLUDES) $(AM_CPPFLAGS) $(CPPFLAGS) $(AM_CFLAGS) $(CFLAGS)'
