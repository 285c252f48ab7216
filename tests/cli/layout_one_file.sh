#!/bin/sh
# A layout is one file (docs/layouts.md, "Adding yours"): in a copy of the
# source tree, adding plan/layouts/NAME.c and touching nothing else makes
# NAME a layout of every program. The copy is configured without CUDA and
# builds cplab-sim alone (the layouts' registration is the plan library's),
# so this costs a configure and a third of a build, not a whole one.
. "$top_srcdir/tests/lib.sh"

# The copy: the sources as the tree has them (configure and Makefile.in
# included, so that no autotools run is needed), without build folders,
# version control and the large data the build does not read.
[ -f "$top_srcdir/config.status" ] && { echo "# $top_srcdir is configured in place: its copy would carry that build"; exit 77; }
src="$WORK/src"
mkdir -p "$src"
(cd "$top_srcdir" && tar -cf - --exclude=./.git --exclude=./build --exclude=./_build \
  --exclude=./_inst --exclude=./bench/results --exclude=./tests/golden --exclude=./tests/golden-gpu .) |
  (cd "$src" && tar -xf -) || fail "cannot copy the source tree"
[ -x "$src/configure" ] || { echo "# no configure in $top_srcdir (run autoreconf)"; exit 77; }

# The one file: the example of docs/layouts.md, with every region's slice of
# the workspace padded to whole pairs of KV blocks instead of one.
cat >"$src/plan/layouts/two_block_aligned.c" <<'EOF'
/* "two-block-aligned": block-aligned with slices padded to two KV blocks. */
#include "cplab/kv.h"
#include "cplab/layout.h"

static int64_t rows_per_rank(const cplab_layout_env *env, int64_t extent, const cplab_rank_ids *self) {
  (void)self;
  int64_t B2 = 2 * (int64_t)env->par.block_size;
  int64_t rows = cplab_kv_local_len(extent, 0, env->par.interleave, env->par.dcp);
  return (rows + B2 - 1) / B2 * B2;
}

const cplab_layout cplab_layout_two_block_aligned = {
    .name = "two-block-aligned",
    .summary = "vLLM's design with each region's workspace slice padded to two KV blocks",
    .rows_per_rank = rows_per_rank,
};
EOF

mkdir -p "$src/b"
if (cd "$src/b" && ../configure --without-cuda --disable-silent-rules >"$WORK/configure.log" 2>&1); then
  pass "the copy configures"
else
  tail -20 "$WORK/configure.log"
  fail "the copy does not configure"; finish
fi
if make -C "$src/b" -j2 cplab-sim >"$WORK/make.log" 2>&1; then pass "the copy builds cplab-sim"
else
  tail -20 "$WORK/make.log"
  fail "the copy does not build cplab-sim"; finish
fi
grep -q 'plan/layouts/two_block_aligned' "$WORK/make.log" && pass "the new file was compiled" ||
  fail "the build did not compile plan/layouts/two_block_aligned.c"

NEW="$src/b/cplab-sim"
expect_exit 0 "--list-layouts" "$NEW" --list-layouts
expect_grep "$WORK/out" "^two-block-aligned " "the new layout is listed"
if sed -n '/^mutant-/q; p' "$WORK/out" | grep -q '^two-block-aligned '; then pass "it is listed before the mutants"
else fail "it is listed after a mutant"; fi
expect_exit 0 "--layout two-block-aligned --check on mixed" "$NEW" --scenario mixed --layout two-block-aligned --check -q
expect_exit 0 "--layout two-block-aligned --check on smoke" "$NEW" --scenario smoke --layout two-block-aligned --check -q
finish
