/* fuzz_host.c — libFuzzer target: the host-wide parsers (/proc/pressure files, /proc/loadavg,
 * meminfo, vmstat, /proc/stat, diskstats) on arbitrary bytes. Depends on probes/host.h. */
#include "fuzz.h"
#include "host.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_cstr(data, size);
    sop_psi psi;
    sop_host *h = malloc(sizeof *h);
    if (!h)
        abort();
    sop__host_init(h);
    (void)sop__parse_psi(s, &psi);
    (void)sop__parse_loadavg(s, h);
    (void)sop__parse_meminfo(s, h);
    (void)sop__parse_vmstat(s, h);
    (void)sop__parse_host_stat(s, h);
    (void)sop__parse_diskstats(s, NULL, NULL, h);
    free(h);
    free(s);
    return 0;
}
