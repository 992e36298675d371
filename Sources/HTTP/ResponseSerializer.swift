/// Turns responses into bytes on the wire: status line, header fields, chunked framing.
///
/// The serializer owns the framing and connection fields: it writes `Content-Length` (or
/// `Transfer-Encoding: chunked`) and `Connection` itself and drops those fields from the
/// handler's headers, so a handler can never desynchronise a persistent connection. It adds
/// `Date` and `Server: listd` unless the handler set them. The status line always says
/// `HTTP/1.1`, the highest version the server speaks (RFC 9110, section 6.2).
public enum ResponseSerializer {
    /// `HTTP/1.1 100 Continue` and the empty line: the interim answer to `Expect: 100-continue`.
    public static let continueLine: [UInt8] = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)

    /// The last chunk of a chunked body, with an empty trailer section: `0\r\n\r\n`.
    public static let lastChunk: [UInt8] = Array("0\r\n\r\n".utf8)

    /// The status line and header fields of `response`, ending with the empty line.
    ///
    /// - Parameters:
    ///   - requestMethod: the request's method; for HEAD the fields are those GET would send,
    ///     including the `Content-Length` of `response.body`, which the caller must not send.
    ///   - version: the request's version, which decides how `Connection` is written.
    ///   - keepAlive: whether the connection stays open after this response. HTTP/1.1 gets
    ///     `Connection: close` when false; HTTP/1.0 gets `Connection: keep-alive` when true and
    ///     `Connection: close` otherwise.
    ///   - chunked: write `Transfer-Encoding: chunked` instead of `Content-Length`, for a body
    ///     streamed later with ``chunk(_:)`` and ``lastChunk``. HTTP/1.0 has no chunked coding:
    ///     for a 1.0 request neither framing field is written and `Connection: close` is forced,
    ///     so the caller sends the body bytes unframed and closes (see ``canChunk(version:)``).
    ///   - date: the `Date` value, usually from an ``HTTPDateCache``.
    /// - Complexity: O(size of the head).
    public static func head(
        _ response: Response, requestMethod: HTTPMethod, version: HTTPVersion, keepAlive: Bool,
        chunked: Bool = false, date: String
    ) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(128 + response.headers.count * 48)
        bytes.append(contentsOf: "HTTP/1.1 ".utf8)
        appendDecimal(response.status.code, to: &bytes)
        bytes.append(ASCII.space)
        appendSanitized(response.status.reasonPhrase, to: &bytes)
        bytes.append(contentsOf: "\r\n".utf8)

        var hasDate = false
        var hasServer = false
        for field in response.headers {
            if isFramingField(field.name) { continue }
            guard isValidName(field.name) else { continue }
            if !hasDate, HTTPHeaders.namesEqual(field.name, "date") { hasDate = true }
            if !hasServer, HTTPHeaders.namesEqual(field.name, "server") { hasServer = true }
            bytes.append(contentsOf: field.name.utf8)
            bytes.append(contentsOf: ": ".utf8)
            appendSanitized(field.value, to: &bytes)
            bytes.append(contentsOf: "\r\n".utf8)
        }
        if !hasDate {
            bytes.append(contentsOf: "Date: ".utf8)
            bytes.append(contentsOf: date.utf8)
            bytes.append(contentsOf: "\r\n".utf8)
        }
        if !hasServer {
            bytes.append(contentsOf: "Server: listd\r\n".utf8)
        }

        let code = response.status.code
        let mayFrame = code >= 200 && code != 204 && code != 304
        let canChunk = canChunk(version: version)
        var keepAlive = keepAlive
        if mayFrame {
            if chunked {
                if canChunk {
                    bytes.append(contentsOf: "Transfer-Encoding: chunked\r\n".utf8)
                } else {
                    keepAlive = false
                }
            } else {
                bytes.append(contentsOf: "Content-Length: ".utf8)
                appendDecimal(response.body.count, to: &bytes)
                bytes.append(contentsOf: "\r\n".utf8)
            }
        }
        if version == .http1_0 || version.major < 1 {
            bytes.append(contentsOf: keepAlive ? "Connection: keep-alive\r\n".utf8 : "Connection: close\r\n".utf8)
        } else if !keepAlive {
            bytes.append(contentsOf: "Connection: close\r\n".utf8)
        }
        bytes.append(contentsOf: "\r\n".utf8)
        return bytes
    }

    /// Whether a chunked body can be sent to a client of `version`: only from HTTP/1.1 on.
    public static func canChunk(version: HTTPVersion) -> Bool {
        version.major > 1 || (version.major == 1 && version.minor >= 1)
    }

    /// One chunk of a chunked body: `<size in hex>\r\n<bytes>\r\n`.
    ///
    /// An empty input yields an empty array, never a zero-size chunk, since that would end the body.
    public static func chunk(_ bytes: [UInt8]) -> [UInt8] {
        guard !bytes.isEmpty else { return [] }
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count + 20)
        appendHex(bytes.count, to: &output)
        output.append(contentsOf: "\r\n".utf8)
        output.append(contentsOf: bytes)
        output.append(contentsOf: "\r\n".utf8)
        return output
    }

    /// Whether a body is sent: not for HEAD requests, and never with 1xx, 204 or 304.
    public static func hasBody(status: HTTPStatus, requestMethod: HTTPMethod) -> Bool {
        requestMethod != .head && status.code >= 200 && status.code != 204 && status.code != 304
    }

    /// The fields the serializer writes itself.
    private static func isFramingField(_ name: String) -> Bool {
        HTTPHeaders.namesEqual(name, "content-length") || HTTPHeaders.namesEqual(name, "transfer-encoding")
            || HTTPHeaders.namesEqual(name, "connection")
    }

    /// A handler's field name must be a token; anything else is dropped rather than sent.
    private static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.allSatisfy(ASCII.isToken)
    }

    /// Appends a value with every control character (CR and LF above all) replaced by a space,
    /// so a value that echoes client input can never split the response.
    private static func appendSanitized(_ value: String, to bytes: inout [UInt8]) {
        for byte in value.utf8 {
            bytes.append(byte < 0x20 || byte == 0x7F ? ASCII.space : byte)
        }
    }

    /// Decimal digits; `String(Int)` fits in a small string, so this does not allocate.
    static func appendDecimal(_ value: Int, to bytes: inout [UInt8]) {
        bytes.append(contentsOf: String(value).utf8)
    }

    static func appendHex(_ value: Int, to bytes: inout [UInt8]) {
        bytes.append(contentsOf: String(value, radix: 16).utf8)
    }
}
