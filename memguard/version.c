/* SPDX-License-Identifier: Apache-2.0 */
#include "memguard/memguard.h"

unsigned mg_version(void) {
        return MG_VERSION_NUMBER;
}
