/* watch_hooks.c — `sopctl watch --on-finding CMD`: the command split into words (or run by the
 * shell with --shell), started with the report's paths without waiting, and the finished
 * ones collected (a failure counted for /metrics). Depends on watch.h, posix_spawn. */
#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "watch.h"

extern char **environ;

/* How long the hooks still running at the end may take before the watch stops waiting. */
#define HOOK_GRACE_MS 10000

/* Split CMD into words: blanks separate, '...' and "..." group, backslash escapes one character
 * outside single quotes. No expansion of any kind. Returns the count, or -1. */
int cli_watch_split_words(const char *cmd, char *buf, char **argv, int max)
{
    int n = 0;
    const char *p = cmd;
    char *o = buf;
    for (;;) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p)
            break;
        if (n == max)
            return -1;
        argv[n++] = o;
        char quote = 0;
        while (*p && (quote || (*p != ' ' && *p != '\t'))) {
            if (!quote && (*p == '\'' || *p == '"')) {
                quote = *p++;
            } else if (quote && *p == quote) {
                quote = 0;
                p++;
            } else if (*p == '\\' && quote != '\'' && p[1]) {
                *o++ = p[1];
                p += 2;
            } else {
                *o++ = *p++;
            }
        }
        if (quote)
            return -1;
        *o++ = '\0';
    }
    return n;
}

/* Start --on-finding with the report's path; not waited for here (main reaps it on SIGCHLD). */
void cli_watch_run_hook(watch_ctx *c, const char *json_path, const char *md_path)
{
    char *buf = malloc(strlen(c->on_finding) + 1);
    char *argv[MAX_HOOK_ARGS + 6];
    int n = 0;
    if (!buf)
        return;
    if (c->hook_shell) {
        argv[n++] = "/bin/sh";
        argv[n++] = "-c";
        argv[n++] = (char *)c->on_finding;
        argv[n++] = "sop-on-finding"; /* $0; the path is $1 */
    } else {
        n = cli_watch_split_words(c->on_finding, buf, argv, MAX_HOOK_ARGS);
        if (n <= 0) { /* checked at start-up */
            free(buf);
            return;
        }
    }
    argv[n++] = (char *)json_path;
    argv[n] = NULL;
    /* The environment plus SOP_REPORT, SOP_REPORT_MD and SOP_PID. */
    size_t nenv = 0;
    while (environ && environ[nenv])
        nenv++;
    char **envp = calloc(nenv + 4, sizeof *envp);
    char e1[PATH_MAX + 16], e2[PATH_MAX + 16], e3[32];
    snprintf(e1, sizeof e1, "SOP_REPORT=%s", json_path);
    snprintf(e2, sizeof e2, "SOP_REPORT_MD=%s", md_path);
    snprintf(e3, sizeof e3, "SOP_PID=%d", c->pid);
    size_t k = 0;
    for (size_t i = 0; envp && i < nenv; i++)
        if (strncmp(environ[i], "SOP_REPORT=", 11) && strncmp(environ[i], "SOP_REPORT_MD=", 14) &&
            strncmp(environ[i], "SOP_PID=", 8))
            envp[k++] = environ[i];
    if (envp) {
        envp[k++] = e1;
        envp[k++] = e2;
        envp[k++] = e3;
    }
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none, dfl;
    sigemptyset(&none);
    sigemptyset(&dfl);
    sigaddset(&dfl, SIGTERM);
    sigaddset(&dfl, SIGINT);
    sigaddset(&dfl, SIGCHLD);
    sigaddset(&dfl, SIGUSR1);
    sigaddset(&dfl, SIGPIPE);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &dfl);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    pid_t child = 0;
    int rc = envp ? posix_spawnp(&child, argv[0], NULL, &attr, argv, envp) : ENOMEM;
    posix_spawnattr_destroy(&attr);
    if (rc != 0) {
        atomic_fetch_add(&c->hooks_failed, 1);
        cli_watch_log("--on-finding: cannot run '%s': %s (the watch goes on)", argv[0],
                      strerror(rc));
    } else {
        cli_watch_log("--on-finding: started '%s' (pid %d) with %s", argv[0], (int)child,
                      json_path);
    }
    free(envp);
    free(buf);
}

/* The target ended: the post-mortem's --on-finding may still run. Wait for it (at most
 * HOOK_GRACE_MS) so that its exit status is logged before the watch exits. */
void cli_watch_finish_hooks(watch_ctx *c)
{
    for (int waited = 0; waited < HOOK_GRACE_MS; waited += 50) {
        siginfo_t info;
        memset(&info, 0, sizeof info);
        if (waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) < 0)
            return; /* no child left */
        if (info.si_pid != 0)
            cli_watch_reap_hooks(c);
        else
            usleep(50 * 1000);
    }
    cli_watch_log("--on-finding still running after %d s: left to finish on its own",
                  HOOK_GRACE_MS / 1000);
}

void cli_watch_reap_hooks(watch_ctx *c)
{
    int st;
    pid_t p;
    while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
            continue;
        atomic_fetch_add(&c->hooks_failed, 1);
        if (WIFEXITED(st))
            cli_watch_log("--on-finding (pid %d) exited with status %d (the watch goes on)", (int)p,
                          WEXITSTATUS(st));
        else
            cli_watch_log("--on-finding (pid %d) was killed by signal %d (the watch goes on)",
                          (int)p, WTERMSIG(st));
    }
}
