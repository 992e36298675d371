import Foundation
import Testing

@testable import HTTP

/// A comparable summary of a parsed request.
struct ParsedRequest: Equatable, CustomStringConvertible {
    var method: String
    var target: String
    var path: String
    var query: String?
    var version: String
    var headers: [[String]]
    var keepAlive: Bool
    var expectsContinue: Bool
    var body: [UInt8]

    init(_ head: RequestHead, body: [UInt8]) {
        method = head.method.rawValue
        target = head.target
        path = head.path
        query = head.query
        version = head.version.description
        headers = head.headers.map { [$0.name, $0.value] }
        keepAlive = head.keepAlive
        expectsContinue = head.expectsContinue
        self.body = body
    }

    var description: String { "\(method) \(target) \(version) \(headers) body: \(body.count) bytes" }
}

/// A comparable summary of one parser event.
enum ParsedEvent: Equatable {
    case head(ParsedRequest)
    case request(ParsedRequest)
    case failure(Int)

    var isFailure: Bool {
        if case .failure = self { return true }
        return false
    }
}

/// Feeds `chunks` one after another, draining events after each, as a server would.
func parse(_ chunks: [[UInt8]], limits: HTTPLimits = HTTPLimits()) -> [ParsedEvent] {
    var parser = RequestParser(limits: limits)
    var events: [ParsedEvent] = []
    for chunk in chunks {
        parser.append(chunk)
        while let event = parser.next() {
            switch event {
            case .head(let head): events.append(.head(ParsedRequest(head, body: [])))
            case .request(let request): events.append(.request(ParsedRequest(request.head, body: request.body)))
            case .failure(let error): events.append(.failure(error.status.code))
            }
        }
    }
    return events
}

/// Parses a whole message given as a string in one append.
func parse(_ text: String, limits: HTTPLimits = HTTPLimits()) -> [ParsedEvent] {
    parse([Array(text.utf8)], limits: limits)
}

/// The requests among `events`.
func requests(in events: [ParsedEvent]) -> [ParsedRequest] {
    events.compactMap {
        if case .request(let request) = $0 { return request }
        return nil
    }
}

/// The failure status among `events`, if any.
func failureStatus(in events: [ParsedEvent]) -> Int? {
    for case .failure(let code) in events { return code }
    return nil
}

/// Whether long property runs were asked for (`LISTD_LONG_TESTS=1`).
let longTests = ProcessInfo.processInfo.environment["LISTD_LONG_TESTS"] == "1"

/// The seed for a property test: `LISTD_SEED` when set (to replay a failure), else `fallback`.
func propertySeed(_ fallback: UInt64) -> UInt64 {
    ProcessInfo.processInfo.environment["LISTD_SEED"].flatMap { UInt64($0) } ?? fallback
}
