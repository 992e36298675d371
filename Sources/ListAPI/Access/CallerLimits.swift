import Synchronization

/// How many streams and long-polls one caller may hold open at once
/// (`--max-waits-per-caller`): a signed token's subject, or the address of a
/// caller without a token. Over it, a new one is 429 with a `Retry-After`
/// jittered so a crowd turned away together does not come back together.
///
/// Static tokens are not counted: they belong to the operator's own services
/// (the connection limit bounds them), and neither is loopback without a
/// token: every local process shares one address there.
final class CallerLimits: Sendable {
    /// The most a caller may hold; 0 turns the limit off.
    let maximum: Int
    private let held = Mutex<[String: Int]>([:])

    init(maximum: Int) {
        self.maximum = maximum
    }

    /// The key `caller`'s waits count under, or nil when they are not counted.
    func key(of caller: Caller) -> String? {
        guard maximum > 0 else { return nil }
        switch caller.kind {
        case .signed: return caller.limitKey
        case .open: return caller.isLoopback ? nil : caller.limitKey
        case .writeToken, .readToken: return nil
        }
    }

    /// Takes one of `key`'s places; false when all are taken.
    func acquire(_ key: String) -> Bool {
        held.withLock { held in
            let count = held[key, default: 0]
            guard count < maximum else { return false }
            held[key] = count + 1
            return true
        }
    }

    /// Gives back one of `key`'s places.
    func release(_ key: String) {
        held.withLock { held in
            let count = held[key, default: 0]
            if count <= 1 { held[key] = nil } else { held[key] = count - 1 }
        }
    }

    /// How many places `key` holds (for tests and metrics).
    func holding(_ key: String) -> Int { held.withLock { $0[key, default: 0] } }

    /// The 429 for a caller at its limit, with `Retry-After` between 1 and 10
    /// seconds at random.
    func refusal() -> Problem {
        var problem = Problem(
            slug: "too-many-waits", title: "Too many open streams and long-polls", status: 429,
            detail:
                "this caller already holds \(maximum) event streams and long-polls, the most allowed at once; "
                + "close one, or follow several lists in one (POST /changes, GET /events?lists=)")
        problem.headers = [("Retry-After", String(Int.random(in: 1...10)))]
        return problem
    }
}
