/* fuzz_pytables.c — libFuzzer target: CPython line tables (lnotab 3.8-3.9, 3.10 pairs, 3.11+
 * locations) through sop__py_addr2line at several offsets, and the 3.13 _Py_DebugOffsets
 * blob validation. Byte 0 picks the table kind. Depends on probes/python/linetable.h. */
#include "fuzz.h"
#include "python/linetable.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    static const sop_pylines_kind kinds[] = {SOP_PYLINES_LNOTAB, SOP_PYLINES_310,
                                             SOP_PYLINES_LOCATIONS};
    sop_pylines_kind kind = kinds[data[0] % 3];
    size_t n = size - 1;
    uint8_t *tab = malloc(n ? n : 1);
    if (!tab)
        abort();
    memcpy(tab, data + 1, n);
    static const int addrs[] = {-2, 0, 1, 2, 6, 100, 4096, 1 << 20, 0x7fffffff};
    for (size_t i = 0; i < sizeof addrs / sizeof *addrs; i++)
        (void)sop__py_addr2line(kind, tab, n, 1, addrs[i]);
    (void)sop__py_addr2line(kind, tab, n, 0x7fffffff, 10);
    (void)sop__py_addr2line(kind, tab, n, -5, 10);
    sop_pylayout L;
    char why[160];
    (void)sop__pylayout_from_debug_offsets(tab, n, 0, &L, why, sizeof why);
    (void)sop__pylayout_from_debug_offsets(tab, n, 0x030d00f0, &L, why, sizeof why);
    free(tab);
    return 0;
}
