extension ObservableType {
    /// Emits an element only after `dueTime` has passed without another element.
    ///
    /// On completion the pending element, if any, is emitted first. Timers run on `scheduler`.
    public func debounce(_ dueTime: Duration, scheduler: any Scheduler) -> Observable<Element> {
        let source = asObservable()
        return Observable { observer, cancel in
            let output = SerializedObserver(observer, cancel: cancel)
            let state = OutputState<(pending: Element?, id: UInt64)>((nil, 0))
            let timer = SerialDisposable()
            let upstream = SingleAssignmentDisposable(parent: cancel)
            let group = CompositeDisposable(output, timer, upstream)
            upstream.setDisposable(
                source.run(
                    AnyObserver<Element> { event in
                        switch event {
                        case .next(let element):
                            var id: UInt64 = 0
                            output.send {
                                state.value.id += 1
                                state.value.pending = element
                                id = state.value.id
                                return nil
                            }
                            let armed = id
                            timer.replace(
                                with: scheduler.schedule(after: dueTime) {
                                    output.send {
                                        guard state.value.id == armed, let pending = state.value.pending else {
                                            return nil
                                        }
                                        state.value.pending = nil
                                        return .next(pending)
                                    }
                                })
                        case .error:
                            output.send {
                                state.value.pending = nil
                                return event
                            }
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
