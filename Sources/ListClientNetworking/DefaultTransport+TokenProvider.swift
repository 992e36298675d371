import Foundation
import ListClient

extension ListClient {
    /// A client for `baseURL` with its own ``DefaultTransport`` whose bearer token
    /// comes from `tokenProvider`, asked again once on each 401
    /// (``/ListClient/ListClient/init(baseURLs:transport:tokenProvider:)``).
    ///
    /// ```swift
    /// let client = ListClient(baseURL: url) { try await session.freshToken() }
    /// ```
    public convenience init(baseURL: URL, tokenProvider: @escaping @Sendable () async throws -> String?) {
        self.init(baseURLs: [baseURL], transport: DefaultTransport(), tokenProvider: tokenProvider)
    }
}
