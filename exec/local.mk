# exec/: the executor, a library with two engines (README.md there):
#   the per-row reference pass   rank.c (flow), single.c and nccl.c (its
#                                backends), output.c (the step's output path)
#   the batched engine           engine.h (interface), engine.c (drives a
#                                scenario: units, graphs, times, check),
#                                engine_rank.c, engine_proj.c, engine_nccl.c
#   shared                       arena.c (the device arena), consensus.c
#                                (plan consensus, MPI only)
# and the program cplab-exec (main.c). libcplab_exec.la holds the library's
# C objects only, no kernel: a program links it, then libcplab_trace.la,
# HDF5, MPI (and NCCL where built with it) and the kernels it runs on
# (kernels/libcplab_kernels.a, or tests/emu's emulated ones, for which
# tests/emu/local.mk builds the same sources without NCCL). It shares the
# plans and the index maps (cplab/maps.h) with the simulator, and nothing
# of sim/; cplab-bench (bench/layers/) links it and includes engine.h.
EXEC_LIB_SOURCES = %reldir%/exec.h %reldir%/arena.c %reldir%/arena.h %reldir%/consensus.c %reldir%/consensus.h \
	%reldir%/rank.c %reldir%/rank.h %reldir%/output.c %reldir%/single.c %reldir%/engine.c %reldir%/engine.h \
	%reldir%/engine_internal.h %reldir%/engine_rank.c %reldir%/engine_proj.c
EXEC_NCCL_SOURCES = %reldir%/nccl.c %reldir%/engine_nccl.c
EXTRA_DIST += $(EXEC_LIB_SOURCES) $(EXEC_NCCL_SOURCES) %reldir%/main.c %reldir%/README.md

if HAVE_CUDA
noinst_LTLIBRARIES += libcplab_exec.la
libcplab_exec_la_SOURCES = $(EXEC_LIB_SOURCES)
libcplab_exec_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/kernels
bin_PROGRAMS += cplab-exec
cplab_exec_SOURCES = %reldir%/main.c
cplab_exec_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/kernels
cplab_exec_LDADD = libcplab_exec.la libcplab_trace.la $(CPLAB_CORE_LIBS) $(HDF5_LIBS) $(MPI_LIBS) $(CPLAB_KERNEL_LIBS)
if HAVE_NCCL
libcplab_exec_la_SOURCES += $(EXEC_NCCL_SOURCES)
libcplab_exec_la_CPPFLAGS += $(CUDA_CPPFLAGS) $(NCCL_CPPFLAGS) -DCPLAB_EXEC_NCCL=1
cplab_exec_CPPFLAGS += -DCPLAB_EXEC_NCCL=1
cplab_exec_LDADD += $(NCCL_LIBS) $(CUDA_LIBS)
endif
endif

TESTS += tests/exec/exec_consensus.sh tests/exec/exec_agree.sh tests/exec/exec_nccl.sh
EXTRA_DIST += tests/exec/exec_consensus.sh tests/exec/exec_agree.sh tests/exec/exec_nccl.sh
