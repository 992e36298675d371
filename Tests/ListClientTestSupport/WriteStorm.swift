import Foundation
import JSON
import ListClient
import ListClientNetworking

/// Issue 24's exactly-once check: `clients` clients each send `writesPerClient`
/// item inserts, one after the other, to one section of one list through
/// `proxy` (a ``FaultProxy`` in front of the listd at `server`); then the list
/// is read from `server` directly and each client's writes are counted.
///
/// Each item's model is `{"c": client, "n": its number}` and the server makes
/// its id, so a write applied twice shows as two items with one model, and a
/// lost one as a missing number.
public enum WriteStorm {
    /// What the list held after the storm.
    public struct Report: Sendable {
        /// Writes with no item.
        public var lost = 0
        /// Items beyond the first for one write.
        public var duplicated = 0
        /// Items of a client that follow one with a higher number.
        public var outOfOrder = 0
        /// Sends beyond the first, over every write.
        public var retries = 0
        /// Wall time of the writes, in seconds.
        public var seconds = 0.0
    }

    /// Runs the storm on a new list `list`; throws when a write finally fails.
    public static func run(
        server: URL, proxy: URL, clients: Int, writesPerClient: Int, list: String = "storm"
    ) async throws -> Report {
        let direct = ListClient(baseURL: server, token: nil)
        _ = try await direct.createList(id: list)
        _ = try await direct.createSection(in: list, ["id": "s", "model": [:]])
        let start = ContinuousClock.now
        let retries = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<clients {
                group.addTask {
                    let client = ListClient(baseURL: proxy, token: nil)
                    client.retryPolicy = RetryPolicy(
                        maxAttempts: 200, deadline: .seconds(300), minimumBackoff: .milliseconds(1),
                        maximumBackoff: .milliseconds(20))
                    for number in 0..<writesPerClient {
                        _ = try await client.createItem(
                            inSection: "s", of: list,
                            ["model": ["c": .number(JSONNumber(index)), "n": .number(JSONNumber(number))]])
                    }
                    return client.writeRetries
                }
            }
            return try await group.reduce(0, +)
        }
        let elapsed = ContinuousClock.now - start
        var report = Report()
        report.retries = retries
        report.seconds = elapsed / .seconds(1)
        let state = try await direct.list(list)
        var seen = [[Int]](repeating: [], count: clients)
        for item in state.sections.first?.items ?? [] {
            let model = try JSONValue(parsing: Array(item.model.text.utf8))
            guard let client = model["c"]?.intValue, let number = model["n"]?.intValue, seen.indices.contains(client)
            else { continue }
            seen[client].append(number)
        }
        for numbers in seen {
            let distinct = Set(numbers)
            report.lost += writesPerClient - distinct.count
            report.duplicated += numbers.count - distinct.count
            report.outOfOrder += zip(numbers, numbers.dropFirst()).filter { $0 >= $1 }.count
        }
        return report
    }
}
