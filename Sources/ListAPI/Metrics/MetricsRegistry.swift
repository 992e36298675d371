import Synchronization

/// A small registry of Prometheus metrics, rendered in the text exposition
/// format (version 0.0.4) for `GET /metrics`.
///
/// Families are registered once at start; recording is a dictionary update
/// under one short lock per family, so the request path pays tens of
/// nanoseconds.
public final class MetricsRegistry: Sendable {
    private let families: Mutex<[any MetricFamily]> = Mutex([])

    /// Creates an empty registry.
    public init() {}

    /// Registers and returns a counter family.
    public func counter(_ name: String, help: String, labels: [String] = []) -> Counter {
        register(Counter(name: name, help: help, labelNames: labels))
    }

    /// Registers and returns a histogram family with the given upper bounds.
    public func histogram(_ name: String, help: String, labels: [String] = [], buckets: [Double]) -> Histogram {
        register(Histogram(name: name, help: help, labelNames: labels, buckets: buckets))
    }

    /// Registers a gauge whose value is read when the metrics are rendered.
    public func gauge(_ name: String, help: String, value: @escaping @Sendable () -> Double) {
        _ = register(Gauge(name: name, help: help, kind: "gauge", read: value))
    }

    /// Registers a counter kept by someone else, read when the metrics are rendered.
    public func counterFunction(_ name: String, help: String, value: @escaping @Sendable () -> Double) {
        _ = register(Gauge(name: name, help: help, kind: "counter", read: value))
    }

    private func register<Family: MetricFamily>(_ family: Family) -> Family {
        families.withLock { $0.append(family) }
        return family
    }

    /// The whole registry in Prometheus text format.
    public func render() -> String {
        let snapshot = families.withLock { $0 }
        var output = ""
        output.reserveCapacity(4096)
        for family in snapshot {
            output += "# HELP \(family.name) \(family.help)\n# TYPE \(family.name) \(family.kind)\n"
            family.render(into: &output)
        }
        return output
    }
}

/// One named metric with its samples.
protocol MetricFamily: Sendable {
    var name: String { get }
    var help: String { get }
    var kind: String { get }
    func render(into output: inout String)
}

/// A monotonically increasing count, per combination of label values.
public final class Counter: MetricFamily {
    let name: String
    let help: String
    let labelNames: [String]
    private let values: Mutex<[[String]: Double]> = Mutex([:])
    var kind: String { "counter" }

    init(name: String, help: String, labelNames: [String]) {
        self.name = name
        self.help = help
        self.labelNames = labelNames
    }

    /// Adds `amount` (default 1) to the sample with these label values.
    public func increment(_ labels: [String] = [], by amount: Double = 1) {
        precondition(labels.count == labelNames.count, "\(name) takes labels \(labelNames)")
        values.withLock { $0[labels, default: 0] += amount }
    }

    /// The current value for these label values (for tests).
    public func value(_ labels: [String] = []) -> Double { values.withLock { $0[labels] ?? 0 } }

    func render(into output: inout String) {
        let samples = values.withLock { $0 }.sorted { $0.key.lexicographicallyPrecedes($1.key) }
        if samples.isEmpty && labelNames.isEmpty { output += "\(name) 0\n" }
        for (labels, value) in samples {
            output += "\(name)\(labelSet(labelNames, labels)) \(formatSample(value))\n"
        }
    }
}

/// A distribution of observed values in cumulative buckets, per label values.
public final class Histogram: MetricFamily {
    let name: String
    let help: String
    let labelNames: [String]
    let buckets: [Double]
    private let values: Mutex<[[String]: Series]> = Mutex([:])
    var kind: String { "histogram" }

    struct Series {
        var counts: [UInt64]
        var sum: Double = 0
        var count: UInt64 = 0
    }

    init(name: String, help: String, labelNames: [String], buckets: [Double]) {
        precondition(buckets == buckets.sorted() && !buckets.isEmpty, "buckets must be sorted and non-empty")
        self.name = name
        self.help = help
        self.labelNames = labelNames
        self.buckets = buckets
    }

    /// Records one observation.
    public func observe(_ value: Double, _ labels: [String] = []) {
        precondition(labels.count == labelNames.count, "\(name) takes labels \(labelNames)")
        let bucket = buckets.firstIndex(where: { value <= $0 }) ?? buckets.count
        values.withLock { series in
            series[labels, default: Series(counts: Array(repeating: 0, count: buckets.count + 1))]
                .record(bucket: bucket, value: value)
        }
    }

    /// The number of observations for these label values (for tests).
    public func count(_ labels: [String] = []) -> UInt64 { values.withLock { $0[labels]?.count ?? 0 } }

    func render(into output: inout String) {
        let samples = values.withLock { $0 }.sorted { $0.key.lexicographicallyPrecedes($1.key) }
        for (labels, series) in samples {
            var cumulative: UInt64 = 0
            for (index, bound) in buckets.enumerated() {
                cumulative += series.counts[index]
                let set = labelSet(labelNames + ["le"], labels + [formatSample(bound)])
                output += "\(name)_bucket\(set) \(cumulative)\n"
            }
            let all = labelSet(labelNames + ["le"], labels + ["+Inf"])
            output += "\(name)_bucket\(all) \(series.count)\n"
            output += "\(name)_sum\(labelSet(labelNames, labels)) \(formatSample(series.sum))\n"
            output += "\(name)_count\(labelSet(labelNames, labels)) \(series.count)\n"
        }
    }
}

extension Histogram.Series {
    fileprivate mutating func record(bucket: Int, value: Double) {
        counts[bucket] += 1
        sum += value
        count += 1
    }
}

/// A value read at render time, such as the number of open connections
/// (a gauge) or a count another component keeps (a counter).
final class Gauge: MetricFamily {
    let name: String
    let help: String
    let kind: String
    let read: @Sendable () -> Double

    init(name: String, help: String, kind: String, read: @escaping @Sendable () -> Double) {
        self.name = name
        self.help = help
        self.kind = kind
        self.read = read
    }

    func render(into output: inout String) { output += "\(name) \(formatSample(read()))\n" }
}

/// `{a="1",b="2"}`, with values escaped as the exposition format requires.
private func labelSet(_ names: [String], _ values: [String]) -> String {
    guard !names.isEmpty else { return "" }
    let pairs = zip(names, values).map { name, value in
        var escaped = ""
        for character in value {
            switch character {
            case "\\": escaped += "\\\\"
            case "\"": escaped += "\\\""
            case "\n": escaped += "\\n"
            default: escaped.append(character)
            }
        }
        return "\(name)=\"\(escaped)\""
    }
    return "{" + pairs.joined(separator: ",") + "}"
}

private func formatSample(_ value: Double) -> String {
    if value.isNaN { return "NaN" }
    if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
    if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
    return "\(value)"
}
