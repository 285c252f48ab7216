# bench/layers/: cplab-bench, TTFT and TPOT per layout and graph mode of a
# synthetic sparse-MLA decoder layer (README.md there).
#   matrix.c    the configuration matrix and each configuration's scenario
#   plancost.c  a rank's plan-derived work per layer (FLOP, pairs, bytes)
#   dryrun.c    the walk over configurations and --dry-run
#   report*.c   statistics, markdown, JSON, HDF5 and plots (report.mk)
#   main.c      the command line
#   measure.c   the measuring mode (with CUDA): the matrix through the
#               executor's batched engine (exec/engine.h), samples and phases
#   checkbound.c  how close --check wants the engine's attention to cplab-exec's
# It is built with `make bench` and by `make check` (its tests run the
# --dry-run and --report modes, which need no GPU; tests/emu runs the
# engine on the CUDA emulation).
noinst_LTLIBRARIES += libcplab_benchplan.la
libcplab_benchplan_la_SOURCES = %reldir%/matrix.c %reldir%/matrix.h %reldir%/plancost.c %reldir%/plancost.h \
	%reldir%/dryrun.c %reldir%/dryrun.h %reldir%/steptime.c %reldir%/steptime.h %reldir%/checkbound.c \
	%reldir%/checkbound.h
libcplab_benchplan_la_CPPFLAGS = $(AM_CPPFLAGS)
# Parallel labels come from the results model (cplab_bench_parallel_label).
libcplab_benchplan_la_LIBADD = libcplab_benchreport.la

check_PROGRAMS += bench/cplab-bench
bench_cplab_bench_SOURCES = %reldir%/main.c
bench_cplab_bench_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/%reldir%
bench_cplab_bench_LDADD = libcplab_benchplan.la $(CPLAB_CORE_LIBS) $(HDF5_LIBS)
# The measuring mode (measure.h) runs the executor's batched engine
# (exec/engine.h, libcplab_exec.la) on the kernels: it is built where CUDA
# is; without CUDA, cplab-bench keeps --dry-run and --report. Nothing here
# allocates device memory or launches a kernel.
BENCH_MEASURE_SOURCES = %reldir%/measure.c %reldir%/measure.h
EXTRA_DIST += %reldir%/README.md $(BENCH_MEASURE_SOURCES)
if HAVE_CUDA
bench_cplab_bench_SOURCES += $(BENCH_MEASURE_SOURCES)
bench_cplab_bench_CPPFLAGS += -I$(top_srcdir)/exec -DCPLAB_BENCH_ENGINE=1
bench_cplab_bench_LDADD += libcplab_exec.la libcplab_trace.la $(CPLAB_KERNEL_LIBS) $(MPI_LIBS)
# With NCCL, --backend nccl: one MPI rank per GPU (main.c starts MPI; the
# library's NCCL transport does the rest).
if HAVE_NCCL
bench_cplab_bench_CPPFLAGS += -DCPLAB_BENCH_NCCL=1
bench_cplab_bench_LDADD += $(NCCL_LIBS) $(CUDA_LIBS)
endif
endif

check_PROGRAMS += tests/unit/test_bench_plan tests/unit/test_bench_steptime tests/unit/test_bench_checkbound \
	tests/cli/bench_fixture
TESTS += tests/unit/test_bench_plan tests/unit/test_bench_steptime tests/unit/test_bench_checkbound tests/cli/bench_cli.sh
EXTRA_DIST += tests/cli/bench_cli.sh
tests_cli_bench_fixture_SOURCES = tests/cli/bench_fixture.c
tests_cli_bench_fixture_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/%reldir%
tests_cli_bench_fixture_LDADD = libcplab_benchreport.la $(CPLAB_CORE_LIBS) $(HDF5_LIBS)
tests_unit_test_bench_plan_SOURCES = tests/unit/test_bench_plan.c tests/unit/testutil.h
tests_unit_test_bench_plan_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/%reldir%
tests_unit_test_bench_plan_LDADD = libcplab_benchplan.la $(TEST_UNIT_LIBS) $(HDF5_LIBS)
tests_unit_test_bench_checkbound_SOURCES = tests/unit/test_bench_checkbound.c tests/unit/testutil.h
tests_unit_test_bench_checkbound_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/%reldir%
tests_unit_test_bench_checkbound_LDADD = libcplab_benchplan.la $(TEST_UNIT_LIBS) $(HDF5_LIBS)
tests_unit_test_bench_steptime_SOURCES = tests/unit/test_bench_steptime.c tests/unit/testutil.h
tests_unit_test_bench_steptime_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/%reldir%
tests_unit_test_bench_steptime_LDADD = libcplab_benchplan.la $(TEST_UNIT_LIBS) $(HDF5_LIBS)
