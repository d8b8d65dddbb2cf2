/* pyspy_fold.c — py-spy's stacks as text, counted: each thread sample's frames named as py-spy
 * names them ("func (file:line)", root first, the file from its top package down), and the
 * distinct stacks counted by state in a bounded table, for the raw, flame graph and speedscope
 * formats of sop_record_pyspy (engine/api/record_pyspy.c). Short file names are looked up once
 * per (process, file). Depends on pyspy_formats.h (the python probe, sampler.h, strbuf.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pyspy_formats.h"
#include "sop.h"

#define FOLD_SLOTS (1u << 16)       /* distinct stacks; beyond half full: "more ..." */
#define NAME_SLOTS 4096u            /* short file names kept; beyond half full: not cached */
#define STACK_MAX_BYTES (64u << 10) /* one stack's text; deeper frames are left out */
#define OTHER "(more distinct stacks than kept)"

typedef struct {
    char *stack; /* NULL: a free slot */
    uint64_t hash;
    long count;
    long by_state[SOP_ST_N];
} fold_ent;

typedef struct {
    char *file; /* NULL: a free slot */
    int pid;
    char *short_name;
} name_ent;

struct sop_pyspy_fold {
    const char *proc_root;
    unsigned flags;
    fold_ent *slots;
    size_t used;
    fold_ent other;
    name_ent *names;
    size_t nnames;
    char name_buf[1024]; /* a short name not cached (the table is full) */
};

static uint64_t fnv(const char *s, uint64_t h)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

sop_pyspy_fold *sop__pyspy_fold_new(const char *proc_root, unsigned flags)
{
    sop_pyspy_fold *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->proc_root = proc_root;
    f->flags = flags;
    f->slots = calloc(FOLD_SLOTS, sizeof *f->slots);
    f->names = calloc(NAME_SLOTS, sizeof *f->names);
    if (!f->slots || !f->names) {
        sop__pyspy_fold_free(f);
        return NULL;
    }
    f->other.stack = (char *)OTHER;
    return f;
}

void sop__pyspy_fold_free(sop_pyspy_fold *f)
{
    if (!f)
        return;
    for (size_t i = 0; f->slots && i < FOLD_SLOTS; i++)
        free(f->slots[i].stack);
    for (size_t i = 0; f->names && i < NAME_SLOTS; i++) {
        free(f->names[i].file);
        free(f->names[i].short_name);
    }
    free(f->slots);
    free(f->names);
    free(f);
}

/* py-spy's name of `file` in process pid (the full name with SOP_PYSPY_FULL_FILENAMES). */
static const char *short_name(sop_pyspy_fold *f, int pid, const char *file)
{
    if (!file)
        return "";
    if (f->flags & SOP_PYSPY_FULL_FILENAMES)
        return file;
    size_t i = fnv(file, 1469598103934665603ull ^ (uint64_t)(unsigned)pid) & (NAME_SLOTS - 1);
    for (size_t k = 0; k < NAME_SLOTS; k++, i = (i + 1) & (NAME_SLOTS - 1)) {
        name_ent *n = &f->names[i];
        if (!n->file)
            break;
        if (n->pid == pid && strcmp(n->file, file) == 0)
            return n->short_name;
    }
    sop__pyspy_short_file(f->proc_root, pid, file, f->name_buf, sizeof f->name_buf);
    if (f->nnames >= NAME_SLOTS / 2 || f->names[i].file)
        return f->name_buf;
    name_ent *n = &f->names[i];
    n->file = strdup(file);
    n->short_name = strdup(f->name_buf);
    if (!n->file || !n->short_name) {
        free(n->file);
        free(n->short_name);
        n->file = n->short_name = NULL;
        return f->name_buf;
    }
    n->pid = pid;
    f->nnames++;
    return n->short_name;
}

void sop__pyspy_put_text(sop_sb *b, const char *s)
{
    const char *run = s;
    for (; *s; s++) {
        if (*s != ';' && *s != '\n')
            continue;
        sop__sb_putn(b, run, (size_t)(s - run));
        sop__sb_puts(b, *s == ';' ? ":" : " ");
        run = s + 1;
    }
    sop__sb_putn(b, run, (size_t)(s - run));
}

void sop__pyspy_frames(sop_pyspy_fold *f, sop_sb *b, int pid, const sop_pysample *p)
{
    size_t start = b->len;
    if (b->len)
        sop__sb_puts(b, ";");
    if (p->torn || p->nframes == 0) {
        sop__sb_puts(b, p->torn ? "(stack changed while read)" : "(no Python frame)");
        return;
    }
    for (size_t k = p->nframes; k-- > 0;) { /* root (outermost) first */
        const sop_pyframe *fr = &p->frames[k];
        if (b->len - start > STACK_MAX_BYTES) {
            sop__sb_puts(b, "(deeper frames left out)");
            return;
        }
        sop__pyspy_put_text(b, fr->func ? fr->func : "?");
        const char *file = short_name(f, pid, fr->file);
        if (*file) {
            sop__sb_puts(b, " (");
            sop__pyspy_put_text(b, file);
            if (fr->line > 0 && !(f->flags & SOP_PYSPY_NOLINENO))
                sop__sb_printf(b, ":%d", fr->line);
            sop__sb_puts(b, ")");
        }
        if (k)
            sop__sb_puts(b, ";");
    }
}

void sop__pyspy_fold_add(sop_pyspy_fold *f, const char *stack, sop_sample_state st)
{
    uint64_t h = fnv(stack, 1469598103934665603ull);
    size_t i = h & (FOLD_SLOTS - 1);
    for (size_t k = 0; k < FOLD_SLOTS; k++, i = (i + 1) & (FOLD_SLOTS - 1)) {
        fold_ent *e = &f->slots[i];
        if (!e->stack) {
            if (f->used >= FOLD_SLOTS / 2 || !(e->stack = strdup(stack)))
                break;
            e->hash = h;
            f->used++;
        } else if (e->hash != h || strcmp(e->stack, stack) != 0) {
            continue;
        }
        e->count++;
        e->by_state[st]++;
        return;
    }
    f->other.count++;
    f->other.by_state[st]++;
}

size_t sop__pyspy_fold_stacks(const sop_pyspy_fold *f, sop_stack_count **out)
{
    *out = calloc(f->used + 1, sizeof **out);
    if (!*out)
        return 0;
    size_t n = 0;
    for (size_t i = 0; i < FOLD_SLOTS; i++) {
        const fold_ent *e = &f->slots[i];
        if (!e->stack)
            continue;
        (*out)[n].stack = e->stack;
        (*out)[n].count = e->count;
        memcpy((*out)[n].by_state, e->by_state, sizeof e->by_state);
        n++;
    }
    if (f->other.count) {
        (*out)[n].stack = f->other.stack;
        (*out)[n].count = f->other.count;
        memcpy((*out)[n].by_state, f->other.by_state, sizeof f->other.by_state);
        n++;
    }
    return n;
}
