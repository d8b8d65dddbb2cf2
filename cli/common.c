/* common.c — helpers the sopctl subcommands share: pid parsing, error → exit code, option
 * parsing of --pid/--duration, reading a whole file. Depends on include/sop.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "sop.h"

int cli_parse_pid(const char *s)
{
    if (!s || !*s)
        return -1;
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v <= 0 || v > INT_MAX)
        return -1;
    return (int)v;
}

int cli_exit_for(int err)
{
    switch (err) {
    case SOP_OK:
        return EXIT_CLEAN;
    case SOP_ENOTARGET:
    case SOP_EACCES:
    case SOP_ENOTPYTHON:
    case SOP_EPYVERSION:
        return EXIT_TARGET;
    default:
        return EXIT_USAGE;
    }
}

/* A plain decimal number ("2", "0.5", ".5"): strtod alone also takes hex ("0x10"), "inf",
 * "nan", exponents and leading blanks, none of which a careful CLI accepts for seconds or Hz. */
static int plain_decimal(const char *s)
{
    size_t digits = strspn(s, "0123456789");
    if (s[digits] == '.') {
        size_t frac = strspn(s + digits + 1, "0123456789");
        return (digits || frac) && s[digits + 1 + frac] == '\0';
    }
    return digits && s[digits] == '\0';
}

int cli_push_set(char **sets, int *n, char *arg)
{
    if (*n == CLI_MAX_SETS) {
        fprintf(stderr, "sopctl: too many --set options (at most %d)\n", CLI_MAX_SETS);
        return EXIT_USAGE;
    }
    sets[(*n)++] = arg;
    return EXIT_CLEAN;
}

int cli_parse_lang(const char *s, const char **out)
{
    if (strcmp(s, "en") != 0 && strcmp(s, "zh") != 0) {
        fprintf(stderr, "sopctl: --lang: '%s' is not en or zh\n", s);
        return EXIT_USAGE;
    }
    *out = s;
    return EXIT_CLEAN;
}

int cli_parse_every(const char *s, double *out)
{
    char *end = NULL;
    errno = 0;
    double d = plain_decimal(s) ? strtod(s, &end) : -1;
    if (d == -1 || errno || end == s || *end || !(d > 0 && d <= 86400)) {
        fprintf(stderr, "sopctl: --every: '%s' is not 0..86400 seconds (> 0)\n", s);
        return EXIT_USAGE;
    }
    *out = d;
    return EXIT_CLEAN;
}

int cli_parse_count(const char *s, long long max, long long *out)
{
    size_t digits = strspn(s, "0123456789");
    if (!digits || s[digits] != '\0' || digits > 18)
        return -1;
    long long v = strtoll(s, NULL, 10);
    if (v < 1 || v > max)
        return -1;
    *out = v;
    return 0;
}

int cli_parse_duration(const char *s, double *out)
{
    if (!plain_decimal(s))
        return -1;
    char *end = NULL;
    errno = 0;
    double d = strtod(s, &end);
    if (errno || end == s || *end || !(d >= 0 && d <= 3600))
        return -1;
    *out = d;
    return 0;
}

int cli_parse_rate(const char *s, double *out)
{
    if (!plain_decimal(s))
        return -1;
    char *end = NULL;
    double r = strtod(s, &end);
    if (end == s || *end || !(r >= 0 && r <= 10000))
        return -1;
    *out = r;
    return 0;
}

/* Open `path` for reading only if it is a regular file: O_NONBLOCK so a FIFO or a device
 * cannot block the open itself, then fstat; anything but a regular file is EINVAL with
 * *special set (the caller says "not a regular file"). */
static FILE *open_regular(const char *path, int *special)
{
    *special = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return NULL;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        int err = errno;
        close(fd);
        *special = 1;
        errno = S_ISDIR(st.st_mode) ? EISDIR : (err ? err : EINVAL);
        return NULL;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    FILE *f = fdopen(fd, "rb");
    if (!f)
        close(fd);
    return f;
}

char *cli_read_file(const char *path, size_t max, size_t *len)
{
    int special = 0;
    errno = 0;
    FILE *f = strcmp(path, "-") == 0 ? stdin : open_regular(path, &special);
    if (!f) {
        if (special && errno != EISDIR)
            errno = EINVAL;
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
        if (n == cap) {
            if (cap >= max) {
                free(buf);
                buf = NULL;
                errno = EFBIG;
                break;
            }
            cap *= 2;
            char *nb = realloc(buf, cap + 1);
            if (!nb) {
                free(buf);
                buf = NULL;
            }
            buf = nb;
        }
    }
    if (f != stdin)
        fclose(f);
    if (buf) {
        buf[n] = '\0';
        if (len)
            *len = n;
    }
    return buf;
}

void cli_print_error(const char *what, int err, const sop_engine *e)
{
    const char *detail = sop_last_error(e);
    fprintf(stderr, "sopctl: %s: %s%s%s\n", what, sop_strerror(err), detail[0] ? ": " : "", detail);
}

int cli_window_opt(int opt, const char *arg, const char *optname, int *pid, double *duration_s,
                   double *rate_hz)
{
    switch (opt) {
    case 'p':
        if (*pid > 0) {
            fprintf(stderr, "sopctl: --pid given twice ('%d' and '%s'); one target at a time\n",
                    *pid, arg);
            return EXIT_USAGE;
        }
        if ((*pid = cli_parse_pid(arg)) < 0) {
            fprintf(stderr, "sopctl: --pid: '%s' is not a process id\n", arg);
            return EXIT_USAGE;
        }
        return EXIT_CLEAN;
    case 'd':
        if (cli_parse_duration(arg, duration_s) != 0) {
            fprintf(stderr, "sopctl: --duration: '%s' is not 0..3600 seconds\n", arg);
            return EXIT_USAGE;
        }
        return EXIT_CLEAN;
    case 'r':
        if (cli_parse_rate(arg, rate_hz) != 0) {
            fprintf(stderr, "sopctl: --rate: '%s' is not 0..10000 Hz\n", arg);
            return EXIT_USAGE;
        }
        return EXIT_CLEAN;
    case ':':
        fprintf(stderr, "sopctl: option '%s' needs a value\n", optname);
        return EXIT_USAGE;
    default:
        fprintf(stderr, "sopctl: unknown option '%s'\n", optname);
        return EXIT_USAGE;
    }
}

int cli_check_window(double duration_s, double rate_hz)
{
    if (duration_s > 0 && rate_hz > 0 && duration_s * rate_hz < 2) {
        fprintf(stderr,
                "sopctl: --rate %g over --duration %g gives fewer than two samples; raise the "
                "rate to at least %g Hz or the window to at least %g s\n",
                rate_hz, duration_s, 2 / duration_s, 2 / rate_hz);
        return EXIT_USAGE;
    }
    return EXIT_CLEAN;
}

int cli_load_site(struct sop_engine *e, const char *path, int no_default)
{
    const char *from = "--site";
    if (!path && !no_default) {
        const char *env = getenv("SOP_SITE");
        if (env) {
            path = *env ? env : NULL;
            from = "SOP_SITE";
        } else if (access(SOP_SITE_DEFAULT, F_OK) == 0) {
            path = SOP_SITE_DEFAULT;
            from = "default site file";
        }
    }
    if (!path)
        return EXIT_CLEAN;
    if (sop_load_site_file(e, path) != 0) {
        fprintf(stderr, "sopctl: %s %s: %s\n", from, path, sop_last_error(e));
        return EXIT_USAGE;
    }
    return EXIT_CLEAN;
}

int cli_parse_color(const char *arg, cli_color *out)
{
    if (strcmp(arg, "auto") == 0)
        *out = CLI_COLOR_AUTO;
    else if (strcmp(arg, "never") == 0)
        *out = CLI_COLOR_NEVER;
    else if (strcmp(arg, "always") == 0)
        *out = CLI_COLOR_ALWAYS;
    else {
        fprintf(stderr, "sopctl: --color: '%s' is not auto, never or always\n", arg);
        return -1;
    }
    return 0;
}

int cli_use_color(cli_color c, int fd)
{
    if (c != CLI_COLOR_AUTO)
        return c == CLI_COLOR_ALWAYS;
    const char *no = getenv("NO_COLOR"), *term = getenv("TERM");
    if (no && *no)
        return 0;
    if (term && strcmp(term, "dumb") == 0)
        return 0;
    return isatty(fd);
}

int cli_term_width(int fd)
{
    struct winsize ws;
    if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    const char *cols = getenv("COLUMNS");
    int n = cols ? atoi(cols) : 0;
    return n > 0 ? n : 80;
}

int cli_check_output_link(const char *path)
{
    /* A symlink at the path that someone else made, in a directory others can write, is
     * refused (fs.protected_symlinks does this only in sticky directories): root would
     * otherwise write wherever that user points it. The operator's own links (and /dev/stdout)
     * are followed. */
    struct stat ls;
    if (lstat(path, &ls) == 0 && S_ISLNK(ls.st_mode) && ls.st_uid != geteuid()) {
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s", path);
        char *slash = strrchr(dir, '/');
        if (!slash)
            snprintf(dir, sizeof dir, ".");
        else if (slash == dir)
            dir[1] = '\0';
        else
            *slash = '\0';
        struct stat ds;
        if (stat(dir, &ds) != 0 || (ds.st_mode & 022)) {
            errno = EPERM;
            fprintf(stderr,
                    "sopctl: %s: refused: a symlink owned by uid %u in a directory others can "
                    "write\n",
                    path, (unsigned)ls.st_uid);
            return -1;
        }
    }
    return 0;
}

FILE *cli_open_output(const char *path)
{
    if (cli_check_output_link(path) != 0)
        return NULL;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0600);
    if (fd < 0) {
        fprintf(stderr, "sopctl: %s: %s\n", path, strerror(errno));
        return NULL;
    }
    FILE *f = fdopen(fd, "w");
    if (!f) {
        fprintf(stderr, "sopctl: %s: %s\n", path, strerror(errno));
        close(fd);
    }
    return f;
}
