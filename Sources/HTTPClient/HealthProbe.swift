import HTTP
import POSIXIO

/// Asks a server's health endpoint whether it is up, as a container's
/// HEALTHCHECK does, with ``HTTPClientCall``: no curl in the image and no
/// HTTP client library in the binary.
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
    ///   - timeout: the whole exchange's limit.
    public static func status(host: String, port: Int, path: String, timeout: Duration) throws(Failure) -> Int {
        guard (1...65_535).contains(port) else { throw Failure(description: "port \(port) is out of range") }
        let request = HTTPClientCall.Request(
            method: .get, host: host, port: port, target: path, headers: ["User-Agent": "listd-health"],
            timeout: timeout)
        do {
            return try HTTPClientCall().perform(request).status.code
        } catch {
            throw Failure(description: "cannot reach \(host):\(port): \(error)")
        }
    }
}
