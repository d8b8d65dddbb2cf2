/* merge_render.c — the job-level report (the value tree engine/merge/merge.c builds) as Markdown or
 * text in en/zh, and as JSON: the writers the format table names (sop__merge_md/_text/_json).
 * Every string from a report is untrusted: escaped for the format on the way out. Depends on
 * value, json, strbuf, escape. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "json.h"
#include "merge.h"
#include "merge_int.h"
#include "merge_wait.h"
#include "severity.h"
#include "strbuf.h"

/* ---- rendering --------------------------------------------------------------------------- */

typedef struct {
    const char *title, *job, *ranks_on, *nodes, *world, *straggler, *no_straggler, *wide,
        *none_wide, *outliers, *no_outliers, *by_rule, *rule, *severity, *ranks, *count, *per_rank,
        *rank, *node, *pid, *findings, *missing, *versions, *excluded, *median, *figure, *value,
        *explained, *vs_median, *mismatched, *reports, *notes, *fix, *unexplained;
} labels;

static const labels EN = {"sop job report",
                          "job",
                          "ranks",
                          "nodes",
                          "world size",
                          "Straggler",
                          "No straggler: no rank stands out with a finding of its own.",
                          "Job-wide findings (on every rank)",
                          "None.",
                          "Outliers (median absolute deviation)",
                          "No rank's key figures stand out.",
                          "Findings by rule",
                          "rule",
                          "severity",
                          "ranks",
                          "count",
                          "Ranks",
                          "rank",
                          "node",
                          "pid",
                          "findings",
                          "Missing",
                          "Report versions",
                          "excluded (other schema)",
                          "job median",
                          "figure",
                          "value",
                          "explained by",
                          "vs job median",
                          "versions differ",
                          "reports",
                          "Notes",
                          "fix",
                          "no finding of its own"};
static const labels ZH = {"sop 作业报告",
                          "作业",
                          "个 rank",
                          "个节点",
                          "world size",
                          "拖慢者（straggler）",
                          "没有拖慢者：没有哪个 rank 既有突出的指标又有自己的发现。",
                          "全作业的发现（每个 rank 都有）",
                          "无。",
                          "离群值（中位数绝对偏差）",
                          "没有 rank 的关键指标离群。",
                          "按规则的发现",
                          "规则",
                          "级别",
                          "rank",
                          "数量",
                          "各 rank",
                          "rank",
                          "节点",
                          "pid",
                          "发现",
                          "缺失",
                          "报告版本",
                          "已排除（其他 schema）",
                          "作业中位数",
                          "指标",
                          "值",
                          "解释",
                          "对比作业中位数",
                          "版本不一致",
                          "份报告",
                          "备注",
                          "修复",
                          "没有它自己的发现"};

/* Escape a string from a report: controls always; in Markdown also its punctuation. */
static void put(sop_sb *b, const char *s, bool md)
{
    if (!s)
        return;
    if (!md) {
        sop__sb_put_escaped(b, s, false);
        return;
    }
    sop_sb t = {0};
    sop__sb_put_escaped(&t, s, false);
    char *e = sop__sb_take(&t);
    for (const char *p = e ? e : ""; *p; p++) {
        if (strchr("\\`*_[]<>|#!~&", *p))
            sop__sb_putn(b, "\\", 1);
        sop__sb_putn(b, p, 1);
    }
    free(e);
}

static const figure_def *fig_def(const char *key)
{
    for (size_t i = 0; key && i < NFIG; i++)
        if (strcmp(FIGS[i].key, key) == 0)
            return &FIGS[i];
    return NULL;
}

static void put_fig_value(sop_sb *b, const char *key, double v)
{
    if (!key)
        return;
    if (strcmp(key, "cpu_pct") == 0)
        sop__sb_printf(b, "%.0f%%", v);
    else if (strstr(key, "_frac"))
        sop__sb_printf(b, "%.0f%%", 100 * v);
    else if (strcmp(key, "rss_kb") == 0)
        sop__sb_printf(b, "%.0f MiB", v / 1024);
    else if (strcmp(key, "loop_stretch_ms") == 0)
        sop__sb_printf(b, "%.0f ms", v);
    else
        sop__sb_printf(b, "%.2f", v);
}

static void put_fig_name(sop_sb *b, const char *key, const char *lang)
{
    const figure_def *d = fig_def(key);
    sop__sb_puts(b, d ? (strcmp(lang, "zh") == 0 ? d->zh : d->en) : "?");
}

static void put_finding_line(sop_sb *b, const sop_value *f, const labels *L, bool md)
{
    sop__sb_puts(b, md ? "**" : "[");
    put(b, sop__v_get_str(f, "severity"), md);
    sop__sb_puts(b, md ? "** " : "] ");
    put(b, sop__v_get_str(f, "id"), md);
    const char *sec = sop__v_get_str(f, "section");
    if (sec) {
        sop__sb_puts(b, " §");
        put(b, sec, md);
    }
    sop__sb_puts(b, ": ");
    put(b, sop__v_get_str(f, "symptom"), md);
    const char *ev = sop__v_get_str(f, "evidence");
    if (ev && *ev) {
        sop__sb_puts(b, " — ");
        put(b, ev, md);
    }
    const char *fix = sop__v_get_str(f, "fix");
    if (fix && *fix) {
        sop__sb_printf(b, " (%s: ", L->fix);
        put(b, fix, md);
        sop__sb_puts(b, ")");
    }
}

static void put_ids(sop_sb *b, const sop_value *arr, bool md)
{
    int k = 0;
    for (const sop_value *c = arr ? arr->child : NULL; c; c = c->next) {
        const char *id = c->type == SOP_V_STR ? c->str : sop__v_get_str(c, "id");
        if (!id)
            continue;
        sop__sb_puts(b, k++ ? ", " : "");
        put(b, id, md);
    }
}

/* "func (/path/to/file.py:12)" shown as "func (file.py:12)". */
static void put_frame(sop_sb *b, const char *frame, bool md)
{
    const char *open = frame ? strstr(frame, " (") : NULL;
    const char *slash = open ? strrchr(open, '/') : NULL;
    if (!slash) {
        put(b, frame, md);
        return;
    }
    size_t n = (size_t)(open - frame) + 2;
    char *t = malloc(n + strlen(slash + 1) + 1);
    if (!t)
        return;
    memcpy(t, frame, n);
    strcpy(t + n, slash + 1);
    put(b, t, md);
    free(t);
}

static void put_pct(sop_sb *b, const sop_value *o, const char *key)
{
    double v = 0;
    sop__v_get_num(o, key, &v);
    sop__sb_printf(b, "%.0f%%", 100 * v);
}

/* The collective-wait line under a straggler found by it (merge_wait.c). */
static void put_wait_straggler(sop_sb *b, const sop_value *st, bool md, const char *lang)
{
    const char *by = sop__v_get_str(st, "by");
    if (!by || strcmp(by, "collective_wait") != 0)
        return;
    bool zh = strcmp(lang, "zh") == 0;
    const char *frame = sop__v_get_str(st, "own_frame");
    const sop_value *ot = sop__v_get(st, "others");
    sop__sb_puts(b, md ? "- rank " : "  - rank ");
    put(b, sop__v_get_str(st, "rank"), md);
    sop__sb_puts(b, zh ? " 有 " : " spends ");
    put_pct(b, st, "own_frac");
    sop__sb_puts(b, zh ? " 的时间在集合通信之外" : " of the window outside collectives");
    if (frame) {
        sop__sb_puts(b, zh ? "，最多在 " : ", most at ");
        put_frame(b, frame, md);
        sop__sb_puts(b, zh ? "（" : " (");
        put_pct(b, st, "own_frame_frac");
        sop__sb_puts(b, zh ? "）" : ")");
    }
    sop__sb_puts(b, zh ? "，只有 " : ", and ");
    put_pct(b, st, "wait_frac");
    sop__sb_puts(b, zh ? " 在集合通信中等待" : " waiting in collectives");
    if (sop__v_get(st, "data_wait_frac")) {
        sop__sb_puts(b, zh ? "；它等自己的 DataLoader 占 " : "; it waits for its DataLoader ");
        put_pct(b, st, "data_wait_frac");
        sop__sb_puts(b, zh ? "" : " of the window");
    }
    sop__sb_puts(b, zh ? "；rank " : "; ranks ");
    put(b, sop__v_get_str(ot, "ranks"), md);
    sop__sb_puts(b, zh ? " 有 " : " wait ");
    double lo = 0, hi = 0;
    sop__v_get_num(ot, "wait_min", &lo);
    sop__v_get_num(ot, "wait_max", &hi);
    if (round(100 * lo) == round(100 * hi))
        sop__sb_printf(b, "%.0f%%", 100 * lo);
    else
        sop__sb_printf(b, "%.0f–%.0f%%", 100 * lo, 100 * hi);
    const char *op = sop__v_get_str(ot, "collective");
    if (op) {
        sop__sb_puts(b, zh ? " 的时间在 " : " in ");
        put(b, op, md);
        sop__sb_puts(b, zh ? " 中等它。\n" : " for it.\n");
    } else {
        sop__sb_puts(b, zh ? " 的时间在集合通信中等它。\n" : " in collectives for it.\n");
    }
    const char *also = sop__v_get_str(st, "also");
    if (also) {
        sop__sb_puts(b, md ? "- " : "  - ");
        sop__sb_puts(b, zh ? "同样很少等待的 rank：" : "also waiting little: ranks ");
        put(b, also, md);
        sop__sb_puts(b, "\n");
    }
}

/* A hang (merge_wait.c): who waits where, for how long, and where the odd rank is. */
/* Where a rank ran besides its node: its Kubernetes pod, else its container's name. */
static void put_pod(sop_sb *b, const sop_value *o, bool md)
{
    const char *pod = sop__v_get_str(o, "pod"), *ctr = sop__v_get_str(o, "container");
    if (pod || ctr) {
        sop__sb_puts(b, pod ? " pod " : " container ");
        put(b, pod ? pod : ctr, md);
    }
}

static void put_hang(sop_sb *b, const sop_value *h, bool md, const char *lang)
{
    bool zh = strcmp(lang, "zh") == 0;
    const sop_value *wt = sop__v_get(h, "waiting");
    const sop_value *where = sop__v_get(h, "where");
    const char *kind = sop__v_get_str(where, "kind");
    const char *rank = sop__v_get_str(h, "rank");
    const char *ranks = sop__v_get_str(wt, "ranks"), *op = sop__v_get_str(wt, "collective");
    double waited = 0, win = 0, pid = 0;
    sop__v_get_num(wt, "waited_s", &waited);
    sop__v_get_num(wt, "window_s", &win);
    sop__sb_puts(b, md ? "**" : "");
    if (rank) {
        sop__sb_puts(b, zh ? "卡住（hang）：rank " : "Hang: rank ");
        put(b, rank, md);
        const char *node = sop__v_get_str(h, "node");
        if (node || sop__v_get_num(h, "pid", &pid)) {
            sop__sb_puts(b, " (");
            if (node) {
                sop__sb_puts(b, zh ? "节点 " : "node ");
                put(b, node, md);
            }
            if (sop__v_get_num(h, "pid", &pid))
                sop__sb_printf(b, "%spid %.0f", node ? ", " : "", pid);
            sop__sb_puts(b, ")");
        }
        sop__sb_puts(b, zh ? " 不在其他 rank 等待的地方；rank " : " is elsewhere; ranks ");
    } else {
        sop__sb_puts(b, zh ? "卡住（hang）：rank " : "Hang: ranks ");
    }
    put(b, ranks, md);
    sop__sb_puts(b, zh ? " 在整个窗口内都停在 " : " have sat in ");
    put(b, op, md);
    sop__sb_puts(b, zh ? "" : " for the whole window");
    sop__sb_puts(b, md ? "**\n" : "\n");
    sop__sb_puts(b, md ? "- " : "  - ");
    sop__sb_puts(b, zh ? "rank " : "ranks ");
    put(b, ranks, md);
    if (zh)
        sop__sb_printf(b, " 已在 ");
    else
        sop__sb_printf(b, " have waited in ");
    put(b, op, md);
    if (zh)
        sop__sb_printf(b,
                       " 中等待至少 %.1f 秒（整个采样窗口 %.1f 秒；比窗口更长的一步看起来也一样："
                       "用更长的 --duration 再采一次即可区分）\n",
                       waited, win);
    else
        sop__sb_printf(b,
                       " for at least %.1f s (the whole sampled window of %.1f s; a step "
                       "longer than the window looks the same: sample longer to tell)\n",
                       waited, win);
    sop__sb_puts(b, md ? "- " : "  - ");
    if (!kind || strcmp(kind, "none") == 0) {
        sop__sb_puts(
            b, zh ? "所有报告中的 rank 都在等待：拖住它们的 rank 不在这些报告里（在别的节点？）\n"
                  : "every rank reported waits: the rank holding them up is not among "
                    "these reports (on another node?)\n");
        return;
    }
    sop__sb_puts(b, "rank ");
    put(b, rank, md);
    const char *frame = sop__v_get_str(where, "frame");
    if (strcmp(kind, "gone") == 0) {
        sop__sb_puts(b, zh ? " 没有报告：已退出，或没有被采集（见“缺失”）\n"
                           : " has no report: gone, or not collected (see Missing)\n");
        return;
    }
    if (strcmp(kind, "collective") == 0)
        sop__sb_puts(b, zh ? " 在另一个集合通信里：" : " is in another collective: ");
    else if (strcmp(kind, "data") == 0)
        sop__sb_puts(b, zh ? " 在等它的 DataLoader：" : " is waiting for its DataLoader: ");
    else if (strcmp(kind, "own") == 0)
        sop__sb_puts(b, zh ? " 在自己的代码里：" : " is in its own code: ");
    else
        sop__sb_puts(b, zh ? " 的位置未知（没有采到它的 Python 栈）"
                           : " is somewhere its Python stacks do not show");
    if (frame)
        put_frame(b, frame, md);
    if (sop__v_get(where, "frac")) {
        sop__sb_puts(b, zh ? "（窗口的 " : " (");
        put_pct(b, where, "frac");
        sop__sb_puts(b, zh ? "）" : " of the window)");
    }
    sop__sb_puts(b, "\n");
}

/* One rendering: where it writes, Markdown or text, the language and its labels. */
typedef struct {
    sop_sb *b;
    bool md;
    const char *lang;
    const labels *L;
} out;

/* "# sop job report: job J — N ranks on M nodes, world size W" */
static void sec_title(const out *o, const sop_value *job, double reports)
{
    sop_sb *b = o->b;
    const labels *L = o->L;
    const sop_value *jobs = sop__v_get(job, "job_ids");
    const sop_value *nodes = sop__v_get(job, "nodes");
    double world = 0;
    sop__sb_printf(b, "%s%s", o->md ? "# " : "", L->title);
    if (jobs && jobs->count) {
        sop__sb_printf(b, ": %s ", L->job);
        put_ids(b, jobs, o->md);
    }
    size_t nn = nodes ? nodes->count : 0;
    sop__sb_printf(b, " — %.0f %s, %zu %s", reports,
                   reports == 1 && L == &EN ? "rank" : L->ranks_on, nn,
                   nn == 1 && L == &EN ? "node" : L->nodes);
    if (sop__v_get_num(job, "world_size", &world))
        sop__sb_printf(b, ", %s %.0f", L->world, world);
    sop__sb_puts(b, "\n\n");
}

/* The straggler: who, where, what the others wait for, the figures it stands out on, the
 * findings that explain them. */
static void sec_straggler(const out *o, const sop_value *job, const sop_value *st)
{
    sop_sb *b = o->b;
    bool md = o->md;
    const labels *L = o->L;
    sop__sb_printf(b, "%s%s: rank ", md ? "**" : "", L->straggler);
    put(b, sop__v_get_str(st, "rank"), md);
    const char *node = sop__v_get_str(st, "node");
    double pid = 0;
    if (node || sop__v_get_num(st, "pid", &pid)) {
        sop__sb_puts(b, " (");
        if (node) {
            sop__sb_printf(b, "%s ", L->node);
            put(b, node, md);
        }
        put_pod(b, st, md);
        if (sop__v_get_num(st, "pid", &pid))
            sop__sb_printf(b, "%spid %.0f", node ? ", " : "", pid);
        sop__sb_puts(b, ")");
    }
    sop__sb_printf(b, "%s\n", md ? "**" : "");
    put_wait_straggler(b, st, md, o->lang);
    const sop_value *outl = sop__v_get(job, "outliers");
    for (const sop_value *ol = outl ? outl->child : NULL; ol; ol = ol->next) {
        const char *rk = sop__v_get_str(ol, "rank");
        if (!rk || strcmp(rk, sop__v_get_str(st, "rank")) != 0)
            continue;
        double v = 0, mdv = 0;
        sop__v_get_num(ol, "value", &v);
        sop__v_get_num(ol, "median", &mdv);
        const char *key = sop__v_get_str(ol, "figure");
        sop__sb_puts(b, md ? "- " : "  - ");
        put_fig_name(b, key, o->lang);
        sop__sb_puts(b, " ");
        put_fig_value(b, key, v);
        sop__sb_printf(b, " %s ", L->vs_median);
        put_fig_value(b, key, mdv);
        sop__sb_puts(b, "\n");
    }
    const sop_value *fs = sop__v_get(st, "findings");
    for (const sop_value *f = fs ? fs->child : NULL; f; f = f->next) {
        sop__sb_puts(b, md ? "- " : "  - ");
        put_finding_line(b, f, L, md);
        sop__sb_puts(b, "\n");
    }
}

/* The headline: a hang, else the straggler, else balanced collectives, else none. */
static void sec_verdict(const out *o, const sop_value *job)
{
    sop_sb *b = o->b;
    const sop_value *st = sop__v_get(job, "straggler");
    const sop_value *hg = sop__v_get(job, "hang");
    const sop_value *bal = sop__v_get(job, "balanced");
    if (hg) {
        put_hang(b, hg, o->md, o->lang);
    } else if (st) {
        sec_straggler(o, job, st);
    } else if (bal) {
        double lo = 0, hi = 0;
        sop__v_get_num(bal, "wait_min", &lo);
        sop__v_get_num(bal, "wait_max", &hi);
        bool zh = strcmp(o->lang, "zh") == 0;
        sop__sb_printf(b,
                       zh ? "没有拖慢者：各 rank 在集合通信中的等待相近（窗口的 %.0f–%.0f%%"
                          : "No straggler: the ranks wait alike in collectives (%.0f–%.0f%% of "
                            "the window",
                       100 * lo, 100 * hi);
        const char *op = sop__v_get_str(bal, "collective");
        if (op) {
            sop__sb_puts(b, zh ? "，主要在 " : ", most in ");
            put(b, op, o->md);
        }
        sop__sb_puts(b, zh ? "）。\n" : ").\n");
    } else {
        sop__sb_printf(b, "%s\n", o->L->no_straggler);
    }
}

/* "## " heading in Markdown, a plain line in text */
static void heading(const out *o, const char *title)
{
    sop__sb_printf(o->b, "\n%s%s\n%s", o->md ? "## " : "", title, o->md ? "\n" : "");
}

static void sec_wide(const out *o, const sop_value *job)
{
    heading(o, o->L->wide);
    const sop_value *wide = sop__v_get(job, "job_wide");
    if (!wide || !wide->count)
        sop__sb_printf(o->b, "%s\n", o->L->none_wide);
    for (const sop_value *f = wide ? wide->child : NULL; f; f = f->next) {
        sop__sb_puts(o->b, o->md ? "- " : "  - ");
        put_finding_line(o->b, f, o->L, o->md);
        sop__sb_puts(o->b, "\n");
    }
}

/* One outlier: a table row in Markdown, a line in text. */
static void outlier_line(const out *o, const sop_value *ol)
{
    sop_sb *b = o->b;
    const labels *L = o->L;
    double v = 0, mdv = 0;
    sop__v_get_num(ol, "value", &v);
    sop__v_get_num(ol, "median", &mdv);
    const char *key = sop__v_get_str(ol, "figure");
    const sop_value *fs = sop__v_get(ol, "findings");
    if (o->md) {
        sop__sb_puts(b, "| ");
        put(b, sop__v_get_str(ol, "rank"), true);
        sop__sb_puts(b, " | ");
        put(b, sop__v_get_str(ol, "node"), true);
        put_pod(b, ol, true);
        sop__sb_puts(b, " | ");
        put_fig_name(b, key, o->lang);
        sop__sb_puts(b, " | ");
        put_fig_value(b, key, v);
        sop__sb_puts(b, " | ");
        put_fig_value(b, key, mdv);
        sop__sb_puts(b, " | ");
        if (fs && fs->count)
            put_ids(b, fs, true);
        else
            sop__sb_puts(b, L->unexplained);
        sop__sb_puts(b, " |\n");
        return;
    }
    sop__sb_puts(b, "  - rank ");
    put(b, sop__v_get_str(ol, "rank"), false);
    const char *node = sop__v_get_str(ol, "node");
    if (node) {
        sop__sb_puts(b, " @");
        put(b, node, false);
    }
    put_pod(b, ol, false);
    sop__sb_puts(b, ": ");
    put_fig_name(b, key, o->lang);
    sop__sb_puts(b, " ");
    put_fig_value(b, key, v);
    sop__sb_printf(b, " %s ", L->vs_median);
    put_fig_value(b, key, mdv);
    sop__sb_printf(b, "; %s: ", L->explained);
    if (fs && fs->count)
        put_ids(b, fs, false);
    else
        sop__sb_puts(b, L->unexplained);
    sop__sb_puts(b, "\n");
}

static void sec_outliers(const out *o, const sop_value *job)
{
    const labels *L = o->L;
    heading(o, L->outliers);
    const sop_value *outl = sop__v_get(job, "outliers");
    if (!outl || !outl->count)
        sop__sb_printf(o->b, "%s\n", L->no_outliers);
    else if (o->md)
        sop__sb_printf(o->b, "| %s | %s | %s | %s | %s | %s |\n|---|---|---|---|---|---|\n",
                       L->rank, L->node, L->figure, L->value, L->median, L->explained);
    for (const sop_value *ol = outl ? outl->child : NULL; ol; ol = ol->next)
        outlier_line(o, ol);
}

static void sec_rules(const out *o, const sop_value *job, double reports)
{
    sop_sb *b = o->b;
    bool md = o->md;
    const labels *L = o->L;
    const sop_value *rules = sop__v_get(job, "rules");
    if (!rules || !rules->count)
        return;
    heading(o, L->by_rule);
    if (md)
        sop__sb_printf(b, "| %s | %s | %s | %s |\n|---|---|---|---|\n", L->rule, L->severity,
                       L->ranks, L->count);
    for (const sop_value *c = rules->child; c; c = c->next) {
        double cnt = 0;
        sop__v_get_num(c, "count", &cnt);
        sop__sb_puts(b, md ? "| " : "  - ");
        put(b, sop__v_get_str(c, "id"), md);
        sop__sb_puts(b, md ? " | " : " (");
        put(b, sop__v_get_str(c, "severity"), md);
        sop__sb_puts(b, md ? " | " : "): ranks ");
        put(b, sop__v_get_str(c, "ranks"), md);
        sop__sb_printf(b, md ? " | %.0f/%.0f |\n" : " (%.0f/%.0f)\n", cnt, reports);
    }
}

/* One rank's row: identity, the figures shown, its finding ids. */
static void rank_line(const out *o, const sop_value *c, const bool *shown)
{
    sop_sb *b = o->b;
    bool md = o->md;
    double pid = 0;
    const sop_value *figs = sop__v_get(c, "figures");
    sop__sb_puts(b, md ? "| " : "  - rank ");
    put(b, sop__v_get_str(c, "rank"), md);
    sop__sb_puts(b, md ? " | " : " @");
    put(b, sop__v_get_str(c, "node"), md);
    if (sop__v_get_num(c, "pid", &pid))
        sop__sb_printf(b, md ? " | %.0f |" : " pid %.0f:", pid);
    else
        sop__sb_puts(b, md ? " | |" : ":");
    for (size_t fi = 0; fi < NFIG; fi++) {
        double v = 0;
        bool has = sop__v_get_num(figs, FIGS[fi].key, &v);
        if (!shown[fi])
            continue;
        if (md) {
            sop__sb_puts(b, " ");
            if (has)
                put_fig_value(b, FIGS[fi].key, v);
            sop__sb_puts(b, " |");
        } else if (has) {
            sop__sb_printf(b, " %s ", strcmp(o->lang, "zh") == 0 ? FIGS[fi].zh : FIGS[fi].en);
            put_fig_value(b, FIGS[fi].key, v);
            sop__sb_puts(b, ";");
        }
    }
    sop__sb_puts(b, md ? " " : " ");
    if (!md)
        sop__sb_printf(b, "%s: ", o->L->findings);
    put_ids(b, sop__v_get(c, "findings"), md);
    sop__sb_puts(b, md ? " |\n" : "\n");
}

static void sec_ranks(const out *o, const sop_value *job)
{
    sop_sb *b = o->b;
    const labels *L = o->L;
    const sop_value *ranks = sop__v_get(job, "ranks");
    if (!ranks || !ranks->count)
        return;
    heading(o, L->per_rank);
    bool shown[NFIG] = {false}; /* a column for the figures some rank has */
    for (const sop_value *c = ranks->child; c; c = c->next)
        for (size_t fi = 0; fi < NFIG; fi++)
            shown[fi] = shown[fi] || sop__v_get(sop__v_get(c, "figures"), FIGS[fi].key);
    if (o->md) {
        sop__sb_printf(b, "| %s | %s | %s |", L->rank, L->node, L->pid);
        for (size_t fi = 0; fi < NFIG; fi++)
            if (shown[fi])
                sop__sb_printf(b, " %s |", strcmp(o->lang, "zh") == 0 ? FIGS[fi].zh : FIGS[fi].en);
        sop__sb_printf(b, " %s |\n|---|---|---|", L->findings);
        for (size_t fi = 0; fi < NFIG; fi++)
            if (shown[fi])
                sop__sb_puts(b, "---|");
        sop__sb_puts(b, "---|\n");
    }
    for (const sop_value *c = ranks->child; c; c = c->next)
        rank_line(o, c, shown);
}

static void sec_missing(const out *o, const sop_value *job)
{
    sop_sb *b = o->b;
    bool md = o->md;
    const labels *L = o->L;
    const sop_value *miss = sop__v_get(job, "missing");
    if (!miss || !miss->count)
        return;
    heading(o, L->missing);
    for (const sop_value *c = miss->child; c; c = c->next) {
        sop__sb_puts(b, md ? "- " : "  - ");
        const char *node = sop__v_get_str(c, "node");
        if (node) {
            sop__sb_printf(b, "%s ", L->node);
            put(b, node, md);
        } else {
            sop__sb_printf(b, "%s ", L->ranks);
            put(b, sop__v_get_str(c, "ranks"), md);
        }
        sop__sb_puts(b, ": ");
        put(b, sop__v_get_str(c, "reason"), md);
        sop__sb_puts(b, "\n");
    }
}

static void sec_versions(const out *o, const sop_value *job)
{
    sop_sb *b = o->b;
    bool md = o->md;
    const labels *L = o->L;
    const sop_value *ver = sop__v_get(job, "versions");
    const sop_value *mm = sop__v_get(ver, "mismatched");
    if (!mm || mm->type != SOP_V_BOOL || !mm->b)
        return;
    sop__sb_printf(b, "\n%s%s: %s\n%s", md ? "## " : "", L->versions, L->mismatched,
                   md ? "\n" : "");
    const sop_value *seen = sop__v_get(ver, "seen");
    for (const sop_value *c = seen ? seen->child : NULL; c; c = c->next) {
        double cnt = 0;
        sop__v_get_num(c, "reports", &cnt);
        sop__sb_puts(b, md ? "- sop " : "  - sop ");
        put(b, sop__v_get_str(c, "sop_version"), md);
        sop__sb_printf(b, " (schema 1): %.0f %s\n", cnt, L->reports);
    }
    const sop_value *exc = sop__v_get(ver, "excluded");
    for (const sop_value *c = exc ? exc->child : NULL; c; c = c->next) {
        double sc = 0;
        sop__v_get_num(c, "schema", &sc);
        sop__sb_puts(b, md ? "- " : "  - ");
        put(b, sop__v_get_str(c, "source"), md);
        sop__sb_printf(b, ": schema %g", sc);
        const char *v = sop__v_get_str(c, "sop_version");
        if (v) {
            sop__sb_puts(b, ", sop ");
            put(b, v, md);
        }
        sop__sb_printf(b, " — %s\n", L->excluded);
    }
}

static void sec_notes(const out *o, const sop_value *job)
{
    const sop_value *notes = sop__v_get(job, "notes");
    if (!notes || !notes->count)
        return;
    heading(o, o->L->notes);
    for (const sop_value *c = notes->child; c; c = c->next) {
        sop__sb_puts(o->b, o->md ? "- " : "  - ");
        put(o->b, c->str, o->md);
        sop__sb_puts(o->b, "\n");
    }
}

static char *render(const sop_value *job, bool md, const char *lang)
{
    sop_sb b = {0};
    out o = {&b, md, lang, strcmp(lang, "zh") == 0 ? &ZH : &EN};
    double reports = 0;
    sop__v_get_num(job, "reports", &reports);
    sec_title(&o, job, reports);
    sec_verdict(&o, job);
    sec_wide(&o, job);
    sec_outliers(&o, job);
    sec_rules(&o, job, reports);
    sec_ranks(&o, job);
    sec_missing(&o, job);
    sec_versions(&o, job);
    sec_notes(&o, job);
    return sop__sb_take(&b);
}

char *sop__merge_md(const sop_value *job, const char *lang)
{
    return render(job, true, lang);
}

char *sop__merge_text(const sop_value *job, const char *lang)
{
    return render(job, false, lang);
}

char *sop__merge_json(const sop_value *job, const char *lang)
{
    (void)lang;
    char *s = NULL, *json = sop__json_print(job, 1);
    if (json) {
        s = sop__json_escape_controls(json);
        free(json);
    }
    if (s) { /* a trailing newline like the other renderers */
        size_t len = strlen(s);
        char *t = realloc(s, len + 2);
        if (t) {
            t[len] = '\n';
            t[len + 1] = '\0';
            s = t;
        }
    }
    return s;
}
