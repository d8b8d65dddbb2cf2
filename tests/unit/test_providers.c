/* test_providers.c — the table of evidence providers (engine/collect/provider.h, providers.c):
 * names unique, each one doing something, its rows a schema table, the order the finishes depend
 * on; and the scheduler (engine/collect/collect.c) on the fixture /proc tree: the top-level keys in
 * table order, a probe turned off leaving its group out. Depends on engine/collect/provider.h,
 * engine.h, t.h. */
#include <stdlib.h>
#include <string.h>

#include "bridge/schema.h"
#include "collect.h"
#include "engine.h"
#include "evidence_doc.h"
#include "provider.h"
#include "t.h"

static int index_of(const char *name)
{
    for (size_t i = 0; i < sop__nproviders; i++)
        if (strcmp(sop__providers[i]->name, name) == 0)
            return (int)i;
    return -1;
}

static void table_cases(void)
{
    CHECK_EQ_I(sop__nproviders, SOP_NPROVIDERS);
    int post_mortem = 0;
    for (size_t i = 0; i < sop__nproviders; i++) {
        const sop_provider *p = sop__providers[i];
        CHECK(p->name && p->name[0]);
        CHECK_EQ_I(index_of(p->name), (long long)i); /* unique */
        CHECK(p->emit || p->finish);                 /* it does something */
        CHECK(!p->poll || p->finish || p->emit);
        CHECK(!p->start || p->free || !p->poll); /* a state it polls is freed */
        post_mortem += p->post_mortem;
        for (const sop_evk_group *g = p->groups; g && g->group; g++) {
            CHECK(g->group[0] && g->file && g->file[0] && g->keys && g->n && *g->n > 0);
            for (size_t j = 0; j < i; j++) /* each group emitted by one provider */
                for (const sop_evk_group *o = sop__providers[j]->groups; o && o->group; o++)
                    CHECK(strcmp(o->group, g->group) != 0);
        }
    }
    CHECK_EQ_I(post_mortem, 1); /* host: a pid that is gone has only the kernel log */
    CHECK(sop__providers[index_of("host")]->post_mortem);
    /* finishes read those above them */
    CHECK(index_of("budget") >= 0 && index_of("budget") < index_of("sched"));
    CHECK(index_of("python") >= 0 && index_of("python") < index_of("sampling"));
    CHECK(index_of("python") < index_of("heap") && index_of("python") < index_of("tasks"));
    CHECK(index_of("gpu") >= 0 && index_of("gpu") < index_of("python")); /* its lane: sampler */
}

/* Every group a provider emits is in docs/evidence.md: a line "<group> object|array ... written
 * by <file>" (a group whose @@KEYS line the template lacks would be in the JSON schema only). */
static void doc_cases(void)
{
    const sop_evk_group *g[64];
    size_t n = sop__evidence_groups(g, 64);
    CHECK(n > sop__nproviders / 2 && n <= 64);
    char *md = NULL;
    CHECK_EQ_I(sop_evidence_doc(SOP_FORMAT_MD, &md), 0);
    for (size_t i = 0; md && i < n && i < 64; i++) {
        if (!g[i]->group[0])
            continue; /* the top-level keys have no header line */
        char line[256];
        snprintf(line, sizeof line, "\n%s ", g[i]->group);
        bool listed = strstr(md, line) && strstr(md, g[i]->file);
        CHECK(listed);
        if (!listed)
            fprintf(stderr, "group %s not in docs/evidence.md\n", g[i]->group);
    }
    free(md);
}

/* The top-level keys of a collection on the fixture tree, joined by ' '. */
static void collect_keys(unsigned probes, char *out, size_t cap)
{
    sop_collect_opts o;
    sop_collect_opts_init(&o);
    o.duration_s = 0;
    o.python = 0;
    o.kernel_log = 0;
    o.probes = probes;
    char proc_root[512], cgroup_root[512]; /* t_fixture's buffer is static */
    snprintf(proc_root, sizeof proc_root, "%s", t_fixture("proc/root"));
    snprintf(cgroup_root, sizeof cgroup_root, "%s", t_fixture("cgroup/v2"));
    o.proc_root = proc_root;
    o.cgroup_root = cgroup_root;
    sop_value *ev = NULL;
    char err[256] = "";
    out[0] = '\0';
    int rc = sop__collect(7743, &o, &ev, NULL, err, sizeof err);
    CHECK_EQ_I(rc, 0);
    if (rc != 0)
        fprintf(stderr, "collect: %s\n", err);
    for (const sop_value *v = ev ? ev->child : NULL; v; v = v->next) {
        strncat(out, v->key, cap - strlen(out) - 2);
        strcat(out, " ");
    }
    sop__v_free(ev);
}

static void scheduler_cases(void)
{
    char keys[1024];
    collect_keys(SOP_PROBE_ALL, keys, sizeof keys);
    CHECK(strncmp(keys, "schema pid duration_s collected_at alive host proc ", 51) == 0);
    /* (the fixture's cgroup is not found: no cgroup key here) */
    const char *eff = strstr(keys, " effective_cpus "), *alloc = strstr(keys, " alloc ");
    const char *miss = strstr(keys, " missing ");
    CHECK(eff && alloc && miss && eff < alloc && alloc < miss);
    CHECK(strstr(keys, " threads ") != NULL);
    CHECK(strstr(keys, " sched ") == NULL); /* no window */
    CHECK(strstr(keys, " python ") == NULL);

    collect_keys(SOP_PROBE_ALL & ~(SOP_PROBE_CGROUP | SOP_PROBE_ALLOC | SOP_PROBE_THREADS), keys,
                 sizeof keys);
    CHECK(strstr(keys, " alloc ") == NULL);
    CHECK(strstr(keys, " threads ") == NULL);
    CHECK(strstr(keys, " effective_cpus ") != NULL);
    CHECK(strstr(keys, " host ") != NULL && strstr(keys, " proc ") != NULL);
}

int main(void)
{
    table_cases();
    doc_cases();
    scheduler_cases();
    return t_done();
}
