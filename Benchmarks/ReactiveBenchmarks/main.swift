// Throughput of ReactiveCore's hot paths: PublishSubject fan-out and an operator chain.
//
//   swift run -c release ReactiveBenchmarks            all scenarios, a table on stdout
//   ReactiveBenchmarks probe SCENARIO EVENTS            run one scenario only, for valgrind
//
// See README.md for how allocations per event are measured.
import ReactiveCore

/// A running total that keeps the optimizer from deleting the work.
///
/// Touched only by the benchmark's single emitting thread (delivery is synchronous).
final class Accumulator: @unchecked Sendable {
    // Protected by confinement to the emitting thread (see type doc).
    var total = 0
}

struct Scenario {
    let name: String
    let subscribers: Int
    let chain: Bool

    /// Builds the subject and its subscriptions, returns the subject to emit into.
    func setUp(_ accumulator: Accumulator) -> (PublishSubject<Int>, [any Disposable]) {
        let subject = PublishSubject<Int>()
        var subscriptions: [any Disposable] = []
        for _ in 0..<subscribers {
            let source: Observable<Int> =
                chain
                ? subject.map { $0 &+ 1 }.filter { $0 >= 0 }.map { $0 &* 3 }.filter { $0 != -1 }.map { $0 &- 1 }
                : subject.asObservable()
            subscriptions.append(source.subscribe(onNext: { accumulator.total &+= $0 }))
        }
        return (subject, subscriptions)
    }
}

let scenarios = [
    Scenario(name: "publish-1", subscribers: 1, chain: false),
    Scenario(name: "publish-100", subscribers: 100, chain: false),
    Scenario(name: "publish-10000", subscribers: 10_000, chain: false),
    Scenario(name: "chain-5", subscribers: 1, chain: true),
]

func run(_ scenario: Scenario, events: Int) -> Duration {
    let accumulator = Accumulator()
    let (subject, subscriptions) = scenario.setUp(accumulator)
    let clock = ContinuousClock()
    let elapsed = clock.measure {
        for value in 0..<events { subject.onNext(value) }
    }
    for subscription in subscriptions { subscription.dispose() }
    if accumulator.total == 42 { print("") }  // keeps the total observable
    return elapsed
}

func pad(_ text: String, _ width: Int) -> String {
    text + String(repeating: " ", count: max(1, width - text.count))
}

func seconds(_ duration: Duration) -> Double {
    let (whole, attoseconds) = duration.components
    return Double(whole) + Double(attoseconds) / 1e18
}

let arguments = CommandLine.arguments
if arguments.count == 4, arguments[1] == "probe", let events = Int(arguments[3]),
    let scenario = scenarios.first(where: { $0.name == arguments[2] })
{
    _ = run(scenario, events: events)
} else {
    // About five million deliveries per scenario; best of three runs.
    print("scenario        subscribers   events     events/s       deliveries/s   ns/delivery")
    for scenario in scenarios {
        let events = max(500, 5_000_000 / scenario.subscribers)
        _ = run(scenario, events: events / 10)
        let best = (0..<3).map { _ in seconds(run(scenario, events: events)) }.min() ?? 0
        let deliveries = Double(events * scenario.subscribers)
        let eventsPerSecond = Int(Double(events) / best)
        let deliveriesPerSecond = Int(deliveries / best)
        let nanoseconds = (best / deliveries * 1e10).rounded() / 10
        var line = pad(scenario.name, 16)
        line += pad(String(scenario.subscribers), 14)
        line += pad(String(events), 11)
        line += pad(String(eventsPerSecond), 15)
        line += pad(String(deliveriesPerSecond), 15)
        line += String(nanoseconds)
        print(line)
    }
}
