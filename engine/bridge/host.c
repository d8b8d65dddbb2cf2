/* host.c (bridge) — adds ev.host: memory, load, CPU split, vm counters, PSI, disks and the
 * kernel log's OOM kills (with age_s = now - time), keys per docs/evidence.md. Objects whose
 * every value is unmeasured are left out. Depends on engine/value.h, probes/host.h, kmsg.h. */
#include <math.h>

#include "bridge.h"

/* Attach `o` under key when it holds anything; free it otherwise. */
static void attach(sop_value *parent, const char *key, sop_value *o)
{
    if (o && o->count > 0)
        sop__v_set(parent, key, o);
    else
        sop__v_free(o);
}

static sop_value *psi_line(const sop_psi_line *l)
{
    if (!l->present)
        return NULL;
    sop_value *o = sop__v_obj();
    if (!o)
        return NULL;
    sop__v_set_dbl(o, "avg10", l->avg10);
    sop__v_set_dbl(o, "avg60", l->avg60);
    sop__v_set_dbl(o, "avg300", l->avg300);
    sop__v_set_int(o, "total_us", l->total_us);
    return o;
}

static void add_psi(sop_value *psi, const char *key, const sop_psi *p)
{
    if (!p->present)
        return;
    sop_value *o = sop__v_obj();
    if (!o)
        return;
    attach(o, "some", psi_line(&p->some));
    attach(o, "full", psi_line(&p->full));
    attach(psi, key, o);
}

static void add_text(sop_value *o, const char *key, const char *s)
{
    if (s && s[0])
        sop__v_set(o, key, sop__bridge_text(s));
}

static void add_disks(sop_value *host, const sop_host *h)
{
    if (h->ndisks == 0)
        return;
    sop_value *arr = sop__v_arr_at(host, "disks");
    for (size_t i = 0; arr && i < h->ndisks && i < SOP_DISKS_MAX; i++) {
        const sop_disk *d = &h->disks[i];
        sop_value *o = sop__v_obj();
        if (!o)
            return;
        add_text(o, "name", d->name);
        sop__v_set_int(o, "reads", d->reads);
        sop__v_set_int(o, "writes", d->writes);
        sop__v_set_int(o, "read_kb", d->read_sectors == SOP_NA ? SOP_NA : d->read_sectors / 2);
        sop__v_set_int(o, "written_kb", d->write_sectors == SOP_NA ? SOP_NA : d->write_sectors / 2);
        sop__v_set_int(o, "io_ms", d->io_ms);
        sop__v_set_dbl(o, "util_pct", d->util_pct);
        sop__v_set_dbl(o, "r_await_ms", d->r_await_ms);
        sop__v_set_dbl(o, "w_await_ms", d->w_await_ms);
        sop__v_set_dbl(o, "read_kb_per_s", d->read_kb_per_s);
        sop__v_set_dbl(o, "write_kb_per_s", d->write_kb_per_s);
        sop__v_set_dbl(o, "reads_per_s", d->reads_per_s);
        sop__v_set_dbl(o, "writes_per_s", d->writes_per_s);
        sop__v_push(arr, o);
    }
}

static void add_ooms(sop_value *host, const sop_oom_list *ooms, double now)
{
    /* always an array when the log was read: an empty list is evidence ("no kill seen") */
    sop_value *arr = sop__v_arr_at(host, "oom_kills");
    for (size_t i = 0; arr && i < ooms->n && i < SOP_OOM_MAX; i++) {
        const sop_oom *k = &ooms->items[i];
        sop_value *o = sop__v_obj();
        if (!o)
            return;
        if (k->pid > 0)
            sop__v_set_int(o, "pid", k->pid);
        add_text(o, "comm", k->comm);
        sop__v_set_int(o, "anon_rss_kb", k->anon_rss_kb);
        sop__v_set_int(o, "file_rss_kb", k->file_rss_kb);
        sop__v_set_int(o, "shmem_rss_kb", k->shmem_rss_kb);
        sop__v_set_int(o, "total_vm_kb", k->total_vm_kb);
        sop__v_set_int(o, "pgtables_kb", k->pgtables_kb);
        sop__v_set_int(o, "uid", k->uid);
        sop__v_set_int(o, "oom_score_adj", k->oom_score_adj);
        add_text(o, "constraint", k->constraint);
        add_text(o, "task_memcg", k->task_memcg);
        add_text(o, "oom_memcg", k->oom_memcg);
        add_text(o, "invoker", k->invoker);
        sop__v_set_dbl(o, "time", k->time);
        if (isfinite(k->time) && isfinite(now))
            sop__v_set_dbl(o, "age_s", now - k->time);
        sop__v_set_dbl(o, "uptime_s", k->uptime_s);
        sop__v_push(arr, o);
    }
}

void sop__bridge_host(sop_value *ev, const sop_host *h, const sop_oom_list *ooms, double now)
{
    sop_value *host = sop__v_obj_at(ev, "host");
    if (!host)
        return;
    if (h) {
        sop__v_set_int(host, "ncpu", h->ncpu);
        sop__v_set_int(host, "mem_total_kb", h->mem_total_kb);
        sop__v_set_int(host, "mem_free_kb", h->mem_free_kb);
        sop__v_set_int(host, "mem_available_kb", h->mem_available_kb);
        sop__v_set_int(host, "cached_kb", h->cached_kb);
        sop__v_set_int(host, "dirty_kb", h->dirty_kb);
        sop__v_set_int(host, "writeback_kb", h->writeback_kb);
        sop__v_set_int(host, "swap_total_kb", h->swap_total_kb);
        sop__v_set_int(host, "swap_free_kb", h->swap_free_kb);
        sop__v_set_int(host, "shmem_kb", h->shmem_kb);
        sop__v_set_int(host, "mlocked_kb", h->mlocked_kb);
        sop__v_set_int(host, "hugepages_total", h->hugepages_total);
        sop__v_set_int(host, "hugepages_free", h->hugepages_free);
        sop__v_set_dbl(host, "load1", h->load1);
        sop__v_set_dbl(host, "load5", h->load5);
        sop__v_set_dbl(host, "load15", h->load15);
        sop__v_set_int(host, "procs_running", h->procs_running);
        sop__v_set_int(host, "procs_blocked", h->procs_blocked);
        sop__v_set_int(host, "processes", h->processes);
        sop__v_set_dbl(host, "forks_per_s", h->forks_per_s);
        sop__v_set_dbl(host, "boot_time", h->btime);

        sop_value *cpu = sop__v_obj();
        if (cpu) {
            sop__v_set_dbl(cpu, "user_pct", h->cpu_user_pct);
            sop__v_set_dbl(cpu, "system_pct", h->cpu_system_pct);
            sop__v_set_dbl(cpu, "iowait_pct", h->cpu_iowait_pct);
            sop__v_set_dbl(cpu, "idle_pct", h->cpu_idle_pct);
            sop__v_set_dbl(cpu, "steal_pct", h->cpu_steal_pct);
        }
        attach(host, "cpu", cpu);

        sop_value *vm = sop__v_obj();
        if (vm) {
            sop__v_set_int(vm, "pswpin", h->pswpin);
            sop__v_set_int(vm, "pswpout", h->pswpout);
            sop__v_set_int(vm, "pgfault", h->pgfault);
            sop__v_set_int(vm, "pgmajfault", h->pgmajfault);
            sop__v_set_dbl(vm, "swap_in_per_s", h->swap_in_per_s);
            sop__v_set_dbl(vm, "swap_out_per_s", h->swap_out_per_s);
            sop__v_set_dbl(vm, "pgmajfault_per_s", h->pgmajfault_per_s);
        }
        attach(host, "vm", vm);

        sop_value *psi = sop__v_obj();
        if (psi) {
            add_psi(psi, "cpu", &h->psi_cpu);
            add_psi(psi, "memory", &h->psi_memory);
            add_psi(psi, "io", &h->psi_io);
        }
        attach(host, "psi", psi);
        add_disks(host, h);
    }
    if (ooms && ooms->read_ok)
        add_ooms(host, ooms, now);
}
