import Synchronization

/// One step of a grouped change to an `ObservableCollection`.
///
/// A mutation emits `beginUpdates`, then its steps, then `endUpdates`. Indices
/// refer to the array as it is after the preceding steps of the same group, so
/// applying the steps in order to the old array yields the new one (see `apply`).
public enum CollectionChange<Element: Sendable>: Sendable {
    /// A group of changes starts.
    case beginUpdates
    /// `element` was inserted at `index`.
    case insert(Element, at: Int)
    /// `element` was removed from `index`.
    case delete(Element, at: Int)
    /// The element at `index` was replaced by `element`.
    case update(Element, at: Int)
    /// The element at `from` was moved to `to` (remove, then insert).
    case move(from: Int, to: Int)
    /// The group is complete; the collection is consistent again.
    case endUpdates

    /// Applies this step to `array`; the begin and end markers change nothing.
    ///
    /// Returns `false` (and leaves `array` alone) if an index is out of range.
    @discardableResult
    public func apply(to array: inout [Element]) -> Bool {
        switch self {
        case .beginUpdates, .endUpdates:
            return true
        case .insert(let element, let index):
            guard index >= 0 && index <= array.count else { return false }
            array.insert(element, at: index)
        case .delete(_, let index):
            guard array.indices.contains(index) else { return false }
            array.remove(at: index)
        case .update(let element, let index):
            guard array.indices.contains(index) else { return false }
            array[index] = element
        case .move(let from, let to):
            guard array.indices.contains(from), to >= 0 && to < array.count else { return false }
            array.insert(array.remove(at: from), at: to)
        }
        return true
    }
}

/// A thread-safe array whose mutations are observable as grouped changes, like
/// ReactiveKit's collection property or a table view's batch updates.
///
/// `changes` emits each mutation as `beginUpdates … endUpdates`; `elements` emits
/// the whole array, starting with the current one. Groups are emitted in the order
/// the mutations happened, even across threads, and never interleave. A mutation
/// with no effect emits nothing. Index arguments must be valid, as for `Array`.
///
/// - Complexity: each mutation is O(n) for the array copy published on `elements`.
public final class ObservableCollection<Element: Sendable>: Sendable {
    private let storage: Mutex<[Element]>
    private let changeCore = SubjectCore<CollectionChange<Element>>(replay: 0)
    private let elementsCore: SubjectCore<[Element]>

    /// Creates a collection holding `elements`.
    public init(_ elements: [Element] = []) {
        storage = Mutex(elements)
        elementsCore = SubjectCore(replay: 1, seed: [elements])
    }

    /// A copy of the current elements.
    public var array: [Element] { storage.withLock { $0 } }

    /// The number of elements.
    public var count: Int { storage.withLock { $0.count } }

    /// Grouped changes of every later mutation.
    public var changes: Observable<CollectionChange<Element>> {
        let core = changeCore
        return Observable { observer, _ in core.subscribe(observer) }
    }

    /// The whole array, now and after every mutation.
    public var elements: Observable<[Element]> {
        let core = elementsCore
        return Observable { observer, _ in core.subscribe(observer) }
    }

    /// Appends `element`.
    public func append(_ element: Element) {
        mutate { array in
            array.append(element)
            return [.insert(element, at: array.count - 1)]
        }
    }

    /// Appends `elements` in order, as one group.
    public func append(contentsOf elements: [Element]) {
        mutate { array in
            var steps: [CollectionChange<Element>] = []
            for element in elements {
                array.append(element)
                steps.append(.insert(element, at: array.count - 1))
            }
            return steps
        }
    }

    /// Inserts `element` at `index` (`0...count`).
    public func insert(_ element: Element, at index: Int) {
        mutate { array in
            precondition(index >= 0 && index <= array.count, "ObservableCollection.insert index out of range")
            array.insert(element, at: index)
            return [.insert(element, at: index)]
        }
    }

    /// Removes and returns the element at `index`.
    @discardableResult
    public func remove(at index: Int) -> Element {
        mutate { array in
            precondition(array.indices.contains(index), "ObservableCollection.remove index out of range")
            let element = array.remove(at: index)
            return (element, [.delete(element, at: index)])
        }
    }

    /// Removes every element, as one group of deletions from the last to the first.
    public func removeAll() {
        mutate { array in
            let steps = array.indices.reversed().map { CollectionChange.delete(array[$0], at: $0) }
            array.removeAll()
            return steps
        }
    }

    /// Replaces the element at `index`.
    public subscript(index: Int) -> Element {
        get { storage.withLock { $0[index] } }
        set {
            mutate { array in
                precondition(array.indices.contains(index), "ObservableCollection subscript index out of range")
                array[index] = newValue
                return [.update(newValue, at: index)]
            }
        }
    }

    /// Replaces `subrange` with `elements`: updates where both overlap, then deletions
    /// or insertions for the difference.
    public func replace(subrange: Range<Int>, with elements: [Element]) {
        mutate { array in
            precondition(
                subrange.lowerBound >= 0 && subrange.upperBound <= array.count,
                "ObservableCollection.replace subrange out of range")
            var steps: [CollectionChange<Element>] = []
            let overlap = min(subrange.count, elements.count)
            for offset in 0..<overlap {
                let index = subrange.lowerBound + offset
                array[index] = elements[offset]
                steps.append(.update(elements[offset], at: index))
            }
            let tail = subrange.lowerBound + overlap
            for index in stride(from: subrange.upperBound - 1, through: tail, by: -1) {
                steps.append(.delete(array[index], at: index))
                array.remove(at: index)
            }
            for offset in overlap..<elements.count {
                let index = subrange.lowerBound + offset
                array.insert(elements[offset], at: index)
                steps.append(.insert(elements[offset], at: index))
            }
            return steps
        }
    }

    /// Moves the element at `from` to `to` (as `insert(remove(at: from), at: to)`).
    public func move(from: Int, to: Int) {
        mutate { array in
            precondition(
                array.indices.contains(from) && array.indices.contains(to),
                "ObservableCollection.move index out of range")
            guard from != to else { return [] }
            array.insert(array.remove(at: from), at: to)
            return [.move(from: from, to: to)]
        }
    }

    /// Applies a mutation and queues its group under the storage lock, so groups are
    /// ordered like mutations; delivers after the lock is released.
    private func mutate(_ body: (inout [Element]) -> [CollectionChange<Element>]) {
        mutate { array in ((), body(&array)) }
    }

    private func mutate<Result: Sendable>(
        _ body: (inout [Element]) -> (Result, [CollectionChange<Element>])
    ) -> Result {
        let (result, mustDrainChanges, mustDrainElements) = storage.withLock { array -> (Result, Bool, Bool) in
            let (value, steps) = body(&array)
            guard !steps.isEmpty else { return (value, false, false) }
            // Only the first enqueue can win the drain role; remember whether one did.
            var drainChanges = changeCore.enqueue(.next(.beginUpdates))
            for step in steps {
                drainChanges = changeCore.enqueue(.next(step)) || drainChanges
            }
            drainChanges = changeCore.enqueue(.next(.endUpdates)) || drainChanges
            return (value, drainChanges, elementsCore.enqueue(.next(array)))
        }
        if mustDrainChanges { changeCore.drain() }
        if mustDrainElements { elementsCore.drain() }
        return result
    }
}
