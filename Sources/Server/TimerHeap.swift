/// One loop's timers: a binary min-heap of deadlines, at most one per slot.
///
/// Why an indexed heap: every connection has exactly one live timeout (head,
/// body or keep-alive) that moves on every request. Keeping each slot's heap
/// position lets `schedule` move the entry in place, so the heap never holds
/// stale entries, whatever the request rate, and its size is the number of
/// connections with a timeout.
///
/// - Complexity: `schedule` and `cancel` are O(log n); `popExpired` is
///   O(k log n) for k expired entries; `nextDeadline` is O(1).
struct TimerHeap {
    private struct Entry {
        var deadline: UInt64
        var slot: Int32
    }

    private var entries: [Entry] = []
    /// Heap index of each slot's entry, or -1.
    private var positions: [Int32] = []

    /// Number of scheduled timers.
    var count: Int { entries.count }

    /// The earliest deadline, if any.
    var nextDeadline: UInt64? { entries.first?.deadline }

    /// The deadline scheduled for `slot`, if any.
    func deadline(of slot: Int) -> UInt64? {
        guard slot < positions.count, positions[slot] >= 0 else { return nil }
        return entries[Int(positions[slot])].deadline
    }

    /// Sets (or moves) `slot`'s timer to `deadline`.
    mutating func schedule(_ slot: Int, at deadline: UInt64) {
        precondition(slot >= 0 && slot <= Int(Int32.max), "timer slot out of range")
        if slot >= positions.count {
            positions.append(contentsOf: repeatElement(-1, count: slot - positions.count + 1))
        }
        let position = Int(positions[slot])
        if position >= 0 {
            let old = entries[position].deadline
            entries[position].deadline = deadline
            if deadline < old { siftUp(position) } else { siftDown(position) }
        } else {
            entries.append(Entry(deadline: deadline, slot: Int32(slot)))
            positions[slot] = Int32(entries.count - 1)
            siftUp(entries.count - 1)
        }
    }

    /// Removes `slot`'s timer, if it has one.
    mutating func cancel(_ slot: Int) {
        guard slot < positions.count else { return }
        let position = Int(positions[slot])
        guard position >= 0 else { return }
        remove(at: position)
    }

    /// Removes and returns the slot of the earliest timer if it is due at `now`.
    mutating func popExpired(now: UInt64) -> Int? {
        guard let first = entries.first, first.deadline <= now else { return nil }
        remove(at: 0)
        return Int(first.slot)
    }

    private mutating func remove(at position: Int) {
        let slot = Int(entries[position].slot)
        positions[slot] = -1
        let last = entries.removeLast()
        guard position < entries.count else { return }
        entries[position] = last
        positions[Int(last.slot)] = Int32(position)
        siftDown(position)
        siftUp(position)
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard entries[child].deadline < entries[parent].deadline else { return }
            swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            guard left < entries.count else { return }
            let right = left + 1
            var smallest = left
            if right < entries.count, entries[right].deadline < entries[left].deadline { smallest = right }
            guard entries[smallest].deadline < entries[parent].deadline else { return }
            swapAt(parent, smallest)
            parent = smallest
        }
    }

    private mutating func swapAt(_ a: Int, _ b: Int) {
        entries.swapAt(a, b)
        positions[Int(entries[a].slot)] = Int32(a)
        positions[Int(entries[b].slot)] = Int32(b)
    }
}
