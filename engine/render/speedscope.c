/* speedscope.c — collapsed stacks as speedscope's file format (a "sampled" profile per thread,
 * weights in samples; https://www.speedscope.app/file-format-schema.json), so a recording
 * opens in the viewer people already use. Written as it is made: one pass numbers the frames
 * and groups the stacks by thread (hash tables, linear in the stacks), the second writes the
 * document through a small buffer, so memory stays the frame table and one index per frame of
 * each stack however long the recording. Strings are made valid UTF-8 and escaped by the JSON
 * printer. Depends on sampler.h, json, strbuf, dwidth (UTF-8). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dwidth.h"
#include "json.h"
#include "picture_writers.h"
#include "sampler.h"
#include "strbuf.h"

#define SS_FRAME_SLOTS (1u << 17) /* distinct frames; beyond half full, new ones share one */

typedef struct {
    const char *p; /* into the stacks' text (or a literal), which outlive the writer */
    size_t n;
} span;

/* s[0..n) with invalid UTF-8 replaced by U+FFFD; malloc'd. */
static char *valid_utf8(const char *s, size_t n)
{
    sop_sb b = {0};
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t nx = sop__utf8_next(s, n, i, &cp);
        if (nx - i == 1 && (unsigned char)s[i] >= 0x80)
            sop__sb_puts(&b, "\xef\xbf\xbd");
        else
            sop__sb_putn(&b, s + i, nx - i);
        i = nx;
    }
    if (n == 0)
        sop__sb_puts(&b, "");
    return sop__sb_take(&b);
}

static uint64_t hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

/* The distinct frames in order of first use: slot holds 1 + the frame's number (0: empty). */
typedef struct {
    uint32_t *slot;
    span *frames;
    size_t n, cap;
} frame_table;

/* The frame's number in shared.frames, adding it; -1 when the table is full. */
static long frame_index(frame_table *t, const char *p, size_t n)
{
    size_t i = hash(p, n) & (SS_FRAME_SLOTS - 1);
    for (size_t k = 0; k < SS_FRAME_SLOTS; k++, i = (i + 1) & (SS_FRAME_SLOTS - 1)) {
        uint32_t e = t->slot[i];
        if (!e) {
            if (t->n >= SS_FRAME_SLOTS / 2)
                return -1;
            if (t->n == t->cap) {
                size_t cap = t->cap ? 2 * t->cap : 1024;
                span *f = realloc(t->frames, cap * sizeof *f);
                if (!f)
                    return -1;
                t->frames = f;
                t->cap = cap;
            }
            t->frames[t->n] = (span){p, n};
            t->slot[i] = (uint32_t)++t->n;
            return (long)t->n - 1;
        }
        const span *f = &t->frames[e - 1];
        if (f->n == n && memcmp(f->p, p, n) == 0)
            return (long)e - 1;
    }
    return -1;
}

/* One thread's profile: its key ("pid N (comm);tid M (name)"), weight and stacks. */
typedef struct {
    const char *key;
    size_t klen;
    double total;
    size_t nstacks, first; /* its stacks: order[first .. first + nstacks) */
} profile;

/* A stack kept: its profile, weight and frame numbers (idx[at .. at + n)). */
typedef struct {
    size_t prof, at, n;
    long weight;
} kept;

typedef struct {
    frame_table ft;
    uint32_t *pslot; /* profiles by key: 1 + number, 0 empty */
    size_t pmask;
    profile *profs;
    size_t nprofs;
    kept *stacks;
    size_t nkept;
    long *idx;
    size_t nidx, idxcap;
    size_t *order; /* the kept stacks grouped by profile, each group in stack order */
} ss_index;

static void index_free(ss_index *x)
{
    free(x->ft.slot);
    free(x->ft.frames);
    free(x->pslot);
    free(x->profs);
    free(x->stacks);
    free(x->idx);
    free(x->order);
}

static long profile_of(ss_index *x, const char *key, size_t klen)
{
    size_t i = hash(key, klen) & x->pmask;
    for (;; i = (i + 1) & x->pmask) { /* at most n profiles in 2n+ slots: a free one exists */
        uint32_t e = x->pslot[i];
        if (!e) {
            x->profs[x->nprofs] = (profile){key, klen, 0, 0, 0};
            x->pslot[i] = (uint32_t)++x->nprofs;
            return (long)x->nprofs - 1;
        }
        const profile *p = &x->profs[e - 1];
        if (p->klen == klen && memcmp(p->key, key, klen) == 0)
            return (long)e - 1;
    }
}

static int push_idx(ss_index *x, long v)
{
    if (x->nidx == x->idxcap) {
        size_t cap = x->idxcap ? 2 * x->idxcap : 4096;
        long *n = realloc(x->idx, cap * sizeof *n);
        if (!n)
            return -ENOMEM;
        x->idx = n;
        x->idxcap = cap;
    }
    x->idx[x->nidx++] = v;
    return 0;
}

/* First pass: frames numbered, stacks grouped by thread, in the order the stacks come. */
static int index_stacks(ss_index *x, const sop_stack_count *stacks, size_t n, bool idle)
{
    size_t pslots = 16;
    while (pslots < 2 * (n + 1))
        pslots *= 2;
    x->pmask = pslots - 1;
    x->ft.slot = calloc(SS_FRAME_SLOTS, sizeof *x->ft.slot);
    x->pslot = calloc(pslots, sizeof *x->pslot);
    x->profs = malloc((n + 1) * sizeof *x->profs);
    x->stacks = malloc((n + 1) * sizeof *x->stacks);
    if (!x->ft.slot || !x->pslot || !x->profs || !x->stacks)
        return -ENOMEM;
    long other = frame_index(&x->ft, "(frame table full)", 18);
    for (size_t i = 0; i < n; i++) {
        long w = stacks[i].count;
        if (!idle)
            w -= stacks[i].by_state[SOP_ST_IDLE] + stacks[i].by_state[SOP_ST_BATCH];
        if (w <= 0)
            continue;
        /* one profile per thread: the stack's first two frames ("pid N (comm);tid M (name)") */
        const char *s = stacks[i].stack, *rest = s;
        const char *a = strchr(s, ';'), *b = a ? strchr(a + 1, ';') : NULL;
        size_t klen = strlen(s);
        if (b && strncmp(s, "pid ", 4) == 0) {
            klen = (size_t)(b - s);
            rest = b + 1;
        }
        size_t prof = (size_t)profile_of(x, s, klen);
        kept *k = &x->stacks[x->nkept++];
        *k = (kept){prof, x->nidx, 0, w};
        for (const char *p = rest; *p;) {
            const char *e = strchr(p, ';');
            size_t len = e ? (size_t)(e - p) : strlen(p);
            long idx = frame_index(&x->ft, p, len);
            if (push_idx(x, idx >= 0 ? idx : other) < 0)
                return -ENOMEM;
            k->n++;
            if (!e)
                break;
            p = e + 1;
        }
        x->profs[prof].nstacks++;
        x->profs[prof].total += (double)w;
    }
    x->order = malloc((x->nkept + 1) * sizeof *x->order);
    if (!x->order)
        return -ENOMEM;
    size_t at = 0;
    for (size_t p = 0; p < x->nprofs; p++) {
        x->profs[p].first = at;
        at += x->profs[p].nstacks;
        x->profs[p].nstacks = 0;
    }
    for (size_t k = 0; k < x->nkept; k++) {
        profile *p = &x->profs[x->stacks[k].prof];
        x->order[p->first + p->nstacks++] = k;
    }
    return 0;
}

/* A frame's object: "func (file:LINE)" becomes name, file and line. */
static void put_frame(sop_sb *b, const char *p, size_t n)
{
    /* "func (file)": split at the last " (" when the text ends in ")" */
    size_t cut = n;
    if (n > 3 && p[n - 1] == ')')
        for (size_t j = n - 1; j-- > 1;)
            if (p[j] == '(' && p[j - 1] == ' ') {
                cut = j - 1;
                break;
            }
    char *name = valid_utf8(p, cut);
    sop__sb_puts(b, "{\"name\":");
    sop__json_put_str(b, name && *name ? name : "?");
    free(name);
    if (cut < n) {
        /* "file:LINE" (py-spy's frames, engine/api/pyspy_fold.c): the line on its own */
        size_t flen = n - cut - 3, d = flen;
        while (d > 0 && p[cut + 2 + d - 1] >= '0' && p[cut + 2 + d - 1] <= '9')
            d--;
        bool line = d > 1 && d < flen && flen - d <= 9 && p[cut + 2 + d - 1] == ':';
        char *file = valid_utf8(p + cut + 2, line ? d - 1 : flen);
        sop__sb_puts(b, ",\"file\":");
        sop__json_put_str(b, file);
        free(file);
        if (line) {
            sop__sb_puts(b, ",\"line\":");
            sop__json_put_num(b, (double)strtol(p + cut + 2 + d, NULL, 10));
        }
    }
    sop__sb_putn(b, "}", 1);
}

static void put_profile(sop_sb *b, const ss_index *x, const profile *pr)
{
    sop__sb_puts(b, "{\"type\":\"sampled\",\"name\":");
    char *pname = valid_utf8(pr->key, pr->klen);
    for (char *c = pname; c && *c; c++)
        if (*c == ';')
            *c = ' ';
    sop__json_put_str(b, pname ? pname : "?");
    free(pname);
    sop__sb_puts(b, ",\"unit\":\"none\",\"startValue\":0,\"samples\":[");
    for (size_t k = 0; k < pr->nstacks; k++) {
        const kept *st = &x->stacks[x->order[pr->first + k]];
        sop__sb_puts(b, k ? ",[" : "[");
        for (size_t j = 0; j < st->n; j++) {
            if (j)
                sop__sb_putn(b, ",", 1);
            sop__json_put_num(b, (double)x->idx[st->at + j]);
        }
        sop__sb_putn(b, "]", 1);
    }
    sop__sb_puts(b, "],\"weights\":[");
    for (size_t k = 0; k < pr->nstacks; k++) {
        if (k)
            sop__sb_putn(b, ",", 1);
        sop__json_put_num(b, (double)x->stacks[x->order[pr->first + k]].weight);
    }
    sop__sb_puts(b, "],\"endValue\":");
    sop__json_put_num(b, pr->total);
    sop__sb_putn(b, "}", 1);
}

static int to_file(void *ctx, const char *s, size_t n)
{
    return fwrite(s, 1, n, (FILE *)ctx) == n ? 0 : -1;
}

int sop__speedscope_write(const sop_stack_count *stacks, size_t n, const char *name, unsigned flags,
                          FILE *f)
{
    ss_index x = {0};
    int rc = index_stacks(&x, stacks, n, (flags & SOP_FG_IDLE) != 0);
    if (rc < 0) {
        index_free(&x);
        return rc;
    }
    sop_sb b = {.sink = to_file, .sink_ctx = f};
    sop__sb_puts(&b, "{\"$schema\":");
    sop__json_put_str(&b, "https://www.speedscope.app/file-format-schema.json");
    sop__sb_puts(&b, ",\"shared\":{\"frames\":[");
    for (size_t i = 0; i < x.ft.n; i++) {
        if (i)
            sop__sb_putn(&b, ",", 1);
        put_frame(&b, x.ft.frames[i].p, x.ft.frames[i].n);
    }
    sop__sb_puts(&b, "]},\"profiles\":[");
    for (size_t p = 0; p < x.nprofs; p++) {
        if (p)
            sop__sb_putn(&b, ",", 1);
        put_profile(&b, &x, &x.profs[p]);
    }
    sop__sb_puts(&b, "],\"name\":");
    char *docname = valid_utf8(name, strlen(name));
    sop__json_put_str(&b, docname);
    free(docname);
    sop__sb_puts(&b, ",\"exporter\":\"sopctl record\",\"activeProfileIndex\":0}\n");
    rc = sop__sb_flush(&b) < 0 ? (b.s ? -EIO : -ENOMEM) : 0;
    free(b.s);
    index_free(&x);
    return rc == 0 && ferror(f) ? -EIO : rc;
}
