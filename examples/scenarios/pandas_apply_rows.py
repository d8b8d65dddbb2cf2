# expect: perrow.python_calls
# sopctl: --duration 3
# needs: pandas
"""pandas_apply_rows.py — SOP §3.5 in pandas: a feature column computed with
DataFrame.apply(score_row, axis=1), so pandas builds a Series per row and calls the user's
Python function once per row; the same result as one column expression. Prints "ready" once the
loop runs, exits after 60 s."""
import os
import time

import numpy as np
import pandas as pd

INTENSITY = int(os.environ.get("SOP_SCENARIO_INTENSITY", "1") or 1)  # the matrix's size: 1 or 2


def score_row(row):
    # what people write: per-row business logic on named fields
    base = row["price"] * row["qty"]
    if row["discount"] > 0.5:
        base *= 0.9
    return base + row["fee"]


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    n = 20000 * INTENSITY
    df = pd.DataFrame({"price": rng.random(n) * 100, "qty": rng.integers(1, 10, n),
                       "discount": rng.random(n), "fee": rng.random(n)})
    deadline = time.time() + 60
    first = True
    while time.time() < deadline:
        part = df.iloc[:2000] if first else df  # the first pass is short: "ready" once it runs
        part.apply(score_row, axis=1)
        if first:
            print("ready", flush=True)
            first = False
