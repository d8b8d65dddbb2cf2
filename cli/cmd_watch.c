/* cmd_watch.c — `sopctl watch --pid N`: a window starting every interval (sop_watch, the same
 * rules and site policy as `run`); on a new warn/high finding (or one whose severity changed)
 * the full report (JSON + Markdown) goes to --out, the last K are kept, and --on-finding runs
 * with its path. /metrics, /report and /healthz on --listen (cli/http.c). The target's exit
 * ends the watch with a post-mortem; a pid taken over by another process is detected (its
 * start time) and not followed; SIGTERM/SIGINT stop it cleanly. Depends on sop.h, cli/http.h
 * and libc. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "http.h"
#include "promtext.h"
#include "sop.h"
#include "watch.h"

extern char **environ;

#define MAX_LISTEN 4 /* --listen options */

static double now_unix(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* starttime of /proc/PID/stat; 0 when the process is gone or a zombie (a zombie leader whose
 * other threads run on is a live process). */
static unsigned long long start_ticks_of(int pid)
{
    sop_process p;
    return sop_process_read(pid, &p) == 0 && p.alive ? p.start_ticks : 0;
}

/* The name of path inside --out (the part after the last '/'). */
static const char *leaf(const char *path)
{
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

/* Write text to path (in --out) through a temporary file and rename (a reader never sees half
 * a file). The temporary has an unpredictable name and is created O_EXCL|O_NOFOLLOW relative
 * to the --out directory fd, with the reports' mode: nothing planted in the directory (a
 * symlink, a FIFO, a name guessed in advance) is ever followed or written through. */
static int write_whole(const watch_ctx *c, const char *path, const char *text)
{
    char tmp[64];
    int fd = -1;
    for (int attempt = 0; fd < 0 && attempt < 16; attempt++) {
        unsigned char r[12];
        if (getentropy(r, sizeof r) != 0)
            return -1;
        int n = snprintf(tmp, sizeof tmp, ".sop-");
        for (size_t i = 0; i < sizeof r; i++)
            n += snprintf(tmp + n, sizeof tmp - (size_t)n, "%02x", r[i]);
        snprintf(tmp + n, sizeof tmp - (size_t)n, ".tmp");
        fd = openat(c->out_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                    c->out_mode);
        if (fd < 0 && errno != EEXIST)
            return -1;
    }
    if (fd < 0)
        return -1;
    size_t len = strlen(text), off = 0;
    int ok = fchmod(fd, c->out_mode) == 0; /* exactly the mode asked, whatever the umask */
    while (ok && off < len) {
        ssize_t w = write(fd, text + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        ok = w > 0;
        off += w > 0 ? (size_t)w : 0;
    }
    ok &= close(fd) == 0;
    if (!ok || renameat(c->out_fd, tmp, c->out_fd, leaf(path)) != 0) {
        int e = errno;
        unlinkat(c->out_fd, tmp, 0);
        errno = e;
        return -1;
    }
    return 0;
}

/* Remember base (path without extension); drop the oldest beyond --keep. */
static void keep_report(watch_ctx *c, const char *base)
{
    if (c->nkept == c->keep) {
        char *old = c->kept[c->kept_head];
        char name[PATH_MAX];
        if (old) {
            snprintf(name, sizeof name, "%s.json", leaf(old));
            unlinkat(c->out_fd, name, 0);
            snprintf(name, sizeof name, "%s.md", leaf(old));
            unlinkat(c->out_fd, name, 0);
            free(old);
        }
        c->kept[c->kept_head] = strdup(base);
        c->kept_head = (c->kept_head + 1) % c->keep;
    } else {
        c->kept[(c->kept_head + c->nkept++) % c->keep] = strdup(base);
    }
}

/* The report as JSON + Markdown in --out; path (without extension) in base. 0 or -1. */
static int write_report(watch_ctx *c, const sop_report *r, unsigned long long seq,
                        const char *suffix, char *base, size_t baselen)
{
    char stamp[32];
    time_t t = time(NULL);
    struct tm tm;
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", gmtime_r(&t, &tm));
    snprintf(base, baselen, "%s/sop-%d-%s-%llu%s", c->out_dir, c->pid, stamp, seq, suffix);
    char *json = NULL, *md = NULL;
    char path[PATH_MAX];
    int rc = -1;
    if (sop_report_render(r, SOP_FORMAT_JSON, c->lang, &json) == 0 &&
        sop_report_render(r, SOP_FORMAT_MD, c->lang, &md) == 0) {
        snprintf(path, sizeof path, "%s.md", base);
        if (write_whole(c, path, md) == 0) {
            snprintf(path, sizeof path, "%s.json", base);
            rc = write_whole(c, path, json);
        }
        if (rc != 0)
            cli_watch_log("cannot write %s: %s", path, strerror(errno));
    }
    sop_free(json);
    sop_free(md);
    if (rc == 0) {
        keep_report(c, base);
        snprintf(c->last_path, sizeof c->last_path, "%s.json", base);
        atomic_fetch_add(&c->reports_written, 1);
    }
    return rc;
}

/* s as a JSON string, escaped as every JSON text of sop is (paths are the user's, reasons may
 * quote a target): no raw control, bidi override or broken UTF-8 reaches the post-mortem. */
static void json_str(FILE *f, const char *s)
{
    char *q = NULL;
    if (sop_escape(s, SOP_ESCAPE_JSON, &q) == 0)
        fputs(q, f);
    else
        fputs("null", f);
    sop_free(q);
}

/* The post-mortem when there is no evidence to evaluate (the process exited between windows
 * and the kernel log holds no OOM kill of it, or its pid was taken by another process): a
 * report of schema 1 with no findings that says what happened, JSON + Markdown. */
static void write_note(watch_ctx *c, unsigned long long seq, const char *what, const char *why)
{
    if (!c->out_dir)
        return;
    char stamp[32], base[BASE_MAX], path[PATH_MAX];
    time_t t = time(NULL);
    struct tm tm;
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", gmtime_r(&t, &tm));
    snprintf(base, sizeof base, "%s/sop-%d-%s-%llu-postmortem", c->out_dir, c->pid, stamp, seq);
    char *text = NULL;
    size_t text_len = 0;
    FILE *f = open_memstream(&text, &text_len);
    if (!f) {
        cli_watch_log("cannot write the post-mortem %s: %s", base, strerror(errno));
        return;
    }
    fprintf(f, "{\"schema\": 1, \"target\": {\"pid\": %d, \"alive\": false},\n", c->pid);
    fprintf(f, " \"findings\": [], \"cleared\": [], \"unknown\": [], \"rule_errors\": [],\n");
    fprintf(f, " \"missing_evidence\": [{\"probe\": \"proc\", \"reason\": ");
    json_str(f, why);
    fprintf(f, "}],\n \"watch\": {\"end\": ");
    json_str(f, what);
    fprintf(f, ", \"windows\": %d, \"last_report\": ", c->ok_windows);
    if (c->last_path[0])
        json_str(f, c->last_path);
    else
        fputs("null", f);
    fprintf(f, "}}\n");
    int ok = fclose(f) == 0;
    snprintf(path, sizeof path, "%s.json", base);
    ok = ok && write_whole(c, path, text) == 0;
    free(text);
    text = NULL;
    f = ok ? open_memstream(&text, &text_len) : NULL;
    if (f) {
        char *mwhat = NULL, *mwhy = NULL, *mlast = NULL;
        sop_escape(what, SOP_ESCAPE_MARKDOWN, &mwhat);
        sop_escape(why, SOP_ESCAPE_MARKDOWN, &mwhy);
        sop_escape(c->last_path[0] ? c->last_path : "none", SOP_ESCAPE_MARKDOWN, &mlast);
        fprintf(f,
                "# sop report: pid %d [exited]\n\n**%s.** %s.\n\nWindows observed: %d; last "
                "report: %s\n",
                c->pid, mwhat ? mwhat : "?", mwhy ? mwhy : "?", c->ok_windows, mlast ? mlast : "?");
        sop_free(mwhat);
        sop_free(mwhy);
        sop_free(mlast);
        ok = fclose(f) == 0;
        snprintf(path, sizeof path, "%s.md", base);
        ok = ok && write_whole(c, path, text) == 0;
        free(text);
    }
    if (!ok) {
        cli_watch_log("cannot write the post-mortem %s: %s", base, strerror(errno));
        return;
    }
    keep_report(c, base);
    snprintf(c->last_path, sizeof c->last_path, "%s.json", base);
    atomic_fetch_add(&c->reports_written, 1);
    cli_watch_log("post-mortem report %s.json", base);
}

static void end_watch(watch_ctx *c, int status)
{
    atomic_store(&c->end_status, status);
    atomic_store(&c->ended, 1);
    pthread_kill(c->main_thread, SIGUSR1); /* wakes main's sigwait */
}

/* Warn/high findings of r that are new since the last window, or changed severity; the list
 * of this window's replaces the last. Writes "id (sev), ..." into what. */
static int new_problems(watch_ctx *c, const sop_report *r, char *what, size_t whatlen)
{
    finding_key cur[MAX_PROBLEMS];
    int ncur = 0, nnew = 0;
    const char *id, *sev;
    what[0] = '\0';
    for (size_t i = 0; ncur < MAX_PROBLEMS && sop_report_finding(r, i, &id, &sev) == 0; i++) {
        if (strcmp(sev, "high") != 0 && strcmp(sev, "warn") != 0)
            continue;
        snprintf(cur[ncur].id, sizeof cur[ncur].id, "%s", id);
        snprintf(cur[ncur].severity, sizeof cur[ncur].severity, "%s", sev);
        int seen = 0;
        for (int j = 0; j < c->nprev && !seen; j++)
            seen = strcmp(c->prev[j].id, cur[ncur].id) == 0 &&
                   strcmp(c->prev[j].severity, cur[ncur].severity) == 0;
        if (!seen) {
            size_t len = strlen(what);
            snprintf(what + len, whatlen - len, "%s%s (%s)", nnew ? ", " : "", id, sev);
            nnew++;
        }
        ncur++;
    }
    memcpy(c->prev, cur, sizeof cur[0] * (size_t)ncur);
    c->nprev = ncur;
    return nnew;
}

static void keep_json(watch_ctx *c, const sop_report *r)
{
    char *json = NULL;
    if (sop_report_render(r, SOP_FORMAT_JSON, c->lang, &json) != 0)
        return;
    pthread_mutex_lock(&c->mu);
    sop_free(c->last_json);
    c->last_json = json;
    c->last_ok_unix = now_unix();
    pthread_mutex_unlock(&c->mu);
}

/* On the watch's thread, after each window. */
static void on_window(const sop_watch_event *ev, void *user)
{
    watch_ctx *c = user;
    if (atomic_load(&c->ended))
        return;
    unsigned long long now_ticks = start_ticks_of(c->pid);
    char base[BASE_MAX];
    if (ev->rc == 0 && ev->report && now_ticks == 0 && !c->pm_retried && c->w) {
        /* The window read the target alive and it died right after (an OOM kill lands between
         * the window and this check): its report is not the post-mortem. One more window, at
         * once, reads the dead pid (the library's post-mortem, an OOM kill in the kernel log). */
        c->pm_retried = 1;
        sop_watch_trigger(c->w);
        return;
    }
    if (ev->rc == SOP_ENOTARGET || now_ticks == 0) {
        /* Gone. A post-mortem the library could make (an OOM kill in the kernel log: evidence
         * with alive = false), or the window that just ended, is the report; else a note. */
        if (ev->rc == 0 && ev->report) {
            keep_json(c, ev->report);
            int problem = sop_report_has_problem(ev->report);
            char *summary = NULL;
            sop_report_summary(ev->report, c->lang, &summary);
            cli_watch_log("target pid %d has ended; its last window: %s", c->pid,
                          summary ? summary : "");
            sop_free(summary);
            if (c->out_dir &&
                write_report(c, ev->report, ev->seq, "-postmortem", base, sizeof base) == 0) {
                cli_watch_log("post-mortem report %s.json", base);
                if (problem && c->on_finding) {
                    char json[PATH_MAX], md[PATH_MAX];
                    snprintf(json, sizeof json, "%s.json", base);
                    snprintf(md, sizeof md, "%s.md", base);
                    cli_watch_run_hook(c, json, md);
                }
            }
            end_watch(c, problem ? EXIT_FINDING : EXIT_TARGET);
        } else {
            cli_watch_log("target pid %d has exited (no OOM kill of it in the kernel log)", c->pid);
            write_note(c, ev->seq, "The target exited",
                       "the process exited between two windows; the kernel log holds no OOM "
                       "kill of it");
            end_watch(c, EXIT_TARGET);
        }
        return;
    }
    if (now_ticks != c->start_ticks) {
        cli_watch_log(
            "pid %d now belongs to another process (its start time changed): the target is "
            "gone; not following the new one",
            c->pid);
        write_note(c, ev->seq, "The target's pid was reused",
                   "the process exited and its pid now belongs to another process (start time "
                   "changed); that process is not diagnosed");
        end_watch(c, EXIT_TARGET);
        return;
    }
    if (ev->rc != 0) {
        cli_watch_log("window #%llu failed: %s", ev->seq, ev->error);
        if (c->ok_windows == 0) /* never readable: as `run` would, stop */
            end_watch(c, cli_exit_for(ev->rc));
        return;
    }
    c->ok_windows++;
    keep_json(c, ev->report);
    char *summary = NULL;
    sop_report_summary(ev->report, c->lang, &summary);
    cli_watch_log("window #%llu (%.0f ms): %s", ev->seq, ev->run_ms, summary ? summary : "");
    sop_free(summary);
    char what[1024];
    if (new_problems(c, ev->report, what, sizeof what) > 0) {
        cli_watch_log("new or changed: %s", what);
        if (c->out_dir && write_report(c, ev->report, ev->seq, "", base, sizeof base) == 0) {
            cli_watch_log("report %s.json", base);
            if (c->on_finding) {
                char json[PATH_MAX], md[PATH_MAX];
                snprintf(json, sizeof json, "%s.json", base);
                snprintf(md, sizeof md, "%s.md", base);
                cli_watch_run_hook(c, json, md);
            }
        }
    }
    if (c->max_windows && ev->seq >= c->max_windows)
        end_watch(c, EXIT_CLEAN);
}

/* The HTTP server's answers (its own thread). */
static char *serve(const cli_http_request *req, int *status, const char **type, void *ctx)
{
    watch_ctx *c = ctx;
    const char *path = req->path, *accept = req->accept;
    if (strcmp(path, "/metrics") == 0) {
        char *om = NULL;
        pthread_mutex_lock(&c->mu);
        int rc = sop_watch_openmetrics(c->w, &om);
        pthread_mutex_unlock(&c->mu);
        if (rc != 0)
            return NULL;
        static const char tail[] =
            "# TYPE sop_watch_reports_written counter\n"
            "# HELP sop_watch_reports_written Reports written to --out\n"
            "sop_watch_reports_written_total %llu\n"
            "# TYPE sop_watch_on_finding_failures counter\n"
            "# HELP sop_watch_on_finding_failures --on-finding commands that could not run or "
            "failed\n"
            "sop_watch_on_finding_failures_total %llu\n# EOF\n";
        unsigned long long nw = atomic_load(&c->reports_written);
        unsigned long long nf = atomic_load(&c->hooks_failed);
        size_t len = strlen(om) + sizeof tail + 48;
        char *body = malloc(len);
        if (body) {
            int k = snprintf(body, len, "%s", om);
            snprintf(body + k, len - (size_t)k, tail, nw, nf);
        }
        sop_free(om);
        *type = "application/openmetrics-text; version=1.0.0; charset=utf-8";
        if (body && !cli_accepts_openmetrics(accept)) { /* curl, promtool, older scrapers */
            char *text = cli_openmetrics_to_text(body);
            free(body);
            body = text;
            *type = CLI_PROMTEXT_TYPE;
        }
        return body;
    }
    if (strcmp(path, "/report") == 0) {
        if (!req->unix_socket) {
            /* The report quotes command lines, source lines, thread and file names: only for
             * whoever may open the 0600 socket, not for every local user (docs/security.md). */
            *status = 403;
            return strdup("/report is served on a Unix socket only: --listen unix:PATH (mode "
                          "0600, the caller's)\n");
        }
        pthread_mutex_lock(&c->mu);
        char *body = c->last_json ? strdup(c->last_json) : NULL;
        pthread_mutex_unlock(&c->mu);
        if (body) {
            *type = sop_format_at(SOP_FORMAT_JSON)->mime;
            return body;
        }
        *status = 503;
        return strdup("no window has completed yet\n");
    }
    if (strcmp(path, "/healthz") == 0) {
        char buf[160];
        pthread_mutex_lock(&c->mu);
        double last = c->last_ok_unix;
        pthread_mutex_unlock(&c->mu);
        if (last > 0)
            snprintf(buf, sizeof buf, "ok: watching pid %d, last window %.0f s ago\n", c->pid,
                     now_unix() - last);
        else
            snprintf(buf, sizeof buf, "ok: watching pid %d, first window in progress\n", c->pid);
        return strdup(buf);
    }
    *status = 404;
    return strdup("not found: try /metrics, /report or /healthz\n");
}

static const char HELP[] =
    "usage: sopctl watch [RULES.lua] --pid N [--every S] [--duration S] [--rate HZ]\n"
    "                    [--listen ADDR:PORT|unix:PATH]... [--out DIR [--out-mode 0600]] [--keep "
    "K]\n"
    "                    [--on-finding CMD [--shell]] [--count N] [--lang en|zh]\n"
    "                    [--set KEY=VALUE]... [--site FILE | --no-site]\n"
    "  a --duration window (default 1 s) starting every --every seconds (default 30), the first\n"
    "  at once: a fixed rate, whatever a window and its rules take; one that ends late starts\n"
    "  the next at once (missed starts are not made up). --duration may not exceed --every.\n"
    "  on a new or changed warn/high finding: the report (JSON + Markdown) in --out, the last\n"
    "  K (default 20) kept, and CMD run with the report's path as its last argument (no shell\n"
    "  unless --shell: then sh -c CMD with the path as $1). --out must be the caller's and not\n"
    "  writable by others; reports are 0600 unless --out-mode says otherwise (at most 0644).\n"
    "  --listen ADDR:PORT serves /metrics (OpenMetrics, or the Prometheus text format) and\n"
    "  /healthz over TCP; ADDR defaults to 127.0.0.1, port 0 takes a free one (logged).\n"
    "  --listen unix:PATH serves them and /report (the last JSON report) on a Unix socket\n"
    "  created 0600 (only the caller may connect) in a directory of the caller's that others\n"
    "  cannot write; /report is never served over TCP. At most 4 --listen.\n"
    "exit status: 0 stopped by SIGTERM/SIGINT or after --count windows; 1 the target ended and\n"
    "  its post-mortem has a warn/high finding (an OOM kill); 3 the target ended otherwise, its\n"
    "  pid was reused, or it was never there/readable; 2 usage, rules, --out or --listen.\n";

/* What `watch`'s command line asks for beside the watch's own state (watch_ctx). */
typedef struct {
    double every_s;
    const char *listen[MAX_LISTEN], *site, *rules;
    int nlisten, no_site, nsets;
    char *sets[CLI_MAX_SETS];
    sop_collect_opts co;
} watch_args;

/* One option into c or a: EXIT_CLEAN to go on, else the exit status (-1: --help printed). */
static int watch_option(watch_ctx *c, watch_args *a, int opt, char **argv)
{
    long long n = 0;
    switch (opt) {
    case 'E':
        return cli_parse_every(optarg, &a->every_s);
    case 'L':
        if (a->nlisten == MAX_LISTEN) {
            fprintf(stderr, "sopctl: --listen: at most %d\n", MAX_LISTEN);
            return EXIT_USAGE;
        }
        a->listen[a->nlisten++] = optarg;
        return EXIT_CLEAN;
    case 'o':
        c->out_dir = optarg;
        return EXIT_CLEAN;
    case 'M': {
        char *end = NULL;
        unsigned long m = strtoul(optarg, &end, 8);
        if (!*optarg || *end || (m & ~0644ul) || !(m & 0400)) {
            fprintf(stderr,
                    "sopctl: --out-mode: '%s' is not an octal mode within 0644 with the "
                    "owner's read bit (0600, 0640, 0644)\n",
                    optarg);
            return EXIT_USAGE;
        }
        c->out_mode = (mode_t)m;
        return EXIT_CLEAN;
    }
    case 'k':
        if (cli_parse_count(optarg, MAX_KEEP, &n) != 0) {
            fprintf(stderr, "sopctl: --keep: '%s' is not 1..%d\n", optarg, MAX_KEEP);
            return EXIT_USAGE;
        }
        c->keep = (int)n;
        return EXIT_CLEAN;
    case 'F':
        c->on_finding = optarg;
        return EXIT_CLEAN;
    case 'H':
        c->hook_shell = 1;
        return EXIT_CLEAN;
    case 'c':
        if (cli_parse_count(optarg, 1000000000, &n) != 0) {
            fprintf(stderr, "sopctl: --count: '%s' is not a number of windows\n", optarg);
            return EXIT_USAGE;
        }
        c->max_windows = (unsigned long long)n;
        return EXIT_CLEAN;
    case 'l':
        return cli_parse_lang(optarg, &c->lang);
    case 's':
        return cli_push_set(a->sets, &a->nsets, optarg);
    case 'S':
        a->site = optarg;
        return EXIT_CLEAN;
    case 'N':
        a->no_site = 1;
        return EXIT_CLEAN;
    case 'h':
        fputs(HELP, stdout);
        return -1;
    default:
        return cli_window_opt(opt, optarg, argv[optind - 1], &c->pid, &a->co.duration_s,
                              &a->co.rate_hz);
    }
}

/* The options and arguments, checked together; EXIT_CLEAN, or the exit status (-1: --help). */
static int watch_parse(watch_ctx *c, watch_args *a, int argc, char **argv)
{
    static const struct option opts[] = {{"pid", required_argument, 0, 'p'},
                                         {"duration", required_argument, 0, 'd'},
                                         {"rate", required_argument, 0, 'r'},
                                         {"every", required_argument, 0, 'E'},
                                         {"listen", required_argument, 0, 'L'},
                                         {"out", required_argument, 0, 'o'},
                                         {"keep", required_argument, 0, 'k'},
                                         {"on-finding", required_argument, 0, 'F'},
                                         {"shell", no_argument, 0, 'H'},
                                         {"count", required_argument, 0, 'c'},
                                         {"lang", required_argument, 0, 'l'},
                                         {"set", required_argument, 0, 's'},
                                         {"site", required_argument, 0, 'S'},
                                         {"no-site", no_argument, 0, 'N'},
                                         {"out-mode", required_argument, 0, 'M'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int opt;
    optind = 1;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":p:d:r:o:s:h", opts, NULL)) != -1) {
        int st = watch_option(c, a, opt, argv);
        if (st != EXIT_CLEAN)
            return st;
    }
    if (optind < argc)
        a->rules = argv[optind++];
    if (optind < argc) {
        fprintf(stderr, "sopctl: unexpected argument '%s'\n", argv[optind]);
        return EXIT_USAGE;
    }
    if (c->pid <= 0) {
        fprintf(stderr, "sopctl: watch needs --pid N\n");
        return EXIT_USAGE;
    }
    if (a->co.duration_s > a->every_s) {
        /* Windows start every --every seconds: a longer window cannot (usage, not a clamp,
         * so that the window measured is the one asked for). */
        fprintf(stderr,
                "sopctl: watch: --duration %g s is longer than --every %g s: a window starts "
                "every --every seconds and must fit in it (raise --every or lower --duration)\n",
                a->co.duration_s, a->every_s);
        return EXIT_USAGE;
    }
    if (c->on_finding) {
        char *buf = malloc(strlen(c->on_finding) + 1);
        char *words[MAX_HOOK_ARGS];
        int n = buf ? cli_watch_split_words(c->on_finding, buf, words, MAX_HOOK_ARGS) : -1;
        free(buf);
        if (n <= 0) {
            fprintf(stderr,
                    "sopctl: --on-finding: '%s' is not a command (empty, unbalanced "
                    "quotes or more than %d words)\n",
                    c->on_finding, MAX_HOOK_ARGS);
            return EXIT_USAGE;
        }
        if (!c->out_dir) {
            fprintf(stderr, "sopctl: --on-finding needs --out DIR (it gets the report's path)\n");
            return EXIT_USAGE;
        }
    }
    if (c->out_dir && strlen(c->out_dir) > OUT_MAX) {
        fprintf(stderr, "sopctl: --out: the path is longer than %d bytes\n", OUT_MAX);
        return EXIT_USAGE;
    }
    return EXIT_CLEAN;
}

/* --out DIR, opened once: every report file is made relative to that fd. It must be the
 * caller's and writable by nobody else: in a directory another user can write, that user
 * could plant or swap the names root writes to. EXIT_CLEAN or EXIT_USAGE (c->out_fd closed). */
static int open_out_dir(watch_ctx *c)
{
    if (mkdir(c->out_dir, 0700) != 0 && errno != EEXIST) {
        fprintf(stderr, "sopctl: --out %s: %s\n", c->out_dir, strerror(errno));
        return EXIT_USAGE;
    }
    c->out_fd = open(c->out_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (c->out_fd < 0 || fstat(c->out_fd, &st) != 0) {
        fprintf(stderr, "sopctl: --out %s: not a directory (%s)\n", c->out_dir,
                strerror(errno == ELOOP ? ENOTDIR : errno));
        return EXIT_USAGE;
    }
    const char *why = NULL;
    char msg[96];
    if (st.st_uid != geteuid()) {
        snprintf(msg, sizeof msg, "refused: owned by uid %u, not by the caller (uid %u)",
                 (unsigned)st.st_uid, (unsigned)geteuid());
        why = msg;
    } else if (st.st_mode & 022) {
        snprintf(msg, sizeof msg, "refused: writable by others (mode %04o; chmod go-w)",
                 (unsigned)(st.st_mode & 07777));
        why = msg;
    } else if (faccessat(c->out_fd, ".", W_OK, AT_EACCESS) != 0) {
        why = "not a writable directory";
    }
    if (why) {
        fprintf(stderr, "sopctl: --out %s: %s\n", c->out_dir, why);
        close(c->out_fd);
        c->out_fd = -1;
        return EXIT_USAGE;
    }
    return EXIT_CLEAN;
}

/* Each --listen started (its address logged); EXIT_CLEAN or EXIT_USAGE. */
static int start_listeners(watch_ctx *c, const watch_args *a, cli_http **http)
{
    for (int i = 0; i < a->nlisten; i++) {
        char bound[160], err[512];
        if (cli_http_start(a->listen[i], serve, c, &http[i], bound, sizeof bound, err,
                           sizeof err) != 0) {
            fprintf(stderr, "sopctl: --listen: %s\n", err);
            return EXIT_USAGE;
        }
        if (strncmp(bound, "unix:", 5) == 0)
            cli_watch_log("listening on %s (/metrics, /report, /healthz; mode 0600)", bound);
        else
            cli_watch_log("listening on http://%s/metrics", bound);
    }
    return EXIT_CLEAN;
}

/* The watch runs (its first window now) until a signal or its end: the exit status. */
static int watch_until_end(watch_ctx *c, const watch_args *a, sigset_t *set)
{
    cli_watch_log("watching pid %d: a %.3g s window every %.3g s%s%s", c->pid, a->co.duration_s,
                  a->every_s, c->out_dir ? ", reports in " : "", c->out_dir ? c->out_dir : "");
    sop_watch_trigger(c->w); /* the first window now, then one every interval */
    const char *why = NULL;
    while (!why) {
        siginfo_t info;
        int sig = sigwaitinfo(set, &info);
        if (sig == SIGCHLD)
            cli_watch_reap_hooks(c);
        else if (sig == SIGTERM || sig == SIGINT)
            why = sig == SIGTERM ? "SIGTERM" : "SIGINT";
        else if (sig == SIGUSR1 && atomic_load(&c->ended))
            why = "end";
    }
    if (strcmp(why, "end") != 0) {
        cli_watch_log("%s: stopping after %llu windows", why, sop_watch_runs(c->w));
        return EXIT_CLEAN;
    }
    cli_watch_finish_hooks(c);
    return atomic_load(&c->end_status);
}

/* The watch (which takes e over) and its listeners, with SIGTERM, SIGINT, SIGCHLD and SIGUSR1
 * taken by this thread alone; everything stopped and freed before it returns the exit status. */
static int watch_run(watch_ctx *c, const watch_args *a, sop_engine *e)
{
    /* Every thread started from here on (the watch's, the HTTP server's) inherits this mask:
     * the signals below reach main's sigwaitinfo only. */
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &set, &old);
    signal(SIGPIPE, SIG_IGN);
    c->main_thread = pthread_self();
    pthread_mutex_init(&c->mu, NULL);

    sop_watch_config cfg;
    sop_watch_config_init(&cfg);
    cfg.pid = c->pid;
    cfg.interval_s = a->every_s;
    cfg.collect = a->co;
    pthread_mutex_lock(&c->mu); /* serve() waits until c->w is set */
    int rc = sop_watch_new(e, &cfg, on_window, c, &c->w);
    pthread_mutex_unlock(&c->mu);
    cli_http *http[MAX_LISTEN] = {0};
    int status = EXIT_CLEAN;
    if (rc != 0) {
        fprintf(stderr, "sopctl: watch: %s\n", sop_strerror(rc));
        status = EXIT_USAGE;
    }
    if (status == EXIT_CLEAN)
        status = start_listeners(c, a, http);
    if (status == EXIT_CLEAN)
        status = watch_until_end(c, a, &set);
    for (int i = 0; i < a->nlisten; i++)
        cli_http_stop(http[i]); /* before the watch: serve() reads it */
    sop_watch_free(c->w);       /* waits for a window in progress */
    cli_watch_reap_hooks(c);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_mutex_destroy(&c->mu);
    return status;
}

int cmd_watch(int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--node") == 0)
            return cmd_watch_node(argc, argv);
    watch_ctx c;
    memset(&c, 0, sizeof c);
    c.pid = -1;
    c.out_fd = -1;
    c.out_mode = 0600;
    c.keep = 20;
    c.lang = "en";
    watch_args a = {.every_s = 30};
    sop_collect_opts_init(&a.co);
    int status = watch_parse(&c, &a, argc, argv);
    if (status != EXIT_CLEAN)
        return status < 0 ? EXIT_CLEAN : status;
    if (c.out_dir && (status = open_out_dir(&c)) != EXIT_CLEAN)
        return status;
    c.start_ticks = start_ticks_of(c.pid);
    if (c.start_ticks == 0) {
        fprintf(stderr, "sopctl: watch: pid %d: %s\n", c.pid, sop_strerror(SOP_ENOTARGET));
        return EXIT_TARGET;
    }
    c.kept = calloc((size_t)c.keep, sizeof *c.kept);
    if (!c.kept) {
        fprintf(stderr, "sopctl: out of memory\n");
        return EXIT_USAGE;
    }
    sop_engine *e = NULL;
    int rc = sop_engine_new(&e);
    if (rc != 0) {
        fprintf(stderr, "sopctl: %s\n", sop_strerror(rc));
        free(c.kept);
        return EXIT_USAGE;
    }
    status = cli_load_rules(e, a.rules, a.site, a.no_site, a.sets, a.nsets);
    if (status == EXIT_CLEAN)
        status = watch_run(&c, &a, e); /* the watch takes the engine over */
    else
        sop_engine_free(e);
    for (int i = 0; i < c.nkept; i++)
        free(c.kept[(c.kept_head + i) % c.keep]);
    free(c.kept);
    sop_free(c.last_json);
    return status;
}
