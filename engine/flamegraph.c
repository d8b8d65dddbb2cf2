/* flamegraph.c — a self-contained SVG flame graph (no script, no external reference) from
 * collapsed stacks: a prefix tree of the frames, widths proportional to sample counts, root at
 * the bottom, one <title> tooltip per frame. Depends on sampler.h (sop_stack_count) only. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "sampler.h"

#define FG_WIDTH 1200.0
#define FG_ROW 16
#define FG_PAD 10.0
#define FG_TOP 40
#define FG_MAX_DEPTH 4200   /* frames per stack + process + thread, with room */
#define FG_MAX_NODES 500000 /* bound on distinct tree nodes; stacks beyond are cut short */

typedef struct node {
    const char *name;
    size_t len;
    long count;
    struct node *child, *next;
} node;

typedef struct {
    node *nodes;
    size_t n, cap;
    int max_depth;
    long total;
} tree;

static node *new_node(tree *t, const char *name, size_t len)
{
    if (t->n >= t->cap)
        return NULL;
    node *x = &t->nodes[t->n++];
    memset(x, 0, sizeof *x);
    x->name = name;
    x->len = len;
    return x;
}

static void insert(tree *t, node *root, const char *stack, long count)
{
    node *cur = root;
    cur->count += count;
    const char *p = stack;
    for (int depth = 1; *p && depth < FG_MAX_DEPTH; depth++) {
        const char *e = strchr(p, ';');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        node *c = cur->child, *last = NULL;
        for (; c; last = c, c = c->next)
            if (c->len == len && memcmp(c->name, p, len) == 0)
                break;
        if (!c) {
            c = new_node(t, p, len);
            if (!c)
                return; /* bound reached: the rest of this stack stays in its parent */
            if (last)
                last->next = c;
            else
                cur->child = c;
        }
        c->count += count;
        if (depth > t->max_depth)
            t->max_depth = depth;
        cur = c;
        if (!e)
            break;
        p = e + 1;
    }
}

/* XML text: escape.h's one escaper for SVG. */
static void put_xml(FILE *f, const char *s, size_t len, size_t max_chars)
{
    sop__esc_xml(f, s, len, max_chars);
}

static uint32_t name_hash(const char *s, size_t len)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

typedef struct {
    node *x;
    double x0;
    int depth;
} item;

int sop__flamegraph_write(const sop_stack_count *stacks, size_t n, const char *title, FILE *f)
{
    tree t = {0};
    size_t frames = 1;
    for (size_t i = 0; i < n; i++) {
        frames++;
        for (const char *p = stacks[i].stack; *p; p++)
            frames += *p == ';';
    }
    t.cap = frames < FG_MAX_NODES ? frames : FG_MAX_NODES;
    t.nodes = calloc(t.cap, sizeof *t.nodes);
    if (!t.nodes)
        return -ENOMEM;
    node *root = new_node(&t, "all", 3);
    for (size_t i = 0; i < n; i++)
        insert(&t, root, stacks[i].stack, stacks[i].count);
    int height = FG_TOP + (t.max_depth + 1) * FG_ROW + 20;
    double scale = root->count > 0 ? (FG_WIDTH - 2 * FG_PAD) / (double)root->count : 0;
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" "
               "height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"monospace\" font-size=\"11\">\n",
            (int)FG_WIDTH, height, (int)FG_WIDTH, height);
    fprintf(f, "<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"#f8f8f0\"/>\n"
               "<text x=\"%d\" y=\"20\" text-anchor=\"middle\" font-size=\"14\">",
            (int)(FG_WIDTH / 2));
    put_xml(f, title, strlen(title), 200);
    fprintf(f, "</text>\n");
    /* Depth-first with an explicit stack: bounded by the node count. */
    item *st = malloc(t.n * sizeof *st);
    if (!st) {
        free(t.nodes);
        return -ENOMEM;
    }
    size_t sp = 0;
    st[sp++] = (item){root, FG_PAD, 0};
    while (sp > 0) {
        item it = st[--sp];
        double w = (double)it.x->count * scale;
        if (w < 0.1)
            continue;
        double y = FG_TOP + (double)(t.max_depth - it.depth) * FG_ROW;
        uint32_t h = name_hash(it.x->name, it.x->len);
        int r = 200 + (int)(h % 55), g = 60 + (int)((h >> 8) % 140), b = (int)((h >> 16) % 60);
        fprintf(f, "<g><title>");
        put_xml(f, it.x->name, it.x->len, 4096);
        fprintf(f, " (%ld samples, %.2f%%)</title><rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" "
                   "height=\"%d\" fill=\"rgb(%d,%d,%d)\" rx=\"2\"/>",
                it.x->count, root->count ? 100.0 * (double)it.x->count / (double)root->count : 0,
                it.x0, y, w, FG_ROW - 1, r, g, b);
        size_t fit = w > 12 ? (size_t)((w - 6) / 7) : 0;
        if (fit >= 3) {
            fprintf(f, "<text x=\"%.2f\" y=\"%.1f\">", it.x0 + 3, y + FG_ROW - 4);
            put_xml(f, it.x->name, it.x->len, fit);
            fprintf(f, "</text>");
        }
        fprintf(f, "</g>\n");
        double x = it.x0;
        for (node *c = it.x->child; c && sp < t.n; c = c->next) {
            st[sp++] = (item){c, x, it.depth + 1};
            x += (double)c->count * scale;
        }
    }
    fprintf(f, "</svg>\n");
    free(st);
    free(t.nodes);
    return ferror(f) ? -EIO : 0;
}
