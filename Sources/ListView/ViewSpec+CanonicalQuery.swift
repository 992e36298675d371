extension ViewSpec {
    /// The canonical query of these parts (see ``canonicalQuery``); the conditions already sorted and unique.
    static func canonicalQuery(
        conditions: [Condition], text: String?, order: Order?, group: [String]?, limit: Int?
    ) -> String {
        var pairs: [String] = conditions.map { "where=" + percentEncode($0.text) }
        if let text { pairs.append("q=" + percentEncode(text)) }
        if let order {
            pairs.append("order=" + (order.descending ? "-" : "") + percentEncode(order.path.joined(separator: ".")))
        }
        if let group { pairs.append("group=" + percentEncode(group.joined(separator: "."))) }
        if let limit { pairs.append("limit=\(limit)") }
        return pairs.joined(separator: "&")
    }

    /// `text` with every UTF-8 byte outside `A-Z a-z 0-9 - . _ ~` as `%XX` (upper-case hex).
    static func percentEncode(_ text: String) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(text.utf8.count)
        let hex = Array("0123456789ABCDEF".utf8)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                output.append(byte)
            default:
                output.append(UInt8(ascii: "%"))
                output.append(hex[Int(byte >> 4)])
                output.append(hex[Int(byte & 15)])
            }
        }
        return String(decoding: output, as: UTF8.self)
    }
}
