import Foundation
import JSON
import ListWire
import ListdTestSupport
import TortureCore

/// A follower's states at the versions it held lately, for resume checks.
struct Held {
    var state: ListState
    var recent: [ListState] = []

    mutating func moved(to next: ListState) {
        if next.version != state.version { recent.append(state) }
        if recent.count > 8 { recent.removeFirst() }
        state = next
    }
}

extension Run {
    /// Whether a follower at `held` may stop: the run is finishing and it reached the final state
    /// (with `view`, the oracle's view of the final snapshot).
    func finished(_ held: [String: Held], source: String, view: ViewOracle? = nil) -> Bool {
        guard finishing.load(ordering: .relaxed) else { return false }
        let finals = self.finals.withLock { $0 }
        if abandon.load(ordering: .relaxed) {
            for (list, entry) in held {
                ledger.violated(
                    .followersEndAtFinal,
                    "\(source): still at \(list)@\(entry.state.version), final is \(finals[list]?.version ?? -1)")
            }
            return true
        }
        for (list, entry) in held {
            guard let final = finals[list] else { return false }
            // A write that leaves a view alone moves no view stream on: a view follower may stop
            // short of the final version when its state is already the final view.
            let caughtUp =
                entry.state.version >= final.version
                || view.map { Ledger.digest($0.evaluate(final)) == Ledger.digest(entry.state) } ?? false
            if !caughtUp { return false }
        }
        for (list, entry) in held {
            guard let snapshot = finals[list] else { continue }
            let final = view?.evaluate(snapshot) ?? snapshot
            ledger.check(
                .followersEndAtFinal, Ledger.digest(entry.state) == Ledger.digest(final),
                "\(source): at \(list)@\(entry.state.version) its state differs from "
                    + (view == nil ? "GET's" : "the oracle's view of GET's")
                    + " (\(Ledger.describe(entry.state)) vs \(Ledger.describe(final)))")
        }
        return true
    }

    /// A long-poll follower of one list (or of a view of it, with `follower`), resuming
    /// now and then from an older held version.
    func longPoll(_ index: Int, follower: TorturePlan.ViewFollower? = nil) {
        var random = plan.generator(follower == nil ? "long-poll" : "view long-poll", index)
        let view = follower.flatMap { ViewOracle(query: $0.query) }
        let list = follower?.list ?? allLists[Int.random(in: 0..<allLists.count, using: &random)]
        let source = "long-poll \(index) (\(list)\(view.map { "?\($0.query)" } ?? ""))"
        let viewQuery = view.map { "&\($0.query)" } ?? ""
        var instance = Int.random(in: 0..<cluster.count, using: &random)
        guard let first = snapshot(list, instance: instance, source: source, view: view) else { return }
        var held = Held(state: first)
        var answers = 0
        while !finished([list: held], source: source, view: view) {
            let timeout = Int.random(in: 1...6, using: &random)
            let resume = !held.recent.isEmpty && Int.random(in: 0..<100, using: &random) < 15
            let from = resume ? held.recent[Int.random(in: 0..<held.recent.count, using: &random)] : held.state
            let endpoint = cluster.liveEndpoint(instance)
            let ackedBefore = ledger.maxAcknowledged(list: list)
            let sent = ledger.now
            let target =
                "/lists/\(list)/changes?since=\(from.version)&timeout=\(timeout)&epoch=\(from.epoch)\(viewQuery)"
            let result = net.send(.get, at: endpoint, target, timeout: .seconds(Int64(timeout) + 30))
            let received = ledger.now
            guard case .success(let reply) = result else {
                instance += 1
                Run.sleep(0.1)
                continue
            }
            guard reply.status == 200, let json = reply.json, let answer = try? ChangeAnswer(json: json) else {
                if reply.status >= 500 {
                    ledger.count("answers 5xx (a fault)")
                } else {
                    ledger.violated(.answersOrdered, "\(source): \(target) answered \(reply.status) \(reply.text)")
                }
                Run.sleep(0.1)
                continue
            }
            answers += 1
            ledger.count(view == nil ? "long-poll answers checked" : "view long-poll answers checked")
            // Allowed (waiters of one version share an answer), counted.
            if answer.to < ackedBefore {
                ledger.count("long-poll answers behind a write acknowledged before the request")
            }
            if answer.to == from.version && !answer.isReset && !disturbedByOutage(sent, received) {
                ledger.check(
                    .waitersAnswered, received - sent <= Double(timeout) + ledger.wakeBound,
                    "\(source): an empty answer after \(received - sent) s with timeout \(timeout)")
                // A write that leaves a view alone wakes none of its waiters.
                if view == nil, let acked = ledger.firstAcknowledgement(list: list, above: from.version), acked > sent {
                    ledger.check(
                        .waitersAnswered, received - acked <= ledger.wakeBound,
                        "\(source): waited since=\(from.version) \(received - sent) s, answered empty \(received - acked) s "
                            + "after a later version was acknowledged")
                }
            }
            guard let next = FollowCheck.apply(answer, to: from, ledger: ledger, source: source, view: view) else {
                if let fresh = snapshot(list, instance: instance, source: source, view: view) {
                    held = Held(state: fresh)
                }
                continue
            }
            if resume {
                ledger.count("resumes from an older version")
                if next.version == held.state.version {
                    ledger.check(
                        .resumable, Ledger.digest(next) == Ledger.digest(held.state),
                        "\(source): resuming from \(from.version) gives another state at \(next.version)")
                } else {
                    ledger.passed(.resumable)
                }
                if next.version >= held.state.version { held.moved(to: next) }
            } else {
                held.moved(to: next)
            }
            if Int.random(in: 0..<100, using: &random) < 10 { instance += 1 }  // move to another instance
        }
        ledger.count("followers")
    }

    /// An event-stream follower of one list: reconnects with Last-Event-ID, now
    /// and then from an older event, and stalls when a slow-reader nemesis says so.
    /// With `follower`, it follows a view of its list (and no slow-reader nemesis targets it).
    func eventStream(_ index: Int, follower: TorturePlan.ViewFollower? = nil) {
        var random = plan.generator(follower == nil ? "event-stream" : "view event-stream", index)
        let view = follower.flatMap { ViewOracle(query: $0.query) }
        let list = follower?.list ?? allLists[Int.random(in: 0..<allLists.count, using: &random)]
        let source = "event-stream \(index) (\(list)\(view.map { "?\($0.query)" } ?? ""))"
        let viewQuery = view.map { "&\($0.query)" } ?? ""
        var instance = Int.random(in: 0..<cluster.count, using: &random)
        guard let first = snapshot(list, instance: instance, source: source, view: view) else { return }
        var held = Held(state: first)
        var ids: [Int64: String] = [:]
        var lastID: String?
        var done = false
        while !done && !finished([list: held], source: source, view: view) {
            var from = held.state
            var resumeFrom: String? = lastID
            if let older = held.recent.last(where: { ids[$0.version] != nil }),
                Int.random(in: 0..<100, using: &random) < 20
            {
                from = older
                resumeFrom = ids[older.version]
                ledger.count("resumes from an older version")
            }
            let target = "/lists/\(list)/events?since=\(from.version)&epoch=\(from.epoch)\(viewQuery)"
            guard let stream = EventStream(at: cluster.liveEndpoint(instance), target: target, lastEventID: resumeFrom)
            else {
                instance += 1
                Run.sleep(0.1)
                continue
            }
            var current = from
            let limit = Int.random(in: 3...12, using: &random)
            var received = 0
            var lastEvent = ledger.now
            while received < limit, !stream.closed {
                // At the held version, or given up on: a silent stream must not hold the run.
                if current.version >= held.state.version || abandon.load(ordering: .relaxed),
                    finished([list: held], source: source, view: view)
                {
                    done = true
                    break
                }
                // A write that leaves a view alone sends its stream nothing: at the end, a view
                // follower asks again from where it is, and the answer moves it to the list's version.
                if view != nil, finishing.load(ordering: .relaxed), ledger.now - lastEvent > 2 { break }
                // listd sends a comment every 15 s: a stream silent for longer is stuck.
                if ContinuousClock.now - stream.lastReceived > .seconds(25) {
                    if disturbedByOutage(ledger.now - 25, ledger.now) { break }
                    ledger.violated(
                        .waitersAnswered,
                        "\(source): \(target) silent for 25 s (status \(stream.status), \(stream.bytesReceived) bytes "
                            + "received, held \(current.version)); reconnecting")
                    break
                }
                let paused = view == nil ? pausedUntil.withLock { $0[index] } ?? 0 : 0
                if ledger.now < paused {
                    Run.sleep(0.05)
                    continue
                }
                for event in stream.poll(milliseconds: 200) {
                    received += 1
                    lastEvent = ledger.now
                    ledger.count(view == nil ? "event-stream answers checked" : "view event-stream answers checked")
                    guard event.event == "change" || event.event == "reset",
                        let answer = try? ChangeAnswer(json: JSONValue.of(event.data))
                    else {
                        ledger.violated(.answersOrdered, "\(source): event \(event.event) \(event.data.prefix(200))")
                        continue
                    }
                    guard
                        let next = FollowCheck.apply(answer, to: current, ledger: ledger, source: source, view: view)
                    else {
                        // Start again from a fresh snapshot, as a client that cannot apply an answer does.
                        if let fresh = snapshot(list, instance: instance, source: source, view: view) {
                            held = Held(state: fresh)
                            lastID = nil
                            ids = [:]
                        }
                        received = limit
                        break
                    }
                    if current.version == from.version, from.version < held.state.version {
                        if next.version == held.state.version {
                            ledger.check(
                                .resumable, Ledger.digest(next) == Ledger.digest(held.state),
                                "\(source): resuming from \(from.version) gives another state at \(next.version)")
                        } else {
                            ledger.passed(.resumable)
                        }
                    }
                    current = next
                    ids[next.version] = event.id
                    if next.version >= held.state.version {
                        if next.version > held.state.version { held.moved(to: next) }
                        lastID = event.id
                    }
                }
            }
            if stream.closed && stream.status >= 500 {
                ledger.count("answers 5xx (a fault)")
            } else if stream.closed && stream.status != 200 && stream.status != 0 {
                ledger.violated(
                    .answersOrdered, "\(source): \(target) answered \(stream.status): \(stream.refusal)")
            }
            stream.close()
            if ids.count > 64 { ids = ids.filter { $0.key >= held.state.version - 20 } }
        }
        ledger.count("followers")
    }

    /// A `POST /changes` follower of two or three lists.
    func multiList(_ index: Int) {
        var random = plan.generator("multi", index)
        let lists = Array(allLists.shuffled(using: &random).prefix(Int.random(in: 2...3, using: &random)))
        let source = "POST /changes \(index) (\(lists.joined(separator: ",")))"
        var instance = Int.random(in: 0..<cluster.count, using: &random)
        var held: [String: Held] = [:]
        for list in lists {
            guard let state = snapshot(list, instance: instance, source: source) else { return }
            held[list] = Held(state: state)
        }
        while !finished(held, source: source) {
            let timeout = Int.random(in: 1...6, using: &random)
            let body =
                "{\"lists\":{" + lists.map { "\"\($0)\":\(held[$0]?.state.version ?? 0)" }.joined(separator: ",") + "}}"
            let sent = ledger.now
            let result = net.send(
                .post, at: cluster.liveEndpoint(instance), "/changes?timeout=\(timeout)", body: body,
                timeout: .seconds(Int64(timeout) + 30))
            let received = ledger.now
            guard case .success(let reply) = result, reply.status == 200, let json = reply.json,
                let answers = try? ChangeAnswer.manyLists(json: json)
            else {
                instance += 1
                Run.sleep(0.1)
                continue
            }
            ledger.count("POST /changes answers checked")
            if answers.isEmpty && !disturbedByOutage(sent, received) {
                ledger.check(
                    .waitersAnswered, received - sent <= Double(timeout) + ledger.wakeBound,
                    "\(source): an empty answer after \(received - sent) s with timeout \(timeout)")
            }
            for (list, answer) in answers {
                guard let answer, let entry = held[list] else {
                    ledger.violated(.answersOrdered, "\(source): \(list) answered as deleted or unasked")
                    continue
                }
                if let next = FollowCheck.apply(answer, to: entry.state, ledger: ledger, source: source) {
                    held[list]?.moved(to: next)
                } else if let fresh = snapshot(list, instance: instance, source: source) {
                    held[list] = Held(state: fresh)
                }
            }
        }
        ledger.count("followers")
    }

    /// A reader paging through a list's items with cursors, and reading snapshots.
    func reader(_ index: Int) {
        var random = plan.generator("reader", index)
        while !stopping.load(ordering: .relaxed) {
            let list = plan.lists[Int.random(in: 0..<plan.lists.count, using: &random)]
            let instance = Int.random(in: 0..<cluster.count, using: &random)
            if Int.random(in: 0..<100, using: &random) < 30 {
                _ = snapshot(list, instance: instance, source: "reader \(index)")
                ledger.count("snapshots read")
                Run.sleep(0.05)
                continue
            }
            var after: String?
            pages: while true {
                var seen: Set<String> = []
                let ackedBefore = ledger.maxAcknowledged(list: list)
                let target =
                    "/lists/\(list)/items?limit=\(Int.random(in: 3...20, using: &random))"
                    + (after.map { "&after=\($0.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? $0)" }
                        ?? "")
                guard case .success(let reply) = net.send(.get, at: cluster.liveEndpoint(instance), target),
                    reply.status == 200, let json = reply.json, let items = json["items"]?.arrayValue
                else { break pages }
                ledger.count("cursor pages read")
                Run.sleep(0.02)
                if let version = reply.version, version < ackedBefore {
                    ledger.count("cursor pages behind a write acknowledged before the request")
                }
                for item in items {
                    let id = item["id"]?.stringValue ?? ""
                    let token = item["model"]?["p"]?.stringValue ?? ""
                    ledger.check(
                        .readsValid, attempted.withLock { $0.contains(token) } && !seen.contains(id),
                        "reader \(index): \(list) item \(id) payload \(token) (unwritten, or twice in one page)")
                    seen.insert(id)
                }
                guard let next = json["next"]?.stringValue else { break pages }
                after = next
            }
        }
    }
}
