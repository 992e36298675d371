import Foundation
import Glibc

// MARK: views: followers of many views while a writer writes

/// `views PORT LIST-ID VIEWS SECONDS [QUERY]`: VIEWS long-poll followers, one
/// per view, each on its own connection, behind one epoll: follower k follows
/// `QUERY` with `{k}` replaced by k (default `where=owner:u{k}&order=rank`),
/// from the version of the view's snapshot (read first, as a client does), asking
/// again from each answer's `to`, for SECONDS (counted once all are following).
/// Prints the answers per second, how many carried stages, and the errors.
func viewFollowers(port: Int, list: String, views: Int, seconds: Double, query: String) {
    _ = raiseFileLimit()
    let connections = (0..<views).map { _ in HTTPConnection(port: port) }
    let fds = connections.map(\.fd)
    // As a client does: the view's snapshot first, then its changes from the snapshot's version.
    var since = [Int](repeating: 0, count: views)
    for index in 0..<views {
        let view = query.replacingOccurrences(of: "{k}", with: String(index))
        let snapshot = connections[index].request("GET", "/lists/\(list)?\(view)")
        guard let version = integerField("version", in: snapshot.body) else {
            fail("no snapshot of view \(view): \(snapshot.status) \(snapshot.text.prefix(200))")
        }
        since[index] = version
    }
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
