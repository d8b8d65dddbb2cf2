/* test_numa.c — the NUMA probe on fixture text and trees: numa_maps sums per node (page sizes,
 * huge pages, interleave policies, node ids past the table, malformed tokens, line and byte
 * bounds), the sysfs node directory (CPUs, memory-only node, node meminfo), an unreadable
 * numa_maps as a missing entry (never 0), this process's own numa_maps, and the writer's keys.
 * Depends on probes/numa.h, engine/bridge/bridge.h, engine/collect/collect_numa.h, t.h. */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "bridge/bridge.h"
#include "collect_numa.h"
#include "numa.h"
#include "t.h"

static sop_numa N; /* large: keep off the stack */

static int open_dir(const char *rel)
{
    int fd = open(t_fixture(rel), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "cannot open fixture dir %s\n", rel);
        exit(2);
    }
    return fd;
}

static double num_at(const sop_value *o, const char *key)
{
    double d = -1;
    return sop__v_get_num(o, key, &d) ? d : -1;
}

int main(void)
{
    size_t len;
    char *text = t_slurp("numa/numa_maps", &len);
    sop_numa_pages pg;

    /* the whole fixture: N0 150+40+1200+1024+5+4+33 pages, N1 50000+262144+1024+5 pages of 4 kB
     * and 2 huge pages of 2048 kB; N70 past the table; malformed N tokens ignored */
    CHECK_EQ_I(sop__parse_numa_maps(text, len, 1000, false, &pg), 0);
    CHECK_EQ_I(pg.lines, 11);
    CHECK_EQ_I(pg.kb[0], 2456 * 4);
    CHECK_EQ_I(pg.kb[1], 313173 * 4 + 2 * 2048);
    CHECK_EQ_I(pg.kb[2], 0);
    CHECK_EQ_I(pg.other_kb, 4);
    CHECK_EQ_I(pg.interleave_kb, (2048 + 10) * 4);
    CHECK(!pg.truncated);

    /* the line bound: the first 3 mappings only, and it says so */
    CHECK_EQ_I(sop__parse_numa_maps(text, len, 3, false, &pg), 0);
    CHECK_EQ_I(pg.lines, 3);
    CHECK_EQ_I(pg.kb[0], (150 + 40 + 1200) * 4);
    CHECK_EQ_I(pg.kb[1], 50000 * 4);
    CHECK(pg.truncated);

    /* the byte bound cut the 4th line ("7f3a40000000 bind:1 ... N1=26"): dropped, not half-read */
    const char *cut = strstr(text, "N1=262144");
    CHECK(cut != NULL);
    size_t cut_len = (size_t)(cut - text) + 5;
    CHECK_EQ_I(sop__parse_numa_maps(text, cut_len, 1000, true, &pg), 0);
    CHECK_EQ_I(pg.lines, 3);
    CHECK_EQ_I(pg.kb[1], 50000 * 4);
    CHECK(pg.truncated);
    /* the same text not cut at a bound: its last line counts as it stands */
    CHECK_EQ_I(sop__parse_numa_maps(text, cut_len, 1000, false, &pg), 0);
    CHECK_EQ_I(pg.lines, 4);
    CHECK_EQ_I(pg.kb[1], (50000 + 26) * 4);
    free(text);

    /* no page size field: 4 kB; no mapping line: -EINVAL; empty: nothing, no error */
    const char *small = "7f0000000000 default anon=3 N1=3\n";
    CHECK_EQ_I(sop__parse_numa_maps(small, strlen(small), 10, false, &pg), 0);
    CHECK_EQ_I(pg.kb[1], 12);
    CHECK_EQ_I(sop__parse_numa_maps("garbage N0=5\n", 13, 10, false, &pg), -EINVAL);
    CHECK_EQ_I(sop__parse_numa_maps("", 0, 10, false, &pg), 0);
    CHECK_EQ_I(pg.lines, 0);

    /* the node directory: sorted, CPUs counted, node meminfo, a memory-only node */
    sop_missing miss = {0};
    sop__numa_init(&N);
    int node_fd = open_dir("numa/node");
    CHECK_EQ_I(sop__numa_read_topology(node_fd, &N, &miss), 0);
    close(node_fd);
    CHECK(N.have_topology);
    CHECK_EQ_I(N.nnodes, 3);
    CHECK_EQ_I(N.nodes[0].node, 0);
    CHECK_EQ_S(N.nodes[0].cpus, "0-15,32-47");
    CHECK_EQ_I(N.nodes[0].cpu_count, 32);
    CHECK_EQ_I(N.nodes[0].mem_total_kb, 65536000);
    CHECK_EQ_I(N.nodes[0].mem_free_kb, 1024000);
    CHECK_EQ_I(N.nodes[1].node, 1);
    CHECK_EQ_S(N.nodes[1].cpus, "16-31,48-63");
    CHECK_EQ_I(N.nodes[1].mem_free_kb, 60000000);
    CHECK_EQ_I(N.nodes[2].node, 2);
    CHECK_EQ_S(N.nodes[2].cpus, "");
    CHECK_EQ_I(N.nodes[2].cpu_count, 0);
    CHECK(N.nodes[2].mem_total_kb == SOP_NA);
    CHECK_EQ_I(miss.n, 0);

    /* a directory without node<N> entries: not measured, and said */
    int empty_fd = open_dir("numa/node/node0");
    sop_numa none;
    sop__numa_init(&none);
    CHECK(sop__numa_read_topology(empty_fd, &none, &miss) < 0);
    close(empty_fd);
    CHECK(!none.have_topology);
    CHECK(miss.n == 1 && strstr(miss.items[0].reason, "NUMA") != NULL);
    sop__missing_free(&miss);

    /* numa_maps through a "/proc/PID" directory fd; a missing file is a missing entry */
    int pid_fd = open_dir("numa");
    CHECK_EQ_I(sop__numa_read_pages(pid_fd, &N, &miss), 0);
    close(pid_fd);
    CHECK(N.have_pages);
    CHECK_EQ_I(N.pages.kb[1], 313173 * 4 + 2 * 2048);
    CHECK_EQ_I(miss.n, 0);
    int nomaps_fd = open_dir("numa/node");
    sop_numa unread;
    sop__numa_init(&unread);
    CHECK_EQ_I(sop__numa_read_pages(nomaps_fd, &unread, &miss), -ENOENT);
    close(nomaps_fd);
    CHECK(!unread.have_pages);
    CHECK(miss.n == 1 && strcmp(miss.items[0].probe, "proc.numa") == 0);
    sop__missing_free(&miss);

    /* this very process through /proc/self (skipped on a kernel without numa_maps): pages found */
    int self_fd = open("/proc/self", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (self_fd >= 0 && faccessat(self_fd, "numa_maps", R_OK, 0) == 0) {
        sop_numa self;
        sop__numa_init(&self);
        CHECK_EQ_I(sop__numa_read_pages(self_fd, &self, &miss), 0);
        int64_t self_kb = self.pages.other_kb;
        for (int i = 0; i < SOP_NUMA_NODES_MAX; i++)
            self_kb += self.pages.kb[i];
        CHECK(self.have_pages && self.pages.lines > 10 && self_kb > 100);
        CHECK(!self.pages.truncated);
    }
    if (self_fd >= 0)
        close(self_fd);
    CHECK_EQ_I(miss.n, 0);

    /* the bridge: host.numa.nodes[], proc.numa.nodes[] per host node, total kb */
    N.balancing = 1;
    sop_value *ev = sop__v_obj();
    sop__v_obj_at(ev, "proc");
    sop__bridge_numa(ev, &N);
    const sop_value *hn = sop__v_get(sop__v_get(ev, "host"), "numa");
    CHECK(hn != NULL);
    CHECK_EQ_I(num_at(hn, "balancing"), 1);
    const sop_value *nodes = sop__v_get(hn, "nodes");
    CHECK(nodes && nodes->count == 3);
    const sop_value *n0 = nodes ? nodes->child : NULL;
    CHECK(n0 && strcmp(sop__v_get_str(n0, "cpus"), "0-15,32-47") == 0);
    CHECK(n0 && num_at(n0, "cpu_count") == 32);
    const sop_value *n2 = n0 && n0->next ? n0->next->next : NULL;
    CHECK(n2 && sop__v_get(n2, "cpus") == NULL && num_at(n2, "cpu_count") == 0);
    CHECK(n2 && sop__v_get(n2, "mem_total_kb") == NULL);
    const sop_value *pn = sop__v_get(sop__v_get(ev, "proc"), "numa");
    CHECK(pn != NULL);
    CHECK_EQ_I(num_at(pn, "kb"), 2456 * 4 + 313173 * 4 + 2 * 2048 + 4);
    CHECK_EQ_I(num_at(pn, "other_kb"), 4);
    CHECK_EQ_I(num_at(pn, "mappings"), 11);
    const sop_value *pnodes = sop__v_get(pn, "nodes");
    CHECK(pnodes && pnodes->count == 3); /* nodes 0, 1 and the empty node 2 of the host */
    const sop_value *p1 = pnodes && pnodes->child ? pnodes->child->next : NULL;
    CHECK(p1 && num_at(p1, "node") == 1 && num_at(p1, "kb") == 313173 * 4 + 2 * 2048);
    sop__v_free(ev);

    /* not read at all: no host.numa, no proc.numa */
    ev = sop__v_obj();
    sop__bridge_numa(ev, &unread);
    CHECK(sop__v_get(ev, "host") == NULL);
    sop__v_free(ev);
    return t_done();
}
