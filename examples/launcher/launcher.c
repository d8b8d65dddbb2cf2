/* launcher.c — a serving framework's launcher in miniature, embedding libsop: it starts the
 * server command as its child, health-checks http://127.0.0.1:PORT/health, and when a check
 * is slow asks a sop_watch to diagnose the child; the watch writes the JSON report to a file
 * and a one-line summary to the log, and serving goes on. Depends on libsop (sop.h) and libc. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sop.h"

typedef struct {
    int port;
    const char *report_dir;
    const char *metrics_file; /* sop's series for node_exporter's textfile collector */
    const char *log_path;
    const char *rules;
    const char *site;
    double check_interval_s;
    double slow_ms;
    double timeout_ms;
    double cooldown_s;
    double duration_s;
    double startup_s;
} config;

static volatile sig_atomic_t stop_signal;
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static FILE *log_file;

static void on_signal(int sig)
{
    stop_signal = sig;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...)
{
    char stamp[32];
    time_t t = time(NULL);
    struct tm tm;
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", localtime_r(&t, &tm));
    pthread_mutex_lock(&log_mu);
    fprintf(log_file, "%s launcher: ", stamp);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(log_file, fmt, ap);
    va_end(ap);
    fputc('\n', log_file);
    fflush(log_file);
    pthread_mutex_unlock(&log_mu);
}

static void sleep_ms(double ms)
{
    if (ms <= 0)
        return;
    struct timespec ts = {(time_t)(ms / 1e3),
                          (long)((ms - (double)(time_t)(ms / 1e3) * 1e3) * 1e6)};
    nanosleep(&ts, NULL); /* a signal ends it early: the loop checks stop_signal */
}

/* Runs on the watch's thread: keep the report, log one line. */
static void on_report(const sop_watch_event *ev, void *user)
{
    const config *cfg = user;
    if (ev->rc != 0) {
        logf_("diagnosis #%llu of pid %d failed: %s", ev->seq, ev->pid, ev->error);
        return;
    }
    char *json = NULL, *summary = NULL;
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/sop-report-%d-%llu.json", cfg->report_dir, ev->pid, ev->seq);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    if (sop_report_render(ev->report, SOP_FORMAT_JSON, "en", &json) != 0 ||
        sop_report_summary(ev->report, "en", &summary) != 0) {
        logf_("diagnosis #%llu of pid %d: out of memory", ev->seq, ev->pid);
    } else {
        /* Written whole, then renamed: a reader never sees half a report. */
        FILE *f = fopen(tmp, "w");
        int ok = f && fputs(json, f) >= 0;
        if (f && fclose(f) != 0)
            ok = 0;
        if (ok && rename(tmp, path) == 0)
            logf_("diagnosis #%llu of pid %d (%.0f ms): %s; report %s", ev->seq, ev->pid,
                  ev->run_ms, summary, path);
        else
            logf_("diagnosis #%llu of pid %d: cannot write %s: %s", ev->seq, ev->pid, path,
                  strerror(errno));
    }
    sop_free(json);
    sop_free(summary);
    /* The same diagnosis as Prometheus series (sop_report_openmetrics), for a metrics
     * endpoint the launcher already has — here a file for node_exporter's textfile collector
     * (text format 0.0.4, which the text also is). Written whole, then renamed. */
    char *om = NULL;
    if (cfg->metrics_file && sop_report_openmetrics(ev->report, ev->evidence, &om) == 0) {
        snprintf(tmp, sizeof tmp, "%s.tmp", cfg->metrics_file);
        FILE *f = fopen(tmp, "w");
        int ok = f && fputs(om, f) >= 0;
        if (f && fclose(f) != 0)
            ok = 0;
        if (!ok || rename(tmp, cfg->metrics_file) != 0)
            logf_("cannot write %s: %s", cfg->metrics_file, strerror(errno));
    }
    sop_free(om);
}

/* GET /health. Returns the latency in ms, or -1 when it failed (why: in `why`). When no answer
 * came within slow_ms, logs it and — when `w` is not NULL — triggers a diagnosis right then,
 * while the server is still stuck (*slow_fired = 1); then keeps waiting up to timeout_ms. */
static double health_check(int pid, int port, double slow_ms, double timeout_ms, sop_watch *w,
                           int *slow_fired, char *why, size_t whylen)
{
    double t0 = now_ms();
    *slow_fired = 0;
    int noted_slow = 0;
    snprintf(why, whylen, "no answer within %.0f ms", timeout_ms);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(why, whylen, "socket: %s", strerror(errno));
        return -1;
    }
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    static const char req[] = "GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        write(fd, req, sizeof req - 1) != (ssize_t)(sizeof req - 1)) {
        snprintf(why, whylen, "connect: %s", strerror(errno));
        close(fd);
        return -1;
    }
    char buf[512];
    int got_status = 0;
    for (int rounds = 0; rounds < 10000; rounds++) {
        double waited = now_ms() - t0;
        if (waited >= timeout_ms)
            break;
        double until = !noted_slow && waited < slow_ms ? slow_ms : timeout_ms;
        struct pollfd p = {fd, POLLIN, 0};
        int n = poll(&p, 1, (int)(until - waited) + 1);
        if (n < 0 && errno == EINTR) {
            if (stop_signal)
                break;
            continue;
        }
        if (n == 0) {
            if (!noted_slow && now_ms() - t0 >= slow_ms) {
                noted_slow = 1;
                if (w) {
                    *slow_fired = 1;
                    sop_watch_trigger(w); /* diagnose while it is still slow */
                }
                logf_("health check of pid %d: no answer after %.0f ms%s", pid, slow_ms,
                      w ? ": diagnosing" : "");
            }
            continue;
        }
        ssize_t r = read(fd, buf, sizeof buf);
        if (r > 0) {
            got_status |= r >= 12 && memcmp(buf, "HTTP/1.", 7) == 0;
            continue;
        }
        if (r < 0)
            snprintf(why, whylen, "read: %s", strerror(errno));
        else if (!got_status)
            snprintf(why, whylen, "closed without an HTTP answer");
        break; /* EOF (HTTP/1.0: the response is complete) or error */
    }
    close(fd);
    return got_status ? now_ms() - t0 : -1;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: launcher --port N --report-dir DIR [--metrics-file FILE.prom] [--log FILE]\n"
            "                [--rules FILE] [--site FILE]\n"
            "                [--interval S] [--slow-ms MS] [--timeout-ms MS] [--cooldown S]\n"
            "                [--duration S] [--startup S] -- SERVER-COMMAND...\n");
}

static int parse_args(int argc, char **argv, config *c)
{
    static const struct option opts[] = {{"port", required_argument, 0, 'p'},
                                         {"report-dir", required_argument, 0, 'r'},
                                         {"log", required_argument, 0, 'l'},
                                         {"rules", required_argument, 0, 'R'},
                                         {"site", required_argument, 0, 'S'},
                                         {"interval", required_argument, 0, 'i'},
                                         {"slow-ms", required_argument, 0, 's'},
                                         {"timeout-ms", required_argument, 0, 't'},
                                         {"cooldown", required_argument, 0, 'c'},
                                         {"duration", required_argument, 0, 'd'},
                                         {"startup", required_argument, 0, 'u'},
                                         {"metrics-file", required_argument, 0, 'm'},
                                         {0, 0, 0, 0}};
    *c = (config){.check_interval_s = 0.5,
                  .slow_ms = 300,
                  .timeout_ms = 5000,
                  .cooldown_s = 5,
                  .duration_s = 0.5,
                  .startup_s = 30};
    int ch;
    while ((ch = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
        switch (ch) {
        case 'p':
            c->port = atoi(optarg);
            break;
        case 'r':
            c->report_dir = optarg;
            break;
        case 'm':
            c->metrics_file = optarg;
            break;
        case 'l':
            c->log_path = optarg;
            break;
        case 'R':
            c->rules = optarg;
            break;
        case 'S':
            c->site = optarg;
            break;
        case 'i':
            c->check_interval_s = atof(optarg);
            break;
        case 's':
            c->slow_ms = atof(optarg);
            break;
        case 't':
            c->timeout_ms = atof(optarg);
            break;
        case 'c':
            c->cooldown_s = atof(optarg);
            break;
        case 'd':
            c->duration_s = atof(optarg);
            break;
        case 'u':
            c->startup_s = atof(optarg);
            break;
        default:
            return -1;
        }
    }
    if (c->port <= 0 || c->port > 65535 || !c->report_dir || optind >= argc ||
        c->check_interval_s <= 0 || c->slow_ms <= 0 || c->timeout_ms < c->slow_ms)
        return -1;
    return optind;
}

static pid_t spawn(char **cmd)
{
    pid_t launcher = getpid();
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    prctl(PR_SET_PDEATHSIG, SIGTERM); /* never outlive the launcher */
    if (getppid() != launcher)
        _exit(127);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execvp(cmd[0], cmd);
    fprintf(stderr, "launcher: cannot run %s: %s\n", cmd[0], strerror(errno));
    _exit(127);
}

/* The engine the watch will own: rules, then the site file. */
static sop_engine *make_engine(const config *cfg)
{
    sop_engine *e = NULL;
    if (sop_engine_new(&e) != 0)
        return NULL;
    int rc = cfg->rules ? sop_load_rules_file(e, cfg->rules) : sop_load_rules_default(e);
    if (rc == 0 && cfg->site)
        rc = sop_load_site_file(e, cfg->site);
    if (rc != 0) {
        logf_("rules: %s", sop_last_error(e));
        sop_engine_free(e);
        return NULL;
    }
    return e;
}

int main(int argc, char **argv)
{
    config cfg;
    int cmd_at = parse_args(argc, argv, &cfg);
    if (cmd_at < 0) {
        usage();
        return 2;
    }
    log_file = stderr;
    if (cfg.log_path && !(log_file = fopen(cfg.log_path, "a"))) {
        fprintf(stderr, "launcher: %s: %s\n", cfg.log_path, strerror(errno));
        return 2;
    }
    if (sop_version_hex() >> 8 != SOP_VERSION_HEX >> 8)
        logf_("warning: built against libsop %s, running with %s", SOP_VERSION_STRING,
              sop_version());
    /* The launcher, not the library, handles signals. */
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    sop_engine *e = make_engine(&cfg);
    if (!e)
        return 2;
    pid_t child = spawn(argv + cmd_at);
    if (child < 0) {
        logf_("fork: %s", strerror(errno));
        sop_engine_free(e);
        return 1;
    }
    logf_("started pid %d: %s (libsop %s)", (int)child, argv[cmd_at], sop_version());
    sop_watch_config wc;
    sop_watch_config_init(&wc);
    wc.pid = (int)child;
    wc.interval_s = 0; /* on demand only */
    wc.collect.duration_s = cfg.duration_s;
    sop_watch *w = NULL;
    int rc = sop_watch_new(e, &wc, on_report, &cfg, &w);
    if (rc != 0) {
        logf_("watch: %s", sop_strerror(rc));
        kill(child, SIGTERM);
        waitpid(child, NULL, 0);
        return 1;
    }

    int healthy = 0, status = 0, exit_code = 0;
    double started = now_ms(), last_trigger = -1e18;
    while (!stop_signal) {
        pid_t done = waitpid(child, &status, WNOHANG);
        if (done == child) {
            logf_("pid %d exited (%s %d)", (int)child, WIFEXITED(status) ? "status" : "signal",
                  WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
            child = -1;
            exit_code = 1;
            break;
        }
        int slow_fired = 0;
        double t0 = now_ms();
        int may_trigger = healthy && t0 - last_trigger >= cfg.cooldown_s * 1e3;
        char why[160];
        double ms = health_check((int)child, cfg.port, cfg.slow_ms, cfg.timeout_ms,
                                 may_trigger ? w : NULL, &slow_fired, why, sizeof why);
        if (slow_fired)
            last_trigger = t0;
        if (ms >= 0 && !healthy) {
            healthy = 1;
            logf_("pid %d healthy (%.0f ms)", (int)child, ms);
        } else if (!healthy && now_ms() - started > cfg.startup_s * 1e3) {
            logf_("pid %d not healthy after %.0f s", (int)child, cfg.startup_s);
            exit_code = 1;
            break;
        } else if (healthy && ms < 0) {
            int fresh = !slow_fired && may_trigger; /* failed fast: diagnose now */
            if (fresh) {
                sop_watch_trigger(w);
                last_trigger = t0;
            }
            logf_("health check of pid %d failed: %s%s", (int)child, why,
                  fresh ? ": diagnosing" : "");
        } else if (healthy && ms > cfg.slow_ms) {
            logf_("health check of pid %d slow: answered after %.0f ms (limit %.0f)", (int)child,
                  ms, cfg.slow_ms);
        }
        sleep_ms(cfg.check_interval_s * 1e3 - (now_ms() - t0));
    }
    if (stop_signal)
        logf_("signal %d: stopping pid %d", (int)stop_signal, (int)child);
    sop_watch_free(w); /* waits for a diagnosis in progress */
    if (child > 0) {
        kill(child, SIGTERM);
        for (int i = 0; i < 100 && waitpid(child, &status, WNOHANG) == 0; i++)
            sleep_ms(50);
        if (waitpid(child, &status, WNOHANG) == 0) {
            kill(child, SIGKILL);
            waitpid(child, &status, 0);
        }
    }
    logf_("exit");
    return exit_code;
}
