/* render_bench.c — how the recording's writers grow with the stacks: the flame graph (SVG) and
 * speedscope written from n synthetic collapsed stacks spread over `threads` threads, at n and
 * 10 x n, each timed (CPU) once in this run; a ratio near 10 is linear, near 100 quadratic.
 * Usage: build/tests/render_bench [n] [threads] (default 20000 4096); the documents go to
 * /dev/null. Built by CMake beside the tests (tests/CMakeLists.txt); figures in
 * docs/performance.md ("Scale"). Depends on engine/sample/sampler.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "picture_writers.h"
#include "sampler.h"

static unsigned long long seed = 88172645463325252ull;

static unsigned long long rnd(void)
{
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    return seed;
}

/* n stacks "pid 42 (python);tid T (wT);fnA (mB.py:L);..." of 1-12 frames from 21,000 names. */
static sop_stack_count *make(size_t n, int threads)
{
    sop_stack_count *v = calloc(n, sizeof *v);
    for (size_t i = 0; v && i < n; i++) {
        char buf[1024];
        int t = (int)(rnd() % (unsigned)threads), len;
        len = snprintf(buf, sizeof buf, "pid 42 (python);tid %d (w%d)", 100 + t, t);
        for (int d = 1 + (int)(rnd() % 12); d > 0; d--)
            len += snprintf(buf + len, sizeof buf - (size_t)len, ";fn%llu (m%llu.py:%llu)",
                            rnd() % 3000, rnd() % 7, rnd() % 500);
        v[i].stack = strdup(buf);
        v[i].count = 1 + (long)(rnd() % 50);
    }
    return v;
}

static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double run(int which, const sop_stack_count *v, size_t n, FILE *out)
{
    double t0 = cpu_ms();
    int rc = which ? sop__speedscope_write(v, n, "bench", SOP_FG_IDLE, out)
                   : sop__flamegraph_write(v, n, "bench", SOP_FG_IDLE, out);
    if (rc != 0)
        fprintf(stderr, "render_bench: writer failed (%d)\n", rc);
    return cpu_ms() - t0;
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 20000;
    int threads = argc > 2 ? atoi(argv[2]) : 4096;
    if (n == 0 || threads <= 0) {
        fprintf(stderr, "usage: render_bench [stacks] [threads]\n");
        return 2;
    }
    FILE *out = fopen("/dev/null", "w");
    sop_stack_count *small = make(n, threads), *big = make(10 * n, threads);
    if (!out || !small || !big)
        return 1;
    static const char *const name[] = {"flame graph", "speedscope"};
    printf("writer        %zu stacks   %zu stacks   ratio (10 = linear), %d threads\n", n, 10 * n,
           threads);
    for (int w = 0; w < 2; w++) {
        double a = run(w, small, n, out), b = run(w, big, 10 * n, out);
        printf("%-12s %9.1f ms %10.1f ms   %5.1fx\n", name[w], a, b, a > 0 ? b / a : 0);
    }
    fclose(out);
    return 0;
}
