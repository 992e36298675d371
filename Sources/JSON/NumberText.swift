/// Canonical number text: the byte-level half of ``JSONNumber``.
///
/// A non-integer literal is reduced to its significant digits and the position of
/// the decimal point, then written in ECMAScript `Number::toString` form. When the
/// literal has at most 15 significant digits and lies well inside the normal range
/// of a Double, those digits *are* the shortest round-trip digits (any two such
/// decimals map to distinct doubles, DBL_DIG = 15), so no binary conversion is
/// needed; otherwise the literal goes through `Double` and its shortest
/// round-trip `description`.
enum NumberText {
    @inline(__always)
    static func isDigit(_ byte: UInt8) -> Bool {
        byte &- UInt8(ascii: "0") < 10
    }

    /// Splits a number in JSON grammar (a Swift `Double.description` of a finite
    /// value also qualifies) into its significant digits, with leading and trailing
    /// zeros removed, and the point position `n` such that the value is
    /// `0.d1d2…dk × 10^n`. `digits` is empty for zero.
    static func decompose(
        _ text: UnsafeBufferPointer<UInt8>, digits: inout [UInt8]
    ) -> (negative: Bool, point: Int) {
        digits.removeAll(keepingCapacity: true)
        let count = text.count
        var index = 0
        let negative = count > 0 && text[0] == UInt8(ascii: "-")
        if negative { index = 1 }
        var integerDigits = 0
        var leadingZeros = 0
        while index < count, isDigit(text[index]) {
            let byte = text[index]
            if digits.isEmpty && byte == UInt8(ascii: "0") {
                leadingZeros += 1
            } else {
                digits.append(byte)
            }
            integerDigits += 1
            index += 1
        }
        if index < count, text[index] == UInt8(ascii: ".") {
            index += 1
            while index < count, isDigit(text[index]) {
                let byte = text[index]
                if digits.isEmpty && byte == UInt8(ascii: "0") {
                    leadingZeros += 1
                } else {
                    digits.append(byte)
                }
                index += 1
            }
        }
        var exponent = 0
        if index < count, text[index] | 0x20 == UInt8(ascii: "e") {
            index += 1
            var exponentNegative = false
            if index < count, text[index] == UInt8(ascii: "-") || text[index] == UInt8(ascii: "+") {
                exponentNegative = text[index] == UInt8(ascii: "-")
                index += 1
            }
            // Saturate: anything this large is out of range or zero either way.
            while index < count, isDigit(text[index]) {
                exponent = min(exponent * 10 + Int(text[index] &- UInt8(ascii: "0")), 1_000_000_000)
                index += 1
            }
            if exponentNegative { exponent = -exponent }
        }
        while let last = digits.last, last == UInt8(ascii: "0") {
            digits.removeLast()
        }
        return (negative, integerDigits - leadingZeros + exponent)
    }

    /// Appends `0.digits × 10^point` in ECMAScript `Number::toString` form.
    static func appendECMAScript(digits: [UInt8], point n: Int, negative: Bool, to out: inout [UInt8]) {
        let k = digits.count
        if k == 0 {
            out.append(UInt8(ascii: "0"))
            return
        }
        if negative { out.append(UInt8(ascii: "-")) }
        digits.withUnsafeBufferPointer { digits in
            if k <= n && n <= 21 {
                out.append(contentsOf: digits)
                for _ in 0..<(n - k) { out.append(UInt8(ascii: "0")) }
            } else if 0 < n && n <= 21 {
                out.append(contentsOf: UnsafeBufferPointer(rebasing: digits[0..<n]))
                out.append(UInt8(ascii: "."))
                out.append(contentsOf: UnsafeBufferPointer(rebasing: digits[n...]))
            } else if -6 < n && n <= 0 {
                out.append(UInt8(ascii: "0"))
                out.append(UInt8(ascii: "."))
                for _ in 0..<(-n) { out.append(UInt8(ascii: "0")) }
                out.append(contentsOf: digits)
            } else {
                out.append(digits[0])
                if k > 1 {
                    out.append(UInt8(ascii: "."))
                    out.append(contentsOf: UnsafeBufferPointer(rebasing: digits[1...]))
                }
                out.append(UInt8(ascii: "e"))
                let exponent = n - 1
                out.append(exponent < 0 ? UInt8(ascii: "-") : UInt8(ascii: "+"))
                appendInteger(Int64(exponent.magnitude), to: &out)
            }
        }
    }

    /// The common case of a decimal with a fraction and no exponent, such as
    /// `2.50` or `-0.125`, written without ``decompose(_:digits:)``: when it has at
    /// most 15 significant digits and needs no exponent in ECMAScript form, its
    /// canonical text is the literal with trailing fraction zeros removed. Returns
    /// `false`, appending nothing, when the literal is not such a case.
    @inline(__always)
    static func appendPlainDecimal(_ literal: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) -> Bool {
        let integerStart = literal[0] == UInt8(ascii: "-") ? 1 : 0
        var dot = integerStart
        while literal[dot] != UInt8(ascii: ".") { dot += 1 }
        var end = literal.count
        // Stops at the '.' at the latest.
        while literal[end - 1] == UInt8(ascii: "0") { end -= 1 }
        let fractionDigits = end - dot - 1
        if literal[integerStart] != UInt8(ascii: "0") {
            guard dot - integerStart + fractionDigits <= 15 else { return false }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: literal[0..<(fractionDigits == 0 ? dot : end)]))
            return true
        }
        if fractionDigits == 0 {
            out.append(UInt8(ascii: "0"))
            return true
        }
        var firstSignificant = dot + 1
        while literal[firstSignificant] == UInt8(ascii: "0") { firstSignificant += 1 }
        // Six or more zeros after the point switch ECMAScript to exponent form.
        guard firstSignificant - dot - 1 < 6, end - firstSignificant <= 15 else { return false }
        out.append(contentsOf: UnsafeBufferPointer(rebasing: literal[0..<end]))
        return true
    }

    /// Appends the canonical text of a finite Double.
    static func appendCanonical(_ value: Double, scratch: inout [UInt8], to out: inout [UInt8]) {
        precondition(value.isFinite, "canonical JSON has no text for \(value)")
        if value == 0 {
            out.append(UInt8(ascii: "0"))
            return
        }
        var text = value.description
        let (negative, point) = text.withUTF8 { decompose($0, digits: &scratch) }
        appendECMAScript(digits: scratch, point: point, negative: negative, to: &out)
    }

    /// Appends the canonical text of a non-integer literal (one with a fraction or
    /// an exponent) already checked against the grammar. Returns `false`, appending
    /// nothing, when its magnitude overflows a Double.
    static func appendCanonicalDecimal(
        _ literal: UnsafeBufferPointer<UInt8>, scratch: inout [UInt8], to out: inout [UInt8]
    ) -> Bool {
        let (negative, point) = decompose(literal, digits: &scratch)
        if scratch.isEmpty {
            out.append(UInt8(ascii: "0"))
            return true
        }
        if scratch.count <= 15 && point > -290 && point < 290 {
            appendECMAScript(digits: scratch, point: point, negative: negative, to: &out)
            return true
        }
        guard let value = Double(String(decoding: literal, as: UTF8.self)), value.isFinite else {
            return false
        }
        appendCanonical(value, scratch: &scratch, to: &out)
        return true
    }

    /// Appends the canonical text of an integer literal already checked against the
    /// grammar: its exact digits, with `-0` written `0`. Returns `false`, appending
    /// nothing, when its magnitude overflows a Double.
    static func appendCanonicalInteger(_ literal: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) -> Bool {
        let negative = literal.first == UInt8(ascii: "-")
        let digitCount = literal.count - (negative ? 1 : 0)
        if digitCount >= 309 {
            // 10^309 > Double.greatestFiniteMagnitude; only a 309-digit literal needs a closer look.
            guard digitCount == 309, let value = Double(String(decoding: literal, as: UTF8.self)),
                value.isFinite
            else { return false }
        }
        if literal[literal.count - digitCount] == UInt8(ascii: "0") {
            out.append(UInt8(ascii: "0"))
        } else {
            out.append(contentsOf: literal)
        }
        return true
    }

    /// Appends the decimal digits of `value`.
    @inline(__always)
    static func appendInteger(_ value: Int64, to out: inout [UInt8]) {
        if value < 0 { out.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        if magnitude < 10 {
            out.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: magnitude))
            return
        }
        let start = out.count
        while magnitude > 0 {
            out.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: magnitude % 10))
            magnitude /= 10
        }
        // Swapped in place: `out[start...].reverse()` mutates through the generic
        // range subscript, which copies the digits out and back (three times
        // slower per integer, measured, and every change answer writes several).
        var low = start
        var high = out.count - 1
        while low < high {
            out.swapAt(low, high)
            low += 1
            high -= 1
        }
    }
}
