# CPLAB_CHECK_MPI: find Open MPI's C bindings and its mpirun.
# Sets MPI_CFLAGS, MPI_LIBS, MPIRUN. pkg-config first (ompi-c), then mpicc --showme.
AC_DEFUN([CPLAB_CHECK_MPI], [
  PKG_CHECK_MODULES([MPI], [ompi-c], [cplab_have_mpi=yes], [cplab_have_mpi=no])
  AS_IF([test "x$cplab_have_mpi" = xno], [
    AC_PATH_PROG([MPICC], [mpicc])
    AS_IF([test -n "$MPICC"], [
      MPI_CFLAGS=`$MPICC --showme:compile 2>/dev/null`
      MPI_LIBS=`$MPICC --showme:link 2>/dev/null`
      AS_IF([test -n "$MPI_LIBS"], [cplab_have_mpi=yes])
    ])
  ])
  AS_IF([test "x$cplab_have_mpi" = xno],
    [AC_MSG_ERROR([Open MPI not found (Debian: libopenmpi-dev openmpi-bin)])])
  cplab_save_CFLAGS=$CFLAGS; cplab_save_LIBS=$LIBS
  CFLAGS="$CFLAGS $MPI_CFLAGS"; LIBS="$MPI_LIBS $LIBS"
  AC_MSG_CHECKING([whether MPI programs link])
  AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>]], [[return MPI_Init(0, 0);]])],
    [AC_MSG_RESULT([yes])], [AC_MSG_RESULT([no]); AC_MSG_ERROR([cannot link an MPI program with $MPI_LIBS])])
  CFLAGS=$cplab_save_CFLAGS; LIBS=$cplab_save_LIBS
  AC_PATH_PROG([MPIRUN], [mpirun])
  AS_IF([test -z "$MPIRUN"], [AC_MSG_WARN([mpirun not found: MPI tests will be skipped])])
  AC_SUBST([MPI_CFLAGS])
  AC_SUBST([MPI_LIBS])
])
