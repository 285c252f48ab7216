#!/bin/sh
# What schema 1.1 records, checked against cplab-sim's own view: the groups
# each rank file holds (cplab-trace dump) equal the rank table cplab-sim
# --json prints, and the workspace rows cplab-trace rows derives from a
# stored plan equal the converted top-k indices of the numeric pass (the
# simulator's conversion of the same tokens); the deinterleaved key rows of
# one request are distinct. Exit codes of `rows` are those of dump.
. "$top_srcdir/tests/lib.sh"
TRACE="$top_builddir/cplab-trace"

# Debian's python3-h5py lives in /usr/bin/python3, which another python3 on PATH may hide.
PY="" H5PY=""
for p in python3 /usr/bin/python3; do
  if [ -z "$PY" ] && "$p" -c 'import json' >/dev/null 2>&1; then PY=$p; fi
  if [ -z "$H5PY" ] && "$p" -c 'import h5py' >/dev/null 2>&1; then H5PY=$p; fi
done

# mixed: TP2/PCP2/DCP4, so the DCP groups span TP and PCP.
mkdir -p "$WORK/m" "$WORK/n"
expect_exit 0 "cplab-sim -o mixed" "$SIM" --scenario mixed -q -o "$WORK/m/mixed.h5"
expect_exit 0 "cplab-sim --json mixed" "$SIM" --scenario mixed --json
cp "$WORK/out" "$WORK/mixed.json"
for r in 0 1 2 3; do
  "$TRACE" dump "$WORK/m/mixed.h5" --rank "$r" >"$WORK/dump$r" 2>"$WORK/err" || fail "dump --rank $r"
done
if [ -n "$PY" ]; then
  cat >"$WORK/groups.py" <<'EOF'
import json, re, sys
table = json.load(open(sys.argv[1]))["rank_table"]["ranks"]
for r, want in enumerate(table):
    text = open("%s/dump%d" % (sys.argv[2], r)).read()
    ids = re.search(r"^groups: pp_rank (\d+), pcp_rank (\d+), tp_rank (\d+), dcp_rank (\d+)$", text, re.M)
    got = {"pp": int(ids[1]), "pcp": int(ids[2]), "tp": int(ids[3]), "dcp_rank": int(ids[4])}
    for k in ("pp", "pcp", "tp", "dcp_rank"):
        if got[k] != want[k]: sys.exit("rank %d: %s %d in the trace, %d in cplab-sim's table" % (r, k, got[k], want[k]))
    for kind in ("TP", "PCP", "DCP"):
        m = re.search(r"^  %s group \d+: ([\d ]+)$" % kind, text, re.M)
        members = [int(x) for x in m[1].split()]
        if members != want["groups"][kind.lower()]:
            sys.exit("rank %d: %s group %s in the trace, %s in cplab-sim's table" % (r, kind, members,
                     want["groups"][kind.lower()]))
print("%d ranks agree" % len(table))
EOF
  expect_exit 0 "every rank's recorded groups equal cplab-sim's rank table" "$PY" "$WORK/groups.py" "$WORK/mixed.json" "$WORK"
  expect_grep "$WORK/out" "^4 ranks agree$" "all four ranks compared"
else
  echo "python3 not installed: skipped the group comparison"
fi

expect_exit 0 "cplab-sim --numeric -o smoke" "$SIM" --scenario smoke --numeric -q -o "$WORK/n/smoke.h5"
expect_exit 0 "rows" "$TRACE" rows "$WORK/n/smoke.h5" --rank 1 --step 1
expect_grep "$WORK/out" "^step 1 of rank 1, layout vllm: 68 local tokens$" "rows header"
expect_grep "$WORK/out" "token  *req  *phase  *position  *workspace_row  *deinterleave" "rows columns"
expect_exit 2 "rows of a step that does not exist" "$TRACE" rows "$WORK/n/smoke.h5" --step 9
expect_grep "$WORK/err" "no step 9 (the trace has 3)" "names the step"
expect_exit 2 "rows of a rank that does not exist" "$TRACE" rows "$WORK/n/smoke.h5" --rank 7
if [ -n "$H5PY" ]; then
  cat >"$WORK/rows.py" <<'EOF'
import subprocess, sys
import h5py
trace, run = sys.argv[1], sys.argv[2]
f = h5py.File(run, "r")
joined = differ = 0
for r in range(int(f.attrs["world_size"])):
    rank = f["ranks/r%04d" % r]
    for s in range(int(f.attrs["num_steps"])):
        out = subprocess.run([trace, "rows", run, "--rank", str(r), "--step", str(s)], check=True,
                             capture_output=True, text=True).stdout.splitlines()[2:]
        rows = [l.split() for l in out]
        tok = {int(x[0]): (int(x[1]), x[2], int(x[3]), int(x[4]), int(x[5])) for x in rows}
        ws = {(q, pos): w for (q, ph, pos, w, de) in tok.values() if w >= 0}
        for q in {v[0] for v in tok.values()}:
            de = [v[4] for v in tok.values() if v[0] == q and v[4] >= 0]
            if len(de) != len(set(de)): sys.exit("rank %d step %d request %d: two tokens share a key row" % (r, s, q))
        step = rank["steps/%06d" % s]
        for layer in (step["layers"].values() if "layers" in step else []):
            sampled, topk, conv = layer["sampled_tokens"][()], layer["topk"][()], layer["topk_converted"][()]
            for i, m in enumerate(sampled):
                q, phase, pos, w, de = tok[int(m)]
                if phase != "prefill" or w < 0: continue
                for j in range(topk.shape[1]):
                    key = (q, int(topk[i, j]))
                    if key in ws:
                        joined += 1
                        differ += int(conv[i, j]) != ws[key]
print("%d entries joined, %d differ" % (joined, differ))
sys.exit(1 if differ or not joined else 0)
EOF
  expect_exit 0 "rows' workspace rows equal the numeric pass's conversion" "$H5PY" "$WORK/rows.py" "$TRACE" "$WORK/n/smoke.h5"
  expect_grep "$WORK/out" " 0 differ$" "no converted index differs"
  sed 's/^/  /' "$WORK/out"
else
  echo "python3-h5py not installed: skipped the comparison with the numeric pass"
fi
finish
