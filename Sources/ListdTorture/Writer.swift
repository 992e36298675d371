import Foundation
import HTTP
import JSON
import ListdTestSupport
import TortureCore

/// How a write ended.
enum Outcome {
    /// A 2xx answer.
    case acknowledged(Reply)
    /// A definitive refusal (4xx, 503): nothing was written.
    case refused(Reply)
    /// No answer (or a 5xx) without a key to retry with: it may or may not have committed.
    case lost
}

/// One writer: a seeded sequence of inserts, op batches, updates, moves,
/// deletes, If-Match increments and PUTs, some with Idempotency-Keys retried
/// after a lost answer.
struct Writer {
    let run: Run
    let index: Int
    var random: SeededGenerator
    /// This writer's payloads that are certainly in a list: token → (list, id, rev).
    var owned: [String: (list: String, id: String, rev: Int)] = [:]
    var serial = 0

    init(run: Run, index: Int) {
        self.run = run
        self.index = index
        random = run.plan.generator("writer", index)
    }

    var ledger: Ledger { run.ledger }

    mutating func token() -> String {
        serial += 1
        let token = "w\(index)-\(serial)"
        run.attempted.withLock { _ = $0.insert(token) }
        return token
    }

    /// A payload's model: its token, its revision, and a group `g` that an update changes
    /// (so items cross the filters, orders and groups of view followers).
    static func model(_ token: String, _ rev: Int) -> String {
        let g = (token.utf8.reduce(0) { $0 + Int($1) } + rev) % 3
        return JSONValue.of(#"{"g":\#(g),"p":"\#(token)","r":\#(rev)}"#).canonicalText
    }

    func expect(_ token: String, _ expectation: Expectation) {
        run.expectations.withLock { $0[token] = expectation }
    }

    mutating func loop() {
        while !run.stopping.load(ordering: .relaxed) {
            let roll = Int.random(in: 0..<100, using: &random)
            let list = run.plan.lists[Int.random(in: 0..<run.plan.lists.count, using: &random)]
            let mine = owned.filter { $0.value.list == list }.keys.sorted()
            let pick = mine.isEmpty ? nil : mine[Int.random(in: 0..<mine.count, using: &random)]
            // At most a dozen of this writer's items per list: lists stay small enough to
            // digest on every answer for hours.
            switch roll {
            case 0..<35: if let pick, mine.count > 12 { delete(pick) } else { insert(list) }
            case 35..<55: batch(list, pick)
            case 55..<70: if let pick { update(pick) } else { insert(list) }
            case 70..<82: if let pick, mine.count > 5 { delete(pick) } else { insert(list) }
            case 82..<92: increment()
            default: put()
            }
            ledger.count("operations")
            // About 50 operations a second per writer: the machine is shared.
            Run.sleep(Double.random(in: 0.01..<0.03, using: &random))
        }
    }

    /// Sends a write: with a key, retried (on the next instance) through lost answers and 5xx until answered.
    mutating func write(
        _ method: HTTPMethod, _ list: String, _ target: String, _ body: String, label: String,
        ifMatch: String? = nil, changes: Bool = true
    ) -> Outcome {
        let keyed = Int.random(in: 0..<100, using: &random) < 60
        let key = keyed ? "torture-\(run.plan.seed)-\(label)" : nil
        var headers: [(String, String)] = []
        if let key { headers.append(("Idempotency-Key", key)) }
        if let ifMatch { headers.append(("If-Match", ifMatch)) }
        var instance = Int.random(in: 0..<run.cluster.count, using: &random)
        let replay = keyed && Int.random(in: 0..<100, using: &random) < 15
        let deadline = ledger.now + 60
        var everSent = false
        while true {
            let endpoint = run.cluster.liveEndpoint(instance)
            ledger.history.record(
                list, at: ledger.now, actor: "writer \(index)",
                "\(method) \(label) sent to \(endpoint)" + (ifMatch.map { " If-Match \($0)" } ?? "")
                    + (key == nil ? "" : " (keyed)"))
            let result = run.net.send(method, at: endpoint, target, headers: headers, body: body.isEmpty ? nil : body)
            switch result {
            case .success(let reply) where !(200..<300).contains(reply.status):
                ledger.history.record(
                    list, at: ledger.now, actor: "writer \(index)", "\(label) answered \(reply.status)")
            case .failure(let error):
                ledger.history.record(
                    list, at: ledger.now, actor: "writer \(index)", "\(label) got no answer: \(error)")
            default: break
            }
            switch result {
            case .success(let reply) where (200..<300).contains(reply.status):
                if changes {
                    if let version = reply.version {
                        ledger.acknowledged(list: list, version: version, label: label)
                    } else {
                        ledger.indeterminate(list: list)
                        ledger.violated(.versionsGaplessAndUnique, "\(label) answered \(reply.status) with no version")
                    }
                }
                ledger.count("acknowledged writes")
                run.acknowledgedWrite(at: ledger.now)
                if everSent { ledger.count("writes retried with their key after a lost answer") }
                if replay { checkReplay(method, at: run.cluster.liveEndpoint(instance), target, headers, body, reply) }
                return .acknowledged(reply)
            case .success(let reply) where reply.status == 507:
                ledger.count("writes answered 507 (disk full)")
                ledger.check(
                    .diskFullRefused, run.diskFull(at: ledger.now),
                    "writer \(index): \(label) answered 507 with the disk not full: \(reply.text)")
                if key == nil { return .refused(reply) }
            case .success(let reply) where reply.status == 500 && run.diskFull(at: ledger.now):
                ledger.violated(
                    .diskFullRefused, "writer \(index): \(label) answered 500 on a full disk: \(reply.text)")
                everSent = true
                if key == nil {
                    ledger.indeterminate(list: list)
                    return .lost
                }
            case .success(let reply) where reply.status >= 500:
                everSent = true
                if key == nil {
                    ledger.indeterminate(list: list)
                    ledger.count("writes with a lost answer")
                    return .lost
                }
            case .success(let reply):
                return .refused(reply)
            case .failure(let error):
                ledger.count("write calls that got no answer")
                if error.maybeSent {
                    everSent = true
                    if key == nil {
                        ledger.indeterminate(list: list)
                        ledger.count("writes with a lost answer")
                        return .lost
                    }
                }
            }
            if ledger.now > deadline {
                ledger.indeterminate(list: list)
                ledger.violated(.idempotentRetries, "writer \(index): \(label) got no answer in 60 s of retries")
                return .lost
            }
            instance += 1
            Run.sleep(0.05)
        }
    }

    /// Sends the same keyed request again, as a client whose answer was lost does: it must replay.
    func checkReplay(
        _ method: HTTPMethod, at endpoint: Endpoint, _ target: String, _ headers: [(String, String)], _ body: String,
        _ first: Reply
    ) {
        guard
            case .success(let again) = run.net.send(
                method, at: endpoint, target, headers: headers, body: body.isEmpty ? nil : body)
        else { return }
        if again.status >= 500 || again.status == 503 { return }
        ledger.count("replayed key retries")
        ledger.check(
            .idempotentRetries,
            again.status == first.status && again.version == first.version
                && again.headers["Idempotent-Replayed"] == "true",
            "writer \(index): retry of \(method.rawValue) \(target) answered \(again.status) v\(again.version ?? -1) "
                + "replayed=\(again.headers["Idempotent-Replayed"] ?? "no"), first \(first.status) v\(first.version ?? -1)"
        )
    }

    mutating func insert(_ list: String) {
        let token = token()
        let section = "s\(Int.random(in: 0..<3, using: &random))"
        let model = Self.model(token, 0)
        switch write(
            .post, list, "/lists/\(list)/sections/\(section)/items", #"{"model":\#(model)}"#, label: "insert-\(token)")
        {
        case .acknowledged(let reply):
            let id =
                reply.json?["item"]?["id"]?.stringValue
                ?? reply.headers["Location"]?.split(separator: "/").last.map(String.init)
            guard let id else {
                ledger.violated(.readsValid, "insert \(token) answered without an item id: \(reply.text)")
                expect(token, .uncertain)
                return
            }
            owned[token] = (list, id, 0)
            expect(token, .present(model: model))
        case .refused(let reply):
            ledger.check(
                .ackedWritesExactlyOnce, reply.status == 503 || reply.status == 507,
                "insert \(token) refused: \(reply.status) \(reply.text)")
            expect(token, .absent)
        case .lost:
            expect(token, .uncertain)
        }
    }

    /// One PATCH: a new item with a client-chosen id, an update of one of ours and a move of it.
    mutating func batch(_ list: String, _ pick: String?) {
        let token = token()
        var ops = [
            #"{"op":"insertItem","section":"s\#(Int.random(in: 0..<3, using: &random))","item":{"id":"\#(token)","model":\#(Self.model(token, 0))},"at":0}"#
        ]
        var updated: (token: String, rev: Int)?
        if let pick, let item = owned[pick] {
            updated = (pick, item.rev + 1)
            ops.append(#"{"op":"updateItem","id":"\#(item.id)","model":\#(Self.model(pick, item.rev + 1))}"#)
            ops.append(
                #"{"op":"moveItem","id":"\#(item.id)","section":"s\#(Int.random(in: 0..<3, using: &random))","to":0}"#)
        }
        let body = #"{"ops":[\#(ops.joined(separator: ","))]}"#
        switch write(.patch, list, "/lists/\(list)", body, label: "batch-\(token)") {
        case .acknowledged:
            owned[token] = (list, token, 0)
            expect(token, .present(model: Self.model(token, 0)))
            if let updated, let item = owned[updated.token] {
                owned[updated.token] = (item.list, item.id, updated.rev)
                expect(updated.token, .present(model: Self.model(updated.token, updated.rev)))
            }
        case .refused(let reply):
            ledger.check(
                .ackedWritesExactlyOnce, reply.status == 503 || reply.status == 507,
                "batch \(token) refused: \(reply.status) \(reply.text)")
            expect(token, .absent)
        case .lost:
            expect(token, .uncertain)
            if let updated {
                owned[updated.token] = nil
                expect(updated.token, .uncertain)
            }
        }
    }

    mutating func update(_ token: String) {
        guard let item = owned[token] else { return }
        let model = Self.model(token, item.rev + 1)
        let body = #"{"ops":[{"op":"updateItem","id":"\#(item.id)","model":\#(model)}]}"#
        serial += 1
        switch write(.patch, item.list, "/lists/\(item.list)", body, label: "update-\(token)-\(serial)") {
        case .acknowledged:
            owned[token] = (item.list, item.id, item.rev + 1)
            expect(token, .present(model: model))
        case .refused(let reply):
            ledger.check(
                .ackedWritesExactlyOnce, reply.status == 503 || reply.status == 507,
                "update of acknowledged \(token) refused: \(reply.status) \(reply.text)")
            if reply.status != 503 && reply.status != 507 {
                // Reported once: the item's state is unknown from here, so no later write repeats the report.
                owned[token] = nil
                expect(token, .uncertain)
            }
        case .lost:
            owned[token] = nil
            expect(token, .uncertain)
        }
    }

    mutating func delete(_ token: String) {
        guard let item = owned[token] else { return }
        switch write(.delete, item.list, "/lists/\(item.list)/items/\(item.id)", "", label: "delete-\(token)") {
        case .acknowledged:
            owned[token] = nil
            expect(token, .absent)
        case .refused(let reply):
            ledger.check(
                .ackedWritesExactlyOnce, reply.status == 503 || reply.status == 507,
                "delete of acknowledged \(token) refused: \(reply.status) \(reply.text)")
            if reply.status != 503 && reply.status != 507 {
                // Reported once: the item's state is unknown from here, so no later write repeats the report.
                owned[token] = nil
                expect(token, .uncertain)
            }
        case .lost:
            owned[token] = nil
            expect(token, .uncertain)
        }
    }

    /// Read the counter, write it plus one with If-Match; a 412 means someone else won.
    mutating func increment() {
        let endpoint = run.cluster.liveEndpoint(Int.random(in: 0..<run.cluster.count, using: &random))
        guard case .success(let read) = run.net.send(.get, at: endpoint, "/lists/counter/items/n"), read.status == 200,
            let tag = read.headers["ETag"], let value = read.json?["item"]?["model"]?["n"]?.intValue
        else {
            ledger.count("counter reads failed")
            return
        }
        serial += 1
        let body = #"{"ops":[{"op":"updateItem","id":"n","model":{"n":\#(value + 1)}}]}"#
        switch write(.patch, "counter", "/lists/counter", body, label: "increment-w\(index)-\(serial)", ifMatch: tag) {
        case .acknowledged:
            run.counter.withLock { $0.acknowledged += 1 }
            ledger.count("If-Match increments acknowledged")
        case .refused(let reply):
            ledger.count("If-Match writes refused (412)")
            ledger.check(
                .ifMatchLinearizable, reply.status == 412 || reply.status == 503 || reply.status == 507,
                "increment refused with \(reply.status): \(reply.text)")
        case .lost: run.counter.withLock { $0.lost += 1 }
        }
    }

    /// Replace the whole board.
    mutating func put() {
        let tokens = (0..<Int.random(in: 1...4, using: &random)).map { _ in token() }
        let items = tokens.enumerated().map { #"{"id":"b\#($0.offset)","model":\#(Self.model($0.element, 0))}"# }
        let itemsText = JSONValue.of("[\(items.joined(separator: ","))]").canonicalText
        let body = #"{"sections":[{"id":"b","model":{},"items":\#(itemsText)}]}"#
        switch write(.put, "board", "/lists/board", body, label: "put-\(tokens[0])") {
        case .acknowledged(let reply): run.boardPuts.withLock { $0.append((itemsText, reply.version)) }
        case .refused(let reply):
            ledger.check(
                .ackedWritesExactlyOnce, reply.status == 503 || reply.status == 507,
                "PUT board refused: \(reply.status) \(reply.text)")
        case .lost: run.boardPuts.withLock { $0.append((itemsText, nil)) }
        }
    }
}
