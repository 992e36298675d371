import Foundation
import JSON
import ListdTestSupport
import Postgres
import SectionDiff
import Synchronization
import Testing

/// Several listd instances on one PostgreSQL database (`--store`), as the
/// cluster guide runs them: writes on any, followers on all, instances dying.
@Suite(.enabled(if: TestPostgres.enabled, Comment(rawValue: TestPostgres.skipReason)))
struct ClusterEndToEndTests {
    /// A follower's state: the snapshot it holds, its version and epoch.
    struct Held: Sendable {
        var sections: ChangeReplay.Sections
        var version: Int
        var epoch: String
    }

    /// What the follower tasks share with the test.
    final class Shared: Sendable {
        let alive = Mutex<[Bool]>([true, true, true])
        let target = Mutex<Int?>(nil)
        let outcomes = Mutex<[(Held, resets: Int, moves: Int)]>([])
    }

    static func parked(_ server: ListdServer) async throws -> Int {
        let metrics = try await server.get("/metrics").text
        let line = metrics.split(separator: "\n").first { $0.hasPrefix("listd_parked_waiters ") }
        return line.flatMap { Double($0.split(separator: " ").last ?? "") }.map { Int($0) } ?? 0
    }

    static func start(_ count: Int, on database: TestDatabase) async throws -> [ListdServer] {
        var servers: [ListdServer] = []
        for _ in 0..<count { servers.append(try await ListdServer(store: database.url)) }
        return servers
    }

    /// One long-poll from `held` on `server`; the new state, or nil when it timed out unchanged.
    static func poll(_ server: ListdServer, _ held: Held, timeout: Int = 10) async throws -> (Held, reset: Bool)? {
        let reply = try await server.get(
            "/lists/shared/changes?since=\(held.version)&epoch=\(held.epoch)&timeout=\(timeout)",
            timeout: Double(timeout + 10))
        guard reply.status == 200 else { throw TestFailure("changes: \(reply.status) \(reply.text)") }
        let answer = try JSONValue(parsing: Array(reply.body))
        let to = answer["to"]?.intValue ?? -1
        if to == held.version && answer["reset"]?.boolValue != true { return nil }
        let reset = answer["reset"]?.boolValue == true
        if !reset, answer["from"]?.intValue != held.version {
            throw TestFailure("answer from \(answer["from"]?.intValue ?? -1) to a follower at \(held.version)")
        }
        let sections = try ChangeReplay.apply(answer, to: held.sections)
        let epoch = answer["epoch"]?.stringValue ?? answer["snapshot"]?["epoch"]?.stringValue ?? held.epoch
        return (Held(sections: sections, version: to, epoch: epoch), reset)
    }

    @Test func writesAnywhereReachFollowersEverywhereAndFollowersSurviveAKilledInstance() async throws {
        let database = try await TestPostgres.createDatabase()
        defer { database.drop() }
        let servers = try await Self.start(3, on: database)
        defer { for server in servers { server.stop() } }
        // Start with 100 items: an answer is a reset when its stages would outweigh the
        // snapshot (docs/API.md), so a follower a few versions behind on a tiny list
        // rightly gets one; here any reset would be the cluster's fault.
        let seed = (0..<100).map { ["id": "seed\($0)", "model": [:]] as [String: Any] }
        let created = try await servers[0].request(
            "POST", "/lists",
            body: ["id": "shared", "name": "Shared", "sections": [["id": "s", "model": [:], "items": seed] as [String: Any]]])
        #expect(created.status == 201)
        let first = try await snapshotSections(servers[1], "shared")
        let epoch = try JSONValue(parsing: Array(try await servers[2].get("/lists/shared").body))["epoch"]?.stringValue ?? ""
        #expect(first.version == 1)

        // Three followers parked on each instance; a follower whose instance dies moves to the next one.
        let shared = Shared()
        var followers: [Task<Void, any Error>] = []
        for index in 0..<9 {
            followers.append(
                Task { [shared, servers, first, epoch] in
                    var instance = index % 3
                    var held = Held(sections: first.sections, version: first.version, epoch: epoch)
                    var resets = 0
                    var moves = 0
                    while true {
                        if let target = shared.target.withLock({ $0 }), held.version >= target { break }
                        do {
                            if let (next, reset) = try await Self.poll(servers[instance], held, timeout: 5) {
                                held = next
                                if reset { resets += 1 }
                            }
                        } catch let error as TestFailure {
                            throw error
                        } catch {
                            // The instance is gone (or the request broke): continue on the next one that lives.
                            guard !shared.alive.withLock({ $0[instance] }) else { continue }
                            instance = shared.alive.withLock { alive in (1...3).map { (instance + $0) % 3 }.first { alive[$0] } ?? 0 }
                            moves += 1
                        }
                    }
                    shared.outcomes.withLock { $0.append((held, resets, moves)) }
                })
        }
        for server in servers {
            #expect(await eventually(20) { (try? await Self.parked(server)) ?? 0 >= 3 }, "followers parked")
        }

        var generator = SeededGenerator(seed: SeededGenerator.seed(for: "ClusterEndToEndTests"))
        var acknowledged: [String] = []
        for step in 0..<60 {
            if step == 20 {
                let victim = servers[2].process.processIdentifier
                shared.alive.withLock { $0[2] = false }
                kill(victim, SIGKILL)
            }
            let instance = step < 20 ? Int.random(in: 0..<3, using: &generator) : Int.random(in: 0..<2, using: &generator)
            let item = "i\(step)"
            let reply = try await servers[instance].request(
                "PATCH", "/lists/shared",
                body: ["ops": [["op": "insertItem", "section": "s", "item": ["id": item, "model": ["n": step]], "at": 0]]])
            if reply.status == 200 { acknowledged.append(item) } else { Issue.record("write \(step): \(reply.status) \(reply.text)") }
        }
        #expect(acknowledged.count == 60)
        let final = try await snapshotSections(servers[0], "shared")
        #expect(final.version == 61)
        let present = Set(final.sections.flatMap { $0.items.map(\.id) })
        #expect(Set(acknowledged).isSubset(of: present), "lost: \(Set(acknowledged).subtracting(present))")
        shared.target.withLock { $0 = final.version }

        for follower in followers { try await follower.value }
        let results = shared.outcomes.withLock { $0 }
        #expect(results.count == 9)
        for (held, resets, _) in results {
            #expect(held.version == final.version)
            #expect(held.sections == final.sections)
            #expect(resets == 0, "a follower was reset")
        }
        #expect(results.filter { $0.moves > 0 }.count >= 3, "the killed instance's followers moved on")
    }

    @Test func killingTheListenSessionLeavesNoFollowerWaiting() async throws {
        let database = try await TestPostgres.createDatabase()
        defer { database.drop() }
        let servers = try await Self.start(2, on: database)
        defer { for server in servers { server.stop() } }
        #expect(try await servers[0].request("POST", "/lists", body: ["id": "shared", "name": ""]).status == 201)
        let admin = try Connection(url: database.url)
        defer { admin.close() }
        var held = Held(sections: [], version: 1, epoch: "")
        held.epoch = try JSONValue(parsing: Array(try await servers[1].get("/lists/shared").body))["epoch"]?.stringValue ?? ""

        for round in 0..<5 {
            let before = held
            let started = ContinuousClock.now
            let follower = Task { try await Self.poll(servers[1], before, timeout: 30) }
            #expect(await eventually(10) { (try? await Self.parked(servers[1])) ?? 0 >= 1 })
            // Cut every instance's listening session, then write at once on the other instance.
            let killed = try admin.query(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database() "
                    + "AND application_name = 'listd-listen'")[0].int64(0)
            #expect(killed == 2, "round \(round)")
            let write = try await servers[0].request(
                "PATCH", "/lists/shared", body: ["ops": [["op": "insertSection", "section": ["id": "s\(round)", "model": [:]], "at": 0]]])
            #expect(write.status == 200, "\(write.text)")
            let answer = try await follower.value
            #expect(answer?.0.version == before.version + 1, "round \(round)")
            #expect(ContinuousClock.now - started < .seconds(15), "answered long before the 30 s timeout")
            if let answer { held = answer.0 }
        }
    }
}
