/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The library's version, as built (include/memguard/version.h).
 */
#include "memguard/memguard.h"

unsigned mg_version(void) {
        return MG_VERSION_NUMBER;
}
