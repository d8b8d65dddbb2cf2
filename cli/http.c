/* http.c — `sopctl watch --listen`: /metrics, /report and /healthz over libmicrohttpd (Debian's
 * libmicrohttpd-dev), the only file that includes its header. One internal polling thread,
 * a bounded number of connections, short timeouts: it serves a scraper, not the public.
 * A slow client cannot hold a slot: every request must arrive whole (headers and body) within
 * REQUEST_DEADLINE_S of the connection's start or of its previous answer, however the bytes
 * trickle in; a reaper thread shuts the socket of a late one down (libmicrohttpd's own
 * timeout is an idle timeout, which a byte every few seconds resets). Nor can a client that
 * opens many: one client address holds at most PER_ADDRESS_LIMIT connections, of
 * CONNECTION_SLOTS in all, and a new connection past either bound is not refused but takes the
 * slot of the oldest connection (of that address, or of all) whose request has not arrived
 * whole: a probe on loopback, where every local user is 127.0.0.1, is served however many
 * slow connections another local user keeps opening.
 * libmicrohttpd (and its GnuTLS chain) is loaded with dlopen when a server starts, so every
 * other command starts without mapping it; only its header is needed to build. Depends on
 * libmicrohttpd (at run time, --listen only), libdl and libc. */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "http.h"

/* The limits of the server (docs/security.md). */
enum {
    REQUEST_DEADLINE_S = 5, /* a whole request, from the connection (or last answer) on */
    IDLE_TIMEOUT_S = 10,    /* libmicrohttpd's: no byte either way for this long */
    CONNECTION_SLOTS = 64,  /* in all */
    PER_ADDRESS_LIMIT = 8,  /* from one client address */
    SLOTS_HEADROOM = 16,    /* libmicrohttpd's own bound is this much higher: connections shut
                             * down for a newer one still count there until it sees them close */
    REAPER_PERIOD_MS = 250, /* how often late requests are looked for */
};

/* One open connection, from its start to its close (libmicrohttpd's socket context). */
typedef struct http_conn {
    struct http_conn *prev, *next; /* newest first */
    int fd;
    unsigned char addr[16]; /* the client's address (IPv4 in the first 4 bytes; none: unix) */
    struct timespec since;  /* the connection's start, or its last answer */
    bool answering;         /* a response is queued: the request arrived in time */
    bool cut;               /* shut down by the reaper */
} http_conn;

struct cli_http {
    struct MHD_Daemon *daemon;
    cli_http_fn fn;
    void *ctx;
    pthread_mutex_t mu; /* conns, stopping */
    pthread_cond_t cv;
    http_conn *conns;
    bool stopping;
    bool reaper_started;
    pthread_t reaper;
    bool unix_socket;    /* --listen unix:PATH */
    char sock_path[108]; /* its path (sizeof sun_path), removed at stop */
    dev_t sock_dev;      /* and the node created, so that only it is removed */
    ino_t sock_ino;
};

/* The libmicrohttpd functions we call, resolved once by mhd_load. */
static struct {
    __typeof__(MHD_start_daemon) *start_daemon;
    __typeof__(MHD_stop_daemon) *stop_daemon;
    __typeof__(MHD_get_daemon_info) *get_daemon_info;
    __typeof__(MHD_create_response_from_buffer) *create_response_from_buffer;
    __typeof__(MHD_add_response_header) *add_response_header;
    __typeof__(MHD_queue_response) *queue_response;
    __typeof__(MHD_destroy_response) *destroy_response;
    __typeof__(MHD_get_connection_info) *get_connection_info;
    __typeof__(MHD_lookup_connection_value) *lookup_connection_value;
} mhd;
static pthread_once_t mhd_once = PTHREAD_ONCE_INIT;
static char mhd_error[512];

static void mhd_load_once(void)
{
    /* The ABI's soname first (what the -dev package's header was built for), then the
     * unversioned name a local build may install. */
    static const char *const names[] = {"libmicrohttpd.so.12", "libmicrohttpd.so"};
    void *lib = dlopen(names[0], RTLD_NOW | RTLD_LOCAL);
    char why[160];
    const char *e = lib ? NULL : dlerror();
    snprintf(why, sizeof why, "%s", e ? e : "not found");
    for (size_t i = 1; i < sizeof names / sizeof names[0] && !lib; i++)
        lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(mhd_error, sizeof mhd_error,
                 "needs libmicrohttpd, which cannot be loaded (%s); install it "
                 "(Debian: the libmicrohttpd12 package, `make deps`)",
                 why);
        return;
    }
#define MHD_SYM(field, name)                                                                       \
    do {                                                                                           \
        *(void **)&mhd.field = dlsym(lib, name);                                                   \
        if (!mhd.field) {                                                                          \
            snprintf(mhd_error, sizeof mhd_error, "libmicrohttpd lacks %s: too old?", name);       \
            return;                                                                                \
        }                                                                                          \
    } while (0)
    MHD_SYM(start_daemon, "MHD_start_daemon");
    MHD_SYM(stop_daemon, "MHD_stop_daemon");
    MHD_SYM(get_daemon_info, "MHD_get_daemon_info");
    MHD_SYM(create_response_from_buffer, "MHD_create_response_from_buffer");
    MHD_SYM(add_response_header, "MHD_add_response_header");
    MHD_SYM(queue_response, "MHD_queue_response");
    MHD_SYM(destroy_response, "MHD_destroy_response");
    MHD_SYM(get_connection_info, "MHD_get_connection_info");
    MHD_SYM(lookup_connection_value, "MHD_lookup_connection_value");
#undef MHD_SYM
    /* the library stays loaded for the life of the process (its threads may run) */
}

/* Load libmicrohttpd once; 0, or -1 with the reason in err. */
static int mhd_load(char *err, size_t errlen)
{
    pthread_once(&mhd_once, mhd_load_once);
    if (mhd_error[0]) {
        snprintf(err, errlen, "%s", mhd_error);
        return -1;
    }
    return 0;
}

static double elapsed_s(const struct timespec *since)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - since->tv_sec) + (double)(now.tv_nsec - since->tv_nsec) / 1e9;
}

/* The connection's record (its socket context), or NULL. */
static http_conn *conn_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *info =
        mhd.get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info ? info->socket_context : NULL;
}

/* A response is queued (true: the request is in), or sent (false: the next request's clock
 * starts now). */
static void set_answering(cli_http *h, struct MHD_Connection *c, bool answering)
{
    pthread_mutex_lock(&h->mu);
    http_conn *k = conn_of(c);
    if (k) {
        k->answering = answering;
        if (!answering)
            clock_gettime(CLOCK_MONOTONIC, &k->since);
    }
    pthread_mutex_unlock(&h->mu);
}

/* The client's address of c, as 16 bytes (zeros when unknown or a unix socket). */
static void client_addr(struct MHD_Connection *c, unsigned char out[16])
{
    memset(out, 0, 16);
    const union MHD_ConnectionInfo *info =
        mhd.get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *sa = info ? info->client_addr : NULL;
    if (sa && sa->sa_family == AF_INET)
        memcpy(out, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
    else if (sa && sa->sa_family == AF_INET6)
        memcpy(out, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16);
}

/* Has a whole request head (up to the blank line) arrived on fd, not yet read by the server?
 * A client that sends its request at once (a probe, a scraper) has one waiting in the socket
 * before libmicrohttpd reads it; one that trickles never does. */
static bool request_waiting(int fd)
{
    char buf[4096];
    ssize_t n = recv(fd, buf, sizeof buf - 1, MSG_PEEK | MSG_DONTWAIT);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    return strstr(buf, "\r\n\r\n") != NULL || strstr(buf, "\n\n") != NULL;
}

/* Before a new connection from addr is tracked (h->mu held): when that address already holds
 * PER_ADDRESS_LIMIT connections, or all hold CONNECTION_SLOTS, shut down the oldest one (of
 * the address, or of all) still waiting for its request, so that the newcomer gets its slot.
 * One being answered is never cut, nor one whose whole request already waits in its socket
 * (accepted in the same burst as the newcomers, not read yet): a flood of connections accepted
 * together cannot push out a probe that sent its request at once. */
static void make_room(cli_http *h, const unsigned char addr[16])
{
    long all = 0, mine = 0;
    http_conn *oldest_all = NULL, *oldest_mine = NULL;
    for (http_conn *k = h->conns; k; k = k->next) {
        if (k->cut)
            continue;
        bool same = memcmp(k->addr, addr, 16) == 0;
        all++;
        mine += same;
        if (!k->answering && !request_waiting(k->fd)) {
            oldest_all = k; /* the list is newest first: the last seen is the oldest */
            if (same)
                oldest_mine = k;
        }
    }
    http_conn *victim = mine >= PER_ADDRESS_LIMIT ? oldest_mine
                        : all >= CONNECTION_SLOTS ? oldest_all
                                                  : NULL;
    if (victim) {
        shutdown(victim->fd, SHUT_RDWR);
        victim->cut = true;
    }
}

/* MHD_OPTION_NOTIFY_CONNECTION: track each connection from its start to its close. The close
 * notice comes before libmicrohttpd closes the socket, so the reaper (which shuts sockets down
 * under the same lock) never touches a descriptor that was closed and reused. */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    cli_http *h = cls;
    pthread_mutex_lock(&h->mu);
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *info =
            mhd.get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        http_conn *k = info ? calloc(1, sizeof *k) : NULL;
        if (k) { /* without it, the idle timeout alone bounds the connection */
            k->fd = info->connect_fd;
            client_addr(c, k->addr);
            make_room(h, k->addr);
            clock_gettime(CLOCK_MONOTONIC, &k->since);
            k->next = h->conns;
            if (h->conns)
                h->conns->prev = k;
            h->conns = k;
        }
        *socket_context = k;
    } else if (toe == MHD_CONNECTION_NOTIFY_CLOSED && *socket_context) {
        http_conn *k = *socket_context;
        if (k->prev)
            k->prev->next = k->next;
        else
            h->conns = k->next;
        if (k->next)
            k->next->prev = k->prev;
        free(k);
        *socket_context = NULL;
    }
    pthread_mutex_unlock(&h->mu);
}

/* MHD_OPTION_NOTIFY_COMPLETED: the answer went out (or the request failed). */
static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)con_cls;
    (void)toe;
    set_answering(cls, c, false);
}

/* Shut down every connection whose request is late; libmicrohttpd then sees the end of the
 * stream and frees the slot. */
static void *reaper_main(void *arg)
{
    cli_http *h = arg;
    pthread_mutex_lock(&h->mu);
    while (!h->stopping) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += REAPER_PERIOD_MS * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&h->cv, &h->mu, &until);
        for (http_conn *k = h->conns; k && !h->stopping; k = k->next)
            if (!k->answering && !k->cut && elapsed_s(&k->since) > REQUEST_DEADLINE_S) {
                shutdown(k->fd, SHUT_RDWR);
                k->cut = true;
            }
    }
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con_cls)
{
    (void)version;
    (void)upload;
    (void)con_cls;
    cli_http *h = cls;
    int status = 200;
    const char *type = "text/plain; charset=utf-8";
    char *body = NULL;
    if (*upload_size != 0) { /* a body we do not want: drop it */
        *upload_size = 0;
        return MHD_YES;
    }
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        status = 405;
        body = strdup("only GET and HEAD\n");
    } else {
        const char *accept =
            mhd.lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
        cli_http_request req = {url, accept, h->unix_socket};
        body = h->fn(&req, &status, &type, h->ctx);
        if (!body) {
            status = 500;
            type = "text/plain; charset=utf-8";
            body = strdup("out of memory\n");
        }
    }
    if (!body)
        return MHD_NO;
    struct MHD_Response *resp =
        mhd.create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(body);
        return MHD_NO;
    }
    mhd.add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    mhd.add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (status == 405)
        mhd.add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    enum MHD_Result r = mhd.queue_response(conn, (unsigned)status, resp);
    mhd.destroy_response(resp);
    set_answering(h, conn, true);
    return r;
}

/* Parse listen into a socket address; 0 or -1. */
static int parse_listen(const char *listen, struct sockaddr_storage *ss, socklen_t *len, char *err,
                        size_t errlen)
{
    char host[128] = "127.0.0.1";
    const char *port_s = listen;
    if (listen[0] == '[') {
        const char *close = strchr(listen, ']');
        if (!close || close[1] != ':' || (size_t)(close - listen - 1) >= sizeof host) {
            snprintf(err, errlen, "'%s' is not [ADDRESS]:PORT", listen);
            return -1;
        }
        snprintf(host, sizeof host, "%.*s", (int)(close - listen - 1), listen + 1);
        port_s = close + 2;
    } else {
        const char *colon = strrchr(listen, ':');
        if (colon) {
            if ((size_t)(colon - listen) >= sizeof host) {
                snprintf(err, errlen, "address too long");
                return -1;
            }
            if (colon > listen)
                snprintf(host, sizeof host, "%.*s", (int)(colon - listen), listen);
            port_s = colon + 1;
        }
    }
    char *end = NULL;
    errno = 0;
    long port = strtol(port_s, &end, 10);
    if (!*port_s || errno || *end || port < 0 || port > 65535) {
        snprintf(err, errlen, "'%s': the port is not 0..65535", listen);
        return -1;
    }
    if (strcmp(host, "localhost") == 0)
        snprintf(host, sizeof host, "127.0.0.1");
    memset(ss, 0, sizeof *ss);
    struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons((uint16_t)port);
        *len = sizeof *a4;
    } else if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)port);
        *len = sizeof *a6;
    } else {
        snprintf(err, errlen, "'%s' is not a numeric IPv4/IPv6 address", host);
        return -1;
    }
    return 0;
}

/* --listen unix:PATH: a listening Unix socket, mode 0600, at PATH; its fd, or -1 with the
 * reason in err. */
static int unix_listen(cli_http *h, const char *path, char *err, size_t errlen)
{
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    if (path[0] != '/' || strlen(path) >= sizeof sa.sun_path) {
        snprintf(err, errlen, "unix:%s: the path must be absolute and under %zu bytes", path,
                 sizeof sa.sun_path);
        return -1;
    }
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    /* Its directory: the caller's, not writable by others (nobody can swap the socket for
     * something else between its creation and its removal). */
    char dir[sizeof sa.sun_path];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash == dir)
        slash[1] = '\0';
    else
        *slash = '\0';
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "unix:%s: %s is not a directory", path, dir);
        return -1;
    }
    if (st.st_uid != geteuid() || (st.st_mode & 022)) {
        snprintf(err, errlen,
                 "unix:%s: %s must be owned by the caller (uid %d) and not writable by group or "
                 "others",
                 path, dir, (int)geteuid());
        return -1;
    }
    memset(&st, 0, sizeof st);
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode) || st.st_uid != geteuid()) {
            snprintf(err, errlen, "unix:%s: exists and is not a socket of the caller's", path);
            return -1;
        }
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errlen, "unix:%s: socket: %s", path, strerror(errno));
        return -1;
    }
    if (S_ISSOCK(st.st_mode)) { /* an earlier run's: replaced, unless a server still answers */
        if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0) {
            snprintf(err, errlen, "unix:%s: in use (another watch listens there)", path);
            close(fd);
            return -1;
        }
        close(fd);
        unlink(path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            snprintf(err, errlen, "unix:%s: socket: %s", path, strerror(errno));
            return -1;
        }
    }
    /* Created 0600 at once (no window in which another user could connect); the umask is the
     * process's, but no other thread creates files while the server starts. */
    mode_t old = umask(0177);
    int rc = bind(fd, (struct sockaddr *)&sa, sizeof sa);
    int bind_errno = errno;
    umask(old);
    if (rc != 0 || listen(fd, CONNECTION_SLOTS) != 0) {
        snprintf(err, errlen, "unix:%s: %s", path, strerror(rc != 0 ? bind_errno : errno));
        close(fd);
        return -1;
    }
    if (lstat(path, &st) == 0) {
        h->sock_dev = st.st_dev;
        h->sock_ino = st.st_ino;
    }
    snprintf(h->sock_path, sizeof h->sock_path, "%s", path);
    h->unix_socket = true;
    return fd;
}

/* Remove the Unix socket this server created (not whatever is at its path now). */
static void unix_unlink(cli_http *h)
{
    struct stat st;
    if (h->unix_socket && lstat(h->sock_path, &st) == 0 && S_ISSOCK(st.st_mode) &&
        st.st_dev == h->sock_dev && st.st_ino == h->sock_ino)
        unlink(h->sock_path);
}

static void http_free(cli_http *h)
{
    pthread_cond_destroy(&h->cv);
    pthread_mutex_destroy(&h->mu);
    free(h);
}

int cli_http_start(const char *listen, cli_http_fn fn, void *ctx, cli_http **out, char *bound,
                   size_t boundlen, char *err, size_t errlen)
{
    *out = NULL;
    struct sockaddr_storage ss;
    socklen_t sslen = 0;
    bool is_unix = strncmp(listen, "unix:", 5) == 0;
    memset(&ss, 0, sizeof ss);
    if (!is_unix && parse_listen(listen, &ss, &sslen, err, errlen) != 0)
        return -1;
    if (mhd_load(err, errlen) != 0)
        return -1;
    cli_http *h = calloc(1, sizeof *h);
    if (!h) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    h->fn = fn;
    h->ctx = ctx;
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    int unix_fd = -1;
    if (is_unix && (unix_fd = unix_listen(h, listen + 5, err, errlen)) < 0) {
        http_free(h);
        return -1;
    }
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO;
    if (ss.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    /* The daemon's options, one row each (MHD_OPTION_ARRAY): add a limit by adding a row. The
     * first row is where it listens: a TCP address, or the Unix socket made above. */
    struct MHD_OptionItem opts[] = {
        is_unix ? (struct MHD_OptionItem){MHD_OPTION_LISTEN_SOCKET, unix_fd, NULL}
                : (struct MHD_OptionItem){MHD_OPTION_SOCK_ADDR, 0, &ss},
        {MHD_OPTION_CONNECTION_LIMIT, CONNECTION_SLOTS + SLOTS_HEADROOM, NULL},
        {MHD_OPTION_CONNECTION_TIMEOUT, IDLE_TIMEOUT_S, NULL},
        {MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection, h},
        {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, h},
        {MHD_OPTION_END, 0, NULL},
    };
    errno = 0;
    h->daemon =
        mhd.start_daemon(flags, 0, NULL, NULL, answer, h, MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
    if (!h->daemon) {
        snprintf(err, errlen, "cannot listen on %s%s%s", listen, errno ? ": " : "",
                 errno ? strerror(errno) : "");
        if (unix_fd >= 0) {
            close(unix_fd);
            unix_unlink(h);
        }
        http_free(h);
        return -1;
    }
    if (pthread_create(&h->reaper, NULL, reaper_main, h) != 0) {
        snprintf(err, errlen, "cannot start the request deadline's thread");
        mhd.stop_daemon(h->daemon);
        unix_unlink(h);
        http_free(h);
        return -1;
    }
    h->reaper_started = true;
    if (is_unix) {
        snprintf(bound, boundlen, "unix:%s", h->sock_path);
        *out = h;
        return 0;
    }
    /* The port actually bound (port 0 asks the kernel for a free one). */
    struct sockaddr_storage got;
    memset(&got, 0, sizeof got);
    got.ss_family = ss.ss_family;
    socklen_t gotlen = sizeof got;
    const union MHD_DaemonInfo *info = mhd.get_daemon_info(h->daemon, MHD_DAEMON_INFO_LISTEN_FD);
    char addr[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;
    if (info && getsockname(info->listen_fd, (struct sockaddr *)&got, &gotlen) == 0) {
        if (got.ss_family == AF_INET6) {
            struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&got;
            inet_ntop(AF_INET6, &a6->sin6_addr, addr, sizeof addr);
            port = ntohs(a6->sin6_port);
        } else {
            struct sockaddr_in *a4 = (struct sockaddr_in *)&got;
            inet_ntop(AF_INET, &a4->sin_addr, addr, sizeof addr);
            port = ntohs(a4->sin_port);
        }
    }
    snprintf(bound, boundlen, got.ss_family == AF_INET6 ? "[%s]:%u" : "%s:%u", addr, port);
    *out = h;
    return 0;
}

void cli_http_stop(cli_http *h)
{
    if (!h)
        return;
    if (h->reaper_started) {
        pthread_mutex_lock(&h->mu);
        h->stopping = true;
        pthread_cond_signal(&h->cv);
        pthread_mutex_unlock(&h->mu);
        pthread_join(h->reaper, NULL);
    }
    mhd.stop_daemon(h->daemon); /* closes the connections: their records are freed */
    unix_unlink(h);
    http_free(h);
}
