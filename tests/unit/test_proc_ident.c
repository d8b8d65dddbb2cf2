/* test_proc_ident.c — the sampler's readers by path (probes/proc_ident.c) over a fixture proc
 * root made in a temporary directory: comm of a process and of a task, cmdline as one line,
 * start time from stat, io; absent files give "" / NaN / an error. Depends on probes/proc.h,
 * t.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proc.h"
#include "t.h"

static void put_n(const char *root, const char *rel, const char *text, size_t len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    FILE *f = fopen(path, "wb");
    if (!f) {
        perror(path);
        exit(1);
    }
    fwrite(text, 1, len, f);
    fclose(f);
}

static void put(const char *root, const char *rel, const char *text)
{
    put_n(root, rel, text, strlen(text));
}

int main(void)
{
    char root[] = "/tmp/sop_proc_ident_XXXXXX";
    if (!mkdtemp(root))
        return 1;
    char dir[600];
    snprintf(dir, sizeof dir, "%s/42", root);
    mkdir(dir, 0755);
    snprintf(dir, sizeof dir, "%s/42/task", root);
    mkdir(dir, 0755);
    snprintf(dir, sizeof dir, "%s/42/task/43", root);
    mkdir(dir, 0755);
    put(root, "42/comm", "python3\n");
    put(root, "42/task/43/comm", "pt_data;0\n");
    put_n(root, "42/cmdline",
          "/usr/bin/python3\0train.py\0--lr\0"
          "0.1\0",
          35);
    put(root, "42/io",
        "rchar: 100\nwchar: 200\nsyscr: 3\nsyscw: 4\nread_bytes: 4096\nwrite_bytes: 0\n"
        "cancelled_write_bytes: 0\n");
    put(root, "42/stat",
        "42 (python3) S 1 42 42 0 -1 4194560 100 0 7 0 50 20 0 0 20 0 3 0 12345 1000000 500 "
        "18446744073709551615 1 1 0 0 0 0 0 16781312 16386 0 0 0 17 1 0 0 0 0 0\n");

    char out[64];
    CHECK_EQ_I(sop__comm_read(root, 42, 0, out, sizeof out), 0);
    CHECK_EQ_S(out, "python3");
    CHECK_EQ_I(sop__comm_read(root, 42, 43, out, sizeof out), 0);
    CHECK_EQ_S(out, "pt_data;0"); /* as read: the sampler makes ';' a ':' for its stacks */
    CHECK(sop__comm_read(root, 42, 99, out, sizeof out) < 0);
    CHECK_EQ_S(out, "");

    char line[256];
    CHECK_EQ_I(sop__cmdline_read(root, 42, line, sizeof line), 0);
    CHECK_EQ_S(line, "/usr/bin/python3 train.py --lr 0.1");
    char cut[10];
    CHECK_EQ_I(sop__cmdline_read(root, 42, cut, sizeof cut), 0);
    CHECK_EQ_S(cut, "/usr/bin/");
    CHECK(sop__cmdline_read(root, 7, line, sizeof line) < 0);
    CHECK_EQ_S(line, "");

    sop_io io;
    CHECK_EQ_I(sop__io_read(root, 42, &io), 0);
    CHECK_EQ_I(io.rchar, 100);
    CHECK_EQ_I(io.syscw, 4);
    CHECK_EQ_I(io.read_bytes, 4096);
    CHECK(sop__io_read(root, 7, &io) < 0);

    double t = sop__start_time_read(root, 42);
    double btime = sop__proc_btime_s();
    if (isnan(btime))
        CHECK(isnan(t));
    else
        CHECK(fabs(t - (btime + 12345.0 / sop__proc_ticks_per_s())) < 0.5); /* boot time: ms */
    CHECK(isnan(sop__start_time_read(root, 7)));

    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", root);
    printf("%d passed, %d failed\n", t_pass, t_fail);
    return t_fail ? 1 : 0;
}
