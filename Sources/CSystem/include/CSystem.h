#ifndef LISTD_CSYSTEM_H
#define LISTD_CSYSTEM_H

// Linux system headers that Swift's Glibc module does not export (epoll,
// eventfd, timerfd) plus the socket headers the Server module uses, so that
// Server imports exactly one C module for its system calls.
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
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

/// The calling thread's errno. Swift can read `errno` from Glibc too, but
/// reading it through one function keeps every system-call wrapper uniform.
int csystem_errno(void);

#endif
