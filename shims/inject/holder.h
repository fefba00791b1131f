/*
 * The injector's descriptor holder (holder.c): one process, started when
 * close-hold= arms, that receives a copy of each descriptor the host closes
 * over a Unix socket (SCM_RIGHTS) and keeps it for the hold.
 */
#ifndef FDWINDOW_HOLDER_H
#define FDWINDOW_HOLDER_H

#include <stdint.h>
#include <sys/types.h>

/* Why a close went through unheld, for the report's `unheld` lines. */
enum unheld_reason {
    UNHELD_FULL,  /* the socket's buffer stayed full past the bounded wait */
    UNHELD_REFS,  /* ETOOMANYREFS: too many descriptors in flight */
    UNHELD_GONE,  /* the holder is gone (killed, or it could not start) */
    UNHELD_OTHER, /* any other error of sendmsg */
    UNHELD_LOOP,  /* the injector's choice: its site's copy still lives (inject.c) */
    UNHELD_COUNT
};

/* The ids of the reasons in the report, in enum order. */
extern const char *const UNHELD_IDS[UNHELD_COUNT];

/* Starts the holder: a child of this process that keeps nothing of it but
 * its end of the socket and `report_fd` (-1 for none), closes each copy it
 * receives `hold_ns` after receiving it, and exits when the host's end
 * reaches end-of-file. Returns 0 or an errno value. Call it while this
 * process has one thread (the injector's constructor). */
int holder_start(uint64_t hold_ns, int report_fd);

/* Sends a copy of `fd` to the holder (with `sham`, the same message without
 * the descriptor: the holder holds nothing). Never blocks for long: a full
 * buffer is waited on for at most HOLDER_WAIT_NS. Returns -1 when the copy
 * is in flight or held, else the reason it is not. Async-signal-safe. */
int holder_send(int fd, int sham);

/* The host's end of the holder's socket (the host's closes must not take
 * it), or -1. */
int holder_socket(void);

/* Ends the holder: end-of-file on its socket, then waits for it (it closes
 * every copy and exits at once). */
void holder_stop(void);

/* From inject.c: closes every descriptor of this process but `a` and `b`
 * (-1 for none). Async-signal-safe. */
__attribute__((visibility("hidden"))) void fdw_keep_only(int a, int b);

#endif
