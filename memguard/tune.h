/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include "memguard/memguard.h"

/* Copies the caller's options (of whatever .size) into *ret, fills every
 * zero field with the default tuned to the limit and checks the result.
 * Returns 0, -EINVAL or -E2BIG (unknown non-zero fields past our size). */
int mg_options_resolve(const struct mg_guard_options *o, struct mg_guard_options *ret);
