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
if HAVE_NCCL
# cplab-gather-bench: the DCP gather against NCCL's all-gather, one MPI rank per
# GPU (bench/run-gpu-gather.sh runs it).
EXTRA_PROGRAMS += bench/cplab-gather-bench
bench_cplab_gather_bench_SOURCES = bench/gather_bench.c
bench_cplab_gather_bench_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS) $(NCCL_CPPFLAGS) -I$(top_srcdir)/kernels
bench_cplab_gather_bench_LDADD = $(CPLAB_KERNEL_LIBS) $(NCCL_LIBS) $(CUDA_LIBS) $(CPLAB_CORE_LIBS) $(MPI_LIBS)
endif
if HAVE_CUDA
# cplab-ceilings-bench: device copy bandwidth and cuBLASLt bf16/fp8 GEMM
# throughput of one GPU, measured in one run (bench/run-gpu-ceilings.sh runs it).
EXTRA_PROGRAMS += bench/cplab-ceilings-bench
bench_cplab_ceilings_bench_SOURCES = bench/ceilings_bench.c
bench_cplab_ceilings_bench_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS) -I$(top_srcdir)/kernels
bench_cplab_ceilings_bench_LDADD = $(CPLAB_KERNEL_LIBS) $(CPLAB_CORE_LIBS)
endif
EXTRA_DIST += bench/run-gpu-gather.sh bench/run-gpu-ceilings.sh bench/run-gpu-layers.sh bench/gpu-run-env.sh
CLEANFILES += $(EXTRA_PROGRAMS)
EXTRA_DIST += bench/README.md bench/run-cpu.sh bench/run-numeric.sh bench/results

.PHONY: bench
bench: $(EXTRA_PROGRAMS) bench/cplab-bench$(EXEEXT)

# cplab-bench (bench/layers/): TTFT and TPOT per layout and graph mode.
include bench/layers/local.mk
include bench/layers/report.mk
