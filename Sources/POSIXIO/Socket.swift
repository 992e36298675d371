import CSystem
import Glibc

/// The socket layer: listening sockets, accepted connections, addresses.
///
/// Every socket is non-blocking and close-on-exec; every accepted socket has
/// TCP_NODELAY, since responses go out in one vectored write and Nagle would
/// only delay the last segment.
public enum Socket {
    /// An IPv4 or IPv6 address parsed from a numeric host string.
    public struct Address {
        public var storage = sockaddr_storage()
        public var length: socklen_t = 0
        public var family: Int32 = AF_INET

        /// Parses `host` (numeric IPv4 or IPv6, or "localhost") with `port`.
        public init(host: String, port: Int) throws(SystemError) {
            let name = host == "localhost" ? "127.0.0.1" : host
            var v4 = sockaddr_in()
            if inet_pton(AF_INET, name, &v4.sin_addr) == 1 {
                v4.sin_family = sa_family_t(AF_INET)
                v4.sin_port = in_port_t(UInt16(truncatingIfNeeded: port)).bigEndian
                withUnsafeBytes(of: v4) { source in
                    withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: source) }
                }
                length = socklen_t(MemoryLayout<sockaddr_in>.size)
                family = AF_INET
                return
            }
            var v6 = sockaddr_in6()
            if inet_pton(AF_INET6, name, &v6.sin6_addr) == 1 {
                v6.sin6_family = sa_family_t(AF_INET6)
                v6.sin6_port = in_port_t(UInt16(truncatingIfNeeded: port)).bigEndian
                withUnsafeBytes(of: v6) { source in
                    withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: source) }
                }
                length = socklen_t(MemoryLayout<sockaddr_in6>.size)
                family = AF_INET6
                return
            }
            throw SystemError(call: "inet_pton(\(host))", errno: EINVAL)
        }
    }

    /// Creates a listening socket on `address` with SO_REUSEADDR and, when
    /// `reusePort`, SO_REUSEPORT (one listener per event loop on one port).
    public static func listen(on address: Address, reusePort: Bool, backlog: Int32) throws(SystemError) -> Int32 {
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let fd = try System.socket(domain: address.family, type: type)
        do {
            try System.setOption(fd, level: SOL_SOCKET, name: SO_REUSEADDR, value: 1)
            if reusePort {
                try System.setOption(fd, level: SOL_SOCKET, name: SO_REUSEPORT, value: 1)
            }
            var storage = address.storage
            try withUnsafePointer(to: &storage) { pointer throws(SystemError) in
                try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sockaddr throws(SystemError) in
                    try System.bind(fd, address: sockaddr, length: address.length)
                }
            }
            try System.listen(fd, backlog: backlog)
            return fd
        } catch {
            System.close(fd)
            throw error
        }
    }

    /// Checks that no one listens on `address` and returns its port (a free
    /// one for port 0), by binding a socket *without* SO_REUSEPORT and closing it.
    ///
    /// Listeners with SO_REUSEPORT share a port with any other such socket of
    /// the same user, so a second listd started on a busy port would silently
    /// take half its connections; this probe makes that an EADDRINUSE instead.
    public static func probeFreePort(_ address: Address) throws(SystemError) -> Int {
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let fd = try System.socket(domain: address.family, type: type)
        defer { System.close(fd) }
        try System.setOption(fd, level: SOL_SOCKET, name: SO_REUSEADDR, value: 1)
        var storage = address.storage
        try withUnsafePointer(to: &storage) { pointer throws(SystemError) in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sockaddr throws(SystemError) in
                try System.bind(fd, address: sockaddr, length: address.length)
            }
        }
        return try boundPort(fd)
    }

    /// The port a socket is bound to (after binding port 0).
    public static func boundPort(_ fd: Int32) throws(SystemError) -> Int {
        let storage = try System.localAddress(fd)
        return withUnsafeBytes(of: storage) { raw in
            if Int32(raw.load(as: sa_family_t.self)) == AF_INET6 {
                return Int(UInt16(bigEndian: raw.load(as: sockaddr_in6.self).sin6_port))
            }
            return Int(UInt16(bigEndian: raw.load(as: sockaddr_in.self).sin_port))
        }
    }

    /// Options for a freshly accepted connection.
    public static func configureAccepted(_ fd: Int32) {
        // Best effort: a socket without TCP_NODELAY still works, only slower.
        try? System.setOption(fd, level: Int32(IPPROTO_TCP), name: TCP_NODELAY, value: 1)
    }

    /// "ip:port" for a peer address, as handlers see it in `Request.remoteAddress`.
    public static func describe(_ storage: sockaddr_storage) -> String {
        withUnsafeBytes(of: storage) { raw -> String in
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
            let family = Int32(raw.load(as: sa_family_t.self))
            if family == AF_INET {
                var address = raw.load(as: sockaddr_in.self)
                inet_ntop(AF_INET, &address.sin_addr, &text, socklen_t(text.count))
                let host = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                return "\(host):\(UInt16(bigEndian: address.sin_port))"
            }
            if family == AF_INET6 {
                var address = raw.load(as: sockaddr_in6.self)
                inet_ntop(AF_INET6, &address.sin6_addr, &text, socklen_t(text.count))
                let host = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                return "[\(host)]:\(UInt16(bigEndian: address.sin6_port))"
            }
            return "unknown"
        }
    }
}
