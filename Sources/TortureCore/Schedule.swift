import ListdTestSupport

/// Which store the harness runs listd on.
public enum TortureStore: String, Sendable {
    case sqlite
    case postgres
}

/// One fault the harness injects.
public enum NemesisKind: String, Sendable, CaseIterable {
    /// `kill -9` of an instance, then a restart on the same port and store.
    case kill
    /// SIGTERM (a graceful stop), then a restart.
    case terminate
    /// A restart with `--history-versions 3` for a while, then back: history pruned mid-run.
    case prune
    /// One event-stream follower stops reading for a while.
    case slowReader
    /// PostgreSQL stopped with `pg_ctl -m immediate`, then started again.
    case postgresImmediate
    /// `pg_terminate_backend` of every listd LISTEN session.
    case terminateListen
    /// `pg_terminate_backend` of every other listd session (writers and readers).
    case terminateSessions
    /// The SQLite store's tmpfs filled with a ballast file for a while, then freed.
    case diskFull
    /// The link between the clients and an instance cut for a while (packets dropped silently), then mended.
    case partitionClients
    /// The link between an instance and PostgreSQL cut for a while, then mended.
    case partitionStore
    /// An instance's links (to its clients, and to PostgreSQL) delayed or throttled for a while.
    case slowLink

    /// Whether the fault lasts its `duration` (the others are instantaneous).
    public var lasts: Bool {
        switch self {
        case .kill, .terminate, .terminateListen, .terminateSessions: false
        case .prune, .slowReader, .postgresImmediate, .diskFull, .partitionClients, .partitionStore, .slowLink: true
        }
    }

    /// The kinds that apply to `store`.
    public static func kinds(for store: TortureStore) -> [NemesisKind] {
        switch store {
        case .sqlite: [.kill, .terminate, .prune, .slowReader, .diskFull, .partitionClients, .slowLink]
        case .postgres: allCases.filter { $0 != .diskFull }
        }
    }
}

/// One planned fault: when (seconds from the start), what, and on which instance or follower.
public struct NemesisEvent: Sendable, Equatable, CustomStringConvertible {
    public var at: Double
    public var kind: NemesisKind
    /// The instance (kill, terminate, prune) or the event-stream follower (slowReader).
    public var target: Int
    /// How long the fault lasts, in seconds (prune, slowReader, the PostgreSQL stop, diskFull,
    /// the partitions and the slow link).
    public var duration: Double

    public init(at: Double, kind: NemesisKind, target: Int, duration: Double) {
        self.at = at
        self.kind = kind
        self.target = target
        self.duration = duration
    }

    public var description: String {
        let time = (at * 10).rounded() / 10
        let length = (duration * 10).rounded() / 10
        return "t+\(time)s \(kind.rawValue) target=\(target) for \(length)s"
    }
}

/// What a run does, all of it drawn from the seed.
public struct TorturePlan: Sendable, Equatable {
    public var seed: UInt64
    public var seconds: Double
    public var store: TortureStore
    public var instances: Int
    public var writers: Int
    public var longPollFollowers: Int
    public var eventStreamFollowers: Int
    public var multiListFollowers: Int
    public var readers: Int
    /// The shared lists writers insert into (besides `counter` and `board`).
    public var lists: [String]
    /// Followers of a view of one of `lists`: the list, the view's query, and
    /// whether it follows by event stream (else by long-poll).
    public var viewFollowers: [ViewFollower]
    public var nemeses: [NemesisEvent]

    /// One follower of a view.
    public struct ViewFollower: Sendable, Equatable, CustomStringConvertible {
        public var list: String
        public var query: String
        public var eventStream: Bool

        public var description: String { "\(eventStream ? "events" : "changes") \(list)?\(query)" }
    }

    /// Followers through the Swift `ListClient`, given every instance's base URL.
    public var clientFollowers: [ClientFollower]

    /// One `ListClient` follower: of a list, or of a view of it; by long-poll or event stream.
    public struct ClientFollower: Sendable, Equatable, CustomStringConvertible {
        public var list: String
        public var query: String?
        public var eventStream: Bool

        public var description: String {
            "\(eventStream ? "events" : "changes") \(list)" + (query.map { "?\($0)" } ?? "")
        }
    }

    /// The views followers draw from. Writers' models are `{"g":0…2,"p":token,"r":rev}`,
    /// and an update changes `g` and `r`, so items cross filters, orders, groups and windows.
    public static let viewQueries = [
        "where=g:1",
        "order=-r",
        "order=p&limit=5",
        "group=g",
        "group=g&order=-r&limit=6",
        "where=g:0&order=r&limit=4",
        "limit=7",
        "q=W1&order=-g",
        "group=r&limit=10",
    ]

    /// Followers of every kind (all of them run until they reach the final snapshots).
    public var followerCount: Int {
        longPollFollowers + eventStreamFollowers + multiListFollowers + viewFollowers.count + clientFollowers.count
    }

    /// The plan for `seed`: the same seed gives the same plan.
    public init(seed: UInt64, seconds: Double, store: TortureStore, instances: Int) {
        self.seed = seed
        self.seconds = seconds
        self.store = store
        self.instances = store == .sqlite ? 1 : max(1, instances)
        var random = SeededGenerator(seed: seed)
        writers = Int.random(in: 3...5, using: &random)
        longPollFollowers = Int.random(in: 2...4, using: &random)
        eventStreamFollowers = Int.random(in: 2...3, using: &random)
        multiListFollowers = Int.random(in: 1...2, using: &random)
        readers = Int.random(in: 1...2, using: &random)
        lists = (0..<Int.random(in: 2...4, using: &random)).map { "t\($0)" }
        var events: [NemesisEvent] = []
        let kinds = NemesisKind.kinds(for: store)
        // Faults from 5 s in, about every 8 s, none in the last 15 s (the followers catch up).
        var time = 5.0
        while true {
            time += 3 + Double.random(in: 0..<10, using: &random)
            guard time < seconds - 15 else { break }
            let kind = kinds[Int.random(in: 0..<kinds.count, using: &random)]
            let target =
                kind == .slowReader
                ? Int.random(in: 0..<eventStreamFollowers, using: &random)
                : Int.random(in: 0..<self.instances, using: &random)
            let duration = Double.random(in: 1..<6, using: &random)
            events.append(NemesisEvent(at: time, kind: kind, target: target, duration: duration))
            time += kind.lasts ? duration : 0
        }
        nemeses = events
        // Drawn from a generator of their own, so these followers do not move the rest of the plan.
        var more = SeededGenerator(seed: seed ^ 0x5649_4557_5321)
        let lists = self.lists
        viewFollowers = (0..<Int.random(in: 2...4, using: &more)).map { _ in
            ViewFollower(
                list: lists[Int.random(in: 0..<lists.count, using: &more)],
                query: Self.viewQueries[Int.random(in: 0..<Self.viewQueries.count, using: &more)],
                eventStream: Bool.random(using: &more))
        }
        let all = lists + ["counter", "board"]
        clientFollowers = (0..<Int.random(in: 1...3, using: &more)).map { _ in
            let viewed = Bool.random(using: &more)
            return ClientFollower(
                list: viewed
                    ? lists[Int.random(in: 0..<lists.count, using: &more)]
                    : all[Int.random(in: 0..<all.count, using: &more)],
                query: viewed ? Self.viewQueries[Int.random(in: 0..<Self.viewQueries.count, using: &more)] : nil,
                eventStream: Bool.random(using: &more))
        }
    }

    /// The plan, printed before the run (and with every failure).
    public var lines: [String] {
        [
            "seed \(seed) store \(store.rawValue) instances \(instances) seconds \(Int(seconds))",
            "workload: \(writers) writers on lists \(lists.joined(separator: ",")),counter,board; "
                + "\(longPollFollowers) long-poll, \(eventStreamFollowers) event-stream, "
                + "\(multiListFollowers) POST /changes followers; \(readers) cursor readers",
            "view followers: " + viewFollowers.map(\.description).joined(separator: "; "),
            "ListClient followers (every instance's URL): "
                + clientFollowers.map(\.description).joined(separator: "; "),
            "nemeses (\(nemeses.count)):",
        ] + nemeses.map { "  \($0)" }
    }

    /// A generator for one worker (`role`, `index`), independent of every other's.
    public func generator(_ role: String, _ index: Int) -> SeededGenerator {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in role.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return SeededGenerator(seed: seed ^ hash ^ (UInt64(index) &* 0x9E37_79B9_7F4A_7C15))
    }
}
