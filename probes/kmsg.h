/* kmsg.h — OOM-killer records from the kernel log (/dev/kmsg, bounded in time and size):
 * victim pid, comm, anon-rss, total-vm, task and oom memcg, time. Depends on libc only. */
#ifndef SOP_KMSG_H
#define SOP_KMSG_H

#include <stdbool.h>
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
    bool closed;      /* its "Killed process" line was seen */
} sop_oom;

#define SOP_OOM_MAX 64
typedef struct {
    sop_oom items[SOP_OOM_MAX]; /* oldest first; the newest SOP_OOM_MAX kept */
    size_t n;
    double btime; /* epoch of boot, to turn stamps into times; NaN leaves time NaN */
    bool read_ok; /* the log was read: n == 0 then means "no kill seen", not "not looked" */
    /* lines seen before the kill line of the kill in progress (parser state) */
    char pend_invoker[64], pend_constraint[32], pend_task_memcg[256], pend_oom_memcg[256];
    int pend_pid;       /* "Kill process N (C) score S or sacrifice child" (< 5.0), until its */
    char pend_comm[64]; /* "Killed process" line (which may name a child instead) */
    double pend_uptime_s;
} sop_oom_list;

/* Empty the list; btime as above. */
void sop__oom_list_init(sop_oom_list *l, double btime);

/* Feed one kernel-log message (the text after the kmsg prefix), stamped at uptime_s.
 * Merges the "oom-kill:" and "Killed process" lines of one kill into one record. */
void sop__kmsg_feed(sop_oom_list *l, const char *msg, double uptime_s);
/* Parse a whole /dev/kmsg-style dump ("pri,seq,usec,flags;message\n" records, continuation
 * lines starting with a blank skipped) or a syslog(2)/dmesg one ("<4>[ 1234.567890] msg").
 * Initialises `out`. Returns 0 (no OOM record is not an error) or -EINVAL for NULL text. */
int sop__parse_kmsg(const char *text, sop_oom_list *out, double btime);
/* One line of either form; records stamped before min_uptime_s are skipped. */
void sop__kmsg_feed_line(sop_oom_list *l, const char *line, size_t len, double min_uptime_s);
/* End of input: a "Kill process" line never followed by its "Killed process" line (a log cut
 * short) still becomes a record. sop__parse_kmsg calls it. */
void sop__kmsg_flush(sop_oom_list *l);
/* Read the kernel log (non-blocking, at most max_bytes, records newer than max_age_s).
 * kills_since_boot: /proc/vmstat's oom_kill as the host probe read it (SOP_NA or < 0 unknown);
 * at 0 no process was OOM-killed since boot, the log holds no record to find and is not read
 * (formatting the whole ring costs milliseconds). */
int sop__kmsg_collect(sop_oom_list *out, double btime, double max_age_s, int64_t kills_since_boot,
                      sop_missing *missing);

#endif
