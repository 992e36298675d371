import Foundation
import JSON
import ListModel

// What a view asks of one item, each answer from the item's model alone, so a
// live engine that keeps a view by these gives what `evaluate` gives.

extension ViewSpec {
    /// Whether an item with this model is in the view (before any window):
    /// every condition holds and, with `q`, some string in the model holds it.
    ///
    /// Exactly the item query's test: a condition holds when the value at
    /// its path has the condition value's canonical text (`1.0` is `1`, a
    /// missing path never holds, not even for `null`); `q` is a
    /// case-insensitive substring (Foundation's `.caseInsensitive`) of any
    /// string value, at any depth, keys not included.
    /// - Complexity: O(c · k log m) for c conditions of k components; with
    ///   `q`, O(size of the model).
    public func matches(_ model: JSONValue) -> Bool {
        for condition in conditions {
            guard let found = model.value(atPath: condition.path), found == condition.value else { return false }
        }
        if let text { return Self.containsString(model, text) }
        return true
    }

    /// ``matches(_:)-(JSONValue)`` for a stored model.
    /// - Throws: `ModelError` when the model's text does not parse.
    public func matches(_ model: Model) throws(ModelError) -> Bool {
        if conditions.isEmpty && text == nil { return true }
        return matches(try model.jsonValue())
    }

    /// The group (the section) an item with this model is in: the value at
    /// the ``group`` path, `null` when missing; `nil` when the view has no group.
    public func groupValue(of model: JSONValue) -> JSONValue? {
        group.map { model.value(atPath: $0) ?? .null }
    }

    /// The value an item with this model is ordered by: the value at the
    /// ``order`` path, `null` when missing (the two are the same in the
    /// order); `nil` when the view has no order.
    public func orderValue(of model: JSONValue) -> JSONValue? {
        order.map { model.value(atPath: $0.path) ?? .null }
    }

    /// The id of the view section of a group: the value's canonical JSON
    /// text (`"open"` with its quotes, `3`, `null`). Not an `Identifier`.
    public static func sectionID(ofGroup value: JSONValue) -> String {
        value.canonicalText
    }

    /// The model of the view section of a group: `{"value": v}`.
    public static func sectionModel(ofGroup value: JSONValue) -> Model {
        Model(.object(["value": value]))
    }

    /// Whether any string value in `value` contains `text`, ignoring case:
    /// `q`'s test, for views and for the store's item queries alike.
    public static func containsString(_ value: JSONValue, _ text: String) -> Bool {
        switch value {
        case .string(let string):
            return string.range(of: text, options: .caseInsensitive) != nil
        case .array(let elements):
            return elements.contains { containsString($0, text) }
        case .object(let members):
            return members.contains { containsString($0.value, text) }
        default:
            return false
        }
    }
}
