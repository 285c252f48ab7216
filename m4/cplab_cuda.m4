# CPLAB_CHECK_CUDA / CPLAB_CHECK_NCCL: optional CUDA and NCCL.
#
# --with-cuda[=DIR] / --with-nccl[=DIR]: default "check" (use if found); "no" turns
# them off; "yes" or a DIR makes a missing or broken install an error.
# CUDA means: nvcc compiles a kernel for every requested architecture, the
# runtime (static cudart), cuBLASLt and CUB headers are present.
# Kernels are built for --with-cuda-arch (default "90 100": H200 and GB200)
# plus PTX of the highest one, so newer cards can JIT them. SM 90 means
# sm_90a, Hopper's arch-specific target (every sm_90 card runs it): the
# prefill attention's wgmma exists there only (kernels/mma.cuh).

AC_DEFUN([CPLAB_CHECK_CUDA], [
  AC_ARG_WITH([cuda],
    [AS_HELP_STRING([--with-cuda@<:@=DIR@:>@],
      [use CUDA from DIR (default: use $CUDA_HOME or /usr/local/cuda if usable)])],
    [], [with_cuda=check])
  AC_ARG_WITH([cuda-arch],
    [AS_HELP_STRING([--with-cuda-arch=LIST],
      [SM architectures for kernels (default: "90 100"); PTX is added for the highest])],
    [], [with_cuda_arch="90 100"])
  cplab_have_cuda=no
  CPLAB_CUDA_ARCHS=""
  AS_CASE([$with_cuda],
    [no], [cplab_cuda_dirs=""],
    [yes|check], [cplab_cuda_dirs="$CUDA_HOME /usr/local/cuda"],
    [cplab_cuda_dirs="$with_cuda"])
  cplab_cuda_why="not requested"
  cplab_tried=" "
  for cplab_dir in $cplab_cuda_dirs; do
    AS_CASE([$cplab_tried], [*" $cplab_dir "*], [continue])
    cplab_tried="$cplab_tried$cplab_dir "
    cplab_cuda_why="no nvcc in $cplab_dir/bin"
    test -x "$cplab_dir/bin/nvcc" || continue
    cplab_libdir=""
    for cplab_l in "$cplab_dir/lib64" "$cplab_dir/lib"; do
      AS_IF([test -z "$cplab_libdir" && test -f "$cplab_l/libcudart_static.a"], [cplab_libdir=$cplab_l])
    done
    cplab_cuda_why="no libcudart_static.a under $cplab_dir"
    test -n "$cplab_libdir" || continue
    cplab_cuda_why="no cuBLASLt (cublasLt.h, libcublasLt) under $cplab_dir"
    test -f "$cplab_dir/include/cublasLt.h" || continue
    ls "$cplab_libdir"/libcublasLt.so* >/dev/null 2>&1 || continue
    cplab_cub_flags=""
    AS_IF([test -f "$cplab_dir/include/cccl/cub/cub.cuh"], [cplab_cub_flags="-I$cplab_dir/include/cccl"])
    # Gencode list: SASS for every arch (sm_90a for 90), PTX for the highest.
    cplab_gencode=""; cplab_hi=0
    for cplab_a in $with_cuda_arch; do
      AS_CASE([$cplab_a], [*[[!0-9]]*|""], [AC_MSG_ERROR([--with-cuda-arch: '$cplab_a' is not an SM number such as 90])])
      cplab_sm=$cplab_a
      AS_IF([test "$cplab_a" -eq 90], [cplab_sm=90a])
      cplab_gencode="$cplab_gencode -gencode arch=compute_$cplab_sm,code=sm_$cplab_sm"
      AS_IF([test "$cplab_a" -gt "$cplab_hi"], [cplab_hi=$cplab_a])
    done
    AS_IF([test "$cplab_hi" -eq 0], [AC_MSG_ERROR([--with-cuda-arch: empty architecture list])])
    cplab_gencode="$cplab_gencode -gencode arch=compute_$cplab_hi,code=compute_$cplab_hi"
    AC_MSG_CHECKING([whether $cplab_dir/bin/nvcc builds a CUB kernel for sm $with_cuda_arch])
    cat > conftest.cu <<_CPLAB_EOF
#include <cub/cub.cuh>
#include <cublasLt.h>
__global__ void k(int *p) {
  typedef cub::WarpReduce<int> R;
  __shared__ typename R::TempStorage t;
  p[[threadIdx.x]] = R(t).Sum((int)threadIdx.x);
}
extern "C" int launch(int *p) { k<<<1, 32>>>(p); return (int)cudaGetLastError(); }
_CPLAB_EOF
    AS_IF([$cplab_dir/bin/nvcc $cplab_gencode $cplab_cub_flags -c conftest.cu -o conftest.$OBJEXT >&AS_MESSAGE_LOG_FD 2>&1],
      [AC_MSG_RESULT([yes])],
      [AC_MSG_RESULT([no]); cplab_cuda_why="$cplab_dir/bin/nvcc failed on a test kernel (see config.log)"; rm -f conftest.cu conftest.$OBJEXT; continue])
    rm -f conftest.cu conftest.$OBJEXT
    NVCC="$cplab_dir/bin/nvcc"
    CUDA_HOME_DIR="$cplab_dir"
    CUDA_CPPFLAGS="-I$cplab_dir/include"
    NVCC_FLAGS="$cplab_gencode $cplab_cub_flags -std=c++17 -O3 -Xcompiler -Wall"
    CUDA_LIBS="-L$cplab_libdir -Wl,-rpath,$cplab_libdir -lcudart_static -ldl -lrt -lpthread -lstdc++"
    CUBLASLT_LIBS="-L$cplab_libdir -lcublasLt"
    CPLAB_CUDA_ARCHS="$with_cuda_arch"
    cplab_have_cuda=yes
    break
  done
  AS_IF([test "x$cplab_have_cuda" = xno && test "x$with_cuda" != xno && test "x$with_cuda" != xcheck],
    [AC_MSG_ERROR([--with-cuda=$with_cuda was requested but CUDA is not usable: $cplab_cuda_why])])
  AS_IF([test "x$cplab_have_cuda" = xno && test "x$with_cuda" = xcheck],
    [AC_MSG_NOTICE([CUDA not used: $cplab_cuda_why])])
  AS_IF([test "x$cplab_have_cuda" = xyes], [AC_DEFINE([HAVE_CUDA], [1], [CUDA kernels are built])])
  AC_SUBST([NVCC])
  AC_SUBST([NVCC_FLAGS])
  AC_SUBST([CUDA_HOME_DIR])
  AC_SUBST([CUDA_CPPFLAGS])
  AC_SUBST([CUDA_LIBS])
  AC_SUBST([CUBLASLT_LIBS])
  AC_SUBST([CPLAB_CUDA_ARCHS])
  AM_CONDITIONAL([HAVE_CUDA], [test "x$cplab_have_cuda" = xyes])
])

AC_DEFUN([CPLAB_CHECK_NCCL], [
  AC_REQUIRE([CPLAB_CHECK_CUDA])
  AC_ARG_WITH([nccl],
    [AS_HELP_STRING([--with-nccl@<:@=DIR@:>@],
      [use NCCL from DIR (default: use $NCCL_HOME, the CUDA dir or the system if usable)])],
    [], [with_nccl=check])
  cplab_have_nccl=no
  cplab_nccl_why="CUDA is not used"
  AS_IF([test "x$cplab_have_cuda" = xyes && test "x$with_nccl" != xno], [
    AS_CASE([$with_nccl],
      [yes|check], [cplab_nccl_dirs="$NCCL_HOME $CUDA_HOME_DIR /usr"],
      [cplab_nccl_dirs="$with_nccl"])
    for cplab_dir in $cplab_nccl_dirs; do
      cplab_nccl_why="no include/nccl.h under $cplab_dir"
      test -f "$cplab_dir/include/nccl.h" || continue
      cplab_nccl_lib=""
      for cplab_l in "$cplab_dir/lib64" "$cplab_dir/lib" "$cplab_dir/lib/x86_64-linux-gnu" "$cplab_dir/lib/aarch64-linux-gnu"; do
        AS_IF([test -z "$cplab_nccl_lib" && test -f "$cplab_l/libnccl.so"], [cplab_nccl_lib="-L$cplab_l -Wl,-rpath,$cplab_l -lnccl"])
        AS_IF([test -z "$cplab_nccl_lib" && test -f "$cplab_l/libnccl.so.2"], [cplab_nccl_lib="-L$cplab_l -Wl,-rpath,$cplab_l -l:libnccl.so.2"])
      done
      cplab_nccl_why="no libnccl.so under $cplab_dir"
      test -n "$cplab_nccl_lib" || continue
      cplab_save_CPPFLAGS=$CPPFLAGS; cplab_save_LIBS=$LIBS
      CPPFLAGS="$CPPFLAGS -I$cplab_dir/include $CUDA_CPPFLAGS"; LIBS="$cplab_nccl_lib $CUDA_LIBS $LIBS"
      AC_MSG_CHECKING([whether NCCL in $cplab_dir links])
      AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <nccl.h>]], [[int v; return (int)ncclGetVersion(&v);]])],
        [cplab_have_nccl=yes], [cplab_nccl_why="linking ncclGetVersion against $cplab_nccl_lib failed"])
      AC_MSG_RESULT([$cplab_have_nccl])
      CPPFLAGS=$cplab_save_CPPFLAGS; LIBS=$cplab_save_LIBS
      AS_IF([test "x$cplab_have_nccl" = xyes], [
        NCCL_CPPFLAGS="-I$cplab_dir/include"
        NCCL_LIBS="$cplab_nccl_lib"
        break])
    done
  ])
  AS_IF([test "x$cplab_have_nccl" = xno && test "x$with_nccl" != xno && test "x$with_nccl" != xcheck],
    [AC_MSG_ERROR([--with-nccl=$with_nccl was requested but NCCL is not usable: $cplab_nccl_why])])
  AS_IF([test "x$cplab_have_nccl" = xyes], [AC_DEFINE([HAVE_NCCL], [1], [NCCL is available])])
  AC_SUBST([NCCL_CPPFLAGS])
  AC_SUBST([NCCL_LIBS])
  AM_CONDITIONAL([HAVE_NCCL], [test "x$cplab_have_nccl" = xyes])
])
