/*
 * c_responder: the floor for the wrk benchmarks. A single-threaded epoll
 * (Linux) or kqueue (macOS) server that does no HTTP parsing: it counts
 * "\r\n\r\n"-terminated heads in what it reads and answers each with a fixed
 * 200 "Testolope". A head whose request line contains
 * "/testolope-nokeepalive" gets "Connection: close" and the connection is
 * closed after the write.
 *
 *   cc -O2 -o c_responder benches/c_responder.c && ./c_responder 9998
 *
 * Connections are watched edge-triggered (EPOLLET, EV_CLEAR), the listener
 * level-triggered. -DUSE_KQUEUE selects kqueue elsewhere too (e.g. Linux
 * with libkqueue's <sys/event.h>, -lkqueue), to try that path without a Mac.
 *
 * Assumptions (fine for wrk, not for the world): requests have no body, a
 * head is at most BUF bytes, and the socket takes each batch of responses in
 * one write (no EAGAIN handling on write).
 */
#define _GNU_SOURCE
#if defined(__APPLE__) && !defined(USE_KQUEUE)
#define USE_KQUEUE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef USE_KQUEUE
#include <sys/event.h>
#else
#include <sys/epoll.h>
#endif
#include <sys/socket.h>
#include <unistd.h>

#define BUF 16384
#define MAXFD 65536

static const char KEEP[] = "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n"
                           "Content-Type: text/plain\r\n\r\nTestolope";
static const char CLOSE[] = "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n"
                            "Content-Type: text/plain\r\nConnection: close\r\n\r\nTestolope";

struct conn {
    char *buf; /* unparsed bytes of an unfinished head */
    size_t len;
};
static struct conn conns[MAXFD];
static char out[64 * sizeof CLOSE];

/* The readiness set: a new one, and adding a descriptor to it. */
static int poller(void) {
#ifdef USE_KQUEUE
    return kqueue();
#else
    return epoll_create1(0);
#endif
}

static void watch(int ep, int fd, int edge) {
#ifdef USE_KQUEUE
    struct kevent ev;
    EV_SET(&ev, fd, EVFILT_READ, EV_ADD | (edge ? EV_CLEAR : 0), 0, 0, NULL);
    kevent(ep, &ev, 1, NULL, 0, NULL);
#else
    struct epoll_event ev = {.events = edge ? EPOLLIN | EPOLLRDHUP | EPOLLET : EPOLLIN, .data.fd = fd};
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
#endif
}

/* Waits for readiness; stores the ready descriptors in fds (at most MAXEV). */
#define MAXEV 256
static int wait_ready(int ep, int *fds) {
#ifdef USE_KQUEUE
    struct kevent events[MAXEV];
    int n = kevent(ep, NULL, 0, events, MAXEV, NULL);
    for (int i = 0; i < n; i++)
        fds[i] = (int)events[i].ident;
#else
    struct epoll_event events[MAXEV];
    int n = epoll_wait(ep, events, MAXEV, -1);
    for (int i = 0; i < n; i++)
        fds[i] = events[i].data.fd;
#endif
    return n;
}

/* A non-blocking socket or accepted connection: in one call where the
 * system has SOCK_NONBLOCK and accept4 (Linux), else with fcntl (macOS). */
static int tcp_socket(void) {
#ifdef SOCK_NONBLOCK
    return socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
#else
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd >= 0)
        fcntl(fd, F_SETFL, O_NONBLOCK);
    return fd;
#endif
}

static int accept_conn(int lfd) {
#ifdef SOCK_NONBLOCK
    return accept4(lfd, NULL, NULL, SOCK_NONBLOCK);
#else
    int fd = accept(lfd, NULL, NULL);
    if (fd >= 0)
        fcntl(fd, F_SETFL, O_NONBLOCK);
    return fd;
#endif
}

static void drop_conn(int ep, int fd) {
#ifdef USE_KQUEUE
    struct kevent ev;
    EV_SET(&ev, fd, EVFILT_READ, EV_DELETE, 0, 0, NULL);
    kevent(ep, &ev, 1, NULL, 0, NULL);
#else
    epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
#endif
    close(fd);
    free(conns[fd].buf);
    conns[fd].buf = NULL;
    conns[fd].len = 0;
}

/* Reads everything there is, answers every complete head. */
static void serve(int ep, int fd) {
    struct conn *c = &conns[fd];
    if (!c->buf && !(c->buf = malloc(BUF))) {
        drop_conn(ep, fd);
        return;
    }
    for (;;) {
        ssize_t n = read(fd, c->buf + c->len, BUF - c->len);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
            drop_conn(ep, fd);
            return;
        }
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return; /* EAGAIN: wait for the next edge */
        }
        c->len += (size_t)n;
        size_t start = 0, olen = 0;
        int closing = 0;
        char *end;
        while (!closing &&
               (end = memmem(c->buf + start, c->len - start, "\r\n\r\n", 4))) {
            char *head = c->buf + start;
            char *eol = memchr(head, '\n', (size_t)(end - head) + 1);
            closing = memmem(head, (size_t)(eol - head), "/testolope-nokeepalive", 22) != NULL;
            const char *r = closing ? CLOSE : KEEP;
            size_t rlen = closing ? sizeof CLOSE - 1 : sizeof KEEP - 1;
            if (olen + rlen > sizeof out) {
                if (write(fd, out, olen) < 0) {
                    drop_conn(ep, fd);
                    return;
                }
                olen = 0;
            }
            memcpy(out + olen, r, rlen);
            olen += rlen;
            start = (size_t)(end + 4 - c->buf);
        }
        if (olen && write(fd, out, olen) < 0)
            closing = 1;
        if (closing) {
            drop_conn(ep, fd);
            return;
        }
        memmove(c->buf, c->buf + start, c->len - start);
        c->len -= start;
        if (c->len == BUF) { /* head too large */
            drop_conn(ep, fd);
            return;
        }
    }
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s PORT\n", argv[0]);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    int lfd = tcp_socket();
    int one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[1]))};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(lfd, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(lfd, 4096) < 0) {
        perror("bind/listen");
        return 1;
    }
    int ep = poller();
    watch(ep, lfd, 0);
    fprintf(stderr, "c_responder listening on 127.0.0.1:%s\n", argv[1]);
    int ready[MAXEV];
    for (;;) {
        int n = wait_ready(ep, ready);
        if (n < 0 && errno != EINTR) {
            perror("wait for readiness");
            return 1;
        }
        for (int i = 0; i < n; i++) {
            int fd = ready[i];
            if (fd != lfd) {
                serve(ep, fd);
                continue;
            }
            int cfd;
            while ((cfd = accept_conn(lfd)) >= 0) {
                if (cfd >= MAXFD) {
                    close(cfd);
                    continue;
                }
                setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                watch(ep, cfd, 1);
            }
        }
    }
}
