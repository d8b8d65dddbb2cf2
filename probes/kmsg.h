/* kmsg.h — OOM-killer records from the kernel log (/dev/kmsg, bounded in time and size):
 * victim pid, comm, anon-rss, total-vm, task and oom memcg, time. Depends on libc only. */
#ifndef SOP_KMSG_H
#define SOP_KMSG_H

#include <stddef.h>
#include <stdint.h>

#include "missing.h"
#include "procfs.h"

typedef struct {
    int pid;
    char comm[64];
    int64_t total_vm_kb, anon_rss_kb, file_rss_kb, shmem_rss_kb, pgtables_kb;
    int64_t uid, oom_score_adj;
    char constraint[32]; /* CONSTRAINT_MEMCG, CONSTRAINT_NONE, ... */
    char task_memcg[256], oom_memcg[256];
    char invoker[64]; /* comm that invoked the oom-killer, if seen */
    double time;      /* epoch seconds (from the record's boot-relative stamp) */
    double uptime_s;  /* the raw stamp */
} sop_oom;

#define SOP_OOM_MAX 64
typedef struct {
    sop_oom items[SOP_OOM_MAX]; /* oldest first; the newest SOP_OOM_MAX kept */
    size_t n;
} sop_oom_list;

/* Feed one kernel-log message (the text after the kmsg prefix), stamped at uptime_s.
 * Merges the "oom-kill:" and "Killed process" lines of one kill into one record. */
void sop__kmsg_feed(sop_oom_list *l, const char *msg, double uptime_s);
/* Parse a whole /dev/kmsg-style dump ("pri,seq,usec,flags;message\n" records). */
int sop__parse_kmsg(const char *text, sop_oom_list *out, double btime);
/* Read the kernel log (non-blocking, at most max_bytes, records newer than max_age_s). */
int sop__kmsg_collect(sop_oom_list *out, double btime, double max_age_s, sop_missing *missing);

#endif
