/// Shrinks a failing input to a smallest one that still fails, by removing
/// elements: what the harness prints beside a violation it can replay alone.
public enum Shrink {
    /// A subsequence of `elements` that still fails, from which no single element
    /// can be removed and still fail (1-minimal, as in delta debugging).
    /// - Complexity: O(n²) calls of `fails` at worst; O(n) when most elements go.
    public static func minimal<Element>(_ elements: [Element], fails: ([Element]) -> Bool) -> [Element] {
        var current = elements
        var index = 0
        while index < current.count {
            var without = current
            without.remove(at: index)
            if fails(without) { current = without } else { index += 1 }
        }
        return current
    }
}
