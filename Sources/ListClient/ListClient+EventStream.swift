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
        _ = await restore(&machine, options: options, observer: observer)
        while !Task.isCancelled {
            var stream: ClientStream?
            do throws(ListClientError) {
                switch machine.nextAction {
                case .fetchSnapshot:
                    let update = machine.receive(
                        snapshot: try await self.list(list, view: view, instance: machine.instance))
                    if Task.isCancelled { return }
                    observer.onNext(update)
                    await keep(update, of: machine, options: options)
                    connection.answered()
                    backoff.reset()
                case .poll(let since, let epoch):
                    let opened = try await openEvents(
                        ["lists", list, "events"], query: [("since", String(since)), ("epoch", epoch)], view: view,
                        naming: list, options: options, instance: machine.instance, transport: streaming)
                    stream = opened
                    connection.answered()
                    var parser = EventStreamParser()
                    reading: while true {
                        for event in parser.feed(try await Self.nextPiece(of: opened, naming: list)) {
                            switch event.event {
                            case "change", "reset":
                                let update = machine.receive(try Self.answer(event, naming: list))
                                if Task.isCancelled { return }
                                if let update {
                                    observer.onNext(update)
                                    await keep(update, of: machine, options: options)
                                }
                                backoff.reset()
                                if machine.nextAction == .fetchSnapshot {
                                    // Rejected: refetch after the back-off, as the long-poll does.
                                    opened.cancel()
                                    try? await Task.sleep(for: backoff.next())
                                    break reading
                                }
                            case "deleted":
                                opened.cancel()
                                let deleted = machine.receiveDeleted()
                                observer.onNext(deleted)
                                await keep(deleted, of: machine, options: options)
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
                let goOn = await recover(
                    from: error, machine: &machine, observer: observer, backoff: &backoff, connection: &connection,
                    options: options)
                if !goOn { return }
            }
        }
    }

    /// ``follow(lists:options:)`` over one event stream, `GET /events?lists=a:E:V,b:E:V`
    /// (docs/API.md, "Event streams"): each list's snapshot with `GET`, then one stream
    /// whose events name their list, each checked by that list's ``FollowMachine`` as a
    /// long-poll's answer would be.
    ///
    /// The same rules as the single-list stream and the multi-list long-poll: a stream
    /// that fails, ends or stays silent is opened again from the versions held, after the
    /// back-off, on the next base URL where that helps (``recover(from:holding:lists:choice:backoff:connection:options:)``);
    /// an answer that does not apply makes that list alone refetch its snapshot (and the
    /// stream reopen); `event: deleted` drops the list with a `.deleted`; a list deleted
    /// while the stream was down makes the server refuse the whole stream (404), so each
    /// list is asked once, without waiting, to find which (as for `POST /changes`).
    /// Snapshots are emitted as each arrives, so one list's failed fetch never loses
    /// another's snapshot or deletion. The follow completes when no list is left.
    func runEventStreamFollow(
        lists: [String], options: FollowOptions, observer: AnyObserver<ListUpdate>,
        transport streaming: any StreamingHTTPTransport
    ) async {
        var machines = Dictionary(lists.map { ($0, FollowMachine(list: $0)) }) { first, _ in first }
        // One stream for all the lists, so one instance for all of them.
        var choice = InstanceChoice(instance: currentInstance)
        var backoff = Backoff(minimum: options.minimumBackoff, maximum: options.maximumBackoff)
        var connection = ConnectionReporter(options)
        connection.connecting()
        _ = await restore(&machines, options: options, observer: observer)
        while !Task.isCancelled && !machines.isEmpty {
            var stream: ClientStream?
            var failure: ListClientError?
            do throws(ListClientError) {
                if try await fetchSnapshots(&machines, instance: choice.instance, observer: observer, options: options)
                {
                    connection.answered()
                    backoff.reset()
                }
                var cursors: [String] = []
                var since: [String: Int64] = [:]
                var epochs: [String: String] = [:]
                for list in machines.keys.sorted() {
                    guard case .poll(let version, let epoch) = machines[list]?.nextAction else { continue }
                    cursors.append("\(list):\(epoch):\(version)")
                    since[list] = version
                    epochs[list] = epoch
                }
                guard !cursors.isEmpty else { continue }
                let opened: ClientStream
                do throws(ListClientError) {
                    opened = try await openEvents(
                        ["events"], query: [("lists", cursors.joined(separator: ","))], view: .wholeList,
                        naming: "lists \(since.keys.sorted().joined(separator: ", "))", options: options,
                        instance: choice.instance, transport: streaming)
                } catch  where error.status == 404 {
                    // The stream is refused when one of its lists is gone: find which.
                    let answers = try await probe(
                        since, views: [:], epochs: epochs, instance: choice.instance)
                    let count = machines.count
                    let updates = Self.receive(answers, into: &machines)
                    if Task.isCancelled { return }
                    for update in updates {
                        observer.onNext(update)
                        await keep(update.update, list: update.list, view: .wholeList, options: options)
                    }
                    // Every list is there: the 404 is the route's (a server without it), not a list's.
                    if machines.count == count { throw error }
                    connection.answered()
                    continue
                }
                stream = opened
                connection.answered()
                var parser = EventStreamParser()
                reading: while true {
                    for event in parser.feed(try await Self.nextPiece(of: opened, naming: "lists")) {
                        guard ["change", "reset", "deleted"].contains(event.event) else { continue }
                        let json: JSONValue
                        do {
                            json = try JSONValue(parsing: Array(event.data.utf8), limits: Self.answerLimits)
                        } catch {
                            throw ListClientError.invalid("an event of the lists' stream that is not JSON: \(error)")
                        }
                        // A list dropped earlier (deleted, then created again) may still have events: not followed.
                        guard let list = json["list"]?.stringValue, var machine = machines[list] else { continue }
                        let update: FollowUpdate?
                        if event.event == "deleted" {
                            update = machine.receiveDeleted()
                            machines[list] = nil
                        } else {
                            update = machine.receive(try Self.answer(event, naming: list))
                            machines[list] = machine
                        }
                        if Task.isCancelled { return }
                        if let update {
                            observer.onNext(ListUpdate(list: list, update: update))
                            await keep(update, list: list, view: .wholeList, options: options)
                        }
                        backoff.reset()
                        if machines.isEmpty { break reading }
                        if machine.nextAction == .fetchSnapshot && machines[list] != nil {
                            // Rejected: that list refetches after the back-off, then the stream reopens.
                            try? await Task.sleep(for: backoff.next())
                            break reading
                        }
                    }
                }
            } catch {
                failure = error
            }
            stream?.cancel()
            if Task.isCancelled { return }
            guard let failure else { continue }
            guard
                await recoverAll(
                    from: failure, lists: machines.keys.sorted(), choice: &choice, backoff: &backoff,
                    connection: &connection, observer: observer, options: options)
            else { return }
        }
        if !Task.isCancelled {
            connection.ended(nil)
            observer.onCompleted()
        }
    }

    /// The stream's next piece; its end, while the follow runs, is an error that reopens it.
    private static func nextPiece(of stream: ClientStream, naming what: String) async throws(ListClientError)
        -> [UInt8]
    {
        let piece: [UInt8]?
        do {
            piece = try await stream.next()
        } catch {
            throw streamError(error, list: what)
        }
        guard let piece else {
            if Task.isCancelled {
                throw ListClientError(kind: .cancelled, detail: "the event stream of \(what) was cancelled")
            }
            throw ListClientError(kind: .transport, detail: "the event stream of \(what) ended")
        }
        return piece
    }

    /// A `change` or `reset` event's answer.
    private static func answer(_ event: ServerSentEvent, naming list: String) throws(ListClientError) -> ChangeAnswer {
        do {
            return try ChangeAnswer(json: JSONValue(parsing: Array(event.data.utf8), limits: answerLimits))
        } catch {
            throw ListClientError.invalid("an event of \(list) that is not an answer: \(error)")
        }
    }

    /// Opens the event stream at `path` with `query` (and the view) on `transport`:
    /// the stream once its answer is 200, else the answer's error. With a token
    /// provider, a 401 asks it once more, as ``send(_:_:query:headers:body:timeout:)`` does.
    private func openEvents(
        _ path: [String], query: [(String, String)], view: ViewSpec, naming what: String, options: FollowOptions,
        instance: Int, transport streaming: any StreamingHTTPTransport
    ) async throws(ListClientError) -> ClientStream {
        var token = try await tokenSource?.current() ?? self.token
        var refreshed = false
        while true {
            var request = try makeRequest(
                "GET", path, query: query, view: view, headers: [], body: nil,
                timeout: options.pollTimeout + options.responseSlack, instance: instance, token: token)
            request.headers = request.headers.map { $0.name == "Accept" ? ("Accept", "text/event-stream") : $0 }
            let stream: ClientStream
            do {
                stream = try await streaming.stream(request)
            } catch {
                throw Self.streamError(error, list: what)
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
