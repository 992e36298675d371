import Foundation
import JSON
import ReactiveCore

/// How a follow hears of changes (``FollowOptions/transport``).
public enum FollowTransport: Sendable, Equatable {
    /// `GET /lists/{list}/changes?since=V`, one request per change (or per
    /// `pollTimeout` of quiet). Works over any ``HTTPTransport``.
    case longPoll
    /// `GET /lists/{list}/events?since=V` (`Accept: text/event-stream`): one
    /// request, and each change arrives on it as an event. Needs a
    /// ``StreamingHTTPTransport`` that can stream to the base URL (`SocketTransport`,
    /// `DefaultTransport` for `http://` on Linux); with any other the follow
    /// fails with `.invalidRequest`.
    case eventStream
    /// The event stream when the client's transport can stream to the base URL, else long-polls.
    case automatic
}

extension ListClient {
    /// The transport to follow over the event stream with, or `nil` to long-poll.
    func eventStreamTransport(_ options: FollowOptions) -> (any StreamingHTTPTransport)? {
        guard options.transport != .longPoll, let streaming = transport as? any StreamingHTTPTransport else {
            return nil
        }
        if options.transport == .automatic {
            guard let url = url(instance: nil), streaming.canStream(to: url) else { return nil }
        }
        return streaming
    }

    /// ``follow(list:view:options:)`` over the event stream: the snapshot with
    /// `GET`, then one `GET …/events?since=V&epoch=E` whose events are the answers
    /// a long-poll would have had, each checked by the same ``FollowMachine``. A
    /// stream that fails, ends, or stays silent longer than `pollTimeout +
    /// responseSlack` (the server sends a heartbeat every 15 s) is opened again from
    /// the version held, after the back-off, on the next base URL where that helps.
    func runEventStreamFollow(
        list: String, view: ViewSpec, options: FollowOptions, observer: AnyObserver<FollowUpdate>,
        transport streaming: any StreamingHTTPTransport
    ) async {
        var machine = FollowMachine(list: list, view: view, instance: currentInstance)
        var backoff = Backoff(minimum: options.minimumBackoff, maximum: options.maximumBackoff)
        var connection = ConnectionReporter(options)
        connection.connecting()
        while !Task.isCancelled {
            var stream: ClientStream?
            do throws(ListClientError) {
                switch machine.nextAction {
                case .fetchSnapshot:
                    let update = machine.receive(
                        snapshot: try await self.list(list, view: view, instance: machine.instance))
                    if Task.isCancelled { return }
                    observer.onNext(update)
                    connection.answered()
                    backoff.reset()
                case .poll(let since, let epoch):
                    let opened = try await openEvents(
                        list: list, view: view, since: since, epoch: epoch, options: options,
                        instance: machine.instance, transport: streaming)
                    stream = opened
                    connection.answered()
                    var parser = EventStreamParser()
                    reading: while true {
                        let piece: [UInt8]?
                        do {
                            piece = try await opened.next()
                        } catch {
                            throw Self.streamError(error, list: list)
                        }
                        guard let piece else {
                            if Task.isCancelled { return }
                            throw ListClientError(kind: .transport, detail: "the event stream of \(list) ended")
                        }
                        for event in parser.feed(piece) {
                            switch event.event {
                            case "change", "reset":
                                let answer: ChangeAnswer
                                do {
                                    answer = try ChangeAnswer(
                                        json: JSONValue(parsing: Array(event.data.utf8), limits: Self.answerLimits))
                                } catch {
                                    throw ListClientError.invalid("an event of \(list) that is not an answer: \(error)")
                                }
                                let update = machine.receive(answer)
                                if Task.isCancelled { return }
                                if let update { observer.onNext(update) }
                                backoff.reset()
                                if machine.nextAction == .fetchSnapshot {
                                    // Rejected: refetch after the back-off, as the long-poll does.
                                    opened.cancel()
                                    try? await Task.sleep(for: backoff.next())
                                    break reading
                                }
                            case "deleted":
                                opened.cancel()
                                observer.onNext(machine.receiveDeleted())
                                connection.ended(nil)
                                observer.onCompleted()
                                return
                            default:
                                continue
                            }
                        }
                    }
                }
            } catch {
                stream?.cancel()
                switch Self.recovery(error, holding: machine.hasEmitted) {
                case .stop: return
                case .deleted:
                    observer.onNext(machine.receiveDeleted())
                    connection.ended(nil)
                    observer.onCompleted()
                    return
                case .fail:
                    connection.ended(error)
                    observer.onError(error)
                    return
                case .retry(let retryAfter):
                    let old = machine.instance
                    let moved = machine.failed(error, instances: baseURLs.count)
                    if moved { reportFailover(of: [list], from: old, choice: machine.instanceChoice, error, options) }
                    let delay = retryAfter.flatMap { moved ? nil : backoff.next(retryAfter: $0) } ?? backoff.next()
                    connection.retrying(after: delay)
                    try? await Task.sleep(for: delay)
                }
            }
        }
    }

    /// Opens `GET /lists/{list}/events?since=&epoch=` (and the view) on `transport`:
    /// the stream once its answer is 200, else the answer's error. With a token
    /// provider, a 401 asks it once more, as ``send(_:_:query:headers:body:timeout:)`` does.
    private func openEvents(
        list: String, view: ViewSpec, since: Int64, epoch: String, options: FollowOptions, instance: Int,
        transport streaming: any StreamingHTTPTransport
    ) async throws(ListClientError) -> ClientStream {
        var token = try await tokenSource?.current() ?? self.token
        var refreshed = false
        while true {
            var request = try makeRequest(
                "GET", ["lists", list, "events"], query: [("since", String(since)), ("epoch", epoch)], view: view,
                headers: [], body: nil, timeout: options.pollTimeout + options.responseSlack, instance: instance,
                token: token)
            request.headers = request.headers.map { $0.name == "Accept" ? ("Accept", "text/event-stream") : $0 }
            let stream: ClientStream
            do {
                stream = try await streaming.stream(request)
            } catch {
                throw Self.streamError(error, list: list)
            }
            if stream.status == 200 { return stream }
            let answer = await stream.collect()
            if answer.status == 401, !refreshed, let tokenSource,
                let fresh = try? await tokenSource.refresh(replacing: token)
            {
                token = fresh
                refreshed = true
                continue
            }
            throw .problem(answer)
        }
    }

    /// A transport's error while streaming, as the follow's error.
    private static func streamError(_ error: any Error, list: String) -> ListClientError {
        if let error = error as? ListClientError { return error }
        if error is CancellationError || Task.isCancelled {
            return ListClientError(kind: .cancelled, detail: "the event stream of \(list) was cancelled")
        }
        return ListClientError(kind: .transport, detail: "the event stream of \(list): \(error)")
    }
}
