import Foundation
import ListClient
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An `HTTPTransport` over `URLSession`, for apps (iOS, macOS) and tools that may
/// link FoundationNetworking: what ``DefaultTransport`` sends every request with
/// on Apple platforms, and `https://` requests with on Linux.
///
/// Cancelling the calling task cancels the data task, which closes its
/// connection, so a parked long-poll is released on the server at once.
public final class URLSessionTransport: HTTPTransport {
    /// The session requests run on.
    public let session: URLSession

    /// Uses `session`, or an ephemeral session without cache that allows many
    /// parallel connections per host (each follow holds one for its long-poll).
    public init(session: URLSession? = nil) {
        self.session =
            session
            ?? {
                let configuration = URLSessionConfiguration.ephemeral
                configuration.httpMaximumConnectionsPerHost = 256
                configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
                configuration.urlCache = nil
                configuration.timeoutIntervalForResource = 24 * 3600
                return URLSession(configuration: configuration)
            }()
    }

    /// Sends `request` with a data task; throws `CancellationError` when the task is cancelled.
    public func send(_ request: ClientRequest) async throws -> ClientResponse {
        var urlRequest = URLRequest(url: request.url, timeoutInterval: request.timeout / .seconds(1))
        urlRequest.httpMethod = request.method
        urlRequest.cachePolicy = .reloadIgnoringLocalCacheData
        for (name, value) in request.headers { urlRequest.addValue(value, forHTTPHeaderField: name) }
        if let body = request.body { urlRequest.httpBody = Data(body) }
        let box = TaskBox()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation {
                (continuation: CheckedContinuation<ClientResponse, any Error>) in
                let task = session.dataTask(with: urlRequest) { data, response, error in
                    if let error {
                        let cancelled = (error as? URLError)?.code == .cancelled
                        return continuation.resume(throwing: cancelled ? CancellationError() : error)
                    }
                    guard let http = response as? HTTPURLResponse else {
                        return continuation.resume(throwing: URLError(.badServerResponse))
                    }
                    var headers: [String: String] = [:]
                    for (name, value) in http.allHeaderFields {
                        if let name = name as? String, let value = value as? String { headers[name] = value }
                    }
                    continuation.resume(
                        returning: ClientResponse(
                            status: http.statusCode, headers: headers, body: Array(data ?? Data())))
                }
                if box.start(task) { task.resume() } else { continuation.resume(throwing: CancellationError()) }
            }
        } onCancel: {
            box.cancel()
        }
    }
}

/// Hands the data task to the cancellation handler, which may run before it exists.
private final class TaskBox: Sendable {
    private enum State {
        case waiting
        case running(URLSessionDataTask)
        case cancelled
    }

    // @unchecked: URLSessionDataTask is not marked Sendable in corelibs Foundation; the
    // task is only reached through `state`, whose Mutex protects it (and cancel() is thread-safe).
    private struct Locked: @unchecked Sendable { var state: State }
    private let state = Mutex(Locked(state: .waiting))

    /// Records `task`; `false` when already cancelled (the caller must not start it).
    func start(_ task: URLSessionDataTask) -> Bool {
        state.withLock { locked in
            if case .cancelled = locked.state { return false }
            locked.state = .running(task)
            return true
        }
    }

    func cancel() {
        let task: URLSessionDataTask? = state.withLock { locked in
            defer { locked.state = .cancelled }
            if case .running(let task) = locked.state { return task }
            return nil
        }
        task?.cancel()
    }
}
