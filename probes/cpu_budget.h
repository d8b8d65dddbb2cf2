/* cpu_budget.h — how many CPUs the target may use, decided in one place: the CPUs both its
 * affinity and its cgroup cpuset allow (the intersection of the two lists), no more than the
 * host has, then the CFS quota. Pure functions on values the probes read. Depends on libc. */
#ifndef SOP_CPU_BUDGET_H
#define SOP_CPU_BUDGET_H

#include <stdint.h>

typedef struct {
    int64_t effective_cpus; /* whole CPUs: min(|affinity ∩ cpuset|, ncpu, ceil(quota)); SOP_NA */
    double capacity_cpus;   /* the same with the quota as a fraction (1.5 CPUs); NaN unknown */
} sop_cpu_budget;

/* CPUs in both lists ("0-3,8" and "2-9" -> 3); -1 when either is malformed or beyond 4096. */
int sop__cpulist_intersect_count(const char *a, const char *b);

/* Any input may be unknown: ncpu/affinity_count/cpuset_count SOP_NA or <= 0, lists NULL or
 * "", quota_cpus NaN or <= 0. Lists are used when both parse, else the counts. */
void sop__cpu_budget(int64_t ncpu, const char *affinity_list, int64_t affinity_count,
                     const char *cpuset_list, int64_t cpuset_count, double quota_cpus,
                     sop_cpu_budget *out);

#endif
