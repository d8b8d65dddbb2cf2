"""test_valgrind.py — sopctl evidence, run (from a live pid and from an evidence file), dump and
dump --native under Valgrind memcheck on a real Python target: no invalid read or write, no
use of uninitialised values, no definite or indirect leak (--error-exitcode). Skipped without
valgrind (scripts/install-deps.sh installs it) or when sopctl is built with a sanitizer."""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from sopt import SOPCTL, Checks, Target  # noqa: E402

C = Checks()
CODE = """
import threading, time
def spin_worker():
    x = 0
    while True:
        x += 1
threading.Thread(target=spin_worker, daemon=True).start()
print('ready', flush=True)
time.sleep(600)
"""
VG = ["valgrind", "--quiet", "--error-exitcode=99", "--leak-check=full",
      "--errors-for-leak-kinds=definite,indirect", "--show-leak-kinds=definite,indirect",
      "--track-origins=no", "--child-silent-after-fork=yes"]


def vg(name, *args):
    r = subprocess.run(VG + [SOPCTL] + [str(a) for a in args], capture_output=True, text=True,
                       timeout=300)
    C.check(r.returncode in (0, 1), "valgrind %s: clean (exit %d)" % (name, r.returncode),
            r.stderr[-3000:])
    return r


def main():
    if not shutil.which("valgrind"):
        print("note: no valgrind; skipped")
        C.done()
    if os.environ.get("SOP_SANITIZE") or b"__asan_init" in open(SOPCTL, "rb").read():
        print("note: sanitized sopctl; Valgrind cannot run it; skipped")
        C.done()
    with Target(CODE) as t, tempfile.TemporaryDirectory() as tmp:
        ev = vg("evidence", "evidence", "--pid", t.pid, "--duration", "0.5")
        path = os.path.join(tmp, "ev.json")
        with open(path, "w") as f:
            f.write(ev.stdout)
        vg("run --pid", "run", "--pid", t.pid, "--duration", "0.5", "--format", "json")
        vg("run --evidence (md, zh)", "run", "--evidence", path, "--lang", "zh")
        vg("dump", "dump", "--pid", t.pid, "--json")
        vg("dump --native", "dump", "--pid", t.pid, "--native")
        vg("check", "check", "default")
    C.done()


if __name__ == "__main__":
    main()
