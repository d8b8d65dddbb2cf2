/* test_gpu_wait.c — telling a GPU wait from native compute on samples as the sampler records
 * them (OS state, GIL, the syscall /proc/PID/task/TID/syscall showed, whether its first argument
 * was a /dev/nvidia* fd, the frames and their source lines): the line signature, the device
 * paths, and the aggregation's per-thread GPU-wait share and site, which a CPU-only process
 * never gets. Depends on engine/sample/gpu_wait.h, engine/sample/sample_agg.h, t.h. */
#include <string.h>

#include "gpu_wait.h"
#include "sample_agg.h"
#include "t.h"

#if defined(__aarch64__)
enum { NR_IOCTL = 29, NR_FUTEX = 98, NR_SCHED_YIELD = 124, NR_READ = 63 };
#else
enum { NR_IOCTL = 16, NR_FUTEX = 202, NR_SCHED_YIELD = 24, NR_READ = 0 };
#endif

static void sync_lines(void)
{
    CHECK(sop__gpu_sync_line("loss_val = loss.item()"));
    CHECK(sop__gpu_sync_line("preds = logits.argmax(-1).cpu().numpy()"));
    CHECK(sop__gpu_sync_line("out = y.to(\"cpu\")"));
    CHECK(sop__gpu_sync_line("out = y.to(device='cpu', non_blocking=False)"));
    CHECK(sop__gpu_sync_line("torch.cuda.synchronize()"));
    CHECK(sop__gpu_sync_line("return torch._C._cuda_synchronize()"));
    CHECK(sop__gpu_sync_line("super().synchronize()"));
    CHECK(sop__gpu_sync_line("ids = seq.tolist()"));
    CHECK(!sop__gpu_sync_line("y = x @ w"));
    CHECK(!sop__gpu_sync_line("loss.backward()  # calls .item() later"));
    CHECK(!sop__gpu_sync_line("log('.item() is slow')  # note"));
    CHECK(!sop__gpu_sync_line("x = x.to(device)"));
    CHECK(!sop__gpu_sync_line("x = x.to('cuda')"));
    CHECK(!sop__gpu_sync_line(""));
    CHECK(!sop__gpu_sync_line(NULL));
}

static void device_paths(void)
{
    CHECK(sop__gpu_device_path("/dev/nvidia0"));
    CHECK(sop__gpu_device_path("/dev/nvidia7"));
    CHECK(sop__gpu_device_path("/dev/nvidiactl"));
    CHECK(sop__gpu_device_path("/dev/nvidia-uvm"));
    CHECK(sop__gpu_device_path("/dev/kfd"));
    CHECK(sop__gpu_device_path("/dev/dri/renderD128"));
    CHECK(!sop__gpu_device_path("/dev/dri/card0"));
    CHECK(!sop__gpu_device_path("/dev/nvidia"));
    CHECK(!sop__gpu_device_path("/dev/nvidia-caps"));
    CHECK(!sop__gpu_device_path("/dev/null"));
    CHECK(!sop__gpu_device_path("/home/u/nvidia0"));
    CHECK(sop__gpu_wait_syscall(NR_IOCTL));
    CHECK(sop__gpu_wait_syscall(NR_FUTEX));
    CHECK(sop__gpu_wait_syscall(NR_SCHED_YIELD));
    CHECK(!sop__gpu_wait_syscall(NR_READ));
    CHECK(!sop__gpu_wait_syscall(-1));
}

/* The target's source, as the sampler's reader gives it. */
static int lines_read;
static int fake_source(void *ctx, int proc, const char *file, int line, char *out, size_t cap)
{
    (void)ctx;
    (void)proc;
    lines_read++;
    const char *text = NULL;
    if (strcmp(file, "/app/train.py") == 0)
        text = line == 42   ? "loss_val = loss.item()"
               : line == 30 ? "logits = model(x)"
               : line == 50 ? "torch.cuda.synchronize()"
                            : NULL;
    else if (strstr(file, "torch/cuda/__init__.py") && line == 801)
        text = "return torch._C._cuda_synchronize()";
    if (!text)
        return -2;
    snprintf(out, cap, "%s", text);
    return 0;
}

/* A sample: OS state, GIL, the syscall it sleeps in (-1 none) and whether its fd is a GPU's. */
static sop_pysample mk(const sop_pyframe *frames, size_t n, char state, bool gil, long nr,
                       bool gpu_fd)
{
    sop_pysample p;
    memset(&p, 0, sizeof p);
    p.tid = 100;
    p.name = "";
    p.state = state;
    p.gil = gil;
    p.gil_wait = false;
    p.syscall_nr = nr;
    p.gpu_fd = gpu_fd;
    p.majflt = SOP_NA;
    p.frames = frames;
    p.nframes = n;
    return p;
}

static void classify(void)
{
    sop_agg *a = sop__agg_new();
    CHECK(a != NULL);
    if (!a)
        return;
    sop__agg_keep_timeline(a);
    sop__agg_start(a, 0.0);
    sop__agg_line_reader(a, fake_source, NULL);
    sop__agg_gpu_proc(a, 0, true); /* proc 0 has /dev/nvidia* open; proc 1 does not */
    int gpu_t = sop__agg_add_thread(a, 0, 100, "MainThread");
    int cpu_t = sop__agg_add_thread(a, 1, 200, "MainThread");
    const sop_pyframe item[] = {{"train_step", "/app/train.py", 42, false, 0},
                                {"<module>", "/app/train.py", 60, false, 0}};
    const sop_pyframe fwd[] = {{"train_step", "/app/train.py", 30, false, 0},
                               {"<module>", "/app/train.py", 60, false, 0}};
    const sop_pyframe sync[] = {
        {"synchronize", "/usr/lib/python3/dist-packages/torch/cuda/__init__.py", 801, false, 0},
        {"train_step", "/app/train.py", 50, false, 0},
        {"<module>", "/app/train.py", 60, false, 0}};
    double now = 0;
    /* The spin wait at .item(): R, no GIL, no syscall (CUDA's default spin) - 30 samples. */
    for (int i = 0; i < 30; i++) {
        sop_pysample p = mk(item, 2, 'R', false, -1, false);
        sop__agg_sample(a, gpu_t, &p, now += 10);
    }
    /* The yield variant and a blocking sync at .item(): sched_yield, futex - 5 + 5. */
    for (int i = 0; i < 10; i++) {
        sop_pysample p = mk(item, 2, 'S', false, i < 5 ? NR_SCHED_YIELD : NR_FUTEX, false);
        sop__agg_sample(a, gpu_t, &p, now += 10);
    }
    /* torch.cuda.synchronize(), asleep in the driver's ioctl on /dev/nvidiactl - 10. */
    for (int i = 0; i < 10; i++) {
        sop_pysample p = mk(sync, 3, 'S', false, NR_IOCTL, true);
        sop__agg_sample(a, gpu_t, &p, now += 10);
    }
    /* An ioctl on a GPU fd from the forward line: inside the driver (a launch, an allocation)
     * - 5; the same line running without the GIL and no syscall: native compute - 20; holding
     * the GIL: Python - 15; asleep in read(2) at the .item() line: not a GPU wait - 5. */
    for (int i = 0; i < 5; i++) {
        sop_pysample p = mk(fwd, 2, 'S', false, NR_IOCTL, true);
        sop__agg_sample(a, gpu_t, &p, now += 10);
    }
    for (int i = 0; i < 20; i++) {
        sop_pysample p = mk(fwd, 2, 'R', false, -1, false);
        sop__agg_sample(a, gpu_t, &p, now += 10);
    }
    for (int i = 0; i < 15; i++) {
        sop_pysample p = mk(item, 2, 'R', true, -1, false);
        sop__agg_sample(a, gpu_t, &p, now += 10);
    }
    for (int i = 0; i < 5; i++) {
        sop_pysample p = mk(item, 2, 'S', false, NR_READ, false);
        sop__agg_sample(a, gpu_t, &p, now += 10);
    }
    /* A CPU-only process running the same line without the GIL: native, never a GPU wait. */
    for (int i = 0; i < 10; i++) {
        sop_pysample p = mk(item, 2, 'R', false, -1, false);
        sop__agg_sample(a, cpu_t, &p, now += 10);
    }
    const sop_agg_thread *g = &a->thrs[gpu_t], *c = &a->thrs[cpu_t];
    CHECK_EQ_I(g->n, 95);
    CHECK_EQ_I(g->gpu_wait, 30 + 10 + 10 + 5);
    CHECK_EQ_I(c->gpu_wait, 0);
    const sop_agg_site *site = sop__agg_top_site(a, (size_t)gpu_t, SOP_AGG_SITE_GPU);
    CHECK(site != NULL);
    if (site) {
        CHECK_EQ_S(site->frame, "train_step (/app/train.py:42)");
        CHECK_EQ_I(site->count, 40);
    }
    CHECK(sop__agg_top_site(a, (size_t)cpu_t, SOP_AGG_SITE_GPU) == NULL);
    /* Each (process, file, line) is read once: lines 42, 30 (proc 0), the torch line is never
     * read (the ioctl says it already), and nothing of the CPU-only process. */
    CHECK_EQ_I(lines_read, 2);
    /* The timeline's states. */
    CHECK_EQ_I(a->timeline[0].state, SOP_ST_GPU);
    CHECK_EQ_I(a->timeline[45].state, SOP_ST_GPU);
    CHECK_EQ_I(a->timeline[60].state, SOP_ST_NATIVE);
    CHECK_EQ_I(a->timeline[80].state, SOP_ST_GIL);
    CHECK_EQ_I(a->timeline[92].state, SOP_ST_IDLE);
    CHECK_EQ_I(a->timeline[100].state, SOP_ST_NATIVE);
    sop__agg_free(a);
}

int main(void)
{
    sync_lines();
    device_paths();
    classify();
    printf("%d passed, %d failed\n", t_pass, t_fail);
    return t_fail ? 1 : 0;
}
