/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as iSCSI, ext4 and
 * btrfs use it.  Chained like zlib's crc32(): start with 0 and pass the
 * previous result back in; mg_crc32c(0, "123456789", 9) == 0xE3069283.
 * Uses the SSE4.2 crc32 instruction where the CPU has it and it is faster
 * than a slicing-by-8 table (8 KiB, built once, thread-safe; both timed once
 * on first use: under an emulator the instruction can be the slower one).
 */
uint32_t mg_crc32c(uint32_t crc, const void *buf, size_t len);

/* The table-driven version alone, for tests that compare the two. */
uint32_t mg_crc32c_sw(uint32_t crc, const void *buf, size_t len);
/* True if mg_crc32c() uses the CPU instruction. */
bool mg_crc32c_hw(void);
/* For tests: whether the CPU has the instruction, and the instruction's
 * version alone (the table's where it has not). */
bool mg_crc32c_hw_present(void);
uint32_t mg_crc32c_hw_only(uint32_t crc, const void *buf, size_t len);
