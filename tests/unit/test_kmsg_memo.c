/* test_kmsg_memo.c — the kernel log's OOM records remembered between reads: a memo is used only
 * for the same boot and kill count once settled, keeps every field, applies the age filter
 * afterwards, and is ignored when its file or directory cannot be trusted (mode, owner, link,
 * cut, foreign magic). The live half (a real kill against a settled memo) is in test_kmsg.c.
 * Depends on probes/kmsg_memo.h, t.h. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kmsg_memo.h"
#include "t.h"

static char dir[64];

static int memo_fd(void)
{
    setenv("SOP_STATE_DIR", dir, 1);
    return sop__state_dir_open();
}

static void parsed(sop_oom_list *l)
{
    char *t = t_slurp("kmsg/v1_memcg_oom_real.txt", NULL);
    CHECK_EQ_I(sop__parse_kmsg(t, l, 1000000.0), 0);
    free(t);
    CHECK(l->n >= 2);
}

static sop_kmsg_key key_at(const char *boot, int64_t kills, double now)
{
    sop_kmsg_key k = {.kills = kills, .now_s = now};
    snprintf(k.boot_id, sizeof k.boot_id, "%s", boot);
    return k;
}

static void test_settle_and_key(void)
{
    int fd = memo_fd();
    CHECK(fd >= 0);
    sop_oom_list l, got;
    parsed(&l);
    sop_kmsg_key k = key_at("boot-a", 3, 100.0);
    sop__kmsg_memo_put(fd, &k, &l);
    k.now_s = 101.0;
    CHECK(!sop__kmsg_memo_get(fd, &k, -INFINITY, 2000000.0, &got)); /* not settled */
    CHECK_EQ_I(got.n, 0);
    k.now_s = 100.0 + SOP_KMSG_MEMO_SETTLE_S + 1; /* a later run, same count: settles it */
    sop__kmsg_memo_put(fd, &k, &l);
    k.now_s += 1;
    CHECK(sop__kmsg_memo_get(fd, &k, -INFINITY, 2000000.0, &got));
    CHECK_EQ_I(got.n, l.n);
    for (size_t i = 0; i < l.n && i < got.n; i++) {
        CHECK_EQ_I(got.items[i].pid, l.items[i].pid);
        CHECK_EQ_S(got.items[i].comm, l.items[i].comm);
        CHECK_EQ_S(got.items[i].oom_memcg, l.items[i].oom_memcg);
        CHECK_EQ_I(got.items[i].anon_rss_kb, l.items[i].anon_rss_kb);
        CHECK(got.items[i].closed == l.items[i].closed);
        /* times from the btime of this read, not of the one that wrote it */
        CHECK(fabs(got.items[i].time - (2000000.0 + l.items[i].uptime_s)) < 1e-6);
    }
    /* another count of kills or another boot: not this memo */
    sop_kmsg_key other = key_at("boot-a", 4, k.now_s);
    CHECK(!sop__kmsg_memo_get(fd, &other, -INFINITY, 0, &got));
    other = key_at("boot-b", 3, k.now_s);
    CHECK(!sop__kmsg_memo_get(fd, &other, -INFINITY, 0, &got));
    /* a memo from the future (clock or file tampered with) is not used */
    other = key_at("boot-a", 3, 50.0);
    CHECK(!sop__kmsg_memo_get(fd, &other, -INFINITY, 0, &got));
    /* the age filter applies to the remembered records */
    double cut = l.items[l.n - 1].uptime_s;
    CHECK(sop__kmsg_memo_get(fd, &k, cut, 0, &got));
    CHECK(got.n >= 1 && got.n < l.n);
    CHECK_EQ_I(got.items[got.n - 1].pid, l.items[l.n - 1].pid);
    /* a new count starts unsettled again */
    sop_kmsg_key k4 = key_at("boot-a", 4, k.now_s + 1);
    sop__kmsg_memo_put(fd, &k4, &l);
    k4.now_s += 1;
    CHECK(!sop__kmsg_memo_get(fd, &k4, -INFINITY, 0, &got));
    close(fd);
}

static void settled_memo(int fd, const sop_oom_list *l)
{
    sop_kmsg_key k = key_at("boot-t", 7, 10.0);
    sop__kmsg_memo_put(fd, &k, l);
    k.now_s = 20.0;
    sop__kmsg_memo_put(fd, &k, l);
}

static bool usable(int fd)
{
    sop_oom_list got;
    sop_kmsg_key k = key_at("boot-t", 7, 30.0);
    return sop__kmsg_memo_get(fd, &k, -INFINITY, 0, &got) && got.n > 0;
}

static void test_untrusted_file(void)
{
    int fd = memo_fd();
    CHECK(fd >= 0);
    sop_oom_list l;
    parsed(&l);
    char path[128], link[128];
    snprintf(path, sizeof path, "%s/kmsg-oom", dir);
    settled_memo(fd, &l);
    CHECK(usable(fd));
    struct stat st;
    CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);

    CHECK_EQ_I(chmod(path, 0620), 0); /* writable by the group */
    CHECK(!usable(fd));
    CHECK_EQ_I(chmod(path, 0600), 0);
    CHECK(usable(fd));

    CHECK_EQ_I(truncate(path, st.st_size - 1), 0); /* cut */
    CHECK(!usable(fd));
    settled_memo(fd, &l);
    CHECK(usable(fd));

    int w = open(path, O_WRONLY); /* another build's layout (or garbage) */
    CHECK(w >= 0 && pwrite(w, "SOPKOOM9", 8, 0) == 8);
    close(w);
    CHECK(!usable(fd));

    /* a link in its place, even to a good memo */
    settled_memo(fd, &l);
    snprintf(link, sizeof link, "%s/good", dir);
    CHECK_EQ_I(rename(path, link), 0);
    CHECK_EQ_I(symlink(link, path), 0);
    CHECK(!usable(fd));
    /* writing replaces the link, never writes through it */
    settled_memo(fd, &l);
    CHECK(lstat(path, &st) == 0 && S_ISREG(st.st_mode));
    CHECK(usable(fd));
    unlink(link);
    close(fd);
}

static void test_untrusted_dir(void)
{
    CHECK_EQ_I(chmod(dir, 0777), 0);
    CHECK_EQ_I(memo_fd(), -1);
    CHECK_EQ_I(chmod(dir, 0700), 0);
    int fd = memo_fd();
    CHECK(fd >= 0);
    close(fd);

    setenv("SOP_STATE_DIR", "", 1); /* remember nothing */
    CHECK_EQ_I(sop__state_dir_open(), -1);

    char ln[80], sub[80];
    snprintf(ln, sizeof ln, "%s.link", dir);
    CHECK_EQ_I(symlink(dir, ln), 0);
    setenv("SOP_STATE_DIR", ln, 1);
    CHECK_EQ_I(sop__state_dir_open(), -1); /* no link followed */
    unlink(ln);

    snprintf(sub, sizeof sub, "%s/new", dir); /* created, 0700 */
    setenv("SOP_STATE_DIR", sub, 1);
    fd = sop__state_dir_open();
    CHECK(fd >= 0);
    struct stat st;
    CHECK(stat(sub, &st) == 0 && (st.st_mode & 0777) == 0700);
    close(fd);
    rmdir(sub);
}

static void test_key_now(void)
{
    sop_kmsg_key k;
    CHECK(sop__kmsg_key_now(&k, 5));
    CHECK_EQ_I(strlen(k.boot_id), 36);
    CHECK(k.now_s > 0);
    CHECK(!sop__kmsg_key_now(&k, 0)); /* no kill: nothing to remember */
    CHECK(!sop__kmsg_key_now(&k, -1));
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/sop-memo-XXXXXX");
    if (!mkdtemp(dir))
        return 2;
    test_settle_and_key();
    test_untrusted_file();
    test_untrusted_dir();
    test_key_now();
    char path[128];
    snprintf(path, sizeof path, "%s/kmsg-oom", dir);
    unlink(path);
    rmdir(dir);
    return t_done();
}
