/* http.h — the small HTTP server of `sopctl watch --listen` (cli/http.c, the one home of
 * libmicrohttpd): GET/HEAD only, each answer produced by a callback on the server's thread. */
#ifndef SOP_CLI_HTTP_H
#define SOP_CLI_HTTP_H

#include <stddef.h>

typedef struct cli_http cli_http;

/* A request as the answering callback sees it. */
typedef struct cli_http_request {
    const char *path;   /* no query string */
    const char *accept; /* the Accept header, NULL when it has none */
    int unix_socket;    /* 1: it came over a Unix socket (--listen unix:PATH, mode 0600) */
} cli_http_request;

/* Answer a GET: set *status (200, 403, 404, 503) and *content_type (static), and return a
 * malloc'd body (NULL = out of memory: the server answers 500). Called on the server's
 * thread, one request at a time. */
typedef char *(*cli_http_fn)(const cli_http_request *req, int *status, const char **content_type,
                             void *ctx);

/* Listen on `listen`: "HOST:PORT", "[V6]:PORT", or ":PORT"/"PORT" for 127.0.0.1 (loopback
 * unless told otherwise). HOST is a numeric address or "localhost". PORT 0 takes a free port.
 * Or "unix:PATH": a Unix socket created with mode 0600 (only its owner, the caller, can
 * connect), PATH absolute, in a directory that is the caller's and not writable by others; a
 * socket of the caller's left there by an earlier run is replaced, anything else is refused.
 * Returns 0, or -1 with the reason in err. The bound address is written to `bound` as
 * "HOST:PORT" or "unix:PATH" (for the log and for tests that ask for port 0). */
int cli_http_start(const char *listen, cli_http_fn fn, void *ctx, cli_http **out, char *bound,
                   size_t boundlen, char *err, size_t errlen);
/* Stop listening, wait for the answer in progress, remove the Unix socket; accepts NULL. */
void cli_http_stop(cli_http *h);

#endif
