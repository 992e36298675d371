import Foundation
import ListClient
import ReactiveCore
import Synchronization
import TortureCore

/// What a `ListClient` follow has handed over so far, shared with its update callbacks.
final class ClientFollowState: Sendable {
    /// The state after the last update (nil before the first snapshot).
    let held = Mutex<ListState?>(nil)
    /// The follow ended (an error, a completion): nothing more will come.
    let ended = Atomic<Bool>(false)
}

extension Run {
    /// A follower through the Swift `ListClient` with every instance's base URL: each
    /// update is checked against the server's answer it carries (the answer applied
    /// by the harness to the state before gives the state the client hands over),
    /// and at the end its state is the final snapshot (or the oracle's view of it).
    func clientFollow(_ index: Int, follower: TorturePlan.ClientFollower) {
        let view = follower.query.flatMap { ViewOracle(query: $0) }
        let spec = follower.query.flatMap { try? ViewSpec(parsing: $0) } ?? .wholeList
        let source = "ListClient \(index) (\(follower))"
        let urls = (0..<cluster.count).compactMap { URL(string: "http://\(cluster.endpoint($0))") }
        // Each client starts at another instance, and fails over through the rest.
        let start = urls.isEmpty ? 0 : index % urls.count
        let client = ListClient(
            baseURLs: Array(urls[start...] + urls[..<start]), token: nil, transport: SocketTransport())
        var options = FollowOptions(
            pollTimeout: .seconds(5), responseSlack: .seconds(10), minimumBackoff: .milliseconds(50),
            maximumBackoff: .seconds(1), onFailover: { [ledger] _ in ledger.count("ListClient failovers") })
        options.transport = follower.eventStream ? .eventStream : .longPoll
        let state = ClientFollowState()
        let subscription = client.follow(list: follower.list, view: spec, options: options).subscribe { [self] event in
            switch event {
            case .next(let update): receive(update, state: state, view: view, source: source)
            case .error(let error):
                ledger.violated(.clientUpdatesApply, "\(source): the follow ended with \(error)")
                state.ended.store(true, ordering: .relaxed)
            case .completed:
                ledger.violated(.clientUpdatesApply, "\(source): the follow completed")
                state.ended.store(true, ordering: .relaxed)
            }
        }
        defer { subscription.dispose() }
        while !finishing.load(ordering: .relaxed) { Run.sleep(0.1) }
        let final = finals.withLock { $0[follower.list] }
        let expected = final.map { view?.evaluate($0) ?? $0 }
        while true {
            let held = state.held.withLock { $0 }
            // A view's follow moves on to the list's version only when it hears of a change
            // that touches the view, so its version may lag: its content must match.
            if let held, let expected, let final, view != nil || held.version >= final.version {
                ledger.check(
                    .followersEndAtFinal, Ledger.digest(held) == Ledger.digest(expected),
                    "\(source): at \(follower.list)@\(held.version) its state differs from the final "
                        + "(\(Ledger.describe(held)) vs \(Ledger.describe(expected)))")
                if Ledger.digest(held) == Ledger.digest(expected) || view == nil { break }
            }
            if abandon.load(ordering: .relaxed) || state.ended.load(ordering: .relaxed) {
                ledger.violated(
                    .followersEndAtFinal,
                    "\(source): still at \(held.map { "\($0.version): \(Ledger.describe($0))" } ?? "no snapshot"), "
                        + "final is \(final?.version ?? -1): \(expected.map(Ledger.describe) ?? "")")
                break
            }
            Run.sleep(0.1)
        }
        ledger.count("followers")
    }

    /// One update of a `ListClient` follow, checked against the state before it.
    private func receive(_ update: FollowUpdate, state: ClientFollowState, view: ViewOracle?, source: String) {
        let previous = state.held.withLock { $0 }
        ledger.count("ListClient updates checked")
        switch update {
        case .snapshot(let snapshot):
            ledger.check(.clientUpdatesApply, previous == nil, "\(source): a second first snapshot")
            ledger.observe(snapshot, source: source, view: view)
            state.held.withLock { $0 = snapshot }
        case .reset(let snapshot):
            ledger.count("ListClient resets")
            ledger.check(
                .answersOrdered, snapshot.version >= (previous?.version ?? 0),
                "\(source): reset back to \(snapshot.version) from \(previous?.version ?? 0)")
            ledger.observe(snapshot, source: source, view: view)
            state.held.withLock { $0 = snapshot }
        case .changes(let change):
            guard var before = previous else {
                ledger.violated(.clientUpdatesApply, "\(source): changes before any snapshot")
                return
            }
            // A view's follow moves its version on silently for writes that leave the view alone.
            ledger.check(
                .clientUpdatesApply,
                (view == nil ? change.from == before.version : change.from >= before.version)
                    && change.before == before.sections,
                "\(source): changes from \(change.from) on \(before.version) (or other sections before them)")
            before.version = change.from
            guard
                let ours = FollowCheck.apply(change.answer, to: before, ledger: ledger, source: source, view: view)
            else { return }
            ledger.check(
                .clientUpdatesApply,
                ours.version == change.state.version && Ledger.digest(ours) == Ledger.digest(change.state),
                "\(source): the client's state at \(change.state.version) is \(Ledger.describe(change.state)), "
                    + "the answer applied gives \(ours.version): \(Ledger.describe(ours))")
            state.held.withLock { $0 = change.state }
        case .deleted(let list):
            ledger.violated(.clientUpdatesApply, "\(source): \(list) reported deleted")
        }
    }
}
