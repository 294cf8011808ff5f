/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The parsers of parse.h: pure functions over buffers, no allocation, no
 * file system; what is not the kernel's format is -EBADMSG.  Fuzzed
 * (tests/fuzz) against slow references written from the kernel's format.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "parse.h"
#include "util.h"

/* Eight ASCII digits at s, read as one little-endian word, into their
 * value: the value of a kernel file is most often 8 to 12 digits (a
 * byte count), and this takes a dozen instructions where a loop over the
 * digits takes fifty.  False if any of the eight is not a digit. */
static inline bool eight_digits(const char *s, uint64_t *ret) {
        uint64_t v;

        memcpy(&v, s, sizeof(v));
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        v = __builtin_bswap64(v);
#endif
        /* '0'..'9' is 0x30..0x39: the high nibble is 3, and stays 3 with 6 added */
        if (((v & 0xF0F0F0F0F0F0F0F0) | (((v + 0x0606060606060606) & 0xF0F0F0F0F0F0F0F0) >> 4)) !=
            0x3333333333333333)
                return false;
        v -= 0x3030303030303030;
        v = v * 10 + (v >> 8); /* pairs of digits, in every other byte */
        *ret = (((v & 0x000000FF000000FF) * (100 + (UINT64_C(1000000) << 32))) +
                (((v >> 16) & 0x000000FF000000FF) * (1 + (UINT64_C(10000) << 32)))) >>
               32;
        return true;
}

/* Reads a decimal u64 at *p (no sign, no spaces); advances *p.  Up to 19
 * digits cannot overflow, so only longer numbers pay for the check. */
static inline int parse_digits(const char **p, const char *end, uint64_t *ret) {
        const char *s = *p, *start = *p;
        uint64_t v = 0, eight;

        while (end - s >= 8 && eight_digits(s, &eight)) {
                v = v * 100000000 + eight; /* wraps past 19 digits: redone below */
                s += 8;
        }
        while (s < end && (unsigned) (*s - '0') < 10)
                v = v * 10 + (unsigned) (*s++ - '0');
        if (s == start)
                return -EBADMSG;
        if (s - start > 19) {
                v = 0;
                for (const char *c = start; c < s; c++) {
                        unsigned d = (unsigned) (*c - '0');
                        if (v > (UINT64_MAX - d) / 10)
                                return -EBADMSG;
                        v = v * 10 + d;
                }
        }
        *p = s;
        *ret = v;
        return 0;
}

MG_HOT int mg_parse_u64_value(const char *buf, size_t len, uint64_t *ret) {
        const char *p = buf, *end;
        uint64_t v;

        if (!buf || !ret)
                return -EINVAL;
        if (len > 0 && buf[len - 1] == '\n')
                len--;
        end = buf + len;
        if (len == 3 && memcmp(buf, "max", 3) == 0) {
                *ret = MG_UNLIMITED;
                return 0;
        }
        if (parse_digits(&p, end, &v) < 0 || p != end)
                return -EBADMSG;
        *ret = v;
        return 0;
}

/* A "key value\n" file: the format of memory.stat, memory.events,
 * cgroup.events and cpu.stat.  Keys are looked up in a table sorted by name;
 * the value lands at the key's offset in the caller's struct of u64. */
struct kv_key {
        const char *name;
        size_t len, offset;
};
#define KV_KEY(name, offset) { name, sizeof(name) - 1, offset }

static const struct kv_key *kv_lookup(const struct kv_key *keys, size_t n, const char *k, size_t klen) {
        size_t lo = 0, hi = n;

        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                const struct kv_key *key = &keys[mid];
                /* the first byte settles most steps without a call */
                int c = (unsigned char) key->name[0] - (unsigned char) k[0];
                if (c == 0) {
                        c = memcmp(key->name, k, key->len < klen ? key->len : klen);
                        if (c == 0)
                                c = (key->len > klen) - (key->len < klen);
                }
                if (c == 0)
                        return key;
                if (c < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

static bool is_key_char(char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

/* Returns 0 and the mask of table keys seen, or -EBADMSG.  The kernel ends
 * every line with '\n', so input that does not is truncated.  ret_lines
 * (optional, n entries) gets the line number of each key seen. */
static int kv_parse(const char *buf, size_t len, const struct kv_key *keys, size_t n, void *out,
                    uint64_t *ret_seen, uint16_t *ret_lines) {
        const char *p = buf, *end = buf + len;
        uint64_t seen = 0;
        unsigned line_no = 0;

        if (!buf || len == 0 || buf[len - 1] != '\n')
                return -EBADMSG;
        while (p < end) {
                const char *line = p, *k = p;
                const struct kv_key *key;
                uint64_t v;
                int r;

                while (p < end && is_key_char(*p))
                        p++;
                if (p == k || p >= end || *p != ' ')
                        return -EBADMSG;
                key = kv_lookup(keys, n, k, (size_t) (p - k));
                p++;
                r = parse_digits(&p, end, &v);
                if (r < 0)
                        return r;
                if (p >= end || *p != '\n' || p - line >= MG_PARSE_MAX_LINE)
                        return -EBADMSG;
                p++;
                line_no++;
                if (!key)
                        continue; /* keys come and go between kernels */
                uint64_t bit = UINT64_C(1) << (key - keys);
                if (seen & bit)
                        return -EBADMSG;
                seen |= bit;
                memcpy((char *) out + key->offset, &v, sizeof(v));
                if (ret_lines)
                        ret_lines[key - keys] = (uint16_t) (line_no - 1 < UINT16_MAX ? line_no - 1 : UINT16_MAX);
        }
        *ret_seen = seen;
        return 0;
}

#define MS(f) KV_KEY(#f, offsetof(struct mg_memstat, f))
/* Sorted by name (strcmp order). */
static const struct kv_key memstat_keys[] = {
        MS(active_anon), MS(active_file), MS(anon), MS(file), MS(file_dirty), MS(file_mapped),
        MS(file_writeback), MS(inactive_anon), MS(inactive_file), MS(kernel), MS(kernel_stack),
        MS(pagetables), MS(percpu), MS(pgfault), MS(pgmajfault), MS(pgscan), MS(pgsteal),
        MS(sec_pagetables), MS(shmem), MS(slab), MS(slab_reclaimable), MS(slab_unreclaimable),
        MS(sock), MS(unevictable), MS(vmalloc), MS(workingset_activate_anon), MS(workingset_activate_file),
        MS(workingset_refault_anon), MS(workingset_refault_file), MS(workingset_restore_anon),
        MS(workingset_restore_file),
};
#define N_MEMSTAT_KEYS (sizeof(memstat_keys) / sizeof(memstat_keys[0]))

static uint64_t memstat_bit(const char *name) {
        return UINT64_C(1) << (kv_lookup(memstat_keys, N_MEMSTAT_KEYS, name, strlen(name)) - memstat_keys);
}

/* Before 5.18 there is no "kernel" line; it is the kmem counter, which these
 * parts make up (sock is counted apart). */
static void derive_kernel(struct mg_memstat *st) {
        st->kernel = st->kernel_stack + st->pagetables + st->sec_pagetables + st->percpu + st->vmalloc + st->slab;
        if (st->slab == 0)
                st->kernel += st->slab_reclaimable + st->slab_unreclaimable;
        st->kernel_derived = true;
}

static const char *const tick_keys[] = {
        "anon", "shmem", "sock", "workingset_restore_anon", "workingset_restore_file",
        "file", "file_mapped", "workingset_refault_file", "pgmajfault", "pgsteal",
        "file_dirty", "file_writeback",
};
static const char *const kernel_parts[] = {
        "kernel_stack", "pagetables", "sec_pagetables", "percpu", "vmalloc", "slab", "slab_reclaimable",
        "slab_unreclaimable",
};

/* The lines of the keys the tick needs, in line order. */
static void learn_layout(uint64_t seen, const uint16_t *lines, struct mg_memstat_layout *l) {
        uint64_t want = 0;

        for (size_t i = 0; i < sizeof(tick_keys) / sizeof(tick_keys[0]); i++)
                want |= memstat_bit(tick_keys[i]);
        l->kernel_derived = !(seen & memstat_bit("kernel"));
        if (l->kernel_derived)
                for (size_t i = 0; i < sizeof(kernel_parts) / sizeof(kernel_parts[0]); i++)
                        want |= memstat_bit(kernel_parts[i]);
        else
                want |= memstat_bit("kernel");
        want &= seen;
        l->n = 0;
        for (size_t k = 0; k < N_MEMSTAT_KEYS; k++) {
                if (!(want & (UINT64_C(1) << k)))
                        continue;
                if (lines[k] == UINT16_MAX) {
                        l->n = 0; /* beyond any kernel's memory.stat: always parse in full */
                        return;
                }
                size_t i = l->n++;
                for (; i > 0 && l->line[i - 1] > lines[k]; i--) {
                        l->line[i] = l->line[i - 1];
                        l->key[i] = l->key[i - 1];
                }
                l->line[i] = lines[k];
                l->key[i] = (uint8_t) k;
        }
}

int mg_parse_memstat(const char *buf, size_t len, struct mg_memstat *ret) {
        return mg_parse_memstat_keys(buf, len, ret, NULL, NULL);
}

int mg_parse_memstat_keys(const char *buf, size_t len, struct mg_memstat *ret, uint64_t *ret_keys,
                          struct mg_memstat_layout *ret_layout) {
        struct mg_memstat st = {};
        uint16_t lines[N_MEMSTAT_KEYS];
        uint64_t seen;
        int r;

        if (!ret)
                return -EINVAL;
        r = kv_parse(buf, len, memstat_keys, N_MEMSTAT_KEYS, &st, &seen, ret_layout ? lines : NULL);
        if (r < 0)
                return r;
        /* Every kernel with cgroup v2 memory.stat prints anon first. */
        if (!(seen & memstat_bit("anon")))
                return -EBADMSG;
        if (!(seen & memstat_bit("kernel")))
                derive_kernel(&st);
        *ret = st;
        if (ret_keys)
                *ret_keys = seen;
        if (ret_layout)
                learn_layout(seen, lines, ret_layout);
        return 0;
}

int mg_parse_memstat_tick(const char *buf, size_t len, const struct mg_memstat_layout *l, struct mg_memstat *ret) {
        struct mg_memstat st = {};
        const char *p = buf, *end;
        unsigned line_no = 0;

        if (!buf || !l || !ret)
                return -EINVAL;
        if (l->n == 0)
                return -ESTALE;
        if (len == 0 || buf[len - 1] != '\n')
                return -EBADMSG;
        end = buf + len;
        for (unsigned i = 0; i < l->n; i++) {
                const struct kv_key *key = &memstat_keys[l->key[i]];
                const char *line;
                uint64_t v;

                for (; line_no < l->line[i]; line_no++) {
                        p = memchr(p, '\n', (size_t) (end - p));
                        if (!p)
                                return -ESTALE; /* fewer lines than learnt */
                        p++;
                }
                line = p;
                if ((size_t) (end - p) <= key->len || memcmp(p, key->name, key->len) != 0 || p[key->len] != ' ')
                        return -ESTALE;
                p += key->len + 1;
                if (parse_digits(&p, end, &v) < 0 || p >= end || *p != '\n' || p - line >= MG_PARSE_MAX_LINE)
                        return -EBADMSG;
                p++;
                line_no++;
                memcpy((char *) &st + key->offset, &v, sizeof(v));
        }
        if (l->kernel_derived)
                derive_kernel(&st);
        *ret = st;
        return 0;
}

#define ME(f) KV_KEY(#f, offsetof(struct mg_mem_events, f))
static const struct kv_key events_keys[] = {
        ME(high), ME(low), ME(max), ME(oom), ME(oom_group_kill), ME(oom_kill),
};

int mg_parse_mem_events(const char *buf, size_t len, struct mg_mem_events *ret) {
        return mg_parse_mem_events_keys(buf, len, ret, NULL);
}

int mg_parse_mem_events_keys(const char *buf, size_t len, struct mg_mem_events *ret, uint64_t *ret_keys) {
        struct mg_mem_events ev = {};
        uint64_t seen;
        int r;

        if (!ret)
                return -EINVAL;
        r = kv_parse(buf, len, events_keys, sizeof(events_keys) / sizeof(events_keys[0]), &ev, &seen, NULL);
        if (r < 0)
                return r;
        *ret = ev;
        if (ret_keys)
                *ret_keys = seen;
        return 0;
}

static const struct kv_key cpu_keys[] = {
        KV_KEY("usage_usec", 0),
};

int mg_parse_cpu_usage(const char *buf, size_t len, uint64_t *ret_usage_usec) {
        uint64_t usage = 0, seen;
        int r;

        if (!ret_usage_usec)
                return -EINVAL;
        r = kv_parse(buf, len, cpu_keys, 1, &usage, &seen, NULL);
        if (r < 0)
                return r;
        if (!seen)
                return -EBADMSG;
        *ret_usage_usec = usage;
        return 0;
}

struct cgroup_events {
        uint64_t frozen, populated;
};
static const struct kv_key cgroup_events_keys[] = {
        KV_KEY("frozen", offsetof(struct cgroup_events, frozen)),
        KV_KEY("populated", offsetof(struct cgroup_events, populated)),
};

int mg_parse_populated(const char *buf, size_t len, int *ret_populated) {
        struct cgroup_events ev = {};
        uint64_t seen;
        int r;

        if (!ret_populated)
                return -EINVAL;
        r = kv_parse(buf, len, cgroup_events_keys, 2, &ev, &seen, NULL);
        if (r < 0)
                return r;
        if (!(seen & 2) || ev.populated > 1)
                return -EBADMSG;
        *ret_populated = (int) ev.populated;
        return 0;
}

int mg_parse_frozen(const char *buf, size_t len, int *ret_frozen) {
        struct cgroup_events ev = {};
        uint64_t seen;
        int r;

        if (!ret_frozen)
                return -EINVAL;
        r = kv_parse(buf, len, cgroup_events_keys, 2, &ev, &seen, NULL);
        if (r < 0)
                return r;
        if (!(seen & 1))
                return -ENODATA;
        if (ev.frozen > 1)
                return -EBADMSG;
        *ret_frozen = (int) ev.frozen;
        return 0;
}

/* Expects the literal word w at *p and advances past it. */
static bool skip_word(const char **p, const char *end, const char *w) {
        size_t n = strlen(w);
        if ((size_t) (end - *p) < n || memcmp(*p, w, n) != 0)
                return false;
        *p += n;
        return true;
}

/* "12.34" as hundredths; the kernel prints LOAD_INT.LOAD_FRAC with two digits. */
static int parse_centi(const char **p, const char *end, uint32_t *ret) {
        uint64_t ip;
        int r = parse_digits(p, end, &ip);
        if (r < 0)
                return r;
        if (end - *p < 3 || (*p)[0] != '.' || (*p)[1] < '0' || (*p)[1] > '9' || (*p)[2] < '0' ||
            (*p)[2] > '9' || ip > 100)
                return -EBADMSG;
        uint64_t v = ip * 100 + (uint64_t) ((*p)[1] - '0') * 10 + (uint64_t) ((*p)[2] - '0');
        if (v > 10000)
                return -EBADMSG; /* a share of time: at most 100.00 */
        *ret = (uint32_t) v;
        *p += 3;
        return 0;
}

/* One line, "some" or "full" (word) included; the line bound is the one
 * kv_parse applies: without its newline, shorter than MG_PARSE_MAX_LINE. */
static int parse_psi_line(const char **p, const char *end, const char *word, struct mg_psi_line *ret) {
        struct mg_psi_line l;
        const char *start = *p;

        if (!skip_word(p, end, word) || !skip_word(p, end, " avg10=") || parse_centi(p, end, &l.avg10_centipct) < 0 ||
            !skip_word(p, end, " avg60=") || parse_centi(p, end, &l.avg60_centipct) < 0 ||
            !skip_word(p, end, " avg300=") || parse_centi(p, end, &l.avg300_centipct) < 0 ||
            !skip_word(p, end, " total=") || parse_digits(p, end, &l.total_usec) < 0 ||
            !skip_word(p, end, "\n") || *p - 1 - start >= MG_PARSE_MAX_LINE)
                return -EBADMSG;
        *ret = l;
        return 0;
}

int mg_parse_psi(const char *buf, size_t len, struct mg_psi *ret) {
        struct mg_psi psi = {};
        const char *p = buf, *end;

        if (!buf || !ret)
                return -EINVAL;
        end = buf + len; /* not before the check: NULL + len is undefined */
        if (parse_psi_line(&p, end, "some", &psi.some) < 0)
                return -EBADMSG;
        if (p < end) {
                if (parse_psi_line(&p, end, "full", &psi.full) < 0 || p != end)
                        return -EBADMSG;
                psi.has_full = true;
        }
        *ret = psi;
        return 0;
}

/* splitmix64's finalizer: each pid spreads over all 64 bits, so a sum of
 * them tells sets apart (order-free), where a plain sum of pids would not. */
static uint64_t mix64(uint64_t x) {
        x ^= x >> 30;
        x *= UINT64_C(0xbf58476d1ce4e5b9);
        x ^= x >> 27;
        x *= UINT64_C(0x94d049bb133111eb);
        x ^= x >> 31;
        return x;
}

int mg_parse_procs(const char *buf, size_t len, struct mg_procs *ret) {
        struct mg_procs r = {};
        const char *p = buf, *end;

        if ((!buf && len) || !ret)
                return -EINVAL;
        end = buf + len;
        while (p < end) {
                uint64_t pid;
                if (*p == '0' || parse_digits(&p, end, &pid) < 0 || pid > INT32_MAX || p == end || *p != '\n')
                        return -EBADMSG;
                p++;
                if (r.n < MG_PROCS_KEEP)
                        r.pid[r.n] = (int32_t) pid;
                if (r.n == UINT32_MAX)
                        return -EBADMSG;
                r.n++;
                r.digest += mix64(pid);
        }
        *ret = r;
        return 0;
}

int mg_parse_proc_stat_state(const char *buf, size_t len, char *ret_state) {
        const char *p = buf, *end, *close = NULL;
        uint64_t pid;

        if ((!buf && len) || !ret_state)
                return -EINVAL;
        end = buf + len;
        if (parse_digits(&p, end, &pid) < 0 || !skip_word(&p, end, " ("))
                return -EBADMSG;
        for (const char *c = end; c > p;)
                if (*--c == ')') {
                        close = c;
                        break;
                }
        /* ") S " with S a letter: the kernel's task_state_array */
        if (!close || end - close < 4 || close[1] != ' ' || close[3] != ' ' ||
            !((close[2] >= 'A' && close[2] <= 'Z') || (close[2] >= 'a' && close[2] <= 'z')))
                return -EBADMSG;
        *ret_state = close[2];
        return 0;
}

bool mg_parse_record_field(const char **p, const char *end, const char *key, char stop, uint64_t *ret) {
        size_t kl = strlen(key);
        const char *v, *e;

        if ((size_t) (end - *p) < kl || memcmp(*p, key, kl) != 0)
                return false;
        v = *p + kl;
        e = memchr(v, stop, (size_t) (end - v));
        /* digits only, no leading zero: "max" and "007" are not what we write */
        if (!e || e == v || *v < '0' || *v > '9' || (*v == '0' && e - v > 1))
                return false;
        for (const char *c = v; c < e; c++)
                if (*c < '0' || *c > '9')
                        return false;
        if (mg_parse_u64_value(v, (size_t) (e - v), ret) < 0)
                return false;
        *p = e + 1;
        return true;
}
