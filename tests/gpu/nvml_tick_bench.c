/* nvml_tick_bench.c — what one window poll of the GPU costs sopctl: loads NVML as a collection
 * does (probes/gpu_nvml.c; $SOP_NVML_LIBRARY honoured), times N polls (one utilisation read per
 * device) and prints the devices, the mean and the highest cost per poll in microseconds.
 * Run by tests/gpu/nvml-smoke.sh on a GPU host; with the fake NVML anywhere. */
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
    int self = 0;
    sop__nvml_finish(nv, -1, &self, 0, 0, NULL, &g);
    printf("{\"devices\": %zu, \"polls\": %d, \"open_ms\": %.3f, \"poll_mean_us\": %.1f, "
           "\"poll_max_us\": %.1f}\n",
           g.ndevices, k, t_open, sum * 1e3 / k, max * 1e3);
    sop__nvml_close(nv);
    return 0;
}
