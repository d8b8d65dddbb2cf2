/* merge_wait.c — collective wait across ranks (merge_wait.h). A synchronous job runs at the
 * speed of its slowest rank: the others wait for it inside the next collective. So the rank
 * that waits least while the others wait most is the straggler, whatever the CPU figures say;
 * every rank but one sitting in the same collective for the whole window, the one elsewhere
 * (or gone), is a hang; ranks that wait alike are balanced. Reads only the figures
 * engine/bridge/rank_identity.c put in each report. Depends on value.h and strbuf.h. */
#include "merge_wait.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"

#define USES_MIN 0.01     /* some rank spends at least this share in a collective */
#define STUCK_FRAC 0.9    /* a stuck rank: this share of its samples in one collective ... */
#define STUCK_SPAN 0.9    /* ... in one run covering this share of the window */
#define GAP_MIN 0.25      /* the straggler waits at least this much less than the others */
#define WAITERS_MIN 0.3   /* ... and the others wait at least this much */
#define DATA_NOTE_MIN 0.2 /* the straggler's DataLoader wait worth saying */

typedef struct {
    const sop_wait_rank *r;
    double c, longest_ms, own, own_frame_frac, data, window_ms;
    const char *op, *own_frame;
    bool has;
} wrank;

static double num_or(const sop_value *o, const char *key, double dflt)
{
    double v = 0;
    return sop__v_get_num(o, key, &v) && isfinite(v) ? v : dflt;
}

/* "0-2, 5" from rank numbers in order (labels when a rank has none). */
static void put_list(sop_sb *b, const wrank *w, const size_t *idx, size_t k)
{
    for (size_t i = 0; i < k; i++) {
        const sop_wait_rank *a = w[idx[i]].r;
        sop__sb_puts(b, i ? ", " : "");
        sop__sb_puts(b, a->label);
        size_t j = i;
        if (a->rank >= 0)
            while (j + 1 < k && w[idx[j + 1]].r->rank == w[idx[j]].r->rank + 1)
                j++;
        if (j > i) {
            sop__sb_printf(b, "-%ld", w[idx[j]].r->rank);
            i = j;
        }
    }
}

static void set_list(sop_value *o, const char *key, const wrank *w, const size_t *idx, size_t k)
{
    sop_sb b = {0};
    put_list(&b, w, idx, k);
    char *s = sop__sb_take(&b);
    sop__v_set(o, key, sop__v_str(s ? s : ""));
    free(s);
}

static void set_rank(sop_value *o, const sop_wait_rank *a)
{
    sop__v_set(o, "rank", sop__v_str(a->label));
    if (a->rank >= 0)
        sop__v_set_int(o, "rank_number", a->rank);
    sop__v_set_str(o, "node", a->node);
    if (a->pid > 0)
        sop__v_set_int(o, "pid", (int64_t)a->pid);
}

/* Where a rank is when it is not waiting with the others. */
static void set_where(sop_value *o, const wrank *x)
{
    sop_value *w = sop__v_obj_at(o, "where");
    if (x->c >= 0.5 && x->op) {
        sop__v_set_str(w, "kind", "collective");
        sop__v_set_str(w, "frame", x->op);
        sop__v_set_dbl(w, "frac", x->c);
    } else if (x->data >= 0.5) {
        sop__v_set_str(w, "kind", "data");
        if (x->own_frame)
            sop__v_set_str(w, "frame", x->own_frame);
        sop__v_set_dbl(w, "frac", x->data);
    } else if (x->own_frame) {
        sop__v_set_str(w, "kind", "own");
        sop__v_set_str(w, "frame", x->own_frame);
        sop__v_set_dbl(w, "frac", x->own);
    } else {
        sop__v_set_str(w, "kind", "unknown");
    }
}

/* Insertion sort of idx[0..k) by w[].c ascending (stable; k is the rank count). */
static void sort_by_wait(const wrank *w, size_t *idx, size_t k)
{
    for (size_t i = 1; i < k; i++) {
        size_t v = idx[i], j = i;
        while (j > 0 && w[idx[j - 1]].c > w[v].c) {
            idx[j] = idx[j - 1];
            j--;
        }
        idx[j] = v;
    }
}

static bool hang(sop_value *job, const wrank *w, size_t n, long world, bool *problem)
{
    size_t *stuck = calloc(n ? n : 1, sizeof *stuck), *rest = calloc(n ? n : 1, sizeof *rest);
    size_t ns = 0, nr = 0;
    const char *op = NULL;
    bool found = false;
    if (!stuck || !rest)
        goto out;
    for (size_t i = 0; i < n; i++) {
        const wrank *x = &w[i];
        bool s = x->has && x->op && x->c >= STUCK_FRAC && x->window_ms > 0 &&
                 x->longest_ms >= STUCK_SPAN * x->window_ms;
        if (s && !op)
            op = x->op;
        if (s && strcmp(x->op, op) == 0)
            stuck[ns++] = i;
        else
            rest[nr++] = i;
    }
    /* ranks of the world no report holds: gone, or not collected */
    long gone = -1, ngone = 0;
    if (world > 0 && world <= 1 << 20) {
        for (long k = 0; k < world && ngone < 2; k++) {
            bool seen = false;
            for (size_t i = 0; i < n && !seen; i++)
                seen = w[i].r->rank == k;
            if (!seen) {
                if (gone < 0)
                    gone = k;
                ngone++;
            }
        }
    }
    if (ns == 0 || (size_t)ngone + nr > 1 || ns + (size_t)ngone + nr < 2)
        goto out;
    found = true;
    *problem = true;
    sop_value *h = sop__v_obj_at(job, "hang");
    sop_value *wt = sop__v_obj_at(h, "waiting");
    set_list(wt, "ranks", w, stuck, ns);
    sop__v_set_int(wt, "count", (int64_t)ns);
    sop__v_set_str(wt, "collective", op);
    double least = INFINITY, win = 0;
    for (size_t i = 0; i < ns; i++) {
        if (w[stuck[i]].longest_ms < least)
            least = w[stuck[i]].longest_ms;
        if (w[stuck[i]].window_ms > win)
            win = w[stuck[i]].window_ms;
    }
    sop__v_set_dbl(wt, "waited_s", round(least / 100) / 10);
    sop__v_set_dbl(wt, "window_s", round(win / 100) / 10);
    if (nr == 1) {
        const wrank *x = &w[rest[0]];
        set_rank(h, x->r);
        set_where(h, x);
    } else if (ngone == 1) {
        char lab[32];
        snprintf(lab, sizeof lab, "%ld", gone);
        sop__v_set_str(h, "rank", lab);
        sop__v_set_int(h, "rank_number", gone);
        sop__v_set_str(sop__v_obj_at(h, "where"), "kind", "gone");
    } else {
        sop__v_set_str(sop__v_obj_at(h, "where"), "kind", "none"); /* every rank waits */
    }
out:
    free(stuck);
    free(rest);
    return found;
}

bool sop__merge_wait(sop_value *job, const sop_wait_rank *r, size_t n, long world, const char *lang,
                     bool *problem)
{
    (void)lang;
    wrank *w = calloc(n ? n : 1, sizeof *w);
    size_t *idx = calloc(n ? n : 1, sizeof *idx);
    bool decided = false, uses = false;
    size_t ne = 0;
    if (!w || !idx)
        goto out;
    for (size_t i = 0; i < n; i++) {
        wrank *x = &w[i];
        const sop_value *f = r[i].figures;
        x->r = &r[i];
        x->c = num_or(f, "collective_frac", NAN);
        x->has = isfinite(x->c);
        x->op = sop__v_get_str(f, "collective");
        x->longest_ms = num_or(f, "collective_longest_ms", 0);
        x->own = num_or(f, "own_frac", 0);
        x->own_frame = sop__v_get_str(f, "own_frame");
        x->own_frame_frac = num_or(f, "own_frame_frac", 0);
        x->data = num_or(f, "data_wait_frac", 0);
        x->window_ms = num_or(f, "window_s", 0) * 1000;
        if (x->has) {
            idx[ne++] = i;
            uses = uses || (x->op && x->c >= USES_MIN);
        }
    }
    if (!uses)
        goto out;
    sop_value *per = sop__v_arr_at(job, "collective");
    for (size_t k = 0; k < ne; k++) {
        const wrank *x = &w[idx[k]];
        sop_value *o = sop__v_obj();
        sop__v_set(o, "rank", sop__v_str(x->r->label));
        sop__v_set_dbl(o, "wait_frac", x->c);
        sop__v_set_str(o, "collective", x->op);
        sop__v_set_dbl(o, "own_frac", x->own);
        sop__v_set_str(o, "own_frame", x->own_frame);
        sop__v_push(per, o);
    }
    if (hang(job, w, n, world, problem)) {
        decided = true;
        goto out;
    }
    if (ne < 2)
        goto out;
    decided = true;
    sort_by_wait(w, idx, ne);
    /* the widest gap between consecutive waits splits the ranks that wait little from those
     * that wait much */
    size_t split = 0;
    double gap = -1;
    for (size_t k = 0; k + 1 < ne; k++) {
        double g = w[idx[k + 1]].c - w[idx[k]].c;
        if (g > gap) {
            gap = g;
            split = k + 1; /* low: [0, split) */
        }
    }
    double lo_min = w[idx[0]].c, lo_max = w[idx[split - 1]].c;
    double hi_min = w[idx[split]].c, hi_max = w[idx[ne - 1]].c;
    bool straggler = split <= ne - split && gap >= GAP_MIN && hi_min >= WAITERS_MIN &&
                     hi_max - hi_min < gap && lo_max - lo_min < gap;
    if (!straggler) {
        sop_value *b = sop__v_obj_at(job, "balanced");
        sop__v_set_dbl(b, "wait_min", lo_min);
        sop__v_set_dbl(b, "wait_max", hi_max);
        sop__v_set_str(b, "collective", w[idx[ne - 1]].op);
        goto out;
    }
    *problem = true;
    const wrank *s = &w[idx[0]];
    sop_value *st = sop__v_obj_at(job, "straggler");
    set_rank(st, s->r);
    sop__v_set_str(st, "by", "collective_wait");
    sop__v_set_dbl(st, "wait_frac", s->c);
    sop__v_set_dbl(st, "own_frac", s->own);
    sop__v_set_str(st, "own_frame", s->own_frame);
    if (s->own_frame)
        sop__v_set_dbl(st, "own_frame_frac", s->own_frame_frac);
    if (s->data >= DATA_NOTE_MIN)
        sop__v_set_dbl(st, "data_wait_frac", s->data);
    if (split > 1)
        set_list(st, "also", w, idx + 1, split - 1);
    sop_value *ot = sop__v_obj_at(st, "others");
    size_t *hi = idx + split, nh = ne - split;
    /* the others in rank order for the list */
    for (size_t i = 1; i < nh; i++) {
        size_t v = hi[i], j = i;
        while (j > 0 && hi[j - 1] > v) {
            hi[j] = hi[j - 1];
            j--;
        }
        hi[j] = v;
    }
    set_list(ot, "ranks", w, hi, nh);
    sop__v_set_int(ot, "count", (int64_t)nh);
    sop__v_set_dbl(ot, "wait_min", hi_min);
    sop__v_set_dbl(ot, "wait_max", hi_max);
    const char *op = NULL;
    double most = -1;
    for (size_t i = 0; i < nh; i++)
        if (w[hi[i]].op && w[hi[i]].c > most) {
            most = w[hi[i]].c;
            op = w[hi[i]].op;
        }
    sop__v_set_str(ot, "collective", op);
out:
    free(w);
    free(idx);
    return decided;
}
