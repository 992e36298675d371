import JSON
import ListWire

/// What a writer expects of one of its payloads in the final state.
public enum Expectation: Sendable, Equatable {
    /// Present exactly once, with this model (canonical JSON text).
    case present(model: String)
    /// Absent (never committed, or deleted by an acknowledged write).
    case absent
    /// Present at most once (an answer was lost: it may or may not have committed).
    case uncertain
}

/// The checks of the final state against what writers were told.
public enum FinalCheck {
    /// The payload token of an item, `model.p`, if it has one.
    public static func token(_ entry: JSONEntry) -> String? {
        guard
            let model = try? JSONValue(
                parsing: entry.model.text, limits: JSONLimits(maxDepth: 1_024, maxBytes: 1 << 30))
        else { return nil }
        return model["p"]?.stringValue
    }

    /// Every payload in `lists` is one a writer sent, at most once; every
    /// acknowledged one is present exactly once with its last acknowledged model,
    /// and every acknowledged delete is absent.
    public static func check(expected: [String: Expectation], lists: [ListState], ledger: Ledger) {
        var found: [String: [(list: String, id: String, model: String)]] = [:]
        for list in lists {
            for section in list.sections {
                for item in section.items {
                    guard let token = token(item) else {
                        ledger.violated(.readsValid, "\(list.id): item \(item.id) has no payload: \(item.model.text)")
                        continue
                    }
                    found[token, default: []].append((list.id, item.id, item.model.text))
                }
            }
        }
        for (token, places) in found where expected[token] == nil {
            ledger.violated(.readsValid, "payload \(token) was never written but is at \(places.map(\.id))")
        }
        for (token, expectation) in expected {
            let places = found[token] ?? []
            switch expectation {
            case .present(let model):
                if places.count != 1 {
                    ledger.violated(
                        .ackedWritesExactlyOnce,
                        "acknowledged payload \(token) is in the final state \(places.count) times \(places.map(\.id))")
                } else if places[0].model != model {
                    ledger.violated(
                        .ackedWritesExactlyOnce,
                        "acknowledged payload \(token) has model \(places[0].model), the last acknowledged was \(model)"
                    )
                } else {
                    ledger.passed(.ackedWritesExactlyOnce)
                }
            case .absent:
                ledger.check(
                    .ackedWritesExactlyOnce, places.isEmpty,
                    "payload \(token), deleted or never committed, is in the final state at \(places.map(\.id))")
            case .uncertain:
                ledger.check(
                    .ackedWritesExactlyOnce, places.count <= 1,
                    "payload \(token) (answer lost) is in the final state \(places.count) times")
            }
        }
    }
}
