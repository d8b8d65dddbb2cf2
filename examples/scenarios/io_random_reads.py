# expect: io.random_reads
# also: io.d_state
# sopctl: --duration 3
# timeout: 120
"""io.random_reads (SOP §7.3): a "dataset" in one large file read as 4 KiB records at random
offsets with os.pread, the way a map-style Dataset indexes a packed file without shards. The
file's pages are dropped from the page cache (posix_fadvise DONTNEED) so each read goes to the
disk, as it does for a dataset larger than RAM. Exits by itself after about 60 s."""
import os
import random
import sys
import tempfile
import time

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2

SIZE = (256 << 20) * INTENSITY          # 256 MiB file on disk (not tmpfs: /var/tmp)
REC = 4096

d = tempfile.mkdtemp(prefix="sop_rand_", dir=os.environ.get("SOP_SCENARIO_TMP", "/var/tmp"))
path = os.path.join(d, "dataset.bin")
try:
    with open(path, "wb") as f:
        chunk = os.urandom(1 << 20)
        for _ in range(SIZE >> 20):
            f.write(chunk)
        f.flush()
        os.fsync(f.fileno())
    fd = os.open(path, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    nrec = SIZE // REC
    rng = random.Random(1)
    t_end = time.time() + 60
    ready = False
    last_drop = time.time()
    n = 0
    while time.time() < t_end:
        for _ in range(256):
            os.pread(fd, REC, rng.randrange(nrec) * REC)
        n += 256
        now = time.time()
        if now - last_drop > 0.5:       # keep the working set out of the cache
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            last_drop = now
        if not ready and n >= 2048:
            print("ready", flush=True)
            ready = True
    os.close(fd)
finally:
    try:
        os.unlink(path)
        os.rmdir(d)
    except OSError:
        pass
    sys.exit(0)
