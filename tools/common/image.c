/* SPDX-License-Identifier: Apache-2.0 */
#include <string.h>
#include <sys/mman.h>

#include "image.h"
#include "util.h"

bool img_untouched(uint64_t page, unsigned hole_every) {
        return (page * IMG_PAGE / (2 * MG_MIB)) % hole_every == 3;
}

bool img_zero_page(uint64_t page) {
        return page % 61 == 7;
}

void img_fill(uint8_t *p, uint64_t page, uint64_t seed) {
        uint64_t *w = (uint64_t *) (void *) p;
        for (uint64_t k = 0; k < IMG_PAGE / 8; k++)
                w[k] = (page * UINT64_C(0x9E3779B97F4A7C15)) ^ (k * UINT64_C(0xD6E8FEB86659FD93)) ^ seed;
}

void img_expect(uint8_t *p, uint64_t page, unsigned hole_every, uint64_t seed) {
        if (img_untouched(page, hole_every) || img_zero_page(page))
                memset(p, 0, IMG_PAGE);
        else
                img_fill(p, page, seed);
}

uint8_t *img_make_anon(uint64_t len, unsigned hole_every, uint64_t seed) {
        uint8_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
                return NULL;
        /* The mapping need not be huge-page aligned: without this a THP
         * fault would fill untouched blocks next to touched ones. */
        (void) madvise(p, len, MADV_NOHUGEPAGE);
        for (uint64_t i = 0; i < len / IMG_PAGE; i++) {
                if (img_untouched(i, hole_every))
                        continue;
                if (img_zero_page(i))
                        memset(p + i * IMG_PAGE, 0, IMG_PAGE); /* touched: charged, but zero */
                else
                        img_fill(p + i * IMG_PAGE, i, seed);
        }
        return p;
}

int64_t img_verify(const uint8_t *p, uint64_t len, unsigned hole_every, uint64_t seed) {
        static uint8_t want[IMG_PAGE] __attribute__((aligned(64)));
        for (uint64_t i = 0; i < len / IMG_PAGE; i++) {
                img_expect(want, i, hole_every, seed);
                if (memcmp(p + i * IMG_PAGE, want, IMG_PAGE) != 0)
                        return (int64_t) i;
        }
        return -1;
}
