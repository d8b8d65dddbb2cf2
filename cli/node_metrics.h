/* node_metrics.h — `sopctl watch --node`'s /metrics: the OpenMetrics texts of many targets as one
 * exposition, each sample labelled with its target (cli/node_metrics.c). */
#ifndef SOP_CLI_NODE_METRICS_H
#define SOP_CLI_NODE_METRICS_H

#include <stddef.h>

#define NODE_LABELS_MAX 4

/* A target's label set: names and values (NULL or "": left out). */
typedef struct {
    const char *name[NODE_LABELS_MAX];
    const char *value[NODE_LABELS_MAX];
    size_t n;
} node_labels;

/* texts[i] (one target's OpenMetrics families, "# EOF" ignored) labelled with labels[i]; each
 * family's metadata once, then every target's samples of it; then `tail` (the node's own
 * families and "# EOF"). A malloc'd string, or NULL when out of memory. */
char *cli_node_metrics(const char *const *texts, const node_labels *labels, size_t n,
                       const char *tail);

#endif
