# A prefork-style dispatcher forks a child per task with os.fork() and never calls os.waitpid:
# each finished child stays a zombie, holding a pid, until the pid or task limit makes fork fail
# (SOP §9: is something piling up? a zombie is not a worker).
# expect: progress.zombies
# sopctl: --duration 2
"""Ready once 20 zombies exist (measured from /proc). Stops forking at 1000; exits after 90 s."""
import os
import time

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2
RATE = 12 * INTENSITY  # tasks per second


def zombies():
    n = 0
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f:
                    st = f.read().rsplit(")", 1)[1].split()
                n += st[0] == "Z" and int(st[1]) == os.getpid()
            except (OSError, IndexError, ValueError):
                pass
    return n


start, forked, ready = time.time(), 0, False
while time.time() - start < 90:
    if forked < 1000:
        if os.fork() == 0:
            sum(range(1000))  # the task
            os._exit(0)
        forked += 1
    if not ready and forked >= 20 and zombies() >= 20:
        print("ready", flush=True)
        ready = True
    time.sleep(1.0 / RATE)
