# analysis/: cplab-diff (agreement of two runs; rank-invariance of one run),
# reading traces only through traces/ and judging with plan/check.c's rules.
noinst_LTLIBRARIES += libcplab_diff.la
libcplab_diff_la_SOURCES = %reldir%/diff_ranks.c %reldir%/diff_numeric.c %reldir%/diff_partials.c %reldir%/diff_agree.c %reldir%/policy.c %reldir%/report.c %reldir%/junit.c \
	%reldir%/diff.h
nodist_libcplab_diff_la_SOURCES = %reldir%/policy_text.h
libcplab_diff_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/sim -I$(top_builddir)/%reldir%
libcplab_diff_la_LIBADD = libcplab_sim.la libcplab_trace.la

bin_PROGRAMS += cplab-diff
cplab_diff_SOURCES = %reldir%/diff_main.c
cplab_diff_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/sim
cplab_diff_LDADD = libcplab_diff.la $(CPLAB_CORE_LIBS) $(HDF5_LIBS)

check_PROGRAMS += tests/unit/test_diff tests/unit/test_junit
TESTS += tests/unit/test_diff tests/unit/test_junit tests/cli/diff_cli.sh tests/cli/diff_junit.sh \
	tests/cli/diff_partials.sh tests/cli/mutants.sh
EXTRA_DIST += tests/cli/diff_cli.sh tests/cli/diff_junit.sh tests/cli/diff_partials.sh tests/cli/mutants.sh tests/golden
tests_unit_test_diff_SOURCES = tests/unit/test_diff.c tests/unit/testutil.h
tests_unit_test_diff_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/analysis -I$(top_srcdir)/sim
tests_unit_test_diff_LDADD = libcplab_diff.la $(TEST_UNIT_LIBS) $(HDF5_LIBS)

# Golden traces: small sim traces of the built-in scenarios, diffed in make
# check (tests/cli/diff_cli.sh); smoke's with the numeric pass (a few MiB),
# pr56157's plans only. `make golden` regenerates them.
.PHONY: golden
golden: cplab-sim$(EXEEXT)
	rm -f $(srcdir)/tests/golden/smoke.*h5 $(srcdir)/tests/golden/pr56157.*h5
	./cplab-sim$(EXEEXT) --scenario smoke --numeric -q -o $(srcdir)/tests/golden/smoke.h5
	./cplab-sim$(EXEEXT) --scenario pr56157 -q -o $(srcdir)/tests/golden/pr56157.h5
BUILT_SOURCES = %reldir%/policy_text.h
# BUILT_SOURCES serve `make`, `make check` and `make install` only: a program named alone
# (`make cplab-exec`) needs the header as a dependency of the objects that include it.
$(libcplab_diff_la_OBJECTS): %reldir%/policy_text.h
CLEANFILES += %reldir%/policy_text.h
EXTRA_DIST += %reldir%/policy.json %reldir%/README.md build-aux/embed-text.sh
%reldir%/policy_text.h: $(srcdir)/%reldir%/policy.json $(srcdir)/build-aux/embed-text.sh
	$(AM_V_GEN)$(MKDIR_P) $(@D) && $(SHELL) $(srcdir)/build-aux/embed-text.sh $@ cplab_default_policy_json $(srcdir)/%reldir%/policy.json
tests_unit_test_junit_SOURCES = tests/unit/test_junit.c tests/unit/testutil.h
tests_unit_test_junit_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/analysis
tests_unit_test_junit_LDADD = libcplab_diff.la $(TEST_UNIT_LIBS) $(HDF5_LIBS)
