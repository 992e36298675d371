import HTTP
import JSON

/// The HTTP form of a change answer: the one function that builds it, for
/// every route that sends one (`PATCH` and `PUT` of a list, the long-poll
/// answered at once or parked and woken, `POST /changes`).
///
/// - Status `200`, `Content-Type: application/json`.
/// - `Cache-Control: no-store`: an answer is a change from the version a
///   client held, meaningless to anyone else and soon stale.
/// - `ETag: "<epoch>-<version>"` when the answer is a write's: the version the
///   write made, to send back as `If-Match`. A long-poll's answer names its
///   versions in its body (`from`, `to`) and `POST /changes` answers for many
///   lists, so they carry none.
/// - The body: the answer's compact JSON and a line feed, or pretty-printed
///   for `?pretty`.
enum ChangeAnswerResponse {
    /// `json`: the answer's compact JSON (``EncodedChangeAnswer/json``).
    /// `compact`: `json` with its line feed when the caller already made it
    /// (the fan-out shares one across every woken waiter), else nil.
    static func response(json: [UInt8], compact: [UInt8]? = nil, pretty: Bool, etag: String? = nil) -> Response {
        var headers = Self.headers
        if let etag { headers.add(name: "ETag", value: etag) }
        return Response(status: .ok, headers: headers, body: body(json, compact: compact, pretty: pretty))
    }

    /// The body of the answer `json`.
    static func body(_ json: [UInt8], compact: [UInt8]?, pretty: Bool) -> [UInt8] {
        if pretty { return prettyPrinted(json) + [UInt8(ascii: "\n")] }
        return compact ?? compactBody(json)
    }

    /// `json` with its line feed: the body every client without `?pretty` gets.
    static func compactBody(_ json: [UInt8]) -> [UInt8] {
        var body = json
        body.append(UInt8(ascii: "\n"))
        return body
    }

    /// The fields of every change answer, built once rather than per answer:
    /// a wake-up of 10,000 parked waiters shares them (and their storage).
    private static let headers: HTTPHeaders = {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json")
        headers.add(name: "Cache-Control", value: "no-store")
        return headers
    }()
}
