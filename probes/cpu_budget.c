/* cpu_budget.c — the CPUs the target may use (see cpu_budget.h): affinity ∩ cpuset ∩ host,
 * then the quota. Every rule reads the result (ev.effective_cpus, ev.sched.capacity_cpus)
 * instead of recomputing it. Depends on procfs.c (number parsing). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cpu_budget.h"
#include "procfs.h"

#define CPUS_MAX 4096
#define WORDS (CPUS_MAX / 64)

/* "0-3,8-11" -> bitmap; -1 malformed or out of range. */
static int to_mask(const char *list, uint64_t *mask)
{
    memset(mask, 0, WORDS * sizeof *mask);
    const char *p = list;
    while (*p == ' ' || *p == '\t')
        p++;
    while (*p && *p != '\n') {
        int64_t a = sop__parse_i64(&p);
        if (a == SOP_NA || a < 0 || a >= CPUS_MAX)
            return -1;
        int64_t b = a;
        if (*p == '-') {
            p++;
            b = sop__parse_i64(&p);
            if (b == SOP_NA || b < a || b >= CPUS_MAX)
                return -1;
        }
        for (int64_t c = a; c <= b; c++)
            mask[c / 64] |= 1ull << (c % 64);
        if (*p == ',')
            p++;
        else if (*p && *p != '\n' && *p != ' ')
            return -1;
        else
            break;
    }
    return 0;
}

int sop__cpulist_intersect_count(const char *a, const char *b)
{
    uint64_t ma[WORDS], mb[WORDS];
    if (!a || !b || to_mask(a, ma) < 0 || to_mask(b, mb) < 0)
        return -1;
    int n = 0;
    for (int i = 0; i < WORDS; i++)
        n += __builtin_popcountll(ma[i] & mb[i]);
    return n;
}

static int64_t min_known(int64_t n, int64_t v)
{
    if (v == SOP_NA || v <= 0)
        return n;
    return n == SOP_NA || v < n ? v : n;
}

void sop__cpu_budget(int64_t ncpu, const char *affinity_list, int64_t affinity_count,
                     const char *cpuset_list, int64_t cpuset_count, double quota_cpus,
                     sop_cpu_budget *out)
{
    int64_t n = min_known(SOP_NA, ncpu);
    int both = -1;
    if (affinity_list && affinity_list[0] && cpuset_list && cpuset_list[0])
        both = sop__cpulist_intersect_count(affinity_list, cpuset_list);
    if (both > 0) {
        n = min_known(n, both);
    } else {
        n = min_known(n, affinity_count);
        n = min_known(n, cpuset_count);
    }
    out->capacity_cpus = n == SOP_NA ? NAN : (double)n;
    if (!isnan(quota_cpus) && quota_cpus > 0) {
        n = min_known(n, (int64_t)ceil(quota_cpus));
        if (isnan(out->capacity_cpus) || quota_cpus < out->capacity_cpus)
            out->capacity_cpus = quota_cpus;
    }
    out->effective_cpus = n;
}
