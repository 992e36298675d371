import Foundation
import HTTP
import Logging

/// Logs every answer: a failure of the server (5xx) at `error` with the
/// start of its problem, everything else at `debug` as an access log line.
/// Tokens travel only in `Authorization`, which is never logged.
struct RequestLogging: Middleware {
    let logger: Logger

    func answering(_ response: inout Response, to context: Context, after elapsed: Duration) {
        if response.status.code >= 500 {
            logger.error(
                "request failed",
                metadata: [
                    "method": "\(context.request.method)", "path": "\(context.request.path)",
                    "status": "\(response.status.code)",
                    "body": "\(String(decoding: response.body.prefix(512), as: UTF8.self))",
                ])
        } else if logger.logLevel <= .debug {
            logger.debug(
                "\(context.request.method) \(context.request.head.target) \(response.status.code)",
                metadata: [
                    "remote": "\(context.request.remoteAddress)",
                    "ms": "\(String(format: "%.2f", elapsed / .milliseconds(1)))",
                ])
        }
    }
}
