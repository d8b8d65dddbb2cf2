/* promtext.h — OpenMetrics text as the Prometheus text format 0.0.4 (cli/promtext.c), for
 * `watch --listen`'s /metrics when the client does not ask for OpenMetrics. */
#ifndef SOP_CLI_PROMTEXT_H
#define SOP_CLI_PROMTEXT_H

/* The content type of the result. */
#define CLI_PROMTEXT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* True when an Accept header (NULL: none) asks for OpenMetrics. */
int cli_accepts_openmetrics(const char *accept);

/* `om` (OpenMetrics families as libsop writes them) in the Prometheus text format: a counter
 * family's TYPE and HELP name its samples' `_total` name, UNIT lines and `# EOF` are left out
 * (the unit is in the name), `unknown` types become `untyped`. Returns a malloc'd string, or
 * NULL when out of memory. */
char *cli_openmetrics_to_text(const char *om);

#endif
