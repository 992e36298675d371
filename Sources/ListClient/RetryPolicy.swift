import Foundation

/// How ``ListClient`` retries a write whose answer did not arrive.
///
/// Every write carries an `Idempotency-Key`; a retry sends the same key with the
/// same bytes, so the server applies the write once and answers a retry with the
/// stored answer (docs/API.md, "Retries"). Retried: no answer at all (connection
/// refused, reset or closed, a timeout) and a 502, 503 or 504 (a 503's
/// `Retry-After` is honoured). Never retried: any 4xx, including 409 and 422,
/// and any other 5xx; those fail at once with the server's problem.
///
/// A write gives up after ``maxAttempts`` sends, or when the next wait would end
/// after ``deadline`` from its first send; it then throws the last error.
///
/// ```swift
/// client.retryPolicy = RetryPolicy(maxAttempts: 3, deadline: .seconds(10))
/// client.retryPolicy = .never  // one send, no retry (the key is still sent)
/// ```
public struct RetryPolicy: Sendable, Equatable {
    /// Sends of one write at most, the first included; 1 means never retry. At least 1.
    public var maxAttempts: Int
    /// The time from a write's first send after which no retry starts.
    public var deadline: Duration
    /// The first wait between two sends (doubling, with jitter, see ``Backoff``).
    public var minimumBackoff: Duration
    /// The longest wait between two sends (except a `Retry-After`, up to ``Backoff/maximumRetryAfter``).
    public var maximumBackoff: Duration

    /// Creates a policy; the defaults suit an app on a mobile network
    /// (8 sends within 60 s, waits from 0.1 s doubling up to 5 s).
    public init(
        maxAttempts: Int = 8, deadline: Duration = .seconds(60), minimumBackoff: Duration = .milliseconds(100),
        maximumBackoff: Duration = .seconds(5)
    ) {
        self.maxAttempts = max(1, maxAttempts)
        self.deadline = deadline
        self.minimumBackoff = minimumBackoff
        self.maximumBackoff = maximumBackoff
    }

    /// One send, no retry.
    public static let never = RetryPolicy(maxAttempts: 1)

    /// Whether a write that failed with `error` may be sent again with its key:
    /// no answer (`.transport`), or a 502, 503 or 504.
    public static func isRetryable(_ error: ListClientError) -> Bool {
        switch error.kind {
        case .transport: return true
        case .problem: return ListClient.retryableStatuses.contains(error.status ?? 0)
        case .invalidResponse, .cancelled, .invalidRequest, .outbox, .decoding: return false
        }
    }
}

/// The retry decisions of one write, as a value with no I/O, so they are tested
/// without sockets or clocks (``ListClient/perform(_:key:)`` runs them).
public struct WriteAttempts: Sendable {
    /// The policy applied.
    public let policy: RetryPolicy
    private var backoff: Backoff
    /// Sends so far.
    public private(set) var attempts = 0

    /// The decisions for a write under `policy`, before its first send.
    public init(policy: RetryPolicy) {
        self.policy = policy
        backoff = Backoff(minimum: policy.minimumBackoff, maximum: policy.maximumBackoff)
    }

    /// A send is about to start.
    public mutating func sending() { attempts += 1 }

    /// The last send failed with `error`, `elapsed` after the first one started:
    /// the wait before the next send, or `nil` to give up (not retryable, the
    /// attempts used up, or the wait would end past the deadline).
    public mutating func retry(after error: ListClientError, elapsed: Duration) -> Duration? {
        guard RetryPolicy.isRetryable(error), attempts < policy.maxAttempts else { return nil }
        let wait = error.retryAfter.map { backoff.next(retryAfter: $0) } ?? backoff.next()
        guard elapsed + wait <= policy.deadline else { return nil }
        return wait
    }
}

/// Idempotency keys: UUIDv7 text (RFC 9562), so keys sort by the millisecond they
/// were made in and carry 74 random bits.
///
/// Why this shape: it is 36 printable ASCII bytes (the server takes 1-255), a
/// server operator can read a key's age from it, and the random bits make a
/// collision between two clients' keys as unlikely as between two UUIDv4s.
public enum IdempotencyKey {
    /// A new key, such as `0193a6f2-7c1e-7b3a-9f41-2d5c8e0a6b17`.
    public static func make(now: Date = Date()) -> String {
        var random = SystemRandomNumberGenerator()
        return make(now: now, using: &random)
    }

    /// A key made with `generator`'s random bits (a seeded one in tests).
    public static func make(now: Date, using generator: inout some RandomNumberGenerator) -> String {
        // Milliseconds since 1970 in 48 bits; a date before 1970 or past 10889 is clamped.
        let milliseconds = UInt64(min(max(now.timeIntervalSince1970 * 1000, 0), Double(UInt64(1) << 48 - 1)))
        let high = generator.next() as UInt64
        let low = generator.next() as UInt64
        var bytes = [UInt8](repeating: 0, count: 16)
        for index in 0..<6 { bytes[index] = UInt8(truncatingIfNeeded: milliseconds >> (40 - 8 * UInt64(index))) }
        for index in 6..<8 { bytes[index] = UInt8(truncatingIfNeeded: high >> (8 * UInt64(index - 6))) }
        for index in 8..<16 { bytes[index] = UInt8(truncatingIfNeeded: low >> (8 * UInt64(index - 8))) }
        bytes[6] = 0x70 | (bytes[6] & 0x0F)  // version 7
        bytes[8] = 0x80 | (bytes[8] & 0x3F)  // variant 10
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(36)
        for (index, byte) in bytes.enumerated() {
            if index == 4 || index == 6 || index == 8 || index == 10 { text.append(UInt8(ascii: "-")) }
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
