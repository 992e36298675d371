import Foundation
import JSON
import ListClient
import ListClientNetworking

/// Issue 24's exactly-once check: `clients` clients at once each send
/// `writesPerClient` item inserts, one after the other, to a list of their own
/// through `proxy` (a ``FaultProxy`` in front of the listd at `server`); then
/// the lists are read from `server` directly and each client's writes are counted.
///
/// A list of its own per client: listd's cost of an insert grows with the
/// list's size, so 10,000 inserts into one list take several times as long as
/// 4 × 2,500 into four, and measure that rather than the retries.
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

    /// Runs the storm on new lists `list-0`, `list-1`, …; throws when a write finally fails.
    public static func run(
        server: URL, proxy: URL, clients: Int, writesPerClient: Int, list: String = "storm"
    ) async throws -> Report {
        let direct = ListClient(baseURL: server, token: nil)
        for index in 0..<clients {
            _ = try await direct.createList(id: "\(list)-\(index)")
            _ = try await direct.createSection(in: "\(list)-\(index)", ["id": "s", "model": [:]])
        }
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
                            inSection: "s", of: "\(list)-\(index)",
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
        var seen = [[Int]](repeating: [], count: clients)
        for index in 0..<clients {
            // Read raw and parsed with a large limit: ListClient's answers are held to JSON's default 64 KiB.
            let response = try await direct.send("GET", ["lists", "\(list)-\(index)"])
            let body = try JSONValue(parsing: response.body, limits: JSONLimits(maxBytes: 256 << 20))
            let state = try ListState(json: body)
            for item in state.sections.first?.items ?? [] {
                let model = try JSONValue(parsing: Array(item.model.text.utf8))
                guard model["c"]?.intValue == index, let number = model["n"]?.intValue else { continue }
                seen[index].append(number)
            }
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
