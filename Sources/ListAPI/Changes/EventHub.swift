import ListModel
import ListStore
import ListView
import ReactiveCore
import Server
import Synchronization

/// Holds the open server-sent-events streams and feeds them.
///
/// A commit marks its list on every stream that follows it (``EventStreamMachine``);
/// streams that are idle and hold the same cursors (and `maxChanges`) form one group, whose
/// answer is computed once (``ChangeComputer``) and framed once, then written
/// to each. A stream that is still writing is only marked: it asks for the
/// net change when its last chunk has reached the socket, so a slow reader
/// costs one pending answer at most. A timer sends a comment line to idle
/// streams every `heartbeat`, so proxies keep them open.
final class EventHub: Sendable {
    /// One open stream.
    final class Stream: Sendable {
        let id: UInt64
        let output: ResponseStream
        let machine: Mutex<EventStreamMachine>
        /// `maxChanges`: the client prefers a reset to a change naming more sections and items.
        let maxChanges: Int?
        /// The views followed, by list; a list not here is followed whole.
        let views: [Identifier: ViewSpec]

        init(
            id: UInt64, output: ResponseStream, cursors: [Identifier: EventStreamMachine.Cursor], maxChanges: Int?,
            views: [Identifier: ViewSpec] = [:]
        ) {
            self.id = id
            self.output = output
            self.maxChanges = maxChanges
            self.views = views
            self.machine = Mutex(EventStreamMachine(cursors: cursors))
        }
    }

    /// The result of opening a stream.
    enum OpenResult {
        case opened(Stream)
        case shuttingDown
    }

    private struct State {
        var streams: [UInt64: Stream] = [:]
        var byList: [Identifier: Set<UInt64>] = [:]
        var subscriptions: [Identifier: any Disposable] = [:]
        var nextID: UInt64 = 1
        var shuttingDown = false
    }

    private let router: CommitRouter
    private let computer: ChangeComputer
    private let metrics: ServiceMetrics
    private let state = Mutex(State())
    private let heartbeats: Ticker

    /// Events written (one per stream per event).
    let eventsSent = Atomic<Int>(0)
    /// Changes that found their stream busy and were folded into its next answer.
    let changesCoalesced = Atomic<Int>(0)
    /// Heartbeat comments written.
    let heartbeatsSent = Atomic<Int>(0)

    /// The prelude of every stream: how long a client should wait before reconnecting, and a comment.
    static let prelude = Array("retry: 1000\n: listd event stream\n\n".utf8)
    private static let heartbeatBytes = Array(":\n\n".utf8)
    private static let goodbye = Array(": listd is shutting down; reconnect with Last-Event-ID\n\n".utf8)

    init(router: CommitRouter, computer: ChangeComputer, metrics: ServiceMetrics, heartbeat: Duration) {
        self.router = router
        self.computer = computer
        self.metrics = metrics
        self.heartbeats = Ticker(tick: heartbeat)
        heartbeats.start { [weak self] in
            guard let self, !self.state.withLock({ $0.shuttingDown }) else { return false }
            self.sendHeartbeats()
            return true
        }
    }

    deinit { heartbeats.stop() }

    /// How many streams are open.
    var streamCount: Int { state.withLock { $0.streams.count } }

    /// Opens a stream on `output` for `cursors` (versions already resolved,
    /// none `now`): subscribes to the lists' commits, then compares with the
    /// router's heads under the hub's lock, so no commit slips between.
    /// `maxChanges`, when given, turns a change naming more sections and
    /// items than that into a reset carrying the snapshot.
    func open(
        output: ResponseStream, cursors: [Identifier: EventStreamMachine.Cursor], maxChanges: Int? = nil,
        views: [Identifier: ViewSpec] = [:], onCancel: (@escaping @Sendable () -> Void) -> Void
    ) -> OpenResult {
        let opened: Stream? = state.withLock { state in
            if state.shuttingDown { return nil }
            let stream = Stream(
                id: state.nextID, output: output, cursors: cursors, maxChanges: maxChanges, views: views)
            state.nextID += 1
            state.streams[stream.id] = stream
            for list in cursors.keys {
                state.byList[list, default: []].insert(stream.id)
                if state.subscriptions[list] == nil {
                    state.subscriptions[list] = router.commits(of: list).subscribe(onNext: { [weak self] commits in
                        // A stream wants the net change to the latest: one mark per batch.
                        if let last = commits.last { self?.committed(last, batch: commits) }
                    })
                }
            }
            var behind: Set<Identifier> = []
            for (list, cursor) in cursors {
                guard let head = router.head(of: list) else {
                    behind.insert(list)
                    continue
                }
                if head.version != cursor.version || cursor.epoch.map({ $0 != head.epoch }) ?? false {
                    behind.insert(list)
                }
            }
            stream.machine.withLock { $0.begin(behind: behind) }
            return stream
        }
        guard let stream = opened else { return .shuttingDown }
        onCancel { [weak self] in self?.close(stream.id) }
        stream.output.write(Self.prelude, whenFlushed: { [weak self] in self?.flushed(stream) })
        return .opened(stream)
    }

    /// Ends every stream (with a comment saying why) and refuses new ones.
    func shutdown() {
        heartbeats.stop()
        let (streams, subscriptions) = state.withLock { state in
            state.shuttingDown = true
            let streams = Array(state.streams.values)
            let subscriptions = Array(state.subscriptions.values)
            state.streams = [:]
            state.byList = [:]
            state.subscriptions = [:]
            return (streams, subscriptions)
        }
        for subscription in subscriptions { subscription.dispose() }
        for stream in streams {
            stream.machine.withLock { $0.close() }
            stream.output.write(Self.goodbye)
            stream.output.finish()
        }
    }

    // MARK: - Events

    /// Forgets a stream whose client left; stops following lists no stream follows any more.
    private func close(_ id: UInt64) {
        let unsubscribed: [any Disposable] = state.withLock { state in
            guard let stream = state.streams.removeValue(forKey: id) else { return [] }
            let lists = stream.machine.withLock { machine in
                machine.close()
                return Array(machine.cursors.keys)
            }
            var unsubscribed: [any Disposable] = []
            for list in lists {
                state.byList[list]?.remove(id)
                if state.byList[list]?.isEmpty ?? false {
                    state.byList[list] = nil
                    if let subscription = state.subscriptions.removeValue(forKey: list) {
                        unsubscribed.append(subscription)
                    }
                }
            }
            return unsubscribed
        }
        // Disposed outside the hub's lock: disposing takes the router's.
        for subscription in unsubscribed { subscription.dispose() }
    }

    /// A commit of a followed list (on the router's fan-out queue).
    /// `commit` is the last of `batch`, the commits of its list heard together.
    private func committed(_ commit: Commit, batch: [Commit]) {
        let list = commit.list
        let streams: [Stream] = state.withLock { state in
            guard let ids = state.byList[list] else { return [] }
            return ids.compactMap { state.streams[$0] }
        }
        var coalesced = 0
        // Streams of views the commit cannot have changed are not even marked (see ChangeHub.woken).
        var watches: [String: ChangeHub.ViewWatch] = [:]
        for stream in streams {
            if let view = stream.views[list], let (key, watch) = ChangeHub.ViewWatch.key(list, view) {
                watches[key] = watch
            }
        }
        let woken = watches.isEmpty ? [] : Set(batch.flatMap { ChangeHub.woken(watches, by: $0) })
        // In slices, so the loops start sending the first streams' events while
        // later streams are still being grouped: with 10,000 streams, grouping
        // them all first kept every loop idle for about 10 ms. Groups the
        // commit's own change cannot answer wait for the end, so each still
        // costs one computation, not one per slice.
        var later: [GroupKey: [Stream]] = [:]
        var start = streams.startIndex
        while start < streams.endIndex {
            let end = min(start + Self.sliceSize, streams.endIndex)
            var groups: [GroupKey: [Stream]] = [:]
            // Streams of one list mostly share one key, and comparing with the
            // last key costs less than hashing a key (dictionaries in it).
            var run: (key: GroupKey, members: [Stream])?
            for stream in streams[start..<end] {
                if let view = stream.views[list], let (key, _) = ChangeHub.ViewWatch.key(list, view),
                    !woken.contains(key)
                {
                    continue
                }
                let (key, wasCoalesced) = stream.machine.withLock { machine -> (GroupKey?, Bool) in
                    let (wasCoalesced, action) = machine.changed(list)
                    guard case .compute(let lists) = action else { return (nil, wasCoalesced) }
                    return (
                        GroupKey(
                            cursors: machine.cursors, lists: lists, maxChanges: stream.maxChanges, views: stream.views),
                        wasCoalesced
                    )
                }
                if wasCoalesced { coalesced += 1 }
                guard let key else { continue }
                if run?.key == key {
                    run?.members.append(stream)
                } else {
                    if let run { groups[run.key, default: []].append(contentsOf: run.members) }
                    run = (key, [stream])
                }
            }
            if let run { groups[run.key, default: []].append(contentsOf: run.members) }
            for (key, members) in groups where !deliverRecorded(commit.change, key, to: members) {
                later[key, default: []].append(contentsOf: members)
            }
            start = end
        }
        if coalesced > 0 { changesCoalesced.add(coalesced, ordering: .relaxed) }
        for (key, members) in later { compute(key, for: members) }
    }

    /// How many streams ``committed(_:batch:)`` groups before delivering to them.
    private static let sliceSize = 256

    /// The chunk last written to `stream` reached the socket (on its event loop thread).
    private func flushed(_ stream: Stream) {
        let key = stream.machine.withLock { machine -> GroupKey? in
            guard case .compute(let lists) = machine.flushed() else { return nil }
            return GroupKey(cursors: machine.cursors, lists: lists, maxChanges: stream.maxChanges, views: stream.views)
        }
        if let key { compute(key, for: [stream]) }
    }

    /// What makes streams share one computation and one framed chunk: the
    /// same cursors, the same lists to ask about, and the same `maxChanges`
    /// (a stream with a limit may get a reset where one without gets a change).
    private struct GroupKey: Hashable {
        var cursors: [Identifier: EventStreamMachine.Cursor]
        var lists: [Identifier]
        var maxChanges: Int?
        var views: [Identifier: ViewSpec]
    }

    /// Computes the group's events in one task that asks ``ChangeComputer``,
    /// and writes them.
    private func compute(_ key: GroupKey, for streams: [Stream]) {
        Task {
            var outcomes: [(Identifier, EventStreamMachine.Outcome)] = []
            for list in key.lists {
                guard let cursor = key.cursors[list] else { continue }
                let question = ChangeComputer.Question(
                    list: list, from: max(0, cursor.same ?? cursor.version), epoch: cursor.epoch,
                    maxChanges: key.maxChanges, view: key.views[list],
                    reportFrom: cursor.same == nil ? nil : max(0, cursor.version))
                do throws(StoreError) {
                    outcomes.append((list, .answer(try await computer.answer(question))))
                } catch  where error.kind == .listNotFound {
                    outcomes.append((list, .deleted))
                } catch {
                    // The store failed: end these streams; clients resume with Last-Event-ID.
                    for stream in streams {
                        stream.machine.withLock { $0.close() }
                        stream.output.finish()
                        close(stream.id)
                    }
                    return
                }
            }
            deliver(outcomes, to: streams)
        }
    }

    /// Writes the group's events from the commit's own recorded change, here
    /// on the fan-out queue (no task, no store call), when it is exactly what
    /// the group asks: one list, from the group's cursor, of its epoch, within
    /// its `maxChanges`. Returns whether it was.
    private func deliverRecorded(_ recorded: NetChange?, _ key: GroupKey, to streams: [Stream]) -> Bool {
        guard let recorded, key.views.isEmpty, key.lists == [recorded.list], let cursor = key.cursors[recorded.list],
            max(0, cursor.version) == recorded.from, cursor.epoch.map({ $0 == recorded.epoch }) ?? true
        else { return false }
        let answer = computer.recorded(recorded)
        guard answer.reset || answer.changeCount <= (key.maxChanges ?? .max) else { return false }
        deliver([(recorded.list, .answer(answer))], to: streams)
        return true
    }

    private func deliver(_ outcomes: [(Identifier, EventStreamMachine.Outcome)], to streams: [Stream]) {
        // Members of a group hold the same cursors, so they get the same
        // events: the first member derives and frames them, the others adopt
        // its outcome and share the bytes.
        var shared:
            (
                before: [Identifier: EventStreamMachine.Cursor], after: [Identifier: EventStreamMachine.Cursor],
                events: [Event], bytes: [UInt8]
            )?
        var again: [(GroupKey, Stream)] = []
        for stream in streams {
            let (events, bytes, followUp) = stream.machine.withLock {
                machine -> ([Event], [UInt8], GroupKey?) in
                var events: [Event]
                var bytes: [UInt8]
                let action: EventStreamMachine.Action
                if let shared,
                    let adopted = machine.adopt(
                        before: shared.before, after: shared.after, sent: !shared.events.isEmpty)
                {
                    (events, bytes, action) = (shared.events, shared.bytes, adopted)
                } else {
                    let before = machine.cursors
                    (events, action) = machine.computed(outcomes)
                    bytes = events.reduce(into: [UInt8]()) { $0.append(contentsOf: $1.bytes) }
                    if shared == nil { shared = (before, machine.cursors, events, bytes) }
                }
                guard case .compute(let lists) = action else { return (events, bytes, nil) }
                return (
                    events, bytes,
                    GroupKey(cursors: machine.cursors, lists: lists, maxChanges: stream.maxChanges, views: stream.views)
                )
            }
            if let followUp { again.append((followUp, stream)) }
            guard !events.isEmpty else { continue }
            for event in events where event.kind != .deleted {
                if case .answer(let answer) = outcomes.first(where: { $0.0 == event.list })?.1 {
                    metrics.served(answer)
                }
            }
            eventsSent.add(events.count, ordering: .relaxed)
            stream.output.write(bytes, whenFlushed: { [weak self] in self?.flushed(stream) })
        }
        for (key, stream) in again { compute(key, for: [stream]) }
    }

    // MARK: - Heartbeat

    private func sendHeartbeats() {
        let streams = state.withLock { Array($0.streams.values) }
        var sent = 0
        for stream in streams where stream.machine.withLock({ $0.heartbeatDue() }) {
            stream.output.write(Self.heartbeatBytes, whenFlushed: { [weak self] in self?.flushed(stream) })
            sent += 1
        }
        heartbeatsSent.add(sent, ordering: .relaxed)
    }
}
