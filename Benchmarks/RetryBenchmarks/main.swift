// Issue 24's "must show": 10,000 client writes (4 clients × 2,500) through a
// fault proxy that drops, resets, delays and refuses connections at random;
// prints how many were lost, duplicated or out of order, and how many retries
// it took. See README.md.
//
// Usage: swift run -c release RetryBenchmarks [clients] [writes per client] [seed]
import Foundation
import ListClientTestSupport
import ListdTestSupport

let arguments = CommandLine.arguments.dropFirst().compactMap { UInt64($0) }
let clients = Int(arguments.first ?? 4)
let perClient = Int(arguments.dropFirst().first ?? 2_500)
let seed = arguments.dropFirst(2).first ?? UInt64.random(in: 0...UInt64.max)

let server = try await ListdProcess()
let proxy = try FaultProxy(upstreamPort: server.port, seed: seed)
let outcome: Result<WriteStorm.Report, any Error>
do {
    outcome = .success(
        try await WriteStorm.run(
            server: server.baseURL, proxy: proxy.baseURL, clients: clients, writesPerClient: perClient))
} catch {
    outcome = .failure(error)
}
// Stopped here, not in a `defer`: `exit` below skips those, and listd would outlive the benchmark.
proxy.stop()
server.stop()
let report = try outcome.get()
let fates = proxy.fates.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
print("\(clients * perClient) writes from \(clients) clients, seed \(seed)")
print("connections: \(fates)")
print(String(format: "%.1f s, %.0f writes/s", report.seconds, Double(clients * perClient) / report.seconds))
print(
    "lost \(report.lost), duplicated \(report.duplicated), out of order \(report.outOfOrder), retries \(report.retries)"
)
exit(report.lost == 0 && report.duplicated == 0 && report.outOfOrder == 0 ? 0 : 1)
