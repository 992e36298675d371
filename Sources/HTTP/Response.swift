/// A response a handler produces: status, header fields and body.
///
/// The serializer adds the framing and connection fields (`Content-Length` or
/// `Transfer-Encoding`, `Connection`, `Date`, `Server`), so handlers set only their own.
public struct Response: Sendable {
    /// The status.
    public var status: HTTPStatus
    /// The handler's header fields; framing fields set here are replaced by the serializer.
    public var headers: HTTPHeaders
    /// The body; for HEAD requests, the body GET would send (only its length is used).
    public var body: [UInt8]

    /// Creates a response.
    public init(status: HTTPStatus = .ok, headers: HTTPHeaders = [:], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}
