import Foundation
import ListStore
import Logging
import Postgres
import Synchronization

/// Hears the commits other instances make, on a session of its own, and hands
/// each to `onCommit` (which feeds the same commit stream as local commits).
///
/// One thread owns the session: it `LISTEN`s on ``CommitChannel/name`` and waits
/// on the socket. When idle for ``Configuration/heartbeat`` it asks the server
/// for its clock, which both proves the session alive and records up to when
/// nothing can have been missed. When the session breaks (server restart,
/// `pg_terminate_backend`, network), it reconnects with jittered exponential
/// back-off, `LISTEN`s again and only then replays the commits recorded since
/// shortly before the last proof of life (``CommitChannel/missed(since:on:)``),
/// so a follower parked meanwhile is still woken. A commit may be delivered
/// twice (heard, then replayed); the commit stream treats a known commit as a
/// no-op.
public final class CommitListener: Sendable {
    /// Timing of the listener.
    public struct Configuration: Sendable {
        /// How long the session may be idle before the listener proves it alive.
        public var heartbeat: Duration = .seconds(1)
        /// How far before the last proof of life a catch-up starts: covers
        /// commits whose time was taken before their transaction committed.
        public var catchUpMargin: Duration = .seconds(5)
        /// The first reconnect delay, doubled on each failure up to `maxBackoff`.
        public var initialBackoff: Duration = .milliseconds(20)
        public var maxBackoff: Duration = .seconds(2)

        public init() {}
    }

    private struct State {
        var ignoredSenders: Set<Int32> = []
        var waiters: [CheckedContinuation<Void, Never>] = []
        var running = false
    }

    private let url: String
    private let configuration: Configuration
    private let onCommit: @Sendable (Commit) -> Void
    private let logger: Logger
    private let stopped = Atomic<Bool>(false)
    private let state = Mutex(State())
    private let sessionPID = Atomic<Int32>(0)
    private let reconnectCount = Atomic<Int>(0)
    private let heardCount = Atomic<Int>(0)
    private let replayedCount = Atomic<Int>(0)

    /// A listener on `url` (not started).
    public init(
        url: String, configuration: Configuration = Configuration(), logger: Logger = Logger(label: "listd.listen"),
        onCommit: @escaping @Sendable (Commit) -> Void
    ) {
        self.url = url
        self.configuration = configuration
        self.logger = logger
        self.onCommit = onCommit
    }

    /// Connects and starts listening on a thread of its own; returns once it listens.
    ///
    /// - Throws: the first connection's error (a wrong URL fails here rather
    ///   than retrying forever); later losses are retried.
    public func start() async throws(PostgresError) {
        state.withLock { $0.running = true }
        let started: Result<Void, PostgresError> = await withCheckedContinuation { continuation in
            let thread = Thread { [self] in
                nameCurrentThread("listd-listen")
                let connection: Connection
                let provenAt: Int64
                do throws(PostgresError) {
                    connection = try Self.connect(url)
                    provenAt = try CommitChannel.serverNow(on: connection)
                } catch {
                    self.finished()
                    continuation.resume(returning: .failure(error))
                    return
                }
                continuation.resume(returning: .success(()))
                self.run(connection, provenAt: provenAt)
            }
            thread.start()
        }
        try started.get()
    }

    /// Asks the thread to stop, without waiting (it ends within 200 ms).
    public func requestStop() {
        stopped.store(true, ordering: .releasing)
    }

    /// Asks the thread to stop and waits until it has closed its session.
    public func stop() async {
        requestStop()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLock { state in
                if !state.running { return true }
                state.waiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }

    /// Drops notifications sent by the server process `pid` (this instance's
    /// own writer sessions, whose commits it already published).
    public func ignoreSender(_ pid: Int32) {
        _ = state.withLock { $0.ignoredSenders.insert(pid) }
    }

    /// The listening session's server process, 0 while disconnected (for
    /// operators and tests).
    public var backendPID: Int32 { sessionPID.load(ordering: .acquiring) }
    /// How many times the session was re-established.
    public var reconnects: Int { reconnectCount.load(ordering: .relaxed) }
    /// Commits heard live, and replayed after reconnects.
    public var heard: Int { heardCount.load(ordering: .relaxed) }
    public var replayed: Int { replayedCount.load(ordering: .relaxed) }

    // MARK: The thread

    private func run(_ first: Connection, provenAt: Int64) {
        var connection: Connection? = first
        var provenAlive = provenAt
        sessionPID.store(first.backendPID, ordering: .releasing)
        var backoff = configuration.initialBackoff
        var lastProof = ContinuousClock.now
        while !stopped.load(ordering: .acquiring) {
            guard let session = connection else {
                // Reconnect, LISTEN, then replay what may have been missed.
                do throws(PostgresError) {
                    let session = try Self.connect(url)
                    let now = try CommitChannel.serverNow(on: session)
                    let since = provenAlive - Int64(configuration.catchUpMargin.components.seconds * 1000)
                    let missed = try CommitChannel.missed(since: since, on: session)
                    connection = session
                    sessionPID.store(session.backendPID, ordering: .releasing)
                    reconnectCount.add(1, ordering: .relaxed)
                    provenAlive = now
                    lastProof = .now
                    backoff = configuration.initialBackoff
                    logger.info(
                        "listening again", metadata: ["replayed": "\(missed.count)", "pid": "\(session.backendPID)"])
                    replayedCount.add(missed.count, ordering: .relaxed)
                    for commit in missed { onCommit(commit) }
                } catch {
                    logger.warning(
                        "cannot listen for other instances' commits; retrying",
                        metadata: ["error": "\(error)", "retry_in": "\(backoff)"])
                    pause(jittered(backoff))
                    backoff = min(backoff * 2, configuration.maxBackoff)
                }
                continue
            }
            do throws(PostgresError) {
                let notifications = try session.notifications(waitingUpTo: .milliseconds(200))
                if notifications.isEmpty {
                    if ContinuousClock.now - lastProof >= configuration.heartbeat {
                        provenAlive = try CommitChannel.serverNow(on: session)
                        lastProof = .now
                    }
                    continue
                }
                deliver(notifications)
            } catch {
                logger.warning(
                    "lost the session listening for other instances' commits", metadata: ["error": "\(error)"])
                session.close()
                connection = nil
                sessionPID.store(0, ordering: .releasing)
            }
        }
        connection?.close()
        sessionPID.store(0, ordering: .releasing)
        finished()
    }

    /// A session named `listd-listen` (in `pg_stat_activity`) listening on the channel.
    ///
    /// TCP keepalives and a user timeout make a silently dead link (a machine
    /// gone, a partition) fail within about 10 s instead of TCP's minutes, so
    /// the listener reconnects and catches up well within a follower's timeout.
    private static func connect(_ url: String) throws(PostgresError) -> Connection {
        let connection = try Connection(url: url, settings: sessionSettings)
        try connection.listen(CommitChannel.name)
        return connection
    }

    /// libpq parameters of the listening session.
    static let sessionSettings = [
        "application_name": applicationName, "keepalives": "1", "keepalives_idle": "5",
        "keepalives_interval": "2", "keepalives_count": "3", "tcp_user_timeout": "10000",
    ]

    /// The `application_name` of listening sessions, for operators.
    public static let applicationName = "listd-listen"

    /// Marks the thread gone and resumes whoever waits in ``stop()``.
    private func finished() {
        let waiters = state.withLock { state in
            state.running = false
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    private func deliver(_ notifications: [Connection.Notification]) {
        let ignored = state.withLock { $0.ignoredSenders }
        for notification in notifications where !ignored.contains(notification.senderPID) {
            let (commits, malformed) = CommitChannel.commits(inPayload: notification.payload)
            if malformed > 0 {
                logger.warning(
                    "ignored malformed commit notifications",
                    metadata: ["lines": "\(malformed)", "sender": "\(notification.senderPID)"])
            }
            heardCount.add(commits.count, ordering: .relaxed)
            for commit in commits { onCommit(commit) }
        }
    }

    private func jittered(_ duration: Duration) -> Duration {
        duration * Double.random(in: 0.5...1.0)
    }

    /// Sleeps up to `duration`, waking early when stopped.
    private func pause(_ duration: Duration) {
        let deadline = ContinuousClock.now + duration
        while !stopped.load(ordering: .acquiring), ContinuousClock.now < deadline {
            Thread.sleep(forTimeInterval: 0.01)
        }
    }
}
