import CSystem
import Glibc

/// The outcome of a non-blocking call: it did something, or it would have
/// blocked (EAGAIN), which is not an error for a non-blocking socket.
public enum IOResult<Value> {
    case processed(Value)
    case wouldBlock
}

/// Every system call the server and the blocking client make, each wrapped exactly once.
///
/// Why one place: each wrapper retries EINTR and turns errno into a
/// `SystemError` naming the call, so the socket layer and the event loop
/// never look at errno themselves and never forget the EINTR loop.
public enum System {
    /// Runs `body` until it does not fail with EINTR; -1 becomes a `SystemError`.
    @inlinable
    static func retrying<R: FixedWidthInteger>(
        _ call: StaticString, _ body: () -> R
    ) throws(SystemError) -> R {
        while true {
            let result = body()
            if result != -1 { return result }
            let error = csystem_errno()
            if error == EINTR { continue }
            throw SystemError(call: call.description, errno: error)
        }
    }

    /// Like `retrying`, but EAGAIN/EWOULDBLOCK become `.wouldBlock`.
    @inlinable
    static func retryingNonBlocking<R: FixedWidthInteger>(
        _ call: StaticString, _ body: () -> R
    ) throws(SystemError) -> IOResult<R> {
        while true {
            let result = body()
            if result != -1 { return .processed(result) }
            let error = csystem_errno()
            if error == EINTR { continue }
            if error == EAGAIN || error == EWOULDBLOCK { return .wouldBlock }
            throw SystemError(call: call.description, errno: error)
        }
    }

    // MARK: Sockets

    public static func socket(domain: Int32, type: Int32) throws(SystemError) -> Int32 {
        try retrying("socket") { Glibc.socket(domain, type, 0) }
    }

    public static func setOption(_ fd: Int32, level: Int32, name: Int32, value: Int32) throws(SystemError) {
        var value = value
        _ = try retrying("setsockopt") {
            Glibc.setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size))
        }
    }

    public static func bind(_ fd: Int32, address: UnsafePointer<sockaddr>, length: socklen_t) throws(SystemError) {
        _ = try retrying("bind") { Glibc.bind(fd, address, length) }
    }

    public static func connect(_ fd: Int32, address: UnsafePointer<sockaddr>, length: socklen_t) throws(SystemError) {
        _ = try retrying("connect") { Glibc.connect(fd, address, length) }
    }

    /// Puts a socket in non-blocking mode (O_NONBLOCK), for one connected blocking
    /// and then handed to an event loop.
    public static func setNonBlocking(_ fd: Int32) throws(SystemError) {
        let flags = try retrying("fcntl(F_GETFL)") { Glibc.fcntl(fd, F_GETFL) }
        if flags & O_NONBLOCK != 0 { return }
        _ = try retrying("fcntl(F_SETFL)") { Glibc.fcntl(fd, F_SETFL, flags | O_NONBLOCK) }
    }

    /// Sets a send or receive timeout (SO_SNDTIMEO / SO_RCVTIMEO) on a blocking socket.
    public static func setTimeout(_ fd: Int32, option: Int32, milliseconds: Int) throws(SystemError) {
        var value = timeval(tv_sec: milliseconds / 1000, tv_usec: (milliseconds % 1000) * 1000)
        _ = try retrying("setsockopt") {
            Glibc.setsockopt(fd, SOL_SOCKET, option, &value, socklen_t(MemoryLayout<timeval>.size))
        }
    }

    public static func listen(_ fd: Int32, backlog: Int32) throws(SystemError) {
        _ = try retrying("listen") { Glibc.listen(fd, backlog) }
    }

    public static func localAddress(_ fd: Int32) throws(SystemError) -> sockaddr_storage {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = try withUnsafeMutablePointer(to: &storage) { pointer throws(SystemError) in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address throws(SystemError) in
                try retrying("getsockname") { Glibc.getsockname(fd, address, &length) }
            }
        }
        return storage
    }

    /// accept4 with SOCK_NONBLOCK | SOCK_CLOEXEC; the peer address comes back too.
    public static func accept(_ fd: Int32) throws(SystemError) -> IOResult<(Int32, sockaddr_storage)> {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let flags = Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let result = try withUnsafeMutablePointer(to: &storage) { pointer throws(SystemError) in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address throws(SystemError) in
                try retryingNonBlocking("accept4") { csystem_accept4(fd, address, &length, flags) }
            }
        }
        switch result {
        case .processed(let client): return .processed((client, storage))
        case .wouldBlock: return .wouldBlock
        }
    }

    @inlinable
    public static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> IOResult<
        Int
    > {
        try retryingNonBlocking("read") { Glibc.read(fd, buffer.baseAddress, buffer.count) }
    }

    /// A vectored write (sendmsg, equivalent to writev) with MSG_NOSIGNAL, so
    /// a peer that went away yields EPIPE instead of SIGPIPE.
    @inlinable
    public static func sendVectored(_ fd: Int32, _ vectors: UnsafeMutableBufferPointer<iovec>) throws(SystemError)
        -> IOResult<Int>
    {
        var message = msghdr()
        message.msg_iov = vectors.baseAddress
        message.msg_iovlen = vectors.count
        return try retryingNonBlocking("sendmsg") { Glibc.sendmsg(fd, &message, Int32(MSG_NOSIGNAL)) }
    }

    @inlinable
    public static func send(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws(SystemError) -> IOResult<Int> {
        try retryingNonBlocking("send") { Glibc.send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Peeks at up to `buffer.count` received bytes without consuming them and
    /// without blocking: `.processed(0)` means the peer closed its side.
    public static func peek(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> IOResult<
        Int
    > {
        try retryingNonBlocking("recv(MSG_PEEK)") {
            Glibc.recv(fd, buffer.baseAddress, buffer.count, Int32(MSG_PEEK) | Int32(MSG_DONTWAIT))
        }
    }

    public static func shutdown(_ fd: Int32, how: Int32) throws(SystemError) {
        _ = try retrying("shutdown") { Glibc.shutdown(fd, how) }
    }

    /// Closes `fd`. Not retried on EINTR: on Linux the descriptor is gone
    /// either way, and retrying could close a descriptor another thread just got.
    public static func close(_ fd: Int32) {
        let result = Glibc.close(fd)
        precondition(result == 0 || csystem_errno() != EBADF, "close(\(fd)): descriptor was not open")
    }

    // MARK: Files

    /// Creates the file `path` for writing, with permission bits `mode` from the first byte on
    /// (a secret is never readable by others, even for a moment). Fails with EEXIST if anything is
    /// at `path`, a symbolic link included: nothing is ever overwritten.
    public static func createNewFile(_ path: String, mode: mode_t) throws(SystemError) -> Int32 {
        try retrying("open") { Glibc.open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode) }
    }

    /// Writes all of `bytes` to the blocking descriptor `fd`.
    public static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws(SystemError) {
        guard let base = bytes.baseAddress else { return }
        var offset = 0
        while offset < bytes.count {
            offset += try retrying("write") { Glibc.write(fd, base + offset, bytes.count - offset) }
        }
    }

    /// Flushes `fd`'s data to the disk.
    public static func fsync(_ fd: Int32) throws(SystemError) {
        _ = try retrying("fsync") { Glibc.fsync(fd) }
    }

    // MARK: epoll and eventfd

    public static func epollCreate() throws(SystemError) -> Int32 {
        try retrying("epoll_create1") { epoll_create1(Int32(EPOLL_CLOEXEC)) }
    }

    public static func epollControl(_ epoll: Int32, _ operation: Int32, _ fd: Int32, events: UInt32, data: UInt64)
        throws(SystemError)
    {
        var event = epoll_event()
        event.events = events
        event.data.u64 = data
        _ = try retrying("epoll_ctl") { epoll_ctl(epoll, operation, fd, &event) }
    }

    public static func epollWait(
        _ epoll: Int32, into events: UnsafeMutableBufferPointer<epoll_event>, timeoutMilliseconds: Int32
    ) throws(SystemError) -> Int {
        // EINTR here means "woke without events", so it is not retried: the
        // caller re-checks its timers and calls again.
        let result = epoll_wait(epoll, events.baseAddress, Int32(events.count), timeoutMilliseconds)
        if result >= 0 { return Int(result) }
        let error = csystem_errno()
        if error == EINTR { return 0 }
        throw SystemError(call: "epoll_wait", errno: error)
    }

    public static func eventFD() throws(SystemError) -> Int32 {
        try retrying("eventfd") { eventfd(0, Int32(EFD_NONBLOCK) | Int32(EFD_CLOEXEC)) }
    }

    /// Adds 1 to an eventfd's counter, waking whoever polls it.
    public static func eventFDSignal(_ fd: Int32) throws(SystemError) {
        var one: UInt64 = 1
        _ = try retryingNonBlocking("write(eventfd)") { Glibc.write(fd, &one, 8) }
    }

    /// Resets an eventfd's counter to 0; returns whether it was signalled.
    @discardableResult
    public static func eventFDDrain(_ fd: Int32) throws(SystemError) -> Bool {
        var value: UInt64 = 0
        switch try retryingNonBlocking("read(eventfd)", { Glibc.read(fd, &value, 8) }) {
        case .processed: return true
        case .wouldBlock: return false
        }
    }

    /// A blocking eventfd (for the signal thread, which has nothing else to do).
    public static func blockingEventFD() throws(SystemError) -> Int32 {
        try retrying("eventfd") { eventfd(0, Int32(EFD_CLOEXEC)) }
    }

    /// Blocks until the eventfd is signalled; returns its counter.
    public static func eventFDWait(_ fd: Int32) throws(SystemError) -> UInt64 {
        var value: UInt64 = 0
        _ = try retrying("read(eventfd)") { Glibc.read(fd, &value, 8) }
        return value
    }

    // MARK: Process

    public static func fileLimit() throws(SystemError) -> rlimit {
        var limit = rlimit()
        _ = try retrying("getrlimit") { getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) }
        return limit
    }

    public static func setFileLimit(_ limit: rlimit) throws(SystemError) {
        var limit = limit
        _ = try retrying("setrlimit") { setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) }
    }

    public static func ignoreSIGPIPE() throws(SystemError) {
        _ = try retrying("sigaction(SIGPIPE)") { csystem_ignore_sigpipe() }
    }

    public static func forwardSignal(_ signal: Int32, toEventFD fd: Int32) throws(SystemError) {
        _ = try retrying("sigaction") { csystem_signal_to_eventfd(signal, fd) }
    }

    /// Monotonic nanoseconds, for deadlines.
    public static func monotonicNanoseconds() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) &* 1_000_000_000 &+ UInt64(spec.tv_nsec)
    }

    /// Wall-clock seconds since 1970, for the Date header.
    public static func wallClockSeconds() -> Int {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME_COARSE, &spec)
        return Int(spec.tv_sec)
    }

    // MARK: Threads

    /// Starts a joinable thread running `body`, named `name` (at most 15 bytes show).
    public static func spawnThread(name: String, _ body: @escaping @Sendable () -> Void) throws(SystemError)
        -> pthread_t
    {
        let box = Unmanaged.passRetained(ThreadBody(name: name, body: body)).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(
            &thread, nil,
            { raw in
                guard let raw else { return nil }
                let box = Unmanaged<ThreadBody>.fromOpaque(raw).takeRetainedValue()
                csystem_set_thread_name(box.name)
                box.body()
                return nil
            }, box)
        guard result == 0 else {
            Unmanaged<ThreadBody>.fromOpaque(box).release()
            throw SystemError(call: "pthread_create", errno: result)
        }
        return thread
    }

    public static func join(_ thread: pthread_t) {
        _ = pthread_join(thread, nil)
    }
}

/// What a spawned thread runs; passed through pthread_create's void pointer.
private final class ThreadBody: Sendable {
    let name: String
    let body: @Sendable () -> Void
    init(name: String, body: @escaping @Sendable () -> Void) {
        self.name = name
        self.body = body
    }
}
