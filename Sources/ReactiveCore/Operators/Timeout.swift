extension ObservableType {
    /// Fails with `ReactiveError.timeout` if no element arrives within `dueTime` of the
    /// subscription or of the previous element.
    public func timeout(_ dueTime: Duration, scheduler: any Scheduler) -> Observable<Element> {
        timeout(
            dueTime, other: Observable<Element>.error(ReactiveError.timeout(dueTime: dueTime)), scheduler: scheduler)
    }

    /// Switches to `other` if no element arrives within `dueTime` of the subscription
    /// or of the previous element.
    public func timeout<Other: ObservableType>(
        _ dueTime: Duration, other: Other, scheduler: any Scheduler
    ) -> Observable<Element> where Other.Element == Element {
        let source = asObservable()
        let fallback = other.asObservable()
        return Observable { observer, cancel in
            let output = SerializedObserver(observer, cancel: cancel)
            let state = OutputState<(id: UInt64, switched: Bool)>((0, false))
            let timer = SerialDisposable()
            let upstream = SerialDisposable()
            let group = CompositeDisposable(output, timer, upstream)
            let forward = AnyObserver<Element> { event in
                if output.send({ event }) { group.dispose() }
            }
            @Sendable func arm(_ id: UInt64) {
                timer.replace(
                    with: scheduler.schedule(after: dueTime) {
                        var fire = false
                        output.send {
                            if state.value.id == id && !state.value.switched {
                                state.value.switched = true
                                fire = true
                            }
                            return nil
                        }
                        if fire {
                            let slot = SingleAssignmentDisposable(parent: group)
                            upstream.replace(with: slot)
                            slot.setDisposable(fallback.run(forward, slot))
                        }
                    })
            }
            arm(0)
            let first = SingleAssignmentDisposable(parent: group)
            upstream.replace(with: first)
            first.setDisposable(
                source.run(
                    AnyObserver<Element> { event in
                        var id: UInt64?
                        let ended = output.send {
                            guard !state.value.switched else { return nil }
                            state.value.id += 1
                            id = state.value.id
                            return event
                        }
                        if ended {
                            group.dispose()
                        } else if let id, case .next = event {
                            arm(id)
                        }
                    }, first))
            return group
        }
    }
}
