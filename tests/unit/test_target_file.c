/* test_target_file.c — probes/target_file.c on a fixture tree made here (PROC/100/status,
 * PROC/100/root/...): a path resolves inside the target's root only (absolute symlinks and ".."
 * stay in it), files the target's credentials could not read are refused (mode, directory
 * search), a FIFO/directory/oversized file is refused without blocking, symlink loops end. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "t.h"
#include "target_file.h"

static char proc[256];

static void put(const char *rel, const char *text, mode_t mode)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", proc, rel);
    FILE *f = fopen(p, "w");
    if (!f) {
        perror(p);
        exit(2);
    }
    fputs(text, f);
    fclose(f);
    chmod(p, mode);
}

static void mk(const char *rel, mode_t mode)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", proc, rel);
    mkdir(p, mode);
    chmod(p, mode);
}

static void ln(const char *target, const char *rel)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", proc, rel);
    if (symlink(target, p) < 0) {
        perror(p);
        exit(2);
    }
}

static void status_for(unsigned uid, unsigned gid, const char *caps)
{
    char s[512];
    snprintf(s, sizeof s,
             "Name:\tpython3\nUid:\t%u\t%u\t%u\t%u\nGid:\t%u\t%u\t%u\t%u\nGroups:\t7 %u \n"
             "CapEff:\t%s\n",
             uid, uid, uid, uid, gid, gid, gid, gid, gid + 1, caps);
    put("100/status", s, 0644);
}

/* Open path in the fixture target; returns the fd's first line in out, or the error. */
static int first_line(const char *path, char *out, size_t cap)
{
    struct stat st;
    out[0] = '\0';
    int fd = sop__target_open(proc, 100, path, 1 << 20, &st);
    if (fd < 0)
        return fd;
    ssize_t n = read(fd, out, cap - 1);
    close(fd);
    out[n > 0 ? n : 0] = '\0';
    char *nl = strchr(out, '\n');
    if (nl)
        *nl = '\0';
    return 0;
}

static void test_creds(void)
{
    sop_creds c;
    CHECK_EQ_I(sop__creds_parse("Uid:\t1\t2\t3\t4\nGid:\t5\t6\t7\t8\nGroups:\t9 10\n"
                                "CapEff:\t0000000000000000\n",
                                &c),
               0);
    CHECK_EQ_I((int)c.fsuid, 4);
    CHECK_EQ_I((int)c.fsgid, 8);
    CHECK_EQ_I(c.ngroups, 2);
    CHECK(!c.dac_override);
    CHECK_EQ_I(
        sop__creds_parse("Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nCapEff:\t000001ffffffffff\n", &c), 0);
    CHECK(c.dac_override);
    CHECK_EQ_I(sop__creds_parse("Name:\tx\nGid:\t1\t1\t1\t1\n", &c), -EINVAL);
    CHECK_EQ_I(sop__creds_parse("Uid:\t1\t1\nGid:\t1\t1\t1\t1\n", &c), -EINVAL);

    sop__creds_parse("Uid:\t10\t10\t10\t10\nGid:\t20\t20\t20\t20\nGroups:\t30\n", &c);
    struct stat st = {.st_uid = 10, .st_gid = 99, .st_mode = S_IFREG | 0400};
    CHECK(sop__creds_may(&c, &st, 4));
    st.st_mode = S_IFREG | 0044; /* owner bits win: the owner may not read */
    CHECK(!sop__creds_may(&c, &st, 4));
    st.st_uid = 11;
    st.st_gid = 30; /* a supplementary group */
    st.st_mode = S_IFREG | 0040;
    CHECK(sop__creds_may(&c, &st, 4));
    st.st_gid = 31;
    CHECK(!sop__creds_may(&c, &st, 4));
    st.st_mode = S_IFDIR | 0004; /* others may read the directory, not search it */
    CHECK(!sop__creds_may(&c, &st, 1));
    st.st_mode = S_IFDIR | 0001;
    CHECK(sop__creds_may(&c, &st, 1));
}

static void test_walk(void)
{
    snprintf(proc, sizeof proc, "/tmp/sop-tf-XXXXXX");
    if (!mkdtemp(proc)) {
        perror("mkdtemp");
        exit(2);
    }
    chmod(proc, 0755);
    mk("100", 0755);
    mk("100/root", 0755);
    mk("100/root/app", 0755);
    mk("100/root/etc", 0755);
    mk("100/root/closed", 0700);
    put("100/root/app/ok.py", "ok line\n", 0644);
    put("100/root/app/mine.py", "owner only\n", 0600);
    put("100/root/closed/in.py", "in a closed directory\n", 0644);
    put("100/root/etc/x.py", "the target's own /etc\n", 0644);
    put("outside.py", "outside the target's root\n", 0644);
    ln("/etc/x.py", "100/root/app/abs.py");                /* absolute: the target's /etc */
    ln("../../../../../outside.py", "100/root/app/up.py"); /* ".." stops at the root */
    ln("../app/ok.py", "100/root/app/rel.py");
    ln("mine.py", "100/root/app/to_mine.py");
    ln("../closed/in.py", "100/root/app/to_closed.py");
    ln("loop_b.py", "100/root/app/loop_a.py");
    ln("loop_a.py", "100/root/app/loop_b.py");
    char p[512];
    snprintf(p, sizeof p, "%s/100/root/app/fifo.py", proc);
    mkfifo(p, 0666);
    snprintf(p, sizeof p, "%s/100/root/app/big.py", proc);
    int fd = open(p, O_CREAT | O_WRONLY, 0644);
    if (fd >= 0) {
        if (ftruncate(fd, 2 << 20) < 0)
            perror("ftruncate");
        close(fd);
    }

    char line[128];
    /* A stranger (not the owner of anything here, no capabilities). */
    unsigned stranger = getuid() + 4242;
    status_for(stranger, stranger, "0000000000000000");
    CHECK_EQ_I(first_line("/app/ok.py", line, sizeof line), 0);
    CHECK_EQ_S(line, "ok line");
    CHECK_EQ_I(first_line("/app/rel.py", line, sizeof line), 0);
    CHECK_EQ_S(line, "ok line");
    CHECK_EQ_I(first_line("/app/./../app//ok.py", line, sizeof line), 0);
    CHECK_EQ_I(first_line("/app/abs.py", line, sizeof line), 0);
    CHECK_EQ_S(line, "the target's own /etc");
    CHECK_EQ_I(first_line("/app/up.py", line, sizeof line), -ENOENT); /* root/outside.py */
    CHECK_EQ_I(first_line("/../../outside.py", line, sizeof line), -ENOENT);
    CHECK_EQ_I(first_line("/app/mine.py", line, sizeof line), -EACCES);
    CHECK_EQ_I(first_line("/app/to_mine.py", line, sizeof line), -EACCES);
    CHECK_EQ_I(first_line("/closed/in.py", line, sizeof line), -EACCES);
    CHECK_EQ_I(first_line("/app/to_closed.py", line, sizeof line), -EACCES);
    CHECK_EQ_I(first_line("/app/loop_a.py", line, sizeof line), -ELOOP);
    CHECK_EQ_I(first_line("/app/fifo.py", line, sizeof line), -EINVAL); /* never blocks */
    CHECK_EQ_I(first_line("/app", line, sizeof line), -EINVAL);
    CHECK_EQ_I(first_line("/app/big.py", line, sizeof line), -EFBIG);
    CHECK_EQ_I(first_line("/app/ok.py/x", line, sizeof line), -ENOTDIR);
    CHECK_EQ_I(first_line("app/ok.py", line, sizeof line), -EINVAL);
    CHECK_EQ_I(sop__target_open(proc, 101, "/app/ok.py", 1 << 20, &(struct stat){0}), -ESRCH);

    /* The owner reads its own 0600 file and through a symlink to it. */
    status_for(getuid(), getgid(), "0000000000000000");
    CHECK_EQ_I(first_line("/app/to_mine.py", line, sizeof line), 0);
    CHECK_EQ_S(line, "owner only");
    /* CAP_DAC_READ_SEARCH: everything readable, still inside the root. */
    status_for(stranger, stranger, "0000000000000004");
    CHECK_EQ_I(first_line("/app/to_closed.py", line, sizeof line), 0);
    CHECK_EQ_S(line, "in a closed directory");
    CHECK_EQ_I(first_line("/app/up.py", line, sizeof line), -ENOENT);

    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", proc);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", proc);
}

int main(void)
{
    test_creds();
    test_walk();
    return t_done();
}
