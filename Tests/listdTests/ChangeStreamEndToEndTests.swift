import Foundation
import JSON
import ListWire
import ListdTestSupport
import SectionDiff
import Testing

/// The long-poll change stream of the real binary: waking, timing out,
/// resets, many lists at once, deletion and graceful shutdown.
@Suite(.serialized) struct ChangeStreamEndToEndTests {
    func makeList(_ server: ListdServer, _ id: String = "l") async throws {
        let reply = try await server.request(
            "POST", "/lists", body: ["id": id, "sections": [["id": "s", "items": [["id": "a"], ["id": "b"]]]]])
        #expect(reply.status == 201)
    }

    @Test func aWriteWakesAParkedLongPoll() async throws {
        let server = try await ListdServer()
        defer { server.stop() }
        try await makeList(server)
        async let poll = server.get("/lists/l/changes?since=1&timeout=60")
        // Write once the poll is parked (a state, not a delay): its answer must then come
        // from the write (to = 2), since a timeout would answer to = 1 after 60 s.
        #expect(
            await eventually(30) { (try? await server.get("/metrics").text.contains("listd_parked_waiters 1")) == true }
        )
        let write = try await server.request(
            "PATCH", "/lists/l", body: ["ops": [["op": "moveItem", "id": "b", "to": 0]]])
        #expect(write.status == 200)
        let answer = try await poll
        let value = try JSONValue(parsing: Array(answer.body))
        #expect(value["from"]?.intValue == 1 && value["to"]?.intValue == 2)
        #expect(
            answer.text.contains(#""itemMoved":[{"from":[0,1],"to":[0,0]}]"#)
                || answer.text.contains(#""itemMoved":[{"from":[0,0],"to":[0,1]}]"#))
    }

    @Test func aLongPollThatTimesOutAnswersNoChange() async throws {
        let server = try await ListdServer()
        defer { server.stop() }
        try await makeList(server)
        let started = Date()
        let answer = try await server.get("/lists/l/changes?since=now&timeout=0.4")
        #expect(Date().timeIntervalSince(started) >= 0.35)
        let value = try JSONValue(parsing: Array(answer.body))
        #expect(answer.status == 200)
        #expect(value["from"]?.intValue == 1 && value["to"]?.intValue == 1)
        #expect(value["stages"]?.arrayValue?.isEmpty == true)
    }

    @Test func answersAreNetChanges() async throws {
        let server = try await ListdServer()
        defer { server.stop() }
        try await makeList(server)
        for round in 0..<50 {
            _ = try await server.request(
                "PATCH", "/lists/l", body: ["ops": [["op": "updateItem", "id": "a", "model": ["n": round]]]])
        }
        _ = try await server.request(
            "PATCH", "/lists/l", body: ["ops": [["op": "insertItem", "section": "s", "item": ["id": "tmp"]]]])
        _ = try await server.request("PATCH", "/lists/l", body: ["ops": [["op": "deleteItem", "id": "tmp"]]])
        let answer = try await server.get("/lists/l/changes?since=1")
        let value = try JSONValue(parsing: Array(answer.body))
        #expect(value["to"]?.intValue == 53)
        #expect(value["stages"]?.arrayValue?.count == 1)
        #expect(value["stages"]?[0]?["itemUpdated"]?.arrayValue?.count == 1, "one update for fifty writes")
        #expect(answer.text.contains(#""itemUpdated":[{"at":[0,0],"model":{"n":49}}]"#))
        #expect(!answer.text.contains("tmp"), "inserted then deleted: absent")
    }

    @Test func resetsInsteadOfCliffs() async throws {
        let server = try await ListdServer(["--history-versions", "3"])
        defer { server.stop() }
        try await makeList(server)
        for round in 0..<6 {
            _ = try await server.request(
                "PATCH", "/lists/l", body: ["ops": [["op": "updateItem", "id": "b", "model": ["n": round]]]])
        }
        let current = try await snapshotSections(server, "l")
        for query in ["since=1", "since=999", "since=\(current.version)&epoch=someone-elses"] {
            let answer = try await server.get("/lists/l/changes?\(query)&timeout=0")
            #expect(answer.status == 200, "\(query)")
            let value = try JSONValue(parsing: Array(answer.body))
            #expect(value["reset"]?.boolValue == true, "\(query)")
            #expect(value["to"]?.intValue == current.version)
            #expect(try ChangeReplay.apply(value, to: []) == current.sections)
        }
        let recent = try JSONValue(
            parsing: Array(try await server.get("/lists/l/changes?since=\(current.version - 2)").body))
        #expect(recent["reset"] == nil, "inside the window: stages")
    }

    @Test func maxChangesOptsIntoAResetWhenParked() async throws {
        let server = try await ListdServer()
        defer { server.stop() }
        try await makeList(server)
        async let capped = server.get("/lists/l/changes?since=1&timeout=20&maxChanges=0")
        async let plain = server.get("/lists/l/changes?since=1&timeout=20")
        async let many = server.request("POST", "/changes", body: ["lists": ["l": 1], "timeout": 20, "maxChanges": 0])
        #expect(
            await eventually { (try? await server.get("/metrics").text.contains("listd_parked_waiters 3")) == true })
        let write = try await server.request("PATCH", "/lists/l", body: ["ops": [["op": "deleteItem", "id": "a"]]])
        #expect(write.status == 200)
        let (cappedAnswer, plainAnswer, manyAnswer) = try await (capped, plain, many)
        let cappedValue = try JSONValue(parsing: Array(cappedAnswer.body))
        #expect(cappedValue["reset"]?.boolValue == true && cappedValue["to"]?.intValue == 2)
        let plainValue = try JSONValue(parsing: Array(plainAnswer.body))
        #expect(plainValue["reset"] == nil && plainValue["stages"]?.arrayValue?.count == 1)
        let manyValue = try JSONValue(parsing: Array(manyAnswer.body))
        #expect(manyValue["lists"]?["l"]?["reset"]?.boolValue == true)
        #expect(
            try await server.request("POST", "/changes", body: ["lists": ["l": 1], "maxChanges": "x"]).status == 400)
    }

    @Test func manyListsAtOnce() async throws {
        let server = try await ListdServer()
        defer { server.stop() }
        try await makeList(server, "a")
        try await makeList(server, "b")
        async let poll = server.request("POST", "/changes", body: ["lists": ["a": 1, "b": 1], "timeout": 20])
        try await Task.sleep(for: .milliseconds(300))
        _ = try await server.request("PATCH", "/lists/b", body: ["ops": [["op": "deleteItem", "id": "a"]]])
        let answer = try await poll
        #expect(answer.status == 200)
        let lists = try #require(try JSONValue(parsing: Array(answer.body))["lists"]?.objectValue)
        #expect(lists.keys == ["b"])
        #expect(lists["b"]?["to"]?.intValue == 2)

        let behind = try await server.request("POST", "/changes", body: ["lists": ["a": 1, "b": 1]])
        #expect(
            try JSONValue(parsing: Array(behind.body))["lists"]?.objectValue?.keys == ["b"],
            "answers at once when behind")
        #expect(try await server.request("POST", "/changes", body: ["lists": ["nope": 1]]).status == 404)
    }

    @Test func deletingAListAnswersItsParkedPollsWith404() async throws {
        let server = try await ListdServer()
        defer { server.stop() }
        try await makeList(server)
        async let poll = server.get("/lists/l/changes?since=1&timeout=20")
        try await Task.sleep(for: .milliseconds(300))
        #expect(try await server.request("DELETE", "/lists/l").status == 204)
        let answer = try await poll
        #expect(answer.status == 404)
        #expect(try answer.object()["detail"] as? String == "list \"l\" was deleted while this request waited")
    }

    @Test func shutdownAnswersParkedPollsThenExits() async throws {
        let server = try await ListdServer()
        defer { server.stop() }
        try await makeList(server)
        async let first = server.get("/lists/l/changes?since=1&timeout=60")
        async let second = server.request("POST", "/changes", body: ["lists": ["l": 1], "timeout": 60])
        try await Task.sleep(for: .milliseconds(400))
        let metrics = try await server.get("/metrics")
        #expect(metrics.text.contains("listd_parked_waiters 2"))
        server.process.terminate()
        let (one, many) = try await (first, second)
        #expect(one.status == 200)
        #expect(try JSONValue(parsing: Array(one.body))["to"]?.intValue == 1)
        #expect(many.status == 200)
        #expect(try JSONValue(parsing: Array(many.body))["lists"]?.objectValue?.isEmpty == true)
        #expect(server.stop() == 0)
    }

    /// Random batches and whole-snapshot PUTs, each followed by "changes since
    /// a random earlier version", replayed with SectionDiff's apply.
    @Test func randomWritesReplayExactly() async throws {
        let rounds = ProcessInfo.processInfo.environment["LISTD_LONG_TESTS"] == nil ? 200 : 3000
        var random = SeededGenerator(seed: UInt64(ProcessInfo.processInfo.environment["LISTD_SEED"] ?? "") ?? 0xC0FFEE)
        let server = try await ListdServer()
        defer { server.stop() }
        try await makeList(server)
        var history: [Int: ChangeReplay.Sections] = [:]
        let initial = try await snapshotSections(server, "l")
        history[initial.version] = initial.sections
        var nextID = 0
        var landed = 0
        var resets = 0
        var reloadConflicts = 0
        var answers = 0
        var stages = 0
        for round in 0..<rounds {
            let current = try await snapshotSections(server, "l")
            let write: ServerReplyBody
            if random.next() % 5 == 0 {
                write = .put(RandomEdits.reshuffled(current.sections, random: &random, nextID: &nextID))
            } else {
                write = .ops(RandomEdits.operations(for: current.sections, random: &random, nextID: &nextID))
            }
            let reply: ListdServer.Reply
            switch write {
            case .put(let body): reply = try await server.request("PUT", "/lists/l", body: body)
            case .ops(let ops): reply = try await server.request("PATCH", "/lists/l", body: ["ops": ops])
            }
            #expect(
                reply.status == 200 || reply.status == 400 || reply.status == 404 || reply.status == 409,
                "round \(round): \(reply.status) \(reply.text)")
            if reply.status == 200 {
                // The write's own answer replays too.
                let answer = try JSONValue(parsing: Array(reply.body))
                answers += 1
                stages += answer["stages"]?.arrayValue?.count ?? 0
                if answer["reset"]?.boolValue == true { resets += 1 }
                reloadConflicts += ChangeReplay.reloadConflicts(answer)
                let after = try await snapshotSections(server, "l")
                #expect(
                    try ChangeReplay.apply(answer, to: current.sections) == after.sections,
                    "round \(round): write answer")
                history[after.version] = after.sections
                landed += 1
            }
            let now = try await snapshotSections(server, "l")
            let since = history.keys.randomElement(using: &random) ?? 1
            let changes = try JSONValue(
                parsing: Array(try await server.get("/lists/l/changes?since=\(since)&timeout=0").body))
            answers += 1
            stages += changes["stages"]?.arrayValue?.count ?? 0
            if changes["reset"]?.boolValue == true { resets += 1 }
            reloadConflicts += ChangeReplay.reloadConflicts(changes)
            let replayed = try ChangeReplay.apply(changes, to: history[since] ?? [])
            #expect(replayed == now.sections, "round \(round): since \(since) → \(now.version)")
            if replayed != now.sections { break }
        }
        // Random ops are sometimes invalid on purpose; most must land for the test to mean something.
        #expect(landed * 10 >= rounds * 6, "only \(landed) of \(rounds) writes landed")
        // Every version asked is inside the kept history and of the list's epoch:
        // a reset here could only be one for size, which the contract forbids.
        print(
            "randomWritesReplayExactly: \(answers) answers, \(stages) stages, \(resets) resets, \(reloadConflicts) reloadSections conflicts"
        )
        #expect(resets == 0, "\(resets) of \(answers) answers were resets")
        #expect(reloadConflicts == 0, "\(reloadConflicts) section updates beside an item change in their section")
    }
}

enum ServerReplyBody {
    case put([String: Any])
    case ops([[String: Any]])
}

/// Random edits of a list, as ops or as a whole new snapshot.
enum RandomEdits {
    static func operations(for sections: ChangeReplay.Sections, random: inout SeededGenerator, nextID: inout Int)
        -> [[String: Any]]
    {
        var ops: [[String: Any]] = []
        let items = sections.flatMap { section in section.items.map { ($0.id, section.model.id) } }
        for _ in 0..<(1 + Int(random.next() % 3)) {
            let roll = random.next() % 8
            func fresh() -> String {
                nextID += 1
                return "n\(nextID)"
            }
            if sections.isEmpty || roll == 0 {
                ops.append([
                    "op": "insertSection",
                    "section": [
                        "id": fresh(), "model": ["r": Int(random.next() % 9)],
                        "items": (0..<Int(random.next() % 3)).map { _ in ["id": fresh()] },
                    ], "at": Int(random.next() % UInt64(sections.count + 1)),
                ])
                continue
            }
            let section = sections[Int(random.next() % UInt64(sections.count))]
            switch roll {
            case 1: ops.append(["op": "updateSection", "id": section.model.id, "model": ["r": Int(random.next() % 9)]])
            case 2:
                ops.append([
                    "op": "moveSection", "id": section.model.id, "to": Int(random.next() % UInt64(sections.count)),
                ])
            case 3 where sections.count > 2: ops.append(["op": "deleteSection", "id": section.model.id])
            case 4, 3:
                ops.append([
                    "op": "insertItem", "section": section.model.id,
                    "item": ["id": fresh(), "model": ["v": Int(random.next() % 5)]],
                    "at": Int(random.next() % UInt64(section.items.count + 1)),
                ])
            default:
                guard let (item, _) = items.randomElement(using: &random) else { continue }
                switch roll {
                case 5: ops.append(["op": "updateItem", "id": item, "model": ["v": Int(random.next() % 5)]])
                case 6:
                    let target = sections[Int(random.next() % UInt64(sections.count))]
                    ops.append([
                        "op": "moveItem", "id": item, "section": target.model.id,
                        "to": Int(random.next() % UInt64(target.items.count + 1)),
                    ])
                default: ops.append(["op": "deleteItem", "id": item])
                }
            }
        }
        return ops
    }

    static func reshuffled(_ sections: ChangeReplay.Sections, random: inout SeededGenerator, nextID: inout Int)
        -> [String: Any]
    {
        var pool = sections.flatMap(\.items).filter { _ in random.next() % 6 != 0 }
        pool.shuffle(using: &random)
        var kept = sections.filter { _ in random.next() % 5 != 0 }.shuffled(using: &random)
        if random.next() % 3 == 0 {
            nextID += 1
            kept.append(ArraySection(model: JSONEntry(id: "p\(nextID)", model: JSONText("{}")), items: []))
        }
        var result: [[String: Any]] = kept.map { section in
            [
                "id": section.model.id,
                "model": random.next() % 4 == 0 ? ["r": Int(random.next() % 9)] : jsonObject(section.model.model.text),
                "items": [[String: Any]](),
            ]
        }
        guard !result.isEmpty else { return ["sections": []] }
        for item in pool {
            let index = Int(random.next() % UInt64(result.count))
            var items = result[index]["items"] as? [[String: Any]] ?? []
            items.append([
                "id": item.id,
                "model": random.next() % 4 == 0 ? ["v": Int(random.next() % 5)] : jsonObject(item.model.text),
            ])
            result[index]["items"] = items
        }
        return ["sections": result]
    }

    static func jsonObject(_ text: String) -> Any {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])) ?? [:]
    }
}
