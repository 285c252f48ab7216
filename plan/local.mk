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
	%reldir%/layouts/dispatch.c %reldir%/layouts/registry.c %reldir%/layouts/vllm.c \
	%reldir%/layouts/block_aligned.c %reldir%/layouts/mutants.c
libcplab_plan_la_LIBADD = $(GSL_LIBS) $(XXHASH_LIBS) -lm
EXTRA_DIST += %reldir%/README.md
