import CSystem
import Glibc

/// A minimal HTTP/1.1 client for one job: asking a server's health endpoint
/// whether it is up, as a container's HEALTHCHECK does. It needs no curl in
/// the image and no HTTP client library in the binary.
public enum HealthProbe {
    /// What went wrong while probing.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        /// In words, for the operator.
        public var description: String
    }

    /// Sends `GET path` to `host:port` and returns the response's status code.
    ///
    /// - Parameters:
    ///   - host: a name or address; resolved with getaddrinfo (IPv4 or IPv6).
    ///   - timeout: applies to connecting, sending and receiving each.
    public static func status(host: String, port: Int, path: String, timeout: Duration) throws(Failure) -> Int {
        guard (1...65_535).contains(port) else { throw Failure(description: "port \(port) is out of range") }
        let milliseconds = max(1, Int(timeout / .milliseconds(1)))
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = AF_UNSPEC
        var list: UnsafeMutablePointer<addrinfo>?
        let resolved = getaddrinfo(host, String(port), &hints, &list)
        guard resolved == 0, let first = list else {
            throw Failure(description: "cannot resolve \(host): \(String(cString: gai_strerror(resolved)))")
        }
        defer { freeaddrinfo(list) }

        var lastError = "no address for \(host)"
        var candidate: UnsafeMutablePointer<addrinfo>? = first
        while let address = candidate {
            candidate = address.pointee.ai_next
            do throws(SystemError) {
                let fd = try System.socket(domain: address.pointee.ai_family, type: Int32(SOCK_STREAM.rawValue))
                defer { System.close(fd) }
                try System.setTimeout(fd, option: SO_SNDTIMEO, milliseconds: milliseconds)
                try System.setTimeout(fd, option: SO_RCVTIMEO, milliseconds: milliseconds)
                guard let sockaddr = address.pointee.ai_addr else { continue }
                try System.connect(fd, address: sockaddr, length: address.pointee.ai_addrlen)
                return try exchange(fd, host: host, port: port, path: path)
            } catch {
                lastError = error.description
            }
        }
        throw Failure(description: "cannot reach \(host):\(port): \(lastError)")
    }

    private static func exchange(_ fd: Int32, host: String, port: Int, path: String) throws(SystemError) -> Int {
        let request = Array("GET \(path) HTTP/1.1\r\nHost: \(host):\(port)\r\nConnection: close\r\nUser-Agent: listd-health\r\n\r\n".utf8)
        var sent = 0
        while sent < request.count {
            let result = request.withUnsafeBytes { bytes in
                Result { () throws(SystemError) in try System.send(fd, UnsafeRawBufferPointer(rebasing: bytes[sent...])) }
            }
            switch try result.get() {
            case .processed(let count): sent += count
            case .wouldBlock: throw SystemError(call: "send (timed out)", errno: ETIMEDOUT)
            }
        }
        // "HTTP/1.1 200 " is all that is needed.
        var head: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 512)
        while head.count < 12 {
            let result = buffer.withUnsafeMutableBytes { bytes in
                Result { () throws(SystemError) in try System.read(fd, into: bytes) }
            }
            switch try result.get() {
            case .processed(0): throw SystemError(call: "read (connection closed before a status line)", errno: ECONNRESET)
            case .processed(let count): head += buffer[..<count]
            case .wouldBlock: throw SystemError(call: "read (timed out)", errno: ETIMEDOUT)
            }
        }
        guard head.starts(with: Array("HTTP/1.".utf8)), let code = Int(String(decoding: head[9..<12], as: UTF8.self))
        else {
            throw SystemError(call: "read (not an HTTP response)", errno: EPROTO)
        }
        return code
    }
}
