/// When the store's disk was full and when writes were taken again: what the
/// disk-full nemesis checks, as a value (its owner locks it).
public struct FullDiskLog: Sendable, Equatable {
    /// One time the disk was full: from `start` to `end` (nil while it is), and
    /// the first write acknowledged at or after `end`.
    public struct Window: Sendable, Equatable {
        public var start: Double
        public var end: Double?
        public var recovered: Double?
    }

    public private(set) var windows: [Window] = []

    public init() {}

    /// The disk is full from `time` on.
    public mutating func filled(at time: Double) { windows.append(Window(start: time)) }

    /// The disk was freed at `time`.
    public mutating func freed(at time: Double) {
        if let last = windows.indices.last, windows[last].end == nil { windows[last].end = time }
    }

    /// A write was acknowledged at `time`.
    public mutating func acknowledged(at time: Double) {
        for index in windows.indices where windows[index].recovered == nil {
            if let end = windows[index].end, end <= time { windows[index].recovered = time }
        }
    }

    /// Whether a 507 answered at `time` is explained: the disk was full, or was
    /// freed less than `grace` seconds before (the write was sent while it was full).
    public func isFull(at time: Double, grace: Double = 2) -> Bool {
        windows.contains { $0.start <= time && time <= ($0.end ?? .infinity) + grace }
    }

    /// For each freed window: nil when a write was acknowledged within `bound` seconds
    /// of the freeing (or writers stopped before `bound` passed), else what went wrong.
    public func recoveries(stoppedAt stop: Double, bound: Double = 10) -> [String?] {
        windows.compactMap { window -> String?? in
            guard let end = window.end else { return nil }
            if let recovered = window.recovered {
                return recovered - end <= bound
                    ? .some(nil)
                    : "the disk was freed at t+\(Int(end))s, the next write acknowledged \(Int(recovered - end)) s later"
            }
            return stop - end > bound
                ? "the disk was freed at t+\(Int(end))s and no write was acknowledged in the \(Int(stop - end)) s after"
                : .some(nil)
        }
    }
}
