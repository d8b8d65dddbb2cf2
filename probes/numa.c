/* numa.c — NUMA facts: the host's nodes with their CPUs and memory (sysfs), automatic NUMA
 * balancing (sysctl), and the target's resident pages per node (/proc/PID/numa_maps, bounded).
 * A kernel without NUMA support has no node directories: nothing is measured, never "1 node".
 * Depends on numa.h, procfs.h. */
#include "numa.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void sop__numa_init(sop_numa *out)
{
    memset(out, 0, sizeof *out);
    out->balancing = SOP_NA;
}

/* Parse the decimal digits at p (at least one); *end past them. -1 when none. */
static int64_t digits(const char *p, const char *eol, const char **end)
{
    int64_t v = 0;
    const char *q = p;
    while (q < eol && *q >= '0' && *q <= '9' && v < (INT64_MAX - 9) / 10)
        v = v * 10 + (*q++ - '0');
    *end = q;
    return q == p ? -1 : v;
}

/* One numa_maps line: "ADDR POLICY [file=...|heap|stack|huge] key=value ... N0=p N1=p
 * kernelpagesize_kB=k". The page size comes last, so the node counts are held until then. */
static void parse_line(const char *line, const char *eol, sop_numa_pages *out)
{
    int64_t pages[SOP_NUMA_NODES_MAX] = {0}, other_pages = 0, page_kb = 4;
    const char *p = line;
    while (p < eol && *p != ' ')
        p++; /* address */
    while (p < eol && *p == ' ')
        p++;
    /* the policy: "interleave:0-1", "weighted interleave:0-3", "bind=static:0", ... */
    bool interleave = (size_t)(eol - p) >= 10 &&
                      (strncmp(p, "interleave", 10) == 0 ||
                       ((size_t)(eol - p) >= 19 && strncmp(p, "weighted interleave", 19) == 0));
    while (p < eol) {
        while (p < eol && *p == ' ')
            p++;
        const char *tok = p;
        while (p < eol && *p != ' ')
            p++;
        const char *e;
        if (tok[0] == 'N' && tok + 1 < p && tok[1] >= '0' && tok[1] <= '9') {
            int64_t node = digits(tok + 1, p, &e);
            const char *q = e;
            if (node < 0 || q >= p || *q != '=')
                continue;
            int64_t n = digits(q + 1, p, &e);
            if (n < 0 || e != p)
                continue;
            if (node < SOP_NUMA_NODES_MAX)
                pages[node] += n;
            else
                other_pages += n;
        } else if ((size_t)(p - tok) > 18 && strncmp(tok, "kernelpagesize_kB=", 18) == 0) {
            int64_t k = digits(tok + 18, p, &e);
            if (k > 0 && e == p)
                page_kb = k;
        }
    }
    int64_t line_kb = other_pages * page_kb;
    for (int i = 0; i < SOP_NUMA_NODES_MAX; i++) {
        out->kb[i] += pages[i] * page_kb;
        line_kb += pages[i] * page_kb;
    }
    out->other_kb += other_pages * page_kb;
    if (interleave)
        out->interleave_kb += line_kb;
}

int sop__parse_numa_maps(const char *text, size_t len, size_t max_lines, bool cut,
                         sop_numa_pages *out)
{
    memset(out, 0, sizeof *out);
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol) {
            if (cut) { /* a line cut by the byte bound: its counts are partial */
                out->truncated = true;
                break;
            }
            eol = end;
        }
        if ((size_t)out->lines >= max_lines) {
            out->truncated = true;
            break;
        }
        /* a mapping line starts with its hex address and a blank */
        const char *q = p;
        while (q < eol && ((*q >= '0' && *q <= '9') || (*q >= 'a' && *q <= 'f')))
            q++;
        if (q > p && q < eol && *q == ' ') {
            parse_line(p, eol, out);
            out->lines++;
        }
        p = eol + 1;
    }
    if (cut)
        out->truncated = true;
    return out->lines == 0 && len > 0 ? -EINVAL : 0;
}

/* "Node 0 MemTotal:       16329044 kB": the key after the "Node N " prefix. */
static int64_t node_meminfo(const char *text, const char *key)
{
    size_t klen = strlen(key);
    for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
        const char *p = l;
        if (strncmp(p, "Node ", 5) != 0)
            continue;
        p += 5;
        while (*p >= '0' && *p <= '9')
            p++;
        while (*p == ' ')
            p++;
        if (strncmp(p, key, klen) == 0 && p[klen] == ':') {
            p += klen + 1;
            return sop__parse_i64(&p);
        }
    }
    return SOP_NA;
}

static int by_node(const void *a, const void *b)
{
    return ((const sop_numa_node *)a)->node - ((const sop_numa_node *)b)->node;
}

int sop__numa_read_topology(int node_dirfd, sop_numa *out, sop_missing *missing)
{
    int fd = dup(node_dirfd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        sop__missing_add(missing, "host.numa", "node directory: %s", sop__strerror(e));
        return -e;
    }
    struct dirent *de;
    bool dropped = false;
    while ((de = readdir(d)) != NULL) {
        const char *e;
        if (strncmp(de->d_name, "node", 4) != 0)
            continue;
        const char *name_end = de->d_name + strlen(de->d_name);
        int64_t id = digits(de->d_name + 4, name_end, &e);
        if (id < 0 || e != name_end)
            continue;
        if (id >= SOP_NUMA_NODES_MAX || out->nnodes >= SOP_NUMA_NODES_MAX) {
            dropped = true;
            continue;
        }
        sop_numa_node *n = &out->nodes[out->nnodes++];
        memset(n, 0, sizeof *n);
        n->node = (int)id;
        n->cpu_count = n->mem_total_kb = n->mem_free_kb = SOP_NA;
        char path[64], buf[4096];
        snprintf(path, sizeof path, "%s/cpulist", de->d_name);
        long got = sop__read_small_at(node_dirfd, path, n->cpus, sizeof n->cpus);
        if (got >= (long)sizeof n->cpus - 1) {
            n->cpus[0] = '\0'; /* cut: a partial list would name the wrong CPUs */
            sop__missing_add(missing, "host.numa", "%s: longer than %zu bytes", path,
                             sizeof n->cpus - 1);
        } else if (got >= 0) {
            n->cpus[strcspn(n->cpus, "\n")] = '\0';
            int c = sop__cpulist_count(n->cpus);
            if (c >= 0)
                n->cpu_count = c;
        } else {
            n->cpus[0] = '\0';
            sop__missing_add(missing, "host.numa", "%s: %s", path, sop__strerror((int)-got));
        }
        snprintf(path, sizeof path, "%s/meminfo", de->d_name);
        if (sop__read_small_at(node_dirfd, path, buf, sizeof buf) > 0) {
            n->mem_total_kb = node_meminfo(buf, "MemTotal");
            n->mem_free_kb = node_meminfo(buf, "MemFree");
        }
    }
    closedir(d);
    if (dropped)
        sop__missing_add(missing, "host.numa",
                         "nodes beyond the first %d (or with ids >= %d) not kept",
                         SOP_NUMA_NODES_MAX, SOP_NUMA_NODES_MAX);
    if (out->nnodes == 0) {
        sop__missing_add(missing, "host.numa", "no node directory (kernel without NUMA support)");
        return -ENOENT;
    }
    qsort(out->nodes, out->nnodes, sizeof out->nodes[0], by_node);
    out->have_topology = true;
    return 0;
}

int sop__numa_read_pages(int pid_fd, sop_numa *out, sop_missing *missing)
{
    char *text = NULL;
    size_t len = 0;
    int rc = sop__read_file_at(pid_fd, "numa_maps", SOP_NUMA_MAPS_MAX_BYTES, &text, &len);
    if (rc < 0) {
        sop__missing_add(missing, "proc.numa", "numa_maps: %s", sop__strerror(-rc));
        return rc;
    }
    rc = sop__parse_numa_maps(text, len, SOP_NUMA_MAPS_MAX_LINES, len >= SOP_NUMA_MAPS_MAX_BYTES,
                              &out->pages);
    free(text);
    if (rc < 0 || out->pages.lines == 0) {
        /* an empty numa_maps is a kernel thread or a process being torn down: not measured */
        sop__missing_add(missing, "proc.numa", "numa_maps: no mapping lines");
        return rc < 0 ? rc : -ENODATA;
    }
    out->have_pages = true;
    return 0;
}

void sop__numa_collect(int proc_root_fd, int pid_fd, sop_numa *out, sop_missing *missing)
{
    sop__numa_init(out);
    char buf[32];
    long got = sop__read_small_at(proc_root_fd, "sys/kernel/numa_balancing", buf, sizeof buf);
    if (got > 0) {
        const char *p = buf;
        out->balancing = sop__parse_i64(&p);
    }
    int node_fd = open("/sys/devices/system/node", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (node_fd < 0) {
        sop__missing_add(missing, "host.numa",
                         "/sys/devices/system/node: %s (kernel without NUMA support)",
                         sop__strerror(errno));
        return;
    }
    sop__numa_read_topology(node_fd, out, missing);
    close(node_fd);
    /* One node: every page is local; the page-table walk behind numa_maps is not worth it. */
    if (out->have_topology && out->nnodes >= 2 && pid_fd >= 0)
        sop__numa_read_pages(pid_fd, out, missing);
}
