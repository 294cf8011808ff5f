/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A guest-memory image pattern for the snapshot tests, benchmark and
 * burn-in: cheap to make under TCG, and with what a real guest has.  Page
 * i is in a never-touched 2 MiB block (the fourth of every hole_every,
 * hole_every >= 4: holes in the image, not charged), a touched page of zeros (one in 61: charged,
 * written as a hole), or data made from i and a seed.
 */

#include <stdbool.h>
#include <stdint.h>

#define IMG_PAGE 4096

bool img_untouched(uint64_t page, unsigned hole_every);
bool img_zero_page(uint64_t page);
/* The data of a data page. */
void img_fill(uint8_t *p, uint64_t page, uint64_t seed);
/* What page should read as: zeros for the first two kinds. */
void img_expect(uint8_t *p, uint64_t page, unsigned hole_every, uint64_t seed);
/* An anonymous mapping of len bytes with the pattern (untouched blocks left
 * untouched, huge pages off so that they stay so), or NULL with errno. */
uint8_t *img_make_anon(uint64_t len, unsigned hole_every, uint64_t seed);
/* The first page of len bytes at p that differs from the pattern, or -1. */
int64_t img_verify(const uint8_t *p, uint64_t len, unsigned hole_every, uint64_t seed);
