#!/usr/bin/env python3
"""Usage: tools/ncu-sass-phases.py [--min PCT] [--split A:B:STEP] [--hot A:B:N] SASS_CSV

Where a kernel's time goes, phase by phase, from Nsight Compute's per-instruction
source counters. SASS_CSV (plain or .gz) is what

    ncu --import REPORT.ncu-rep --page source --print-source sass --csv

prints for a report made with --section SourceCounters (and WarpStateStats, so
that the stall reasons are there): its first line names the kernel, its second
the columns, then one line an instruction in address order.

A phase is a run of instructions up to and including a block-wide wait: a
BAR (__syncthreads), a SYNCS (an mbarrier's wait or arrive), an EXIT or a RET.
A kernel whose passes end at barriers (the top-k's floor pass, compaction,
scans, placing, ranking) thus shows one line a pass: its share of the warp
samples (time) and of the executed warp instructions, the stall reasons that
hold most of its samples (percent of all samples), where the report has
them its shared-memory wavefronts against the ideal count (bank conflicts:
above 1.00x) and its most sampled instruction. Phases under --min percent of both samples and instructions
(default 0.4) are not listed. Line numbers are the instruction's index (0 =
the first instruction).

  --split A:B:STEP   instructions A..B in blocks of STEP: samples,
                     instructions and the most executed opcodes of each
  --hot A:B:N        instructions A..B with at least N samples, one a line

Exit status 0, or 2 for bad usage or a file that is not such a CSV.
bench/NOTES.md's phase shares of the top-k were read this way.
"""
import csv
import gzip
import signal
import sys

STALLS = ["barrier", "branch_resolving", "dispatch", "drain", "imc", "lg", "long_sb", "math", "membar", "mio",
          "misc", "no_inst", "not_selected", "selected", "short_sb", "sleep", "tex", "wait"]
SHARED_WAVES = ["L1 Wavefronts Shared", "L1 Wavefronts Shared Ideal"]


class Usage(Exception):
    pass


def parse_range(text, what):
    parts = text.split(":")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        raise Usage(f"{what} wants A:B:N with non-negative integers, not '{text}'")
    a, b, n = (int(p) for p in parts)
    if a > b or n == 0:
        raise Usage(f"{what} '{text}': A must not exceed B and N must be at least 1")
    return a, b, n


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rt", newline="") as f:
            rows = list(csv.reader(f))
    except (OSError, EOFError, UnicodeDecodeError) as e:
        raise Usage(f"{path}: cannot read: {e}")
    if len(rows) < 3 or not rows[0] or rows[0][0] != "Kernel Name":
        raise Usage(f"{path}: not ncu's SASS source CSV (its first line names the kernel: \"Kernel Name\",...)")
    head = rows[1]
    need = ["Source", "Warp Stall Sampling (All Samples)", "Instructions Executed"]
    missing = [c for c in need if c not in head]
    if missing:
        raise Usage(f"{path}: no column {', '.join(repr(c) for c in missing)} (a report without SourceCounters?)")
    cols = {c: head.index(c) for c in need}
    stalls = {s: head.index("stall_" + s) for s in STALLS if "stall_" + s in head}
    wave = [head.index(c) for c in SHARED_WAVES if c in head]  # both or neither used
    wave = wave if len(wave) == 2 else []
    out = []
    for n, r in enumerate(rows[2:], start=3):
        if len(r) != len(head):
            continue  # ncu's trailing notes, if any
        try:
            ins = {"src": r[cols["Source"]].strip(), "samples": int(r[cols["Warp Stall Sampling (All Samples)"]]),
                   "executed": int(r[cols["Instructions Executed"]]),
                   "stalls": {s: int(r[i]) for s, i in stalls.items()},
                   "waves": [int(r[i]) if r[i] not in ("", "-") else 0 for i in wave]}
        except ValueError:
            raise Usage(f"{path}:{n}: a count that is not an integer")
        out.append(ins)
    if not out:
        raise Usage(f"{path}: no instructions")
    return rows[0][1] if len(rows[0]) > 1 else "?", out


def opcode(src):
    words = [w for w in src.split() if not w.startswith("@")]
    return words[0].split(".")[0] if words else ""


def ends_phase(src):
    op = opcode(src)
    return op in ("BAR", "SYNCS", "EXIT", "RET")


def pct(x, total):
    return 100.0 * x / total if total else 0.0


def phases(ins, tot_s, tot_i, min_pct, out):
    start = 0
    for i, x in enumerate(ins):
        if not ends_phase(x["src"]) and i + 1 < len(ins):
            continue
        seg = ins[start:i + 1]
        s = sum(y["samples"] for y in seg)
        n = sum(y["executed"] for y in seg)
        if pct(s, tot_s) >= min_pct or pct(n, tot_i) >= min_pct:
            why = {k: sum(y["stalls"].get(k, 0) for y in seg) for k in STALLS}
            top = sorted((v, k) for k, v in why.items() if v)[::-1][:4]
            hot = max(seg, key=lambda y: y["samples"])
            waves = [sum(y["waves"][j] for y in seg if y["waves"]) for j in (0, 1)]
            out.write(f"{start:6d}-{i:<6d} samples {pct(s, tot_s):5.1f}%  instructions {pct(n, tot_i):5.1f}%  "
                      f"ends {opcode(x['src']):6s} stalls "
                      + (" ".join(f"{k} {pct(v, tot_s):.1f}" for v, k in top) or "-")
                      + (f"  shared wavefronts {waves[0] / waves[1]:.2f}x ideal" if waves[1] else "")
                      + f"  hottest: {hot['src'][:48]}\n")
        start = i + 1


def split(ins, a, b, step, tot_s, tot_i, out):
    for s0 in range(a, min(b, len(ins) - 1) + 1, step):
        blk = ins[s0:min(s0 + step, b + 1)]
        s = sum(y["samples"] for y in blk)
        n = sum(y["executed"] for y in blk)
        ops = {}
        for y in blk:
            ops[opcode(y["src"])] = ops.get(opcode(y["src"]), 0) + y["executed"]
        top = sorted(((v, k) for k, v in ops.items() if v), key=lambda t: (-t[0], t[1]))[:5]
        out.write(f"{s0:6d} samples {pct(s, tot_s):5.2f}%  instructions {pct(n, tot_i):5.2f}%  "
                  + " ".join(f"{k} {pct(v, tot_i):.2f}" for v, k in top) + "\n")


def hot(ins, a, b, least, out):
    for i in range(a, min(b, len(ins) - 1) + 1):
        if ins[i]["samples"] >= least:
            out.write(f"{i:6d} samples {ins[i]['samples']:7d} executed {ins[i]['executed']:10d}  {ins[i]['src']}\n")


def main(argv):
    min_pct, splits, hots, files = 0.4, [], [], []
    it = iter(argv)
    for arg in it:
        if arg in ("-h", "--help"):
            sys.stdout.write(__doc__)
            return 0
        if arg in ("--min", "--split", "--hot"):
            val = next(it, None)
            if val is None:
                raise Usage(f"{arg} wants a value")
            if arg == "--min":
                try:
                    min_pct = float(val)
                except ValueError:
                    raise Usage(f"--min wants a number, not '{val}'")
            elif arg == "--split":
                splits.append(parse_range(val, "--split"))
            else:
                hots.append(parse_range(val, "--hot"))
        elif arg.startswith("-"):
            raise Usage(f"unknown option '{arg}'")
        else:
            files.append(arg)
    if len(files) != 1:
        raise Usage("one SASS CSV file expected")
    kernel, ins = load(files[0])
    tot_s = sum(x["samples"] for x in ins)
    tot_i = sum(x["executed"] for x in ins)
    out = sys.stdout
    out.write(f"# {kernel}: {len(ins)} instructions, {tot_s} warp samples, {tot_i} warp instructions executed\n")
    if not splits and not hots:
        phases(ins, tot_s, tot_i, min_pct, out)
    for a, b, step in splits:
        split(ins, a, b, step, tot_s, tot_i, out)
    for a, b, least in hots:
        hot(ins, a, b, least, out)
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # (piped into head: end quietly)
    try:
        sys.exit(main(sys.argv[1:]))
    except Usage as e:
        sys.stderr.write(f"ncu-sass-phases.py: {e}\n(--help for usage)\n")
        sys.exit(2)
