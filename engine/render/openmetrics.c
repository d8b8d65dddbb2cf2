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
#include "strbuf.h"

/* A label value: backslash, double quote and newline escaped as the format wants; other
 * control characters and bytes that are not UTF-8 become '?', so a scrape never fails on a
 * thread or command name the target chose. */
static void put_label_value(sop_sb *b, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        unsigned c = *p;
        if (c == '\\' || c == '"') {
            char esc[2] = {'\\', (char)c};
            sop__sb_putn(b, esc, 2);
            p++;
            continue;
        }
        if (c == '\n') {
            sop__sb_puts(b, "\\n");
            p++;
            continue;
        }
        if (c < 0x20 || c == 0x7f) {
            sop__sb_putn(b, "?", 1);
            p++;
            continue;
        }
        if (c < 0x80) {
            sop__sb_putn(b, (const char *)p, 1);
            p++;
            continue;
        }
        /* A well-formed UTF-8 sequence (no overlongs, no surrogates, <= U+10FFFF) is copied;
         * C1 controls (U+0080..U+009F) are not. */
        size_t n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
        uint32_t cp = n == 4 ? c & 0x07 : n == 3 ? c & 0x0f : c & 0x1f;
        size_t i = 1;
        for (; n && i < n && (p[i] & 0xc0) == 0x80; i++)
            cp = cp << 6 | (p[i] & 0x3f);
        bool ok = n && i == n && cp <= 0x10ffff && !(cp >= 0xd800 && cp <= 0xdfff) &&
                  !(n == 3 && cp < 0x800) && !(n == 4 && cp < 0x10000) && cp >= 0xa0;
        if (ok) {
            sop__sb_putn(b, (const char *)p, n);
            p += n;
        } else {
            sop__sb_putn(b, "?", 1);
            p += i > 1 ? i : 1;
        }
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

static bool num_at(const sop_value *v, const char *path, double *out)
{
    /* path: "a.b.c" through objects */
    char key[64];
    const char *p = path;
    while (v) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        if (n >= sizeof key)
            return false;
        memcpy(key, p, n);
        key[n] = '\0';
        if (!dot)
            return sop__v_get_num(v, key, out);
        v = sop__v_get(v, key);
        p = dot + 1;
    }
    return false;
}

/* A gauge read from `path` under obj, times scale; nothing when absent. */
static void gauge_at(sop_sb *b, const char *name, const char *unit, const char *help,
                     const sop_value *obj, const char *path, double scale)
{
    double x = 0;
    if (num_at(obj, path, &x))
        gauge(b, name, unit, help, true, x * scale);
}

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

/* Python-side figures summed or maxed over the target's sampled threads. */
static void python_series(sop_sb *b, const sop_value *py)
{
    const sop_value *threads = sop__v_get(py, "threads");
    double gil = 0, dstate = 0, x = 0;
    bool have_gil = false, have_d = false;
    for (const sop_value *t = threads ? threads->child : NULL; t; t = t->next) {
        const sop_value *w = sop__v_get(t, "window");
        if (sop__v_get_num(w, "gil_frac", &x)) {
            gil += x;
            have_gil = true;
        }
        if (sop__v_get_num(w, "io_wait_frac", &x)) {
            dstate = x > dstate ? x : dstate;
            have_d = true;
        }
    }
    gauge(b, "sop_python_gil_held_ratio", "ratio",
          "Share of the window some thread of the target held the GIL (sampled)", have_gil,
          gil > 1 ? 1 : gil);
    gauge(b, "sop_python_thread_uninterruptible_ratio", "ratio",
          "Largest share of the window a Python thread of the target spent in state D "
          "(uninterruptible sleep, mostly disk or network file system I/O)",
          have_d, dstate);
    gauge_at(b, "sop_asyncio_loop_longest_stretch_seconds", "seconds",
             "Longest stretch the asyncio event loop spent in one callback during the window", py,
             "loop.longest_block_ms", 1e-3);
    gauge_at(b, "sop_dataloader_wait_ratio", "ratio",
             "Share of the window the main process waited for DataLoader batches", py,
             "loader.main_data_wait_frac", 1);
    gauge_at(b, "sop_python_gc_collecting_ratio", "ratio",
             "Share of the window the garbage collector was running (sampled)", py,
             "gc.window.collecting_frac", 1);
}

/* One labelled sample per element of `arr` that has the number `key`: NAME{gpu="index"
 * [,pid="pid"]} value*scale; the family only when some element has it. */
static void gpu_family(sop_sb *b, const sop_value *arr, const char *key, const char *name,
                       const char *unit, const char *help, double scale)
{
    bool head = false;
    for (const sop_value *d = arr ? arr->child : NULL; d; d = d->next) {
        double x = 0, idx = 0, pid = 0;
        bool proc = sop__v_get_num(d, "pid", &pid);
        if (!sop__v_get_num(d, key, &x) || !sop__v_get_num(d, proc ? "device" : "index", &idx))
            continue;
        if (!head)
            family(b, name, "gauge", unit, help);
        head = true;
        sop__sb_printf(b, "%s{gpu=\"%.0f\"", name, idx);
        if (proc)
            sop__sb_printf(b, ",pid=\"%.0f\"", pid);
        sop__sb_puts(b, "}");
        value(b, x * scale);
    }
}

/* ev.gpu: per device the tree uses, its processes, and the tree's figures (docs/metrics.md). */
static void gpu_series(sop_sb *b, const sop_value *gpu)
{
    const sop_value *devs = sop__v_get(gpu, "devices");
    if (devs && devs->child) {
        family(b, "sop_gpu_info", "gauge", NULL,
               "A GPU the target's tree uses or may use (always 1), labelled with its index, "
               "UUID, name, whether the tree uses it, and the driver");
        for (const sop_value *d = devs->child; d; d = d->next) {
            double idx = 0;
            if (!sop__v_get_num(d, "index", &idx))
                continue;
            const sop_value *used = sop__v_get(d, "used_by_tree");
            sop__sb_printf(b, "sop_gpu_info{gpu=\"%.0f\",uuid=\"", idx);
            put_label_value(b, sop__v_get_str(d, "uuid"));
            sop__sb_puts(b, "\",name=\"");
            put_label_value(b, sop__v_get_str(d, "name"));
            sop__sb_printf(b, "\",used_by_tree=\"%s\",driver=\"",
                           used && used->type == SOP_V_BOOL && used->b ? "true" : "false");
            put_label_value(b, sop__v_get_str(gpu, "driver_version"));
            sop__sb_puts(b, "\"} 1\n");
        }
    }
    gpu_family(b, devs, "util_sm_pct", "sop_gpu_utilization_ratio", "ratio",
               "Share of the window a kernel ran on the GPU (mean of NVML's SM utilisation "
               "readings)",
               0.01);
    gpu_family(b, devs, "util_sm_max_pct", "sop_gpu_utilization_max_ratio", "ratio",
               "Highest SM utilisation reading of the window", 0.01);
    gpu_family(b, devs, "idle_frac", "sop_gpu_idle_ratio", "ratio",
               "Share of the window's readings with the GPU idle (SM utilisation < 5%)", 1);
    gpu_family(b, devs, "util_mem_pct", "sop_gpu_memory_utilization_ratio", "ratio",
               "Share of the window the GPU's memory was read or written", 0.01);
    gpu_family(b, devs, "mem_used_kb", "sop_gpu_memory_used_bytes", "bytes",
               "GPU memory in use (all processes)", 1024);
    gpu_family(b, devs, "mem_total_kb", "sop_gpu_memory_total_bytes", "bytes", "GPU memory", 1024);
    gpu_family(b, devs, "sm_clock_mhz", "sop_gpu_sm_clock_hertz", "hertz", "SM clock", 1e6);
    gpu_family(b, devs, "sm_clock_max_mhz", "sop_gpu_sm_clock_max_hertz", "hertz",
               "The SM clock's maximum", 1e6);
    gpu_family(b, devs, "temperature_c", "sop_gpu_temperature_celsius", "celsius",
               "GPU temperature", 1);
    gpu_family(b, devs, "power_w", "sop_gpu_power_watts", "watts", "GPU power draw", 1);
    bool head = false;
    for (const sop_value *d = devs ? devs->child : NULL; d; d = d->next) {
        double idx = 0;
        const char *t = sop__v_get_str(d, "throttle");
        if (!t || !t[0] || !sop__v_get_num(d, "index", &idx))
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
    gpu_family(b, devs, "other_procs", "sop_gpu_other_processes", NULL,
               "Processes on the GPU that are not the target's tree", 1);
    gpu_family(b, sop__v_get(gpu, "procs"), "mem_kb", "sop_gpu_process_memory_bytes", "bytes",
               "GPU memory held by a process of the target's tree", 1024);
    gpu_family(b, sop__v_get(gpu, "procs"), "util_sm_pct", "sop_gpu_process_utilization_ratio",
               "ratio", "A process's share of the GPU's SM time over the window", 0.01);
    gauge_at(b, "sop_gpu_tree_busy_ratio", "ratio",
             "The target tree's own GPU use over the GPUs it uses (per process where shared)", gpu,
             "busy_pct", 0.01);
    gauge_at(b, "sop_gpu_tree_idle_ratio", "ratio",
             "The target tree's idle share of the window over the GPUs it uses", gpu, "idle_frac",
             1);
    gauge_at(b, "sop_gpu_tree_memory_bytes", "bytes",
             "GPU memory held by the target's tree (all its processes, all GPUs)", gpu,
             "tree_mem_kb", 1024);
}

static void evidence_series(sop_sb *b, const sop_value *ev)
{
    double x = 0, y = 0;
    const sop_value *proc = sop__v_get(ev, "proc");
    const sop_value *alive = sop__v_get(ev, "alive");
    gauge(b, "sop_target_alive", NULL, "1 while the target runs, 0 in a post-mortem report",
          alive && alive->type == SOP_V_BOOL, alive && alive->b ? 1 : 0);
    if (sop__v_get_num(proc, "utime_ms", &x) && sop__v_get_num(proc, "stime_ms", &y)) {
        family(b, "sop_process_cpu_seconds", "counter", "seconds",
               "CPU time the target has used since it started (user + system)");
        sop__sb_puts(b, "sop_process_cpu_seconds_total");
        value(b, (x + y) / 1e3);
    }
    gauge_at(b, "sop_process_cpus", NULL,
             "CPUs the target kept busy over the window, on average (1 = one CPU)", proc, "cpu_pct",
             0.01);
    gauge_at(b, "sop_process_resident_memory_bytes", "bytes", "Resident memory of the target", proc,
             "rss_kb", 1024);
    gauge_at(b, "sop_process_threads", NULL, "Threads of the target", proc, "threads", 1);
    gauge_at(b, "sop_process_open_fds", NULL, "Open file descriptors of the target", proc, "fds",
             1);
    gauge_at(b, "sop_effective_cpus", NULL,
             "CPUs the target can use: min(affinity, cgroup quota, cpuset, host CPUs)", ev,
             "effective_cpus", 1);
    gauge_at(b, "sop_runnable_load", NULL,
             "Runnable threads of the target's process tree per window, on average", ev,
             "sched.runnable_load", 1);
    gauge_at(b, "sop_host_load1", NULL, "Host load average over one minute", ev, "host.load1", 1);
    gauge_at(b, "sop_cgroup_cpu_throttled_ratio", "ratio",
             "Share of the window's cgroup CPU periods that were throttled", ev,
             "cgroup.cpu.throttled_pct", 0.01);
    gauge_at(b, "sop_cgroup_memory_usage_bytes", "bytes", "Memory used by the target's cgroup", ev,
             "cgroup.memory.usage_kb", 1024);
    gauge_at(b, "sop_cgroup_memory_limit_bytes", "bytes", "Memory limit of the target's cgroup", ev,
             "cgroup.memory.limit_kb", 1024);
    const sop_value *py = sop__v_get(ev, "python");
    if (py)
        python_series(b, py);
    const sop_value *gpu = sop__v_get(ev, "gpu");
    if (gpu)
        gpu_series(b, gpu);
    gauge_at(b, "sop_window_seconds", "seconds", "Length of the last observation window", ev,
             "duration_s", 1);
    gauge_at(b, "sop_last_window_timestamp_seconds", "seconds",
             "When the last successful window ended (Unix time)", ev, "collected_at", 1);
}

static void target_info(sop_sb *b, const sop_value *report)
{
    const sop_value *t = sop__v_get(report, "target");
    double pid = 0;
    if (!sop__v_get_num(t, "pid", &pid))
        return;
    /* A gauge named *_info (the Prometheus convention) rather than the OpenMetrics info type,
     * so that the text also reads as Prometheus text format 0.0.4. */
    family(b, "sop_target_info", "gauge", NULL, "The process diagnosed (always 1)");
    sop__sb_printf(b, "sop_target_info{pid=\"%.0f\",comm=\"", pid);
    put_label_value(b, sop__v_get_str(t, "comm"));
    sop__sb_puts(b, "\",python=\"");
    put_label_value(b, sop__v_get_str(t, "python"));
    sop__sb_puts(b, "\"} 1\n");
}

char *sop__openmetrics_render(const sop_value *report, const sop_value *ev)
{
    sop_sb b = {0};
    target_info(&b, report);
    rule_series(&b, report);
    const sop_value *timing = sop__v_get(report, "timing_ms");
    gauge_at(&b, "sop_collect_duration_seconds", "seconds",
             "How long the last collection took, besides waiting out the window", timing, "collect",
             1e-3);
    gauge_at(&b, "sop_rules_duration_seconds", "seconds",
             "How long the rules took on the last window", timing, "rules", 1e-3);
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
