import HTTP
import JSON
import ListModel
import ListStore
import ListView
import Server

/// The long-poll change stream: `GET /lists/{list}/changes` and
/// `POST /changes`. Holds the change hub (which parks and wakes), the change
/// computer (answers asked at once), the head lookup, the request decoder,
/// the metrics that count change answers, and the long-poll's timeouts.
struct ChangeRoutes: RouteGroup {
    let heads: HeadLookup
    let hub: ChangeHub
    let computer: ChangeComputer
    let decoder: RequestDecoder
    let metrics: ServiceMetrics
    /// A long-poll's wait when the client names none.
    let defaultTimeout: Duration
    /// The longest wait a client may ask for.
    let maxTimeout: Duration

    func register(in table: inout RouteTable) {
        table.add(.get, "/lists/{list}/changes", .read, waits: true, .custom { exchange in changes(exchange) })
        table.add(.post, "/changes", .read, waits: true, .custom { exchange in changesOfMany(exchange) })
    }

    /// `GET /lists/{list}/changes?since=V&timeout=S&epoch=E`: the long-poll
    /// change stream (docs/API.md). Answers at once when the client is behind
    /// (or must reset), otherwise parks until a commit or the timeout.
    func changes(_ exchange: Exchange) {
        let context = exchange.context
        let list: Identifier
        let since: ChangeParameters.Since
        let timeout: Duration
        let maxChanges: Int?
        let view: ViewSpec?
        let epoch: String?
        do throws(Problem) {
            list = try context.identifier("list")
            view = try context.view(allowing: ["since", "timeout", "epoch", "maxChanges"])
            since = try ChangeParameters.since(context.request.queryValue("since"))
            timeout = try changeTimeout(context.request.queryValue("timeout"))
            maxChanges = try ChangeParameters.maxChanges(context.request.queryValue("maxChanges"))
            epoch = try ChangeParameters.epoch(context.request.queryValue("epoch"), what: "epoch")
        } catch {
            return exchange.fail(error)
        }
        if let head = heads.known(list) {
            return changes(
                of: head, view: view, since: since, epoch: epoch, maxChanges: maxChanges, timeout: timeout, exchange)
        }
        exchange.task {
            do throws(Problem) {
                let head = try await heads.head(of: list)
                changes(
                    of: head, view: view, since: since, epoch: epoch, maxChanges: maxChanges, timeout: timeout,
                    exchange)
            } catch {
                exchange.fail(error)
            }
        }
    }

    private func changes(
        of head: ListHead, view: ViewSpec?, since: ChangeParameters.Since, epoch: String?, maxChanges: Int?,
        timeout: Duration, _ exchange: Exchange
    ) {
        let version: Int64
        switch since {
        case .now: version = head.version
        case .version(let given): version = given
        }
        let upToDate = version == head.version && (epoch == nil || epoch == head.epoch)
        // A view's follower behind the list parks too when the hub knows its
        // view is the same since: writes elsewhere in the list wake it for nothing.
        let mayBeUnchanged = view != nil && version < head.version && timeout > .zero
        if upToDate || mayBeUnchanged {
            if timeout <= .zero { return respond(.unchanged(head, from: version), exchange) }
            switch hub.park(
                .one(head.id), since: [head.id: version], epochs: [head.id: head.epoch], timeout: timeout,
                pretty: exchange.context.pretty, maxChanges: maxChanges, views: view.map { [head.id: $0] } ?? [:],
                exchange: exchange)
            {
            case .parked: return
            case .shuttingDown: return respond(.unchanged(head, from: version), exchange)
            case .changed: break
            }
        }
        exchange.task {
            do throws(StoreError) {
                // The latest version known to have the same view as `version` (a view's only).
                var same = version
                while true {
                    let answer = try await computer.answer(
                        .init(
                            list: head.id, from: same, epoch: epoch, maxChanges: maxChanges, view: view,
                            reportFrom: same == version ? nil : version))
                    // Commits since `version` that left the view alone: wait for one that does not.
                    guard let view, !answer.reset, answer.stageCount == 0, answer.to > version, timeout > .zero
                    else { return respond(answer, exchange) }
                    same = answer.to
                    switch hub.park(
                        .one(head.id), since: [head.id: same], epochs: [head.id: answer.epoch],
                        timeout: timeout, pretty: exchange.context.pretty, maxChanges: maxChanges,
                        views: [head.id: view], held: [head.id: version], exchange: exchange)
                    {
                    case .parked: return
                    case .changed: continue
                    case .shuttingDown: return respond(answer, exchange)
                    }
                }
            } catch {
                exchange.fail(Problem(error))
            }
        }
    }

    /// Answers a long-poll at once (the parked ones are answered by ``WaiterAnswers``).
    private func respond(_ answer: EncodedChangeAnswer, _ exchange: Exchange) {
        metrics.served(answer)
        exchange.respond(ChangeAnswerResponse.response(json: answer.json, pretty: exchange.context.pretty))
    }

    /// `POST /changes` with `{"lists": {"a": 3, "b": 9}, "epochs"?: {"a": "…"}, "timeout"?: S}`:
    /// waits until any of the lists moves past its version and answers
    /// `{"lists": {"a": <change answer>, …}}` for each list that did
    /// (a deleted list appears as `{"list": "a", "deleted": true}`).
    /// An entry `"a": {"since": 3, "view": "where=done:false&order=due"}`
    /// follows a view of the list (docs/API.md, "Views"): it counts as moved
    /// on only when its view changed.
    func changesOfMany(_ exchange: Exchange) {
        let context = exchange.context
        let since: [Identifier: Int64]
        let views: [Identifier: ViewSpec]
        let epochs: [Identifier: String]
        let timeout: Duration
        let maxChanges: Int?
        do throws(Problem) {
            let fields = try FieldReader(decoder.json(context.request), context: "the body", limits: decoder.models)
            try fields.allowOnly(["lists", "epochs", "timeout", "maxChanges"])
            guard let lists = fields.value("lists") else {
                throw .invalidRequest("the body needs \"lists\": an object of list id → version held")
            }
            let asked: [Identifier: ViewSpec]
            (since, asked) = try Self.versions(lists)
            if context.caller.view != nil {
                // The token's view is forced on every entry, narrowed by the entry's own.
                var forced: [Identifier: ViewSpec] = [:]
                for list in since.keys { forced[list] = try context.caller.forcing(asked[list]) }
                views = forced
            } else {
                views = asked
            }
            epochs = try Self.epochs(fields.value("epochs"))
            // The body's timeout is checked even when the query's wins, so a
            // mistyped field is a 400 about the body, never silently ignored.
            var bodyTimeout: Duration?
            if let value = fields.value("timeout") {
                guard value.numberValue != nil, let parsed = try? changeTimeout(value.canonicalText) else {
                    let maximum = Int(maxTimeout / .seconds(1))
                    throw .invalidRequest(
                        "the body's \"timeout\" must be a number of seconds from 0 to \(maximum), not \(value.briefText)"
                    )
                }
                bodyTimeout = parsed
            }
            if let queryTimeout = context.request.queryValue("timeout") {
                timeout = try changeTimeout(queryTimeout)
            } else if let bodyTimeout {
                timeout = bodyTimeout
            } else {
                timeout = try changeTimeout(nil)
            }
            if let value = fields.value("maxChanges") {
                guard let number = value.int64Value, number >= 0, number <= Int64(Int32.max) else {
                    throw .invalidRequest(
                        "the body's \"maxChanges\" must be a whole number ≥ 0, not \(value.briefText)")
                }
                maxChanges = Int(number)
            } else {
                maxChanges = try ChangeParameters.maxChanges(context.request.queryValue("maxChanges"))
            }
        } catch {
            return exchange.fail(error)
        }
        exchange.task {
            do throws(Problem) {
                var current: [Identifier: ListHead] = [:]
                for list in since.keys {
                    try context.caller.reach(list)
                    current[list] = try await heads.head(of: list)
                }
                var epochsHeld = epochs
                for (list, head) in current where epochsHeld[list] == nil { epochsHeld[list] = head.epoch }
                let waiter = ChangeHub.Parked(
                    exchange: exchange, watch: .many(since), pretty: context.pretty, since: since,
                    epochs: epochsHeld, maxChanges: maxChanges, views: views,
                    deadline: hub.deadline(after: timeout))
                let behind = current.contains { list, head in
                    head.version != since[list] || head.epoch != epochsHeld[list]
                }
                if behind || timeout <= .zero {
                    return await hub.answerMany(waiter, mayPark: timeout > .zero)
                }
                switch hub.park(waiter) {
                case .parked: return
                case .changed: await hub.answerMany(waiter, mayPark: true)
                case .shuttingDown: await hub.answerMany(waiter, mayPark: false)
                }
            } catch {
                exchange.fail(error)
            }
        }
    }

    // MARK: - Parameters

    /// The wait a client asked for, in seconds (fractions allowed), capped.
    func changeTimeout(_ text: String?) throws(Problem) -> Duration {
        guard let text, !text.isEmpty else { return defaultTimeout }
        let maximum = maxTimeout / .seconds(1)
        guard let seconds = Double(text), seconds.isFinite, seconds >= 0, seconds <= maximum else {
            throw .invalidParameter(
                "timeout must be a number of seconds from 0 to \(Int(maximum)), got \"\(text.prefix(40))\"")
        }
        return .milliseconds(Int64((seconds * 1000).rounded()))
    }

    /// The versions held, and the views followed, of `"lists"`: each entry a
    /// version, or `{"since": version, "view": "where=…&order=…"}`.
    static func versions(_ value: JSONValue) throws(Problem) -> ([Identifier: Int64], [Identifier: ViewSpec]) {
        guard let object = value.objectValue, !object.isEmpty else {
            throw .invalidRequest("\"lists\" must be a non-empty object of list id → version held")
        }
        guard object.count <= 1000 else {
            throw .invalidRequest("\"lists\" names \(object.count) lists; at most 1000 may be followed at once")
        }
        var versions: [Identifier: Int64] = [:]
        var views: [Identifier: ViewSpec] = [:]
        for (key, entry) in object {
            guard let id = Identifier(key) else {
                throw .invalidRequest("\"lists\" has an invalid list id \"\(key.prefix(140))\"")
            }
            var version = entry
            if let fields = entry.objectValue {
                if let unknown = fields.keys.first(where: { $0 != "since" && $0 != "view" }) {
                    throw .invalidRequest(
                        "\"lists\".\(key) has an unknown field \"\(unknown.prefix(60))\"; an entry takes since and view"
                    )
                }
                guard let since = fields["since"] else {
                    throw .invalidRequest("\"lists\".\(key) needs \"since\": the version held")
                }
                version = since
                if let text = fields["view"] {
                    guard let query = text.stringValue else {
                        throw .invalidRequest(
                            "\"lists\".\(key).view must be a view's query string, as in \"where=done:false&order=due\", "
                                + "not \(text.briefText)")
                    }
                    do {
                        let spec = try ViewSpec(parsing: query)
                        if !spec.isWholeList { views[id] = spec }
                    } catch {
                        throw .invalidRequest("\"lists\".\(key).view: \(error.detail)")
                    }
                }
            }
            guard let number = version.int64Value, number >= 0 else {
                throw .invalidRequest(
                    "\"lists\".\(key) must be a version (a whole number ≥ 0) or {\"since\": version, \"view\": …}, "
                        + "not \(entry.briefText)")
            }
            versions[id] = number
        }
        return (versions, views)
    }

    static func epochs(_ value: JSONValue?) throws(Problem) -> [Identifier: String] {
        guard let value else { return [:] }
        guard let object = value.objectValue else {
            throw .invalidRequest("\"epochs\" must be an object of list id → epoch")
        }
        var epochs: [Identifier: String] = [:]
        for (key, epoch) in object {
            guard let id = Identifier(key), let text = epoch.stringValue else {
                throw .invalidRequest("\"epochs\".\(key.prefix(140)) must be a list id with a string epoch")
            }
            if let reason = ChangeParameters.epochFailure(text) {
                throw .invalidRequest("\"epochs\".\(id) is \(ChangeParameters.quoted(text)): \(reason)")
            }
            epochs[id] = text
        }
        return epochs
    }
}

/// The query parameters the long-poll and the event streams share.
enum ChangeParameters {
    /// What `since` names.
    enum Since: Sendable, Equatable {
        case now
        case version(Int64)
    }

    static func since(_ text: String?) throws(Problem) -> Since {
        guard let text, !text.isEmpty else {
            throw .invalidParameter("since is required: the version you hold, or \"now\"")
        }
        if text == "now" { return .now }
        guard let version = Int64(text), version >= 0 else {
            throw .invalidParameter(
                "since must be a version (a whole number ≥ 0) or \"now\", got \"\(text.prefix(40))\"")
        }
        return .version(version)
    }

    /// An epoch a client sends back (`epoch=`, a `lists=` entry, an event
    /// id), or nil when absent or empty.
    ///
    /// The store makes every epoch as it makes an id (``Identifier/generate()``),
    /// so a text outside the id alphabet names no epoch: it is refused rather
    /// than carried on into an event id, where a line break would inject lines
    /// into the client's stream.
    static func epoch(_ text: String?, what: String) throws(Problem) -> String? {
        guard let text, !text.isEmpty else { return nil }
        if let reason = epochFailure(text) {
            throw .invalidParameter("\(what) is \(quoted(text)): \(reason)")
        }
        return text
    }

    /// Why `text` is no epoch, or nil when it may be one.
    static func epochFailure(_ text: some StringProtocol) -> String? {
        guard Identifier.validationFailure(String(text)) == nil else {
            return
                "an epoch is 1 to \(Identifier.maxLength) characters of A-Z a-z 0-9 . _ ~ - (as the server makes them)"
        }
        return nil
    }

    /// `text` in quotes for a problem's detail, cut to 80 characters, with
    /// control characters (line breaks above all) written as escapes.
    static func quoted(_ text: some StringProtocol) -> String {
        "\"" + text.prefix(80).unicodeScalars.map { $0.escaped(asASCII: false) }.joined() + "\""
    }

    /// `maxChanges=N`: the client would rather reset than get a change naming more than N sections and items.
    static func maxChanges(_ text: String?) throws(Problem) -> Int? {
        guard let text else { return nil }
        guard let number = Int(text), number >= 0, number <= Int(Int32.max) else {
            throw .invalidParameter("maxChanges must be a whole number ≥ 0, got \"\(text.prefix(40))\"")
        }
        return number
    }
}
