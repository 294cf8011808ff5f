/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The snapshot file's header and index (format.h): encode, and parse with
 * every field checked against the file's size and the page size before
 * anything is allocated from it.  Pure: no I/O, fuzzed.
 */
#include <errno.h>
#include <string.h>

#include "crc32c.h"
#include "format.h"

/* Header field offsets (docs/snapshot.md). */
enum {
        OFF_MAGIC = 0,
        OFF_VERSION = 8,
        OFF_HEADER_BYTES = 12,
        OFF_PAGE_SIZE = 16,
        OFF_CHUNK_BYTES = 20,
        OFF_IMAGE_BYTES = 24,
        OFF_DATA_OFFSET = 32,
        OFF_INDEX_OFFSET = 40,
        OFF_N_RANGES = 48,
        OFF_DATA_BYTES = 56,
        OFF_INDEX_CRC = 64,
        OFF_FLAGS = 68,
        OFF_RESERVED = 72,
        OFF_HEADER_CRC = 124,
};

static void put32(uint8_t *p, uint32_t v) {
        for (int i = 0; i < 4; i++)
                p[i] = (uint8_t) (v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v) {
        for (int i = 0; i < 8; i++)
                p[i] = (uint8_t) (v >> (8 * i));
}

static uint32_t get32(const uint8_t *p) {
        uint32_t v = 0;
        for (int i = 3; i >= 0; i--)
                v = v << 8 | p[i];
        return v;
}

static uint64_t get64(const uint8_t *p) {
        uint64_t v = 0;
        for (int i = 7; i >= 0; i--)
                v = v << 8 | p[i];
        return v;
}

static int bad(const char **why, const char *what) {
        if (why)
                *why = what;
        return -EBADMSG;
}

static int is_pow2(uint64_t v) {
        return v && !(v & (v - 1));
}

uint64_t mg_snap_n_chunks(const struct mg_snap_header *h) {
        return h->image_bytes / h->chunk_bytes + (h->image_bytes % h->chunk_bytes != 0);
}

uint64_t mg_snap_index_bytes(const struct mg_snap_header *h) {
        return h->n_ranges * MG_SNAP_RANGE_BYTES + mg_snap_n_chunks(h) * MG_SNAP_CRC_BYTES;
}

void mg_snap_header_encode(const struct mg_snap_header *h, uint8_t out[MG_SNAP_HEADER_BYTES]) {
        memset(out, 0, MG_SNAP_HEADER_BYTES);
        memcpy(out + OFF_MAGIC, MG_SNAP_MAGIC, MG_SNAP_MAGIC_LEN); /* NOLINT(bugprone-not-null-terminated-result): bytes, not a string */
        put32(out + OFF_VERSION, MG_SNAP_VERSION);
        put32(out + OFF_HEADER_BYTES, MG_SNAP_HEADER_BYTES);
        put32(out + OFF_PAGE_SIZE, h->page_size);
        put32(out + OFF_CHUNK_BYTES, h->chunk_bytes);
        put64(out + OFF_IMAGE_BYTES, h->image_bytes);
        put64(out + OFF_DATA_OFFSET, h->data_offset);
        put64(out + OFF_INDEX_OFFSET, h->index_offset);
        put64(out + OFF_N_RANGES, h->n_ranges);
        put64(out + OFF_DATA_BYTES, h->data_bytes);
        put32(out + OFF_INDEX_CRC, h->index_crc);
        put32(out + OFF_FLAGS, h->flags);
        put32(out + OFF_HEADER_CRC, mg_crc32c(0, out, OFF_HEADER_CRC));
}

int mg_snap_header_parse(const void *buf, size_t len, uint64_t file_bytes, uint32_t page_size,
                         struct mg_snap_header *ret, const char **why) {
        const uint8_t *p = buf;
        struct mg_snap_header h;
        uint64_t n_chunks, index_bytes;

        if (!buf || !ret)
                return -EINVAL;
        if (len < MG_SNAP_HEADER_BYTES || file_bytes < MG_SNAP_HEADER_BYTES)
                return bad(why, "shorter than a header");
        if (memcmp(p + OFF_MAGIC, MG_SNAP_MAGIC, MG_SNAP_MAGIC_LEN) != 0)
                return bad(why, "bad magic: not a memguard snapshot");
        /* Version before checksum: a later version may lay its header out
         * differently, and "unknown version" is the useful answer then. */
        if (get32(p + OFF_VERSION) != MG_SNAP_VERSION)
                return bad(why, "unsupported format version");
        if (get32(p + OFF_HEADER_BYTES) != MG_SNAP_HEADER_BYTES)
                return bad(why, "bad header length");
        if (get32(p + OFF_HEADER_CRC) != mg_crc32c(0, p, OFF_HEADER_CRC))
                return bad(why, "header checksum mismatch");
        for (size_t i = OFF_RESERVED; i < OFF_HEADER_CRC; i++)
                if (p[i])
                        return bad(why, "reserved header bytes not zero");

        h = (struct mg_snap_header) {
                .version = MG_SNAP_VERSION,
                .page_size = get32(p + OFF_PAGE_SIZE),
                .chunk_bytes = get32(p + OFF_CHUNK_BYTES),
                .flags = get32(p + OFF_FLAGS),
                .image_bytes = get64(p + OFF_IMAGE_BYTES),
                .data_offset = get64(p + OFF_DATA_OFFSET),
                .index_offset = get64(p + OFF_INDEX_OFFSET),
                .n_ranges = get64(p + OFF_N_RANGES),
                .data_bytes = get64(p + OFF_DATA_BYTES),
                .index_crc = get32(p + OFF_INDEX_CRC),
        };
        if (h.flags != 0)
                return bad(why, "unknown header flags");
        if (!is_pow2(h.page_size) || h.page_size < MG_SNAP_MIN_PAGE || h.page_size > MG_SNAP_MAX_PAGE)
                return bad(why, "invalid page size");
        if (page_size && h.page_size != page_size)
                return bad(why, "written with another page size than this system's");
        if (!is_pow2(h.chunk_bytes) || h.chunk_bytes < h.page_size || h.chunk_bytes > MG_SNAP_MAX_CHUNK)
                return bad(why, "invalid chunk size");
        if (h.image_bytes == 0 || h.image_bytes % h.page_size)
                return bad(why, "image length not a positive multiple of the page size");
        if (h.data_offset < MG_SNAP_HEADER_BYTES || h.data_offset % h.page_size ||
            h.data_offset > MG_SNAP_MAX_DATA_OFFSET)
                return bad(why, "invalid data offset");
        if (h.image_bytes > UINT64_MAX - h.data_offset || h.index_offset != h.data_offset + h.image_bytes)
                return bad(why, "index offset does not follow the data area");
        /* Ranges are disjoint, page-aligned and not empty: at most one per
         * page.  That bounds n_ranges * 16 far below overflow. */
        if (h.n_ranges > h.image_bytes / h.page_size)
                return bad(why, "more ranges than pages");
        if (h.data_bytes > h.image_bytes || h.data_bytes % h.page_size ||
            (h.n_ranges == 0) != (h.data_bytes == 0) || h.data_bytes / h.page_size < h.n_ranges)
                return bad(why, "data length inconsistent with the ranges");
        n_chunks = h.image_bytes / h.chunk_bytes + (h.image_bytes % h.chunk_bytes != 0);
        index_bytes = h.n_ranges * MG_SNAP_RANGE_BYTES + n_chunks * MG_SNAP_CRC_BYTES;
        if (index_bytes > UINT64_MAX - h.index_offset)
                return bad(why, "index length overflows");
        if (file_bytes < h.index_offset + index_bytes)
                return bad(why, "file shorter than its header says (truncated)");
        if (file_bytes > h.index_offset + index_bytes)
                return bad(why, "file longer than its header says");
        *ret = h;
        return 0;
}

uint32_t mg_snap_index_encode(const struct mg_snap_header *h, const struct mg_snap_range *ranges,
                              const uint32_t *crcs, uint8_t *out) {
        uint8_t *p = out;
        uint64_t n_chunks = mg_snap_n_chunks(h);

        for (uint64_t i = 0; i < h->n_ranges; i++, p += MG_SNAP_RANGE_BYTES) {
                put64(p, ranges[i].offset);
                put64(p + 8, ranges[i].length);
        }
        for (uint64_t i = 0; i < n_chunks; i++, p += MG_SNAP_CRC_BYTES)
                put32(p, crcs[i]);
        return mg_crc32c(0, out, (size_t) (p - out));
}

int mg_snap_index_parse(const struct mg_snap_header *h, const void *buf, size_t len,
                        struct mg_snap_range *ret_ranges, uint32_t *ret_crcs, const char **why) {
        const uint8_t *p = buf;
        uint64_t n_chunks, end = 0, sum = 0;

        if (!h || !buf || (h->n_ranges && !ret_ranges) || !ret_crcs)
                return -EINVAL;
        n_chunks = mg_snap_n_chunks(h);
        if (len != mg_snap_index_bytes(h))
                return bad(why, "index length mismatch");
        if (mg_crc32c(0, buf, len) != h->index_crc)
                return bad(why, "index checksum mismatch");
        /* Check everything before writing any output. */
        for (uint64_t i = 0; i < h->n_ranges; i++) {
                uint64_t off = get64(p + i * MG_SNAP_RANGE_BYTES), n = get64(p + i * MG_SNAP_RANGE_BYTES + 8);
                if (n == 0 || off % h->page_size || n % h->page_size)
                        return bad(why, "range empty or not page-aligned");
                if (off > h->image_bytes || n > h->image_bytes - off)
                        return bad(why, "range outside the image");
                if (off < end)
                        return bad(why, "ranges unsorted or overlapping");
                end = off + n;
                sum += n; /* <= image_bytes: the ranges are disjoint inside it */
        }
        if (sum != h->data_bytes)
                return bad(why, "ranges do not add up to the data length");
        for (uint64_t i = 0; i < h->n_ranges; i++) {
                ret_ranges[i].offset = get64(p + i * MG_SNAP_RANGE_BYTES);
                ret_ranges[i].length = get64(p + i * MG_SNAP_RANGE_BYTES + 8);
        }
        p += h->n_ranges * MG_SNAP_RANGE_BYTES;
        for (uint64_t i = 0; i < n_chunks; i++)
                ret_crcs[i] = get32(p + i * MG_SNAP_CRC_BYTES);
        return 0;
}
