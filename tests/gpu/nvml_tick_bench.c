/* nvml_tick_bench.c — what one window poll of the GPU costs sopctl: loads NVML as a collection
 * does (probes/gpu_nvml.c; $SOP_NVML_LIBRARY honoured), times N polls (one utilisation read per
 * device) and prints the devices, the mean and the highest cost per poll in microseconds, and
 * what the end-of-window reads cost (PID: a process on the GPU, for its process lists).
 * Usage: nvml_tick_bench [N [PID]].
 * Run by tests/gpu/nvml-smoke.sh on a GPU host; with the fake NVML anywhere. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>

#include "clock.h"
#include "gpu.h"

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 2000;
    char why[224] = "";
    double t0 = sop__now_ms();
    sop_nvml *nv = sop__nvml_open(why, sizeof why);
    double t_open = sop__now_ms() - t0;
    if (!nv) {
        fprintf(stderr, "nvml_tick_bench: %s\n", why);
        return 1;
    }
    double max = 0, sum = 0;
    for (int i = 0; i < n && i < SOP_GPU_SERIES_MAX; i++) {
        double a = sop__now_ms();
        sop__nvml_tick(nv, a);
        double d = sop__now_ms() - a;
        sum += d;
        max = d > max ? d : max;
    }
    int k = n < SOP_GPU_SERIES_MAX ? n : SOP_GPU_SERIES_MAX;
    static sop_gpu g;
    sop__gpu_init(&g);
    int pid = argc > 2 ? atoi(argv[2]) : 0; /* a process on the GPU: its tree's reads */
    int root = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    double f0 = sop__now_ms();
    sop__nvml_finish(nv, root, &pid, pid > 0, 0, NULL, &g);
    double t_finish = sop__now_ms() - f0, cost[3];
    sop__nvml_cost(nv, cost);
    printf("{\"devices\": %zu, \"polls\": %d, \"open_ms\": %.3f, \"poll_mean_us\": %.1f, "
           "\"poll_max_us\": %.1f, \"finish_ms\": %.3f, \"procs_ms\": %.3f, "
           "\"device_reads_ms\": %.3f, \"proc_util_ms\": %.3f, \"procs\": %zu}\n",
           g.ndevices, k, t_open, sum * 1e3 / k, max * 1e3, t_finish, cost[0], cost[1], cost[2],
           g.nprocs);
    sop__nvml_close(nv);
    return 0;
}
