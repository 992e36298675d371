import Foundation
import Synchronization
import Testing

@testable import ListStore

/// Threads the store starts name themselves with ``nameCurrentThread(_:)``,
/// which must take effect at once, in the thread's first instruction: with
/// `Thread.current.name = …` a thread that started quickly kept its default
/// name, so `store-writer` or `store-catchup` was missing from `/proc` at times.
@Suite struct ThreadNameTests {
    @Test func aThreadIsNamedFromItsFirstStep() async throws {
        #if os(Linux)
            let seen = Mutex<[String: String]>([:])
            let finished = Mutex(0)
            let count = 40
            for index in 0..<count {
                let name = "named-\(index)"
                let thread = Thread {
                    nameCurrentThread(name)
                    let comm = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
                    seen.withLock { $0[name] = comm.trimmingCharacters(in: .whitespacesAndNewlines) }
                    finished.withLock { $0 += 1 }
                }
                thread.start()
            }
            let deadline = ContinuousClock.now + .seconds(30)
            while finished.withLock({ $0 }) < count, ContinuousClock.now < deadline { await Task.yield() }
            let names = seen.withLock { $0 }
            #expect(names.count == count)
            for (name, comm) in names { #expect(comm == name) }
            // Linux keeps 15 bytes; a longer name is cut, not refused.
            let long = Mutex("")
            let done = Mutex(false)
            Thread {
                nameCurrentThread("a-very-long-thread-name")
                long.withLock {
                    $0 = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
                }
                done.withLock { $0 = true }
            }.start()
            while !done.withLock({ $0 }), ContinuousClock.now < deadline { await Task.yield() }
            #expect(long.withLock { $0 }.trimmingCharacters(in: .whitespacesAndNewlines) == "a-very-long-thr")
        #endif
    }
}
