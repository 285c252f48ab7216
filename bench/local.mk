# bench/: benchmark programs (not tests): `make bench` builds them, and
# bench/run-cpu.sh runs them and records results under bench/results/ with
# the machine, date, commit and command (see bench/README.md).
EXTRA_PROGRAMS = bench/cplab-plan-bench bench/cplab-trace-bench bench/cplab-diff-bench
bench_cplab_plan_bench_SOURCES = bench/plan_bench.c
bench_cplab_plan_bench_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/sim
bench_cplab_plan_bench_LDADD = libcplab_sim.la $(CPLAB_CORE_LIBS)
bench_cplab_trace_bench_SOURCES = bench/trace_bench.c
bench_cplab_trace_bench_LDADD = libcplab_trace.la $(CPLAB_CORE_LIBS) $(HDF5_LIBS)
bench_cplab_diff_bench_SOURCES = bench/diff_bench.c
bench_cplab_diff_bench_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/analysis
bench_cplab_diff_bench_LDADD = libcplab_diff.la $(CPLAB_CORE_LIBS) $(HDF5_LIBS)
# The MoE paths' comparison (bench/moe_compare.c, host arrays; the check of
# cplab-kernel-bench's moe_paths cases) is unit-tested everywhere.
check_PROGRAMS += tests/unit/test_moe_compare
TESTS += tests/unit/test_moe_compare
tests_unit_test_moe_compare_SOURCES = tests/unit/test_moe_compare.c tests/unit/testutil.h bench/moe_compare.c \
	bench/moe_compare.h
tests_unit_test_moe_compare_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/bench
tests_unit_test_moe_compare_LDADD = $(TEST_UNIT_LIBS)
# The ranked kernels through the driver on GPUs (mpirun -np 1 and 2): the
# MoE paths' check, the gather's.
TESTS += tests/gpu/gpu_moe_paths.sh
EXTRA_DIST += tests/gpu/gpu_moe_paths.sh
if HAVE_CUDA
# cplab-kernel-bench: each kernel alone over its table of shapes (the
# attention kernels, bench/kernel_attention.c; the indexer path's logits,
# top-k, conversion and row movers, bench/kernel_indexer.c, kernel_topk.c,
# kernel_convert.c, kernel_combine.c) and the card's ceilings as cases
# (bench/kernel_ceilings.c: copy bandwidth, cuBLASLt bf16 / fp8 GEMM, once
# cplab-ceilings-bench), checked against sim/'s and common/'s references,
# timed, against the ceilings (bench/ceilings.c) and the PyTorch peer
# (bench/kernel_peer.py); bench/run-gpu-kernels.sh runs both,
# bench/run-gpu-ceilings.sh the ceilings' cases.
# Built by `make check` too (CI compiles it; its tests run it).
check_PROGRAMS += bench/cplab-kernel-bench
KERNEL_BENCH_PROGS = bench/cplab-kernel-bench$(EXEEXT)
bench_cplab_kernel_bench_SOURCES = $(KERNEL_BENCH_SOURCES)
if HAVE_NCCL
# With MPI and NCCL the driver is a job of MPI ranks (bench/kb_job.c's ranked
# form, CPLAB_KB_RANKED) and has the ranked kernels: the DCP gather against
# NCCL's all-gather (bench/run-gpu-gather.sh, once cplab-gather-bench) and
# the MoE block's general and fast PCP paths (bench/run-gpu-moe.sh, once
# cplab-moe-bench).
bench_cplab_kernel_bench_SOURCES += $(KERNEL_BENCH_RANKED_SOURCES)
KERNEL_BENCH_RANKED_CPPFLAGS = -DCPLAB_KB_RANKED=1 $(NCCL_CPPFLAGS)
KERNEL_BENCH_RANKED_LIBS = $(NCCL_LIBS) $(CUDA_LIBS) $(MPI_LIBS)
endif
bench_cplab_kernel_bench_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS) -I$(top_srcdir)/kernels -I$(top_srcdir)/sim \
	$(KERNEL_BENCH_RANKED_CPPFLAGS)
bench_cplab_kernel_bench_CFLAGS = $(AM_CFLAGS) -pthread
bench_cplab_kernel_bench_LDADD = libcplab_sim.la $(CPLAB_KERNEL_LIBS) $(CPLAB_CORE_LIBS) $(KERNEL_BENCH_RANKED_LIBS) \
	-lpthread
endif
# The driver, its job layer (the single-process form here), the kernels'
# case tables, the peer file's reader and the ceilings: also linked against
# the CPU emulation (tests/emu/local.mk, with -DCPLAB_BENCH_EMU=1), so they
# are defined whether or not CUDA is found. The ranked kernels' case tables
# need NCCL: never in the emulation.
KERNEL_BENCH_RANKED_SOURCES = bench/kernel_gather_nccl.c bench/kernel_moe_paths.c bench/kb_nccl.h \
	bench/moe_compare.c bench/moe_compare.h
KERNEL_BENCH_SOURCES = bench/kernel_bench.c bench/kernel_bench.h bench/kb_job.c bench/kb_job.h \
	bench/kernel_attention.c bench/kernel_indexer.c \
	bench/kernel_indexer.h bench/kernel_indexer_decode.c bench/kernel_topk.c bench/kernel_convert.c bench/kernel_combine.c bench/kernel_peer.c bench/kernel_peer.h \
	bench/kernel_ceilings.c bench/ceilings.c bench/ceilings.h bench/bench_out.c bench/bench_out.h
EXTRA_DIST += $(KERNEL_BENCH_SOURCES) $(KERNEL_BENCH_RANKED_SOURCES) bench/kernel_peer.py bench/run-gpu-kernels.sh tests/kernel_bench_smoke.sh
# Its command line, case table and peer-file reader (no GPU needed), and a
# smoke run of one tiny case per kernel on a GPU.
TESTS += tests/cli/kernel_bench_cli.sh tests/gpu/gpu_kernel_bench.sh
EXTRA_DIST += tests/cli/kernel_bench_cli.sh tests/gpu/gpu_kernel_bench.sh
EXTRA_DIST += bench/run-gpu-gather.sh bench/run-gpu-moe.sh bench/run-gpu-ceilings.sh bench/run-gpu-layers.sh bench/gpu-run-env.sh
CLEANFILES += $(EXTRA_PROGRAMS)
EXTRA_DIST += bench/README.md bench/NOTES.md bench/run-cpu.sh bench/run-numeric.sh bench/results

.PHONY: bench
bench: $(EXTRA_PROGRAMS) bench/cplab-bench$(EXEEXT) $(KERNEL_BENCH_PROGS)

# cplab-bench (bench/layers/): TTFT and TPOT per layout and graph mode.
include bench/layers/local.mk
include bench/layers/report.mk
