/* test_bridge_golden_proc.c — the proc bridge (`proc`, `threads`, `children`, `parent`,
 * `siblings`) gives, for fixed structs (unmeasured fields, window or none, files not read whose
 * struct still holds figures, invalid UTF-8 in comm/cmdline/paths/env, empty lists, mapped files
 * with and without smaps figures, lists present and absent), the exact JSON it gave before its
 * keys became schema tables (engine/bridge/schema.h): same keys, order and values.
 * SOP_GOLDEN_PRINT=1 prints what the bridge gives now as C strings. Depends on engine/bridge,
 * engine/core/json.c, probes/proc.h, t.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bridge/bridge.h"
#include "json.h"
#include "t.h"

static const char *const expected[] = {
    "{\"proc\":{\"pid\":100,\"ppid\":42,\"comm\":\"py\xef"
    "\xbf"
    "\xbd"
    "\",\"state\":\"S\",\"state_name\":\"sleeping\",\"nice\":0,\"priority\":20,\"utime_ms\":2500,"
    "\"stime_ms\":510,\"reaped_cpu_ms\":150,\"minflt\":1000,\"majflt\":3,\"cmdline\":\"python3 "
    "train.py --x \xef"
    "\xbf"
    "\xbd"
    "(\",\"exe\":\"/usr/bin/python3\xef"
    "\xbf"
    "\xbd"
    "\xef"
    "\xbf"
    "\xbd"
    "\",\"cwd\":\"/home/\xef"
    "\xbf"
    "\xbd"
    "\",\"threads\":3,\"start_time_s\":1000.5,\"age_s\":999.5,\"vm_size_kb\":800,\"vm_peak_kb\":"
    "900,\"rss_kb\":600,\"vm_hwm_kb\":700,\"anon_kb\":400,\"file_kb\":150,\"shmem_kb\":50,\"swap_"
    "kb\":0,\"vm_lck_kb\":0,\"vm_pin_kb\":1,\"voluntary_ctxt_switches\":11,\"nonvoluntary_ctxt_"
    "switches\":12,\"smaps\":{\"rss_kb\":600,\"pss_kb\":500,\"pss_anon_kb\":390,\"pss_file_kb\":80,"
    "\"pss_shmem_kb\":30,\"shared_clean_kb\":100,\"private_clean_kb\":20,\"private_dirty_kb\":380,"
    "\"anonymous_kb\":400,\"swap_kb\":7,\"locked_kb\":0},\"private_kb\":400,\"mem\":{\"rss_kb\":"
    "600,\"anon_kb\":400,\"file_kb\":150,\"shmem_kb\":50,\"swap_kb\":0,\"pss_anon_kb\":390,\"pss_"
    "file_kb\":80,\"pss_shmem_kb\":30,\"anon_growth_kb_per_s\":1.5,\"file_growth_kb_per_s\":-4,"
    "\"shmem_growth_kb_per_s\":0,\"mapped_data_size_kb\":2048,\"mapped_data_rss_kb\":1024,\"mapped_"
    "shmem_size_kb\":64,\"mapped_shmem_rss_kb\":0,\"mapped_lib_size_kb\":9000,\"mapped_files_"
    "total\":5,\"mapped_resident\":true,\"mapped_truncated\":true,\"mapped\":[{\"path\":\"/data/"
    "x.npy\xef"
    "\xbf"
    "\xbd"
    "\",\"kind\":\"data\",\"size_kb\":2048,\"rss_kb\":1024,\"pss_kb\":1000,\"swap_kb\":0,\"vmas\":"
    "2,\"rss_growth_kb\":-12},{\"path\":\"/dev/shm/"
    "w\",\"kind\":\"shmem\",\"size_kb\":64,\"vmas\":1}]},\"cpu_pct\":150.25,\"majflt_per_s\":0,"
    "\"minflt_per_s\":40.5,"
    "\"reaped_cpu_pct\":3,\"rss_growth_kb_per_s\":-2.5,\"threads_start\":2,\"threads_growth_per_"
    "s\":0.5,\"sched\":{\"run_ms\":2500,\"wait_ms\":1,"
    "\"timeslices\":77,\"wait_per_s_ms\":12.5},\"io\":{\"rchar\":4096,\"wchar\":2048,\"syscr\":10,"
    "\"syscw\":5,\"read_bytes\":0,\"write_bytes\":512,\"rchar_per_s\":100,\"wchar_per_s\":50,"
    "\"syscr_per_s\":2,\"syscw_per_s\":1,\"read_bytes_per_s\":0,\"write_bytes_per_s\":8,\"mean_"
    "read_bytes\":50},\"fds\":17,\"fd_limit\":1024,\"fd_limit_hard\":4096,\"memlock_limit_kb\":-1,"
    "\"as_limit_kb\":3072,\"nproc_limit\":-1,\"affinity\":{\"cpus\":\"0-3,8\",\"count\":5},\"env\":"
    "{\"OMP_NUM_THREADS\":\"4\",\"MALLOC_ARENA_MAX\":\"\",\"PYTHONPATH\":\"/a\xef"
    "\xbf"
    "\xbd"
    "\"},\"libs\":[{\"kind\":\"blas\",\"name\":\"libopenblas\",\"path\":\"/usr/lib/"
    "libopenblas.so\xef"
    "\xbf"
    "\xbd"
    "\"},{\"kind\":\"python\",\"name\":\"libpython3.11\"}]},\"threads\":[{\"tid\":100,\"name\":"
    "\"python3\",\"state\":\"R\",\"cpu_pct\":99.5,\"sys_pct\":2.5,\"wait_pct\":0.5,\"majflt\":2,"
    "\"majflt_per_s\":0."
    "25,\"read_bytes\":8192,\"syscr\":3,\"read_bytes_per_s\":100,\"syscr_per_s\":1,\"utime_ms\":"
    "1200,\"stime_ms\":30,\"processor\":1,\"run_ms\":1,\"wait_ms\":0,\"voluntary_ctxt_switches\":4,"
    "\"nonvoluntary_ctxt_switches\":0},{\"tid\":101,\"name\":\"pt_\xef"
    "\xbf"
    "\xbd"
    "\",\"state\":\"D\"}],\"children\":[{\"pid\":500,\"ppid\":100,\"depth\":1,\"comm\":\"worker\xef"
    "\xbf"
    "\xbd"
    "\",\"cmdline\":\"python3 -c from multiprocessing.spawn import "
    "spawn_main\",\"state\":\"S\",\"threads\":3,\"start_time_s\":1900,\"age_s\":100,\"rss_kb\":600,"
    "\"anon_kb\":400,\"file_kb\":150,\"shmem_kb\":50,\"pss_kb\":500,\"private_kb\":400,\"swap_kb\":"
    "7,\"cpu_pct\":12,\"read_bytes_per_s\":0,\"rchar_per_s\":4096,\"env\":{\"TOKENIZERS_"
    "PARALLELISM\":\"false\",\"X\":\"\xef"
    "\xbf"
    "\xbd"
    "\"}},{\"pid\":501,\"ppid\":500,\"depth\":2,\"start_time_s\":2500,\"anon_kb\":1,\"swap_kb\":3,"
    "\"env\":{}}],\"parent\":{\"pid\":42,\"ppid\":1,\"comm\":\"bash\",\"threads\":1,\"rss_kb\":4,"
    "\"env\":{}},\"siblings\":[]}",
    "{\"proc\":{\"pid\":200,\"threads\":4,\"mem\":{}},\"threads\":[]}",
    "{\"proc\":{\"pid\":300,\"state\":\"Q\",\"stime_ms\":10,\"threads\":2,\"start_time_s\":5000,"
    "\"rss_kb\":10,\"mem\":{\"rss_kb\":10,\"mapped_data_size_kb\":8,\"mapped_files_total\":3,"
    "\"mapped_resident\":false,\"mapped_truncated\":false,\"mapped\":[{\"path\":\"/m\xef"
    "\xbf"
    "\xbd"
    "\xef"
    "\xbf"
    "\xbd"
    "\xef"
    "\xbf"
    "\xbd"
    "\",\"kind\":\"data\",\"size_kb\":8,\"vmas\":1}]},\"sched\":{\"wait_per_s_ms\":0},\"io\":{},"
    "\"memlock_limit_kb\":-1,\"as_limit_kb\":2,\"nproc_limit\":7,\"env\":{},\"libs\":[]},"
    "\"children\":[],\"parent\":{\"pid\":42,\"ppid\":1,\"comm\":\"bash\",\"threads\":1,\"rss_kb\":"
    "4,\"env\":{}}}",
    "{\"proc\":{\"pid\":400,\"ppid\":0,\"state\":\"\xef"
    "\xbf"
    "\xbd"
    "\",\"start_time_s\":1500,\"age_s\":500,\"mem\":{},\"affinity\":{\"count\":2}}}",
    "{\"threads\":[{\"tid\":100,\"name\":\"python3\",\"state\":\"R\",\"cpu_pct\":99.5,\"sys_pct\":"
    "2.5,\"wait_pct\":"
    "0.5,\"majflt\":2,\"majflt_per_s\":0.25,\"read_bytes\":8192,\"syscr\":3,\"read_bytes_per_s\":"
    "100,\"syscr_per_s\":1,\"utime_ms\":1200,\"stime_ms\":30,\"processor\":1,\"run_ms\":1,\"wait_"
    "ms\":0,\"voluntary_ctxt_switches\":4,\"nonvoluntary_ctxt_switches\":0},{\"tid\":101,\"name\":"
    "\"pt_\xef"
    "\xbf"
    "\xbd"
    "\",\"state\":\"D\"}],\"children\":[{\"pid\":500,\"ppid\":100,\"depth\":1,\"comm\":\"worker\xef"
    "\xbf"
    "\xbd"
    "\",\"cmdline\":\"python3 -c from multiprocessing.spawn import "
    "spawn_main\",\"state\":\"S\",\"threads\":3,\"start_time_s\":1900,\"rss_kb\":600,\"anon_kb\":"
    "400,\"file_kb\":150,\"shmem_kb\":50,\"pss_kb\":500,\"private_kb\":400,\"swap_kb\":7,\"cpu_"
    "pct\":12,\"read_bytes_per_s\":0,\"rchar_per_s\":4096,\"env\":{\"TOKENIZERS_PARALLELISM\":"
    "\"false\",\"X\":\"\xef"
    "\xbf"
    "\xbd"
    "\"}},{\"pid\":501,\"ppid\":500,\"depth\":2,\"start_time_s\":2500,\"anon_kb\":1,\"swap_kb\":3,"
    "\"env\":{}}],\"parent\":{\"pid\":501,\"ppid\":500,\"start_time_s\":2500,\"anon_kb\":1,\"swap_"
    "kb\":3,\"env\":{}},\"siblings\":[{\"pid\":500,\"ppid\":100,\"comm\":\"worker\xef"
    "\xbf"
    "\xbd"
    "\",\"cmdline\":\"python3 -c from multiprocessing.spawn import "
    "spawn_main\",\"state\":\"S\",\"threads\":3,\"start_time_s\":1900,\"rss_kb\":600,\"anon_kb\":"
    "400,\"file_kb\":150,\"shmem_kb\":50,\"pss_kb\":500,\"private_kb\":400,\"swap_kb\":7,\"read_"
    "bytes_per_s\":0,\"rchar_per_s\":4096,\"env\":{\"TOKENIZERS_PARALLELISM\":\"false\",\"X\":"
    "\"\xef"
    "\xbf"
    "\xbd"
    "\"}}]}",
    "{}",
};
static size_t seen;
static bool print_mode;

static void print_c(const char *s)
{
    fputs("    \"", stdout);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\')
            printf("\\%c", *c);
        else if (*c < 0x20 || *c >= 0x7f)
            printf("\\x%02x\" \"", *c);
        else
            putchar(*c);
    }
    fputs("\",\n", stdout);
}

static void out(sop_value *ev)
{
    char *s = sop__json_print(ev, 0);
    if (print_mode && s) {
        print_c(s);
    } else {
        CHECK(seen < sizeof expected / sizeof expected[0]);
        if (s && seen < sizeof expected / sizeof expected[0])
            CHECK_EQ_S(s, expected[seen]);
    }
    seen++;
    free(s);
    sop__v_free(ev);
}

/* Every field "not measured", as the probes start (probes/proc_collect.c proc_init). */
static void proc_blank(sop_proc *p, int pid)
{
    memset(p, 0, sizeof *p);
    p->pid = pid;
    sop__parse_stat(NULL, &p->stat);
    sop__parse_status(NULL, &p->status);
    sop__parse_smaps_rollup(NULL, &p->smaps);
    sop__parse_io(NULL, &p->io);
    sop__parse_limits(NULL, &p->limits);
    sop__parse_schedstat(NULL, &p->sched);
    p->fds = SOP_NA;
    p->heaps.heaps = p->heaps.rw_kb = p->heaps.reserved_kb = SOP_NA;
    sop__mapped_init(&p->mapped);
    p->start_time_s = NAN;
    sop_proc_rates *r = &p->rate;
    r->cpu_pct = r->majflt_per_s = r->rss_growth_kb_per_s = r->minflt_per_s = NAN;
    r->rchar_per_s = r->wchar_per_s = r->syscr_per_s = r->syscw_per_s = NAN;
    r->read_bytes_per_s = r->write_bytes_per_s = NAN;
    r->mean_read_bytes = r->mean_write_bytes = r->sched_wait_ms_per_s = NAN;
    r->anon_growth_kb_per_s = r->file_growth_kb_per_s = r->shmem_growth_kb_per_s = NAN;
    r->reaped_cpu_pct = NAN;
    r->threads_growth_per_s = r->fds_growth_per_s = NAN;
    r->threads_start = r->fds_start = SOP_NA;
}

static void thread_blank(sop_thread *t, int tid)
{
    memset(t, 0, sizeof *t);
    t->tid = tid;
    sop__parse_stat(NULL, &t->stat);
    sop__parse_schedstat(NULL, &t->sched);
    sop__parse_io(NULL, &t->io);
    t->voluntary_ctxt_switches = t->nonvoluntary_ctxt_switches = SOP_NA;
    t->cpu_pct = t->majflt_per_s = t->read_bytes_per_s = t->rchar_per_s = NAN;
    t->syscr_per_s = t->wait_pct = t->sys_pct = NAN;
}

static void child_blank(sop_child *c, int pid, int ppid, int depth)
{
    memset(c, 0, sizeof *c);
    c->pid = pid;
    c->ppid = ppid;
    c->depth = depth;
    sop__parse_stat(NULL, &c->stat);
    sop__parse_status(NULL, &c->status);
    sop__parse_smaps_rollup(NULL, &c->smaps);
    sop__parse_io(NULL, &c->io);
    c->cpu_pct = c->read_bytes_per_s = c->rchar_per_s = c->start_time_s = NAN;
}

static void status_fill(sop_status *s)
{
    s->vm_peak_kb = 900;
    s->vm_size_kb = 800;
    s->vm_lck_kb = 0;
    s->vm_pin_kb = 1;
    s->vm_hwm_kb = 700;
    s->vm_rss_kb = 600;
    s->rss_anon_kb = 400;
    s->rss_file_kb = 150;
    s->rss_shmem_kb = 50;
    s->vm_swap_kb = 0;
    s->threads = 3;
    s->voluntary_ctxt_switches = 11;
    s->nonvoluntary_ctxt_switches = 12;
}

static void smaps_fill(sop_smaps *m)
{
    m->rss_kb = 600;
    m->pss_kb = 500;
    m->pss_anon_kb = 390;
    m->pss_file_kb = 80;
    m->pss_shmem_kb = 30;
    m->shared_clean_kb = 100;
    m->shared_dirty_kb = SOP_NA;
    m->private_clean_kb = 20;
    m->private_dirty_kb = 380;
    m->anonymous_kb = 400;
    m->swap_kb = 7;
    m->locked_kb = 0;
}

static void env_add(sop_env *e, const char *name, const char *value)
{
    snprintf(e->vars[e->n].name, sizeof e->vars[e->n].name, "%s", name);
    snprintf(e->vars[e->n].value, sizeof e->vars[e->n].value, "%s", value);
    e->n++;
}

/* Everything read, over a window; text with invalid UTF-8. */
static void proc_full(sop_proc *p)
{
    proc_blank(p, 100);
    p->have_stat = p->have_status = p->have_smaps = p->have_io = p->have_limits = true;
    p->have_sched = p->have_env = p->have_maps = p->have_mapped = true;
    sop_stat *st = &p->stat;
    st->pid = 100;
    st->ppid = 42;
    strcpy(st->comm, "py\xff");
    st->state = 'S';
    st->minflt = 1000;
    st->majflt = 3;
    st->utime_ticks = 250;
    st->stime_ticks = 51;
    st->cutime_ticks = 10;
    st->cstime_ticks = 5;
    st->priority = 20;
    st->nice = 0;
    st->num_threads = 9; /* status.threads wins */
    strcpy(p->cmdline, "python3 train.py --x \xc3(");
    strcpy(p->exe, "/usr/bin/python3\xe2\x82");
    strcpy(p->cwd, "/home/\xfe");
    status_fill(&p->status);
    strcpy(p->status.cpus_allowed_list, "0-3,8");
    p->status.cpus_allowed_count = 5;
    smaps_fill(&p->smaps);
    p->io = (sop_io){4096, 2048, 10, 5, 0, 512, SOP_NA};
    p->limits = (sop_limits){1024, 4096, -1, 3 * 1024 * 1024 + 100, -1};
    p->sched = (sop_schedstat){2500000000LL, 1999999, 77};
    env_add(&p->env, "OMP_NUM_THREADS", "4");
    env_add(&p->env, "MALLOC_ARENA_MAX", "");
    env_add(&p->env, "PYTHONPATH", "/a\xff");
    p->libs.n = 2;
    strcpy(p->libs.libs[0].kind, "blas");
    strcpy(p->libs.libs[0].name, "libopenblas");
    strcpy(p->libs.libs[0].path, "/usr/lib/libopenblas.so\xc0");
    strcpy(p->libs.libs[1].kind, "python");
    strcpy(p->libs.libs[1].name, "libpython3.11");
    sop_mapped *m = &p->mapped;
    m->n = 2;
    m->files_total = 5;
    m->data_size_kb = 2048;
    m->data_rss_kb = 1024;
    m->shmem_size_kb = 64;
    m->shmem_rss_kb = 0;
    m->lib_size_kb = 9000;
    m->lib_rss_kb = SOP_NA;
    m->resident = true;
    m->truncated = true;
    strcpy(m->files[0].path, "/data/x.npy\xff");
    strcpy(m->files[0].kind, "data");
    m->files[0].size_kb = 2048;
    m->files[0].rss_kb = 1024;
    m->files[0].pss_kb = 1000;
    m->files[0].swap_kb = 0;
    m->files[0].vmas = 2;
    m->files[0].rss_growth_kb = -12;
    strcpy(m->files[1].path, "/dev/shm/w");
    strcpy(m->files[1].kind, "shmem");
    m->files[1].size_kb = 64;
    m->files[1].rss_kb = m->files[1].pss_kb = m->files[1].swap_kb = SOP_NA;
    m->files[1].vmas = 1;
    m->files[1].rss_growth_kb = SOP_NA;
    p->fds = 17;
    p->start_time_s = 1000.5;
    sop_proc_rates *r = &p->rate;
    r->cpu_pct = 150.25;
    r->majflt_per_s = 0;
    r->minflt_per_s = 40.5;
    r->rss_growth_kb_per_s = -2.5;
    r->threads_start = 2;
    r->threads_growth_per_s = 0.5;
    r->anon_growth_kb_per_s = 1.5;
    r->file_growth_kb_per_s = -4;
    r->shmem_growth_kb_per_s = 0;
    r->rchar_per_s = 100;
    r->wchar_per_s = 50;
    r->syscr_per_s = 2;
    r->syscw_per_s = 1;
    r->read_bytes_per_s = 0;
    r->write_bytes_per_s = 8;
    r->mean_read_bytes = 50;
    r->mean_write_bytes = NAN;
    r->sched_wait_ms_per_s = 12.5;
    r->reaped_cpu_pct = 3;
}

/* Files not read whose structs hold figures anyway: none of them may show. */
static void proc_unread(sop_proc *p)
{
    proc_blank(p, 200);
    p->stat.ppid = 5;
    strcpy(p->stat.comm, "ghost");
    p->stat.state = 'R';
    p->stat.nice = 3;
    p->stat.majflt = 5;
    p->stat.utime_ticks = 100;
    p->stat.cutime_ticks = p->stat.cstime_ticks = 1;
    p->stat.num_threads = 4;
    smaps_fill(&p->smaps);
    p->io.rchar = 9;
    p->limits.nofile_soft = 10;
    p->limits.memlock_bytes = 4096;
    p->sched.run_ns = 5000000;
    p->sched.timeslices = 2;
    strcpy(p->status.cpus_allowed_list, "0");
    p->status.cpus_allowed_count = 1;
    env_add(&p->env, "OMP_NUM_THREADS", "1");
    p->libs.n = 1;
    strcpy(p->libs.libs[0].kind, "cuda");
    strcpy(p->libs.libs[0].name, "libcuda");
    p->mapped.n = 1;
    p->mapped.files_total = 1;
    p->mapped.data_size_kb = 4;
    strcpy(p->mapped.files[0].path, "/f");
    strcpy(p->mapped.files[0].kind, "data");
    p->mapped.files[0].size_kb = 4;
    p->rate.sched_wait_ms_per_s = 1;
    p->rate.rchar_per_s = 1;
}

/* Some files read, with edge values: unknown state letter, no ppid, one of cutime/cstime,
 * unlimited and NA limits, empty env and libs, mapped files without smaps figures. */
static void proc_partial(sop_proc *p)
{
    proc_blank(p, 300);
    p->have_stat = p->have_status = p->have_io = p->have_limits = p->have_sched = true;
    p->have_env = p->have_maps = p->have_mapped = true;
    p->stat.ppid = -1;
    p->stat.state = 'Q';
    p->stat.cstime_ticks = 5;
    p->stat.stime_ticks = 1;
    p->stat.num_threads = 2; /* status.threads unmeasured: stat's count */
    p->status.vm_rss_kb = 10;
    p->limits.memlock_bytes = -1;
    p->limits.as_bytes = 2048;
    p->limits.nproc = 7;
    p->mapped.n = 1;
    p->mapped.files_total = 3;
    p->mapped.data_size_kb = 8;
    p->mapped.truncated = false;
    strcpy(p->mapped.files[0].path, "/m\xed\xa0\x80");
    strcpy(p->mapped.files[0].kind, "data");
    p->mapped.files[0].size_kb = 8;
    p->mapped.files[0].rss_kb = p->mapped.files[0].pss_kb = p->mapped.files[0].swap_kb = SOP_NA;
    p->mapped.files[0].rss_growth_kb = SOP_NA;
    p->mapped.files[0].vmas = 1;
    p->start_time_s = 5000; /* after now: no age */
    p->rate.sched_wait_ms_per_s = 0;
}

/* Status read: affinity count without a list; state letter not UTF-8. */
static void proc_affinity(sop_proc *p)
{
    proc_blank(p, 400);
    p->have_stat = p->have_status = true;
    p->stat.state = (char)0xff;
    p->stat.ppid = 0;
    p->status.cpus_allowed_count = 2;
    p->start_time_s = 1500;
}

static void threads_fill(sop_thread *th)
{
    thread_blank(&th[0], 100);
    strcpy(th[0].name, "python3");
    th[0].stat.state = 'R';
    th[0].stat.majflt = 2;
    th[0].stat.utime_ticks = 120;
    th[0].stat.stime_ticks = 3;
    th[0].stat.processor = 1;
    th[0].sched = (sop_schedstat){1500000, 999999, 3};
    th[0].voluntary_ctxt_switches = 4;
    th[0].nonvoluntary_ctxt_switches = 0;
    th[0].cpu_pct = 99.5;
    th[0].sys_pct = 2.5;
    th[0].wait_pct = 0.5;
    th[0].majflt_per_s = 0.25;
    th[0].have_io = true;
    th[0].io.read_bytes = 8192;
    th[0].io.syscr = 3;
    th[0].io.rchar = 77; /* not a thread key */
    th[0].read_bytes_per_s = 100;
    th[0].rchar_per_s = NAN;
    th[0].syscr_per_s = 1;
    thread_blank(&th[1], 101);
    strcpy(th[1].name, "pt_\xff");
    th[1].stat.state = 'D';
    th[1].io.read_bytes = 5; /* io not read */
    th[1].read_bytes_per_s = 5;
    th[1].syscr_per_s = 5;
    th[1].rchar_per_s = 5;
}

static void child_worker(sop_child *c)
{
    child_blank(c, 500, 100, 1);
    c->stat.ppid = 100;
    strcpy(c->stat.comm, "worker\xc3");
    strcpy(c->cmdline, "python3 -c from multiprocessing.spawn import spawn_main");
    c->stat.state = 'S';
    status_fill(&c->status);
    c->have_smaps = true;
    smaps_fill(&c->smaps);
    c->cpu_pct = 12;
    c->read_bytes_per_s = 0;
    c->rchar_per_s = 4096;
    c->start_time_s = 1900;
    env_add(&c->env, "TOKENIZERS_PARALLELISM", "false");
    env_add(&c->env, "X", "\xff");
}

static void children_fill(sop_child *ch)
{
    child_worker(&ch[0]);
    child_blank(&ch[1], 501, 500, 2);
    ch[1].stat.ppid = -1; /* stat unread: ppid from the walk */
    ch[1].status.vm_swap_kb = 3;
    ch[1].status.rss_anon_kb = 1;
    ch[1].smaps.swap_kb = 9; /* smaps not read: status's swap */
    ch[1].smaps.pss_kb = 9;
    ch[1].start_time_s = 2500;
}

static void run(void)
{
    static sop_proc p;
    static sop_thread th[2];
    static sop_child ch[2], parent, sib[1];
    const double now = 2000;

    /* 0: everything, window; threads, children, parent and no sibling ([]) */
    proc_full(&p);
    threads_fill(th);
    children_fill(ch);
    sop_thread_list tl = {th, 2};
    sop_child_list cl = {ch, 2, SOP_NA, SOP_NA, SOP_NA, NAN},
                   none = {sib, 0, SOP_NA, SOP_NA, SOP_NA, NAN},
                   sl = {sib, 1, SOP_NA, SOP_NA, SOP_NA, NAN};
    child_blank(&parent, 42, 1, 0);
    strcpy(parent.stat.comm, "bash");
    parent.stat.ppid = 1;
    parent.status.threads = 1;
    parent.status.vm_rss_kb = 4;
    sop_value *ev = sop__v_obj();
    sop__bridge_proc(ev, &p, &tl, &cl, now);
    sop__bridge_family(ev, &parent, &none, now);
    out(ev);

    /* 1: nothing read, no window; empty thread list; no children list; siblings without a
     * parent */
    proc_unread(&p);
    child_blank(&sib[0], 43, 42, 0);
    tl.n = 0;
    ev = sop__v_obj();
    sop__bridge_proc(ev, &p, &tl, NULL, now);
    sop__bridge_family(ev, NULL, &sl, now);
    out(ev);

    /* 2: some files read; no thread list; empty children; a parent, siblings not read */
    proc_partial(&p);
    ev = sop__v_obj();
    sop__bridge_proc(ev, &p, NULL, &none, now);
    sop__bridge_family(ev, &parent, NULL, now);
    out(ev);

    /* 3: affinity count only */
    proc_affinity(&p);
    ev = sop__v_obj();
    sop__bridge_proc(ev, &p, NULL, NULL, now);
    sop__bridge_family(ev, NULL, NULL, now);
    out(ev);

    /* 4: no proc; threads and children; a parent with one sibling (smaps read, no window) */
    threads_fill(th);
    tl.n = 2;
    child_worker(&sib[0]);
    sib[0].cpu_pct = NAN;
    sib[0].depth = 3; /* siblings have no depth */
    ev = sop__v_obj();
    sop__bridge_proc(ev, NULL, &tl, &cl, NAN);
    sop__bridge_family(ev, &ch[1], &sl, NAN);
    out(ev);

    /* 5: nothing at all */
    ev = sop__v_obj();
    sop__bridge_proc(ev, NULL, NULL, NULL, now);
    sop__bridge_family(ev, NULL, NULL, now);
    out(ev);
    sop__bridge_proc(NULL, &p, &tl, &cl, now); /* no tree: nothing to do, no crash */
    sop__bridge_family(NULL, &parent, &sl, now);
}

int main(void)
{
    print_mode = getenv("SOP_GOLDEN_PRINT") != NULL;
    run();
    if (print_mode)
        return 0;
    CHECK_EQ_I(seen, sizeof expected / sizeof expected[0]);
    return t_done();
}
