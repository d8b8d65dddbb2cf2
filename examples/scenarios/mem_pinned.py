# expect: mem.pinned
"""mem_pinned.py — SOP §2.2 ("free is enough but still OOM"): 256 MiB of page-locked memory
(mlock, as pinned host buffers are) out of ~270 MiB RSS; locked pages count against the limit
but can be neither reclaimed nor swapped. Needs RLIMIT_MEMLOCK room (root has it)."""
import ctypes
import mmap
import resource
import time

# SOP_SCENARIO_INTENSITY not read: the 256 MiB pinned is what the rule weighs against RSS; more may pass RLIMIT_MEMLOCK.

SIZE = 256 << 20
try:
    resource.setrlimit(resource.RLIMIT_MEMLOCK, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
except (ValueError, OSError):
    pass
buf = mmap.mmap(-1, SIZE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
buf.write(b"\x01" * SIZE)  # resident
libc = ctypes.CDLL(None, use_errno=True)
addr = ctypes.addressof(ctypes.c_char.from_buffer(buf))
if libc.mlock(ctypes.c_void_p(addr), ctypes.c_size_t(SIZE)) != 0:
    raise SystemExit("mlock failed: errno %d" % ctypes.get_errno())
print("ready", flush=True)
t0 = time.time()
while time.time() - t0 < 60:
    time.sleep(0.2)
