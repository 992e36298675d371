import Foundation
import Glibc
import Synchronization

/// A TCP proxy on loopback between a client and a listd that loses answers on
/// purpose: each connection it accepts gets a fate drawn from a seeded generator.
///
/// - ``Fate/pass(answers:)``: bytes go both ways untouched; after that many
///   answers the connection is closed (a FIN while it is idle), so connections
///   turn over and meet the faults below.
/// - ``Fate/drop(afterAnswers:)``: the first answers pass; the next one is read
///   from upstream (so the server has handled the request) and never forwarded:
///   the client's connection is closed (FIN) instead.
/// - ``Fate/reset(afterAnswers:)``: the same, with a reset (RST) instead of a FIN.
/// - ``Fate/delay(milliseconds:answers:)``: every answer is held back for that
///   long; after `answers` answers the connection is closed, as for `pass`.
/// - ``Fate/refuse``: the connection is reset before any byte is forwarded.
///
/// The fates are drawn in the order connections arrive, so a seed replays the
/// same sequence of fates, though which request meets which one depends on timing.
/// With a `scriptMarker`, the script's fates go only to connections whose first
/// request holds that text (a test's own list id), decided when it arrives:
/// a connection another test's client opened to a port reused from its stopped
/// server, or one the client gave up before sending on it, takes none of them.
/// A connection to listd that fails is tried again for a few seconds before the
/// client is reset, so a busy machine does not turn a scripted fate into a refusal.
///
/// Each connection is served by one thread of its own with `poll` (never Swift's
/// cooperative pool, whose two threads on a two-core machine the tests share).
public final class FaultProxy: Sendable {
    /// What happens to one connection.
    public enum Fate: Sendable, Equatable {
        case pass(answers: Int)
        case drop(afterAnswers: Int)
        case reset(afterAnswers: Int)
        case delay(milliseconds: Int, answers: Int)
        case refuse
    }

    /// The chances of each fault per connection (the rest pass).
    public struct Odds: Sendable {
        public var drop: Double
        public var reset: Double
        public var delay: Double
        public var refuse: Double

        public init(drop: Double = 0.15, reset: Double = 0.1, delay: Double = 0.1, refuse: Double = 0.05) {
            self.drop = drop
            self.reset = reset
            self.delay = delay
            self.refuse = refuse
        }
    }

    /// The port the proxy listens on (127.0.0.1).
    public let port: Int
    private let upstreamPort: Int
    private let listener: Int32
    private let odds: Odds
    private let random: Mutex<SeededGenerator>
    private let script: Mutex<[Fate]>
    private let scriptMarker: [UInt8]?
    private let counts = Mutex<[String: Int]>([:])
    private let lost = Atomic<Int>(0)
    private let stopped = Atomic<Bool>(false)

    /// Starts a proxy to `127.0.0.1:upstreamPort`: the first connections get the
    /// fates of `script` in order, the later ones fates drawn from `seed` with `odds`.
    /// With `scriptMarker`, only connections whose first request holds it take the
    /// script's fates (the others pass untouched).
    public init(
        upstreamPort: Int, seed: UInt64, odds: Odds = Odds(), script: [Fate] = [], scriptMarker: String? = nil
    ) throws {
        self.upstreamPort = upstreamPort
        self.script = Mutex(script)
        self.scriptMarker = scriptMarker.map { Array($0.utf8) }
        self.odds = odds
        random = Mutex(SeededGenerator(seed: seed))
        // Close-on-exec, every socket of the proxy: a listd child another test
        // starts meanwhile must not inherit one, or a close here sends no FIN.
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard socket >= 0 else { throw TestFailure("proxy socket: errno \(errno)") }
        var address = loopbackAddress(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(socket, 128) == 0 else {
            close(socket)
            throw TestFailure("proxy bind/listen: errno \(errno)")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
        }
        listener = socket
        port = Int(UInt16(bigEndian: address.sin_port))
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "FaultProxy.accept"
        thread.start()
    }

    /// `http://127.0.0.1:<port>`.
    public var baseURL: URL {
        URL(string: "http://127.0.0.1:\(port)") ?? URL(fileURLWithPath: "/")
    }

    /// How many connections got each fate so far (`pass`, `drop`, `reset`, `delay`, `refuse`).
    public var fates: [String: Int] { counts.withLock { $0 } }

    /// How many of listd's answers the proxy read and did not forward (each a `drop` or a `reset`).
    public var answersLost: Int { lost.load(ordering: .relaxed) }

    /// Stops accepting; connections already open run to their end.
    public func stop() {
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        // Wakes the blocked accept (EINVAL), which then closes the socket.
        shutdown(listener, Int32(SHUT_RDWR))
    }

    deinit { stop() }

    /// The fate of a connection whose first request is `request` (`nil`: decided at its accept).
    private func nextFate(request: ArraySlice<UInt8>? = nil) -> Fate {
        if let scriptMarker, let request, request.firstRange(of: scriptMarker) == nil {
            counts.withLock { $0["pass", default: 0] += 1 }
            return .pass(answers: .max)
        }
        let scripted = script.withLock { $0.isEmpty ? nil : $0.removeFirst() }
        let fate =
            scripted
            ?? random.withLock { random -> Fate in
                let roll = Double.random(in: 0..<1, using: &random)
                let answers = Int.random(in: 0...3, using: &random)
                var edge = odds.drop
                if roll < edge { return .drop(afterAnswers: answers) }
                edge += odds.reset
                if roll < edge { return .reset(afterAnswers: answers) }
                edge += odds.delay
                if roll < edge {
                    return .delay(
                        milliseconds: Int.random(in: 1...40, using: &random),
                        answers: Int.random(in: 1...20, using: &random))
                }
                edge += odds.refuse
                if roll < edge { return .refuse }
                return .pass(answers: Int.random(in: 1...20, using: &random))
            }
        let name: String
        switch fate {
        case .pass: name = "pass"
        case .drop: name = "drop"
        case .reset: name = "reset"
        case .delay: name = "delay"
        case .refuse: name = "refuse"
        }
        counts.withLock { $0[name, default: 0] += 1 }
        return fate
    }

    private func acceptLoop() {
        while !stopped.load(ordering: .relaxed) {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                break
            }
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            let fate = scriptMarker == nil ? nextFate() : nil
            let thread = Thread { [self] in serve(client: client, fate: fate) }
            thread.name = "FaultProxy.connection"
            thread.start()
        }
        close(listener)
    }

    /// Closes `socket` with a reset (RST) rather than a FIN.
    private static func reset(_ socket: Int32) {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(socket, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        close(socket)
    }

    /// A connection to listd, tried for up to about 5 s (a busy machine's
    /// listd may be slow to take it); nil if it never succeeds.
    private func connectUpstream() -> Int32? {
        for attempt in 0..<50 {
            if attempt > 0 { usleep(100_000) }
            let upstream = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard upstream >= 0 else { continue }
            var address = loopbackAddress(port: UInt16(upstreamPort))
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            if connected == 0 { return upstream }
            close(upstream)
            if stopped.load(ordering: .relaxed) { return nil }
        }
        return nil
    }

    /// Serves one connection; `fate` nil: decided by its first request (``scriptMarker``).
    private func serve(client: Int32, fate initial: Fate?) {
        var fate = initial
        if fate == .refuse {
            Self.reset(client)
            return
        }
        guard let upstream = connectUpstream() else {
            Self.reset(client)
            return
        }
        var answers = 0
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var fds = [
            pollfd(fd: client, events: Int16(POLLIN), revents: 0),
            pollfd(fd: upstream, events: Int16(POLLIN), revents: 0),
        ]
        loop: while true {
            guard poll(&fds, 2, 60_000) > 0 else { break }
            for index in 0..<2 where fds[index].revents != 0 {
                let from = fds[index].fd
                let to = index == 0 ? upstream : client
                let count = buffer.withUnsafeMutableBytes { read(from, $0.baseAddress, $0.count) }
                guard count > 0 else { break loop }
                if fate == nil {
                    // The first bytes of the first request (listd says nothing unasked).
                    fate = index == 0 ? nextFate(request: buffer[..<count]) : .pass(answers: .max)
                    if fate == .refuse {
                        close(upstream)
                        Self.reset(client)
                        return
                    }
                }
                if index == 1 {
                    // An answer (or the start of one) came from listd.
                    switch fate {
                    case .drop(let after) where answers >= after:
                        lost.add(1, ordering: .relaxed)
                        close(upstream)
                        close(client)
                        return
                    case .reset(let after) where answers >= after:
                        lost.add(1, ordering: .relaxed)
                        close(upstream)
                        Self.reset(client)
                        return
                    case .delay(let milliseconds, _):
                        usleep(useconds_t(milliseconds * 1000))
                    default: break
                    }
                    answers += 1
                }
                guard Self.writeAll(to, buffer, count) else { break loop }
                switch fate {
                case .pass(let lifespan) where answers >= lifespan, .delay(_, let lifespan) where answers >= lifespan:
                    break loop
                default: break
                }
            }
        }
        close(upstream)
        close(client)
    }

    private static func writeAll(_ socket: Int32, _ buffer: [UInt8], _ count: Int) -> Bool {
        var written = 0
        while written < count {
            let result = buffer.withUnsafeBytes { bytes -> Int in
                guard let base = bytes.baseAddress else { return -1 }
                return send(socket, base + written, count - written, Int32(MSG_NOSIGNAL))
            }
            if result < 0 && errno == EINTR { continue }
            guard result > 0 else { return false }
            written += result
        }
        return true
    }
}

/// `127.0.0.1:port` as a socket address (port 0: any free port, when bound).
func loopbackAddress(port: UInt16) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
    return address
}
