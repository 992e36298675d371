import CSystem
import Glibc
import HTTP
import Logging
import POSIXIO
import Synchronization

/// An HTTP/1.1 server: one epoll event loop thread per core, each with
/// its own listening socket on the same port.
///
/// Why SO_REUSEPORT listeners rather than one acceptor: the kernel spreads
/// new connections over the loops' accept queues, so accepting needs no
/// hand-off between threads and no loop wakes for a connection another one
/// takes. A loop then owns its connections for their whole life.
///
/// ```swift
/// let server = HTTPServer(configuration: .init(port: 8080), handler: MyHandler(), logger: logger)
/// let port = try server.start()
/// server.installSignalHandlers()
/// server.waitUntilStopped()
/// ```
public final class HTTPServer: Sendable {
    private enum Phase {
        case created
        case running(threads: [pthread_t])
        case joining
        case stopped
    }

    private struct State {
        var phase = Phase.created
        var loops: [EventLoop] = []
        var draining = false
        var hooks: [@Sendable () -> Void] = []
        var signalFD: Int32?
    }

    private let configuration: ServerConfiguration
    private let handler: any HTTPHandler
    private let logger: Logger
    private let counters = ServerCounters()
    private let state = Mutex(State())

    /// Creates a server; nothing is bound until `start()`.
    public init(configuration: ServerConfiguration, handler: some HTTPHandler, logger: Logger) {
        self.configuration = configuration
        self.handler = handler
        self.logger = logger
    }

    /// Binds, starts the event loops, and returns the bound port.
    ///
    /// Also sets SIGPIPE to be ignored for the process, so a client that goes
    /// away mid-write never kills it.
    public func start() throws(SystemError) -> Int {
        let alreadyStarted = state.withLock { state -> Bool in
            if case .created = state.phase { return false }
            return true
        }
        precondition(!alreadyStarted, "HTTPServer.start() called twice")
        try System.ignoreSIGPIPE()

        let loopCount = max(1, configuration.eventLoops)
        // Connections never take the last descriptors, whatever was asked:
        // a process with none free cannot open its database files, and
        // libdispatch aborts the process when its worker-pool monitor cannot
        // open /proc/<tid>/stat (a once-a-second check while work is queued).
        let ceiling = try Self.descriptorCeiling(reserve: configuration.descriptorReserve)
        let maxConnections = min(configuration.maxConnections ?? ceiling.connections, ceiling.connections)
        if let asked = configuration.maxConnections, asked > ceiling.connections {
            logger.warning(
                "fewer connections than asked: the descriptor limit allows no more (raise it with ulimit -n)",
                metadata: [
                    "asked": "\(asked)", "maxConnections": "\(maxConnections)",
                    "descriptorLimit": "\(ceiling.descriptors)", "reserve": "\(configuration.descriptorReserve)",
                ])
        }
        let context = ServerContext(
            configuration: configuration, handler: handler, counters: counters, logger: logger,
            maxConnections: maxConnections)

        var listeners: [Int32] = []
        var loops: [EventLoop] = []
        var threads: [pthread_t] = []
        var port = configuration.port
        do {
            port = try Socket.probeFreePort(try Socket.Address(host: configuration.host, port: port))
            for index in 0..<loopCount {
                let address = try Socket.Address(host: configuration.host, port: port)
                let listener = try Socket.listen(on: address, reusePort: true, backlog: configuration.backlog)
                listeners.append(listener)
                if index == 0 { port = try Socket.boundPort(listener) }
            }
            for (index, listener) in listeners.enumerated() {
                let loop = try EventLoop(index: index)
                let selector = try Selector()
                try EventLoopCore.registerSources(selector: selector, listener: listener, wakeFD: loop.wakeFD)
                let core = Handoff(EventLoopCore(loop: loop, context: context, selector: selector, listener: listener))
                loops.append(loop)
                threads.append(try System.spawnThread(name: "http-loop-\(index)") { core.take().run() })
            }
        } catch {
            // Loops already running own their listeners; close the rest and stop them.
            for listener in listeners.dropFirst(threads.count) { System.close(listener) }
            for loop in loops { loop.post(.drain(deadline: 0)) }
            for thread in threads { System.join(thread) }
            throw error
        }
        state.withLock {
            $0.phase = .running(threads: threads)
            $0.loops = loops
        }
        logger.info(
            "listening",
            metadata: [
                "host": "\(configuration.host)", "port": "\(port)", "eventLoops": "\(loopCount)",
                "maxConnections": "\(maxConnections)",
            ])
        return port
    }

    /// Registers a hook run when a graceful shutdown begins: the service
    /// answers its parked requests now, so they finish within the drain.
    public func onShutdown(_ hook: @escaping @Sendable () -> Void) {
        state.withLock { $0.hooks.append(hook) }
    }

    /// Begins a graceful shutdown and returns at once.
    ///
    /// The loops stop accepting and close idle connections; requests in flight
    /// finish (their responses close the connection); the `onShutdown` hooks
    /// run (on the calling thread) so parked requests get answered; whatever
    /// is still open after `drainTimeout` is closed and its parked requests
    /// cancelled. `waitUntilStopped()` returns once all loops have exited.
    public func shutdown(drainTimeout: Duration) {
        let (loops, hooks) = state.withLock { state -> ([EventLoop], [@Sendable () -> Void]) in
            guard !state.draining, !state.loops.isEmpty else { return ([], []) }
            state.draining = true
            return (state.loops, state.hooks)
        }
        guard !loops.isEmpty else { return }
        logger.info("shutting down", metadata: ["drainTimeoutMs": "\(drainTimeout.nanoseconds / 1_000_000)"])
        let deadline = System.monotonicNanoseconds() + drainTimeout.nanoseconds
        // The drain message goes first, so answers the hooks give are queued
        // behind it and already go out with `Connection: close`.
        for loop in loops { loop.post(.drain(deadline: deadline)) }
        for hook in hooks { hook() }
    }

    /// Makes SIGTERM and SIGINT start `shutdown(drainTimeout: configuration.drainTimeout)`.
    ///
    /// A signal handler only writes to an eventfd; a small thread waits on it
    /// and calls `shutdown`, so no hook runs in signal context.
    public func installSignalHandlers() throws(SystemError) {
        let fd = try System.blockingEventFD()
        try System.forwardSignal(SIGTERM, toEventFD: fd)
        try System.forwardSignal(SIGINT, toEventFD: fd)
        state.withLock { $0.signalFD = fd }
        let drainTimeout = configuration.drainTimeout
        let thread = try System.spawnThread(name: "http-signals") { [self] in
            while true {
                guard (try? System.eventFDWait(fd)) != nil else { continue }
                let stopped = state.withLock { state -> Bool in
                    if case .stopped = state.phase { return true }
                    return false
                }
                if stopped { return }
                shutdown(drainTimeout: drainTimeout)
                return
            }
        }
        _ = pthread_detach(thread)
    }

    /// Blocks the calling thread until every event loop has exited.
    public func waitUntilStopped() {
        while true {
            let threads = state.withLock { state -> [pthread_t]? in
                switch state.phase {
                case .running(let threads):
                    state.phase = .joining
                    return threads
                case .created, .stopped:
                    return []
                case .joining:
                    return nil
                }
            }
            guard let threads else {
                // Another thread is joining the loops; wait for it to finish.
                usleep(10_000)
                continue
            }
            for thread in threads { System.join(thread) }
            let signalFD = state.withLock { state -> Int32? in
                if case .joining = state.phase {
                    state.phase = .stopped
                    state.loops = []
                }
                return state.signalFD
            }
            // Let the signal thread see `.stopped` and exit; the eventfd stays
            // open because the signal handler may still write to it.
            if let signalFD { try? System.eventFDSignal(signalFD) }
            if !threads.isEmpty { logger.info("stopped") }
            return
        }
    }

    /// The server's counters now.
    public var stats: ServerStats { counters.snapshot }

    /// RLIMIT_NOFILE's soft limit, and that less `reserve` (at least 1): the
    /// most connections the process can hold and still open what it needs.
    static func descriptorCeiling(reserve: Int) throws(SystemError) -> (descriptors: Int, connections: Int) {
        let limit = try System.fileLimit()
        let soft = limit.rlim_cur == rlim_t.max ? 1_048_576 : Int(clamping: limit.rlim_cur)
        return (soft, max(1, soft - reserve))
    }
}

/// Moves a thread-confined value to the thread that will own it.
///
/// `@unchecked Sendable`: protected by use, not by a lock. The value is
/// created on the starting thread, never touched there again, and taken
/// exactly once by the new thread (checked by `taken`).
private final class Handoff<Value>: @unchecked Sendable {
    private var value: Value?
    private let taken = Atomic<Bool>(false)

    init(_ value: Value) { self.value = value }

    func take() -> Value {
        precondition(!taken.exchange(true, ordering: .acquiringAndReleasing), "handed off twice")
        guard let value else { preconditionFailure("handed off twice") }
        self.value = nil
        return value
    }
}
