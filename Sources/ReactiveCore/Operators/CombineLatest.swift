extension Observable {
    /// Emits an array of the latest element of every source whenever one of them emits,
    /// once all have emitted at least once.
    ///
    /// Completes when all sources completed, or as soon as one completes without ever
    /// emitting; fails on the first error. An empty array of sources completes at once.
    public static func combineLatest<Source: Sendable>(
        _ sources: [Observable<Source>]
    ) -> Observable<[Source]> where Element == [Source] {
        Observable { observer, cancel in
            guard !sources.isEmpty else {
                observer.on(.completed)
                return NopDisposable()
            }
            let output = SerializedObserver(observer, cancel: cancel)
            let state = OutputState(CombineState<Source>(count: sources.count))
            let group = CompositeDisposable()
            group.insert(output)
            for (index, source) in sources.enumerated() {
                if group.isDisposed { break }
                group.insert(
                    source.run(
                        AnyObserver<Source> { event in
                            let ended = output.send {
                                state.value.receive(event, at: index)
                            }
                            if ended { group.dispose() }
                        }, group))
            }
            return group
        }
    }

    /// Combines the latest elements of two sources with `resultSelector`.
    ///
    /// `resultSelector` runs outside any lock, in the order the combinations happened.
    public static func combineLatest<First: ObservableType, Second: ObservableType>(
        _ first: First,
        _ second: Second,
        _ resultSelector: @escaping @Sendable (First.Element, Second.Element) throws -> Element
    ) -> Observable<Element> {
        first.combineLatest(with: second).map { try resultSelector($0.0, $0.1) }
    }
}

extension ObservableType {
    /// Pairs the latest elements of this sequence and `other`; see `Observable.combineLatest(_:)`.
    public func combineLatest<Other: ObservableType>(with other: Other) -> Observable<(Element, Other.Element)> {
        let left = map { Either<Element, Other.Element>.left($0) }
        let right = other.map { Either<Element, Other.Element>.right($0) }
        return Observable<[Either<Element, Other.Element>]>.combineLatest([left, right]).compactMap { pair in
            guard pair.count == 2, case .left(let a) = pair[0], case .right(let b) = pair[1] else { return nil }
            return (a, b)
        }
    }
}

enum Either<Left: Sendable, Right: Sendable>: Sendable {
    case left(Left)
    case right(Right)
}

private struct CombineState<Source> {
    var latest: [Source?]
    var missing: Int
    var running: Int

    init(count: Int) {
        latest = Array(repeating: nil, count: count)
        missing = count
        running = count
    }

    mutating func receive(_ event: Event<Source>, at index: Int) -> Event<[Source]>? {
        switch event {
        case .next(let element):
            if latest[index] == nil { missing -= 1 }
            latest[index] = element
            guard missing == 0 else { return nil }
            return .next(latest.compactMap { $0 })
        case .error(let error):
            return .error(error)
        case .completed:
            running -= 1
            if running == 0 || latest[index] == nil { return .completed }
            return nil
        }
    }
}
