/* The load engine's hot loop in C: workers/load/engine.py's semantics, without Python per request.
 *
 * fastloop.run(...) runs one closed-loop spec on one epoll loop of non-blocking sockets (OpenSSL
 * for TLS, on the SSL_CTX of the Python SSLContext the caller built) and returns a dict of
 * counters and stamps; per-request phase samples (µs) leave in batches through `sink(phase, bytes)`.
 * workers/load/fast_engine.py wraps it into a LoadResult; see engine.py's docstring for the phases,
 * ab's failure columns, draining the server's FIN, timeouts, cancel and progress. The GIL is
 * released for the whole loop and taken back only for the callbacks (cancel, progress, sink), so
 * a caller's other threads (a Celery agent's monitor) keep running.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define TICK_NS 50000000LL            /* engine.TICK_S */
#define CANCEL_POLL_NS 250000000LL    /* engine.CANCEL_POLL_S */
#define PROGRESS_EVERY_NS 250000000LL /* engine.PROGRESS_EVERY_S */
#define DRAIN_GRACE_NS 1000000000LL   /* engine.DRAIN_GRACE_S */
#define READ_SIZE 65536
#define CHUNK 65536                   /* samples per phase handed to sink() at once */
#define MAX_HEAD 1048576              /* a response head longer than this is unparsable */
#define NPHASES 6                     /* spec.PHASES order: connect tls waiting processing total tcp */
enum { P_CONNECT, P_TLS, P_WAITING, P_PROCESSING, P_TOTAL, P_TCP };
enum { CONNECTING, HANDSHAKING, SENDING, RECEIVING, DRAINING, CLOSED };
enum { COL_CONNECT, COL_RECEIVE, COL_EXCEPTIONS };
/* Parser states */
enum { H_STATUS, H_HEADERS, B_LENGTH, B_CHUNK_SIZE, B_CHUNK_DATA, B_CHUNK_CRLF, B_TRAILERS, B_EOF, M_DONE };

typedef struct {
    int state;
    int status;
    int minor;            /* HTTP/1.x */
    long long length;     /* Content-Length, -1 when absent */
    long long left;       /* body bytes still expected (length or current chunk) */
    int chunked, conn_close, conn_keepalive;
    char *line;           /* the current head line, across reads */
    size_t line_len, line_cap;
    size_t head_len;
} Parser;

typedef struct Conn {
    uint32_t index, generation;
    int fd, state, watching, look_headers;
    SSL *ssl;
    long long start, connected, tcp_done, tls_done, written, first_byte, deadline;
    long long served, received, body_bytes;
    size_t pending;       /* request bytes already written (SENDING) */
    int complete, keep_alive;
    Parser p;
} Conn;

typedef struct { int32_t *v; Py_ssize_t n; } Buf;

typedef struct {
    /* spec */
    struct sockaddr_storage addr;
    socklen_t addrlen;
    int family;
    const char *request; Py_ssize_t request_len;
    long long requests, concurrency;
    int keepalive;
    long long timeout_ns, limit_ns, stall_ns, drain_grace_ns;
    SSL_CTX *ctx; const char *server_name, *verify_host; int verify_ip;
    PyObject *cancel, *on_progress, *sink;
    /* state */
    int ep;
    Conn *conns; long long nconns;    /* slot pool: c connections at most */
    Conn **free_conns; long long nfree;
    long long reserved, finished, in_flight;
    int stopping, cancelled, stalled, headers_seen, failed_callback;
    long long first_start, last_event, last_progress;
    long long document_length; int have_document_length;
    char server_software[256]; int have_server;
    char protocol[32], cipher[128];
    /* counters */
    long long complete, failed, failed_connect, failed_receive, failed_length, failed_exceptions, timeouts,
        non_2xx, keepalive_requests, connections_opened, total_bytes, html_bytes, write_errors;
    long long status_counts[1000];
    PyObject *errors;                 /* dict error -> count (touched with the GIL only at the end) */
    char **error_names; long long *error_counts; int nerrors, error_cap;
    Buf bufs[NPHASES];
    PyThreadState *save;
    char readbuf[READ_SIZE];
} Engine;

static inline long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);  /* time.perf_counter_ns()'s clock on Linux */
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* A connection's slot is reused as soon as it is freed (a failed write inside message_complete frees
 * it and opens the next connection in the same struct): code that goes on after such a call checks
 * that the struct still holds the same connection. */
static inline int same(Conn *c, uint32_t generation) { return c->generation == generation && c->state != CLOSED; }

/* ---- errors, named as Python names them (engine.py's strings) ----------------------------- */

static const char *errno_class(int code) {
    switch (code) {
    case EAGAIN: return "BlockingIOError";
    case EPIPE: case ESHUTDOWN: return "BrokenPipeError";
    case ECONNABORTED: return "ConnectionAbortedError";
    case ECONNREFUSED: return "ConnectionRefusedError";
    case ECONNRESET: return "ConnectionResetError";
    case ETIMEDOUT: return "TimeoutError";
    case EINTR: return "InterruptedError";
    case ENOENT: return "FileNotFoundError";
    case EACCES: case EPERM: return "PermissionError";
    default: return "OSError";
    }
}

static int connection_errno(int code) {  /* a subclass of ConnectionError */
    return code == EPIPE || code == ESHUTDOWN || code == ECONNABORTED || code == ECONNREFUSED || code == ECONNRESET;
}

static int connect_errno(int code) {     /* engine.CONNECT_ERRNOS */
    return code == ECONNREFUSED || code == ETIMEDOUT || code == EHOSTUNREACH || code == ENETUNREACH;
}

static int error_slot(Engine *e, const char *name) {
    for (int i = 0; i < e->nerrors; i++)
        if (strcmp(e->error_names[i], name) == 0) return i;
    if (e->nerrors == e->error_cap) {
        int cap = e->error_cap ? e->error_cap * 2 : 8;
        char **names = realloc(e->error_names, cap * sizeof(char *));
        if (!names) return -1;
        e->error_names = names;
        long long *counts = realloc(e->error_counts, cap * sizeof(long long));
        if (!counts) return -1;
        e->error_counts = counts;
        e->error_cap = cap;
    }
    e->error_names[e->nerrors] = strdup(name);
    e->error_counts[e->nerrors] = 0;
    return e->nerrors++;
}

/* What OpenSSL's last failure is called in Python: (class, reason for a bare SSLError, or ""). */
typedef struct { char cls[64]; char reason[128]; int is_eof; int sys_errno; } SslFailure;

/* `reported` is the return value CPython sees: SSL_do_handshake's, but 0 for reads and writes (it
 * calls SSL_read_ex / SSL_write_ex, which return 0 on any failure): there a failed socket call with
 * an empty error queue (a reset) is an EOF (SSLEOFError), as the Python engine then sees it. */
static void ssl_failure(SSL *ssl, int ret, int reported, int saved_errno, SslFailure *f) {
    int err = SSL_get_error(ssl, ret);
    unsigned long code = ERR_peek_last_error();
    f->reason[0] = 0; f->is_eof = 0; f->sys_errno = 0;
    if (err == SSL_ERROR_ZERO_RETURN) {
        strcpy(f->cls, "SSLZeroReturnError");
    } else if (err == SSL_ERROR_SYSCALL && code == 0) {
        /* CPython: a 0 return is an EOF (SSLEOFError) whatever errno says; -1 raises errno's OSError. */
        if (reported == 0 || saved_errno == 0) { strcpy(f->cls, "SSLEOFError"); f->is_eof = 1; }
        else { strcpy(f->cls, errno_class(saved_errno)); f->sys_errno = saved_errno; }
    } else if (code && ERR_GET_LIB(code) == ERR_LIB_SSL && ERR_GET_REASON(code) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
        strcpy(f->cls, "SSLEOFError"); f->is_eof = 1;  /* as CPython 3.10+ maps it */
    } else if (code && ERR_GET_LIB(code) == ERR_LIB_SSL && ERR_GET_REASON(code) == SSL_R_CERTIFICATE_VERIFY_FAILED) {
        strcpy(f->cls, "SSLCertVerificationError");
    } else {
        strcpy(f->cls, "SSLError");
        const char *text = code ? ERR_reason_error_string(code) : NULL;
        if (text) {  /* "wrong version number" -> WRONG_VERSION_NUMBER, CPython's mnemonic */
            size_t i = 0;
            for (; text[i] && i < sizeof(f->reason) - 1; i++)
                f->reason[i] = text[i] == ' ' ? '_' : (char)((text[i] >= 'a' && text[i] <= 'z') ? text[i] - 32 : text[i]);
            f->reason[i] = 0;
        }
    }
    ERR_clear_error();
}

/* ---- samples ------------------------------------------------------------------------------ */

static int flush_phase(Engine *e, int phase) {
    Buf *b = &e->bufs[phase];
    if (!b->n) return 0;
    PyEval_RestoreThread(e->save);
    PyObject *data = PyBytes_FromStringAndSize((const char *)b->v, b->n * (Py_ssize_t)sizeof(int32_t));
    PyObject *r = data ? PyObject_CallFunction(e->sink, "iO", phase, data) : NULL;
    Py_XDECREF(data);
    int ok = r != NULL;
    Py_XDECREF(r);
    if (!ok) e->failed_callback = 1;
    e->save = PyEval_SaveThread();
    b->n = 0;
    return ok ? 0 : -1;
}

static inline void add_sample(Engine *e, int phase, long long delta_ns) {
    long long us = delta_ns / 1000;
    if (us > INT32_MAX) us = INT32_MAX;
    if (us < INT32_MIN) us = INT32_MIN;
    Buf *b = &e->bufs[phase];
    b->v[b->n++] = (int32_t)us;
    if (b->n == CHUNK) flush_phase(e, phase);
}

/* ---- connections --------------------------------------------------------------------------- */

static void stop(Engine *e, long long now, int cancelled);
static void open_next(Engine *e);

static void watch(Engine *e, Conn *c, int events, int first) {
    if (first) {
        struct epoll_event ev = {.events = (uint32_t)events, .data.u64 = ((uint64_t)c->generation << 32) | c->index};
        epoll_ctl(e->ep, EPOLL_CTL_ADD, c->fd, &ev);
    } else if (events != c->watching) {
        struct epoll_event ev = {.events = (uint32_t)events, .data.u64 = ((uint64_t)c->generation << 32) | c->index};
        epoll_ctl(e->ep, EPOLL_CTL_MOD, c->fd, &ev);
    }
    c->watching = events;
}

static void close_conn(Engine *e, Conn *c) {
    if (c->state == CLOSED) return;
    c->state = CLOSED;
    if (c->ssl) { SSL_free(c->ssl); c->ssl = NULL; }
    if (c->fd >= 0) { close(c->fd); c->fd = -1; }  /* closing takes it out of the epoll set */
    e->free_conns[e->nfree++] = c;
}

static void count_failure(Engine *e, int column, const char *error) {
    if (column == COL_CONNECT) e->failed_connect++;
    else if (column == COL_RECEIVE) e->failed_receive++;
    else e->failed_exceptions++;
    e->failed++;
    int slot = error_slot(e, error);
    if (slot >= 0) e->error_counts[slot]++;
    e->finished++;
    e->last_event = now_ns();
    if (strcmp(error, "timeout") != 0) e->last_progress = e->last_event;
}

static void slot_freed(Engine *e) {
    e->in_flight--;
    open_next(e);
}

/* ab's column and the error string for a failure found on an open connection: close, count, refill. */
static void fail_conn(Engine *e, Conn *c, int column, const char *prefix, const char *what) {
    char error[256];
    snprintf(error, sizeof error, "%s%s", prefix, what);
    close_conn(e, c);
    count_failure(e, column, error);
    slot_freed(e);
}

static void abort_conn(Engine *e, Conn *c) {
    if (c->state == CLOSED) return;
    close_conn(e, c);
    e->in_flight--;
}

static void reset_parser(Parser *p) {
    p->state = H_STATUS; p->status = 0; p->minor = 1; p->length = -1; p->left = 0;
    p->chunked = p->conn_close = p->conn_keepalive = 0; p->line_len = 0; p->head_len = 0;
}

static void reset_response(Conn *c) {
    c->first_byte = 0; c->received = 0; c->body_bytes = 0; c->complete = 0; c->keep_alive = 0;
    reset_parser(&c->p);
}

/* ---- the HTTP/1.x response parser ----------------------------------------------------------
 * Status line, headers (Content-Length, Transfer-Encoding: chunked, Connection, Server), bodies by
 * length, chunks or the connection's end; keep-alive as llhttp decides it (HTTP/1.1 unless
 * "Connection: close", HTTP/1.0 only with "keep-alive", never for a body ended by EOF).
 * Returns 1 on a complete message (its bytes consumed, *used set), 0 when more is needed, -1 on
 * an unparsable response (error names llhttp's class as httptools raises it). */

static int ci_prefix(const char *s, size_t n, const char *lit) {
    size_t m = strlen(lit);
    if (n < m) return 0;
    for (size_t i = 0; i < m; i++) {
        char a = s[i];
        if (a >= 'A' && a <= 'Z') a += 32;
        if (a != lit[i]) return 0;
    }
    return 1;
}

static int ci_contains(const char *s, size_t n, const char *lit) {
    size_t m = strlen(lit);
    for (size_t i = 0; i + m <= n; i++)
        if (ci_prefix(s + i, n - i, lit)) return 1;
    return 0;
}

static int message_has_no_body(Parser *p) {
    return (p->status >= 100 && p->status < 200) || p->status == 204 || p->status == 304;
}

static int head_line(Engine *e, Conn *c, const char *line, size_t n, const char **error) {
    Parser *p = &c->p;
    if (p->state == H_STATUS) {
        /* "HTTP/1.1 200 OK" */
        if (n < 12 || memcmp(line, "HTTP/1.", 7) != 0 || (line[7] != '0' && line[7] != '1') || line[8] != ' ') {
            *error = n >= 5 && memcmp(line, "HTTP/", 5) == 0 ? "HttpParserError" : "HttpParserError";
            return -1;
        }
        if (!(line[9] >= '0' && line[9] <= '9' && line[10] >= '0' && line[10] <= '9' && line[11] >= '0' &&
              line[11] <= '9') || (n > 12 && line[12] != ' ')) {
            *error = "HttpParserInvalidStatusError";
            return -1;
        }
        p->minor = line[7] - '0';
        p->status = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
        p->state = H_HEADERS;
        return 0;
    }
    const char *colon = memchr(line, ':', n);
    if (!colon || colon == line) { *error = "HttpParserError"; return -1; }
    size_t name_len = (size_t)(colon - line);
    const char *value = colon + 1;
    size_t value_len = n - name_len - 1;
    while (value_len && (*value == ' ' || *value == '\t')) { value++; value_len--; }
    while (value_len && (value[value_len - 1] == ' ' || value[value_len - 1] == '\t')) value_len--;
    if (name_len == 14 && ci_prefix(line, name_len, "content-length")) {
        long long v = 0;
        if (!value_len) { *error = "HttpParserError"; return -1; }
        for (size_t i = 0; i < value_len; i++) {
            if (value[i] < '0' || value[i] > '9' || v > (LLONG_MAX - 9) / 10) {
                *error = "HttpParserError"; return -1;
            }
            v = v * 10 + (value[i] - '0');
        }
        if (p->length >= 0 && p->length != v) { *error = "HttpParserError"; return -1; }
        p->length = v;
    } else if (name_len == 17 && ci_prefix(line, name_len, "transfer-encoding")) {
        if (ci_contains(value, value_len, "chunked")) p->chunked = 1;
    } else if (name_len == 10 && ci_prefix(line, name_len, "connection")) {
        if (ci_contains(value, value_len, "close")) p->conn_close = 1;
        if (ci_contains(value, value_len, "keep-alive")) p->conn_keepalive = 1;
    } else if (name_len == 6 && c->look_headers && !e->have_server && ci_prefix(line, name_len, "server")) {
        size_t m = value_len < sizeof e->server_software - 1 ? value_len : sizeof e->server_software - 1;
        memcpy(e->server_software, value, m);
        e->server_software[m] = 0;
        e->have_server = 1;
    }
    return 0;
}

static int should_keep_alive(Parser *p) {
    if (p->state == B_EOF) return 0;
    if (p->minor >= 1) return !p->conn_close;
    return p->conn_keepalive && !p->conn_close;
}

static int framed(Parser *p) { return p->length >= 0 || p->chunked; }

static void end_of_head(Conn *c) {
    Parser *p = &c->p;
    if (message_has_no_body(p)) { p->state = M_DONE; return; }
    if (p->chunked) { p->state = B_CHUNK_SIZE; return; }
    if (p->length >= 0) { p->left = p->length; p->state = p->length ? B_LENGTH : M_DONE; return; }
    p->state = B_EOF;
}

static int line_append(Parser *p, const char *data, size_t n) {
    if (p->line_len + n > p->line_cap) {
        size_t cap = p->line_cap ? p->line_cap : 256;
        while (cap < p->line_len + n) cap *= 2;
        char *line = realloc(p->line, cap);
        if (!line) return -1;
        p->line = line; p->line_cap = cap;
    }
    memcpy(p->line + p->line_len, data, n);
    p->line_len += n;
    return 0;
}

static int parse(Engine *e, Conn *c, const char *data, size_t n, size_t *used, const char **error) {
    Parser *p = &c->p;
    size_t i = 0;
    while (i < n) {
        switch (p->state) {
        case H_STATUS: case H_HEADERS: case B_CHUNK_SIZE: case B_CHUNK_CRLF: case B_TRAILERS: {
            const char *nl = memchr(data + i, '\n', n - i);
            size_t take = nl ? (size_t)(nl - (data + i)) + 1 : n - i;
            p->head_len += take;
            if (p->head_len > MAX_HEAD) { *error = "HttpParserError"; return -1; }
            if (!nl) { if (line_append(p, data + i, take) < 0) { *error = "MemoryError"; return -1; } i += take; break; }
            const char *line; size_t len;
            if (p->line_len) {
                if (line_append(p, data + i, take) < 0) { *error = "MemoryError"; return -1; }
                line = p->line; len = p->line_len;
            } else { line = data + i; len = take; }
            i += take;
            p->line_len = 0;
            /* A chunk's framing line is bounded on its own: a body of many small chunks is no long head. */
            if (p->state == B_CHUNK_SIZE || p->state == B_CHUNK_CRLF) p->head_len = 0;
            len--;                                    /* '\n' */
            if (len && line[len - 1] == '\r') len--;
            if (p->state == B_CHUNK_CRLF) {
                if (len) { *error = "HttpParserError"; return -1; }
                p->state = B_CHUNK_SIZE;
            } else if (p->state == B_CHUNK_SIZE) {
                long long v = 0; size_t k = 0;
                for (; k < len; k++) {
                    char ch = line[k]; int d;
                    if (ch >= '0' && ch <= '9') d = ch - '0';
                    else if (ch >= 'a' && ch <= 'f') d = ch - 'a' + 10;
                    else if (ch >= 'A' && ch <= 'F') d = ch - 'A' + 10;
                    else break;
                    if (v > (LLONG_MAX >> 4)) { *error = "HttpParserError"; return -1; }
                    v = v * 16 + d;
                }
                if (k == 0 || (k < len && line[k] != ';' && line[k] != ' ' && line[k] != '\t')) {
                    *error = "HttpParserError"; return -1;
                }
                if (v == 0) p->state = B_TRAILERS;
                else { p->left = v; p->state = B_CHUNK_DATA; }
            } else if (p->state == B_TRAILERS) {
                if (!len) { p->state = M_DONE; }
            } else if (!len) {
                if (p->state == H_STATUS) { *error = "HttpParserError"; return -1; }
                p->head_len = 0;
                end_of_head(c);
            } else if (head_line(e, c, line, len, error) < 0) {
                return -1;
            }
            break;
        }
        case B_LENGTH: case B_CHUNK_DATA: {
            size_t take = (size_t)((long long)(n - i) < p->left ? (long long)(n - i) : p->left);
            c->body_bytes += take; p->left -= take; i += take;
            if (!p->left) p->state = p->state == B_LENGTH ? M_DONE : B_CHUNK_CRLF;
            break;
        }
        case B_EOF:
            c->body_bytes += n - i; i = n;
            break;
        case M_DONE:
            break;
        }
        if (p->state == M_DONE) { *used = i; return 1; }
    }
    *used = i;
    return 0;
}

/* ---- requests ------------------------------------------------------------------------------ */

static void record(Engine *e, Conn *c, long long done) {
    add_sample(e, P_CONNECT, c->connected - c->start);
    add_sample(e, P_WAITING, c->first_byte - c->written);
    add_sample(e, P_PROCESSING, done - c->connected);
    add_sample(e, P_TOTAL, done - c->start);
    if (c->served == 1) add_sample(e, P_TCP, c->tcp_done - c->start);
    e->complete++;
    e->last_progress = done;
    e->total_bytes += c->received;
    e->html_bytes += c->body_bytes;
    int status = c->p.status;
    if (status >= 0 && status < 1000) e->status_counts[status]++;
    if (!(status >= 200 && status < 300)) e->non_2xx++;
    if (!e->have_document_length) { e->have_document_length = 1; e->document_length = c->body_bytes; }
    else if (c->body_bytes != e->document_length) { e->failed_length++; e->failed++; }
    if (c->keep_alive && e->keepalive) e->keepalive_requests++;
    e->finished++;
    e->last_event = done;
}

/* Send the rest of the request. 1 = all written, 0 = waits for writable, -1 = failed (counted). */
static int write_request(Engine *e, Conn *c) {
    const char *data = e->request + c->pending;
    Py_ssize_t left = e->request_len - (Py_ssize_t)c->pending;
    while (left > 0) {
        ssize_t sent;
        if (c->ssl) {
            errno = 0;
            int r = SSL_write(c->ssl, data, (int)left);
            if (r <= 0) {
                int saved = errno;
                int err = SSL_get_error(c->ssl, r);
                if (err == SSL_ERROR_WANT_WRITE || err == SSL_ERROR_WANT_READ) { ERR_clear_error(); sent = 0; goto wait; }
                SslFailure f;
                ssl_failure(c->ssl, r, 0, saved, &f);
                e->write_errors++;
                fail_conn(e, c, COL_RECEIVE, "receive: ", f.cls);
                return -1;
            }
            sent = r;
        } else {
            sent = send(c->fd, data, (size_t)left, MSG_NOSIGNAL);
            if (sent < 0) {
                if (errno == EAGAIN) { sent = 0; goto wait; }
                e->write_errors++;
                fail_conn(e, c, COL_RECEIVE, "receive: ", errno_class(errno));
                return -1;
            }
        }
        c->pending += (size_t)sent; data += sent; left -= sent;
    }
    c->pending = 0;
    return 1;
wait:
    c->state = SENDING;
    watch(e, c, EPOLLOUT, 0);
    return 0;
}

static void send_request(Engine *e, Conn *c, long long start, long long connected) {
    c->start = start; c->connected = connected;
    c->deadline = start + e->timeout_ns;
    c->state = RECEIVING;
    c->pending = 0;
    if (write_request(e, c) <= 0) return;
    c->written = now_ns();
    watch(e, c, c->ssl ? EPOLLIN : (EPOLLIN | EPOLLRDHUP), 0);
}

static void message_complete(Engine *e, Conn *c) {
    long long done = now_ns();
    c->complete = 1;
    c->keep_alive = should_keep_alive(&c->p);
    c->served++;
    e->headers_seen = 1;
    record(e, c, done);
    if (c->keep_alive && e->keepalive && !e->stopping && e->reserved < e->requests) {
        e->reserved++;
        c->look_headers = 0;
        long long now = now_ns();
        reset_response(c);
        c->start = c->connected = now;
        c->deadline = now + e->timeout_ns;
        c->pending = 0;
        if (write_request(e, c) <= 0) return;
        c->written = now_ns();
    } else if (c->keep_alive) {
        close_conn(e, c);
        slot_freed(e);
    } else {
        /* The server closes: wait for its FIN (bounded) so that TIME_WAIT stays on its side, like ab. */
        c->state = DRAINING;
        c->deadline = now_ns() + e->drain_grace_ns;
    }
}

static void end_of_stream(Engine *e, Conn *c) {
    if (c->p.status && !c->complete && !framed(&c->p) &&
        (c->p.state == H_HEADERS || c->p.state == B_EOF)) {
        c->p.state = B_EOF;
        uint32_t generation = c->generation;
        message_complete(e, c);  /* a body delimited by the connection's end */
        if (!same(c, generation)) return;
    }
    if (c->state == DRAINING) { close_conn(e, c); slot_freed(e); return; }
    if (c->served && c->received == 0) {
        /* The server closed an idle kept-alive connection: not the request's fault; retry, as ab does. */
        close_conn(e, c);
        e->reserved--;
        slot_freed(e);
        return;
    }
    fail_conn(e, c, COL_RECEIVE, "receive: ", "closed by the server");
}

/* Bytes arrived for the response in flight (or after it). */
static void feed(Engine *e, Conn *c, const char *data, size_t n) {
    uint32_t generation = c->generation;
    if (c->state == DRAINING) return;  /* bytes after a complete "Connection: close" response */
    if (!c->first_byte) c->first_byte = now_ns();
    c->received += (long long)n;
    while (n) {
        size_t used = 0;
        const char *error = NULL;
        int r = parse(e, c, data, n, &used, &error);
        if (r < 0) {
            char what[160];
            snprintf(what, sizeof what, "unparsable response (%s)", error);
            fail_conn(e, c, COL_EXCEPTIONS, "exception: ", what);
            return;
        }
        if (r == 0) return;
        message_complete(e, c);
        if (!same(c, generation)) return;
        data += used; n -= used;
        if (c->state == DRAINING && n) {
            /* Bytes past the end of a response after which the server closes: llhttp (the Python
             * engine's parser) refuses them, so the response is complete and also an exception. */
            fail_conn(e, c, COL_EXCEPTIONS, "exception: ", "unparsable response (HttpParserError)");
            return;
        }
        if (c->state != RECEIVING && c->state != SENDING) return;
        if (n && !c->first_byte) c->first_byte = now_ns();
    }
}

static void receive(Engine *e, Conn *c, uint32_t events) {
    uint32_t generation = c->generation;
    for (;;) {
        ssize_t n;
        if (c->ssl) {
            errno = 0;
            int r = SSL_read(c->ssl, e->readbuf, READ_SIZE);
            if (r <= 0) {
                int saved = errno;
                int err = SSL_get_error(c->ssl, r);
                if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) { ERR_clear_error(); return; }
                SslFailure f;
                ssl_failure(c->ssl, r, 0, saved, &f);
                if (err == SSL_ERROR_ZERO_RETURN || f.is_eof) { end_of_stream(e, c); return; }
                if (c->state == DRAINING) { close_conn(e, c); slot_freed(e); return; }
                if (f.sys_errno) fail_conn(e, c, COL_RECEIVE, "receive: ", f.cls);
                else fail_conn(e, c, COL_RECEIVE, "receive: TLS: ", f.cls);
                return;
            }
            n = r;
        } else {
            n = recv(c->fd, e->readbuf, READ_SIZE, 0);
            if (n < 0) {
                if (errno == EAGAIN || errno == EINTR) return;
                if (c->state == DRAINING) { close_conn(e, c); slot_freed(e); return; }
                fail_conn(e, c, COL_RECEIVE, "receive: ", errno_class(errno));
                return;
            }
            if (n == 0) { end_of_stream(e, c); return; }
        }
        feed(e, c, e->readbuf, (size_t)n);
        if (!same(c, generation)) return;
        if (!c->ssl) {
            if ((events & EPOLLRDHUP) && c->state == DRAINING) {
                /* The response is complete and the server's FIN came with it (plain HTTP). */
                close_conn(e, c);
                slot_freed(e);
            }
            return;
        }
        /* TLS reads ahead: records already read from the socket give no epoll event. */
        if (!SSL_has_pending(c->ssl)) return;
    }
}

/* ---- connecting ---------------------------------------------------------------------------- */

static void handshake_done(Engine *e, Conn *c) {
    add_sample(e, P_TLS, c->tls_done - c->tcp_done);
    if (!e->protocol[0]) {
        const char *version = SSL_get_version(c->ssl);
        const char *cipher = SSL_CIPHER_get_name(SSL_get_current_cipher(c->ssl));
        snprintf(e->protocol, sizeof e->protocol, "%s", version ? version : "");
        snprintf(e->cipher, sizeof e->cipher, "%s", cipher ? cipher : "");
    }
}

/* 1 = done (request sent or waiting), 0 = waits, -1 = failed: failure set in *column / error. */
static int continue_handshake(Engine *e, Conn *c, int first, char *error, size_t size) {
    errno = 0;
    int r = SSL_do_handshake(c->ssl);
    if (r != 1) {
        int saved = errno;
        int err = SSL_get_error(c->ssl, r);
        if (err == SSL_ERROR_WANT_READ) { watch(e, c, EPOLLIN, first); return 0; }
        if (err == SSL_ERROR_WANT_WRITE) { watch(e, c, EPOLLOUT, first); return 0; }
        SslFailure f;
        ssl_failure(c->ssl, r, r, saved, &f);
        if (f.sys_errno && connect_errno(f.sys_errno)) snprintf(error, size, "connect: %s", f.cls);
        else if (f.is_eof || err == SSL_ERROR_ZERO_RETURN || (f.sys_errno && connection_errno(f.sys_errno)))
            snprintf(error, size, "connect: TLS handshake: connection closed (%s)", f.cls);
        else if (f.reason[0]) snprintf(error, size, "connect: TLS handshake: %s (%s)", f.cls, f.reason);
        else snprintf(error, size, "connect: TLS handshake: %s", f.cls);
        return -1;
    }
    c->tls_done = now_ns();
    handshake_done(e, c);
    if (first) watch(e, c, EPOLLIN, 1);
    send_request(e, c, c->start, c->tls_done);
    return 1;
}

static int start_tls(Engine *e, Conn *c, char *error, size_t size) {
    c->ssl = SSL_new(e->ctx);
    if (!c->ssl || !SSL_set_fd(c->ssl, c->fd)) {
        ERR_clear_error();
        snprintf(error, size, "connect: TLS handshake: SSLError");
        return -1;
    }
    SSL_set_connect_state(c->ssl);
    SSL_set_mode(c->ssl, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    /* CPython's contexts set RELEASE_BUFFERS (memory for idle sockets); a load connection reads and
     * writes on every request, where it is a free and a malloc of both record buffers each time. */
    SSL_clear_mode(c->ssl, SSL_MODE_RELEASE_BUFFERS);
    /* One recv per TLS record, not two (header, then body); the loop drains what was read ahead. */
    SSL_set_read_ahead(c->ssl, 1);
    if (e->server_name) SSL_set_tlsext_host_name(c->ssl, e->server_name);
    if (e->verify_host) {  /* SSLContext.check_hostname, as CPython's _ssl configures it */
        X509_VERIFY_PARAM *param = SSL_get0_param(c->ssl);
        int ok = e->verify_ip ? X509_VERIFY_PARAM_set1_ip_asc(param, e->verify_host)
                              : X509_VERIFY_PARAM_set1_host(param, e->verify_host, 0);
        if (!ok) {
            ERR_clear_error();
            snprintf(error, size, "connect: TLS handshake: SSLError");
            return -1;
        }
    }
    c->state = HANDSHAKING;
    return 0;
}

/* TCP is up (or refused) after the first write found it not ready. 0 ok, -1 failed (error set). */
static int connected(Engine *e, Conn *c, uint32_t events, char *error, size_t size) {
    c->tcp_done = now_ns();
    if (events & (EPOLLERR | EPOLLHUP)) {
        int code = 0; socklen_t len = sizeof code;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &code, &len);
        if (code) { snprintf(error, size, "connect: %s", errno_class(code)); return -1; }
    }
    if (!e->ctx) { send_request(e, c, c->start, c->tcp_done); return 0; }
    if (start_tls(e, c, error, size) < 0) return -1;
    return continue_handshake(e, c, 0, error, size) < 0 ? -1 : 0;
}

/* The first write right after connect(): plain HTTP's request, or a zero-length probe before TLS.
 * 1 = sent, 0 = TCP not up (waits for writable), -1 = failed (error set). */
static int write_first(Engine *e, Conn *c, char *error, size_t size, int *receive_failure) {
    Py_ssize_t len = e->ctx ? 0 : e->request_len;
    ssize_t sent = send(c->fd, e->request, (size_t)len, MSG_NOSIGNAL);
    if (sent < 0) {
        if (errno == EAGAIN) { c->state = CONNECTING; watch(e, c, EPOLLOUT, 1); return 0; }
        if (connect_errno(errno) || !len) { snprintf(error, size, "connect: %s", errno_class(errno)); return -1; }
        e->write_errors++;
        *receive_failure = 1;
        snprintf(error, size, "receive: %s", errno_class(errno));
        return -1;
    }
    if (sent < len) { c->pending = (size_t)sent; c->state = SENDING; watch(e, c, EPOLLOUT, 1); return 0; }
    return 1;
}

static Conn *new_conn(Engine *e) {
    Conn *c = e->free_conns[--e->nfree];
    char *line = c->p.line; size_t cap = c->p.line_cap;
    uint32_t index = c->index, generation = c->generation + 1;
    memset(c, 0, sizeof *c);
    c->p.line = line; c->p.line_cap = cap;
    c->index = index; c->generation = generation;  /* events of the slot's previous connection are stale */
    c->fd = -1;
    c->look_headers = !e->headers_seen;
    reset_response(c);
    c->state = CONNECTING;
    return c;
}

/* Open the connection and start the exchange: 0, or -1 with the failure counted (no slot taken). */
static int connect_one(Engine *e) {
    Conn *c = new_conn(e);
    char error[256];
    int column = COL_CONNECT, receive_failure = 0;
    c->fd = socket(e->family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0) {
        snprintf(error, sizeof error, "connect: %s", errno_class(errno));
        c->state = CLOSED; e->free_conns[e->nfree++] = c;
        count_failure(e, column, error);
        return -1;
    }
    if (e->ctx) { int one = 1; setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); }
    c->start = now_ns();
    c->deadline = c->start + e->timeout_ns;
    if (connect(c->fd, (struct sockaddr *)&e->addr, e->addrlen) < 0 && errno != EINPROGRESS) {
        snprintf(error, sizeof error, "connect: %s", errno_class(errno));
        goto failed;
    }
    c->tcp_done = now_ns();
    if (!e->ctx) {
        c->state = RECEIVING;
        c->connected = c->tcp_done;
        int r = write_first(e, c, error, sizeof error, &receive_failure);
        if (r < 0) goto failed;
        if (r == 1) { c->written = now_ns(); watch(e, c, EPOLLIN | EPOLLRDHUP, 1); }
        return 0;
    }
    int r = write_first(e, c, error, sizeof error, &receive_failure);
    if (r < 0) goto failed;
    if (r == 0) return 0;
    if (start_tls(e, c, error, sizeof error) < 0) goto failed;
    if (continue_handshake(e, c, 1, error, sizeof error) < 0) goto failed;
    return 0;
failed:
    close_conn(e, c);
    count_failure(e, receive_failure ? COL_RECEIVE : column, error);
    return -1;
}

/* ---- the loop ------------------------------------------------------------------------------ */

/* Closed loop: reserve a request before connecting, so the last round never over-opens. */
static void open_next(Engine *e) {
    while (!e->stopping && e->reserved < e->requests && e->nfree > 0) {
        e->reserved++;
        long long start = now_ns();
        if (!e->first_start) e->first_start = start;
        e->connections_opened++;
        e->in_flight++;
        if (connect_one(e) == 0) return;
        e->in_flight--;
    }
}

static void ready(Engine *e, Conn *c, uint32_t events) {
    char error[256];
    switch (c->state) {
    case RECEIVING: case DRAINING:
        receive(e, c, events);
        return;
    case CONNECTING:
        if (connected(e, c, events, error, sizeof error) < 0) goto failed;
        return;
    case HANDSHAKING:
        if (continue_handshake(e, c, 0, error, sizeof error) < 0) goto failed;
        return;
    case SENDING:
        c->state = RECEIVING;
        if (write_request(e, c) == 1) {
            c->written = now_ns();
            watch(e, c, c->ssl ? EPOLLIN : (EPOLLIN | EPOLLRDHUP), 0);
        }
        return;
    default:
        return;
    }
failed:
    close_conn(e, c);
    count_failure(e, COL_CONNECT, error);
    slot_freed(e);
}

static void stop(Engine *e, long long now, int cancelled) {
    e->stopping = 1;
    e->cancelled = e->cancelled || cancelled;
    if (now > e->last_event) e->last_event = now;
    for (long long i = 0; i < e->nconns; i++) abort_conn(e, &e->conns[i]);
}

/* Call a Python callable with the GIL; a raised exception ends the run and is re-raised by run(). */
static PyObject *call_back(Engine *e, PyObject *fn, PyObject *args) {
    PyEval_RestoreThread(e->save);
    PyObject *r = args ? PyObject_CallObject(fn, args) : NULL;
    Py_XDECREF(args);
    if (!r) e->failed_callback = 1;
    e->save = PyEval_SaveThread();
    return r;
}

static PyObject *progress_args(Engine *e) {
    PyEval_RestoreThread(e->save);
    PyObject *args = Py_BuildValue("(LL)", e->finished, e->requests);
    e->save = PyEval_SaveThread();
    return args;
}

static void tick(Engine *e, long long now, long long *last_cancel, long long *last_progress_call) {
    for (long long i = 0; i < e->nconns; i++) {
        Conn *c = &e->conns[i];
        if (c->state == CLOSED || now <= c->deadline) continue;
        if (c->state == DRAINING) {
            close_conn(e, c);  /* no FIN within the grace: the response was complete, move on */
            slot_freed(e);
        } else {
            e->timeouts++;
            fail_conn(e, c, COL_EXCEPTIONS, "", "timeout");
        }
    }
    if (e->limit_ns && now >= e->limit_ns && !e->stopping) stop(e, now, 0);
    if (e->stall_ns && now - e->last_progress >= e->stall_ns && !e->stopping) {
        e->stalled = 1;
        stop(e, now, 0);
    }
    if (e->cancel != Py_None && now - *last_cancel >= CANCEL_POLL_NS) {
        *last_cancel = now;
        PyEval_RestoreThread(e->save);
        PyObject *r = PyObject_CallNoArgs(e->cancel);
        int yes = r ? PyObject_IsTrue(r) : -1;
        Py_XDECREF(r);
        if (yes < 0) e->failed_callback = 1;
        e->save = PyEval_SaveThread();
        if (yes > 0) stop(e, now, 1);
    }
    if (e->on_progress != Py_None && now - *last_progress_call >= PROGRESS_EVERY_NS) {
        *last_progress_call = now;
        Py_XDECREF(call_back(e, e->on_progress, progress_args(e)));
    }
}

static void loop(Engine *e) {
    struct epoll_event events[256];
    long long last_cancel = -CANCEL_POLL_NS * 4, last_progress_call = -PROGRESS_EVERY_NS * 4;
    e->last_progress = now_ns();
    long long started = e->last_progress;
    if (e->limit_ns) e->limit_ns += started;
    for (long long i = 0; i < e->concurrency && !e->stopping; i++) open_next(e);
    long long next_tick = now_ns() + TICK_NS;
    while (e->in_flight > 0 && !e->failed_callback) {
        int n = epoll_wait(e->ep, events, 256, (int)(TICK_NS / 1000000));
        for (int i = 0; i < n; i++) {
            uint64_t key = events[i].data.u64;
            Conn *c = &e->conns[key & 0xffffffffu];
            if (c->generation != (uint32_t)(key >> 32) || c->state == CLOSED) continue;
            ready(e, c, events[i].events);
        }
        long long now = now_ns();
        if (now >= next_tick) {
            next_tick = now + TICK_NS;
            tick(e, now, &last_cancel, &last_progress_call);
        }
    }
    for (long long i = 0; i < e->nconns; i++) abort_conn(e, &e->conns[i]);
    if (!e->failed_callback && e->on_progress != Py_None)
        Py_XDECREF(call_back(e, e->on_progress, progress_args(e)));
    for (int phase = 0; phase < NPHASES && !e->failed_callback; phase++) flush_phase(e, phase);
}

/* ---- the module ---------------------------------------------------------------------------- */

/* PySSLContext: PyObject_HEAD, then its SSL_CTX* (as workers/load/tls13.py reads it; the caller
 * checks the layout; fast_engine.openssl_not_shared first checks both run on one OpenSSL). */
typedef struct { PyObject_HEAD SSL_CTX *ctx; } SSLContextHead;

static void free_engine(Engine *e) {
    for (long long i = 0; i < e->nconns; i++) free(e->conns[i].p.line);
    free(e->conns); free(e->free_conns);
    for (int i = 0; i < NPHASES; i++) free(e->bufs[i].v);
    for (int i = 0; i < e->nerrors; i++) free(e->error_names[i]);
    free(e->error_names); free(e->error_counts);
    if (e->ep >= 0) close(e->ep);
    if (e->ctx) SSL_CTX_free(e->ctx);
    free(e);
}

static PyObject *result_dict(Engine *e) {
    PyObject *statuses = PyDict_New(), *errors = PyDict_New();
    if (!statuses || !errors) goto fail;
    for (int s = 0; s < 1000; s++) {
        if (!e->status_counts[s]) continue;
        PyObject *k = PyLong_FromLong(s), *v = PyLong_FromLongLong(e->status_counts[s]);
        int bad = !k || !v || PyDict_SetItem(statuses, k, v) < 0;
        Py_XDECREF(k); Py_XDECREF(v);
        if (bad) goto fail;
    }
    for (int i = 0; i < e->nerrors; i++) {
        PyObject *v = PyLong_FromLongLong(e->error_counts[i]);
        int bad = !v || PyDict_SetItemString(errors, e->error_names[i], v) < 0;
        Py_XDECREF(v);
        if (bad) goto fail;
    }
    PyObject *document_length = e->have_document_length ? PyLong_FromLongLong(e->document_length) : Py_NewRef(Py_None);
    PyObject *server = e->have_server ? PyUnicode_DecodeLatin1(e->server_software, strlen(e->server_software), NULL)
                                      : Py_NewRef(Py_None);
    PyObject *r = Py_BuildValue(
        "{s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:N,s:N,s:N,s:N,s:s,s:s,s:L,s:L,s:O,s:O,s:L}",
        "complete", e->complete, "failed", e->failed, "failed_connect", e->failed_connect,
        "failed_receive", e->failed_receive, "failed_length", e->failed_length,
        "failed_exceptions", e->failed_exceptions, "timeouts", e->timeouts, "non_2xx", e->non_2xx,
        "keepalive_requests", e->keepalive_requests, "connections_opened", e->connections_opened,
        "total_bytes", e->total_bytes, "html_bytes", e->html_bytes, "write_errors", e->write_errors,
        "status_codes", statuses, "errors", errors, "document_length", document_length, "server_software", server,
        "protocol", e->protocol, "cipher", e->cipher, "first_start_ns", e->first_start, "last_event_ns", e->last_event,
        "cancelled", e->cancelled ? Py_True : Py_False, "stalled", e->stalled ? Py_True : Py_False,
        "finished", e->finished);
    return r;
fail:
    Py_XDECREF(statuses); Py_XDECREF(errors);
    return NULL;
}

static int parse_address(Engine *e, const char *ip, int port) {
    memset(&e->addr, 0, sizeof e->addr);
    if (strchr(ip, ':')) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&e->addr;
        a->sin6_family = AF_INET6; a->sin6_port = htons((uint16_t)port);
        if (inet_pton(AF_INET6, ip, &a->sin6_addr) != 1) return -1;
        e->addrlen = sizeof *a; e->family = AF_INET6;
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)&e->addr;
        a->sin_family = AF_INET; a->sin_port = htons((uint16_t)port);
        if (inet_pton(AF_INET, ip, &a->sin_addr) != 1) return -1;
        e->addrlen = sizeof *a; e->family = AF_INET;
    }
    return 0;
}

static PyObject *fastloop_run(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"ip", "port", "request", "requests", "concurrency", "keepalive", "timeout_s",
                            "time_limit_s", "stall_s", "ssl_context", "server_name", "verify_host", "verify_ip",
                            "cancel", "on_progress", "sink", NULL};
    const char *ip, *server_name = NULL, *verify_host = NULL, *request;
    int verify_ip = 0;
    Py_ssize_t request_len;
    int port, keepalive;
    long long requests, concurrency;
    double timeout_s, time_limit_s, stall_s;
    PyObject *ssl_context, *cancel, *on_progress, *sink;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "siy#LLpdddOzzpOOO", names, &ip, &port, &request,
                                     &request_len, &requests, &concurrency, &keepalive, &timeout_s, &time_limit_s,
                                     &stall_s, &ssl_context, &server_name, &verify_host, &verify_ip, &cancel,
                                     &on_progress, &sink))
        return NULL;
    if (requests < 1 || concurrency < 1 || concurrency > requests || concurrency > 0x7fffffff || timeout_s <= 0) {
        PyErr_SetString(PyExc_ValueError, "requests, concurrency or timeout out of range");
        return NULL;
    }
    Engine *e = calloc(1, sizeof *e);
    if (!e) return PyErr_NoMemory();
    e->ep = -1;
    if (parse_address(e, ip, port) < 0) {
        free_engine(e);
        PyErr_Format(PyExc_ValueError, "not an IP address: %s", ip);
        return NULL;
    }
    if (ssl_context != Py_None) {
        /* Prove the layout before using the pointer: its options must be the context's. */
        PyObject *options = PyObject_GetAttrString(ssl_context, "options");
        unsigned long long expected = options ? PyLong_AsUnsignedLongLong(options) : 0;
        Py_XDECREF(options);
        SSL_CTX *ctx = ((SSLContextHead *)ssl_context)->ctx;
        if (PyErr_Occurred() || !ctx || (unsigned long long)SSL_CTX_get_options(ctx) != expected) {
            free_engine(e);
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "ssl_context: not an SSLContext this module can use");
            return NULL;
        }
        e->ctx = ctx;
        SSL_CTX_up_ref(e->ctx);
    }
    e->request = request; e->request_len = request_len;
    e->requests = requests; e->concurrency = concurrency; e->keepalive = keepalive;
    e->timeout_ns = (long long)(timeout_s * 1e9);
    e->limit_ns = time_limit_s > 0 ? (long long)(time_limit_s * 1e9) : 0;
    e->stall_ns = stall_s > 0 ? (long long)(stall_s * 1e9) : 0;
    e->drain_grace_ns = e->timeout_ns < DRAIN_GRACE_NS ? e->timeout_ns : DRAIN_GRACE_NS;
    e->server_name = server_name;
    e->verify_host = verify_host; e->verify_ip = verify_ip;
    e->cancel = cancel; e->on_progress = on_progress; e->sink = sink;
    e->nconns = concurrency;
    e->conns = calloc((size_t)concurrency, sizeof(Conn));
    e->free_conns = calloc((size_t)concurrency, sizeof(Conn *));
    for (int i = 0; i < NPHASES; i++) e->bufs[i].v = malloc(CHUNK * sizeof(int32_t));
    e->ep = epoll_create1(EPOLL_CLOEXEC);
    int ok = e->conns && e->free_conns && e->ep >= 0;
    for (int i = 0; i < NPHASES; i++) ok = ok && e->bufs[i].v;
    if (!ok) {
        free_engine(e);
        return PyErr_NoMemory();
    }
    for (long long i = concurrency - 1; i >= 0; i--) {
        e->conns[i].state = CLOSED; e->conns[i].fd = -1; e->conns[i].index = (uint32_t)i;
        e->free_conns[e->nfree++] = &e->conns[i];
    }
    /* The request bytes and server name live in Python objects held by the caller for the call. */
    e->save = PyEval_SaveThread();
    loop(e);
    PyEval_RestoreThread(e->save);
    PyObject *result = e->failed_callback ? NULL : result_dict(e);
    free_engine(e);
    return result;
}

/* sort_int32(buffer): sort a writable int32 buffer (array('i')) in place, ascending. The exact samples
 * of a run (up to MAX_EXACT_SAMPLES per phase) are sorted once here for the report's median and
 * percentiles and the histograms' runs of equal values: Python's list.sort compares int objects, ~10x
 * slower. LSD radix, two 16-bit passes, the sign bit flipped so negatives sort first. */
static PyObject *fastloop_sort_int32(PyObject *self, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_WRITABLE | PyBUF_FORMAT) < 0) return NULL;
    if (view.itemsize != 4 || !view.format || (strcmp(view.format, "i") != 0 && strcmp(view.format, "=i") != 0 &&
                                                strcmp(view.format, "<i") != 0)) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_TypeError, "sort_int32: needs a writable buffer of int32 (array('i'))");
        return NULL;
    }
    Py_ssize_t n = view.len / 4;
    uint32_t *v = view.buf, *tmp = n > 1 ? malloc((size_t)n * sizeof *tmp) : NULL;
    size_t *count = n > 1 ? calloc(65536, sizeof *count) : NULL;
    if (n > 1 && (!tmp || !count)) {
        free(tmp); free(count); PyBuffer_Release(&view);
        return PyErr_NoMemory();
    }
    if (n > 1) {
        Py_BEGIN_ALLOW_THREADS
        uint32_t *from = v, *to = tmp;
        for (int shift = 0; shift < 32; shift += 16) {
            memset(count, 0, 65536 * sizeof *count);
            for (Py_ssize_t i = 0; i < n; i++) count[((from[i] ^ 0x80000000u) >> shift) & 0xffff]++;
            size_t sum = 0;
            for (int k = 0; k < 65536; k++) { size_t c = count[k]; count[k] = sum; sum += c; }
            for (Py_ssize_t i = 0; i < n; i++) to[count[((from[i] ^ 0x80000000u) >> shift) & 0xffff]++] = from[i];
            uint32_t *t = from; from = to; to = t;
        }
        /* two passes: the sorted data is back in v */
        Py_END_ALLOW_THREADS
    }
    free(tmp); free(count);
    PyBuffer_Release(&view);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"run", (PyCFunction)(void (*)(void))fastloop_run, METH_VARARGS | METH_KEYWORDS,
     "Run one closed-loop load spec in C (see workers/load/fast_engine.py)."},
    {"sort_int32", fastloop_sort_int32, METH_O, "Sort a writable int32 buffer (array('i')) in place."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fastloop", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__fastloop(void) {
    PyObject *m = PyModule_Create(&module);
    if (m && PyModule_AddIntConstant(m, "CHUNK", CHUNK) < 0) { Py_DECREF(m); return NULL; }
    if (m && PyModule_AddIntConstant(m, "OPENSSL_VERSION_NUMBER", (long)OpenSSL_version_num()) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
