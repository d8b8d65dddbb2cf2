# expect: none
# sopctl: --duration 3
# env: MALLOC_ARENA_MAX=2
"""Healthy counterpart of alloc_glibc_arenas.py: the same sixteen allocating threads with glibc's
arenas capped by MALLOC_ARENA_MAX=2 (the SOP §8.1 fix): alloc.glibc_arenas must clear."""
import os
import runpy

# SOP_SCENARIO_INTENSITY is read by alloc_glibc_arenas.py, which this runs: it scales its threads.

runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "alloc_glibc_arenas.py"),
               run_name="__main__")
