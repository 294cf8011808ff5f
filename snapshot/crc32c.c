/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CRC-32C (crc32c.h): a table-driven software version and the SSE4.2
 * instruction, the two timed once and the faster kept (under emulation the
 * instruction is the slower); no other state.
 */
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "crc32c.h"
#include "util.h"

#define POLY UINT32_C(0x82F63B78)

static uint32_t table[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;
static bool have_hw, use_hw;

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("sse4.2"))) static uint32_t hw(uint32_t c, const unsigned char *p, size_t len);
#endif
static uint32_t sw(uint32_t c, const unsigned char *p, size_t len);

/* Best of three runs over the tables themselves (8 KiB, just written). */
static uint64_t time_best(uint32_t (*fn)(uint32_t, const unsigned char *, size_t)) {
        uint64_t best = UINT64_MAX;
        uint32_t sink = 0;
        for (int i = 0; i < 3; i++) {
                uint64_t t = mg_mono_nsec();
                sink ^= fn(sink, (const unsigned char *) table, sizeof(table));
                t = mg_mono_nsec() - t;
                if (t < best)
                        best = t;
        }
        __asm__ volatile("" : : "r"(sink));
        return best;
}

/* table[0] is the classic byte-at-a-time table; table[k][b] is the CRC of
 * byte b followed by k zero bytes, so eight bytes fold in one step. */
static void init_tables(void) {
        for (uint32_t i = 0; i < 256; i++) {
                uint32_t c = i;
                for (int k = 0; k < 8; k++)
                        c = c & 1 ? (c >> 1) ^ POLY : c >> 1;
                table[0][i] = c;
        }
        for (uint32_t i = 0; i < 256; i++)
                for (int k = 1; k < 8; k++)
                        table[k][i] = (table[k - 1][i] >> 8) ^ table[0][table[k - 1][i] & 0xff];
#if defined(__x86_64__) && defined(__GNUC__)
        __builtin_cpu_init();
        have_hw = __builtin_cpu_supports("sse4.2");
        /* Having the instruction is not the same as its being fast: qemu's TCG
         * (what the kernel suite and the benchmarks boot under) runs each
         * crc32 instruction as a helper that loops over the 64 bits one at a
         * time (target/i386 helper_crc32), 6x slower than this table there
         * (727 vs 125 ms for 64 MiB in the 7.x guest) while it is 4x faster
         * on real hardware.  So both are timed once and the faster is kept;
         * they compute the same value, so the choice changes only speed. */
        use_hw = have_hw && time_best(hw) <= time_best(sw);
#endif
}

static uint32_t sw(uint32_t c, const unsigned char *p, size_t len) {
        while (len && ((uintptr_t) p & 7)) {
                c = table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
                len--;
        }
        while (len >= 8) {
                uint64_t w;
                memcpy(&w, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
                w = __builtin_bswap64(w);
#endif
                uint32_t lo = (uint32_t) w ^ c, hi = (uint32_t) (w >> 32);
                c = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^ table[5][(lo >> 16) & 0xff] ^
                    table[4][lo >> 24] ^ table[3][hi & 0xff] ^ table[2][(hi >> 8) & 0xff] ^
                    table[1][(hi >> 16) & 0xff] ^ table[0][hi >> 24];
                p += 8;
                len -= 8;
        }
        while (len--)
                c = table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
        return c;
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("sse4.2"))) static uint32_t hw(uint32_t c, const unsigned char *p, size_t len) {
        uint64_t c64;

        while (len && ((uintptr_t) p & 7)) {
                c = __builtin_ia32_crc32qi(c, *p++);
                len--;
        }
        c64 = c;
        while (len >= 8) {
                uint64_t w;
                memcpy(&w, p, 8);
                c64 = __builtin_ia32_crc32di(c64, w);
                p += 8;
                len -= 8;
        }
        c = (uint32_t) c64;
        while (len--)
                c = __builtin_ia32_crc32qi(c, *p++);
        return c;
}
#endif

static uint32_t crc(bool with_hw, uint32_t c, const void *buf, size_t len) {
#if defined(__x86_64__) && defined(__GNUC__)
        if (with_hw)
                return ~hw(~c, buf, len);
#endif
        return ~sw(~c, buf, len);
}

uint32_t mg_crc32c(uint32_t c, const void *buf, size_t len) {
        pthread_once(&table_once, init_tables);
        return crc(use_hw, c, buf, len);
}

uint32_t mg_crc32c_sw(uint32_t c, const void *buf, size_t len) {
        pthread_once(&table_once, init_tables);
        return crc(false, c, buf, len);
}

uint32_t mg_crc32c_hw_only(uint32_t c, const void *buf, size_t len) {
        pthread_once(&table_once, init_tables);
        return crc(have_hw, c, buf, len);
}

bool mg_crc32c_hw(void) {
        pthread_once(&table_once, init_tables);
        return use_hw;
}

bool mg_crc32c_hw_present(void) {
        pthread_once(&table_once, init_tables);
        return have_hw;
}
