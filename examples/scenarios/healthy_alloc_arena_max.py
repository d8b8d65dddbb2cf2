# expect: none
# also: mem.growth
# sopctl: --duration 3
# env: MALLOC_ARENA_MAX=2
"""Healthy counterpart of alloc_glibc_arenas.py: the same sixteen allocating threads with glibc's
arenas capped by MALLOC_ARENA_MAX=2 (the SOP §8.1 fix): alloc.glibc_arenas must clear. Its caches
still fill at ~16 MiB/s through the window (bounded at ~900 MiB, which no window can see): at that
rate the host's RAM is gone within the hour, so mem.growth may warn (issue 38: severity from the
projection)."""
import os
import runpy

# SOP_SCENARIO_INTENSITY is read by alloc_glibc_arenas.py, which this runs: it scales its threads.

runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "alloc_glibc_arenas.py"),
               run_name="__main__")
