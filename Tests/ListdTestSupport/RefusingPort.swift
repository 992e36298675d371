import Foundation
import Glibc
import Synchronization

/// A loopback port that refuses every connection (the kernel answers a
/// connect with a reset) until ``close()``: a socket bound to it that never
/// listens.
///
/// Why not a server stopped at once: its port is free again, the kernel may
/// hand it to the next server another test starts in the same run, and the
/// client under test, meant to be offline, then reaches that server. A bound
/// socket holds the port, so nothing else can listen on it meanwhile.
public final class RefusingPort: Sendable {
    /// The port.
    public let port: Int
    private let socket: Int32
    private let closed = Atomic<Bool>(false)

    /// Binds a socket to a free loopback port (close-on-exec: listd children
    /// of other tests must not inherit it).
    public init() throws {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard socket >= 0 else { throw TestFailure("refusing port: socket failed, errno \(errno)") }
        var address = loopbackAddress(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) }
        }
        guard bound == 0 else {
            let code = errno
            Glibc.close(socket)
            throw TestFailure("refusing port: bind failed, errno \(code)")
        }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
        }
        self.socket = socket
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    /// `http://127.0.0.1:<port>`.
    public var baseURL: URL {
        URL(string: "http://127.0.0.1:\(port)") ?? URL(fileURLWithPath: "/")
    }

    /// Frees the port. Call it when the test is done with it (a `defer`):
    /// that also keeps the port held until then, whatever the optimizer does
    /// with a value whose last use came earlier.
    public func close() {
        guard !closed.exchange(true, ordering: .relaxed) else { return }
        Glibc.close(socket)
    }

    deinit { close() }
}
