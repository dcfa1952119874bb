/* The WAN lab's delay line, its hot loop in C (tests/support/wanline.py sets the link up, then execs this).
 *
 * Same link as wanline.py's Python loop (see its docstring), for the common case of a fixed delay (no
 * jitter, no bandwidth cap): every packet read from the TUN device is rewritten statelessly (RFC 1624
 * checksum deltas), held RTT/2 and written back, order kept. The Python loop spent ~16 us of user CPU per
 * packet (~0.1 s per audit at 50 ms RTT); this one ~3. What is left is system time: a write into the TUN
 * device runs the kernel's TCP receive path in the writer, work the endpoints pay on loopback anyway.
 * Control is the same: each `stats` line on stdin is answered by one JSON line of
 * counters on stdout; EOF on stdin ends the process.
 *
 *   wanline-c TUN_FD ONE_WAY_S CLIENT FAR ALIAS BACKEND
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define READ_BATCH 256
#define LATENESS_SAMPLES 200000
#define MAX_LEAD_S 300e-6
#define MAX_PACKET 65536

typedef struct Packet {
    double release;
    size_t len;
    struct Packet *next;
    unsigned char data[];
} Packet;

typedef struct {
    unsigned char match[8], replace[8];
    uint32_t delta;
    Packet *head, *tail;
    double last_release;
    long packets, bytes, dropped, max_fifo, queued;
} Direction;

static double lateness[LATENESS_SAMPLES];
static long late_count, ignored;
static double lead, one_way;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint32_t ones_sum(const unsigned char *p, int n) {
    uint32_t sum = 0;
    for (int i = 0; i < n; i += 2) sum += (p[i] << 8) | p[i + 1];
    return sum;
}

static uint32_t checksum_delta(const unsigned char *old, const unsigned char *new_) {
    uint32_t sum = ones_sum(new_, 8);
    for (int i = 0; i < 8; i += 2) sum += 0xFFFF - ((old[i] << 8) | old[i + 1]);
    return sum;
}

static void patch_checksum(unsigned char *p, int offset, uint32_t delta) {
    uint32_t total = (0xFFFF - ((p[offset] << 8) | p[offset + 1])) + delta;
    while (total >> 16) total = (total & 0xFFFF) + (total >> 16);
    total = 0xFFFF - total;
    p[offset] = total >> 8;
    p[offset + 1] = total & 0xFF;
}

static void admit(Direction *d, const unsigned char *data, size_t len, double arrived) {
    Packet *packet = malloc(sizeof(Packet) + len);
    if (!packet) { d->dropped++; return; }
    memcpy(packet->data, data, len);
    memcpy(packet->data + 12, d->replace, 8);
    int header = (packet->data[0] & 0x0F) * 4;
    patch_checksum(packet->data, 10, d->delta);
    patch_checksum(packet->data, header + 16, d->delta);
    double release = arrived + one_way;
    if (release < d->last_release) release = d->last_release;
    d->last_release = release;
    packet->release = release;
    packet->len = len;
    packet->next = NULL;
    if (d->tail) d->tail->next = packet; else d->head = packet;
    d->tail = packet;
    d->packets++;
    d->bytes += len;
    if (++d->queued > d->max_fifo) d->max_fifo = d->queued;
}

static void read_packets(int fd, Direction *dirs, double arrived) {
    static unsigned char buffer[MAX_PACKET];
    for (int i = 0; i < READ_BATCH; i++) {
        ssize_t n = read(fd, buffer, sizeof buffer);
        if (n < 0) return;
        if (n < 40 || (buffer[0] >> 4) != 4 || buffer[9] != 6) { ignored++; continue; }
        Direction *d = NULL;
        for (int k = 0; k < 2; k++)
            if (memcmp(buffer + 12, dirs[k].match, 8) == 0) d = &dirs[k];
        if (!d) { ignored++; continue; }
        admit(d, buffer, (size_t)n, arrived);
    }
}

static void write_due(int fd, Direction *d) {
    double now = now_s(), due = now + lead;
    while (d->head && d->head->release <= due) {
        Packet *packet = d->head;
        d->head = packet->next;
        if (!d->head) d->tail = NULL;
        d->queued--;
        if (write(fd, packet->data, packet->len) < 0) d->dropped++;
        else lateness[late_count++ % LATENESS_SAMPLES] = (now - packet->release) * 1e6;
        free(packet);
    }
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void print_direction(const char *name, Direction *d) {
    printf("\"%s\": {\"packets\": %ld, \"bytes\": %ld, \"dropped\": %ld, \"max_fifo\": %ld, \"queued\": %ld}",
           name, d->packets, d->bytes, d->dropped, d->max_fifo, d->queued);
}

static void print_stats(Direction *dirs) {
    long count = late_count < LATENESS_SAMPLES ? late_count : LATENESS_SAMPLES;
    static double sorted[LATENESS_SAMPLES];
    memcpy(sorted, lateness, count * sizeof(double));
    qsort(sorted, count, sizeof(double), compare);
    printf("{");
    print_direction("to_server", &dirs[0]);
    printf(", ");
    print_direction("to_client", &dirs[1]);
    printf(", \"ignored\": %ld, \"late_us\": ", ignored);
    if (count) {
        long p50 = (long)(0.5 * count), p99 = (long)(0.99 * count);
        if (p50 > count - 1) p50 = count - 1;
        if (p99 > count - 1) p99 = count - 1;
        printf("{\"p50\": %.1f, \"p99\": %.1f, \"max\": %.1f, \"samples\": %ld}", sorted[p50], sorted[p99],
               sorted[count - 1], count);
    } else {
        printf("{\"p50\": null, \"p99\": null, \"max\": null, \"samples\": 0}");
    }
    printf("}\n");
    fflush(stdout);
}

static int answer(Direction *dirs) {
    char data[4096];
    ssize_t n = read(0, data, sizeof data);
    if (n <= 0) return 0;
    for (ssize_t i = 0; i < n; i++)
        if (data[i] == '\n') print_stats(dirs);
    return 1;
}

static void parse_address(const char *text, unsigned char *out) {
    if (inet_pton(AF_INET, text, out) != 1) { fprintf(stderr, "bad address %s\n", text); exit(2); }
}

int main(int argc, char **argv) {
    if (argc != 7) { fprintf(stderr, "usage: %s TUN_FD ONE_WAY_S CLIENT FAR ALIAS BACKEND\n", argv[0]); return 2; }
    int fd = atoi(argv[1]);
    one_way = atof(argv[2]);
    unsigned char client[4], far[4], alias[4], back[4];
    parse_address(argv[3], client);
    parse_address(argv[4], far);
    parse_address(argv[5], alias);
    parse_address(argv[6], back);
    Direction dirs[2];
    memset(dirs, 0, sizeof dirs);
    /* to the server: client -> far becomes alias -> backend; to the client: backend -> alias becomes far -> client */
    memcpy(dirs[0].match, client, 4); memcpy(dirs[0].match + 4, far, 4);
    memcpy(dirs[0].replace, alias, 4); memcpy(dirs[0].replace + 4, back, 4);
    memcpy(dirs[1].match, back, 4); memcpy(dirs[1].match + 4, alias, 4);
    memcpy(dirs[1].replace, far, 4); memcpy(dirs[1].replace + 4, client, 4);
    for (int k = 0; k < 2; k++) dirs[k].delta = checksum_delta(dirs[k].match, dirs[k].replace);
    struct pollfd watched[2] = {{.fd = fd, .events = POLLIN}, {.fd = 0, .events = POLLIN}};
    for (;;) {
        double wake = -1;
        for (int k = 0; k < 2; k++)
            if (dirs[k].head && (wake < 0 || dirs[k].head->release < wake)) wake = dirs[k].head->release;
        double timeout = -1;
        struct timespec ts, *tsp = NULL;
        if (wake >= 0) {
            wake -= lead;
            timeout = wake - now_s();
            if (timeout < 0) timeout = 0;
            ts.tv_sec = (time_t)timeout;
            ts.tv_nsec = (long)((timeout - ts.tv_sec) * 1e9);
            tsp = &ts;
        }
        int ready = ppoll(watched, 2, tsp, NULL);
        if (ready < 0 && errno != EINTR) return 1;
        if (ready == 0 && timeout > 0) {  /* a timed-out wait woke `late` after it was asked to: slow average */
            double late = now_s() - wake;
            lead += 0.05 * (late - lead);
            if (lead < 0) lead = 0;
            if (lead > MAX_LEAD_S) lead = MAX_LEAD_S;
        }
        if (ready > 0 && (watched[0].revents & POLLIN)) {
            /* woken from a wait, a packet is read `lead` after it arrived: date it back (as wanline.py) */
            double arrived = now_s() - ((timeout < 0 || timeout > lead) ? lead : 0.0);
            read_packets(fd, dirs, arrived);
        }
        write_due(fd, &dirs[0]);
        write_due(fd, &dirs[1]);
        if (ready > 0 && (watched[1].revents & (POLLIN | POLLHUP)) && !answer(dirs)) return 0;
    }
}
