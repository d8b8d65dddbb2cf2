/* speedscope.c — collapsed stacks as speedscope's file format (a "sampled" profile per thread,
 * weights in samples; https://www.speedscope.app/file-format-schema.json), so a recording
 * opens in the viewer people already use. Strings are made valid UTF-8 and escaped by the
 * JSON printer. Depends on sampler.h, value, json, dwidth. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dwidth.h"
#include "escape.h"
#include "json.h"
#include "sampler.h"
#include "strbuf.h"
#include "value.h"

#define SS_FRAME_SLOTS (1u << 17) /* distinct frames; beyond half full, new ones share one */

typedef struct {
    char *key; /* the frame text as in the collapsed stack */
    long index;
} frame_slot;

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

/* The frame's index in shared.frames, adding it ("func (file)" becomes name + file). */
static long frame_index(frame_slot *slots, size_t *nslots, sop_value *frames, const char *p,
                        size_t n)
{
    size_t i = hash(p, n) & (SS_FRAME_SLOTS - 1);
    for (size_t k = 0; k < SS_FRAME_SLOTS; k++, i = (i + 1) & (SS_FRAME_SLOTS - 1)) {
        if (!slots[i].key) {
            if (*nslots >= SS_FRAME_SLOTS / 2)
                break;
            slots[i].key = strndup(p, n);
            if (!slots[i].key)
                break;
            slots[i].index = (long)frames->count;
            (*nslots)++;
            sop_value *fr = sop__v_obj();
            /* "func (file)": split at the last " (" when the text ends in ")" */
            size_t cut = n;
            if (n > 3 && p[n - 1] == ')')
                for (size_t j = n - 1; j-- > 1;)
                    if (p[j] == '(' && p[j - 1] == ' ') {
                        cut = j - 1;
                        break;
                    }
            char *name = valid_utf8(p, cut);
            sop__v_set(fr, "name", sop__v_str(name && *name ? name : "?"));
            free(name);
            if (cut < n) {
                /* "file:LINE" (py-spy's frames, engine/api/pyspy_fold.c): the line on its own */
                size_t flen = n - cut - 3, d = flen;
                while (d > 0 && p[cut + 2 + d - 1] >= '0' && p[cut + 2 + d - 1] <= '9')
                    d--;
                bool line = d > 1 && d < flen && flen - d <= 9 && p[cut + 2 + d - 1] == ':';
                char *file = valid_utf8(p + cut + 2, line ? d - 1 : flen);
                sop__v_set_str(fr, "file", file);
                free(file);
                if (line)
                    sop__v_set_int(fr, "line", strtol(p + cut + 2 + d, NULL, 10));
            }
            sop__v_push(frames, fr);
            return slots[i].index;
        }
        if (strlen(slots[i].key) == n && memcmp(slots[i].key, p, n) == 0)
            return slots[i].index;
    }
    return -1;
}

int sop__speedscope_write(const sop_stack_count *stacks, size_t n, const char *name, unsigned flags,
                          FILE *f)
{
    bool idle = (flags & SOP_FG_IDLE) != 0;
    frame_slot *slots = calloc(SS_FRAME_SLOTS, sizeof *slots);
    sop_value *doc = sop__v_obj();
    if (!slots || !doc) {
        free(slots);
        sop__v_free(doc);
        return -ENOMEM;
    }
    size_t nslots = 0;
    sop__v_set_str(doc, "$schema", "https://www.speedscope.app/file-format-schema.json");
    sop_value *frames = sop__v_arr_at(sop__v_obj_at(doc, "shared"), "frames");
    sop_value *profiles = sop__v_arr_at(doc, "profiles");
    char *docname = valid_utf8(name, strlen(name));
    sop__v_set_str(doc, "name", docname);
    free(docname);
    sop__v_set_str(doc, "exporter", "sopctl record");
    sop__v_set_int(doc, "activeProfileIndex", 0);
    long other = frame_index(slots, &nslots, frames, "(frame table full)", 18);
    /* one profile per thread: the stacks' first two frames ("pid N (comm);tid M (name)") */
    typedef struct {
        char *key;
        sop_value *prof;
        double total;
    } prof_ent;
    prof_ent *profs = calloc(n + 1, sizeof *profs);
    size_t nprofs = 0;
    for (size_t i = 0; profs && i < n; i++) {
        long w = stacks[i].count;
        if (!idle)
            w -= stacks[i].by_state[SOP_ST_IDLE] + stacks[i].by_state[SOP_ST_BATCH];
        if (w <= 0)
            continue;
        const char *s = stacks[i].stack, *rest = s;
        const char *a = strchr(s, ';'), *b = a ? strchr(a + 1, ';') : NULL;
        size_t klen = strlen(s);
        if (b && strncmp(s, "pid ", 4) == 0) {
            klen = (size_t)(b - s);
            rest = b + 1;
        }
        prof_ent *pe = NULL;
        for (size_t k = 0; k < nprofs && !pe; k++)
            if (strlen(profs[k].key) == klen && memcmp(profs[k].key, s, klen) == 0)
                pe = &profs[k];
        if (!pe) {
            pe = &profs[nprofs++];
            pe->key = strndup(s, klen);
            pe->prof = sop__v_obj();
            sop__v_set_str(pe->prof, "type", "sampled");
            char *pname = valid_utf8(s, klen);
            for (char *c = pname; c && *c; c++)
                if (*c == ';')
                    *c = ' ';
            sop__v_set(pe->prof, "name", sop__v_str(pname ? pname : "?"));
            free(pname);
            sop__v_set_str(pe->prof, "unit", "none");
            sop__v_set_int(pe->prof, "startValue", 0);
            sop__v_arr_at(pe->prof, "samples");
            sop__v_arr_at(pe->prof, "weights");
        }
        sop_value *sample = sop__v_arr();
        for (const char *p = rest; *p;) {
            const char *e = strchr(p, ';');
            size_t len = e ? (size_t)(e - p) : strlen(p);
            long idx = frame_index(slots, &nslots, frames, p, len);
            sop__v_push(sample, sop__v_num((double)(idx >= 0 ? idx : other)));
            if (!e)
                break;
            p = e + 1;
        }
        sop__v_push((sop_value *)sop__v_get(pe->prof, "samples"), sample);
        sop__v_push((sop_value *)sop__v_get(pe->prof, "weights"), sop__v_num((double)w));
        pe->total += (double)w;
    }
    for (size_t k = 0; k < nprofs; k++) {
        sop__v_set_dbl(profs[k].prof, "endValue", profs[k].total);
        sop__v_push(profiles, profs[k].prof);
        free(profs[k].key);
    }
    free(profs);
    for (size_t i = 0; i < SS_FRAME_SLOTS; i++)
        free(slots[i].key);
    free(slots);
    char *json = sop__json_print(doc, 0);
    sop__v_free(doc);
    char *clean = json ? sop__json_escape_controls(json) : NULL;
    free(json);
    if (!clean)
        return -ENOMEM;
    fputs(clean, f);
    fputc('\n', f);
    free(clean);
    return ferror(f) ? -EIO : 0;
}
