import CSystem
import Glibc
import POSIXIO

/// Opens a TCP connection, blocking the calling thread: resolves the host with
/// getaddrinfo and tries each address in turn until one connects or the deadline passes.
///
/// Why one place: ``HTTPClientCall`` connects on the thread it blocks anyway,
/// ``KeepAliveClient`` on a thread of ``BlockingThreads`` (getaddrinfo may ask
/// a DNS server, which must not happen on an event loop or Swift's cooperative
/// pool); both want the same address walk and errors.
enum Dialer {
    /// A connected, blocking socket with TCP_NODELAY and send and receive timeouts
    /// up to `deadline` (monotonic nanoseconds).
    ///
    /// - Parameters:
    ///   - register: called with each socket before its connect, so a caller can
    ///     shut it down to cancel; returning false gives up at once with ECANCELED.
    ///   - unregister: called once that socket is connected, or before it is closed.
    ///   - isCancelled: asked after a failed connect: true ends the walk with ECANCELED.
    static func connect(
        host: String, port: Int, deadline: UInt64, register: (Int32) -> Bool = { _ in true },
        unregister: () -> Void = {}, isCancelled: () -> Bool = { false }
    ) throws(SystemError) -> Int32 {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = AF_UNSPEC
        var list: UnsafeMutablePointer<addrinfo>?
        let resolved = getaddrinfo(host, String(port), &hints, &list)
        guard resolved == 0, let first = list else {
            throw SystemError(call: "getaddrinfo (\(String(cString: gai_strerror(resolved))))", errno: EHOSTUNREACH)
        }
        defer { freeaddrinfo(list) }
        var lastError = SystemError(call: "connect (no address)", errno: EHOSTUNREACH)
        var candidate: UnsafeMutablePointer<addrinfo>? = first
        while let address = candidate {
            candidate = address.pointee.ai_next
            guard let sockaddr = address.pointee.ai_addr else { continue }
            let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
            let fd = try System.socket(domain: address.pointee.ai_family, type: type)
            guard register(fd) else {
                System.close(fd)
                throw SystemError(call: "connect (cancelled)", errno: ECANCELED)
            }
            do throws(SystemError) {
                try HTTPClientCall.setTimeouts(fd, deadline: deadline)
                try System.connect(fd, address: sockaddr, length: address.pointee.ai_addrlen)
                try? System.setOption(fd, level: Int32(IPPROTO_TCP), name: TCP_NODELAY, value: 1)
                unregister()
                return fd
            } catch {
                unregister()
                System.close(fd)
                if isCancelled() { throw SystemError(call: "connect (cancelled)", errno: ECANCELED) }
                lastError = error
            }
        }
        throw lastError
    }
}
