# peer_threads.py — one process with every kind of thread a dump must list (issue 12):
# a busy main thread; a threading thread with a Cyrillic/accented name, asleep; a thread
# started with _thread and named only by the kernel (prctl PR_SET_NAME, what
# pthread_setname_np does for the calling thread); an OS thread started from C through ctypes
# (pthread_create on libc's pause) that never runs Python. Prints "ready" when all exist.
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
print("ready", rc, flush=True)
x = 0
while True:
    x = (x + 1) % 1000003
