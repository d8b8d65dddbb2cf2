/* collect_block.c — the evidence group `block`, in one file: the request queue of each whole
 * disk in host.disks[] (those with IO since boot) as /sys/block/NAME/queue sets it: the I/O
 * scheduler (SOP §7.1: mq-deadline for a spinning disk, none or kyber for NVMe), whether the
 * kernel takes the disk for a spinning one, the read-ahead that fills the page cache ahead of a
 * sequential reader, the queue depth and the largest request. Settings, not rates: read once,
 * at the window's end, from the disks the last snapshot lists. The reader, the rows and the
 * provider. Depends on probes/host.h (the disks), probes/procfs.h, bridge/schema.h,
 * provider.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../probes/host.h"
#include "../probes/procfs.h"
#include "bridge/bridge.h"
#include "bridge/schema.h"
#include "provider.h"

typedef struct {
    char name[32];
    char scheduler[24];  /* the active one ("[mq-deadline]" in the list); "" unreadable */
    char schedulers[96]; /* every one the queue offers, space-separated */
    int64_t rotational, read_ahead_kb, nr_requests, max_sectors_kb;
} disk_queue;

typedef struct {
    size_t n;
    disk_queue d[SOP_DISKS_MAX];
} block_state;

/* queue/scheduler reads "none [mq-deadline] kyber": all of them, the bracketed one active. */
static void read_scheduler(int qfd, disk_queue *q)
{
    char buf[160];
    long n = sop__read_small_at(qfd, "scheduler", buf, sizeof buf);
    if (n <= 0)
        return;
    buf[n < (long)sizeof buf ? n : (long)sizeof buf - 1] = '\0';
    size_t at = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save)) {
        size_t len = strlen(tok);
        bool active = len > 2 && tok[0] == '[' && tok[len - 1] == ']';
        if (active) {
            tok[len - 1] = '\0';
            tok++;
            snprintf(q->scheduler, sizeof q->scheduler, "%s", tok);
        }
        int w = snprintf(q->schedulers + at, sizeof q->schedulers - at, "%s%s", at ? " " : "", tok);
        if (w < 0 || (size_t)w >= sizeof q->schedulers - at)
            break; /* a list this long is cut at a whole name */
        at += (size_t)w;
    }
}

static int64_t read_int(int qfd, const char *file)
{
    char buf[32];
    long n = sop__read_small_at(qfd, file, buf, sizeof buf);
    if (n <= 0)
        return SOP_NA;
    buf[n < (long)sizeof buf ? n : (long)sizeof buf - 1] = '\0';
    const char *p = buf;
    return sop__parse_i64(&p);
}

static void read_queue(int sysfd, const char *name, disk_queue *q)
{
    memset(q, 0, sizeof *q);
    snprintf(q->name, sizeof q->name, "%s", name);
    q->rotational = q->read_ahead_kb = q->nr_requests = q->max_sectors_kb = SOP_NA;
    char path[64];
    snprintf(path, sizeof path, "%s/queue", name);
    int qfd = strchr(name, '/') ? -1 : openat(sysfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (qfd < 0)
        return;
    read_scheduler(qfd, q);
    q->rotational = read_int(qfd, "rotational");
    q->read_ahead_kb = read_int(qfd, "read_ahead_kb");
    q->nr_requests = read_int(qfd, "nr_requests");
    q->max_sectors_kb = read_int(qfd, "max_sectors_kb");
    close(qfd);
}

/* ---- the evidence group ---- */

static void w_devices(sop_value *o, const char *name, const void *base, void *ctx);

static const sop_evk sop__evk_block[] = {
    SOP_EVK_W("devices", SOP_EVK_ARR, w_devices, "",
              "the whole disks of host.disks[] (those with IO since boot), each with its "
              "request queue's settings (/sys/block/NAME/queue), read once at the window's end"),
    SOP_EVK_T("devices[].name", disk_queue, name, "host.disks[].name"),
    SOP_EVK_S("devices[].scheduler", disk_queue, scheduler,
              "the active I/O scheduler: none, mq-deadline, kyber, bfq; absent when unreadable"),
    SOP_EVK_S("devices[].schedulers", disk_queue, schedulers,
              "every scheduler the queue offers, space-separated"),
    SOP_EVK_I("devices[].rotational", disk_queue, rotational, "",
              "1: the kernel takes it for a spinning disk (a VM's virtual disk often says 1 "
              "whatever is behind it), 0: not"),
    SOP_EVK_I("devices[].read_ahead_kb", disk_queue, read_ahead_kb, "kB",
              "how far ahead of a sequential reader the page cache is filled"),
    SOP_EVK_I("devices[].nr_requests", disk_queue, nr_requests, "",
              "requests the queue holds (its depth)"),
    SOP_EVK_I("devices[].max_sectors_kb", disk_queue, max_sectors_kb, "kB",
              "the largest request sent to the device"),
};
static const size_t sop__evk_block_n = sizeof sop__evk_block / sizeof sop__evk_block[0];

static void w_devices(sop_value *o, const char *name, const void *base, void *ctx)
{
    (void)ctx;
    const block_state *st = base;
    sop_value *arr = st->n ? sop__v_arr_at(o, name) : NULL;
    for (size_t i = 0; arr && i < st->n; i++) {
        sop_value *d = sop__v_obj();
        if (!d)
            break;
        sop__bridge_keys(d, &st->d[i], sop__evk_block, sop__evk_block_n, "devices[].", NULL, NULL);
        sop__v_push(arr, d);
    }
}

static void *block_start(sop_collect_ctx *cx)
{
    (void)cx;
    return calloc(1, sizeof(block_state));
}

static void block_finish(sop_collect_ctx *cx, void *p)
{
    block_state *st = p;
    const sop_host *h = &cx->c->host;
    int sysfd = h->ndisks ? open("/sys/block", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (sysfd < 0)
        return; /* no disk listed, or no sysfs: the group stays absent */
    for (size_t i = 0; i < h->ndisks && st->n < SOP_DISKS_MAX; i++)
        read_queue(sysfd, h->disks[i].name, &st->d[st->n++]);
    close(sysfd);
}

static void block_emit(const sop_collect_ctx *cx, void *p, sop_value *ev)
{
    (void)cx;
    sop_value *o = sop__v_obj();
    if (!o)
        return;
    sop__bridge_keys(o, p, sop__evk_block, sop__evk_block_n, "", NULL, NULL);
    sop__bridge_attach(ev, "block", o);
}

static const sop_evk_group block_groups[] = {
    {"block", "engine/collect/collect_block.c", sop__evk_block, &sop__evk_block_n},
    {0},
};

const sop_provider sop__provider_block = {
    .name = "block",
    .probes = SOP_PROBE_HOST,
    .groups = block_groups,
    .start = block_start,
    .finish = block_finish,
    .emit = block_emit,
    .free = free,
};
