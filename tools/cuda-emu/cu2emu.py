#!/usr/bin/env python3
"""cu2emu.py IN.cu OUT.cpp: a CUDA source as C++ for the CPU emulation of
tests/emu (cuda_emu.h). Three rewrites, nothing else changes:

  kernel<<<grid, block[, smem[, stream]]>>>(args);
    -> ::cuda_emu::launch(kernel, "kernel", grid, block, smem, stream,
                          ::cuda_emu::kparams(kernel, args));
  extern __shared__ [__align__(N)] T name[];
    -> T *name = (T *)::cuda_emu::dynamic_shared();
  cluster_launch(kernel, ...)   (kernels/cluster.cuh: not a <<<>>> launch)
    -> cluster_launch_named("kernel", kernel, ...)
       so that the emulator's messages name the kernel.

The output starts with #line 1 "IN.cu" and keeps every line break, so the
compiler's messages name the original file and line. Exits 1 with a message
when a launch cannot be parsed or a `<<<` is left over."""
import re
import sys


def fail(path, text, pos, msg):
    line = text.count("\n", 0, pos) + 1
    sys.stderr.write("%s:%d: cu2emu: %s\n" % (path, line, msg))
    sys.exit(1)


def split_top(s):
    """Split s at commas outside (), [], {} and <> of template arguments."""
    parts, depth, cur = [], 0, ""
    for ch in s:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p.strip() for p in parts]


def skip_comment_or_string(text, i):
    """If text[i:] starts a comment or literal, the index after it, else None."""
    if text.startswith("//", i):
        j = text.find("\n", i)
        return len(text) if j < 0 else j
    if text.startswith("/*", i):
        j = text.find("*/", i + 2)
        return len(text) if j < 0 else j + 2
    if text[i] in "\"'":
        q, j = text[i], i + 1
        while j < len(text) and text[j] != q:
            j += 2 if text[j] == "\\" else 1
        return j + 1
    return None


def matching_paren(text, i, path):
    """Index of the ')' closing the '(' at text[i]."""
    depth = 0
    j = i
    while j < len(text):
        k = skip_comment_or_string(text, j)
        if k is not None:
            j = k
            continue
        if text[j] == "(":
            depth += 1
        elif text[j] == ")":
            depth -= 1
            if depth == 0:
                return j
        j += 1
    fail(path, text, i, "unbalanced parentheses in a launch")


# The kernel: an identifier, optionally qualified, optionally with template
# arguments (no nested <>), right before <<<.
LAUNCH = re.compile(r"((?:::)?[A-Za-z_]\w*(?:::[A-Za-z_]\w*)*(?:\s*<[^<>;()]*>)?)\s*<<<")
EXTERN_SHARED = re.compile(
    r"extern\s+__shared__\s+(?:__align__\s*\(\s*\d+\s*\)\s+)?([A-Za-z_][\w:]*(?:\s*\*)?)\s+"
    r"(?:__align__\s*\(\s*\d+\s*\)\s+)?([A-Za-z_]\w*)\s*\[\s*\]\s*;")
# cluster_launch( with a kernel name (as LAUNCH's) as its first argument.
CLUSTER_LAUNCH = re.compile(
    r"(?<![\w:])cluster_launch\s*\(\s*((?:::)?[A-Za-z_]\w*(?:::[A-Za-z_]\w*)*(?:\s*<[^<>;()]*>)?)\s*,")


def rewrite(path, text):
    out, i, launches = [], 0, 0
    while True:
        m = LAUNCH.search(text, i)
        if not m:
            break
        # a match inside a comment or a string literal is left alone
        j, inside = i, False
        while j < m.start():
            k = skip_comment_or_string(text, j)
            if k is not None:
                if k > m.start():
                    inside = True
                    break
                j = k
            else:
                j += 1
        if inside:
            out.append(text[i:k])
            i = k
            continue
        kernel = re.sub(r"\s+", "", m.group(1))
        cfg_start = m.end()
        cfg_end = text.find(">>>", cfg_start)
        if cfg_end < 0:
            fail(path, text, m.start(), "no >>> after <<<")
        cfg = split_top(text[cfg_start:cfg_end])
        if not 2 <= len(cfg) <= 4 or not all(cfg):
            fail(path, text, m.start(), "launch configuration must have 2 to 4 parts: <<<%s>>>" % text[cfg_start:cfg_end])
        grid, block = cfg[0], cfg[1]
        smem = cfg[2] if len(cfg) > 2 else "0"
        stream = cfg[3] if len(cfg) > 3 else "nullptr"
        p = cfg_end + 3
        while p < len(text) and text[p].isspace():
            p += 1
        if p >= len(text) or text[p] != "(":
            fail(path, text, m.start(), "no argument list after >>>")
        close = matching_paren(text, p, path)
        args = text[p + 1:close]
        q = close + 1
        while q < len(text) and text[q] in " \t":
            q += 1
        if q >= len(text) or text[q] != ";":
            fail(path, text, m.start(), "a launch must be a statement of its own (`;` after the arguments)")
        original = text[m.start():q + 1]
        sep = ", " if args.strip() else ""
        call = ("::cuda_emu::launch(%s, \"%s\", %s, %s, %s, %s, ::cuda_emu::kparams(%s%s%s));"
                % (kernel, kernel, grid, block, smem, stream, kernel, sep, " ".join(args.split())))
        out.append(text[i:m.start()])
        out.append(call + "\n" * original.count("\n"))
        i = q + 1
        launches += 1
    out.append(text[i:])
    result = "".join(out)

    def shared(m):
        return "%s *%s = (%s *)::cuda_emu::dynamic_shared();" % (m.group(1), m.group(2), m.group(1))

    result = EXTERN_SHARED.sub(shared, result)

    def cluster_launch(m):
        return 'cluster_launch_named("%s", %s,' % (re.sub(r"\s+", "", m.group(1)), m.group(1))

    result = CLUSTER_LAUNCH.sub(cluster_launch, result)
    if "<<<" in result or re.search(r"extern\s+__shared__", result):
        pos = result.find("<<<")
        fail(path, result, pos if pos >= 0 else 0, "a launch or extern __shared__ declaration was not rewritten")
    return result, launches


def main():
    if len(sys.argv) != 3:
        sys.stderr.write("usage: cu2emu.py IN.cu OUT.cpp\n")
        sys.exit(2)
    src, dst = sys.argv[1], sys.argv[2]
    with open(src, encoding="utf-8") as f:
        text = f.read()
    result, _ = rewrite(src, text)
    tmp = dst + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("// Generated from %s by tools/cuda-emu/cu2emu.py: do not edit.\n" % src)
        f.write("#line 1 \"%s\"\n" % src)
        f.write(result)
    import os
    os.replace(tmp, dst)


if __name__ == "__main__":
    main()
