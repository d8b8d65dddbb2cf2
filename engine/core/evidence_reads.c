/* evidence_reads.c — the paths SOP_EVKEY kept (evidence_reads.h), read back from the linker's
 * bounds of the section sop_ev_reads, and the key within its object of one path. Depends on
 * libc and the GNU linker's __start_/__stop_ symbols. */
#include "evidence_reads.h"

#include <string.h>

/* Weak: a program that names no path has no such section. */
extern const char *const __start_sop_ev_reads[] __attribute__((weak));
extern const char *const __stop_sop_ev_reads[] __attribute__((weak));

const char *sop__evkey_leaf(const char *path)
{
    const char *dot = strrchr(path, '.');
    return dot ? dot + 1 : path;
}

size_t sop__evkey_paths(const char **out, size_t cap)
{
    size_t n = 0;
    for (const char *const *p = __start_sop_ev_reads; p && p < __stop_sop_ev_reads; p++, n++)
        if (n < cap)
            out[n] = *p;
    return n;
}
