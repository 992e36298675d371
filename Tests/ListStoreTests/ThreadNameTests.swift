import Foundation
import Synchronization
import Testing

@testable import ListStore

/// Threads the store starts name themselves with ``nameCurrentThread(_:)``,
/// which must take effect at once, in the thread's first instruction: with
/// `Thread.current.name = …` a thread that started quickly kept its default
/// name, so `store-writer` or `store-catchup` was missing from `/proc` at times.
@Suite struct ThreadNameTests {
    @Test(.timeLimit(.minutes(2))) func aThreadIsNamedFromItsFirstStep() async throws {
        #if os(Linux)
            // Waited for without polling: a loop of Task.yield here held a
            // cooperative thread, and under load the threads it waited for
            // ran late enough to pass a deadline.
            let count = 40
            let names = await withCheckedContinuation { (done: CheckedContinuation<[String: String], Never>) in
                let seen = Mutex<[String: String]>([:])
                for index in 0..<count {
                    let name = "named-\(index)"
                    Thread {
                        nameCurrentThread(name)
                        let comm = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
                        let all = seen.withLock { seen -> [String: String]? in
                            seen[name] = comm.trimmingCharacters(in: .whitespacesAndNewlines)
                            return seen.count == count ? seen : nil
                        }
                        if let all { done.resume(returning: all) }
                    }.start()
                }
            }
            #expect(names.count == count)
            for (name, comm) in names { #expect(comm == name) }
            // Linux keeps 15 bytes; a longer name is cut, not refused.
            let long = await withCheckedContinuation { (done: CheckedContinuation<String, Never>) in
                Thread {
                    nameCurrentThread("a-very-long-thread-name")
                    done.resume(
                        returning: (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "")
                }.start()
            }
            #expect(long.trimmingCharacters(in: .whitespacesAndNewlines) == "a-very-long-thr")
        #endif
    }
}
