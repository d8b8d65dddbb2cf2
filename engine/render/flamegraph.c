/* flamegraph.c — a self-contained interactive SVG flame graph (no external reference, no
 * network) from collapsed stacks: a prefix tree of the frames, widths proportional to sample
 * counts, root at the bottom; each frame coloured by what its samples did (holding the GIL,
 * waiting for it, native code, disk, DataLoader wait, idle) with a tooltip of samples, percent
 * and that split; an embedded script zooms on click and searches with highlight. Idle samples
 * are left out unless asked. Depends on sampler.h (sop_stack_count) and dwidth.h. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dwidth.h"
#include "escape.h"
#include "picture_writers.h"
#include "sampler.h"

#define FG_WIDTH 1200.0
#define FG_ROW 16
#define FG_PAD 10.0
#define FG_TOP 60
#define FG_MAX_DEPTH 4200   /* frames per stack + process + thread, with room */
#define FG_MAX_NODES 500000 /* bound on distinct tree nodes; stacks beyond are cut short */

typedef struct node {
    const char *name;
    size_t len;
    long count;
    long st[SOP_ST_N];
    struct node *child, *next;
    struct node *parent, *last_child; /* the look-up's key; children kept in first-seen order */
} node;

typedef struct {
    node *nodes;
    size_t n, cap;
    uint32_t *slot; /* children by (parent, name): 1 + node number, 0 empty; 2 x cap slots */
    size_t mask;
    int max_depth;
    long total;
} tree;

static uint32_t name_hash(const char *s, size_t len);

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

static void add_states(node *x, const long *st)
{
    for (int i = 0; i < SOP_ST_N; i++)
        x->st[i] += st[i];
}

/* The child of cur named p[0..len), made when new: one hash look-up, however many children
 * (a process with thousands of threads has as many under its root). NULL at the bound. */
static node *child_of(tree *t, node *cur, const char *p, size_t len)
{
    size_t i = (name_hash(p, len) ^ (uint32_t)((size_t)(cur - t->nodes) * 2654435761u)) & t->mask;
    for (;; i = (i + 1) & t->mask) {
        uint32_t e = t->slot[i];
        if (!e)
            break;
        node *c = &t->nodes[e - 1];
        if (c->parent == cur && c->len == len && memcmp(c->name, p, len) == 0)
            return c;
    }
    node *c = new_node(t, p, len);
    if (!c)
        return NULL;
    c->parent = cur;
    t->slot[i] = (uint32_t)t->n;
    if (cur->last_child)
        cur->last_child->next = c;
    else
        cur->child = c;
    cur->last_child = c;
    return c;
}

static void insert(tree *t, node *root, const char *stack, long count, const long *st)
{
    node *cur = root;
    cur->count += count;
    add_states(cur, st);
    const char *p = stack;
    for (int depth = 1; *p && depth < FG_MAX_DEPTH; depth++) {
        const char *e = strchr(p, ';');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        node *c = child_of(t, cur, p, len);
        if (!c)
            return; /* bound reached: the rest of this stack stays in its parent */
        c->count += count;
        add_states(c, st);
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

/* The state names of the tooltips and the legend, and each state's palette: a base colour and
 * how far the name's hash moves each channel. */
static const char *const STATE_NAME[SOP_ST_N] = {"GIL held",   "GIL wait", "native",  "disk (D)",
                                                 "batch wait", "idle",     "GPU wait"};
static const int STATE_RGB[SOP_ST_N][6] = {
    {205, 80, 0, 50, 120, 55},   /* holding the GIL: warm */
    {110, 100, 215, 40, 40, 40}, /* waiting for the GIL: violet */
    {60, 165, 60, 50, 55, 50},   /* native: green */
    {160, 110, 50, 40, 40, 30},  /* disk: brown */
    {60, 180, 200, 30, 40, 40},  /* DataLoader batch wait: teal */
    {175, 175, 175, 35, 35, 35}, /* idle: grey */
    {190, 60, 150, 40, 40, 40},  /* waiting for the GPU: magenta */
};

static int dominant(const node *x)
{
    int best = SOP_ST_GIL;
    for (int i = 1; i < SOP_ST_N; i++)
        if (x->st[i] > x->st[best])
            best = i;
    return best;
}

/* The script: zoom on click, reset, search (regex or text) with highlight and the matched
 * share. Frames are <g class="f" data-n=name data-s=samples data-d=depth data-c=fill>. The
 * functions are on window.sopFlame for tests and the HTML page. */
static const char FG_SCRIPT[] =
    "<script type=\"text/ecmascript\"><![CDATA[\n"
    "(function(){\n"
    "var root=document.getElementById('sop-fg'),W=+root.getAttribute('data-w'),P=+root."
    "getAttribute('data-pad');\n"
    "var fr=[].slice.call(root.querySelectorAll('g.f'));\n"
    "var det=document.getElementById('sop-fg-details'),mat=document.getElementById('sop-fg-"
    "matched');\n"
    "fr.forEach(function(g){var r=g.querySelector('rect');g._x=+r.getAttribute('x');g._w=+r."
    "getAttribute('width');g._d=+g.getAttribute('data-d');\n"
    " g.addEventListener('click',function(e){zoom(g);e.stopPropagation();});\n"
    " g.addEventListener('mouseover',function(){det.textContent=g.querySelector('title')."
    "textContent;});\n"
    " g.addEventListener('mouseout',function(){det.textContent=' ';});});\n"
    "function label(g,w){var t=g.querySelector('text'),n=g.getAttribute('data-n'),fit=Math."
    "floor((w-6)/7);\n"
    " t.textContent=fit<3?'':(n.length>fit?n.slice(0,fit-2)+'..':n);}\n"
    "function zoom(g){var x0=g._x,w0=g._w,d=g._d,k=(W-2*P)/w0,e=1e-6;\n"
    " fr.forEach(function(f){var r=f.querySelector('rect'),t=f.querySelector('text'),x,w;\n"
    "  if(f._d>=d&&f._x>=x0-e&&f._x+f._w<=x0+w0+e){x=P+(f._x-x0)*k;w=f._w*k;}\n"
    "  else if(f._d<d&&f._x<=x0+e&&f._x+f._w>=x0+w0-e){x=P;w=W-2*P;}\n"
    "  else{f.style.display='none';return;}\n"
    "  f.style.display='';r.setAttribute('x',x);r.setAttribute('width',w);t.setAttribute('x',"
    "x+3);label(f,w);});\n"
    " root.setAttribute('data-zoomed',g===fr[0]?'':g.getAttribute('data-n'));\n"
    " document.getElementById('sop-fg-reset').style.opacity=g===fr[0]?0.3:1;}\n"
    "function search(term){var re=null,hits=[],sum=0;\n"
    " if(term){try{re=new RegExp(term);}catch(err){re=null;}}\n"
    " fr.forEach(function(f){var n=f.getAttribute('data-n'),r=f.querySelector('rect');\n"
    "  var hit=!!term&&(re?re.test(n):n.indexOf(term)>=0);\n"
    "  r.setAttribute('fill',hit?'rgb(230,0,230)':f.getAttribute('data-c'));\n"
    "  if(hit){f.classList.add('hit');hits.push(f);}else f.classList.remove('hit');});\n"
    " hits.sort(function(a,b){return a._d-b._d;});\n"
    " var top=[];hits.forEach(function(h){for(var i=0;i<top.length;i++){var o=top[i];\n"
    "  if(o._x<=h._x+1e-6&&o._x+o._w>=h._x+h._w-1e-6)return;}top.push(h);sum+=+h.getAttribute"
    "('data-s');});\n"
    " var all=+fr[0].getAttribute('data-s'),pct=all?100*sum/all:0;\n"
    " mat.textContent=term?'Matched: '+pct.toFixed(1)+'% ('+hits.length+' frames)':'';\n"
    " root.setAttribute('data-matched',term?pct.toFixed(1):'');return pct;}\n"
    "function ask(){var t=window.prompt('Search (regular expression):','');if(t!==null)"
    "search(t);}\n"
    "document.getElementById('sop-fg-search').addEventListener('click',ask);\n"
    "document.getElementById('sop-fg-reset').addEventListener('click',function(){zoom(fr[0]);"
    "});\n"
    "document.addEventListener('keydown',function(e){if((e.ctrlKey||e.metaKey)&&e.key==='f')"
    "{e.preventDefault();ask();}});\n"
    "window.sopFlame={zoom:zoom,search:search,reset:function(){zoom(fr[0]);},frames:fr};\n"
    "})();\n"
    "]]></script>\n";

int sop__flamegraph_write(const sop_stack_count *stacks, size_t n, const char *title,
                          unsigned flags, FILE *f)
{
    bool idle = (flags & SOP_FG_IDLE) != 0;
    tree t = {0};
    size_t frames = 1;
    for (size_t i = 0; i < n; i++) {
        frames++;
        for (const char *p = stacks[i].stack; *p; p++)
            frames += *p == ';';
    }
    t.cap = frames < FG_MAX_NODES ? frames : FG_MAX_NODES;
    size_t slots = 16;
    while (slots < 2 * t.cap)
        slots *= 2;
    t.mask = slots - 1;
    t.nodes = calloc(t.cap, sizeof *t.nodes);
    t.slot = calloc(slots, sizeof *t.slot);
    if (!t.nodes || !t.slot) {
        free(t.nodes);
        free(t.slot);
        return -ENOMEM;
    }
    node *root = new_node(&t, "all", 3);
    long left_out = 0;
    for (size_t i = 0; i < n; i++) {
        long st[SOP_ST_N];
        memcpy(st, stacks[i].by_state, sizeof st);
        long count = stacks[i].count;
        if (!idle) {
            count -= st[SOP_ST_IDLE] + st[SOP_ST_BATCH];
            left_out += st[SOP_ST_IDLE] + st[SOP_ST_BATCH];
            st[SOP_ST_IDLE] = st[SOP_ST_BATCH] = 0;
        }
        if (count > 0)
            insert(&t, root, stacks[i].stack, count, st);
    }
    free(t.slot); /* the tree is built */
    t.slot = NULL;
    int height = FG_TOP + (t.max_depth + 1) * FG_ROW + 30;
    double scale = root->count > 0 ? (FG_WIDTH - 2 * FG_PAD) / (double)root->count : 0;
    if (!(flags & SOP_FG_INLINE))
        fputs("<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n", f);
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" id=\"sop-fg\" "
            "width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" data-w=\"%d\" data-pad=\"%g\" "
            "font-family=\"monospace\" font-size=\"11\">\n",
            (int)FG_WIDTH, height, (int)FG_WIDTH, height, (int)FG_WIDTH, FG_PAD);
    fputs("<style>#sop-fg g.f{cursor:pointer}#sop-fg g.f:hover rect{stroke:#000;"
          "stroke-width:0.5}#sop-fg .btn{cursor:pointer;fill:#225}</style>\n",
          f);
    fprintf(f,
            "<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"#f8f8f0\"/>\n"
            "<text x=\"%d\" y=\"20\" text-anchor=\"middle\" font-size=\"14\">",
            (int)(FG_WIDTH / 2));
    put_xml(f, title, strlen(title), 200);
    fputs("</text>\n", f);
    fprintf(f,
            "<text x=\"%g\" y=\"20\" id=\"sop-fg-reset\" class=\"btn\" opacity=\"0.3\">"
            "Reset zoom</text>\n<text x=\"%g\" y=\"20\" id=\"sop-fg-search\" class=\"btn\" "
            "text-anchor=\"end\">Search (Ctrl-F)</text>\n",
            FG_PAD, FG_WIDTH - FG_PAD);
    /* the legend: one swatch per state */
    double lx = FG_PAD;
    for (int i = 0; i < SOP_ST_N; i++) {
        if (!idle && (i == SOP_ST_IDLE || i == SOP_ST_BATCH))
            continue;
        const int *c = STATE_RGB[i];
        fprintf(f,
                "<rect x=\"%g\" y=\"30\" width=\"12\" height=\"10\" fill=\"rgb(%d,%d,%d)\"/>"
                "<text x=\"%g\" y=\"39\">%s</text>\n",
                lx, c[0] + c[3] / 2, c[1] + c[4] / 2, c[2] + c[5] / 2, lx + 16, STATE_NAME[i]);
        lx += 16 + 7.0 * (double)strlen(STATE_NAME[i]) + 14;
    }
    if (!idle)
        fprintf(f,
                "<text x=\"%g\" y=\"39\" fill=\"#666\">%ld idle samples left out (--idle "
                "keeps them)</text>\n",
                lx + 10, left_out);
    fprintf(f, "<text x=\"%g\" y=\"%d\" id=\"sop-fg-details\"> </text>\n", FG_PAD, height - 10);
    fprintf(f, "<text x=\"%g\" y=\"%d\" id=\"sop-fg-matched\" text-anchor=\"end\"></text>\n",
            FG_WIDTH - FG_PAD, height - 10);
    /* Depth-first with an explicit stack: bounded by the node count. */
    item *st = malloc((t.n + 1) * sizeof *st);
    if (!st) {
        free(t.nodes);
        return -ENOMEM;
    }
    size_t sp = 0;
    if (root->count > 0)
        st[sp++] = (item){root, FG_PAD, 0};
    while (sp > 0) {
        item it = st[--sp];
        double w = (double)it.x->count * scale;
        if (w < 0.1)
            continue;
        double y = FG_TOP + (double)(t.max_depth - it.depth) * FG_ROW;
        uint32_t h = name_hash(it.x->name, it.x->len);
        const int *c = STATE_RGB[dominant(it.x)];
        int r = c[0] + (int)(h % (unsigned)(c[3] + 1)),
            g = c[1] + (int)((h >> 8) % (unsigned)(c[4] + 1)),
            b = c[2] + (int)((h >> 16) % (unsigned)(c[5] + 1));
        double pct = root->count ? 100.0 * (double)it.x->count / (double)root->count : 0;
        fprintf(f,
                "<g class=\"f\" data-d=\"%d\" data-s=\"%ld\" data-c=\"rgb(%d,%d,%d)\" "
                "data-n=\"",
                it.depth, it.x->count, r, g, b);
        put_xml(f, it.x->name, it.x->len, 4096);
        fputs("\"><title>", f);
        put_xml(f, it.x->name, it.x->len, 4096);
        fprintf(f, " (%ld samples, %.2f%%", it.x->count, pct);
        for (int i = 0; i < SOP_ST_N; i++)
            if (it.x->st[i] > 0)
                fprintf(f, "; %s %.0f%%", STATE_NAME[i],
                        100.0 * (double)it.x->st[i] / (double)it.x->count);
        fprintf(f,
                ")</title><rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" "
                "fill=\"rgb(%d,%d,%d)\" rx=\"2\"/><text x=\"%.2f\" y=\"%.1f\">",
                it.x0, y, w, FG_ROW - 1, r, g, b, it.x0 + 3, y + FG_ROW - 4);
        size_t fit = w > 12 ? (size_t)((w - 6) / 7) : 0;
        if (fit >= 3)
            put_xml(f, it.x->name, it.x->len, fit);
        fputs("</text></g>\n", f);
        double x = it.x0;
        for (node *k = it.x->child; k && sp < t.n; k = k->next) {
            st[sp++] = (item){k, x, it.depth + 1};
            x += (double)k->count * scale;
        }
    }
    fputs(FG_SCRIPT, f);
    fputs("</svg>\n", f);
    free(st);
    free(t.nodes);
    return ferror(f) ? -EIO : 0;
}
