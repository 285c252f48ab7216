# common/numeric/: deterministic inputs and bit-exact formats.
#   include/cplab/philox.h    Philox4x32-10 and the keyed input streams (header-only, C and CUDA)
#   fp8.c, cplab/fp8.h        bf16 and fp8 e4m3 conversions, bit-exact with CUDA's
#   kvformat.c, cplab/kvformat.h  the 656-byte fp8_ds_mla KV entry and the 132-byte indexer entry
# Tests: tests/unit/test_numeric_*.c (cmocka) and, with CUDA, tests/numeric/
# (cplab's conversions against CUDA's host-side ones; needs no GPU).

libcplab_core_la_SOURCES += %reldir%/fp8.c %reldir%/kvformat.c
cplabinclude_HEADERS += include/cplab/philox.h include/cplab/fp8.h include/cplab/kvformat.h

NUMERIC_UNIT_TESTS = tests/unit/test_numeric_philox tests/unit/test_numeric_fp8 tests/unit/test_numeric_kvformat
check_PROGRAMS += $(NUMERIC_UNIT_TESTS)
TESTS += $(NUMERIC_UNIT_TESTS)
tests_unit_test_numeric_philox_SOURCES = tests/unit/test_numeric_philox.c tests/unit/testutil.h
tests_unit_test_numeric_philox_LDADD = $(TEST_UNIT_LIBS)
tests_unit_test_numeric_fp8_SOURCES = tests/unit/test_numeric_fp8.c tests/unit/testutil.h \
	tests/numeric/fp8_tables.h tests/numeric/fp8_digests.h
tests_unit_test_numeric_fp8_LDADD = $(TEST_UNIT_LIBS)
tests_unit_test_numeric_kvformat_SOURCES = tests/unit/test_numeric_kvformat.c tests/unit/testutil.h
tests_unit_test_numeric_kvformat_LDADD = $(TEST_UNIT_LIBS)

# test_numeric_fp8_cuda runs CUDA's host-side conversions (no GPU needed);
# test_numeric_fp8_device runs them, and philox.h, on the GPU (TAP skip plan
# where there is none).
EXTRA_DIST += tests/numeric/fp8_vs_cuda.c tests/numeric/fp8_cuda_ref.cu tests/numeric/fp8_cuda_ref.h \
	tests/numeric/fp8_on_device.c tests/numeric/fp8_device.cu tests/numeric/fp8_device.h
if HAVE_CUDA
check_PROGRAMS += tests/numeric/test_numeric_fp8_cuda tests/numeric/test_numeric_fp8_device
TESTS += tests/numeric/test_numeric_fp8_cuda tests/numeric/test_numeric_fp8_device
tests_numeric_test_numeric_fp8_cuda_SOURCES = tests/numeric/fp8_vs_cuda.c tests/numeric/fp8_cuda_ref.cu \
	tests/numeric/fp8_cuda_ref.h tests/numeric/fp8_tables.h tests/numeric/fp8_digests.h
tests_numeric_test_numeric_fp8_cuda_LDADD = $(CPLAB_CORE_LIBS) $(CUDA_LIBS)
tests_numeric_test_numeric_fp8_device_SOURCES = tests/numeric/fp8_on_device.c tests/numeric/fp8_device.cu \
	tests/numeric/fp8_device.h tests/numeric/fp8_tables.h
tests_numeric_test_numeric_fp8_device_LDADD = $(CPLAB_CORE_LIBS) $(CUDA_LIBS)
endif
# nvcc objects: header dependencies by hand (the .cu.o rule tracks none).
tests/numeric/fp8_cuda_ref.o: $(srcdir)/tests/numeric/fp8_cuda_ref.h
tests/numeric/fp8_device.o: $(top_srcdir)/include/cplab/philox.h $(srcdir)/tests/numeric/fp8_device.h
