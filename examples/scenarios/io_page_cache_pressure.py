# expect: io.page_cache_pressure
# also: io.d_state
# cgroup: memory=300M
# sopctl: --duration 3
# timeout: 150
"""io.page_cache_pressure (SOP §7.1, §7.4 "every epoch starts slow"): a 640 MiB dataset file read
sequentially in 1 MiB pieces, epoch after epoch, inside a cgroup limited to 300 MiB. The page
cache is charged to the cgroup, so the file is evicted while it is read and every epoch reads it
from disk again. "ready" is printed in the second epoch. Exits by itself after about 60 s."""
import os
import sys
import tempfile
import time

# SOP_SCENARIO_INTENSITY not read: its size is the 640 MiB file against its 300 MiB cgroup; twice the file doubles the disk writes and the run time.

SIZE = 640 << 20
CHUNK = 1 << 20

d = tempfile.mkdtemp(prefix="sop_pcache_", dir=os.environ.get("SOP_SCENARIO_TMP", "/var/tmp"))
path = os.path.join(d, "train.bin")
try:
    block = os.urandom(CHUNK)
    with open(path, "wb") as f:
        for _ in range(SIZE // CHUNK):
            f.write(block)
        f.flush()
        os.fsync(f.fileno())
    t_end = time.time() + 60
    epoch = 0
    while time.time() < t_end:
        epoch += 1
        with open(path, "rb", buffering=0) as f:
            n = 0
            while time.time() < t_end:
                b = f.read(CHUNK)
                if not b:
                    break
                n += 1
                if epoch == 2 and n == 16:
                    print("ready", flush=True)
finally:
    try:
        os.unlink(path)
        os.rmdir(d)
    except OSError:
        pass
    sys.exit(0)
