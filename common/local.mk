# common/: code that sim/ and exec/ both use (errors, logging, CLI, model
# presets, parallel layouts, rank tables, scenarios, workload generator).
# Built once as libcplab_core (linked into the programs) and installed as
# libcplab with its public headers under include/cplab/.

noinst_LTLIBRARIES += libcplab_core.la
libcplab_core_la_SOURCES = \
	%reldir%/error.c %reldir%/log.c %reldir%/cli.c %reldir%/atomic.c %reldir%/stats.c \
	%reldir%/model.c %reldir%/parallel.c %reldir%/ranks.c \
	%reldir%/json_locate.c %reldir%/json_locate.h \
	%reldir%/json_reader.c %reldir%/json_reader.h \
	%reldir%/scenario_parse.c %reldir%/scenario_json.c %reldir%/workload.c \
	%reldir%/scenario_builtin.c %reldir%/scenario_builtin.h \
	%reldir%/kv.c %reldir%/schedule.c %reldir%/prefill_plan.c %reldir%/indexer_plan.c \
	%reldir%/collectives.c %reldir%/rank_plan.c %reldir%/plan_digest.c %reldir%/plan_compare.c \
	%reldir%/maps.c %reldir%/layouts/dispatch.c %reldir%/layouts/registry.c %reldir%/layouts/vllm.c \
	%reldir%/layouts/block_aligned.c %reldir%/layouts/mutants.c
nodist_libcplab_core_la_SOURCES = %reldir%/scenario_table.c
libcplab_core_la_LIBADD = $(JANSSON_LIBS) $(GSL_LIBS) $(XXHASH_LIBS) -lm

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
	include/cplab/model.h include/cplab/parallel.h include/cplab/ranks.h \
	include/cplab/scenario.h include/cplab/seed.h include/cplab/kv.h \
	include/cplab/layout.h include/cplab/plan.h include/cplab/maps.h
