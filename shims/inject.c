/*
 * fdwindow's fork-pressure co-tenant as a preload library: loaded into any
 * process (LD_PRELOAD on Linux, DYLD_INSERT_LIBRARIES on macOS), it runs the
 * spawn loop of fdwindow::pressure there, configured by FDWINDOW_PRESSURE in
 * the fdwindow::pressure::Spec syntax, e.g.
 *
 *   FDWINDOW_PRESSURE=threads=4,hold=1ms,path=fork ./my-tests
 *
 * with the library written out by fdwindow::preload::Library::INJECT (or by
 * `fdwindow stress`, which does it for you).
 *
 * 1. A constructor reads the variable; if it is unset or unparsable, or
 *    match= names another executable, it does nothing more (an unparsable
 *    spec says so on stderr, never stdout).
 * 2. It starts `threads` threads that block every signal (so the host's
 *    process-directed signals go to the host's own threads) and loop: take
 *    one of `max-alive` slots, start /usr/bin/true by fork+exec (sleeping
 *    `hold` between fork and exec) or posix_spawn, reap it, give the slot
 *    back, until stopped or `for` has passed. Every child gets an empty
 *    environment and /dev/null for stdio, so no child carries the preload or
 *    the variable: pressure never cascades.
 * 3. An atexit hook stops the threads and reaps their children, waiting at
 *    most the hold plus five seconds so a host's exit never hangs; in a
 *    forked copy of the host (which has none of the threads) it does nothing.
 *
 * A host that execs loses its pressure threads with its old image (exec ends
 * every other thread); a child they left in its hold becomes the new image's
 * child and exits within the hold. A host that ends by _exit skips step 3 the
 * same way.
 *
 * With FDWINDOW_PRESSURE_REPORT=FILE it appends lines `pid spawns elapsed_s
 * covered_s exe` for each pressured process as it goes: one when pressure
 * starts, one at most every REPORT_EVERY_NS from the spawning threads, and one
 * at exit. A reader keeps the last line per pid, so a run killed at a timeout
 * still shows it was pressured, for how long, and with how many spawns.
 *
 * Once pressure starts here, the process removes FDWINDOW_PRESSURE,
 * FDWINDOW_PRESSURE_REPORT and this library's entry in the preload variable
 * from its own environment, so the children it starts (an isolated test
 * process, a helper) start no pressure of their own. A process that match=
 * excludes changes nothing and passes all of them on.
 *
 * controller=PID@START names the controller (`fdwindow stress`, `fdwindow
 * audit`) by its pid and its start time as the kernel reports it (Linux:
 * /proc/PID/stat's starttime; macOS: proc_pidinfo's pbi_start). The process
 * that starts pressure watches that process from one more thread (a pidfd on
 * Linux, an EVFILT_PROC kqueue on macOS, both close-on-exec or not inherited;
 * the start time, checked after the watch is set, proves the pid was not
 * reused); when it ends (exited or killed), the spawning threads stop within
 * one hold, and a controller already gone starts no pressure. No descriptor
 * is passed down: processes that match= excludes hold nothing of the
 * controller's. Without controller=, `for` bounds the threads.
 *
 * drop=CLASS makes each fork+exec child close every descriptor of one class
 * right after the fork, before its hold (file, listener, bound, stream, dgram,
 * pipe, or all), classifying in the child itself: getdents64 on /proc/self/fd, fstat,
 * getsockopt(SO_TYPE) and getsockopt(SO_ACCEPTCONN) on Linux;
 * proc_pidinfo(PROC_PIDLISTFDS) and proc_pidfdinfo(PROC_PIDFDSOCKETINFO) on
 * macOS, whose getsockopt has no SO_ACCEPTCONN. All are system calls without
 * allocation or locks, safe between fork and exec. `fdwindow audit` uses drop=all
 * as the sham of its close-hold diagnosis and its load check
 * (children that keep nothing).
 *
 * This is C, not Rust, because every preload library fdwindow ships is built
 * the same way (build.rs, the cc crate): the parked-call interposer needs
 * variadic open/fcntl definitions that stable Rust cannot write.
 *
 * References:
 * - fork(2): https://man7.org/linux/man-pages/man2/fork.2.html
 * - signal-safety(7), the calls allowed between fork and exec:
 *   https://man7.org/linux/man-pages/man7/signal-safety.7.html
 * - posix_spawn(3): https://man7.org/linux/man-pages/man3/posix_spawn.3.html
 * - pthread_sigmask(3): "A new thread inherits a copy of its creator's
 *   signal mask." https://man7.org/linux/man-pages/man3/pthread_sigmask.3.html
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dlfcn.h>
#include <poll.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <unwind.h>

#include "inject/holder.h"
#ifdef __APPLE__
#include <libproc.h>
#include <mach-o/dyld.h>
#include <mach-o/loader.h>
#include <sys/event.h>
#include <sys/proc_info.h>
#else
#include <link.h>
#include <sys/syscall.h>
#endif

#define ENV_VAR "FDWINDOW_PRESSURE"
#define REPORT_VAR "FDWINDOW_PRESSURE_REPORT"
#define TRUE_PROGRAM "/usr/bin/true"
#define NS_PER_S 1000000000ULL
/* The longest hold or run time a spec accepts: a day. */
#define MAX_DURATION_NS (86400ULL * NS_PER_S)
/* How long a slot wait sleeps at most before it looks at the clock again. */
#define SLOT_WAIT_NS (100ULL * 1000 * 1000)
/* How often the spawning threads append a progress line to the report. */
#define REPORT_EVERY_NS (200ULL * 1000 * 1000)

enum spawn_path { PATH_FORK, PATH_SPAWN, PATH_MIX };
/* How close-hold= keeps its copies (hold-by=): passed to one holder process
 * (inject/holder.c), or a fork of the host per copy. */
enum hold_by { HOLD_BY_PASS, HOLD_BY_FORK };
/* The class of descriptor fork children close before their hold (drop=). */
enum drop_class {
    DROP_NONE,
    DROP_FILE,
    DROP_LISTENER,
    DROP_BOUND,
    DROP_STREAM,
    DROP_DGRAM,
    DROP_PIPE,
    DROP_ALL
};
/* The ids of the classes in spec strings, in enum order. */
static const char *const CLASS_IDS[] = {"none",  "file",  "listener", "bound",
                                        "stream", "dgram", "pipe",     "all"};
/* close-hold=: the closes of one second spend at most this long forking
 * their holders (each fork measured: a big process forks slower), so a test
 * that closes thousands of descriptors (a port scan) is slowed by at most
 * half of that second, never stalled, on any machine. */
#define CLOSE_HOLD_NS_PER_S (NS_PER_S / 2)

/* Addresses a close-site= filter names at most. */
#define MAX_SITES 16

struct spec {
    unsigned threads;
    uint64_t hold_ns;
    enum spawn_path path;
    unsigned max_alive;
    uint64_t for_ns;
    const char *match; /* NULL: any executable */
    enum drop_class drop;
    enum drop_class close_hold; /* DROP_NONE: no close interposition */
    enum hold_by hold_by;
    /* close-site=: hold only closes whose stack passes through one of these
     * addresses of the executable (its own addresses); none: every close. */
    uint64_t sites[MAX_SITES];
    unsigned nsites;
    pid_t ctl_pid;                /* the controller's pid, 0 for none */
    unsigned long long ctl_start; /* and its start time */
};

static struct {
    pthread_mutex_t mu;
    pthread_cond_t slot_freed;
    pthread_cond_t thread_ended;
    struct spec spec;
    int stop;
    unsigned alive;   /* children alive now, at most spec.max_alive */
    unsigned running; /* threads still looping */
    uint64_t spawns;  /* children started and reaped */
    unsigned inside;  /* threads with a child inside its window now */
    uint64_t since_ns, covered_ns, started_ns, deadline_ns;
    pid_t pid;
    int devnull;
    int active;
    char exe[PATH_MAX];
    pthread_t *threads;
    unsigned started_threads;
    int report_fd;      /* FDWINDOW_PRESSURE_REPORT, opened at start; -1 for none */
    int ctl_watch;      /* readable once the controller ends; -1: poll its start time */
    uint64_t reported_ns; /* when the last progress line was written */
} S = {
    .mu = PTHREAD_MUTEX_INITIALIZER,
    .devnull = -1,
    .report_fd = -1,
    .ctl_watch = -1,
};

static char *const CHILD_ARGV[] = {(char *)TRUE_PROGRAM, NULL};
static char *const CHILD_ENVP[] = {NULL};

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

/* close(2) for this library's own descriptors, never held by close-hold=:
 * on Linux the system call itself (async-signal-safe, and it bypasses the
 * interposed close below); on macOS a call from this image is not
 * interposed, so it is libc's. */
static int sys_close(int fd) {
#ifdef __APPLE__
    return close(fd);
#else
    return (int)syscall(SYS_close, fd);
#endif
}

/* Waits on `cond` (S.mu held) for at most `ns`; spurious wakeups are fine,
 * every caller loops on its condition. */
static void wait_at_most(pthread_cond_t *cond, uint64_t ns) {
#ifdef __APPLE__
    struct timespec rel = {(time_t)(ns / NS_PER_S), (long)(ns % NS_PER_S)};
    pthread_cond_timedwait_relative_np(cond, &S.mu, &rel);
#else
    /* The conds use CLOCK_MONOTONIC (set in init_conds). */
    uint64_t at = now_ns() + ns;
    struct timespec abs = {(time_t)(at / NS_PER_S), (long)(at % NS_PER_S)};
    pthread_cond_timedwait(cond, &S.mu, &abs);
#endif
}

static int init_conds(void) {
    pthread_condattr_t attr;
    int e = pthread_condattr_init(&attr);
    if (e)
        return e;
#ifndef __APPLE__
    e = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
#endif
    if (!e)
        e = pthread_cond_init(&S.slot_freed, &attr);
    if (!e)
        e = pthread_cond_init(&S.thread_ended, &attr);
    pthread_condattr_destroy(&attr);
    return e;
}

/* ---- the spec (same syntax and messages as fdwindow::pressure::Spec) ---- */

static char spec_error[512];

static int fail(const char *fmt, const char *a, const char *b) {
    snprintf(spec_error, sizeof spec_error, fmt, a, b);
    return -1;
}

static int parse_count(const char *key, const char *v, unsigned *out) {
    size_t n = strlen(v);
    unsigned value = 0;
    if (n == 0 || n > 4)
        return fail("%s=%s: expected a number from 1 to 1024", key, v);
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)v[i]))
            return fail("%s=%s: expected a number from 1 to 1024", key, v);
        value = value * 10 + (unsigned)(v[i] - '0');
    }
    if (value < 1 || value > 1024)
        return fail("%s=%s: expected a number from 1 to 1024", key, v);
    *out = value;
    return 0;
}

/* `0`, `250us`, `20ms`, `2s`, at most a day. */
static int parse_duration(const char *text, uint64_t *out) {
    const char *bad = "\"%s\": expected a duration such as 0, 500us, 20ms or 2s%s";
    if (strcmp(text, "0") == 0) {
        *out = 0;
        return 0;
    }
    const char *p = text;
    uint64_t n = 0;
    while (isdigit((unsigned char)*p)) {
        uint64_t d = (uint64_t)(*p - '0');
        if (n > (UINT64_MAX - d) / 10)
            return fail(bad, text, ""); /* does not fit a u64 */
        n = n * 10 + d;
        p++;
    }
    if (p == text || *p == '\0')
        return fail(bad, text, "");
    uint64_t unit;
    if (strcmp(p, "us") == 0)
        unit = 1000;
    else if (strcmp(p, "ms") == 0)
        unit = 1000 * 1000;
    else if (strcmp(p, "s") == 0)
        unit = NS_PER_S;
    else
        return fail(bad, text, "");
    if (n > MAX_DURATION_NS / unit)
        return fail("\"%s\": at most a day (86400s)%s", text, "");
    *out = n * unit;
    return 0;
}

/* `PID@START`: two decimal numbers, PID in 1..2^31-1, START below 2^63. */
static int parse_controller(const char *value, unsigned long long *pid,
                            unsigned long long *start) {
    unsigned long long *out = pid;
    size_t digits = 0;
    *pid = *start = 0;
    for (const char *c = value;; c++) {
        if (isdigit((unsigned char)*c) && digits < 18) {
            *out = *out * 10 + (unsigned)(*c - '0');
            digits++;
        } else if (*c == '@' && out == pid && digits > 0) {
            out = start;
            digits = 0;
        } else if (*c == '\0' && out == start && digits > 0 && *pid > 0 && *pid <= INT32_MAX) {
            return 0;
        } else {
            return fail("controller=%s: expected PID@START%s", value, "");
        }
    }
}

/* close-site=HEX+HEX…: at most MAX_SITES addresses, none zero. */
static int parse_sites(const char *value, struct spec *spec) {
    spec->nsites = 0;
    const char *p = value;
    for (;;) {
        char *end;
        errno = 0;
        unsigned long long a = strtoull(p, &end, 16);
        if (end == p || errno || a == 0 || (*end && *end != '+'))
            return fail("close-site=%s: expected hexadecimal addresses joined by +%s", value, "");
        if (spec->nsites == MAX_SITES)
            return fail("close-site=%s: at most 16 addresses%s", value, "");
        spec->sites[spec->nsites++] = a;
        if (!*end)
            return 0;
        p = end + 1;
    }
}

/* Parses `text` (modified in place) into `spec`; -1 with spec_error set. */
static int parse_spec(char *text, struct spec *spec) {
    *spec = (struct spec){
        .threads = 4,
        .hold_ns = 1000 * 1000,
        .path = PATH_MIX,
        .max_alive = 64,
        .for_ns = 600 * NS_PER_S,
        .match = NULL,
        .drop = DROP_NONE,
        .close_hold = DROP_NONE,
        .hold_by = HOLD_BY_PASS,
        .ctl_pid = 0,
        .ctl_start = 0,
    };
    char *save = NULL;
    for (char *pair = strtok_r(text, ",", &save); pair; pair = strtok_r(NULL, ",", &save)) {
        while (isspace((unsigned char)*pair))
            pair++;
        size_t len = strlen(pair);
        while (len > 0 && isspace((unsigned char)pair[len - 1]))
            pair[--len] = '\0';
        if (len == 0)
            continue;
        char *eq = strchr(pair, '=');
        if (!eq)
            return fail("\"%s\" is not key=value%s", pair, "");
        *eq = '\0';
        const char *key = pair, *value = eq + 1;
        int r;
        if (strcmp(key, "threads") == 0)
            r = parse_count(key, value, &spec->threads);
        else if (strcmp(key, "max-alive") == 0)
            r = parse_count(key, value, &spec->max_alive);
        else if (strcmp(key, "hold") == 0)
            r = parse_duration(value, &spec->hold_ns);
        else if (strcmp(key, "for") == 0)
            r = parse_duration(value, &spec->for_ns);
        else if (strcmp(key, "path") == 0) {
            r = 0;
            if (strcmp(value, "fork") == 0 || strcmp(value, "fork-exec") == 0)
                spec->path = PATH_FORK;
            else if (strcmp(value, "spawn") == 0 || strcmp(value, "posix-spawn") == 0)
                spec->path = PATH_SPAWN;
            else if (strcmp(value, "mix") == 0)
                spec->path = PATH_MIX;
            else
                r = fail("path=%s: expected fork, spawn or mix%s", value, "");
        } else if (strcmp(key, "match") == 0 && *value)
            r = (spec->match = value, 0);
        else if (strcmp(key, "drop") == 0 || strcmp(key, "close-hold") == 0) {
            enum drop_class *out = key[0] == 'd' ? &spec->drop : &spec->close_hold;
            r = fail("%s=%s: expected none, file, listener, bound, stream, dgram, pipe or all",
                     key, value);
            for (int i = 0; i <= DROP_ALL; i++)
                if (strcmp(value, CLASS_IDS[i]) == 0)
                    r = (*out = (enum drop_class)i, 0);
        } else if (strcmp(key, "hold-by") == 0) {
            r = 0;
            if (strcmp(value, "pass") == 0)
                spec->hold_by = HOLD_BY_PASS;
            else if (strcmp(value, "fork") == 0)
                spec->hold_by = HOLD_BY_FORK;
            else
                r = fail("hold-by=%s: expected pass or fork%s", value, "");
        } else if (strcmp(key, "close-site") == 0) {
            r = parse_sites(value, spec);
        } else if (strcmp(key, "controller") == 0) {
            unsigned long long pid = 0, start = 0;
            r = parse_controller(value, &pid, &start);
            if (!r)
                spec->ctl_pid = (pid_t)pid, spec->ctl_start = start;
        } else
            r = fail("unknown key \"%s\"; keys: threads, hold, path, max-alive, for, match, "
                     "drop, close-hold, hold-by, close-site, controller%s",
                     key, "");
        if (r)
            return r;
    }
    if (spec->hold_ns >= spec->for_ns)
        return fail("hold must be shorter than for%s%s", "", "");
    return 0;
}

/* A glob with `*` (any run of characters) and nothing else; the same
 * algorithm as fdwindow::pressure::glob_match. */
static int glob_match(const char *pattern, const char *text) {
    const char *star = strchr(pattern, '*');
    size_t first = star ? (size_t)(star - pattern) : strlen(pattern);
    if (strncmp(pattern, text, first) != 0)
        return 0;
    const char *rest = text + first;
    if (!star)
        return *rest == '\0'; /* no `*`: an exact match */
    const char *part = star + 1;
    for (;;) {
        const char *next = strchr(part, '*');
        if (!next) {
            /* The last part: the text must end with it. */
            size_t plen = strlen(part), rlen = strlen(rest);
            return rlen >= plen && strcmp(rest + rlen - plen, part) == 0;
        }
        size_t plen = (size_t)(next - part);
        const char *found = NULL;
        for (const char *c = rest; strlen(c) >= plen; c++) {
            if (strncmp(c, part, plen) == 0) {
                found = c;
                break;
            }
            if (*c == '\0')
                break;
        }
        if (!found)
            return 0;
        rest = found + plen;
        part = next + 1;
    }
}

/* The file name of this process's executable, or "" if unknown. */
static void exe_name(char *out, size_t size) {
    char path[PATH_MAX];
    out[0] = '\0';
#ifdef __APPLE__
    uint32_t len = sizeof path;
    if (_NSGetExecutablePath(path, &len) != 0)
        return;
#else
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    if (n < 0)
        return;
    path[n] = '\0';
#endif
    const char *slash = strrchr(path, '/');
    snprintf(out, size, "%s", slash ? slash + 1 : path);
}

/* ---- the spawn loop ---- */

/* Takes one of max_alive slots; 0 when stopped or past the deadline. */
static int take_slot(void) {
    pthread_mutex_lock(&S.mu);
    for (;;) {
        uint64_t now = now_ns();
        if (S.stop || now >= S.deadline_ns) {
            pthread_mutex_unlock(&S.mu);
            return 0;
        }
        if (S.alive < S.spec.max_alive) {
            S.alive++;
            pthread_mutex_unlock(&S.mu);
            return 1;
        }
        uint64_t left = S.deadline_ns - now;
        wait_at_most(&S.slot_freed, left < SLOT_WAIT_NS ? left : SLOT_WAIT_NS);
    }
}

static void enter_window(void) {
    pthread_mutex_lock(&S.mu);
    if (S.inside++ == 0)
        S.since_ns = now_ns();
    pthread_mutex_unlock(&S.mu);
}

static void leave_window(void) {
    pthread_mutex_lock(&S.mu);
    if (--S.inside == 0)
        S.covered_ns += now_ns() - S.since_ns;
    pthread_mutex_unlock(&S.mu);
}

static int cloexec_pipe(int fds[2]) {
#ifdef __APPLE__
    /* macOS has no pipe2: the two-step creation is harmless here, since a
     * pressure child that catches these ends execs /usr/bin/true at once. */
    if (pipe(fds) != 0)
        return errno;
    fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    fcntl(fds[1], F_SETFD, FD_CLOEXEC);
    return 0;
#else
    return pipe2(fds, O_CLOEXEC) == 0 ? 0 : errno;
#endif
}

/* ---- drop=: a fork child closes one class of descriptor ---- */

/* Whether the socket `fd` has a local name another socket could want: an
 * inet port other than 0, a Unix path or abstract name. Async-signal-safe. */
static int has_name(int fd) {
    struct sockaddr_storage a;
    socklen_t len = sizeof a;
    memset(&a, 0, sizeof a);
    if (getsockname(fd, (struct sockaddr *)&a, &len) != 0)
        return 0;
    switch (a.ss_family) {
    case AF_INET:
        return ((struct sockaddr_in *)&a)->sin_port != 0;
    case AF_INET6:
        return ((struct sockaddr_in6 *)&a)->sin6_port != 0;
    case AF_UNIX: {
        /* An unnamed Unix socket's name is the family alone (or, on macOS,
         * an empty path); Linux's abstract names start with a NUL byte. */
        socklen_t base = (socklen_t)offsetof(struct sockaddr_un, sun_path);
        const char *path = ((struct sockaddr_un *)&a)->sun_path;
#ifdef __APPLE__
        return len > base && path[0] != '\0';
#else
        return len > base && (path[0] != '\0' || len > base + 1);
#endif
    }
    default:
        return 0;
    }
}

/* The class of `fd`, or DROP_NONE for anything else (terminals, directories,
 * event descriptors). Async-signal-safe: fstat, getsockopt, getsockname,
 * getpeername, proc_pidfdinfo.
 *
 * A socket's class is what a held copy of it keeps alive: a listening socket
 * keeps accepting (listener); a connected stream keeps the connection open, so
 * the peer sees no FIN (stream); an unconnected, unlistened stream socket or
 * any datagram socket with a name keeps that name taken, a port or a Unix
 * path or abstract name (bound). A connected datagram socket keeps its port
 * too, so it is bound as well: for datagrams only the name matters, there is
 * no end-of-stream a copy could delay. dgram is left for unnamed datagram
 * sockets (a socketpair's). */
static enum drop_class class_of(int fd) {
    struct stat st;
    if (fstat(fd, &st) != 0)
        return DROP_NONE;
    if (S_ISREG(st.st_mode))
        return DROP_FILE;
    if (S_ISFIFO(st.st_mode))
        return DROP_PIPE;
    if (!S_ISSOCK(st.st_mode))
        return DROP_NONE;
    int type = 0;
    socklen_t len = sizeof type;
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0)
        return DROP_NONE;
    if (type == SOCK_DGRAM)
        return has_name(fd) ? DROP_BOUND : DROP_DGRAM;
    if (type != SOCK_STREAM && type != SOCK_SEQPACKET)
        return DROP_NONE;
#ifdef __APPLE__
    /* XNU has no SO_ACCEPTCONN getsockopt; listen(2) sets it in so_options,
     * which proc_pidfdinfo reports (xnu bsd/sys/proc_info.h). */
    struct socket_fdinfo si;
    int n = proc_pidfdinfo(getpid(), fd, PROC_PIDFDSOCKETINFO, &si, sizeof si);
    int listening = n == (int)sizeof si && (si.psi.soi_options & SO_ACCEPTCONN);
#else
    int listening = 0;
    len = sizeof listening;
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0)
        listening = 0;
#endif
    if (listening)
        return DROP_LISTENER;
    struct sockaddr_storage peer;
    socklen_t plen = sizeof peer;
    if (getpeername(fd, (struct sockaddr *)&peer, &plen) == 0)
        return DROP_STREAM;
    return has_name(fd) ? DROP_BOUND : DROP_STREAM;
}

/* Whether a fork child closes `fd` under `drop`: never below `lowest` (a
 * pressure child's 0-2 are its /dev/null) nor the two descriptors it still
 * needs (`keep_a`, `keep_b`). */
static int drops(enum drop_class drop, int fd, int lowest, int keep_a, int keep_b) {
    if (fd < lowest || fd == keep_a || fd == keep_b)
        return 0;
    return drop == DROP_ALL || class_of(fd) == drop;
}

/* Calls `f(fd, arg)` for each open descriptor of this process (not the one
 * it reads them through). Only system calls, no allocation (the buffers are
 * on the stack), so a fork child may use it. `f` may close the descriptor
 * it is given. */
static void each_descriptor(void (*f)(int fd, void *arg), void *arg) {
#ifdef __APPLE__
    struct proc_fdinfo fds[1024];
    int n = proc_pidinfo(getpid(), PROC_PIDLISTFDS, 0, fds, (int)sizeof fds);
    for (int i = 0; n > 0 && i < n / (int)sizeof fds[0]; i++)
        f(fds[i].proc_fd, arg);
#else
    /* getdents64 on /proc/self/fd: procfs keeps its place by descriptor
     * number, so closing while reading skips nothing. */
    int dir = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0)
        return;
    union {
        char bytes[4096];
        uint64_t align;
    } buf;
    for (;;) {
        long n = syscall(SYS_getdents64, dir, buf.bytes, sizeof buf.bytes);
        if (n <= 0)
            break;
        for (long at = 0; at < n;) {
            /* struct linux_dirent64: u64 ino, s64 off, u16 reclen, u8 type, name */
            unsigned short reclen;
            memcpy(&reclen, buf.bytes + at + 16, sizeof reclen);
            if (reclen == 0)
                break;
            const char *name = buf.bytes + at + 19;
            int fd = 0, digits = 0;
            for (; *name >= '0' && *name <= '9' && digits < 9; name++, digits++)
                fd = fd * 10 + (*name - '0');
            if (digits > 0 && *name == '\0' && fd != dir)
                f(fd, arg);
            at += reclen;
        }
    }
    sys_close(dir);
#endif
}

struct dropping {
    enum drop_class drop;
    int lowest, keep_a, keep_b;
};

static void drop_one(int fd, void *arg) {
    const struct dropping *d = arg;
    if (drops(d->drop, fd, d->lowest, d->keep_a, d->keep_b))
        sys_close(fd);
}

/* In a fork child: closes every descriptor from `lowest` up of class `drop`
 * but `keep_a` and `keep_b`. Async-signal-safe. */
static void drop_descriptors(enum drop_class drop, int lowest, int keep_a, int keep_b) {
    struct dropping d = {drop, lowest, keep_a, keep_b};
    each_descriptor(drop_one, &d);
}

void fdw_keep_only(int a, int b) { drop_descriptors(DROP_ALL, 0, a, b); }

/* fork, hold for hold_ns, exec: returns once the child has exec'd (the
 * close-on-exec pipe reads end-of-file), as std's Command::spawn does, so the
 * window measured around it covers the child's whole pre-exec life. */
static int spawn_fork(pid_t *out) {
    int fds[2];
    int e = cloexec_pipe(fds);
    if (e)
        return e;
    sigset_t none;
    sigemptyset(&none);
    struct timespec hold = {(time_t)(S.spec.hold_ns / NS_PER_S),
                            (long)(S.spec.hold_ns % NS_PER_S)};
    pid_t pid = fork();
    if (pid < 0) {
        e = errno;
        sys_close(fds[0]);
        sys_close(fds[1]);
        return e;
    }
    if (pid == 0) {
        /* The child: async-signal-safe calls only (signal-safety(7)). */
        dup2(S.devnull, 0);
        dup2(S.devnull, 1);
        dup2(S.devnull, 2);
        /* std resets the mask before its pre_exec hooks: the same here. */
        sigprocmask(SIG_SETMASK, &none, NULL);
        /* Right after the fork, before the hold: the exec-error pipe and
         * /dev/null stay. */
        if (S.spec.drop != DROP_NONE)
            drop_descriptors(S.spec.drop, 3, fds[1], S.devnull);
        if (hold.tv_sec || hold.tv_nsec) {
            struct timespec rem;
            /* EINTR: sleep what is left. Sleeping is the purpose, not
             * synchronisation: the hold is how long the child keeps its copies. */
            while (nanosleep(&hold, &rem) == -1 && errno == EINTR)
                hold = rem;
        }
        execve(TRUE_PROGRAM, CHILD_ARGV, CHILD_ENVP);
        int err = errno;
        ssize_t w = write(fds[1], &err, sizeof err);
        (void)w;
        _exit(127);
    }
    sys_close(fds[1]);
    int child_errno = 0;
    ssize_t n;
    do
        n = read(fds[0], &child_errno, sizeof child_errno);
    while (n < 0 && errno == EINTR);
    sys_close(fds[0]);
    if (n == (ssize_t)sizeof child_errno) {
        /* exec failed: reap the child, report its errno. */
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
        }
        return child_errno ? child_errno : EIO;
    }
    *out = pid;
    return 0;
}

struct spawner {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
};

static int spawner_init(struct spawner *s) {
    int e = posix_spawn_file_actions_init(&s->actions);
    if (e)
        return e;
    for (int fd = 0; fd <= 2 && !e; fd++)
        e = posix_spawn_file_actions_adddup2(&s->actions, S.devnull, fd);
    if (!e)
        e = posix_spawnattr_init(&s->attr);
    if (e) {
        posix_spawn_file_actions_destroy(&s->actions);
        return e;
    }
    sigset_t none;
    sigemptyset(&none);
    e = posix_spawnattr_setsigmask(&s->attr, &none);
    if (!e)
        e = posix_spawnattr_setflags(&s->attr, POSIX_SPAWN_SETSIGMASK);
    if (e) {
        posix_spawnattr_destroy(&s->attr);
        posix_spawn_file_actions_destroy(&s->actions);
    }
    return e;
}

static void spawner_destroy(struct spawner *s) {
    posix_spawnattr_destroy(&s->attr);
    posix_spawn_file_actions_destroy(&s->actions);
}

/* Waits for the child. ECHILD counts as reaped: a host that ignores SIGCHLD
 * or reaps with waitpid(-1) takes the status first. */
static int reap(pid_t pid) {
    int status;
    for (;;) {
        if (waitpid(pid, &status, 0) >= 0 || errno == ECHILD)
            return 0;
        if (errno != EINTR)
            return errno;
    }
}

/* Appends `pid spawns elapsed_s covered_s exe` to the report (S.mu held).
 * One short O_APPEND write: lines from concurrent processes do not interleave. */
static void report_line(uint64_t now) {
    if (S.report_fd < 0)
        return;
    uint64_t covered = S.covered_ns + (S.inside ? now - S.since_ns : 0);
    char line[PATH_MAX + 128];
    int n = snprintf(line, sizeof line, "%d %llu %.6f %.6f %s\n", (int)S.pid,
                     (unsigned long long)S.spawns, (double)(now - S.started_ns) / NS_PER_S,
                     (double)covered / NS_PER_S, S.exe);
    if (n <= 0)
        return;
    if ((size_t)n >= sizeof line)
        n = sizeof line - 1;
    ssize_t w = write(S.report_fd, line, (size_t)n);
    (void)w;
    S.reported_ns = now;
}

/* The start time of process `pid` as the kernel reports it (Linux:
 * /proc/PID/stat's field 22, clock ticks since boot; macOS: pbi_start in
 * microseconds); 0 when it is gone or unreadable. With the pid it names one
 * process: a pid reused later has a later start. */
static unsigned long long start_time_of(pid_t pid) {
#ifdef __APPLE__
    struct proc_bsdinfo info;
    if (proc_pidinfo(pid, PROC_PIDTBSDINFO, 0, &info, sizeof info) != (int)sizeof info)
        return 0;
    return (unsigned long long)info.pbi_start_tvsec * 1000000ULL + info.pbi_start_tvusec;
#else
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    sys_close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    /* The command name (field 2) may hold spaces and ')': the last ')' ends
     * it, and starttime is the 20th field after it (proc_pid_stat(5)). */
    char *p = strrchr(buf, ')');
    for (int field = 2; p && field < 22; field++)
        p = strchr(p + 1, ' ');
    return p ? strtoull(p + 1, NULL, 10) : 0;
#endif
}

/* A descriptor that becomes readable once process `pid` ends, above 2 and
 * never inherited: a pidfd (pidfd_open(2), close-on-exec) on Linux, a kqueue
 * with EVFILT_PROC NOTE_EXIT on macOS (kqueue(2): not inherited by fork).
 * -1 with errno set: ESRCH when it is gone, ENOSYS on Linux before 5.3,
 * EPERM or another where a sandbox refuses the call. */
static int watch_open(pid_t pid) {
#ifdef __APPLE__
    int w = kqueue();
    if (w < 0)
        return -1;
    struct kevent ev;
    EV_SET(&ev, (uintptr_t)pid, EVFILT_PROC, EV_ADD | EV_ONESHOT, NOTE_EXIT, 0, NULL);
    if (kevent(w, &ev, 1, NULL, 0, NULL) != 0) {
        int e = errno;
        sys_close(w);
        errno = e;
        return -1;
    }
#else
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434 /* the same number on every architecture */
#endif
    int w = (int)syscall(SYS_pidfd_open, pid, 0);
    if (w < 0)
        return -1;
#endif
    if (w > 2)
        return w;
    int above = fcntl(w, F_DUPFD_CLOEXEC, 3);
    int e = errno;
    sys_close(w);
    errno = e;
    return above;
}

/* Whether the controller is there, as the spec names it: a watch on it is
 * set in `*watch` (-1 where none can be set: ENOSYS, or a sandbox that
 * refuses the call; the watcher then polls its start time). The start time
 * is read after the watch is set, so a watch set on a reused pid is caught. */
static int controller_alive(const struct spec *spec, int *watch) {
    *watch = watch_open(spec->ctl_pid);
    if (*watch < 0 && errno == ESRCH)
        return 0;
    if (start_time_of(spec->ctl_pid) == spec->ctl_start)
        return 1;
    if (*watch >= 0)
        sys_close(*watch);
    *watch = -1;
    return 0;
}

/* Stops the spawning threads once the controller ends (exits or is killed):
 * its watch becomes readable, or, without one, its start time changes
 * (polled every hold, between 1 and 10 ms). */
static void *watch_controller(void *arg) {
    (void)arg;
    uint64_t pause = S.spec.hold_ns;
    pause = pause < 1000 * 1000 ? 1000 * 1000 : pause > 10 * 1000 * 1000 ? 10 * 1000 * 1000 : pause;
    for (;;) {
        if (S.ctl_watch >= 0) {
#ifdef __APPLE__
            struct kevent ev;
            if (kevent(S.ctl_watch, NULL, 0, &ev, 1, NULL) < 0 && errno == EINTR)
                continue;
#else
            struct pollfd p = {.fd = S.ctl_watch, .events = POLLIN};
            if (poll(&p, 1, -1) < 0 && errno == EINTR)
                continue;
#endif
            break; /* it ended, or the watch is unusable */
        }
        if (start_time_of(S.spec.ctl_pid) != S.spec.ctl_start)
            break;
        struct timespec t = {0, (long)pause};
        nanosleep(&t, NULL);
    }
    pthread_mutex_lock(&S.mu);
    S.stop = 1;
    pthread_cond_broadcast(&S.slot_freed);
    pthread_mutex_unlock(&S.mu);
    return NULL;
}

static void *spawn_loop(void *arg) {
    unsigned index = (unsigned)(uintptr_t)arg;
    char name[32];
    snprintf(name, sizeof name, "fdwindow-pressure-%u", index);
    name[15] = '\0'; /* Linux thread names hold 15 bytes, as std truncates them */
#ifdef __APPLE__
    pthread_setname_np(name);
#else
    pthread_setname_np(pthread_self(), name);
#endif
    struct spawner spawner;
    int ready = spawner_init(&spawner) == 0;
    unsigned turn = index; /* mix: threads start on alternate paths */
    while (ready && take_slot()) {
        int fork_path = S.spec.path == PATH_FORK || (S.spec.path == PATH_MIX && turn % 2 == 0);
        turn++;
        pid_t pid = -1;
        enter_window();
        int e = fork_path ? spawn_fork(&pid)
                          : posix_spawn(&pid, TRUE_PROGRAM, &spawner.actions, &spawner.attr,
                                        CHILD_ARGV, CHILD_ENVP);
        leave_window();
        if (!e)
            e = reap(pid);
        pthread_mutex_lock(&S.mu);
        S.alive--;
        if (!e)
            S.spawns++;
        pthread_cond_signal(&S.slot_freed);
        uint64_t now = now_ns();
        if (now - S.reported_ns >= REPORT_EVERY_NS)
            report_line(now);
        pthread_mutex_unlock(&S.mu);
        if (e)
            break; /* a spawn error ends this thread, as in fdwindow::pressure */
    }
    if (ready)
        spawner_destroy(&spawner);
    /* Counted out on every path, so a bounded stop never waits for a dead thread. */
    pthread_mutex_lock(&S.mu);
    S.running--;
    pthread_cond_broadcast(&S.thread_ended);
    pthread_mutex_unlock(&S.mu);
    return NULL;
}

/* Stops the threads, waiting at most `bound_ns` for them to reap their last
 * children; 0 with the stats, or -1 if some were still running then (they
 * are left to stop at their next loop). */
static int stop_within(uint64_t bound_ns, uint64_t *spawns, uint64_t *elapsed, uint64_t *covered) {
    pthread_mutex_lock(&S.mu);
    S.stop = 1;
    pthread_cond_broadcast(&S.slot_freed);
    uint64_t deadline = now_ns() + bound_ns;
    while (S.running > 0) {
        uint64_t now = now_ns();
        if (now >= deadline) {
            pthread_mutex_unlock(&S.mu);
            return -1;
        }
        wait_at_most(&S.thread_ended, deadline - now);
    }
    uint64_t now = now_ns();
    *spawns = S.spawns;
    *elapsed = now - S.started_ns;
    *covered = S.covered_ns + (S.inside ? now - S.since_ns : 0);
    pthread_mutex_unlock(&S.mu);
    for (unsigned i = 0; i < S.started_threads; i++)
        pthread_join(S.threads[i], NULL);
    return 0;
}

static void stop(void) {
    if (!S.active)
        return;
    S.active = 0;
    if (getpid() != S.pid)
        return; /* a forked copy of the host: the threads and children are the original's */
    uint64_t spawns, elapsed, covered;
    if (stop_within(S.spec.hold_ns + 5 * NS_PER_S, &spawns, &elapsed, &covered) != 0)
        return;
    pthread_mutex_lock(&S.mu);
    report_line(now_ns());
    pthread_mutex_unlock(&S.mu);
}

/* ---- close-hold=: a copy of each closed descriptor of one class ---- */

/* With close-hold=CLASS the injector starts no spawning threads. Instead it
 * interposes close(2): before a descriptor of CLASS is closed, a copy of it
 * is kept alive for `hold`. The host's close then goes through as usual, but
 * the open file, listener or name lives on in the copy: the very window fork
 * pressure opens by chance, built on purpose, so a test that depends on the
 * descriptor being gone fails on its first run.
 *
 * hold-by=pass (the default): the copy is sent to the holder process
 * (inject/holder.c) and every close is held; only the system's bounds (a
 * socket buffer full past a bounded wait, descriptors in flight) let one
 * through. The report's `holding PID pass` line says so at the start, and
 * each close let through appends `unheld PID REASON` as it happens, so a
 * host that ends without running its atexit hooks (_exit, a signal) has
 * reported every gap all the same. One choice of the injector's own: a
 * call site (the close's whole stack, so each test function's own) in one
 * thread keeps one copy alive at a time; its further closes go
 * through unheld (`loop`) until that copy's hold ends. A loop that closes
 * at one line again and again is a retry or a scan, and holding every one
 * of its copies changes what it does: a picker that retries until its port
 * binds (port_check's with_free_port) retried for ever, each new probe kept
 * busy by the last, and one that gives up after ten tries (portpicker's)
 * failed where a real fork's short-lived copy costs it one retry. The first
 * copy is held as any other: a test that checks after each close fails at
 * its first.
 * With drop=all too, the same message goes without the descriptor (the
 * sham: the same send at the same closes, nothing held from the start).
 *
 * hold-by=fork: a forked child that keeps only that descriptor (it closes
 * every other one, stdio too) holds it, then exits. Bounded: at most
 * max-alive held children at once, and at most CLOSE_HOLD_NS_PER_S of each
 * second spent forking them (a close past either goes through unheld and
 * is counted as skipped); an atexit hook kills and reaps those still
 * holding. With drop=all too, each child drops the descriptor as well (the
 * sham: the same forks, no copy).
 *
 * Each held copy appends `held PID CLASS WHAT` to
 * the report (WHAT: the file's path, `tcp 127.0.0.1:PORT`, `unix PATH`,
 * `pipe INODE`), so the audit can name what the failing test depended on,
 * then the close's stack (`site`, see "call sites" above). With
 * close-site=ADDR+ADDR… only the closes whose stack passes through one of
 * those addresses of the executable are held (one line's copies alone);
 * the others go through as if close-hold were off, uncounted.
 * Rust's File, TcpListener, OwnedFd and friends close through libc's close,
 * so their drops are held too. The injector's own descriptors (the report,
 * the holder's socket) are never closed by the host: a close of one
 * succeeds and leaves it open, so a test that closes every descriptor above
 * 2 keeps its copies held and reported. */
static struct {
    int active;
    pid_t pids[1024];
    unsigned n;       /* held children not yet reaped (pids[0..n]) */
    unsigned pending; /* slots taken by closes still forking */
    uint64_t second_ns;
    uint64_t forking_ns; /* spent forking holders in this second */
    uint64_t held, skipped;
} H;

#ifndef __APPLE__
/* The next definitions (libc's), found in the constructor. */
static int (*real_close)(int);
static int (*real_dup2)(int, int);
static int (*real_dup3)(int, int, int);
static int (*real_fclose)(FILE *);
static int (*real_close_range)(unsigned, unsigned, int);
static int (*real_bind)(int, const struct sockaddr *, socklen_t);
#endif
/* Set while this thread is inside the close wrapper's hold. */
static __thread int in_hold;

/* Reaps held children that have exited (all of them, waiting, if `wait`);
 * S.mu held. ECHILD counts as reaped (a host that reaps with waitpid(-1)). */
static void reap_holds(int wait) {
    for (unsigned i = 0; i < H.n;) {
        int status;
        pid_t r = waitpid(H.pids[i], &status, wait ? 0 : WNOHANG);
        if (r == H.pids[i] || (r < 0 && errno == ECHILD)) {
            H.pids[i] = H.pids[--H.n];
            continue;
        }
        if (r < 0 && errno == EINTR)
            continue;
        i++;
    }
}

#ifndef __APPLE__
/* Appends to `out` the kinds of lock held through the open file `fd`, as
 * Linux shows them in /proc/self/fdinfo/FD (`lock:\t1: FLOCK  ADVISORY
 * WRITE …`, also OFDLCK and POSIX): ` [lock: flock+ofd]`. A copy keeps an
 * flock or an OFD lock, never a POSIX one, so the kind names the hazard.
 * See: https://man7.org/linux/man-pages/man5/proc_pid_fdinfo.5.html */
static void add_lock_kinds(int fd, char *out, size_t size) {
    char path[64], buf[2048];
    snprintf(path, sizeof path, "/proc/self/fdinfo/%d", fd);
    int f = open(path, O_RDONLY | O_CLOEXEC);
    if (f < 0)
        return;
    ssize_t n = read(f, buf, sizeof buf - 1);
    sys_close(f);
    if (n <= 0)
        return;
    buf[n] = '\0';
    static const char *const KINDS[][2] = {{": FLOCK ", "flock"}, {": OFDLCK ", "ofd"},
                                           {": POSIX ", "posix"}};
    size_t at = strlen(out);
    const char *sep = " [lock: ";
    for (size_t k = 0; k < sizeof KINDS / sizeof KINDS[0]; k++) {
        if (!strstr(buf, KINDS[k][0]) || at >= size)
            continue;
        int w = snprintf(out + at, size - at, "%s%s", sep, KINDS[k][1]);
        if (w > 0)
            at += (size_t)w < size - at ? (size_t)w : size - at - 1;
        sep = "+";
    }
    if (sep[0] == '+' && at < size)
        snprintf(out + at, size - at, "]");
}
#endif

/* What `fd` is, for the report: a path (with the kinds of lock it carries,
 * on Linux), an address, a pipe's inode. */
static void describe(int fd, enum drop_class c, char *out, size_t size) {
    struct sockaddr_storage a;
    socklen_t len = sizeof a;
    memset(&a, 0, sizeof a);
    snprintf(out, size, "?");
    if (c == DROP_FILE || c == DROP_PIPE) {
#ifdef __APPLE__
        char path[PATH_MAX];
        if (c == DROP_FILE && fcntl(fd, F_GETPATH, path) == 0) {
            snprintf(out, size, "%s", path);
            return;
        }
#else
        char link[64], path[PATH_MAX];
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, path, sizeof path - 1);
        if (n > 0) {
            path[n] = '\0';
            snprintf(out, size, "%s", path);
            if (c == DROP_FILE)
                add_lock_kinds(fd, out, size);
            return;
        }
#endif
        struct stat st;
        if (fstat(fd, &st) == 0)
            snprintf(out, size, "inode %llu", (unsigned long long)st.st_ino);
        return;
    }
    int type = 0;
    socklen_t tlen = sizeof type;
    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tlen);
    const char *proto = type == SOCK_DGRAM ? "udp" : "tcp";
    if (getsockname(fd, (struct sockaddr *)&a, &len) != 0)
        return;
    char ip[INET6_ADDRSTRLEN];
    if (a.ss_family == AF_INET) {
        struct sockaddr_in *in = (struct sockaddr_in *)&a;
        inet_ntop(AF_INET, &in->sin_addr, ip, sizeof ip);
        snprintf(out, size, "%s %s:%u", proto, ip, (unsigned)ntohs(in->sin_port));
    } else if (a.ss_family == AF_INET6) {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&a;
        inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof ip);
        snprintf(out, size, "%s [%s]:%u", proto, ip, (unsigned)ntohs(in6->sin6_port));
    } else if (a.ss_family == AF_UNIX) {
        socklen_t base = (socklen_t)offsetof(struct sockaddr_un, sun_path);
        const char *path = ((struct sockaddr_un *)&a)->sun_path;
        if (len > base + 1 && path[0] == '\0')
            snprintf(out, size, "unix @%.*s", (int)(len - base - 1), path + 1);
        else
            snprintf(out, size, "unix %s", len > base && path[0] ? path : "(unnamed)");
    }
}

/* ---- call sites ----
 *
 * Each held copy's call stack goes to the report as addresses in each
 * module's own address space (what the linker assigned: the same in every
 * process, whatever ASLR did), so `fdwindow audit` can name the line whose
 * drop a copy kept alive. The executable code of every module loaded at
 * start is noted in the constructor (dl_iterate_phdr; on macOS dyld's image
 * list); the stack is walked with the unwinder (`_Unwind_Backtrace`: release
 * Rust keeps no frame pointers), also made ready in the constructor. At a
 * close only arithmetic and the unwinder run: libgcc 12 finds each frame's
 * unwind table with glibc's _dl_find_object, which takes no lock and does
 * not allocate. A module loaded later (dlopen) is reported as unknown. */
#define SITE_DEPTH 48
#define MAX_MODULES 256
#define MAX_RANGES 512

static struct {
    struct {
        uintptr_t lo, hi; /* executable addresses of one module, as loaded */
        uintptr_t bias;   /* loaded address minus the module's own */
        unsigned module;
    } ranges[MAX_RANGES];
    unsigned nranges;
    char *paths[MAX_MODULES];
    unsigned nmodules;
    unsigned char reported[MAX_MODULES]; /* its `module` line written (S.mu) */
    int self;                            /* this library's module; -1 unknown */
    int exe;                             /* the executable's; -1 unknown */
} M = {.self = -1, .exe = -1};

static int add_module(const char *path) {
    if (M.nmodules == MAX_MODULES || !path)
        return -1;
    char *copy = strdup(path);
    if (!copy)
        return -1;
    M.paths[M.nmodules] = copy;
    return (int)M.nmodules++;
}

static void add_range(unsigned module, uintptr_t lo, uintptr_t hi, uintptr_t bias) {
    if (M.nranges == MAX_RANGES)
        return;
    M.ranges[M.nranges].lo = lo;
    M.ranges[M.nranges].hi = hi;
    M.ranges[M.nranges].bias = bias;
    M.ranges[M.nranges].module = module;
    M.nranges++;
}

#ifdef __APPLE__
static void note_modules(void) {
    uint32_t n = _dyld_image_count();
    for (uint32_t i = 0; i < n; i++) {
        const struct mach_header_64 *h = (const struct mach_header_64 *)_dyld_get_image_header(i);
        if (!h || h->magic != MH_MAGIC_64)
            continue;
        int m = add_module(_dyld_get_image_name(i));
        if (m < 0)
            return;
        if (i == 0) /* dyld's first image is the main executable */
            M.exe = m;
        uintptr_t slide = (uintptr_t)_dyld_get_image_vmaddr_slide(i);
        const struct load_command *lc = (const struct load_command *)(h + 1);
        for (uint32_t c = 0; c < h->ncmds; c++) {
            if (lc->cmd == LC_SEGMENT_64) {
                const struct segment_command_64 *seg = (const struct segment_command_64 *)lc;
                if (seg->initprot & VM_PROT_EXECUTE)
                    add_range((unsigned)m, seg->vmaddr + slide, seg->vmaddr + seg->vmsize + slide,
                              slide);
            }
            lc = (const struct load_command *)((const char *)lc + lc->cmdsize);
        }
    }
}
#else
static int note_module(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    (void)arg;
    /* The executable comes first, without a name; the vDSO has no file. */
    char exe[PATH_MAX];
    const char *path = info->dlpi_name;
    if (!path || !*path) {
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (n <= 0)
            return 0;
        exe[n] = '\0';
        path = exe;
    }
    if (path[0] != '/')
        return 0;
    int m = add_module(path);
    if (m < 0)
        return 1;
    if (path == exe)
        M.exe = m;
    for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X))
            add_range((unsigned)m, info->dlpi_addr + ph->p_vaddr,
                      info->dlpi_addr + ph->p_vaddr + ph->p_memsz, info->dlpi_addr);
    }
    return 0;
}

static void note_modules(void) { dl_iterate_phdr(note_module, NULL); }
#endif

/* The module whose code holds `pc`, or -1 (its range in *range). */
static int module_of(uintptr_t pc, unsigned *range) {
    for (unsigned i = 0; i < M.nranges; i++)
        if (pc >= M.ranges[i].lo && pc < M.ranges[i].hi) {
            *range = i;
            return (int)M.ranges[i].module;
        }
    return -1;
}

struct walk {
    uintptr_t pcs[SITE_DEPTH];
    unsigned n;
    int leaving; /* still in this library's own frames */
};

static _Unwind_Reason_Code walk_frame(struct _Unwind_Context *ctx, void *arg) {
    struct walk *w = arg;
    int before = 0;
    uintptr_t pc = (uintptr_t)_Unwind_GetIPInfo(ctx, &before);
    if (!pc)
        return _URC_END_OF_STACK;
    /* A return address: the call is the instruction before it (a signal
     * frame's address is the interrupted instruction itself). */
    if (!before)
        pc--;
    unsigned r;
    if (w->leaving && M.self >= 0 && module_of(pc, &r) == M.self)
        return _URC_NO_REASON;
    w->leaving = 0;
    w->pcs[w->n++] = pc;
    return w->n < SITE_DEPTH ? _URC_NO_REASON : _URC_END_OF_STACK;
}

/* The calling thread's stack above this library's frames. */
static void walk_stack(struct walk *w) {
    w->n = 0;
    w->leaving = 1;
    _Unwind_Backtrace(walk_frame, w);
}

/* Whether the stack passes through an address close-site= names. */
static int at_a_site(const struct walk *w) {
    if (M.exe < 0)
        return 0;
    for (unsigned i = 0; i < w->n; i++) {
        unsigned r = 0;
        if (module_of(w->pcs[i], &r) != M.exe)
            continue;
        uint64_t a = (uint64_t)(w->pcs[i] - M.ranges[r].bias);
        for (unsigned k = 0; k < S.spec.nsites; k++)
            if (S.spec.sites[k] == a)
                return 1;
    }
    return 0;
}

/* Appends `s` to buf (of `size`, used `*at`), truncating. */
static void put(char *buf, size_t size, size_t *at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void put(char *buf, size_t size, size_t *at, const char *fmt, ...) {
    if (*at >= size)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *at, size - *at, fmt, ap);
    va_end(ap);
    if (n > 0)
        *at += (size_t)n < size - *at ? (size_t)n : size - *at - 1;
}

/* Writes the `module PID INDEX PATH` line of each module the stack is the
 * first to name, then `site PID FRAME...`, each frame `INDEX:ADDRESS` (hex,
 * in the module's own addresses) or `?:ADDRESS` (no module known). S.mu held. */
static void report_site(const struct walk *w) {
    static char line[SITE_DEPTH * 24 + 64];
    size_t at = 0;
    for (unsigned i = 0; i < w->n; i++) {
        unsigned r;
        int m = module_of(w->pcs[i], &r);
        if (m < 0 || M.reported[m])
            continue;
        M.reported[m] = 1;
        char head[PATH_MAX + 64];
        int n = snprintf(head, sizeof head, "module %d %d %s\n", (int)S.pid, m, M.paths[m]);
        if (n > 0 && (size_t)n < sizeof head) {
            ssize_t wr = write(S.report_fd, head, (size_t)n);
            (void)wr;
        }
    }
    put(line, sizeof line, &at, "site %d", (int)S.pid);
    for (unsigned i = 0; i < w->n; i++) {
        unsigned r;
        int m = module_of(w->pcs[i], &r);
        if (m < 0)
            put(line, sizeof line, &at, " ?:%lx", (unsigned long)w->pcs[i]);
        else
            put(line, sizeof line, &at, " %d:%lx", m,
                (unsigned long)(w->pcs[i] - M.ranges[r].bias));
    }
    put(line, sizeof line, &at, "\n");
    ssize_t wr = write(S.report_fd, line, at);
    (void)wr;
}

/* Forks a child that keeps only `fd` for the hold, then exits. Returns its
 * pid, or -1. The parent goes on (to its close) only once the child has
 * dropped everything else (with drop=all, `fd` too): the child writes one
 * byte on a pipe and the parent reads one byte (or end-of-file, if the child
 * died), never waiting for the end-of-file a process the host forked
 * meanwhile could delay by keeping the write end. So the
 * sham's child holds nothing by the time the test checks, however soon, and
 * the held child holds exactly the closed descriptor. On Linux a raw clone:
 * no atfork handlers run in a process that may be anywhere in its own code,
 * and the child makes system calls only. */
static pid_t hold_fork(int fd) {
    struct timespec hold = {(time_t)(S.spec.hold_ns / NS_PER_S),
                            (long)(S.spec.hold_ns % NS_PER_S)};
    int ready[2];
    if (cloexec_pipe(ready) != 0)
        return -1;
#ifdef __APPLE__
    pid_t pid = fork();
#else
    pid_t pid = (pid_t)syscall(SYS_clone, (long)SIGCHLD, 0L, 0L, 0L, 0L);
#endif
    if (pid == 0) {
        /* The child: async-signal-safe calls only (signal-safety(7)). With
         * drop=all it keeps nothing, the closed descriptor included: the
         * sham, which forks at the same moments and holds no copy. */
        drop_descriptors(DROP_ALL, 0, S.spec.drop == DROP_ALL ? -1 : fd, ready[1]);
        char byte = 1;
        ssize_t w = write(ready[1], &byte, 1);
        (void)w;
        sys_close(ready[1]);
        struct timespec rem;
        /* Sleeping is the purpose: the hold is how long the copy lives. */
        while (nanosleep(&hold, &rem) == -1 && errno == EINTR)
            hold = rem;
        _exit(0);
    }
    sys_close(ready[1]);
    if (pid > 0) {
        char byte;
        while (read(ready[0], &byte, 1) < 0 && errno == EINTR) {
        }
    }
    sys_close(ready[0]);
    return pid;
}

/* Appends the `held` line of a copy of `fd` and its stack. S.mu held. */
static void report_held(enum drop_class c, const char *what, const struct walk *site) {
    if (S.report_fd < 0)
        return;
    char line[PATH_MAX + 128];
    int n = snprintf(line, sizeof line, "held %d %s %s\n", (int)S.pid, CLASS_IDS[c], what);
    if (n > 0) {
        if ((size_t)n >= sizeof line)
            n = sizeof line - 1;
        ssize_t w = write(S.report_fd, line, (size_t)n);
        (void)w;
    }
    report_site(site);
}

/* Call sites tracked at once (hold-by=pass); a site past them is held
 * without the bound. */
#define LOOP_SLOTS 1024

/* Per call site and thread: when its live copy was sent (0: an empty slot). */
static struct {
    uint64_t key;
    uint64_t sent;
} L[LOOP_SLOTS];

/* Its address tells this thread from the others. */
static __thread char thread_mark;

/* The call site of a close in this thread, as a hash of its stack. */
static uint64_t site_key(const struct walk *w) {
    uint64_t h = 1469598103934665603ULL ^ (uint64_t)(uintptr_t)&thread_mark;
    for (unsigned i = 0; i < w->n; i++) {
        h ^= (uint64_t)w->pcs[i];
        h *= 1099511628211ULL;
    }
    return h ? h : 1;
}

/* Whether the site `key` may have a copy held at `now`: its last copy's
 * hold has ended (or it has none). Notes the new copy if so. S.mu held. */
static int loop_room(uint64_t key, uint64_t now) {
    uint64_t hold = S.spec.hold_ns;
    unsigned i = (unsigned)(key % LOOP_SLOTS);
    for (unsigned probe = 0; probe < 8; probe++, i = (i + 1) % LOOP_SLOTS) {
        int expired = now - L[i].sent >= hold;
        if (L[i].key == key && !expired)
            return 0;
        /* Its own slot, an empty one, or a site whose copy has expired. */
        if (L[i].key == key || L[i].key == 0 || expired) {
            L[i].key = key;
            L[i].sent = now;
            return 1;
        }
    }
    return 1;
}

/* Appends `unheld PID REASON` for a close hold-by=pass let through. S.mu
 * held. */
static void report_unheld(int reason) {
    if (S.report_fd < 0)
        return;
    char line[96];
    int n = snprintf(line, sizeof line, "unheld %d %s\n", (int)S.pid, UNHELD_IDS[reason]);
    if (n > 0) {
        ssize_t w = write(S.report_fd, line, (size_t)n);
        (void)w;
    }
}

/* hold-by=fork: whether a bound leaves room for one more held child, taking
 * its slot if so. S.mu held. */
static int fork_room(void) {
    reap_holds(0);
    uint64_t now = now_ns();
    if (now - H.second_ns >= NS_PER_S) {
        H.second_ns = now;
        H.forking_ns = 0;
    }
    if (H.n + H.pending >= S.spec.max_alive || H.forking_ns >= CLOSE_HOLD_NS_PER_S)
        return 0;
    H.pending++;
    return 1;
}

/* Holds a copy of `fd` (of class `c`), unless close-site= names no address
 * its stack passes through or (hold-by=fork) a bound says no. */
static void hold_copy(int fd, enum drop_class c) {
    /* A site filter needs the stack first; otherwise only a close that
     * will be held pays for the walk. */
    struct walk site;
    int walked = S.spec.nsites > 0;
    if (walked) {
        walk_stack(&site);
        if (!at_a_site(&site))
            return;
    }
    char what[PATH_MAX + 64];
    describe(fd, c, what, sizeof what);
    int forking = S.spec.hold_by == HOLD_BY_FORK;
    if (forking) {
        pthread_mutex_lock(&S.mu);
        int room = fork_room();
        if (!room)
            H.skipped++;
        pthread_mutex_unlock(&S.mu);
        if (!room)
            return;
    }
    if (!walked)
        walk_stack(&site);
    if (!forking) {
        pthread_mutex_lock(&S.mu);
        int room = loop_room(site_key(&site), now_ns());
        if (!room) {
            H.skipped++;
            report_unheld(UNHELD_LOOP);
        }
        pthread_mutex_unlock(&S.mu);
        if (!room)
            return;
    }
    int saved = errno;
    uint64_t began = now_ns();
    pid_t pid = 0;
    int unheld = -1;
    if (forking)
        pid = hold_fork(fd);
    else
        unheld = holder_send(fd, S.spec.drop == DROP_ALL);
    uint64_t took = now_ns() - began;
    errno = saved;
    pthread_mutex_lock(&S.mu);
    if (forking) {
        H.pending--;
        H.forking_ns += took;
        if (pid > 0)
            H.pids[H.n++] = pid;
        else
            unheld = UNHELD_OTHER;
    }
    if (unheld < 0) {
        H.held++;
        report_held(c, what, &site);
    } else {
        H.skipped++;
        if (!forking)
            report_unheld(unheld);
    }
    pthread_mutex_unlock(&S.mu);
}

/* Whether `fd` is one of this library's own descriptors in the host. */
static int own_descriptor(int fd) {
    return fd >= 0 && (fd == S.report_fd || fd == holder_socket());
}

/* Before `fd` goes away in the host (its close, a dup2 or dup3 over it, a
 * close_range that covers it, an fclose of its stream): in the process that
 * armed close-hold, a descriptor of the chosen class is held first;
 * everywhere else (the children, a process without close-hold) nothing
 * happens. Returns 1 when `fd` is one of this library's own descriptors,
 * which the caller leaves open. */
static int before_close(int fd) {
    if (!H.active || fd <= 2 || in_hold || getpid() != S.pid)
        return 0;
    int saved = errno;
    /* close is async-signal-safe, so a signal handler may call it: every
     * signal stays blocked while this thread holds S.mu, and a close
     * from within the hold (there is none, but a host's handler could
     * run before the mask) goes through unheld. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    in_hold = 1;
    int own = own_descriptor(fd);
    if (!own) {
        enum drop_class c = class_of(fd);
        if (c != DROP_NONE && (S.spec.close_hold == DROP_ALL || c == S.spec.close_hold))
            hold_copy(fd, c);
    }
    in_hold = 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = saved;
    return own;
}

/* Every close in the host comes here (this library defines the symbol;
 * libc's own internal closes do not). One of this library's own
 * descriptors stays open: the close succeeds (it is close-on-exec, so no
 * child keeps it past exec). */
#ifdef __APPLE__
static int fdw_close(int fd)
#else
int close(int fd)
#endif
{
    if (before_close(fd))
        return 0;
#ifdef __APPLE__
    return close(fd);
#else
    return real_close ? real_close(fd) : sys_close(fd);
#endif
}

/* dup2 and dup3 close `newfd` first when it is open: that close is held
 * too. Over one of this library's own descriptors they fail with EBUSY
 * (the error Linux gives a dup2 racing an open), so the copies go on being
 * held and reported. */
#ifdef __APPLE__
static int fdw_dup2(int oldfd, int newfd)
#else
int dup2(int oldfd, int newfd)
#endif
{
    if (oldfd != newfd && before_close(newfd)) {
        errno = EBUSY;
        return -1;
    }
#ifdef __APPLE__
    return dup2(oldfd, newfd);
#else
    if (real_dup2)
        return real_dup2(oldfd, newfd);
    /* Before the constructor: dup2 as glibc builds it where the system
     * call is missing (aarch64), fcntl(F_GETFL) for the same descriptor. */
    if (oldfd == newfd)
        return fcntl(oldfd, F_GETFL) < 0 ? -1 : newfd;
    return (int)syscall(SYS_dup3, oldfd, newfd, 0);
#endif
}

/* fclose closes its descriptor inside libc, where close is not
 * interposed: the stream's descriptor is held here first. */
#ifdef __APPLE__
static int fdw_fclose(FILE *stream)
#else
int fclose(FILE *stream)
#endif
{
    int fd = stream ? fileno(stream) : -1;
    if (fd >= 0)
        before_close(fd);
#ifdef __APPLE__
    return fclose(stream);
#else
    /* Resolved here if a constructor that runs before this library's
     * (another preload's) closes a stream. */
    if (!real_fclose)
        real_fclose = (int (*)(FILE *))dlsym(RTLD_NEXT, "fclose");
    if (!real_fclose) {
        errno = ENOSYS;
        return EOF;
    }
    return real_fclose(stream);
#endif
}

/* A bind refused because its name is taken (EADDRINUSE) in the process that
 * armed close-hold: `busy PID` in the report. A held copy of a picked port's
 * listener refuses the test's bind of that port, and the diagnosis reads
 * this line as port-pick even where the test only sees a `false` (an
 * `is_free(port)` that tries the bind and swallows the error). One short
 * O_APPEND write and no lock, formatted as every report line here is
 * (snprintf, which POSIX does not list as async-signal-safe: a bind from a
 * signal handler while copies are held is not expected). */
#ifdef __APPLE__
static int fdw_bind(int fd, const struct sockaddr *addr, socklen_t len)
#else
int bind(int fd, const struct sockaddr *addr, socklen_t len)
#endif
{
#ifdef __APPLE__
    int r = bind(fd, addr, len);
#else
    int r = real_bind ? real_bind(fd, addr, len) : (int)syscall(SYS_bind, fd, addr, len);
#endif
    int err = errno;
    if (r != 0 && err == EADDRINUSE && H.active && S.report_fd >= 0 && getpid() == S.pid) {
        char line[32];
        int n = snprintf(line, sizeof line, "busy %d\n", (int)S.pid);
        if (n > 0) {
            ssize_t w = write(S.report_fd, line, (size_t)n);
            (void)w;
        }
    }
    errno = err;
    return r;
}

#ifndef __APPLE__
int dup3(int oldfd, int newfd, int flags) {
    if (oldfd != newfd && before_close(newfd)) {
        errno = EBUSY;
        return -1;
    }
    return real_dup3 ? real_dup3(oldfd, newfd, flags) : (int)syscall(SYS_dup3, oldfd, newfd, flags);
}

static int sys_close_range(unsigned first, unsigned last, int flags) {
    if (real_close_range)
        return real_close_range(first, last, flags);
#ifdef SYS_close_range
    return (int)syscall(SYS_close_range, first, last, flags);
#else
    errno = ENOSYS;
    return -1;
#endif
}

static void hold_in_range(int fd, void *arg) {
    const unsigned *range = arg;
    if ((unsigned)fd >= range[0] && (unsigned)fd <= range[1])
        before_close(fd);
}

/* close_range(2) (glibc's wrapper): each open descriptor in the range is
 * held as its close would be, and the range is closed around this
 * library's own descriptors, which stay open. With a flag (CLOEXEC marks,
 * UNSHARE unshares first) it is passed on as it is. */
int close_range(unsigned first, unsigned last, int flags) {
    if (!H.active || in_hold || flags != 0 || first > last || getpid() != S.pid)
        return sys_close_range(first, last, flags);
    unsigned range[2] = {first, last};
    each_descriptor(hold_in_range, range);
    int own[2] = {S.report_fd, holder_socket()};
    if (own[0] > own[1]) {
        int t = own[0];
        own[0] = own[1];
        own[1] = t;
    }
    unsigned from = first;
    for (int i = 0; i < 2; i++) {
        if (own[i] < 0 || (unsigned)own[i] < from || (unsigned)own[i] > last)
            continue;
        if ((unsigned)own[i] > from && sys_close_range(from, (unsigned)own[i] - 1, 0) != 0)
            return -1;
        from = (unsigned)own[i] + 1;
        if (from == 0) /* own[i] was UINT_MAX */
            return 0;
    }
    return from <= last ? sys_close_range(from, last, 0) : 0;
}
#endif

#ifdef __APPLE__
/* dyld's __interpose section sends the host's calls of close, dup2,
 * fclose and bind to the fdw_ functions; those called from this image are the real
 * ones. */
struct interpose {
    const void *replacement;
    const void *replacee;
};
#define INTERPOSE(name)                                                                     \
    __attribute__((used)) static const struct interpose fdw_interpose_##name                \
        __attribute__((section("__DATA,__interpose"))) = {                                 \
            (const void *)(unsigned long)&fdw_##name, (const void *)(unsigned long)&name}
INTERPOSE(close);
INTERPOSE(dup2);
INTERPOSE(fclose);
INTERPOSE(bind);
#endif

/* At exit: the held children are killed and reaped, and the counts reported. */
static void stop_holds(void) {
    if (!H.active || getpid() != S.pid)
        return;
    H.active = 0;
    /* Outside S.mu: a close still sending meets the shut socket (gone). */
    holder_stop();
    pthread_mutex_lock(&S.mu);
    /* Those already gone first: a pid reaped elsewhere may be reused. */
    reap_holds(0);
    for (unsigned i = 0; i < H.n; i++)
        kill(H.pids[i], SIGKILL);
    reap_holds(1);
    if (S.report_fd >= 0) {
        char line[128];
        int n = snprintf(line, sizeof line, "holds %d %llu %llu\n", (int)S.pid,
                         (unsigned long long)H.held, (unsigned long long)H.skipped);
        if (n > 0) {
            ssize_t w = write(S.report_fd, line, (size_t)n);
            (void)w;
        }
    }
    pthread_mutex_unlock(&S.mu);
}

/* Removes this library from the preload variable's colon-separated list, in
 * place (the constructor runs before main; nothing else reads it yet). */
static void remove_from_preload(const char *var) {
    Dl_info self;
    const char *list = getenv(var);
    if (!list || !dladdr((void *)remove_from_preload, &self) || !self.dli_fname)
        return;
    char *copy = strdup(list);
    char *kept = calloc(1, strlen(list) + 1);
    if (!copy || !kept) {
        free(copy);
        free(kept);
        return;
    }
    char *save = NULL;
    for (char *e = strtok_r(copy, ": ", &save); e; e = strtok_r(NULL, ": ", &save)) {
        if (strcmp(e, self.dli_fname) == 0)
            continue;
        if (*kept)
            strcat(kept, ":");
        strcat(kept, e);
    }
    if (*kept)
        setenv(var, kept, 1);
    else
        unsetenv(var);
    free(copy);
    free(kept);
}

__attribute__((constructor)) static void start(void) {
#ifndef __APPLE__
    /* Every process this library is loaded into closes through the wrapper:
     * the next definition (a later preload, a sanitizer's, libc's) takes
     * over from here, armed or not. */
    real_close = (int (*)(int))dlsym(RTLD_NEXT, "close");
    real_dup2 = (int (*)(int, int))dlsym(RTLD_NEXT, "dup2");
    real_dup3 = (int (*)(int, int, int))dlsym(RTLD_NEXT, "dup3");
    real_fclose = (int (*)(FILE *))dlsym(RTLD_NEXT, "fclose");
    real_close_range = (int (*)(unsigned, unsigned, int))dlsym(RTLD_NEXT, "close_range");
    real_bind = (int (*)(int, const struct sockaddr *, socklen_t))dlsym(RTLD_NEXT, "bind");
#endif
    const char *text = getenv(ENV_VAR);
    if (!text)
        return;
    char *copy = strdup(text); /* kept: spec.match points into it */
    if (!copy)
        return;
    struct spec spec;
    if (parse_spec(copy, &spec) != 0) {
        fprintf(stderr, "fdwindow-inject: %s: %s; no pressure\n", ENV_VAR, spec_error);
        free(copy);
        return;
    }
    exe_name(S.exe, sizeof S.exe);
    if (spec.match && !glob_match(spec.match, S.exe)) {
        free(copy);
        return;
    }
    /* A controller already gone starts no pressure (its run is over). */
    int watch = -1;
    if (spec.ctl_pid > 0 && spec.close_hold == DROP_NONE && !controller_alive(&spec, &watch)) {
        free(copy);
        return;
    }
    int e = init_conds();
    int fd = e ? -1 : open("/dev/null", O_RDWR | O_CLOEXEC);
    /* Above 2, so that dup2 onto 0-2 always makes a new, inheritable copy. */
    if (fd >= 0) {
        S.devnull = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        sys_close(fd);
    }
    S.threads = calloc(spec.threads, sizeof *S.threads);
    if (e || S.devnull < 0 || !S.threads) {
        if (!e)
            e = errno ? errno : ENOMEM;
        fprintf(stderr, "fdwindow-inject: cannot start pressure: %s\n", strerror(e));
        /* Nothing of a pressure that never started stays in the host. */
        if (S.devnull >= 0)
            sys_close(S.devnull);
        S.devnull = -1;
        if (watch >= 0)
            sys_close(watch);
        free(S.threads);
        S.threads = NULL;
        free(copy);
        return;
    }
    S.spec = spec;
    S.pid = getpid();
    const char *report = getenv(REPORT_VAR);
    if (report)
        S.report_fd = open(report, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
    S.ctl_watch = watch;
    /* Pressure starts here, so no child of this process starts its own. */
    unsetenv(ENV_VAR);
    unsetenv(REPORT_VAR);
#ifdef __APPLE__
    remove_from_preload("DYLD_INSERT_LIBRARIES");
#else
    remove_from_preload("LD_PRELOAD");
#endif
    S.started_ns = now_ns();
    S.since_ns = S.started_ns;
    S.deadline_ns = S.started_ns + spec.for_ns;
    if (spec.close_hold != DROP_NONE) {
        /* The deterministic mode: no spawning threads, close is held. */
        H.second_ns = S.started_ns;
        if (spec.hold_by == HOLD_BY_PASS) {
            e = holder_start(spec.hold_ns, S.report_fd);
            /* Every close then goes through unheld, counted as `gone`. */
            if (e)
                fprintf(stderr, "fdwindow-inject: cannot start the holder: %s\n", strerror(e));
            if (S.report_fd >= 0) {
                char line[64];
                int n = snprintf(line, sizeof line, "holding %d pass\n", (int)S.pid);
                if (n > 0) {
                    ssize_t w = write(S.report_fd, line, (size_t)n);
                    (void)w;
                }
            }
        }
        note_modules();
        unsigned r;
        M.self = module_of((uintptr_t)&walk_frame, &r);
        /* The unwinder's first walk sets up its tables: here, not at a close. */
        struct walk w;
        walk_stack(&w);
        H.active = 1;
        pthread_mutex_lock(&S.mu);
        report_line(now_ns()); /* reached, whatever ends the process */
        pthread_mutex_unlock(&S.mu);
        atexit(stop_holds);
        return;
    }
    /* New threads inherit the creator's mask: block everything here so the
     * spawning threads never take a signal meant for the host (GNU timeout
     * hung waiting for a SIGCHLD that a spawning thread had taken), then
     * restore this thread's mask. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    for (unsigned i = 0; i < spec.threads; i++) {
        pthread_mutex_lock(&S.mu);
        S.running++;
        pthread_mutex_unlock(&S.mu);
        e = pthread_create(&S.threads[i], NULL, spawn_loop, (void *)(uintptr_t)i);
        if (e) {
            pthread_mutex_lock(&S.mu);
            S.running--;
            pthread_mutex_unlock(&S.mu);
            break;
        }
        S.started_threads++;
    }
    int watching = 0;
    if (!e && S.spec.ctl_pid > 0) {
        pthread_t watcher;
        e = pthread_create(&watcher, NULL, watch_controller, NULL);
        if (!e)
            pthread_detach(watcher), watching = 1;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (e) {
        /* Those already started are stopped and joined first. */
        uint64_t a, b, c;
        int stopped = stop_within(S.spec.hold_ns + 5 * NS_PER_S, &a, &b, &c) == 0;
        fprintf(stderr, "fdwindow-inject: cannot start pressure: %s\n", strerror(e));
        if (stopped) {
            /* Every thread joined: nothing uses these any more. */
            sys_close(S.devnull);
            S.devnull = -1;
        }
        if (!watching && S.ctl_watch >= 0) {
            sys_close(S.ctl_watch);
            S.ctl_watch = -1;
        }
        return;
    }
    S.active = 1;
    pthread_mutex_lock(&S.mu);
    report_line(now_ns()); /* pressured from here, whatever ends the process */
    pthread_mutex_unlock(&S.mu);
    atexit(stop);
}
