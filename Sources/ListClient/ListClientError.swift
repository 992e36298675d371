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
        /// A ``WriteOutbox``'s file could not be read or written (the detail names the file and the error).
        case outbox
        /// A model did not decode into the app's type (``ListClient/follow(list:view:as:options:decoder:)``);
        /// ``modelFailure`` names the item and what failed.
        case decoding
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
    /// For `.decoding`: which model failed to decode, and why.
    public var modelFailure: ModelDecodingFailure?

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
        case .invalidResponse, .cancelled, .invalidRequest, .outbox, .decoding: return false
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
        case .outbox: return "outbox: \(detail)"
        case .decoding: return "decoding: \(detail)"
        }
    }

    /// The error for an answer with status ≥ 400: its problem+json fields when
    /// the body has them, otherwise the status and the start of the body.
    static func problem(_ response: ClientResponse) -> ListClientError {
        // The server's own clock, when it says, is "now" for a date: the two clocks need not agree.
        let now = response.header("date").flatMap(httpDate) ?? Date()
        let retryAfter = response.header("retry-after").flatMap { retryAfterSeconds($0, now: now) }
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

    /// The seconds a `Retry-After` field value asks a client to wait (RFC 9110 §10.2.3),
    /// or `nil` when it is neither of its two forms.
    ///
    /// - A number of seconds (`120`; a fraction such as `1.5` is taken too).
    /// - An HTTP date (`Sun, 06 Nov 1994 08:49:37 GMT`, or the two obsolete forms a
    ///   recipient must still accept, RFC 850's and asctime's): the time from `now`
    ///   until then, 0 for a date already past.
    ///
    /// A negative, infinite or NaN number is `nil`, never a trap or a wait without end.
    ///
    /// - Parameters:
    ///   - value: the field's value, as received.
    ///   - now: the moment the wait starts; the answer's `Date` header when it has one.
    public static func retryAfterSeconds(_ value: String, now: Date = Date()) -> Double? {
        let text = value.trimmingCharacters(in: .whitespaces)
        if let seconds = Double(text) {
            return seconds.isFinite && seconds >= 0 ? seconds : nil
        }
        guard let date = httpDate(text) else { return nil }
        return max(0, date.timeIntervalSince(now))
    }

    /// An HTTP date (RFC 9110 §5.6.7) in any of its three forms, always GMT.
    ///
    /// Parsed with a fixed POSIX locale and the GMT time zone, so neither the
    /// device's language nor its calendar setting can change what a server's
    /// date means. A formatter is made per call: this runs on error answers only.
    static func httpDate(_ value: String) -> Date? {
        // asctime pads a one-digit day with a space ("Nov  6"): one space between words.
        let text = value.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(secondsFromGMT: 0)
        formatter.calendar = Calendar(identifier: .gregorian)
        formatter.isLenient = false
        // RFC 850's two-digit year: "a year more than 50 years in the future" is in the past.
        formatter.twoDigitStartDate = Date().addingTimeInterval(-50 * 365.25 * 86_400)
        let formats = [
            "EEE, dd MMM yyyy HH:mm:ss 'GMT'",  // IMF-fixdate
            "EEEE, dd-MMM-yy HH:mm:ss 'GMT'",  // RFC 850
            "EEE MMM d HH:mm:ss yyyy",  // asctime
        ]
        for format in formats {
            formatter.dateFormat = format
            if let date = formatter.date(from: text) { return date }
        }
        return nil
    }
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
