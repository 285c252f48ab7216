# kernels/: CUDA C kernels with extern "C" launchers (cplab_kernels.h), built
# by nvcc for --with-cuda-arch (default sm_90a and sm_100, plus PTX). They form
# a plain archive linked into the programs and GPU tests that use them.
#   probe.cu      device query and toolchain self-test
#   devinfo.cu    the current device's facts the launchers size grids by (SMs,
#                 opt-in shared memory)
#   devmem.cu     device memory for C callers
#   poison.cu     fills of unused memory (bytes, bf16 NaN)
#   gen.cu        generated cache entries (through a slot list), queries and
#                 plain bf16 values (benchmark weights, hidden states)
#   gather.cu     gathers by slot: fp8 entries -> bf16 rows, indexer entries
#   indexer.cu    indexer logits over gathered keys (prefill)
#   indexer_decode.cu  indexer logits straight from the paged cache (decode)
#   topk.cu       per-row exact top-k
#   topk_merge.cu the exact merge of DCP owners' top-k lists
#   convert.cu    top-k -> workspace rows (prefill) / cache slots (decode)
#   attention_prefill.cu  sparse MLA prefill attention (bf16 workspace rows), tensor cores
#   attention_decode.cu   sparse MLA decode attention (fp8 cache), tensor cores, split over
#                 the entries for small batches
#   combine.cu    DCP LSE combine
#   restore.cu    PCP output rows back to global token order
#   quant.cu      per-tensor e4m3 quantisation of activations (fp8 GEMM inputs)
#   gemm.cu       cuBLASLt GEMMs (bf16, fp8 with per-tensor scales), bf16 out
#   moe.cu        the MoE block, one TP×PCP shard (cplab_moe.h): generated
#                 weights, router top-k, permutation, grouped GEMMs, SwiGLU,
#                 un-permute; the partials' reduction
#   stream.cu     streams, timing events and CUDA graphs (cplab_stream.h):
#                 the benchmark engine captures its work on streams of its own
#   check.cuh     CUDA error checks shared by the launchers
#   gemm_args.cuh the GEMM launchers' argument rules (gemm.cu and its CPU stand-in)
#   dev_copy.cuh  the device copies of cplab_stream.h (stream.cu and its CPU stand-in)
#   mma.cuh       the tensor-core and cp.async instructions (emulated in tests/emu)
#   cluster.cuh   thread-block clusters, distributed shared memory and
#                 cluster_launch (sm_90+; emulated in tests/emu)
#   mla_tc.cuh    what both attention kernels do with a tile of 64 bf16 rows
#   idx_tc.cuh    what the indexer logits kernels do with a tile of 64 fp8 keys
#   kformat.cuh   the cache formats on the device
#   topk_key.cuh  the top-k's 64-bit keys (topk.cu and topk_merge.cu)
#   cache_slot.cuh the paged cache's slot rule (convert.cu, topk_merge.cu, topk.cu)
#   topk_block.cuh, topk_radix.cuh, topk_bins.cuh
#                 topk.cu's parts: what its paths share, the radix path,
#                 the bin path (topk.cu keeps the kernels and launchers)
# GPU tests: tests/gpu/local.mk.
KERNEL_SOURCES = %reldir%/probe.cu %reldir%/devinfo.cu %reldir%/devmem.cu %reldir%/poison.cu %reldir%/gen.cu %reldir%/gather.cu \
	%reldir%/indexer.cu %reldir%/indexer_decode.cu %reldir%/topk.cu %reldir%/topk_merge.cu %reldir%/convert.cu %reldir%/attention_prefill.cu %reldir%/attention_decode.cu %reldir%/combine.cu %reldir%/restore.cu \
	%reldir%/gemm.cu %reldir%/moe.cu %reldir%/quant.cu %reldir%/stream.cu
KERNEL_INCLUDES = %reldir%/cplab_kernels.h %reldir%/check.cuh %reldir%/kformat.cuh %reldir%/cplab_moe.h \
	%reldir%/cplab_stream.h %reldir%/gemm_args.cuh %reldir%/dev_copy.cuh %reldir%/mma.cuh %reldir%/cluster.cuh \
	%reldir%/mla_tc.cuh %reldir%/idx_tc.cuh %reldir%/topk_key.cuh %reldir%/cache_slot.cuh %reldir%/topk_block.cuh %reldir%/topk_radix.cuh \
	%reldir%/topk_bins.cuh
EXTRA_DIST += $(KERNEL_SOURCES) $(KERNEL_INCLUDES)

if HAVE_CUDA
noinst_LIBRARIES += kernels/libcplab_kernels.a
kernels_libcplab_kernels_a_SOURCES = $(KERNEL_SOURCES) $(KERNEL_INCLUDES)
# automake's default "cru": binutils warns that 'u' is ignored.
kernels_libcplab_kernels_a_AR = $(AR) cr
# cuBLASLt (shared) after the archive that uses it: gemm.cu is its only user
# (moe.cu calls it through cplab_gemm_bf16).
CPLAB_KERNEL_LIBS = kernels/libcplab_kernels.a $(CUBLASLT_LIBS) $(CUDA_LIBS)
endif

NVCC_COMPILE = $(NVCC) $(NVCC_FLAGS) -I$(top_srcdir)/include -I$(top_srcdir)/kernels -I$(top_builddir)
.cu.o:
	$(AM_V_GEN)$(NVCC_COMPILE) -c -o $@ $<

# nvcc objects: header dependencies by hand (the .cu.o rule tracks none).
KERNEL_COMMON_DEPS = $(srcdir)/%reldir%/cplab_kernels.h $(top_srcdir)/include/cplab/error.h
KERNEL_CHECK_DEPS = $(KERNEL_COMMON_DEPS) $(srcdir)/%reldir%/check.cuh
KERNEL_FORMAT_DEPS = $(KERNEL_CHECK_DEPS) $(srcdir)/%reldir%/kformat.cuh $(top_srcdir)/include/cplab/kvformat.h
%reldir%/probe.o: $(KERNEL_COMMON_DEPS)
%reldir%/topk.o: $(KERNEL_CHECK_DEPS) $(srcdir)/%reldir%/mma.cuh $(srcdir)/%reldir%/cluster.cuh $(srcdir)/%reldir%/topk_key.cuh \
	$(srcdir)/%reldir%/cache_slot.cuh \
	$(srcdir)/%reldir%/topk_block.cuh $(srcdir)/%reldir%/topk_radix.cuh $(srcdir)/%reldir%/topk_bins.cuh
%reldir%/topk_merge.o: $(KERNEL_CHECK_DEPS) $(srcdir)/%reldir%/topk_key.cuh $(srcdir)/%reldir%/cache_slot.cuh
%reldir%/devmem.o %reldir%/poison.o %reldir%/combine.o %reldir%/restore.o: $(KERNEL_CHECK_DEPS)
%reldir%/convert.o: $(KERNEL_CHECK_DEPS) $(srcdir)/%reldir%/cache_slot.cuh
%reldir%/gemm.o: $(KERNEL_CHECK_DEPS) $(srcdir)/%reldir%/gemm_args.cuh
%reldir%/quant.o: $(KERNEL_FORMAT_DEPS)
%reldir%/gather.o: $(KERNEL_FORMAT_DEPS)
%reldir%/indexer.o %reldir%/indexer_decode.o: $(KERNEL_CHECK_DEPS) $(srcdir)/%reldir%/mma.cuh $(srcdir)/%reldir%/idx_tc.cuh \
	$(top_srcdir)/include/cplab/kvformat.h
KERNEL_MLA_DEPS = $(KERNEL_CHECK_DEPS) $(srcdir)/%reldir%/mma.cuh $(srcdir)/%reldir%/mla_tc.cuh \
	$(top_srcdir)/include/cplab/kvformat.h
%reldir%/attention_prefill.o: $(KERNEL_MLA_DEPS)
%reldir%/attention_decode.o: $(KERNEL_MLA_DEPS) $(srcdir)/%reldir%/kformat.cuh
%reldir%/gen.o: $(KERNEL_FORMAT_DEPS) $(top_srcdir)/include/cplab/philox.h
%reldir%/moe.o: $(KERNEL_CHECK_DEPS) $(srcdir)/%reldir%/cplab_moe.h
%reldir%/stream.o: $(KERNEL_CHECK_DEPS) $(srcdir)/%reldir%/cplab_stream.h $(srcdir)/%reldir%/dev_copy.cuh
