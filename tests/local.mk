# tests/: the test suite run by `make check`.
#   unit/       cmocka programs (unit and seeded property tests), TAP output
#   scenarios/  malformed scenarios with the message each must produce
#   cli/        command-line contract of the programs (shell)
#   mpi/        the same results under mpirun (shell; skip without mpirun)
#   gpu/        device tests (exit 77, skip, where no GPU exists)
#   portability/ the emulation against the standard library (tests/portability/local.mk)
# Environment: seeds of property tests come from CPLAB_TEST_SEED (default
# fixed); MPI needs the Open MPI settings below to run as root without ssh;
# Open MPI keeps its components loaded, and ASan unwinds malloc stacks the
# slow way (Open MPI is built without frame pointers), so that LeakSanitizer
# can attribute (and tests/lsan.supp suppress) Open MPI's own allocations.

TEST_EXTENSIONS = .sh
SH_LOG_COMPILER = $(SHELL)
LOG_DRIVER = env AM_TAP_AWK='$(AWK)' $(SHELL) $(top_srcdir)/build-aux/tap-driver.sh
EXTRA_DIST += build-aux/tap-driver.sh

AM_TESTS_ENVIRONMENT = \
	top_srcdir='$(abs_top_srcdir)'; top_builddir='$(abs_top_builddir)'; \
	MPIRUN='$(MPIRUN)'; HAVE_CUDA='$(HAVE_CUDA_FLAG)'; \
	CMOCKA_MESSAGE_OUTPUT=TAP; \
	OMPI_ALLOW_RUN_AS_ROOT=1; OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; \
	OMPI_MCA_rmaps_base_oversubscribe=1; OMPI_MCA_plm=isolated; \
	OMPI_MCA_btl_vader_single_copy_mechanism=none; NCCL_NVLS_ENABLE=0; \
	OMPI_MCA_mca_base_component_disable_dlclose=1; \
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:protect_shadow_gap=0:fast_unwind_on_malloc=0; \
	LSAN_OPTIONS='suppressions=$(abs_top_srcdir)/tests/lsan.supp:print_suppressions=0'; \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1; \
	export top_srcdir top_builddir MPIRUN HAVE_CUDA CMOCKA_MESSAGE_OUTPUT \
	  OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM OMPI_MCA_rmaps_base_oversubscribe \
	  OMPI_MCA_plm OMPI_MCA_btl_vader_single_copy_mechanism NCCL_NVLS_ENABLE \
	  OMPI_MCA_mca_base_component_disable_dlclose \
	  ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS;

if HAVE_CUDA
HAVE_CUDA_FLAG = yes
else
HAVE_CUDA_FLAG = no
endif

TEST_UNIT_LIBS = $(CPLAB_CORE_LIBS) $(CMOCKA_LIBS)

check_PROGRAMS += tests/unit/test_common tests/unit/test_ranks tests/unit/test_scenario \
	tests/unit/test_scenario_invalid tests/unit/test_workload tests/unit/test_stats
TESTS += tests/unit/test_common tests/unit/test_ranks tests/unit/test_scenario \
	tests/unit/test_scenario_invalid tests/unit/test_workload tests/unit/test_stats
tests_unit_test_stats_SOURCES = tests/unit/test_stats.c tests/unit/testutil.h
tests_unit_test_stats_LDADD = $(TEST_UNIT_LIBS)
tests_unit_test_common_SOURCES = tests/unit/test_common.c tests/unit/testutil.h
tests_unit_test_common_LDADD = $(TEST_UNIT_LIBS)
tests_unit_test_ranks_SOURCES = tests/unit/test_ranks.c tests/unit/testutil.h
tests_unit_test_ranks_LDADD = $(TEST_UNIT_LIBS)
tests_unit_test_scenario_SOURCES = tests/unit/test_scenario.c tests/unit/testutil.h
tests_unit_test_scenario_LDADD = $(TEST_UNIT_LIBS)
tests_unit_test_scenario_invalid_SOURCES = tests/unit/test_scenario_invalid.c tests/unit/testutil.h
tests_unit_test_scenario_invalid_LDADD = $(TEST_UNIT_LIBS)
tests_unit_test_workload_SOURCES = tests/unit/test_workload.c tests/unit/testutil.h
tests_unit_test_workload_LDADD = $(TEST_UNIT_LIBS)
EXTRA_DIST += tests/scenarios tests/lsan.supp

TESTS += tests/cli/sim_cli.sh tests/cli/trace_cli.sh tests/cli/trace_rows.sh tests/cli/setup_cli.sh tests/mpi/sim_mpi.sh tests/gpu/gpu_probe.sh
# A layout is one file: a copy of the tree with one more file in plan/layouts/
# builds cplab-sim with it (about a minute on two cores: a configure and a
# third of a build).
TESTS += tests/cli/layout_one_file.sh
EXTRA_DIST += tests/cli/layout_one_file.sh
# tools/gpu-kernel-versions.sh (a GPU call's versions of one kernel file) with stand-ins for make and the program.
TESTS += tests/cli/kernel_versions.sh
EXTRA_DIST += tests/cli/kernel_versions.sh
# tools/gpu-kernel-ncu.sh (a GPU call's Nsight Compute pages of one case) with a stand-in ncu.
TESTS += tests/cli/kernel_ncu.sh
EXTRA_DIST += tests/cli/kernel_ncu.sh
# tools/gpu-kernel-prof.sh (a GPU call's build and script, its results as one file) with a stand-in bundle.
TESTS += tests/cli/kernel_prof.sh
EXTRA_DIST += tests/cli/kernel_prof.sh
# tools/ncu-sass-phases.py (an ncu report's SASS samples by phase) on a made-up report.
TESTS += tests/cli/ncu_sass_phases.sh
EXTRA_DIST += tests/cli/ncu_sass_phases.sh
EXTRA_DIST += tests/lib.sh tests/cli/sim_cli.sh tests/cli/trace_cli.sh tests/cli/trace_rows.sh tests/cli/setup_cli.sh tests/mpi/sim_mpi.sh tests/gpu/gpu_probe.sh tests/gpu/gpu_probe.c

if HAVE_CUDA
check_PROGRAMS += tests/gpu/gpu_probe
tests_gpu_gpu_probe_SOURCES = tests/gpu/gpu_probe.c
tests_gpu_gpu_probe_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/kernels
tests_gpu_gpu_probe_LDADD = $(CPLAB_KERNEL_LIBS) $(CPLAB_CORE_LIBS)
endif

check_PROGRAMS += tests/unit/test_plan tests/unit/test_invariants
TESTS += tests/unit/test_plan tests/unit/test_invariants
tests_unit_test_plan_SOURCES = tests/unit/test_plan.c tests/unit/mutants_table.h tests/unit/testutil.h
tests_unit_test_plan_LDADD = $(TEST_UNIT_LIBS)
tests_unit_test_invariants_SOURCES = tests/unit/test_invariants.c tests/unit/mutants_table.h tests/unit/sweep.h \
	tests/unit/testutil.h
tests_unit_test_invariants_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/sim
tests_unit_test_invariants_LDADD = libcplab_sim.la $(TEST_UNIT_LIBS)
# Issue 19: DCP without PCP, the placeholder row and short MTP rows, against vLLM's rules.
check_PROGRAMS += tests/unit/test_vllm_paths
TESTS += tests/unit/test_vllm_paths
tests_unit_test_vllm_paths_SOURCES = tests/unit/test_vllm_paths.c tests/unit/testutil.h
tests_unit_test_vllm_paths_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/sim
tests_unit_test_vllm_paths_LDADD = libcplab_sim.la $(TEST_UNIT_LIBS)
include tests/emu/local.mk
include tests/portability/local.mk

# GPU goldens (tests/golden-gpu/README.md): the executor's traces recorded on
# an H200, against cplab-sim --numeric of the stored scenarios with the kernel
# tolerance policy, and a tampered copy that must fail naming its row.
# trace_poke changes one element of a copy (no h5py needed).
check_PROGRAMS += tests/cli/trace_poke
tests_cli_trace_poke_SOURCES = tests/cli/trace_poke.c
tests_cli_trace_poke_LDADD = $(HDF5_LIBS)
TESTS += tests/cli/golden_gpu.sh
EXTRA_DIST += tests/cli/golden_gpu.sh tests/golden-gpu
