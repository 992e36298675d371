import ArgumentParser

/// A duration on the command line: a number with a unit, `500ms`, `30s`,
/// `15m`, `12h` or `7d`; a bare number is seconds.
struct DurationArgument: ExpressibleByArgument, Equatable, CustomStringConvertible {
    /// The duration.
    var duration: Duration
    /// The text it was given as, for help and logs.
    var description: String

    init(_ duration: Duration, description: String) {
        self.duration = duration
        self.description = description
    }

    init?(argument: String) {
        let units: [(suffix: String, seconds: Double)] = [
            ("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600), ("d", 86_400),
        ]
        var number = Substring(argument)
        var scale = 1.0
        for unit in units where argument.hasSuffix(unit.suffix) {
            number = argument.dropLast(unit.suffix.count)
            scale = unit.seconds
            break
        }
        guard let value = Double(number), value.isFinite, value >= 0 else { return nil }
        let milliseconds = (value * scale * 1000).rounded()
        guard milliseconds <= Double(Int64.max / 1_000_000) else { return nil }
        self.duration = .milliseconds(Int64(milliseconds))
        self.description = argument
    }

    /// The duration in (fractional) seconds.
    var seconds: Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
