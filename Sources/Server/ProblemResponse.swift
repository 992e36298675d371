import HTTP

/// The server's own error responses, as listd's `application/problem+json`.
///
/// Why here and hand-written: the server answers 408, 413, 431, 503 and the
/// parser's other refusals before any handler runs, and the Server module
/// does not depend on the service's JSON. The shape matches API.md:
/// `{"type":"https://listd.dev/problems/<slug>","title":…,"status":N,"detail":…}`.
enum ProblemResponse {
    /// A problem+json response for `status`, with `detail` saying what was wrong.
    static func make(status: HTTPStatus, detail: String, headers extra: HTTPHeaders = [:]) -> Response {
        var body: [UInt8] = []
        body.reserveCapacity(128 + detail.utf8.count)
        body.append(contentsOf: #"{"type":"https://listd.dev/problems/"#.utf8)
        body.append(contentsOf: slug(for: status).utf8)
        body.append(contentsOf: #"","title":"#.utf8)
        appendJSONString(status.reasonPhrase, to: &body)
        body.append(contentsOf: #","status":"#.utf8)
        body.append(contentsOf: String(status.code).utf8)
        body.append(contentsOf: #","detail":"#.utf8)
        appendJSONString(detail, to: &body)
        body.append(UInt8(ascii: "}"))
        var headers: HTTPHeaders = ["Content-Type": "application/problem+json"]
        for field in extra { headers.add(name: field.name, value: field.value) }
        return Response(status: status, headers: headers, body: body)
    }

    /// The problem type's last path segment.
    static func slug(for status: HTTPStatus) -> String {
        switch status.code {
        case 400: return "bad-request"
        case 408: return "request-timeout"
        case 413: return "content-too-large"
        case 414: return "uri-too-long"
        case 417: return "expectation-failed"
        case 431: return "header-fields-too-large"
        case 501: return "not-implemented"
        case 503: return "service-unavailable"
        case 505: return "http-version-not-supported"
        default:
            // Lower-case the reason phrase, words joined by hyphens.
            let words = status.reasonPhrase.lowercased().split { !$0.isLetter && !$0.isNumber }
            return words.isEmpty ? "status-\(status.code)" : words.joined(separator: "-")
        }
    }

    /// Appends `text` as a JSON string literal (RFC 8259 escaping).
    static func appendJSONString(_ text: String, to bytes: inout [UInt8]) {
        let hex: [UInt8] = Array("0123456789abcdef".utf8)
        bytes.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: #"\""#.utf8)
            case UInt8(ascii: "\\"): bytes.append(contentsOf: #"\\"#.utf8)
            case 0x0A: bytes.append(contentsOf: #"\n"#.utf8)
            case 0x0D: bytes.append(contentsOf: #"\r"#.utf8)
            case 0x09: bytes.append(contentsOf: #"\t"#.utf8)
            case 0..<0x20, 0x7F:
                bytes.append(contentsOf: #"\u00"#.utf8)
                bytes.append(hex[Int(byte >> 4)])
                bytes.append(hex[Int(byte & 0xF)])
            default:
                bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
