/// Percent-decoding of URI components (RFC 3986, section 2.1).
enum PercentDecoding {
    /// Decodes `%XX` escapes (and `+` as space when asked); a malformed escape is kept literally
    /// and invalid UTF-8 becomes U+FFFD. For query strings, which are data, not routing.
    static func decodeLenient<Bytes: Collection<UInt8>>(_ bytes: Bytes, plusAsSpace: Bool) -> String {
        if !bytes.contains(where: { $0 == UInt8(ascii: "%") || (plusAsSpace && $0 == UInt8(ascii: "+")) }) {
            return String(decoding: bytes, as: UTF8.self)
        }
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%"),
                let first = bytes.index(index, offsetBy: 1, limitedBy: bytes.endIndex), first < bytes.endIndex,
                let second = bytes.index(first, offsetBy: 1, limitedBy: bytes.endIndex), second < bytes.endIndex,
                let high = ASCII.hexValue(bytes[first]), let low = ASCII.hexValue(bytes[second])
            {
                output.append(high << 4 | low)
                index = bytes.index(after: second)
                continue
            }
            output.append(plusAsSpace && byte == UInt8(ascii: "+") ? ASCII.space : byte)
            index = bytes.index(after: index)
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Decodes `%XX` escapes strictly: nil for a malformed escape or for bytes that are not
    /// valid UTF-8, so two different raw paths never decode to the same parameter by accident.
    static func decodeStrict<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> String? {
        if !bytes.contains(UInt8(ascii: "%")) {
            return String(validating: bytes, as: UTF8.self)
        }
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            index = bytes.index(after: index)
            guard byte == UInt8(ascii: "%") else {
                output.append(byte)
                continue
            }
            guard index < bytes.endIndex, let high = ASCII.hexValue(bytes[index]) else { return nil }
            index = bytes.index(after: index)
            guard index < bytes.endIndex, let low = ASCII.hexValue(bytes[index]) else { return nil }
            index = bytes.index(after: index)
            output.append(high << 4 | low)
        }
        return String(validating: output, as: UTF8.self)
    }
}
