import Foundation
import Synchronization

/// A client's bearer token from an app's provider: asked once, kept, and asked
/// again when a request that carried it met a 401.
///
/// Requests that start together, or meet a 401 together, share one call of the
/// provider: a refresh for a token that was already replaced returns the
/// replacement without asking again, so 50 follows that all see their token
/// expire cost the app's server one refresh, not 50.
final class TokenSource: Sendable {
    typealias Provider = @Sendable () async throws -> String?

    private struct State {
        /// The token held, when one has been fetched (`.some(nil)`: the provider said "no token").
        var token: String??
        /// The call of the provider in progress, shared by every request that waits for it.
        var fetch: (id: Int, task: Task<String?, any Error>)?
        var fetches = 0
    }

    private let provider: Provider
    private let state = Mutex(State())

    init(_ provider: @escaping Provider) { self.provider = provider }

    /// The token to send: the one held, or the provider's.
    func current() async throws(ListClientError) -> String? {
        if case .some(let token) = state.withLock({ $0.token }) { return token }
        return try await fetch()
    }

    /// A request sent with `failed` met a 401: a token other than `failed` when
    /// one is already held (another request refreshed it), else the provider's new one.
    func refresh(replacing failed: String?) async throws(ListClientError) -> String? {
        let held: String?? = state.withLock { state in
            if case .some(let token) = state.token, token != failed { return .some(token) }
            state.token = nil
            return nil
        }
        if case .some(let token) = held { return token }
        return try await fetch()
    }

    private func fetch() async throws(ListClientError) -> String? {
        let (id, task) = state.withLock { state in
            if let fetch = state.fetch { return fetch }
            state.fetches += 1
            let fetch = (id: state.fetches, task: Task { [provider] in try await provider() })
            state.fetch = fetch
            return fetch
        }
        do {
            let token = try await task.value
            state.withLock { state in
                guard state.fetch?.id == id else { return }
                state.token = .some(token)
                state.fetch = nil
            }
            return token
        } catch {
            state.withLock { state in
                if state.fetch?.id == id { state.fetch = nil }
            }
            if let error = error as? ListClientError { throw error }
            if error is CancellationError {
                throw ListClientError(kind: .cancelled, detail: "the token provider was cancelled")
            }
            throw ListClientError(kind: .transport, detail: "the token provider failed: \(error)")
        }
    }
}

extension ListClient {
    /// A client for the server at `baseURL` whose bearer token comes from
    /// `tokenProvider` (see ``init(baseURLs:transport:tokenProvider:)``).
    public convenience init(
        baseURL: URL, transport: any HTTPTransport, tokenProvider: @escaping @Sendable () async throws -> String?
    ) {
        self.init(baseURLs: [baseURL], transport: transport, tokenProvider: tokenProvider)
    }
}
