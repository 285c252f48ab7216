#!/bin/sh
# The hold before each timing loop (--lead-us): the small cases timed with it (50 us a run) and
# without (0), in turn, ceilings on (for %cp=). Then the stream test (the hold's own checks).
set -u
make -j16 tests/gpu/test_gpu_stream >"$OUT/build-test.log" 2>&1 && ./tests/gpu/test_gpu_stream >"$OUT/test_gpu_stream.txt" 2>&1
echo "test_gpu_stream rc $?"; tail -3 "$OUT/test_gpu_stream.txt"
C="convert-prefill-4k-dcp4,convert-prefill-8k-dcp8,convert-decode-b64-dcp4,gather-8k,gather-32k,gather-128k"
C="$C,gather-idx-8k,gather-idx-32k,gather-idx-128k,restore-8k-pcp2,restore-32k-pcp4,combine-dcp4-h64-b1,combine-dcp4-h64-b64"
C="$C,dlogits-h64-b1-32k,dlogits-h64-b16-32k,dlogits-h32-b16-32k,dlogits-h64-b16-128k-dcp4,dindexer-h64-b1-32k"
C="$C,topk-decode-b1-32k,topk-decode-b1-8k,topk-merge-dcp4-b1-128k"
run() { # label, extra args
  l=$1; shift
  timeout 150 $KB --case $C "$@" --json "$OUT/$l.json" >"$OUT/$l.txt" 2>"$OUT/$l.err"
  echo "== $l ($*) rc $?"; grep -E "^ |^# (ceilings|before)" "$OUT/$l.txt" | cut -c1-160
}
run lead1
run zero1 --lead-us 0
run lead2
run zero2 --lead-us 0
