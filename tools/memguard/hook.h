/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * `watch --park-hook CMD`: the process that runs the park hook.
 *
 * The thread that runs the guards is confined with seccomp after set-up
 * (mg_confine_thread(): no fork, no exec, no wait), so, as the metrics
 * writer is (metrics.h), the runner is a process forked before the guards
 * and the confinement.  The two talk over a SOCK_SEQPACKET socketpair
 * (one message per request or reply, read and written with read(2) and
 * write(2), which the confined thread has); the thread's end is
 * non-blocking, so it never waits on the runner.
 *
 * For each request the runner forks and execs CMD, split at blanks into a
 * shell-free argv (no quoting, no expansion, no PATH lookup: the first
 * word is an absolute path), with the cgroup's path appended as the last
 * argument; the park's JSON record on standard input (a memfd: seekable,
 * there whole at exec, never a pipe that fills); standard output and error
 * captured, their last MGT_HOOK_OUTPUT_MAX bytes kept for the reply and the
 * rest read and thrown away, so a hook that writes without end never
 * blocks.  The hook is the leader of a process group of its own (setsid):
 * at its timeout SIGTERM goes to that group, and SIGKILL after the grace
 * (mgt_hook_grace_usec()) if the leader has not exited by then; on a cancel,
 * and once the leader has exited, SIGKILL at once, so nothing the hook
 * started in it outlives its time.  Its
 * oom_score_adj and nice value are set back to 0 (watch's unit runs at
 * -900 and -10: a hook must not inherit the guards' protection).  Environment: watch's without
 * NOTIFY_SOCKET and the watchdog's variables, plus MEMGUARD_CGROUP,
 * MEMGUARD_PARK_ID, MEMGUARD_TIMEOUT_MS and MEMGUARD_THAW_STATUS.
 *
 * The runner keeps watch's user and capabilities (the hook is the
 * platform's program, saving a microVM may need them) and ends when the
 * socket closes, killing the groups of the hooks still running first.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The hook's exit status that asks for a thaw; 0 asks for the kill (the
 * actor is saved); anything else, a signal or the timeout is a kill too. */
#define MGT_HOOK_THAW_STATUS 10
/* The tail of the hook's output kept for the reply (the line an operator
 * reads): its last error message, not a log. */
#define MGT_HOOK_OUTPUT_MAX 400
/* CMD's words at most (CMD's own argv; the cgroup comes after them). */
#define MGT_HOOK_ARGS_MAX 32
/* Hooks running at once (those in their grace count); a request past it
 * is answered MGT_HOOK_ERROR with code EUSERS at once, and watch ends that
 * park in a kill.  A node parks at most as many actors as it has. */
#define MGT_HOOK_RUNNING_MAX 256
/* From SIGTERM at the timeout to SIGKILL: a quarter of the timeout, at most
 * 2 s.  The actor stays frozen, its memory charged, through the grace, so
 * it is a share of the time the operator gave the hook (the run ends by
 * 1.25 times the timeout) rather than a fixed sum that would swamp a short
 * timeout; 2 s is room for a hook to stop its save and remove a partial
 * snapshot, and the default 30 s timeout gets all of it.  The guard's
 * backstop (config.h, MGT_PARK_SLACK_USEC) counts it too. */
#define MGT_HOOK_GRACE_MAX_USEC ((uint64_t) 2 * 1000000)
static inline uint64_t mgt_hook_grace_usec(uint64_t timeout_usec) {
        return timeout_usec / 4 < MGT_HOOK_GRACE_MAX_USEC ? timeout_usec / 4 : MGT_HOOK_GRACE_MAX_USEC;
}
/* The record on stdin, at most (a park event's JSON is about 1.5 KiB). */
#define MGT_HOOK_RECORD_MAX ((size_t) 60 * 1024)

enum mgt_hook_result {
        MGT_HOOK_SAVED = 0,     /* exit 0: the actor is saved, kill it */
        MGT_HOOK_THAW,          /* exit MGT_HOOK_THAW_STATUS: thaw it */
        MGT_HOOK_FAILED,        /* another exit status (code): kill it */
        MGT_HOOK_SIGNALED,      /* ended by signal code: kill it */
        MGT_HOOK_TIMEOUT,       /* ran past its timeout: its group sent SIGTERM, then SIGKILL; kill it */
        MGT_HOOK_ERROR,         /* not started (code: the errno; EUSERS: MGT_HOOK_RUNNING_MAX run): kill it */
        MGT_HOOK_CANCELLED,     /* the park ended first (watch's cancel): its group killed */
        _MGT_HOOK_RESULT_MAX,
};

/* "saved", "thaw", "failed", "signal", "timeout", "error", "cancelled":
 * the JSON's and the metrics' name of a result. */
const char *mgt_hook_result_name(enum mgt_hook_result r);

struct mgt_hook_reply {
        uint64_t seq;                   /* the request's */
        uint32_t result;                /* enum mgt_hook_result */
        int32_t code;                   /* the exit status, the signal, or the errno (positive); else 0 */
        uint64_t duration_usec;         /* from the request's arrival to the hook's end */
        uint64_t output_bytes;          /* all it wrote on stdout and stderr */
        uint32_t output_len;            /* output[]'s */
        char output[MGT_HOOK_OUTPUT_MAX + 1]; /* the last bytes of it, NUL-terminated */
};

/* Splits cmd at spaces and tabs into argv (pointers into buf, a copy of
 * cmd; NULL-terminated, at most MGT_HOOK_ARGS_MAX words).  Refused, with
 * the reason in err: an empty command, a first word that is not an
 * absolute path, a quote, backslash, '$', '`', ';', '|', '&', '<', '>' or
 * control byte (CMD is not a shell's: what they would do needs a script).
 * Returns the number of words, or -EINVAL (-E2BIG: too many words,
 * -ENAMETOOLONG: longer than buf). */
int mgt_hook_split(const char *cmd, char *buf, size_t buf_len, char **argv, char *err, size_t err_len);

struct mgt_hook_runner {
        int fd;                         /* watch's end, non-blocking; -1: none */
        pid_t pid;
        bool failed;                    /* the runner is gone: said once */
};

/* Forks the runner for cmd (checked with mgt_hook_split()).  From a
 * process with one thread.  Returns 0 or a negative errno. */
int mgt_hook_runner_start(struct mgt_hook_runner *r, const char *cmd);
/* Asks for a run: the hook for the park park_id of cgroup, record (a
 * JSON object, without newline) on its stdin, its group sent SIGTERM after
 * timeout_usec and SIGKILL after the grace past it.
 * Returns 0, -EAGAIN (the socket is full: the runner is stuck), -EPIPE
 * (the runner is gone), -EMSGSIZE (the record or path too long). */
int mgt_hook_request(struct mgt_hook_runner *r, uint64_t seq, uint64_t park_id, const char *cgroup,
                     const char *record, uint64_t timeout_usec);
/* Ends the run seq early (the park it served has ended): its group is
 * killed (SIGKILL, no grace) and it is answered MGT_HOOK_CANCELLED, if it
 * still runs (MGT_HOOK_TIMEOUT if it was in its grace already).
 * Returns 0 or a negative errno. */
int mgt_hook_cancel(struct mgt_hook_runner *r, uint64_t seq);
/* One reply, if one is there (the fd polls readable).  Returns 1 with
 * *ret, 0 if none, -EPIPE once the runner is gone. */
int mgt_hook_read(struct mgt_hook_runner *r, struct mgt_hook_reply *ret);
/* Closes watch's end: the runner kills the groups of hooks still running
 * and exits.  Not waited for (the confined thread has no wait4). */
void mgt_hook_runner_stop(struct mgt_hook_runner *r);
