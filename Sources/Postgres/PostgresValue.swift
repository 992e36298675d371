/// A parameter or column value, with the PostgreSQL type it travels as.
public enum PostgresValue: Sendable, Hashable {
    case null
    /// `bigint` (int8); a column of `smallint`/`integer` reads as this too.
    case integer(Int64)
    /// `double precision` (float8); `real` reads as this too.
    case double(Double)
    /// `boolean`.
    case bool(Bool)
    /// `text` (and any type the server can cast from text: a parameter of type
    /// `text` is sent with no fixed type, so the server infers it).
    case text(String)
    /// `bytea`, sent in binary.
    case bytes([UInt8])

    /// The type OID the parameter is declared with (0: let the server infer it).
    var typeOID: UInt32 {
        switch self {
        case .null, .text: 0
        case .integer: PostgresType.int8
        case .double: PostgresType.float8
        case .bool: PostgresType.bool
        case .bytes: PostgresType.bytea
        }
    }

    /// 1 for binary (bytea), 0 for text.
    var format: Int32 {
        if case .bytes = self { return 1 }
        return 0
    }

    /// The bytes sent for this parameter (nil for SQL NULL); text ones end in NUL.
    var wireBytes: [UInt8]? {
        switch self {
        case .null: nil
        case .integer(let value): Array(String(value).utf8) + [0]
        case .double(let value): Array(Self.text(value).utf8) + [0]
        case .bool(let value): Array((value ? "t" : "f").utf8) + [0]
        case .text(let value): Array(value.utf8) + [0]
        case .bytes(let value): value
        }
    }

    private static func text(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "Infinity" : "-Infinity" }
        return "\(value)"
    }
}

/// The built-in type OIDs listd reads and sends (from `pg_type.dat`).
public enum PostgresType {
    public static let bool: UInt32 = 16
    public static let bytea: UInt32 = 17
    public static let int8: UInt32 = 20
    public static let int2: UInt32 = 21
    public static let int4: UInt32 = 23
    public static let text: UInt32 = 25
    public static let oid: UInt32 = 26
    public static let float4: UInt32 = 700
    public static let float8: UInt32 = 701
    public static let varchar: UInt32 = 1043

    /// Whether `type` is an integer type, whose text ``Row/value(_:)`` reads as an integer.
    static func isInteger(_ type: UInt32) -> Bool {
        type == int2 || type == int4 || type == int8 || type == oid
    }

    /// Whether ``Row/value(_:)`` decodes `type`'s text into something else
    /// than text: a number, a boolean, bytes.
    static func isDecoded(_ type: UInt32) -> Bool {
        isInteger(type) || type == float4 || type == float8 || type == bool || type == bytea
    }
}

extension PostgresValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByNilLiteral,
    ExpressibleByBooleanLiteral
{
    public init(stringLiteral value: String) { self = .text(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}
