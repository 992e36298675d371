import JSON
import ListModel
import ListStore
import ListView
import ListWire
import SectionDiff

/// One view of one list at one version: its members (the items that match)
/// in the view's order, and the list's sections. Built once from the list's
/// rows (``init(view:rows:)``), then moved forward by what each span of
/// versions touched (``advance(by:)``), and able to show itself as it was at
/// an earlier version in history (``sections(before:)``), so a view's answer costs
/// what changed since the version asked about plus the view's own size, not
/// the list's.
///
/// A member's place is its ``ViewKey``: bytewise order is the view's order
/// (group value, then the order value or the list position, then the id).
/// An untouched item keeps its model and its position key, so its key only
/// changes when its section's key does (and only in views whose keys hold the
/// list position).
struct ViewState: Sendable {
    struct Member: Sendable {
        var key: ViewKey
        var row: ItemRow
        var group: JSONValue?
    }

    let view: ViewSpec
    private(set) var head: ListHead
    private(set) var name: String
    /// Every section of the list, by id.
    private(set) var sections: [Identifier: SectionRow]
    /// The members, by id.
    private(set) var members: [Identifier: Member]
    /// The members' keys, in order (an order-statistics set: O(log m) to insert or remove).
    private(set) var ordered: ViewMembers
    /// Member ids by key.
    private(set) var ids: [ViewKey: Identifier]
    /// The list's section ids in the list's order.
    private(set) var sortedSectionIDs: [Identifier]
    /// Roughly the bytes this state holds (for the views' memory budget), kept as members come and go.
    private(set) var approximateBytes: Int
    /// How many rows building it read: beyond a few times as many versions
    /// behind, building it again is cheaper than reading what they touched.
    let buildRows: Int

    /// Whether the members' keys hold their section's position (else a
    /// section's move changes no key).
    var keysHoldSections: Bool { view.group == nil || view.order == nil }

    /// The view of `rows` (which may hold items that do not match: they are left out).
    /// - Throws: `invalidModel` when a stored model does not parse.
    /// - Complexity: O(m log m) for m candidate rows.
    init(view: ViewSpec, rows: ViewRows) throws(StoreError) {
        self.view = view
        head = rows.head
        name = rows.name
        buildRows = rows.items.count + rows.sections.count
        sections = Dictionary(rows.sections.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        sortedSectionIDs = Self.sortedIDs(sections)
        members = [:]
        ids = [:]
        var keyed: [(ViewKey, Identifier)] = []
        for row in rows.items {
            guard let member = try Self.member(row, of: view, sections: sections) else { continue }
            members[row.id] = member
            keyed.append((member.key, row.id))
        }
        keyed.sort { $0.0 < $1.0 }
        ordered = ViewMembers(sorted: keyed.map(\.0))
        ids = Dictionary(keyed.map { ($0.0, $0.1) }, uniquingKeysWith: { first, _ in first })
        approximateBytes = 512 + sections.count * 96
        for member in members.values { approximateBytes += Self.bytes(of: member) }
    }

    /// The ids of `sections` in the list's order.
    private static func sortedIDs(_ sections: [Identifier: SectionRow]) -> [Identifier] {
        sections.values.sorted { ($0.key, $0.id.rawValue) < ($1.key, $1.id.rawValue) }.map(\.id)
    }

    private static func bytes(of member: Member) -> Int {
        200 + member.key.bytes.count * 2 + member.row.model.byteCount
    }

    /// `row` as a member of `view`, or nil when it does not match (or its section is unknown).
    static func member(_ row: ItemRow, of view: ViewSpec, sections: [Identifier: SectionRow])
        throws(StoreError) -> Member?
    {
        guard let section = sections[row.section] else { return nil }
        let value: JSONValue
        do {
            value = try row.model.jsonValue()
        } catch {
            throw StoreError(.invalidModel, "item \"\(row.id)\": its stored model does not parse: \(error.detail)")
        }
        guard view.matches(value) else { return nil }
        let key = view.key(of: value, id: row.id, at: ListPosition(section: section.key, item: row.key))
        return Member(key: key, row: row, group: view.group == nil ? nil : view.groupValue(of: value) ?? .null)
    }

    /// Moves the view to the end of `span`, which must start at or before this
    /// state's version and be of its epoch: every touched section and item
    /// takes its state at the span's end. A span that starts before this
    /// state's version names what it made and deleted again (no row at either
    /// end): this state may hold such an item, made after the span's start.
    /// (Without them, an item inserted at V+1 and deleted at V+5 stayed in a
    /// view kept at V+2 and moved on by the span from V: every later answer
    /// of that view was computed from a state that was not the list's.)
    /// - Complexity: O(k log m + r) for k touched entities and r members of
    ///   sections whose key changed.
    mutating func advance(by span: TouchedSpan) throws(StoreError) {
        var moved: Set<Identifier> = []
        for (id, change) in span.sections {
            let old = sections[id]
            if let after = change.after {
                sections[id] = after
                if let old, old.key != after.key { moved.insert(id) }
            } else {
                sections[id] = nil
            }
        }
        var visit = Set(span.items.keys)
        if keysHoldSections, !moved.isEmpty {
            for (id, member) in members where moved.contains(member.row.section) { visit.insert(id) }
        }
        for id in visit {
            let row = span.items[id].map(\.after) ?? members[id]?.row
            remove(id)
            guard let row, let member = try Self.member(row, of: view, sections: sections) else { continue }
            insert(member)
        }
        if !span.sections.isEmpty { sortedSectionIDs = Self.sortedIDs(sections) }
        // Items of a deleted section were deleted with it (and are in the span).
        head = span.head
        name = span.name
    }

    /// Whether moving forward from this state to `version` (reading at least
    /// one history row per version between) would cost more than building
    /// the view again from its candidate rows.
    func isCheaperToRebuild(than version: Int64) -> Bool {
        version - head.version > Int64(max(1_000, 4 * buildRows))
    }

    /// Takes this state as the view at `version`, known (by who asks) to be
    /// the same as at this state's version: the commits between left it alone.
    mutating func assume(version: Int64) {
        guard version > head.version else { return }
        head = ListHead(id: head.id, epoch: head.epoch, version: version)
    }

    private mutating func remove(_ id: Identifier) {
        guard let member = members.removeValue(forKey: id) else { return }
        ids[member.key] = nil
        _ = ordered.remove(member.key)
        approximateBytes -= Self.bytes(of: member)
    }

    private mutating func insert(_ member: Member) {
        members[member.row.id] = member
        ids[member.key] = member.row.id
        _ = ordered.insert(member.key)
        approximateBytes += Self.bytes(of: member)
    }

    /// The view's sections as they were at `span.from`, where `span` is what
    /// was touched from then to this state's version: each touched entity back
    /// in its state then, untouched ones as they are (same model, same keys,
    /// so the same order among themselves).
    /// - Complexity: O(w + k log k) for a window of w members (all m without
    ///   `limit`) and k touched entities; O(m log m) when a section whose
    ///   position the keys hold has moved since.
    func sections(before span: TouchedSpan) throws(StoreError) -> ListSections {
        var oldSections = sections
        var moved: Set<Identifier> = []
        for (id, change) in span.sections {
            if let before = change.before {
                if let now = sections[id], now.key != before.key { moved.insert(id) }
                oldSections[id] = before
            } else {
                oldSections[id] = nil
            }
        }
        var touched: [Member] = []
        for (_, change) in span.items {
            guard let before = change.before, let member = try Self.member(before, of: view, sections: oldSections)
            else { continue }
            touched.append(member)
        }
        touched.sort { $0.key < $1.key }
        let limit = view.limit ?? Int.max
        var window: [Member] = []
        if keysHoldSections, !moved.isEmpty {
            // Members of a moved section change places as a block: key them as they were and sort.
            var all = touched
            for index in 0..<ordered.count {
                guard let key = ordered.key(atRank: index), let id = ids[key], span.items[id] == nil,
                    let member = members[id]
                else { continue }
                if moved.contains(member.row.section) {
                    if let rekeyed = try Self.member(member.row, of: view, sections: oldSections) {
                        all.append(rekeyed)
                    }
                } else {
                    all.append(member)
                }
            }
            all.sort { $0.key < $1.key }
            window = Array(all.prefix(limit))
        } else {
            // Untouched members in their order, merged with the touched ones as they were.
            var rank = 0
            var next = 0
            func nextUntouched() -> Member? {
                while rank < ordered.count {
                    defer { rank += 1 }
                    guard let key = ordered.key(atRank: rank), let id = ids[key], span.items[id] == nil else {
                        continue
                    }
                    return members[id]
                }
                return nil
            }
            var pending = nextUntouched()
            while window.count < limit {
                if let candidate = pending, next == touched.count || candidate.key < touched[next].key {
                    window.append(candidate)
                    pending = nextUntouched()
                } else if next < touched.count {
                    window.append(touched[next])
                    next += 1
                } else {
                    break
                }
            }
        }
        return Self.sections(of: window, view: view, sections: oldSections)
    }

    /// The view's sections now, in the diff engine's and the wire's shape.
    /// - Complexity: O(w log m + s log s) for a window of w members and s sections.
    var viewSections: ListSections {
        let count = min(view.limit ?? Int.max, ordered.count)
        var window: [Member] = []
        window.reserveCapacity(count)
        for rank in 0..<count {
            guard let key = ordered.key(atRank: rank), let id = ids[key], let member = members[id] else { continue }
            window.append(member)
        }
        return Self.sections(of: window, view: view, sections: sections)
    }

    /// A window's members (in order) as the view's sections: with `group`, one
    /// section per group value among them; else the list's sections in order,
    /// each with its members.
    private static func sections(of window: [Member], view: ViewSpec, sections: [Identifier: SectionRow])
        -> ListSections
    {
        func entry(_ member: Member) -> JSONEntry {
            JSONEntry(id: member.row.id.rawValue, model: JSONText(member.row.model.canonicalText))
        }
        if view.group != nil {
            var result: ListSections = []
            var current: JSONValue?
            for member in window {
                let value = member.group ?? .null
                if current != value {
                    let model = ViewSpec.sectionModel(ofGroup: value)
                    result.append(
                        ArraySection(
                            model: JSONEntry(
                                id: ViewSpec.sectionID(ofGroup: value), model: JSONText(model.canonicalText)),
                            items: []))
                    current = value
                }
                result[result.count - 1].items.append(entry(member))
            }
            return result
        }
        let sorted = sections.values.sorted { ($0.key, $0.id.rawValue) < ($1.key, $1.id.rawValue) }
        var place: [Identifier: Int] = [:]
        var result: ListSections = []
        result.reserveCapacity(sorted.count)
        for section in sorted {
            place[section.id] = result.count
            result.append(
                ArraySection(
                    model: JSONEntry(id: section.id.rawValue, model: JSONText(section.model.canonicalText)), items: []))
        }
        for member in window {
            guard let index = place[member.row.section] else { continue }
            result[index].items.append(entry(member))
        }
        return result
    }
}
