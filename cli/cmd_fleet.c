/* cmd_fleet.c — `sopctl fleet --slurm-job J [--duration S]`: diagnose every rank of a running
 * Slurm job on all its nodes by `srun --overlap --jobid J` with one task per node, each running
 * `sopctl run --ranks --slurm-job J --format json`, then merge the reports (sop_merge_*). No
 * daemon, no transport of ours: Slurm carries the commands and their output. A node that fails,
 * gives no report or does not answer within the timeout is listed as missing with the reason.
 * Runs scontrol and srun; depends on include/sop.h. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "sop.h"

#define MAX_NODES 4096
#define OUT_MAX (512u << 20)

typedef struct {
    char *name;
    char *out, *err; /* this task's stdout and stderr lines, label removed */
    size_t out_len, out_cap, err_len, err_cap;
} node_io;

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void append(char **buf, size_t *len, size_t *cap, const char *s, size_t n)
{
    if (*len + n + 1 > *cap) {
        size_t c = *cap ? *cap : 4096;
        while (c < *len + n + 1)
            c *= 2;
        if (c > OUT_MAX)
            return;
        char *nb = realloc(*buf, c);
        if (!nb)
            return;
        *buf = nb;
        *cap = c;
    }
    memcpy(*buf + *len, s, n);
    *len += n;
    (*buf)[*len] = '\0';
}

/* Run argv; its stdout as a malloc'd string (NULL on failure or non-zero exit). */
static char *capture(char *const argv[])
{
    int fd[2];
    if (pipe(fd) != 0)
        return NULL;
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return NULL;
    }
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0)
            dup2(devnull, 2);
        execvp(argv[0], argv);
        _exit(127);
    }
    close(fd[1]);
    char *buf = NULL, chunk[4096];
    size_t len = 0, cap = 0;
    ssize_t r;
    while ((r = read(fd[0], chunk, sizeof chunk)) > 0 || (r < 0 && errno == EINTR))
        if (r > 0)
            append(&buf, &len, &cap, chunk, (size_t)r);
    close(fd[0]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        free(buf);
        return NULL;
    }
    return buf ? buf : strdup("");
}

/* The value of `key=` in scontrol's one-line-per-field output. */
static char *field(const char *text, const char *key)
{
    size_t kl = strlen(key);
    for (const char *p = text; (p = strstr(p, key));) {
        if ((p == text || p[-1] == ' ' || p[-1] == '\n') && p[kl] == '=') {
            p += kl + 1;
            size_t n = strcspn(p, " \n");
            return strndup(p, n);
        }
        p += kl;
    }
    return NULL;
}

static int job_nodes(const char *job, node_io **out, char *why, size_t whylen)
{
    char *show_argv[] = {"scontrol", "show", "job", (char *)job, NULL};
    char *show = capture(show_argv);
    if (!show) {
        snprintf(why, whylen, "scontrol show job %s failed (no such job, or no Slurm here)", job);
        return -1;
    }
    char *state = field(show, "JobState"), *list = field(show, "NodeList");
    free(show);
    int n = -1;
    if (!state || strcmp(state, "RUNNING") != 0) {
        snprintf(why, whylen, "job %s is %s, not RUNNING", job, state ? state : "in no state");
    } else if (!list || !*list || strcmp(list, "(null)") == 0) {
        snprintf(why, whylen, "job %s has no nodes", job);
    } else {
        char *host_argv[] = {"scontrol", "show", "hostnames", list, NULL};
        char *hosts = capture(host_argv);
        node_io *nodes = calloc(MAX_NODES, sizeof *nodes);
        n = 0;
        for (char *save = NULL, *h = hosts && nodes ? strtok_r(hosts, "\n", &save) : NULL;
             h && n < MAX_NODES; h = strtok_r(NULL, "\n", &save))
            nodes[n++].name = strdup(h);
        free(hosts);
        if (n == 0) {
            snprintf(why, whylen, "scontrol show hostnames %s gave no node", list);
            free(nodes);
            n = -1;
        } else {
            *out = nodes;
        }
    }
    free(state);
    free(list);
    return n;
}

/* srun's own messages on stderr (not labelled with a task) */
static char *srun_err;
static size_t srun_err_len, srun_err_cap;

/* Split the labelled lines "N: text" of srun --label into the tasks' buffers. */
static void take_lines(char **pending, size_t *plen, size_t *pcap, node_io *nodes, int n,
                       bool is_err, bool flush)
{
    size_t start = 0;
    for (;;) {
        char *nl = memchr(*pending + start, '\n', *plen - start);
        if (!nl && !(flush && start < *plen))
            break;
        size_t len = nl ? (size_t)(nl - (*pending + start)) : *plen - start;
        char *line = *pending + start;
        char *end = NULL;
        long task = strtol(line, &end, 10);
        if (end && end != line && *end == ':' && task >= 0 && task < n) {
            const char *text = end + 1;
            if (*text == ' ')
                text++;
            size_t tl = len - (size_t)(text - line);
            node_io *io = &nodes[task];
            if (is_err)
                append(&io->err, &io->err_len, &io->err_cap, text, tl);
            else
                append(&io->out, &io->out_len, &io->out_cap, text, tl);
            if (is_err)
                append(&io->err, &io->err_len, &io->err_cap, "\n", 1);
            else
                append(&io->out, &io->out_len, &io->out_cap, "\n", 1);
        } else if (is_err) {
            append(&srun_err, &srun_err_len, &srun_err_cap, line, len);
            append(&srun_err, &srun_err_len, &srun_err_cap, "\n", 1);
        }
        start += len + (nl ? 1 : 0);
    }
    memmove(*pending, *pending + start, *plen - start);
    *plen -= start;
    (void)pcap;
}

/* Run srun; returns its wait status, or -1 when it had to be stopped at the deadline. */
static int run_srun(char *const argv[], node_io *nodes, int n, double timeout_s, char *why,
                    size_t whylen)
{
    int out[2], err[2];
    if (pipe(out) != 0 || pipe(err) != 0) {
        snprintf(why, whylen, "pipe: %s", strerror(errno));
        return -2;
    }
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(why, whylen, "fork: %s", strerror(errno));
        return -2;
    }
    if (pid == 0) {
        dup2(out[1], 1);
        dup2(err[1], 2);
        close(out[0]);
        close(out[1]);
        close(err[0]);
        close(err[1]);
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0)
            dup2(devnull, 0);
        execvp(argv[0], argv);
        fprintf(stderr, "0: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(out[1]);
    close(err[1]);
    char *pend[2] = {NULL, NULL};
    size_t plen[2] = {0, 0}, pcap[2] = {0, 0};
    struct pollfd pf[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
    int open_fds = 2, status = 0;
    double deadline = mono_s() + timeout_s;
    bool timed_out = false;
    while (open_fds > 0) {
        double left = deadline - mono_s();
        if (left <= 0) {
            timed_out = true;
            break;
        }
        int pr = poll(pf, 2, (int)(left * 1000) + 1);
        if (pr < 0 && errno != EINTR)
            break;
        for (int k = 0; pr > 0 && k < 2; k++) {
            if (pf[k].fd < 0 || !(pf[k].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            char chunk[65536];
            ssize_t r = read(pf[k].fd, chunk, sizeof chunk);
            if (r > 0) {
                append(&pend[k], &plen[k], &pcap[k], chunk, (size_t)r);
                take_lines(&pend[k], &plen[k], &pcap[k], nodes, n, k == 1, false);
            } else if (r == 0 || errno != EINTR) {
                close(pf[k].fd);
                pf[k].fd = -1;
                open_fds--;
            }
        }
    }
    if (timed_out) { /* srun forwards SIGTERM to its tasks and ends the step */
        kill(pid, SIGTERM);
        double kill_at = mono_s() + 10;
        while (waitpid(pid, &status, WNOHANG) == 0) {
            if (mono_s() > kill_at) {
                kill(pid, SIGKILL);
                waitpid(pid, &status, 0);
                break;
            }
            struct timespec ts = {0, 100 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    } else {
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
    }
    for (int k = 0; k < 2; k++) {
        if (plen[k])
            take_lines(&pend[k], &plen[k], &pcap[k], nodes, n, k == 1, true);
        free(pend[k]);
        if (pf[k].fd >= 0)
            close(pf[k].fd);
    }
    return timed_out ? -1 : status;
}

/* The last non-empty line of text (borrowed copy into buf). */
static void last_line(const char *text, char *buf, size_t len)
{
    buf[0] = '\0';
    if (!text)
        return;
    const char *end = text + strlen(text);
    while (end > text && (end[-1] == '\n' || end[-1] == ' '))
        end--;
    const char *start = end;
    while (start > text && start[-1] != '\n')
        start--;
    snprintf(buf, len, "%.*s", (int)(end - start), start);
}

/* What `fleet`'s command line asks for. */
typedef struct {
    const char *job, *lang, *output, *remote, *duration;
    double duration_s, timeout_s;
    sop_format fmt;
} fleet_args;

/* The options and arguments, checked; EXIT_CLEAN, or the exit status (-1: --help printed). */
static int fleet_parse(fleet_args *a, int argc, char **argv)
{
    static const struct option opts[] = {{"slurm-job", required_argument, 0, 'J'},
                                         {"duration", required_argument, 0, 'd'},
                                         {"format", required_argument, 0, 'f'},
                                         {"lang", required_argument, 0, 'l'},
                                         {"output", required_argument, 0, 'o'},
                                         {"timeout", required_argument, 0, 't'},
                                         {"sopctl", required_argument, 0, 'S'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":J:d:f:l:o:t:h", opts, NULL)) != -1) {
        switch (c) {
        case 'J':
            a->job = optarg;
            break;
        case 'd':
            if (cli_parse_duration(optarg, &a->duration_s) != 0) {
                fprintf(stderr, "sopctl: --duration: '%s' is not 0..3600 seconds\n", optarg);
                return EXIT_USAGE;
            }
            a->duration = optarg;
            break;
        case 't':
            if (cli_parse_duration(optarg, &a->timeout_s) != 0 || a->timeout_s <= 0) {
                fprintf(stderr, "sopctl: --timeout: '%s' is not 0..3600 seconds\n", optarg);
                return EXIT_USAGE;
            }
            break;
        case 'f':
            if (cli_parse_format(optarg, SOP_FORMAT_MERGE, NULL, &a->fmt) != 0)
                return EXIT_USAGE;
            break;
        case 'l':
            if (cli_parse_lang(optarg, &a->lang) != EXIT_CLEAN)
                return EXIT_USAGE;
            break;
        case 'o':
            a->output = optarg;
            break;
        case 'S':
            a->remote = optarg;
            break;
        case 'h': {
            char names[160];
            printf("usage: sopctl fleet --slurm-job J [--duration S] [--timeout S]\n"
                   "                    [--format %s] [--lang en|zh] [-o FILE]\n"
                   "                    [--sopctl PATH]   (sopctl on the nodes; default: this "
                   "one's path)\n",
                   cli_format_names(SOP_FORMAT_MERGE, NULL, "|", "|", names, sizeof names));
            return -1;
        }
        case ':':
            fprintf(stderr, "sopctl: option '%s' needs a value\n", argv[optind - 1]);
            return EXIT_USAGE;
        default:
            fprintf(stderr, "sopctl: unknown option '%s'\n", argv[optind - 1]);
            return EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "sopctl: unexpected argument '%s'\n", argv[optind]);
        return EXIT_USAGE;
    }
    if (!a->job) {
        fprintf(stderr, "sopctl: fleet needs --slurm-job J\n");
        return EXIT_USAGE;
    }
    for (const char *p = a->job; *p; p++)
        if (!((*p >= '0' && *p <= '9') || *p == '_' || *p == '.' || (*p >= 'a' && *p <= 'z') ||
              (*p >= 'A' && *p <= 'Z'))) {
            fprintf(stderr, "sopctl: --slurm-job: '%s' is not a job id\n", a->job);
            return EXIT_USAGE;
        }
    if (a->timeout_s < 0) /* the window, the rules, srun's own start-up on a busy cluster */
        a->timeout_s = 2 * a->duration_s + 60;
    return EXIT_CLEAN;
}

/* Each node's report into m; a node without one listed missing, with why (st: run_srun's). */
static void fleet_gather(sop_merge *m, node_io *nodes, int n, int st, double timeout_s)
{
    for (int i = 0; i < n; i++) {
        node_io *io = &nodes[i];
        char src[300], reason[700], last[400];
        snprintf(src, sizeof src, "node %s", io->name);
        int rc = io->out_len ? sop_merge_add_json(m, src, io->out, io->out_len) : SOP_EFORMAT;
        if (io->out_len && rc == 0)
            continue;
        last_line(io->err, last, sizeof last);
        if (!last[0])
            last_line(srun_err, last, sizeof last);
        if (st == -1)
            snprintf(reason, sizeof reason, "no complete report within %.0f s (timed out)%s%s",
                     timeout_s, last[0] ? ": " : "", last);
        else if (!io->out_len)
            snprintf(reason, sizeof reason, "no report: %s",
                     last[0] ? last : (WIFEXITED(st) ? "srun gave no output" : "srun was killed"));
        else
            continue; /* a part that is not a report: the merge lists it already */
        sop_merge_add_missing(m, io->name, reason);
    }
}

int cmd_fleet(int argc, char **argv)
{
    fleet_args a = {
        .lang = "en", .duration = "1", .duration_s = 1, .timeout_s = -1, .fmt = SOP_FORMAT_MD};
    int status = fleet_parse(&a, argc, argv);
    if (status != EXIT_CLEAN)
        return status < 0 ? EXIT_CLEAN : status;
    char self[4096];
    if (!a.remote) {
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n <= 0) {
            fprintf(stderr, "sopctl: cannot find my own path; give --sopctl PATH\n");
            return EXIT_USAGE;
        }
        self[n] = '\0';
        a.remote = self;
    }
    node_io *nodes = NULL;
    char why[512];
    int n = job_nodes(a.job, &nodes, why, sizeof why);
    if (n < 0) {
        fprintf(stderr, "sopctl: fleet: %s\n", why);
        return EXIT_TARGET;
    }
    char nn[32], jobid_opt[128];
    snprintf(nn, sizeof nn, "%d", n);
    snprintf(jobid_opt, sizeof jobid_opt, "--jobid=%s", a.job);
    char *srun_argv[] = {"srun",
                         "--overlap",
                         jobid_opt,
                         "--nodes",
                         nn,
                         "--ntasks",
                         nn,
                         "--ntasks-per-node=1",
                         "--distribution=block",
                         "--label",
                         "--kill-on-bad-exit=0",
                         "--quiet",
                         (char *)a.remote,
                         "run",
                         "--ranks",
                         "--slurm-job",
                         (char *)a.job,
                         "--duration",
                         (char *)a.duration,
                         "--format",
                         "json",
                         "--lang",
                         (char *)a.lang,
                         NULL};
    int st = run_srun(srun_argv, nodes, n, a.timeout_s, why, sizeof why);
    sop_merge *m = NULL;
    if (st == -2 || sop_merge_new(&m) != 0) {
        fprintf(stderr, "sopctl: fleet: %s\n", st == -2 ? why : "out of memory");
        status = EXIT_USAGE;
    }
    if (m) {
        fleet_gather(m, nodes, n, st, a.timeout_s);
        if (sop_merge_count(m) == 0)
            fprintf(stderr, "sopctl: fleet: no node gave a report\n");
        status = cli_print_merge(m, a.fmt, a.lang, a.output);
        if (sop_merge_count(m) == 0 && status != EXIT_USAGE)
            status = EXIT_TARGET;
    }
    sop_merge_free(m);
    free(srun_err);
    srun_err = NULL;
    for (int i = 0; i < n; i++) {
        free(nodes[i].name);
        free(nodes[i].out);
        free(nodes[i].err);
    }
    free(nodes);
    return status;
}
