# peer_threads.py — one process with every kind of thread a dump must list (issue 12):
# a busy main thread; a threading thread with a Cyrillic/accented name, asleep; a thread
# started with _thread and named only by the kernel (prctl PR_SET_NAME, what
# pthread_setname_np does for the calling thread); an OS thread started from C through ctypes
# (pthread_create on libc's pause) that never runs Python. Prints "ready" when all exist and
# the sleeper is inside its sleep's system call (not still starting up or waiting for the GIL,
# which a loaded machine can make last long enough for a dump to see it runnable).
import ctypes
import threading
import time
import _thread

libc = ctypes.CDLL(None, use_errno=True)
PR_SET_NAME = 15
named_up = threading.Event()


def kernel_named():
    libc.prctl(PR_SET_NAME, b"kern-named", 0, 0, 0)
    named_up.set()
    while True:
        time.sleep(3600)


def sleeper():
    time.sleep(3600)


_thread.start_new_thread(kernel_named, ())
t = threading.Thread(target=sleeper, name="Рабочий-é")
t.daemon = True
t.start()
tid = ctypes.c_ulong()
libc.pthread_create.argtypes = [ctypes.POINTER(ctypes.c_ulong), ctypes.c_void_p,
                                ctypes.c_void_p, ctypes.c_void_p]
rc = libc.pthread_create(ctypes.byref(tid), None, ctypes.cast(libc.pause, ctypes.c_void_p), None)
named_up.wait(30)


def in_sleep_call(native_id):
    """The thread is blocked in a system call other than a futex wait (the GIL's and the
    start-up event's): its sleep (select before 3.11, clock_nanosleep after)."""
    try:
        with open("/proc/self/task/%d/syscall" % native_id) as f:
            call = f.read().split()[0]
        with open("/proc/self/task/%d/stat" % native_id) as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state == "S" and call not in ("running", "202")


deadline = time.monotonic() + 60
while not in_sleep_call(t.native_id) and time.monotonic() < deadline:
    time.sleep(0.01)
print("ready", rc, flush=True)
x = 0
while True:
    x = (x + 1) % 1000003
