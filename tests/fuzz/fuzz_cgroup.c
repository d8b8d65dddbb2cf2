/* fuzz_cgroup.c — libFuzzer target: the cgroup file parsers (/proc/PID/cgroup, cpu.max,
 * cpu.stat v1/v2, memory.events / oom_control, memory limits, mountinfo) and the container a
 * cgroup path names (probes/container.c) on arbitrary bytes. Depends on probes/cgroup.h,
 * probes/container.h. */
#include "cgroup.h"
#include "container.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_cstr(data, size);
    sop_cgroup *cg = malloc(sizeof *cg);
    if (!cg)
        abort();
    sop__cgroup_init(cg);
    (void)sop__parse_proc_cgroup(s, cg);
    if (!memchr(cg->path, '\0', sizeof cg->path))
        abort();
    int64_t q, p, b;
    (void)sop__parse_cpu_max(s, &q, &p);
    (void)sop__parse_cpu_stat(s, cg);
    (void)sop__parse_memory_events(s, cg);
    (void)sop__parse_mem_limit(s, &b);
    char mnt[256];
    static const char *const ctl[] = {"cpu", "memory", "cpuset", ""};
    for (size_t i = 0; i < sizeof ctl / sizeof *ctl; i++)
        (void)sop__parse_mountinfo_cgroup(s, ctl[i], mnt, sizeof mnt);
    sop_container_cgroup ct;
    (void)sop__container_from_cgroup(s, &ct);
    if (!memchr(ct.id, '\0', sizeof ct.id) || !memchr(ct.pod_uid, '\0', sizeof ct.pod_uid))
        abort();
    if (sop__container_ctr_guess(s, &ct) &&
        (strchr(ct.id, '/') || !strcmp(ct.id, ".") || !strcmp(ct.id, "..") ||
         strchr(ct.ctr_namespace, '/') || !strcmp(ct.ctr_namespace, ".") ||
         !strcmp(ct.ctr_namespace, "..") || !ct.id[0] || !ct.ctr_namespace[0]))
        abort(); /* both become path components */
    free(cg);
    free(s);
    return 0;
}
