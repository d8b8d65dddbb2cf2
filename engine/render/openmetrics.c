/* openmetrics.c — a report (and the evidence it came from) as OpenMetrics text for Prometheus:
 * one gauge per rule (hit 0/1, unknown, error), finding counts, key evidence with units in
 * their names, durations and the window's timestamp. Names follow the Prometheus conventions
 * (sop_ prefix, base units, _seconds/_bytes/_ratio); docs/metrics.md lists them. Label values
 * are escaped here and nowhere else. Depends on value and strbuf. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "engine.h"
#include "evidence_reads.h"
#include "render.h"
#include "report_writers.h"
#include "strbuf.h"
#include "utf8.h"

/* A label value: backslash, double quote and newline escaped as the format wants (it has no
 * other escapes); other control characters, C1 controls, bidi and other format controls
 * (U+202E, U+2066...: they reorder what a dashboard shows) and bytes that are not UTF-8 become
 * '?', so a scrape never fails on, and no panel is rewritten by, a name the target chose. The
 * same characters the other writers spell out (core/utf8.c decides which). */
static void put_label_value(sop_sb *b, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    size_t left = strlen((const char *)p);
    while (left) {
        unsigned c = *p;
        size_t n = 1;
        if (c == '\\' || c == '"') {
            char esc[2] = {'\\', (char)c};
            sop__sb_putn(b, esc, 2);
        } else if (c == '\n') {
            sop__sb_puts(b, "\\n");
        } else if (c < 0x20 || c == 0x7f) {
            sop__sb_putn(b, "?", 1);
        } else if (c < 0x80) {
            sop__sb_putn(b, (const char *)p, 1);
        } else if ((n = sop__utf8_seq(p, left)) != 0 && sop__utf8_spelled(p, n) == 0) {
            sop__sb_putn(b, (const char *)p, n);
        } else { /* one '?' for a C1/format control, or for a broken sequence's bytes */
            sop__sb_putn(b, "?", 1);
            if (!n) {
                size_t want = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 1;
                for (n = 1; n < want && n < left && (p[n] & 0xc0) == 0x80; n++)
                    ;
            }
        }
        p += n;
        left -= n;
    }
}

static void family(sop_sb *b, const char *name, const char *type, const char *unit,
                   const char *help)
{
    sop__sb_printf(b, "# TYPE %s %s\n", name, type);
    if (unit)
        sop__sb_printf(b, "# UNIT %s %s\n", name, unit);
    sop__sb_printf(b, "# HELP %s %s\n", name, help);
}

static void value(sop_sb *b, double v)
{
    if (isnan(v))
        sop__sb_puts(b, " NaN\n");
    else if (isinf(v))
        sop__sb_puts(b, v > 0 ? " +Inf\n" : " -Inf\n");
    else if (v == floor(v) && fabs(v) < 1e15)
        sop__sb_printf(b, " %.0f\n", v);
    else
        sop__sb_printf(b, " %.15g\n", v);
}

/* One gauge family with one unlabelled sample; nothing when the figure is absent. */
static void gauge(sop_sb *b, const char *name, const char *unit, const char *help, bool have,
                  double v)
{
    if (!have)
        return;
    family(b, name, "gauge", unit, help);
    sop__sb_puts(b, name);
    value(b, v);
}

/* One gauge of the evidence (or the report): the number at `path` (sop__v_fold), times
 * scale, capped at `cap` when > 0; nothing when absent. The paths are those of
 * docs/evidence.md: test_openmetrics checks each against the schema (sop__openmetrics_reads). */
typedef struct {
    const char *name, *unit, *help, *path;
    sop_fold fold;
    double scale, cap;
} om_gauge;

static void gauge_at(sop_sb *b, const om_gauge *g, const sop_value *from)
{
    double x = 0;
    if (!sop__v_fold(from, g->path, g->fold, &x))
        return;
    x *= g->scale;
    gauge(b, g->name, g->unit, g->help, true, g->cap > 0 && x > g->cap ? g->cap : x);
}

static void gauges(sop_sb *b, const om_gauge *g, size_t n, const sop_value *from)
{
    for (size_t i = 0; i < n; i++)
        gauge_at(b, &g[i], from);
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

static bool seen_before(const sop_value *arr, const sop_value *upto, const char *id)
{
    for (const sop_value *c = arr->child; c && c != upto; c = c->next) {
        const char *cid = sop__v_get_str(c, "id");
        if (cid && strcmp(cid, id) == 0)
            return true;
    }
    return false;
}

/* sop_rule_hit: findings 1 (labelled with the finding's severity), cleared rules 0 (the rule's
 * declared severity). Unknown and failed rules have no hit sample: they are not "0". */
static void rule_series(sop_sb *b, const sop_value *report)
{
    const sop_value *findings = sop__v_get(report, "findings");
    const sop_value *cleared = sop__v_get(report, "cleared");
    const sop_value *unknown = sop__v_get(report, "unknown");
    const sop_value *errors = sop__v_get(report, "rule_errors");

    family(b, "sop_rule_hit", "gauge", NULL,
           "1 when the rule found its problem in the last window, 0 when it cleared it "
           "(absent when unknown or failed)");
    const sop_value *lists[2] = {findings, cleared};
    for (int l = 0; l < 2; l++) {
        const sop_value *arr = lists[l];
        for (const sop_value *c = arr ? arr->child : NULL; c; c = c->next) {
            const char *id = sop__v_get_str(c, "id");
            if (!id || seen_before(arr, c, id) ||
                (l == 1 && findings && seen_before(findings, NULL, id)))
                continue;
            sop__sb_puts(b, "sop_rule_hit{rule=\"");
            put_label_value(b, id);
            sop__sb_puts(b, "\",section=\"");
            put_label_value(b, sop__v_get_str(c, "section"));
            sop__sb_puts(b, "\",severity=\"");
            put_label_value(b, sop__v_get_str(c, "severity"));
            sop__sb_puts(b, "\"}");
            value(b, l == 0 ? 1 : 0);
        }
    }

    family(b, "sop_rule_unknown", "gauge", NULL,
           "1 for each rule that could not decide in the last window (evidence missing)");
    for (const sop_value *c = unknown ? unknown->child : NULL; c; c = c->next) {
        const char *id = sop__v_get_str(c, "id");
        if (!id || seen_before(unknown, c, id))
            continue;
        sop__sb_puts(b, "sop_rule_unknown{rule=\"");
        put_label_value(b, id);
        sop__sb_puts(b, "\",section=\"");
        put_label_value(b, sop__v_get_str(c, "section"));
        sop__sb_puts(b, "\"}");
        value(b, 1);
    }

    family(b, "sop_rule_error", "gauge", NULL,
           "1 for each rule that failed (error or budget exceeded) in the last window");
    for (const sop_value *c = errors ? errors->child : NULL; c; c = c->next) {
        const char *id = sop__v_get_str(c, "id");
        if (!id || seen_before(errors, c, id))
            continue;
        sop__sb_puts(b, "sop_rule_error{rule=\"");
        put_label_value(b, id);
        sop__sb_puts(b, "\"}");
        value(b, 1);
    }

    family(b, "sop_findings", "gauge", NULL, "Findings of the last window by severity");
    static const char *const sev[] = {"high", "warn", "info"};
    for (int s = 0; s < 3; s++) {
        int n = 0;
        for (const sop_value *c = findings ? findings->child : NULL; c; c = c->next) {
            const char *cs = sop__v_get_str(c, "severity");
            n += cs && strcmp(cs, sev[s]) == 0;
        }
        sop__sb_printf(b, "sop_findings{severity=\"%s\"} %d\n", sev[s], n);
    }
    gauge(b, "sop_rules_unknown", NULL, "Rules that could not decide in the last window", true,
          unknown ? (double)unknown->count : 0);
}

/* The target's process, the job's CPUs, the host and the cgroup. */
static const om_gauge PROCESS[] = {
    {"sop_process_cpus", NULL,
     "CPUs the target kept busy over the window, on average (1 = one CPU)", "proc.cpu_pct",
     SOP_FOLD_VALUE, 0.01, 0},
    {"sop_process_resident_memory_bytes", "bytes", "Resident memory of the target", "proc.rss_kb",
     SOP_FOLD_VALUE, 1024, 0},
    {"sop_process_threads", NULL, "Threads of the target", "proc.threads", SOP_FOLD_VALUE, 1, 0},
    {"sop_process_open_fds", NULL, "Open file descriptors of the target", "proc.fds",
     SOP_FOLD_VALUE, 1, 0},
    {"sop_effective_cpus", NULL,
     "CPUs the target can use: min(affinity, cgroup quota, cpuset, host CPUs)", "effective_cpus",
     SOP_FOLD_VALUE, 1, 0},
    {"sop_runnable_load", NULL,
     "Runnable threads of the target's process tree per window, on average", "sched.runnable_load",
     SOP_FOLD_VALUE, 1, 0},
    {"sop_host_load1", NULL, "Host load average over one minute", "host.load1", SOP_FOLD_VALUE, 1,
     0},
    {"sop_cgroup_cpu_throttled_ratio", "ratio",
     "Share of the window's cgroup CPU periods that were throttled", "cgroup.cpu.throttled_pct",
     SOP_FOLD_VALUE, 0.01, 0},
    {"sop_cgroup_memory_usage_bytes", "bytes", "Memory used by the target's cgroup",
     "cgroup.memory.usage_kb", SOP_FOLD_VALUE, 1024, 0},
    {"sop_cgroup_memory_limit_bytes", "bytes", "Memory limit of the target's cgroup",
     "cgroup.memory.limit_kb", SOP_FOLD_VALUE, 1024, 0},
};

/* Python-side figures, summed or maxed over the target's sampled threads where per thread. */
static const om_gauge PYTHON[] = {
    {"sop_python_gil_held_ratio", "ratio",
     "Share of the window some thread of the target held the GIL (sampled)",
     "python.threads[].window.gil_frac", SOP_FOLD_SUM, 1, 1},
    {"sop_python_thread_uninterruptible_ratio", "ratio",
     "Largest share of the window a Python thread of the target spent in state D "
     "(uninterruptible sleep, mostly disk or network file system I/O)",
     "python.threads[].window.io_wait_frac", SOP_FOLD_MAX, 1, 0},
    {"sop_asyncio_loop_longest_stretch_seconds", "seconds",
     "Longest stretch the asyncio event loop spent in one callback during the window",
     "python.loop.longest_block_ms", SOP_FOLD_VALUE, 1e-3, 0},
    {"sop_dataloader_wait_ratio", "ratio",
     "Share of the window the main process waited for DataLoader batches",
     "python.loader.main_data_wait_frac", SOP_FOLD_VALUE, 1, 0},
    {"sop_python_gc_collecting_ratio", "ratio",
     "Share of the window the garbage collector was running (sampled)",
     "python.gc.window.collecting_frac", SOP_FOLD_VALUE, 1, 0},
};

/* The tree's GPU figures (docs/metrics.md). */
static const om_gauge GPU_TREE[] = {
    {"sop_gpu_tree_busy_ratio", "ratio",
     "The target tree's own GPU use over the GPUs it uses (per process where shared)",
     "gpu.busy_pct", SOP_FOLD_VALUE, 0.01, 0},
    {"sop_gpu_tree_idle_ratio", "ratio",
     "The target tree's idle share of the window over the GPUs it uses", "gpu.idle_frac",
     SOP_FOLD_VALUE, 1, 0},
    {"sop_gpu_tree_memory_bytes", "bytes",
     "GPU memory held by the target's tree (all its processes, all GPUs)", "gpu.tree_mem_kb",
     SOP_FOLD_VALUE, 1024, 0},
};

/* The window. */
static const om_gauge WINDOW[] = {
    {"sop_window_seconds", "seconds", "Length of the last observation window", "duration_s",
     SOP_FOLD_VALUE, 1, 0},
    {"sop_last_window_timestamp_seconds", "seconds",
     "When the last successful window ended (Unix time)", "collected_at", SOP_FOLD_VALUE, 1, 0},
};

/* A labelled family: one sample per element of the array `path` names ("gpu.devices[].key")
 * that has the number: NAME{gpu="index"[,pid="pid"]} value*scale. */
typedef struct {
    const char *name, *unit, *help, *path;
    double scale;
} om_family;

#define GPU_DEVICES "gpu.devices"
#define GPU_PROCS "gpu.procs"
static const om_family GPU_DEVICE_FAMILIES[] = {
    {"sop_gpu_utilization_ratio", "ratio",
     "Share of the window a kernel ran on the GPU (mean of NVML's SM utilisation readings)",
     GPU_DEVICES "[].util_sm_pct", 0.01},
    {"sop_gpu_utilization_max_ratio", "ratio", "Highest SM utilisation reading of the window",
     GPU_DEVICES "[].util_sm_max_pct", 0.01},
    {"sop_gpu_idle_ratio", "ratio",
     "Share of the window's readings with the GPU idle (SM utilisation < 5%)",
     GPU_DEVICES "[].idle_frac", 1},
    {"sop_gpu_memory_utilization_ratio", "ratio",
     "Share of the window the GPU's memory was read or written", GPU_DEVICES "[].util_mem_pct",
     0.01},
    {"sop_gpu_memory_used_bytes", "bytes", "GPU memory in use (all processes)",
     GPU_DEVICES "[].mem_used_kb", 1024},
    {"sop_gpu_memory_total_bytes", "bytes", "GPU memory", GPU_DEVICES "[].mem_total_kb", 1024},
    {"sop_gpu_sm_clock_hertz", "hertz", "SM clock", GPU_DEVICES "[].sm_clock_mhz", 1e6},
    {"sop_gpu_sm_clock_max_hertz", "hertz", "The SM clock's maximum",
     GPU_DEVICES "[].sm_clock_max_mhz", 1e6},
    {"sop_gpu_temperature_celsius", "celsius", "GPU temperature", GPU_DEVICES "[].temperature_c",
     1},
    {"sop_gpu_power_watts", "watts", "GPU power draw", GPU_DEVICES "[].power_w", 1},
};
static const om_family GPU_OTHER_FAMILIES[] = {
    {"sop_gpu_other_processes", NULL, "Processes on the GPU that are not the target's tree",
     GPU_DEVICES "[].other_procs", 1},
    {"sop_gpu_process_memory_bytes", "bytes", "GPU memory held by a process of the target's tree",
     GPU_PROCS "[].mem_kb", 1024},
    {"sop_gpu_process_utilization_ratio", "ratio",
     "A process's share of the GPU's SM time over the window", GPU_PROCS "[].util_sm_pct", 0.01},
};

/* The other evidence paths read below, by name: labels, the CPU counter, liveness. */
#define P_ALIVE "alive"
#define P_UTIME "proc.utime_ms"
#define P_STIME "proc.stime_ms"
#define P_DRIVER "gpu.driver_version"
#define D_INDEX GPU_DEVICES "[].index"
#define D_UUID GPU_DEVICES "[].uuid"
#define D_NAME GPU_DEVICES "[].name"
#define D_USED GPU_DEVICES "[].used_by_tree"
#define D_THROTTLE GPU_DEVICES "[].throttle"
#define PR_PID GPU_PROCS "[].pid"
#define PR_DEVICE GPU_PROCS "[].device"
static const char *const OTHER_READS[] = {P_ALIVE, P_UTIME, P_STIME,    P_DRIVER, D_INDEX,  D_UUID,
                                          D_NAME,  D_USED,  D_THROTTLE, PR_PID,   PR_DEVICE};

/* The array a "a.b[].key" path iterates ("a.b"), into buf. */
static const sop_value *array_of(const sop_value *ev, const char *path)
{
    char buf[64];
    const char *br = strstr(path, "[]");
    size_t n = br ? (size_t)(br - path) : 0;
    if (!n || n >= sizeof buf)
        return NULL;
    memcpy(buf, path, n);
    buf[n] = '\0';
    return sop__v_path(ev, buf);
}

static void family_at(sop_sb *b, const om_family *f, const sop_value *ev)
{
    const sop_value *arr = array_of(ev, f->path);
    bool head = false;
    for (const sop_value *d = arr ? arr->child : NULL; d; d = d->next) {
        double x = 0, idx = 0, pid = 0;
        bool proc = sop__v_get_num(d, sop__evkey_leaf(PR_PID), &pid);
        if (!sop__v_get_num(d, sop__evkey_leaf(f->path), &x) ||
            !sop__v_get_num(d, sop__evkey_leaf(proc ? PR_DEVICE : D_INDEX), &idx))
            continue;
        if (!head)
            family(b, f->name, "gauge", f->unit, f->help);
        head = true;
        sop__sb_printf(b, "%s{gpu=\"%.0f\"", f->name, idx);
        if (proc)
            sop__sb_printf(b, ",pid=\"%.0f\"", pid);
        sop__sb_puts(b, "}");
        value(b, x * f->scale);
    }
}

/* ev.gpu: per device the tree uses, its processes, and the tree's figures (docs/metrics.md). */
static void gpu_series(sop_sb *b, const sop_value *ev)
{
    const sop_value *devs = sop__v_path(ev, GPU_DEVICES);
    if (devs && devs->child) {
        family(b, "sop_gpu_info", "gauge", NULL,
               "A GPU the target's tree uses or may use (always 1), labelled with its index, "
               "UUID, name, whether the tree uses it, and the driver");
        for (const sop_value *d = devs->child; d; d = d->next) {
            double idx = 0;
            if (!sop__v_get_num(d, sop__evkey_leaf(D_INDEX), &idx))
                continue;
            const sop_value *used = sop__v_get(d, sop__evkey_leaf(D_USED));
            sop__sb_printf(b, "sop_gpu_info{gpu=\"%.0f\",uuid=\"", idx);
            put_label_value(b, sop__v_get_str(d, sop__evkey_leaf(D_UUID)));
            sop__sb_puts(b, "\",name=\"");
            put_label_value(b, sop__v_get_str(d, sop__evkey_leaf(D_NAME)));
            sop__sb_printf(b, "\",used_by_tree=\"%s\",driver=\"",
                           used && used->type == SOP_V_BOOL && used->b ? "true" : "false");
            const sop_value *drv = sop__v_path(ev, P_DRIVER);
            put_label_value(b, drv && drv->type == SOP_V_STR ? drv->str : NULL);
            sop__sb_puts(b, "\"} 1\n");
        }
    }
    for (size_t i = 0; i < N(GPU_DEVICE_FAMILIES); i++)
        family_at(b, &GPU_DEVICE_FAMILIES[i], ev);
    bool head = false;
    for (const sop_value *d = devs ? devs->child : NULL; d; d = d->next) {
        double idx = 0;
        const char *t = sop__v_get_str(d, sop__evkey_leaf(D_THROTTLE));
        if (!t || !t[0] || !sop__v_get_num(d, sop__evkey_leaf(D_INDEX), &idx))
            continue;
        if (!head)
            family(b, "sop_gpu_clocks_throttled", "gauge", NULL,
                   "1 for each reason the GPU's clocks are held down (power cap, thermal, ...)");
        head = true;
        for (const char *p = t; *p;) {
            size_t n = strcspn(p, ",");
            char reason[48];
            snprintf(reason, sizeof reason, "%.*s", (int)(n < 47 ? n : 47), p);
            sop__sb_printf(b, "sop_gpu_clocks_throttled{gpu=\"%.0f\",reason=\"", idx);
            put_label_value(b, reason);
            sop__sb_puts(b, "\"} 1\n");
            p += n;
            p += *p == ',';
        }
    }
    for (size_t i = 0; i < N(GPU_OTHER_FAMILIES); i++)
        family_at(b, &GPU_OTHER_FAMILIES[i], ev);
    gauges(b, GPU_TREE, N(GPU_TREE), ev);
}

static void evidence_series(sop_sb *b, const sop_value *ev)
{
    double x = 0, y = 0;
    const sop_value *alive = sop__v_path(ev, P_ALIVE);
    gauge(b, "sop_target_alive", NULL, "1 while the target runs, 0 in a post-mortem report",
          alive && alive->type == SOP_V_BOOL, alive && alive->b ? 1 : 0);
    if (sop__v_fold(ev, P_UTIME, SOP_FOLD_VALUE, &x) &&
        sop__v_fold(ev, P_STIME, SOP_FOLD_VALUE, &y)) {
        family(b, "sop_process_cpu_seconds", "counter", "seconds",
               "CPU time the target has used since it started (user + system)");
        sop__sb_puts(b, "sop_process_cpu_seconds_total");
        value(b, (x + y) / 1e3);
    }
    gauges(b, PROCESS, N(PROCESS), ev);
    if (sop__v_get(ev, "python"))
        gauges(b, PYTHON, N(PYTHON), ev);
    if (sop__v_get(ev, "gpu"))
        gpu_series(b, ev);
    gauges(b, WINDOW, N(WINDOW), ev);
}

size_t sop__openmetrics_reads(const char **out, size_t cap)
{
    size_t n = 0;
#define ADD(p)                                                                                     \
    do {                                                                                           \
        if (n < cap)                                                                               \
            out[n] = (p);                                                                          \
        n++;                                                                                       \
    } while (0)
    for (size_t i = 0; i < N(PROCESS); i++)
        ADD(PROCESS[i].path);
    for (size_t i = 0; i < N(PYTHON); i++)
        ADD(PYTHON[i].path);
    for (size_t i = 0; i < N(GPU_TREE); i++)
        ADD(GPU_TREE[i].path);
    for (size_t i = 0; i < N(WINDOW); i++)
        ADD(WINDOW[i].path);
    for (size_t i = 0; i < N(GPU_DEVICE_FAMILIES); i++)
        ADD(GPU_DEVICE_FAMILIES[i].path);
    for (size_t i = 0; i < N(GPU_OTHER_FAMILIES); i++)
        ADD(GPU_OTHER_FAMILIES[i].path);
    for (size_t i = 0; i < N(OTHER_READS); i++)
        ADD(OTHER_READS[i]);
#undef ADD
    return n;
}

static void target_info(sop_sb *b, const sop_value *report)
{
    sop_report_target t;
    sop__report_target(report, &t);
    if (!t.has_pid) {
        sop__report_target_free(&t);
        return;
    }
    /* A gauge named *_info (the Prometheus convention) rather than the OpenMetrics info type,
     * so that the text also reads as Prometheus text format 0.0.4. */
    family(b, "sop_target_info", "gauge", NULL, "The process diagnosed (always 1)");
    sop__sb_printf(b, "sop_target_info{pid=\"%.0f\",comm=\"", t.pid);
    put_label_value(b, t.comm);
    sop__sb_puts(b, "\",python=\"");
    put_label_value(b, t.python);
    /* in a container: dcgm-exporter's label names (pod, namespace, container: the pod spec's
     * container, else the runtime's name for it) and the id */
    if (t.in_container) {
        const char *labels[][2] = {{"pod", t.pod},
                                   {"namespace", t.ns},
                                   {"container", t.ct_container ? t.ct_container : t.ct_name},
                                   {"container_id", t.ct_id}};
        for (size_t i = 0; i < sizeof labels / sizeof labels[0]; i++) {
            if (!labels[i][1])
                continue;
            sop__sb_printf(b, "\",%s=\"", labels[i][0]);
            put_label_value(b, labels[i][1]);
        }
    }
    sop__report_target_free(&t);
    sop__sb_puts(b, "\"} 1\n");
}

char *sop__openmetrics_render(const sop_value *report, const sop_value *ev)
{
    sop_sb b = {0};
    target_info(&b, report);
    rule_series(&b, report);
    static const om_gauge TIMING[] = {
        /* the report's own figures */
        {"sop_collect_duration_seconds", "seconds",
         "How long the last collection took, besides waiting out the window", "timing_ms.collect",
         SOP_FOLD_VALUE, 1e-3, 0},
        {"sop_rules_duration_seconds", "seconds", "How long the rules took on the last window",
         "timing_ms.rules", SOP_FOLD_VALUE, 1e-3, 0},
    };
    gauges(&b, TIMING, N(TIMING), report);
    if (ev)
        evidence_series(&b, ev);
    return sop__sb_take(&b);
}

int sop_report_openmetrics(const sop_report *r, const sop_evidence *ev, char **out)
{
    if (!r || !out)
        return SOP_EINVAL;
    *out = sop__openmetrics_render(r->tree, ev ? ev->tree : NULL);
    return *out ? SOP_OK : SOP_ENOMEM;
}
