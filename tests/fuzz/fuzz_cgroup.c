/* fuzz_cgroup.c — libFuzzer target: the cgroup file parsers (/proc/PID/cgroup, cpu.max,
 * cpu.stat v1/v2, memory.events / oom_control, memory limits, mountinfo) on arbitrary bytes.
 * Depends on probes/cgroup.h. */
#include "cgroup.h"
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
    free(cg);
    free(s);
    return 0;
}
