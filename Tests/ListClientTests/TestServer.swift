import Foundation
import ListClient
import ListClientNetworking
import ListdTestSupport

/// The shared listd harness, with what the client tests add to it.
typealias TestServer = ListdProcess

extension ListdProcess {
    /// A client of this server with the default transport (plain sockets on Linux).
    func client(token: String? = nil) -> ListClient { ListClient(baseURL: baseURL, token: token) }

    /// The value of gauge `name` in /metrics.
    func gauge(_ name: String, token: String? = nil) async throws -> Double {
        let text = try await client(token: token).metrics()
        for line in text.split(separator: "\n") where line.hasPrefix(name + " ") {
            if let value = Double(line.dropFirst(name.count + 1)) { return value }
        }
        throw TestFailure("no \(name) in /metrics")
    }
}
