import Foundation
import JSON
import ListModel
import ListView
import ListWire
import Synchronization

/// A client of a listd server, or of several listd instances that share one
/// store: every REST route as an async method, and live follows of lists as
/// observables (``follow(list:options:)``).
///
/// Why it takes a transport: the client logic runs in apps (with
/// `URLSessionTransport` from ListClientNetworking) and in `listd watch`
/// (with a socket transport and no libcurl) alike.
///
/// ```swift
/// let client = ListClient(baseURL: URL(string: "http://127.0.0.1:8080")!, token: nil, transport: transport)
/// let list = try await client.createList(id: "groceries", name: "Groceries")
/// _ = try await client.patchList("groceries", [.insertSection(id: "fruit", model: ["title": "Fruit"])])
/// ```
///
/// With several base URLs (instances of one cluster on PostgreSQL, docs/cluster.md),
/// requests go to the current one, ``baseURL``. A follow that loses its instance
/// (no answer, or a 5xx) moves to the next base URL and resumes from the version
/// it holds, with no reset; it also makes that URL the client's current one, so
/// later requests skip the dead instance.
///
/// Every write carries an `Idempotency-Key` and is retried with the same key and
/// bytes when its answer is lost (no answer, a timeout, a 502, 503 or 504), so
/// it is applied once (see ``RetryPolicy``, ``retryPolicy``). For writes that must
/// outlive the app going offline or being killed, queue them in a ``WriteOutbox``.
public final class ListClient: Sendable {
    /// The bearer token sent with every request, if any. Never logged or printed.
    /// `nil` for a client made with a token provider (see ``init(baseURLs:transport:tokenProvider:)``).
    public let token: String?
    /// Where tokens come from when the client was given a provider; `nil` for a fixed ``token``.
    let tokenSource: TokenSource?
    /// How requests are sent.
    public let transport: any HTTPTransport
    private let addresses: Mutex<Addresses>
    /// How writes are retried (``retryPolicy``).
    let retries = Mutex(RetryPolicy())
    /// Writes sent again so far (``writeRetries``).
    let retryCount = Atomic<Int>(0)

    /// The base URLs and the one requests go to now.
    private struct Addresses {
        var urls: [URL] {
            didSet { prefixes = urls.map(ListClient.requestPrefix) }
        }
        var current: Int
        /// Each URL's text that request paths are appended to (see ``ListClient/requestPrefix(_:)``).
        private(set) var prefixes: [String?]

        init(urls: [URL], current: Int) {
            self.urls = urls
            self.current = current
            prefixes = urls.map(ListClient.requestPrefix)
        }
    }

    /// Creates a client for the server at `baseURL` (such as `http://127.0.0.1:8080`).
    public convenience init(baseURL: URL, token: String?, transport: any HTTPTransport) {
        self.init(baseURLs: [baseURL], token: token, transport: transport)
    }

    /// Creates a client for several instances of one listd cluster (such as
    /// `http://a:8080`, `http://b:8080`), asking the first until a follow finds it dead.
    ///
    /// The instances must share one store (`--store postgres://…`): a follow that
    /// moves between instances that do not share versions gets a reset instead of a
    /// continuation. With no URL at all, every request fails with `.invalidRequest`.
    public init(baseURLs: [URL], token: String?, transport: any HTTPTransport) {
        self.token = token
        tokenSource = nil
        self.transport = transport
        addresses = Mutex(Addresses(urls: baseURLs, current: 0))
    }

    /// Creates a client whose bearer token comes from `tokenProvider`: it is
    /// asked before the first request (`nil`: send none) and its answer is kept;
    /// when the server answers 401, it is asked once more and the request sent
    /// again with the new token. A second 401 is the answer (a follow then
    /// reports ``ConnectionState/needsAuth`` and fails with it). Requests that
    /// meet a 401 together share one call of the provider.
    ///
    /// The provider runs on the requesting task, so keep it quick: return a
    /// cached token, or refresh it from the app's own server. An error it throws
    /// fails the request as a `.transport` error (a follow retries it).
    ///
    /// ```swift
    /// let client = ListClient(baseURLs: [url], transport: transport) { try await session.freshToken() }
    /// ```
    public init(
        baseURLs: [URL], transport: any HTTPTransport,
        tokenProvider: @escaping @Sendable () async throws -> String?
    ) {
        token = nil
        tokenSource = TokenSource(tokenProvider)
        self.transport = transport
        addresses = Mutex(Addresses(urls: baseURLs, current: 0))
    }

    /// The address requests go to now: the first base URL until a follow moved
    /// on from it. Setting it replaces all base URLs by this one; it takes effect
    /// from the next request, and running follows resume at the new address where
    /// they left off.
    public var baseURL: URL {
        get {
            // No base URL at all: a URL no request is ever built from (makeRequest refuses first).
            url(instance: nil) ?? URL(fileURLWithPath: "/")
        }
        set { baseURLs = [newValue] }
    }

    /// All the base URLs, in the order follows fail over through them. Setting
    /// them makes the first one current; running follows keep their position
    /// (modulo the new count) and resume where they left off.
    public var baseURLs: [URL] {
        get { addresses.withLock { $0.urls } }
        set { addresses.withLock { $0 = Addresses(urls: newValue, current: 0) } }
    }

    /// The index of ``baseURL`` in ``baseURLs``: where new follows start.
    var currentInstance: Int { addresses.withLock { $0.current } }

    /// A follow moved from instance `old` to `new`: make `new` current unless
    /// another follow already moved the client on, so that several follows that
    /// lose the same instance at once move it one step, not one step each.
    func failedOver(from old: Int, to new: Int) {
        addresses.withLock { addresses in
            if addresses.current == old { addresses.current = new }
        }
    }

    /// The base URL number `instance` (modulo their count), or the current one for `nil`.
    func url(instance: Int?) -> URL? {
        addresses.withLock { addresses in
            guard !addresses.urls.isEmpty else { return nil }
            return addresses.urls[(instance ?? addresses.current) % addresses.urls.count]
        }
    }

    /// ``url(instance:)`` with its request prefix.
    private func root(instance: Int?) -> (url: URL, prefix: String?)? {
        addresses.withLock { addresses in
            guard !addresses.urls.isEmpty else { return nil }
            let index = (instance ?? addresses.current) % addresses.urls.count
            return (addresses.urls[index], addresses.prefixes[index])
        }
    }

    // MARK: - Lists

    /// `GET /lists`: one page of the lists, with the cursor of the next page.
    public func lists(limit: Int? = nil, after: String? = nil) async throws(ListClientError) -> ListPage {
        var query: [(String, String)] = []
        if let limit { query.append(("limit", String(limit))) }
        if let after { query.append(("after", after)) }
        let body = try await json("GET", ["lists"], query: query)
        guard let lists = body["lists"]?.arrayValue else { throw .invalid("GET /lists: no lists array") }
        var summaries: [ListSummary] = []
        for entry in lists {
            guard let text = entry["id"]?.stringValue, let epoch = entry["epoch"]?.stringValue,
                let version = entry["version"]?.int64Value
            else { throw .invalid("GET /lists: an entry needs id, epoch and version") }
            guard let id = Identifier(text) else {
                throw .invalid("GET /lists: \"\(text.prefix(140))\" is not an id")
            }
            summaries.append(
                ListSummary(
                    head: ListHead(id: id, epoch: epoch, version: version), name: entry["name"]?.stringValue ?? "",
                    sectionCount: entry["sectionCount"]?.intValue ?? 0, itemCount: entry["itemCount"]?.intValue ?? 0))
        }
        return ListPage(lists: summaries, next: body["next"]?.stringValue)
    }

    /// `POST /lists`: creates a list (the server makes an id when `id` is `nil`),
    /// with indexes for `where` declared on `indexes` (dotted model paths such
    /// as `"tags.0"`) in the same transaction.
    public func createList(
        id: String? = nil, name: String = "", sections: ListSections = [], indexes: [String] = []
    ) async throws(ListClientError) -> ListState {
        var writer = JSONWriter(capacity: 256)
        writer.beginObject()
        writer.key("name")
        writer.string(name)
        if let id {
            writer.key("id")
            writer.string(id)
        }
        writer.key("sections")
        writer.sections(sections)
        if !indexes.isEmpty {
            writer.key("indexes")
            writer.beginArray()
            for path in indexes { writer.string(path) }
            writer.endArray()
        }
        writer.endObject()
        let body = try await perform(WriteRequest(method: "POST", path: ["lists"], body: writer.bytes))
        return try decoded { () throws(WireError) in try ListState(json: body) }
    }

    /// `GET /lists/{list}`: the whole snapshot.
    public func list(_ id: String) async throws(ListClientError) -> ListState {
        try await list(id, instance: nil)
    }

    /// `GET /lists/{list}?where=…&order=…`: the snapshot of a view of the list.
    ///
    /// The answer has a list's shape with the view's sections: with `group`,
    /// one section per value, its id the value's canonical JSON text (`"open"`
    /// with its quotes) and its model `{"value": v}`. Its version is the list's.
    /// The view travels as its `ViewSpec.canonicalQuery`; for
    /// `ViewSpec.wholeList` this is ``list(_:)``.
    ///
    /// ```swift
    /// let open = try await client.list("tasks", view: try ViewSpec(parsing: "where=done:false&order=due"))
    /// ```
    public func list(_ id: String, view: ViewSpec) async throws(ListClientError) -> ListState {
        try await list(id, view: view, instance: nil)
    }

    /// ``list(_:view:)`` from base URL number `instance` (the current one for `nil`).
    func list(_ id: String, view: ViewSpec = .wholeList, instance: Int?) async throws(ListClientError) -> ListState {
        let body = try await json("GET", ["lists", id], view: view, bytes: nil, instance: instance)
        return try decoded { () throws(WireError) in try ListState(json: body) }
    }

    /// `GET /lists/{list}` with `If-None-Match`: `nil` when the list is still at `etag` (304).
    public func list(_ id: String, ifNoneMatch etag: String) async throws(ListClientError) -> ListState? {
        let response = try await send("GET", ["lists", id], headers: [("If-None-Match", etag)])
        if response.status == 304 { return nil }
        let body = try Self.decode(response)
        return try decoded { () throws(WireError) in try ListState(json: body) }
    }

    /// `PUT /lists/{list}`: replaces the whole list; the answer is the change it made.
    /// `ifMatch` is the version the write expects (412 otherwise).
    public func replaceList(
        _ id: String, name: String? = nil, sections: ListSections, ifMatch: Int64? = nil
    ) async throws(ListClientError) -> ChangeAnswer {
        var writer = JSONWriter(capacity: 256)
        writer.beginObject()
        writer.key("sections")
        writer.sections(sections)
        if let name {
            writer.key("name")
            writer.string(name)
        }
        writer.endObject()
        let body = try await perform(
            WriteRequest(method: "PUT", path: ["lists", id], body: writer.bytes, ifMatch: ifMatch))
        // A PUT to a missing list creates it and answers with the snapshot:
        // that is a reset from version 0.
        if body["sections"] != nil, let state = try? ListState(json: body) {
            return ChangeAnswer(resetFrom: 0, to: state)
        }
        return try decoded { () throws(WireError) in try ChangeAnswer(json: body) }
    }

    /// `PATCH /lists/{list}`: applies `operations` in one transaction; the answer is the change they made.
    public func patchList(
        _ id: String, _ operations: [ListOperation], ifMatch: Int64? = nil
    ) async throws(ListClientError) -> ChangeAnswer {
        let answer = try await perform(.patchList(id, operations, ifMatch: ifMatch))
        return try decoded { () throws(WireError) in try ChangeAnswer(json: answer) }
    }

    /// `DELETE /lists/{list}`.
    public func deleteList(_ id: String, ifMatch: Int64? = nil) async throws(ListClientError) {
        _ = try await perform(.deleteList(id, ifMatch: ifMatch))
    }

    // MARK: - Sections

    /// `GET /lists/{list}/sections`.
    public func sections(of list: String) async throws(ListClientError) -> JSONValue {
        try await json("GET", ["lists", list, "sections"])
    }

    /// `POST /lists/{list}/sections` with `body` (`{"id"?, "model", "items"?, "at"?}`).
    public func createSection(in list: String, _ body: JSONValue, ifMatch: Int64? = nil) async throws(ListClientError)
        -> JSONValue
    {
        try await perform(.createSection(in: list, body, ifMatch: ifMatch))
    }

    /// `GET /lists/{list}/sections/{section}`.
    public func section(_ section: String, of list: String) async throws(ListClientError) -> JSONValue {
        try await json("GET", ["lists", list, "sections", section])
    }

    /// `PUT /lists/{list}/sections/{section}` with `body`.
    public func replaceSection(
        _ section: String, of list: String, _ body: JSONValue, ifMatch: Int64? = nil
    ) async throws(ListClientError) -> JSONValue {
        try await perform(.replaceSection(section, of: list, body, ifMatch: ifMatch))
    }

    /// `PATCH /lists/{list}/sections/{section}` with `body`.
    public func patchSection(
        _ section: String, of list: String, _ body: JSONValue, ifMatch: Int64? = nil
    ) async throws(ListClientError) -> JSONValue {
        try await perform(.patchSection(section, of: list, body, ifMatch: ifMatch))
    }

    /// `DELETE /lists/{list}/sections/{section}` (with its items).
    public func deleteSection(_ section: String, of list: String, ifMatch: Int64? = nil) async throws(ListClientError) {
        _ = try await perform(.deleteSection(section, of: list, ifMatch: ifMatch))
    }

    // MARK: - Items

    /// `GET /lists/{list}/sections/{section}/items`.
    public func items(inSection section: String, of list: String) async throws(ListClientError) -> JSONValue {
        try await json("GET", ["lists", list, "sections", section, "items"])
    }

    /// `POST /lists/{list}/sections/{section}/items` with `body` (`{"id"?, "model", "at"?}`).
    public func createItem(
        inSection section: String, of list: String, _ body: JSONValue, ifMatch: Int64? = nil
    ) async throws(ListClientError) -> JSONValue {
        try await perform(.createItem(inSection: section, of: list, body, ifMatch: ifMatch))
    }

    /// `GET /lists/{list}/items?section=&where=&q=&limit=&after=`: a query over the list's items.
    public func queryItems(
        of list: String, section: String? = nil, where conditions: [String] = [], search: String? = nil,
        limit: Int? = nil, after: String? = nil
    ) async throws(ListClientError) -> JSONValue {
        var query: [(String, String)] = []
        if let section { query.append(("section", section)) }
        for condition in conditions { query.append(("where", condition)) }
        if let search { query.append(("q", search)) }
        if let limit { query.append(("limit", String(limit))) }
        if let after { query.append(("after", after)) }
        return try await json("GET", ["lists", list, "items"], query: query)
    }

    /// `GET /lists/{list}/items/{item}`.
    public func item(_ item: String, of list: String) async throws(ListClientError) -> JSONValue {
        try await json("GET", ["lists", list, "items", item])
    }

    /// `PUT /lists/{list}/items/{item}` with `body`.
    public func replaceItem(
        _ item: String, of list: String, _ body: JSONValue, ifMatch: Int64? = nil
    ) async throws(ListClientError) -> JSONValue {
        try await perform(.replaceItem(item, of: list, body, ifMatch: ifMatch))
    }

    /// `PATCH /lists/{list}/items/{item}` with `body`.
    public func patchItem(
        _ item: String, of list: String, _ body: JSONValue, ifMatch: Int64? = nil
    ) async throws(ListClientError) -> JSONValue {
        try await perform(.patchItem(item, of: list, body, ifMatch: ifMatch))
    }

    /// `DELETE /lists/{list}/items/{item}`.
    public func deleteItem(_ item: String, of list: String, ifMatch: Int64? = nil) async throws(ListClientError) {
        _ = try await perform(.deleteItem(item, of: list, ifMatch: ifMatch))
    }

    // MARK: - Query indexes

    /// `GET /lists/{list}/indexes`: the declared `where` paths and whether `q` has a text index.
    public func indexes(of list: String) async throws(ListClientError) -> JSONValue {
        try await json("GET", ["lists", list, "indexes"])
    }

    /// `PUT /lists/{list}/indexes/{path}`: declares an index on a model path
    /// (`done`, `tags.0`), built before the answer.
    public func declareIndex(_ path: String, on list: String) async throws(ListClientError) -> JSONValue {
        try await perform(WriteRequest(method: "PUT", path: ["lists", list, "indexes", path]))
    }

    /// `DELETE /lists/{list}/indexes/{path}`.
    public func dropIndex(_ path: String, on list: String) async throws(ListClientError) {
        _ = try await perform(WriteRequest(method: "DELETE", path: ["lists", list, "indexes", path]))
    }

    /// `PUT` or `DELETE /lists/{list}/text-index`: turns the text index that serves `q` on or off.
    public func setTextIndex(_ enabled: Bool, on list: String) async throws(ListClientError) {
        _ = try await perform(WriteRequest(method: enabled ? "PUT" : "DELETE", path: ["lists", list, "text-index"]))
    }

    // MARK: - Changes

    /// `GET /lists/{list}/changes?since=&epoch=&timeout=`: one long-poll.
    public func changes(
        of list: String, since: Int64, epoch: String? = nil, timeout: Duration = .seconds(30),
        slack: Duration = .seconds(15)
    ) async throws(ListClientError) -> ChangeAnswer {
        try await changes(of: list, since: since, epoch: epoch, timeout: timeout, slack: slack, instance: nil)
    }

    /// `GET /lists/{list}/changes?since=&epoch=&timeout=&where=…`: one long-poll
    /// for a view's change since `since`, with the view's own positions.
    ///
    /// A write that leaves the view alone does not answer the poll; when one
    /// did go by, the answer may move `to` on with no stages.
    public func changes(
        of list: String, view: ViewSpec, since: Int64, epoch: String? = nil, timeout: Duration = .seconds(30),
        slack: Duration = .seconds(15)
    ) async throws(ListClientError) -> ChangeAnswer {
        try await changes(
            of: list, view: view, since: since, epoch: epoch, timeout: timeout, slack: slack, instance: nil)
    }

    /// ``changes(of:view:since:epoch:timeout:slack:)`` from base URL number `instance` (the current one for `nil`).
    func changes(
        of list: String, view: ViewSpec = .wholeList, since: Int64, epoch: String?, timeout: Duration,
        slack: Duration = .seconds(15), instance: Int?
    ) async throws(ListClientError) -> ChangeAnswer {
        var query = [("since", String(since)), ("timeout", Self.seconds(timeout))]
        if let epoch { query.append(("epoch", epoch)) }
        let answer = try await json(
            "GET", ["lists", list, "changes"], query: query, view: view, bytes: nil, timeout: timeout + slack,
            instance: instance)
        return try decoded { () throws(WireError) in try ChangeAnswer(json: answer) }
    }

    /// `POST /changes`: waits until any of `lists` (id → version held) moves on;
    /// answers for each list that did (`nil` for a list that was deleted).
    public func changes(
        of lists: [String: Int64], epochs: [String: String] = [:], timeout: Duration = .seconds(30),
        slack: Duration = .seconds(15)
    ) async throws(ListClientError) -> [String: ChangeAnswer?] {
        try await changes(of: lists, epochs: epochs, timeout: timeout, slack: slack, instance: nil)
    }

    /// `POST /changes` for views: waits until the view of any list in `lists`
    /// (id → version held) moves on; `views` names the view followed of each
    /// list (a list not in it, or with `ViewSpec.wholeList`, is followed whole).
    /// Each view is sent as its `ViewSpec.canonicalQuery`
    /// (`{"since": 42, "view": "where=done%3Afalse"}`).
    public func changes(
        of lists: [String: Int64], views: [String: ViewSpec], epochs: [String: String] = [:],
        timeout: Duration = .seconds(30), slack: Duration = .seconds(15)
    ) async throws(ListClientError) -> [String: ChangeAnswer?] {
        try await changes(of: lists, views: views, epochs: epochs, timeout: timeout, slack: slack, instance: nil)
    }

    /// ``changes(of:views:epochs:timeout:slack:)`` from base URL number `instance` (the current one for `nil`).
    func changes(
        of lists: [String: Int64], views: [String: ViewSpec] = [:], epochs: [String: String], timeout: Duration,
        slack: Duration, instance: Int?
    ) async throws(ListClientError) -> [String: ChangeAnswer?] {
        let entries = lists.map { list, since -> (String, JSONValue) in
            let version = JSONValue.number(JSONNumber(since))
            guard let view = views[list], !view.isWholeList else { return (list, version) }
            return (list, .object(["since": version, "view": .string(view.canonicalQuery)]))
        }
        let body: JSONValue = .object([
            "lists": .object(JSONObject(entries)),
            "epochs": .object(JSONObject(epochs.map { ($0.key, .string($0.value)) })),
        ])
        let answer = try await json(
            "POST", ["changes"], query: [("timeout", Self.seconds(timeout))], bytes: body.serialized(),
            timeout: timeout + slack, instance: instance)
        return try decoded { () throws(WireError) in try ChangeAnswer.manyLists(json: answer) }
    }

    // MARK: - Operations

    /// `GET /healthz`: whether the server answers 200.
    public func isHealthy() async throws(ListClientError) -> Bool {
        try await send("GET", ["healthz"]).status == 200
    }

    /// `GET /metrics`: the Prometheus text.
    public func metrics() async throws(ListClientError) -> String {
        let response = try await send("GET", ["metrics"])
        guard response.status < 400 else { throw .problem(response) }
        return String(decoding: response.body, as: UTF8.self)
    }

    // MARK: - Plumbing

    /// Sends one request to `path` (segments, percent-encoded here) and decodes
    /// the JSON answer; an error status becomes a `.problem` error. 204 gives `null`.
    ///
    /// It sends the request as it is, once: no `Idempotency-Key` and no retry. For a
    /// write, use ``perform(_:key:)`` (which the write methods use).
    public func json(
        _ method: String, _ path: [String], query: [(String, String)] = [], body: JSONValue? = nil,
        ifMatch: Int64? = nil, timeout: Duration = .seconds(30)
    ) async throws(ListClientError) -> JSONValue {
        try await json(method, path, query: query, bytes: body?.serialized(), ifMatch: ifMatch, timeout: timeout)
    }

    /// ``json(_:_:query:body:ifMatch:timeout:)`` with a body already written (by ListWire's writers).
    /// `view` goes after `query` (see ``makeRequest(_:_:query:view:headers:body:timeout:instance:token:)``);
    /// `instance` picks a base URL by index (a follow's own); `nil` is the current one.
    func json(
        _ method: String, _ path: [String], query: [(String, String)] = [], view: ViewSpec = .wholeList,
        bytes: [UInt8]?, ifMatch: Int64? = nil, timeout: Duration = .seconds(30), instance: Int? = nil
    ) async throws(ListClientError) -> JSONValue {
        var headers: [(String, String)] = []
        if let ifMatch { headers.append(("If-Match", "\"\(ifMatch)\"")) }
        let response = try await send(
            method, path, query: query, view: view, headers: headers, bytes: bytes, timeout: timeout,
            instance: instance)
        return try Self.decode(response)
    }

    /// What an answer may hold: any size and any nesting a server sends.
    /// The server bounds what it stores (`--max-model-depth`, the body
    /// limit), and a list's snapshot is as large as the list: JSON's default
    /// limits (64 KiB, depth 64) refused every list larger than 64 KiB.
    static let answerLimits = JSONLimits(maxDepth: 1024, maxBytes: .max)

    static func decode(_ response: ClientResponse) throws(ListClientError) -> JSONValue {
        guard response.status < 400 else { throw .problem(response) }
        if response.status == 204 || response.body.isEmpty { return .null }
        do {
            return try JSONValue(parsing: response.body, limits: answerLimits)
        } catch {
            throw .invalid("HTTP \(response.status) with a body that is not JSON: \(error)")
        }
    }

    /// Sends one request and returns the response whatever its status, once, as it
    /// is (no `Idempotency-Key`, no retry; see ``perform(_:key:)`` for writes).
    public func send(
        _ method: String, _ path: [String], query: [(String, String)] = [], headers: [(String, String)] = [],
        body: JSONValue? = nil, timeout: Duration = .seconds(30)
    ) async throws(ListClientError) -> ClientResponse {
        try await send(method, path, query: query, headers: headers, bytes: body?.serialized(), timeout: timeout)
    }

    /// ``send(_:_:query:headers:body:timeout:)`` with a body already written.
    func send(
        _ method: String, _ path: [String], query: [(String, String)] = [], view: ViewSpec = .wholeList,
        headers: [(String, String)] = [], bytes: [UInt8]?, timeout: Duration = .seconds(30), instance: Int? = nil
    ) async throws(ListClientError) -> ClientResponse {
        guard let tokenSource else {
            return try await send(
                method, path, query: query, view: view, headers: headers, bytes: bytes, timeout: timeout,
                instance: instance, token: token)
        }
        let token = try await tokenSource.current()
        let response = try await send(
            method, path, query: query, view: view, headers: headers, bytes: bytes, timeout: timeout,
            instance: instance, token: token)
        // One refresh per 401, then the 401 stands (see init(baseURLs:transport:tokenProvider:)).
        guard response.status == 401, let fresh = try? await tokenSource.refresh(replacing: token) else {
            return response
        }
        return try await send(
            method, path, query: query, view: view, headers: headers, bytes: bytes, timeout: timeout,
            instance: instance, token: fresh)
    }

    /// ``send(_:_:query:view:headers:bytes:timeout:instance:)`` once, with `token` (`nil`: none).
    private func send(
        _ method: String, _ path: [String], query: [(String, String)], view: ViewSpec,
        headers: [(String, String)], bytes: [UInt8]?, timeout: Duration, instance: Int?, token: String?
    ) async throws(ListClientError) -> ClientResponse {
        let request = try makeRequest(
            method, path, query: query, view: view, headers: headers, body: bytes, timeout: timeout,
            instance: instance, token: token)
        do {
            return try await transport.send(request)
        } catch let error as ListClientError {
            throw error
        } catch is CancellationError {
            throw ListClientError(kind: .cancelled, detail: "\(method) \(request.url.path) was cancelled")
        } catch {
            if Task.isCancelled {
                throw ListClientError(kind: .cancelled, detail: "\(method) \(request.url.path) was cancelled")
            }
            throw ListClientError(kind: .transport, detail: "\(method) \(request.url.absoluteString): \(error)")
        }
    }

    /// Builds the request for `path` (segments, each percent-encoded here) and
    /// `query` under base URL number `instance` (the current one for `nil`).
    ///
    /// Every byte of a segment or query name or value outside RFC 3986's
    /// unreserved characters (`A-Z a-z 0-9 - . _ ~`) is percent-encoded, so the
    /// server reads back exactly what was given (a `+` in a value is `%2B`, not a space).
    /// A `view` follows `query` as its `ViewSpec.canonicalQuery`, which is
    /// already encoded with the same rule, so it is appended as it is, never
    /// encoded twice: the server reads back the very spec.
    /// The URL is written as text and parsed once: no `URLComponents` and no
    /// `CharacterSet` per request, which cost a follower as much as the rest of
    /// its long-poll's request on Linux.
    func makeRequest(
        _ method: String, _ path: [String], query: [(String, String)], view: ViewSpec = .wholeList,
        headers: [(String, String)], body: [UInt8]?, timeout: Duration, instance: Int? = nil, token: String?
    ) throws(ListClientError) -> ClientRequest {
        guard let root = root(instance: instance) else {
            throw ListClientError(kind: .invalidRequest, detail: "the client has no base URL")
        }
        guard let prefix = root.prefix else {
            throw ListClientError(kind: .invalidRequest, detail: "bad base URL \(root.url)")
        }
        var text = prefix
        for segment in path {
            guard !segment.isEmpty else {
                throw ListClientError(kind: .invalidRequest, detail: "an empty or unencodable id in \(path)")
            }
            text.append("/")
            Self.appendPercentEncoded(segment, to: &text)
        }
        for (index, (name, value)) in query.enumerated() {
            text.append(index == 0 ? "?" : "&")
            Self.appendPercentEncoded(name, to: &text)
            text.append("=")
            Self.appendPercentEncoded(value, to: &text)
        }
        if !view.isWholeList {
            text.append(query.isEmpty ? "?" : "&")
            text.append(view.canonicalQuery)
        }
        guard let url = URL(string: text) else {
            throw ListClientError(kind: .invalidRequest, detail: "cannot build a URL for \(path)")
        }
        var fields: [(name: String, value: String)] = [("Accept", "application/json")]
        if let token { fields.append(("Authorization", "Bearer \(token)")) }
        for (name, value) in headers { fields.append((name, value)) }
        if body != nil { fields.append(("Content-Type", "application/json")) }
        return ClientRequest(method: method, url: url, headers: fields, body: body, timeout: timeout)
    }

    /// The text of `url` that request paths are appended to: scheme, authority and
    /// path without trailing slashes (`http://host:8080/api/` gives
    /// `http://host:8080/api`); a query or fragment of the base URL is not kept.
    /// `nil` for a URL with no scheme.
    static func requestPrefix(_ url: URL) -> String? {
        guard url.scheme != nil else { return nil }
        let absolute = url.absoluteString
        var text = String(absolute[..<(absolute.firstIndex { $0 == "?" || $0 == "#" } ?? absolute.endIndex)])
        let authority = text.range(of: "://")?.upperBound ?? text.startIndex
        let pathStart = text[authority...].firstIndex(of: "/") ?? text.endIndex
        while text.endIndex > pathStart && text.last == "/" { text.removeLast() }
        return text
    }

    /// Appends `text`'s UTF-8 bytes, those outside `A-Z a-z 0-9 - . _ ~` as `%XX`.
    static func appendPercentEncoded(_ text: String, to output: inout String) {
        let hex: StaticString = "0123456789ABCDEF"
        var needsEncoding = false
        for byte in text.utf8 where !isUnreserved(byte) {
            needsEncoding = true
            break
        }
        guard needsEncoding else {
            output.append(text)
            return
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count * 3)
        hex.withUTF8Buffer { digits in
            for byte in text.utf8 {
                if isUnreserved(byte) {
                    bytes.append(byte)
                } else {
                    bytes.append(UInt8(ascii: "%"))
                    bytes.append(digits[Int(byte >> 4)])
                    bytes.append(digits[Int(byte & 0x0F)])
                }
            }
        }
        output.append(String(decoding: bytes, as: UTF8.self))
    }

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
            UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    static func seconds(_ duration: Duration) -> String {
        let milliseconds = duration / .milliseconds(1)
        return milliseconds.rounded() == milliseconds && Int64(milliseconds) % 1000 == 0
            ? String(Int64(milliseconds) / 1000) : String(format: "%.3f", milliseconds / 1000)
    }
}

/// A page of `GET /lists`.
public struct ListPage: Sendable, Equatable {
    /// The lists on this page.
    public var lists: [ListSummary]
    /// The cursor for `after:` to get the next page, `nil` on the last page.
    public var next: String?
}
