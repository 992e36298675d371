#define _GNU_SOURCE
#include "CSystem.h"

#include <malloc.h>
#include <sched.h>
#include <unistd.h>

#include <string.h>

int csystem_errno(void) { return errno; }

static _Thread_local const void *current_loop = NULL;

const void *csystem_current_loop(void) { return current_loop; }

void csystem_set_current_loop(const void *loop) { current_loop = loop; }

// One eventfd per signal number; written from the handler, so it must be a
// plain int read with no locking (async-signal-safe).
static volatile int signal_fds[65];

static void forward_signal(int signo) {
    int saved = errno;
    if (signo > 0 && signo < 65) {
        int fd = signal_fds[signo];
        if (fd >= 0) {
            uint64_t one = 1;
            ssize_t ignored = write(fd, &one, sizeof one);
            (void)ignored;
        }
    }
    errno = saved;
}

int csystem_signal_to_eventfd(int signo, int fd) {
    if (signo <= 0 || signo >= 65) {
        errno = EINVAL;
        return -1;
    }
    signal_fds[signo] = fd;
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = forward_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    return sigaction(signo, &action, NULL);
}

int csystem_ignore_sigpipe(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = SIG_IGN;
    sigemptyset(&action.sa_mask);
    return sigaction(SIGPIPE, &action, NULL);
}

int csystem_accept4(int fd, struct sockaddr *address, socklen_t *length, int flags) {
    return accept4(fd, address, length, flags);
}

void csystem_set_thread_name(const char *name) {
    char truncated[16];
    strncpy(truncated, name, sizeof truncated - 1);
    truncated[sizeof truncated - 1] = 0;
    pthread_setname_np(pthread_self(), truncated);
}

int csystem_schedule_when_idle(void) {
    struct sched_param parameters = {.sched_priority = 0};
    return sched_setscheduler(0, SCHED_IDLE, &parameters);
}

int csystem_scheduled_when_idle(void) {
    int policy = sched_getscheduler(0);
    return policy < 0 ? -1 : policy == SCHED_IDLE;
}

int csystem_thread_id(void) { return (int)gettid(); }

int csystem_set_allocator_thresholds(int trim, int mmap) {
    int trimmed = mallopt(M_TRIM_THRESHOLD, trim);
    int mapped = mallopt(M_MMAP_THRESHOLD, mmap);
    return trimmed == 1 && mapped == 1;
}

int csystem_spawn_actions_closefrom(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}

int csystem_spawn_actions_chdir(posix_spawn_file_actions_t *actions, const char *path) {
    return posix_spawn_file_actions_addchdir_np(actions, path);
}

int csystem_pipe_cloexec(int fds[2]) { return pipe2(fds, O_CLOEXEC); }
