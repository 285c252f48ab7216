# sim/: the simulator, cplab's main job. Derives every rank's view in
# isolation (one process looping over ranks, or MPI processes sharing them)
# and checks the invariants over them. libcplab_sim holds what tests reuse.
noinst_LTLIBRARIES += libcplab_sim.la
libcplab_sim_la_SOURCES = %reldir%/reference.c %reldir%/reference.h \
	%reldir%/indexer_ref.c %reldir%/indexer_ref.h %reldir%/moe_ref.c %reldir%/moe_ref.h \
	%reldir%/numeric.c %reldir%/numeric.h %reldir%/numeric_mem.c %reldir%/numeric_mem.h
libcplab_sim_la_LIBADD = libcplab_core.la

check_PROGRAMS += tests/unit/test_reference tests/unit/test_indexer_ref tests/unit/test_moe_ref tests/unit/test_numeric
TESTS += tests/unit/test_reference tests/unit/test_indexer_ref tests/unit/test_moe_ref tests/unit/test_numeric
tests_unit_test_numeric_SOURCES = tests/unit/test_numeric.c tests/unit/testutil.h
tests_unit_test_numeric_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/sim
tests_unit_test_numeric_LDADD = libcplab_sim.la $(TEST_UNIT_LIBS)
tests_unit_test_moe_ref_SOURCES = tests/unit/test_moe_ref.c tests/unit/testutil.h
tests_unit_test_moe_ref_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/sim
tests_unit_test_moe_ref_LDADD = libcplab_sim.la $(TEST_UNIT_LIBS)
tests_unit_test_indexer_ref_SOURCES = tests/unit/test_indexer_ref.c tests/unit/testutil.h
tests_unit_test_indexer_ref_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/sim
tests_unit_test_indexer_ref_LDADD = libcplab_sim.la $(TEST_UNIT_LIBS)
tests_unit_test_reference_SOURCES = tests/unit/test_reference.c tests/unit/testutil.h
tests_unit_test_reference_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/sim
tests_unit_test_reference_LDADD = libcplab_sim.la $(TEST_UNIT_LIBS)

bin_PROGRAMS += cplab-sim
cplab_sim_SOURCES = %reldir%/main.c %reldir%/report.c %reldir%/rank_views.c %reldir%/plans.c %reldir%/sim.h \
	%reldir%/numeric_trace.c
cplab_sim_LDADD = libcplab_sim.la libcplab_trace.la $(CPLAB_CORE_LIBS) $(HDF5_LIBS) $(MPI_LIBS)
