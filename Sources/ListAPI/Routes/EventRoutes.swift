import HTTP
import ListModel
import ListStore
import ListView
import Server

/// The change stream as server-sent events: `GET /lists/{list}/events` and
/// `GET /events`. Holds the event hub (which feeds open streams) and the head
/// lookup (to resolve `since=now`).
struct EventRoutes: RouteGroup {
    let heads: HeadLookup
    let hub: EventHub

    func register(in table: inout RouteTable) {
        table.add(.get, "/lists/{list}/events", .read, waits: true, .custom { exchange in events(exchange) })
        table.add(.get, "/events", .read, waits: true, .custom { exchange in eventsOfMany(exchange) })
    }

    /// `GET /lists/{list}/events?since=V&epoch=E&maxChanges=N`: the change
    /// stream as server-sent events (docs/API.md). `Last-Event-ID`, when sent,
    /// wins over `since` and `epoch`: it names the epoch and version last
    /// received. `maxChanges` is read from the query on every connection.
    func events(_ exchange: Exchange) {
        let context = exchange.context
        let list: Identifier
        let cursors: [Identifier: EventStreamMachine.Cursor]
        let maxChanges: Int?
        let view: ViewSpec?
        do throws(Problem) {
            list = try context.identifier("list")
            view = try context.view(allowing: ["since", "epoch", "maxChanges"])
            maxChanges = try ChangeParameters.maxChanges(context.request.queryValue("maxChanges"))
            if let lastID = context.request.header("Last-Event-ID"), !lastID.isEmpty {
                cursors = try EventStreamMachine.parseCursors(lastID, what: "Last-Event-ID")
                guard cursors.count == 1, cursors[list] != nil else {
                    throw .invalidParameter(
                        "Last-Event-ID \(ChangeParameters.quoted(lastID)) is not an event id of list \(list)'s stream")
                }
            } else {
                let version: Int64
                switch try ChangeParameters.since(context.request.queryValue("since")) {
                case .now: version = -1
                case .version(let given): version = given
                }
                let epoch = try ChangeParameters.epoch(context.request.queryValue("epoch"), what: "epoch")
                cursors = [list: .init(epoch: epoch, version: version)]
            }
        } catch {
            return exchange.fail(error)
        }
        openStream(cursors, maxChanges: maxChanges, views: view.map { [list: $0] } ?? [:], exchange)
    }

    /// `GET /events?lists=a:3,b:now,c:E:9&maxChanges=N`: one stream for many
    /// lists. Each event's `data` names its list; its `id` names every list's
    /// position. `maxChanges` applies to each list's events.
    func eventsOfMany(_ exchange: Exchange) {
        let context = exchange.context
        let cursors: [Identifier: EventStreamMachine.Cursor]
        let maxChanges: Int?
        do throws(Problem) {
            maxChanges = try ChangeParameters.maxChanges(context.request.queryValue("maxChanges"))
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
            return exchange.fail(error)
        }
        // A forced view (the token's) applies to each list of the stream.
        let forced = context.caller.view.map { view in Dictionary(uniqueKeysWithValues: cursors.keys.map { ($0, view) })
        }
        openStream(cursors, maxChanges: maxChanges, views: forced ?? [:], exchange)
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

    /// Resolves `now` cursors, then opens the stream: its head passes the
    /// middleware like any answer (CORS, metrics, logging), then the event
    /// hub feeds it.
    private func openStream(
        _ requested: [Identifier: EventStreamMachine.Cursor], maxChanges: Int?,
        views: [Identifier: ViewSpec] = [:], _ exchange: Exchange
    ) {
        exchange.task {
            var cursors = requested
            do throws(Problem) {
                for (list, cursor) in requested.sorted(by: { $0.key < $1.key }) {
                    try exchange.context.caller.reach(list)
                    let head = try await heads.head(of: list)
                    if cursor.version < 0 { cursors[list] = .init(epoch: head.epoch, version: head.version) }
                }
            } catch {
                return exchange.fail(error)
            }
            // HEAD gets the stream's head and ends: there is no body to wait for.
            if exchange.context.request.method == .head {
                return exchange.respond(Response(status: .ok, headers: Self.eventStreamHeaders))
            }
            let output = exchange.startStream(Response(status: .ok, headers: Self.eventStreamHeaders))
            switch hub.open(
                output: output, cursors: cursors, maxChanges: maxChanges, views: views,
                onCancel: { exchange.onCancel($0) })
            {
            case .opened: break
            case .shuttingDown:
                output.write(Array(": listd is shutting down; reconnect\n\n".utf8))
                output.finish()
            }
        }
    }
}
