/// Patience sorting for the longest strictly increasing subsequence, with
/// buffers reused across calls (one call per section).
///
/// An element larger than the current longest tail is appended in O(1); only
/// the others need a binary search. Every append lengthens the result by one, so
/// exactly n - L elements are searched, where L is the result's length: these are
/// the elements reported as moved. The cost is O(n + k log L) for k moves.
@usableFromInline
struct LongestIncreasingSubsequence {
    /// Input: the sequence (old indices in new order).
    @usableFromInline var values: [Int32] = []
    /// Output: whether `values[i]` is in the subsequence kept in place.
    @usableFromInline var kept: [Bool] = []
    @usableFromInline var tails: [Int32] = []
    @usableFromInline var previous: [Int32] = []

    @usableFromInline init() {}

    /// Clears the input for the next sequence, keeping capacity.
    @usableFromInline
    mutating func reset() {
        values.removeAll(keepingCapacity: true)
    }

    /// Fills `kept` for `values`; returns the subsequence's length.
    @usableFromInline
    mutating func run() -> Int {
        let count = values.count
        tails.removeAll(keepingCapacity: true)
        previous.removeAll(keepingCapacity: true)
        kept.removeAll(keepingCapacity: true)
        kept.append(contentsOf: repeatElement(false, count: count))
        previous.append(contentsOf: repeatElement(-1, count: count))
        if count == 0 { return 0 }
        values.withUnsafeBufferPointer { values in
            previous.withUnsafeMutableBufferPointer { previous in
                for index in 0..<count {
                    let value = values[index]
                    if let last = tails.last {
                        if values[Int(last)] < value {
                            previous[index] = last
                            tails.append(Int32(index))
                            continue
                        }
                        // First tail whose value is >= value.
                        var low = 0
                        var high = tails.count - 1
                        while low < high {
                            let middle = (low + high) >> 1
                            if values[Int(tails[middle])] < value { low = middle + 1 } else { high = middle }
                        }
                        tails[low] = Int32(index)
                        previous[index] = low > 0 ? tails[low - 1] : -1
                    } else {
                        tails.append(Int32(index))
                    }
                }
            }
        }
        var cursor = tails[tails.count - 1]
        while cursor >= 0 {
            kept[Int(cursor)] = true
            cursor = previous[Int(cursor)]
        }
        return tails.count
    }
}
