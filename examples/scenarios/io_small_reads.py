# expect: io.small_reads:info
# sopctl: --duration 2
# timeout: 90
"""io.small_reads (SOP §7.3): a 32 MiB file read again and again with unbuffered 512-byte
os.read calls (a record reader without a buffer). The file sits in the page cache, so the cost
is tens of thousands of read syscalls per second, not the disk: info. Exits after about 60 s."""
import os
import sys
import tempfile
import time

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2

d = tempfile.mkdtemp(prefix="sop_small_", dir=os.environ.get("SOP_SCENARIO_TMP", "/var/tmp"))
path = os.path.join(d, "records.bin")
with open(path, "wb") as f:
    f.write(os.urandom((32 << 20) * INTENSITY))
try:
    stop = time.time() + 60
    ready = False
    while time.time() < stop:
        fd = os.open(path, os.O_RDONLY)
        while os.read(fd, 512):
            if not ready:
                print("ready", flush=True)
                ready = True
        os.close(fd)
finally:
    os.unlink(path)
    os.rmdir(d)
    sys.exit(0)
