/* cmd_watch_node.c — `sopctl watch --node`: a node agent. Every round it finds the host's Python
 * processes (an executable named python*, or a program that maps a shared libpython: an embedded
 * interpreter, cli/python_procs.c; not a worker of another Python process: a fork of it or a
 * multiprocessing helper is seen through its parent), optionally only those in
 * containers, and diagnoses them one after the other, one window each: one window at a time on
 * the node, whatever the number of targets. A round starts every --every seconds (at once when
 * the last one took longer). Targets that exit leave at the next round, new ones join it.
 * /metrics is every target's families with pid (and pod, namespace, container) labels plus the
 * agent's own figures; /report/PID and /report/pod/NAMESPACE/NAME the last JSON report (Unix
 * socket only, as `watch`); / an index of the targets and their last findings; /healthz.
 * Depends on include/sop.h, cli.h, http.h, node_metrics.h, promtext.h, watch.h (the log). */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "http.h"
#include "node_metrics.h"
#include "promtext.h"
#include "sop.h"
#include "watch.h"

#define NODE_LISTEN_MAX 4
#define NODE_TARGETS_DEFAULT 256
#define NODE_TARGETS_LIMIT 4096

typedef struct {
    int pid;
    unsigned long long start_ticks;
    int in_container;
    sop_container ct;
    char *json;          /* the last report, JSON */
    char *om;            /* its OpenMetrics families */
    char *findings;      /* "id(severity) ..." of its last report */
    double last_unix;    /* when that window ended */
    double window_cpu_s; /* the agent's CPU for it */
} node_target;

typedef struct {
    pthread_mutex_t mu;
    node_target *t;
    size_t n, cap, max_targets;
    int containers_only;
    unsigned long long rounds;
    double last_round_s, cpu_total_s;
    const char *lang;
    cli_pyprocs *py; /* which processes are Python (cli/python_procs.c) */
} node_ctx;

static volatile int g_stop; /* SIGTERM, SIGINT; also ends a window in progress */

static void on_signal(int sig)
{
    (void)sig;
    g_stop = 1;
}

static double now_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double now_unix(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double self_cpu_s(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return 0;
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* /proc/PID/cmdline's raw bytes (NULs kept), at most cap; the length or -1. */
static ssize_t cmdline_of(int pid, char *buf, size_t cap)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/cmdline", pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, cap, f);
    fclose(f);
    return (ssize_t)n;
}

static int has_bytes(const char *buf, size_t n, const char *what)
{
    size_t k = strlen(what);
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(buf + i, what, k) == 0)
            return 1;
    return 0;
}

/* A worker of a Python process rather than a program of its own: a fork of it (the same
 * command line: DataLoader and multiprocessing fork workers, gunicorn's), or multiprocessing's
 * spawn, forkserver or resource tracker. Its parent's window sees it (children[]). A program
 * that a Python process started (torchrun's ranks, a Jupyter kernel) is a target of its own. */
static int is_python_worker(cli_pyprocs *py, int pid, int ppid)
{
    sop_process pp;
    if (ppid <= 1 || sop_process_read(ppid, &pp) != 0 ||
        !cli_pyprocs_is_python(py, ppid, pp.start_ticks))
        return 0;
    static char a[4096], b[4096];
    ssize_t na = cmdline_of(pid, a, sizeof a), nb = cmdline_of(ppid, b, sizeof b);
    if (na < 0 || nb < 0)
        return 0;
    if (na == nb && memcmp(a, b, (size_t)na) == 0)
        return 1;
    return has_bytes(a, (size_t)na, "from multiprocessing.") ||
           has_bytes(a, (size_t)na, "multiprocessing.spawn") ||
           has_bytes(a, (size_t)na, "multiprocessing.forkserver");
}

static void target_clear(node_target *t)
{
    free(t->json);
    free(t->om);
    free(t->findings);
    memset(t, 0, sizeof *t);
}

/* A process that joins this round. */
typedef struct {
    int pid;
    unsigned long long start_ticks;
    int in_container;
    sop_container ct;
} joiner;

/* This round's targets: kept where pid and start time match, added, or dropped. The host's
 * processes are looked at without mu (their maps may be read: an embedded interpreter), which
 * only the changes to the list take: this thread alone writes c->t, the HTTP threads read it
 * under mu. */
static void discover(node_ctx *c)
{
    DIR *d = opendir("/proc");
    if (!d)
        return;
    int self = (int)getpid();
    unsigned char *keep = calloc(c->n ? c->n : 1, 1);
    joiner *join = NULL;
    size_t njoin = 0, cap = 0;
    cli_pyprocs_next_round(c->py);
    for (struct dirent *e; keep && (e = readdir(d));) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        sop_process p;
        /* Python by name, or a program with an embedded interpreter (a mapped libpython); not
         * a kernel thread (kthreadd's children), not a worker its Python parent sees */
        if (*end || pid <= 2 || pid > 0x7fffffff || pid == self ||
            sop_process_read((int)pid, &p) != 0 || p.state == 'Z' || p.ppid == 2 ||
            !cli_pyprocs_is_python(c->py, (int)pid, p.start_ticks) ||
            is_python_worker(c->py, (int)pid, p.ppid))
            continue;
        size_t i = 0;
        while (i < c->n && !(c->t[i].pid == pid && c->t[i].start_ticks == p.start_ticks))
            i++;
        if (i < c->n) {
            keep[i] = 1;
            continue;
        }
        joiner j;
        memset(&j, 0, sizeof j);
        j.pid = (int)pid;
        j.start_ticks = p.start_ticks;
        j.in_container = sop_container_of((int)pid, &j.ct) == 1;
        if ((c->containers_only && !j.in_container) || c->n + njoin >= c->max_targets)
            continue;
        if (njoin == cap) {
            size_t nc = cap ? cap * 2 : 16;
            joiner *nv = realloc(join, nc * sizeof *nv);
            if (!nv)
                break;
            join = nv;
            cap = nc;
        }
        join[njoin++] = j;
    }
    closedir(d);
    if (!keep) { /* out of memory: this round keeps the list as it is */
        free(join);
        return;
    }
    pthread_mutex_lock(&c->mu);
    size_t k = 0;
    for (size_t i = 0; i < c->n; i++) {
        if (keep[i]) {
            c->t[k++] = c->t[i];
        } else {
            cli_watch_log("node: target pid %d has left", c->t[i].pid);
            target_clear(&c->t[i]);
        }
    }
    c->n = k;
    for (size_t i = 0; i < njoin; i++) {
        if (c->n == c->cap) {
            size_t nc = c->cap ? c->cap * 2 : 16;
            node_target *nv = realloc(c->t, nc * sizeof *nv);
            if (!nv)
                break;
            c->t = nv;
            c->cap = nc;
        }
        node_target *t = &c->t[c->n++];
        memset(t, 0, sizeof *t);
        t->pid = join[i].pid;
        t->start_ticks = join[i].start_ticks;
        t->in_container = join[i].in_container;
        if (t->in_container)
            t->ct = join[i].ct;
        cli_watch_log("node: target pid %d%s%s joins", t->pid,
                      t->in_container ? " in container " : "",
                      t->in_container ? (t->ct.name[0] ? t->ct.name : t->ct.id) : "");
    }
    pthread_mutex_unlock(&c->mu);
    free(keep);
    free(join);
}

static char *findings_of(const sop_report *r)
{
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    if (!f)
        return NULL;
    const char *id, *sev;
    for (size_t i = 0; sop_report_finding(r, i, &id, &sev) == 0; i++)
        fprintf(f, "%s%s(%s)", i ? " " : "", id, sev);
    fclose(f);
    return out;
}

/* One window on target pid; its results stored under mu, matched again by pid and start. */
static void diagnose(node_ctx *c, sop_engine *e, const sop_collect_opts *co, int pid,
                     unsigned long long start)
{
    double cpu0 = self_cpu_s();
    sop_evidence *ev = NULL;
    sop_report *r = NULL;
    char *json = NULL, *om = NULL, *found = NULL;
    int rc = sop_collect(e, pid, co, &ev);
    if (rc == 0)
        rc = sop_evaluate(e, ev, &r);
    if (rc == 0) {
        sop_report_render(r, SOP_FORMAT_JSON, c->lang, &json);
        sop_report_openmetrics(r, ev, &om);
        found = findings_of(r);
    } else if (rc != SOP_ENOTARGET) {
        cli_watch_log("node: pid %d: %s", pid, sop_strerror(rc));
    }
    double cpu = self_cpu_s() - cpu0;
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < c->n; i++) {
        node_target *t = &c->t[i];
        if (t->pid != pid || t->start_ticks != start)
            continue;
        t->window_cpu_s = cpu;
        if (rc == 0) {
            free(t->json);
            free(t->om);
            free(t->findings);
            t->json = json;
            t->om = om;
            t->findings = found;
            json = om = found = NULL;
            t->last_unix = now_unix();
        }
    }
    pthread_mutex_unlock(&c->mu);
    sop_free(json);
    sop_free(om);
    free(found);
    sop_report_free(r);
    sop_evidence_free(ev);
}

static void run_round(node_ctx *c, sop_engine *e, const sop_collect_opts *co)
{
    double t0 = now_mono(), cpu0 = self_cpu_s();
    discover(c);
    pthread_mutex_lock(&c->mu);
    size_t n = c->n;
    int *pids = malloc((n ? n : 1) * sizeof *pids);
    unsigned long long *starts = malloc((n ? n : 1) * sizeof *starts);
    for (size_t i = 0; pids && starts && i < n; i++) {
        pids[i] = c->t[i].pid;
        starts[i] = c->t[i].start_ticks;
    }
    pthread_mutex_unlock(&c->mu);
    for (size_t i = 0; pids && starts && i < n && !g_stop; i++)
        diagnose(c, e, co, pids[i], starts[i]);
    free(pids);
    free(starts);
    pthread_mutex_lock(&c->mu);
    c->rounds++;
    c->last_round_s = now_mono() - t0;
    c->cpu_total_s += self_cpu_s() - cpu0;
    pthread_mutex_unlock(&c->mu);
}

/* ---- answers ---- */

static char *metrics(node_ctx *c, const char *accept, const char **type)
{
    pthread_mutex_lock(&c->mu);
    const char **texts = calloc(c->n ? c->n : 1, sizeof *texts);
    node_labels *labels = calloc(c->n ? c->n : 1, sizeof *labels);
    char(*pids)[16] = calloc(c->n ? c->n : 1, sizeof *pids);
    size_t k = 0;
    for (size_t i = 0; texts && labels && pids && i < c->n; i++) {
        node_target *t = &c->t[i];
        if (!t->om)
            continue;
        snprintf(pids[k], sizeof pids[k], "%d", t->pid);
        node_labels *L = &labels[k];
        L->name[0] = "pid";
        L->value[0] = pids[k];
        L->name[1] = "pod";
        L->value[1] = t->in_container ? t->ct.pod : NULL;
        L->name[2] = "namespace";
        L->value[2] = t->in_container ? t->ct.pod_namespace : NULL;
        L->name[3] = "container";
        L->value[3] = !t->in_container ? NULL : t->ct.container[0] ? t->ct.container : t->ct.name;
        L->n = 4;
        texts[k++] = t->om;
    }
    char tail[1024];
    snprintf(tail, sizeof tail,
             "# TYPE sop_node_targets gauge\n# HELP sop_node_targets Python processes watched\n"
             "sop_node_targets %zu\n"
             "# TYPE sop_node_rounds counter\n# HELP sop_node_rounds Rounds completed (one "
             "window per target each)\nsop_node_rounds_total %llu\n"
             "# TYPE sop_node_round_duration_seconds gauge\n# HELP "
             "sop_node_round_duration_seconds How long the last round took\n"
             "sop_node_round_duration_seconds %.6f\n"
             "# TYPE sop_node_cpu_seconds counter\n# HELP sop_node_cpu_seconds CPU time the "
             "agent spent in its rounds\nsop_node_cpu_seconds_total %.6f\n# EOF\n",
             c->n, c->rounds, c->last_round_s, c->cpu_total_s);
    char *body = texts && labels && pids ? cli_node_metrics(texts, labels, k, tail) : NULL;
    pthread_mutex_unlock(&c->mu);
    free(texts);
    free(labels);
    free(pids);
    *type = "application/openmetrics-text; version=1.0.0; charset=utf-8";
    if (body && !cli_accepts_openmetrics(accept)) {
        char *text = cli_openmetrics_to_text(body);
        free(body);
        body = text;
        *type = CLI_PROMTEXT_TYPE;
    }
    return body;
}

static void html_text(FILE *f, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '<')
            fputs("&lt;", f);
        else if (*p == '>')
            fputs("&gt;", f);
        else if (*p == '&')
            fputs("&amp;", f);
        else if (*p == '"')
            fputs("&quot;", f);
        else if (*p < 0x20 || *p >= 0x7f)
            fputc('?', f);
        else
            fputc(*p, f);
    }
}

static char *index_page(node_ctx *c)
{
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    if (!f)
        return NULL;
    double now = now_unix();
    pthread_mutex_lock(&c->mu);
    fprintf(f,
            "<!doctype html><meta charset=utf-8><title>sop node</title>\n"
            "<h1>sop node agent: %zu targets, %llu rounds, last round %.1f s</h1>\n"
            "<table border=1 cellpadding=4><tr><th>pid<th>container<th>pod<th>last "
            "window<th>findings</tr>\n",
            c->n, c->rounds, c->last_round_s);
    for (size_t i = 0; i < c->n; i++) {
        const node_target *t = &c->t[i];
        fprintf(f, "<tr><td>%d<td>", t->pid);
        if (t->in_container) {
            html_text(f, t->ct.name[0] ? t->ct.name : t->ct.id);
            fputs(" (", f);
            html_text(f, t->ct.runtime);
            fputs(")", f);
        }
        fputs("<td>", f);
        if (t->ct.pod[0]) {
            html_text(f, t->ct.pod_namespace);
            fputs("/", f);
            html_text(f, t->ct.pod);
        }
        if (t->last_unix > 0)
            fprintf(f, "<td>%.0f s ago<td>", now - t->last_unix);
        else
            fputs("<td>pending<td>", f);
        html_text(f, t->findings);
        fputs("</tr>\n", f);
    }
    pthread_mutex_unlock(&c->mu);
    fputs("</table>\n<p>/metrics, /report/PID and /report/pod/NAMESPACE/NAME (Unix socket), "
          "/healthz</p>\n",
          f);
    fclose(f);
    return out;
}

static char *report(node_ctx *c, const char *what, int *status)
{
    char *body = NULL;
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < c->n && !body; i++) {
        const node_target *t = &c->t[i];
        char key[600];
        snprintf(key, sizeof key, "%d", t->pid);
        int hit = strcmp(what, key) == 0;
        if (!hit && t->ct.pod[0] && strncmp(what, "pod/", 4) == 0) {
            snprintf(key, sizeof key, "pod/%s/%s", t->ct.pod_namespace, t->ct.pod);
            hit = strcmp(what, key) == 0;
        }
        if (hit && t->json)
            body = strdup(t->json);
    }
    pthread_mutex_unlock(&c->mu);
    if (!body) {
        *status = 404;
        return strdup("no such target, or its first window has not ended\n");
    }
    return body;
}

static char *serve(const cli_http_request *req, int *status, const char **type, void *ctx)
{
    node_ctx *c = ctx;
    const char *path = req->path;
    if (strcmp(path, "/metrics") == 0)
        return metrics(c, req->accept, type);
    if (strncmp(path, "/report/", 8) == 0) {
        if (!req->unix_socket) {
            *status = 403;
            return strdup("/report is served on a Unix socket only: --listen unix:PATH (mode "
                          "0600, the caller's)\n");
        }
        *type = sop_format_at(SOP_FORMAT_JSON)->mime;
        return report(c, path + 8, status);
    }
    if (strcmp(path, "/") == 0) {
        *type = "text/html; charset=utf-8";
        return index_page(c);
    }
    if (strcmp(path, "/healthz") == 0) {
        char buf[128];
        pthread_mutex_lock(&c->mu);
        snprintf(buf, sizeof buf, "ok: %zu targets, %llu rounds\n", c->n, c->rounds);
        pthread_mutex_unlock(&c->mu);
        return strdup(buf);
    }
    *status = 404;
    return strdup("not found: try /, /metrics, /report/PID or /healthz\n");
}

static const char HELP[] =
    "usage: sopctl watch --node [RULES.lua] [--containers-only] [--every S] [--duration S]\n"
    "                    [--rate HZ] [--listen ADDR:PORT|unix:PATH]... [--count ROUNDS]\n"
    "                    [--max-targets N] [--lang en|zh]\n"
    "Every Python process of this host (not a fork or multiprocessing worker of another), one\n"
    "window each, one at a time; a round every --every seconds (default 30; 1 s windows).\n"
    "/metrics labels each target's samples with pid (and pod, namespace, container);\n"
    "/ lists the targets; /report/PID and /report/pod/NAMESPACE/NAME on a Unix socket.\n";

int cmd_watch_node(int argc, char **argv)
{
    static const struct option opts[] = {{"node", no_argument, 0, 'n'},
                                         {"containers-only", no_argument, 0, 'C'},
                                         {"every", required_argument, 0, 'E'},
                                         {"duration", required_argument, 0, 'd'},
                                         {"rate", required_argument, 0, 'r'},
                                         {"listen", required_argument, 0, 'L'},
                                         {"count", required_argument, 0, 'c'},
                                         {"max-targets", required_argument, 0, 'm'},
                                         {"lang", required_argument, 0, 'l'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    node_ctx c;
    memset(&c, 0, sizeof c);
    c.max_targets = NODE_TARGETS_DEFAULT;
    c.lang = "en";
    double every_s = 30;
    long long v = 0, count = 0;
    const char *listen[NODE_LISTEN_MAX], *rules = NULL;
    int nlisten = 0, opt;
    sop_collect_opts co;
    sop_collect_opts_init(&co);
    optind = 1;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":d:r:h", opts, NULL)) != -1) {
        switch (opt) {
        case 'n':
            break;
        case 'C':
            c.containers_only = 1;
            break;
        case 'E':
            if (cli_parse_every(optarg, &every_s) != EXIT_CLEAN)
                return EXIT_USAGE;
            break;
        case 'd':
            if (cli_parse_duration(optarg, &co.duration_s) != 0) {
                fprintf(stderr, "sopctl: --duration: '%s' is not 0..3600 seconds\n", optarg);
                return EXIT_USAGE;
            }
            break;
        case 'r':
            if (cli_parse_rate(optarg, &co.rate_hz) != 0) {
                fprintf(stderr, "sopctl: --rate: '%s' is not 0..10000 Hz\n", optarg);
                return EXIT_USAGE;
            }
            break;
        case 'L':
            if (nlisten == NODE_LISTEN_MAX) {
                fprintf(stderr, "sopctl: --listen: at most %d\n", NODE_LISTEN_MAX);
                return EXIT_USAGE;
            }
            listen[nlisten++] = optarg;
            break;
        case 'c':
            if (cli_parse_count(optarg, 1000000000, &count) != 0) {
                fprintf(stderr, "sopctl: --count: '%s' is not a number of rounds\n", optarg);
                return EXIT_USAGE;
            }
            break;
        case 'm':
            if (cli_parse_count(optarg, NODE_TARGETS_LIMIT, &v) != 0) {
                fprintf(stderr, "sopctl: --max-targets: '%s' is not 1..%d\n", optarg,
                        NODE_TARGETS_LIMIT);
                return EXIT_USAGE;
            }
            c.max_targets = (size_t)v;
            break;
        case 'l':
            if (cli_parse_lang(optarg, &c.lang) != EXIT_CLEAN)
                return EXIT_USAGE;
            break;
        case 'h':
            fputs(HELP, stdout);
            return EXIT_CLEAN;
        case ':':
            fprintf(stderr, "sopctl: %s needs a value\n", argv[optind - 1]);
            return EXIT_USAGE;
        default:
            fprintf(stderr,
                    "sopctl: watch --node: unknown option '%s' (--pid and --out are for "
                    "one target)\n",
                    argv[optind - 1]);
            return EXIT_USAGE;
        }
    }
    if (optind < argc)
        rules = argv[optind++];
    if (optind < argc) {
        fprintf(stderr, "sopctl: unexpected argument '%s'\n", argv[optind]);
        return EXIT_USAGE;
    }
    if (cli_check_window(co.duration_s, co.rate_hz) != EXIT_CLEAN)
        return EXIT_USAGE;
    sop_engine *e = NULL;
    int rc = sop_engine_new(&e);
    if (rc != 0) {
        fprintf(stderr, "sopctl: %s\n", sop_strerror(rc));
        return EXIT_USAGE;
    }
    int status = cli_load_rules(e, rules, NULL, 0, NULL, 0);
    if (status != EXIT_CLEAN) {
        sop_engine_free(e);
        return status;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    pthread_mutex_init(&c.mu, NULL);
    c.py = cli_pyprocs_new();
    if (!c.py) {
        fprintf(stderr, "sopctl: out of memory\n");
        status = EXIT_USAGE;
    }
    co.stop = &g_stop;
    cli_http *http[NODE_LISTEN_MAX] = {0};
    for (int i = 0; i < nlisten && status == EXIT_CLEAN; i++) {
        char bound[160], err[512];
        if (cli_http_start(listen[i], serve, &c, &http[i], bound, sizeof bound, err, sizeof err)) {
            fprintf(stderr, "sopctl: --listen: %s\n", err);
            status = EXIT_USAGE;
        } else {
            cli_watch_log("node: listening on %s%s", strncmp(bound, "unix:", 5) ? "http://" : "",
                          bound);
        }
    }
    if (status == EXIT_CLEAN)
        cli_watch_log("node: every Python process%s: a %.3g s window each, a round every %.3g s",
                      c.containers_only ? " in a container" : "", co.duration_s, every_s);
    for (unsigned long long r = 0; status == EXIT_CLEAN && !g_stop; r++) {
        double t0 = now_mono();
        run_round(&c, e, &co);
        pthread_mutex_lock(&c.mu);
        cli_watch_log("node: round %llu: %zu targets in %.2f s", c.rounds, c.n, c.last_round_s);
        pthread_mutex_unlock(&c.mu);
        if (count > 0 && (double)(r + 1) >= count)
            break;
        while (!g_stop && now_mono() - t0 < every_s) {
            double left = every_s - (now_mono() - t0);
            struct timespec ts = {0, (long)((left < 0.1 ? left : 0.1) * 1e9)};
            nanosleep(&ts, NULL);
        }
    }
    for (int i = 0; i < nlisten; i++)
        cli_http_stop(http[i]);
    for (size_t i = 0; i < c.n; i++)
        target_clear(&c.t[i]);
    free(c.t);
    cli_pyprocs_free(c.py);
    pthread_mutex_destroy(&c.mu);
    sop_engine_free(e);
    return status;
}
