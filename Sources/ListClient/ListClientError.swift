import Foundation
import JSON
import ListWire

/// Everything that can go wrong in ListClient, with the context a person needs
/// to act on it: the server's problem+json, the transport's failure, or a body
/// that is not what the contract promises.
public struct ListClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The broad kind of failure.
    public enum Kind: Sendable, Equatable {
        /// The server answered with an error status (usually problem+json).
        case problem
        /// No answer: connection refused or reset, timeout.
        case transport
        /// The server's answer does not follow the contract.
        case invalidResponse
        /// The calling task was cancelled.
        case cancelled
        /// The request could not be built (a bad id or base URL).
        case invalidRequest
    }

    /// The kind of failure.
    public var kind: Kind
    /// The HTTP status, for `.problem`.
    public var status: Int?
    /// The problem type URI (`https://listd.dev/problems/<slug>`), for `.problem`.
    public var type: String?
    /// The problem's title, when given.
    public var title: String?
    /// What was wrong, in words: the problem's `detail` or the transport's message.
    public var detail: String
    /// Seconds from a `Retry-After` header (503, 429), when given.
    public var retryAfter: Double?

    /// Creates an error.
    public init(
        kind: Kind, status: Int? = nil, type: String? = nil, title: String? = nil, detail: String,
        retryAfter: Double? = nil
    ) {
        self.kind = kind
        self.status = status
        self.type = type
        self.title = title
        self.detail = detail
        self.retryAfter = retryAfter
    }

    /// The problem type's last path segment, such as `not-found`.
    public var slug: String? { type.map { String($0.split(separator: "/").last ?? Substring($0)) } }

    /// Whether waiting and trying again may succeed (transport errors, 5xx, 408, 429).
    public var isTransient: Bool {
        switch kind {
        case .transport: return true
        case .problem: return status.map { $0 >= 500 || $0 == 408 || $0 == 429 } ?? false
        case .invalidResponse, .cancelled, .invalidRequest: return false
        }
    }

    /// One line for logs: the status and problem slug with the detail, or the kind with the detail.
    public var description: String {
        switch kind {
        case .problem:
            var text = "HTTP \(status ?? 0)"
            if let slug { text += " \(slug)" }
            return text + ": \(detail)"
        case .transport: return "transport: \(detail)"
        case .invalidResponse: return "invalid response: \(detail)"
        case .cancelled: return "cancelled"
        case .invalidRequest: return "invalid request: \(detail)"
        }
    }

    /// The error for an answer with status ≥ 400: its problem+json fields when
    /// the body has them, otherwise the status and the start of the body.
    static func problem(_ response: ClientResponse) -> ListClientError {
        let retryAfter = response.header("retry-after").flatMap { Double($0.trimmingCharacters(in: .whitespaces)) }
        let body = try? JSONValue(parsing: response.body)
        let detail =
            body?["detail"]?.stringValue ?? body?["title"]?.stringValue
            ?? String(decoding: response.body.prefix(200), as: UTF8.self)
        return ListClientError(
            kind: .problem, status: response.status, type: body?["type"]?.stringValue,
            title: body?["title"]?.stringValue, detail: detail.isEmpty ? "HTTP \(response.status)" : detail,
            retryAfter: retryAfter)
    }

    static func invalid(_ detail: String) -> ListClientError { ListClientError(kind: .invalidResponse, detail: detail) }
}

extension ListClientError {
    /// A body whose shape is not the one API.md gives it.
    init(_ error: WireError) { self.init(kind: .invalidResponse, detail: error.detail) }
}

/// Runs a wire decoder, reporting its failure as an invalid response.
func decoded<Value>(_ decode: () throws(WireError) -> Value) throws(ListClientError) -> Value {
    do {
        return try decode()
    } catch {
        throw ListClientError(error)
    }
}
