# expect: startup.slow_imports
# also: gc.pauses
# sopctl: --duration 3
"""§8.2: start-up spent importing. A package tree of generated modules (each with a few hundred
functions and classes, like a large SDK's __init__ chain) is imported with bytecode caching off,
so every module is compiled and executed at start: the main thread sits in importlib for tens of
seconds before reaching its first line of work. The classes and tables each module creates trigger
the cyclic GC (full collections included) while importing; how much of the window it takes depends
on the host, so gc.pauses may also fire: the same start-up cost seen from the collector's side."""
import os
import sys
import tempfile
import time

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2

sys.dont_write_bytecode = True
root = tempfile.mkdtemp(prefix="sop_imports_")
NPKG, NMOD, NFUNC = 20 * INTENSITY, 40, 120


def module_source(p, m):
    lines = [f"# generated module heavysdk.pkg{p}.mod{m}", "import re, collections"]
    for f in range(NFUNC):
        lines.append(f"def f{f}(x, y={f}):\n    z = [x * {f} + i for i in range(y)]\n"
                     f"    return sum(z) + len('{'abc' * 8}')")
        if f % 10 == 0:
            lines.append(f"class C{f}(collections.namedtuple('C{f}', 'a b c')):\n"
                         f"    def m(self):\n        return self.a + {f}")
    lines.append(f"TABLE = {{k: re.compile(r'k{m}_%d_[a-z]+' % k) for k in range(40)}}")
    return "\n".join(lines) + "\n"


os.makedirs(os.path.join(root, "heavysdk"))
with open(os.path.join(root, "heavysdk", "__init__.py"), "w") as f:
    f.write("".join(f"from . import pkg{p}\n" for p in range(NPKG)))
for p in range(NPKG):
    d = os.path.join(root, "heavysdk", f"pkg{p}")
    os.makedirs(d)
    with open(os.path.join(d, "__init__.py"), "w") as f:
        f.write("".join(f"from . import mod{m}\n" for m in range(NMOD)))
    for m in range(NMOD):
        with open(os.path.join(d, f"mod{m}.py"), "w") as f:
            f.write(module_source(p, m))
with open(os.path.join(root, "heavysdk", "pkg0", "mod0.py"), "a") as f:
    f.write("print('ready', flush=True)\n")

sys.path.insert(0, root)
t0 = time.time()
import heavysdk  # noqa: E402,F401  the slow start-up under test

print("imported in %.1f s" % (time.time() - t0), flush=True)
deadline = time.time() + 5
while time.time() < deadline:
    time.sleep(0.2)
