/*
 * parked_call.c: the parked-call interposer (fdwindow's `parked-call` window).
 *
 * Preloaded into a probe process (LD_PRELOAD on Linux, DYLD_INSERT_LIBRARIES
 * on macOS), it wraps every libc name that creates a descriptor. A thread that
 * armed itself (fdwindow_parked_arm) is parked by the first such call that
 * succeeds: the real call has returned and made its descriptor(s), the wrapper
 * records them and the call's name, wakes the controller (fdwindow_parked_wait)
 * and blocks until the controller releases it (fdwindow_parked_release), which
 * it does once a child it spawned has exec'd and been checked for copies. Any
 * second step the caller makes afterwards (fcntl(F_SETFD), ioctl(FIOCLEX))
 * therefore comes after the spawn.
 *
 *   1. controller thread C starts creator thread T;
 *   2. T: fdwindow_parked_arm(mode, families): arms T only (thread-local
 *      flags), for the call families the trial is about;
 *   3. T makes the call under test; the wrapper of a call in those families
 *      calls the real function and, on success, disarms T, records the new
 *      descriptors, and waits;
 *   4. C: fdwindow_parked_wait() returns 1 (parked) or 0 (T disarmed without a
 *      parked call: nothing went through this wrapper, e.g. a raw syscall);
 *   5. C spawns a child, waits until it exec'd, lists its descriptors;
 *   6. C: fdwindow_parked_release(); T returns from the call and goes on;
 *   7. T: fdwindow_parked_disarm() says whether it parked.
 *
 * In sham mode the wrapper strips the atomic close-on-exec request
 * (SOCK_CLOEXEC, O_CLOEXEC, F_DUPFD_CLOEXEC, pipe2/dup3/accept4's flag,
 * MSG_CMSG_CLOEXEC) before the real call: the child must then hold the
 * descriptor, which proves the window can see a leak.
 *
 * While no trial is armed, a wrapped call pays one relaxed load of a global
 * and touches no thread-local; during a trial, one thread-local read more.
 * Nothing else changes. The wrappers preserve errno.
 *
 * Linux: the wrappers carry the libc names and find the real functions with
 * dlsym(RTLD_NEXT) (dlsym(3)). glibc exports several names per call (open64,
 * the fortified __open_2 family, fcntl64); each is wrapped.
 * macOS: dyld's __interpose section maps each libc function to its wrapper,
 * and calls from this image reach the real function (dyld-interposing.h).
 * Apple arm64 passes variadic arguments on the stack, so open, openat and
 * fcntl are written variadic here and read their optional argument with
 * va_arg; a fixed-argument wrapper would read a register that holds garbage.
 *
 * References:
 *   https://man7.org/linux/man-pages/man3/dlsym.3.html
 *   https://man7.org/linux/man-pages/man2/open.2.html (O_CLOEXEC)
 *   https://man7.org/linux/man-pages/man2/socket.2.html (SOCK_CLOEXEC)
 *   https://man7.org/linux/man-pages/man2/fcntl.2.html (F_DUPFD_CLOEXEC)
 *   https://man7.org/linux/man-pages/man2/recvmsg.2.html (MSG_CMSG_CLOEXEC)
 *   https://github.com/apple-oss-distributions/dyld/blob/main/include/mach-o/dyld-interposing.h
 *   https://developer.apple.com/documentation/apple-silicon/addressing-architectural-differences-in-your-macos-code
 *     (variadic arguments on the stack)
 */
#ifdef __linux__
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#endif
/* Fortified headers define open and friends as inline functions; this file
 * defines the exported symbols themselves. */
#undef _FORTIFY_SOURCE

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define FDW_EXPORT __attribute__((visibility("default")))

/* Bumped when the control functions or the info layout change. */
#define FDW_PARKED_ABI 2
/* Modes for fdwindow_parked_arm. */
#define FDW_PARK 1
#define FDW_SHAM 2
/* How long a parked thread waits for its release at most: a controller that
 * died or forgot cannot hang the thread for ever. */
#define FDW_PARK_BOUND_S 60
/* Call families, for fdwindow_parked_arm's mask: an arm parks only the
 * family it is about, so a setup call in the same thread (a client's socket
 * before an accept) neither parks nor loses its flag. */
#define FDW_SOCKET 1     /* socket */
#define FDW_SOCKETPAIR 2 /* socketpair */
#define FDW_ACCEPT 4     /* accept, accept4 */
#define FDW_PIPE 8       /* pipe, pipe2 */
#define FDW_OPEN 16      /* open, openat, creat and their 64/fortified names */
#define FDW_DUP 32       /* fcntl(F_DUPFD*), dup, dup2, dup3 */
#define FDW_RECVMSG 64   /* recvmsg with SCM_RIGHTS */
#define FDW_ALL 127
#define FDW_MAX_FDS 8

/* What the controller learns about one park. */
struct fdwindow_parked_info {
    int nfds;
    int fds[FDW_MAX_FDS];
    /* The name the wrapper was entered by, NUL-terminated. */
    char call[32];
    /* 1 when the sham stripped an atomic flag from this call. */
    int stripped;
    /* 1 when the park ended by its own bound, not by a release. */
    int timed_out;
};

enum state { IDLE, ARMED, PARKED, RELEASED, CANCELLED, DONE };

static pthread_mutex_t lot_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t lot_cond = PTHREAD_COND_INITIALIZER;
static enum state lot_state = IDLE;
static struct fdwindow_parked_info lot_info;

/* The calling thread's mode: 0 unarmed, FDW_PARK or FDW_SHAM. */
static __thread int tl_mode;
/* The call families the calling thread's arm covers. */
static __thread int tl_families;
/* Whether the calling thread parked since it armed. */
static __thread int tl_parked;
/* Whether the calling thread armed and has not disarmed yet. */
static __thread int tl_armed;
/* 1 from an arm to its disarm (one trial at a time: arm is EBUSY while
 * another is under way). Every wrapper reads it first, so that a process
 * where nothing is armed never touches the thread-locals: on macOS a
 * thread-local's first use in a thread goes through dyld's TLV code, which a
 * wrapped call made by libSystem during its own start-up must not enter
 * (the first use in a thread allocates the thread's block with malloc). */
static int any_armed;

static void deadline_in(struct timespec *ts, long ms) {
    struct timeval now;
    gettimeofday(&now, NULL);
    ts->tv_sec = now.tv_sec + ms / 1000;
    ts->tv_nsec = (long)now.tv_usec * 1000 + (ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec += 1;
        ts->tv_nsec -= 1000000000L;
    }
}

FDW_EXPORT int fdwindow_parked_abi(void) { return FDW_PARKED_ABI; }

/* Arms the calling thread for the call families in `families`; -1 with
 * EBUSY while another trial is under way, EINVAL for an unknown mode or an
 * empty mask. */
FDW_EXPORT int fdwindow_parked_arm(int mode, int families) {
    if ((mode != FDW_PARK && mode != FDW_SHAM) || (families & FDW_ALL) == 0) {
        errno = EINVAL;
        return -1;
    }
    pthread_mutex_lock(&lot_lock);
    if (lot_state != IDLE && lot_state != DONE) {
        pthread_mutex_unlock(&lot_lock);
        errno = EBUSY;
        return -1;
    }
    lot_state = ARMED;
    memset(&lot_info, 0, sizeof lot_info);
    pthread_mutex_unlock(&lot_lock);
    __atomic_store_n(&any_armed, 1, __ATOMIC_RELAXED);
    tl_armed = 1;
    tl_parked = 0;
    tl_families = families & FDW_ALL;
    tl_mode = mode;
    return 0;
}

/* Disarms the calling thread; 1 when it parked since it armed. */
FDW_EXPORT int fdwindow_parked_disarm(void) {
    int parked = tl_parked;
    tl_mode = 0;
    tl_parked = 0;
    if (tl_armed) {
        tl_armed = 0;
        __atomic_store_n(&any_armed, 0, __ATOMIC_RELAXED);
    }
    pthread_mutex_lock(&lot_lock);
    if (lot_state == ARMED) {
        /* Nothing parked: the controller's wait must end now, not at its
         * deadline. */
        lot_state = DONE;
    } else if (lot_state == RELEASED || lot_state == CANCELLED) {
        lot_state = IDLE;
    }
    pthread_cond_broadcast(&lot_cond);
    pthread_mutex_unlock(&lot_lock);
    return parked;
}

/* Waits up to timeout_ms for the armed thread: 1 parked (info filled in),
 * 0 it disarmed without a parked call, -1 timed out. */
FDW_EXPORT int fdwindow_parked_wait(int timeout_ms, struct fdwindow_parked_info *out) {
    struct timespec until;
    int result;
    deadline_in(&until, timeout_ms);
    pthread_mutex_lock(&lot_lock);
    while (lot_state == ARMED) {
        if (pthread_cond_timedwait(&lot_cond, &lot_lock, &until) == ETIMEDOUT)
            break;
    }
    switch (lot_state) {
    case PARKED:
        if (out)
            *out = lot_info;
        result = 1;
        break;
    case DONE:
        lot_state = IDLE;
        result = 0;
        break;
    default:
        result = -1;
        break;
    }
    pthread_mutex_unlock(&lot_lock);
    return result;
}

/* Lets a parked thread go on; if nothing parked yet, cancels the trial so a
 * late call does not park with no controller left. */
FDW_EXPORT void fdwindow_parked_release(void) {
    pthread_mutex_lock(&lot_lock);
    if (lot_state == PARKED)
        lot_state = RELEASED;
    else if (lot_state == ARMED)
        lot_state = CANCELLED;
    pthread_cond_broadcast(&lot_cond);
    pthread_mutex_unlock(&lot_lock);
}

/* The control functions as one table (ABI 2), so the controller finds them
 * with one lookup and checks the table once: `abi` and `size` come first in
 * every version. The functions check their own arguments (an unknown mode
 * or an empty family mask is EINVAL; wait only writes *out), so a caller may
 * call them with any values. */
struct fdwindow_parked_api {
    int abi;
    int size;
    int (*arm)(int mode, int families);
    int (*disarm)(void);
    int (*wait)(int timeout_ms, struct fdwindow_parked_info *out);
    void (*release)(void);
};

FDW_EXPORT const struct fdwindow_parked_api fdwindow_parked_api = {
    FDW_PARKED_ABI,
    (int)sizeof(struct fdwindow_parked_api),
    fdwindow_parked_arm,
    fdwindow_parked_disarm,
    fdwindow_parked_wait,
    fdwindow_parked_release,
};

/* Whether the calling thread is armed for this call family. */
static int armed_for(int family) {
    return __atomic_load_n(&any_armed, __ATOMIC_RELAXED) && tl_mode != 0 &&
           (tl_families & family) != 0;
}

/* Whether the wrapper must strip this family's atomic flag. */
static int sham(int family) { return armed_for(family) && tl_mode == FDW_SHAM; }

/* Called by a wrapper after the real call made fds[0..n): parks a thread
 * armed for this family until released. errno is the caller's to keep. */
static void park(const char *call, int family, const int *fds, int n, int stripped) {
    int saved = errno;
    struct timespec until;
    int i;
    if (!armed_for(family) || n <= 0)
        return;
    tl_mode = 0; /* one call per arming: the second step never parks */
    pthread_mutex_lock(&lot_lock);
    if (lot_state == ARMED) {
        lot_info.nfds = n < FDW_MAX_FDS ? n : FDW_MAX_FDS;
        for (i = 0; i < lot_info.nfds; i++)
            lot_info.fds[i] = fds[i];
        strncpy(lot_info.call, call, sizeof lot_info.call - 1);
        lot_info.stripped = stripped;
        lot_state = PARKED;
        tl_parked = 1;
        pthread_cond_broadcast(&lot_cond);
        deadline_in(&until, FDW_PARK_BOUND_S * 1000L);
        while (lot_state == PARKED) {
            if (pthread_cond_timedwait(&lot_cond, &lot_lock, &until) == ETIMEDOUT) {
                lot_info.timed_out = 1;
                lot_state = RELEASED;
            }
        }
    }
    pthread_mutex_unlock(&lot_lock);
    errno = saved;
}

/* ---- the real functions ------------------------------------------------ */

#ifdef __APPLE__
/* The wrapper is fdw_NAME; the __interpose section sends callers of NAME to
 * it, and NAME called from this image is the real one. */
#define WRAP(name) fdw_##name
#define REAL(name) name
#define INTERPOSE(name)                                                        \
    __attribute__((used)) static const struct {                                \
        const void *replacement;                                               \
        const void *replacee;                                                  \
    } fdw_interpose_##name __attribute__((section("__DATA,__interpose"))) = {  \
        (const void *)(unsigned long)&fdw_##name, (const void *)(unsigned long)&name}
#else
#define WRAP(name) name
#define REAL(name) real_##name()
#define INTERPOSE(name) struct fdw_unused_##name
/* Each real function is looked up on first use; threads that race to look
 * it up store the same pointer, atomically. */
#define NEXT(ret, name, params)                                                \
    typedef ret(*name##_fn) params;                                            \
    static name##_fn real_##name(void) {                                       \
        static name##_fn fn;                                                   \
        name##_fn found = __atomic_load_n(&fn, __ATOMIC_ACQUIRE);              \
        if (!found) {                                                          \
            found = (name##_fn)dlsym(RTLD_NEXT, #name);                        \
            __atomic_store_n(&fn, found, __ATOMIC_RELEASE);                    \
        }                                                                      \
        return found;                                                          \
    }
#endif

/* When dlsym finds no next definition (a name this libc lacks): ENOSYS. */
#ifdef __APPLE__
#define HAVE_REAL(name) 1
#else
#define HAVE_REAL(name) (real_##name() != NULL)
#endif
#define ENSURE(name)                                                           \
    do {                                                                       \
        if (!HAVE_REAL(name)) {                                                \
            errno = ENOSYS;                                                    \
            return -1;                                                         \
        }                                                                      \
    } while (0)

#ifndef __APPLE__
NEXT(int, socket, (int, int, int))
NEXT(int, socketpair, (int, int, int, int *))
NEXT(int, accept, (int, struct sockaddr *, socklen_t *))
NEXT(int, accept4, (int, struct sockaddr *, socklen_t *, int))
NEXT(int, pipe, (int *))
NEXT(int, pipe2, (int *, int))
NEXT(int, open, (const char *, int, ...))
NEXT(int, open64, (const char *, int, ...))
NEXT(int, openat, (int, const char *, int, ...))
NEXT(int, openat64, (int, const char *, int, ...))
NEXT(int, __open_2, (const char *, int))
NEXT(int, __open64_2, (const char *, int))
NEXT(int, __openat_2, (int, const char *, int))
NEXT(int, __openat64_2, (int, const char *, int))
NEXT(int, creat, (const char *, mode_t))
NEXT(int, creat64, (const char *, mode_t))
NEXT(int, fcntl, (int, int, ...))
NEXT(int, fcntl64, (int, int, ...))
NEXT(int, dup, (int))
NEXT(int, dup2, (int, int))
NEXT(int, dup3, (int, int, int))
NEXT(ssize_t, recvmsg, (int, struct msghdr *, int))
#endif

/* ---- sockets ----------------------------------------------------------- */

#ifdef SOCK_CLOEXEC
#define STRIP_SOCK(family, flags, did)                                         \
    do {                                                                       \
        if (sham(family) && ((flags) & SOCK_CLOEXEC)) {                        \
            (flags) &= ~SOCK_CLOEXEC;                                          \
            (did) = 1;                                                         \
        }                                                                      \
    } while (0)
#else
#define STRIP_SOCK(family, flags, did) ((void)0)
#endif

FDW_EXPORT int WRAP(socket)(int domain, int type, int protocol) {
    int did = 0, fd;
    ENSURE(socket);
    STRIP_SOCK(FDW_SOCKET, type, did);
    fd = REAL(socket)(domain, type, protocol);
    if (fd >= 0)
        park("socket", FDW_SOCKET, &fd, 1, did);
    return fd;
}
INTERPOSE(socket);

FDW_EXPORT int WRAP(socketpair)(int domain, int type, int protocol, int sv[2]) {
    int did = 0, rc;
    ENSURE(socketpair);
    STRIP_SOCK(FDW_SOCKETPAIR, type, did);
    rc = REAL(socketpair)(domain, type, protocol, sv);
    if (rc == 0)
        park("socketpair", FDW_SOCKETPAIR, sv, 2, did);
    return rc;
}
INTERPOSE(socketpair);

FDW_EXPORT int WRAP(accept)(int fd, struct sockaddr *addr, socklen_t *len) {
    int new_fd;
    ENSURE(accept);
    new_fd = REAL(accept)(fd, addr, len);
    if (new_fd >= 0)
        park("accept", FDW_ACCEPT, &new_fd, 1, 0);
    return new_fd;
}
INTERPOSE(accept);

#ifdef __linux__
FDW_EXPORT int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags) {
    int did = 0, new_fd;
    ENSURE(accept4);
    STRIP_SOCK(FDW_ACCEPT, flags, did);
    new_fd = REAL(accept4)(fd, addr, len, flags);
    if (new_fd >= 0)
        park("accept4", FDW_ACCEPT, &new_fd, 1, did);
    return new_fd;
}
#endif

/* Descriptors received with SCM_RIGHTS are new descriptors too. */
FDW_EXPORT ssize_t WRAP(recvmsg)(int fd, struct msghdr *msg, int flags) {
    int did = 0, got[FDW_MAX_FDS], n = 0;
    ssize_t rc;
    struct cmsghdr *c;
    ENSURE(recvmsg);
#ifdef MSG_CMSG_CLOEXEC
    if (sham(FDW_RECVMSG) && (flags & MSG_CMSG_CLOEXEC)) {
        flags &= ~MSG_CMSG_CLOEXEC;
        did = 1;
    }
#endif
    rc = REAL(recvmsg)(fd, msg, flags);
    if (rc < 0 || !armed_for(FDW_RECVMSG) || msg == NULL)
        return rc;
    for (c = CMSG_FIRSTHDR(msg); c != NULL; c = CMSG_NXTHDR(msg, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
            const unsigned char *data = CMSG_DATA(c);
            size_t k, count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (k = 0; k < count && n < FDW_MAX_FDS; k++)
                memcpy(&got[n++], data + k * sizeof(int), sizeof(int));
        }
    }
    if (n > 0)
        park("recvmsg", FDW_RECVMSG, got, n, did);
    return rc;
}
INTERPOSE(recvmsg);

/* ---- pipes ------------------------------------------------------------- */

FDW_EXPORT int WRAP(pipe)(int fds[2]) {
    int rc;
    ENSURE(pipe);
    rc = REAL(pipe)(fds);
    if (rc == 0)
        park("pipe", FDW_PIPE, fds, 2, 0);
    return rc;
}
INTERPOSE(pipe);

#ifdef __linux__
FDW_EXPORT int pipe2(int fds[2], int flags) {
    int did = 0, rc;
    ENSURE(pipe2);
    if (sham(FDW_PIPE) && (flags & O_CLOEXEC)) {
        flags &= ~O_CLOEXEC;
        did = 1;
    }
    rc = REAL(pipe2)(fds, flags);
    if (rc == 0)
        park("pipe2", FDW_PIPE, fds, 2, did);
    return rc;
}
#endif

/* ---- open and friends -------------------------------------------------- */

/* Whether open's third argument is present: O_CREAT, or O_TMPFILE (Linux),
 * as open(2) says. */
static int needs_mode(int flags) {
#ifdef O_TMPFILE
    if ((flags & O_TMPFILE) == O_TMPFILE)
        return 1;
#endif
    return (flags & O_CREAT) != 0;
}

#define STRIP_O(family, flags, did)                                            \
    do {                                                                       \
        if (sham(family) && ((flags) & O_CLOEXEC)) {                           \
            (flags) &= ~O_CLOEXEC;                                             \
            (did) = 1;                                                         \
        }                                                                      \
    } while (0)

#define OPEN_BODY(name)                                                        \
    int did = 0, fd;                                                           \
    mode_t mode = 0;                                                           \
    ENSURE(name);                                                              \
    if (needs_mode(flags)) {                                                   \
        va_list ap;                                                            \
        va_start(ap, flags);                                                   \
        mode = (mode_t)va_arg(ap, int);                                        \
        va_end(ap);                                                            \
    }                                                                          \
    STRIP_O(FDW_OPEN, flags, did);

FDW_EXPORT int WRAP(open)(const char *path, int flags, ...) {
    OPEN_BODY(open)
    fd = REAL(open)(path, flags, mode);
    if (fd >= 0)
        park("open", FDW_OPEN, &fd, 1, did);
    return fd;
}
INTERPOSE(open);

FDW_EXPORT int WRAP(openat)(int dirfd, const char *path, int flags, ...) {
    OPEN_BODY(openat)
    fd = REAL(openat)(dirfd, path, flags, mode);
    if (fd >= 0)
        park("openat", FDW_OPEN, &fd, 1, did);
    return fd;
}
INTERPOSE(openat);

FDW_EXPORT int WRAP(creat)(const char *path, mode_t mode) {
    int fd;
    ENSURE(creat);
    fd = REAL(creat)(path, mode);
    if (fd >= 0)
        park("creat", FDW_OPEN, &fd, 1, 0);
    return fd;
}
INTERPOSE(creat);

#ifdef __linux__
FDW_EXPORT int open64(const char *path, int flags, ...) {
    OPEN_BODY(open64)
    fd = REAL(open64)(path, flags, mode);
    if (fd >= 0)
        park("open64", FDW_OPEN, &fd, 1, did);
    return fd;
}

FDW_EXPORT int openat64(int dirfd, const char *path, int flags, ...) {
    OPEN_BODY(openat64)
    fd = REAL(openat64)(dirfd, path, flags, mode);
    if (fd >= 0)
        park("openat64", FDW_OPEN, &fd, 1, did);
    return fd;
}

/* The _FORTIFY_SOURCE entry points: open without a mode argument. */
FDW_EXPORT int __open_2(const char *path, int flags) {
    int did = 0, fd;
    ENSURE(__open_2);
    STRIP_O(FDW_OPEN, flags, did);
    fd = REAL(__open_2)(path, flags);
    if (fd >= 0)
        park("__open_2", FDW_OPEN, &fd, 1, did);
    return fd;
}

FDW_EXPORT int __open64_2(const char *path, int flags) {
    int did = 0, fd;
    ENSURE(__open64_2);
    STRIP_O(FDW_OPEN, flags, did);
    fd = REAL(__open64_2)(path, flags);
    if (fd >= 0)
        park("__open64_2", FDW_OPEN, &fd, 1, did);
    return fd;
}

FDW_EXPORT int __openat_2(int dirfd, const char *path, int flags) {
    int did = 0, fd;
    ENSURE(__openat_2);
    STRIP_O(FDW_OPEN, flags, did);
    fd = REAL(__openat_2)(dirfd, path, flags);
    if (fd >= 0)
        park("__openat_2", FDW_OPEN, &fd, 1, did);
    return fd;
}

FDW_EXPORT int __openat64_2(int dirfd, const char *path, int flags) {
    int did = 0, fd;
    ENSURE(__openat64_2);
    STRIP_O(FDW_OPEN, flags, did);
    fd = REAL(__openat64_2)(dirfd, path, flags);
    if (fd >= 0)
        park("__openat64_2", FDW_OPEN, &fd, 1, did);
    return fd;
}

FDW_EXPORT int creat64(const char *path, mode_t mode) {
    int fd;
    ENSURE(creat64);
    fd = REAL(creat64)(path, mode);
    if (fd >= 0)
        park("creat64", FDW_OPEN, &fd, 1, 0);
    return fd;
}
#endif

/* ---- duplication ------------------------------------------------------- */

/* fcntl's third argument is an int for the commands that take one and a
 * pointer for the rest; reading it as a pointer-sized slot and passing it on
 * keeps both intact (an int in a register or stack slot is its low half on
 * every ABI this builds for). Only F_DUPFD and F_DUPFD_CLOEXEC make a
 * descriptor. */
#define FCNTL_BODY(name, label)                                                \
    int did = 0, rc;                                                           \
    void *arg;                                                                 \
    va_list ap;                                                                \
    ENSURE(name);                                                              \
    va_start(ap, cmd);                                                         \
    arg = va_arg(ap, void *);                                                  \
    va_end(ap);                                                                \
    if (cmd == F_DUPFD_CLOEXEC && sham(FDW_DUP)) {                             \
        cmd = F_DUPFD;                                                         \
        did = 1;                                                               \
    }                                                                          \
    rc = REAL(name)(fd, cmd, arg);                                             \
    if (rc >= 0 && (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC))                 \
        park(label, FDW_DUP, &rc, 1, did);                                     \
    return rc;

FDW_EXPORT int WRAP(fcntl)(int fd, int cmd, ...) { FCNTL_BODY(fcntl, "fcntl") }
INTERPOSE(fcntl);

#ifdef __linux__
FDW_EXPORT int fcntl64(int fd, int cmd, ...) { FCNTL_BODY(fcntl64, "fcntl64") }
#endif

FDW_EXPORT int WRAP(dup)(int fd) {
    int new_fd;
    ENSURE(dup);
    new_fd = REAL(dup)(fd);
    if (new_fd >= 0)
        park("dup", FDW_DUP, &new_fd, 1, 0);
    return new_fd;
}
INTERPOSE(dup);

FDW_EXPORT int WRAP(dup2)(int fd, int target) {
    int rc;
    ENSURE(dup2);
    rc = REAL(dup2)(fd, target);
    /* dup2 onto itself makes nothing (dup(2)). */
    if (rc >= 0 && fd != target)
        park("dup2", FDW_DUP, &rc, 1, 0);
    return rc;
}
INTERPOSE(dup2);

#ifdef __linux__
FDW_EXPORT int dup3(int fd, int target, int flags) {
    int did = 0, rc;
    ENSURE(dup3);
    STRIP_O(FDW_DUP, flags, did);
    rc = REAL(dup3)(fd, target, flags);
    if (rc >= 0)
        park("dup3", FDW_DUP, &rc, 1, did);
    return rc;
}
#endif
