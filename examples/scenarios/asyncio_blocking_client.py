# An asyncio service whose handler calls a blocking client: get_user() reads a reply from a
# slow local server through socket.makefile().readline(), so the loop waits in the standard
# library's SocketIO.readinto while every other task waits (SOP §5.1, §5.2). The finding names
# the user's frame (get_user in this file) and the leaf below it (socket.py).
# expect: asyncio.loop_blocked
# sopctl: --duration 2
import asyncio
import os
import socket
import threading
import time

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2


def slow_server(srv):
    while True:
        conn, _ = srv.accept()
        with conn:
            conn.recv(64)
            time.sleep(0.3)  # a slow backend
            conn.sendall(b"user 42\n")


def get_user(port):
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(b"GET\n")
        return s.makefile("rb").readline()  # the bug: a blocking read on the event loop


async def heartbeat():
    while True:
        await asyncio.sleep(0.05)


async def handler(port):
    while True:
        get_user(port)
        await asyncio.sleep(0.05)


async def main(port):
    asyncio.get_running_loop().call_later(1.0, lambda: print("ready", flush=True))
    await asyncio.wait_for(asyncio.gather(heartbeat(), *[handler(port) for _ in range(INTENSITY)]), timeout=60)


if __name__ == "__main__":
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    threading.Thread(target=slow_server, args=(srv,), daemon=True).start()
    try:
        asyncio.run(main(srv.getsockname()[1]))
    except asyncio.TimeoutError:
        pass
