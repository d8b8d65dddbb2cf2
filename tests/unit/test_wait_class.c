/* test_wait_class.c — what a sleeping thread waits on: /proc/PID/task/TID/syscall text parsed
 * (fixture lines of each kind, a running thread, garbage) and classified, and live: a thread of
 * this process asleep on a pthread mutex (a futex with no timeout), in nanosleep (a timer), in
 * read on a pipe and in a timed condition wait, read through /proc/self/task/TID/syscall. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "t.h"
#include "wait_class.h"

static sop_wait_class of_text(const char *text)
{
    unsigned long long a[6];
    return sop__wait_classify(sop__syscall_parse(text, a), a);
}

static void test_text(void)
{
    unsigned long long a[6];
    CHECK_EQ_I(sop__syscall_parse("running", a), -1);
    CHECK_EQ_I(sop__syscall_parse("-1 0x7ffd 0x7f00", a), -1);
    CHECK_EQ_I(sop__syscall_parse("", a), -1);
    CHECK_EQ_I(sop__syscall_parse("xyz 0x1", a), -1);
    CHECK_EQ_I(sop__syscall_parse("202 0x55d0 0x80 0x0 0x0 0x0 0x0 0x7ffd 0x7f11", a), 202);
    CHECK(a[0] == 0x55d0 && a[1] == 0x80 && a[3] == 0);
    CHECK_EQ_I(sop__syscall_parse("7 0x1", a), 7); /* cut short: the rest zero */
    CHECK(a[0] == 1 && a[1] == 0 && a[5] == 0);
    CHECK_EQ_I(of_text("running"), SOP_WC_NONE);
#if defined(__x86_64__)
    /* futex(addr, FUTEX_WAIT_BITSET|PRIVATE, val, NULL): untimed; with a timeout pointer: timed */
    CHECK_EQ_I(of_text("202 0x55d0 0x89 0x0 0x0 0x0 0xffffffff 0x7ffd 0x7f11"), SOP_WC_LOCK);
    CHECK_EQ_I(of_text("202 0x55d0 0x189 0x0 0x7ffd1000 0x0 0xffffffff 0x7ffd 0x7f11"),
               SOP_WC_LOCK_TIMED);
    CHECK_EQ_I(of_text("202 0x55d0 0x81 0x1 0x0 0x0 0x0 0x7ffd 0x7f11"), SOP_WC_OTHER); /* wake */
    CHECK_EQ_I(of_text("232 0x3 0x7ffd 0x400 0xffffffff 0x0 0x0 0x7ffd 0x7f11"), SOP_WC_NET);
    CHECK_EQ_I(of_text("7 0x7ffd 0x2 0x3e8 0x0 0x0 0x0 0x7ffd 0x7f11"), SOP_WC_NET);
    CHECK_EQ_I(of_text("288 0x5 0x0 0x0 0x80800 0x0 0x0 0x7ffd 0x7f11"), SOP_WC_NET);
    CHECK_EQ_I(of_text("0 0x0 0x55d0 0x2000 0x0 0x0 0x0 0x7ffd 0x7f11"), SOP_WC_READ);
    CHECK_EQ_I(of_text("230 0x1 0x0 0x7ffd 0x0 0x0 0x0 0x7ffd 0x7f11"), SOP_WC_TIMER);
    CHECK_EQ_I(of_text("61 0xffffffff 0x7ffd 0x0 0x0 0x0 0x0 0x7ffd 0x7f11"), SOP_WC_CHILD);
    CHECK_EQ_I(of_text("34 0x0 0x0 0x0 0x0 0x0 0x0 0x7ffd 0x7f11"), SOP_WC_SIGNAL);
    CHECK_EQ_I(of_text("9 0x0 0x1000 0x3 0x22 0xffffffff 0x0 0x7ffd 0x7f11"), SOP_WC_OTHER);
#endif
    CHECK_EQ_S(sop__wait_class_name(SOP_WC_LOCK), "lock");
    CHECK_EQ_S(sop__wait_class_name(SOP_WC_N), "none");
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int pipefd[2];
static volatile int tids[4];

static void *on_mutex(void *arg)
{
    (void)arg;
    tids[0] = (int)syscall(SYS_gettid);
    pthread_mutex_lock(&mu); /* held by main: sleeps in futex, no timeout */
    pthread_mutex_unlock(&mu);
    return NULL;
}

static void *on_timer(void *arg)
{
    (void)arg;
    tids[1] = (int)syscall(SYS_gettid);
    struct timespec ts = {3, 0};
    nanosleep(&ts, NULL);
    return NULL;
}

static void *on_pipe(void *arg)
{
    (void)arg;
    tids[2] = (int)syscall(SYS_gettid);
    char c;
    ssize_t n = read(pipefd[0], &c, 1);
    (void)n;
    return NULL;
}

static void *on_timed_cond(void *arg)
{
    (void)arg;
    tids[3] = (int)syscall(SYS_gettid);
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 3;
    pthread_mutex_lock(&m);
    pthread_cond_timedwait(&cv, &m, &until);
    pthread_mutex_unlock(&m);
    return NULL;
}

/* The class of live thread tid, read until it is asleep in the expected one (at most 2 s). */
static sop_wait_class live(int tid, sop_wait_class want)
{
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
    sop_wait_class got = SOP_WC_NONE;
    for (int i = 0; i < 200 && got != want; i++) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
        if (fd >= 0)
            close(fd);
        if (n > 0) {
            buf[n] = '\0';
            got = of_text(buf);
        }
        if (got != want)
            usleep(10000);
    }
    return got;
}

static void test_live(void)
{
    if (pipe(pipefd) != 0) {
        CHECK(0);
        return;
    }
    pthread_mutex_lock(&mu);
    pthread_t th[4];
    void *(*fn[4])(void *) = {on_mutex, on_timer, on_pipe, on_timed_cond};
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, fn[i], NULL);
    for (int i = 0; i < 200 && (!tids[0] || !tids[1] || !tids[2] || !tids[3]); i++)
        usleep(10000);
    CHECK_EQ_I(live(tids[0], SOP_WC_LOCK), SOP_WC_LOCK);
    CHECK_EQ_I(live(tids[1], SOP_WC_TIMER), SOP_WC_TIMER);
    CHECK_EQ_I(live(tids[2], SOP_WC_READ), SOP_WC_READ);
    CHECK_EQ_I(live(tids[3], SOP_WC_LOCK_TIMED), SOP_WC_LOCK_TIMED);
    pthread_mutex_unlock(&mu);
    ssize_t w = write(pipefd[1], "x", 1);
    (void)w;
    pthread_cond_broadcast(&cv);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    close(pipefd[0]);
    close(pipefd[1]);
}

int main(void)
{
    test_text();
    test_live();
    return t_done();
}
