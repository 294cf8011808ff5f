/* SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>
#include <string.h>

#include "streak.h"

bool mgt_streak_bad(struct mgt_streak *s, const char *value) {
        char v[sizeof(s->value)];

        snprintf(v, sizeof(v), "%s", value);
        if (s->on && strcmp(s->value, v) == 0)
                return false;
        s->on = true;
        memcpy(s->value, v, sizeof(v));
        return true;
}

void mgt_streak_end(struct mgt_streak *s) {
        s->on = false;
        s->value[0] = '\0';
}
