/* SPDX-License-Identifier: Apache-2.0 */
/* The version macros and mg_version() against meson's project version
 * (MG_TEST_PROJECT_VERSION, from tests/unit/meson.build). */
#include <criterion/criterion.h>
#include <stdio.h>

#include "memguard/memguard.h"

Test(version, macros_match_the_project_version) {
        char s[32];

        snprintf(s, sizeof(s), "%d.%d.%d", MG_VERSION_MAJOR, MG_VERSION_MINOR, MG_VERSION_PATCH);
        cr_expect_str_eq(s, MG_TEST_PROJECT_VERSION);
        cr_expect_str_eq(MG_VERSION_STRING, MG_TEST_PROJECT_VERSION);
}

Test(version, mg_version_is_the_encoded_number) {
        unsigned v = mg_version();

        cr_expect_eq(v, (unsigned) MG_VERSION_NUMBER);
        cr_expect_eq(v >> 16, (unsigned) MG_VERSION_MAJOR);
        cr_expect_eq((v >> 8) & 0xff, (unsigned) MG_VERSION_MINOR);
        cr_expect_eq(v & 0xff, (unsigned) MG_VERSION_PATCH);
}

Test(version, encoding_orders_as_versions_do) {
        cr_expect_lt(MG_VERSION_ENCODE(0, 1, 9), MG_VERSION_ENCODE(0, 2, 0));
        cr_expect_lt(MG_VERSION_ENCODE(0, 255, 255), MG_VERSION_ENCODE(1, 0, 0));
}
