# plan/: the plan engine (plan/README.md): from the shared scheduler output and
# one rank's ids, everything that rank computes (schedule, PCP split, gathered
# prefill and indexer plans, ordered collectives, KV ownership, index maps), the
# layouts that decide it, and the invariant checks over all ranks' plans. sim,
# exec, analysis, bench and model all use it; libcplab_core takes it in whole
# (common/local.mk), so every program and the installed libcplab carry it.
noinst_LTLIBRARIES += libcplab_plan.la
libcplab_plan_la_SOURCES = \
	%reldir%/ranks.c %reldir%/kv.c %reldir%/schedule.c %reldir%/prefill_plan.c %reldir%/indexer_plan.c \
	%reldir%/collectives.c %reldir%/rank_plan.c %reldir%/plan_digest.c %reldir%/plan_compare.c \
	%reldir%/maps.c %reldir%/check.c %reldir%/check.h \
	%reldir%/layout_dispatch.c %reldir%/layout_registry.c %reldir%/layout_table.h
nodist_libcplab_plan_la_SOURCES = %reldir%/layout_table.c
libcplab_plan_la_LIBADD = $(layout_objects) $(GSL_LIBS) $(XXHASH_LIBS) -lm
EXTRA_libcplab_plan_la_DEPENDENCIES = $(layout_objects)
EXTRA_DIST += %reldir%/README.md $(layout_sources)

# Layouts: every file of plan/layouts/ is one, registered by its presence
# (docs/layouts.md): no list of them is kept anywhere. GNU make finds the
# files, automake's .c.lo rule compiles them, and build-aux/embed-layouts.sh
# writes the table (on every build, replacing it only when it changes, so that
# a removed file leaves the table as well). GNU make's functions are what make
# a file's presence enough; automake's portability warning says just that.
AUTOMAKE_OPTIONS = -Wno-portability
layout_sources = $(sort $(wildcard $(srcdir)/%reldir%/layouts/*.c))
layout_names = $(basename $(notdir $(layout_sources)))
layout_objects = $(addprefix %reldir%/layouts/,$(addsuffix .lo,$(layout_names)))
$(layout_objects): %reldir%/layouts/$(am__dirstamp) $(top_srcdir)/include/cplab/layout.h
%reldir%/layouts/$(am__dirstamp):
	@$(MKDIR_P) %reldir%/layouts/$(DEPDIR)
	@: >$@
-include $(addprefix %reldir%/layouts/$(DEPDIR)/,$(addsuffix .Plo,$(layout_names)))
CLEANFILES += %reldir%/layout_table.c %reldir%/layouts/*.lo %reldir%/layouts/*.o %reldir%/layouts/.libs/*.o
DISTCLEANFILES = %reldir%/layouts/$(am__dirstamp) %reldir%/layouts/$(DEPDIR)/*.Plo
EXTRA_DIST += build-aux/embed-layouts.sh
.PHONY: plan-layouts-changed
plan-layouts-changed:
%reldir%/layout_table.c: plan-layouts-changed $(srcdir)/build-aux/embed-layouts.sh
	$(AM_V_at)$(MKDIR_P) $(@D) && $(SHELL) $(srcdir)/build-aux/embed-layouts.sh $@ $(layout_sources)
