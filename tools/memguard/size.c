/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "memguard/memguard.h"
#include "size.h"

/* Fraction digits past the ninth are checked but dropped: at the largest
 * suffix, T, the tenth is worth under 110 bytes, and a fraction is rounded
 * down to whole bytes anyway. */
#define FRAC_DIGITS 9
#define FRAC_ONE UINT64_C(1000000000)

static bool is_digit(char c) {
        return c >= '0' && c <= '9';
}

static int shift_of(char c) {
        switch (c) {
        case 'k': case 'K': return 10;
        case 'm': case 'M': return 20;
        case 'g': case 'G': return 30;
        case 't': case 'T': return 40;
        }
        return -1;
}

int mgt_size_parse(const char *s, uint64_t percent_base, unsigned flags, uint64_t *ret) {
        uint64_t whole = 0, frac = 0; /* frac in units of 10^-FRAC_DIGITS */
        unsigned frac_digits = 0;
        bool has_frac = false;
        unsigned __int128 v;
        const char *p = s;
        int shift = 0;

        if (!s || !ret)
                return -EINVAL;
        if ((flags & MGT_SIZE_MAX) && strcmp(s, "max") == 0) {
                *ret = MG_UNLIMITED;
                return 0;
        }
        if (!is_digit(*p))
                return -EINVAL;
        for (; is_digit(*p); p++) {
                if (whole > (UINT64_MAX - (uint64_t) (*p - '0')) / 10)
                        return -ERANGE;
                whole = whole * 10 + (uint64_t) (*p - '0');
        }
        if (*p == '.') {
                p++;
                if (!is_digit(*p))
                        return -EINVAL;
                has_frac = true;
                for (; is_digit(*p); p++)
                        if (frac_digits < FRAC_DIGITS) {
                                frac = frac * 10 + (uint64_t) (*p - '0');
                                frac_digits++;
                        }
                for (unsigned i = frac_digits; i < FRAC_DIGITS; i++)
                        frac *= 10;
        }

        if (*p == '%') {
                if (!(flags & MGT_SIZE_PERCENT) || percent_base == 0 || percent_base == MG_UNLIMITED)
                        return -EDOM;
                if (p[1] != '\0')
                        return -EINVAL;
                /* whole < 10^9 keeps (whole * 10^9 + frac) * base inside 128 bits */
                if (whole >= FRAC_ONE)
                        return -ERANGE;
                v = ((unsigned __int128) (whole * FRAC_ONE + frac) * percent_base) /
                    (100 * (unsigned __int128) FRAC_ONE);
                if (v > UINT64_MAX)
                        return -ERANGE;
                *ret = (uint64_t) v;
                return 0;
        }

        if (*p != '\0' && (shift = shift_of(*p)) > 0) {
                p++;
                if (*p == 'i') {
                        p++;
                        if (*p == 'B')
                                p++;
                }
        } else if (*p == 'B') {
                p++;
                shift = 0;
        } else {
                shift = 0;
        }
        if (*p != '\0')
                return -EINVAL;
        if (has_frac && shift == 0)
                return -EINVAL; /* "1.5" bytes is not a byte count */

        v = ((unsigned __int128) whole << shift) + (((unsigned __int128) frac << shift) / FRAC_ONE);
        if (v > UINT64_MAX)
                return -ERANGE;
        *ret = (uint64_t) v;
        return 0;
}

const char *mgt_size_format(uint64_t bytes, char *buf, size_t len) {
        static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
        unsigned u = 0;
        unsigned __int128 unit = 1024;

        if (bytes == MG_UNLIMITED) {
                snprintf(buf, len, "max");
                return buf;
        }
        if (bytes < 1024) {
                snprintf(buf, len, "%" PRIu64 " B", bytes);
                return buf;
        }
        while (u + 1 < sizeof(units) / sizeof(units[0]) && bytes >= unit * 1024) {
                unit *= 1024;
                u++;
        }
        uint64_t tenths = (uint64_t) (((unsigned __int128) bytes * 10 + unit / 2) / unit);
        snprintf(buf, len, "%" PRIu64 ".%" PRIu64 " %s", tenths / 10, tenths % 10, units[u]);
        return buf;
}
