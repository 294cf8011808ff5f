/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The subcommands of the memguard tool and what they share. */

#include <stdbool.h>
#include <stdint.h>

/* Exit statuses, as memguard(1) documents them. */
enum {
        MGT_EXIT_OK = 0,
        MGT_EXIT_FAIL = 1,      /* the environment or a scenario failed */
        MGT_EXIT_USAGE = 2,     /* bad arguments: one line on stderr */
        MGT_EXIT_NOEXEC = 126,  /* run: CMD is not executable */
        MGT_EXIT_NOTFOUND = 127,/* run: CMD not found */
        MGT_EXIT_KILLED = 137,  /* run: the guard killed CMD (128 + SIGKILL) */
};

int mgt_cmd_run(int argc, char **argv);
int mgt_cmd_watch(int argc, char **argv);
int mgt_cmd_stat(int argc, char **argv);
int mgt_cmd_demo(int argc, char **argv);
/* config-parse FILE (config-parse.c): in the command's parts, so the test
 * commands run the same code. */
int mgt_cmd_config_parse(int argc, char **argv);
/* stat's report of cg, a cgroup v2 directory (resolved), at limit_s (NULL:
 * its memory.max, else its memory.high): the exit status.  Apart from the
 * command for the tests, which give it a directory of files. */
int mgt_stat_cgroup(const char *cg, const char *limit_s, bool json);

/* One line "memguard CMD: MESSAGE (see memguard --help)" on stderr;
 * returns MGT_EXIT_USAGE. */
int mgt_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The usage error for what getopt_long() returned ('?' or ':'). */
int mgt_getopt_error(const char *cmd, int c, char **argv);
/* Prints the command's help to stdout (for --help): its usage, what it
 * does and each flag with its default; the overview of every command for
 * "" or a name it does not know.  Returns MGT_EXIT_OK. */
int mgt_help(const char *cmd);

/* Parses a size argument; on failure a usage error naming the option.
 * base_what says what a percentage is of ("--limit"), NULL if none.
 * Returns 0 or MGT_EXIT_USAGE. */
int mgt_size_arg(const char *cmd, const char *opt, const char *val, uint64_t base, const char *base_what,
                 unsigned flags, uint64_t *ret);

/* The mg-workload binary: $MEMGUARD_WORKLOAD, else next to this binary,
 * else one directory up (the build tree).  malloc'd, NULL if not found. */
char *mgt_find_workload(void);
/* This binary's own path (/proc/self/exe), malloc'd. */
char *mgt_self_exe(void);

/* Capabilities mgt_drop_privileges() may keep, where they are held. */
enum {
        MGT_KEEP_KILL = 1 << 0,         /* the pidfd fallback kill of other users' processes */
        MGT_KEEP_DAC_OVERRIDE = 1 << 1, /* run: rmdir its cgroup in a parent only root may write */
};
/*
 * After set-up (cgroups opened, guards made, a child started): drops every
 * capability but those of keep (MGT_KEEP_*) that are held, the bounding set
 * too where CAP_SETPCAP allows (libcap-ng); sets no_new_privs; confines the
 * thread with mg_confine_thread(confine_flags).  Returns 0, or a negative
 * errno with *ret_what naming the step that failed.  -EOPNOTSUPP from the
 * confinement alone means a build without libseccomp.
 */
int mgt_drop_privileges(unsigned keep, unsigned confine_flags, const char **ret_what);
/* Does every cgroup of cgs have cgroup.kill (5.14+)?  Without it the kill
 * falls back to pidfd_send_signal, which needs CAP_KILL for processes of
 * other users. */
bool mgt_all_have_cgroup_kill(char *const *cgs, int n);
/* May this process create and remove entries in dir by its permission bits
 * alone, without CAP_DAC_OVERRIDE?  (The cgroup2 root is mode 0555.) */
bool mgt_dir_writable_without_caps(const char *dir);
