/// Formatting of HTTP dates (RFC 9110, section 5.6.7) without Foundation.
public struct HTTPDate: Sendable {
    private static let weekdays = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// The IMF-fixdate for a moment, for example `Sun, 06 Nov 1994 08:49:37 GMT`.
    ///
    /// Pure arithmetic on the proleptic Gregorian calendar in UTC, so it needs no locale or time
    /// zone database. Moments before 1970 are supported; years beyond 9999 print as they are.
    /// - Complexity: O(1).
    public static func imfFixdate(secondsSince1970: Int) -> String {
        let (days, secondOfDay) = floorDivide(secondsSince1970, 86_400)
        let (year, month, day) = civilDate(daysSince1970: days)
        let weekday = weekdays[floorDivide(days, 7).remainder]
        var bytes: [UInt8] = []
        bytes.reserveCapacity(29)
        bytes.append(contentsOf: weekday.utf8)
        bytes.append(contentsOf: ", ".utf8)
        appendTwoDigits(day, to: &bytes)
        bytes.append(ASCII.space)
        bytes.append(contentsOf: months[month - 1].utf8)
        bytes.append(ASCII.space)
        if year >= 0 && year < 10_000 {
            appendTwoDigits(year / 100, to: &bytes)
            appendTwoDigits(year % 100, to: &bytes)
        } else {
            bytes.append(contentsOf: String(year).utf8)
        }
        bytes.append(ASCII.space)
        appendTwoDigits(secondOfDay / 3600, to: &bytes)
        bytes.append(ASCII.colon)
        appendTwoDigits(secondOfDay / 60 % 60, to: &bytes)
        bytes.append(ASCII.colon)
        appendTwoDigits(secondOfDay % 60, to: &bytes)
        bytes.append(contentsOf: " GMT".utf8)
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func appendTwoDigits(_ value: Int, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "0") + UInt8(value / 10))
        bytes.append(UInt8(ascii: "0") + UInt8(value % 10))
    }

    /// Division rounding toward negative infinity, with a non-negative remainder.
    private static func floorDivide(_ value: Int, _ divisor: Int) -> (quotient: Int, remainder: Int) {
        let remainder = value % divisor
        return remainder < 0 ? (value / divisor - 1, remainder + divisor) : (value / divisor, remainder)
    }

    /// Year, month (1...12) and day (1...31) of a day count since 1970-01-01.
    ///
    /// Counts in 400-year eras starting on 0000-03-01, so the leap day falls at the end of each
    /// shifted year and every era has the same 146,097 days.
    private static func civilDate(daysSince1970: Int) -> (year: Int, month: Int, day: Int) {
        let shifted = daysSince1970 + 719_468  // days from 0000-03-01 to 1970-01-01
        let era = floorDivide(shifted, 146_097)
        let dayOfEra = era.remainder
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153  // 0 is March
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        let year = yearOfEra + era.quotient * 400 + (month <= 2 ? 1 : 0)
        return (year, month, day)
    }
}

/// Remembers the last formatted date so a busy server formats it once per second, not per response.
///
/// A value type: keep one per event loop (it is not shared between threads).
public struct HTTPDateCache: Sendable {
    private var second = Int.min
    private var cached = ""

    /// Creates an empty cache.
    public init() {}

    /// The IMF-fixdate for `secondsSince1970`, formatted only when the second changed.
    public mutating func string(secondsSince1970: Int) -> String {
        if secondsSince1970 != second {
            second = secondsSince1970
            cached = HTTPDate.imfFixdate(secondsSince1970: secondsSince1970)
        }
        return cached
    }
}
