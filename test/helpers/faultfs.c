// SPDX-License-Identifier: Apache-2.0
//
// faultfs: an LD_PRELOAD library that records, and on command fails, the file
// operations a process makes under one directory (test/helpers/faultfs.py builds it
// with the C compiler tools/bootstrap requires and reads what it wrote).
//
// It sits between the process and libc, below everything the process loads:
// the libsqlite3 behind Python's sqlite3 module calls open64, pwrite64,
// fdatasync, ftruncate64 and unlink through the dynamic linker, so the
// memory node under test runs the very SQLite library and open code it runs
// in production, and nothing in the product knows faultfs is there.
//
// Environment (read once, when the library loads):
//   MIRA_FAULTFS_ROOT     absolute directory; only paths inside it are recorded
//   MIRA_FAULTFS_LOG      file the records are appended to (one per operation)
//   MIRA_FAULTFS_CONTROL  optional 128-byte file, mapped shared: the fault to inject
//
// Each record is a fixed header followed by the path(s) and the bytes written
// (see struct record and test/helpers/faultfs.py, which parses it). Records are made
// under one mutex per process, after the operation, with the time it began
// (CLOCK_MONOTONIC, the clock of Python's time.monotonic()), so a test can
// tell which operations happened before a reply it received.
//
// Faults: while the control file's `kinds` has an operation's bit and its
// `match` is a substring of the file's path, the operation is not performed
// and returns -1 with errno `error`, `remaining` times (-1: until cleared),
// once `after` such operations have run.

#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

enum op {
  OP_OPEN = 1, OP_WRITE = 2, OP_TRUNCATE = 3, OP_SYNC = 4, OP_RENAME = 5, OP_LINK = 6,
  OP_UNLINK = 7, OP_MKDIR = 8, OP_RMDIR = 9,
};

enum flag {
  FLAG_CREATED = 1, FLAG_TRUNCATED = 2, FLAG_DIRECTORY = 4, FLAG_DATA_ONLY = 8,
  FLAG_INJECTED = 16,
};

// The operations a fault can be armed for (the control file's `kinds` bits).
enum kind { KIND_WRITE = 1, KIND_SYNC = 2, KIND_TRUNCATE = 4, KIND_DIRECTORY_SYNC = 8 };

struct record {
  uint32_t size;          // of the whole record, header included
  uint16_t op;
  uint16_t flags;
  int32_t pid;
  int32_t error;          // 0, or the errno the operation failed with
  uint64_t began_ns;      // CLOCK_MONOTONIC when the operation began
  uint64_t inode;
  int64_t offset;         // write: where; truncate: the new length
  uint32_t path_length;
  uint32_t path2_length;  // rename and link: the new name
  uint32_t data_length;   // write: the bytes written, which follow the paths
  uint32_t magic;         // RECORD_MAGIC: where a whole record starts (faultfs.py parse_log)
} __attribute__((packed));

// A process killed while it appends a record can leave it torn, and the next
// process appends after it: the reader finds the next record by this value.
#define RECORD_MAGIC 0x3153464DU

struct control {
  uint32_t kinds;
  int32_t error;
  int32_t remaining;
  uint32_t injected;
  int32_t after;  // matching operations to let run before the first failure
  char match[108];
} __attribute__((packed));

#define MAX_FDS 65536

struct tracked {
  uint64_t device;
  uint64_t inode;
  int directory;
  char *path;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char root[PATH_MAX];
static size_t root_length;
static int log_fd = -1;
static struct control *control;
static struct tracked *fds[MAX_FDS];

static int (*real_open)(const char *, int, ...);
static int (*real_open64)(const char *, int, ...);
static int (*real_openat)(int, const char *, int, ...);
static int (*real_openat64)(int, const char *, int, ...);
static int (*real_close)(int);
static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_pwrite64)(int, const void *, size_t, off_t);
static ssize_t (*real_writev)(int, const struct iovec *, int);
static int (*real_ftruncate)(int, off_t);
static int (*real_ftruncate64)(int, off_t);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_rename)(const char *, const char *);
static int (*real_renameat)(int, const char *, int, const char *);
static int (*real_renameat2)(int, const char *, int, const char *, unsigned int);
static int (*real_link)(const char *, const char *);
static int (*real_linkat)(int, const char *, int, const char *, int);
static int (*real_unlink)(const char *);
static int (*real_unlinkat)(int, const char *, int);
static int (*real_mkdir)(const char *, mode_t);
static int (*real_mkdirat)(int, const char *, mode_t);
static int (*real_rmdir)(const char *);

#define RESOLVE(name) real_##name = dlsym(RTLD_NEXT, #name)

static void before_fork(void) { pthread_mutex_lock(&lock); }
static void after_fork(void) { pthread_mutex_unlock(&lock); }

__attribute__((constructor)) static void faultfs_init(void) {
  RESOLVE(open); RESOLVE(open64); RESOLVE(openat); RESOLVE(openat64); RESOLVE(close);
  RESOLVE(write); RESOLVE(pwrite); RESOLVE(pwrite64); RESOLVE(writev);
  RESOLVE(ftruncate); RESOLVE(ftruncate64); RESOLVE(fsync); RESOLVE(fdatasync);
  RESOLVE(rename); RESOLVE(renameat); RESOLVE(renameat2); RESOLVE(link); RESOLVE(linkat);
  RESOLVE(unlink); RESOLVE(unlinkat); RESOLVE(mkdir); RESOLVE(mkdirat); RESOLVE(rmdir);
  // A fork made while another thread holds the lock must not leave the child
  // with a lock nobody will release.
  pthread_atfork(before_fork, after_fork, after_fork);
  const char *dir = getenv("MIRA_FAULTFS_ROOT");
  const char *log = getenv("MIRA_FAULTFS_LOG");
  if (!dir || !log || dir[0] != '/' || strlen(dir) >= sizeof(root)) return;
  strcpy(root, dir);
  root_length = strlen(root);
  while (root_length > 1 && root[root_length - 1] == '/') root[--root_length] = '\0';
  log_fd = real_open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  const char *control_path = getenv("MIRA_FAULTFS_CONTROL");
  if (control_path && control_path[0]) {
    int fd = real_open(control_path, O_RDWR | O_CLOEXEC);
    if (fd >= 0) {
      void *mapped = mmap(NULL, sizeof(struct control), PROT_READ | PROT_WRITE, MAP_SHARED,
                          fd, 0);
      real_close(fd);
      if (mapped != MAP_FAILED) control = mapped;
    }
  }
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int inside_root(const char *path) {
  return log_fd >= 0 && strncmp(path, root, root_length) == 0 &&
         (path[root_length] == '\0' || path[root_length] == '/');
}

// An absolute path for (dirfd, path); out must hold PATH_MAX bytes. Returns 0
// when it cannot be made (the operation is then not recorded).
static int absolute(int dirfd, const char *path, char *out) {
  char base[PATH_MAX];
  if (!path) return 0;
  if (path[0] == '/') {
    if (strlen(path) >= PATH_MAX) return 0;
    strcpy(out, path);
  } else {
    if (dirfd == AT_FDCWD) {
      if (!getcwd(base, sizeof(base))) return 0;
    } else {
      char link[64];
      snprintf(link, sizeof(link), "/proc/self/fd/%d", dirfd);
      ssize_t n = readlink(link, base, sizeof(base) - 1);
      if (n <= 0) return 0;
      base[n] = '\0';
    }
    if (snprintf(out, PATH_MAX, "%s/%s", base, path) >= PATH_MAX) return 0;
  }
  size_t n = strlen(out);
  while (n > 1 && out[n - 1] == '/') out[--n] = '\0';
  return 1;
}

static void emit(uint16_t op, uint16_t flags, int error, uint64_t began, uint64_t inode,
                 int64_t offset, const char *path, const char *path2, const void *data,
                 size_t data_length) {
  size_t p1 = path ? strlen(path) : 0, p2 = path2 ? strlen(path2) : 0;
  size_t size = sizeof(struct record) + p1 + p2 + data_length;
  char *buffer = malloc(size);
  if (!buffer) abort();  // a record lost would make every later check wrong
  struct record *r = (struct record *)buffer;
  memset(r, 0, sizeof(*r));
  r->size = (uint32_t)size;
  r->op = op;
  r->flags = flags;
  r->pid = getpid();
  r->error = error;
  r->began_ns = began;
  r->inode = inode;
  r->offset = offset;
  r->path_length = (uint32_t)p1;
  r->path2_length = (uint32_t)p2;
  r->data_length = (uint32_t)data_length;
  r->magic = RECORD_MAGIC;
  char *cursor = buffer + sizeof(*r);
  if (p1) memcpy(cursor, path, p1);
  if (p2) memcpy(cursor + p1, path2, p2);
  if (data_length) memcpy(cursor + p1 + p2, data, data_length);
  size_t done = 0;
  while (done < size) {
    ssize_t n = real_write(log_fd, buffer + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) abort();
    done += (size_t)n;
  }
  free(buffer);
}

// The tracked file behind fd, or NULL; an entry whose file is no longer the
// one at fd (reused by a descriptor faultfs did not see made) is dropped.
static struct tracked *tracked_fd(int fd) {
  if (fd < 0 || fd >= MAX_FDS || !fds[fd]) return NULL;
  struct stat st;
  if (fstat(fd, &st) != 0 || (uint64_t)st.st_ino != fds[fd]->inode ||
      (uint64_t)st.st_dev != fds[fd]->device) {
    free(fds[fd]->path);
    free(fds[fd]);
    fds[fd] = NULL;
    return NULL;
  }
  return fds[fd];
}

// Whether to fail this operation (kind) on path: consumes one of `remaining`.
static int inject(unsigned kind, const char *path, int *error) {
  if (!control || !(__atomic_load_n(&control->kinds, __ATOMIC_SEQ_CST) & kind)) return 0;
  char match[sizeof(control->match) + 1];
  memcpy(match, control->match, sizeof(control->match));
  match[sizeof(control->match)] = '\0';
  if (match[0] && !strstr(path, match)) return 0;
  if (__atomic_load_n(&control->after, __ATOMIC_SEQ_CST) > 0 &&
      __atomic_sub_fetch(&control->after, 1, __ATOMIC_SEQ_CST) >= 0) {
    return 0;
  }
  int32_t remaining = __atomic_load_n(&control->remaining, __ATOMIC_SEQ_CST);
  if (remaining == 0) return 0;
  if (remaining > 0) __atomic_sub_fetch(&control->remaining, 1, __ATOMIC_SEQ_CST);
  __atomic_add_fetch(&control->injected, 1, __ATOMIC_SEQ_CST);
  *error = __atomic_load_n(&control->error, __ATOMIC_SEQ_CST);
  return 1;
}

static int opened(int dirfd, const char *path, int flags, mode_t mode,
                  int (*call)(int, const char *, int, ...)) {
  char full[PATH_MAX];
  if (log_fd < 0 || !absolute(dirfd, path, full) || !inside_root(full)) {
    return call(dirfd, path, flags, mode);
  }
  pthread_mutex_lock(&lock);
  uint64_t began = now_ns();
  struct stat before;
  int existed = stat(full, &before) == 0;
  int fd = call(dirfd, path, flags, mode);
  int saved = errno;
  if (fd >= 0) {
    struct stat st;
    if (fstat(fd, &st) == 0 && fd < MAX_FDS) {
      uint16_t record_flags = 0;
      if (!existed && (flags & O_CREAT)) record_flags |= FLAG_CREATED;
      if (existed && (flags & O_TRUNC) && (flags & O_ACCMODE) != O_RDONLY) {
        record_flags |= FLAG_TRUNCATED;
      }
      if (S_ISDIR(st.st_mode)) record_flags |= FLAG_DIRECTORY;
      struct tracked *t = calloc(1, sizeof(*t));
      if (!t) abort();
      t->device = st.st_dev;
      t->inode = st.st_ino;
      t->directory = S_ISDIR(st.st_mode);
      t->path = strdup(full);
      if (fds[fd]) {
        free(fds[fd]->path);
        free(fds[fd]);
      }
      fds[fd] = t;
      emit(OP_OPEN, record_flags, 0, began, st.st_ino, 0, full, NULL, NULL, 0);
    }
  }
  pthread_mutex_unlock(&lock);
  errno = saved;
  return fd;
}

static int call_openat(int dirfd, const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = va_arg(ap, mode_t);
  va_end(ap);
  return real_openat(dirfd, path, flags, mode);
}

static int call_openat64(int dirfd, const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = va_arg(ap, mode_t);
  va_end(ap);
  return real_openat64 ? real_openat64(dirfd, path, flags, mode)
                       : real_openat(dirfd, path, flags, mode);
}

static mode_t mode_argument(int flags, va_list ap) {
  return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? va_arg(ap, mode_t) : 0;
}

int open(const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_argument(flags, ap);
  va_end(ap);
  return opened(AT_FDCWD, path, flags, mode, call_openat);
}

int open64(const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_argument(flags, ap);
  va_end(ap);
  return opened(AT_FDCWD, path, flags, mode, call_openat64);
}

int openat(int dirfd, const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_argument(flags, ap);
  va_end(ap);
  return opened(dirfd, path, flags, mode, call_openat);
}

int openat64(int dirfd, const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_argument(flags, ap);
  va_end(ap);
  return opened(dirfd, path, flags, mode, call_openat64);
}

int close(int fd) {
  if (fd >= 0 && fd < MAX_FDS && fds[fd]) {
    pthread_mutex_lock(&lock);
    if (fds[fd]) {
      free(fds[fd]->path);
      free(fds[fd]);
      fds[fd] = NULL;
    }
    pthread_mutex_unlock(&lock);
  }
  return real_close(fd);
}

// A write of count bytes at offset (-1: the descriptor's position).
static ssize_t written(int fd, const void *buffer, size_t count, off_t offset, int positioned,
                       ssize_t (*perform)(int, const void *, size_t, off_t)) {
  if (log_fd < 0 || fd < 0 || fd >= MAX_FDS || !fds[fd]) {
    return positioned ? perform(fd, buffer, count, offset) : real_write(fd, buffer, count);
  }
  pthread_mutex_lock(&lock);
  struct tracked *t = tracked_fd(fd);
  if (!t) {
    pthread_mutex_unlock(&lock);
    return positioned ? perform(fd, buffer, count, offset) : real_write(fd, buffer, count);
  }
  uint64_t began = now_ns();
  int error;
  if (inject(KIND_WRITE, t->path, &error)) {
    emit(OP_WRITE, FLAG_INJECTED, error, began, t->inode, offset, t->path, NULL, NULL, 0);
    pthread_mutex_unlock(&lock);
    errno = error;
    return -1;
  }
  off_t at = offset;
  if (!positioned) {
    int status = fcntl(fd, F_GETFL);
    struct stat st;
    if (status >= 0 && (status & O_APPEND) && fstat(fd, &st) == 0) {
      at = st.st_size;
    } else {
      at = lseek(fd, 0, SEEK_CUR);
    }
  }
  ssize_t n = positioned ? perform(fd, buffer, count, offset) : real_write(fd, buffer, count);
  int saved = errno;
  if (n > 0) {
    emit(OP_WRITE, 0, 0, began, t->inode, at, t->path, NULL, buffer, (size_t)n);
  } else if (n < 0) {
    emit(OP_WRITE, 0, saved, began, t->inode, at, t->path, NULL, NULL, 0);
  }
  pthread_mutex_unlock(&lock);
  errno = saved;
  return n;
}

ssize_t write(int fd, const void *buffer, size_t count) {
  return written(fd, buffer, count, 0, 0, NULL);
}

ssize_t pwrite(int fd, const void *buffer, size_t count, off_t offset) {
  return written(fd, buffer, count, offset, 1, real_pwrite);
}

ssize_t pwrite64(int fd, const void *buffer, size_t count, off_t offset) {
  return written(fd, buffer, count, offset, 1, real_pwrite64 ? real_pwrite64 : real_pwrite);
}

ssize_t writev(int fd, const struct iovec *iov, int iovcnt) {
  if (log_fd < 0 || fd < 0 || fd >= MAX_FDS || !fds[fd]) return real_writev(fd, iov, iovcnt);
  // Gathered into one buffer and written as one write(), so it is recorded
  // like one (nothing under the root uses writev today).
  size_t total = 0;
  for (int i = 0; i < iovcnt; i++) total += iov[i].iov_len;
  char *buffer = malloc(total ? total : 1);
  if (!buffer) abort();
  size_t at = 0;
  for (int i = 0; i < iovcnt; i++) {
    memcpy(buffer + at, iov[i].iov_base, iov[i].iov_len);
    at += iov[i].iov_len;
  }
  ssize_t n = write(fd, buffer, total);
  int saved = errno;
  free(buffer);
  errno = saved;
  return n;
}

static int truncated(int fd, off_t length, int (*perform)(int, off_t)) {
  if (log_fd < 0 || fd < 0 || fd >= MAX_FDS || !fds[fd]) return perform(fd, length);
  pthread_mutex_lock(&lock);
  struct tracked *t = tracked_fd(fd);
  if (!t) {
    pthread_mutex_unlock(&lock);
    return perform(fd, length);
  }
  uint64_t began = now_ns();
  int error;
  if (inject(KIND_TRUNCATE, t->path, &error)) {
    emit(OP_TRUNCATE, FLAG_INJECTED, error, began, t->inode, length, t->path, NULL, NULL, 0);
    pthread_mutex_unlock(&lock);
    errno = error;
    return -1;
  }
  int result = perform(fd, length);
  int saved = errno;
  emit(OP_TRUNCATE, 0, result == 0 ? 0 : saved, began, t->inode, length, t->path, NULL, NULL,
       0);
  pthread_mutex_unlock(&lock);
  errno = saved;
  return result;
}

int ftruncate(int fd, off_t length) { return truncated(fd, length, real_ftruncate); }

int ftruncate64(int fd, off_t length) {
  return truncated(fd, length, real_ftruncate64 ? real_ftruncate64 : real_ftruncate);
}

static int synced(int fd, int data_only, int (*perform)(int)) {
  if (log_fd < 0 || fd < 0 || fd >= MAX_FDS || !fds[fd]) return perform(fd);
  pthread_mutex_lock(&lock);
  struct tracked *t = tracked_fd(fd);
  if (!t) {
    pthread_mutex_unlock(&lock);
    return perform(fd);
  }
  uint64_t began = now_ns();
  uint16_t flags = (t->directory ? FLAG_DIRECTORY : 0) | (data_only ? FLAG_DATA_ONLY : 0);
  int error;
  if (inject(t->directory ? KIND_DIRECTORY_SYNC : KIND_SYNC, t->path, &error)) {
    emit(OP_SYNC, flags | FLAG_INJECTED, error, began, t->inode, 0, t->path, NULL, NULL, 0);
    pthread_mutex_unlock(&lock);
    errno = error;
    return -1;
  }
  int result = perform(fd);
  int saved = errno;
  emit(OP_SYNC, flags, result == 0 ? 0 : saved, began, t->inode, 0, t->path, NULL, NULL, 0);
  pthread_mutex_unlock(&lock);
  errno = saved;
  return result;
}

int fsync(int fd) { return synced(fd, 0, real_fsync); }

int fdatasync(int fd) { return synced(fd, 1, real_fdatasync); }

// A namespace operation on one or two paths; perform() does it.
static int named(uint16_t op, int dirfd, const char *path, int dirfd2, const char *path2,
                 int (*perform)(void *), void *arguments) {
  char full[PATH_MAX], full2[PATH_MAX];
  int ok = log_fd >= 0 && absolute(dirfd, path, full);
  int ok2 = path2 == NULL || absolute(dirfd2, path2, full2);
  if (!ok || !ok2 || !(inside_root(full) || (path2 && inside_root(full2)))) {
    return perform(arguments);
  }
  pthread_mutex_lock(&lock);
  uint64_t began = now_ns();
  struct stat st;
  // The file the operation names (the source of a rename or link), before it runs.
  uint64_t inode = lstat(full, &st) == 0 ? (uint64_t)st.st_ino : 0;
  int result = perform(arguments);
  int saved = errno;
  if (op == OP_MKDIR && result == 0 && lstat(full, &st) == 0) inode = st.st_ino;
  emit(op, 0, result == 0 ? 0 : saved, began, inode, 0, full, path2 ? full2 : NULL, NULL, 0);
  pthread_mutex_unlock(&lock);
  errno = saved;
  return result;
}

struct two_paths {
  int dirfd, dirfd2;
  const char *path, *path2;
  unsigned flags;
  mode_t mode;
};

static int do_renameat2(void *a) {
  struct two_paths *p = a;
  if (p->flags == 0) return real_renameat(p->dirfd, p->path, p->dirfd2, p->path2);
  return real_renameat2(p->dirfd, p->path, p->dirfd2, p->path2, p->flags);
}

static int do_linkat(void *a) {
  struct two_paths *p = a;
  return real_linkat(p->dirfd, p->path, p->dirfd2, p->path2, (int)p->flags);
}

static int do_unlinkat(void *a) {
  struct two_paths *p = a;
  return real_unlinkat(p->dirfd, p->path, (int)p->flags);
}

static int do_mkdirat(void *a) {
  struct two_paths *p = a;
  return real_mkdirat(p->dirfd, p->path, p->mode);
}

int rename(const char *from, const char *to) {
  struct two_paths p = {AT_FDCWD, AT_FDCWD, from, to, 0, 0};
  return named(OP_RENAME, AT_FDCWD, from, AT_FDCWD, to, do_renameat2, &p);
}

int renameat(int fromfd, const char *from, int tofd, const char *to) {
  struct two_paths p = {fromfd, tofd, from, to, 0, 0};
  return named(OP_RENAME, fromfd, from, tofd, to, do_renameat2, &p);
}

int renameat2(int fromfd, const char *from, int tofd, const char *to, unsigned int flags) {
  struct two_paths p = {fromfd, tofd, from, to, flags, 0};
  return named(OP_RENAME, fromfd, from, tofd, to, do_renameat2, &p);
}

int link(const char *from, const char *to) {
  struct two_paths p = {AT_FDCWD, AT_FDCWD, from, to, 0, 0};
  return named(OP_LINK, AT_FDCWD, from, AT_FDCWD, to, do_linkat, &p);
}

int linkat(int fromfd, const char *from, int tofd, const char *to, int flags) {
  struct two_paths p = {fromfd, tofd, from, to, (unsigned)flags, 0};
  return named(OP_LINK, fromfd, from, tofd, to, do_linkat, &p);
}

int unlink(const char *path) {
  struct two_paths p = {AT_FDCWD, AT_FDCWD, path, NULL, 0, 0};
  return named(OP_UNLINK, AT_FDCWD, path, AT_FDCWD, NULL, do_unlinkat, &p);
}

int unlinkat(int dirfd, const char *path, int flags) {
  struct two_paths p = {dirfd, AT_FDCWD, path, NULL, (unsigned)flags, 0};
  return named((flags & AT_REMOVEDIR) ? OP_RMDIR : OP_UNLINK, dirfd, path, AT_FDCWD, NULL,
               do_unlinkat, &p);
}

int mkdir(const char *path, mode_t mode) {
  struct two_paths p = {AT_FDCWD, AT_FDCWD, path, NULL, 0, mode};
  return named(OP_MKDIR, AT_FDCWD, path, AT_FDCWD, NULL, do_mkdirat, &p);
}

int mkdirat(int dirfd, const char *path, mode_t mode) {
  struct two_paths p = {dirfd, AT_FDCWD, path, NULL, 0, mode};
  return named(OP_MKDIR, dirfd, path, AT_FDCWD, NULL, do_mkdirat, &p);
}

int rmdir(const char *path) {
  struct two_paths p = {AT_FDCWD, AT_FDCWD, path, NULL, AT_REMOVEDIR, 0};
  return named(OP_RMDIR, AT_FDCWD, path, AT_FDCWD, NULL, do_unlinkat, &p);
}
