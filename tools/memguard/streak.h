/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A refused value said once per streak.  watch reads a cgroup's
 * user.memguard.limit again at every inotify event of its directory (any
 * xattr written, a chmod: IN_ATTRIB), at the recheck after it appeared and
 * at every SIGHUP; a bad value is said when it appears and when it changes
 * to another bad value, not at each read.
 */

#include <stdbool.h>

struct mgt_streak {
        bool on;
        char value[64];         /* the bad value said last, cut to 63 bytes */
};

/* value was refused.  Returns true if it is to be said: no streak was on,
 * or the streak's value was another. */
bool mgt_streak_bad(struct mgt_streak *s, const char *value);
/* The value is good or gone: the next bad value is said. */
void mgt_streak_end(struct mgt_streak *s);
