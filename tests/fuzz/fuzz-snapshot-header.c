/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The snapshot header and index parsers (snapshot/format.h), on hostile
 * files.  The first byte picks how the rest is used:
 *   bit 0 clear: raw bytes (magic, version, checksum, reserved bytes); a
 *                header the parser accepts must encode back to the same
 *                128 bytes, or a field is ignored;
 *   bit 0 set:   fields from the input, encoded with valid checksums, so
 *                the fuzzer gets past the crc to the length arithmetic;
 *                then an index from the rest of the input, also with a
 *                valid crc, through mg_snap_index_parse().
 * Only snapshot/format.h is used: the module belongs to its own owners.
 */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "crc32c.h"
#include "format.h"

struct input {
        const uint8_t *p;
        size_t left;
};

static uint64_t take(struct input *in, size_t n) {
        uint64_t v = 0;
        for (size_t i = 0; i < n && in->left; i++, in->p++, in->left--)
                v |= (uint64_t) *in->p << (8 * i);
        return v;
}

/* Indexes of at most this many entries: the parser is linear in them. */
#define MAX_ENTRIES 4096

static void structured(struct input *in) {
        static struct mg_snap_range ranges[MAX_ENTRIES], got_ranges[MAX_ENTRIES];
        static uint32_t crcs[MAX_ENTRIES], got_crcs[MAX_ENTRIES];
        static uint8_t index[MAX_ENTRIES * 20];
        uint8_t hdr[MG_SNAP_HEADER_BYTES];
        struct mg_snap_header h = {}, got;
        const char *why = NULL;
        uint64_t n_chunks, index_bytes, file_bytes;
        uint32_t page = (uint32_t) take(in, 1) % 3 == 0 ? 4096 : 0;
        int r;

        /* small shifts keep the sizes plausible often enough to go deep */
        h.page_size = UINT32_C(1) << (take(in, 1) % 24);
        h.chunk_bytes = UINT32_C(1) << (take(in, 1) % 32);
        h.image_bytes = take(in, 1) & 1 ? take(in, 8) : take(in, 2) * (uint64_t) h.page_size;
        h.data_offset = take(in, 1) & 1 ? take(in, 8) : take(in, 1) * (uint64_t) h.page_size;
        h.index_offset = take(in, 1) & 1 ? take(in, 8) : h.data_offset + h.image_bytes;
        h.n_ranges = take(in, 1) & 1 ? take(in, 8) : take(in, 1) % 64;
        h.data_bytes = take(in, 1) & 1 ? take(in, 8) : take(in, 2) * (uint64_t) h.page_size;
        h.flags = take(in, 1) == 0xff ? (uint32_t) take(in, 4) : 0;
        n_chunks = mg_snap_n_chunks(&h);
        index_bytes = mg_snap_index_bytes(&h);
        file_bytes = h.index_offset + index_bytes + (take(in, 1) == 0x5a ? take(in, 1) : 0);

        if (h.n_ranges <= MAX_ENTRIES && n_chunks <= MAX_ENTRIES && index_bytes <= sizeof(index)) {
                for (uint64_t i = 0; i < h.n_ranges; i++) {
                        ranges[i].offset = take(in, 1) & 1 ? take(in, 8) : take(in, 2) * (uint64_t) h.page_size;
                        ranges[i].length = take(in, 1) & 1 ? take(in, 8) : take(in, 1) * (uint64_t) h.page_size;
                }
                for (uint64_t i = 0; i < n_chunks; i++)
                        crcs[i] = (uint32_t) take(in, 4);
                h.index_crc = mg_snap_index_encode(&h, ranges, crcs, index);
                if (take(in, 1) == 0xa5 && index_bytes)
                        index[take(in, 2) % index_bytes] ^= (uint8_t) (1u << (take(in, 1) % 8));
        } else {
                index_bytes = 0; /* too big to build: the header alone */
        }
        mg_snap_header_encode(&h, hdr);
        r = mg_snap_header_parse(hdr, sizeof(hdr), file_bytes, page, &got, &why);
        FUZZ_CHECK((r == 0) == (why == NULL));
        if (r < 0)
                return;
        FUZZ_CHECK(got.index_offset == got.data_offset + got.image_bytes);
        FUZZ_CHECK(file_bytes == got.index_offset + mg_snap_index_bytes(&got));
        FUZZ_CHECK(got.n_ranges <= got.image_bytes / got.page_size);
        if (index_bytes == 0 || got.n_ranges > MAX_ENTRIES || mg_snap_n_chunks(&got) > MAX_ENTRIES)
                return;
        why = NULL;
        r = mg_snap_index_parse(&got, index, (size_t) index_bytes, got_ranges, got_crcs, &why);
        FUZZ_CHECK((r == 0) == (why == NULL));
        if (r < 0)
                return;
        /* what the restore relies on: sorted, disjoint, aligned, inside, summing up */
        uint64_t sum = 0, end = 0;
        for (uint64_t i = 0; i < got.n_ranges; i++) {
                FUZZ_CHECK(got_ranges[i].length > 0 && got_ranges[i].offset >= end);
                FUZZ_CHECK(got_ranges[i].offset % got.page_size == 0 && got_ranges[i].length % got.page_size == 0);
                FUZZ_CHECK(got_ranges[i].length <= got.image_bytes && got_ranges[i].offset <= got.image_bytes - got_ranges[i].length);
                end = got_ranges[i].offset + got_ranges[i].length;
                sum += got_ranges[i].length;
        }
        FUZZ_CHECK(sum == got.data_bytes);
}

static void raw(struct input *in) {
        uint8_t again[MG_SNAP_HEADER_BYTES];
        struct mg_snap_header h;
        const char *why = NULL;
        uint64_t file_bytes = take(in, 8);
        uint32_t page = take(in, 1) & 1 ? 4096 : 0;
        int r = mg_snap_header_parse(in->p, in->left, file_bytes, page, &h, &why);

        FUZZ_CHECK((r == 0) == (why == NULL));
        if (r < 0)
                return;
        FUZZ_CHECK(in->left >= MG_SNAP_HEADER_BYTES);
        mg_snap_header_encode(&h, again);
        FUZZ_CHECK(memcmp(again, in->p, MG_SNAP_HEADER_BYTES) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct input in = { data, size };

        if (size == 0)
                return 0;
        if (take(&in, 1) & 1)
                structured(&in);
        else
                raw(&in);
        return 0;
}
