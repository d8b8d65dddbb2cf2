/* test_rank.c — engine/bridge/rank_identity.c: the rank identity from the allow-listed environment
 * (torchrun's variables win over Slurm's; TORCHELASTIC_RUN_ID "none" is no job id; no rank
 * variables, no `rank`), the key figures from an evidence tree (absent stays absent), and a built
 * report carrying both (target.rank..., figures, sop_version). */
#include <sys/utsname.h>

#include "bridge/schema.h"
#include "engine.h"
#include "evidence_doc.h"
#include "json.h"
#include "rank_identity.h"
#include "render.h"
#include "t.h"
#include "value.h"

static sop_value *ev_with_env(const char *json_env)
{
    char text[1024];
    snprintf(text, sizeof text, "{\"schema\": 1, \"pid\": 7, \"proc\": {\"pid\": 7, \"env\": %s}}",
             json_env);
    return sop__json_parse(text, strlen(text), NULL, 0);
}

static double num(const sop_value *o, const char *key)
{
    double d = -999;
    sop__v_get_num(o, key, &d);
    return d;
}

static void test_identity(void)
{
    struct utsname u;
    uname(&u);
    sop_value *ev = ev_with_env("{\"RANK\": \"5\", \"LOCAL_RANK\": \"1\", \"WORLD_SIZE\": \"8\","
                                "\"SLURM_PROCID\": \"2\", \"SLURM_JOB_ID\": \"4242\","
                                "\"TORCHELASTIC_RUN_ID\": \"none\"}");
    sop__rank_identity(ev);
    const sop_value *r = sop__v_get(ev, "rank");
    CHECK_EQ_I(num(r, "rank"), 5);
    CHECK_EQ_I(num(r, "local_rank"), 1);
    CHECK_EQ_I(num(r, "world_size"), 8);
    CHECK_EQ_S(sop__v_get_str(r, "job_id"), "4242");
    CHECK_EQ_S(sop__v_get_str(r, "node"), u.nodename);
    CHECK_EQ_S(sop__v_get_str(r, "source"), "torch.distributed");
    sop__v_free(ev);

    ev = ev_with_env("{\"SLURM_PROCID\": \"3\", \"SLURM_LOCALID\": \"1\", \"SLURM_NTASKS\": \"4\","
                     "\"SLURM_JOB_ID\": \"77\"}");
    sop__rank_identity(ev);
    r = sop__v_get(ev, "rank");
    CHECK_EQ_I(num(r, "rank"), 3);
    CHECK_EQ_I(num(r, "local_rank"), 1);
    CHECK_EQ_I(num(r, "world_size"), 4);
    CHECK_EQ_S(sop__v_get_str(r, "source"), "slurm");
    sop__v_free(ev);

    ev = ev_with_env("{\"RANK\": \"0\", \"TORCHELASTIC_RUN_ID\": \"abc-123\"}");
    sop__rank_identity(ev);
    CHECK_EQ_S(sop__v_get_str(sop__v_get(ev, "rank"), "job_id"), "abc-123");
    sop__v_free(ev);

    /* nothing of a rank (a bad RANK value is none either) */
    ev = ev_with_env("{\"OMP_NUM_THREADS\": \"4\", \"RANK\": \"-1x\"}");
    sop__rank_identity(ev);
    CHECK(sop__v_get(ev, "rank") == NULL);
    sop__v_free(ev);
}

static void test_figures_and_report(void)
{
    static const char text[] =
        "{\"schema\": 1, \"pid\": 9, \"proc\": {\"pid\": 9, \"comm\": \"python3\", \"cpu_pct\": "
        "12.5,"
        " \"rss_kb\": 2048, \"env\": {\"RANK\": \"1\", \"WORLD_SIZE\": \"2\"}},"
        " \"python\": {\"loader\": {\"main_data_wait_frac\": 0.9}, \"loop\": "
        "{\"longest_block_ms\": 250},"
        "  \"threads\": [{\"window\": {\"gil_frac\": 0.7, \"io_wait_frac\": 0.1}},"
        "               {\"window\": {\"gil_frac\": 0.6, \"io_wait_frac\": 0.3, "
        "\"data_wait_frac\": 0.2}}]}}";
    sop_value *ev = sop__json_parse(text, strlen(text), NULL, 0);
    sop_value *f = sop__rank_figures(ev);
    CHECK(f != NULL);
    CHECK(num(f, "cpu_pct") == 12.5);
    CHECK(num(f, "rss_kb") == 2048);
    CHECK(num(f, "data_wait_frac") == 0.9); /* the loader's figure before the threads' */
    CHECK(num(f, "dstate_frac") == 0.3);    /* the largest */
    CHECK(num(f, "gil_frac") == 1);         /* the sum, at most 1 */
    CHECK(num(f, "loop_stretch_ms") == 250);
    CHECK(sop__v_get(f, "runnable_load") == NULL); /* no ev.sched: absent, not 0 */
    sop__v_free(f);

    sop__rank_identity(ev);
    bool problem = true;
    sop_value *verdicts = sop__v_obj();
    sop_value *rep = sop__report_build(verdicts, ev, 1.0, &problem);
    const sop_value *t = sop__v_get(rep, "target");
    CHECK_EQ_I(num(t, "rank"), 1);
    CHECK_EQ_I(num(t, "world_size"), 2);
    CHECK(sop__v_get(t, "source") == NULL);
    CHECK(sop__v_get_str(t, "node") != NULL);
    CHECK(num(sop__v_get(rep, "figures"), "cpu_pct") == 12.5);
    CHECK_EQ_S(sop__v_get_str(rep, "sop_version"), SOP_VERSION_STRING);
    sop__v_free(rep);
    sop__v_free(ev);

    /* collective wait: from the thread most in collectives (the step thread), with the window */
    static const char coll[] =
        "{\"sampling\": {\"window_s\": 4}, \"python\": {\"threads\": ["
        " {\"window\": {\"collective_frac\": 0, \"own_frac\": 0}},"
        " {\"window\": {\"collective_frac\": 0.7, \"collective_op\": \"all_reduce\","
        "  \"collective_longest_ms\": 120, \"own_frac\": 0.3, \"own_frame\": \"prep (t.py:3)\","
        "  \"own_frame_frac\": 0.25}}]}}";
    ev = sop__json_parse(coll, strlen(coll), NULL, 0);
    f = sop__rank_figures(ev);
    CHECK(f != NULL);
    CHECK(num(f, "collective_frac") == 0.7);
    CHECK_EQ_S(sop__v_get_str(f, "collective"), "all_reduce");
    CHECK(num(f, "collective_longest_ms") == 120);
    CHECK(num(f, "own_frac") == 0.3);
    CHECK_EQ_S(sop__v_get_str(f, "own_frame"), "prep (t.py:3)");
    CHECK(num(f, "window_s") == 4);
    sop__v_free(f);
    sop__v_free(ev);

    /* an evidence tree with none of the figures: no `figures` at all */
    ev = ev_with_env("{}");
    CHECK(sop__rank_figures(ev) == NULL);
    sop__v_free(ev);
}

/* Every evidence path rank.c reads is a key of the schema (docs/evidence.md): a misspelt or
 * renamed key fails here instead of silently dropping a figure. */
static void test_paths_in_schema(void)
{
    const char *paths[64];
    size_t n = sop__rank_paths(paths, 64);
    CHECK(n >= 10);
    for (size_t i = 0; i < n; i++) {
        bool found = sop__evidence_row(paths[i]) != NULL;
        if (!found)
            printf("not in the schema: %s\n", paths[i]);
        CHECK(found);
    }
}

int main(void)
{
    test_identity();
    test_figures_and_report();
    test_paths_in_schema();
    return t_done();
}
