import ArgumentParser
import Foundation
import HTTPClient

/// `listd health`: exits 0 when a listd answers its health endpoint with 200.
/// The container image uses it as its HEALTHCHECK (the image has no curl).
struct HealthCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "health",
        abstract: "Check that a listd server answers GET /healthz (exit 0) or not (exit 1)."
    )

    @Option(
        help:
            "The server's base URL, as other commands take it, or its /healthz URL (default: http://127.0.0.1:$LISTD_PORT, port 8080 if unset)."
    )
    var url: String?

    @Option(help: "Seconds to wait for the answer.")
    var timeout: Double = 3

    func run() throws {
        let port = ProcessInfo.processInfo.environment["LISTD_PORT"] ?? "8080"
        let text = url ?? "http://127.0.0.1:\(port)/healthz"
        guard let parsed = URL(string: text), parsed.scheme == "http", let host = parsed.host else {
            throw ValidationError("--url must be an http:// URL, got \(text)")
        }
        guard timeout > 0, timeout <= 300 else { throw ValidationError("--timeout must be from 0 to 300 seconds") }
        let path = Self.healthPath(parsed.path)
        do {
            let status = try HealthProbe.status(
                host: host, port: parsed.port ?? 80, path: path, timeout: .milliseconds(Int64(timeout * 1000)))
            guard status == 200 else { throw CommandFailure("\(text) answered \(status)") }
            print("\(text): ok")
        } catch let failure as HealthProbe.Failure {
            throw CommandFailure("\(text): \(failure)")
        }
    }

    /// The health endpoint under a URL's path: `/healthz` itself, or appended to a base URL's
    /// path (`` and `/` give `/healthz`, `/listd/` gives `/listd/healthz`).
    static func healthPath(_ path: String) -> String {
        if path.hasSuffix("/healthz") { return path }
        return (path.hasSuffix("/") ? String(path.dropLast()) : path) + "/healthz"
    }
}
