// Throughput of the JSON module's hot paths, in MB/s of input (or output for the writer).
//
//   swift build -c release --product JSONBenchmarks && .build/release/JSONBenchmarks [name filter]
//
// Inputs are generated deterministically so runs are comparable.
import JSON

/// Deterministic pseudo-random numbers (SplitMix64).
struct Generator {
    var state: UInt64 = 0x5EED

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
}

let words = ["milk", "leek", "apple", "Käse", "crème brûlée", "tea \"green\"", "a/b", "line\nbreak", "😀", "x"]
let keyNames = ["title", "qty", "done", "tags", "price", "note", "id", "meta", "created", "aisle", "z", "b"]

/// `string` as a JSON string literal.
func jsonString(_ string: String) -> String {
    var writer = JSONWriter()
    writer.string(string)
    return writer.text
}

/// A small model of about 100 bytes, keys in a client's (unsorted) order.
func smallModel(_ generator: inout Generator, _ index: Int) -> String {
    let price = Double(generator.below(10_000)) / 100
    return """
        {"title": \(jsonString("\(words[generator.below(words.count)]) \(index)")), "qty": \(generator.below(20)), \
        "done": \(generator.below(2) == 0), "tags": [\(jsonString(words[generator.below(4)])), "urgent"], "price": \(price)}
        """
}

/// A nested model of about 64 KiB.
func largeModel(_ generator: inout Generator) -> String {
    var parts: [String] = []
    var size = 0
    var index = 0
    while size < 63 * 1024 {
        var members: [String] = []
        for key in keyNames.shuffled(using: &generator) {
            switch generator.below(5) {
            case 0: members.append("\"\(key)\": \(generator.below(1_000_000))")
            case 1: members.append("\"\(key)\": \(Double(generator.below(1_000_000)) / 1000)")
            case 2: members.append("\"\(key)\": \(jsonString(words[generator.below(words.count)]))")
            case 3: members.append("\"\(key)\": [1, 2.5, \"x\", null, true, {\"b\": 1, \"a\": 2}]")
            default: members.append("\"\(key)\": {\"nested\": {\"deeper\": [\(index), false]}}")
            }
        }
        let part = "\"entry\(index)\": {" + members.joined(separator: ", ") + "}"
        size += part.utf8.count + 2
        parts.append(part)
        index += 1
    }
    return "{" + parts.joined(separator: ",\n  ") + "}"
}

extension Generator: RandomNumberGenerator {}

/// Runs `body` (which processes `bytesPerRun` bytes) repeatedly for about `seconds`
/// and prints the throughput.
var sink = 0

@MainActor
func measure(_ name: String, bytesPerRun: Int, seconds: Double = 1.0, _ body: () throws -> Int) rethrows {
    if let filter = CommandLine.arguments.dropFirst().first, !name.contains(filter) { return }
    let clock = ContinuousClock()
    // Warm up.
    for _ in 0..<3 { sink &+= try body() }
    var runs = 0
    let start = clock.now
    var elapsed = Duration.zero
    while elapsed < .milliseconds(Int64(seconds * 1000)) {
        for _ in 0..<8 { sink &+= try body() }
        runs += 8
        elapsed = clock.now - start
    }
    let secondsElapsed = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    let megabytes = Double(bytesPerRun * runs) / 1_000_000
    let perRun = secondsElapsed / Double(runs) * 1e6
    let rate = megabytes / secondsElapsed
    print(
        "\(name.rightPadded(58)) "
            + "\(String(Int(rate + 0.5)).leftPadded(6)) MB/s  \(String(format1(perRun)).leftPadded(10)) µs/run")
}

func format1(_ value: Double) -> String {
    let tenths = Int(value * 10 + 0.5)
    return "\(tenths / 10).\(tenths % 10)"
}

extension String {
    func rightPadded(_ width: Int) -> String {
        self + String(repeating: " ", count: max(0, width - count))
    }

    func leftPadded(_ width: Int) -> String {
        String(repeating: " ", count: max(0, width - count)) + self
    }
}

var generator = Generator()
let large = Array(largeModel(&generator).utf8)
let largeCanonical = try CanonicalJSON.canonicalBytes(large)
let smalls = (0..<1_000).map { Array(smallModel(&generator, $0).utf8) }
let smallBytes = smalls.reduce(0) { $0 + $1.count }
let smallCanonical = try smalls.map { try CanonicalJSON.canonicalBytes($0) }
let smallCanonicalBytes = smallCanonical.reduce(0) { $0 + $1.count }

print(
    "large model: \(large.count) bytes (\(largeCanonical.count) canonical); small models: 1000, \(smallBytes / 1000) bytes each on average"
)

try measure("canonicalize 64 KiB model (unsorted, with white space)", bytesPerRun: large.count) {
    try CanonicalJSON.canonicalize(large).utf8.count
}
try measure("canonicalize 64 KiB model (already canonical)", bytesPerRun: largeCanonical.count) {
    try CanonicalJSON.canonicalize(largeCanonical).utf8.count
}
try measure("canonicalBytes 64 KiB model (unsorted)", bytesPerRun: large.count) {
    try CanonicalJSON.canonicalBytes(large).count
}
try measure("canonicalize 1000 small models (unsorted)", bytesPerRun: smallBytes) {
    var total = 0
    for model in smalls { total &+= try CanonicalJSON.canonicalize(model).utf8.count }
    return total
}
try measure("canonicalize 1000 small models (already canonical)", bytesPerRun: smallCanonicalBytes) {
    var total = 0
    for model in smallCanonical { total &+= try CanonicalJSON.canonicalize(model).utf8.count }
    return total
}
try measure("parse 64 KiB model to JSONValue", bytesPerRun: large.count) {
    try JSONValue(parsing: large).objectValue?.count ?? 0
}
try measure("parse 1000 small models to JSONValue", bytesPerRun: smallBytes) {
    var total = 0
    for model in smalls { total &+= try JSONValue(parsing: model).objectValue?.count ?? 0 }
    return total
}
let largeValue = try JSONValue(parsing: large)
measure("serialize 64 KiB JSONValue (canonical text)", bytesPerRun: largeCanonical.count) {
    largeValue.serialized().count
}

/// A 1,000-item snapshot-like document: 10 sections of 100 items, models spliced raw.
func writeSnapshot() -> [UInt8] {
    var writer = JSONWriter(capacity: 160 * 1024)
    writer.beginObject()
    writer.key("id")
    writer.string("groceries")
    writer.key("name")
    writer.string("Groceries")
    writer.key("epoch")
    writer.string("k3v9x2")
    writer.key("version")
    writer.int(4242)
    writer.key("sections")
    writer.beginArray()
    for section in 0..<10 {
        writer.beginObject()
        writer.key("id")
        writer.string("section-\(section)")
        writer.key("model")
        writer.raw(smallCanonical[section])
        writer.key("items")
        writer.beginArray()
        for item in 0..<100 {
            writer.beginObject()
            writer.key("id")
            writer.string("item-\(section)-\(item)")
            writer.key("model")
            writer.raw(smallCanonical[section * 100 + item])
            writer.endObject()
        }
        writer.endArray()
        writer.endObject()
    }
    writer.endArray()
    writer.endObject()
    return writer.bytes
}

let snapshotSize = writeSnapshot().count
measure("write 1000-item snapshot with JSONWriter (\(snapshotSize / 1024) KiB)", bytesPerRun: snapshotSize) {
    writeSnapshot().count
}
let snapshot = writeSnapshot()
measure("pretty-print the snapshot", bytesPerRun: snapshot.count) {
    prettyPrinted(snapshot).count
}
print("(checksum \(sink & 0xFFFF))")
