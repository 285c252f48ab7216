# model/: cplab-model, predicted TTFT and TPOT of any layout from measured
# kernels and links (issue 23; model/README.md).
#   table.c  the kernel cost table (kernels.json or the documented format)
#   link.c   the link model per collective and tier
#   step.c   a step's time from the plans' per-rank work (the dry run's
#            derivation and cplab-bench's step arithmetic, called)
#   results.c  the validation's inputs: cplab-bench results, a point's scenario
#   calib.c    calibration on committed GPU results, parameters read back
#   validate.c predictions of the held-out results, summary, comparison
#   main.c   the command line
noinst_LTLIBRARIES += libcplab_model.la
libcplab_model_la_SOURCES = %reldir%/table.c %reldir%/table.h %reldir%/link.c %reldir%/link.h \
	%reldir%/step.c %reldir%/step.h %reldir%/results.c %reldir%/results.h %reldir%/calib.c %reldir%/calib.h \
	%reldir%/validate.c
libcplab_model_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/bench/layers -I$(top_srcdir)/analysis
libcplab_model_la_LIBADD = libcplab_benchplan.la

bin_PROGRAMS += model/cplab-model
model_cplab_model_SOURCES = %reldir%/main.c
model_cplab_model_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/bench/layers -I$(top_srcdir)/analysis
model_cplab_model_LDADD = libcplab_model.la $(CPLAB_CORE_LIBS) $(HDF5_LIBS)
EXTRA_DIST += %reldir%/README.md bench/run-model-projections.sh


TESTS += tests/cli/model_validation.sh
EXTRA_DIST += tests/cli/model_validation.sh

check_PROGRAMS += tests/unit/test_model
TESTS += tests/unit/test_model tests/cli/model_cli.sh
EXTRA_DIST += tests/cli/model_cli.sh
tests_unit_test_model_SOURCES = tests/unit/test_model.c tests/unit/testutil.h
tests_unit_test_model_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/%reldir% -I$(top_srcdir)/bench/layers \
	-I$(top_srcdir)/analysis -DCPLAB_SRCDIR='"$(abs_top_srcdir)"'
tests_unit_test_model_LDADD = libcplab_model.la $(TEST_UNIT_LIBS) $(HDF5_LIBS)
