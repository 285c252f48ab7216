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
CLEANFILES += $(EXTRA_PROGRAMS)
EXTRA_DIST += bench/README.md bench/run-cpu.sh bench/run-numeric.sh bench/results

.PHONY: bench
bench: $(EXTRA_PROGRAMS)
