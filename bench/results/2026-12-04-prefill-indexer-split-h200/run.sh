#!/bin/sh
# Session 17, call 5: where the tp4 32k prefill's indexer phase goes. ncu (SpeedOfLight, launch stats)
# of the first 16 indexer-logits and top-k launches of one cplab-bench tp4 prefill step (rank 0's 8
# chunks of 4096 causal rows, each logits then top-k), beside the kernel bench's top-k cases.
set -u
save() { [ -n "${FINAL:-}" ] && tar czf "$FINAL/part.tar.gz" -C "$OUT" . ; }
$KB --case topk-4k-32k,topk-4k-causal-32k --no-ceilings --json "$OUT/kb-topk.json" >"$OUT/kb-topk.txt" 2>&1; echo "kb rc $?"
grep -E '^ topk' "$OUT/kb-topk.txt"
save
make -j16 bench/cplab-bench >"$OUT/build-bench.log" 2>&1 || { tail -20 "$OUT/build-bench.log"; exit 1; }
timeout 200 ncu -k regex:'logits|topk' -c 16 --section SpeedOfLight --section LaunchStats -o "$OUT/ncu-tp4" \
  ./bench/cplab-bench --preset glm-5 --parallel tp4 --prefill 32768 --graphs eager --reps 1 --warmup 0 \
  -o "$OUT/bench-tp4" >"$OUT/ncu-tp4.log" 2>&1; echo "ncu rc $?"
ncu --import "$OUT/ncu-tp4.ncu-rep" >"$OUT/ncu-tp4.txt" 2>&1; rm -f "$OUT/ncu-tp4.ncu-rep"
grep -E '^  [a-zA-Z_].*\(|Duration|Grid Size' "$OUT/ncu-tp4.txt" | sed 's/Context 1, Stream [0-9]*, Device 0, CC 9.0//' | head -60
tail -3 "$OUT/ncu-tp4.log"
