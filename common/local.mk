# common/: what every program needs (errors, logging, CLI, atomic files,
# statistics, model presets, parallel-layout rules, JSON, scenarios, workload
# generator). Built once as libcplab_core, which also takes in plan/'s
# libcplab_plan (the plan engine: plan/local.mk), is linked into the programs
# and installed as libcplab with its public headers under include/cplab/.

noinst_LTLIBRARIES += libcplab_core.la
libcplab_core_la_SOURCES = \
	%reldir%/error.c %reldir%/log.c %reldir%/cli.c %reldir%/atomic.c %reldir%/stats.c \
	%reldir%/model.c %reldir%/parallel.c %reldir%/heads.c \
	%reldir%/json_locate.c %reldir%/json_locate.h \
	%reldir%/json_reader.c %reldir%/json_reader.h \
	%reldir%/scenario_parse.c %reldir%/scenario_check.c %reldir%/scenario_check.h %reldir%/scenario_json.c %reldir%/workload.c \
	%reldir%/scenario_builtin.c %reldir%/scenario_builtin.h
nodist_libcplab_core_la_SOURCES = %reldir%/scenario_table.c
# The scenario parser and the CLI name layouts (cplab_layout_find), and the plan
# engine reports through common's errors: one convenience library holds both.
libcplab_core_la_LIBADD = libcplab_plan.la $(JANSSON_LIBS) $(GSL_LIBS) $(XXHASH_LIBS) -lm

# Built-in scenarios: the JSON files are the source; the table is generated.
builtin_scenarios = \
	$(srcdir)/%reldir%/scenarios/pr56157.json \
	$(srcdir)/%reldir%/scenarios/smoke.json \
	$(srcdir)/%reldir%/scenarios/mixed.json \
	$(srcdir)/%reldir%/scenarios/mtp.json \
	$(srcdir)/%reldir%/scenarios/mtp-pcp2.json
EXTRA_DIST += $(builtin_scenarios)
CLEANFILES += %reldir%/scenario_table.c
%reldir%/scenario_table.c: $(builtin_scenarios) $(srcdir)/build-aux/embed-scenarios.sh
	$(AM_V_GEN)$(MKDIR_P) $(@D) && $(SHELL) $(srcdir)/build-aux/embed-scenarios.sh $@ $(builtin_scenarios)

lib_LTLIBRARIES += libcplab.la
libcplab_la_SOURCES =
nodist_EXTRA_libcplab_la_SOURCES = dummy.c
libcplab_la_LIBADD = libcplab_core.la
libcplab_la_LDFLAGS = -version-info 0:0:0

cplabincludedir = $(includedir)/cplab
cplabinclude_HEADERS = \
	include/cplab/error.h include/cplab/log.h include/cplab/cli.h include/cplab/atomic.h include/cplab/stats.h \
	include/cplab/model.h include/cplab/parallel.h include/cplab/heads.h include/cplab/ranks.h \
	include/cplab/scenario.h include/cplab/seed.h include/cplab/kv.h \
	include/cplab/layout.h include/cplab/plan.h include/cplab/maps.h
