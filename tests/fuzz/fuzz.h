/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * One libFuzzer target per parser.  Built with clang -fsanitize=fuzzer by
 * tests/fuzz/run-fuzzers; built with fuzz-main.c by meson, which replays the
 * seed corpus (tests/fuzz/corpus/<target>/) in the unit suite.
 *
 * A target checks more than "does not crash": what a parser accepts must
 * agree with a slow reference written from the kernel's format (kv.h), and
 * FUZZ_CHECK aborts on any disagreement so the fuzzer keeps the input.
 */

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond)                                                                       \
        do {                                                                                   \
                if (!(cond)) {                                                                 \
                        fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
                        abort();                                                               \
                }                                                                              \
        } while (0)
