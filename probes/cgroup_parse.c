/* cgroup_parse.c — pure parsers for the cgroup files: /proc/PID/cgroup, cpu.max, cpu.stat,
 * memory.events / memory.oom_control, memory limits, and the cgroup lines of mountinfo.
 * Text in, struct out; malformed input gives -EINVAL and leaves fields unset.
 * Depends on probes/cgroup.h, probes/procfs.h. */
#include "cgroup.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define LINES_MAX 4096 /* every loop over a file is bounded */

void sop__cgroup_init(sop_cgroup *out)
{
    memset(out, 0, sizeof *out);
    out->quota_us = out->period_us = SOP_NA;
    out->quota_cpus = NAN;
    out->cpuset_count = SOP_NA;
    out->nr_periods = out->nr_throttled = out->throttled_us = out->usage_us = SOP_NA;
    out->throttled_pct = out->throttled_ms_per_s = NAN;
    out->mem_limit_kb = out->mem_usage_kb = out->mem_max_usage_kb = SOP_NA;
    out->swap_limit_kb = out->mem_failcnt = SOP_NA;
    out->ev_low = out->ev_high = out->ev_max = out->ev_oom = out->ev_oom_kill = SOP_NA;
    out->ev_local_oom_kill = SOP_NA;
    out->pids_current = out->pids_max = SOP_NA;
    out->under_oom = SOP_NA;
}

/* Does the comma-separated list [p, end) hold `name`? */
static int list_has(const char *p, const char *end, const char *name)
{
    size_t n = strlen(name);
    while (p < end) {
        const char *c = memchr(p, ',', (size_t)(end - p));
        if (!c)
            c = end;
        if ((size_t)(c - p) == n && strncmp(p, name, n) == 0)
            return 1;
        p = c + 1;
    }
    return 0;
}

static void copy_span(char *dst, size_t cap, const char *p, const char *end)
{
    size_t n = (size_t)(end - p);
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, p, n);
    dst[n] = '\0';
}

int sop__parse_proc_cgroup(const char *text, sop_cgroup *out)
{
    const char *line = text;
    int have_v1 = 0, have_v2 = 0;
    for (int i = 0; i < LINES_MAX && line && *line; i++) {
        const char *eol = strchr(line, '\n');
        if (!eol)
            eol = line + strlen(line);
        const char *c1 = memchr(line, ':', (size_t)(eol - line));
        const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(eol - c1 - 1)) : NULL;
        if (c2 && c2 + 1 < eol && c2[1] == '/') {
            const char *path = c2 + 1;
            if (c1 - line == 1 && line[0] == '0' && c2 == c1 + 1) {
                copy_span(out->v2_path, sizeof out->v2_path, path, eol);
                have_v2 = 1;
            } else {
                if (list_has(c1 + 1, c2, "memory")) {
                    copy_span(out->path, sizeof out->path, path, eol);
                    have_v1 = 1;
                }
                if (list_has(c1 + 1, c2, "cpu")) {
                    copy_span(out->cpu_path, sizeof out->cpu_path, path, eol);
                    have_v1 = 1;
                }
                if (list_has(c1 + 1, c2, "cpuset"))
                    copy_span(out->cpuset_path, sizeof out->cpuset_path, path, eol);
                if (list_has(c1 + 1, c2, "pids"))
                    copy_span(out->pids_path, sizeof out->pids_path, path, eol);
            }
        }
        line = *eol ? eol + 1 : NULL;
    }
    /* A controller appears on a v1 line only when a v1 hierarchy holds it; then v1 rules for
     * memory/cpu. Otherwise the unified "0::" line is the cgroup. */
    if (have_v1) {
        out->version = 1;
        return 0;
    }
    if (have_v2) {
        out->version = 2;
        snprintf(out->path, sizeof out->path, "%s", out->v2_path);
        snprintf(out->cpu_path, sizeof out->cpu_path, "%s", out->v2_path);
        return 0;
    }
    return -EINVAL;
}

/* The word at p must be all digits (or "max"): the whole token up to blank/newline/NUL. */
static int parse_token_i64(const char **pp, int64_t *v, int allow_max)
{
    const char *p = *pp;
    while (*p == ' ' || *p == '\t')
        p++;
    if (allow_max && strncmp(p, "max", 3) == 0) {
        p += 3;
        *v = -1;
    } else {
        int64_t n = sop__parse_i64(&p);
        if (n == SOP_NA)
            return -EINVAL;
        *v = n;
    }
    if (*p != '\0' && *p != ' ' && *p != '\t' && *p != '\n')
        return -EINVAL;
    *pp = p;
    return 0;
}

int sop__parse_cpu_max(const char *text, int64_t *quota_us, int64_t *period_us)
{
    const char *p = text;
    int64_t q, per = SOP_NA;
    if (parse_token_i64(&p, &q, 1) < 0)
        return -EINVAL;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p && *p != '\n' && (parse_token_i64(&p, &per, 0) < 0 || per <= 0))
        return -EINVAL;
    if (q != -1 && q <= 0)
        return -EINVAL;
    *quota_us = q;
    *period_us = per;
    return 0;
}

/* Calls fn(key, keylen, value) for each "key value" line; stops at a cut last line. */
typedef void (*kv_fn)(sop_cgroup *out, const char *key, size_t klen, int64_t v);

static int parse_kv_lines(const char *text, sop_cgroup *out, kv_fn fn)
{
    const char *line = text;
    int n = 0;
    for (int i = 0; i < LINES_MAX && line && *line; i++) {
        const char *eol = strchr(line, '\n');
        if (!eol)
            eol = line + strlen(line);
        const char *sp = memchr(line, ' ', (size_t)(eol - line));
        if (sp) {
            const char *p = sp + 1;
            int64_t v = sop__parse_i64(&p);
            if (v != SOP_NA && p == eol) { /* a cut "oo" or "oom " line is skipped */
                fn(out, line, (size_t)(sp - line), v);
                n++;
            }
        }
        line = *eol ? eol + 1 : NULL;
    }
    return n > 0 ? 0 : -EINVAL;
}

#define KEY_IS(k) (klen == sizeof(k) - 1 && strncmp(key, k, klen) == 0)

static void cpu_stat_kv(sop_cgroup *out, const char *key, size_t klen, int64_t v)
{
    if (KEY_IS("nr_periods"))
        out->nr_periods = v;
    else if (KEY_IS("nr_throttled"))
        out->nr_throttled = v;
    else if (KEY_IS("throttled_usec"))
        out->throttled_us = v;
    else if (KEY_IS("throttled_time")) /* v1: nanoseconds */
        out->throttled_us = v / 1000;
    else if (KEY_IS("usage_usec"))
        out->usage_us = v;
}

int sop__parse_cpu_stat(const char *text, sop_cgroup *out)
{
    return parse_kv_lines(text, out, cpu_stat_kv);
}

static void mem_events_kv(sop_cgroup *out, const char *key, size_t klen, int64_t v)
{
    if (KEY_IS("low"))
        out->ev_low = v;
    else if (KEY_IS("high"))
        out->ev_high = v;
    else if (KEY_IS("max"))
        out->ev_max = v;
    else if (KEY_IS("oom"))
        out->ev_oom = v;
    else if (KEY_IS("oom_kill"))
        out->ev_oom_kill = v;
    else if (KEY_IS("under_oom"))
        out->under_oom = v;
}

int sop__parse_memory_events(const char *text, sop_cgroup *out)
{
    return parse_kv_lines(text, out, mem_events_kv);
}

int sop__parse_memory_events_local(const char *text, sop_cgroup *out)
{
    sop_cgroup local;
    sop__cgroup_init(&local);
    int rc = parse_kv_lines(text, &local, mem_events_kv);
    if (rc < 0)
        return rc;
    out->ev_local_oom_kill = local.ev_oom_kill;
    return 0;
}

int sop__parse_mem_limit(const char *text, int64_t *bytes)
{
    const char *p = text;
    int64_t v;
    if (parse_token_i64(&p, &v, 1) < 0 || (v < 0 && v != -1))
        return -EINVAL;
    /* v1 writes "unlimited" as PAGE_COUNTER_MAX pages (9223372036854771712 on x86-64) */
    if (v >= ((int64_t)1 << 62))
        v = -1;
    *bytes = v;
    return 0;
}

int sop__parse_mountinfo_cgroup(const char *text, const char *controller, char *mnt, size_t cap)
{
    const char *line = text;
    for (int i = 0; i < LINES_MAX && line && *line; i++) {
        const char *eol = strchr(line, '\n');
        if (!eol)
            eol = line + strlen(line);
        /* id parent maj:min root mountpoint opts [optional...] - fstype source superopts */
        const char *f[5];
        const char *p = line;
        int nf = 0;
        while (nf < 5 && p < eol) {
            while (p < eol && *p == ' ')
                p++;
            f[nf++] = p;
            while (p < eol && *p != ' ')
                p++;
        }
        const char *sep = NULL;
        for (const char *q = p; q + 2 < eol; q++)
            if (q[0] == ' ' && q[1] == '-' && q[2] == ' ') {
                sep = q + 3;
                break;
            }
        if (nf == 5 && sep) {
            const char *fs = sep, *fs_end = memchr(fs, ' ', (size_t)(eol - fs));
            const char *src_end =
                fs_end ? memchr(fs_end + 1, ' ', (size_t)(eol - fs_end - 1)) : NULL;
            const char *opts = src_end ? src_end + 1 : eol;
            size_t fsl = fs_end ? (size_t)(fs_end - fs) : 0;
            int match = 0;
            if (!controller)
                match = fsl == 7 && strncmp(fs, "cgroup2", 7) == 0;
            else
                match =
                    fsl == 6 && strncmp(fs, "cgroup", 6) == 0 && list_has(opts, eol, controller);
            if (match) {
                const char *mp = f[4], *mp_end = memchr(mp, ' ', (size_t)(eol - mp));
                if (!mp_end)
                    return -EINVAL;
                copy_span(mnt, cap, mp, mp_end);
                return 0;
            }
        }
        line = *eol ? eol + 1 : NULL;
    }
    return -ENOENT;
}
