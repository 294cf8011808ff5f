/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The service manager's notification protocol (sd_notify(3)) without
 * libsystemd: one datagram of "KEY=VALUE\n" lines to the AF_UNIX socket
 * $NOTIFY_SOCKET names (a path, or "@name" in the abstract namespace).
 * mgt_notify_open() connects before the thread is confined (socket and
 * connect are not in its allowlist); mgt_notify() is a write() on the
 * connected socket, which the allowlist has.
 */

#include <stdint.h>

/* Connects to $NOTIFY_SOCKET.  Returns the fd, 0 if the variable is unset
 * (not run by a service manager: every mgt_notify() is then a no-op), or a
 * negative errno. */
int mgt_notify_open(void);
/* Sends text ("READY=1", "STATUS=..."); fd 0 or less: nothing.  Returns 0
 * or a negative errno. */
int mgt_notify(int fd, const char *text);
/* $WATCHDOG_USEC if set for this process ($WATCHDOG_PID unset or ours),
 * else 0: send "WATCHDOG=1" at half of it. */
uint64_t mgt_notify_watchdog_usec(void);
