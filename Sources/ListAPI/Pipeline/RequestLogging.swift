import Foundation
import HTTP
import Logging

/// Logs every answer: a failure of the server (5xx) at `error` with the
/// start of its problem, everything else at `debug` as an access log line,
/// naming the caller by its signed token's `sub` where it has one.
/// Tokens travel only in `Authorization`, which is never logged; a query
/// parameter whose name says it holds a secret (a token put in a URL by
/// mistake) is logged as `***`.
struct RequestLogging: Middleware {
    let logger: Logger

    func answering(_ response: inout Response, to context: Context, after elapsed: Duration) {
        if response.status.code >= 500 {
            var metadata: Logger.Metadata = [
                "method": "\(context.request.method)", "path": "\(context.request.path)",
                "status": "\(response.status.code)",
                "body": "\(String(decoding: response.body.prefix(512), as: UTF8.self))",
            ]
            if let subject = context.caller.subject { metadata["caller"] = "\(subject)" }
            logger.error("request failed", metadata: metadata)
        } else if logger.logLevel <= .debug {
            var metadata: Logger.Metadata = [
                "remote": "\(context.request.remoteAddress)",
                "ms": "\(String(format: "%.2f", elapsed / .milliseconds(1)))",
            ]
            if let subject = context.caller.subject { metadata["caller"] = "\(subject)" }
            logger.debug(
                "\(context.request.method) \(Self.redacted(context.request.head)) \(response.status.code)",
                metadata: metadata)
        }
    }

    /// The request target with the values of secret-looking query parameters
    /// (`token`, `access_token`, `key`, `password`, `secret`, …) as `***`.
    static func redacted(_ head: RequestHead) -> String {
        guard let query = head.query, !query.isEmpty else { return head.target }
        let pairs = query.split(separator: "&", omittingEmptySubsequences: false).map { pair -> String in
            guard let equals = pair.firstIndex(of: "=") else { return String(pair) }
            let name = pair[..<equals].lowercased()
            let secret = ["token", "key", "password", "secret", "auth", "jwt"].contains { name.contains($0) }
            return secret ? name + "=***" : String(pair)
        }
        return head.path + "?" + pairs.joined(separator: "&")
    }
}
