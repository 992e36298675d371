#ifndef LISTD_CSYSTEM_H
#define LISTD_CSYSTEM_H

// Linux system headers that Swift's Glibc module does not export (epoll,
// eventfd, timerfd) plus the socket headers the Server module uses, so that
// Server imports exactly one C module for its system calls.
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/types.h>
#include <sys/uio.h>

/// Sets glibc's `M_TRIM_THRESHOLD` and `M_MMAP_THRESHOLD` (bytes) with
/// `mallopt`; returns 1 when both were accepted. `malloc.h` is not in Swift's
/// Glibc module.
int csystem_set_allocator_thresholds(int trim, int mmap);

/// The calling thread's errno. Swift can read `errno` from Glibc too, but
/// reading it through one function keeps every system-call wrapper uniform.
int csystem_errno(void);

/// The event loop that owns the calling thread, or NULL. A C thread-local
/// because Swift has no cheap thread-local storage and the check runs on
/// every response.
const void *_Nullable csystem_current_loop(void);

/// Marks the calling thread as owned by `loop` (NULL to clear).
void csystem_set_current_loop(const void *_Nullable loop);

/// Installs an async-signal-safe handler for `signo` that writes 1 to the
/// eventfd `fd` (the self-pipe trick), so a thread can wait for the signal
/// with an ordinary read. Returns 0, or -1 with errno set.
int csystem_signal_to_eventfd(int signo, int fd);

/// Sets SIGPIPE to SIG_IGN, so a write to a closed socket returns EPIPE
/// instead of killing the process. Returns 0, or -1 with errno set.
int csystem_ignore_sigpipe(void);

/// accept4(2), which glibc declares only under _GNU_SOURCE.
int csystem_accept4(int fd, struct sockaddr *_Nullable address, socklen_t *_Nullable length, int flags);

/// Names the calling thread (pthread_setname_np, also _GNU_SOURCE only).
void csystem_set_thread_name(const char *_Nonnull name);

/// Puts the calling thread in Linux's SCHED_IDLE policy (which glibc names
/// only under _GNU_SOURCE): it runs on CPU time no other thread wants, and a
/// waking thread of the normal policy takes its CPU at once. Returns 0, or -1
/// with errno set. An unprivileged thread cannot leave the policy again.
int csystem_schedule_when_idle(void);

/// Whether the calling thread is in SCHED_IDLE: 1 or 0, or -1 with errno set.
int csystem_scheduled_when_idle(void);

/// The calling thread's id (gettid(2), declared only under _GNU_SOURCE).
int csystem_thread_id(void);

/// posix_spawn_file_actions_addclosefrom_np (glibc 2.34, _GNU_SOURCE only):
/// the child closes every descriptor from `from` up.
int csystem_spawn_actions_closefrom(posix_spawn_file_actions_t *_Nonnull actions, int from);

/// posix_spawn_file_actions_addchdir_np (glibc 2.29, _GNU_SOURCE only).
int csystem_spawn_actions_chdir(posix_spawn_file_actions_t *_Nonnull actions, const char *_Nonnull path);

/// pipe2(fds, O_CLOEXEC) (_GNU_SOURCE only). Returns 0, or -1 with errno set.
int csystem_pipe_cloexec(int fds[_Nonnull 2]);

#endif
