#!/bin/sh
# cplab set-up in one command, on Debian 12 (or Ubuntu with the same packages).
#
#   ./setup.sh          install the Debian packages cplab needs, configure and build
#                       in ./build, then run the main job (cplab-sim on its built-in
#                       pr56157 scenario) and print its result
#   ./setup.sh check    build (if needed) and run the whole test suite; ends with
#                       "N passed, N failed, N skipped"; non-zero exit on any failure
#
# Environment: BUILD_DIR (default: build), CONFIGURE_FLAGS (extra ./configure
# flags, e.g. --enable-sanitizers or --with-cuda=/opt/cuda), SKIP_APT=1 to skip
# the package installation. CUDA and NCCL are used when found (/usr/local/cuda);
# they are not Debian packages.
set -eu
top=$(cd "$(dirname "$0")" && pwd)
build=${BUILD_DIR:-build}
case $build in /*) ;; *) build="$top/$build" ;; esac
jobs=$(nproc 2>/dev/null || echo 2)

usage() {
  cat <<'EOF_USAGE'
Usage: ./setup.sh [check | --help]
cplab set-up in one command, on Debian 12 (or Ubuntu with the same packages).
  ./setup.sh          install the Debian packages cplab needs (apt-get), configure and build
                      in BUILD_DIR, then run the main job (cplab-sim --check on its built-in
                      pr56157 scenario) and print its result
  ./setup.sh check    build (if needed) and run the whole test suite; ends with
                      "N passed, N failed, N skipped"; non-zero exit on any failure
  ./setup.sh --help   this text
Environment:
  BUILD_DIR           the build folder (default: build)
  CONFIGURE_FLAGS     extra ./configure flags, e.g.
                        --enable-sanitizers       AddressSanitizer + UBSan (CI's step 3)
                        --enable-werror           warnings are errors (CI)
                        --with-cuda=DIR           CUDA from DIR (default: /usr/local/cuda if usable)
                        --with-nccl=DIR           NCCL from DIR (default: CUDA's tree)
                        --with-cuda-arch="90 100" SM architectures of the kernels (90 builds sm_90a)
                        --without-cuda            CPU only
  SKIP_APT=1          install nothing
CUDA and NCCL are used when found; they are not Debian packages. ./configure --help lists
every flag.
EOF_USAGE
}

packages="build-essential autoconf automake libtool pkg-config libhdf5-dev hdf5-tools \
libgsl-dev libopenmpi-dev openmpi-bin libjansson-dev libcmocka-dev libxxhash-dev python3-h5py \
clang-14 libclang-rt-14-dev"

install_packages() {
  [ "${SKIP_APT:-0}" = 1 ] && return 0
  missing=""
  for p in $packages; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
  done
  [ -z "$missing" ] && return 0
  echo "setup: installing$missing"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends $missing
}

configure_and_build() {
  if [ ! -x "$top/configure" ] || [ "$top/configure.ac" -nt "$top/configure" ]; then
    (cd "$top" && autoreconf -fi)
  fi
  mkdir -p "$build"
  if [ ! -f "$build/config.status" ] || [ "$top/configure" -nt "$build/config.status" ]; then
    # shellcheck disable=SC2086
    (cd "$build" && "$top/configure" ${CONFIGURE_FLAGS:-})
  fi
  make -C "$build" -j"$jobs"
}

case "${1:-run}" in
  run)
    install_packages
    configure_and_build
    echo
    echo "== cplab-sim --check (main job, built-in scenario pr56157) =="
    "$build/cplab-sim" --check
    ;;
  check)
    configure_and_build
    status=0
    make -C "$build" -j"$jobs" check || status=$?
    sh "$top/build-aux/test-summary.sh" "$build/test-suite.log" || status=1
    exit $status
    ;;
  -h|--help)
    usage
    ;;
  *)
    echo "setup.sh: unknown command '$1' (use: ./setup.sh, ./setup.sh check)" >&2
    exit 2
    ;;
esac
