# peer_lines.py — threads parked where a code object's line table goes backwards (issue 12):
# a call whose arguments span later lines, suspended in the callee (the call instruction
# belongs to an earlier line than the arguments evaluated before it); a decorator applied to
# a function defined below it, whose application blocks; a call inside a loop body whose
# header line comes after it in the table; a call 150 lines above its last argument. Once
# every thread is parked, prints the truth as the interpreter itself sees it — each thread's
# (function, f_lineno) list, innermost first, for this file's frames — and whether each
# parking code object's line table really goes backwards, as one JSON line after "ready ".
import dis
import json
import sys
import threading
import time

PARK_LINE = None


def park(*args):
    while True:
        time.sleep(3600)  # PARK


def multi_line_call():
    return park(
        "first",
        len("second"),
        [n * 2 for n in range(3)],
    )


def blocking_decorator(fn):
    park(fn)
    return fn


def decorated():
    @blocking_decorator
    @staticmethod
    def inner(
        a=len("x"),
    ):
        return a
    return inner


def loop_body():
    total = 0
    for item in (
        1,
        2,
    ):
        total += item
        park(total,
             item)
    return total


# A call whose last argument is 150 lines below it: the step back to the call's line does not
# fit one signed byte (3.8-3.9 lnotab splits it into several -128 steps, 3.10 into -127 steps;
# 3.11+ writes one signed varint). Compiled under this file's name, so it is reported here.
FAR_SOURCE = ("def far_call():\n    n = 1\n    return park(\n        n,\n" + "\n" * 150 +
              "        len('far'),\n    )\n")
_far = {"park": park, "len": len}
exec(compile(FAR_SOURCE, __file__, "exec"), _far)
far_call = _far["far_call"]


def goes_backwards(fn):
    last = -1
    for _, line in dis.findlinestarts(fn.__code__):
        if line is None:
            continue
        if line < last:
            return True
        last = line
    return False


def truth(names):
    frames = sys._current_frames()
    out = {}
    for t in threading.enumerate():
        if t.name not in names:
            continue
        f = frames.get(t.ident)
        stack = []
        while f is not None:
            if f.f_code.co_filename == __file__:
                stack.append([f.f_code.co_name, f.f_lineno])
            f = f.f_back
        out[t.name] = stack
    return out


if __name__ == "__main__":
    with open(__file__) as src:
        PARK_LINE = 1 + [i for i, s in enumerate(src) if s.rstrip().endswith("# PARK")][0]
    jobs = {"multi-line-call": multi_line_call, "decorator": decorated, "loop": loop_body,
            "far-call": far_call}
    for name, fn in jobs.items():
        threading.Thread(target=fn, name=name, daemon=True).start()
    # Parked = the innermost frame of each is park() at its sleep; bounded wait.
    for _ in range(3000):
        now = truth(set(jobs))
        if len(now) == len(jobs) and all(s and s[0] == ["park", PARK_LINE] for s in now.values()):
            break
        time.sleep(0.01)
    back = {name: goes_backwards(fn) for name, fn in jobs.items()}
    print("ready " + json.dumps({"truth": truth(set(jobs)), "backwards": back}), flush=True)
    while True:
        time.sleep(3600)
