# tests/gpu/: kernel tests (tests/gpu/test_gpu_*.c) against the C references
# (cplab/kvformat.h, sim/, plan/layouts). Each runs through a small .sh
# wrapper (plain automake driver): SKIP (77) when the build has no CUDA, and
# the program itself exits 77 when the process sees no GPU. Helpers: kt.[ch].
# gpu_probe (the toolchain probe) is wired in tests/local.mk.
GPU_KERNEL_TESTS = tests/gpu/gpu_gen.sh tests/gpu/gpu_convert.sh tests/gpu/gpu_indexer.sh tests/gpu/gpu_attention.sh \
	tests/gpu/gpu_gemm.sh tests/gpu/gpu_moe.sh tests/gpu/gpu_stream.sh tests/gpu/gpu_quant.sh tests/gpu/gpu_restore.sh
TESTS += $(GPU_KERNEL_TESTS)
EXTRA_DIST += $(GPU_KERNEL_TESTS) tests/gpu/kt.c tests/gpu/kt.h tests/gpu/test_gpu_gen.c tests/gpu/test_gpu_convert.c \
	tests/gpu/test_gpu_indexer.c tests/gpu/test_gpu_attention.c tests/gpu/test_gpu_gemm.c tests/gpu/test_gpu_moe.c \
	tests/gpu/test_gpu_stream.c tests/gpu/test_gpu_quant.c

if HAVE_CUDA
GPU_TEST_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/kernels -I$(top_srcdir)/sim
GPU_TEST_LIBS = libcplab_sim.la $(CPLAB_KERNEL_LIBS) $(CPLAB_CORE_LIBS)
check_PROGRAMS += tests/gpu/test_gpu_gen tests/gpu/test_gpu_convert tests/gpu/test_gpu_indexer \
	tests/gpu/test_gpu_attention tests/gpu/test_gpu_gemm tests/gpu/test_gpu_moe tests/gpu/test_gpu_stream \
	tests/gpu/test_gpu_quant tests/gpu/test_gpu_restore
tests_gpu_test_gpu_gen_SOURCES = tests/gpu/test_gpu_gen.c tests/gpu/kt.c tests/gpu/kt.h
tests_gpu_test_gpu_gen_CPPFLAGS = $(GPU_TEST_CPPFLAGS)
tests_gpu_test_gpu_gen_LDADD = $(GPU_TEST_LIBS)
tests_gpu_test_gpu_convert_SOURCES = tests/gpu/test_gpu_convert.c tests/gpu/kt.c tests/gpu/kt.h
tests_gpu_test_gpu_convert_CPPFLAGS = $(GPU_TEST_CPPFLAGS)
tests_gpu_test_gpu_convert_LDADD = $(GPU_TEST_LIBS)
tests_gpu_test_gpu_indexer_SOURCES = tests/gpu/test_gpu_indexer.c tests/gpu/kt.c tests/gpu/kt.h
tests_gpu_test_gpu_indexer_CPPFLAGS = $(GPU_TEST_CPPFLAGS)
tests_gpu_test_gpu_indexer_LDADD = $(GPU_TEST_LIBS)
tests_gpu_test_gpu_attention_SOURCES = tests/gpu/test_gpu_attention.c tests/gpu/kt.c tests/gpu/kt.h
tests_gpu_test_gpu_attention_CPPFLAGS = $(GPU_TEST_CPPFLAGS)
tests_gpu_test_gpu_attention_LDADD = $(GPU_TEST_LIBS)
tests_gpu_test_gpu_gemm_SOURCES = tests/gpu/test_gpu_gemm.c tests/gpu/kt.c tests/gpu/kt.h
tests_gpu_test_gpu_gemm_CPPFLAGS = $(GPU_TEST_CPPFLAGS)
tests_gpu_test_gpu_gemm_LDADD = $(GPU_TEST_LIBS)
tests_gpu_test_gpu_moe_SOURCES = tests/gpu/test_gpu_moe.c tests/gpu/kt.c tests/gpu/kt.h
tests_gpu_test_gpu_moe_CPPFLAGS = $(GPU_TEST_CPPFLAGS)
tests_gpu_test_gpu_moe_LDADD = $(GPU_TEST_LIBS)
tests_gpu_test_gpu_stream_SOURCES = tests/gpu/test_gpu_stream.c tests/gpu/kt.c tests/gpu/kt.h
tests_gpu_test_gpu_stream_CPPFLAGS = $(GPU_TEST_CPPFLAGS)
tests_gpu_test_gpu_stream_LDADD = $(GPU_TEST_LIBS)
tests_gpu_test_gpu_quant_SOURCES = tests/gpu/test_gpu_quant.c tests/gpu/kt.c tests/gpu/kt.h
tests_gpu_test_gpu_quant_CPPFLAGS = $(GPU_TEST_CPPFLAGS)
tests_gpu_test_gpu_quant_LDADD = $(GPU_TEST_LIBS)
# The restore's test is the emulation's program (plain C), built here against the real kernels.
tests_gpu_test_gpu_restore_SOURCES = tests/emu/test_emu_restore.c tests/gpu/kt.c tests/gpu/kt.h
tests_gpu_test_gpu_restore_CPPFLAGS = $(GPU_TEST_CPPFLAGS) -I$(top_srcdir)/tests/gpu
tests_gpu_test_gpu_restore_LDADD = $(GPU_TEST_LIBS)
endif

# cplab-bench's measurement engine on the GPU (the checks shared with
# tests/emu/emu_bench.sh in tests/bench_engine.sh).
TESTS += tests/gpu/gpu_bench.sh
EXTRA_DIST += tests/gpu/gpu_bench.sh tests/bench_engine.sh
