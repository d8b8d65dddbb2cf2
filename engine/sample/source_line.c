/* source_line.c — one line of a target's Python source file, read as the target could read it
 * (probes/target_file.c: inside /proc/PID/root, no symlink out of it, the target's uid allowed,
 * a regular file, non-blocking, size-bounded), for the sampled window's hot frames. Depends on
 * libc and probes/target_file.c. */
#include "source_line.h"

#include "../probes/target_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool ends_with_py(const char *s)
{
    size_t n = strlen(s);
    return n > 3 && strcmp(s + n - 3, ".py") == 0;
}

int sop__source_line(const char *proc_root, int pid, const char *path, int line, size_t max_bytes,
                     char *out, size_t cap)
{
    if (!cap)
        return -EINVAL;
    out[0] = '\0';
    if (!path || path[0] != '/' || !ends_with_py(path) || line <= 0 || strstr(path, "/../"))
        return -EINVAL;
    struct stat st;
    int fd = sop__target_open(proc_root, pid, path, max_bytes, &st);
    if (fd < 0)
        return fd;
    FILE *f = fdopen(fd, "r");
    if (!f) {
        close(fd);
        return -ENOMEM;
    }
    char buf[4096];
    int at = 1, rc = -ENOENT;
    bool fresh = true; /* at the start of a line */
    while (fgets(buf, sizeof buf, f)) {
        bool whole = strchr(buf, '\n') != NULL;
        if (at == line && fresh) {
            const char *b = buf;
            while (*b == ' ' || *b == '\t')
                b++;
            size_t n = 0;
            for (; *b && *b != '\n' && n + 1 < cap; b++)
                out[n++] = ((unsigned char)*b < 0x20 || *b == 0x7f) ? ' ' : *b;
            while (n > 0 && (out[n - 1] == ' ' || out[n - 1] == '\r'))
                n--;
            out[n] = '\0';
            rc = 0;
            break;
        }
        fresh = whole;
        if (whole)
            at++;
    }
    fclose(f);
    return rc;
}
