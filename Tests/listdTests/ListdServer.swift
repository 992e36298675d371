import Foundation
import ListdTestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A real `listd serve` process (from ListdTestSupport) with the HTTP calls
/// the end-to-end tests make.
final class ListdServer: Sendable {
    let listd: ListdProcess

    /// The repository's Migrations folder.
    static var migrations: URL { ListdProcess.migrations }

    /// Starts listd with `arguments` after `serve`, in a fresh temporary folder.
    init(_ arguments: [String] = [], environment: [String: String] = [:], store: String? = nil) async throws {
        listd = try await ListdProcess(arguments, environment: environment, store: store)
    }

    var process: ChildProcess { listd.process }
    var port: Int { listd.port }
    var baseURL: URL { listd.baseURL }
    var logText: String { listd.logText }

    /// Sends SIGTERM, waits for the exit and removes the temporary folder; returns the exit status.
    @discardableResult
    func stop() -> Int32 { listd.stop() }

    // MARK: - HTTP

    struct Reply: Sendable {
        var status: Int
        var headers: [String: String]
        var body: Data

        var text: String { String(decoding: body, as: UTF8.self) }
        func json() throws -> Any { try JSONSerialization.jsonObject(with: body, options: [.fragmentsAllowed]) }
        func object() throws -> [String: Any] {
            guard let object = try json() as? [String: Any] else {
                throw ServerFailure(description: "not an object: \(text)")
            }
            return object
        }
        func header(_ name: String) -> String? {
            headers.first { $0.key.caseInsensitiveCompare(name) == .orderedSame }?.value
        }
    }

    /// One request; `body` may be a JSON-serializable value or raw `Data`/`String`.
    func request(
        _ method: String, _ path: String, body: Any? = nil, headers: [String: String] = [:], timeout: Double = 30
    ) async throws -> Reply {
        guard let url = URL(string: path, relativeTo: baseURL) else {
            throw ServerFailure(description: "bad path \(path)")
        }
        var request = URLRequest(url: url, timeoutInterval: timeout)
        request.httpMethod = method
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        if let body {
            switch body {
            case let data as Data: request.httpBody = data
            case let text as String: request.httpBody = Data(text.utf8)
            default: request.httpBody = try JSONSerialization.data(withJSONObject: body, options: [.fragmentsAllowed])
            }
            if request.value(forHTTPHeaderField: "Content-Type") == nil {
                request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            }
        }
        let (data, response) = try await Self.session.data(for: request)
        guard let http = response as? HTTPURLResponse else { throw ServerFailure(description: "not HTTP") }
        var fields: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { fields[name] = value }
        }
        return Reply(status: http.statusCode, headers: fields, body: data)
    }

    func get(_ path: String, headers: [String: String] = [:], timeout: Double = 30) async throws -> Reply {
        try await request("GET", path, headers: headers, timeout: timeout)
    }

    static let session: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = 64
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        return URLSession(configuration: configuration)
    }()
}

struct ServerFailure: Error, CustomStringConvertible {
    var description: String
}
