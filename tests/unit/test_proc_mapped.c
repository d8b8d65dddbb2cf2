/* test_proc_mapped.c — mapped files (probes/proc_mapped.c): maps and smaps fixture text (data,
 * shared memory, libraries, devices, deleted files, one file in two mappings), the bound on the
 * files kept, cut text, and a live check: a file this test maps and touches shows in its own
 * /proc/self/smaps with its size and resident kB; the bridge's proc.mem keys; the resident kB each
 * file gained between two smaps snapshots (the faulted file). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bridge/bridge.h"
#include "proc.h"
#include "t.h"
#include "value.h"

static const sop_mapped_file *named(const sop_mapped *m, const char *path)
{
    for (size_t i = 0; i < m->n; i++)
        if (strcmp(m->files[i].path, path) == 0)
            return &m->files[i];
    return NULL;
}

static void test_smaps_fixture(void)
{
    char *t = t_slurp("proc/mapped/smaps", NULL);
    sop_mapped m;
    CHECK_EQ_I(sop__parse_mapped(t, &m), 0);
    CHECK(m.resident);
    CHECK(!m.truncated);
    CHECK_EQ_I(m.files_total, 3); /* table.f32, psm_3f2a1b, shard (deleted); no libs, no devices */
    CHECK_EQ_I(m.n, 3);
    /* largest resident first */
    CHECK_EQ_S(m.files[0].path, "/var/tmp/sop_mm/table.f32");
    const sop_mapped_file *f = named(&m, "/var/tmp/sop_mm/table.f32");
    CHECK(f != NULL);
    if (f) {
        CHECK_EQ_S(f->kind, "data");
        CHECK_EQ_I(f->size_kb, 2097152 + 64); /* two mappings of one file, summed */
        CHECK_EQ_I(f->rss_kb, 614400 + 64);
        CHECK_EQ_I(f->vmas, 2);
    }
    f = named(&m, "/dev/shm/psm_3f2a1b");
    CHECK(f != NULL);
    if (f) {
        CHECK_EQ_S(f->kind, "shmem");
        CHECK_EQ_I(f->rss_kb, 65536);
        CHECK_EQ_I(f->pss_kb, 21845);
    }
    CHECK(named(&m, "/data/shard (deleted)") != NULL);
    CHECK(named(&m, "/dev/nvidia0") == NULL);
    CHECK(named(&m, "/usr/bin/python3.11") == NULL); /* executable: a library */
    CHECK_EQ_I(m.data_size_kb, 2097152 + 64 + 1024);
    CHECK_EQ_I(m.data_rss_kb, 614400 + 64);
    CHECK_EQ_I(m.shmem_size_kb, 65536);
    CHECK_EQ_I(m.shmem_rss_kb, 65536);
    CHECK_EQ_I(m.lib_size_kb, 444 + 2740 + 2048 + 64);
    CHECK_EQ_I(m.lib_rss_kb, 444 + 2048 + 1024 + 64);
    CHECK(sop__mapped_big_kb(&m) >= 64 * 1024);
    free(t);
}

static void test_maps_fixture(void)
{
    char *t = t_slurp("proc/mapped/maps", NULL);
    sop_mapped m;
    CHECK_EQ_I(sop__parse_mapped(t, &m), 0);
    CHECK(!m.resident); /* maps has no Rss: sizes only */
    CHECK_EQ_I(m.files_total, 3);
    CHECK_EQ_I(m.data_rss_kb, SOP_NA);
    const sop_mapped_file *f = named(&m, "/var/tmp/sop_mm/table.f32");
    CHECK(f && f->size_kb == 2097152 + 64 && f->rss_kb == SOP_NA);
    /* ordered by size when nothing is resident */
    CHECK_EQ_S(m.files[0].path, "/var/tmp/sop_mm/table.f32");
    free(t);
}

static void test_edges(void)
{
    sop_mapped m;
    CHECK_EQ_I(sop__parse_mapped(NULL, &m), -EINVAL);
    CHECK_EQ_I(sop__parse_mapped("", &m), -ENODATA);
    CHECK_EQ_I(sop__parse_mapped("7f00-7f10 rw-p 00000000 00:00 0 \n", &m), -ENODATA);
    /* cut in the middle of a header and of a field */
    CHECK_EQ_I(
        sop__parse_mapped("7f0000000000-7f0000100000 r--s 00000000 08:01 5 /a/b\nRss:  12", &m), 0);
    CHECK_EQ_I(m.n, 1);
    CHECK_EQ_I(m.files[0].rss_kb, 12);
    CHECK_EQ_I(sop__parse_mapped("7f0000000000-7f00", &m), -ENODATA);
    /* more files than kept: the largest stay, truncated is said */
    char *big = malloc(64 * 128);
    size_t at = 0;
    for (int i = 0; i < 40; i++)
        at += (size_t)snprintf(big + at, 64 * 128 - at, "%x000-%x000 r--p 0 08:01 %d /d/f%02d\n",
                               0x100 + 2 * i, 0x101 + 2 * i + i, 10 + i, i);
    CHECK_EQ_I(sop__parse_mapped(big, &m), 0);
    CHECK_EQ_I(m.files_total, 40);
    CHECK_EQ_I(m.n, SOP_MAPPED_MAX);
    CHECK(m.truncated);
    CHECK_EQ_S(m.files[0].path, "/d/f39"); /* the largest */
    free(big);
}

/* This process maps a 4 MiB file and touches 1 MiB of it: its own smaps shows both. */
static void test_live(void)
{
    char path[] = "/tmp/sop_mapped_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0)
        return;
    size_t size = 4u << 20;
    CHECK_EQ_I(ftruncate(fd, (off_t)size), 0);
    volatile unsigned char *p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
    CHECK(p != MAP_FAILED);
    if (p != MAP_FAILED) {
        unsigned sum = 0;
        for (size_t off = 0; off < (1u << 20); off += 4096)
            sum += p[off];
        CHECK_EQ_I(sum, 0);
        char *text = NULL;
        size_t len = 0;
        CHECK_EQ_I(sop__read_file_at(AT_FDCWD, "/proc/self/smaps", 16u << 20, &text, &len), 0);
        sop_mapped m;
        CHECK_EQ_I(sop__parse_mapped(text, &m), 0);
        const sop_mapped_file *f = named(&m, path);
        CHECK(f != NULL);
        if (f) {
            CHECK_EQ_S(f->kind, "data");
            CHECK_EQ_I(f->size_kb, 4096);
            CHECK(f->rss_kb >= 1024 && f->rss_kb <= 4096); /* fault-around may map a little more */
        }
        free(text);
        /* the collector: proc.mem in the bridge */
        int dfd = open("/proc/self", O_RDONLY | O_DIRECTORY);
        sop_proc *pr = calloc(1, sizeof *pr);
        sop_missing miss = {0};
        CHECK_EQ_I(sop__proc_collect(dfd, getpid(), pr, &miss), 0);
        CHECK(pr->have_mapped);
        CHECK(named(&pr->mapped, path) != NULL);
        sop_value *ev = sop__v_obj();
        sop__bridge_proc(ev, pr, NULL, NULL, 0);
        const sop_value *mem = sop__v_get(sop__v_get(ev, "proc"), "mem");
        CHECK(mem != NULL);
        CHECK(sop__v_get(mem, "anon_kb") != NULL);
        CHECK(sop__v_get(mem, "file_kb") != NULL);
        CHECK(sop__v_get(mem, "mapped") != NULL);
        sop__v_free(ev);
        sop__missing_free(&miss);
        free(pr);
        close(dfd);
        munmap((void *)p, size);
    }
    close(fd);
    unlink(path);
}

/* The faulted file: smaps at the window's start (fixture smaps) and end (smaps_end: the small
 * deleted shard gained 512 kB, the large table.f32 none, the shared buffer lost half). The file
 * named is the one whose pages came in, not the most resident one. */
static void test_growth(void)
{
    char *t0 = t_slurp("proc/mapped/smaps", NULL), *t1 = t_slurp("proc/mapped/smaps_end", NULL);
    char *tm = t_slurp("proc/mapped/maps", NULL);
    sop_mapped *a = calloc(3, sizeof *a), *b = a + 1, *c = a + 2;
    CHECK_EQ_I(sop__parse_mapped(t0, a), 0);
    CHECK_EQ_I(sop__parse_mapped(t1, b), 0);
    CHECK_EQ_I(sop__parse_mapped(tm, c), 0);
    CHECK_EQ_I(named(b, "/data/shard (deleted)")->rss_growth_kb, SOP_NA); /* not yet compared */
    sop__mapped_growth(b, a);
    CHECK_EQ_S(b->files[0].path, "/var/tmp/sop_mm/table.f32"); /* still the most resident */
    CHECK_EQ_I(named(b, "/var/tmp/sop_mm/table.f32")->rss_growth_kb, 0);
    CHECK_EQ_I(named(b, "/data/shard (deleted)")->rss_growth_kb, 512);
    CHECK_EQ_I(named(b, "/dev/shm/psm_3f2a1b")->rss_growth_kb, -32768);
    /* the start read from maps only (no resident figures): no growth */
    sop__mapped_growth(b, c);
    CHECK_EQ_I(named(b, "/data/shard (deleted)")->rss_growth_kb, SOP_NA);
    sop__mapped_growth(b, NULL);
    CHECK_EQ_I(named(b, "/var/tmp/sop_mm/table.f32")->rss_growth_kb, SOP_NA);
    /* a file absent at the start: no growth */
    snprintf(a->files[0].path, sizeof a->files[0].path, "/other");
    sop__mapped_growth(b, a);
    CHECK_EQ_I(named(b, "/var/tmp/sop_mm/table.f32")->rss_growth_kb, SOP_NA);
    CHECK_EQ_I(named(b, "/data/shard (deleted)")->rss_growth_kb, 512);
    /* through the window rates and the bridge (proc.mem.mapped[].rss_growth_kb) */
    sop_proc *p = calloc(2, sizeof *p), *q = p + 1;
    p->mapped = *a;
    p->have_mapped = true;
    snprintf(p->mapped.files[0].path, sizeof p->mapped.files[0].path, "/var/tmp/sop_mm/table.f32");
    q->mapped = *b;
    q->have_mapped = true;
    sop__proc_rates(q, p, 2.0, 100.0);
    CHECK_EQ_I(named(&q->mapped, "/data/shard (deleted)")->rss_growth_kb, 512);
    CHECK_EQ_I(named(&q->mapped, "/var/tmp/sop_mm/table.f32")->rss_growth_kb, 0);
    free(p);
    free(a);
    free(t0);
    free(t1);
    free(tm);
}

/* Window rates on hand-made snapshots: memory growth by kind, a thread's faults and IO. */
static void test_rates(void)
{
    sop_proc *a = calloc(2, sizeof *a), *b = a + 1;
    sop__parse_status(NULL, &a->status);
    sop__parse_stat(NULL, &a->stat);
    a->have_stat = a->have_status = true;
    a->stat.starttime_ticks = 5;
    a->stat.majflt = 100;
    a->status.vm_rss_kb = 1000;
    a->status.rss_anon_kb = 600;
    a->status.rss_file_kb = 400;
    a->status.rss_shmem_kb = 0;
    *b = *a;
    b->stat.majflt = 300;
    b->status.vm_rss_kb = 5000;
    b->status.rss_file_kb = 4400; /* the page cache of a mapped file grew, the heap did not */
    sop__proc_rates(b, a, 2.0, 100.0);
    CHECK(b->rate.majflt_per_s == 100.0);
    CHECK(b->rate.rss_growth_kb_per_s == 2000.0);
    CHECK(b->rate.anon_growth_kb_per_s == 0.0);
    CHECK(b->rate.file_growth_kb_per_s == 2000.0);
    CHECK(b->rate.shmem_growth_kb_per_s == 0.0);
    b->status.rss_anon_kb = SOP_NA;
    sop__proc_rates(b, a, 2.0, 100.0);
    CHECK(isnan(b->rate.anon_growth_kb_per_s)); /* not measured: no rate */
    free(a);

    sop_thread t0 = {0}, t1 = {0};
    t0.tid = t1.tid = 42;
    sop__parse_stat(NULL, &t0.stat);
    sop__parse_io(NULL, &t0.io);
    t0.stat.starttime_ticks = 7;
    t0.stat.majflt = 10;
    t0.io.read_bytes = 0;
    t0.io.rchar = 100;
    t0.io.syscr = 1;
    t0.have_io = true;
    t1 = t0;
    t1.stat.majflt = 30;
    t1.io.read_bytes = 8 << 20;
    t1.io.rchar = 300;
    t1.io.syscr = 3;
    sop_thread_list before = {&t0, 1}, now = {&t1, 1};
    sop__threads_rates(&now, &before, 2.0, 100.0);
    CHECK(t1.majflt_per_s == 10.0);
    CHECK(t1.read_bytes_per_s == (double)(4 << 20));
    CHECK(t1.syscr_per_s == 1.0);
    CHECK(t1.rchar_per_s == 100.0);
    t1.stat.starttime_ticks = 8; /* tid reused by another thread: no rate */
    sop__threads_rates(&now, &before, 2.0, 100.0);
    CHECK(isnan(t1.majflt_per_s) && isnan(t1.read_bytes_per_s));
}

int main(void)
{
    test_rates();
    test_growth();
    test_smaps_fixture();
    test_maps_fixture();
    test_edges();
    test_live();
    return t_done();
}
