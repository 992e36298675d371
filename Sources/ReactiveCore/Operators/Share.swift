import Synchronization

extension ObservableType {
    /// Shares one subscription to the source among all subscribers, replaying the
    /// last `replay` elements to newcomers.
    ///
    /// The first subscriber connects to the source; when the last one disposes, the
    /// source subscription is disposed. A source that terminates disconnects too, and
    /// the next subscriber connects anew (RxSwift's `.whileConnected`).
    public func share(replay: Int = 0) -> Observable<Element> {
        let shared = SharedSource(source: asObservable(), replay: replay)
        return Observable { observer, _ in shared.subscribe(observer) }
    }
}

private final class SharedSource<Element: Sendable>: Sendable {
    final class Connection: Sendable {
        let core: SubjectCore<Element>
        let upstream = SingleAssignmentDisposable()

        init(replay: Int) { core = SubjectCore(replay: replay) }
    }

    private struct State {
        var connection: Connection?
        var subscribers = 0
    }

    let source: Observable<Element>
    let replay: Int
    private let state = Mutex(State())

    init(source: Observable<Element>, replay: Int) {
        precondition(replay >= 0, "share(replay:) needs a non-negative replay count")
        self.source = source
        self.replay = replay
    }

    func subscribe(_ observer: AnyObserver<Element>) -> any Disposable {
        let (connection, connect) = state.withLock { state -> (Connection, Bool) in
            state.subscribers += 1
            if let connection = state.connection { return (connection, false) }
            let connection = Connection(replay: replay)
            state.connection = connection
            return (connection, true)
        }
        let token = connection.core.subscribe(observer)
        if connect {
            connection.upstream.setDisposable(
                source.subscribe(
                    AnyObserver<Element> { event in
                        connection.core.on(event)
                        if event.isStopEvent { self.disconnect(connection) }
                    }))
        }
        return Disposables.create {
            token.dispose()
            self.release(connection)
        }
    }

    private func release(_ connection: Connection) {
        let last = state.withLock { state -> Bool in
            guard state.connection === connection else { return false }
            state.subscribers -= 1
            guard state.subscribers == 0 else { return false }
            state.connection = nil
            return true
        }
        if last { connection.upstream.dispose() }
    }

    private func disconnect(_ connection: Connection) {
        let current = state.withLock { state -> Bool in
            guard state.connection === connection else { return false }
            state.connection = nil
            state.subscribers = 0
            return true
        }
        if current { connection.upstream.dispose() }
    }
}
