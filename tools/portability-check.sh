#!/bin/sh
# tools/portability-check.sh: every C and C++ file of cplab builds, warning
# free (-Werror), with the newest Clang and the newest GCC that Debian ships,
# not only with Debian 12's GCC 12 (issue 19, item 1). CI runs both
# (.ci/run, step 5); each takes about a minute or two on 2 cores.
#
#   tools/portability-check.sh [BUILD_DIR]             clang-19 (Debian 12's newest), in
#                                                      BUILD_DIR (default build-clang)
#   tools/portability-check.sh --debian13 [ROOT_DIR]   gcc-14 (Debian 13's), in a minimal
#                                                      Debian 13 root (default build-debian13:
#                                                      debootstrap, about 70 s and 1.4 GB
#                                                      the first time), on a copy of the tree
#   tools/portability-check.sh --cc CC --cxx CXX [BUILD_DIR]   any other pair
#
# With one compiler pair it
#  1. configures BUILD_DIR with CC --enable-werror --without-cuda and builds
#     everything there (`all`, `make bench`, every check program): libcplab,
#     the programs, the tests, and the CUDA emulation (tests/emu/cuda_emu.cpp,
#     the host stand-ins, and tests/emu/gen/*.emu.cpp generated from
#     kernels/*.cu) with CXX -Werror;
#  2. runs tests/portability/emu_stdlib.sh there with CXX: the fake CUDA
#     headers, then every standard header of that compiler's library;
#  3. checks, with CC -fsyntax-only and the same flags, the C files step 1 did
#     not compile: those built only with CUDA or NCCL (against
#     $CUDA_HOME/include, default /usr/local/cuda, when it is there, copied
#     into the Debian 13 root; skipped, and said so, when not), those compiled by
#     other means (tests/install/consumer.c, traces/fuzz_trace.c), and again
#     the files whose NCCL and bench-engine paths (CPLAB_EXEC_NCCL,
#     CPLAB_BENCH_NCCL, CPLAB_BENCH_ENGINE) step 1 leaves out.
# Not covered: kernels/*.cu through nvcc with these compilers as its host
# compiler (nvcc pins its host compilers; the kernels' emulated form is built
# in step 1).
#
# Environment: CUDA_HOME; SKIP_APT=1 (install nothing: clang-19, debootstrap).
# Exit 0 when everything built, 1 when something did not (the messages say
# what), 2 when the check could not run (a compiler or the root missing).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
PORT_CC=clang-19 PORT_CXX=clang++-19 mode=compilers
while [ $# -gt 0 ]; do
  case $1 in
    --cc) PORT_CC=$2; shift 2 ;;
    --cxx) PORT_CXX=$2; shift 2 ;;
    --debian13) mode=debian13; shift ;;
    -h|--help) sed -n '2,36p' "$0"; exit 0 ;;
    -*) echo "portability-check: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) break ;;
  esac
done
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
jobs=$(nproc 2>/dev/null || echo 2)
say() { echo "portability-check: $*"; }
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
apt_install() { # PACKAGE...: install what is missing, through apt-get (Debian 12 host)
  missing=""
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
  done
  [ -z "$missing" ] && return 0
  if [ "${SKIP_APT:-0}" = 1 ]; then say "missing$missing (SKIP_APT=1)"; return 1; fi
  say "installing$missing"
  $sudo apt-get update -q >/dev/null &&
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends $missing >/dev/null
}

if [ "$mode" = debian13 ]; then
  # GCC 14 is Debian 13's (trixie); Debian 12 has no package of it. A minimal
  # root with the build's packages, the tree copied in (its build folders
  # left out), and this script run there with gcc-14 / g++-14.
  root=${1:-build-debian13}
  case $root in /*) ;; *) root="$top/$root" ;; esac
  if [ ! -x "$root/usr/bin/g++-14" ] || [ ! -x "$root/usr/bin/mpicc" ]; then
    apt_install debootstrap || { say "cannot install debootstrap"; exit 2; }
    say "making a Debian 13 root in $root"
    $sudo debootstrap --variant=minbase --include=g++-14 trixie "$root" http://deb.debian.org/debian \
      >"$root.log" 2>&1 || { tail -5 "$root.log"; say "debootstrap failed (see $root.log)"; exit 2; }
    $sudo chroot "$root" sh -c 'apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
      --no-install-recommends make autoconf automake libtool pkg-config python3 libhdf5-dev libgsl-dev \
      libopenmpi-dev libjansson-dev libcmocka-dev libxxhash-dev' >>"$root.log" 2>&1 ||
      { tail -5 "$root.log"; say "installing the packages in $root failed (see $root.log)"; exit 2; }
  fi
  $sudo rm -rf "$root/src" && $sudo mkdir -p "$root/src"
  # Left out: .git, build folders (they hold a config.status), roots like this one.
  excludes="--exclude=./.git --exclude=./autom4te.cache --exclude=./cplab-*.tar.gz"
  for d in "$top"/*/; do
    [ -f "$d/config.status" ] || [ -d "$d/usr/bin" ] || [ -d "$d/cplab-0.1.0" ] || [ "$d" = "$root/" ] &&
      excludes="$excludes --exclude=./$(basename "$d")"
  done
  # shellcheck disable=SC2086
  (cd "$top" && tar cf - $excludes .) |
    $sudo tar -C "$root/src" -xf - || { say "cannot copy the tree into $root/src"; exit 2; }
  # CUDA's and NCCL's headers (28 MB), for step 3's files that need them.
  if [ -f "$CUDA_HOME/include/cuda_runtime.h" ]; then
    $sudo rm -rf "$root/usr/local/cuda" && $sudo mkdir -p "$root/usr/local/cuda" &&
      $sudo cp -rL "$CUDA_HOME/include" "$root/usr/local/cuda/include" || { say "cannot copy $CUDA_HOME/include"; exit 2; }
  fi
  # Step 3's list of C files: the host's (git's), for the copy has no .git.
  if git -C "$top" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    (cd "$top" && git ls-files '*.c') | $sudo tee "$root/src/.portability-sources" >/dev/null
  fi
  exec $sudo chroot "$root" env -i PATH=/usr/bin:/bin HOME=/root SKIP_APT=1 \
    sh /src/tools/portability-check.sh --cc gcc-14 --cxx g++-14 /src/build-gcc14
fi

build=${1:-${BUILD_DIR:-build-clang}}
case $build in /*) ;; *) build="$top/$build" ;; esac
if ! command -v "$PORT_CC" >/dev/null 2>&1 || ! command -v "$PORT_CXX" >/dev/null 2>&1; then
  case $PORT_CC in
    clang-[0-9]*) apt_install "$PORT_CC" || { say "cannot install $PORT_CC"; exit 2; } ;;
    *) say "$PORT_CC or $PORT_CXX not found"; exit 2 ;;
  esac
fi
say "$("$PORT_CC" --version | head -1), $("$PORT_CXX" --version | head -1)"

if [ ! -x "$top/configure" ] || [ "$top/configure.ac" -nt "$top/configure" ]; then
  (cd "$top" && autoreconf -fi)
fi
mkdir -p "$build"
if [ ! -f "$build/config.status" ] || [ "$top/configure" -nt "$build/config.status" ]; then
  # -O0: time. (GCC's -Wmaybe-uninitialized needs optimisation; the normal
  # builds, -O2 and the sanitizers' -O1, keep it.)
  (cd "$build" && "$top/configure" -q CC="$PORT_CC" CFLAGS="-O0" --enable-werror --without-cuda --without-nccl) ||
    { say "configure with $PORT_CC failed (see $build/config.log)"; exit 2; }
fi

status=0
# The emulation's flags (tests/emu/local.mk) with -Werror and without -O1 -g.
emu="EMU_CXX=$PORT_CXX"
emu_flags="EMU_CXXFLAGS=-std=c++20 -O0 -Wall -Wno-unknown-pragmas -Werror"
say "1. build everything with $PORT_CC and the emulation with $PORT_CXX"
make -C "$build" -j"$jobs" -k "$emu" "$emu_flags" all || status=1
make -C "$build" -j"$jobs" -k "$emu" "$emu_flags" bench || status=1
say "2. the fake CUDA headers against the standard library, through $PORT_CXX"
make -C "$build" -j"$jobs" -k "$emu" "$emu_flags" check TESTS=tests/portability/emu_stdlib.sh || {
  status=1
  cat "$build/tests/portability/emu_stdlib.log" 2>/dev/null || :
}

say "3. C files step 1 did not compile, with $PORT_CC -fsyntax-only"
flags=$(make -s -C "$build" portability-flags) || { say "cannot read the build's flags"; exit 2; }
cuda_flags=""
if [ -f "$CUDA_HOME/include/cuda_runtime.h" ]; then cuda_flags="-I$CUDA_HOME/include"
else say "no $CUDA_HOME/include/cuda_runtime.h: files that need CUDA's headers are skipped"; fi
if [ -f "$top/.portability-sources" ]; then
  sources=$(cat "$top/.portability-sources")
elif git -C "$top" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  sources=$(cd "$top" && git ls-files '*.c')
else
  sources=$(cd "$top" && find . -name '*.c' | sed 's|^\./||' | while read -r f; do
    d=${f%%/*}; [ -f "$d/config.status" ] || [ -d "$d/usr/bin" ] || echo "$f"; done | sort)
fi
checked=0
for src in $sources; do
  dir=$(dirname "$src")
  base=$(basename "$src" .c)
  built=no
  ls "$build/$dir" 2>/dev/null | grep -Eq "(^|-)$base\.l?o$" && built=yes
  paths=no
  grep -Eq 'CPLAB_(EXEC_NCCL|BENCH_NCCL|BENCH_ENGINE)' "$top/$src" && paths=yes
  [ "$built" = yes ] && [ "$paths" = no ] && continue
  # One set of include folders and defines for all of them: those the
  # per-program CPPFLAGS of the local.mk files add.
  # shellcheck disable=SC2086
  if (cd "$build" && "$PORT_CC" $flags $cuda_flags -I"$top/kernels" -I"$top/sim" -I"$top/analysis" -I"$top/exec" \
      -I"$top/bench" -I"$top/bench/layers" -I"$top/tests/gpu" -I"$top/tests/numeric" \
      -DCPLAB_EXEC_NCCL=1 -DCPLAB_BENCH_NCCL=1 -DCPLAB_BENCH_ENGINE=1 -fsyntax-only "$top/$src") 2>"$build/port.err"
  then
    checked=$((checked + 1)); say "ok: $src"
  elif [ -z "$cuda_flags" ] && grep -Eq "fatal error: .?(cuda|nccl|cublas)[A-Za-z_]*\.h.?: No such file" "$build/port.err"
  then
    say "skipped $src (needs CUDA's headers)"
  else
    cat "$build/port.err"; say "FAILED: $src"; status=1
  fi
done
say "checked $checked more C files with -fsyntax-only"

if [ "$status" -eq 0 ]; then say "passed: every C and C++ file builds with $PORT_CC and $PORT_CXX -Werror"
else say "FAILED (see above)"; fi
exit $status
