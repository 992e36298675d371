/// Re-indents JSON text for people: two spaces per level, one member or element
/// per line, `": "` after keys, empty `{}` and `[]` kept on one line, no trailing
/// newline.
///
/// Used for `?pretty` responses built as compact text. It only moves white space
/// outside strings, so it never changes a value; given text that is not JSON it
/// still returns without trapping, though the result is unspecified.
///
/// - Complexity: O(n).
public func prettyPrinted(_ compactJSON: some Collection<UInt8>) -> [UInt8] {
    if let result = compactJSON.withContiguousStorageIfAvailable({ prettyPrinted(buffer: $0) }) {
        return result
    }
    return Array(compactJSON).withUnsafeBufferPointer { prettyPrinted(buffer: $0) }
}

private func prettyPrinted(buffer input: UnsafeBufferPointer<UInt8>) -> [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(input.count * 2)
    var level = 0

    func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
    }
    func newline(_ out: inout [UInt8], _ level: Int) {
        out.append(UInt8(ascii: "\n"))
        for _ in 0..<max(level, 0) {
            out.append(UInt8(ascii: " "))
            out.append(UInt8(ascii: " "))
        }
    }

    var index = 0
    let count = input.count
    while index < count {
        let byte = input[index]
        switch byte {
        case UInt8(ascii: "\""):
            // Copy the whole string, stepping over escapes so `\"` does not end it.
            var end = index + 1
            while end < count && input[end] != UInt8(ascii: "\"") {
                end += input[end] == UInt8(ascii: "\\") ? 2 : 1
            }
            end = min(end + 1, count)
            out.append(contentsOf: UnsafeBufferPointer(rebasing: input[index..<end]))
            index = end
            continue
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var next = index + 1
            while next < count && isWhitespace(input[next]) { next += 1 }
            let close = byte == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]")
            out.append(byte)
            if next < count && input[next] == close {
                out.append(close)
                index = next + 1
                continue
            }
            level += 1
            newline(&out, level)
        case UInt8(ascii: "}"), UInt8(ascii: "]"):
            level -= 1
            newline(&out, level)
            out.append(byte)
        case UInt8(ascii: ","):
            out.append(byte)
            newline(&out, level)
        case UInt8(ascii: ":"):
            out.append(byte)
            out.append(UInt8(ascii: " "))
        default:
            if !isWhitespace(byte) { out.append(byte) }
        }
        index += 1
    }
    return out
}
