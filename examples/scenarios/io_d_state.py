# expect: io.d_state:info
# also@cpu1: cpu.oversubscribed
#   (on one CPU six writers whose fsyncs return quickly all want that CPU: runnable load 1.7 to over 3 by the disk's speed)
# sopctl: --duration 2
# timeout: 90
"""io.d_state (SOP §7): six threads each appending 256 KiB to their own log file and calling
os.fsync after every write (a "durable" metrics/log writer), so at any moment some of them sit in
uninterruptible IO wait (D state) for the disk. Exits by itself after about 60 s."""
import os
import sys
import tempfile
import threading
import time

# SOP_SCENARIO_INTENSITY not read: more writers or larger fsyncs make it CPU-bound, another program.
# (cpu.oversubscribed fired with 9 writers on a 1-CPU cpuset, and with 512 KiB fsyncs at all/2.)

d = tempfile.mkdtemp(prefix="sop_dstate_", dir=os.environ.get("SOP_SCENARIO_TMP", "/var/tmp"))
stop = time.time() + 60
block = os.urandom(256 << 10)


def writer(i):
    path = os.path.join(d, "log%d.bin" % i)
    with open(path, "wb", buffering=0) as f:
        n = 0
        while time.time() < stop:
            f.write(block)
            os.fsync(f.fileno())
            n += 1
            if n % 64 == 0:          # keep the file small
                f.seek(0)
                f.truncate()


threads = [threading.Thread(target=writer, args=(i,), daemon=True) for i in range(6)]
for t in threads:
    t.start()
time.sleep(1)
print("ready", flush=True)
try:
    for t in threads:
        t.join()
finally:
    for i in range(6):
        try:
            os.unlink(os.path.join(d, "log%d.bin" % i))
        except OSError:
            pass
    os.rmdir(d)
    sys.exit(0)
