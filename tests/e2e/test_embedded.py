"""test_embedded.py — a Python interpreter embedded in another program (a C "model server" that
links libpython and calls Py_Initialize, as uwsgi, Triton's Python backend stub or a PyInstaller
bundle do): its executable is not named python*, yet `dump` reads its stack, `evidence` its
interpreter, and the node agent (`watch --node`) finds it by the libpython it maps, while a
program without one (sleep) is never a target. Built with the pyenv CPython 3.11's
python3.11-config; skipped without it or a C compiler. Needs root (reads the target's memory)."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from sopt import SOPCTL, Checks  # noqa: E402

CONFIG = "/root/.pyenv/versions/3.11.7/bin/python3.11-config"

SERVER = r'''
#include <Python.h>
#include <stdio.h>

/* A C server that runs its request handlers in an embedded interpreter. */
static const char *HANDLERS =
    "import time\n"
    "def score(batch):\n"
    "    return sum(i * i for i in range(batch))\n"
    "def handle_request(n):\n"
    "    return score(20000 + n % 7)\n"
    "def serve():\n"
    "    print('ready', flush=True)\n"
    "    n = 0\n"
    "    while True:\n"
    "        handle_request(n)\n"
    "        n += 1\n"
    "        time.sleep(0.002)\n"
    "serve()\n";

int main(void)
{
    Py_Initialize();
    int rc = PyRun_SimpleString(HANDLERS);
    Py_Finalize();
    return rc;
}
'''


def build(tmp):
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc or not os.path.exists(CONFIG):
        return None
    flags = subprocess.run([CONFIG, "--cflags", "--ldflags", "--embed"], capture_output=True,
                           text=True).stdout.split()
    src = os.path.join(tmp, "model_server.c")
    exe = os.path.join(tmp, "model_server")
    with open(src, "w") as f:
        f.write(SERVER)
    r = subprocess.run([cc, "-o", exe, src] + [x for x in flags if not x.startswith("-W")],
                       capture_output=True, text=True)
    if r.returncode != 0:
        print("note: cannot build the embedding program: %s" % r.stderr[-800:])
        return None
    return exe


def main():
    if os.geteuid() != 0:
        print("note: needs root (reads the target's memory); skipped")
        sys.exit(0)
    c = Checks()
    tmp = tempfile.mkdtemp(prefix="sop-embedded-")
    procs = []
    try:
        exe = build(tmp)
        if not exe:
            print("note: no C compiler or %s; skipped" % CONFIG)
            sys.exit(0)
        p = subprocess.Popen([exe], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        procs.append(p)
        line = p.stdout.readline()
        c.check(line.strip() == b"ready", "the embedding program runs its handlers",
                (line, p.stderr.read(2000) if p.poll() is not None else b""))
        plain = subprocess.Popen(["sleep", "120"])
        procs.append(plain)
        c.check(not os.path.basename(os.readlink("/proc/%d/exe" % p.pid)).startswith("python"),
                "its executable is not named python*")

        r = subprocess.run([SOPCTL, "dump", "--pid", str(p.pid)], capture_output=True, text=True,
                           timeout=60)
        c.check(r.returncode == 0 and "Python v3.11" in r.stdout and
                re.search(r"serve \(<string>:\d+\)", r.stdout) is not None,
                "dump reads the embedded interpreter's stack", r.stdout[-1500:] + r.stderr[-800:])

        r = subprocess.run([SOPCTL, "run", "--pid", str(p.pid), "--duration", "1", "--format",
                            "text"], capture_output=True, text=True, timeout=120)
        c.check(r.returncode in (0, 1) and "Python 3.11" in r.stdout.split("\n", 3)[1] and
                "summary.verdict" in r.stdout, "run diagnoses it (exit %d)" % r.returncode,
                r.stdout[:1200] + r.stderr[-800:])

        r = subprocess.run([SOPCTL, "watch", "--node", "--count", "1", "--duration", "0.1",
                            "--rate", "0"], capture_output=True, text=True, timeout=300)
        joined = {int(x) for x in re.findall(r"target pid (\d+)", r.stderr)}
        c.check(r.returncode == 0 and p.pid in joined,
                "watch --node finds the embedded interpreter by its mapped libpython",
                r.stderr[-1500:])
        c.check(plain.pid not in joined, "a program without libpython is not a target")
    finally:
        for q in procs:
            if q.poll() is None:
                q.kill()
            q.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    c.done()


if __name__ == "__main__":
    main()
