/* numa.h — the host's NUMA nodes (sysfs node<N>/cpulist and meminfo) and where the target's
 * resident pages sit (/proc/PID/numa_maps, summed per node). Depends on missing.h, procfs.h. */
#ifndef SOP_NUMA_H
#define SOP_NUMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "missing.h"
#include "procfs.h"

#define SOP_NUMA_NODES_MAX 64 /* node ids at or above are not kept (numa_maps: counted apart) */
#define SOP_NUMA_MAPS_MAX_BYTES (16u << 20)
#define SOP_NUMA_MAPS_MAX_LINES 65536

typedef struct {
    int node;
    char cpus[256];    /* cpulist as the kernel writes it ("0-3,8-11"); "" for a memory-only node */
    int64_t cpu_count; /* SOP_NA when the list did not parse */
    int64_t mem_total_kb, mem_free_kb; /* node<N>/meminfo; SOP_NA when not read */
} sop_numa_node;

typedef struct {
    int64_t kb[SOP_NUMA_NODES_MAX]; /* resident kB per node id (pages x kernelpagesize_kB) */
    int64_t other_kb;               /* on node ids >= SOP_NUMA_NODES_MAX */
    int64_t interleave_kb;          /* in mappings whose policy is interleave (any weighting) */
    int64_t lines;                  /* mappings parsed */
    bool truncated;                 /* the line or byte bound cut the file: sums are partial */
} sop_numa_pages;

typedef struct {
    bool have_topology; /* /sys/devices/system/node/node* listed */
    sop_numa_node nodes[SOP_NUMA_NODES_MAX];
    size_t nnodes;     /* sorted by node id */
    int64_t balancing; /* /proc/sys/kernel/numa_balancing; SOP_NA when absent */
    bool have_pages;   /* numa_maps read (only on hosts with >= 2 nodes) */
    sop_numa_pages pages;
} sop_numa;

/* Sum one numa_maps text (len bytes) into out: for each mapping line, every N<node>=<pages>
 * times that line's kernelpagesize_kB (4 when the field is absent). At most max_lines lines; a
 * last line without its newline is dropped when `cut` says the text was cut at a byte bound.
 * Pure. Returns 0 or -EINVAL (no mapping line at all in a non-empty text). */
int sop__parse_numa_maps(const char *text, size_t len, size_t max_lines, bool cut,
                         sop_numa_pages *out);

/* The nodes under node_dirfd (an open /sys/devices/system/node or a fixture dir): every
 * node<N> directory's cpulist and meminfo. No node directory: have_topology stays false
 * (kernel without NUMA support) and `missing` says so. Returns 0 or -errno. */
int sop__numa_read_topology(int node_dirfd, sop_numa *out, sop_missing *missing);

/* numa_maps of the process whose /proc/PID directory is pid_fd, bounded by
 * SOP_NUMA_MAPS_MAX_BYTES / _LINES. Unreadable: have_pages false and a `missing` entry. */
int sop__numa_read_pages(int pid_fd, sop_numa *out, sop_missing *missing);

void sop__numa_init(sop_numa *out);

/* Topology from /sys/devices/system/node, balancing from proc_root_fd's sys/kernel, and the
 * target's pages when the host has at least two nodes. Failures go to `missing`. */
void sop__numa_collect(int proc_root_fd, int pid_fd, sop_numa *out, sop_missing *missing);

#endif
