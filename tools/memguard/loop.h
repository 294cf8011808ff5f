/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The tool's event loop pieces: signals delivered as bytes on a pipe (a
 * self-pipe, not signalfd: a blocked mask would be inherited by the
 * commands we start), and one wait that polls a guard set together with
 * the caller's fds.
 */

#include <poll.h>
#include <stdbool.h>
#include <stdint.h>

#include "memguard/memguard.h"

/* Installs handlers for the given signals (0-terminated list) that write
 * one byte each to a non-blocking pipe.  Returns the read end or a
 * negative errno.  exec() resets the handlers in children. */
int mgt_signals_open(const int *sigs);
/* The next pending signal: its number, with *ret_from_user true if a
 * process sent it (kill) rather than the terminal; 0 if none is pending. */
int mgt_signals_next(int fd, bool *ret_from_user);

/*
 * Waits until one of extra[0..n) has events, the set's fd is readable or
 * its next tick is due, or deadline_usec (CLOCK_MONOTONIC, UINT64_MAX for
 * none) passes; then runs mg_set_process().  set may be NULL.  Returns the
 * number of extra fds with revents set, 0 otherwise, or a negative errno
 * of poll() or of the set.
 */
int mgt_wait(mg_set *set, struct pollfd *extra, unsigned n, uint64_t deadline_usec);
