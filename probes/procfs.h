/* procfs.h — reading small text files relative to a directory fd (a /proc/PID dir, a cgroup
 * dir, a fixture tree), and the number helpers every parser shares. Depends on libc only. */
#ifndef SOP_PROCFS_H
#define SOP_PROCFS_H

#include <stddef.h>
#include <stdint.h>

#include "na.h" /* SOP_NA: "not measured" */

/* Cap on one read of /proc/PID/maps (the process map, the Python runtime search, the sampler's
 * re-read): 16 MiB is some 150,000 mappings; a longer file is read truncated. */
#define SOP_MAPS_MAX_BYTES (16u << 20)

/* Read the file `path` (relative to dirfd; AT_FDCWD for absolute) into a NUL-terminated
 * buffer of at most `max_bytes` bytes. On success *out is malloc'd (caller frees) and *len
 * its length; a file longer than max_bytes is truncated (a parser must cope). Returns 0 or
 * -errno. Reads until EOF: /proc files are generated on read. */
int sop__read_file_at(int dirfd, const char *path, size_t max_bytes, char **out, size_t *len);

/* Same into a caller buffer of `cap` bytes (cap >= 1); returns bytes read or -errno. */
long sop__read_small_at(int dirfd, const char *path, char *buf, size_t cap);
/* Like sop__read_small_at, but a short first read of a small /proc file (stat, status, io,
 * schedstat, limits, smaps_rollup, short record lists) is taken as the whole file: saves the
 * read() that would only see EOF, about 15% of the cost of a per-thread file. */
long sop__read_seq_at(int dirfd, const char *path, char *buf, size_t cap);

/* Parse a decimal integer at *p, skipping leading blanks; advances *p. Returns SOP_NA when no
 * digits are there. */
int64_t sop__parse_i64(const char **p);

/* For "Key:   value kB" style files: find the line starting with `key` followed by ':' in
 * text and parse the number after it. Returns SOP_NA if absent or malformed. */
int64_t sop__kv_i64(const char *text, const char *key);

/* A task of pid's thread group that is alive: pid itself, unless its leader is a zombie (the
 * main thread exited, other threads run on: a "zombie leader"), then another thread's tid, whose
 * /proc directory shows the process's memory, maps, exe and root that the leader's no longer
 * does. Depends on the proc_root tree. */
int sop__live_task(const char *proc_root, int pid);

/* Count the CPUs in a list like "0-3,8,10-11"; -1 when malformed. */
int sop__cpulist_count(const char *list);

#endif
