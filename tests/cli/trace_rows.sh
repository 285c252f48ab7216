#!/bin/sh
# What schema 1.1 records, checked against cplab-sim's own view: the groups
# each rank file holds (cplab-trace dump) equal the rank table cplab-sim
# --json prints, and the workspace rows cplab-trace rows derives from a
# stored plan equal the converted top-k indices of the numeric pass (the
# simulator's conversion of the same tokens); the deinterleaved key rows of
# one request are distinct and follow vLLM's rule (a mutant breaks it).
# Exit codes of `rows` are those of dump.
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
  # The deinterleaved key rows against vLLM's rule (build_pcp_global_chunk_plan,
  # generalised to interleave I as the gather lays shards out) on mixed
  # (W 4, I 4), and the mutant that deinterleaves as if I were 1.
  cat >"$WORK/deint.py" <<'EOF'
import subprocess, sys
import h5py
trace, run = sys.argv[1], sys.argv[2]
f = h5py.File(run, "r")
W, I = int(f["config"].attrs["dcp"]), int(f["config"].attrs["interleave"])
checked = bad = 0
def local(t): return (t // I // W) * I + t % I
for r in range(int(f.attrs["world_size"])):
    for s in range(int(f.attrs["num_steps"])):
        out = subprocess.run([trace, "rows", run, "--rank", str(r), "--step", str(s)], check=True,
                             capture_output=True, text=True).stdout.splitlines()[2:]
        by_req = {}
        for l in out:
            x = l.split()
            if int(x[5]) >= 0: by_req.setdefault(int(x[1]), []).append((int(x[3]), int(x[5])))
        for q, toks in by_req.items():
            # The rule: row = owner · padded_total + padded_cu + local, owner = (pos / I) mod W,
            # local = (pos / I / W) · I + pos mod I. Per owner, row - local is one constant c_o,
            # and the c_o lie on one line in o (slope padded_total).
            c = {}
            for pos, de in toks:
                checked += 1
                c.setdefault((pos // I) % W, set()).add(de - local(pos))
            owners = sorted(c)
            if any(len(v) != 1 for v in c.values()):
                bad += 1
                print("rank %d step %d request %d: tokens of one owner are not consecutive key rows" % (r, s, q))
                continue
            cs = [next(iter(c[o])) for o in owners]
            if len(owners) > 1:
                slope = (cs[1] - cs[0]) // (owners[1] - owners[0])
                if any(cs[i] - cs[0] != slope * (owners[i] - owners[0]) for i in range(len(owners))) or slope <= 0:
                    bad += 1
                    print("rank %d step %d request %d: owners' rows %s do not follow one shard stride" % (r, s, q, cs))
print("%d key rows checked against the deinterleave rule (W %d, I %d), %d differ" % (checked, W, I, bad))
sys.exit(1 if bad or not checked else 0)
EOF
  expect_exit 0 "rows' deinterleaved key rows follow the rule (mixed: DCP 4, interleave 4)" "$H5PY" "$WORK/deint.py" \
    "$TRACE" "$WORK/m/mixed.h5"
  expect_grep "$WORK/out" "key rows checked against the deinterleave rule (W 4, I 4), 0 differ$" "every key row checked"
  expect_exit 0 "cplab-sim -o mixed with mutant-bad-deinterleave" "$SIM" --scenario mixed --layout mutant-bad-deinterleave \
    -q -o "$WORK/m/bad.h5"
  expect_exit 1 "the mutant's key rows break the rule" "$H5PY" "$WORK/deint.py" "$TRACE" "$WORK/m/bad.h5"
else
  echo "python3-h5py not installed: skipped the comparison with the numeric pass"
fi
finish
