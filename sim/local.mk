# sim/: the simulator, cplab's main job. Derives every rank's view in
# isolation (one process looping over ranks, or MPI processes sharing them).
bin_PROGRAMS += cplab-sim
cplab_sim_SOURCES = %reldir%/main.c %reldir%/report.c %reldir%/rank_views.c %reldir%/sim.h
cplab_sim_LDADD = $(CPLAB_CORE_LIBS) $(MPI_LIBS)
