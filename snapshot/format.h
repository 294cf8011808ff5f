/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The snapshot file format, version 1 (docs/snapshot.md has the table).
 * All integers little-endian.
 *
 *   [0, 128)                      header, its own crc32c in the last 4 bytes
 *   [128, data_offset)            zero (a hole)
 *   [data_offset, index_offset)   the image laid out 1:1: image byte x is at
 *                                 data_offset + x; only the ranges are
 *                                 written, the rest are holes and read as 0
 *   [index_offset, end)           n_ranges x { u64 offset, u64 length } then
 *                                 n_chunks x u32 crc32c
 *
 * index_offset = data_offset + image_bytes and the file ends exactly at
 * index_offset + index_bytes, so truncation and appended bytes are caught.
 * A chunk's checksum is the crc32c of the bytes of its chunk_bytes of the
 * image that lie in ranges, in order (0 for a chunk with none).
 *
 * The parsers are pure functions over buffers: no I/O, no allocation.  They
 * return 0 or -EBADMSG for anything malformed (bad magic, unknown version or
 * flags, a page size other than the expected one, lengths that overflow or
 * disagree with the file's length, unsorted or overlapping ranges, a bad
 * checksum) and set *why (if not NULL) to a static description.  Their
 * outputs are written only on success.
 */

#include <stddef.h>
#include <stdint.h>

#define MG_SNAP_MAGIC "\x7fMGSNAP\n"
#define MG_SNAP_MAGIC_LEN 8
#define MG_SNAP_VERSION 1
#define MG_SNAP_HEADER_BYTES 128
#define MG_SNAP_RANGE_BYTES 16
#define MG_SNAP_CRC_BYTES 4
/* Bounds a hostile header cannot get past. */
#define MG_SNAP_MIN_PAGE 1024
#define MG_SNAP_MAX_PAGE (1u << 20)
#define MG_SNAP_MAX_CHUNK (1u << 30)
#define MG_SNAP_MAX_DATA_OFFSET (UINT64_C(16) << 20)

struct mg_snap_header {
        uint32_t version, page_size, chunk_bytes, flags;
        uint64_t image_bytes, data_offset, index_offset, n_ranges, data_bytes;
        uint32_t index_crc;
};

struct mg_snap_range {
        uint64_t offset, length;        /* in the image; page-aligned */
};

uint64_t mg_snap_n_chunks(const struct mg_snap_header *h);
uint64_t mg_snap_index_bytes(const struct mg_snap_header *h);

/* Encodes h (with version, magic, header crc) into out. */
void mg_snap_header_encode(const struct mg_snap_header *h, uint8_t out[MG_SNAP_HEADER_BYTES]);

/* Parses the first len bytes of a file of file_bytes bytes.  page_size is
 * the page size the image must have (0: any valid one). */
int mg_snap_header_parse(const void *buf, size_t len, uint64_t file_bytes, uint32_t page_size,
                         struct mg_snap_header *ret, const char **why);

/* Encodes the index of h: ranges (h->n_ranges) and crcs (n_chunks) into out
 * (mg_snap_index_bytes(h) bytes); returns its crc32c for h->index_crc. */
uint32_t mg_snap_index_encode(const struct mg_snap_header *h, const struct mg_snap_range *ranges,
                              const uint32_t *crcs, uint8_t *out);

/* Parses an index of a header accepted by mg_snap_header_parse(): len must
 * be mg_snap_index_bytes(h), the crc must match, the ranges must be sorted,
 * disjoint, non-empty, page-aligned, inside the image and add up to
 * h->data_bytes.  ret_ranges gets h->n_ranges entries, ret_crcs n_chunks. */
int mg_snap_index_parse(const struct mg_snap_header *h, const void *buf, size_t len,
                        struct mg_snap_range *ret_ranges, uint32_t *ret_crcs, const char **why);
