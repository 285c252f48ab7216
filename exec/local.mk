# exec/: cplab-exec, the executor (exec.h). Plan consensus (consensus.c) needs
# only MPI; the single-device backend (single.c) needs the CUDA kernels, so
# the program is built where CUDA is. It shares the plans and the index
# maps (cplab/maps.h) with the simulator, and nothing of sim/.
EXTRA_DIST += %reldir%/exec.h %reldir%/consensus.h %reldir%/consensus.c %reldir%/rank.c %reldir%/rank.h \
	%reldir%/output.c %reldir%/single.c %reldir%/nccl.c %reldir%/main.c %reldir%/README.md

if HAVE_CUDA
bin_PROGRAMS += cplab-exec
cplab_exec_SOURCES = %reldir%/main.c %reldir%/exec.h %reldir%/consensus.c %reldir%/consensus.h %reldir%/rank.c \
	%reldir%/rank.h %reldir%/output.c %reldir%/single.c
cplab_exec_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/kernels
cplab_exec_LDADD = libcplab_trace.la $(CPLAB_CORE_LIBS) $(HDF5_LIBS) $(MPI_LIBS) $(CPLAB_KERNEL_LIBS)
if HAVE_NCCL
cplab_exec_SOURCES += %reldir%/nccl.c
cplab_exec_CPPFLAGS += $(CUDA_CPPFLAGS) $(NCCL_CPPFLAGS) -DCPLAB_EXEC_NCCL=1
cplab_exec_LDADD += $(NCCL_LIBS) $(CUDA_LIBS)
endif
endif

TESTS += tests/exec/exec_consensus.sh tests/exec/exec_agree.sh tests/exec/exec_nccl.sh
EXTRA_DIST += tests/exec/exec_consensus.sh tests/exec/exec_agree.sh tests/exec/exec_nccl.sh
