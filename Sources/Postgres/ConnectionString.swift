import Foundation

/// What libpq is given to connect (a `postgres://` URL or `key=value`
/// conninfo), made safe to print: every secret in it becomes `***`.
///
/// A parameter is a secret when its name contains `password`, in any case
/// (`password`, `sslpassword`, `PassWord`…), and so is a URL's userinfo
/// password. Both of libpq's forms are read:
/// - URLs: `postgres://user:secret@host/db?password=secret&sslpassword=secret`
///   (or `postgresql://`), names and values percent-encoded or not, repeated
///   or not;
/// - conninfo: `host=h password=secret sslpassword='a b\' c'`, values bare or
///   single-quoted with backslash escapes, spaces allowed around `=`; a value
///   that is itself a URL (`dbname=postgres://…`) is redacted as one.
///
/// Text that is neither is printed as it is, except that a run that looks like
/// a password parameter is still hidden. libpq's own messages may quote part
/// of the connection string (an invalid percent-encoded token quotes the
/// whole value it was decoding), so ``scrub(_:secretsOf:)`` hides every
/// secret of a connection string wherever it appears in another text.
public enum ConnectionString {
    /// The mask every secret is printed as.
    public static let mask = "***"

    /// `text` with every secret replaced by `***`; everything else as it was.
    public static func redacted(_ text: String) -> String {
        if isURL(text) { return redactedURL(text) }
        return redactedConninfo(text)
    }

    /// The secrets of a connection string as written and as libpq decodes
    /// them, longest first: what must never be printed.
    public static func secrets(of text: String) -> [String] {
        var found: [String] = []
        collect(text, into: &found)
        var unique: [String] = []
        for secret in found where !secret.isEmpty && !unique.contains(secret) { unique.append(secret) }
        return unique.sorted { $0.count > $1.count }
    }

    /// `message` (a libpq error, a log line) with every secret of
    /// `connection` replaced by `***` wherever it appears.
    public static func scrub(_ message: String, secretsOf connection: String) -> String {
        var result = message
        for secret in secrets(of: connection) { result = result.replacingOccurrences(of: secret, with: mask) }
        return result
    }

    /// Whether `name` (already percent-decoded) names a secret.
    static func isSecret(_ name: String) -> Bool {
        name.lowercased().contains("password")
    }

    /// Whether `text` starts with a URL scheme and `://`: any scheme, so a
    /// mistyped one (`postgress://u:pw@h`, in a refusal) is redacted too.
    private static func isURL(_ text: String) -> Bool {
        guard let separator = text.range(of: "://") else { return false }
        let scheme = text[..<separator.lowerBound]
        return !scheme.isEmpty
            && scheme.unicodeScalars.allSatisfy {
                $0.isASCII && ($0.properties.isAlphabetic || "+-.0123456789".unicodeScalars.contains($0))
            }
    }

    // MARK: URLs

    /// The parts of a URL: scheme and `//`, userinfo (without `@`), the rest of
    /// the authority and path, the query (without `?`), the fragment (with `#`).
    private struct URLParts {
        var head: Substring
        var user: Substring?
        var password: Substring?
        var hostAndPath: Substring
        var query: Substring?
        var fragment: Substring
    }

    private static func split(url text: String) -> URLParts {
        let afterScheme = text.range(of: "://").map(\.upperBound) ?? text.startIndex
        let head = text[..<afterScheme]
        var rest = text[afterScheme...]
        var fragment: Substring = ""
        var query: Substring?
        // The userinfo ends at the last `@` before the query: a raw `@`, `/`
        // or `?` in a password is malformed, but must not leak either.
        let queryStart = rest.firstIndex(of: "?")
        let userEnd = rest[..<(queryStart ?? rest.endIndex)].lastIndex(of: "@")
        var user: Substring?
        var password: Substring?
        if let userEnd {
            let info = rest[..<userEnd]
            if let colon = info.firstIndex(of: ":") {
                user = info[..<colon]
                password = info[info.index(after: colon)...]
            } else {
                user = info
            }
            rest = rest[rest.index(after: userEnd)...]
        }
        if let hash = rest.firstIndex(of: "#") {
            fragment = rest[hash...]
            rest = rest[..<hash]
        }
        if let mark = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: mark)...]
            rest = rest[..<mark]
        }
        return URLParts(
            head: head, user: user, password: password, hostAndPath: rest, query: query, fragment: fragment)
    }

    private static func redactedURL(_ text: String) -> String {
        let parts = split(url: text)
        var out = String(parts.head)
        if let user = parts.user {
            out += user
            if parts.password != nil { out += ":" + mask }
            out += "@"
        }
        out += parts.hostAndPath
        if let query = parts.query {
            out += "?"
            out += query.split(separator: "&", omittingEmptySubsequences: false).map { pair -> String in
                guard let equals = pair.firstIndex(of: "=") else { return String(pair) }
                let name = pair[..<equals]
                return isSecret(percentDecoded(name)) ? name + "=" + mask : String(pair)
            }.joined(separator: "&")
        }
        // A fragment means nothing to libpq; it is kept only if it holds no secret-like text.
        if !parts.fragment.isEmpty {
            out += isSecret(String(parts.fragment)) ? "#" + mask : String(parts.fragment)
        }
        return out
    }

    private static func collectURL(_ text: String, into found: inout [String]) {
        let parts = split(url: text)
        if let password = parts.password { found += [String(password), percentDecoded(password)] }
        if let query = parts.query {
            for pair in query.split(separator: "&") {
                guard let equals = pair.firstIndex(of: "=") else { continue }
                guard isSecret(percentDecoded(pair[..<equals])) else { continue }
                let value = pair[pair.index(after: equals)...]
                found += [String(value), percentDecoded(value)]
            }
        }
    }

    /// `%XX` sequences decoded (a malformed one kept as written), as libpq reads URL parts.
    static func percentDecoded(_ text: Substring) -> String {
        var bytes: [UInt8] = []
        let utf8 = Array(text.utf8)
        var index = 0
        while index < utf8.count {
            if utf8[index] == UInt8(ascii: "%"), index + 2 < utf8.count,
                let high = hexValue(utf8[index + 1]), let low = hexValue(utf8[index + 2])
            {
                bytes.append(high << 4 | low)
                index += 3
            } else {
                bytes.append(utf8[index])
                index += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    // MARK: Keyword/value conninfo

    /// One `key = value` of a conninfo string, as ranges of its text.
    private struct Pair {
        var key: Substring
        /// The value as written (quotes and escapes included).
        var raw: Range<String.Index>
        /// The value as libpq reads it.
        var value: String
    }

    /// The pairs of a conninfo string as libpq's `conninfo_parse` reads them.
    /// A pair cut short (no `=`, an unterminated quote) runs to the end.
    private static func pairs(_ text: String) -> [Pair] {
        var pairs: [Pair] = []
        var index = text.startIndex
        func skipSpaces() {
            while index < text.endIndex, text[index].isWhitespace { index = text.index(after: index) }
        }
        while true {
            skipSpaces()
            guard index < text.endIndex else { break }
            let keyStart = index
            while index < text.endIndex, text[index] != "=", !text[index].isWhitespace {
                index = text.index(after: index)
            }
            let key = text[keyStart..<index]
            skipSpaces()
            guard index < text.endIndex, text[index] == "=" else {
                // A word without `=`: libpq refuses the string. A secret's name
                // hides all that follows; any other word is passed over.
                if isSecret(String(key)) {
                    pairs.append(Pair(key: key, raw: index..<text.endIndex, value: String(text[index...])))
                    break
                }
                if key.isEmpty { index = text.index(after: index) }
                continue
            }
            index = text.index(after: index)
            skipSpaces()
            let valueStart = index
            var value = ""
            if index < text.endIndex, text[index] == "'" {
                index = text.index(after: index)
                while index < text.endIndex, text[index] != "'" {
                    if text[index] == "\\", text.index(after: index) < text.endIndex {
                        index = text.index(after: index)
                    }
                    value.append(text[index])
                    index = text.index(after: index)
                }
                if index < text.endIndex { index = text.index(after: index) }
            } else {
                while index < text.endIndex, !text[index].isWhitespace {
                    if text[index] == "\\", text.index(after: index) < text.endIndex {
                        index = text.index(after: index)
                    }
                    value.append(text[index])
                    index = text.index(after: index)
                }
            }
            pairs.append(Pair(key: key, raw: valueStart..<index, value: value))
        }
        return pairs
    }

    private static func redactedConninfo(_ text: String) -> String {
        var out = ""
        var copied = text.startIndex
        for pair in pairs(text) {
            let replacement: String
            if isSecret(String(pair.key)) {
                replacement = mask
            } else if isURL(pair.value) {
                replacement =
                    "'"
                    + redactedURL(pair.value).replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(
                        of:
                            "'", with: "\\'") + "'"
            } else {
                continue
            }
            out += text[copied..<pair.raw.lowerBound]
            out += replacement
            copied = pair.raw.upperBound
        }
        out += text[copied...]
        return out
    }

    private static func collect(_ text: String, into found: inout [String]) {
        if isURL(text) { return collectURL(text, into: &found) }
        for pair in pairs(text) {
            if isSecret(String(pair.key)) {
                found += [String(text[pair.raw]), pair.value]
            } else if isURL(pair.value) {
                collectURL(pair.value, into: &found)
            }
        }
    }
}
