# traces/: the HDF5 trace schema (SCHEMA.md), the library that writes, reads
# and validates it, and the cplab-trace tool. sim/ and exec/ write through it;
# analysis/ reads through it.
noinst_LTLIBRARIES += libcplab_trace.la
libcplab_trace_la_SOURCES = %reldir%/h5util.c %reldir%/h5util.h %reldir%/schema.h \
	%reldir%/write.c %reldir%/read.c
libcplab_trace_la_CPPFLAGS = $(AM_CPPFLAGS) $(HDF5_CFLAGS)
libcplab_trace_la_LIBADD = libcplab_core.la $(HDF5_LIBS)
cplabinclude_HEADERS += include/cplab/trace.h
EXTRA_DIST += %reldir%/SCHEMA.md %reldir%/README.md

bin_PROGRAMS += cplab-trace
cplab_trace_SOURCES = %reldir%/tool.c
cplab_trace_LDADD = libcplab_trace.la $(CPLAB_CORE_LIBS) $(HDF5_LIBS)

check_PROGRAMS += tests/unit/test_trace
TESTS += tests/unit/test_trace
tests_unit_test_trace_SOURCES = tests/unit/test_trace.c tests/unit/sweep.h tests/unit/testutil.h
tests_unit_test_trace_LDADD = libcplab_trace.la $(TEST_UNIT_LIBS) $(HDF5_LIBS)
