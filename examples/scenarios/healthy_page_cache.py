# expect: none
# sopctl: --duration 3
# timeout: 120
"""Healthy counterpart of io.page_cache_pressure: a 192 MiB dataset file read sequentially in
1 MiB pieces epoch after epoch with no memory limit. The first epoch may come from disk; later
ones come from the page cache. "ready" is printed in the third epoch. Exits after about 60 s."""
import os
import sys
import tempfile
import time

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2

SIZE = (192 << 20) * INTENSITY
CHUNK = 1 << 20

d = tempfile.mkdtemp(prefix="sop_pcache_ok_", dir=os.environ.get("SOP_SCENARIO_TMP", "/var/tmp"))
path = os.path.join(d, "train.bin")
try:
    block = os.urandom(CHUNK)
    with open(path, "wb") as f:
        for _ in range(SIZE // CHUNK):
            f.write(block)
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
                if epoch == 3 and n == 16:
                    print("ready", flush=True)
            time.sleep(0.05)
finally:
    try:
        os.unlink(path)
        os.rmdir(d)
    except OSError:
        pass
    sys.exit(0)
