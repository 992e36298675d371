import Foundation

// MARK: query: issue 14's item-query figures on one list of ITEMS items

/// The model of item `n` in the query benchmark: `k` takes 100 values (a
/// `where=k:…` matches 1%), `name` is searchable text.
func queryModel(_ n: Int) -> String { #"{"k":\#(n % 100),"name":"Item \#(n)"}"# }

/// Builds the list, then times (median and p90 of repeated GETs, client side,
/// one keep-alive connection): the first, middle and last page of 100; a
/// `where=` on an indexed path with 1% matches (first and middle page); a
/// `q=` with a 5-character term; and the index build itself.
func queryBenchmark(port: Int, items: Int, id: String) {
    let connection = HTTPConnection(port: port)
    var started = monotonicSeconds()
    let path = makeLargeList(connection, items: items, id: id, model: queryModel)
    print("made \(items) items in \(String(format: "%.1f", monotonicSeconds() - started)) s")

    func get(_ target: String) -> HTTPReply {
        let reply = connection.request("GET", target)
        guard reply.status == 200 else { fail("GET \(target) answered \(reply.status): \(reply.text.prefix(300))") }
        return reply
    }
    func next(_ reply: HTTPReply) -> String? { reply.json["next"] as? String }
    func count(_ reply: HTTPReply) -> Int { (reply.json["items"] as? [Any])?.count ?? 0 }
    func plan(_ reply: HTTPReply) -> String {
        for line in reply.head.split(separator: "\r\n") where line.lowercased().hasPrefix("listd-query-plan:") {
            return String(line.dropFirst("listd-query-plan:".count)).trimmingCharacters(in: .whitespaces)
        }
        return "?"
    }
    func time(_ label: String, _ target: String, repeats: Int = 30) {
        var samples: [Double] = []
        var last: HTTPReply?
        for _ in 0..<repeats {
            let start = monotonicSeconds()
            last = get(target)
            samples.append((monotonicSeconds() - start) * 1000)
        }
        let reply = last ?? get(target)
        print(
            "\(label): median \(ms(median(samples))) ms, p90 \(ms(percentile(samples, 0.9))) ms "
                + "(\(count(reply)) items, \(reply.body.count) bytes, plan: \(plan(reply)))")
    }

    // Cursors at the middle and at the last page, by walking 1,000 at a time.
    started = monotonicSeconds()
    var cursor: String?
    var walked = 0
    var middle: String?
    var lastPage: String?
    repeat {
        let reply = get("\(path)/items?limit=1000" + (cursor.map { "&after=\($0)" } ?? ""))
        walked += count(reply)
        cursor = next(reply)
        if middle == nil && walked >= items / 2 { middle = cursor }
        if walked == items - 1000 { lastPage = cursor }
    } while cursor != nil
    let walk = monotonicSeconds() - started
    print("walked \(walked) items in pages of 1,000: \(String(format: "%.2f", walk)) s")
    // The last page of 100 starts 100 before the end: one more short walk.
    if let start = lastPage {
        var at = start
        var seen = 0
        while seen < 900, let more = next(get("\(path)/items?limit=100&after=\(at)")) {
            at = more
            seen += 100
        }
        lastPage = at
    }

    time("first page of 100", "\(path)/items?limit=100")
    if let middle { time("middle page of 100", "\(path)/items?limit=100&after=\(middle)") }
    if let lastPage { time("last page of 100", "\(path)/items?limit=100&after=\(lastPage)") }
    time("where=k:42 unindexed, first page of 10", "\(path)/items?where=k:42&limit=10", repeats: 5)

    started = monotonicSeconds()
    let declared = connection.request("PUT", "\(path)/indexes/k")
    guard declared.status == 201 || declared.status == 200 else {
        fail("PUT index answered \(declared.status): \(declared.text.prefix(300))")
    }
    print("declared index k on \(items) items: \(String(format: "%.2f", monotonicSeconds() - started)) s")
    let firstMatches = get("\(path)/items?where=k:42&limit=100")
    time("where=k:42 indexed (1%), first page of 100", "\(path)/items?where=k:42&limit=100")
    if let after = next(firstMatches) {
        var at = after
        for _ in 0..<(items / 100 / 100 / 2) {
            if let more = next(get("\(path)/items?where=k:42&limit=100&after=\(at)")) { at = more }
        }
        time("where=k:42 indexed (1%), middle page of 100", "\(path)/items?where=k:42&limit=100&after=\(at)")
    }
    time("q=m 424 (5 characters), no text index, first page of 10", "\(path)/items?q=m%20424&limit=10", repeats: 5)
    started = monotonicSeconds()
    let text = connection.request("PUT", "\(path)/text-index")
    guard text.status == 201 || text.status == 200 else {
        fail("PUT text-index answered \(text.status): \(text.text.prefix(300))")
    }
    print("built the text index on \(items) items: \(String(format: "%.2f", monotonicSeconds() - started)) s")
    time("q=m 424 (5 characters), text index, first page of 10", "\(path)/items?q=m%20424&limit=10")
    time("q=m 424 (5 characters), text index, first page of 100", "\(path)/items?q=m%20424&limit=100")
}
