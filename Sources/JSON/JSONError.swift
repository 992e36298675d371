/// Why a JSON text was rejected, and where.
///
/// Every rejection of untrusted input ends here rather than in a trap, so the HTTP
/// layer can answer 400 with a `detail` a person can act on: ``description`` names
/// the problem and its position, e.g.
/// `invalid JSON at line 3, column 14: expected ',' or '}' after an object member`.
///
/// Positions: ``offset`` is the 0-based byte offset into the input; ``line`` is
/// 1-based and counts `\n` bytes; ``column`` is 1-based and counts Unicode scalars
/// (UTF-8 lead bytes) from the start of the line, so it matches what an editor shows.
public struct JSONError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong.
    public var kind: Kind
    /// The 0-based byte offset of the offending byte in the input.
    public var offset: Int
    /// The 1-based line of ``offset``.
    public var line: Int
    /// The 1-based column of ``offset``, counted in Unicode scalars.
    public var column: Int

    /// Creates an error; the parser computes line and column from the offset.
    public init(kind: Kind, offset: Int, line: Int, column: Int) {
        self.kind = kind
        self.offset = offset
        self.line = line
        self.column = column
    }

    /// The grammar element the parser was looking for when it met something else.
    public enum Expectation: Sendable, Hashable {
        /// Any JSON value.
        case value
        /// A value or `]` right after `[`.
        case valueOrEndOfArray
        /// A string key or `}` right after `{`.
        case keyOrEndOfObject
        /// A string key after `,` in an object.
        case key
        /// `:` after an object key.
        case colon
        /// `,` or `}` after an object member.
        case commaOrEndOfObject
        /// `,` or `]` after an array element.
        case commaOrEndOfArray

        var phrase: String {
            switch self {
            case .value: "expected a value"
            case .valueOrEndOfArray: "expected a value or ']'"
            case .keyOrEndOfObject: "expected a string key or '}'"
            case .key: "expected a string key"
            case .colon: "expected ':' after an object key"
            case .commaOrEndOfObject: "expected ',' or '}' after an object member"
            case .commaOrEndOfArray: "expected ',' or ']' after an array element"
            }
        }
    }

    /// Ways a number literal can break the RFC 8259 grammar.
    public enum NumberProblem: Sendable, Hashable {
        /// `-` with no digit after it (this includes `-Infinity`).
        case missingIntegerDigits
        /// A `0` followed by more digits, as in `012`.
        case leadingZero
        /// A `.` with no digit after it.
        case missingFractionDigits
        /// An `e` or `E` (and optional sign) with no digit after it.
        case missingExponentDigits

        var phrase: String {
            switch self {
            case .missingIntegerDigits: "a digit must follow '-'"
            case .leadingZero: "numbers must not have leading zeros"
            case .missingFractionDigits: "a digit must follow the decimal point"
            case .missingExponentDigits: "the exponent needs at least one digit"
            }
        }
    }

    /// The kinds of rejection.
    public enum Kind: Sendable, Hashable {
        /// The input ended where more was needed.
        case unexpectedEnd(Expectation)
        /// A byte that cannot start what the grammar needs here.
        case unexpectedCharacter(Expectation)
        /// A `,` directly before `]` or `}`.
        case trailingComma
        /// Something other than white space after the top-level value.
        case trailingCharacters
        /// A misspelled `true`, `false` or `null`; the payload is the literal expected.
        case invalidLiteral(String)
        /// A number literal that breaks the grammar.
        case invalidNumber(NumberProblem)
        /// A number whose magnitude does not fit a Double (such as `1e400`).
        case numberOutOfRange
        /// A string with no closing quote; the position is its opening quote.
        case unterminatedString
        /// A raw control character (U+0000 to U+001F) inside a string.
        case controlCharacterInString
        /// A backslash escape that is not one of JSON's.
        case invalidEscape
        /// A `\u` escape of a UTF-16 surrogate without its partner.
        case loneSurrogate
        /// Bytes that are not well-formed UTF-8 (overlong, surrogate, above U+10FFFF, truncated).
        case invalidUTF8
        /// Arrays and objects nested deeper than the limit (the payload).
        case tooDeep(maxDepth: Int)
        /// A text longer than the limit (the payload) in bytes.
        case tooLarge(maxBytes: Int)
        /// The same key twice in one object; the position is the second occurrence.
        case duplicateKey(String)
    }

    /// A sentence naming the problem and where it is.
    public var description: String {
        let place = "line \(line), column \(column)"
        switch kind {
        case .unexpectedEnd(let expected):
            return "invalid JSON at \(place): unexpected end of input, \(expected.phrase)"
        case .unexpectedCharacter(let expected):
            return "invalid JSON at \(place): \(expected.phrase)"
        case .trailingComma:
            return "invalid JSON at \(place): trailing comma"
        case .trailingCharacters:
            return "invalid JSON at \(place): unexpected characters after the JSON value"
        case .invalidLiteral(let literal):
            return "invalid JSON at \(place): invalid literal, expected '\(literal)'"
        case .invalidNumber(let problem):
            return "invalid JSON at \(place): invalid number, \(problem.phrase)"
        case .numberOutOfRange:
            return "invalid JSON at \(place): number out of the range of a double"
        case .unterminatedString:
            return "invalid JSON at \(place): unterminated string"
        case .controlCharacterInString:
            return "invalid JSON at \(place): unescaped control character in a string"
        case .invalidEscape:
            return "invalid JSON at \(place): invalid escape sequence in a string"
        case .loneSurrogate:
            return "invalid JSON at \(place): unpaired UTF-16 surrogate in a \\u escape"
        case .invalidUTF8:
            return "invalid UTF-8 at byte offset \(offset)"
        case .tooDeep(let maxDepth):
            return "nesting deeper than \(maxDepth) levels at \(place)"
        case .tooLarge(let maxBytes):
            return "JSON text larger than the limit of \(maxBytes) bytes"
        case .duplicateKey(let key):
            var quoted: [UInt8] = []
            JSONEscaping.appendQuoted(key, to: &quoted)
            return "duplicate key \(String(decoding: quoted, as: UTF8.self)) in object at \(place)"
        }
    }

    /// Builds an error for `offset` in `input`, counting lines and columns up to it.
    ///
    /// - Complexity: O(offset); paid only when input is rejected.
    static func at(_ offset: Int, in input: UnsafeBufferPointer<UInt8>, _ kind: Kind) -> JSONError {
        let end = min(offset, input.count)
        var line = 1
        var column = 1
        var index = 0
        while index < end {
            let byte = input[index]
            if byte == UInt8(ascii: "\n") {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {
                column += 1
            }
            index += 1
        }
        return JSONError(kind: kind, offset: offset, line: line, column: column)
    }
}
