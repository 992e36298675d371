import HTTP
import ListModel
import ListStore
import Server

extension ListService {
    /// `GET /lists/{list}/events?since=V&epoch=E&maxChanges=N`: the change
    /// stream as server-sent events (docs/API.md). `Last-Event-ID`, when sent,
    /// wins over `since` and `epoch`: it names the epoch and version last
    /// received. `maxChanges` is read from the query on every connection.
    func events(_ context: Context, _ responder: Responder.Finishing) {
        let list: Identifier
        let cursors: [Identifier: EventStreamMachine.Cursor]
        let maxChanges: Int?
        do throws(Problem) {
            list = try context.identifier("list")
            maxChanges = try Self.maxChanges(context.request.queryValue("maxChanges"))
            if let lastID = context.request.header("Last-Event-ID"), !lastID.isEmpty {
                cursors = try EventStreamMachine.parseCursors(lastID, what: "Last-Event-ID")
                guard cursors.count == 1, cursors[list] != nil else {
                    throw .invalidParameter(
                        "Last-Event-ID \"\(lastID.prefix(80))\" is not an event id of list \(list)'s stream")
                }
            } else {
                let version: Int64
                switch try Self.since(context.request.queryValue("since")) {
                case .now: version = -1
                case .version(let given): version = given
                }
                cursors = [list: .init(epoch: context.request.queryValue("epoch"), version: version)]
            }
        } catch {
            return responder.fail(error)
        }
        openStream(cursors, maxChanges: maxChanges, context, responder)
    }

    /// `GET /events?lists=a:3,b:now,c:E:9&maxChanges=N`: one stream for many
    /// lists. Each event's `data` names its list; its `id` names every list's
    /// position. `maxChanges` applies to each list's events.
    func eventsOfMany(_ context: Context, _ responder: Responder.Finishing) {
        let cursors: [Identifier: EventStreamMachine.Cursor]
        let maxChanges: Int?
        do throws(Problem) {
            maxChanges = try Self.maxChanges(context.request.queryValue("maxChanges"))
            if let lastID = context.request.header("Last-Event-ID"), !lastID.isEmpty {
                cursors = try EventStreamMachine.parseCursors(lastID, what: "Last-Event-ID")
            } else {
                guard let lists = context.request.queryValue("lists") else {
                    throw .invalidParameter(
                        "lists is required: the lists to follow as list:version (or list:now), comma-separated")
                }
                cursors = try EventStreamMachine.parseCursors(lists, what: "lists")
            }
        } catch {
            return responder.fail(error)
        }
        openStream(cursors, maxChanges: maxChanges, context, responder)
    }

    /// The header fields of every event stream.
    static let eventStreamHeaders: HTTPHeaders = {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "text/event-stream")
        headers.add(name: "Cache-Control", value: "no-store")
        // nginx and friends: do not buffer the stream.
        headers.add(name: "X-Accel-Buffering", value: "no")
        return headers
    }()

    private func openStream(
        _ requested: [Identifier: EventStreamMachine.Cursor], maxChanges: Int?, _ context: Context,
        _ responder: Responder.Finishing
    ) {
        responder.task { [self] in
            var cursors = requested
            do throws(Problem) {
                for (list, cursor) in requested.sorted(by: { $0.key < $1.key }) {
                    let head = try await head(of: list)
                    if cursor.version < 0 { cursors[list] = .init(epoch: head.epoch, version: head.version) }
                }
            } catch {
                return responder.fail(error)
            }
            // HEAD gets the stream's head and ends: there is no body to wait for.
            if context.request.method == .head {
                return responder.respond(Response(status: .ok, headers: Self.eventStreamHeaders))
            }
            var head = Response(status: .ok, headers: Self.eventStreamHeaders)
            addCORSHeaders(to: &head.headers, context)
            metrics.request(
                route: context.route, method: context.request.method.rawValue, status: 200,
                duration: ContinuousClock.now - context.started)
            let output = responder.responder.startStream(head)
            switch eventHub.open(
                output: output, cursors: cursors, maxChanges: maxChanges, onCancel: { responder.onCancel($0) })
            {
            case .opened: break
            case .shuttingDown:
                output.write(Array(": listd is shutting down; reconnect\n\n".utf8))
                output.finish()
            }
        }
    }
}
