import Glibc
import POSIXIO
import Testing

@testable import HTTPClient

/// The shared pool of blocking calls (`HTTPClientCall(pool:)`) used from many threads.
@Suite struct ConnectionPoolTests {
    /// Found by the fault harness, `listd-torture --seed 1 --store sqlite`: a thread read the
    /// clock, another put a connection back, and the first's `now - since` overflowed (a trap).
    @Test func aConnectionPutBackAfterTheTakersClockReadIsFreshTortureSeed1() throws {
        var fds: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        defer { Glibc.close(fds[1]) }
        let pool = ConnectionPool()
        let before = System.monotonicNanoseconds()
        pool.put(fds[0], "127.0.0.1:1")
        #expect(pool.take("127.0.0.1:1", now: before) == fds[0])
        Glibc.close(fds[0])
    }

    @Test func aConnectionIdleLongerThanTheTimeoutIsClosedNotReused() throws {
        var fds: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        defer { Glibc.close(fds[1]) }
        let pool = ConnectionPool(idleTimeout: .seconds(1))
        pool.put(fds[0], "127.0.0.1:1")
        #expect(pool.take("127.0.0.1:1", now: System.monotonicNanoseconds() + 2_000_000_000) == nil)
    }
}
