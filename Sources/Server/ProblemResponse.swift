import HTTP
import JSON

/// The server's own error responses, as listd's `application/problem+json`.
///
/// Why here: the server answers 408, 413, 431, 503 and the parser's other
/// refusals before any handler runs. The shape matches API.md:
/// `{"type":"https://listd.dev/problems/<slug>","title":…,"status":N,"detail":…}`.
enum ProblemResponse {
    /// A problem+json response for `status`, with `detail` saying what was wrong.
    static func make(status: HTTPStatus, detail: String, headers extra: HTTPHeaders = [:]) -> Response {
        var writer = JSONWriter(capacity: 128 + detail.utf8.count)
        writer.beginObject()
        writer.key("type")
        writer.string("https://listd.dev/problems/" + slug(for: status))
        writer.key("title")
        writer.string(status.reasonPhrase)
        writer.key("status")
        writer.int(status.code)
        writer.key("detail")
        writer.string(detail)
        writer.endObject()
        let body = writer.bytes
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
}
