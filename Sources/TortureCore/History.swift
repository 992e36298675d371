import Synchronization

/// What happened to each list, and the faults, kept so that a violation can be
/// printed with the history that shows it.
///
/// Every event is recorded with its time (``Ledger/now``): writes sent,
/// acknowledged and lost (the writers), answers applied (the followers), and the
/// faults' starts and ends. When the first violation is found, the history that
/// shows it is cut from these: the events of the list it concerns (and of the
/// follower that saw it) in the `window` seconds before, with every fault that
/// overlapped that window. Most of a run's history concerns other lists, other
/// followers and other times; what is left is usually a few dozen lines.
public final class History: Sendable {
    /// One event: when, which list (nil for a fault), who (a writer or follower), what.
    public struct Event: Sendable, Equatable {
        public var time: Double
        public var list: String?
        public var actor: String
        public var text: String

        public var line: String {
            let tenths = (time * 10).rounded() / 10
            return "t+\(tenths)s \(actor): \(text)"
        }
    }

    /// Events kept per list (the oldest dropped first).
    let capacity: Int
    /// How many seconds before a violation its history reaches back.
    let window: Double
    private let perList = Mutex<[String: [Event]]>([:])
    private let faults = Mutex<[(start: Double, end: Double, text: String)]>([])

    public init(capacity: Int = 8_192, window: Double = 10) {
        self.capacity = capacity
        self.window = window
    }

    /// Records an event of `list`.
    public func record(_ list: String, at time: Double, actor: String, _ text: String) {
        perList.withLock { lists in
            var events = lists[list, default: []]
            if events.count >= capacity { events.removeFirst(capacity / 2) }
            events.append(Event(time: time, list: list, actor: actor, text: text))
            lists[list] = events
        }
    }

    /// Records a fault that lasted from `start` to `end` (equal for an instantaneous one).
    public func fault(_ text: String, from start: Double, to end: Double) {
        faults.withLock { $0.append((start, end, text)) }
    }

    /// The lists events were recorded for.
    public var lists: Set<String> { perList.withLock { Set($0.keys) } }

    /// The history that shows a violation at `time` described by `message`: the
    /// events of the list the message names (a whole word) in the window before
    /// `time`, those of the actor the message starts with (`"<actor>: …"`) on
    /// any list, and the faults that overlapped the window, in time order; the
    /// last `limit` of them. Empty when the message names no recorded list.
    public func witness(of message: String, at time: Double, limit: Int = 60) -> [String] {
        let known = lists
        let words = message.split { !($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }.map(String.init)
        guard let list = words.first(where: known.contains) else { return [] }
        let actor = message.split(separator: ":", maxSplits: 1).first.map(String.init)
        let from = time - window
        let events = perList.withLock { lists in
            lists.values.flatMap { events in
                events.filter { event in
                    event.time >= from && event.time <= time && (event.list == list || event.actor == actor)
                }
            }
        }
        let overlapping = faults.withLock { all in
            all.filter { $0.start <= time && $0.end >= from }.map {
                Event(time: $0.start, list: nil, actor: "fault", text: $0.text)
            }
        }
        let all = (events + overlapping).sorted { $0.time < $1.time }
        return all.suffix(limit).map(\.line)
    }
}
