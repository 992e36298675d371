import Foundation

// MARK: engine: the change engine's figures on one list of ITEMS items

/// Creates a list of `items` items named `i0`…, in sections of at most 200,000
/// (one body each: a create, then `insertSection` PATCHes), and prints its path.
func makeLargeList(
    _ connection: HTTPConnection, items: Int, id: String, model: (Int) -> String = { #"{"n":\#($0)}"# }
) -> String {
    let perSection = 200_000
    var made = 0
    var section = 0
    while made < items || section == 0 {
        let count = min(perSection, items - made)
        let body = (made..<made + count).map { #"{"id":"i\#($0)","model":\#(model($0))}"# }.joined(separator: ",")
        let sectionJSON = #"{"id":"s\#(section)","model":{},"items":[\#(body)]}"#
        let reply: HTTPReply
        if section == 0 {
            reply = connection.request("POST", "/lists", body: #"{"id":"\#(id)","sections":[\#(sectionJSON)]}"#)
        } else {
            reply = connection.request(
                "PATCH", "/lists/\(id)", body: #"{"ops":[{"op":"insertSection","section":\#(sectionJSON)}]}"#)
        }
        guard reply.status == 200 || reply.status == 201 else {
            fail("making section \(section) of \(id) answered \(reply.status): \(reply.text.prefix(300))")
        }
        made += count
        section += 1
    }
    return "/lists/\(id)"
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.isEmpty ? .nan : sorted[sorted.count / 2]
}

func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    return sorted.isEmpty ? .nan : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
}

func ms(_ value: Double) -> String { String(format: "%.3f", value) }

/// `engine PORT PID ITEMS ID`: on a new list of ITEMS items,
/// 1. RSS before and after the list is made and hot (one write and one answer);
/// 2. one-change answers: 300 rounds of a random `updateItem` then
///    `changes?since=V-1` on another connection (a new question each time);
/// 3. a client 10,000 random single-op versions behind: updates, moves within
///    and across sections, inserts and deletes anywhere in the list, then the
///    first (computed) answer to `changes?since=<that version>`, then 20
///    more first answers from the versions just after it (the median and
///    p90 of those, which one answer's noise hides).
func engine(port: Int, pid: Int, items: Int, id: String, behindWrites: Int) {
    let connection = HTTPConnection(port: port)
    let rssBefore = residentKiB(pid: pid)
    let path = makeLargeList(connection, items: items, id: id)
    var random = SystemRandomNumberGenerator()
    func write(_ op: String) -> (version: Int, body: Int) {
        let reply = connection.request("PATCH", path, body: #"{"ops":[\#(op)]}"#)
        guard reply.status == 200, let version = reply.json["to"] as? Int else {
            fail("PATCH \(op) answered \(reply.status): \(reply.text.prefix(300))")
        }
        return (version, reply.body.count)
    }
    let reader = HTTPConnection(port: port)
    _ = write(#"{"op":"updateItem","id":"i0","model":{"warm":1}}"#)
    _ = reader.request("GET", "\(path)/changes?since=1&timeout=0")
    let rssHot = residentKiB(pid: pid)

    var answerTimes: [Double] = []
    var writeTimes: [Double] = []
    var answerBytes = 0
    for round in 0..<300 {
        let item = Int.random(in: 0..<items, using: &random)
        let started = monotonicSeconds()
        let (version, _) = write(#"{"op":"updateItem","id":"i\#(item)","model":{"r":\#(round)}}"#)
        writeTimes.append((monotonicSeconds() - started) * 1000)
        let asked = monotonicSeconds()
        let reply = reader.request("GET", "\(path)/changes?since=\(version - 1)&timeout=0")
        answerTimes.append((monotonicSeconds() - asked) * 1000)
        guard reply.status == 200, reply.json["reset"] == nil else {
            fail("one-change answer: \(reply.status) \(reply.text.prefix(300))")
        }
        answerBytes = reply.body.count
    }

    // A client behind by `behindWrites` random single-op versions.
    let first = write(#"{"op":"updateItem","id":"i1","model":{"start":1}}"#).version
    var version = first
    var inserted: [Int] = []
    var next = 0
    var deleted = Set<Int>()
    let sections = (items + 199_999) / 200_000
    var writesMade = 0
    // Positions stay below what every section holds whatever the writes did.
    let reach = max(1, min(1000, items / sections / 2))
    while version < first + behindWrites {
        var item = Int.random(in: 0..<items, using: &random)
        while deleted.contains(item) { item = Int.random(in: 0..<items, using: &random) }
        let roll = Int.random(in: 0..<10, using: &random)
        let op: String
        switch roll {
        case 0..<5: op = #"{"op":"updateItem","id":"i\#(item)","model":{"w":\#(version)}}"#
        case 5, 6:
            let section = Int.random(in: 0..<sections, using: &random)
            op =
                #"{"op":"moveItem","id":"i\#(item)","section":"s\#(section)","to":\#(Int.random(in: 0..<reach, using: &random))}"#
        case 7, 8:
            let section = Int.random(in: 0..<sections, using: &random)
            op =
                #"{"op":"insertItem","section":"s\#(section)","item":{"id":"x\#(next)","model":{}},"at":\#(Int.random(in: 0..<reach, using: &random))}"#
            inserted.append(next)
            next += 1
        default:
            if let victim = inserted.popLast() {
                op = #"{"op":"deleteItem","id":"x\#(victim)"}"#
            } else if deleted.count < items / 10 {
                deleted.insert(item)
                op = #"{"op":"deleteItem","id":"i\#(item)"}"#
            } else {
                op = #"{"op":"updateItem","id":"i\#(item)","model":{"d":\#(version)}}"#
            }
        }
        version = write(op).version
        writesMade += 1
    }
    var behindTimes: [Double] = []
    var behindReply: HTTPReply?
    for _ in 0..<2 {
        let started = monotonicSeconds()
        let reply = reader.request("GET", "\(path)/changes?since=\(first)&timeout=0")
        behindTimes.append((monotonicSeconds() - started) * 1000)
        if behindReply == nil { behindReply = reply }
    }
    // A neighbour's question (one version later), computed again rather than
    // served from the answer cache: the first answer's cost on a warm catch-up thread.
    let neighbourStarted = monotonicSeconds()
    let neighbour = reader.request("GET", "\(path)/changes?since=\(first + 1)&timeout=0")
    let neighbourTime = (monotonicSeconds() - neighbourStarted) * 1000
    guard neighbour.status == 200 else { fail("the neighbour's answer failed") }
    // More clients about as far behind, each asking once (each a first answer:
    // a version nobody asked for yet), for a median the one answer above cannot give.
    var distinctTimes: [Double] = []
    for offset in 2..<22 {
        let started = monotonicSeconds()
        let reply = reader.request("GET", "\(path)/changes?since=\(first + offset)&timeout=0")
        distinctTimes.append((monotonicSeconds() - started) * 1000)
        guard reply.status == 200 else { fail("a distinct catch-up answered \(reply.status)") }
    }
    let rssEnd = residentKiB(pid: pid)
    guard let behind = behindReply, behind.status == 200 else { fail("the behind answer failed") }
    let stages = (behind.json["stages"] as? [[String: Any]]) ?? []
    let named = stages.reduce(0) { total, stage in
        total + stage.values.reduce(0) { $0 + (($1 as? [Any])?.count ?? 0) }
    }
    print("== engine: \(items) items (load average: \(loadAverage()))")
    print("listd VmRSS: before \(rssBefore) KiB, list made and hot \(rssHot) KiB, end \(rssEnd) KiB")
    print(
        "one-change answer (changes?since=V-1, 300 rounds): median \(ms(median(answerTimes))) ms, "
            + "p90 \(ms(percentile(answerTimes, 0.9))) ms, \(answerBytes) bytes")
    print(
        "single-op PATCH updateItem, one at a time: median \(ms(median(writeTimes))) ms, "
            + "p90 \(ms(percentile(writeTimes, 0.9))) ms")
    print(
        "behind by \(behindWrites) random single-op versions (\(writesMade) PATCHes): first answer "
            + "\(ms(behindTimes[0])) ms, again \(ms(behindTimes[1])) ms, one version later "
            + "\(ms(neighbourTime)) ms; reset: \(behind.json["reset"] as? Bool ?? false), "
            + "\(stages.count) stages naming \(named) entries, \(behind.body.count) bytes")
    print(
        "20 more first answers, \(behindWrites - 21) to \(behindWrites - 2) versions behind: median "
            + "\(ms(median(distinctTimes))) ms, p90 \(ms(percentile(distinctTimes, 0.9))) ms, "
            + "max \(ms(distinctTimes.max() ?? 0)) ms")
}
