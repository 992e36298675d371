extension ObservableType {
    /// Emits at most one element per `dueTime` window.
    ///
    /// The first element is emitted at once and opens a window; with `latest: true`
    /// the newest element received during the window is emitted when it closes (and
    /// opens the next window), with `latest: false` elements during a window are
    /// dropped. On completion a pending latest element is emitted first.
    public func throttle(_ dueTime: Duration, latest: Bool = true, scheduler: any Scheduler) -> Observable<Element> {
        let source = asObservable()
        return Observable { observer, cancel in
            let output = SerializedObserver(observer, cancel: cancel)
            let state = OutputState(ThrottleState<Element>())
            let timer = SerialDisposable()
            let upstream = SingleAssignmentDisposable(parent: cancel)
            let group = CompositeDisposable(output, timer, upstream)
            upstream.setDisposable(
                source.run(
                    AnyObserver<Element> { event in
                        switch event {
                        case .next(let element):
                            let now = scheduler.now
                            var delay: Duration?
                            output.send {
                                if let last = state.value.lastEmission, now - last < dueTime {
                                    guard latest else { return nil }
                                    state.value.pending = element
                                    if !state.value.timerArmed {
                                        state.value.timerArmed = true
                                        delay = dueTime - (now - last)
                                    }
                                    return nil
                                }
                                state.value.lastEmission = now
                                state.value.pending = nil
                                return .next(element)
                            }
                            guard let delay else { return }
                            timer.replace(
                                with: scheduler.schedule(after: delay) {
                                    let now = scheduler.now
                                    output.send {
                                        state.value.timerArmed = false
                                        guard let pending = state.value.pending else { return nil }
                                        state.value.pending = nil
                                        state.value.lastEmission = now
                                        return .next(pending)
                                    }
                                })
                        case .error:
                            output.on(event)
                            group.dispose()
                        case .completed:
                            output.send {
                                guard let pending = state.value.pending else { return nil }
                                state.value.pending = nil
                                return .next(pending)
                            }
                            output.on(.completed)
                            group.dispose()
                        }
                    }, upstream))
            return group
        }
    }
}

private struct ThrottleState<Element> {
    var lastEmission: Duration?
    var pending: Element?
    var timerArmed = false
}
