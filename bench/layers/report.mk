# bench/layers/report.mk: the results model of cplab-bench and its writers
# (report.c ...); owned by the report work.
#
# libcplab_benchreport: points and their statistics (common/stats.c, in
# libcplab_core), Markdown, JSON, HDF5 (through traces/h5util.c, in
# libcplab_trace) and gnuplot plots.
# Consumers link it with $(CPLAB_CORE_LIBS) $(HDF5_LIBS).
noinst_LTLIBRARIES += libcplab_benchreport.la
libcplab_benchreport_la_SOURCES = %reldir%/report.c %reldir%/report.h %reldir%/report_internal.h \
	%reldir%/report_md.c %reldir%/report_json.c %reldir%/report_plot.c \
	%reldir%/report_h5.c %reldir%/report_h5_read.c %reldir%/report_h5.h
libcplab_benchreport_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/traces
libcplab_benchreport_la_LIBADD = libcplab_trace.la $(HDF5_LIBS) $(JANSSON_LIBS) $(GSL_LIBS) -lm
EXTRA_DIST += %reldir%/RESULTS.md

check_PROGRAMS += tests/unit/test_bench_report
TESTS += tests/unit/test_bench_report
tests_unit_test_bench_report_SOURCES = tests/unit/test_bench_report.c tests/unit/testutil.h
tests_unit_test_bench_report_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/%reldir%
tests_unit_test_bench_report_LDADD = libcplab_benchreport.la $(TEST_UNIT_LIBS) $(HDF5_LIBS)
