/* rank_discovery.c — find the local ranks of a distributed job on this node, and collect each one's
 * evidence at the same time (one thread and one engine per rank). Ranks are the processes of a
 * Slurm job (`scontrol listpids J`, else the job's cgroup, else SLURM_JOB_ID in environ) or of a
 * torchrun / torch.distributed launch (RANK, LOCAL_RANK, WORLD_SIZE in environ under one
 * launcher); a rank's own children (DataLoader workers inherit the variables) are not ranks.
 * Reads /proc (who a process is and its rank variables through sop_process_read and
 * sop_process_env, the probes' parsers) and runs scontrol; depends on include/sop.h and
 * pthreads. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "rank_discovery.h"
#include "sop.h"

#define MAX_PROCS 8192
/* Ranks of one job on one node: far above any GPU node (8-16) and most CPU jobs. More is
 * refused rather than collected (one thread and one engine each). */
#define MAX_NODE_RANKS 512

typedef struct {
    int pid, ppid;
    long rank, local_rank, world; /* torch.distributed (-1: absent) */
    long procid, localid, ntasks; /* Slurm task (-1: absent) */
    char step[24];                /* Slurm step: "0", "batch", "extern", "" unknown */
    char job[32];                 /* SLURM_JOB_ID */
    char comm[32];
    unsigned uid; /* real uid (status), (unsigned)-1 unknown */
    bool in_job;
} proc_info;

/* Copy src into dst[size], cut to fit. */
static void copy_cut(char *dst, size_t size, const char *src)
{
    size_t n = strnlen(src, size - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static long to_long(const char *s)
{
    if (!s || !*s)
        return -1;
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    return errno || *end || v < 0 ? -1 : v;
}

static char *read_all(const char *path, size_t max, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        ssize_t r = read(fd, buf + n, cap - n);
        if (r <= 0)
            break;
        n += (size_t)r;
        if (n == cap) {
            if (cap >= max)
                break;
            cap *= 2;
            char *nb = realloc(buf, cap + 1);
            if (!nb) {
                free(buf);
                buf = NULL;
            }
            buf = nb;
        }
    }
    close(fd);
    if (buf) {
        buf[n] = '\0';
        *len = n;
    }
    return buf;
}

/* The variables that say which rank of which job a process is (torch.distributed, Slurm). */
enum { E_RANK, E_LOCAL_RANK, E_WORLD, E_PROCID, E_LOCALID, E_NTASKS, E_STEP, E_JOB, E_N };
static const char *const env_names[E_N] = {
    "RANK",          "LOCAL_RANK",   "WORLD_SIZE",    "SLURM_PROCID",
    "SLURM_LOCALID", "SLURM_NTASKS", "SLURM_STEP_ID", "SLURM_JOB_ID",
};

static void read_proc(int pid, proc_info *p)
{
    memset(p, 0, sizeof *p);
    p->pid = pid;
    p->rank = p->local_rank = p->world = p->procid = p->localid = p->ntasks = -1;
    char path[64];
    sop_process sp;
    if (sop_process_read(pid, &sp) == 0) {
        snprintf(p->comm, sizeof p->comm, "%.*s", (int)sizeof p->comm - 1, sp.comm);
        p->ppid = sp.ppid;
    }
    p->uid = (unsigned)-1;
    struct stat ps;
    snprintf(path, sizeof path, "/proc/%d", pid);
    if (stat(path, &ps) == 0)
        p->uid = (unsigned)ps.st_uid; /* the process's (effective) owner */
    char env[E_N][64];
    if (sop_process_env(pid, env_names, E_N, env[0], sizeof env[0]) <= 0)
        return;
    p->rank = to_long(env[E_RANK]);
    p->local_rank = to_long(env[E_LOCAL_RANK]);
    p->world = to_long(env[E_WORLD]);
    p->procid = to_long(env[E_PROCID]);
    p->localid = to_long(env[E_LOCALID]);
    p->ntasks = to_long(env[E_NTASKS]);
    copy_cut(p->step, sizeof p->step, env[E_STEP]);
    copy_cut(p->job, sizeof p->job, env[E_JOB]);
}

static proc_info *find(proc_info *ps, int n, int pid)
{
    for (int i = 0; i < n; i++)
        if (ps[i].pid == pid)
            return &ps[i];
    return NULL;
}

static bool is_python(const proc_info *p)
{
    return strncmp(p->comm, "python", 6) == 0;
}

/* Every process of /proc (all of them: ancestry needs the ones outside the job too). */
static int scan(proc_info **out)
{
    DIR *d = opendir("/proc");
    if (!d)
        return -1;
    proc_info *ps = calloc(MAX_PROCS, sizeof *ps);
    int n = 0;
    struct dirent *de;
    while (ps && n < MAX_PROCS && (de = readdir(d))) {
        long pid = to_long(de->d_name);
        if (pid > 0)
            read_proc((int)pid, &ps[n++]);
    }
    closedir(d);
    *out = ps;
    return ps ? n : -1;
}

/* scontrol listpids J: "PID JOBID STEPID LOCALID GLOBALID" lines. */
static int mark_listpids(proc_info *ps, int n, const char *job)
{
    for (const char *c = job; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '_' && *c != '.')
            return -1;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "scontrol listpids %s 2>/dev/null", job);
    FILE *f = popen(cmd, "r");
    if (!f)
        return -1;
    char line[256];
    int marked = 0;
    while (fgets(line, sizeof line, f)) {
        int pid = 0;
        char jobid[64], step[32];
        if (sscanf(line, "%d %63s %31s", &pid, jobid, step) != 3)
            continue;
        proc_info *p = find(ps, n, pid);
        if (!p)
            continue;
        p->in_job = true;
        copy_cut(p->step, sizeof p->step, step);
        marked++;
    }
    int st = pclose(f);
    return st == 0 && marked > 0 ? marked : -1;
}

/* The job's cgroup: a directory named job_J (v2: .../slurmstepd.scope/job_J/step_S/...;
 * v1: <controller>/slurm/uid_U/job_J/step_S/...); every cgroup.procs below it. */
static int mark_cgroup_dir(proc_info *ps, int n, const char *dir, const char *step, int depth)
{
    if (depth > 8)
        return 0;
    int marked = 0;
    char path[1024];
    snprintf(path, sizeof path, "%s/cgroup.procs", dir);
    size_t len = 0;
    char *procs = read_all(path, 1 << 20, &len);
    for (char *tok = procs ? strtok(procs, "\n") : NULL; tok; tok = strtok(NULL, "\n")) {
        proc_info *p = find(ps, n, (int)to_long(tok));
        if (p) {
            p->in_job = true;
            if (step)
                copy_cut(p->step, sizeof p->step, step);
            marked++;
        }
    }
    free(procs);
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        if (de->d_name[0] == '.' || de->d_type != DT_DIR)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        const char *sub = strncmp(de->d_name, "step_", 5) == 0 ? de->d_name + 5 : step;
        marked += mark_cgroup_dir(ps, n, path, sub, depth + 1);
    }
    if (d)
        closedir(d);
    return marked;
}

static int find_job_cgroup(const char *dir, const char *name, char *out, size_t outlen, int depth)
{
    if (depth > 5)
        return -1;
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    struct dirent *de;
    int rc = -1;
    char path[1024];
    while (rc != 0 && (de = readdir(d))) {
        if (de->d_name[0] == '.' || de->d_type != DT_DIR)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        if (strcmp(de->d_name, name) == 0) {
            snprintf(out, outlen, "%s", path);
            rc = 0;
        } else if (strncmp(de->d_name, "job_", 4) != 0 && strncmp(de->d_name, "step_", 5) != 0) {
            rc = find_job_cgroup(path, name, out, outlen, depth + 1);
        }
    }
    closedir(d);
    return rc;
}

static int mark_cgroup(proc_info *ps, int n, const char *job)
{
    char name[64], dir[1024];
    snprintf(name, sizeof name, "job_%s", job);
    if (find_job_cgroup("/sys/fs/cgroup", name, dir, sizeof dir, 0) != 0)
        return -1;
    int marked = mark_cgroup_dir(ps, n, dir, NULL, 0);
    return marked > 0 ? marked : -1;
}

static int mark_environ(proc_info *ps, int n, const char *job)
{
    int marked = 0;
    for (int i = 0; i < n; i++)
        if (strcmp(ps[i].job, job) == 0) {
            ps[i].in_job = true;
            marked++;
        }
    return marked > 0 ? marked : -1;
}

/* Is `anc` a proper ancestor of p? */
static bool descends(proc_info *ps, int n, const proc_info *p, int anc)
{
    for (int depth = 0; p && depth < 64; depth++) {
        if (p->ppid == anc)
            return true;
        if (p->ppid <= 1)
            return false;
        p = find(ps, n, p->ppid);
    }
    return false;
}

/* A step of tasks (0, 1, ...): not batch/extern, nor their numbers in SLURM_STEP_ID
 * (SLURM_BATCH_SCRIPT 0xfffffffe, SLURM_EXTERN_CONT 0xffffffff and kin). */
static bool numeric_step(const char *s)
{
    long v = to_long(s);
    return s[0] && v >= 0 && v < 0xfffffff0L;
}

int cli_find_ranks(const char *slurm_job, int launcher, cli_rank **out, char *src, size_t srclen)
{
    proc_info *ps = NULL;
    int n = scan(&ps);
    *out = NULL;
    if (n < 0) {
        fprintf(stderr, "sopctl: --ranks: cannot read /proc\n");
        return -1;
    }
    int self = getpid();
    if (slurm_job) {
        const char *how = "scontrol listpids";
        if (mark_listpids(ps, n, slurm_job) < 0) {
            how = "the job's cgroup";
            if (mark_cgroup(ps, n, slurm_job) < 0) {
                how = "SLURM_JOB_ID in the environment";
                if (mark_environ(ps, n, slurm_job) < 0) {
                    fprintf(stderr,
                            "sopctl: --ranks: no process of Slurm job %s on this node "
                            "(scontrol listpids, cgroup job_%s, SLURM_JOB_ID)\n",
                            slurm_job, slurm_job);
                    free(ps);
                    return -1;
                }
            }
        }
        snprintf(src, srclen, "Slurm job %s (%s)", slurm_job, how);
    } else {
        for (int i = 0; i < n; i++)
            ps[i].in_job = ps[i].rank >= 0 && ps[i].local_rank >= 0 && ps[i].world > 0;
        snprintf(src, srclen, "torch.distributed launch (RANK/LOCAL_RANK/WORLD_SIZE)");
    }
    /* sopctl itself and what runs it (srun --overlap puts us inside the job, maybe under a
     * shell) are no ranks */
    proc_info *a = find(ps, n, self);
    for (int depth = 0; a && depth < 64; depth++) {
        a->in_job = false;
        a = a->ppid > 1 ? find(ps, n, a->ppid) : NULL;
    }
    for (int i = 0; i < n; i++)
        if (ps[i].pid == self || strcmp(ps[i].comm, "sopctl") == 0 ||
            strcmp(ps[i].comm, "srun") == 0 || strcmp(ps[i].comm, "slurmstepd") == 0 ||
            strcmp(ps[i].step, "extern") == 0)
            ps[i].in_job = false;
    if (launcher > 0)
        for (int i = 0; i < n; i++)
            if (ps[i].in_job && !descends(ps, n, &ps[i], launcher))
                ps[i].in_job = false;
    /* torch.distributed ranks inside the set win over Slurm tasks (torchrun under srun) */
    bool torch = false, numbered = false;
    for (int i = 0; i < n; i++) {
        torch = torch || (ps[i].in_job && ps[i].rank >= 0);
        numbered = numbered || (ps[i].in_job && numeric_step(ps[i].step));
    }
    int nr = 0, dropped = 0;
    cli_rank *r = calloc((size_t)n + 1, sizeof *r);
    for (int i = 0; r && i < n; i++) {
        proc_info *p = &ps[i];
        if (!p->in_job)
            continue;
        long id = torch ? p->rank : p->procid;
        if (id < 0)
            continue;
        /* A rank runs as its launcher's user: RANK/WORLD_SIZE in another user's environment
         * (anyone can set them) does not make that process part of this job. */
        const proc_info *parent = find(ps, n, p->ppid);
        if (!slurm_job && parent && parent->uid != p->uid) {
            dropped++;
            continue;
        }
        if (!torch && numbered && !numeric_step(p->step))
            continue; /* the batch script when the job has steps */
        /* the top of its rank: no ancestor in the set carries the same rank */
        proc_info *q = find(ps, n, p->ppid);
        bool top = true;
        for (int depth = 0; q && depth < 64 && top; depth++) {
            if (q->in_job && (torch ? q->rank : q->procid) == id && strcmp(q->step, p->step) == 0)
                top = false;
            q = q->ppid > 1 ? find(ps, n, q->ppid) : NULL;
        }
        if (!top)
            continue;
        int pid = p->pid;
        if (!is_python(p)) { /* a shell wrapper: its topmost Python descendant of the same rank */
            for (int j = 0; j < n; j++) {
                proc_info *c = &ps[j];
                if (c->in_job && is_python(c) && (torch ? c->rank : c->procid) == id &&
                    descends(ps, n, c, p->pid)) {
                    proc_info *cp = find(ps, n, c->ppid);
                    if (!cp || !is_python(cp) || cp->pid == p->pid) {
                        pid = c->pid;
                        break;
                    }
                }
            }
        }
        const proc_info *rp = find(ps, n, pid);
        if (!slurm_job && (!rp || !is_python(rp))) {
            dropped++; /* a torch.distributed rank is a Python process (or wraps one) */
            continue;
        }
        r[nr++] = (cli_rank){pid, p->ppid, id, torch ? p->local_rank : p->localid,
                             torch ? p->world : p->ntasks};
    }
    if (r && nr > MAX_NODE_RANKS) {
        fprintf(stderr,
                "sopctl: --ranks: %d processes claim to be ranks on this node (at most %d); "
                "pick the launch with --pid LAUNCHER\n",
                nr, MAX_NODE_RANKS);
        free(r);
        free(ps);
        return -1;
    }
    /* torchrun without --pid: one launcher, else ask which */
    if (r && !slurm_job && launcher <= 0 && nr > 0) {
        int first = r[0].ppid;
        bool several = false;
        for (int i = 1; i < nr; i++)
            several = several || r[i].ppid != first;
        if (several) {
            fprintf(stderr, "sopctl: --ranks: ranks of several launches run here:");
            for (int i = 0; i < nr; i++)
                fprintf(stderr, " rank %ld pid %d (launcher %d)%s", r[i].rank, r[i].pid, r[i].ppid,
                        i + 1 < nr ? "," : "");
            fprintf(stderr, "; pick one with --pid LAUNCHER\n");
            free(r);
            free(ps);
            return -1;
        }
    }
    free(ps);
    if (!r)
        return -1;
    if (nr == 0) {
        fprintf(stderr, "sopctl: --ranks: no rank found (%s)%s\n", src,
                dropped ? "; processes with rank variables that are not Python or run as "
                          "another user than their launcher are not ranks"
                        : "");
        free(r);
        return -1;
    }
    for (int i = 1; i < nr; i++) /* by rank */
        for (int j = i; j > 0 && r[j].rank < r[j - 1].rank; j--) {
            cli_rank t = r[j];
            r[j] = r[j - 1];
            r[j - 1] = t;
        }
    *out = r;
    return nr;
}

typedef struct {
    int pid;
    const sop_collect_opts *opts;
    sop_engine *e;
    sop_evidence *ev;
    int rc;
    char err[512];
} job;

static void *collect_one(void *arg)
{
    job *j = arg;
    j->rc = sop_collect(j->e, j->pid, j->opts, &j->ev);
    if (j->rc != 0)
        snprintf(j->err, sizeof j->err, "%s", sop_last_error(j->e));
    return NULL;
}

int cli_collect_ranks(const cli_rank *r, int n, const sop_collect_opts *opts, sop_engine **engines,
                      sop_evidence **evs, char (*errs)[512])
{
    job *jobs = calloc((size_t)n, sizeof *jobs);
    pthread_t *th = calloc((size_t)n, sizeof *th);
    bool *started = calloc((size_t)n, sizeof *started);
    if (!jobs || !th || !started) {
        free(jobs);
        free(th);
        free(started);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        jobs[i] = (job){.pid = r[i].pid, .opts = opts, .e = engines[i]};
        started[i] = pthread_create(&th[i], NULL, collect_one, &jobs[i]) == 0;
        if (!started[i])
            collect_one(&jobs[i]);
    }
    for (int i = 0; i < n; i++) {
        if (started[i])
            pthread_join(th[i], NULL);
        evs[i] = jobs[i].ev;
        snprintf(errs[i], 512, "%s", jobs[i].rc ? jobs[i].err : "");
    }
    free(jobs);
    free(th);
    free(started);
    return 0;
}

int cli_ranks_run(sop_engine *e, int launcher, const char *slurm_job, const sop_collect_opts *co,
                  sop_format fmt, const char *lang, bool evidence_only, const char *output)
{
    cli_rank *r = NULL;
    char src[160];
    int n = cli_find_ranks(slurm_job, launcher, &r, src, sizeof src);
    if (n < 0)
        return EXIT_TARGET;
    sop_engine **engines = calloc((size_t)n, sizeof *engines);
    sop_evidence **evs = calloc((size_t)n, sizeof *evs);
    char(*errs)[512] = calloc((size_t)n, sizeof *errs);
    int status = EXIT_CLEAN;
    for (int i = 0; engines && i < n; i++)
        if (sop_engine_new(&engines[i]) != 0)
            status = EXIT_USAGE;
    if (!engines || !evs || !errs || status != EXIT_CLEAN ||
        cli_collect_ranks(r, n, co, engines, evs, errs) != 0) {
        fprintf(stderr, "sopctl: out of memory\n");
        status = EXIT_USAGE;
    }
    sop_merge *m = NULL;
    if (status == EXIT_CLEAN && !evidence_only && fmt != SOP_FORMAT_JSON && sop_merge_new(&m) != 0)
        status = EXIT_USAGE;
    FILE *out = stdout;
    if (status == EXIT_CLEAN && output && (evidence_only || fmt == SOP_FORMAT_JSON) &&
        !(out = cli_open_output(output))) {
        status = EXIT_USAGE;
    }
    int collected = 0;
    for (int i = 0; status != EXIT_USAGE && i < n; i++) {
        if (!evs[i]) {
            char who[64], why[600];
            snprintf(who, sizeof who, "rank %ld (pid %d)", r[i].rank, r[i].pid);
            snprintf(why, sizeof why, "not collected: %s", errs[i]);
            fprintf(stderr, "sopctl: %s: %s\n", who, why);
            if (m)
                sop_merge_add_missing(m, who, why);
            continue;
        }
        collected++;
        char *text = NULL;
        int rc;
        if (evidence_only) {
            rc = sop_evidence_to_json(evs[i], 1, &text);
        } else {
            sop_report *rep = NULL;
            rc = sop_evaluate(e, evs[i], &rep);
            if (rc == 0)
                rc = sop_report_render(rep, SOP_FORMAT_JSON, lang, &text);
            if (rc == 0 && sop_report_has_problem(rep))
                status = EXIT_FINDING;
            sop_report_free(rep);
        }
        if (rc != 0) {
            cli_print_error("evaluate", rc, e);
            status = EXIT_USAGE;
        } else if (m) {
            char name[64];
            snprintf(name, sizeof name, "rank %ld (pid %d)", r[i].rank, r[i].pid);
            sop_merge_add_json(m, name, text, strlen(text));
        } else {
            fputs(text, out);
            if (text[0] && text[strlen(text) - 1] != '\n')
                fputc('\n', out);
        }
        sop_free(text);
    }
    if (status != EXIT_USAGE && collected == 0)
        status = EXIT_TARGET;
    else if (m && status != EXIT_USAGE) {
        int st = cli_print_merge(m, fmt, lang, output);
        status = st == EXIT_USAGE ? st : (status == EXIT_FINDING ? status : st);
    }
    if (out && out != stdout && fclose(out) != 0)
        status = EXIT_USAGE;
    else if (out == stdout && fflush(stdout) != 0)
        status = EXIT_USAGE;
    fprintf(stderr, "sopctl: %d rank%s of %s\n", n, n == 1 ? "" : "s", src);
    sop_merge_free(m);
    for (int i = 0; i < n; i++) {
        if (evs)
            sop_evidence_free(evs[i]);
        if (engines)
            sop_engine_free(engines[i]);
    }
    free(engines);
    free(evs);
    free(errs);
    free(r);
    return status;
}
