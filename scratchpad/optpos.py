#!/usr/bin/env python3
"""What V8 compiles and deoptimizes again after a full GC, by source position.

Run a probe that prints `=== ROUND k START` / `=== ROUND k END` around each "full GC, then runs" round
(deopts.ts for turn workloads, callrounds.ts for per-call ones) with V8's code log on:

  npx node --expose-gc --trace-opt --trace-deopt --log-code --logfile=/tmp/v8.log --no-logfile-per-isolate \
    scratchpad/deopts.ts agent500 30 4 ours 2 > /tmp/trace.txt
  python3 scratchpad/optpos.py /tmp/trace.txt /tmp/v8.log [rows]

Prints the optimizing compiles inside the rounds (background compile ms summed per function, and how many
times), then the functions deoptimized for "weak objects" (an object shape or closure their code relied on
died in the GC). `--trace-opt` names functions only by their SharedFunctionInfo; the code log maps those to
file:line:col.
"""
import re
import sys

trace, log = sys.argv[1], sys.argv[2]
top = int(sys.argv[3]) if len(sys.argv) > 3 else 30

pos = {}
for line in open(log):
    if line.startswith("code-creation,JS"):
        p = line.rstrip("\n").split(",")
        try:
            pos[int(p[-2], 16)] = ",".join(p[6:-2]).strip()
        except ValueError:
            pass
    elif line.startswith("sfi-move"):
        p = line.strip().split(",")
        try:
            a, b = int(p[1], 16), int(p[2], 16)
            if a in pos:
                pos[b] = pos[a]
        except ValueError:
            pass


def where(tagged):
    name = pos.get(int(tagged, 16) - 1, "?" + tagged)
    return name.replace("file:///work/main/", "").replace("node_modules/", "")


inside, rounds, compiles, weak = False, 0, {}, {}
for line in open(trace):
    if "=== ROUND" in line:
        inside = "START" in line
        rounds += inside
        continue
    if not inside:
        continue
    m = re.search(r"completed compiling .*?\(sfi = (\w+)\)>.*?took ([\d.]+), ([\d.]+), ([\d.]+) ms", line)
    if m:
        k = where(m.group(1))
        ms, n = compiles.get(k, (0.0, 0))
        compiles[k] = (ms + float(m.group(3)), n + 1)
        continue
    m = re.search(r"weak objects", line) and re.search(r"\((0x\w+) <SharedFunctionInfo", line)
    if m:
        k = where(m.group(1))
        weak[k] = weak.get(k, 0) + 1

total = sum(ms for ms, _ in compiles.values())
print(f"rounds {rounds}, compile ms per round {total / max(rounds, 1):.1f}")
for k, (ms, n) in sorted(compiles.items(), key=lambda x: -x[1][0])[:top]:
    print(f"{ms:7.1f} ms {n:2d}x {k}")
print(f"weak-object deopts {sum(weak.values())}")
for k, n in sorted(weak.items(), key=lambda x: -x[1])[:top]:
    print(f"{n:3d} {k}")
