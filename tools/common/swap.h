/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Swap areas for the benchmarks and the kernel suite, by system calls
 * rather than busybox (whose swapon takes no priority): a swapfile, a zram
 * device, their headers, and what /proc/swaps and zram's mm_stat say.
 * Needs root; 0 or a negative errno.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A file of mib MiB written with zeros (a swapfile may have no holes) and
 * a swap header; kept if it has that size and header. */
int mgt_swapfile_make(const char *path, uint64_t mib);
/* Writes the swap header (mkswap) on a file or block device of bytes. */
int mgt_mkswap(const char *path, uint64_t bytes);
int mgt_swapon(const char *path, uint32_t prio);
/* 0 also when it was not on. */
int mgt_swapoff(const char *path);
bool mgt_swap_active(const char *path);
/* Off, reset, sized, given a swap header: an empty zram device for the next case. */
int mgt_zram_reset(const char *dev, const char *sys, uint64_t mib);
/* mm_stat's orig_data_size and compr_data_size, in bytes. */
int mgt_zram_stat(const char *sys, uint64_t *ret_orig, uint64_t *ret_compr);
/* The compressor zram uses ("lzo-rle"), into buf. */
void mgt_zram_algorithm(const char *sys, char *buf, size_t size);
/* The KiB /proc/swaps says are used on the area at path; 0 if it is not on. */
uint64_t mgt_swap_used_kib(const char *path);
