#!/bin/sh
# ./setup.sh's command line (issue 19): --help lists the commands and every
# knob the README says it lists, with exit 0; an unknown command is a usage
# error (exit 2) naming it. Nothing is installed or built here.
. "$top_srcdir/tests/lib.sh"
SETUP="$top_srcdir/setup.sh"
expect_exit 0 "./setup.sh --help" sh "$SETUP" --help
for knob in "./setup.sh check" BUILD_DIR CONFIGURE_FLAGS SKIP_APT --enable-sanitizers --with-cuda=DIR \
  --with-nccl=DIR --with-cuda-arch; do
  expect_grep "$WORK/out" "$knob" "--help names $knob"
done
grep -q "set -eu" "$WORK/out" && fail "--help prints the script's code" || pass "--help prints no code"
expect_exit 0 "./setup.sh -h" sh "$SETUP" -h
expect_exit 2 "an unknown command" sh "$SETUP" frobnicate
expect_grep "$WORK/err" "unknown command 'frobnicate'" "the refusal names the command"
finish
