# tests/emu/: the GPU kernel tests run on the CPU, through an emulation of the
# CUDA execution model (tests/emu/cuda_emu.h: what it emulates, its limits),
# so that the kernels' logic is checked by every `make check`, GPU or not.
#   1. tools/cuda-emu/cu2emu.py rewrites each kernels/X.cu into
#      tests/emu/gen/X.emu.cpp (launches and extern __shared__ only);
#   2. $(EMU_CXX) (g++, C++20) compiles it against the fake CUDA headers of
#      tests/emu/include/, ahead of every other include path;
#   3. the objects, the runtime (cuda_emu.cpp) and host stand-ins for the
#      cuBLASLt GEMMs (gemm_host.cpp; gemm.cu itself needs cuBLASLt) and for
#      the streams, events and graphs (stream_host.cpp; the runtime has none
#      of them, stream.cu has no kernels) form tests/emu/libcplab_emu.a;
#   4. tests/emu/test_emu_X links the unchanged tests/gpu/test_gpu_X.c (or
#      tests/gpu/gpu_probe.c) and kt.c against it; tests/emu/emu_X.sh runs it;
#      test_emu_numeric_fp8 is tests/numeric/fp8_on_device.c with
#      tests/numeric/fp8_device.cu through the same pipeline;
#      test_emu_restore (tests/emu/test_emu_restore.c) tests restore.cu (plain
#      C: tests/gpu/gpu_restore.sh runs the same program on a GPU).
# test_emu_self checks the emulator itself (conversions against cplab/fp8.h,
# barriers, warp collectives, shared memory, launch errors, deadlocks, the
# models of kernels/mma.cuh and kernels/cluster.cuh).
# test_emu_moe runs test_gpu_moe with CPLAB_KT_SMALL=1: its DeepSeek-size
# cases (about 22.5 GB of generated weights, more than a CI machine holds)
# run on GPUs only.
# test_emu_stream runs test_gpu_stream against gen.cu's bf16 generator and
# the stand-in stream_host.cpp (not stream.cu: what it checks of streams,
# events and graphs is the stand-in and the test's own logic).
# Built whenever the rest is: no configure test; g++ comes with the build
# tools (Debian build-essential). Override with `make EMU_CXX=...`.
EMU_CXX = g++
EMU_PY = python3
# Sanitizer builds instrument the emulated kernels too (the fibers tell ASan
# about their stacks), so an out-of-bounds kernel access is reported.
EMU_CXXFLAGS = -std=c++20 -O1 -g -Wall -Wno-unknown-pragmas $(CPLAB_SAN_FLAGS)
EMU_CPPFLAGS = -I$(top_srcdir)/tests/emu/include -I$(top_srcdir)/include -I$(top_srcdir)/kernels \
	-I$(top_srcdir)/tests/gpu -I$(top_builddir)
EMU_COMPILE = $(EMU_CXX) $(EMU_CPPFLAGS) $(EMU_CXXFLAGS)
EMU_CU2EMU = $(EMU_PY) $(top_srcdir)/tools/cuda-emu/cu2emu.py
AM_V_EMU = $(am__v_EMU_@AM_V@)
am__v_EMU_ = $(am__v_EMU_@AM_DEFAULT_V@)
am__v_EMU_0 = @echo "  EMUCXX  " $@;
am__v_EMU_1 =

# Every emulated object depends on all of these (a static list, like the
# nvcc objects' in kernels/local.mk).
EMU_HDRS = $(top_srcdir)/tests/emu/cuda_emu.h $(top_srcdir)/tests/emu/include/cuda_runtime.h \
	$(top_srcdir)/tests/emu/include/cuda_bf16.h $(top_srcdir)/tests/emu/include/cuda_fp8.h \
	$(top_srcdir)/tests/emu/include/cuda_emu_mma.h $(top_srcdir)/tests/emu/include/cuda_emu_cluster.h
EMU_DEPS = $(EMU_HDRS) $(top_srcdir)/tools/cuda-emu/cu2emu.py $(top_srcdir)/kernels/cplab_kernels.h \
	$(top_srcdir)/kernels/check.cuh $(top_srcdir)/kernels/kformat.cuh $(top_srcdir)/kernels/cplab_moe.h \
	$(top_srcdir)/kernels/cplab_stream.h $(top_srcdir)/kernels/gemm_args.cuh $(top_srcdir)/kernels/mma.cuh \
	$(top_srcdir)/kernels/cluster.cuh $(top_srcdir)/kernels/mla_tc.cuh $(top_srcdir)/kernels/idx_tc.cuh \
	$(top_srcdir)/kernels/topk_key.cuh $(top_srcdir)/kernels/cache_slot.cuh $(top_srcdir)/kernels/topk_block.cuh $(top_srcdir)/kernels/topk_radix.cuh \
	$(top_srcdir)/kernels/topk_bins.cuh $(top_srcdir)/include/cplab/error.h $(top_srcdir)/include/cplab/kvformat.h $(top_srcdir)/include/cplab/philox.h

EMU_KERNEL_OBJECTS = tests/emu/gen/probe.emu.o tests/emu/gen/devinfo.emu.o tests/emu/gen/devmem.emu.o tests/emu/gen/poison.emu.o \
	tests/emu/gen/gen.emu.o tests/emu/gen/gather.emu.o tests/emu/gen/indexer.emu.o tests/emu/gen/indexer_decode.emu.o tests/emu/gen/topk.emu.o \
	tests/emu/gen/topk_merge.emu.o tests/emu/gen/convert.emu.o tests/emu/gen/attention_prefill.emu.o tests/emu/gen/attention_decode.emu.o tests/emu/gen/combine.emu.o \
	tests/emu/gen/restore.emu.o tests/emu/gen/moe.emu.o tests/emu/gen/quant.emu.o
EMU_OBJECTS = $(EMU_KERNEL_OBJECTS) tests/emu/cuda_emu.o tests/emu/gemm_host.o tests/emu/stream_host.o
EMU_GENERATED = tests/emu/gen/probe.emu.cpp tests/emu/gen/devinfo.emu.cpp tests/emu/gen/devmem.emu.cpp tests/emu/gen/poison.emu.cpp \
	tests/emu/gen/gen.emu.cpp tests/emu/gen/gather.emu.cpp tests/emu/gen/indexer.emu.cpp tests/emu/gen/indexer_decode.emu.cpp \
	tests/emu/gen/topk.emu.cpp tests/emu/gen/topk_merge.emu.cpp tests/emu/gen/convert.emu.cpp tests/emu/gen/attention_prefill.emu.cpp tests/emu/gen/attention_decode.emu.cpp \
	tests/emu/gen/combine.emu.cpp tests/emu/gen/restore.emu.cpp tests/emu/gen/moe.emu.cpp tests/emu/gen/quant.emu.cpp \
	tests/emu/gen/test_emu_self.emu.cpp tests/emu/gen/fp8_device.emu.cpp
CLEANFILES += $(EMU_GENERATED) $(EMU_OBJECTS) tests/emu/gen/test_emu_self.emu.o tests/emu/gen/fp8_device.emu.o \
	tests/emu/libcplab_emu.a

# One rule per file: pattern rules are GNU make only. The generated C++
# starts with #line "kernels/X.cu", so messages name the kernel source.
tests/emu/gen/probe.emu.cpp: $(top_srcdir)/kernels/probe.cu $(top_srcdir)/tools/cuda-emu/cu2emu.py
	@$(MKDIR_P) tests/emu/gen
	$(AM_V_GEN)$(EMU_CU2EMU) $(top_srcdir)/kernels/probe.cu $@
tests/emu/gen/devinfo.emu.cpp: $(top_srcdir)/kernels/devinfo.cu $(top_srcdir)/tools/cuda-emu/cu2emu.py
	@$(MKDIR_P) tests/emu/gen
	$(AM_V_GEN)$(EMU_CU2EMU) $(top_srcdir)/kernels/devinfo.cu $@
tests/emu/gen/devmem.emu.cpp: $(top_srcdir)/kernels/devmem.cu $(top_srcdir)/tools/cuda-emu/cu2emu.py
	@$(MKDIR_P) tests/emu/gen
	$(AM_V_GEN)$(EMU_CU2EMU) $(top_srcdir)/kernels/devmem.cu $@
tests/emu/gen/poison.emu.cpp: $(top_srcdir)/kernels/poison.cu $(top_srcdir)/tools/cuda-emu/cu2emu.py
	@$(MKDIR_P) tests/emu/gen
	$(AM_V_GEN)$(EMU_CU2EMU) $(top_srcdir)/kernels/poison.cu $@
tests/emu/gen/gen.emu.cpp: $(top_srcdir)/kernels/gen.cu $(top_srcdir)/tools/cuda-emu/cu2emu.py
	@$(MKDIR_P) tests/emu/gen
	$(AM_V_GEN)$(EMU_CU2EMU) $(top_srcdir)/kernels/gen.cu $@
tests/emu/gen/gather.emu.cpp: $(top_srcdir)/kernels/gather.cu $(top_srcdir)/tools/cuda-emu/cu2emu.py
	@$(MKDIR_P) tests/emu/gen
	$(AM_V_GEN)$(EMU_CU2EMU) $(top_srcdir)/kernels/gather.cu $@
tests/emu/gen/indexer.emu.cpp: $(top_srcdir)/kernels/indexer.cu $(top_srcdir)/tools/cuda-emu/cu2emu.py
	@$(MKDIR_P) tests/emu/gen
	$(AM_V_GEN)$(EMU_CU2EMU) $(top_srcdir)/kernels/indexer.cu $@
tests/emu/gen/topk.emu.cpp: $(top_srcdir)/kernels/topk.cu $(top_srcdir)/tools/cuda-emu/cu2emu.py
	@$(MKDIR_P) tests/emu/gen
	$(AM_V_GEN)$(EMU_CU2EMU) $(top_srcdir)/kernels/topk.cu $@
tests/emu/gen/topk_merge.emu.cpp: $(top_srcdir)/kernels/topk_merge.cu $(top_srcdir)/tools/cuda-emu/cu2emu.py
	@$(MKDIR_P) tests/emu/gen
	$(AM_V_GEN)$(EMU_CU2EMU) $(top_srcdir)/kernels/topk_merge.cu $@
tests/emu/gen/convert.emu.cpp: $(top_srcdir)/kernels/convert.cu $(top_srcdir)/tools/cuda-emu/cu2emu.py
	@$(MKDIR_P) tests/emu/gen
	$(AM_V_GEN)$(EMU_CU2EMU) $(top_srcdir)/kernels/convert.cu $@
tests/emu/gen/attention_decode.emu.cpp: $(top_srcdir)/kernels/attention_decode.cu $(top_srcdir)/tools/cuda-emu/cu2emu.py
	@$(MKDIR_P) tests/emu/gen
	$(AM_V_GEN)$(EMU_CU2EMU) $(top_srcdir)/kernels/attention_decode.cu $@
tests/emu/gen/attention_prefill.emu.cpp: $(top_srcdir)/kernels/attention_prefill.cu $(top_srcdir)/tools/cuda-emu/cu2emu.py
	@$(MKDIR_P) tests/emu/gen
	$(AM_V_GEN)$(EMU_CU2EMU) $(top_srcdir)/kernels/attention_prefill.cu $@
tests/emu/gen/combine.emu.cpp: $(top_srcdir)/kernels/combine.cu $(top_srcdir)/tools/cuda-emu/cu2emu.py
	@$(MKDIR_P) tests/emu/gen
	$(AM_V_GEN)$(EMU_CU2EMU) $(top_srcdir)/kernels/combine.cu $@
tests/emu/gen/restore.emu.cpp: $(top_srcdir)/kernels/restore.cu $(top_srcdir)/tools/cuda-emu/cu2emu.py
	@$(MKDIR_P) tests/emu/gen
	$(AM_V_GEN)$(EMU_CU2EMU) $(top_srcdir)/kernels/restore.cu $@
tests/emu/gen/moe.emu.cpp: $(top_srcdir)/kernels/moe.cu $(top_srcdir)/tools/cuda-emu/cu2emu.py
	@$(MKDIR_P) tests/emu/gen
	$(AM_V_GEN)$(EMU_CU2EMU) $(top_srcdir)/kernels/moe.cu $@
tests/emu/gen/quant.emu.cpp: $(top_srcdir)/kernels/quant.cu $(top_srcdir)/tools/cuda-emu/cu2emu.py
	@$(MKDIR_P) tests/emu/gen
	$(AM_V_GEN)$(EMU_CU2EMU) $(top_srcdir)/kernels/quant.cu $@
tests/emu/gen/fp8_device.emu.cpp: $(top_srcdir)/tests/numeric/fp8_device.cu $(top_srcdir)/tools/cuda-emu/cu2emu.py
	@$(MKDIR_P) tests/emu/gen
	$(AM_V_GEN)$(EMU_CU2EMU) $(top_srcdir)/tests/numeric/fp8_device.cu $@
tests/emu/gen/test_emu_self.emu.cpp: $(top_srcdir)/tests/emu/test_emu_self.cu $(top_srcdir)/tools/cuda-emu/cu2emu.py
	@$(MKDIR_P) tests/emu/gen
	$(AM_V_GEN)$(EMU_CU2EMU) $(top_srcdir)/tests/emu/test_emu_self.cu $@
tests/emu/gen/indexer_decode.emu.cpp: $(top_srcdir)/kernels/indexer_decode.cu $(top_srcdir)/tools/cuda-emu/cu2emu.py
	@$(MKDIR_P) tests/emu/gen
	$(AM_V_GEN)$(EMU_CU2EMU) $(top_srcdir)/kernels/indexer_decode.cu $@

tests/emu/gen/probe.emu.o: tests/emu/gen/probe.emu.cpp $(EMU_DEPS)
	$(AM_V_EMU)$(EMU_COMPILE) -c -o $@ tests/emu/gen/probe.emu.cpp
tests/emu/gen/devinfo.emu.o: tests/emu/gen/devinfo.emu.cpp $(EMU_DEPS)
	$(AM_V_EMU)$(EMU_COMPILE) -c -o $@ tests/emu/gen/devinfo.emu.cpp
tests/emu/gen/devmem.emu.o: tests/emu/gen/devmem.emu.cpp $(EMU_DEPS)
	$(AM_V_EMU)$(EMU_COMPILE) -c -o $@ tests/emu/gen/devmem.emu.cpp
tests/emu/gen/poison.emu.o: tests/emu/gen/poison.emu.cpp $(EMU_DEPS)
	$(AM_V_EMU)$(EMU_COMPILE) -c -o $@ tests/emu/gen/poison.emu.cpp
tests/emu/gen/gen.emu.o: tests/emu/gen/gen.emu.cpp $(EMU_DEPS)
	$(AM_V_EMU)$(EMU_COMPILE) -c -o $@ tests/emu/gen/gen.emu.cpp
tests/emu/gen/gather.emu.o: tests/emu/gen/gather.emu.cpp $(EMU_DEPS)
	$(AM_V_EMU)$(EMU_COMPILE) -c -o $@ tests/emu/gen/gather.emu.cpp
tests/emu/gen/indexer.emu.o: tests/emu/gen/indexer.emu.cpp $(EMU_DEPS)
	$(AM_V_EMU)$(EMU_COMPILE) -c -o $@ tests/emu/gen/indexer.emu.cpp
tests/emu/gen/indexer_decode.emu.o: tests/emu/gen/indexer_decode.emu.cpp $(EMU_DEPS)
	$(AM_V_EMU)$(EMU_COMPILE) -c -o $@ tests/emu/gen/indexer_decode.emu.cpp
tests/emu/gen/topk.emu.o: tests/emu/gen/topk.emu.cpp $(EMU_DEPS)
	$(AM_V_EMU)$(EMU_COMPILE) -c -o $@ tests/emu/gen/topk.emu.cpp
tests/emu/gen/topk_merge.emu.o: tests/emu/gen/topk_merge.emu.cpp $(EMU_DEPS)
	$(AM_V_EMU)$(EMU_COMPILE) -c -o $@ tests/emu/gen/topk_merge.emu.cpp
tests/emu/gen/convert.emu.o: tests/emu/gen/convert.emu.cpp $(EMU_DEPS)
	$(AM_V_EMU)$(EMU_COMPILE) -c -o $@ tests/emu/gen/convert.emu.cpp
tests/emu/gen/attention_decode.emu.o: tests/emu/gen/attention_decode.emu.cpp $(EMU_DEPS)
	$(AM_V_EMU)$(EMU_COMPILE) -c -o $@ tests/emu/gen/attention_decode.emu.cpp
tests/emu/gen/attention_prefill.emu.o: tests/emu/gen/attention_prefill.emu.cpp $(EMU_DEPS)
	$(AM_V_EMU)$(EMU_COMPILE) -c -o $@ tests/emu/gen/attention_prefill.emu.cpp
tests/emu/gen/combine.emu.o: tests/emu/gen/combine.emu.cpp $(EMU_DEPS)
	$(AM_V_EMU)$(EMU_COMPILE) -c -o $@ tests/emu/gen/combine.emu.cpp
tests/emu/gen/restore.emu.o: tests/emu/gen/restore.emu.cpp $(EMU_DEPS)
	$(AM_V_EMU)$(EMU_COMPILE) -c -o $@ tests/emu/gen/restore.emu.cpp
tests/emu/gen/moe.emu.o: tests/emu/gen/moe.emu.cpp $(EMU_DEPS)
	$(AM_V_EMU)$(EMU_COMPILE) -c -o $@ tests/emu/gen/moe.emu.cpp
tests/emu/gen/quant.emu.o: tests/emu/gen/quant.emu.cpp $(EMU_DEPS)
	$(AM_V_EMU)$(EMU_COMPILE) -c -o $@ tests/emu/gen/quant.emu.cpp
tests/emu/gen/test_emu_self.emu.o: tests/emu/gen/test_emu_self.emu.cpp $(EMU_DEPS) $(top_srcdir)/tests/gpu/kt.h \
	$(top_srcdir)/include/cplab/fp8.h
	$(AM_V_EMU)$(EMU_COMPILE) -c -o $@ tests/emu/gen/test_emu_self.emu.cpp
tests/emu/gen/fp8_device.emu.o: tests/emu/gen/fp8_device.emu.cpp $(EMU_DEPS) $(top_srcdir)/tests/numeric/fp8_device.h
	$(AM_V_EMU)$(EMU_COMPILE) -I$(top_srcdir)/tests/numeric -c -o $@ tests/emu/gen/fp8_device.emu.cpp
tests/emu/cuda_emu.o: $(top_srcdir)/tests/emu/cuda_emu.cpp $(EMU_HDRS)
	@$(MKDIR_P) tests/emu
	$(AM_V_EMU)$(EMU_COMPILE) -c -o $@ $(top_srcdir)/tests/emu/cuda_emu.cpp
tests/emu/gemm_host.o: $(top_srcdir)/tests/emu/gemm_host.cpp $(EMU_DEPS)
	@$(MKDIR_P) tests/emu
	$(AM_V_EMU)$(EMU_COMPILE) -c -o $@ $(top_srcdir)/tests/emu/gemm_host.cpp
tests/emu/stream_host.o: $(top_srcdir)/tests/emu/stream_host.cpp $(top_srcdir)/kernels/dev_copy.cuh $(EMU_DEPS)
	@$(MKDIR_P) tests/emu
	$(AM_V_EMU)$(EMU_COMPILE) -c -o $@ $(top_srcdir)/tests/emu/stream_host.cpp

tests/emu/libcplab_emu.a: $(EMU_OBJECTS)
	$(AM_V_AR)rm -f $@ && $(AR) cr $@ $(EMU_OBJECTS) && $(RANLIB) $@

# The tests: the GPU tests' own sources, linked against the emulation.
# CPLAB_KT_EMULATED: a GPU test built against the emulation (tolerances of the emulation's model)
EMU_TEST_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/kernels -I$(top_srcdir)/sim -DCPLAB_KT_EMULATED
EMU_TEST_LIBS = tests/emu/libcplab_emu.a libcplab_sim.la $(CPLAB_CORE_LIBS) -lstdc++
EMU_TESTS = tests/emu/emu_self.sh tests/emu/emu_probe.sh tests/emu/emu_gen.sh tests/emu/emu_convert.sh \
	tests/emu/emu_indexer.sh tests/emu/emu_attention.sh tests/emu/emu_gemm.sh tests/emu/emu_numeric_fp8.sh \
	tests/emu/emu_restore.sh tests/emu/emu_moe.sh tests/emu/emu_stream.sh tests/emu/emu_quant.sh
TESTS += $(EMU_TESTS)
EXTRA_DIST += $(EMU_TESTS) tests/emu/local.mk tests/emu/cuda_emu.h tests/emu/cuda_emu.cpp tests/emu/gemm_host.cpp \
	tests/emu/stream_host.cpp \
	tests/emu/test_emu_self.cu tests/emu/include/cuda_runtime.h tests/emu/include/cuda_bf16.h \
	tests/emu/include/cuda_fp8.h tests/emu/include/cuda_emu_mma.h tests/emu/include/cuda_emu_cluster.h

check_PROGRAMS += tests/emu/test_emu_self tests/emu/test_emu_probe tests/emu/test_emu_gen tests/emu/test_emu_convert \
	tests/emu/test_emu_indexer tests/emu/test_emu_attention tests/emu/test_emu_gemm tests/emu/test_emu_numeric_fp8 \
	tests/emu/test_emu_restore tests/emu/test_emu_moe tests/emu/test_emu_stream tests/emu/test_emu_quant
tests_emu_test_emu_self_SOURCES = tests/gpu/kt.c tests/gpu/kt.h
tests_emu_test_emu_self_CPPFLAGS = $(EMU_TEST_CPPFLAGS)
tests_emu_test_emu_self_LDADD = tests/emu/gen/test_emu_self.emu.o $(EMU_TEST_LIBS)
tests_emu_test_emu_probe_SOURCES = tests/gpu/gpu_probe.c
tests_emu_test_emu_probe_CPPFLAGS = $(EMU_TEST_CPPFLAGS)
tests_emu_test_emu_probe_LDADD = $(EMU_TEST_LIBS)
tests_emu_test_emu_gen_SOURCES = tests/gpu/test_gpu_gen.c tests/gpu/kt.c tests/gpu/kt.h
tests_emu_test_emu_gen_CPPFLAGS = $(EMU_TEST_CPPFLAGS)
tests_emu_test_emu_gen_LDADD = $(EMU_TEST_LIBS)
tests_emu_test_emu_convert_SOURCES = tests/gpu/test_gpu_convert.c tests/gpu/kt.c tests/gpu/kt.h
tests_emu_test_emu_convert_CPPFLAGS = $(EMU_TEST_CPPFLAGS)
tests_emu_test_emu_convert_LDADD = $(EMU_TEST_LIBS)
tests_emu_test_emu_indexer_SOURCES = tests/gpu/test_gpu_indexer.c tests/gpu/kt.c tests/gpu/kt.h
tests_emu_test_emu_indexer_CPPFLAGS = $(EMU_TEST_CPPFLAGS)
tests_emu_test_emu_indexer_LDADD = $(EMU_TEST_LIBS)
tests_emu_test_emu_attention_SOURCES = tests/gpu/test_gpu_attention.c tests/gpu/kt.c tests/gpu/kt.h
tests_emu_test_emu_attention_CPPFLAGS = $(EMU_TEST_CPPFLAGS)
tests_emu_test_emu_attention_LDADD = $(EMU_TEST_LIBS)
tests_emu_test_emu_gemm_SOURCES = tests/gpu/test_gpu_gemm.c tests/gpu/kt.c tests/gpu/kt.h
tests_emu_test_emu_gemm_CPPFLAGS = $(EMU_TEST_CPPFLAGS)
tests_emu_test_emu_gemm_LDADD = $(EMU_TEST_LIBS)
tests_emu_test_emu_numeric_fp8_SOURCES = tests/numeric/fp8_on_device.c tests/numeric/fp8_device.h
tests_emu_test_emu_numeric_fp8_CPPFLAGS = $(EMU_TEST_CPPFLAGS)
tests_emu_test_emu_numeric_fp8_LDADD = tests/emu/gen/fp8_device.emu.o $(EMU_TEST_LIBS)
tests_emu_test_emu_restore_SOURCES = tests/emu/test_emu_restore.c tests/gpu/kt.c tests/gpu/kt.h
tests_emu_test_emu_restore_CPPFLAGS = $(EMU_TEST_CPPFLAGS) -I$(top_srcdir)/tests/gpu
tests_emu_test_emu_restore_LDADD = $(EMU_TEST_LIBS)
tests_emu_test_emu_moe_SOURCES = tests/gpu/test_gpu_moe.c tests/gpu/kt.c tests/gpu/kt.h
tests_emu_test_emu_moe_CPPFLAGS = $(EMU_TEST_CPPFLAGS)
tests_emu_test_emu_moe_LDADD = $(EMU_TEST_LIBS)
tests_emu_test_emu_stream_SOURCES = tests/gpu/test_gpu_stream.c tests/gpu/kt.c tests/gpu/kt.h
tests_emu_test_emu_stream_CPPFLAGS = $(EMU_TEST_CPPFLAGS)
tests_emu_test_emu_stream_LDADD = $(EMU_TEST_LIBS)
tests_emu_test_emu_quant_SOURCES = tests/gpu/test_gpu_quant.c tests/gpu/kt.c tests/gpu/kt.h
tests_emu_test_emu_quant_CPPFLAGS = $(EMU_TEST_CPPFLAGS)
tests_emu_test_emu_quant_LDADD = $(EMU_TEST_LIBS)

# The executor under emulation: the cplab_exec library's sources (exec/
# local.mk's EXEC_LIB_SOURCES, unchanged; without NCCL, which the emulation
# has not) built as tests/emu/libcplab_exec_emu.la, and linked with the
# emulated kernels into cplab-exec's single-device backend, so that its
# agreement with cplab-sim --numeric (tests/emu/emu_exec_agree.sh) is
# checked on every machine; the GPU form of that test is
# tests/exec/exec_agree.sh.
check_LTLIBRARIES = tests/emu/libcplab_exec_emu.la
tests_emu_libcplab_exec_emu_la_SOURCES = $(EXEC_LIB_SOURCES)
tests_emu_libcplab_exec_emu_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/kernels
check_PROGRAMS += tests/emu/cplab-exec-emu
tests_emu_cplab_exec_emu_SOURCES = exec/main.c
tests_emu_cplab_exec_emu_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/kernels
tests_emu_cplab_exec_emu_LDADD = tests/emu/libcplab_exec_emu.la libcplab_trace.la tests/emu/libcplab_emu.a \
	$(CPLAB_CORE_LIBS) $(HDF5_LIBS) $(MPI_LIBS) -lstdc++
TESTS += tests/emu/emu_exec_agree.sh
EXTRA_DIST += tests/emu/emu_exec_agree.sh

# cplab-bench's measuring mode under emulation: the unchanged bench sources
# and the same emulated library and kernels, with the host stand-in of
# streams, events and graphs (tests/emu/stream_host.cpp), so that the
# batched engine's attention path is checked against the per-row pass
# (--check) on every machine; its timings here mean nothing.
check_PROGRAMS += tests/emu/cplab-bench-emu
tests_emu_cplab_bench_emu_SOURCES = bench/layers/main.c $(BENCH_MEASURE_SOURCES)
tests_emu_cplab_bench_emu_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/bench/layers -I$(top_srcdir)/exec \
	-DCPLAB_BENCH_ENGINE=1
tests_emu_cplab_bench_emu_LDADD = libcplab_benchplan.la tests/emu/libcplab_exec_emu.la libcplab_trace.la \
	tests/emu/libcplab_emu.a $(CPLAB_CORE_LIBS) $(HDF5_LIBS) $(MPI_LIBS) -lstdc++
EXTRA_DIST += tests/emu/emu_bench.sh # (in TESTS first: Makefile.am)

# cplab-kernel-bench under emulation: its unchanged sources (bench/local.mk's
# KERNEL_BENCH_SOURCES) linked against the emulated kernels, so that its smoke
# cases are checked by every make check (tests/emu/emu_kernel_bench.sh); with
# -DCPLAB_BENCH_EMU=1 bench/ceilings.c uses no CUDA runtime (and reads no L2)
# and bench/kb_job.c is its single-process form (no MPI, no NCCL: the ranked
# kernels, KERNEL_BENCH_RANKED_SOURCES, are not linked, and the driver
# refuses them by name).
check_PROGRAMS += tests/emu/cplab-kernel-bench-emu
tests_emu_cplab_kernel_bench_emu_SOURCES = $(KERNEL_BENCH_SOURCES)
tests_emu_cplab_kernel_bench_emu_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/kernels -I$(top_srcdir)/sim -DCPLAB_BENCH_EMU=1
tests_emu_cplab_kernel_bench_emu_CFLAGS = $(AM_CFLAGS) -pthread
tests_emu_cplab_kernel_bench_emu_LDADD = $(EMU_TEST_LIBS) -lpthread
TESTS += tests/emu/emu_kernel_bench.sh
EXTRA_DIST += tests/emu/emu_kernel_bench.sh
