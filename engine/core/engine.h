/* engine.h — the insides of the public handles (sop_engine, sop_evidence, sop_report): what
 * the API (engine/api/), the collection and the renderers share. The steps the API is made of
 * are declared where they live: engine/api/api_int.h, engine/collect/collect.h,
 * engine/render/render.h. */
#ifndef SOP_ENGINE_H
#define SOP_ENGINE_H

#include <stdbool.h>

#include "sop.h"
#include "value.h"

struct sop_rules; /* engine/rules/rules.h */

/* A rule source kept by the engine so that a site file can be applied over the pack again. */
typedef struct {
    char *name; /* chunk name shown in errors */
    char *src;
    size_t len;
    char *dir; /* where its `require` looks; NULL for none */
} sop_source;

struct sop_engine {
    struct sop_rules *rules;
    bool loaded;
    sop_source pack; /* the pack last loaded (src NULL before) */
    sop_source site; /* the site file in force (src NULL when none) */
    char err[2048];
};

struct sop_evidence {
    sop_value *tree;     /* the `ev` object of docs/evidence.md */
    char *pictures_html; /* SOP_COLLECT_PICTURES: flame graph + timeline, inline SVG; or NULL */
};

struct sop_report {
    sop_value *tree; /* the report object of docs/contract.md, texts still bilingual */
    bool problem;    /* a warn or high finding */
};

#endif
