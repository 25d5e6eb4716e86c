# Rewrites `import { A, type B } from "effect"` (and "effect/<area>") into one namespace import per module
# (`import * as A from "effect/A"`), as @effect/eslint-plugin's no-import-from-barrel-package asks: importing
# the barrel loads every module of effect (~190 ms at start-up), a module path loads only what is used.
# Usage: python3 scratchpad/unbarrel.py <files...>
import re, sys
FUNCTION = {"pipe", "flow", "identity", "absurd", "hole", "cast"}
AREAS = "ai|cli|cluster|encoding|http|http-api|process|reactivity|rpc|sql|workflow|persistence|socket|observability"
pat = re.compile(r'import\s+(type\s+)?\{([^}]*)\}\s+from\s+"(effect(?:/(?:' + AREAS + r'))?)"\n?')
def rewrite(m):
    all_type = m.group(1) is not None
    base = m.group(3)
    out, fn_vals, fn_types = [], [], []
    for spec in [s.strip() for s in m.group(2).split(",") if s.strip()]:
        is_type = all_type or spec.startswith("type ")
        spec = re.sub(r"^type\s+", "", spec)
        parts = re.split(r"\s+as\s+", spec)
        imported, local = parts[0], parts[-1]
        if base == "effect" and imported in FUNCTION:
            (fn_types if is_type else fn_vals).append(spec)
            continue
        out.append(f'import {"type " if is_type else ""}* as {local} from "{base}/{imported}"\n')
    if fn_vals or fn_types:
        items = fn_vals + [f"type {t}" for t in fn_types]
        out.append('import { ' + ", ".join(items) + ' } from "effect/Function"\n')
    return "".join(out)
for f in sys.argv[1:]:
    s = open(f).read()
    n = pat.sub(rewrite, s)
    if n != s:
        open(f, "w").write(n)
        print("rewrote", f)
