/* test_openmetrics.c — the OpenMetrics rendering of a report (engine/render/openmetrics.c): a saved
 * report with its saved evidence (rule gauges, evidence gauges, durations, timestamp), label
 * escaping of target-chosen strings, duplicate ids, absent evidence, the shape of every
 * line (a sample of a declared family, name{labels} value), and every evidence path it reads
 * against the schema. */
#include <ctype.h>
#include <stdbool.h>

#include "api/evidence_doc.h"
#include "engine.h"
#include "json.h"
#include "render.h"
#include "t.h"
#include "value.h"

static sop_value *parse_fixture(const char *rel)
{
    size_t len = 0;
    char *text = t_slurp(rel, &len);
    sop_value *v = sop__json_parse(text, len, NULL, 0);
    free(text);
    if (!v) {
        fprintf(stderr, "fixture %s does not parse\n", rel);
        exit(1);
    }
    return v;
}

/* Every line is a comment of a known kind or a sample whose name belongs to the last declared
 * family (name, name_total for counters, name_info for info), with well-formed labels. */
static bool well_formed(const char *text, char *why, size_t whylen)
{
    char family[128] = "", type[16] = "";
    const char *p = text;
    int lineno = 0;
    while (*p) {
        const char *nl = strchr(p, '\n');
        if (!nl) {
            snprintf(why, whylen, "last line has no newline");
            return false;
        }
        char line[1024];
        size_t n = (size_t)(nl - p);
        if (n >= sizeof line) {
            snprintf(why, whylen, "line %d too long", lineno);
            return false;
        }
        memcpy(line, p, n);
        line[n] = '\0';
        p = nl + 1;
        lineno++;
        if (strncmp(line, "# TYPE ", 7) == 0) {
            if (sscanf(line + 7, "%127s %15s", family, type) != 2 || strncmp(family, "sop_", 4)) {
                snprintf(why, whylen, "bad TYPE line %d: %.200s", lineno, line);
                return false;
            }
            continue;
        }
        if (strncmp(line, "# UNIT ", 7) == 0 || strncmp(line, "# HELP ", 7) == 0) {
            size_t fl = strlen(family);
            if (strncmp(line + 7, family, fl) != 0 || line[7 + fl] != ' ') {
                snprintf(why, whylen, "line %d names another family: %.200s", lineno, line);
                return false;
            }
            if (line[2] == 'U') {
                /* The unit is the name's suffix. */
                const char *unit = line + 8 + fl;
                size_t ul = strlen(unit);
                if (fl <= ul || strcmp(family + fl - ul, unit) != 0) {
                    snprintf(why, whylen, "unit not a suffix of the name: %.200s", line);
                    return false;
                }
            }
            continue;
        }
        if (line[0] == '#') {
            snprintf(why, whylen, "unexpected comment line %d: %.200s", lineno, line);
            return false;
        }
        /* A sample: name, optional {labels}, space, value. */
        size_t i = 0;
        while (isalnum((unsigned char)line[i]) || line[i] == '_' || line[i] == ':')
            i++;
        char name[160];
        snprintf(name, sizeof name, "%.*s", (int)i, line);
        char expect[160];
        snprintf(expect, sizeof expect, "%s%s", family,
                 strcmp(type, "counter") == 0 ? "_total"
                 : strcmp(type, "info") == 0  ? "_info"
                                              : "");
        if (strcmp(name, expect) != 0) {
            snprintf(why, whylen, "line %d: sample %s outside its family %s", lineno, name, family);
            return false;
        }
        if (line[i] == '{') {
            i++;
            while (line[i] != '}') {
                while (isalnum((unsigned char)line[i]) || line[i] == '_')
                    i++;
                if (line[i] != '=' || line[i + 1] != '"') {
                    snprintf(why, whylen, "line %d: bad label: %.200s", lineno, line);
                    return false;
                }
                i += 2;
                while (line[i] && line[i] != '"') {
                    if (line[i] == '\\') {
                        if (line[i + 1] != '\\' && line[i + 1] != '"' && line[i + 1] != 'n') {
                            snprintf(why, whylen, "line %d: bad escape: %.200s", lineno, line);
                            return false;
                        }
                        i++;
                    }
                    i++;
                }
                if (line[i] != '"') {
                    snprintf(why, whylen, "line %d: unterminated label: %.200s", lineno, line);
                    return false;
                }
                i++;
                if (line[i] == ',')
                    i++;
                else if (line[i] != '}') {
                    snprintf(why, whylen, "line %d: bad label list: %.200s", lineno, line);
                    return false;
                }
            }
            i++;
        }
        char *end = NULL;
        if (line[i] != ' ' || (strtod(line + i + 1, &end), *end != '\0') || end == line + i + 1) {
            snprintf(why, whylen, "line %d: bad value: %.200s", lineno, line);
            return false;
        }
    }
    return true;
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

static void test_saved_report(void)
{
    struct sop_report r = {.tree = parse_fixture("openmetrics/asyncio_blocked.report.json")};
    struct sop_evidence ev = {.tree = parse_fixture("../replay/asyncio_blocked.json")};
    char *om = NULL;
    CHECK_EQ_I(sop_report_openmetrics(&r, &ev, &om), 0);
    CHECK(om != NULL);
    if (!om)
        return;
    if (getenv("T_DUMP"))
        fputs(om, stderr);
    char why[512] = "";
    bool ok = well_formed(om, why, sizeof why);
    if (!ok)
        fprintf(stderr, "%s\n", why);
    CHECK(ok);
    CHECK(strstr(
        om, "sop_rule_hit{rule=\"asyncio.loop_blocked\",section=\"5\",severity=\"warn\"} 1\n"));
    CHECK(strstr(om, "sop_rule_hit{rule=\"oom.killed\",section=\"2.1\",severity=\"high\"} 0\n"));
    /* An unknown rule has an unknown sample and no hit sample. */
    CHECK(strstr(om, "sop_rule_unknown{rule=\"mem.growth\",section=\"2.2\"} 1\n"));
    CHECK(!strstr(om, "sop_rule_hit{rule=\"mem.growth\""));
    CHECK(strstr(om, "sop_findings{severity=\"warn\"} 1\n"));
    CHECK(strstr(om, "sop_rules_unknown 18\n"));
    /* Every cleared or hit rule has one hit sample. */
    const sop_value *cl = sop__v_get(r.tree, "cleared"), *fi = sop__v_get(r.tree, "findings");
    CHECK_EQ_I(count(om, "\nsop_rule_hit{"), (long long)(cl->count + fi->count));
    CHECK(strstr(om, "sop_process_resident_memory_bytes 22401024\n")); /* 21876 kB */
    CHECK(strstr(om, "sop_process_cpu_seconds_total "));
    CHECK(strstr(om, "sop_effective_cpus 2\n"));
    CHECK(strstr(om, "sop_last_window_timestamp_seconds 1796205538.17687\n"));
    CHECK(strstr(om, "# UNIT sop_collect_duration_seconds seconds\n"));
    CHECK(strstr(om, "sop_target_info{pid=\"24876\",comm=\"python3\",python=\"3.11.7\"} 1\n"));
    CHECK(strstr(om, "sop_target_alive 1\n"));
    CHECK(!strstr(om, "# EOF"));
    free(om);

    /* Without evidence: the rule series and durations only. */
    CHECK_EQ_I(sop_report_openmetrics(&r, NULL, &om), 0);
    CHECK(om && strstr(om, "sop_rule_hit{") && !strstr(om, "sop_process_") &&
          !strstr(om, "sop_last_window_timestamp_seconds"));
    free(om);
    CHECK_EQ_I(sop_report_openmetrics(NULL, NULL, &om), SOP_EINVAL);
    sop__v_free(r.tree);
    sop__v_free(ev.tree);
}

static void test_escaping_and_python(void)
{
    static const char report_json[] =
        "{\"schema\":1,\"target\":{\"pid\":7,\"comm\":\"a\\\"b\\\\c\\nd\\u0001e\",\"python\":\"p\"}"
        ","
        "\"findings\":[{\"id\":\"x.\\\"q\",\"section\":\"5\",\"severity\":\"high\"},"
        "{\"id\":\"x.\\\"q\",\"section\":\"5\",\"severity\":\"warn\"}],"
        "\"cleared\":[{\"id\":\"x.\\\"q\",\"section\":\"5\",\"severity\":\"high\"},"
        "{\"id\":\"y\",\"section\":\"6\",\"severity\":\"warn\"}],"
        "\"unknown\":[],\"rule_errors\":[{\"id\":\"z\",\"where\":\"r.lua:1\",\"message\":\"m\"}],"
        "\"timing_ms\":{\"collect\":1500,\"rules\":2.5}}";
    static const char ev_json[] =
        "{\"schema\":1,\"pid\":7,\"alive\":false,\"duration_s\":1,\"collected_at\":1000.5,"
        "\"proc\":{\"rss_kb\":1,\"cpu_pct\":150},"
        "\"python\":{\"loop\":{\"longest_block_ms\":250},"
        "\"loader\":{\"main_data_wait_frac\":0.5},"
        "\"threads\":[{\"window\":{\"gil_frac\":0.75,\"io_wait_frac\":0.25}},"
        "{\"window\":{\"gil_frac\":0.5,\"io_wait_frac\":0.5}}]}}";
    struct sop_report r = {.tree = sop__json_parse(report_json, sizeof report_json - 1, NULL, 0)};
    struct sop_evidence ev = {.tree = sop__json_parse(ev_json, sizeof ev_json - 1, NULL, 0)};
    CHECK(r.tree && ev.tree);
    /* Bytes that are not UTF-8 (and C1 controls) in a target's name. */
    sop_value *t = (sop_value *)sop__v_get(r.tree, "target");
    for (sop_value *c = t ? t->child : NULL; c; c = c->next)
        if (strcmp(c->key, "comm") == 0) {
            free(c->str);
            c->str = strdup("\xff\xc3\xa9\xc2\x85\xe2\x82");
        } else if (strcmp(c->key, "python") == 0) { /* bidi and format controls */
            free(c->str);
            c->str = strdup("a\xe2\x80\xae"
                            "b\xe2\x81\xa6"
                            "c\xe2\x80\x8e"
                            "d\xd8\x9c"
                            "e");
        }
    char *om = NULL;
    CHECK_EQ_I(sop_report_openmetrics(&r, &ev, &om), 0);
    if (!om)
        return;
    char why[512] = "";
    bool ok = well_formed(om, why, sizeof why);
    if (!ok)
        fprintf(stderr, "%s\n%s\n", why, om);
    CHECK(ok);
    CHECK(strstr(om, "comm=\"?\xc3\xa9??\"")); /* é kept; 0xff, U+0085 and a cut-off sequence not */
    /* U+202E, U+2066, U+200E, U+061C: each a '?' (nothing reorders a dashboard's line) */
    CHECK(strstr(om, "a?b?c?d?e") && !strstr(om, "\xe2\x80\xae") && !strstr(om, "\xe2\x81\xa6"));
    /* One hit sample per rule, the most severe finding's. */
    CHECK_EQ_I(count(om, "sop_rule_hit{rule=\"x.\\\"q\""), 1);
    CHECK(strstr(om, "sop_rule_hit{rule=\"x.\\\"q\",section=\"5\",severity=\"high\"} 1\n"));
    CHECK(strstr(om, "sop_rule_hit{rule=\"y\",section=\"6\",severity=\"warn\"} 0\n"));
    CHECK(strstr(om, "sop_rule_error{rule=\"z\"} 1\n"));
    CHECK(strstr(om, "sop_findings{severity=\"high\"} 1\n"));
    CHECK(strstr(om, "sop_collect_duration_seconds 1.5\n"));
    CHECK(strstr(om, "sop_rules_duration_seconds 0.0025\n"));
    CHECK(strstr(om, "sop_target_alive 0\n"));
    CHECK(strstr(om, "sop_process_cpus 1.5\n"));
    CHECK(strstr(om, "sop_python_gil_held_ratio 1\n")); /* 0.75 + 0.5, capped */
    CHECK(strstr(om, "sop_python_thread_uninterruptible_ratio 0.5\n"));
    CHECK(strstr(om, "sop_asyncio_loop_longest_stretch_seconds 0.25\n"));
    CHECK(strstr(om, "sop_dataloader_wait_ratio 0.5\n"));
    CHECK(strstr(om, "sop_last_window_timestamp_seconds 1000.5\n"));
    /* Absent evidence is absent, never 0. */
    CHECK(!strstr(om, "sop_process_threads") && !strstr(om, "sop_cgroup_"));
    free(om);
    sop__v_free(r.tree);
    sop__v_free(ev.tree);

    /* The label check itself rejects a raw quote (a test that cannot fail is a defect). */
    CHECK(!well_formed("# TYPE sop_a gauge\nsop_a{x=\"a\"b\"} 1\n", why, sizeof why));
    CHECK(!well_formed("# TYPE sop_a gauge\nsop_b 1\n", why, sizeof why));
}

/* ev.gpu: per-device gauges labelled by index, per-process memory, the tree's figures, one
 * sample per throttle reason; an absent figure gives no sample. */
static void test_gpu(void)
{
    static const char report_json[] = "{\"schema\":1,\"target\":{\"pid\":7,\"comm\":\"t\"},"
                                      "\"findings\":[],\"cleared\":[],\"unknown\":[]}";
    static const char ev_json[] =
        "{\"schema\":1,\"pid\":7,\"alive\":true,\"gpu\":{\"source\":\"nvml\","
        "\"driver_version\":\"550.1\",\"devices\":[{\"index\":0,\"uuid\":\"GPU-a\","
        "\"name\":\"H\\\"200\",\"used_by_tree\":true,\"mem_used_kb\":2048,\"mem_total_kb\":4096,"
        "\"util_sm_pct\":87.5,\"util_sm_max_pct\":100,\"idle_frac\":0.25,\"sm_clock_mhz\":1980,"
        "\"throttle\":\"sw_power_cap,hw_thermal\",\"temperature_c\":61,\"power_w\":350.5},"
        "{\"index\":1,\"uuid\":\"GPU-b\",\"name\":\"H200\",\"used_by_tree\":false}],"
        "\"procs\":[{\"pid\":7,\"device\":0,\"mem_kb\":1024,\"util_sm_pct\":80}],"
        "\"tree_mem_kb\":1024,\"busy_pct\":87.5,\"idle_frac\":0.25}}";
    struct sop_report r = {.tree = sop__json_parse(report_json, sizeof report_json - 1, NULL, 0)};
    struct sop_evidence ev = {.tree = sop__json_parse(ev_json, sizeof ev_json - 1, NULL, 0)};
    CHECK(r.tree && ev.tree);
    char *om = NULL;
    CHECK_EQ_I(sop_report_openmetrics(&r, &ev, &om), 0);
    if (!om)
        return;
    char why[512] = "";
    bool ok = well_formed(om, why, sizeof why);
    if (!ok)
        fprintf(stderr, "%s\n%s\n", why, om);
    CHECK(ok);
    CHECK(strstr(om,
                 "sop_gpu_info{gpu=\"0\",uuid=\"GPU-a\",name=\"H\\\"200\",used_by_tree=\"true\","
                 "driver=\"550.1\"} 1\n"));
    CHECK(
        strstr(om, "sop_gpu_info{gpu=\"1\",uuid=\"GPU-b\",name=\"H200\",used_by_tree=\"false\","));
    CHECK(strstr(om, "sop_gpu_utilization_ratio{gpu=\"0\"} 0.875\n"));
    CHECK(strstr(om, "sop_gpu_utilization_max_ratio{gpu=\"0\"} 1\n"));
    CHECK(strstr(om, "sop_gpu_idle_ratio{gpu=\"0\"} 0.25\n"));
    CHECK(strstr(om, "sop_gpu_memory_used_bytes{gpu=\"0\"} 2097152\n"));
    CHECK(strstr(om, "sop_gpu_sm_clock_hertz{gpu=\"0\"} 1980000000\n"));
    CHECK(strstr(om, "sop_gpu_power_watts{gpu=\"0\"} 350.5\n"));
    CHECK(strstr(om, "sop_gpu_clocks_throttled{gpu=\"0\",reason=\"sw_power_cap\"} 1\n"));
    CHECK(strstr(om, "sop_gpu_clocks_throttled{gpu=\"0\",reason=\"hw_thermal\"} 1\n"));
    CHECK(strstr(om, "sop_gpu_process_memory_bytes{gpu=\"0\",pid=\"7\"} 1048576\n"));
    CHECK(strstr(om, "sop_gpu_process_utilization_ratio{gpu=\"0\",pid=\"7\"} 0.8\n"));
    CHECK(strstr(om, "sop_gpu_tree_busy_ratio 0.875\n"));
    CHECK(strstr(om, "sop_gpu_tree_idle_ratio 0.25\n"));
    CHECK(strstr(om, "sop_gpu_tree_memory_bytes 1048576\n"));
    /* device 1 has no utilisation: no sample for it; no PCIe figure at all: no family */
    CHECK(!strstr(om, "sop_gpu_utilization_ratio{gpu=\"1\"}"));
    CHECK(!strstr(om, "sop_gpu_pcie"));
    CHECK_EQ_I(count(om, "# TYPE sop_gpu_utilization_ratio "), 1);
    free(om);
    sop__v_free(r.tree);
    sop__v_free(ev.tree);
}

/* Every evidence path the writer reads is a row of the schema (docs/evidence.md): a misspelt or
 * renamed key fails here instead of silently dropping a metric. */
static void test_paths_in_schema(void)
{
    const char *paths[128];
    size_t n = sop__openmetrics_reads(paths, 128);
    CHECK(n >= 30 && n <= 128);
    for (size_t i = 0; i < n && i < 128; i++) {
        bool found = sop__evidence_row(paths[i]) != NULL;
        if (!found)
            printf("not in the schema: %s\n", paths[i]);
        CHECK(found);
    }
    CHECK(sop__evidence_row("proc.cpu_pctx") == NULL);
    CHECK(sop__evidence_row("duration_s") != NULL);
    CHECK(sop__evidence_row("python.threads[].window.gil_frac") != NULL);
}

int main(void)
{
    test_paths_in_schema();
    test_gpu();
    test_saved_report();
    test_escaping_and_python();
    printf("%d passed, %d failed\n", t_pass, t_fail);
    return t_fail ? 1 : 0;
}
