# traces/: the HDF5 trace schema (SCHEMA.md), the library that writes, reads
# and validates it, and the cplab-trace tool. sim/ and exec/ write through it;
# analysis/ reads through it.
noinst_LTLIBRARIES += libcplab_trace.la
libcplab_trace_la_SOURCES = %reldir%/h5util.c %reldir%/h5util.h %reldir%/schema.h \
	%reldir%/tensors.c %reldir%/write.c %reldir%/read.c
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

# The fuzz target: clang with ASan, UBSan and libFuzzer instrumentation over
# the reader and everything it calls, built by its own rule (automake builds
# the libraries with $(CC)); check_DATA builds it before the tests run.
EXTRA_DIST += %reldir%/fuzz_trace.c tests/fuzz/trace_fuzz.sh tests/fuzz/corpus
if HAVE_FUZZ
check_DATA = traces/fuzz_trace
CLEANFILES += traces/fuzz_trace
traces/fuzz_trace: $(libcplab_core_la_SOURCES) $(libcplab_plan_la_SOURCES) $(libcplab_trace_la_SOURCES) %reldir%/fuzz_trace.c common/scenario_table.c \
		$(layout_sources) plan/layout_table.c
	$(AM_V_GEN)srcs=""; \
	for f in $(libcplab_core_la_SOURCES) $(libcplab_plan_la_SOURCES) $(libcplab_trace_la_SOURCES) %reldir%/fuzz_trace.c; do \
	  case $$f in *.c) srcs="$$srcs $(srcdir)/$$f";; esac; \
	done; \
	$(CLANG) -std=c11 -D_POSIX_C_SOURCE=200809L -g -O1 -fsanitize=fuzzer,address,undefined \
	  -fno-sanitize-recover=undefined $(DEFS) -I$(top_builddir) $(AM_CPPFLAGS) \
	  -o $@ $$srcs common/scenario_table.c $(layout_sources) plan/layout_table.c $(HDF5_LIBS) $(JANSSON_LIBS) $(GSL_LIBS) $(XXHASH_LIBS) -lm
endif
TESTS += tests/fuzz/trace_fuzz.sh
