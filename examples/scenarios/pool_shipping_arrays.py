# A multiprocessing.Pool is handed eight 16 MB numpy arrays per map() for a trivial task (read one
# element): nearly all the time goes to pickling the arrays in the parent, the pipe, and unpickling
# them in the workers (SOP §8.4: the transfer costs more than the work; §2.4: shared memory).
# expect: pool.shipping
# sopctl: --duration 2
# needs: numpy
"""Ready after two rounds of map() (measured). Exits after 60 s."""
import multiprocessing as mp
import os
import time

import numpy as np

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1"))  # the matrix's size: 1 or 2


def first(a):
    return float(a[0])


if __name__ == "__main__":
    arrays = [np.random.rand(2_000_000) for _ in range(4 * INTENSITY)]  # 16 MB each
    with mp.Pool(2) as pool:
        stop, rounds = time.time() + 60, 0
        while time.time() < stop:
            pool.map(first, arrays)
            rounds += 1
            if rounds == 2:
                print("ready", flush=True)
