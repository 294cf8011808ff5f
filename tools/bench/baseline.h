/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The baselines: the same decision as a guard's tick, made the way other
 * memory killers read cgroup files.  Fast path: memory.current below
 * limit - limit/16.  Otherwise memory.stat, used = anon + shmem + kernel +
 * sock, overshoot if used > limit and memory.current > limit.
 *
 *  - stdio: systemd-oomd and senpai reopen each file every interval; here
 *    fopen + fgets + sscanf + fclose, the path built each time.
 *  - openat: Meta's oomd keeps the cgroup directory open and opens each
 *    file from it every tick; here openat + read to EOF + close, parsed with
 *    memchr/strtoull (no allocation; oomd itself splits lines into strings).
 *
 * Both read fewer files than the guard (no memory.events.local) and decide
 * less (no stall window): they are the cheapest possible version of those
 * designs.
 */

#include <stddef.h>
#include <stdint.h>

enum base_kind { BASE_STDIO, BASE_OPENAT };

enum base_verdict { BASE_FAST = 0, BASE_NEAR = 1, BASE_OVERSHOOT = 2 };

struct base {
        enum base_kind kind;
        char dir[4096];
        int dirfd;              /* BASE_OPENAT */
        uint64_t limit_bytes;
        uint64_t opens, closes; /* counted here; reads are counted by the kernel */
};

/* The openat baseline's parse of memory.stat: anon + shmem + kernel + sock. */
uint64_t base_used_scan(const char *buf, size_t len);

/* Returns 0 or a negative errno. */
int base_init(struct base *b, enum base_kind kind, const char *dir, uint64_t limit_bytes);
void base_fini(struct base *b);
/* One tick: an enum base_verdict, or a negative errno. */
int base_tick(struct base *b);
