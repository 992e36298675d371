import JSON

extension ViewSpec {
    /// The view named by a request's query items (already percent-decoded);
    /// items that are not view parameters (``isViewParameter(_:)``) are left
    /// for the route to judge.
    ///
    /// - `where=path:value`, any number: ``Condition/init(parsing:)``.
    /// - `q=text`: an empty `q` is no filter, as in item queries.
    /// - `order=path`, `order=-path`: descending with a leading `-`.
    /// - `group=path`.
    /// - `limit=N`: decimal digits only, 1...``maxLimit``.
    ///
    /// A path is split on `.` (an array index as decimal text, as in `tags.0`).
    /// - Throws: ``ViewSpecError`` naming the first parameter at fault: a
    ///   malformed value, or `q`, `order`, `group` or `limit` given twice.
    public init(queryItems: some Sequence<(name: String, value: String)>) throws(ViewSpecError) {
        var conditions: [Condition] = []
        var text: String?
        var order: Order?
        var group: [String]?
        var limit: Int?
        var seen: Set<String> = []
        for (name, value) in queryItems {
            guard Self.isViewParameter(name) else { continue }
            if name != "where" {
                guard seen.insert(name).inserted else {
                    throw ViewSpecError(
                        parameter: name, detail: "\(name) is given more than once; a view takes one \(name)")
                }
            }
            switch name {
            case "where": conditions.append(try Condition(parsing: value))
            case "q": text = value
            case "order": order = try Self.order(value)
            case "group": group = try Self.path(value, of: "group", example: "group=status")
            default: limit = try Self.limit(value)
            }
        }
        self.init(checked: conditions, text: text, order: order, group: group, limit: limit)
    }

    /// The view named by a query string, as in `POST /changes`'s
    /// `"view": "where=done:false&order=due"`.
    ///
    /// The string is split on `&` (empty pairs skipped, as in a URL), each pair
    /// at its first `=` (a pair without one has an empty value), and names and
    /// values are percent-decoded strictly: a `%` not followed by two hex
    /// digits, or bytes that are not UTF-8, are an error, not kept as they
    /// are. `+` is a space, as listd reads the query of a URL (so a view
    /// string built with JavaScript's `URLSearchParams` means the same in a
    /// body as in a URL); write a plus sign `%2B`. Every name must be a view
    /// parameter: the string names a view and nothing else.
    /// - Throws: ``ViewSpecError``: for the string as a whole (`view`), or as
    ///   ``init(queryItems:)`` throws.
    public init(parsing query: String) throws(ViewSpecError) {
        let items = try Self.decodeQuery(query)
        if let unknown = items.first(where: { !Self.isViewParameter($0.name) }) {
            throw ViewSpecError(
                parameter: "view",
                detail:
                    "view has an unknown parameter \(ViewSpecError.quoted(unknown.name)); a view takes "
                    + "where, q, order, group and limit")
        }
        try self.init(queryItems: items)
    }

    /// The pairs of a query string, decoded as ``init(parsing:)`` says.
    /// - Throws: ``ViewSpecError`` (`view`) for a malformed percent-encoding or bytes that are not UTF-8.
    public static func decodeQuery(_ query: String) throws(ViewSpecError) -> [(name: String, value: String)] {
        var items: [(name: String, value: String)] = []
        for pair in query.utf8.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            let equals = pair.firstIndex(of: UInt8(ascii: "="))
            let name = pair[..<(equals ?? pair.endIndex)]
            let value = equals.map { pair[pair.index(after: $0)...] } ?? pair[pair.endIndex...]
            guard let decodedName = percentDecode(name), let decodedValue = percentDecode(value) else {
                throw ViewSpecError(
                    parameter: "view",
                    detail:
                        "view has a malformed percent-encoding (a % not followed by two hex digits, or "
                        + "bytes that are not UTF-8) in \(ViewSpecError.quoted(String(decoding: pair, as: UTF8.self)))")
            }
            items.append((decodedName, decodedValue))
        }
        return items
    }

    /// `%XX` decoded and `+` read as a space; `nil` for a malformed escape or bytes that are not UTF-8.
    static func percentDecode(_ bytes: Substring.UTF8View.SubSequence) -> String? {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            index = bytes.index(after: index)
            guard byte == UInt8(ascii: "%") else {
                output.append(byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
                continue
            }
            guard index < bytes.endIndex, let high = hexValue(bytes[index]) else { return nil }
            index = bytes.index(after: index)
            guard index < bytes.endIndex, let low = hexValue(bytes[index]) else { return nil }
            index = bytes.index(after: index)
            output.append(high << 4 | low)
        }
        return String(validating: output, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// `order=path` or `order=-path`.
    static func order(_ text: String) throws(ViewSpecError) -> Order {
        let descending = text.utf8.first == UInt8(ascii: "-")
        let rest = descending ? String(text.dropFirst()) : text
        let path = try path(rest, of: "order", example: "order=due or order=-due", whole: text)
        return Order(validPath: path, descending: descending)
    }

    /// A dot-separated path with no empty component.
    static func path(_ text: String, of parameter: String, example: String, whole: String? = nil) throws(ViewSpecError)
        -> [String]
    {
        guard !text.isEmpty else {
            throw ViewSpecError(
                parameter: parameter,
                detail: "\(parameter) needs a field path, as in \(example); got \(ViewSpecError.quoted(whole ?? text))")
        }
        let path = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard !path.contains(where: \.isEmpty) else {
            throw ViewSpecError(
                parameter: parameter,
                detail: "\(parameter) has an empty field name in \(ViewSpecError.quoted(whole ?? text))")
        }
        return path
    }

    /// `limit=N`: decimal digits only (no sign, no spaces), 1...maxLimit.
    static func limit(_ text: String) throws(ViewSpecError) -> Int {
        let digits = text.utf8
        guard !digits.isEmpty, digits.count <= 9, digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
            let value = Int(text), (1...maxLimit).contains(value)
        else {
            throw ViewSpecError(
                parameter: "limit",
                detail: "limit must be an integer from 1 to \(maxLimit); got \(ViewSpecError.quoted(text))")
        }
        return value
    }
}

extension ViewSpec.Condition {
    /// Parses the `path:value` of a `where` parameter, exactly as item queries do.
    ///
    /// The path is the text before the first `:`, split on `.`; the value is
    /// the rest, read as JSON when it is a JSON scalar literal of at most 4,096
    /// bytes (`false`, `3`, `null`, `"3"`) and as a string otherwise (`open`,
    /// `[1]`).
    /// - Throws: ``ViewSpecError`` (`where`) for a missing `:` or an empty field name.
    public init(parsing text: String) throws(ViewSpecError) {
        guard let colon = text.firstIndex(of: ":") else {
            throw ViewSpecError(
                parameter: "where",
                detail: "where must be path:value, as in where=done:false; got \(ViewSpecError.quoted(text))")
        }
        let path = text[..<colon].split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard !path.isEmpty, !path.contains(where: \.isEmpty) else {
            throw ViewSpecError(
                parameter: "where", detail: "where has an empty field name in \(ViewSpecError.quoted(text))")
        }
        self.init(validPath: path, value: Self.value(reading: String(text[text.index(after: colon)...])))
    }

    /// The most bytes of a `where` value read as a JSON literal.
    static let literalLimits = JSONLimits(maxDepth: 1, maxBytes: 4096)

    /// A `where` value's text as its value: a JSON scalar literal, else the text as a string.
    static func value(reading raw: String) -> JSONValue {
        if let parsed = try? JSONValue(parsing: raw, limits: literalLimits), parsed.arrayValue == nil,
            parsed.objectValue == nil
        {
            return parsed
        }
        return .string(raw)
    }

    /// The value as `where=` writes it: a string bare when it reads back as
    /// itself, otherwise (and every other value) as canonical JSON.
    var valueText: String {
        if case .string(let string) = value, case .string(let read) = Self.value(reading: string),
            read.utf8.elementsEqual(string.utf8)
        {
            return string
        }
        return value.canonicalText
    }

    /// `path:value`, before percent-encoding.
    var text: String { path.joined(separator: ".") + ":" + valueText }
}
