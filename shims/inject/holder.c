/*
 * The injector's descriptor holder: close-hold='s copies, one process for
 * all of them.
 *
 * A child's copy of a descriptor is a second reference to the same open
 * file description, and so is a descriptor passed over a Unix socket
 * (SCM_RIGHTS, unix(7)): a flock or an OFD lock, a listening socket, a bound
 * name, a pipe's write end, a file open for writing (what makes exec fail
 * with ETXTBSY) all live on while the holder keeps its copy, and while the
 * copy is in flight, since a queued message holds its own reference. A
 * POSIX record lock belongs to a process and is carried by neither. So the
 * window a fork opens by chance is built here at the cost of one sendmsg
 * per close (microseconds) instead of a fork of the whole test process
 * (a fraction of a millisecond and more, and a copy of every other
 * descriptor for a moment).
 *
 * 1. holder_start (the injector's constructor, one thread) makes a
 *    socketpair and forks the holder. The holder closes every descriptor
 *    but its end and the report (so it keeps no pipe the audit reads to
 *    end-of-file), raises its RLIMIT_NOFILE to the hard limit and loops.
 * 2. At each held close the host sends one byte carrying the descriptor
 *    (the sham: the same byte, no descriptor). The holder receives it and
 *    closes it `hold` later (each copy in the order it came: every hold is
 *    as long).
 * 3. At the host's exit holder_stop shuts the socket down for writing (the
 *    open socket, not one descriptor: a forked copy of the host still
 *    holding it does not delay the end-of-file); the holder closes every
 *    copy it holds, writes what it lost to the report, exits and is reaped.
 *    A host killed outright closes its end with its last descriptor; the
 *    holder, in the host's process group, is killed with it by the audit.
 *
 * Bounds are the system's only, each counted: a send that finds the buffer
 * full waits for room at most HOLDER_WAIT_NS, then goes through unheld
 * (`full`); ETOOMANYREFS (`refs`); a copy the holder could not take in
 * (MSG_CTRUNC: out of descriptors) is reported by the holder as it happens
 * (`unheld HOST lost`).
 *
 * References:
 * - unix(7), SCM_RIGHTS and ETOOMANYREFS:
 *   https://man7.org/linux/man-pages/man7/unix.7.html
 * - cmsg(3): https://man7.org/linux/man-pages/man3/cmsg.3.html
 * - shutdown(2): https://man7.org/linux/man-pages/man2/shutdown.2.html
 */
#define _GNU_SOURCE
#include "holder.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifndef __APPLE__
#include <sys/syscall.h>
#endif

#define NS_PER_S 1000000000ULL
/* How long a send waits at most for room in a full socket buffer. */
#define HOLDER_WAIT_NS (50ULL * 1000 * 1000)
/* The send buffer asked for: room for thousands of queued copies, so a
 * burst of closes waits on the holder only when it is not scheduled. */
#define HOLDER_SNDBUF (8 << 20)
/* How long the host's exit waits at most for the holder to end. */
#define HOLDER_EXIT_NS (5ULL * NS_PER_S)

const char *const UNHELD_IDS[UNHELD_COUNT] = {"full", "refs", "gone", "other", "loop"};

static struct {
    int sock;  /* the host's end; -1 before the start */
    pid_t pid; /* the holder */
} HD = {-1, 0};

static uint64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

/* The copies held, oldest first: a ring of descriptors and their ends. */
struct ring {
    int *fd;
    uint64_t *until;
    size_t head, len, cap;
};

static int ring_push(struct ring *r, int fd, uint64_t until) {
    if (r->len == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 1024;
        int *fds = malloc(cap * sizeof *fds);
        uint64_t *untils = malloc(cap * sizeof *untils);
        if (!fds || !untils) {
            free(fds);
            free(untils);
            return -1;
        }
        for (size_t i = 0; i < r->len; i++) {
            fds[i] = r->fd[(r->head + i) % r->cap];
            untils[i] = r->until[(r->head + i) % r->cap];
        }
        free(r->fd);
        free(r->until);
        r->fd = fds;
        r->until = untils;
        r->head = 0;
        r->cap = cap;
    }
    size_t at = (r->head + r->len) % r->cap;
    r->fd[at] = fd;
    r->until[at] = until;
    r->len++;
    return 0;
}

/* Closes the copies whose hold has ended (all of them with `all`). */
static void ring_expire(struct ring *r, uint64_t now, int all) {
    while (r->len > 0 && (all || r->until[r->head] <= now)) {
        close(r->fd[r->head]);
        r->head = (r->head + 1) % r->cap;
        r->len--;
    }
}

/* Appends `unheld HOST lost` for a copy the holder could not keep. */
static void report_lost(int report_fd, pid_t host) {
    if (report_fd < 0)
        return;
    char line[64];
    int n = snprintf(line, sizeof line, "unheld %d lost\n", (int)host);
    if (n > 0) {
        ssize_t w = write(report_fd, line, (size_t)n);
        (void)w;
    }
}

/* The holder's loop; never returns. It is a fork of a process with one
 * thread, so it may allocate. */
static void holder_main(int sock, uint64_t hold_ns, int report_fd) {
    /* Every signal the host's terminal or a test could send is left at its
     * default: the audit ends a run by killing its process group. */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    fdw_keep_only(sock, report_fd);
    struct rlimit lim;
    if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
        lim.rlim_cur = lim.rlim_max;
        setrlimit(RLIMIT_NOFILE, &lim);
    }
    struct ring held = {0};
    pid_t host = getppid();
    for (;;) {
        int timeout = -1;
        if (held.len > 0) {
            uint64_t now = mono_ns(), until = held.until[held.head];
            timeout = until <= now ? 0 : (int)((until - now + 999999) / 1000000);
        }
        struct pollfd p = {.fd = sock, .events = POLLIN};
        int ready = poll(&p, 1, timeout);
        ring_expire(&held, mono_ns(), 0);
        if (ready <= 0)
            continue;
        int eof = 0;
        for (;;) {
            char bytes[64];
            union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof(int))];
            } c;
            struct iovec iov = {bytes, sizeof bytes};
            struct msghdr m = {.msg_iov = &iov,
                               .msg_iovlen = 1,
                               .msg_control = c.buf,
                               .msg_controllen = sizeof c.buf};
            ssize_t n = recvmsg(sock, &m, MSG_DONTWAIT);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                eof = n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
                break;
            }
            if (m.msg_flags & MSG_CTRUNC)
                report_lost(report_fd, host);
            uint64_t until = mono_ns() + hold_ns;
            for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h)) {
                if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS)
                    continue;
                size_t count = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                for (size_t i = 0; i < count; i++) {
                    int fd;
                    memcpy(&fd, CMSG_DATA(h) + i * sizeof(int), sizeof fd);
                    if (ring_push(&held, fd, until) != 0) {
                        close(fd);
                        report_lost(report_fd, host);
                    }
                }
            }
        }
        if (eof)
            break;
    }
    ring_expire(&held, 0, 1);
    _exit(0);
}

int holder_start(uint64_t hold_ns, int report_fd) {
    int sv[2];
#ifdef __APPLE__
    /* No SOCK_CLOEXEC on macOS; one thread here, so no spawn comes between. */
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        return errno;
    fcntl(sv[0], F_SETFD, FD_CLOEXEC);
    fcntl(sv[1], F_SETFD, FD_CLOEXEC);
    int on = 1;
    setsockopt(sv[0], SOL_SOCKET, SO_NOSIGPIPE, &on, sizeof on);
#else
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return errno;
#endif
    int size = HOLDER_SNDBUF;
#ifdef SO_SNDBUFFORCE
    /* Past net.core.wmem_max where the process may (CAP_NET_ADMIN). */
    if (setsockopt(sv[0], SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof size) != 0)
#endif
        setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
#ifdef __APPLE__
    pid_t pid = fork();
#else
    /* A raw clone: no atfork handler of the host runs for the holder. */
    pid_t pid = (pid_t)syscall(SYS_clone, (long)SIGCHLD, 0L, 0L, 0L, 0L);
#endif
    if (pid == 0)
        holder_main(sv[1], hold_ns, report_fd);
    int e = errno;
    close(sv[1]);
    if (pid < 0) {
        close(sv[0]);
        return e;
    }
    HD.sock = sv[0];
    HD.pid = pid;
    return 0;
}

int holder_socket(void) { return HD.sock; }

int holder_send(int fd, int sham) {
    if (HD.sock < 0)
        return UNHELD_GONE;
    char byte = 'h';
    struct iovec iov = {&byte, 1};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } c;
    memset(&c, 0, sizeof c);
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
    if (!sham) {
        m.msg_control = c.buf;
        m.msg_controllen = sizeof c.buf;
        struct cmsghdr *h = CMSG_FIRSTHDR(&m);
        h->cmsg_level = SOL_SOCKET;
        h->cmsg_type = SCM_RIGHTS;
        h->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(h), &fd, sizeof fd);
    }
#ifdef MSG_NOSIGNAL
    int flags = MSG_DONTWAIT | MSG_NOSIGNAL;
#else
    int flags = MSG_DONTWAIT; /* SO_NOSIGPIPE is set */
#endif
    uint64_t deadline = 0;
    for (;;) {
        if (sendmsg(HD.sock, &m, flags) == 1)
            return -1;
        switch (errno) {
        case EINTR:
            continue;
        case EAGAIN:
#if EWOULDBLOCK != EAGAIN
        case EWOULDBLOCK:
#endif
        {
            uint64_t now = mono_ns();
            if (!deadline)
                deadline = now + HOLDER_WAIT_NS;
            if (now >= deadline)
                return UNHELD_FULL;
            struct pollfd p = {.fd = HD.sock, .events = POLLOUT};
            poll(&p, 1, (int)((deadline - now + 999999) / 1000000));
            continue;
        }
        case ETOOMANYREFS:
            return UNHELD_REFS;
        case EPIPE:
        case ECONNRESET:
            return UNHELD_GONE;
        default:
            return UNHELD_OTHER;
        }
    }
}

void holder_stop(void) {
    if (HD.sock < 0)
        return;
    shutdown(HD.sock, SHUT_WR);
    /* The holder's exit closes its end: end-of-file here. Bounded, so a
     * holder that cannot run (stopped) never hangs the host's exit. */
    uint64_t deadline = mono_ns() + HOLDER_EXIT_NS;
    for (;;) {
        char byte;
        uint64_t now = mono_ns();
        if (now >= deadline)
            break;
        struct pollfd p = {.fd = HD.sock, .events = POLLIN};
        if (poll(&p, 1, (int)((deadline - now) / 1000000 + 1)) <= 0)
            continue;
        ssize_t n = recv(HD.sock, &byte, 1, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK))
            break;
    }
    /* Reaped here if it has ended; killed first if not (a pid the host
     * reaped itself, ECHILD, is not ours to signal). */
    int status;
    pid_t r;
    while ((r = waitpid(HD.pid, &status, WNOHANG)) < 0 && errno == EINTR) {
    }
    if (r == 0) {
        kill(HD.pid, SIGKILL);
        while (waitpid(HD.pid, &status, 0) < 0 && errno == EINTR) {
        }
    }
    close(HD.sock);
    HD.sock = -1;
}
