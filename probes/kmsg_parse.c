/* kmsg_parse.c — turns kernel-log lines into OOM-kill records (pure: text in, list out).
 * Knows the lines of kernels 4.x-6.x: "X invoked oom-killer", "Task in A killed as a result of
 * limit of B" (4.x), "oom-kill:constraint=...,task=C,pid=N,uid=U" (4.19+), "... Kill process N
 * (C) score S or sacrifice child" (< 5.0) and "... Killed process N (C) total-vm:...kB, ...".
 * The lines of one kill are merged into one record by pid. Depends on probes/kmsg.h. */
#include "kmsg.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MSG_MAX 2048      /* a kernel log record is at most ~1 KiB of text */
#define MERGE_WINDOW_S 30 /* lines of one kill are printed within milliseconds */

void sop__oom_list_init(sop_oom_list *l, double btime)
{
    /* Everything but the records: new_record clears each one it adds, and none past n is
     * read, so the 64 slots (48 KiB) are not written here, only the few a log fills. */
    memset((char *)l + offsetof(sop_oom_list, n), 0, sizeof *l - offsetof(sop_oom_list, n));
    l->btime = btime;
}

static void copy_span(char *dst, size_t cap, const char *p, size_t n)
{
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, p, n);
    dst[n] = '\0';
}

/* Locate `needle` in [p, end). */
static const char *find(const char *p, const char *end, const char *needle)
{
    size_t n = strlen(needle);
    for (; p + n <= end; p++)
        if (memcmp(p, needle, n) == 0)
            return p;
    return NULL;
}

static const char *rfind(const char *p, const char *end, const char *needle)
{
    size_t n = strlen(needle);
    for (const char *q = end - n; q >= p; q--)
        if (memcmp(q, needle, n) == 0)
            return q;
    return NULL;
}

/* The number right after `key` in [p, end), e.g. key "total-vm:" in "total-vm:123kB"; a
 * value that should end in "kB" and does not (a line cut mid-number) is not taken. */
static int64_t num_after_unit(const char *p, const char *end, const char *key, const char *unit)
{
    const char *k = find(p, end, key);
    if (!k)
        return SOP_NA;
    const char *q = k + strlen(key);
    if (q >= end)
        return SOP_NA;
    char tmp[32];
    copy_span(tmp, sizeof tmp, q, (size_t)(end - q));
    const char *t = tmp;
    int64_t v = sop__parse_i64(&t);
    if (v != SOP_NA && unit && strncmp(t, unit, strlen(unit)) != 0)
        return SOP_NA;
    return v;
}

static int64_t num_after(const char *p, const char *end, const char *key)
{
    return num_after_unit(p, end, key, NULL);
}

/* "key=value," field from [p, end) into dst (up to the next ','). */
static void field_eq(const char *p, const char *end, const char *key, char *dst, size_t cap)
{
    const char *k = find(p, end, key);
    if (!k)
        return;
    const char *v = k + strlen(key);
    const char *c = memchr(v, ',', (size_t)(end - v));
    copy_span(dst, cap, v, (size_t)((c ? c : end) - v));
}

static sop_oom *new_record(sop_oom_list *l, int pid, double uptime_s)
{
    if (l->n == SOP_OOM_MAX) { /* keep the newest: drop the oldest */
        memmove(&l->items[0], &l->items[1], (SOP_OOM_MAX - 1) * sizeof l->items[0]);
        l->n--;
    }
    sop_oom *o = &l->items[l->n++];
    memset(o, 0, sizeof *o);
    o->pid = pid;
    o->total_vm_kb = o->anon_rss_kb = o->file_rss_kb = o->shmem_rss_kb = SOP_NA;
    o->pgtables_kb = o->uid = o->oom_score_adj = SOP_NA;
    o->uptime_s = uptime_s;
    o->time = isfinite(l->btime) && isfinite(uptime_s) ? l->btime + uptime_s : NAN;
    return o;
}

/* The record of this kill: the newest one for pid still open (no "Killed process" line yet),
 * or a new one. Pending context lines are attached. */
static sop_oom *record_for(sop_oom_list *l, int pid, double uptime_s, int closing)
{
    sop_oom *o = NULL;
    for (size_t i = l->n; i-- > 0;) {
        sop_oom *c = &l->items[i];
        if (c->pid == pid && !c->closed &&
            !(isfinite(uptime_s) && fabs(c->uptime_s - uptime_s) > MERGE_WINDOW_S)) {
            o = c;
            break;
        }
        if (l->n - i >= 4) /* only the last few are candidates */
            break;
    }
    if (!o)
        o = new_record(l, pid, uptime_s);
    if (!o->invoker[0] && l->pend_invoker[0])
        snprintf(o->invoker, sizeof o->invoker, "%s", l->pend_invoker);
    if (!o->task_memcg[0] && l->pend_task_memcg[0])
        snprintf(o->task_memcg, sizeof o->task_memcg, "%s", l->pend_task_memcg);
    if (!o->oom_memcg[0] && l->pend_oom_memcg[0])
        snprintf(o->oom_memcg, sizeof o->oom_memcg, "%s", l->pend_oom_memcg);
    if (!o->constraint[0] && l->pend_constraint[0])
        snprintf(o->constraint, sizeof o->constraint, "%s", l->pend_constraint);
    if (closing)
        l->pend_invoker[0] = l->pend_task_memcg[0] = l->pend_oom_memcg[0] = l->pend_constraint[0] =
            '\0';
    return o;
}

/* "oom-kill:constraint=C,nodemask=...,oom_memcg=/a,task_memcg=/a,task=COMM,pid=N,uid=U" */
static void on_oom_kill_line(sop_oom_list *l, const char *p, const char *end, double up)
{
    const char *task = find(p, end, "task=");
    const char *pidk = task ? rfind(task, end, ",pid=") : NULL;
    if (!task || !pidk)
        return;
    const char *q = pidk + 5;
    int64_t pid = sop__parse_i64(&q);
    if (pid == SOP_NA || pid <= 0 || pid > 1 << 30)
        return;
    sop_oom *o = record_for(l, (int)pid, up, 0);
    copy_span(o->comm, sizeof o->comm, task + 5, (size_t)(pidk - task - 5));
    field_eq(p, task, "constraint=", o->constraint, sizeof o->constraint);
    field_eq(p, task, "oom_memcg=", o->oom_memcg, sizeof o->oom_memcg);
    field_eq(p, task, "task_memcg=", o->task_memcg, sizeof o->task_memcg);
    int64_t uid = num_after(q, end, ",uid=");
    if (uid != SOP_NA)
        o->uid = uid;
}

/* "... Killed process N (COMM) total-vm:...kB, anon-rss:...": the last line of a kill. */
static void on_killed_line(sop_oom_list *l, const char *k, const char *end, double up)
{
    const char *q = k;
    int64_t pid = sop__parse_i64(&q);
    if (pid == SOP_NA || pid <= 0 || pid > 1 << 30)
        return;
    sop_oom *o = record_for(l, (int)pid, up, 1);
    /* comm may hold blanks and parens: it ends at the ')' before the first known tail */
    const char *open = (q < end && q[0] == ' ' && q + 1 < end && q[1] == '(') ? q + 2 : NULL;
    const char *tail = open ? find(open, end, ") total-vm:") : NULL;
    if (open && !tail) {
        const char *last = rfind(open, end, ")");
        if (last && last + 1 == end)
            tail = last;
    }
    if (open && tail)
        copy_span(o->comm, sizeof o->comm, open, (size_t)(tail - open));
    const char *rest = tail ? tail : q;
    {
        int64_t v;
        if ((v = num_after_unit(rest, end, "total-vm:", "kB")) != SOP_NA)
            o->total_vm_kb = v;
        if ((v = num_after_unit(rest, end, "anon-rss:", "kB")) != SOP_NA)
            o->anon_rss_kb = v;
        if ((v = num_after_unit(rest, end, "file-rss:", "kB")) != SOP_NA)
            o->file_rss_kb = v;
        if ((v = num_after_unit(rest, end, "shmem-rss:", "kB")) != SOP_NA)
            o->shmem_rss_kb = v;
        if ((v = num_after(rest, end, "UID:")) != SOP_NA)
            o->uid = v;
        if ((v = num_after_unit(rest, end, "pgtables:", "kB")) != SOP_NA)
            o->pgtables_kb = v;
        if ((v = num_after(rest, end, "oom_score_adj:")) != SOP_NA)
            o->oom_score_adj = v;
        o->closed = true; /* even a cut line ends this kill */
        l->pend_pid = 0;  /* the scored one, or the child sacrificed for it, is this one */
    }
}

/* "Kill process N (C) score S or sacrifice child": held until the "Killed process" line. */
static void on_kill_score_line(sop_oom_list *l, const char *k, const char *end, double up)
{
    const char *q = k;
    int64_t pid = sop__parse_i64(&q);
    if (pid == SOP_NA || pid <= 0 || pid > 1 << 30)
        return;
    sop__kmsg_flush(l);
    l->pend_pid = (int)pid;
    l->pend_uptime_s = up;
    l->pend_comm[0] = '\0';
    const char *open = (q + 1 < end && q[0] == ' ' && q[1] == '(') ? q + 2 : NULL;
    const char *tail = open ? find(open, end, ") score ") : NULL;
    if (tail)
        copy_span(l->pend_comm, sizeof l->pend_comm, open, (size_t)(tail - open));
}

void sop__kmsg_flush(sop_oom_list *l)
{
    if (!l->pend_pid)
        return;
    int pid = l->pend_pid;
    l->pend_pid = 0;
    sop_oom *o = record_for(l, pid, l->pend_uptime_s, 1);
    if (!o->comm[0])
        snprintf(o->comm, sizeof o->comm, "%s", l->pend_comm);
}

void sop__kmsg_feed(sop_oom_list *l, const char *msg, double uptime_s)
{
    size_t n = strnlen(msg, MSG_MAX);
    const char *nl = memchr(msg, '\n', n);
    const char *end = nl ? nl : msg + n;
    const char *p = msg, *k;
    if ((k = find(p, end, " invoked oom-killer:")) != NULL) {
        sop__kmsg_flush(l);
        copy_span(l->pend_invoker, sizeof l->pend_invoker, p, (size_t)(k - p));
        l->pend_task_memcg[0] = l->pend_oom_memcg[0] = l->pend_constraint[0] = '\0';
    } else if (end - p > 9 && memcmp(p, "oom-kill:", 9) == 0) {
        on_oom_kill_line(l, p + 9, end, uptime_s);
    } else if (end - p > 8 && memcmp(p, "Task in ", 8) == 0 &&
               (k = find(p, end, " killed as a result of limit of ")) != NULL) {
        copy_span(l->pend_task_memcg, sizeof l->pend_task_memcg, p + 8, (size_t)(k - p - 8));
        const char *b = k + strlen(" killed as a result of limit of ");
        copy_span(l->pend_oom_memcg, sizeof l->pend_oom_memcg, b, (size_t)(end - b));
        snprintf(l->pend_constraint, sizeof l->pend_constraint, "CONSTRAINT_MEMCG");
    } else if ((k = find(p, end, "Killed process ")) != NULL) {
        on_killed_line(l, k + 15, end, uptime_s);
    } else if ((k = find(p, end, "Kill process ")) != NULL && find(k, end, " score ")) {
        on_kill_score_line(l, k + 13, end, uptime_s);
    }
}

/* "pri,seq,usec,flags;msg" → usec and msg; "<pri>[ sec.usec] msg" or "[ sec.usec] msg" too. */
void sop__kmsg_feed_line(sop_oom_list *l, const char *line, size_t len, double min_uptime_s)
{
    if (!line || len == 0 || line[0] == ' ' || len > MSG_MAX * 2)
        return; /* continuation ("key=value" dictionary) lines start with a blank */
    /* Every line sop__kmsg_feed acts on names a kill ("oom-killer", "oom-kill:", "killed as a
     * result", "Killed process", "Kill process"): skip the thousands of others cheaply. */
    if (!memmem(line, len, "ill", 3))
        return;
    char buf[MSG_MAX];
    copy_span(buf, sizeof buf, line, len);
    const char *p = buf;
    double up = NAN;
    if (*p == '<') { /* syslog(2) priority prefix */
        const char *gt = strchr(p, '>');
        if (!gt || gt - p > 6)
            return;
        p = gt + 1;
    }
    if (*p == '[') {
        char *e;
        double s = strtod(p + 1, &e);
        if (e == p + 1 || *e != ']')
            return;
        up = s;
        p = e + 1;
        if (*p == ' ')
            p++;
    } else {
        const char *semi = strchr(p, ';');
        const char *c1 = strchr(p, ',');
        const char *c2 = c1 ? strchr(c1 + 1, ',') : NULL;
        if (!semi || !c2 || c2 > semi)
            return;
        const char *q = c2 + 1;
        int64_t usec = sop__parse_i64(&q);
        if (usec == SOP_NA || usec < 0 || (*q != ',' && *q != ';'))
            return;
        up = (double)usec / 1e6;
        p = semi + 1;
    }
    if (isfinite(min_uptime_s) && isfinite(up) && up < min_uptime_s)
        return;
    sop__kmsg_feed(l, p, up);
}

int sop__parse_kmsg(const char *text, sop_oom_list *out, double btime)
{
    sop__oom_list_init(out, btime);
    if (!text)
        return -EINVAL;
    const char *line = text;
    for (size_t i = 0; i < (1u << 22) && line && *line; i++) {
        const char *eol = strchr(line, '\n');
        size_t len = eol ? (size_t)(eol - line) : strlen(line);
        sop__kmsg_feed_line(out, line, len, -INFINITY);
        line = eol ? eol + 1 : NULL;
    }
    sop__kmsg_flush(out);
    out->read_ok = true;
    return 0;
}
