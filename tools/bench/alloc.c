/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A counting allocator: the bench binaries define malloc and friends, which
 * glibc supports (its own calls, strdup or fopen, come here too), count the
 * call and hand it to glibc's allocator.  Off under sanitizers, whose
 * runtime owns the allocator.
 */
#include <errno.h>
#include <stdlib.h>

#include "bench.h"

#ifndef BENCH_NO_ALLOC_COUNT

/* NOLINTBEGIN(bugprone-reserved-identifier): glibc's own allocator, which the counting one forwards to */
extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void *__libc_memalign(size_t align, size_t size);
extern void __libc_free(void *p);
/* NOLINTEND(bugprone-reserved-identifier) */

static uint64_t n_allocs, n_frees, n_bytes;

static void count(size_t size) {
        __atomic_add_fetch(&n_allocs, 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&n_bytes, size, __ATOMIC_RELAXED);
}

void *malloc(size_t size) {
        count(size);
        return __libc_malloc(size);
}

void *calloc(size_t n, size_t size) {
        count(n * size);
        return __libc_calloc(n, size);
}

void *realloc(void *p, size_t size) {
        count(size);
        return __libc_realloc(p, size);
}

void free(void *p) {
        if (p)
                __atomic_add_fetch(&n_frees, 1, __ATOMIC_RELAXED);
        __libc_free(p);
}

void *aligned_alloc(size_t align, size_t size) {
        count(size);
        return __libc_memalign(align, size);
}

void *memalign(size_t align, size_t size);
void *memalign(size_t align, size_t size) {
        count(size);
        return __libc_memalign(align, size);
}

int posix_memalign(void **ret, size_t align, size_t size) {
        void *p;

        if (align < sizeof(void *) || (align & (align - 1)))
                return EINVAL;
        count(size);
        p = __libc_memalign(align, size);
        if (!p)
                return ENOMEM;
        *ret = p;
        return 0;
}

void bench_allocs_get(struct bench_allocs *ret) {
        ret->allocs = __atomic_load_n(&n_allocs, __ATOMIC_RELAXED);
        ret->frees = __atomic_load_n(&n_frees, __ATOMIC_RELAXED);
        ret->bytes = __atomic_load_n(&n_bytes, __ATOMIC_RELAXED);
}

bool bench_alloc_counting(void) {
        return true;
}

#else

void bench_allocs_get(struct bench_allocs *ret) {
        *ret = (struct bench_allocs) { 0, 0, 0 };
}

bool bench_alloc_counting(void) {
        return false;
}

#endif
