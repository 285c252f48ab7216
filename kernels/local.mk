# kernels/: CUDA C kernels with extern "C" launchers (cplab_kernels.h), built
# by nvcc for --with-cuda-arch (default sm_90 and sm_100, plus PTX). They form
# a plain archive linked into the programs and GPU tests that use them.
EXTRA_DIST += %reldir%/probe.cu %reldir%/cplab_kernels.h

if HAVE_CUDA
noinst_LIBRARIES += kernels/libcplab_kernels.a
kernels_libcplab_kernels_a_SOURCES = %reldir%/probe.cu %reldir%/cplab_kernels.h
CPLAB_KERNEL_LIBS = kernels/libcplab_kernels.a $(CUDA_LIBS)
endif

NVCC_COMPILE = $(NVCC) $(NVCC_FLAGS) -I$(top_srcdir)/include -I$(top_srcdir)/kernels -I$(top_builddir)
.cu.o:
	$(AM_V_GEN)$(NVCC_COMPILE) -c -o $@ $<

%reldir%/probe.o: $(srcdir)/%reldir%/cplab_kernels.h $(top_srcdir)/include/cplab/error.h
