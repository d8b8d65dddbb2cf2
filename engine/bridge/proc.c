/* proc.c (bridge) — adds `proc`, `threads` and `children` to the ev tree from the process
 * probes' structs, key by key as docs/evidence.md names them. Absent values stay absent;
 * text from the target goes through sop__bridge_text. Depends on engine/value.c, probes/proc.h. */
#include <math.h>
#include <stdio.h>
#include <unistd.h>

#include "bridge.h"

static const char *state_name(char s)
{
    switch (s) {
    case 'R':
        return "running";
    case 'S':
        return "sleeping";
    case 'D':
        return "disk sleep";
    case 'Z':
        return "zombie";
    case 'T':
        return "stopped";
    case 't':
        return "tracing stop";
    case 'X':
    case 'x':
        return "dead";
    case 'I':
        return "idle";
    case 'P':
        return "parked";
    case 'W':
        return "waking";
    case 'K':
        return "wakekill";
    default:
        return NULL;
    }
}

static void set_text(sop_value *obj, const char *key, const char *s)
{
    if (s && *s)
        sop__v_set(obj, key, sop__bridge_text(s));
}

static void set_state(sop_value *obj, char state, bool with_name)
{
    if (!state)
        return;
    char letter[2] = {state, '\0'};
    set_text(obj, "state", letter);
    if (with_name)
        sop__v_set_str(obj, "state_name", state_name(state));
}

static int64_t sum2(int64_t a, int64_t b)
{
    return a == SOP_NA || b == SOP_NA ? SOP_NA : a + b;
}

static int64_t ticks_ms(int64_t ticks, double ticks_per_s)
{
    return ticks == SOP_NA ? SOP_NA : (int64_t)llround((double)ticks * 1000.0 / ticks_per_s);
}

static int64_t ns_ms(int64_t ns)
{
    return ns == SOP_NA ? SOP_NA : ns / 1000000;
}

static int64_t first(int64_t a, int64_t b)
{
    return a != SOP_NA ? a : b;
}

/* Limits: -1 (unlimited) is kept as -1; bytes become kB. */
static int64_t limit_kb(int64_t bytes)
{
    return bytes == SOP_NA || bytes < 0 ? bytes : bytes / 1024;
}

static void add_env(sop_value *obj, const sop_env *env)
{
    sop_value *e = sop__v_obj_at(obj, "env");
    for (size_t i = 0; e && i < env->n && i < SOP_ENV_MAX; i++) /* empty values are kept */
        sop__v_set(e, env->vars[i].name, sop__bridge_text(env->vars[i].value));
}

/* One mapped file: {path, kind, size_kb, rss_kb, pss_kb, swap_kb, vmas, rss_growth_kb}. */
static sop_value *mapped_obj(const sop_mapped_file *f)
{
    sop_value *o = sop__v_obj();
    if (!o)
        return NULL;
    set_text(o, "path", f->path);
    sop__v_set_str(o, "kind", f->kind);
    sop__v_set_int(o, "size_kb", f->size_kb);
    sop__v_set_int(o, "rss_kb", f->rss_kb);
    sop__v_set_int(o, "pss_kb", f->pss_kb);
    sop__v_set_int(o, "swap_kb", f->swap_kb);
    sop__v_set_int(o, "vmas", f->vmas);
    sop__v_set_int(o, "rss_growth_kb", f->rss_growth_kb);
    return o;
}

/* proc.mem: memory by kind. anon (heap: cannot be reclaimed, only swapped), file (page cache
 * of mapped files and code: reclaimable), shmem (/dev/shm, shared_memory, memfd: counted once
 * per machine, not per mapper), their growth over the window, and the mapped files. */
static void add_mem(sop_value *o, const sop_proc *p)
{
    const sop_status *ss = &p->status;
    const sop_smaps *sm = &p->smaps;
    const sop_proc_rates *r = &p->rate;
    sop_value *m = sop__v_obj_at(o, "mem");
    if (!m)
        return;
    sop__v_set_int(m, "rss_kb", ss->vm_rss_kb);
    sop__v_set_int(m, "anon_kb", ss->rss_anon_kb);
    sop__v_set_int(m, "file_kb", ss->rss_file_kb);
    sop__v_set_int(m, "shmem_kb", ss->rss_shmem_kb);
    sop__v_set_int(m, "swap_kb", ss->vm_swap_kb);
    if (p->have_smaps) {
        sop__v_set_int(m, "pss_anon_kb", sm->pss_anon_kb);
        sop__v_set_int(m, "pss_file_kb", sm->pss_file_kb);
        sop__v_set_int(m, "pss_shmem_kb", sm->pss_shmem_kb);
    }
    sop__v_set_dbl(m, "anon_growth_kb_per_s", r->anon_growth_kb_per_s);
    sop__v_set_dbl(m, "file_growth_kb_per_s", r->file_growth_kb_per_s);
    sop__v_set_dbl(m, "shmem_growth_kb_per_s", r->shmem_growth_kb_per_s);
    if (!p->have_mapped)
        return;
    const sop_mapped *mp = &p->mapped;
    sop__v_set_int(m, "mapped_data_size_kb", mp->data_size_kb);
    sop__v_set_int(m, "mapped_data_rss_kb", mp->data_rss_kb);
    sop__v_set_int(m, "mapped_shmem_size_kb", mp->shmem_size_kb);
    sop__v_set_int(m, "mapped_shmem_rss_kb", mp->shmem_rss_kb);
    sop__v_set_int(m, "mapped_lib_size_kb", mp->lib_size_kb);
    sop__v_set_int(m, "mapped_lib_rss_kb", mp->lib_rss_kb);
    sop__v_set_int(m, "mapped_files_total", mp->files_total);
    sop__v_set_bool(m, "mapped_resident", mp->resident);
    sop__v_set_bool(m, "mapped_truncated", mp->truncated);
    sop_value *arr = sop__v_arr_at(m, "mapped");
    for (size_t i = 0; arr && i < mp->n && i < SOP_MAPPED_MAX; i++) {
        sop_value *f = mapped_obj(&mp->files[i]);
        if (!f)
            break;
        sop__v_push(arr, f);
    }
}

static void add_proc(sop_value *ev, const sop_proc *p, double now, double tps)
{
    sop_value *o = sop__v_obj_at(ev, "proc");
    if (!o)
        return;
    const sop_stat *st = &p->stat;
    const sop_status *ss = &p->status;
    const sop_smaps *sm = &p->smaps;
    sop__v_set_int(o, "pid", p->pid);
    if (p->have_stat) {
        if (st->ppid >= 0)
            sop__v_set_int(o, "ppid", st->ppid);
        set_text(o, "comm", st->comm);
        set_state(o, st->state, true);
        sop__v_set_int(o, "nice", st->nice);
        sop__v_set_int(o, "priority", st->priority);
        sop__v_set_int(o, "utime_ms", ticks_ms(st->utime_ticks, tps));
        sop__v_set_int(o, "stime_ms", ticks_ms(st->stime_ticks, tps));
        if (st->cutime_ticks != SOP_NA && st->cstime_ticks != SOP_NA)
            sop__v_set_int(o, "reaped_cpu_ms", ticks_ms(st->cutime_ticks + st->cstime_ticks, tps));
        sop__v_set_int(o, "minflt", st->minflt);
        sop__v_set_int(o, "majflt", st->majflt);
    }
    set_text(o, "cmdline", p->cmdline);
    set_text(o, "exe", p->exe);
    set_text(o, "cwd", p->cwd);
    sop__v_set_int(o, "threads", first(ss->threads, st->num_threads));
    sop__v_set_dbl(o, "start_time_s", p->start_time_s);
    if (!isnan(p->start_time_s) && !isnan(now) && now >= p->start_time_s)
        sop__v_set_dbl(o, "age_s", now - p->start_time_s);

    sop__v_set_int(o, "vm_size_kb", ss->vm_size_kb);
    sop__v_set_int(o, "vm_peak_kb", ss->vm_peak_kb);
    sop__v_set_int(o, "rss_kb", ss->vm_rss_kb);
    sop__v_set_int(o, "vm_hwm_kb", ss->vm_hwm_kb);
    sop__v_set_int(o, "anon_kb", ss->rss_anon_kb);
    sop__v_set_int(o, "file_kb", ss->rss_file_kb);
    sop__v_set_int(o, "shmem_kb", ss->rss_shmem_kb);
    sop__v_set_int(o, "swap_kb", ss->vm_swap_kb);
    sop__v_set_int(o, "vm_lck_kb", ss->vm_lck_kb);
    sop__v_set_int(o, "vm_pin_kb", ss->vm_pin_kb);
    sop__v_set_int(o, "voluntary_ctxt_switches", ss->voluntary_ctxt_switches);
    sop__v_set_int(o, "nonvoluntary_ctxt_switches", ss->nonvoluntary_ctxt_switches);

    if (p->have_smaps) {
        sop_value *s = sop__v_obj_at(o, "smaps");
        sop__v_set_int(s, "rss_kb", sm->rss_kb);
        sop__v_set_int(s, "pss_kb", sm->pss_kb);
        sop__v_set_int(s, "pss_anon_kb", sm->pss_anon_kb);
        sop__v_set_int(s, "pss_file_kb", sm->pss_file_kb);
        sop__v_set_int(s, "pss_shmem_kb", sm->pss_shmem_kb);
        sop__v_set_int(s, "shared_clean_kb", sm->shared_clean_kb);
        sop__v_set_int(s, "shared_dirty_kb", sm->shared_dirty_kb);
        sop__v_set_int(s, "private_clean_kb", sm->private_clean_kb);
        sop__v_set_int(s, "private_dirty_kb", sm->private_dirty_kb);
        sop__v_set_int(s, "anonymous_kb", sm->anonymous_kb);
        sop__v_set_int(s, "swap_kb", sm->swap_kb);
        sop__v_set_int(s, "locked_kb", sm->locked_kb);
        sop__v_set_int(o, "private_kb", sum2(sm->private_clean_kb, sm->private_dirty_kb));
        sop__v_set_int(o, "shared_kb", sum2(sm->shared_clean_kb, sm->shared_dirty_kb));
    }

    add_mem(o, p);

    const sop_proc_rates *r = &p->rate;
    sop__v_set_dbl(o, "cpu_pct", r->cpu_pct);
    sop__v_set_dbl(o, "majflt_per_s", r->majflt_per_s);
    sop__v_set_dbl(o, "reaped_cpu_pct", r->reaped_cpu_pct);
    sop__v_set_dbl(o, "rss_growth_kb_per_s", r->rss_growth_kb_per_s);

    if (p->have_sched) {
        sop_value *s = sop__v_obj_at(o, "sched");
        sop__v_set_int(s, "run_ms", ns_ms(p->sched.run_ns));
        sop__v_set_int(s, "wait_ms", ns_ms(p->sched.wait_ns));
        sop__v_set_int(s, "timeslices", p->sched.timeslices);
        sop__v_set_dbl(s, "wait_per_s_ms", r->sched_wait_ms_per_s);
    }

    if (p->have_io) {
        sop_value *s = sop__v_obj_at(o, "io");
        const sop_io *io = &p->io;
        sop__v_set_int(s, "rchar", io->rchar);
        sop__v_set_int(s, "wchar", io->wchar);
        sop__v_set_int(s, "syscr", io->syscr);
        sop__v_set_int(s, "syscw", io->syscw);
        sop__v_set_int(s, "read_bytes", io->read_bytes);
        sop__v_set_int(s, "write_bytes", io->write_bytes);
        sop__v_set_int(s, "cancelled_write_bytes", io->cancelled_write_bytes);
        sop__v_set_dbl(s, "rchar_per_s", r->rchar_per_s);
        sop__v_set_dbl(s, "wchar_per_s", r->wchar_per_s);
        sop__v_set_dbl(s, "syscr_per_s", r->syscr_per_s);
        sop__v_set_dbl(s, "syscw_per_s", r->syscw_per_s);
        sop__v_set_dbl(s, "read_bytes_per_s", r->read_bytes_per_s);
        sop__v_set_dbl(s, "write_bytes_per_s", r->write_bytes_per_s);
        sop__v_set_dbl(s, "mean_read_bytes", r->mean_read_bytes);
        sop__v_set_dbl(s, "mean_write_bytes", r->mean_write_bytes);
    }

    sop__v_set_int(o, "fds", p->fds);
    if (p->have_limits) {
        sop__v_set_int(o, "fd_limit", p->limits.nofile_soft);
        sop__v_set_int(o, "fd_limit_hard", p->limits.nofile_hard);
        sop__v_set_int(o, "memlock_limit_kb", limit_kb(p->limits.memlock_bytes));
        sop__v_set_int(o, "as_limit_kb", limit_kb(p->limits.as_bytes));
        sop__v_set_int(o, "nproc_limit", p->limits.nproc);
    }
    if (p->have_status && (ss->cpus_allowed_list[0] || ss->cpus_allowed_count != SOP_NA)) {
        sop_value *a = sop__v_obj_at(o, "affinity");
        set_text(a, "cpus", ss->cpus_allowed_list);
        sop__v_set_int(a, "count", ss->cpus_allowed_count);
    }
    if (p->have_env)
        add_env(o, &p->env);
    if (p->have_maps) {
        sop_value *libs = sop__v_arr_at(o, "libs");
        for (size_t i = 0; libs && i < p->libs.n && i < SOP_LIBS_MAX; i++) {
            sop_value *l = sop__v_obj();
            if (!l)
                break;
            sop__v_set_str(l, "kind", p->libs.libs[i].kind);
            sop__v_set_str(l, "name", p->libs.libs[i].name);
            set_text(l, "path", p->libs.libs[i].path);
            sop__v_push(libs, l);
        }
    }
}

static void add_threads(sop_value *ev, const sop_thread_list *tl, double tps)
{
    sop_value *arr = sop__v_arr_at(ev, "threads");
    for (size_t i = 0; arr && i < tl->n; i++) {
        const sop_thread *t = &tl->items[i];
        sop_value *o = sop__v_obj();
        if (!o)
            break;
        sop__v_set_int(o, "tid", t->tid);
        set_text(o, "name", t->name);
        set_state(o, t->stat.state, false);
        sop__v_set_dbl(o, "cpu_pct", t->cpu_pct);
        sop__v_set_dbl(o, "wait_pct", t->wait_pct);
        sop__v_set_int(o, "majflt", t->stat.majflt);
        sop__v_set_dbl(o, "majflt_per_s", t->majflt_per_s);
        if (t->have_io) {
            sop__v_set_int(o, "read_bytes", t->io.read_bytes);
            sop__v_set_int(o, "syscr", t->io.syscr);
            sop__v_set_dbl(o, "read_bytes_per_s", t->read_bytes_per_s);
            sop__v_set_dbl(o, "rchar_per_s", t->rchar_per_s);
            sop__v_set_dbl(o, "syscr_per_s", t->syscr_per_s);
        }
        sop__v_set_int(o, "utime_ms", ticks_ms(t->stat.utime_ticks, tps));
        sop__v_set_int(o, "stime_ms", ticks_ms(t->stat.stime_ticks, tps));
        sop__v_set_int(o, "processor", t->stat.processor);
        sop__v_set_int(o, "run_ms", ns_ms(t->sched.run_ns));
        sop__v_set_int(o, "wait_ms", ns_ms(t->sched.wait_ns));
        sop__v_set_int(o, "voluntary_ctxt_switches", t->voluntary_ctxt_switches);
        sop__v_set_int(o, "nonvoluntary_ctxt_switches", t->nonvoluntary_ctxt_switches);
        sop__v_push(arr, o);
    }
}

static sop_value *child_obj(const sop_child *c, bool with_depth, double now)
{
    sop_value *o = sop__v_obj();
    if (!o)
        return NULL;
    sop__v_set_int(o, "pid", c->pid);
    sop__v_set_int(o, "ppid", c->stat.ppid >= 0 ? c->stat.ppid : c->ppid);
    if (with_depth)
        sop__v_set_int(o, "depth", c->depth);
    set_text(o, "comm", c->stat.comm);
    set_text(o, "cmdline", c->cmdline);
    set_state(o, c->stat.state, false);
    sop__v_set_int(o, "threads", first(c->status.threads, c->stat.num_threads));
    sop__v_set_dbl(o, "start_time_s", c->start_time_s);
    if (!isnan(c->start_time_s) && !isnan(now) && now >= c->start_time_s)
        sop__v_set_dbl(o, "age_s", now - c->start_time_s);
    sop__v_set_int(o, "rss_kb", c->status.vm_rss_kb);
    sop__v_set_int(o, "anon_kb", c->status.rss_anon_kb);
    sop__v_set_int(o, "file_kb", c->status.rss_file_kb);
    sop__v_set_int(o, "shmem_kb", c->status.rss_shmem_kb);
    if (c->have_smaps) {
        sop__v_set_int(o, "pss_kb", c->smaps.pss_kb);
        sop__v_set_int(o, "private_kb", sum2(c->smaps.private_clean_kb, c->smaps.private_dirty_kb));
        sop__v_set_int(o, "shared_kb", sum2(c->smaps.shared_clean_kb, c->smaps.shared_dirty_kb));
    }
    sop__v_set_int(o, "swap_kb",
                   first(c->have_smaps ? c->smaps.swap_kb : SOP_NA, c->status.vm_swap_kb));
    sop__v_set_dbl(o, "cpu_pct", c->cpu_pct);
    sop__v_set_dbl(o, "read_bytes_per_s", c->read_bytes_per_s);
    sop__v_set_dbl(o, "rchar_per_s", c->rchar_per_s);
    add_env(o, &c->env);
    return o;
}

static void add_children(sop_value *ev, const char *key, const sop_child_list *cl, bool depth,
                         double now)
{
    sop_value *arr = sop__v_arr_at(ev, key);
    for (size_t i = 0; arr && i < cl->n; i++) {
        sop_value *o = child_obj(&cl->items[i], depth, now);
        if (!o)
            break;
        sop__v_push(arr, o);
    }
}

void sop__bridge_family(sop_value *ev, const sop_child *parent, const sop_child_list *siblings,
                        double now)
{
    if (!ev)
        return;
    if (parent)
        sop__v_set(ev, "parent", child_obj(parent, false, now));
    if (parent && siblings) /* measured: [] when the parent has no other child */
        add_children(ev, "siblings", siblings, false, now);
}

void sop__bridge_proc(sop_value *ev, const sop_proc *p, const sop_thread_list *threads,
                      const sop_child_list *children, double now)
{
    if (!ev)
        return;
    double tps = sop__proc_ticks_per_s();
    if (p)
        add_proc(ev, p, now, tps);
    if (threads)
        add_threads(ev, threads, tps);
    if (children)
        add_children(ev, "children", children, true, now);
}
