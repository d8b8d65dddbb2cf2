/* http.h — the small HTTP server of `sopctl watch --listen` (cli/http.c, the one home of
 * libmicrohttpd): GET/HEAD only, each answer produced by a callback on the server's thread. */
#ifndef SOP_CLI_HTTP_H
#define SOP_CLI_HTTP_H

#include <stddef.h>

typedef struct cli_http cli_http;

/* Answer a GET of `path` (no query string): set *status (200, 404, 503) and *content_type
 * (static), and return a malloc'd body (NULL = out of memory: the server answers 500). Called
 * on the server's thread, one request at a time. */
typedef char *(*cli_http_fn)(const char *path, int *status, const char **content_type, void *ctx);

/* Listen on `listen`: "HOST:PORT", "[V6]:PORT", or ":PORT"/"PORT" for 127.0.0.1 (loopback
 * unless told otherwise). HOST is a numeric address or "localhost". PORT 0 takes a free port.
 * Returns 0, or -1 with the reason in err. The bound address is written to `bound` as
 * "HOST:PORT" (for the log and for tests that ask for port 0). */
int cli_http_start(const char *listen, cli_http_fn fn, void *ctx, cli_http **out, char *bound,
                   size_t boundlen, char *err, size_t errlen);
/* Stop listening, wait for the answer in progress; accepts NULL. */
void cli_http_stop(cli_http *h);

#endif
