import Foundation
import Glibc

// MARK: views: followers of many views while a writer writes

/// `views PORT LIST-ID VIEWS SECONDS [QUERY]`: VIEWS long-poll followers, one
/// per view, each on its own connection, behind one epoll: follower k follows
/// `QUERY` with `{k}` replaced by k (default `where=owner:u{k}&order=rank`),
/// from the list's version, asking again from each answer's `to`, for SECONDS.
/// Prints the answers per second, how many carried stages, and the errors.
func viewFollowers(port: Int, list: String, views: Int, seconds: Double, query: String) {
    _ = raiseFileLimit()
    let head = HTTPConnection(port: port).request("GET", "/lists/\(list)/changes?since=0&timeout=0")
    guard let start = integerField("to", in: head.body) ?? integerField("version", in: head.body) else {
        fail("no version for list \(list): \(head.status) \(head.text.prefix(200))")
    }
    let connections = (0..<views).map { _ in HTTPConnection(port: port) }
    let fds = connections.map(\.fd)
    var since = [Int](repeating: start, count: views)
    var buffers = [[UInt8]](repeating: [], count: views)
    func ask(_ index: Int) {
        let view = query.replacingOccurrences(of: "{k}", with: String(index))
        connections[index].send("GET", "/lists/\(list)/changes?since=\(since[index])&timeout=60&\(view)")
    }
    for index in 0..<views { ask(index) }
    let readiness = Readiness(fds: fds)
    var answers = 0
    var withStages = 0
    var errors = 0
    let deadline = monotonicSeconds() + seconds
    readiness.read(fds, bufferSize: 1 << 20, timeout: seconds, until: { monotonicSeconds() >= deadline }) {
        index, bytes in
        buffers[index] += bytes
        guard let end = buffers[index].withUnsafeBytes(responseEnd) else { return }
        let reply = HTTPReply(bytes: buffers[index], end: end)
        buffers[index].removeFirst(end)
        answers += 1
        if reply.status != 200 {
            errors += 1
        } else if let to = integerField("to", in: reply.body) {
            if reply.text.contains(#""stages":[{"#) { withStages += 1 }
            since[index] = to
        }
        ask(index)
    }
    print(
        String(
            format: "view followers: %d views, %d answers in %.0f s (%.0f/s), %d with stages, %d errors",
            views, answers, seconds, Double(answers) / seconds, withStages, errors))
}
